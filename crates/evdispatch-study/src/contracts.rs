//! The one place that knows the other commands' interfaces: the command lines
//! the study builds for `evdispatch serve`, `load` and `bench`, and the
//! parsing of what they write. When a tool's output changes, this file
//! changes and nothing else does.
//!
//! The contracts are the ones documented in each crate's docs:
//! * `evdispatch serve` (crate `evdispatch-server`): its flags, the line
//!   `listening on http://IP:PORT`, and the stats document
//!   [`SERVE_SCHEMA`] written on SIGTERM;
//! * `evdispatch load --json` (crate `evdispatch-load`): one [`LOAD_SCHEMA`]
//!   document;
//! * `evdispatch bench poller|fdalloc|overflow --json` (crate
//!   `evdispatch-bench`): `{"cells": [...], "skipped": [...], …}` or a list of
//!   cells.
//!
//! Every parser maps the tool's JSON onto the study's canonical metric names
//! ([`parse_load`], [`parse_server_stats`]), which the scenarios, the claims
//! and the report use.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::anyhow;
use evdispatch_load::cmdline::LoadCommand;
use evdispatch_server::cmdline::ServeCommand;
use serde_json::{Map, Value};

use crate::spec::{LoadSpec, Rate, ServerSpec};

/// The stats document `evdispatch serve --stats-json` writes.
pub const SERVE_SCHEMA: &str = "evdispatch-serve-stats/1";
/// The document `evdispatch load --json` prints.
pub const LOAD_SCHEMA: &str = "evdispatch-load/1";

/// The `evdispatch serve` command line for `spec`, serving `root` on an
/// ephemeral loopback port, workers pinned to `cpus`. The harness adds
/// `--stats-json FILE`.
pub fn serve_command(
    spec: &ServerSpec,
    root: &Path,
    cpus: &[usize],
) -> anyhow::Result<ServeCommand> {
    use clap::ValueEnum;
    fn choice<T: ValueEnum>(flag: &str, v: &Option<String>) -> anyhow::Result<Option<T>> {
        v.as_deref()
            .map(|s| T::from_str(s, false).map_err(|e| anyhow!("serve {flag} {s}: {e}")))
            .transpose()
    }
    Ok(ServeCommand {
        workers: Some(spec.workers as usize),
        accept: choice("--accept", &spec.accept)?,
        listener: choice("--listener", &spec.listener)?,
        cpu: cpus.to_vec(),
        rlimit_sigpending: spec.rlimit_sigpending,
        idle_timeout: spec.idle_timeout_s.map(Duration::from_secs_f64),
        header_timeout: spec.header_timeout_s.map(Duration::from_secs_f64),
        threads: spec.threads.map(|n| n as usize),
        no_exclusive: !spec.exclusive,
        no_eager_read: !spec.eager_read,
        poller_opt: spec.poller_opts.clone(),
        extra: spec.extra_args.iter().map(Into::into).collect(),
        ..ServeCommand::loopback(root, spec.mechanism.as_deref().unwrap_or("epoll"))
    })
}

/// The `evdispatch load` command line for `spec` against `base_url`, the
/// generator pinned to `cpu`, sampling the CPU of `server_pids`.
///
/// Workloads (crate `evdispatch-load`): open-loop sessions are `--rate R
/// --sessions 0` (as many as the rate gives over the window); closed-loop
/// sessions `--rate max --sessions 0 --connections C`; keep-alive
/// connections sharing an open-loop rate `--rate R --persistent C`; a closed
/// loop over keep-alive connections `--rate max --connections C`.
pub fn load_command(
    spec: &LoadSpec,
    base_url: &str,
    server_pids: &[u32],
    cpu: Option<usize>,
) -> LoadCommand {
    let some = |v: u32| (v > 0).then_some(v);
    let max = matches!(spec.rate, Rate::Max(_));
    // One process may hold 20,000 descriptors: past 8,000 long-lived
    // connections (and the sessions in flight beside them) the generator
    // runs as two processes, both on its core.
    let procs = if spec.held() > 8000 {
        spec.procs.max(2)
    } else {
        spec.procs
    };
    LoadCommand {
        rate: Some(match spec.rate {
            Rate::PerSec(r) => evdispatch_load::Rate::PerSecond(r),
            Rate::Max(_) => evdispatch_load::Rate::Max,
        }),
        duration: Some(Duration::from_secs_f64(spec.duration_s)),
        warmup: (spec.warmup_s > 0.0).then(|| Duration::from_secs_f64(spec.warmup_s)),
        interval: Some(Duration::from_secs_f64(spec.interval_s())),
        timeout: Some(Duration::from_secs_f64(spec.timeout_s)),
        sessions: spec.sessions.then_some(0),
        calls: (spec.sessions && spec.calls > 1).then_some(spec.calls),
        no_tls_resume: spec.full_handshakes,
        connections: max.then(|| spec.connections.max(1).into()),
        persistent: some(spec.persistent).filter(|_| !max).map(Into::into),
        inactive: some(spec.inactive).map(Into::into),
        idle: some(spec.idle).map(Into::into),
        procs: (procs > 1).then_some(procs),
        // New connections at tens of thousands per second: spread them
        // over several source addresses so TIME_WAIT never runs out of
        // ports.
        source_addrs: spec.sessions.then_some(4),
        cpu: cpu.into_iter().collect(),
        server_pid: server_pids.to_vec(),
        json: true,
        ..LoadCommand::new(format!(
            "{base_url}/{}",
            spec.document.trim_start_matches('/')
        ))
    }
}

/// The value at a dotted path (`latency_us.p50`).
pub fn at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, k| v.get(k))
}

fn num_at(doc: &Value, path: &str) -> Option<f64> {
    at(doc, path).and_then(|v| match v {
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        other => other.as_f64(),
    })
}

/// Map `evdispatch load --json` output ([`LOAD_SCHEMA`]) onto the study's
/// metric names. `generator_saturated` is 1 or 0. `error_pct` is the
/// share of connection attempts that ended in an error (httperf's "% of
/// connections with errors", seed 000 Fig. 10), or of requests for
/// keep-alive workloads.
pub fn parse_load(doc: &Value) -> anyhow::Result<BTreeMap<String, f64>> {
    let schema = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    if schema != LOAD_SCHEMA {
        anyhow::bail!("the load generator printed schema '{schema}', the study reads '{LOAD_SCHEMA}': rebuild both from the same tree");
    }
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.to_string(), v);
        }
    };
    put("reply_rate", num_at(doc, "reply_rate"));
    // With fewer than two full intervals there is no spread to show.
    let samples = at(doc, "rate_intervals.samples")
        .and_then(Value::as_array)
        .map(Vec::len)
        .unwrap_or(0);
    if samples >= 2 {
        put("reply_rate_min", num_at(doc, "rate_intervals.min"));
        put("reply_rate_max", num_at(doc, "rate_intervals.max"));
        put("reply_rate_stddev", num_at(doc, "rate_intervals.stddev"));
    }
    put("requests", num_at(doc, "requests"));
    put("replies", num_at(doc, "replies"));
    let count = num_at(doc, "latency_us.count").unwrap_or(0.0);
    if count > 0.0 {
        for q in ["p50", "p90", "p99", "p999", "max", "mean"] {
            put(&format!("{q}_us"), num_at(doc, &format!("latency_us.{q}")));
        }
        for q in ["p50", "p99", "mean"] {
            put(
                &format!("{q}_uncorrected_us"),
                num_at(doc, &format!("latency_uncorrected_us.{q}")),
            );
        }
    }
    let errors = num_at(doc, "errors_total");
    put("errors", errors);
    let attempted = num_at(doc, "connections.attempted");
    put("connections_attempted", attempted);
    let sessions = num_at(doc, "config.sessions").is_some()
        && at(doc, "config.sessions") != Some(&Value::Null);
    let denominator = if sessions {
        attempted
    } else {
        num_at(doc, "requests")
    };
    if let (Some(e), Some(d)) = (errors, denominator) {
        put("error_pct", (d > 0.0).then(|| 100.0 * e / d));
    }
    put("connections_peak", num_at(doc, "connections_peak"));
    put("reopens", num_at(doc, "reopens"));
    put("missed_slots", num_at(doc, "missed_slots"));
    put("unsent_at_end", num_at(doc, "unsent_at_end"));
    put("generator_cpu_pct", num_at(doc, "generator_cpu_pct"));
    put("generator_saturated", num_at(doc, "generator_saturated"));
    put("server_cpu_pct", num_at(doc, "server_cpu_pct"));
    put("setup_s", num_at(doc, "setup_s"));
    Ok(m)
}

/// Map the server's stats document ([`SERVE_SCHEMA`]) onto the study's
/// metric names; the poller counters are the top-level `poller`
/// object (summed over workers by the server).
pub fn parse_server_stats(doc: &Value) -> anyhow::Result<BTreeMap<String, f64>> {
    let schema = doc.get("schema").and_then(Value::as_str).unwrap_or("");
    if schema != SERVE_SCHEMA {
        anyhow::bail!("the server wrote stats schema '{schema}', the study reads '{SERVE_SCHEMA}': rebuild both from the same tree");
    }
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.to_string(), v);
        }
    };
    put("server_requests", num_at(doc, "requests.total"));
    put("server_accepted", num_at(doc, "connections.accepted"));
    put("server_peak_open", num_at(doc, "connections.peak_open"));
    put(
        "server_timed_out",
        Some(
            ["header_timed_out", "idle_timed_out", "write_timed_out"]
                .iter()
                .filter_map(|k| num_at(doc, &format!("connections.{k}")))
                .sum(),
        ),
    );
    put(
        "wakeups_per_accept",
        num_at(doc, "accept.wakeups_per_accept"),
    );
    put("listener_events", num_at(doc, "accept.listener_events"));
    for k in [
        "waits",
        "wait_syscalls",
        "events",
        "empty_waits",
        "signals_dequeued",
        "dequeue_calls",
        "overflows",
        "recoveries",
        "coalesced",
        "stale_dropped",
        "mode_switches",
        "signal_mode_ns",
        "poll_mode_ns",
    ] {
        put(k, num_at(doc, &format!("poller.{k}")));
    }
    Ok(m)
}

/// One cell of a bench's JSON output, split into its configuration
/// (strings, counts, flags) and its measurements (every number whose name
/// ends in `_us`, `_ns`, `_pct` or a `_per_…` unit, that is a ratio, or
/// that counts what happened: `spurious`, `leftover`, `bytes_read`).
pub fn split_cell(cell: &Map<String, Value>) -> (Map<String, Value>, BTreeMap<String, f64>) {
    let mut config = Map::new();
    let mut metrics = BTreeMap::new();
    for (k, v) in cell {
        let measured = ["_us", "_ns", "_pct"].iter().any(|s| k.ends_with(s))
            || k.contains("_per_")
            || k.starts_with("ratio_")
            || ["spurious", "leftover", "bytes_read"].contains(&k.as_str());
        match v.as_f64() {
            Some(x) if measured => {
                metrics.insert(k.clone(), x);
            }
            // Lists of samples (round medians, recovery times) stay in `raw`.
            _ if v.is_array() => {}
            _ => {
                config.insert(k.clone(), v.clone());
            }
        }
    }
    (config, metrics)
}

/// A bench's JSON output: its cells, and the rows or cells it did not run
/// (name, why, and the command that makes it available).
#[derive(Debug, Default)]
pub struct BenchOutput {
    /// One object per cell.
    pub cells: Vec<Map<String, Value>>,
    /// `(what, why)` for every row or cell that did not run.
    pub skipped: Vec<(String, String)>,
    /// The rest of the document (plan, machine, socketpair costs).
    pub extra: Map<String, Value>,
}

/// Parse `evdispatch bench … --json`: `{"cells": [...], "skipped": [...]}`
/// (poller, fdalloc) or a bare list of cells (overflow).
pub fn bench_output(stdout: &str) -> anyhow::Result<BenchOutput> {
    let v: Value = serde_json::from_str(stdout.trim()).map_err(|e| {
        anyhow::anyhow!(
            "bench printed no JSON document ({e}); first bytes: {:?}",
            &stdout[..stdout.len().min(200)]
        )
    })?;
    let objects = |a: Vec<Value>| -> Vec<Map<String, Value>> {
        a.into_iter()
            .filter_map(|x| x.as_object().cloned())
            .collect()
    };
    let mut out = BenchOutput::default();
    match v {
        Value::Array(a) => out.cells = objects(a),
        Value::Object(mut o) => {
            if let Some(Value::Array(a)) = o.remove("cells") {
                out.cells = objects(a);
            }
            if let Some(Value::Array(a)) = o.remove("skipped") {
                for s in a {
                    let row = s.get("row").and_then(Value::as_str).unwrap_or("?");
                    let what = match s.get("fds").and_then(Value::as_u64) {
                        Some(n) => format!("{row} at N = {n}"),
                        None => row.to_string(),
                    };
                    let mut why = s
                        .get("reason")
                        .and_then(Value::as_str)
                        .unwrap_or("not run")
                        .to_string();
                    if let Some(i) = s.get("install").and_then(Value::as_str) {
                        why = format!("{why} — {i}");
                    }
                    out.skipped.push((what, why));
                }
            }
            out.extra = o;
        }
        _ => anyhow::bail!("bench printed JSON that is neither a list nor an object"),
    }
    if out.cells.is_empty() && out.skipped.is_empty() {
        anyhow::bail!("bench printed no cells");
    }
    Ok(out)
}

/// Rows of `evdispatch bench poller --list`: name → `Ok(())` when it can run
/// here, `Err(why and how to install)` otherwise.
pub fn poller_rows(list: &str) -> BTreeMap<String, Result<(), String>> {
    let mut rows = BTreeMap::new();
    for line in list.lines() {
        let mut it = line.split_whitespace();
        let (Some(name), Some(_kind), Some(state)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let status = if state == "available" {
            Ok(())
        } else {
            let why = line
                .split_once("unavailable:")
                .map(|(_, r)| r.trim().to_string())
                .unwrap_or_else(|| state.to_string());
            Err(why)
        };
        rows.insert(name.to_string(), status);
    }
    rows
}

/// Minimum, maximum, mean and (population) standard deviation.
pub fn summary(v: &[f64]) -> (f64, f64, f64, f64) {
    let n = v.len().max(1) as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (min, max, mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::{LoadSpec, ServerSpec};
    use serde_json::json;

    #[test]
    fn serve_command_line() {
        let mut s = ServerSpec::ours("poll");
        s.eager_read = false;
        s.exclusive = false;
        s.listener = Some("shared".into());
        s.rlimit_sigpending = Some(64);
        s.header_timeout_s = Some(60.0);
        let a = serve_command(&s, Path::new("/www"), &[0])
            .unwrap()
            .to_string();
        assert!(a.starts_with("--root /www --listen 127.0.0.1:0 --mechanism poll --workers 1"));
        for want in [
            "--cpu 0",
            "--listener shared",
            "--no-exclusive",
            "--no-eager-read",
            "--rlimit-sigpending 64",
            "--header-timeout 60s",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
    }

    #[test]
    fn load_command_lines_for_each_workload() {
        let open = LoadSpec::sessions("6k.html", 5000.0, 1.0);
        let a = load_command(&open, "http://127.0.0.1:9", &[42, 43], Some(1)).to_string();
        assert!(a.starts_with("http://127.0.0.1:9/6k.html --rate 5000 --duration 1s"));
        for want in [
            "--sessions 0",
            "--source-addrs 4",
            "--cpu 1",
            "--server-pid 42,43",
            "--json",
        ] {
            assert!(a.contains(want), "{want} missing from {a}");
        }
        // Closed-loop sessions: sessions 0 (unbounded) over C connections.
        let mut closed = open.clone();
        closed.rate = Rate::MAX;
        closed.connections = 50;
        let a = load_command(&closed, "http://h:1", &[], None).to_string();
        assert!(
            a.contains("--rate max")
                && a.contains("--sessions 0 ")
                && a.contains("--connections 50")
        );
        assert!(!a.contains("--persistent"));
        // A warm-up goes to the generator, which leaves it out of its window.
        assert!(!a.contains("--warmup"));
        let warm = load_command(&open.clone().warmed(0.3), "http://h:1", &[], None).to_string();
        assert!(warm.contains("--warmup 0.3s"), "{warm}");
        let mut keep = LoadSpec::sessions("92b.html", 2000.0, 1.0);
        keep.sessions = false;
        keep.persistent = 1000;
        let a = load_command(&keep, "http://h:1", &[], None).to_string();
        assert!(a.contains("--persistent 1000") && !a.contains("--sessions"));
    }

    fn load_doc() -> Value {
        json!({
            "schema": "evdispatch-load/1",
            "config": {"sessions": 0},
            "reply_rate": 950.0,
            "requests": 1000, "replies": 990,
            "rate_intervals": {"interval_s": 0.2, "samples": [900.0, 1000.0], "min": 900.0, "avg": 950.0, "max": 1000.0, "stddev": 50.0},
            "latency_us": {"count": 990, "min": 10, "mean": 150.0, "stddev": 3.0, "p50": 120, "p90": 300, "p99": 900, "p999": 2000, "max": 5000},
            "latency_uncorrected_us": {"count": 990, "min": 10, "mean": 100.0, "stddev": 3.0, "p50": 100, "p90": 200, "p99": 400, "p999": 500, "max": 600},
            "errors": {"refused": 3, "timeout": 2},
            "errors_total": 5,
            "connections": {"attempted": 1251, "established": 1246, "failed": 5, "closed_by_client": 990, "closed_by_server": 0, "open_at_end": 251, "peak": 300, "accounted": true},
            "connections_peak": 300,
            "generator_cpu_pct": 40.0,
            "generator_saturated": true,
            "server_cpu_pct": 55.5,
            "missed_slots": 7,
            "reopens": 2
        })
    }

    #[test]
    fn load_json_onto_canonical_metrics() {
        let m = parse_load(&load_doc()).unwrap();
        assert_eq!(m["reply_rate"], 950.0);
        assert_eq!(
            (
                m["reply_rate_min"],
                m["reply_rate_max"],
                m["reply_rate_stddev"]
            ),
            (900.0, 1000.0, 50.0)
        );
        assert_eq!(m["p50_us"], 120.0);
        assert_eq!(m["p99_uncorrected_us"], 400.0);
        assert_eq!(m["errors"], 5.0);
        // Errors over connection attempts for sessions, not over requests.
        assert!((m["error_pct"] - 100.0 * 5.0 / 1251.0).abs() < 1e-9);
        assert_eq!(m["generator_saturated"], 1.0);
        assert_eq!(m["server_cpu_pct"], 55.5);
        let mut keep = load_doc();
        keep["config"]["sessions"] = Value::Null;
        let m = parse_load(&keep).unwrap();
        assert!((m["error_pct"] - 0.5).abs() < 1e-9, "over requests");
        let mut one = load_doc();
        one["rate_intervals"]["samples"] = json!([950.0]);
        assert!(!parse_load(&one).unwrap().contains_key("reply_rate_stddev"));
        assert!(parse_load(&json!({"schema": "other"})).is_err());
    }

    #[test]
    fn server_stats_onto_canonical_metrics() {
        let doc = json!({
            "schema": "evdispatch-serve-stats/1",
            "requests": {"total": 901, "by_status": {"200": 900, "404": 1}},
            "connections": {"accepted": 50, "closed": 50, "header_timed_out": 1, "idle_timed_out": 2, "write_timed_out": 0, "peak_open": 9},
            "accept": {"listener_events": 60, "wakeups_per_accept": 1.2},
            "poller": {"waits": 150, "overflows": 5, "signals_dequeued": 70, "mode_switches": 2},
            "workers": [{"poller": {"waits": 100, "overflows": 2}}, {"poller": {"waits": 50, "overflows": 3}}]
        });
        let m = parse_server_stats(&doc).unwrap();
        assert_eq!(m["server_requests"], 901.0);
        assert_eq!(m["server_accepted"], 50.0);
        assert_eq!(m["server_timed_out"], 3.0);
        assert_eq!(m["wakeups_per_accept"], 1.2);
        assert_eq!(m["waits"], 150.0);
        assert_eq!(m["overflows"], 5.0);
        assert_eq!(m["mode_switches"], 2.0);
        assert!(parse_server_stats(&json!({})).is_err());
    }

    #[test]
    fn bench_output_shapes() {
        let doc = r#"{"bench":"poller","cells":[{"mechanism":"poll","fds":100,"active":1,"placement":"rotating","median_us":4.8,"p90_us":5.0,"ratio_to_epoll":3.0,"round_medians_us":[1,2],"setup_us_per_fd":0.5,"spurious":0}],
            "skipped":[{"row":"select","fds":10000,"reason":"below 1024 only","install":null},{"row":"libev","fds":null,"reason":"not built","install":"apt-get install -y libev-dev"}]}"#;
        let out = bench_output(doc).unwrap();
        let (cfg, met) = split_cell(&out.cells[0]);
        assert_eq!(cfg["mechanism"], json!("poll"));
        assert_eq!(cfg["fds"], json!(100));
        assert!(!cfg.contains_key("round_medians_us"));
        assert_eq!(met["median_us"], 4.8);
        assert_eq!(met["ratio_to_epoll"], 3.0);
        assert_eq!(met["setup_us_per_fd"], 0.5);
        assert_eq!(met["spurious"], 0.0);
        assert!(!cfg.contains_key("setup_us_per_fd"));
        assert_eq!(out.skipped[0].0, "select at N = 10000");
        assert!(out.skipped[1].1.ends_with("apt-get install -y libev-dev"));
        assert_eq!(bench_output(r#"[{"a":1}]"#).unwrap().cells.len(), 1);
        assert!(bench_output("not JSON").is_err());
    }

    #[test]
    fn poller_list() {
        let rows = poller_rows("epoll        library  available\nlibev        c-peer   unavailable: the libev harness is not built in — sudo apt-get install -y libev-dev\n");
        assert_eq!(rows["epoll"], Ok(()));
        assert!(rows["libev"]
            .as_ref()
            .unwrap_err()
            .contains("apt-get install -y libev-dev"));
    }
}
