//! Scenario 2: poll vs /dev/poll in thttpd (seed 000 §5.1), today poll vs
//! epoll inside one server, with 1, 251, 501, 2,000 and 10,000 inactive
//! connections, a 6 KB document, new connections at a swept rate. Peer:
//! lighttpd with `server.event-handler` poll vs epoll.
//!
//! Points: config of [`WebJob`] plus `inactive`; metrics from the load
//! generator (`reply_rate`, `reply_rate_stddev|min|max`, `error_pct`…).

use serde_json::{json, Map};

use super::{chart, fd_limit};
use crate::drive::{Caps, LoadSpec, Rate, ServerSpec};
use crate::report::figure::{Figure, Metrics};
use crate::results::ScenarioRecord;
use crate::scenario::{Plan, Profile, Scenario};
use crate::web::{plan_web, run_web, WebJob};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "poll-vs-epoll",
    number: 2,
    title: "poll vs epoll with inactive connections",
    seeds: "000 §5.1 (Provos & Lever: thttpd with poll vs /dev/poll, Figs. 4–10)",
    about: "One single-core server, its mechanism poll or epoll (the mainline heir of /dev/poll); I extra inactive connections (opened, never completing a request, reopened when timed out); a 6 KB document requested over new connections at a swept rate. Drawn as the seed drew it: average reply rate with ± standard deviation bars and the min–max band, against the request rate; and the percentage of connections with errors.",
    plan,
    run: run_web,
    figures,
};

fn inactive(p: Profile) -> Vec<u32> {
    p.pick(
        vec![1, 251],
        vec![1, 251, 501, 10000],
        vec![1, 251, 501, 2000, 10000],
    )
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    let rates: Vec<f64> = p.pick(
        vec![500.0, 2000.0],
        vec![3000.0, 10000.0, 25000.0],
        vec![
            2000.0, 5000.0, 10000.0, 15000.0, 20000.0, 25000.0, 30000.0, 40000.0,
        ],
    );
    let duration = p.pick(0.3, 1.0, 4.0);
    let peer_inactive: Vec<u32> = p.pick(vec![], vec![501], vec![251, 501, 2000]);
    let mut plan = Plan {
        params: json!({"inactive": inactive(p), "rates_conn_per_s": rates, "duration_s": duration, "document": "6k.html", "peer": "lighttpd", "peer_inactive": peer_inactive}),
        ..Plan::default()
    };
    let mut servers: Vec<(ServerSpec, bool)> = ["poll", "epoll"]
        .iter()
        .map(|m| (ServerSpec::ours(m), false))
        .collect();
    for handler in ["poll", "linux-sysepoll"] {
        let mut s = ServerSpec::peer("lighttpd");
        s.mechanism = Some(handler.into());
        servers.push((s, true));
    }
    for i in inactive(p) {
        for (server, is_peer) in &servers {
            if *is_peer && !peer_inactive.contains(&i) {
                continue;
            }
            if let Some(m) = server.mechanism.as_deref().filter(|_| !is_peer) {
                if let Err(why) = fd_limit(caps, m, i) {
                    plan.skip(format!("{m}, {i} inactive"), why);
                    continue;
                }
            }
            for &r in &rates {
                let job = WebJob {
                    series: server.series(),
                    server: ServerSpec {
                        idle_timeout_s: Some(60.0),
                        header_timeout_s: Some(60.0),
                        ..server.clone()
                    },
                    load: LoadSpec {
                        document: "6k.html".into(),
                        rate: Rate::PerSec(r),
                        duration_s: duration,
                        sessions: true,
                        calls: 1,
                        persistent: 0,
                        inactive: i,
                        idle: 0,
                        procs: 1,
                    },
                };
                plan_web(
                    &mut plan,
                    caps,
                    format!("{} {i} inactive {r}/s", server.series()),
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
    for i in rec.distinct("inactive") {
        figs.push(chart(
            rec,
            &[("inactive", i.clone())],
            "rate",
            "request rate (connections/s)",
            Metrics { y: "reply_rate", err: Some("reply_rate_stddev"), range: Some(("reply_rate_min", "reply_rate_max")) },
            "reply rate (replies/s)",
            (false, false),
            format!("Reply rate with {i} inactive connections (cf. seed 000 Figs. 4–9)"),
            "Average reply rate with ± one standard deviation over the sampling intervals; the dashed marks and the band are the minimum and maximum interval rates. Ideally the reply rate equals the request rate.",
        ));
    }
    for i in rec
        .distinct("inactive")
        .into_iter()
        .filter(|i| i.as_f64().unwrap_or(0.0) >= 251.0)
    {
        figs.push(chart(
            rec,
            &[("inactive", i.clone())],
            "rate",
            "request rate (connections/s)",
            Metrics::y("error_pct"),
            "connections with errors (%)",
            (false, false),
            format!("Errors with {i} inactive connections (cf. seed 000 Fig. 10)"),
            "Percentage of connections that ended in an error (refused, reset, timed out…). Stock thttpd's rose to 60%; /dev/poll had none below 501 inactive.",
        ));
    }
    figs
}
