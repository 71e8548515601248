//! Smoke tests of `evdispatch bench poller` and `evdispatch bench fdalloc`:
//! the real binary (the poller bench re-executes it as its writer helper),
//! tiny sizes, and the JSON checked field by field. No timing is asserted.

use std::process::Command;

use serde_json::Value;

fn evdispatch(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_evdispatch"))
        .args(args)
        .output()
        .expect("running evdispatch");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let (ok, out, err) = evdispatch(args);
    assert!(ok, "evdispatch {args:?} failed: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

fn num(cell: &Value, key: &str) -> f64 {
    cell[key]
        .as_f64()
        .unwrap_or_else(|| panic!("cell lacks number {key}: {cell}"))
}

fn check_poller_cells(v: &Value, rows: &[&str], fds: &[u64], active: &[u64], iterations: u64) {
    let cells = v["cells"].as_array().expect("cells");
    let ran: Vec<&str> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for row in rows {
        let skipped = v["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["row"] == *row && s["fds"].is_null());
        assert!(
            ran.contains(row) != skipped,
            "{row} must either run or be listed as unavailable: {v}"
        );
        if !ran.contains(row) {
            continue;
        }
        for &n in fds {
            for &a in active {
                let c = cells
                    .iter()
                    .find(|c| c["mechanism"] == *row && c["fds"] == n && c["active"] == a)
                    .unwrap_or_else(|| panic!("no cell for {row} N={n} A={a}"));
                assert_eq!(c["placement"], "rotating");
                for key in ["median_us", "p90_us", "min_us", "max_us", "write_median_us"] {
                    assert!(num(c, key) > 0.0, "{key} of {c}");
                }
                assert!(num(c, "min_us") <= num(c, "median_us"));
                assert!(num(c, "median_us") <= num(c, "p90_us"));
                assert!(num(c, "p90_us") <= num(c, "max_us"));
                assert_eq!(c["iterations"], iterations);
                // Every ready descriptor was read: one byte per active
                // socket per iteration, and none left over.
                assert_eq!(c["bytes_read"].as_u64().unwrap(), iterations * a, "{c}");
                assert_eq!(c["leftover"], 0);
                if *row == "raw-epoll" {
                    assert_eq!(c["ratio_to_raw_epoll"], 1.0);
                }
            }
        }
    }
}

#[test]
fn poller_smoke_with_the_helper_writer() {
    let rows = ["epoll", "raw-epoll", "raw-poll", "mio", "libevent", "libev"];
    let v = json(&[
        "bench",
        "poller",
        "--mechanisms",
        &rows.join(","),
        "--fds",
        "8,40",
        "--active",
        "1,4",
        "--iterations",
        "20",
        "--warmup",
        "2",
        "--rounds",
        "2",
        "--json",
    ]);
    assert_eq!(v["bench"], "poller");
    assert_eq!(v["plan"]["writer"], "helper");
    check_poller_cells(&v, &rows, &[8, 40], &[1, 4], 20);
    // Unavailable C peers say how to install them.
    for s in v["skipped"].as_array().unwrap() {
        if s["row"] == "libevent" || s["row"] == "libev" {
            assert!(
                s["install"].as_str().unwrap().contains("apt-get install"),
                "{s}"
            );
        }
    }
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2);
    assert!(pairs
        .iter()
        .all(|p| p["open_us_per_pair"].as_f64().unwrap() > 0.0));
}

#[test]
fn poller_smoke_with_the_local_writer_and_the_table() {
    let (ok, out, err) = evdispatch(&[
        "bench",
        "poller",
        "--mechanisms",
        "epoll-et,polling,raw-epoll",
        "--fds",
        "10,30",
        "--active",
        "3",
        "--iterations",
        "10",
        "--warmup",
        "1",
        "--rounds",
        "1",
        "--writer",
        "local",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("A = 3 active"), "{out}");
    assert!(out.contains("ratio to raw-epoll"), "{out}");
    assert!(out.contains("×10→30"), "growth factor column: {out}");
    for row in ["epoll-et", "polling", "raw-epoll"] {
        assert!(out.lines().any(|l| l.starts_with(row)), "{row} row: {out}");
    }
}

#[test]
fn poller_refuses_unknown_rows_and_impossible_sizes() {
    let (ok, _, err) = evdispatch(&["bench", "poller", "--mechanisms", "kqueue"]);
    assert!(!ok);
    assert!(err.contains("kqueue") && err.contains("raw-epoll"), "{err}");
    let (ok, _, err) = evdispatch(&["bench", "poller", "--fds", "15000", "--writer", "local"]);
    assert!(!ok);
    assert!(err.contains("RLIMIT_NOFILE"), "{err}");
}

#[test]
fn fdalloc_smoke() {
    let v = json(&[
        "bench", "fdalloc", "--fds", "10,200", "--reps", "50", "--json",
    ]);
    assert_eq!(v["bench"], "fdalloc");
    assert_eq!(v["seed_fds"], 100_000);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2);
    for (c, n) in cells.iter().zip([10, 200]) {
        assert_eq!(c["fds"], n);
        assert_eq!(c["reps"], 50);
        assert_eq!(c["via"], "dup");
        for case in ["far", "near"] {
            let median = num(c, &format!("{case}_median_us"));
            assert!(median > 0.0, "{c}");
            assert!(num(c, &format!("{case}_min_us")) <= median);
            assert!(median <= num(c, &format!("{case}_p90_us")));
        }
        assert!(num(c, "second_alloc_far_median_us") > 0.0);
    }
    let (ok, _, err) = evdispatch(&["bench", "fdalloc", "--fds", "100000"]);
    assert!(!ok);
    assert!(
        err.contains("100,000") && err.contains("RLIMIT_NOFILE"),
        "{err}"
    );
}

#[test]
fn poller_cell_budget_stops_at_ten_per_round() {
    // A budget far below one iteration: each round keeps its minimum of 10.
    let v = json(&[
        "bench",
        "poller",
        "--mechanisms",
        "raw-poll",
        "--fds",
        "16",
        "--active",
        "2",
        "--iterations",
        "400",
        "--rounds",
        "2",
        "--warmup",
        "1",
        "--cell-budget",
        "0.000001",
        "--json",
    ]);
    let c = &v["cells"][0];
    assert_eq!(c["iterations"], 20, "{c}");
    assert_eq!(c["bytes_read"], 40);
    assert_eq!(c["round_medians_us"].as_array().unwrap().len(), 2);
}

/// `evdispatch bench server --servers ARGS…` as JSON; `None` (the reason
/// printed) without wrk.
fn bench_server(args: &[&str]) -> Option<Value> {
    if let Some(why) = evdispatch_harness::skip_reason(evdispatch_harness::Tool::Wrk) {
        eprintln!("{why}");
        return None;
    }
    let mut all = vec!["bench", "server", "--servers"];
    all.extend_from_slice(args);
    Some(json(&all))
}

/// The figures of the `epoll` run of `scenario` in a `bench server`
/// document, which must have no error.
fn epoll_figures(v: &Value, scenario: &str) -> Value {
    let r = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["scenario"] == scenario && r["server"] == "epoll")
        .unwrap_or_else(|| panic!("no {scenario} run: {v}"));
    assert!(r["error"].is_null(), "{scenario}: {}", r["error"]);
    r["figures"].clone()
}

/// Target `id` judged for `epoll` in a `bench server` document.
fn epoll_target<'a>(v: &'a Value, id: &str) -> &'a Value {
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id && t["server"] == "epoll")
        .unwrap_or_else(|| panic!("target {id} missing: {v}"))
}

/// `bench server` end to end on one of our models, every scenario, tiny
/// durations: each figure is there and plausible, each target judged. No
/// timing is asserted.
#[test]
fn server_smoke() {
    let Some(v) = bench_server(&[
        "epoll",
        "--scenarios",
        "keepalive,close,idle",
        "--rounds",
        "1",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--idle",
        "40",
        "--rate",
        "200",
        "--persistent",
        "4",
        "--connections",
        "8",
        "--file-size",
        "1000",
        "--json",
    ]) else {
        return;
    };
    assert_eq!(v["schema"], "evdispatch-bench-server/1");
    assert_eq!(v["servers"][0]["name"], "epoll");
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 3, "{v}");
    let run = |scenario: &str| epoll_figures(&v, scenario);
    let ka = run("keepalive");
    assert!(num(&ka, "cpu_us_per_request") > 0.0, "{ka}");
    assert!(num(&ka, "requests_per_sec") > 0.0, "{ka}");
    assert_eq!(num(&ka, "errors"), 0.0, "{ka}");
    let close = run("close");
    assert!(num(&close, "cpu_us_per_connection") > 0.0, "{close}");
    assert!(num(&close, "connections_per_sec") > 0.0, "{close}");
    let idle = run("idle");
    assert_eq!(num(&idle, "idle_held"), 40.0, "{idle}");
    assert!(
        num(&idle, "bytes_per_idle_connection").is_finite(),
        "{idle}"
    );
    for key in ["rps_none", "rps_idle", "p99_none_us", "p99_idle_us"] {
        assert!(num(&idle, key) > 0.0, "{key}: {idle}");
    }
    let ratio = num(&idle, "p99_ratio");
    assert!(
        (ratio - num(&idle, "p99_idle_us") / num(&idle, "p99_none_us")).abs() < 1e-9,
        "{idle}"
    );
    // The open loop offered 200 req/s and got them answered.
    assert!(num(&idle, "reply_rate_none") > 100.0, "{idle}");
    // Every target of these scenarios is listed; those against the best
    // peer are unmeasured (no peer ran), the others judged.
    for id in [
        "keepalive-cpu",
        "close-cpu",
        "idle-throughput",
        "idle-p99",
        "idle-memory",
    ] {
        let t = epoll_target(&v, id);
        assert_eq!(t["met"].is_null(), id.ends_with("-cpu"), "{t}");
    }
    let summary = v["summary"].as_array().unwrap();
    assert!(summary.iter().any(|r| r["scenario"] == "close"
        && r["figure"] == "cpu_us_per_connection"
        && r["n"] == 1));
}

#[test]
fn server_refuses_unknown_servers() {
    let (ok, _, err) = evdispatch(&["bench", "server", "--servers", "epoll,apache"]);
    assert!(!ok);
    assert!(
        err.contains("apache") && err.contains("nginx") && err.contains("uring-completion"),
        "{err}"
    );
}

/// The server bench's rows end to end: the floors (child processes of the
/// bench) with every server's multiple of the lower one, an access-logged
/// server beside the same without, and range against whole. No timing is
/// asserted.
#[test]
fn server_floor_log_and_range_rows() {
    let Some(v) = bench_server(&[
        "epoll,epoll+log,floor-epoll,floor-uring",
        "--scenarios",
        "keepalive,range,whole",
        "--rounds",
        "1",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--connections",
        "4",
        "--json",
    ]) else {
        return;
    };
    let runs = v["runs"].as_array().unwrap();
    for r in runs {
        assert!(r["error"].is_null(), "{r}");
    }
    // Floors run keepalive only: 4 + 2 + 2 runs.
    assert_eq!(runs.len(), 8, "{v}");
    let floor = |server: &str| {
        v["floor_multiples"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["server"] == server)
            .unwrap_or_else(|| panic!("no floor multiple for {server}: {v}"))
            .clone()
    };
    for s in ["epoll", "epoll+log", "floor-epoll", "floor-uring"] {
        let m = floor(s);
        assert!(num(&m, "median") > 0.0, "{m}");
        let reference = m["rounds"][0]["best_peer"].as_str().unwrap();
        assert!(reference.starts_with("floor-"), "{m}");
    }
    let cost = &v["access_log_costs"][0];
    assert_eq!(cost["server"], "epoll", "{v}");
    let r0 = &cost["rounds"][0];
    assert!(
        (num(r0, "added_us") - (num(r0, "on_us") - num(r0, "off_us"))).abs() < 1e-9,
        "{cost}"
    );
    let rw = v["range_over_whole"].as_array().unwrap();
    assert!(rw.iter().any(|r| r["server"] == "epoll"), "{v}");
    assert!(v["servers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["name"] == "floor-uring" && s["kind"] == "floor"));
}

/// The HTTPS scenarios end to end on one of our models (and nginx when it
/// is installed; the floors never take part): each figure there, the
/// handshakes of `https-full` all full and those of `https-resumed` nearly
/// all resumed, the 1 MiB file's bytes per CPU-second, the idle TLS
/// connections held. No timing is asserted.
#[test]
fn server_https_scenarios() {
    let nginx = evdispatch_harness::skip_reason(evdispatch_harness::Tool::Nginx).is_none();
    let Some(v) = bench_server(&[
        "epoll,nginx,floor-epoll",
        "--scenarios",
        "https-keepalive,https-full,https-resumed,https-large,https-idle",
        "--rounds",
        "1",
        "--duration",
        "1",
        "--warmup",
        "0",
        "--idle",
        "40",
        "--connections",
        "8",
        "--json",
    ]) else {
        return;
    };
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), if nginx { 10 } else { 5 }, "{v}");
    assert!(runs.iter().all(|r| r["floor"] == false), "{v}");
    let run = |scenario: &str| epoll_figures(&v, scenario);
    let ka = run("https-keepalive");
    assert!(num(&ka, "cpu_us_per_request") > 0.0, "{ka}");
    assert_eq!(num(&ka, "errors"), 0.0, "{ka}");
    let full = run("https-full");
    assert!(num(&full, "handshakes_per_cpu_s") > 0.0, "{full}");
    assert_eq!(num(&full, "resumed_share"), 0.0, "{full}");
    let resumed = run("https-resumed");
    assert!(num(&resumed, "resumed_share") > 0.9, "{resumed}");
    let large = run("https-large");
    let per = num(&large, "cpu_us_per_request");
    assert!(
        (num(&large, "bytes_per_cpu_s") - (1 << 20) as f64 / (per / 1e6)).abs() < 1.0,
        "{large}"
    );
    let idle = run("https-idle");
    assert_eq!(num(&idle, "idle_held"), 40.0, "{idle}");
    for id in [
        "https-keepalive-cpu",
        "https-full-handshakes",
        "https-resumed-handshakes",
        "https-large-bytes",
        "https-idle-memory",
    ] {
        let t = epoll_target(&v, id);
        assert_eq!(t["met"].is_null(), !nginx, "{t}");
    }
}
