//! Scenario 7: the hybrid server seed 000 proposed and nobody built: RT
//! signals at light load for latency, epoll when the queue fills, back when
//! load subsides. Across the load range against rtsig and epoll: latency,
//! throughput, and the hybrid's time in each mode.
//!
//! Points: [`WebJob`] config; metrics `p50_us`, `p99_us`, `reply_rate`, and
//! from the server `mode_switches`, `signal_mode_ns`, `poll_mode_ns`
//! (plus `poll_mode_pct`, derived here).

use serde_json::{json, Map};

use super::{chart, session_job};
use crate::drive::Caps;
use crate::report::figure::{Figure, Metrics};
use crate::results::{Point, ScenarioRecord};
use crate::scenario::{Ctx, Job, Plan, Profile, Scenario};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "hybrid",
    number: 7,
    title: "The RT-signal/epoll hybrid across the load range",
    seeds: "000 §4 and §6 (the proposed hybrid server); 004 §3.3",
    about: "hybrid, rtsig and epoll under the same load, 251 inactive connections, 6 KB document, new connections at a swept rate from light to overload. Seed 000 expected a hybrid to get RT-signal latency at light load and polling's throughput at heavy load, cheaply, if the poll interest set is maintained alongside the signal mode.",
    plan,
    run,
    figures,
};

/// The mechanisms compared.
pub const MECHANISMS: &[&str] = &["hybrid", "rtsig", "epoll"];

fn plan(p: Profile, caps: &Caps) -> Plan {
    let rates: Vec<f64> = p.pick(
        vec![500.0, 5000.0],
        vec![1000.0, 8000.0, 20000.0, 35000.0],
        vec![
            500.0, 1000.0, 2500.0, 5000.0, 10000.0, 15000.0, 20000.0, 25000.0, 30000.0, 40000.0,
        ],
    );
    let duration = p.pick(0.3, 1.0, 4.0);
    let mut plan = Plan {
        params: json!({"mechanisms": MECHANISMS, "rates_conn_per_s": rates, "duration_s": duration, "inactive": 251, "document": "6k.html"}),
        ..Plan::default()
    };
    for m in MECHANISMS {
        for &r in &rates {
            let job = session_job(m, r, duration, 251, 0, "6k.html");
            plan_web(&mut plan, caps, format!("{m} {r}/s"), job, Map::new());
        }
    }
    plan
}

fn run(ctx: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    let mut points = run_web(ctx, job)?;
    for p in &mut points {
        if let (Some(s), Some(q)) = (p.metric("signal_mode_ns"), p.metric("poll_mode_ns")) {
            if s + q > 0.0 {
                p.metrics
                    .insert("poll_mode_pct".into(), 100.0 * q / (s + q));
            }
        }
    }
    Ok(points)
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    vec![
        chart(
            rec,
            &[],
            "rate",
            "request rate (connections/s)",
            Metrics::y("p50_us"),
            "median latency (µs)",
            (false, true),
            "Median latency: hybrid vs rtsig vs epoll".into(),
            "Median response time from the intended send time, log scale.",
        ),
        chart(
            rec,
            &[],
            "rate",
            "request rate (connections/s)",
            Metrics::y("p99_us"),
            "p99 latency (µs)",
            (false, true),
            "99th-percentile latency: hybrid vs rtsig vs epoll".into(),
            "Tail latency, log scale.",
        ),
        chart(
            rec,
            &[],
            "rate",
            "request rate (connections/s)",
            Metrics {
                y: "reply_rate",
                err: Some("reply_rate_stddev"),
                range: None,
            },
            "throughput (replies/s)",
            (false, false),
            "Throughput: hybrid vs rtsig vs epoll".into(),
            "Average reply rate ± standard deviation.",
        ),
        chart(
            rec,
            &[("series", serde_json::json!("hybrid"))],
            "rate",
            "request rate (connections/s)",
            Metrics::y("poll_mode_pct"),
            "time in epoll mode (%)",
            (false, false),
            "Where the hybrid spends its time".into(),
            "Share of the run the hybrid spent in epoll mode (the rest in signal mode).",
        ),
        chart(
            rec,
            &[("series", serde_json::json!("hybrid"))],
            "rate",
            "request rate (connections/s)",
            Metrics::y("mode_switches"),
            "mode switches per run",
            (false, false),
            "Hybrid mode switches against load".into(),
            "Switches between signal mode and epoll mode in each run.",
        ),
    ]
}
