//! The one place that knows the other commands' interfaces: the command lines
//! the study builds for `evdispatch bench`, `serve` and `load`, and the
//! parsing of what they print or write. When a tool's output changes, this
//! file changes and nothing else does.
//!
//! Every parser maps the tool's JSON onto the study's canonical metric names
//! (listed in [`LOAD_METRICS`] and [`SERVER_METRICS`]), which the scenarios,
//! the claims and the report use.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use crate::drive::{LoadSpec, Rate, ServerSpec};

/// `evdispatch serve …` arguments for `spec` (issue #4's command line):
/// `--root DIR --listen 127.0.0.1:0 --mechanism M --workers K --accept one|all
/// --listener reuseport|shared --cpu LIST --stats-json FILE --poller-opt k=v
/// --rlimit-sigpending N --idle-timeout S --header-timeout S`.
pub fn serve_args(spec: &ServerSpec, root: &Path, stats: &Path, cpu: Option<&str>) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "serve".into(),
        "--root".into(),
        root.display().to_string(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--workers".into(),
        spec.workers.to_string(),
        "--stats-json".into(),
        stats.display().to_string(),
    ];
    let mut opt = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            a.push(k.into());
            a.push(v);
        }
    };
    opt("--mechanism", spec.mechanism.clone());
    opt("--accept", spec.accept.clone());
    opt("--listener", spec.listener.clone());
    // One worker on the server's CPU; K workers on CPUs 0..K.
    opt(
        "--cpu",
        cpu.map(|c| {
            if spec.workers > 1 {
                format!("0-{}", spec.workers - 1)
            } else {
                c.to_string()
            }
        }),
    );
    opt(
        "--rlimit-sigpending",
        spec.rlimit_sigpending.map(|n| n.to_string()),
    );
    opt("--idle-timeout", spec.idle_timeout_s.map(|s| s.to_string()));
    opt(
        "--header-timeout",
        spec.header_timeout_s.map(|s| s.to_string()),
    );
    for o in &spec.poller_opts {
        a.push("--poller-opt".into());
        a.push(o.clone());
    }
    a.extend(spec.extra_args.iter().cloned());
    a
}

/// `evdispatch load …` arguments for `spec` (issue #5's command line):
/// `URL --rate R|max --duration S --sessions N --calls K --persistent C
/// --inactive I --idle I --procs P --server-pid PID --json`. Sessions are
/// counted: `rate × duration` of them at `rate` per second.
pub fn load_args(spec: &LoadSpec, base_url: &str, server_pid: u32) -> Vec<String> {
    let mut a: Vec<String> = vec![
        "load".into(),
        format!("{base_url}/{}", spec.document.trim_start_matches('/')),
        "--rate".into(),
        match spec.rate {
            Rate::PerSec(r) => format!("{r}"),
            Rate::Max(_) => "max".into(),
        },
        "--duration".into(),
        format!("{}", spec.duration_s),
    ];
    let mut opt = |k: &str, v: u64| {
        if v > 0 {
            a.push(k.into());
            a.push(v.to_string());
        }
    };
    if spec.sessions {
        let n = spec
            .rate
            .per_sec()
            .map(|r| (r * spec.duration_s).ceil() as u64)
            .unwrap_or(0);
        opt("--sessions", n.max(1));
        opt("--calls", spec.calls as u64);
    }
    opt("--persistent", spec.persistent as u64);
    opt("--inactive", spec.inactive as u64);
    opt("--idle", spec.idle as u64);
    if spec.procs > 1 {
        opt("--procs", spec.procs as u64);
    }
    a.extend([
        "--server-pid".into(),
        server_pid.to_string(),
        "--json".into(),
    ]);
    a
}

/// The line `evdispatch serve` prints on stdout once it accepts connections:
/// `listening on http://IP:PORT`. Returns the base URL.
pub fn parse_listening(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("listening on ")?;
    let url = rest.split_whitespace().next()?;
    (url.starts_with("http://") && url[7..].contains(':'))
        .then(|| url.trim_end_matches('/').to_string())
}

/// Flatten a JSON document into `(path, number)` leaves; path components are
/// object keys and array indices (`workers.0.poller.overflows`).
pub fn numeric_leaves(v: &Value) -> Vec<(Vec<String>, f64)> {
    fn walk(v: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, f64)>) {
        match v {
            Value::Number(n) => {
                if let Some(x) = n.as_f64() {
                    out.push((path.clone(), x));
                }
            }
            Value::Object(m) => {
                for (k, v) in m {
                    path.push(k.clone());
                    walk(v, path, out);
                    path.pop();
                }
            }
            Value::Array(a) => {
                for (i, v) in a.iter().enumerate() {
                    path.push(i.to_string());
                    walk(v, path, out);
                    path.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut Vec::new(), &mut out);
    out
}

/// The value of a counter named `name` anywhere in `doc`: the shallowest
/// occurrences win (a top-level total beats per-worker copies), and several
/// at that depth (one per worker) are summed. `under` restricts the search to
/// paths containing that component (`poller`), if any such path exists.
pub fn counter(doc: &Value, name: &str, under: Option<&str>) -> Option<f64> {
    let leaves = numeric_leaves(doc);
    let named: Vec<&(Vec<String>, f64)> = leaves
        .iter()
        .filter(|(p, _)| p.last().map(|s| s == name).unwrap_or(false))
        .collect();
    let scoped: Vec<&(Vec<String>, f64)> = match under {
        Some(u) if named.iter().any(|(p, _)| p.iter().any(|c| c == u)) => named
            .into_iter()
            .filter(|(p, _)| p.iter().any(|c| c == u))
            .collect(),
        _ => named,
    };
    let depth = scoped.iter().map(|(p, _)| p.len()).min()?;
    Some(
        scoped
            .iter()
            .filter(|(p, _)| p.len() == depth)
            .map(|(_, v)| v)
            .sum(),
    )
}

/// The value at a dotted path (`latency_us.p50`).
pub fn at<'a>(doc: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(doc, |v, k| v.get(k))
}

fn num_at(doc: &Value, path: &str) -> Option<f64> {
    at(doc, path).and_then(Value::as_f64)
}

/// Canonical names of the metrics taken from `evdispatch load --json`.
pub const LOAD_METRICS: &[&str] = &[
    "reply_rate",
    "reply_rate_min",
    "reply_rate_max",
    "reply_rate_stddev",
    "p50_us",
    "p90_us",
    "p99_us",
    "p999_us",
    "max_us",
    "mean_us",
    "p50_uncorrected_us",
    "p99_uncorrected_us",
    "errors",
    "error_pct",
    "connections_peak",
    "reopens",
    "generator_cpu_pct",
    "server_cpu_pct",
    "missed_slots",
];

/// Map `evdispatch load --json` output onto [`LOAD_METRICS`].
///
/// Contract (issue #5): `reply_rate`, `latency_us` and
/// `latency_uncorrected_us` each `{p50, p90, p99, p999, max}`, `errors`
/// `{cause: n}`, `connections_peak`, `generator_cpu_pct`, `server_cpu_pct`,
/// `reopens`, `rate_intervals` (per-interval reply rates, or their
/// `{min, avg, max, stddev}`).
pub fn parse_load(doc: &Value) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            m.insert(k.to_string(), v);
        }
    };
    put(
        "reply_rate",
        num_at(doc, "reply_rate").or_else(|| num_at(doc, "reply_rate.avg")),
    );
    // Interval statistics: an array of rates, or a summary object, either
    // under `rate_intervals` or inside `reply_rate`.
    let intervals: Option<Vec<f64>> =
        at(doc, "rate_intervals")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_f64().or_else(|| x.get("rate").and_then(Value::as_f64)))
                    .collect()
            });
    match intervals.filter(|v| !v.is_empty()) {
        Some(v) => {
            let (min, max, _, sd) = summary(&v);
            put("reply_rate_min", Some(min));
            put("reply_rate_max", Some(max));
            put("reply_rate_stddev", Some(sd));
        }
        None => {
            for (name, keys) in [
                ("reply_rate_min", ["rate_intervals.min", "reply_rate_min"]),
                ("reply_rate_max", ["rate_intervals.max", "reply_rate_max"]),
                (
                    "reply_rate_stddev",
                    ["rate_intervals.stddev", "reply_rate_stddev"],
                ),
            ] {
                put(name, keys.iter().find_map(|k| num_at(doc, k)));
            }
        }
    }
    for q in ["p50", "p90", "p99", "p999", "max", "mean"] {
        put(&format!("{q}_us"), num_at(doc, &format!("latency_us.{q}")));
    }
    put(
        "p50_uncorrected_us",
        num_at(doc, "latency_uncorrected_us.p50"),
    );
    put(
        "p99_uncorrected_us",
        num_at(doc, "latency_uncorrected_us.p99"),
    );
    let errors: Option<f64> = match at(doc, "errors") {
        Some(Value::Object(o)) => Some(o.values().filter_map(Value::as_f64).sum()),
        Some(v) => v.as_f64(),
        None => None,
    };
    put("errors", errors);
    // Error percentage over what was attempted (connections for session
    // workloads, requests otherwise).
    let attempted = [
        "connections_attempted",
        "connections",
        "requests_sent",
        "requests",
    ]
    .iter()
    .find_map(|k| num_at(doc, k).or_else(|| num_at(doc, &format!("{k}.total"))));
    if let (Some(e), Some(a)) = (errors, attempted) {
        put("error_pct", (a > 0.0).then(|| 100.0 * e / a));
    }
    for k in [
        "connections_peak",
        "reopens",
        "generator_cpu_pct",
        "server_cpu_pct",
        "missed_slots",
    ] {
        put(k, num_at(doc, k));
    }
    m
}

/// Canonical names of the counters taken from the server's `--stats-json`.
pub const SERVER_METRICS: &[&str] = &[
    "requests",
    "accepted",
    "accept_errors",
    "worker_wakeups",
    "worker_accepts",
    "waits",
    "wait_syscalls",
    "events",
    "signals_dequeued",
    "dequeue_calls",
    "overflows",
    "recoveries",
    "coalesced",
    "mode_switches",
    "signal_mode_ns",
    "poll_mode_ns",
];

/// Map the server's `--stats-json` file onto [`SERVER_METRICS`] (prefixed
/// `server_` where a load metric has the same name).
///
/// Contract (issue #4): requests by status, connections, accept errors,
/// wake-ups and accepts per worker, and the Poller's `Stats`
/// (`evdispatch::Stats` field names) summed over workers.
pub fn parse_server_stats(doc: &Value) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let requests = match at(doc, "requests") {
        Some(Value::Object(o)) => Some(o.values().filter_map(Value::as_f64).sum()),
        Some(v) => v.as_f64(),
        None => None,
    };
    if let Some(r) = requests {
        m.insert("server_requests".into(), r);
    }
    let accepted = num_at(doc, "connections.accepted").or_else(|| counter(doc, "accepted", None));
    if let Some(a) = accepted {
        m.insert("server_accepted".into(), a);
    }
    if let Some(e) = counter(doc, "accept_errors", None) {
        m.insert("server_accept_errors".into(), e);
    }
    // Per-worker wake-ups and accepts (the thundering herd), outside the
    // poller's own counters.
    if let Some(w) = at(doc, "workers") {
        if let Some(x) = counter(w, "wakeups", Some("herd")).or_else(|| counter(w, "wakeups", None))
        {
            m.insert("worker_wakeups".into(), x);
        }
        if let Some(x) = counter(w, "accepts", None) {
            m.insert("worker_accepts".into(), x);
        }
    }
    for k in [
        "waits",
        "wait_syscalls",
        "events",
        "signals_dequeued",
        "dequeue_calls",
        "overflows",
        "recoveries",
        "coalesced",
        "mode_switches",
        "signal_mode_ns",
        "poll_mode_ns",
    ] {
        if let Some(v) = counter(doc, k, Some("poller")) {
            m.insert(k.to_string(), v);
        }
    }
    m
}

/// One cell of `evdispatch bench poller --json` or `bench fdalloc --json`,
/// split into its configuration (strings and counts) and its measurements
/// (every number whose name ends in `_us`, `_ns`, `_pct` or `_per_s`).
///
/// Contract (issue #2): poller cells carry `mechanism`, `fds`, `active`,
/// `placement`, `median_us`, `p90_us`, `min_us`, `max_us`, `write_median_us`.
pub fn split_cell(cell: &Map<String, Value>) -> (Map<String, Value>, BTreeMap<String, f64>) {
    let mut config = Map::new();
    let mut metrics = BTreeMap::new();
    for (k, v) in cell {
        let measured = ["_us", "_ns", "_pct", "_per_s"]
            .iter()
            .any(|s| k.ends_with(s));
        match v.as_f64() {
            Some(x) if measured => {
                metrics.insert(k.clone(), x);
            }
            _ => {
                config.insert(k.clone(), v.clone());
            }
        }
    }
    (config, metrics)
}

/// The cells of a bench's JSON output: a JSON array, an object with a
/// `cells`/`results`/`rows` array, or one object per line.
pub fn bench_cells(stdout: &str) -> anyhow::Result<Vec<Map<String, Value>>> {
    let as_cells = |v: Value| -> Option<Vec<Map<String, Value>>> {
        let arr = match v {
            Value::Array(a) => a,
            Value::Object(mut o) => ["cells", "results", "rows"]
                .iter()
                .find_map(|k| o.remove(*k).and_then(|x| x.as_array().cloned()))?,
            _ => return None,
        };
        Some(
            arr.into_iter()
                .filter_map(|x| x.as_object().cloned())
                .collect(),
        )
    };
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim()) {
        if let Some(c) = as_cells(v) {
            return Ok(c);
        }
    }
    let mut cells = Vec::new();
    for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line) {
            cells.push(o);
        }
    }
    if cells.is_empty() {
        anyhow::bail!(
            "bench printed no JSON cells (expected an array, {{\"cells\": [...]}}, or one object per line); first bytes: {:?}",
            &stdout[..stdout.len().min(200)]
        );
    }
    Ok(cells)
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
    use serde_json::json;

    #[test]
    fn listening_line() {
        assert_eq!(
            parse_listening("listening on http://127.0.0.1:41234\n").as_deref(),
            Some("http://127.0.0.1:41234")
        );
        assert_eq!(parse_listening("listening on 127.0.0.1:80"), None);
        assert_eq!(parse_listening("starting"), None);
    }

    #[test]
    fn load_json_with_interval_array_and_error_causes() {
        let doc = json!({
            "reply_rate": 950.0,
            "rate_intervals": [900.0, 1000.0],
            "latency_us": {"p50": 120, "p90": 300, "p99": 900, "p999": 2000, "max": 5000},
            "latency_uncorrected_us": {"p50": 100, "p99": 400},
            "errors": {"refused": 3, "timeout": 2},
            "connections": 1000,
            "connections_peak": 251,
            "generator_cpu_pct": 40.0,
            "server_cpu_pct": 55.5,
            "reopens": 7
        });
        let m = parse_load(&doc);
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
        assert!((m["error_pct"] - 0.5).abs() < 1e-9);
        assert_eq!(m["server_cpu_pct"], 55.5);
        assert!(!m.contains_key("mean_us"));
    }

    #[test]
    fn load_json_with_interval_summary() {
        let doc =
            json!({"reply_rate": 10.0, "rate_intervals": {"min": 1.0, "max": 20.0, "stddev": 4.0}});
        let m = parse_load(&doc);
        assert_eq!(
            (
                m["reply_rate_min"],
                m["reply_rate_max"],
                m["reply_rate_stddev"]
            ),
            (1.0, 20.0, 4.0)
        );
    }

    #[test]
    fn server_stats_summed_over_workers_and_top_level_wins() {
        let doc = json!({
            "requests": {"200": 900, "404": 1},
            "connections": {"accepted": 50},
            "workers": [
                {"herd": {"wakeups": 10}, "accepts": 20, "poller": {"waits": 100, "overflows": 2, "wakeups": 1}},
                {"herd": {"wakeups": 12}, "accepts": 30, "poller": {"waits": 50, "overflows": 3, "wakeups": 1}}
            ]
        });
        let m = parse_server_stats(&doc);
        assert_eq!(m["server_requests"], 901.0);
        assert_eq!(m["server_accepted"], 50.0);
        assert_eq!(m["worker_wakeups"], 22.0);
        assert_eq!(m["worker_accepts"], 50.0);
        assert_eq!(m["waits"], 150.0);
        assert_eq!(m["overflows"], 5.0);
        let total = json!({"poller": {"overflows": 9}, "workers": [{"poller": {"overflows": 4}}]});
        assert_eq!(parse_server_stats(&total)["overflows"], 9.0);
    }

    #[test]
    fn bench_output_shapes() {
        let arr = r#"[{"mechanism":"poll","fds":100,"active":1,"placement":"rotating","median_us":4.8,"p90_us":5.0}]"#;
        let cells = bench_cells(arr).unwrap();
        let (cfg, met) = split_cell(&cells[0]);
        assert_eq!(cfg["mechanism"], json!("poll"));
        assert_eq!(cfg["fds"], json!(100));
        assert_eq!(met["median_us"], 4.8);
        let lines = "progress...\n{\"mechanism\":\"epoll\",\"fds\":10,\"median_us\":0.5}\n{\"mechanism\":\"poll\",\"fds\":10,\"median_us\":1}\n";
        assert_eq!(bench_cells(lines).unwrap().len(), 2);
        let wrapped = r#"{"cells":[{"a":1}]}"#;
        assert_eq!(bench_cells(wrapped).unwrap().len(), 1);
        assert!(bench_cells("not built yet").is_err());
    }
}
