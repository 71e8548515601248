//! Scenario 3: RT signals vs /dev/poll, median latency against load (seed
//! 000 §5.2, Fig. 14): phhttpd answered 1–3 ms faster at low load, then past
//! ~900 concurrent connections its median leapt beyond 120 ms while thttpd
//! with /dev/poll stayed flat. Today: our server on rtsig, rtsig-batch and
//! epoll, 251 inactive connections, 6 KB, new connections at a swept rate,
//! the signal queue limited to 1,024 as in the seed's kernels.
//!
//! Points: [`WebJob`](crate::web::WebJob) config; metrics `p50_us`, `p99_us`, `reply_rate`,
//! `overflows`, `connections_peak`…

mod claims;

use serde_json::{json, Map};

use crate::report::figure::{Figure, Metrics};
use crate::report::reading;
use crate::results::ScenarioRecord;
use crate::scenarios::common::{rate_chart, session_job, REPLY_RATE};
use crate::spec::{Caps, Plan, Profile, Scenario, ServerSpec};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "rtsig-latency",
    title: "RT signals vs epoll: median latency against load",
    seeds: "000 §5.2 (phhttpd vs thttpd with /dev/poll, Fig. 14)",
    about: "Median response latency (from each request's intended send time, connect included) against the offered rate of new connections, 251 inactive connections, 6 KB document; the server on rtsig (one sigtimedwait per signal, as phhttpd), rtsig-batch (many signals per read of a signalfd, the seed's proposed sigtimedwait4) and epoll, each connection read only after its first report (--no-eager-read). The server's RT-signal queue is limited to 1,024 entries (RLIMIT_SIGPENDING), the rtsig-max of the seed's Linux 2.2–2.4 kernels; past it the kernel raises SIGIO and the server recovers by polling every descriptor.",
    plan,
    run: run_web,
    figures,
    opt_in: false,
    claims: claims::CLAIMS,
};

/// The mechanisms compared.
pub const MECHANISMS: &[&str] = &["rtsig", "rtsig-batch", "epoll"];
/// The queue limit of the seed's kernels (`/proc/sys/kernel/rtsig-max`).
pub const QUEUE: u64 = 1024;

fn plan(p: Profile, caps: &Caps) -> Plan {
    let rates: Vec<f64> = p.pick(
        vec![500.0, 3000.0],
        vec![500.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0],
        vec![
            250.0, 500.0, 1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 7000.0, 8000.0, 9000.0,
            10000.0, 11000.0,
        ],
    );
    let duration = p.pick(0.4, 0.5, 1.2);
    let inactive = 251;
    let mut plan = Plan {
        params: json!({"mechanisms": MECHANISMS, "rates_conn_per_s": rates, "duration_s": duration, "inactive": inactive, "document": "6k.html", "rlimit_sigpending": QUEUE, "eager_read": false}),
        ..Plan::default()
    };
    for m in MECHANISMS {
        for &r in &rates {
            let server = ServerSpec {
                rlimit_sigpending: m.starts_with("rtsig").then_some(QUEUE),
                ..ServerSpec::dispatch(m)
            };
            let job = session_job(server, r, duration, inactive, 0, "6k.html");
            plan_web(&mut plan, caps, format!("{m} {r}/s"), job, Map::new());
        }
    }
    plan
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    vec![
        rate_chart(
            rec,
            &[],
            Metrics::y("p50_us"),
            "median latency (µs)",
            (false, true),
            "Median latency against load, 251 inactive (cf. seed 000 Fig. 14)".into(),
            "Median response time measured from each request's intended send time, log scale. phhttpd (RT signals) was 1–3 ms faster than thttpd with /dev/poll at low load, then jumped past 120 ms; thttpd stayed nearly flat.",
        )
        .read(|c| reading::span(c, "µs")),
        rate_chart(
            rec,
            &[],
            REPLY_RATE,
            "reply rate (replies/s)",
            (false, false),
            "Reply rate against load, 251 inactive".into(),
            "Where the reply rate falls below the request rate the server is past its knee; the latency jump above happens there.",
        )
        .read(|c| reading::knee(c, 0.95)),
        rate_chart(
            rec,
            &[],
            Metrics::y("overflows"),
            "SIGIO overflows per run",
            (false, false),
            "Signal-queue overflows against load (queue of 1,024)".into(),
            "Each overflow costs the RT-signal server a flush of the queue and a poll of every descriptor; epoll has no queue to overflow (its line stays at zero).",
        )
        .read(|c| reading::span(c, "overflows")),
    ]
}
