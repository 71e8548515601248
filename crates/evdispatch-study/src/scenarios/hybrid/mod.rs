//! Scenario 7: the hybrid server seed 000 proposed and nobody built: RT
//! signals at light load for latency, epoll when the queue fills, back when
//! load subsides. Across the load range against rtsig and epoll (latency,
//! throughput, time in each mode), and a load step — heavy, then light, on
//! the same server — to see it come back.
//!
//! Points: [`WebJob`](crate::web::WebJob) config (`part` = `sweep` or `step`); metrics
//! `p50_us`, `p99_us`, `reply_rate`, and from the server `mode_switches`,
//! `signal_mode_ns`, `poll_mode_ns`, `poll_mode_pct`; step points also
//! `phase2_…` (the light phase).

mod claims;

use serde_json::{json, Map, Value};

use crate::figure::{Figure, Metrics, Table};
use crate::report::reading;
use crate::results::ScenarioRecord;
use crate::scenarios::common::{cell, rate_chart, session_job, value_of, REPLY_RATE};
use crate::spec::{Caps, LoadSpec, Plan, Profile, Scenario, ServerSpec};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "hybrid",
    title: "The RT-signal/epoll hybrid across the load range",
    seeds: "000 §4, §6 and §7 (the proposed hybrid server); 004 §3.3",
    about: "hybrid, rtsig and epoll under the same load: 251 inactive connections, 6 KB document, new connections at a swept rate from light to overload, the signal queue limited to 1,024 as in scenario 3, every connection read after its first report. Seed 000 expected a hybrid to get RT-signal latency at light load and polling's throughput at heavy load, cheaply if the poll interest set is maintained alongside the signal mode, and asked that it switch back when load subsides (phhttpd never did). The step runs offer a heavy rate and then a light one to the same server. The servers run under the calibrated CPU budget and the rates are multiples of the calibrated knee; a claim about the hybrid's switching is decided only where it switched, and its throughput only where the servers fell behind, else \"not reached\".",
    plan,
    run: run_web,
    figures,
    opt_in: false,
    claims: claims::CLAIMS,
};

/// The mechanisms compared.
pub const MECHANISMS: &[&str] = &["hybrid", "rtsig", "epoll"];
/// The queue limit (as scenario 3).
pub const QUEUE: u64 = 1024;

fn server(m: &str, caps: &Caps) -> ServerSpec {
    caps.budgeted(ServerSpec {
        rlimit_sigpending: (m != "epoll").then_some(QUEUE),
        ..ServerSpec::dispatch(m)
    })
}

fn part(name: &str) -> Map<String, Value> {
    [("part".to_string(), json!(name))].into_iter().collect()
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    // Multiples of the calibrated knee (under the servers' CPU budget):
    // light load, around the knee, and past it; without a calibration the
    // fixed rates one generator core offers. The step goes from the top
    // rate to the lowest.
    let multiples = p.pick(
        vec![0.5, 2.0],
        vec![0.5, 1.25, 2.0],
        vec![0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0],
    );
    let rates = caps.rates(
        &multiples,
        p.pick(
            vec![500.0, 4000.0],
            vec![1000.0, 5500.0, 10000.0],
            vec![
                500.0, 1000.0, 2500.0, 4000.0, 5500.0, 7000.0, 8500.0, 10000.0, 11500.0,
            ],
        ),
    );
    let duration = p.pick(0.4, 0.5, 1.2);
    let heavy = rates.iter().copied().fold(0.0, f64::max);
    let light = if caps.calibration.is_some() {
        rates[0]
    } else {
        p.pick(500.0, 1000.0, 1000.0)
    };
    let params = caps.with_budget_params(json!({"mechanisms": MECHANISMS, "rates_conn_per_s": rates, "knee_multiples": multiples, "duration_s": duration, "inactive": 251, "document": "6k.html", "rlimit_sigpending": QUEUE, "step": {"heavy": heavy, "light": light}, "eager_read": false}));
    let mut plan = Plan {
        params,
        ..Plan::default()
    };
    for m in MECHANISMS {
        for &r in &rates {
            let job = session_job(server(m, caps), r, duration, 251, 0, "6k.html");
            plan_web(&mut plan, caps, format!("{m} {r}/s"), job, part("sweep"));
        }
    }
    for m in ["hybrid", "rtsig"] {
        // The step's queue is table 1's: at 1,024 entries today's core
        // never fills it, so the heavy phase would not push the hybrid
        // into polling and there would be nothing to switch back from.
        let step_server = ServerSpec {
            rlimit_sigpending: Some(crate::scenarios::table1::SIGPENDING),
            ..server(m, caps)
        };
        let mut job = session_job(step_server, heavy, duration, 251, 0, "6k.html");
        job.then = vec![LoadSpec {
            inactive: 251,
            ..LoadSpec::sessions("6k.html", light, duration)
        }];
        let mut extra = part("step");
        extra.insert("light_rate".into(), json!(light));
        plan_web(
            &mut plan,
            caps,
            format!("{m} step {heavy}/s then {light}/s"),
            job,
            extra,
        );
    }
    plan
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let sweep = [("part", value_of("sweep"))];
    let hybrid = [("part", value_of("sweep")), ("series", value_of("hybrid"))];
    let mut figs = vec![
        rate_chart(
            rec,
            &sweep,
            Metrics::y("p50_us"),
            "median latency (µs)",
            (false, true),
            "Median latency: hybrid vs rtsig vs epoll".into(),
            "Median response time from each request's intended send time, log scale.",
        )
        .read(|c| reading::span(c, "µs")),
        rate_chart(
            rec,
            &sweep,
            REPLY_RATE,
            "throughput (replies/s)",
            (false, false),
            "Throughput: hybrid vs rtsig vs epoll".into(),
            "Average reply rate ± standard deviation over the sampling intervals.",
        )
        .read(|c| reading::knee(c, 0.95)),
        rate_chart(
            rec,
            &hybrid,
            Metrics::y("poll_mode_pct"),
            "time in epoll mode (%)",
            (false, false),
            "Where the hybrid spends its time".into(),
            "Share of the run the hybrid spent in epoll mode (the rest in signal mode).",
        )
        .read(|c| reading::span(c, "%")),
        rate_chart(
            rec,
            &hybrid,
            Metrics::y("mode_switches"),
            "mode switches per run",
            (false, false),
            "Hybrid mode switches against load".into(),
            "Switches between signal mode and epoll mode in each run, the first one to epoll; an even count means the run ended in signal mode, where it started. The generator closes every held connection at once when it exits, a burst that can add a last switch to epoll just before the server stops.",
        )
        .read(|c| reading::span(c, "switches")),
    ];
    let steps: Vec<_> = rec.select(&[("part", value_of("step"))]).collect();
    if !steps.is_empty() {
        let mut t = Table::new(&[
            "server",
            "heavy: offered /s",
            "heavy: replies/s",
            "light: offered /s",
            "light: replies/s",
            "light: median µs",
            "same light rate, fresh server: median µs",
            "mode switches",
            "time in epoll mode (%)",
        ]);
        for p in steps {
            let light = p.num("light_rate");
            let fresh = light.and_then(|l| {
                rec.select(&[
                    ("part", value_of("sweep")),
                    ("series", value_of(&p.series)),
                    ("rate", value_of(l)),
                ])
                .find_map(|q| q.metric("p50_us"))
            });
            t.rows.push(vec![
                p.series.clone(),
                cell(p.num("rate")),
                cell(p.metric("reply_rate")),
                cell(light),
                cell(p.metric("phase2_reply_rate")),
                cell(p.metric("phase2_p50_us")),
                cell(fresh),
                cell(p.metric("mode_switches")),
                cell(p.metric("poll_mode_pct")),
            ]);
        }
        figs.push(Figure::table(
            "Load step: heavy, then light, on the same server",
            "A heavy rate drives the server past its knee, then a light rate follows on the same process; the signal queue is limited to 64 entries here (table 1's limit) so that the heavy phase can fill it. If the hybrid returns to signal mode, it switched at least twice (to epoll and back; the closing burst may add one more) and its light-phase latency matches a fresh server's at that rate; phhttpd never switched back.",
            t,
        ));
    }
    figs
}
