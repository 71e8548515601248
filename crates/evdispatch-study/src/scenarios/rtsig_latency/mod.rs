//! Scenario 3: RT signals vs /dev/poll, median latency against load (seed
//! 000 §5.2, Fig. 14): phhttpd answered 1–3 ms faster at low load, then past
//! ~900 concurrent connections its median leapt beyond 120 ms while thttpd
//! with /dev/poll stayed flat. Today: our server on rtsig and epoll at 1, 251
//! and 501 inactive connections (Figs. 11–13), rtsig-batch at 251, 6 KB, new connections at a swept rate,
//! the signal queue limited to 1,024 as in the seed's kernels.
//!
//! Points: [`WebJob`](crate::web::WebJob) config; metrics `p50_us`, `p99_us`, `reply_rate`,
//! `overflows`, `connections_peak`…

mod claims;

use serde_json::{json, Map, Value};

use crate::figure::{Figure, Metrics};
use crate::report::reading;
use crate::results::ScenarioRecord;
use crate::scenarios::common::{rate_chart, session_job, value_of, REPLY_RATE};
use crate::spec::{Caps, Plan, Profile, Scenario, ServerSpec};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "rtsig-latency",
    title: "RT signals vs epoll: median latency against load",
    seeds: "000 §5.2 (phhttpd vs thttpd with /dev/poll, Figs. 11–14)",
    about: "Reply rate and median response latency (from each request's intended send time, connect included) against the offered rate of new connections with the seed's 1, 251 and 501 inactive connections, 6 KB document, each point after a warm-up left out of its figures; the server on rtsig (one sigtimedwait per signal, as phhttpd) and epoll at every count, rtsig-batch (many signals per read of a signalfd, the seed's proposed sigtimedwait4) at 251, each connection read only after its first report (--no-eager-read). The server's RT-signal queue is limited to 1,024 entries (RLIMIT_SIGPENDING), the rtsig-max of the seed's Linux 2.2–2.4 kernels; past it the kernel raises SIGIO and the server recovers by polling every descriptor. The servers run under the calibrated CPU budget (the study's small machine, see \"The servers' CPU budget\") and the rates are multiples of its knee, so that the sweep reaches overload on any host; where no budget can be set they run as the host gives, and the overload claims say \"not reached\" with what was reached.",
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

/// The seed's inactive connections (000 §5.1–5.2, Figs. 11–13); its
/// latency figure (Fig. 14) and the batch comparison run at 251.
pub const INACTIVE: [u32; 3] = [1, 251, 501];

/// The swept rates as multiples of the calibrated knee (epoll's, under the
/// servers' CPU budget), by profile.
fn multiples(p: Profile) -> Vec<f64> {
    p.pick(
        vec![0.25, 2.0],
        vec![0.1, 0.5, 1.0, 2.0],
        vec![0.1, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0],
    )
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    // Multiples of the calibrated knee under the servers' CPU budget (the
    // study's small machine), so that the sweep reaches the knee on any
    // host; fixed rates where there is no calibration.
    let rates = caps.rates(
        &multiples(p),
        p.pick(
            vec![500.0, 3000.0],
            vec![500.0, 2500.0, 5000.0, 10000.0],
            vec![
                250.0, 500.0, 1000.0, 2000.0, 3000.0, 4000.0, 6000.0, 8000.0, 10000.0, 11000.0,
            ],
        ),
    );
    // Each point: a warm-up left out of its figures, then a window of
    // five sampling intervals (its own spread).
    let (warmup, duration) = p.pick((0.1, 0.4), (0.15, 0.4), (0.3, 0.8));
    let mut params = json!({"mechanisms": MECHANISMS, "rates_conn_per_s": rates, "knee_multiples": multiples(p), "warmup_s": warmup, "duration_s": duration, "inactive": INACTIVE, "batch_inactive": 251, "document": "6k.html", "rlimit_sigpending": QUEUE, "eager_read": false});
    if let (Some(m), Value::Object(b)) = (params.as_object_mut(), caps.budget_params()) {
        m.extend(b);
    }
    let mut plan = Plan {
        params,
        // Two rounds in quick (three counts of the seed's cost three times
        // the runs of one), three in full; their verdicts say how far the
        // range over the rounds covers the median.
        rounds: p.pick(0, 2, 3),
        ..Plan::default()
    };
    for &inactive in &INACTIVE {
        for m in MECHANISMS {
            // rtsig-batch answers one question (does batching help?),
            // asked at the seed's Fig. 14 count.
            if *m == "rtsig-batch" && inactive != 251 {
                continue;
            }
            for &r in &rates {
                let server = caps.budgeted(ServerSpec {
                    rlimit_sigpending: m.starts_with("rtsig").then_some(QUEUE),
                    ..ServerSpec::dispatch(m)
                });
                let mut job = session_job(server, r, duration, inactive, 0, "6k.html");
                job.load.warmup_s = warmup;
                plan_web(
                    &mut plan,
                    caps,
                    format!("{m} {inactive} inactive {r}/s"),
                    job,
                    Map::new(),
                );
            }
        }
    }
    plan
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let mut figs = Vec::new();
    for (i, fig) in [(1, 11), (251, 12), (501, 13)] {
        let f = [("inactive", value_of(i))];
        if rec.select(&f).next().is_none() {
            continue;
        }
        figs.push(
            rate_chart(
                rec,
                &f,
                Metrics {
                    range: Some(("reply_rate_min", "reply_rate_max")),
                    ..REPLY_RATE
                },
                "reply rate (replies/s)",
                (false, false),
                format!("Reply rate against load, RT signals vs epoll, {i} inactive (cf. seed 000 Fig. {fig})"),
                "Average reply rate with ± one standard deviation and the min–max of the sampling intervals. Where a line bends away below the request rate the server is past its knee. phhttpd (RT signals) reached its knee sooner with more inactive connections and scaled less well than thttpd with /dev/poll (epoll's ancestor).",
            )
            .read(|c| reading::knee(c, 0.95)),
        );
        figs.push(
            rate_chart(
                rec,
                &f,
                Metrics::y("p50_us"),
                "median latency (µs)",
                (false, true),
                if i == 251 {
                    "Median latency against load, 251 inactive (cf. seed 000 Fig. 14)".into()
                } else {
                    format!("Median latency against load, {i} inactive")
                },
                "Median response time measured from each request's intended send time, log scale. phhttpd (RT signals) was 1–3 ms faster than thttpd with /dev/poll at low load, then past ~900 concurrent connections jumped past 120 ms; thttpd stayed nearly flat.",
            )
            .read(|c| reading::span(c, "µs")),
        );
    }
    figs.push(
        rate_chart(
            rec,
            &[("inactive", value_of(251))],
            Metrics::y("connections_peak"),
            "connections open at once (peak)",
            (false, true),
            "Concurrent connections against load, 251 inactive".into(),
            "The most connections open at once, the 251 inactive included: the seed's RT-signal latency jumped past ~900 concurrent connections, which a server reaches only when replies slow down or the rate is high.",
        )
        .read(|c| reading::span(c, "connections")),
    );
    figs.push(
        rate_chart(
            rec,
            &[("inactive", value_of(251))],
            Metrics::y("overflows"),
            "SIGIO overflows per run",
            (false, false),
            "Signal-queue overflows against load, 251 inactive (queue of 1,024)".into(),
            "Each overflow costs the RT-signal server a flush of the queue and a poll of every descriptor; epoll has no queue to overflow (its line stays at zero).",
        )
        .read(|c| reading::span(c, "overflows")),
    );
    figs
}
