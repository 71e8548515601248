//! Scenario 8: today's additions. (a) One vs two workers on two cores;
//! (b) the thundering herd: wake-ups per accepted connection with two
//! workers on one shared listener (plain, and with `EPOLLEXCLUSIVE`) and
//! with one `SO_REUSEPORT` listener each; (c) memory per idle connection for
//! every server, ours (each model) and the peers; (d) what a TLS
//! connection costs (today, no seed): memory per idle TLS connection and
//! server CPU per new connection with a full TLS 1.3 handshake (ECDSA
//! P-256), ours on epoll beside nginx with the same certificate.
//!
//! Points carry `part` = `workers` | `herd` | `memory` | `tls-memory` |
//! `tls-handshake` beside the
//! [`WebJob`] config (and `listener_mode` for the herd). Metrics:
//! `reply_rate`, `server_cpu_pct`, `cpu_us_per_reply`; `worker_wakeups`,
//! `worker_accepts`, `wakeups_per_accept`; `rss_per_conn_bytes`,
//! `tcp_kernel_per_conn_bytes`.

mod claims;

use serde_json::{json, Map, Value};

use crate::figure::{fmt_num, Figure, Table};
use crate::results::ScenarioRecord;
use crate::scenarios::common::{all_dispatch, cell, fd_limit, value_of};
use crate::spec::{Caps, LoadSpec, Plan, Profile, Rate, Scenario, ServerSpec, PEER_SERVERS};
use crate::web::{plan_web, run_web, WebJob};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "today",
    title: "Today's additions: workers, thundering herd, memory per connection, what a TLS connection costs",
    seeds: "004 §2.1 (thread-per-connection memory), §2.2 (thundering herd, \"not a problem with Linux 2.4.0\"); 000 §6 (\"waking only one thread\")",
    about: "Seed 004 claimed Linux 2.4 wakes a single thread per event, so no thundering herd, and that thread-per-connection servers pay for a stack per connection; seed 000 asked for the option of waking only one thread. We count wake-ups per accepted connection for two workers on a shared listener (plain, and with EPOLLEXCLUSIVE) and with SO_REUSEPORT, measure user-space memory per idle connection for each server, and compare one worker with two. Beside them, with no seed to judge it: what a TLS connection costs idle (memory per idle TLS 1.3 connection) and at its handshake (server CPU per new connection with a full handshake), ours beside nginx with the same ECDSA P-256 certificate.",
    plan,
    run: run_web,
    figures,
    opt_in: false,
    claims: claims::CLAIMS,
};

/// How the two workers share the port: (name, listener, wake-one). `shared
/// (plain)` is `serve --listener shared --no-exclusive`: the listener is in
/// both workers' epoll sets without `EPOLLEXCLUSIVE`.
pub const HERD_MODES: &[(&str, &str, bool)] = &[
    ("shared (plain)", "shared", false),
    ("shared + EPOLLEXCLUSIVE", "shared", true),
    ("SO_REUSEPORT", "reuseport", true),
];

fn extra(part: &str, more: &[(&str, Value)]) -> Map<String, Value> {
    let mut m: Map<String, Value> = [("part".to_string(), json!(part))].into_iter().collect();
    for (k, v) in more {
        m.insert(k.to_string(), v.clone());
    }
    m
}

/// Our mechanisms whose memory per idle connection the claims read
/// (`threads-memory`, `memory-like-peers`).
const MEMORY_READ_BY_CLAIMS: &[&str] = &["epoll", "threads"];

fn plan(p: Profile, caps: &Caps) -> Plan {
    let duration = p.pick(0.4, 0.6, 1.2);
    let idle_n: u32 = p.pick(1000, 5000, 9000);
    let herd_rates: Vec<f64> = p.pick(
        vec![1000.0],
        vec![500.0, 5000.0],
        vec![200.0, 1000.0, 5000.0],
    );
    let worker_mechs: Vec<&str> = p.pick(
        vec!["epoll"],
        vec![],
        vec!["epoll", "uring", "uring-completion", "threads"],
    );
    let mut plan = Plan {
        params: json!({"duration_s": duration, "idle_connections": idle_n, "herd_rates_conn_per_s": herd_rates, "worker_mechanisms": worker_mechs, "workers": [1, 2], "closed_loop_connections": 100}),
        // Two rounds in quick: its claims' figures sit far from their
        // thresholds (listener reports per connection, memory ratios), and
        // the quick profile's ten minutes include the build.
        rounds: p.pick(0, 2, 0),
        ..Plan::default()
    };
    // (a) one vs two workers, closed loop over 100 keep-alive connections.
    // No claim reads it: quick leaves it to full (tiny keeps one server, so
    // that its chart is drawn end to end).
    let mut worker_servers: Vec<ServerSpec> = match p {
        Profile::Quick => {
            plan.skip(
                "workers: one against two workers",
                "no claim reads it; --profile full measures it (tiny draws its chart with epoll alone)",
            );
            vec![]
        }
        _ => worker_mechs.iter().map(|m| ServerSpec::ours(m)).collect(),
    };
    if p == Profile::Full {
        worker_servers.push(ServerSpec::peer("nginx"));
    }
    for s in &worker_servers {
        for w in [1u32, 2] {
            let job = WebJob {
                series: s.series(),
                server: ServerSpec {
                    workers: w,
                    ..s.clone()
                },
                load: LoadSpec {
                    rate: Rate::MAX,
                    sessions: false,
                    connections: 100,
                    ..LoadSpec::sessions("6k.html", 0.0, duration)
                },
                then: vec![],
            };
            plan_web(
                &mut plan,
                caps,
                format!("workers {} x{w}", s.series()),
                job,
                extra("workers", &[]),
            );
        }
    }
    // (b) the thundering herd.
    for (name, listener, exclusive) in HERD_MODES {
        for &r in &herd_rates {
            let job = WebJob {
                series: name.to_string(),
                server: ServerSpec {
                    workers: 2,
                    listener: Some(listener.to_string()),
                    exclusive: *exclusive,
                    ..ServerSpec::ours("epoll")
                },
                load: LoadSpec::sessions("1b.txt", r, duration),
                then: vec![],
            };
            plan_web(
                &mut plan,
                caps,
                format!("herd {name} {r}/s"),
                job,
                extra("herd", &[("listener_mode", json!(name))]),
            );
        }
    }
    // (c) memory per idle connection: every server in full; the tiny and
    // quick profiles keep the ones the claims read (ours on epoll and on
    // threads; quick adds every peer), which leaves the others' rows of
    // the memory table to full.
    let ours: Vec<String> = match p {
        Profile::Full => all_dispatch(),
        _ => all_dispatch()
            .into_iter()
            .filter(|m| MEMORY_READ_BY_CLAIMS.contains(&m.as_str()))
            .collect(),
    };
    let mut servers: Vec<ServerSpec> = ours.iter().map(|m| ServerSpec::ours(m)).collect();
    let peers: Vec<String> = PEER_SERVERS.iter().map(|s| s.to_string()).collect();
    servers.extend(
        p.sample(peers, &["nginx"])
            .iter()
            .map(|p| ServerSpec::peer(p)),
    );
    if p != Profile::Full {
        plan.skip(
            "memory: our other mechanisms and models",
            "no claim reads them; --profile full measures every server's memory per idle connection",
        );
    }
    for s in &servers {
        if let Some(m) = s.mechanism.as_deref().filter(|_| s.server == "ours") {
            if let Err(why) = fd_limit(caps, m, idle_n) {
                plan.skip(format!("memory: {}", s.series()), why);
                continue;
            }
        }
        let mut server = ServerSpec {
            idle_timeout_s: Some(600.0),
            ..s.clone()
        };
        if server.mechanism.as_deref() == Some("threads") && server.server == "ours" {
            server.threads = Some(idle_n + 64);
        }
        let job = WebJob {
            series: s.series(),
            server,
            load: LoadSpec {
                sessions: false,
                persistent: 1,
                idle: idle_n,
                ..LoadSpec::sessions("1b.txt", 20.0, duration.max(1.0))
            },
            then: vec![],
        };
        plan_web(
            &mut plan,
            caps,
            format!("memory {}", s.series()),
            job,
            extra("memory", &[]),
        );
    }
    // (d) what a TLS connection costs, ours beside nginx: memory per idle
    // TLS connection, CPU per full handshake.
    // No claim reads it: quick leaves it to full (tiny keeps it, so that
    // its table is drawn end to end).
    let tls_idle: u32 = p.pick(500, 2000, 5000);
    let tls_servers = match p {
        Profile::Quick => {
            plan.skip(
                "tls: what a TLS connection costs",
                "no claim reads it; --profile full measures it (and `evdispatch bench server --scenarios https-idle,https-full` beside nginx)",
            );
            vec![]
        }
        _ => vec![ServerSpec::ours("epoll"), ServerSpec::peer("nginx")],
    };
    for s in tls_servers {
        let server = ServerSpec {
            tls: true,
            idle_timeout_s: Some(600.0),
            ..s.clone()
        };
        let memory = WebJob {
            series: s.series(),
            server: server.clone(),
            load: LoadSpec {
                sessions: false,
                persistent: 1,
                idle: tls_idle,
                ..LoadSpec::sessions("1b.txt", 20.0, duration.max(1.0))
            },
            then: vec![],
        };
        plan_web(
            &mut plan,
            caps,
            format!("tls memory {}", s.series()),
            memory,
            extra("tls-memory", &[]),
        );
        let handshakes = WebJob {
            series: s.series(),
            server,
            load: LoadSpec {
                rate: Rate::MAX,
                connections: 10,
                full_handshakes: true,
                ..LoadSpec::sessions("1b.txt", 0.0, duration.max(1.0))
            },
            then: vec![],
        };
        plan_web(
            &mut plan,
            caps,
            format!("tls handshakes {}", s.series()),
            handshakes,
            extra("tls-handshake", &[]),
        );
    }
    plan
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let mut figs = Vec::new();
    let metric = |f: &[(&str, Value)], k: &str| rec.select(f).find_map(|p| p.metric(k));
    // (a)
    let mut t = Table::new(&[
        "server",
        "1 worker: replies/s",
        "2 workers: replies/s",
        "speed-up",
        "1 worker: CPU %",
        "2 workers: CPU %",
    ]);
    for s in rec.distinct("series") {
        let f1 = [
            ("part", value_of("workers")),
            ("series", s.clone()),
            ("workers", value_of(1)),
        ];
        let f2 = [
            ("part", value_of("workers")),
            ("series", s.clone()),
            ("workers", value_of(2)),
        ];
        let (r1, r2) = (metric(&f1, "reply_rate"), metric(&f2, "reply_rate"));
        if r1.is_none() && r2.is_none() {
            continue;
        }
        t.rows.push(vec![
            s.as_str().unwrap_or_default().into(),
            cell(r1),
            cell(r2),
            match (r1, r2) {
                (Some(a), Some(b)) if a > 0.0 => format!("×{}", fmt_num(b / a)),
                _ => "–".into(),
            },
            cell(metric(&f1, "server_cpu_pct")),
            cell(metric(&f2, "server_cpu_pct")),
        ]);
    }
    // Quick leaves this part to full: no table then (the plan says why).
    if !t.rows.is_empty() {
        figs.push(Figure::table("One worker vs two", "Closed-loop load over 100 keep-alive connections, 6 KB document. The machine has two cores: with two workers the server's second worker shares the load generator's core, so the speed-up measures how well each server uses a contended core rather than a free one.", t));
    }
    // (b)
    let mut t = Table::new(&[
        "listener",
        "new connections/s",
        "accepted",
        "listener reports",
        "reports per accepted connection",
    ]);
    for (name, _, _) in HERD_MODES {
        for p in rec.select(&[
            ("part", value_of("herd")),
            ("listener_mode", value_of(name)),
        ]) {
            t.rows.push(vec![
                name.to_string(),
                cell(p.num("rate")),
                cell(p.metric("server_accepted")),
                cell(p.metric("listener_events")),
                cell(p.metric("wakeups_per_accept")),
            ]);
        }
    }
    figs.push(Figure::table("The thundering herd: listener wake-ups per accepted connection", "Two epoll workers (CPUs 0 and 1), one new connection per request. A worker woken by the listener that finds nothing to accept is a herd wake-up: 1.0 means exactly one worker woke for each connection, 2.0 that both did. With SO_REUSEPORT each worker has its own listener and the kernel picks one.", t));
    // (c)
    let mut t = Table::new(&[
        "server",
        "idle connections held",
        "RSS before (KiB)",
        "RSS holding them (KiB)",
        "user memory per connection (B)",
        "kernel TCP memory per connection (B, both ends)",
    ]);
    for p in rec.select(&[("part", value_of("memory"))]) {
        t.rows.push(vec![
            p.series.clone(),
            cell(p.num("idle")),
            cell(p.metric("server_rss_start_bytes").map(|b| b / 1024.0)),
            cell(p.metric("server_rss_max_bytes").map(|b| b / 1024.0)),
            cell(p.metric("rss_per_conn_bytes")),
            cell(p.metric("tcp_kernel_per_conn_bytes")),
        ]);
    }
    figs.push(Figure::table("Memory per idle connection", "Growth of the server's resident memory (its whole process tree) while the idle connections are held, divided by their number; kernel TCP memory from /proc/net/sockstat counts both ends of each loopback connection.", t));
    // (d)
    let mut t = Table::new(&[
        "server",
        "idle TLS connections held",
        "user memory per idle TLS connection (B)",
        "new connections/s (full handshake + 1 request)",
        "server CPU per full handshake + request (µs)",
    ]);
    for s in rec.distinct("series") {
        let f = |part: &str| [("part", value_of(part)), ("series", s.clone())];
        let (mem, hs) = (f("tls-memory"), f("tls-handshake"));
        if rec.select(&mem).next().is_none() && rec.select(&hs).next().is_none() {
            continue;
        }
        t.rows.push(vec![
            s.as_str().unwrap_or_default().into(),
            cell(rec.select(&mem).find_map(|p| p.num("idle"))),
            cell(metric(&mem, "rss_per_conn_bytes")),
            cell(metric(&hs, "reply_rate")),
            cell(metric(&hs, "cpu_us_per_reply")),
        ]);
    }
    if !t.rows.is_empty() {
        figs.push(Figure::table("What a TLS connection costs (today, no seed)", "HTTPS with TLS 1.3 and the same self-signed ECDSA P-256 certificate for both servers (nginx: ssl_protocols TLSv1.3, its session cache and tickets on; both choose the cipher suite by our server's order, AES-128-GCM first on AES hardware). Idle: the growth of the server's resident memory while that many TLS connections (handshake done, one request each) are held, divided by their number. Handshake: a closed loop of 10 connections at a time, each a new connection with a full handshake (evdispatch load --no-tls-resume) and one request for a 1-byte file; the server's CPU over the window divided by the replies. No seed measured TLS: nothing is judged on these figures.", t));
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::{pt, rec};
    use crate::figure::Body;

    /// The TLS points fill their own table, ours and nginx's side by side,
    /// and no other table takes them.
    #[test]
    fn the_tls_table_reads_the_tls_points() {
        let mut pts = Vec::new();
        for (series, bytes, cpu) in [("epoll", 8000.0, 190.0), ("nginx", 37000.0, 400.0)] {
            pts.push(pt(
                series,
                json!({"part": "tls-memory", "idle": 500}),
                json!({"rss_per_conn_bytes": bytes}),
            ));
            pts.push(pt(
                series,
                json!({"part": "tls-handshake"}),
                json!({"cpu_us_per_reply": cpu, "reply_rate": 1000.0}),
            ));
        }
        let rec = rec("today", pts);
        let figs = figures(&rec);
        let tls: Vec<&Figure> = figs.iter().filter(|f| f.has_data()).collect();
        assert_eq!(
            tls.len(),
            1,
            "{:?}",
            figs.iter().map(|f| &f.title).collect::<Vec<_>>()
        );
        assert!(tls[0].title.contains("TLS"), "{}", tls[0].title);
        let Body::Table(t) = &tls[0].body else {
            panic!("a table");
        };
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0][0], "epoll");
        assert_eq!(t.rows[0][1], "500");
        assert!(t.rows[1][2].starts_with("37"), "{:?}", t.rows[1]);
        assert_eq!(t.rows[1][4], "400");
    }
}
