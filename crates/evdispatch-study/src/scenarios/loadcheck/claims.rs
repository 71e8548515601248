//! The claims scenario `loadcheck` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim {
        id: "loadgen-vs-wrk",
        seed: "today",
        section: "load generator",
        text: "evdispatch load drives a server as hard as wrk in closed loop",
        verdict: v_vs_wrk,
    },
    Claim {
        id: "loadgen-vs-httperf",
        seed: "today",
        section: "load generator",
        text: "evdispatch load and httperf measure the same reply rate in open loop",
        verdict: v_vs_httperf,
    },
];

fn v_vs_wrk(rec: &ScenarioRecord) -> Judged {
    let mut nums = Vec::new();
    let mut worst = f64::INFINITY;
    let servers: Vec<String> = rec
        .points
        .iter()
        .filter(|p| p.str("tool") == Some("wrk"))
        .filter_map(|p| p.str("series").map(String::from))
        .collect();
    for srv in &servers {
        let get = |tool: &str| {
            rec.points
                .iter()
                .filter(|p| {
                    p.str("tool") == Some(tool)
                        && p.str("series") == Some(srv.as_str())
                        && p.str("workload") == Some("closed loop")
                })
                .find_map(|p| p.metric("reply_rate"))
        };
        if let (Some(o), Some(w)) = (get("evdispatch load"), get("wrk")) {
            worst = worst.min(o / w);
            nums.push((format!("ours/wrk replies against {srv}"), o / w));
        }
    }
    if nums.is_empty() {
        return Err(missing(
            "closed loops by wrk and by evdispatch load against the same server",
        ));
    }
    Ok(verdict(
        band(worst >= 0.9, worst >= 0.75),
        nums,
        format!("in closed loop over the same 50 connections our generator reached ×{} wrk's reply rate at worst (holds from ×0.9: it is not the limit wrk would lift; partly from ×0.75)", fmt_num(worst)),
    ))
}

fn v_vs_httperf(rec: &ScenarioRecord) -> Judged {
    let mut nums = Vec::new();
    let mut worst: f64 = 0.0;
    let rates: Vec<f64> = rec
        .points
        .iter()
        .filter(|p| p.str("tool") == Some("httperf"))
        .filter_map(|p| p.num("rate"))
        .collect();
    for r in rates {
        let get = |tool: &str| {
            rec.points
                .iter()
                .filter(|p| p.str("tool") == Some(tool) && p.num("rate") == Some(r))
                .find_map(|p| p.metric("reply_rate"))
        };
        if let (Some(o), Some(h)) = (get("evdispatch load"), get("httperf")) {
            let d = (o - h).abs() / h.max(1.0);
            worst = worst.max(d);
            nums.push((format!("ours replies/s at {}/s", fmt_num(r)), o));
            nums.push((format!("httperf replies/s at {}/s", fmt_num(r)), h));
        }
    }
    if nums.is_empty() {
        return Err(missing(
            "open loops by httperf and by evdispatch load at the same rate",
        ));
    }
    Ok(verdict(
        band(worst <= 0.05, worst <= 0.15),
        nums,
        format!("at the same offered rate of new connections the two generators' reply rates differed by {}% at most (holds within 5%, partly within 15%)", fmt_num(100.0 * worst)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::{json, Value};

    #[test]
    fn loadcheck_claims() {
        let p = |tool: &str, workload: &str, rate: Value, y: f64| {
            pt(
                &format!("{tool} → epoll"),
                json!({"tool": tool, "workload": workload, "series": "epoll", "rate": rate}),
                json!({"reply_rate": y}),
            )
        };
        let good = rec(
            "loadcheck",
            vec![
                p("evdispatch load", "closed loop", json!("max"), 40000.0),
                p("wrk", "closed loop", json!("max"), 41000.0),
                p("evdispatch load", "open loop", json!(2000.0), 2000.0),
                p("httperf", "open loop", json!(2000.0), 1990.0),
            ],
        );
        let bad = rec(
            "loadcheck",
            vec![
                p("evdispatch load", "closed loop", json!("max"), 20000.0),
                p("wrk", "closed loop", json!("max"), 41000.0),
                p("evdispatch load", "open loop", json!(2000.0), 1500.0),
                p("httperf", "open loop", json!(2000.0), 1990.0),
            ],
        );
        holds_and_fails(
            CLAIMS,
            &["loadgen-vs-wrk", "loadgen-vs-httperf"],
            &good,
            &bad,
        );
    }
}
