//! Scenario 5: dispatch throughput (seed 004 §4.1, Figs. 6–9): 252 and 6,000
//! idle connections, 1-byte and 6 KB replies, new connections at a swept
//! rate; throughput, server CPU and response time for every mechanism and
//! model (select with one accept and with multi-accept), and nginx,
//! lighttpd and h2o beside them.
//!
//! Points: [`WebJob`](crate::web::WebJob) config plus `reply_bytes`; metrics `reply_rate`,
//! `server_cpu_pct`, `mean_us`/`p50_us`.

mod claims;

use serde_json::{json, Map};

use crate::figure::{Figure, Metrics};
use crate::report::reading;
use crate::results::ScenarioRecord;
use crate::scenarios::common::{all_dispatch, chart, fd_limit, session_job, value_of, REPLY_RATE};
use crate::spec::{Caps, Plan, Profile, Scenario, ServerSpec, PEER_SERVERS};
use crate::web::{plan_web, run_web};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "throughput",
    title: "Dispatch throughput under load",
    seeds: "004 §4.1–4.2 (Figs. 6–9); 002 slides 20–21",
    about: "A fixed number of idle connections (each made one request, then stays silent) and new connections at a swept rate, each one request for a 1-byte or 6 KB reply. The seed found select plateaued early, /dev/poll collapsed under overload, RT signals scaled linearly, and multi-accept select sustained RT-signal throughput despite 100% CPU. Every server (ours and the peers) runs under the calibrated CPU budget and the rates are multiples of the calibrated knee, so the overload the seed's claims are about is reached here; an overload claim is decided only where a server fell behind with the generator not the limit, else it says \"not reached\". Signal-per-fd is rtsig-perfd; rtsig-batch stands for sigtimedwait4.",
    plan,
    run: run_web,
    figures,
    opt_in: false,
    claims: claims::CLAIMS,
};

/// The servers compared: select with one accept per report and with
/// multi-accept, then every mechanism and model, then the peers.
/// The mechanisms the claims read; quick runs only these (full runs every
/// mechanism and peer, for the figures).
const READ_BY_CLAIMS: &[&str] = &[
    "select",
    "poll",
    "epoll",
    "rtsig",
    "rtsig-perfd",
    "uring-completion",
];

fn servers(p: Profile) -> Vec<ServerSpec> {
    let mut servers: Vec<ServerSpec> = Vec::new();
    let tiny: Vec<&str> = READ_BY_CLAIMS
        .iter()
        .copied()
        .chain(["rtsig-batch"])
        .collect();
    let mechanisms = match p {
        Profile::Quick => all_dispatch()
            .into_iter()
            .filter(|m| READ_BY_CLAIMS.contains(&m.as_str()))
            .collect(),
        _ => p.sample(all_dispatch(), &tiny),
    };
    for m in mechanisms {
        if m == "select" {
            servers.push(ServerSpec {
                accept: Some("one".into()),
                ..ServerSpec::dispatch("select")
            });
        }
        servers.push(ServerSpec {
            accept: Some("all".into()),
            ..ServerSpec::dispatch(&m)
        });
    }
    let peers: Vec<String> = PEER_SERVERS.iter().map(|s| s.to_string()).collect();
    // nginx is the peer the claims read.
    let peers = match p {
        Profile::Full => peers,
        _ => vec!["nginx".to_string()],
    };
    servers.extend(peers.iter().map(|p| ServerSpec::peer(p)));
    servers
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    let configs: Vec<(u32, &str, u32)> = p.pick(
        vec![(252, "1b.txt", 1)],
        vec![(252, "1b.txt", 1), (6000, "6k.html", 6144)],
        vec![
            (252, "1b.txt", 1),
            (6000, "1b.txt", 1),
            (6000, "6k.html", 6144),
        ],
    );
    // Quick: half the calibrated knee, where its claims on CPU and cost
    // are decided below every knee, and twice it, past every mechanism's
    // knee under the servers' CPU budget, where the overload claims are
    // decided. Without a calibration, the fixed rates one generator core
    // offers.
    let multiples = p.pick(
        vec![0.5, 2.0],
        vec![0.5, 2.0],
        vec![0.25, 0.5, 1.0, 1.5, 2.0],
    );
    let rates = caps.rates(
        &multiples,
        p.pick(
            vec![2000.0],
            vec![3000.0, 10000.0],
            vec![1000.0, 2500.0, 4000.0, 7000.0, 13000.0],
        ),
    );
    let duration = p.pick(0.4, 0.4, 0.6);
    let servers = servers(p);
    let params = caps.with_budget_params(json!({"configs": configs.iter().map(|(i, d, b)| json!({"idle": i, "document": d, "reply_bytes": b})).collect::<Vec<_>>(), "rates_conn_per_s": rates, "knee_multiples": multiples, "duration_s": duration, "eager_read": false, "servers": servers.iter().map(ServerSpec::series).collect::<Vec<_>>()}));
    let mut plan = Plan {
        params,
        // Two rounds in quick and full: its sweep is too many runs a round
        // for three (quick: 10 minutes) or five (full: 2 hours less the
        // hostile conditions) to fit; its verdicts say their range over two
        // rounds covers the median with 50% only.
        rounds: p.pick(0, 2, 2),
        ..Plan::default()
    };
    // The slowest to start with thousands of held connections (the thread
    // pool's threads, h2o), whose runs no claim reads, run only with the
    // fewest idle connections in quick.
    let slow_starters = ["threads", "h2o"];
    for (idle, doc, bytes) in &configs {
        for s in &servers {
            let name = s
                .mechanism
                .as_deref()
                .filter(|_| s.server == "ours")
                .unwrap_or(&s.server);
            if p == Profile::Quick && *idle > 252 && slow_starters.contains(&name) {
                continue;
            }
            if let Some(m) = s.mechanism.as_deref().filter(|_| s.server == "ours") {
                if let Err(why) = fd_limit(caps, m, *idle) {
                    plan.skip(format!("{}, {idle} idle", s.series()), why);
                    continue;
                }
            }
            let mut server = caps.budgeted(s.clone());
            if server.mechanism.as_deref() == Some("threads") {
                // One pooled thread per connection, idle ones included.
                server.threads = Some(idle + 1024);
            }
            for &r in &rates {
                let job = session_job(server.clone(), r, duration, 0, *idle, doc);
                let extra: Map<_, _> = [("reply_bytes".to_string(), json!(bytes))]
                    .into_iter()
                    .collect();
                plan_web(
                    &mut plan,
                    caps,
                    format!("{} {idle} idle {bytes} B {r}/s", s.series()),
                    job,
                    extra,
                );
            }
        }
    }
    plan
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let mut figs = Vec::new();
    for idle in rec.distinct("idle") {
        for bytes in rec.distinct("reply_bytes") {
            let f = [("idle", idle.clone()), ("reply_bytes", bytes.clone())];
            if rec.select(&f).next().is_none() {
                continue;
            }
            let what = format!(
                "{idle} idle, {} replies",
                if bytes == value_of(1) {
                    "1-byte".to_string()
                } else {
                    format!("{bytes}-byte")
                }
            );
            figs.push(chart(
                rec,
                &f,
                "rate",
                "request rate (connections/s)",
                REPLY_RATE,
                "throughput (replies/s)",
                (false, false),
                format!("Throughput, {what} (cf. seed 004 Figs. 6a–8a)"),
                "Average reply rate ± standard deviation over the sampling intervals; hollow markers are points where the load generator was saturated.",
            ).read(|c| reading::knee(c, 0.95)));
            figs.push(chart(
                rec,
                &f,
                "rate",
                "request rate (connections/s)",
                Metrics::y("server_cpu_pct"),
                "server CPU (% of one core)",
                (false, false),
                format!("Server CPU, {what} (cf. seed 004 Figs. 6b–8b)"),
                "Server CPU over the measured window (peers: master and workers). The seed's select, multi-accept select and /dev/poll servers were at 100% from the start with 6,000 idle connections; its RT-signal servers grew linearly with the load.",
            ).read(|c| reading::span(c, "%")));
            figs.push(chart(
                rec,
                &f,
                "rate",
                "request rate (connections/s)",
                Metrics::y("p50_us"),
                "median response time (µs)",
                (false, true),
                format!("Response time, {what} (cf. seed 004 Fig. 9)"),
                "Median response time from each request's intended send time (connect included), log scale.",
            ).read(|c| reading::span(c, "µs")));
        }
    }
    figs
}
