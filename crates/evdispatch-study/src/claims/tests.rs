//! Every verdict function on synthetic data: one data set on which the claim
//! holds, one on which it fails.

use super::*;
use crate::results::Status;
use serde_json::json;

fn rec(id: &str, pts: Vec<(&str, Value, Value)>) -> ScenarioRecord {
    ScenarioRecord {
        id: id.into(),
        status: Status::Complete,
        profile: "tiny".into(),
        params: json!({}),
        started_unix: 0,
        duration_s: 0.0,
        git_commit: "test".into(),
        capabilities: vec![],
        points: pts
            .into_iter()
            .map(|(series, c, m)| Point {
                series: series.into(),
                config: c.as_object().unwrap().clone(),
                metrics: m
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                    .collect(),
                raw: Value::Null,
            })
            .collect(),
        skipped: vec![],
        failures: vec![],
    }
}

/// Poller cells: (mechanism, fds, active, median).
fn poller(cells: &[(&str, u32, u32, f64)]) -> Vec<(&'static str, Value, Value)> {
    cells
        .iter()
        .map(|(m, n, a, t)| {
            let m: &'static str = Box::leak(m.to_string().into_boxed_str());
            (m, json!({"bench": "poller", "mechanism": m, "fds": n, "active": a, "placement": "rotating"}), json!({"median_us": t}))
        })
        .collect()
}

fn fdalloc(cells: &[(u32, f64)]) -> Vec<(&'static str, Value, Value)> {
    cells
        .iter()
        .map(|(n, t)| {
            (
                "fdalloc",
                json!({"bench": "fdalloc", "open_fds": n}),
                json!({"open_median_us": t}),
            )
        })
        .collect()
}

/// Web points: (series, config, metrics).
fn web(id: &str, pts: Vec<(&'static str, Value, Value)>) -> ScenarioRecord {
    rec(id, pts)
}

fn check(id: &str, r: &ScenarioRecord, want: Outcome) {
    let claim = CLAIMS
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no claim {id}"));
    assert_eq!(
        claim.scenario, r.id,
        "{id} reads scenario {}",
        claim.scenario
    );
    let v = (claim.verdict)(r);
    assert_eq!(v.outcome, want, "{id}: {v:?}");
    if want != Outcome::NotMeasured {
        assert!(!v.numbers.is_empty(), "{id} gives no numbers");
    }
}

#[test]
fn poller_claims() {
    let good = rec(
        "poller",
        poller(&[
            ("poll", 100, 1, 5.0),
            ("poll", 10000, 1, 700.0),
            ("epoll", 100, 1, 0.5),
            ("epoll", 10000, 1, 0.55),
            ("epoll", 10000, 100, 30.0),
            ("uring", 10000, 1, 0.4),
        ]),
    );
    let bad = rec(
        "poller",
        poller(&[
            ("poll", 100, 1, 5.0),
            ("poll", 10000, 1, 6.0),
            ("epoll", 100, 1, 0.5),
            ("epoll", 10000, 1, 5.0),
            ("epoll", 10000, 100, 5.5),
            ("uring", 10000, 1, 0.1),
        ]),
    );
    for (id, g, b) in [
        ("poll-grows", &good, &bad),
        ("epoll-flat", &good, &bad),
        ("active-only", &good, &bad),
        ("ring-minor", &good, &bad),
    ] {
        check(id, g, Outcome::Holds);
        check(id, b, Outcome::Fails);
    }
    let partly = rec(
        "poller",
        poller(&[("poll", 100, 1, 5.0), ("poll", 10000, 1, 25.0)]),
    );
    check("poll-grows", &partly, Outcome::Partly);
    check(
        "active-only",
        &rec(
            "poller",
            poller(&[("epoll", 100, 1, 0.5), ("epoll", 10000, 1, 0.5)]),
        ),
        Outcome::NotMeasured,
    );
    check(
        "fd-alloc-flat",
        &rec("poller", fdalloc(&[(1000, 1.0), (100000, 1.2)])),
        Outcome::Holds,
    );
    check(
        "fd-alloc-flat",
        &rec("poller", fdalloc(&[(1000, 1.0), (100000, 90.0)])),
        Outcome::Fails,
    );
}

fn pve(
    m: &'static str,
    inactive: u32,
    rate: f64,
    reply: f64,
    err: f64,
) -> (&'static str, Value, Value) {
    (
        m,
        json!({"server": "ours", "mechanism": m, "inactive": inactive, "rate": rate}),
        json!({"reply_rate": reply, "error_pct": err}),
    )
}

#[test]
fn poll_vs_epoll_claims() {
    let good = web(
        "poll-vs-epoll",
        vec![
            pve("poll", 1, 1000.0, 1000.0, 0.0),
            pve("poll", 1, 5000.0, 5000.0, 0.0),
            pve("poll", 501, 1000.0, 900.0, 5.0),
            pve("poll", 501, 5000.0, 2000.0, 40.0),
            pve("epoll", 1, 5000.0, 5000.0, 0.0),
            pve("epoll", 251, 5000.0, 5000.0, 0.0),
            pve("epoll", 501, 1000.0, 1000.0, 0.0),
            pve("epoll", 501, 5000.0, 4900.0, 0.5),
        ],
    );
    let bad = web(
        "poll-vs-epoll",
        vec![
            pve("poll", 1, 5000.0, 5000.0, 0.0),
            pve("poll", 501, 5000.0, 5000.0, 0.0),
            pve("epoll", 1, 5000.0, 4000.0, 2.0),
            pve("epoll", 501, 5000.0, 4000.0, 3.0),
        ],
    );
    for id in ["devpoll-keeps-up", "devpoll-no-errors"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
}

fn lat(m: &'static str, rate: f64, p50: f64) -> (&'static str, Value, Value) {
    (
        m,
        json!({"mechanism": m, "rate": rate, "inactive": 251}),
        json!({"p50_us": p50, "reply_rate": rate}),
    )
}

#[test]
fn rtsig_latency_claims() {
    let good = web(
        "rtsig-latency",
        vec![
            lat("rtsig", 1000.0, 80.0),
            lat("rtsig", 20000.0, 5000.0),
            lat("epoll", 1000.0, 100.0),
            lat("epoll", 20000.0, 150.0),
        ],
    );
    let bad = web(
        "rtsig-latency",
        vec![
            lat("rtsig", 1000.0, 120.0),
            lat("rtsig", 20000.0, 200.0),
            lat("epoll", 1000.0, 100.0),
            lat("epoll", 20000.0, 150.0),
        ],
    );
    for id in ["rtsig-faster-low-load", "rtsig-latency-jumps"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    let both_jump = web(
        "rtsig-latency",
        vec![
            lat("rtsig", 1000.0, 80.0),
            lat("rtsig", 20000.0, 5000.0),
            lat("epoll", 1000.0, 100.0),
            lat("epoll", 20000.0, 9000.0),
        ],
    );
    check("rtsig-latency-jumps", &both_jump, Outcome::Partly);
}

fn ovh(m: &'static str, conns: u32, cpu: f64, p50: f64) -> (&'static str, Value, Value) {
    (
        m,
        json!({"mechanism": m, "persistent": conns, "rate": 2000.0}),
        json!({"server_cpu_pct": cpu, "p50_us": p50, "reply_rate": 2000.0}),
    )
}

#[test]
fn overhead_claims() {
    let flat = web(
        "overhead",
        vec![
            ovh("rtsig", 250, 5.0, 300.0),
            ovh("rtsig", 10000, 5.5, 320.0),
            ovh("poll", 250, 6.0, 300.0),
            ovh("poll", 10000, 60.0, 2000.0),
        ],
    );
    let grows = web(
        "overhead",
        vec![
            ovh("rtsig", 250, 5.0, 300.0),
            ovh("rtsig", 10000, 30.0, 3000.0),
            ovh("poll", 250, 6.0, 300.0),
            ovh("poll", 10000, 6.5, 310.0),
        ],
    );
    for id in ["rtsig-cpu-flat", "poll-cpu-grows", "rtsig-response-flat"] {
        check(id, &flat, Outcome::Holds);
        check(id, &grows, Outcome::Fails);
    }
    check("inactive-hurt-rtsig", &grows, Outcome::Holds);
    check("inactive-hurt-rtsig", &flat, Outcome::Fails);
}

fn thr(
    series: &'static str,
    idle: u32,
    rate: f64,
    reply: f64,
    cpu: f64,
) -> (&'static str, Value, Value) {
    (
        series,
        json!({"idle": idle, "reply_bytes": 1, "rate": rate}),
        json!({"reply_rate": reply, "server_cpu_pct": cpu}),
    )
}

#[test]
fn throughput_claims() {
    let good = web(
        "throughput",
        vec![
            thr("select", 252, 5000.0, 5000.0, 50.0),
            thr("select", 252, 20000.0, 18000.0, 100.0),
            thr("select (accept one)", 252, 5000.0, 4000.0, 80.0),
            thr("select (accept one)", 252, 20000.0, 6000.0, 100.0),
            thr("rtsig", 252, 5000.0, 5000.0, 10.0),
            thr("rtsig", 252, 20000.0, 19000.0, 60.0),
            thr("rtsig-batch", 252, 5000.0, 5000.0, 10.0),
            thr("rtsig-batch", 252, 20000.0, 19800.0, 60.0),
            thr("epoll", 252, 5000.0, 5000.0, 20.0),
            thr("epoll", 252, 20000.0, 8000.0, 100.0),
            thr("epoll", 252, 40000.0, 3000.0, 100.0),
            thr("rtsig", 6000, 5000.0, 5000.0, 10.0),
            thr("poll", 6000, 5000.0, 5000.0, 90.0),
        ],
    );
    let bad = web(
        "throughput",
        vec![
            thr("select", 252, 20000.0, 6000.0, 100.0),
            thr("select (accept one)", 252, 20000.0, 6000.0, 100.0),
            thr("rtsig", 252, 20000.0, 19000.0, 60.0),
            thr("rtsig-batch", 252, 20000.0, 15000.0, 60.0),
            thr("epoll", 252, 20000.0, 12000.0, 100.0),
            thr("epoll", 252, 40000.0, 11500.0, 100.0),
            thr("rtsig", 6000, 5000.0, 5000.0, 30.0),
            thr("poll", 6000, 5000.0, 5000.0, 31.0),
        ],
    );
    for id in [
        "multi-accept-select",
        "multi-accept-like-rtsig",
        "devpoll-collapses",
        "rtsig-cpu-lower",
        "per-fd-higher-load",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    let unsaturated = web(
        "throughput",
        vec![
            thr("epoll", 252, 5000.0, 5000.0, 10.0),
            thr("epoll", 252, 20000.0, 19900.0, 40.0),
        ],
    );
    check("devpoll-collapses", &unsaturated, Outcome::NotMeasured);
}

fn t1(m: &'static str, rate: f64, overflows: f64) -> (&'static str, Value, Value) {
    (
        m,
        json!({"mechanism": m, "idle": 252, "rate": rate}),
        json!({"overflows": overflows, "signals_dequeued": 1000.0}),
    )
}

#[test]
fn table1_claims() {
    let good = web(
        "table1",
        vec![
            t1("rtsig", 2000.0, 0.0),
            t1("rtsig", 30000.0, 500.0),
            t1("rtsig-batch", 2000.0, 0.0),
            t1("rtsig-batch", 30000.0, 0.0),
        ],
    );
    let bad = web(
        "table1",
        vec![
            t1("rtsig", 2000.0, 10.0),
            t1("rtsig", 30000.0, 0.0),
            t1("rtsig-batch", 2000.0, 20.0),
            t1("rtsig-batch", 30000.0, 0.0),
        ],
    );
    for id in ["overflow-past-knee", "per-fd-no-overflow"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    let calm = web(
        "table1",
        vec![t1("rtsig", 2000.0, 0.0), t1("rtsig-batch", 2000.0, 0.0)],
    );
    check("per-fd-no-overflow", &calm, Outcome::NotMeasured);
}

fn hy(
    m: &'static str,
    rate: f64,
    p50: f64,
    reply: f64,
    poll_pct: f64,
    switches: f64,
) -> (&'static str, Value, Value) {
    (
        m,
        json!({"mechanism": m, "rate": rate}),
        json!({"p50_us": p50, "reply_rate": reply, "poll_mode_pct": poll_pct, "mode_switches": switches}),
    )
}

#[test]
fn hybrid_claims() {
    let good = web(
        "hybrid",
        vec![
            hy("hybrid", 1000.0, 80.0, 1000.0, 0.0, 0.0),
            hy("hybrid", 30000.0, 900.0, 25000.0, 70.0, 6.0),
            hy("rtsig", 1000.0, 78.0, 1000.0, 0.0, 0.0),
            hy("epoll", 1000.0, 100.0, 1000.0, 0.0, 0.0),
            hy("epoll", 30000.0, 800.0, 25500.0, 0.0, 0.0),
        ],
    );
    let bad = web(
        "hybrid",
        vec![
            hy("hybrid", 1000.0, 200.0, 1000.0, 60.0, 1.0),
            hy("hybrid", 30000.0, 900.0, 15000.0, 100.0, 1.0),
            hy("rtsig", 1000.0, 78.0, 1000.0, 0.0, 0.0),
            hy("epoll", 30000.0, 800.0, 25500.0, 0.0, 0.0),
        ],
    );
    for id in ["hybrid-best-of-both", "hybrid-switches-back"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
}

fn herd(mode: &str, w: f64) -> (&'static str, Value, Value) {
    (
        "epoll",
        json!({"part": "herd", "listener_mode": mode}),
        json!({"wakeups_per_accept": w}),
    )
}

fn mem(series: &'static str, b: f64) -> (&'static str, Value, Value) {
    (
        series,
        json!({"part": "memory", "idle": 5000}),
        json!({"rss_per_conn_bytes": b}),
    )
}

#[test]
fn today_claims() {
    let good = web(
        "today",
        vec![
            herd("shared (plain)", 1.0),
            herd("SO_REUSEPORT", 1.0),
            mem("threads", 9000.0),
            mem("epoll", 400.0),
        ],
    );
    let bad = web(
        "today",
        vec![
            herd("shared (plain)", 2.0),
            herd("shared + EPOLLEXCLUSIVE", 1.9),
            herd("SO_REUSEPORT", 1.8),
            mem("threads", 500.0),
            mem("epoll", 400.0),
        ],
    );
    for id in ["no-thundering-herd", "threads-memory"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    let opt_in = web(
        "today",
        vec![
            herd("shared (plain)", 2.0),
            herd("shared + EPOLLEXCLUSIVE", 1.0),
        ],
    );
    check("no-thundering-herd", &opt_in, Outcome::Partly);
}

#[test]
fn every_claim_is_tested_and_cites_a_scenario() {
    let src = include_str!("tests.rs");
    for c in CLAIMS {
        assert!(
            src.contains(&format!("\"{}\"", c.id)),
            "claim {} has no test",
            c.id
        );
        assert!(
            crate::scenario::find(c.scenario).is_some(),
            "claim {} cites unknown scenario {}",
            c.id,
            c.scenario
        );
    }
}

#[test]
fn unrun_or_empty_scenarios_are_not_measured_with_reasons() {
    let mut empty = rec("poller", vec![]);
    empty.skipped.push(crate::results::Skip {
        what: "Poller_bench table".into(),
        why: "not built".into(),
    });
    let out = evaluate(&[empty]);
    assert_eq!(out.len(), CLAIMS.len());
    for c in &out {
        assert_eq!(c["verdict"], "not measured");
        assert!(!c["why"].as_str().unwrap().is_empty());
    }
    assert!(out[0]["why"].as_str().unwrap().contains("not built"));
}

/// Hostile-conditions points: (part, model, metrics).
fn hostile(pts: Vec<(&'static str, &'static str, Value)>) -> ScenarioRecord {
    rec(
        "hostile",
        pts.into_iter()
            .map(|(part, model, m)| {
                (
                    model,
                    json!({"part": part, "server": "evdispatch", "model": model}),
                    m,
                )
            })
            .collect(),
    )
}

#[test]
fn hostile_claims() {
    let storm = |lost: f64, gap: f64| {
        json!({"lost": lost, "errors": 0.0, "overflows": 40.0, "recoveries": 40.0,
               "mode_switches": 0.0, "longest_gap_s": gap, "latency_uncorrected_max_ms": 20.0})
    };
    let ok = hostile(vec![
        ("storm", "rtsig", storm(0.0, 0.0)),
        ("storm", "hybrid", storm(0.0, 0.25)),
    ]);
    check("overflow-no-hang", &ok, Outcome::Holds);
    let stall = hostile(vec![("storm", "rtsig", storm(0.0, 2.0))]);
    check("overflow-no-hang", &stall, Outcome::Partly);
    let lost = hostile(vec![("storm", "rtsig", storm(12.0, 0.0))]);
    check("overflow-no-hang", &lost, Outcome::Fails);
    check("overflow-no-hang", &hostile(vec![]), Outcome::NotMeasured);

    let slow = |ratio: f64| json!({"p99_ratio": ratio, "normal_errors": 0.0});
    check(
        "slow-do-not-starve",
        &hostile(vec![("slowloris", "epoll", slow(1.3))]),
        Outcome::Holds,
    );
    check(
        "slow-do-not-starve",
        &hostile(vec![("slowloris", "epoll", slow(3.0))]),
        Outcome::Partly,
    );
    check(
        "slow-do-not-starve",
        &hostile(vec![("slowloris", "epoll", slow(9.0))]),
        Outcome::Fails,
    );

    let exh = |ratio: f64, served: f64, cpu: f64| {
        json!({"p99_ratio": ratio, "keepalive_errors": 0.0, "crowd_waiting": 100.0,
               "crowd_served_after_free": served, "server_cpu_idle_at_limit_pct": cpu})
    };
    check(
        "exhaustion-graceful",
        &hostile(vec![("exhaustion", "epoll", exh(1.1, 100.0, 0.0))]),
        Outcome::Holds,
    );
    check(
        "exhaustion-graceful",
        &hostile(vec![("exhaustion", "epoll", exh(3.0, 100.0, 0.0))]),
        Outcome::Partly,
    );
    check(
        "exhaustion-graceful",
        &hostile(vec![("exhaustion", "epoll", exh(1.0, 100.0, 95.0))]),
        Outcome::Fails,
    );
    check(
        "exhaustion-graceful",
        &hostile(vec![("exhaustion", "epoll", exh(1.0, 40.0, 0.0))]),
        Outcome::Fails,
    );
}
