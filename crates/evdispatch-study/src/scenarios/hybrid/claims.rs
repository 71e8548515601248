//! The claims scenario `hybrid` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "hybrid-best-of-both", seed: "000", section: "§4, §6, §7", text: "a hybrid server gets RT-signal latency at light load and polling throughput at heavy load", verdict: v_hybrid_best_of_both },
    Claim { id: "hybrid-switches-back", seed: "000", section: "§6", text: "with the poll interest set maintained alongside, the hybrid returns to signals when load subsides", verdict: v_hybrid_switches_back },
];

fn v_hybrid_best_of_both(rec: &ScenarioRecord) -> Judged {
    let sweep = ("part", value_of("sweep"));
    let r0 = smallest(rec, &[of_series("hybrid"), sweep.clone()], "rate").need("hybrid")?;
    let p50 = |m: &str| {
        at(
            rec,
            &[of_series(m), sweep.clone(), ("rate", value_of(r0))],
            "p50_us",
        )
    };
    let (h, r) = (p50("hybrid"), p50("rtsig")).need("hybrid and rtsig at the lowest rate")?;
    let (hb, eb) = (
        peak(rec, &[of_series("hybrid"), sweep.clone()], "reply_rate"),
        peak(rec, &[of_series("epoll"), sweep.clone()], "reply_rate"),
    )
        .need("hybrid and epoll throughput")?;
    // Heavy load is the regime where polling's throughput matters: a run
    // where epoll or the hybrid fell behind (answered < 95% of the offered
    // rate, the generator not the limit); below it both answer the offered
    // rate and the comparison cannot fail. And the hybrid must have left
    // signal mode there: without a switch it is rtsig under another name.
    let runs: Vec<_> = rec
        .select(std::slice::from_ref(&sweep))
        .filter(|p| p.series == "hybrid" || p.series == "epoll")
        .collect();
    let behind = runs.iter().any(|p| {
        matches!((p.num("rate"), p.metric("reply_rate")), (Some(x), Some(y)) if y < KEEP * x)
            && !generator_bound(p)
    });
    let switches = rec
        .select(&[of_series("hybrid"), sweep.clone()])
        .filter_map(|p| p.metric("mode_switches"))
        .fold(0.0, f64::max);
    let poll_pct = rec
        .select(&[of_series("hybrid"), sweep.clone()])
        .filter_map(|p| p.metric("poll_mode_pct"))
        .fold(0.0, f64::max);
    if !behind || switches == 0.0 {
        let top = largest(rec, &[of_series("hybrid"), sweep.clone()], "rate").unwrap_or(0.0);
        return unreached(
            rec,
            vec![
                ("hybrid best replies/s", hb),
                ("epoll best replies/s", eb),
                ("top offered rate /s", top),
                ("most hybrid mode switches in a run", switches),
                ("most time in poll mode %", poll_pct),
            ],
            format!(
                "heavy load was not reached: a server fell behind the offered rate (generator not the limit): {behind}; the hybrid switched to polling: {}",
                switches > 0.0
            ),
        );
    }
    let a = h <= 1.15 * r;
    let b = hb >= 0.95 * eb;
    Ok(verdict(
        both(a, b),
        vec![("hybrid median µs (light)", h), ("rtsig median µs (light)", r), ("hybrid best replies/s", hb), ("epoll best replies/s", eb), ("most hybrid mode switches in a run", switches)],
        format!("light-load latency within ×1.15 of rtsig's: {a}; peak throughput, with a server fallen behind and the hybrid switching to polling, ≥ 0.95 × epoll's: {b}"),
    ))
}

fn v_hybrid_switches_back(rec: &ScenarioRecord) -> Judged {
    let p = rec
        .select(&[("part", value_of("step")), of_series("hybrid")])
        .next()
        .need("the hybrid's load step")?;
    let (sw, l50) = (p.metric("mode_switches"), p.metric("phase2_p50_us"))
        .need("the hybrid's mode switches and light-phase latency")?;
    let fresh = p.num("light_rate").and_then(|l| {
        at(
            rec,
            &[
                ("part", value_of("sweep")),
                of_series("hybrid"),
                ("rate", value_of(l)),
            ],
            "p50_us",
        )
    });
    let fresh = fresh.need("a fresh hybrid at the light rate")?;
    if sw == 0.0 {
        return unreached(
            rec,
            vec![("mode switches", sw), ("heavy rate /s", p.num("rate").unwrap_or(0.0))],
            "the heavy phase never drove the hybrid out of signal mode, so there was nothing to switch back from",
        );
    }
    // Switches alternate, polling first: two or more mean it came back to
    // signals at least once. (The count cannot say where it ended: the
    // generator closes every held connection at once when it exits, a
    // burst that may send the hybrid to polling just before it stops.)
    let back = sw >= 2.0;
    let recovered = l50 <= 1.5 * fresh + 200.0;
    Ok(verdict(
        both(back, recovered),
        vec![("mode switches", sw), ("light-phase median µs", l50), ("fresh server's median µs", fresh)],
        format!("the hybrid returned from polling to signals at least once (2 or more switches): {back}; its light-phase median was within ×1.5 (+200 µs) of a fresh server's: {recovered}"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    #[test]
    fn hybrid_claims() {
        // The hybrid switches (to polling and back) at 9,000/s and above.
        let sweep = |m: &str, r: f64, p50: f64, y: f64| {
            let sw = if m == "hybrid" && r >= 9000.0 {
                2.0
            } else {
                0.0
            };
            pt(
                m,
                json!({"part": "sweep", "rate": r}),
                json!({"p50_us": p50, "reply_rate": y, "mode_switches": sw}),
            )
        };
        let step = |sw: f64, p50: f64| {
            pt(
                "hybrid",
                json!({"part": "step", "rate": 9000.0, "light_rate": 1000.0}),
                json!({"mode_switches": sw, "phase2_p50_us": p50}),
            )
        };
        let good = rec(
            "hybrid",
            vec![
                sweep("hybrid", 1000.0, 100.0, 1000.0),
                sweep("hybrid", 12000.0, 900.0, 9000.0),
                sweep("rtsig", 1000.0, 95.0, 1000.0),
                sweep("epoll", 12000.0, 800.0, 9000.0),
                step(4.0, 120.0),
            ],
        );
        let bad = rec(
            "hybrid",
            vec![
                sweep("hybrid", 1000.0, 300.0, 1000.0),
                sweep("hybrid", 12000.0, 9000.0, 5000.0),
                sweep("rtsig", 1000.0, 95.0, 1000.0),
                sweep("epoll", 12000.0, 800.0, 9000.0),
                step(1.0, 5000.0),
            ],
        );
        holds_and_fails(
            CLAIMS,
            &["hybrid-best-of-both", "hybrid-switches-back"],
            &good,
            &bad,
        );
        // Nobody fell behind, or the hybrid never switched: its best of
        // both is not reached (the throughput comparison could not fail);
        // no switch in the step: nothing to come back from.
        let calm = rec(
            "hybrid",
            vec![
                sweep("hybrid", 1000.0, 100.0, 1000.0),
                sweep("hybrid", 9000.0, 900.0, 9000.0),
                sweep("rtsig", 1000.0, 95.0, 1000.0),
                sweep("epoll", 9000.0, 800.0, 9000.0),
                step(0.0, 120.0),
            ],
        );
        check(CLAIMS, "hybrid-best-of-both", &calm, Outcome::NotReached);
        check(CLAIMS, "hybrid-switches-back", &calm, Outcome::NotReached);
        let mut unswitched = good.clone();
        for p in unswitched.points.iter_mut() {
            p.metrics.insert("mode_switches".into(), 0.0);
        }
        check(
            CLAIMS,
            "hybrid-best-of-both",
            &unswitched,
            Outcome::NotReached,
        );
    }
}
