//! Soak: a long mixed load — persistent clients, sessions opening and
//! closing connections, idle and inactive connections the server times out
//! (they reconnect), slow clients — while the server's resident memory and
//! descriptors are sampled. Growth is compared after a warm-up (the first
//! fifth): the mean of the last tenth of the samples against the mean of
//! the first tenth after warm-up. The resident set is also sampled by
//! kind: anonymous (heap, stacks, tables: where a leak shows) and
//! file-backed (the executable's pages, mapped as code first runs).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use evdispatch_load::{cmdline::LoadCommand, Rate};
use evdispatch_server::cmdline::ServeCommand;
use serde_json::json;

use super::measure::{fds_down_to, fds_of, load, start_or_skip, stop, workload_errors};
use super::report::{Run, ScenarioReport};
use crate::env::{Env, Profile};
use crate::json::num;
use crate::site::Site;
use evdispatch_harness::ServerProcess;

/// Largest RSS growth after warm-up, percent.
pub const MAX_GROWTH_PCT: f64 = 1.0;

/// The soak's length in seconds: `given`, else the profile's (12 s tiny,
/// 3 min quick, 30 min full).
pub fn duration_s(p: Profile, given: Option<f64>) -> f64 {
    given.unwrap_or(p.pick(12.0, 180.0, 1800.0))
}

/// Run the soak on every model.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new(
        "soak",
        "soak (active, churn, idle, inactive, slow clients together)",
    );
    rep.skip(
        "nginx",
        "the soak measures our server's own leaks; nginx is not soaked",
    );
    let site = Site::create()?;
    let p = env.profile;
    let duration = duration_s(p, env.soak_s);
    let rate: u64 = p.pick(200, 500, 500);
    // Every model soaks at once, each with its own load process: the
    // soak looks for leaks (memory, descriptors, errors) over a long run,
    // not for speed, so the models share the machine and the full
    // profile's 30 minutes stay 30 minutes whatever the number of models.
    let ours = ServeCommand {
        header_timeout: Some(Duration::from_secs(3)),
        idle_timeout: Some(Duration::from_secs(5)),
        threads: Some(2048),
        ..ServeCommand::default()
    };
    let servers: Vec<(String, ServerProcess)> = env
        .models
        .iter()
        .filter_map(|m| start_or_skip(env, &site, &mut rep, m, &ours).map(|s| (m.clone(), s)))
        .collect();
    env.say(format!(
        "soak {}: {duration} s of mixed load each, side by side ({rate}/s persistent + {rate} sessions/s × 2 calls, 500 idle, 200 inactive, 50 slow)",
        servers.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>().join(", ")
    ));
    let load_args = LoadCommand {
        persistent: Some(50),
        rate: Some(Rate::PerSecond(rate as f64)),
        sessions: Some(0),
        calls: Some(2),
        idle: Some(500),
        inactive: Some(200),
        slow: Some(50),
        slow_bytes: Some(4),
        slow_interval: Some(Duration::from_millis(200)),
        duration: Some(Duration::from_secs_f64(duration)),
        interval: Some(Duration::from_secs_f64((duration / 60.0).max(1.0))),
        ..LoadCommand::default()
    };
    let soaked: Vec<Soaked> = std::thread::scope(|s| {
        let handles: Vec<_> = servers
            .iter()
            .map(|(_, server)| s.spawn(|| soak_one(env, server, &load_args, duration)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a soak thread"))
            .collect()
    });
    for ((model, server), soaked) in servers.into_iter().zip(soaked) {
        let Soaked {
            load: soak,
            samples,
            fds_before,
        } = soaked;
        let pids = server.pids();
        let soak = match soak {
            Ok(v) => v,
            Err(e) => {
                let _ = stop(server);
                rep.skip(model.as_str(), format!("the soak's load failed: {e:#}"));
                continue;
            }
        };
        // The clients have left: descriptors must come back.
        let back = fds_down_to(&pids, fds_before);
        let fds_after = fds_of(&pids);
        let stats = stop(server)?;
        let series = |f: fn(&Sample) -> u64| -> Vec<(f64, u64)> {
            samples.iter().map(|s| (s.t, f(s))).collect()
        };
        let (growth, rss_start, rss_end, rss_peak) = rss_growth(&series(|s| s.rss), duration);
        let (anon_growth, anon_start, anon_end, _) = rss_growth(&series(|s| s.anon), duration);
        let (_, file_start, file_end, _) = rss_growth(&series(|s| s.file), duration);
        let fds_peak = samples.iter().map(|s| s.fds).max().unwrap_or(0);
        let at = |t: f64| sample_at(&samples, t);
        let active_errors = workload_errors(&soak, &["persistent", "sessions"]);
        let server_5xx: f64 = ["500", "501", "505"]
            .iter()
            .map(|s| num(&stats, &format!("requests.by_status.{s}")))
            .sum();
        let mut run = Run::new("evdispatch", &model);
        run.figures = json!({
            "duration_s": duration,
            "models_side_by_side": env.models.len(),
            "requests": num(&soak, "requests"),
            "replies": num(&soak, "replies"),
            "reply_rate": num(&soak, "reply_rate"),
            "p99_ms": super::measure::p99_ms(&soak),
            "active_errors": active_errors,
            "on_purpose_errors": workload_errors(&soak, &["idle", "inactive", "slow"]),
            "reopens": num(&soak, "reopens"),
            "connections_attempted": num(&soak, "connections.attempted"),
            "rss_after_warmup_kib": rss_start / 1024.0,
            "rss_end_kib": rss_end / 1024.0,
            "rss_peak_kib": rss_peak as f64 / 1024.0,
            "rss_growth_pct": growth,
            // By kind: a leak grows the anonymous part; the file-backed part
            // grows when code runs for the first time.
            "anon_after_warmup_kib": anon_start / 1024.0,
            "anon_end_kib": anon_end / 1024.0,
            "anon_growth_pct": anon_growth,
            "file_after_warmup_kib": file_start / 1024.0,
            "file_end_kib": file_end / 1024.0,
            // The shape: a step (a new peak of connections) or a ramp (a leak).
            "rss_at_40pct_kib": at(duration * 0.4).rss as f64 / 1024.0,
            "rss_at_60pct_kib": at(duration * 0.6).rss as f64 / 1024.0,
            "rss_at_80pct_kib": at(duration * 0.8).rss as f64 / 1024.0,
            "anon_at_40pct_kib": at(duration * 0.4).anon as f64 / 1024.0,
            "anon_at_60pct_kib": at(duration * 0.6).anon as f64 / 1024.0,
            "anon_at_80pct_kib": at(duration * 0.8).anon as f64 / 1024.0,
            "rss_samples": samples.len(),
            "fds_before": fds_before,
            "fds_peak": fds_peak,
            "fds_after": fds_after,
            "server_cpu_pct": num(&soak, "server_cpu_pct"),
            "server_accepted": num(&stats, "connections.accepted"),
            "server_timed_out": num(&stats, "connections.header_timed_out") + num(&stats, "connections.idle_timed_out"),
            "server_5xx": server_5xx,
        });
        run.check(
            "RSS growth after warm-up, %",
            growth,
            &format!("≤ {MAX_GROWTH_PCT}"),
            samples.len() >= 10 && growth <= MAX_GROWTH_PCT,
        );
        run.check(
            "descriptors after the clients left",
            json!({"before": fds_before, "after": fds_after}),
            "back to baseline",
            back,
        );
        run.check(
            "errors on the active workloads",
            active_errors,
            "0",
            active_errors == 0,
        );
        let lost = num(&soak, "requests") - num(&soak, "replies");
        run.check("requests without a reply", lost, "0", lost == 0.0);
        let what = format!(
            "soak {model}: RSS {:.0} -> {:.0} KiB ({growth:+.2}%; anonymous {:.0} -> {:.0}, file-backed {:.0} -> {:.0}), fds {fds_before} -> peak {fds_peak} -> {fds_after}, {active_errors} errors",
            rss_start / 1024.0,
            rss_end / 1024.0,
            anon_start / 1024.0,
            anon_end / 1024.0,
            file_start / 1024.0,
            file_end / 1024.0,
        );
        rep.add(env, run, what);
    }
    Ok(rep.finish())
}

/// One sample of a soaked server.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    /// Seconds since the load started.
    t: f64,
    /// Resident set, bytes, and its anonymous and file-backed parts.
    rss: u64,
    anon: u64,
    file: u64,
    /// Open descriptors.
    fds: usize,
}

/// One model's soak: the load's document, the samples and the descriptors
/// before the load.
struct Soaked {
    load: anyhow::Result<serde_json::Value>,
    samples: Vec<Sample>,
    fds_before: usize,
}

/// Soak `server` with `load_args` while sampling its memory and descriptors.
fn soak_one(env: &Env, server: &ServerProcess, load_args: &LoadCommand, duration: f64) -> Soaked {
    let pids = server.pids();
    let fds_before = fds_of(&pids);
    let done = AtomicBool::new(false);
    let every = Duration::from_secs_f64((duration / 300.0).max(0.2));
    let t0 = Instant::now();
    let (load, samples) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut samples = Vec::new();
            while !done.load(Ordering::Acquire) {
                // Exact counts (/proc/PID/status): those of /proc/PID/stat
                // move in 128 KiB steps, more than 1% of this server.
                let kinds = evdispatch_host::resident_sum(&pids);
                let fds = fds_of(&pids);
                samples.push(Sample {
                    t: t0.elapsed().as_secs_f64(),
                    rss: kinds.total_bytes,
                    anon: kinds.anon_bytes,
                    file: kinds.file_bytes,
                    fds,
                });
                std::thread::sleep(every);
            }
            samples
        });
        let r = load(env, server, "/six.txt", load_args);
        done.store(true, Ordering::Release);
        (r, sampler.join().expect("the soak sampler thread panicked"))
    });
    Soaked {
        load,
        samples,
        fds_before,
    }
}

/// The first sample at or after `t` seconds (all zero: none).
fn sample_at(samples: &[Sample], t: f64) -> Sample {
    samples
        .iter()
        .find(|s| s.t >= t)
        .copied()
        .unwrap_or_default()
}

/// Growth in percent of a sampled size, `(seconds, bytes)` points, between
/// the mean of the first tenth of the points after the warm-up (the first
/// fifth of the run) and the last tenth; also those two means and the peak.
pub fn rss_growth(points: &[(f64, u64)], duration: f64) -> (f64, f64, f64, u64) {
    let after: Vec<u64> = points
        .iter()
        .filter(|s| s.0 >= duration * 0.2 && s.0 <= duration)
        .map(|s| s.1)
        .collect();
    let peak = points.iter().map(|s| s.1).max().unwrap_or(0);
    if after.len() < 10 {
        return (f64::INFINITY, 0.0, 0.0, peak);
    }
    let tenth = (after.len() / 10).max(1);
    let mean = |v: &[u64]| v.iter().sum::<u64>() as f64 / v.len() as f64;
    let start = mean(&after[..tenth]);
    let end = mean(&after[after.len() - tenth..]);
    ((end - start) / start * 100.0, start, end, peak)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_measured_after_the_warmup() {
        // Memory that climbs during warm-up and then stays flat: no growth.
        let flat: Vec<(f64, u64)> = (0..100)
            .map(|i| (i as f64, if i < 15 { 1000 + i * 100 } else { 5000 }))
            .collect();
        let (g, start, end, peak) = rss_growth(&flat, 100.0);
        assert_eq!((g, start, end, peak), (0.0, 5000.0, 5000.0, 5000));
        // A steady leak shows.
        let leak: Vec<(f64, u64)> = (0..100).map(|i| (i as f64, 10_000 + i * 10)).collect();
        let (g, ..) = rss_growth(&leak, 100.0);
        assert!(g > 5.0, "{g}");
        // Too few samples cannot pass.
        assert!(rss_growth(&leak[..5], 100.0).0.is_infinite());
    }
}
