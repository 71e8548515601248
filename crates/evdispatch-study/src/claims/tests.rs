//! Every verdict function on synthetic data: a data set on which the claim
//! holds and one on which it fails (and `not measured` without data).

use super::*;
use crate::results::Status;
use serde_json::json;

type Pt = (String, Value, Value);

fn pt(series: &str, config: Value, metrics: Value) -> Pt {
    (series.to_string(), config, metrics)
}

fn rec(id: &str, pts: Vec<Pt>) -> ScenarioRecord {
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
                series,
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
        timings: vec![],
        lock_wait_s: 0.0,
    }
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
    assert!(!v.why.is_empty(), "{id} says nothing");
}

fn empty(id: &str) -> ScenarioRecord {
    rec(id, vec![])
}

#[test]
fn every_claim_has_a_unique_id_and_a_known_scenario() {
    for c in CLAIMS {
        assert_eq!(
            CLAIMS.iter().filter(|d| d.id == c.id).count(),
            1,
            "{}",
            c.id
        );
        assert!(
            crate::scenario::find(c.scenario).is_some(),
            "{} names scenario {}",
            c.id,
            c.scenario
        );
        // Without data every claim says so rather than guessing.
        assert_eq!(
            (c.verdict)(&empty(c.scenario)).outcome,
            Outcome::NotMeasured,
            "{}",
            c.id
        );
    }
}

/// Poller cells: (row, fds, active, median).
fn poller(cells: &[(&str, u32, u32, f64)]) -> ScenarioRecord {
    rec(
        "poller",
        cells
            .iter()
            .map(|(m, n, a, t)| {
                pt(m, json!({"bench": "poller", "mechanism": m, "fds": n, "active": a, "placement": "rotating"}), json!({"median_us": t}))
            })
            .collect(),
    )
}

#[test]
fn poller_claims() {
    let good = poller(&[
        ("poll", 100, 1, 5.0),
        ("poll", 10000, 1, 700.0),
        ("epoll", 100, 1, 0.5),
        ("epoll", 10000, 1, 0.55),
        ("epoll", 10000, 100, 30.0),
        ("uring", 10000, 1, 0.4),
        ("raw-epoll", 10000, 1, 0.5),
    ]);
    let bad = poller(&[
        ("poll", 100, 1, 5.0),
        ("poll", 10000, 1, 6.0),
        ("epoll", 100, 1, 0.5),
        ("epoll", 10000, 1, 5.0),
        ("epoll", 10000, 100, 5.5),
        ("uring", 10000, 1, 0.1),
        ("raw-epoll", 10000, 1, 1.0),
    ]);
    for id in [
        "poll-grows",
        "epoll-flat",
        "devpoll-faster",
        "active-only",
        "ring-minor",
        "library-near-raw",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    check(
        "poll-grows",
        &poller(&[("poll", 100, 1, 5.0), ("poll", 10000, 1, 25.0)]),
        Outcome::Partly,
    );
    let fd = |far: f64| {
        rec(
            "poller",
            vec![
                pt(
                    "fdalloc",
                    json!({"bench": "fdalloc", "fds": 100}),
                    json!({"second_alloc_far_median_us": 0.3, "second_alloc_near_median_us": 0.3}),
                ),
                pt(
                    "fdalloc",
                    json!({"bench": "fdalloc", "fds": 19000}),
                    json!({"second_alloc_far_median_us": far, "second_alloc_near_median_us": 0.3}),
                ),
            ],
        )
    };
    check("fd-alloc-flat", &fd(0.35), Outcome::Holds);
    check("fd-alloc-flat", &fd(9.0), Outcome::Fails);
}

/// poll-vs-epoll points: (series, inactive, rate, replies, errors %, CPU %).
fn pve(rows: &[(&str, u32, f64, f64, f64, f64)]) -> ScenarioRecord {
    rec(
        "poll-vs-epoll",
        rows.iter()
            .map(|(m, i, r, y, e, c)| {
                pt(
                    m,
                    json!({"inactive": i, "rate": r}),
                    json!({"reply_rate": y, "error_pct": e, "server_cpu_pct": c, "p50_us": 100.0}),
                )
            })
            .collect(),
    )
}

#[test]
fn poll_vs_epoll_claims() {
    let good = pve(&[
        ("poll", 1, 1000.0, 1000.0, 0.0, 10.0),
        ("poll", 501, 1000.0, 1000.0, 0.0, 30.0),
        ("poll", 501, 5000.0, 2000.0, 40.0, 100.0),
        ("poll", 15000, 1000.0, 1000.0, 0.0, 60.0),
        ("poll", 15000, 5000.0, 1500.0, 30.0, 100.0),
        ("epoll", 1, 1000.0, 1000.0, 0.0, 10.0),
        ("epoll", 501, 1000.0, 1000.0, 0.0, 10.0),
        ("epoll", 501, 5000.0, 5000.0, 0.0, 40.0),
        ("epoll", 15000, 1000.0, 1000.0, 0.0, 11.0),
        ("epoll", 15000, 5000.0, 4990.0, 0.5, 45.0),
        ("lighttpd (poll)", 9000, 1000.0, 1000.0, 0.0, 50.0),
        ("lighttpd (linux-sysepoll)", 9000, 1000.0, 1000.0, 0.0, 12.0),
    ]);
    let bad = pve(&[
        ("poll", 1, 5000.0, 5000.0, 0.0, 40.0),
        ("poll", 501, 5000.0, 5000.0, 0.0, 40.0),
        ("poll", 15000, 5000.0, 5000.0, 0.0, 40.0),
        ("epoll", 1, 5000.0, 4000.0, 2.0, 40.0),
        ("epoll", 501, 5000.0, 4000.0, 3.0, 40.0),
        ("epoll", 15000, 5000.0, 4000.0, 3.0, 40.0),
        ("lighttpd (poll)", 9000, 1000.0, 1000.0, 0.0, 12.0),
        ("lighttpd (linux-sysepoll)", 9000, 1000.0, 1000.0, 0.0, 12.0),
    ]);
    for id in [
        "devpoll-keeps-up",
        "poll-breaks-at-501",
        "poll-cpu-with-inactive",
        "devpoll-no-errors",
        "peer-poll-costs-too",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    // Both keep up at every offered rate: the sweep says nothing of a knee.
    let unloaded = pve(&[
        ("poll", 15000, 5000.0, 4990.0, 0.0, 90.0),
        ("epoll", 15000, 5000.0, 5000.0, 0.0, 20.0),
    ]);
    check("devpoll-keeps-up", &unloaded, Outcome::NotMeasured);
}

fn lat(rows: &[(&str, f64, f64, f64)]) -> ScenarioRecord {
    rec(
        "rtsig-latency",
        rows.iter()
            .map(|(m, r, p50, y)| {
                pt(
                    m,
                    json!({"rate": r, "inactive": 251}),
                    json!({"p50_us": p50, "reply_rate": y}),
                )
            })
            .collect(),
    )
}

#[test]
fn rtsig_latency_claims() {
    let good = lat(&[
        ("rtsig", 1000.0, 80.0, 1000.0),
        ("rtsig", 5000.0, 90.0, 5000.0),
        ("rtsig", 9000.0, 5000.0, 6000.0),
        ("rtsig-batch", 1000.0, 80.0, 1000.0),
        ("rtsig-batch", 5000.0, 90.0, 5000.0),
        ("rtsig-batch", 9000.0, 100.0, 9000.0),
        ("epoll", 1000.0, 100.0, 1000.0),
        ("epoll", 5000.0, 110.0, 5000.0),
        ("epoll", 9000.0, 150.0, 9000.0),
    ]);
    let bad = lat(&[
        ("rtsig", 1000.0, 200.0, 1000.0),
        ("rtsig", 9000.0, 250.0, 6000.0),
        ("rtsig-batch", 1000.0, 200.0, 1000.0),
        ("rtsig-batch", 9000.0, 250.0, 5000.0),
        ("epoll", 1000.0, 100.0, 1000.0),
        ("epoll", 9000.0, 120.0, 9000.0),
    ]);
    for id in [
        "rtsig-faster-low-load",
        "rtsig-latency-jumps",
        "batch-dequeue-helps",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    let unloaded = lat(&[
        ("rtsig", 1000.0, 80.0, 1000.0),
        ("rtsig", 9000.0, 90.0, 9000.0),
        ("rtsig-batch", 1000.0, 80.0, 1000.0),
        ("rtsig-batch", 9000.0, 85.0, 8990.0),
    ]);
    check("batch-dequeue-helps", &unloaded, Outcome::NotMeasured);
}

fn ovh(rows: &[(&str, u32, f64, f64)]) -> ScenarioRecord {
    rec(
        "overhead",
        rows.iter()
            .map(|(m, c, cpu, p50)| {
                pt(
                    m,
                    json!({"persistent": c, "rate": 1000.0}),
                    json!({"server_cpu_pct": cpu, "p50_us": p50}),
                )
            })
            .collect(),
    )
}

#[test]
fn overhead_claims() {
    let flat = ovh(&[
        ("rtsig", 250, 5.0, 300.0),
        ("rtsig", 10000, 5.5, 320.0),
        ("poll", 250, 6.0, 300.0),
        ("poll", 10000, 60.0, 3000.0),
        ("epoll", 250, 9.0, 300.0),
        ("epoll", 10000, 9.0, 300.0),
        ("uring", 250, 7.0, 300.0),
        ("uring", 10000, 7.0, 300.0),
    ]);
    let growing = ovh(&[
        ("rtsig", 250, 5.0, 300.0),
        ("rtsig", 10000, 40.0, 3000.0),
        ("poll", 250, 6.0, 300.0),
        ("poll", 10000, 6.5, 300.0),
        ("epoll", 250, 5.0, 300.0),
        ("epoll", 10000, 5.0, 300.0),
        ("uring", 250, 7.0, 300.0),
        ("uring", 10000, 7.0, 300.0),
    ]);
    for id in [
        "rtsig-cpu-flat",
        "poll-cpu-grows",
        "rtsig-response-flat",
        "rtsig-cpu-lowest",
        "update-and-wait-one-call",
    ] {
        check(id, &flat, Outcome::Holds);
        check(id, &growing, Outcome::Fails);
    }
    check("inactive-hurt-rtsig", &growing, Outcome::Holds);
    check("inactive-hurt-rtsig", &flat, Outcome::Fails);
}

fn thr(rows: &[(&str, u32, f64, f64, f64)]) -> ScenarioRecord {
    rec(
        "throughput",
        rows.iter()
            .map(|(m, idle, r, y, cpu)| {
                pt(m, json!({"idle": idle, "reply_bytes": 1, "rate": r}), json!({"reply_rate": y, "server_cpu_pct": cpu, "cpu_us_per_reply": cpu / 100.0 / y * 1e6}))
            })
            .collect(),
    )
}

#[test]
fn throughput_claims() {
    let good = thr(&[
        ("select", 252, 4000.0, 4000.0, 50.0),
        ("select (accept one)", 252, 4000.0, 2500.0, 100.0),
        ("rtsig", 252, 4000.0, 4000.0, 30.0),
        ("rtsig-batch", 252, 4000.0, 4000.0, 25.0),
        ("rtsig-batch", 252, 8000.0, 7000.0, 80.0),
        ("rtsig", 252, 8000.0, 4200.0, 100.0),
        ("epoll", 252, 4000.0, 4000.0, 40.0),
        ("epoll", 252, 8000.0, 9000.0, 100.0),
        ("epoll", 252, 12000.0, 3000.0, 100.0),
        ("uring-completion", 252, 4000.0, 4000.0, 30.0),
        ("nginx", 252, 4000.0, 4000.0, 38.0),
        ("rtsig", 6000, 2000.0, 2000.0, 10.0),
        ("poll", 6000, 2000.0, 2000.0, 60.0),
    ]);
    let bad = thr(&[
        ("select", 252, 4000.0, 2500.0, 100.0),
        ("select (accept one)", 252, 4000.0, 2500.0, 100.0),
        ("rtsig", 252, 4000.0, 4000.0, 30.0),
        ("rtsig-batch", 252, 4000.0, 3000.0, 40.0),
        ("epoll", 252, 4000.0, 4000.0, 40.0),
        ("epoll", 252, 12000.0, 9000.0, 100.0),
        ("uring-completion", 252, 4000.0, 4000.0, 60.0),
        ("nginx", 252, 4000.0, 4000.0, 10.0),
        ("rtsig", 6000, 2000.0, 2000.0, 60.0),
        ("poll", 6000, 2000.0, 2000.0, 60.0),
    ]);
    for id in [
        "multi-accept-select",
        "multi-accept-like-rtsig",
        "devpoll-collapses",
        "rtsig-cpu-lower",
        "per-fd-higher-load",
        "completion-cheaper",
        "ours-like-nginx",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    // A sweep that overloads nobody decides no comparison of peaks.
    let unloaded = thr(&[
        ("select", 252, 4000.0, 3990.0, 50.0),
        ("select (accept one)", 252, 4000.0, 4000.0, 90.0),
        ("rtsig", 252, 4000.0, 3980.0, 30.0),
        ("rtsig-batch", 252, 4000.0, 4000.0, 25.0),
    ]);
    for id in [
        "multi-accept-select",
        "multi-accept-like-rtsig",
        "per-fd-higher-load",
    ] {
        check(id, &unloaded, Outcome::NotMeasured);
    }
}

fn t1(rows: &[(&str, f64, f64, f64)]) -> Vec<Pt> {
    rows.iter()
        .map(|(m, r, ovf, pct)| {
            pt(
                m,
                json!({"idle": 252, "rate": r}),
                json!({"overflows": ovf, "reply_pct_of_offered": pct}),
            )
        })
        .collect()
}

#[test]
fn table1_claims() {
    let mut good = t1(&[
        ("rtsig", 1000.0, 0.0, 100.0),
        ("rtsig", 9000.0, 500.0, 50.0),
        ("rtsig-batch", 1000.0, 0.0, 100.0),
        ("rtsig-batch", 9000.0, 0.0, 100.0),
        ("hybrid", 9000.0, 1.0, 100.0),
    ]);
    good.push(pt(
        "rtsig",
        json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
        json!({"overflows": 8.0, "lost": 0.0}),
    ));
    let good = rec("table1", good);
    let mut bad = t1(&[
        ("rtsig", 1000.0, 5.0, 100.0),
        ("rtsig", 9000.0, 0.0, 100.0),
        ("rtsig", 5000.0, 10.0, 100.0),
        ("rtsig-batch", 1000.0, 50.0, 100.0),
    ]);
    bad.push(pt(
        "rtsig",
        json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
        json!({"overflows": 8.0, "lost": 3.0}),
    ));
    let bad = rec("table1", bad);
    for id in [
        "overflow-past-knee",
        "per-fd-no-overflow",
        "overflow-tailspin",
        "recovery-loses-nothing",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
    // The held connections' connects and closes overflow a 64-entry queue at
    // every rate: the floor run says how much, and only the excess counts.
    let mut floored = t1(&[
        ("rtsig", 1000.0, 8.0, 100.0),
        ("rtsig", 9000.0, 120.0, 60.0),
    ]);
    floored.push(pt(
        "rtsig",
        json!({"idle": 252, "rate": 20.0, "part": "floor"}),
        json!({"overflows": 7.0, "reply_pct_of_offered": 100.0}),
    ));
    let floored = rec("table1", floored);
    check("overflow-past-knee", &floored, Outcome::Holds);
    check("overflow-tailspin", &floored, Outcome::Holds);
    let mut unfloored = floored.clone();
    unfloored.points.retain(|p| p.str("part") != Some("floor"));
    check("overflow-past-knee", &unfloored, Outcome::Partly);
}

#[test]
fn hybrid_claims() {
    let sweep = |m: &str, r: f64, p50: f64, y: f64| {
        pt(
            m,
            json!({"part": "sweep", "rate": r}),
            json!({"p50_us": p50, "reply_rate": y}),
        )
    };
    let step = |sw: f64, p50: f64| {
        pt(
            "hybrid",
            json!({"part": "step", "rate": 9000.0, "light_rate": 1000.0}),
            json!({"mode_switches": sw, "phase2_p50_us": p50}),
        )
    };
    let good = rec(
        "hybrid",
        vec![
            sweep("hybrid", 1000.0, 100.0, 1000.0),
            sweep("hybrid", 9000.0, 900.0, 9000.0),
            sweep("rtsig", 1000.0, 95.0, 1000.0),
            sweep("epoll", 9000.0, 800.0, 9000.0),
            step(4.0, 120.0),
        ],
    );
    let bad = rec(
        "hybrid",
        vec![
            sweep("hybrid", 1000.0, 300.0, 1000.0),
            sweep("hybrid", 9000.0, 9000.0, 5000.0),
            sweep("rtsig", 1000.0, 95.0, 1000.0),
            sweep("epoll", 9000.0, 800.0, 9000.0),
            step(1.0, 5000.0),
        ],
    );
    for id in ["hybrid-best-of-both", "hybrid-switches-back"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
}

#[test]
fn today_claims() {
    let herd = |mode: &str, w: f64| {
        pt(
            mode,
            json!({"part": "herd", "listener_mode": mode, "rate": 500.0}),
            json!({"wakeups_per_accept": w}),
        )
    };
    let mem = |s: &str, b: f64| {
        pt(
            s,
            json!({"part": "memory"}),
            json!({"rss_per_conn_bytes": b}),
        )
    };
    let good = rec(
        "today",
        vec![
            herd("shared (plain)", 1.0),
            herd("shared + EPOLLEXCLUSIVE", 1.0),
            herd("SO_REUSEPORT", 1.0),
            mem("threads", 20000.0),
            mem("epoll", 1000.0),
            mem("nginx", 900.0),
        ],
    );
    let bad = rec(
        "today",
        vec![
            herd("shared (plain)", 1.9),
            herd("shared + EPOLLEXCLUSIVE", 1.8),
            herd("SO_REUSEPORT", 1.9),
            mem("threads", 1100.0),
            mem("epoll", 1000.0),
            mem("nginx", 200.0),
        ],
    );
    for id in [
        "no-thundering-herd",
        "wake-one-available",
        "threads-memory",
        "memory-like-peers",
    ] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
    }
}

#[test]
fn loadcheck_claims() {
    let p = |tool: &str, workload: &str, rate: Value, y: f64| {
        pt(
            &format!("{tool} → epoll"),
            json!({"tool": tool, "workload": workload, "series": "epoll", "rate": rate}),
            json!({"reply_rate": y}),
        )
    };
    let good = rec(
        "loadcheck",
        vec![
            p("evdispatch load", "closed loop", json!("max"), 40000.0),
            p("wrk", "closed loop", json!("max"), 41000.0),
            p("evdispatch load", "open loop", json!(2000.0), 2000.0),
            p("httperf", "open loop", json!(2000.0), 1990.0),
        ],
    );
    let bad = rec(
        "loadcheck",
        vec![
            p("evdispatch load", "closed loop", json!("max"), 20000.0),
            p("wrk", "closed loop", json!("max"), 41000.0),
            p("evdispatch load", "open loop", json!(2000.0), 1500.0),
            p("httperf", "open loop", json!(2000.0), 1990.0),
        ],
    );
    for id in ["loadgen-vs-wrk", "loadgen-vs-httperf"] {
        check(id, &good, Outcome::Holds);
        check(id, &bad, Outcome::Fails);
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
                    model.to_string(),
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
