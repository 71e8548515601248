//! The tables `bench server` prints for people: per scenario the figures of
//! every server, the ratios to the best peer and to the floors, the access
//! log's cost, and the targets judged.

use super::analysis::SummaryRow;
use super::outcome::Outcome;
use super::plan::Scenario;

/// The figures shown per scenario, in this order (all are in the JSON).
fn shown(scenario: Scenario) -> &'static [(&'static str, &'static str)] {
    match scenario {
        Scenario::Keepalive | Scenario::Range | Scenario::Whole | Scenario::HttpsKeepalive => &[
            ("cpu_us_per_request", "CPU us/req"),
            ("requests_per_sec", "req/s"),
            ("wrk_p99_us", "wrk p99 us"),
            ("server_cpu_pct", "server CPU %"),
        ],
        Scenario::Close => &[
            ("cpu_us_per_connection", "CPU us/conn"),
            ("connections_per_sec", "conn/s"),
            ("server_cpu_pct", "server CPU %"),
        ],
        Scenario::Idle => &[
            ("idle_held", "held"),
            ("bytes_per_idle_connection", "B/idle conn"),
            ("rps_none", "req/s none"),
            ("rps_none_repeat", "req/s none after/before"),
            ("rps_ratio", "req/s held/none"),
            ("cpu_ratio", "CPU/req held/none"),
            ("p99_none_us", "p99 us none"),
            ("p99_idle_us", "p99 us held"),
            ("p99_none_repeat", "p99 none after/before"),
            ("p99_ratio", "p99 held/none"),
            ("p99_machine_ratio", "p99 elsewhere/none"),
            ("p99_own_ratio", "p99 held/elsewhere"),
        ],
        Scenario::Memory | Scenario::HttpsIdle => &[
            ("idle_held", "held"),
            ("bytes_per_idle_connection", "B/idle conn"),
        ],
        Scenario::HttpsFull | Scenario::HttpsResumed => &[
            ("handshakes_per_cpu_s", "handshakes/CPU-s"),
            ("cpu_us_per_handshake", "CPU us/handshake"),
            ("handshakes_per_sec", "handshakes/s"),
            ("resumed_share", "resumed share"),
            ("server_cpu_pct", "server CPU %"),
        ],
        Scenario::HttpsLarge => &[
            ("bytes_per_cpu_s", "bytes/CPU-s"),
            ("cpu_us_per_request", "CPU us/req"),
            ("requests_per_sec", "req/s"),
            ("server_cpu_pct", "server CPU %"),
        ],
    }
}

fn fmt(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// `median [min-max]`.
fn span(m: f64, lo: f64, hi: f64) -> String {
    format!("{} [{}-{}]", fmt(m), fmt(lo), fmt(hi))
}

/// The tables for people.
pub(super) fn print(o: &Outcome) {
    let p = &o.plan;
    println!(
        "bench server: {} round(s) of {} s, {}-byte file; server on CPU {}, load tools on CPU {}; {}",
        p.rounds,
        p.duration_s,
        p.file_size,
        p.server_cpu,
        p.client_cpu,
        if p.fresh_netns {
            "a fresh network namespace per measurement"
        } else {
            "one network namespace throughout"
        }
    );
    println!(
        "machine: {}, {} cores, Linux {}",
        o.machine.cpu_model, o.machine.cores, o.machine.kernel
    );
    let versions: Vec<String> = o
        .servers
        .iter()
        .map(|s| format!("{} {}", s.name, s.version))
        .collect();
    println!("servers: {}", versions.join(", "));
    for s in &o.skipped {
        println!("skipped {}: {}", s.server, s.reason);
    }
    for &scenario in &p.scenarios {
        println!();
        let what = match scenario {
            Scenario::Keepalive => format!("keepalive: wrk -t1 -c{} on persistent connections", p.connections),
            Scenario::Close => format!("close: wrk -t1 -c{} -H 'Connection: close'", p.connections),
            Scenario::Idle => format!(
                "idle: {} idle connections held vs none; wrk -t1 -c{} keep-alive, open loop {} req/s over {} connections (corrected p99)",
                p.idle, p.connections, p.rate, p.persistent
            ),
            Scenario::Memory => format!("memory: RSS growth with {} idle connections held", p.idle),
            Scenario::Range => format!("range: wrk -t1 -c{} -H 'Range: bytes=0-65535' on a 1 MiB file", p.connections),
            Scenario::Whole => format!("whole: wrk -t1 -c{} on a whole 64 KiB file", p.connections),
            Scenario::HttpsKeepalive => format!("https-keepalive: wrk -t1 -c{} over HTTPS (TLS 1.3, ECDSA P-256) on persistent connections", p.connections),
            Scenario::HttpsFull => "https-full: evdispatch load --rate max -c10 --sessions 0 --calls 1 --no-tls-resume: a full TLS 1.3 handshake per request".to_string(),
            Scenario::HttpsResumed => "https-resumed: evdispatch load --rate max -c10 --sessions 0 --calls 1: a resumed TLS 1.3 handshake per request".to_string(),
            Scenario::HttpsLarge => format!("https-large: wrk -t1 -c{} over HTTPS on a 1 MiB file", p.connections),
            Scenario::HttpsIdle => format!("https-idle: RSS growth with {} idle TLS connections held", p.idle),
        };
        println!("{what}   median [min-max] over rounds");
        let cols = shown(scenario);
        print!("  {:<18}", "server");
        for (_, title) in cols {
            print!(" {title:>24}");
        }
        println!();
        for server in &p.servers {
            let rows: Vec<&SummaryRow> = o
                .analysis
                .summary
                .iter()
                .filter(|r| r.scenario == scenario && &r.server == server)
                .collect();
            if rows.is_empty() {
                let failed = o
                    .runs
                    .iter()
                    .find(|r| r.scenario == scenario && &r.server == server && r.error.is_some());
                if let Some(r) = failed {
                    println!(
                        "  {server:<18} failed: {}",
                        r.error.as_deref().unwrap_or("")
                    );
                }
                continue;
            }
            print!("  {server:<18}");
            for (fig, _) in cols {
                match rows.iter().find(|r| r.figure == *fig) {
                    Some(r) if r.n > 1 => print!(" {:>24}", span(r.median, r.min, r.max)),
                    Some(r) => print!(" {:>24}", fmt(r.median)),
                    None => print!(" {:>24}", "-"),
                }
            }
            println!();
        }
        for r in o.runs.iter().filter(|r| r.scenario == scenario) {
            for n in &r.notes {
                println!("  note: round {} {}: {n}", r.round + 1, r.server);
            }
        }
    }
    if !o.analysis.ratios.is_empty() {
        println!();
        println!("ours / best peer, paired within rounds: median [min-max] (best peer per round)");
        for r in &o.analysis.ratios {
            let best: Vec<&str> = r.rounds.iter().map(|x| x.best_peer.as_str()).collect();
            println!(
                "  {:<10} {:<24} {:<18} {} ({})",
                r.scenario.name(),
                r.figure,
                r.server,
                span(r.median, r.min, r.max),
                best.join(", ")
            );
        }
    }
    if !o.analysis.floor_multiples.is_empty() {
        println!();
        println!(
            "keep-alive CPU per request / the lower floor, paired within rounds: median [min-max] (floor per round)"
        );
        for r in &o.analysis.floor_multiples {
            let floors: Vec<&str> = r.rounds.iter().map(|x| x.best_peer.as_str()).collect();
            let span = span(r.median, r.min, r.max);
            println!("  {:<18} {span} ({})", r.server, floors.join(", "));
        }
    }
    if !o.analysis.range_over_whole.is_empty() {
        println!();
        println!("range / whole CPU per request, paired within rounds: median [min-max]");
        for r in &o.analysis.range_over_whole {
            println!("  {:<18} {}", r.server, span(r.median, r.min, r.max));
        }
    }
    if !o.analysis.https_over_plain.is_empty() {
        println!();
        println!(
            "https-keepalive / keepalive CPU per request, paired within rounds: median [min-max]"
        );
        for r in &o.analysis.https_over_plain {
            println!("  {:<18} {}", r.server, span(r.median, r.min, r.max));
        }
    }
    if !o.analysis.access_log_costs.is_empty() {
        println!();
        println!("keep-alive CPU us per request added by the access log (NAME+log - NAME), paired within rounds: median [min-max]");
        for c in &o.analysis.access_log_costs {
            let span = span(c.median_added_us, c.min_added_us, c.max_added_us);
            println!("  {:<18} {span}", c.server);
        }
        for r in &o.analysis.log_cost_vs_nginx {
            let span = span(r.median, r.min, r.max);
            println!("  {:<18} / nginx's: {span}", r.server);
        }
    }
    if !o.analysis.targets.is_empty() {
        println!();
        println!("targets: judged on the median; 'every round' when no round misses");
        for v in &o.analysis.targets {
            let verdict = match (v.met, v.every_round) {
                (None, _) => "not measured".to_string(),
                (Some(true), true) => "met, every round".to_string(),
                (Some(true), false) => "met on the median, not every round".to_string(),
                (Some(false), _) => "NOT met".to_string(),
            };
            let value = match (v.median, v.min, v.max) {
                (Some(m), Some(lo), Some(hi)) if v.n > 1 => span(m, lo, hi),
                (Some(m), _, _) => fmt(m),
                _ => "-".into(),
            };
            println!(
                "  {:<16} {:<18} {:>22} {:<8} {verdict}",
                v.id, v.server, value, v.bound
            );
        }
    }
}
