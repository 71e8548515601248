//! Driving the other programs: what this binary and machine offer
//! ([`Caps::probe`]), starting and stopping a server — ours or a peer, both through
//! `evdispatch-harness` ([`start_server`]) — running the load generator
//! ([`run_load`]) and the microbenchmarks ([`run_bench`]). Command lines and
//! output parsing live in [`crate::contracts`].
//!
//! Placement: the server runs on CPU 0 (its workers on 0..K), the load
//! generator on the last CPU, so on a 2-core machine the generator never
//! takes the server's core (with two server workers it must share).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use evdispatch_harness::{children_cpu_s, log_tail, ChildGroup};
use serde_json::Value;

use crate::contracts;
use crate::env::{busy_ticks, charged_ticks};
use crate::spec::{Caps, Ctx, LoadSpec, ServerSpec, Unavailable};

impl Caps {
    /// Probe the binary at `exe` and the machine (peers: [`Caps::set_peers`]).
    pub fn probe(exe: &Path) -> Caps {
        let output = |args: &[&str]| -> Option<String> {
            let o = Command::new(exe)
                .args(args)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        };
        let mut caps = Caps {
            bench: output(&["bench", "--help"]).is_some(),
            serve: output(&["serve", "--help"])
                .map(|h| h.contains("--stats-json"))
                .unwrap_or(false),
            load: output(&["load", "--help"])
                .map(|h| h.contains("--persistent"))
                .unwrap_or(false),
            cpus: evdispatch_host::available_cpus(),
            nofile: evdispatch_harness::nofile_limit(),
            budgets: crate::spec::BudgetSupport(
                evdispatch_harness::cpu_control().map(|c| c.to_string()),
            ),
            ..Caps::default()
        };
        if caps.bench {
            if let Some(list) = output(&["bench", "poller", "--list"]) {
                caps.poller_rows = contracts::poller_rows(&list);
            }
        }
        let table =
            output(&["mechanisms", "--json"]).and_then(|t| serde_json::from_str::<Value>(&t).ok());
        for row in table
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = row.get("name").and_then(Value::as_str) else {
                continue;
            };
            if let Some(max) = row.get("max_fd").and_then(Value::as_i64) {
                caps.max_fd.insert(name.to_string(), max);
            }
            match row.get("available").and_then(Value::as_str) {
                Some("yes") | None => caps.mechanisms.push(name.to_string()),
                Some(why) => {
                    caps.unavailable_mechanisms.insert(name.into(), why.into());
                }
            }
        }
        caps
    }
}

/// A server the study started, until [`RunningServer::stop`].
pub struct RunningServer {
    /// Base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The exact command line (ours) or the peer and its configuration.
    pub cmdline: String,
    /// Its version (peers) or ours.
    pub version: String,
    proc_: evdispatch_harness::ServerProcess,
    /// The certificate it serves HTTPS with (`ServerSpec::tls`); removed
    /// after the server (declared after it).
    cert: Option<evdispatch_harness::SelfSigned>,
}

impl RunningServer {
    /// The processes whose CPU and memory are the server's (nginx: master
    /// and workers).
    pub fn pids(&self) -> Vec<u32> {
        self.proc_.pids()
    }

    /// The main pid.
    pub fn pid(&self) -> u32 {
        self.proc_.pid()
    }

    /// Where it listens.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.proc_.addr()
    }

    /// The certificate a client must trust (HTTPS only).
    pub fn cacert(&self) -> Option<std::path::PathBuf> {
        self.cert.as_ref().map(|c| c.cert.clone())
    }

    /// The base URL the load generator uses: [`url`](Self::url) here, the
    /// address the load host reaches this machine at with `--load-host`.
    pub fn load_url(&self, ctx: &Ctx) -> String {
        match &ctx.load_host {
            Some(h) => h.url(self.addr()),
            None => self.url.clone(),
        }
    }

    /// The bandwidth statistics of its CPU budget's cgroup (`None`
    /// without a budget).
    pub fn budget_stats(&self) -> Option<evdispatch_harness::BudgetStats> {
        self.proc_.budget_group().and_then(|g| g.stats())
    }

    /// Stop it (SIGTERM, then SIGKILL after 10 s) and return our server's
    /// stats document (`None` for peers).
    pub fn stop(self) -> anyhow::Result<Option<Value>> {
        self.proc_.stop()
    }
}

/// Start `spec` for a run holding `held` long-lived connections, serving
/// the study's document root, pinned per [`Caps::cpu_plan`], within its CPU
/// budget if it has one (a budget that cannot be set here is
/// [`Unavailable`], never dropped in silence).
pub fn start_server(ctx: &Ctx, spec: &ServerSpec, held: u32) -> anyhow::Result<RunningServer> {
    use evdispatch_harness::{
        start_ours, start_peer, LighttpdEvents, OursConfig, Peer, PeerConfig,
    };
    ctx.caps
        .server(spec)
        .map_err(|why| anyhow!(Unavailable(why)))?;
    if let (Some(b), Err(why)) = (&spec.cpu_budget, &ctx.caps.budgets.0) {
        return Err(anyhow!(Unavailable(format!(
            "no CPU budget here ({b} asked): {why}"
        ))));
    }
    let (cpus, _) = ctx.caps.cpu_plan(spec.workers);
    let cert = if spec.tls {
        if ctx.load_host.is_some() {
            return Err(anyhow!(Unavailable(
                "HTTPS runs keep the load generator on this machine (no --load-host)".into()
            )));
        }
        Some(evdispatch_harness::SelfSigned::create()?)
    } else {
        None
    };
    let (proc_, cmdline) = if spec.server == "ours" {
        let mut serve = contracts::serve_command(spec, &ctx.www, &cpus)?;
        if let Some(c) = &cert {
            serve.tls_cert = Some(c.cert.clone());
            serve.tls_key = Some(c.key.clone());
        }
        if let Some(h) = &ctx.load_host {
            serve.listen = Some(std::net::SocketAddr::new(h.bind, 0).to_string());
        }
        let cmdline = format!("evdispatch serve {serve}{}", budget_note(spec));
        let p = start_ours(&OursConfig {
            binary: ctx.exe.clone(),
            serve,
            cpus: cpus.clone(),
            stats_json: true,
            idle: false,
            cpu_budget: spec.cpu_budget,
        })
        .with_context(|| format!("starting `{cmdline}`"))?;
        (p, cmdline)
    } else {
        let peer = match spec.server.as_str() {
            "nginx" => Peer::Nginx,
            "lighttpd" => Peer::Lighttpd,
            "h2o" => Peer::H2o,
            other => bail!("unknown peer server '{other}'"),
        };
        let mut cfg = PeerConfig::new(&ctx.www);
        if let Some(h) = &ctx.load_host {
            cfg.bind = h.bind;
        }
        cfg.workers = spec.workers;
        cfg.cpus = cpus.clone();
        cfg.cpu_budget = spec.cpu_budget;
        // Room for the held connections and the sessions in flight, within
        // the process's descriptor limit.
        cfg.max_connections = (held + 4096).min(19_000);
        cfg.keepalive_timeout_s = 600;
        cfg.request_timeout_s = 600;
        cfg.tls = cert.as_ref().map(|c| c.peer_tls("TLSv1.3"));
        if spec.server == "lighttpd" {
            cfg.lighttpd_events = match spec.mechanism.as_deref() {
                Some("poll") => LighttpdEvents::Poll,
                _ => LighttpdEvents::LinuxSysepoll,
            };
        }
        let cmdline = format!(
            "{} ({} worker(s), CPUs {:?}, max {} connections{}){}",
            spec.server,
            cfg.workers,
            cfg.cpus,
            cfg.max_connections,
            spec.mechanism
                .as_deref()
                .map(|m| format!(", server.event-handler = {m}"))
                .unwrap_or_default(),
            budget_note(spec)
        );
        let p = start_peer(peer, &cfg).with_context(|| format!("starting {cmdline}"))?;
        (p, cmdline)
    };
    Ok(RunningServer {
        url: proc_.url(""),
        version: proc_.version().to_string(),
        cmdline,
        proc_,
        cert,
    })
}

/// How a server's command line says its budget: ` (in a cgroup: 25.0%
/// of a core, period 4.0 ms)`, or nothing.
fn budget_note(spec: &ServerSpec) -> String {
    spec.cpu_budget
        .map(|b| format!(" (in a cgroup: {b})"))
        .unwrap_or_default()
}

/// What a load run measured.
#[derive(Debug)]
pub struct LoadResult {
    /// Canonical metrics ([`contracts::parse_load`]) plus the study's own
    /// samples of the server (`server_rss_start_bytes`,
    /// `server_rss_max_bytes`, `tcp_kernel_growth_bytes`).
    pub metrics: BTreeMap<String, f64>,
    /// The generator's JSON.
    pub raw: Value,
    /// The exact command line.
    pub cmdline: String,
}

/// Resident memory of a set of processes and their children, bytes.
pub fn tree_rss(pids: &[u32]) -> u64 {
    evdispatch_host::resident_sum(&evdispatch_host::with_children(pids)).total_bytes
}

/// A field of the `TCP:` line of `/proc/net/sockstat` (`inuse`, `tw`, `mem`…).
fn sockstat_tcp(field: &str) -> Option<u64> {
    let text = fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == field {
            return it.next()?.parse::<u64>().ok();
        }
    }
    None
}

/// Kernel memory held by TCP sockets (`/proc/net/sockstat`, `TCP: … mem N`), bytes.
pub fn tcp_kernel_bytes() -> Option<u64> {
    sockstat_tcp("mem").map(|pages| pages * 4096)
}

/// Wait, at most [`QUIESCE_MAX`], until the TCP sockets in use on this
/// machine (TIME_WAIT apart) are back to `before` (a few more allowed):
/// the connections of the load that just ended are closed (at both ends,
/// or at the server's with a load host).
/// Closing thousands of them is kernel and server work that would
/// otherwise land in the next run's window, counted as other processes'
/// CPU. Returns the seconds waited.
fn quiesce(before: Option<u64>) -> f64 {
    let t0 = std::time::Instant::now();
    let Some(before) = before else {
        return 0.0;
    };
    while t0.elapsed() < QUIESCE_MAX {
        match sockstat_tcp("inuse") {
            Some(n) if n > before + 8 => std::thread::sleep(Duration::from_millis(5)),
            _ => break,
        }
    }
    t0.elapsed().as_secs_f64()
}

/// The longest [`quiesce`] waits.
const QUIESCE_MAX: Duration = Duration::from_millis(300);

/// CPU seconds (user + system, to the nanosecond) of a set of processes and
/// their children.
fn tree_cpu_s(pids: &[u32]) -> f64 {
    evdispatch_host::with_children(pids)
        .into_iter()
        .filter_map(|p| evdispatch_host::process_cpu_time(p).ok())
        .map(|t| t.as_secs_f64())
        .sum()
}

/// Run the load generator against `server` while sampling the server's
/// resident memory (every 100 ms) and the kernel's TCP memory, and
/// account for the machine's CPU over the run: how busy the server's and the
/// generator's cores were (`server_core_busy_pct`, `load_core_busy_pct`,
/// interrupts included) and how much CPU went to processes that are not
/// ours (`foreign_cpu_pct`, % of one core: other work on this shared
/// machine). `generator_limited` is 1 when the generator said it was
/// saturated or its core was ≥ 95% busy (on a load host: its own CPU,
/// `generator_cpu_s` over its window, was ≥ 95% of a core per process):
/// the figure may then be the generator's limit.
///
/// With a load host (`ctx.load_host`) the generator runs there, with the
/// same command line but neither pinned nor sampling the server (the server
/// is here): `server_cpu_pct` is then the server's CPU here over the
/// generator's measured window, located in this machine's time by ssh's
/// set-up time and the generator's `setup_s` (sampled every 100 ms and
/// interpolated; the whole run's CPU over the window when the samples do
/// not cover it), the load core is the
/// load host's (`load_host_cpu_pct`: its whole machine's busy share; no
/// `load_core_busy_pct`), and `generator_cpu_s` is the generator's own CPU
/// there (its rusage).
pub fn run_load(
    ctx: &Ctx,
    spec: &LoadSpec,
    server: &RunningServer,
    tag: &str,
) -> anyhow::Result<LoadResult> {
    if let Some(why) = ctx.caps.web_missing() {
        return Err(anyhow!(Unavailable(why)));
    }
    let (_, load_cpu) = ctx.caps.cpu_plan(1);
    let pids = server.pids();
    let remote = ctx.load_host.as_ref();
    let mut load = contracts::load_command(spec, &server.load_url(ctx), &pids, load_cpu);
    load.cacert = server.cacert();
    if let Some(h) = remote {
        load.cpu.clear();
        load.server_pid.clear();
        // Spreading over 127.0.0.0/8 only works towards a loopback address.
        if !h.connect.is_loopback() {
            load.source_addrs = None;
        }
    }
    let log_path = ctx.logs.join(format!("{tag}.load.log"));
    let cmdline = match remote {
        Some(h) => format!("evdispatch load {load} (on the load host {})", h.dest),
        None => format!("evdispatch load {load}"),
    };
    let run = || -> anyhow::Result<(Vec<u8>, Option<crate::remote::RemoteRun>)> {
        if let Some(h) = remote {
            let args: Vec<String> = std::iter::once("load".to_string())
                .chain(load.args().iter().map(|a| a.to_string_lossy().into_owned()))
                .collect();
            // The generator bounds its own run; this bounds a dead link.
            let limit = spec.offered_s() + spec.timeout_s + 120.0 + spec.held() as f64 / 1000.0;
            let r = h.run_ours(&args, limit, &log_path)?;
            return Ok((r.stdout.clone().into_bytes(), Some(r)));
        }
        let mut cmd = Command::new(&ctx.exe);
        cmd.arg("load")
            .args(load.args())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(File::create(&log_path)?);
        let out = ChildGroup::spawn(cmd, "the load generator")?.wait_output()?;
        // A server that answered nothing (past its knee, or under a budget
        // it cannot work in) is a point with 100% errors, not a failed
        // job: the generator says so with its own exit status after
        // printing its results.
        let answered_nothing = out.status.code() == Some(evdispatch_load::cli::EXIT_NO_REPLY)
            && out.stdout.trim_ascii_start().starts_with(b"{");
        if !out.status.success() && !answered_nothing {
            let log = log_tail(Some(&log_path), 20);
            bail!(
                "the load generator failed ({}): {cmdline}\n{log}",
                out.status
            );
        }
        Ok((out.stdout, None))
    };
    let budget0 = server.budget_stats();
    let rss0 = tree_rss(&pids);
    let tcp0 = tcp_kernel_bytes();
    let inuse0 = sockstat_tcp("inuse");
    let (cpu0, srv0, kids0, t0) = (
        evdispatch_host::cpu_times(),
        tree_cpu_s(&pids),
        children_cpu_s(),
        std::time::Instant::now(),
    );
    // The sampler wakes every 100 ms, and at once when the run is over
    // (its `stop` sent or dropped): a job does not wait out its last sleep.
    let (stop, stopped) = mpsc::channel::<()>();
    let sampler = {
        let pids = pids.clone();
        // With a load host, the server's CPU over time too, to find the
        // generator's window in it.
        let track = remote.is_some();
        std::thread::spawn(move || {
            let (mut rss_max, mut tcp_max) = (0u64, 0u64);
            let mut series = Vec::new();
            loop {
                rss_max = rss_max.max(tree_rss(&pids));
                tcp_max = tcp_max.max(tcp_kernel_bytes().unwrap_or(0));
                if track {
                    series.push((t0.elapsed().as_secs_f64(), tree_cpu_s(&pids)));
                }
                match stopped.recv_timeout(Duration::from_millis(100)) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => break,
                }
            }
            (rss_max, tcp_max, series)
        })
    };
    let out = run();
    let (cpu1, srv1, kids1, wall) = (
        evdispatch_host::cpu_times(),
        tree_cpu_s(&pids),
        children_cpu_s(),
        t0.elapsed().as_secs_f64(),
    );
    let budget1 = server.budget_stats();
    drop(stop);
    let (rss_max, tcp_max, mut series) = sampler.join().unwrap_or((0, 0, Vec::new()));
    let settle_s = quiesce(inuse0);
    let (stdout, remote_run) = out?;
    let raw: Value = serde_json::from_slice(&stdout)
        .with_context(|| format!("`{cmdline}` did not print JSON on stdout"))?;
    let mut metrics = contracts::parse_load(&raw)?;
    let hz = evdispatch_host::clock_ticks_per_sec() as f64;
    if let Some(r) = &remote_run {
        r.record(&mut metrics);
        let window = raw.get("duration_s").and_then(Value::as_f64).unwrap_or(0.0);
        if window > 0.0 {
            // The window starts after ssh's set-up and the generator's own
            // (opening the long-lived connections); without samples
            // around it, the whole run's CPU stands for the window's.
            let h = remote.expect("a remote run has a load host");
            let setup = raw.get("setup_s").and_then(Value::as_f64).unwrap_or(0.0);
            let start = h.ssh_setup_s + setup;
            series.insert(0, (0.0, srv0));
            series.push((wall, srv1));
            let cpu_s = crate::remote::accrued_between(&series, start, start + window)
                .unwrap_or((srv1 - srv0).max(0.0));
            metrics.insert("server_cpu_pct".into(), 100.0 * cpu_s / window);
        }
    }
    // How often the server's CPU budget bit over the run: the share of its
    // bandwidth periods in which it spent its quota, and the time it waited.
    if let (Some(a), Some(b)) = (budget0, budget1) {
        let d = b.since(&a);
        if d.periods > 0 {
            metrics.insert(
                "budget_throttled_pct".into(),
                100.0 * d.throttled as f64 / d.periods as f64,
            );
        }
        metrics.insert("budget_throttled_s".into(), d.throttled_s);
    }
    // Seconds waited after the run for its connections to close (`quiesce`).
    metrics.insert("settle_s".into(), settle_s);
    metrics.insert("server_rss_start_bytes".into(), rss0 as f64);
    metrics.insert("server_rss_max_bytes".into(), rss_max.max(rss0) as f64);
    if let (Some(t0), true) = (tcp0, tcp_max > 0) {
        metrics.insert(
            "tcp_kernel_growth_bytes".into(),
            tcp_max.saturating_sub(t0) as f64,
        );
    }
    if cpu0.len() == cpu1.len() && !cpu0.is_empty() && wall > 0.0 {
        // Busy is what processes are charged (user, nice, system) plus
        // steal; interrupts are counted beside it for a core's busy share.
        let d: Vec<_> = cpu0.iter().zip(&cpu1).map(|(a, b)| b.since(a)).collect();
        let core = |i: usize| {
            d.get(i)
                .filter(|c| c.total() > 0)
                .map(|c| c.pct(busy_ticks(c)))
        };
        let (server_cpus, load_cpu) = ctx.caps.cpu_plan(1);
        if let (Some(&sc), Some(lc)) = (server_cpus.first(), load_cpu) {
            if let (Some(a), Some(b)) = (core(sc), core(lc)) {
                metrics.insert("server_core_busy_pct".into(), a);
                // With a load host, this machine's load core runs no load.
                if remote.is_none() {
                    metrics.insert("load_core_busy_pct".into(), b);
                }
            }
        }
        let busy_s = d.iter().map(charged_ticks).sum::<u64>() as f64 / hz;
        let ours_s = (srv1 - srv0).max(0.0) + (kids1 - kids0).max(0.0);
        metrics.insert(
            "foreign_cpu_pct".into(),
            (100.0 * (busy_s - ours_s) / wall).max(0.0),
        );
    }
    let window = raw
        .get("duration_s")
        .and_then(Value::as_f64)
        .filter(|w| *w > 0.0)
        .unwrap_or(spec.duration_s);
    let limited = generator_limited(&metrics, window, load.procs.unwrap_or(1));
    metrics.insert("generator_limited".into(), if limited { 1.0 } else { 0.0 });
    Ok(LoadResult {
        metrics,
        raw,
        cmdline,
    })
}

/// Whether the generator may have been the limit: it said it was
/// saturated, its core here was ≥ 95% busy, or (on a load host) its own CPU
/// (`generator_cpu_s` over its `window_s`) was ≥ 95% of one core for each of
/// its `procs` processes. The load host's whole-machine share does not
/// count: it cannot reach 95% on a multi-core host.
fn generator_limited(metrics: &BTreeMap<String, f64>, window_s: f64, procs: u32) -> bool {
    let own_pct = metrics
        .get("generator_cpu_s")
        .filter(|_| window_s > 0.0)
        .map(|s| 100.0 * s / window_s / f64::from(procs.max(1)));
    metrics.get("generator_saturated") == Some(&1.0)
        || metrics
            .get("load_core_busy_pct")
            .copied()
            .into_iter()
            .chain(own_pct)
            .any(|b| b >= 95.0)
}

/// Run `evdispatch bench ARGS` (ARGS include `--json`) and return its
/// output and the command line.
pub fn run_bench(
    ctx: &Ctx,
    args: &[String],
    tag: &str,
) -> anyhow::Result<(contracts::BenchOutput, String)> {
    let log_path = ctx.logs.join(format!("{tag}.bench.log"));
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&log_path)?);
    let cmdline = format!("evdispatch bench {}", args.join(" "));
    let out = ChildGroup::spawn(cmd, "the benchmark")?.wait_output()?;
    if !out.status.success() {
        let log = log_tail(Some(&log_path), 20);
        bail!("`{cmdline}` failed ({}):\n{log}", out.status);
    }
    Ok((
        contracts::bench_output(&String::from_utf8_lossy(&out.stdout))
            .with_context(|| format!("reading the output of `{cmdline}`"))?,
        cmdline,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn a_busy_generator_on_a_multi_core_load_host_is_limited() {
        // 9.8 s of CPU over a 10 s window: one core's worth, while the
        // 8-core host is only an eighth busy.
        let m = metrics(&[("generator_cpu_s", 9.8), ("load_host_cpu_pct", 12.5)]);
        assert!(generator_limited(&m, 10.0, 1));
        // Two processes may use two cores: half of that is not the limit.
        assert!(!generator_limited(&m, 10.0, 2));
        let idle = metrics(&[("generator_cpu_s", 3.0), ("load_host_cpu_pct", 99.0)]);
        assert!(!generator_limited(&idle, 10.0, 1));
        // Without a window, only the other signs count.
        assert!(!generator_limited(&m, 0.0, 1));
    }

    #[test]
    fn a_busy_local_core_or_a_saturated_generator_is_limited() {
        assert!(generator_limited(
            &metrics(&[("load_core_busy_pct", 96.0)]),
            10.0,
            1
        ));
        assert!(!generator_limited(
            &metrics(&[("load_core_busy_pct", 60.0)]),
            10.0,
            1
        ));
        assert!(generator_limited(
            &metrics(&[("generator_saturated", 1.0)]),
            10.0,
            1
        ));
    }

    #[test]
    fn busy_ticks_add_interrupts_to_the_charged_ones() {
        let c = evdispatch_host::CpuTimes {
            user: 1,
            nice: 2,
            system: 3,
            idle: 100,
            iowait: 50,
            irq: 4,
            softirq: 5,
            steal: 6,
        };
        assert_eq!(charged_ticks(&c), 12);
        assert_eq!(busy_ticks(&c), 21);
    }
}
