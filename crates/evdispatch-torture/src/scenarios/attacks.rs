//! Malformed and malicious input: the [`corpus`](crate::corpus) against our
//! server on every model (judged) and against nginx (shown beside ours:
//! where nginx answers otherwise, the table says so).

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::{json, Value};

use evdispatch_server::cmdline::ServeCommand;

use super::measure::{start_target, stop, targets};
use super::report::{Run, ScenarioReport};
use crate::corpus::{corpus, Attack};
use crate::env::Env;
use crate::probe::{judge, send, Limits, Observed};
use crate::site::Site;

/// Header and idle timeouts the servers run with here, seconds (short, so
/// the never-reading client is dropped quickly).
pub const HEADER_S: u64 = 2;
/// See [`HEADER_S`].
pub const IDLE_S: u64 = 3;

/// Send every attack to `addr`; one observation (or the error) per attack.
pub fn send_all(addr: SocketAddr, attacks: &[Attack]) -> Vec<Result<Observed, String>> {
    let limits = Limits::for_idle_timeout(Duration::from_secs(IDLE_S));
    attacks
        .iter()
        .map(|a| send(addr, a, limits).map_err(|e| format!("{e}")))
        .collect()
}

/// Run the corpus on every model and nginx.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new(
        "attacks",
        "malformed and malicious input (the attack corpus)",
    );
    let site = Site::create()?;
    let attacks = corpus();
    let mut rows: Vec<Value> = attacks
        .iter()
        .map(|a| {
            json!({
                "id": a.id, "group": a.group, "what": a.what,
                "expected": a.expected_text(),
                "after": format!("{:?}", a.after).to_lowercase(),
                "ours": {}, "nginx": null,
            })
        })
        .collect();
    let ours = ServeCommand {
        header_timeout: Some(Duration::from_secs(HEADER_S)),
        idle_timeout: Some(Duration::from_secs(IDLE_S)),
        ..ServeCommand::default()
    };
    let n = attacks.len();
    for target in targets(env) {
        let Some((mut server, name, label)) =
            start_target(env, &site, &mut rep, &target, &ours, |c| {
                c.keepalive_timeout_s = IDLE_S as u32;
                c.request_timeout_s = HEADER_S as u32;
            })
        else {
            continue;
        };
        let Some(model) = target else {
            env.say(format!("attacks: {n} attacks on nginx {label}"));
            let obs = send_all(server.addr(), &attacks);
            drop(server);
            let mut run = Run::new(name, &label);
            let mut differs = Vec::new();
            let mut leaks = Vec::new();
            for ((a, o), row) in attacks.iter().zip(&obs).zip(&mut rows) {
                row["nginx"] = match o {
                    Ok(o) => {
                        let d = judge(a, o).is_err();
                        if d {
                            differs.push(a.id);
                        }
                        if o.leaked {
                            leaks.push(a.id);
                        }
                        json!({"statuses": o.statuses_text(), "outcome": o.outcome.text(),
                               "differs": d, "leaked": o.leaked, "seconds": o.seconds})
                    }
                    Err(e) => json!({"error": e, "differs": true}),
                };
            }
            run.figures = json!({"attacks": n, "differs": differs, "leaked": leaks});
            run.check(
                "attacks answered as our server must (comparison only)",
                format!("{}/{n}", n - differs.len()),
                "all",
                differs.is_empty(),
            );
            let leaked = leaks.len();
            run.check("responses carrying the secret", leaked, "0", leaked == 0);
            rep.runs.push(run);
            continue;
        };
        env.say(format!("attacks: {n} attacks on {model}"));
        let obs = send_all(server.addr(), &attacks);
        let running = server.is_running();
        let stats = stop(server)?;
        let mut run = Run::new(name, &model);
        let mut failed = Vec::new();
        let mut leaks = 0;
        for ((a, o), row) in attacks.iter().zip(&obs).zip(&mut rows) {
            let entry = match o {
                Ok(o) => {
                    leaks += usize::from(o.leaked);
                    let verdict = judge(a, o);
                    json!({"statuses": o.statuses_text(), "outcome": o.outcome.text(),
                           "pass": verdict.is_ok(), "why": verdict.err().unwrap_or_default(),
                           "seconds": o.seconds})
                }
                Err(e) => json!({"pass": false, "why": e}),
            };
            if entry["pass"] != true {
                failed.push(a.id);
            }
            row["ours"][model.as_str()] = entry;
        }
        let passed = n - failed.len();
        run.figures = json!({
            "attacks": n,
            "passed": passed,
            "failed": failed,
            "server_requests": stats["requests"],
            "server_client_errors": stats["connections"]["client_errors"],
        });
        let answered = format!("{passed}/{n}");
        run.check("attacks answered as expected", answered, "all", passed == n);
        run.check("responses carrying the secret", leaks, "0", leaks == 0);
        run.check("server still running at the end", running, "true", running);
        let failures = if failed.is_empty() {
            String::new()
        } else {
            format!("; FAILED: {}", failed.join(", "))
        };
        env.say(format!(
            "attacks {model}: {passed}/{n} as expected{failures}"
        ));
        rep.runs.push(run);
    }
    rep.attacks = rows;
    Ok(rep.finish())
}
