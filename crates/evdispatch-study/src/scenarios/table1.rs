//! Scenario 6: Table 1 of seed 004 §4.2: at each request rate, the number of
//! signals dequeued and of SIGIO overflows for the RT-signal server, with
//! 252 and 6,000 idle connections and 1-byte replies. The queue limit
//! (RLIMIT_SIGPENDING of the server process) is lowered so that the knee is
//! reachable here; rtsig-batch (signalfd batches, coalesced per fd) and the
//! hybrid's mode switches are tabulated beside it.
//!
//! Points: [`WebJob`] config; metrics from the server's stats
//! (`signals_dequeued`, `dequeue_calls`, `overflows`, `recoveries`,
//! `mode_switches`, `signal_mode_ns`, `poll_mode_ns`) and the load.

use serde_json::{json, Map};

use super::{chart, j};
use crate::drive::{Caps, LoadSpec, Rate, ServerSpec};
use crate::report::figure::{fmt_num, Figure, Metrics, Table};
use crate::results::ScenarioRecord;
use crate::scenario::{Plan, Profile, Scenario};
use crate::web::{plan_web, run_web, WebJob};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "table1",
    number: 6,
    title: "Table 1: signal-queue overflows against load",
    seeds: "004 §4.2 (Table 1); 000 §2 (SIGIO on overflow)",
    about: "The seed's RT-signal server dequeued ~500,000 signals per run and saw no SIGIO up to 3,000 req/s; from 3,200 req/s every dequeue ended in overflow and the server lived on its fallback. Here the server's RLIMIT_SIGPENDING is lowered so that the queue can fill on a modern machine.",
    plan,
    run: run_web,
    figures,
};

/// The queue limit given to the server process.
pub const SIGPENDING: u64 = 64;
/// The mechanisms tabulated.
pub const MECHANISMS: &[&str] = &["rtsig", "rtsig-batch", "hybrid"];

fn plan(p: Profile, caps: &Caps) -> Plan {
    let idle: Vec<u32> = p.pick(vec![252], vec![252, 6000], vec![252, 6000]);
    let rates: Vec<f64> = p.pick(
        vec![1000.0, 8000.0],
        vec![2000.0, 10000.0, 20000.0, 35000.0],
        vec![
            2000.0, 5000.0, 10000.0, 15000.0, 20000.0, 25000.0, 30000.0, 40000.0,
        ],
    );
    let duration = p.pick(0.3, 0.8, 3.0);
    let mut plan = Plan {
        params: json!({"idle": idle, "rates_conn_per_s": rates, "duration_s": duration, "rlimit_sigpending": SIGPENDING, "mechanisms": MECHANISMS, "document": "1b.txt"}),
        ..Plan::default()
    };
    for &i in &idle {
        for m in MECHANISMS {
            for &r in &rates {
                let job = WebJob {
                    series: m.to_string(),
                    server: ServerSpec {
                        rlimit_sigpending: Some(SIGPENDING),
                        ..ServerSpec::ours(m)
                    },
                    load: LoadSpec {
                        document: "1b.txt".into(),
                        rate: Rate::PerSec(r),
                        duration_s: duration,
                        sessions: true,
                        calls: 1,
                        persistent: 0,
                        inactive: 0,
                        idle: i,
                        procs: 1,
                    },
                };
                plan_web(
                    &mut plan,
                    caps,
                    format!("{m} {i} idle {r}/s"),
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
    let idles = rec.distinct("idle");
    let mut rates: Vec<f64> = rec.points.iter().filter_map(|p| p.num("rate")).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    if !rates.is_empty() {
        let mut t = Table {
            columns: vec!["request rate (/s)".into()],
            rows: vec![],
        };
        for i in &idles {
            t.columns.push(format!("{i} idle: rtsig dequeues"));
            t.columns.push(format!("{i} idle: rtsig SIGIOs"));
            t.columns.push(format!("{i} idle: rtsig-batch SIGIOs"));
            t.columns.push(format!("{i} idle: hybrid switches"));
        }
        for r in &rates {
            let mut row = vec![fmt_num(*r)];
            for i in &idles {
                let get = |m: &str, k: &str| {
                    rec.select(&[("series", j(m)), ("idle", i.clone()), ("rate", j(r))])
                        .find_map(|p| p.metric(k))
                        .map(fmt_num)
                        .unwrap_or_else(|| "–".into())
                };
                row.push(get("rtsig", "signals_dequeued"));
                row.push(get("rtsig", "overflows"));
                row.push(get("rtsig-batch", "overflows"));
                row.push(get("hybrid", "mode_switches"));
            }
            t.rows.push(row);
        }
        figs.push(Figure::table(
            format!("Signal-queue overflows against load, RLIMIT_SIGPENDING = {SIGPENDING} (cf. seed 004 Table 1)"),
            "Signals dequeued and SIGIO overflows counted by the server's poller over each run; hybrid: switches between signal and epoll mode.",
            t,
        ));
    }
    for i in idles {
        figs.push(chart(
            rec,
            &[("idle", i.clone())],
            "rate",
            "request rate (connections/s)",
            Metrics::y("overflows"),
            "SIGIO overflows per run",
            (false, false),
            format!("Overflows against load, {i} idle"),
            "Zero until the knee in the seed; past it every dequeue ended in overflow.",
        ));
    }
    figs
}
