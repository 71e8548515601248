//! Scenario 3: RT signals vs /dev/poll, median latency against load (seed
//! 000 §5.2, Fig. 14): phhttpd answered 1–3 ms faster at low load, then past
//! ~900 concurrent connections its median leapt beyond 120 ms while thttpd
//! with /dev/poll stayed flat. Today: our server on rtsig, rtsig-batch and
//! epoll, 251 inactive connections, 6 KB, new connections at a swept rate.
//!
//! Points: [`WebJob`] config; metrics `p50_us`, `p99_us`, `reply_rate`,
//! `connections_peak`…

use serde_json::{json, Map};

use super::{chart, session_job};
use crate::drive::Caps;
use crate::report::figure::{Figure, Metrics};
use crate::results::ScenarioRecord;
use crate::scenario::{Plan, Profile, Scenario};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "rtsig-latency",
    number: 3,
    title: "RT signals vs epoll: median latency against load",
    seeds: "000 §5.2 (phhttpd vs thttpd with /dev/poll, Fig. 14)",
    about: "Median response latency (coordinated-omission corrected, from the intended send time) against the offered rate, 251 inactive connections, 6 KB document, one new connection per request; the server on rtsig (one sigtimedwait per signal, as phhttpd), rtsig-batch (signalfd batches) and epoll.",
    plan,
    run: run_web,
    figures,
};

/// The mechanisms compared.
pub const MECHANISMS: &[&str] = &["rtsig", "rtsig-batch", "epoll"];

fn plan(p: Profile, caps: &Caps) -> Plan {
    let rates: Vec<f64> = p.pick(
        vec![500.0, 4000.0],
        vec![1000.0, 5000.0, 10000.0, 20000.0, 30000.0],
        vec![
            500.0, 1000.0, 2500.0, 5000.0, 7500.0, 10000.0, 15000.0, 20000.0, 25000.0, 30000.0,
            40000.0,
        ],
    );
    let duration = p.pick(0.3, 1.2, 4.0);
    let inactive = 251;
    let mut plan = Plan {
        params: json!({"mechanisms": MECHANISMS, "rates_conn_per_s": rates, "duration_s": duration, "inactive": inactive, "document": "6k.html"}),
        ..Plan::default()
    };
    for m in MECHANISMS {
        for &r in &rates {
            let job = session_job(m, r, duration, inactive, 0, "6k.html");
            plan_web(&mut plan, caps, format!("{m} {r}/s"), job, Map::new());
        }
    }
    plan
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
            "Median latency against load, 251 inactive (cf. seed 000 Fig. 14)".into(),
            "Median response time measured from each request's intended send time, log scale. phhttpd (RT signals) was 1–3 ms faster at low load, then jumped past 120 ms; thttpd with /dev/poll stayed flat.",
        ),
        chart(
            rec,
            &[],
            "rate",
            "request rate (connections/s)",
            Metrics::y("reply_rate"),
            "reply rate (replies/s)",
            (false, false),
            "Reply rate against load, 251 inactive".into(),
            "Where the reply rate falls below the request rate the server is past its knee.",
        ),
    ]
}
