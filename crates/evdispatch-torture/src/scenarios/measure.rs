//! What the scenarios share: starting our server or nginx on the torture
//! site, running `evdispatch load` and reading its figures, baselines,
//! windows measured again when the hypervisor took a CPU, descriptor counts.

use std::time::{Duration, Instant};

use evdispatch_harness::{OursConfig, Peer, PeerConfig, ServerProcess};
use evdispatch_load::cmdline::LoadCommand;
use evdispatch_server::cmdline::ServeCommand;
use serde_json::Value;

use crate::env::Env;
use crate::site::Site;

use super::report::ScenarioReport;

/// Start our server on `site` with `model` and the scenario's own `serve`
/// settings `ours`, pinned to `cpu` (at the lowest priority when `idle`),
/// asking for its stats document.
pub fn start_ours(
    env: &Env,
    site: &Site,
    model: &str,
    ours: &ServeCommand,
    cpu: Option<usize>,
    idle: bool,
) -> anyhow::Result<ServerProcess> {
    let ServeCommand {
        root,
        listen,
        mechanism,
        ..
    } = ServeCommand::loopback(&site.root, model);
    evdispatch_harness::start_ours(&OursConfig {
        binary: env.exe.clone(),
        serve: ServeCommand {
            root,
            listen,
            mechanism,
            cpu: cpu.into_iter().collect(),
            ..ours.clone()
        },
        cpus: Vec::new(),
        stats_json: true,
        idle,
        cpu_budget: None,
    })
}

/// Start nginx on `site` pinned to the server CPU; `None` (reason given)
/// when comparisons are off or nginx is absent.
pub fn start_nginx(
    env: &Env,
    site: &Site,
    tweak: impl FnOnce(&mut PeerConfig),
) -> Result<ServerProcess, String> {
    if !env.nginx {
        return Err("--no-nginx".into());
    }
    if let Some(why) = evdispatch_harness::skip_reason(evdispatch_harness::Tool::Nginx) {
        return Err(why);
    }
    let mut cfg = PeerConfig::new(&site.root);
    cfg.cpus = env.cpus().0.into_iter().collect();
    tweak(&mut cfg);
    evdispatch_harness::start_peer(Peer::Nginx, &cfg).map_err(|e| format!("{e:#}"))
}

/// Run `evdispatch load URL ARGS --json` (`load` without its URL) pinned
/// to the load CPU, sampling `server`'s CPU.
pub fn load(
    env: &Env,
    server: &ServerProcess,
    path: &str,
    load: &LoadCommand,
) -> anyhow::Result<Value> {
    let load = LoadCommand {
        url: server.url(path),
        server_pid: server.pids(),
        cpu: env.cpus().1.into_iter().collect(),
        ..load.clone()
    };
    evdispatch_harness::run_evdispatch_load(&env.exe, &load, &[])
}

/// Stop a server and return its stats document (`Null` for nginx).
pub fn stop(server: ServerProcess) -> anyhow::Result<Value> {
    Ok(server.stop()?.unwrap_or(Value::Null))
}

/// Longest run of reply-rate samples at zero, in seconds.
pub fn longest_gap_s(load: &Value) -> f64 {
    let samples = load["rate_intervals"]["samples"].as_array();
    let zeros = samples
        .into_iter()
        .flat_map(|s| s.split(|v| v.as_f64().unwrap_or(0.0) > 0.0));
    zeros.map(<[Value]>::len).max().unwrap_or(0) as f64
        * crate::json::num(load, "rate_intervals.interval_s")
}

/// A load summary's p99 latency (corrected for coordinated omission), ms.
pub fn p99_ms(load: &Value) -> f64 {
    crate::json::num(load, "latency_us.p99") / 1e3
}

/// A baseline p99 measured twice, before a disturbance and after it has
/// gone: the mean of the two is what a ratio is taken against (a drift of
/// the machine over the run cancels instead of landing on one side), and
/// after ÷ before is the noise such a ratio must be read with (here the
/// p99 of the same load moves ×2 between runs).
#[derive(Debug, Clone, Copy)]
pub struct Baseline {
    /// p99 before, ms.
    pub before_ms: f64,
    /// p99 after, ms.
    pub after_ms: f64,
}

impl Baseline {
    /// From the two load documents.
    pub fn of(before: &Value, after: &Value) -> Baseline {
        Baseline {
            before_ms: p99_ms(before),
            after_ms: p99_ms(after),
        }
    }

    /// The mean of the two p99s, ms.
    pub fn ms(&self) -> f64 {
        (self.before_ms + self.after_ms) / 2.0
    }

    /// `p99_ms ÷` the baseline (infinite without a baseline).
    pub fn ratio(&self, p99_ms: f64) -> f64 {
        if self.ms() > 0.0 {
            p99_ms / self.ms()
        } else {
            f64::INFINITY
        }
    }

    /// After ÷ before.
    pub fn repeat(&self) -> f64 {
        if self.before_ms > 0.0 {
            self.after_ms / self.before_ms
        } else {
            0.0
        }
    }
}

/// A measured window in which the hypervisor took more than this share of
/// any CPU (steal, %) measured the hypervisor as much as the server: it is
/// measured again. On this shared machine most windows read 0; the ones
/// that do not are the slow ones (in the slowloris runs of 2026-11-23, a
/// window with 7% stolen read a p99 ×3 its neighbours').
pub const STEAL_LIMIT_PCT: f64 = 0.5;

/// How many times a stolen window is measured again at most; the last
/// attempt is kept whatever its steal.
pub const STEAL_RETRIES: usize = 2;

/// A window measured until the hypervisor left it alone (or the retries ran out).
#[derive(Debug)]
pub struct Unstolen<T> {
    /// The kept attempt.
    pub value: T,
    /// Its steal, % of the most-stolen CPU.
    pub steal_pct: f64,
    /// The attempts dropped for their steal, with it.
    pub dropped: Vec<(T, f64)>,
}

/// Run `f` (one measured window) until the hypervisor takes at most
/// [`STEAL_LIMIT_PCT`] of every CPU while it runs, at most
/// [`STEAL_RETRIES`] more times. Baselines and disturbances go through the
/// same rule, so it drops no side's bad luck in favour of the other's.
pub fn unstolen<T>(
    env: &Env,
    what: &str,
    f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Unstolen<T>> {
    unstolen_by(env, what, evdispatch_host::cpu_times, f)
}

/// [`unstolen`] with the CPU times read by `times`.
fn unstolen_by<T>(
    env: &Env,
    what: &str,
    mut times: impl FnMut() -> Vec<evdispatch_host::CpuTimes>,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Unstolen<T>> {
    let mut dropped = Vec::new();
    loop {
        let before = times();
        let value = f()?;
        let steal_pct = evdispatch_host::steal_pct_max(&before, &times());
        if steal_pct <= STEAL_LIMIT_PCT || dropped.len() == STEAL_RETRIES {
            return Ok(Unstolen {
                value,
                steal_pct,
                dropped,
            });
        }
        env.say(format!(
            "{what}: the hypervisor took {steal_pct:.1}% of a CPU meanwhile: measured again"
        ));
        dropped.push((value, steal_pct));
    }
}

/// Errors of the given workloads in a load summary.
pub fn workload_errors(load: &Value, workloads: &[&str]) -> u64 {
    workloads
        .iter()
        .filter_map(|w| load["errors_by_workload"][w].as_object())
        .flat_map(|m| m.values())
        .filter_map(Value::as_u64)
        .sum()
}

/// Wait until `pids` together hold at most `max` descriptors (10 s at
/// most); whether they came down.
pub fn fds_down_to(pids: &[u32], max: usize) -> bool {
    let t0 = Instant::now();
    loop {
        if fds_of(pids) <= max {
            return true;
        }
        if t0.elapsed() > Duration::from_secs(10) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// CPU of `pids` together over `window`, % of one core.
pub fn cpu_pct_over(pids: &[u32], window: Duration) -> f64 {
    let meters: Vec<_> = pids
        .iter()
        .filter_map(|&p| evdispatch_host::CpuMeter::start(p).ok())
        .collect();
    std::thread::sleep(window);
    meters
        .iter()
        .filter_map(|m| m.read().ok())
        .map(|u| u.pct_of_core)
        .sum()
}

/// Open descriptors of `pids` together.
pub fn fds_of(pids: &[u32]) -> usize {
    pids.iter()
        .filter_map(|&p| evdispatch_host::open_fds(p).ok())
        .sum()
}

/// The servers a scenario measures: each model, then nginx (`None`).
pub fn targets(env: &Env) -> Vec<Option<String>> {
    env.models.iter().cloned().map(Some).chain([None]).collect()
}

/// Start our `model` with the settings `ours`, pinned to the server CPU;
/// when it cannot start, record why in `rep` and return `None`.
pub fn start_or_skip(
    env: &Env,
    site: &Site,
    rep: &mut ScenarioReport,
    model: &str,
    ours: &ServeCommand,
) -> Option<ServerProcess> {
    start_ours(env, site, model, ours, env.cpus().0, false)
        .map_err(|e| rep.skip(model, format!("cannot start: {e:#}")))
        .ok()
}

/// Start a target of [`targets`]: our model with `ours` arguments, or
/// nginx configured by `nginx`. Returns the process, the server's name and
/// a label (the model, or nginx's version); `None` with the reason recorded
/// in `rep` when it cannot start.
pub fn start_target(
    env: &Env,
    site: &Site,
    rep: &mut ScenarioReport,
    target: &Option<String>,
    ours: &ServeCommand,
    nginx: impl FnOnce(&mut PeerConfig),
) -> Option<(ServerProcess, &'static str, String)> {
    match target {
        Some(m) => start_or_skip(env, site, rep, m, ours).map(|s| (s, "evdispatch", m.clone())),
        None => {
            let s = start_nginx(env, site, nginx)
                .map_err(|why| rep.skip("nginx", why))
                .ok()?;
            let version = s.version().to_string();
            Some((s, "nginx", version))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::Profile;
    use evdispatch_host::CpuTimes;

    fn env() -> Env {
        Env {
            exe: "evdispatch".into(),
            profile: Profile::Tiny,
            models: Vec::new(),
            models_given: false,
            nginx: false,
            progress: false,
            soak_s: None,
        }
    }

    /// A fake `/proc/stat` whose single CPU gains 1,000 ticks per reading,
    /// `steal[i]` of them stolen in the i-th window.
    fn fake(steal: &[u64]) -> impl FnMut() -> Vec<CpuTimes> + '_ {
        let (mut reads, mut now) = (0, CpuTimes::default());
        move || {
            if reads % 2 == 1 {
                let s = steal[reads / 2];
                now.idle += 1000 - s;
                now.steal += s;
            }
            reads += 1;
            vec![now]
        }
    }

    #[test]
    fn stolen_windows_are_measured_again_at_most_twice() {
        // 0.5% is let through; 0.6% is not.
        let mut n = 0;
        let u = unstolen_by(&env(), "w", fake(&[6, 5]), || {
            n += 1;
            Ok(n)
        })
        .unwrap();
        assert_eq!((u.value, u.steal_pct), (2, 0.5));
        assert_eq!(u.dropped, vec![(1, 0.6)]);
        // Three stolen windows in a row: the third is kept all the same.
        let mut n = 0;
        let u = unstolen_by(&env(), "w", fake(&[20, 30, 40, 0]), || {
            n += 1;
            Ok(n)
        })
        .unwrap();
        assert_eq!((u.value, u.steal_pct), (3, 4.0));
        assert_eq!(u.dropped.len(), STEAL_RETRIES);
    }
}
