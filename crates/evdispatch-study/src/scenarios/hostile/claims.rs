//! The claims scenario `hostile` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use serde_json::json;

use crate::claims::*;
use crate::results::{Point, ScenarioRecord};

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "overflow-no-hang", seed: "000", section: "§2 (SIGIO, recovery by poll), §5.2 (phhttpd's overflow meltdown)", text: "a server that recovers from RT-signal queue overflow in its own thread, with the interest set kept, loses no request and does not stall under a signal-queue storm", verdict: v_overflow_no_hang },
    Claim { id: "slow-do-not-starve", seed: "000", section: "§5.1 (inactive connections)", text: "inactive and slow clients do not starve active ones: the active clients' p99 stays within 2× with thousands of slowloris clients", verdict: v_slow_do_not_starve },
    Claim { id: "exhaustion-graceful", seed: "000", section: "§5.1, Fig. 10 (errors climbing to 60%)", text: "more connections than descriptors do not break the server: its clients keep their latency, it does not spin at the limit, and it accepts again when descriptors free", verdict: v_exhaustion_graceful },
];

/// Our server's runs of `part`; `not measured` when there are none.
fn ours<'a>(rec: &'a ScenarioRecord, part: &str) -> Result<Vec<&'a Point>, Verdict> {
    let pts: Vec<&Point> = rec
        .select(&[("part", json!(part)), ("server", json!("evdispatch"))])
        .collect();
    if pts.is_empty() {
        return Err(not_measured(format!(
            "no {part} run of our server in this study"
        )));
    }
    Ok(pts)
}

/// Seed 000: RT-signal queue overflow must be recovered (or the server
/// hangs, phhttpd's meltdown): every signal model loses nothing, stalls
/// less than a second, and recovers every overflow.
fn v_overflow_no_hang(rec: &ScenarioRecord) -> Judged {
    let pts = ours(rec, "storm")?;
    let mut numbers = Vec::new();
    let (mut clean, mut stalled) = (0, 0);
    for p in &pts {
        let m = |k: &str| p.metric(k).unwrap_or(f64::NAN);
        numbers.push((format!("{} lost", p.series), m("lost")));
        numbers.push((format!("{} longest stall s", p.series), m("longest_gap_s")));
        numbers.push((format!("{} overflows", p.series), m("overflows")));
        let stormed = m("overflows") > 0.0 || m("mode_switches") > 0.0;
        let no_loss = m("lost") == 0.0 && m("errors") == 0.0 && m("recoveries") == m("overflows");
        let no_stall = m("longest_gap_s") < 1.0 && m("latency_uncorrected_max_ms") < 1000.0;
        if stormed && no_loss && no_stall {
            clean += 1;
        } else if stormed && no_loss {
            stalled += 1;
        }
    }
    let n = pts.len();
    let outcome = if clean == n {
        Outcome::Holds
    } else if clean + stalled == n {
        Outcome::Partly
    } else {
        Outcome::Fails
    };
    Ok(verdict(
        outcome,
        numbers,
        format!("{clean} of {n} signal mechanisms overflowed, recovered every overflow, lost nothing and never stalled 1 s ({stalled} lost nothing but stalled); holds when all do"),
    ))
}

/// Seed 000 §5.1: inactive (here: slow) connections must not starve the
/// active ones: the normal clients' p99 within 2× their baseline, no
/// errors, on every model.
fn v_slow_do_not_starve(rec: &ScenarioRecord) -> Judged {
    let pts = ours(rec, "slowloris")?;
    let mut numbers = Vec::new();
    let (mut within2, mut within4) = (0, 0);
    for p in &pts {
        let ratio = p.metric("p99_ratio").unwrap_or(f64::INFINITY);
        let errors = p.metric("normal_errors").unwrap_or(f64::NAN);
        numbers.push((format!("{} p99 ratio", p.series), ratio));
        numbers.push((format!("{} normal errors", p.series), errors));
        if let Some(e) = p.metric("p99_ratio_elsewhere") {
            numbers.push((format!("{} p99 ratio, attack elsewhere", p.series), e));
        }
        if errors == 0.0 && ratio <= 2.0 {
            within2 += 1;
        }
        if errors == 0.0 && ratio <= 4.0 {
            within4 += 1;
        }
    }
    let n = pts.len();
    Ok(verdict(
        if within2 == n {
            Outcome::Holds
        } else if within4 == n {
            Outcome::Partly
        } else {
            Outcome::Fails
        },
        numbers,
        format!("normal clients' p99 stayed within 2× of their baseline on {within2} of {n} models, within 4× on {within4}, with slow clients beside them (holds when all within 2× without errors; partly within 4×)"),
    ))
}

/// Seed 000 §5.1 (error rates that climbed to 60%): more connections than
/// descriptors must not break the server: clients keep their p99 within 2×,
/// no CPU spent spinning at the limit, accepting resumes.
fn v_exhaustion_graceful(rec: &ScenarioRecord) -> Judged {
    let pts = ours(rec, "exhaustion")?;
    let mut numbers = Vec::new();
    let (mut all, mut functional) = (0, 0);
    for p in &pts {
        let m = |k: &str| p.metric(k).unwrap_or(f64::NAN);
        numbers.push((format!("{} p99 ratio", p.series), m("p99_ratio")));
        numbers.push((
            format!("{} CPU idle at limit %", p.series),
            m("server_cpu_idle_at_limit_pct"),
        ));
        numbers.push((
            format!("{} unserved after freeing", p.series),
            m("crowd_waiting") - m("crowd_served_after_free"),
        ));
        let works = m("keepalive_errors") == 0.0
            && m("crowd_served_after_free") == m("crowd_waiting")
            && m("server_cpu_idle_at_limit_pct") < 5.0;
        if works {
            functional += 1;
            if m("p99_ratio") <= 2.0 {
                all += 1;
            }
        }
    }
    let n = pts.len();
    Ok(verdict(
        if all == n {
            Outcome::Holds
        } else if functional == n {
            Outcome::Partly
        } else {
            Outcome::Fails
        },
        numbers,
        format!("{functional} of {n} models kept their clients without errors, did not spin at the limit and served every waiting connection once descriptors freed; {all} also kept p99 within 2× (holds when all do)"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::{json, Value};

    /// Hostile-conditions points: (part, model, metrics).
    fn hostile(pts: Vec<(&'static str, &'static str, Value)>) -> ScenarioRecord {
        rec(
            "hostile",
            pts.into_iter()
                .map(|(part, model, m)| {
                    (
                        model.to_string(),
                        json!({"part": part, "server": "evdispatch", "model": model}),
                        m,
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn hostile_claims() {
        let storm = |lost: f64, gap: f64| {
            json!({"lost": lost, "errors": 0.0, "overflows": 40.0, "recoveries": 40.0,
               "mode_switches": 0.0, "longest_gap_s": gap, "latency_uncorrected_max_ms": 20.0})
        };
        let ok = hostile(vec![
            ("storm", "rtsig", storm(0.0, 0.0)),
            ("storm", "hybrid", storm(0.0, 0.25)),
        ]);
        check(CLAIMS, "overflow-no-hang", &ok, Outcome::Holds);
        let stall = hostile(vec![("storm", "rtsig", storm(0.0, 2.0))]);
        check(CLAIMS, "overflow-no-hang", &stall, Outcome::Partly);
        let lost = hostile(vec![("storm", "rtsig", storm(12.0, 0.0))]);
        check(CLAIMS, "overflow-no-hang", &lost, Outcome::Fails);
        check(
            CLAIMS,
            "overflow-no-hang",
            &hostile(vec![]),
            Outcome::NotMeasured,
        );

        let slow = |ratio: f64| json!({"p99_ratio": ratio, "normal_errors": 0.0});
        check(
            CLAIMS,
            "slow-do-not-starve",
            &hostile(vec![("slowloris", "epoll", slow(1.3))]),
            Outcome::Holds,
        );
        check(
            CLAIMS,
            "slow-do-not-starve",
            &hostile(vec![("slowloris", "epoll", slow(3.0))]),
            Outcome::Partly,
        );
        check(
            CLAIMS,
            "slow-do-not-starve",
            &hostile(vec![("slowloris", "epoll", slow(9.0))]),
            Outcome::Fails,
        );

        let exh = |ratio: f64, served: f64, cpu: f64| {
            json!({"p99_ratio": ratio, "keepalive_errors": 0.0, "crowd_waiting": 100.0,
               "crowd_served_after_free": served, "server_cpu_idle_at_limit_pct": cpu})
        };
        check(
            CLAIMS,
            "exhaustion-graceful",
            &hostile(vec![("exhaustion", "epoll", exh(1.1, 100.0, 0.0))]),
            Outcome::Holds,
        );
        check(
            CLAIMS,
            "exhaustion-graceful",
            &hostile(vec![("exhaustion", "epoll", exh(3.0, 100.0, 0.0))]),
            Outcome::Partly,
        );
        check(
            CLAIMS,
            "exhaustion-graceful",
            &hostile(vec![("exhaustion", "epoll", exh(1.0, 100.0, 95.0))]),
            Outcome::Fails,
        );
        check(
            CLAIMS,
            "exhaustion-graceful",
            &hostile(vec![("exhaustion", "epoll", exh(1.0, 40.0, 0.0))]),
            Outcome::Fails,
        );
    }
}
