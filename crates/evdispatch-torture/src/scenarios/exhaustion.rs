//! Descriptor exhaustion: the server's `RLIMIT_NOFILE` set low, keep-alive
//! clients served, then a crowd of connections beyond the limit.
//!
//! 1. Baseline: the keep-alive clients alone (p99, server CPU).
//! 2. Exhausted: the same load, and once its connections are open a crowd
//!    of `limit + 256` connections that the kernel completes but the server
//!    cannot all accept; the load's window lies entirely at the limit (our
//!    server pauses accepting a reserve short of `RLIMIT_NOFILE`, so a
//!    request can still open its file; `EMFILE` on accept is the backstop).
//! 3. Idle at the limit: the crowd waits, nothing else runs; the server's
//!    CPU over 2 s (an accept loop spinning on EMFILE would show here).
//! 4. Resume: the first half of the crowd leaves; every other crowd
//!    connection sends a request and must be answered.
//! 5. Baseline again, the crowd gone: step 2's p99 is compared with the
//!    mean of the two baselines.
//!
//! nginx gets the same treatment with `worker_connections` at the limit
//! (its own bound; it does not run into EMFILE first).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use evdispatch_load::{cmdline::LoadCommand, Rate};
use evdispatch_server::cmdline::ServeCommand;
use serde_json::json;

use super::measure::{
    cpu_pct_over, fds_down_to, fds_of, load, p99_ms, start_target, stop, targets, workload_errors,
    Baseline,
};
use super::report::{Run, ScenarioReport};
use crate::env::Env;
use crate::json::num;
use crate::site::Site;

/// The servers' header timeout here, seconds: longer than the crowd waits.
const HEADER_TIMEOUT_S: u64 = 120;

/// Run the scenario on every model and nginx.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new(
        "exhaustion",
        "descriptor exhaustion (a crowd beyond RLIMIT_NOFILE)",
    );
    let site = Site::create()?;
    let p = env.profile;
    let limit: u64 = p.pick(96, 256, 256);
    let clients: u64 = p.pick(8, 32, 32);
    let rate: u64 = p.pick(200, 1000, 1000);
    let window: f64 = p.pick(2.0, 8.0, 20.0);
    let crowd_n = limit as usize + 256;
    for target in targets(env) {
        // The crowd waits through the whole exhausted phase before it
        // speaks: a header timeout shorter than that would rightly close
        // the waiting connections the server had accepted, which is not
        // what this scenario measures.
        let ours = ServeCommand {
            rlimit_nofile: Some(limit),
            threads: Some(limit as usize * 2),
            header_timeout: Some(Duration::from_secs(HEADER_TIMEOUT_S)),
            ..ServeCommand::default()
        };
        let Some((server, name, label)) = start_target(env, &site, &mut rep, &target, &ours, |c| {
            c.max_connections = limit as u32 - 16;
            c.request_timeout_s = HEADER_TIMEOUT_S as u32;
        }) else {
            continue;
        };
        let label = if target.is_none() {
            format!("{label} (worker_connections {limit})")
        } else {
            label
        };
        env.say(format!("exhaustion {name} {label}: baseline {window} s"));
        let load_args = LoadCommand {
            persistent: Some(clients),
            rate: Some(Rate::PerSecond(rate as f64)),
            duration: Some(Duration::from_secs_f64(window)),
            ..LoadCommand::default()
        };
        let fds_idle = fds_of(&server.pids());
        let base = load(env, &server, "/six.txt", &load_args)?;
        env.say(format!(
            "exhaustion {name} {label}: {crowd_n} connections against a limit of {limit}"
        ));
        let during_args = LoadCommand {
            warmup: Some(Duration::from_secs(2)),
            ..load_args.clone()
        };
        let addr = server.addr();
        let (during, mut crowd) = std::thread::scope(|s| {
            let h = s.spawn(|| load(env, &server, "/six.txt", &during_args));
            // The load's connections open within its first moments; the
            // crowd arrives during its warm-up.
            std::thread::sleep(Duration::from_millis(1000));
            let crowd: Vec<TcpStream> = (0..crowd_n)
                .map_while(|_| TcpStream::connect_timeout(&addr, Duration::from_secs(3)).ok())
                .collect();
            (h.join().expect("the load thread"), crowd)
        });
        let during = during?;
        let pids = server.pids();
        let fds_at_limit = fds_of(&pids);
        // Idle at the limit.
        let idle_cpu = cpu_pct_over(&pids, Duration::from_secs(2));
        env.say(format!(
            "exhaustion {name} {label}: {} crowd connections open; server idle at the limit uses {idle_cpu:.1}% CPU",
            crowd.len()
        ));
        // Resume: half the crowd leaves, the rest must be served.
        let t0 = Instant::now();
        let rest = crowd.split_off(crowd.len() / 2);
        drop(crowd);
        let waiting = rest.len();
        let crowd_out = serve_crowd(rest);
        let served = crowd_out.served;
        let resume_s = t0.elapsed().as_secs_f64();
        let fresh = fresh_request(addr);
        // The baseline again once the crowd has gone.
        fds_down_to(&pids, fds_idle + 8);
        env.say(format!(
            "exhaustion {name} {label}: baseline again {window} s"
        ));
        let base_after = load(env, &server, "/six.txt", &load_args)?;
        let stats = stop(server)?;
        let mut run = Run::new(name, &label);
        let baseline = Baseline::of(&base, &base_after);
        let p99_base = baseline.ms();
        let p99_during = p99_ms(&during);
        let errors = workload_errors(&during, &["persistent"])
            + workload_errors(&base, &["persistent"])
            + workload_errors(&base_after, &["persistent"]);
        run.figures = json!({
            "limit": limit,
            "keepalive_clients": clients,
            "rate": rate,
            "crowd": crowd_n,
            "p99_baseline_ms": p99_base,
            "p99_baseline_before_ms": baseline.before_ms,
            "p99_baseline_after_ms": baseline.after_ms,
            "p99_baseline_repeat": baseline.repeat(),
            "p99_exhausted_ms": p99_during,
            "p99_ratio": if p99_base > 0.0 { p99_during / p99_base } else { 0.0 },
            "server_cpu_baseline_pct": num(&base, "server_cpu_pct"),
            "server_cpu_exhausted_pct": num(&during, "server_cpu_pct"),
            "server_cpu_idle_at_limit_pct": idle_cpu,
            "server_fds_at_limit": fds_at_limit,
            "crowd_waiting": waiting,
            "crowd_served_after_free": served,
            "crowd_dropped": crowd_out.dropped,
            "crowd_timed_out": crowd_out.timed_out,
            "crowd_other": crowd_out.other,
            "crowd_other_first": crowd_out.other_first,
            "resume_s": resume_s,
            "emfile": num(&stats, "accept.errors.EMFILE"),
            "server_max_connections": num(&stats, "config.max_connections"),
            "accept_pauses": num(&stats, "accept.pauses"),
            "keepalive_errors": errors,
        });
        run.check(
            "keep-alive p99 at the limit / baseline (mean of before and after)",
            baseline.ratio(p99_during),
            "≤ 2",
            p99_base > 0.0 && p99_during <= 2.0 * p99_base,
        );
        run.check("keep-alive client errors", errors, "0", errors == 0);
        run.check(
            "server CPU idle at the limit, % of a core",
            idle_cpu,
            "< 5",
            idle_cpu < 5.0,
        );
        run.check(
            "waiting connections served after descriptors freed",
            json!({"served": served, "waiting": waiting}),
            "all",
            served == waiting && waiting > 0,
        );
        run.check("a fresh connection served", fresh, "200", fresh == 200);
        if name == "evdispatch" {
            // The server stops accepting a reserve short of its descriptor
            // limit (so an accepted request can still open its file); the
            // crowd must have brought it there.
            let pauses = num(&stats, "accept.pauses");
            run.check(
                "accepting paused at the descriptor limit",
                pauses,
                "> 0",
                pauses > 0.0,
            );
        }
        let what = format!(
            "exhaustion {name} {label}: p99 {p99_base:.2} -> {p99_during:.2} ms, idle CPU {idle_cpu:.1}%, {served}/{waiting} served after freeing"
        );
        rep.add(env, run, what);
    }
    Ok(rep.finish())
}

/// What happened to the waiting connections once descriptors freed.
#[derive(Debug, Default, Clone)]
struct CrowdOutcome {
    served: usize,
    /// Closed or reset by the server without an answer.
    dropped: usize,
    /// No answer before the deadline.
    timed_out: usize,
    /// Something else came back.
    other: usize,
    /// The status line of the first such answer.
    other_first: Option<String>,
}

/// A request for `/index.html` that closes its connection.
const LAST_REQUEST: &[u8] = b"GET /index.html HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";

/// Send one request on each waiting connection (all first, then read
/// each, 30 s in all).
fn serve_crowd(rest: Vec<TcpStream>) -> CrowdOutcome {
    let mut out = CrowdOutcome::default();
    let mut open = Vec::new();
    for mut c in rest {
        if c.write_all(LAST_REQUEST).is_ok() {
            open.push(c);
        } else {
            out.dropped += 1;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for mut c in open {
        let left = deadline.saturating_duration_since(Instant::now());
        let _ = c.set_read_timeout(Some(left.max(Duration::from_millis(10))));
        let mut got = Vec::new();
        let r = c.read_to_end(&mut got);
        if got.starts_with(b"HTTP/1.1 200") {
            out.served += 1;
        } else if !got.is_empty() {
            out.other += 1;
            if out.other_first.is_none() {
                let line = got.split(|&b| b == b'\r').next().unwrap_or(&[]);
                out.other_first = Some(String::from_utf8_lossy(line).into_owned());
            }
        } else if matches!(&r, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
        {
            out.timed_out += 1;
        } else {
            out.dropped += 1;
        }
    }
    out
}

/// The status a new connection gets for `/index.html` (0: none).
pub fn fresh_request(addr: std::net::SocketAddr) -> u16 {
    let Ok(mut c) = TcpStream::connect_timeout(&addr, Duration::from_secs(5)) else {
        return 0;
    };
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    if c.write_all(LAST_REQUEST).is_err() {
        return 0;
    }
    let mut got = Vec::new();
    let _ = c.read_to_end(&mut got);
    std::str::from_utf8(got.get(9..12).unwrap_or(b""))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}
