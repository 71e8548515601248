//! Scenario 9: hostile conditions, through `evdispatch-torture`:
//! a signal-queue storm, descriptor exhaustion, slowloris, the attack
//! corpus, hostile TLS handshakes and a soak, each against our server on epoll, uring-completion,
//! rtsig-batch and hybrid (the storm on the signal mechanisms), with nginx
//! beside ours where the attack applies.
//!
//! Too long for the tiny and quick profiles' budgets: it runs in `full`, or
//! in any profile when named (`study --only hostile`); see
//! [`crate::spec::Scenario::opt_in`].
//!
//! Points: one per server run, series = the model (or `nginx`), config
//! `part` (storm, exhaustion, slowloris, attacks, tls, soak), `server`,
//! `model`; metrics = the torture figures that are numbers, `pass` (1/0)
//! and `checks_passed`/`checks`. The attacks part adds one point of series
//! `corpus` whose `raw` holds the per-attack table.

mod claims;

use serde_json::{json, Value};

use crate::figure::{Figure, Table};
use crate::results::{Point, ScenarioRecord};
use crate::scenarios::common;
use crate::spec::{Caps, Ctx, Job, Plan, Profile, Scenario};
use evdispatch_torture::{Env, Which};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "hostile",
    title: "Hostile conditions: signal-queue storm, descriptor exhaustion, slowloris, malicious input, soak",
    seeds: "000 §2 and §5.2 (RT-signal queue overflow, phhttpd's meltdown), 000 §5.1 (inactive connections, error rates)",
    about: "The ways the seeds' servers failed, provoked on purpose: the RT-signal server with RLIMIT_SIGPENDING = 16 offered 1.25× its knee for 60 s; a crowd of connections beyond the descriptor limit beside keep-alive clients; 5,000 clients sending a byte a second beside normal load; a corpus of malformed and malicious requests (traversal in every encoding, smuggling shapes, floods, invalid bytes), also sent to nginx; hostile TLS handshakes (silent connections, ClientHellos a byte at a time, malformed ClientHellos, plaintext HTTP, fatal alerts, a flood of full handshakes) against our HTTPS server and nginx with the same certificate (no seed: today's surface); and a soak of mixed load (3 min quick, 15 min full) watching memory and descriptors. Every figure comes from `evdispatch torture`, which prints the same with pass/fail.",
    plan,
    run,
    figures,
    opt_in: true,
    claims: claims::CLAIMS,
};

/// The models measured (the storm keeps the signal mechanisms among them
/// and adds rtsig).
fn models(p: Profile, caps: &Caps) -> Vec<String> {
    let wanted: Vec<&str> = match p {
        Profile::Tiny => vec!["epoll", "hybrid"],
        _ => evdispatch_torture::DEFAULT_MODELS.to_vec(),
    };
    wanted
        .into_iter()
        .filter(|m| *m == "uring-completion" || caps.mechanisms.iter().any(|x| x == m))
        .map(String::from)
        .collect()
}

fn torture_profile(p: Profile) -> evdispatch_torture::Profile {
    use evdispatch_torture::Profile as T;
    p.pick(T::Tiny, T::Quick, T::Full)
}

/// The soak of `--profile full`: 15 minutes, half the torture suite's own
/// full soak (`evdispatch torture soak --profile full` keeps 30), so that
/// the whole study stays within its 2 hours. The price: a steady leak must
/// be twice as fast to pass the soak's 1% RSS-growth threshold in half the
/// time; `torture soak --soak-duration` runs it longer.
pub const SOAK_FULL_S: f64 = 900.0;

/// The soak's length for `p` when it is not the torture profile's own.
fn soak_s(p: Profile) -> Option<f64> {
    (p == Profile::Full).then_some(SOAK_FULL_S)
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    let ms = models(p, caps);
    let mut plan = Plan {
        params: json!({"models": ms, "torture_profile": torture_profile(p).name(), "soak_s": soak_s(p)}),
        // One round: each part already pairs its own runs inside one job
        // (the torture suite's baseline and attack rounds against the same
        // server, back to back), and its figures are pass/fail checks, not
        // ratios near a threshold; its 2,940 s (a 15-minute soak among
        // them) fill the time the full profile keeps for it.
        rounds: 1,
        ..Plan::default()
    };
    if !caps.serve || !caps.load {
        plan.skip(
            "hostile conditions",
            "evdispatch serve and load are needed: build them with `cargo build --release -p evdispatch-cli`",
        );
        return plan;
    }
    let n = ms.len() as f64;
    let signal = ms
        .iter()
        .filter(|m| evdispatch_torture::SIGNAL_MODELS.contains(&m.as_str()))
        .count() as f64;
    // Estimates: the full run of 2026-11-24
    // (results/2026-11-24-study-full-timing) measured storm 241 s, exhaustion 321,
    // slowloris 1,403 and attacks 57 with the four models and nginx.
    let parts: Vec<(&str, f64)> = match p {
        Profile::Tiny => vec![("storm", 9.0 * signal), ("attacks", 8.0), ("tls", 10.0 * n)],
        _ => vec![
            ("storm", p.pick(0.0, 68.0, 80.0) * 3.0),
            ("exhaustion", p.pick(0.0, 26.0, 64.0) * (n + 1.0)),
            // full: five 10-s baselines, three 25-s attacks and the control
            // (a 12.5-s attack on a second server; 6 s warm-up each, then
            // the slow clients' leaving).
            ("slowloris", p.pick(0.0, 58.0, 281.0) * (n + 1.0)),
            ("attacks", 12.0 * (n + 1.0)),
            // Two handshake deadlines, the other attacks and the flood.
            ("tls", p.pick(0.0, 16.0, 32.0) * (n + 1.0)),
            // The models soak side by side.
            (
                "soak",
                evdispatch_torture::soak_duration_s(torture_profile(p), soak_s(p)) + 12.0,
            ),
        ],
    };
    for (part, est) in parts {
        plan.job(part, &json!({"part": part}), est);
    }
    plan
}

fn run(ctx: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    let part = job.config.get("part").and_then(Value::as_str).unwrap_or("");
    let which = match part {
        "storm" => Which::Storm,
        "exhaustion" => Which::Exhaustion,
        "slowloris" => Which::Slowloris,
        "attacks" => Which::Attacks,
        "tls" => Which::Tls,
        "soak" => Which::Soak,
        other => anyhow::bail!("unknown hostile part '{other}'"),
    };
    let nginx = matches!(ctx.caps.peers.get("nginx"), Some(Ok(_)));
    let env = Env {
        exe: ctx.exe.clone(),
        profile: torture_profile(ctx.profile),
        models: models(ctx.profile, &ctx.caps),
        models_given: ctx.profile == Profile::Tiny,
        nginx: nginx && ctx.profile != Profile::Tiny,
        progress: false,
        soak_s: soak_s(ctx.profile),
    };
    let rep = evdispatch_torture::run_scenario(&env, which)?;
    let mut points = Vec::new();
    for r in &rep.runs {
        let series = if r.ours() {
            r.model.clone()
        } else {
            "nginx".to_string()
        };
        let config = crate::config![("part", part), ("server", r.server), ("model", r.model)];
        let mut p = Point::new(series, config);
        if let Value::Object(f) = &r.figures {
            for (k, v) in f {
                if let Some(x) = v.as_f64() {
                    p.metrics.insert(k.clone(), x);
                }
            }
        }
        p.metrics
            .insert("pass".into(), if r.pass { 1.0 } else { 0.0 });
        p.metrics.insert("checks".into(), r.checks.len() as f64);
        p.metrics.insert(
            "checks_passed".into(),
            r.checks.iter().filter(|c| c.pass).count() as f64,
        );
        p.raw = serde_json::to_value(r)?;
        points.push(p);
    }
    if !rep.attacks.is_empty() {
        let mut p = Point::new("corpus", crate::config![("part", "attacks-table")]);
        p.metrics.insert("attacks".into(), rep.attacks.len() as f64);
        p.raw = Value::Array(rep.attacks.clone());
        points.push(p);
    }
    if points.is_empty() {
        let why: Vec<String> = rep
            .skipped
            .iter()
            .map(|s| format!("{}: {}", s.what, s.why))
            .collect();
        return Err(
            crate::spec::Unavailable(format!("nothing measured: {}", why.join("; "))).into(),
        );
    }
    Ok(points)
}

fn cell(p: &Point, k: &str) -> String {
    common::cell(p.metric(k))
}

fn verdict_cell(p: &Point) -> String {
    match p.metric("pass") {
        Some(v) if v > 0.0 => "pass".into(),
        Some(_) => format!(
            "FAIL ({} of {} checks)",
            cell(p, "checks_passed"),
            cell(p, "checks")
        ),
        None => "–".into(),
    }
}

fn part_table(rec: &ScenarioRecord, part: &str, cols: &[(&str, &str)]) -> Table {
    let mut t = Table {
        columns: std::iter::once("server".to_string())
            .chain(cols.iter().map(|(h, _)| h.to_string()))
            .chain(std::iter::once("verdict".to_string()))
            .collect(),
        rows: vec![],
    };
    for p in rec.select(&[("part", json!(part))]) {
        let mut row = vec![p.series.clone()];
        row.extend(cols.iter().map(|(_, k)| cell(p, k)));
        row.push(verdict_cell(p));
        t.rows.push(row);
    }
    t
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let mut figs = Vec::new();
    let mut add = |part: &str, title: &str, caption: &str, cols: &[(&str, &str)]| {
        let t = part_table(rec, part, cols);
        if !t.rows.is_empty() {
            figs.push(Figure::table(title, caption, t));
        }
    };
    add(
        "storm",
        "Signal-queue storm, RLIMIT_SIGPENDING = 16, 1.25× the knee",
        "Persistent connections offered 1.25× the closed-loop capacity (the knee) for the storm's length. Lost = requests sent − replies; the longest stall is the longest run of empty 0.25 s reply intervals; the slowest reply is timed from its actual send. Overflows and recoveries from the server's poller counters; hybrid answers the storm by switching to epoll.",
        &[
            ("knee /s", "knee_replies_per_s"),
            ("offered /s", "offered_per_s"),
            ("requests", "requests"),
            ("lost", "lost"),
            ("errors", "errors"),
            ("longest stall s", "longest_gap_s"),
            ("slowest reply ms", "latency_uncorrected_max_ms"),
            ("overflows", "overflows"),
            ("recoveries", "recoveries"),
            ("mode switches", "mode_switches"),
            ("server CPU %", "server_cpu_pct"),
        ],
    );
    add(
        "exhaustion",
        "Descriptor exhaustion: a crowd beyond RLIMIT_NOFILE",
        "Keep-alive clients' p99 alone (before and after; the mean) and while a crowd of limit + 256 connections waits; the server's CPU idle at the limit (an accept loop spinning on EMFILE would show); waiting connections served once half the crowd leaves. nginx runs with worker_connections at the same number.",
        &[
            ("limit", "limit"),
            ("p99 alone ms", "p99_baseline_ms"),
            ("alone after/before", "p99_baseline_repeat"),
            ("p99 at limit ms", "p99_exhausted_ms"),
            ("ratio", "p99_ratio"),
            ("CPU idle at limit %", "server_cpu_idle_at_limit_pct"),
            ("waiting", "crowd_waiting"),
            ("served after", "crowd_served_after_free"),
            ("accept pauses", "accept_pauses"),
            ("client errors", "keepalive_errors"),
        ],
    );
    add(
        "slowloris",
        "Slowloris: slow clients beside normal load",
        "Slow clients send their request a byte a second; normal clients are persistent at a fixed rate; their p99 under attack is compared with the mean of a baseline before and one after. The full profile makes five rounds (baseline, attack, baseline, attack, …): the p99s are the medians of the windows, the ratio the median of the rounds' ratios, the worst round beside it. A window (baseline, attack or control) in which the hypervisor took more than 0.5% of any CPU (steal, /proc/stat) is measured again, at most twice; 'again' counts those, each listed with its steal and p99 in the figures. The probes are 20 more slow clients per round timed from connect to the server's close; they must close at the header timeout, not before and at most 1.5 s after. The control (reported, not judged): before the first attack, the same slow clients attack a second server (ours, on the load CPU at the lowest priority, standing for another machine) while the normal clients keep their load on the measured one; 'elsewhere' is their p99 then ÷ the baselines either side, what the attack traffic alone costs on this two-CPU machine, and 'attack ÷ elsewhere' the part the measured server adds.",
        &[
            ("slow clients", "slow_clients"),
            ("header timeout s", "header_timeout_s"),
            ("rounds", "rounds"),
            ("p99 alone ms", "p99_baseline_ms"),
            ("alone last/first", "p99_baseline_repeat"),
            ("p99 under attack ms", "p99_attack_ms"),
            ("ratio", "p99_ratio"),
            ("worst round", "p99_ratio_worst_round"),
            ("again", "windows_stolen"),
            ("elsewhere", "p99_ratio_elsewhere"),
            ("attack ÷ elsewhere", "p99_attack_over_elsewhere"),
            ("normal errors", "normal_errors"),
            ("first close s", "probe_close_first_s"),
            ("last close s", "probe_close_last_s"),
            ("cut by server", "server_header_timed_out"),
        ],
    );
    add(
        "attacks",
        "Malformed and malicious input: the attack corpus",
        "Each attack on a fresh connection; our server must answer each with its expected status and close or keep the connection as expected, and never serve the secret file beside the root. nginx's answers are compared with what ours must give (comparison only).",
        &[("attacks", "attacks"), ("as expected", "passed")],
    );
    add(
        "tls",
        "Hostile TLS handshakes (today, no seed)",
        "Our HTTPS server and nginx with the same self-signed ECDSA P-256 certificate, sent in turn: TCP connections that never send a ClientHello, ClientHellos a byte every 100 ms, malformed ClientHellos (spoiled, a ServerHello, an oversized record, application data first), plaintext HTTP, fatal alerts after the handshake, then a flood of new full handshakes from two threads, while one kept-alive HTTPS client fetches a 6 KiB file every 20 ms. Ours must close or answer every one (handshake deadline, alert, 400), count each failure by kind in its stats, keep serving the client (no failure, no reply over 1 s) and grow its resident memory by at most 64 MiB; nginx is shown beside it (its stats are not read).",
        &[
            ("silent", "silent"),
            ("byte a time", "dribble"),
            ("malformed", "malformed"),
            ("plaintext", "plaintext"),
            ("alerts", "alerts"),
            ("flood handshakes", "flood_handshakes"),
            ("failures counted", "server_failures_counted"),
            ("served replies", "served_replies"),
            ("slowest reply ms", "slowest_ms"),
            ("RSS growth MiB", "rss_growth_mib"),
        ],
    );
    add(
        "soak",
        "Soak: mixed load over a long run",
        "Persistent clients, sessions opening and closing connections, idle and inactive connections the server times out, slow clients, all at once. RSS growth compares the mean of the last tenth of the samples with the first tenth after the warm-up (the first fifth), for the whole resident set and for its anonymous part (heap, stacks, tables: where a leak shows; the file-backed rest is the executable's pages, mapped as code first runs); descriptors are counted before and after the clients leave.",
        &[
            ("duration s", "duration_s"),
            ("requests", "requests"),
            ("RSS after warm-up KiB", "rss_after_warmup_kib"),
            ("RSS end KiB", "rss_end_kib"),
            ("growth %", "rss_growth_pct"),
            ("anonymous growth %", "anon_growth_pct"),
            ("file-backed KiB after warm-up", "file_after_warmup_kib"),
            ("file-backed KiB end", "file_end_kib"),
            ("fds before", "fds_before"),
            ("fds peak", "fds_peak"),
            ("fds after", "fds_after"),
            ("active errors", "active_errors"),
        ],
    );
    if let Some(p) = rec.select(&[("part", json!("attacks-table"))]).next() {
        if let Some(rows) = p.raw.as_array() {
            let mut t = Table::new(&["attack", "expected (ours)", "ours", "nginx"]);
            for r in rows {
                let ours = r["ours"].as_object().map(|m| {
                    let bad: Vec<String> = m
                        .iter()
                        .filter(|(_, v)| v["pass"] != true)
                        .map(|(k, v)| format!("{k}: {}", v["why"].as_str().unwrap_or("")))
                        .collect();
                    if bad.is_empty() {
                        format!("as expected on {}", m.len())
                    } else {
                        bad.join("; ")
                    }
                });
                let nginx = match &r["nginx"] {
                    Value::Null => "–".to_string(),
                    n => format!(
                        "{} {}{}",
                        n["statuses"].as_str().unwrap_or(""),
                        n["outcome"].as_str().unwrap_or(""),
                        if n["differs"] == true {
                            " (differs)"
                        } else {
                            ""
                        }
                    ),
                };
                t.rows.push(vec![
                    format!(
                        "{} — {}",
                        r["id"].as_str().unwrap_or(""),
                        r["what"].as_str().unwrap_or("")
                    ),
                    format!(
                        "{} {}",
                        r["expected"].as_str().unwrap_or(""),
                        r["after"].as_str().unwrap_or("")
                    ),
                    ours.unwrap_or_else(|| "–".into()),
                    nginx,
                ]);
            }
            figs.push(Figure::table(
                "The attack corpus, attack by attack",
                "Expected status and connection behaviour of our server; ours as observed on every model; nginx's answer beside it, marked where it differs from what ours must give.",
                t,
            ));
        }
    }
    figs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Check that the figures' tables read the points the run makes.
    #[test]
    fn tables_show_every_part() {
        let mut rec = ScenarioRecord {
            id: "hostile".into(),
            status: crate::results::Status::Complete,
            profile: "quick".into(),
            params: json!({}),
            started_unix: 0,
            duration_s: 0.0,
            git_commit: "t".into(),
            capabilities: vec![],
            points: vec![],
            skipped: vec![],
            failures: vec![],
            timings: vec![],
            lock_wait_s: 0.0,
            load_host: None,
            rounds: 1,
        };
        for part in ["storm", "exhaustion", "slowloris", "attacks", "tls", "soak"] {
            let mut c = serde_json::Map::new();
            c.insert("part".into(), json!(part));
            c.insert("server".into(), json!("evdispatch"));
            let mut p = Point::new("epoll", c);
            p.metrics.insert("pass".into(), 1.0);
            rec.points.push(p);
        }
        let figs = figures(&rec);
        assert_eq!(figs.len(), 6);
        assert!(figs.iter().all(|f| f.has_data()));
    }
}
