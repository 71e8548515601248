//! The claims scenario `rtsig-latency` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "rtsig-faster-low-load", seed: "000", section: "§5.2, Fig. 14", text: "at low load the RT-signal server answers faster than the /dev/poll (epoll) server", verdict: v_rtsig_faster_low },
    Claim { id: "rtsig-latency-jumps", seed: "000", section: "§5.2, Fig. 14", text: "past its knee the RT-signal server's median latency jumps by orders of magnitude while /dev/poll's (epoll's) stays flat", verdict: v_rtsig_jumps },
    Claim { id: "batch-dequeue-helps", seed: "000", section: "§6 (sigtimedwait4)", text: "dequeuing many signals per system call lets an RT-signal server sustain more load", verdict: v_batch_dequeue },
    Claim { id: "rtsig-knee-sooner-inactive", seed: "000", section: "§5.2, Figs. 11–13", text: "with more inactive connections the RT-signal server reaches its knee sooner", verdict: v_knee_sooner },
    Claim { id: "devpoll-scales-better-than-rtsig", seed: "000", section: "§5.2, Figs. 11–13; §7", text: "/dev/poll (epoll) sustains higher request rates than RT signals, with few and with many inactive connections", verdict: v_devpoll_scales_better },
];

/// The seed's concurrency past which phhttpd's latency jumped (Fig. 14).
const JUMP_CONCURRENCY: f64 = 900.0;

/// Points of `m` at the seed's Fig. 14 count, 251 inactive.
fn at251(m: &str) -> [(&'static str, serde_json::Value); 2] {
    [of_series(m), ("inactive", value_of(251))]
}

fn v_rtsig_faster_low(rec: &ScenarioRecord) -> Judged {
    let r0 = smallest(rec, &at251("rtsig"), "rate").need("rtsig at 251 inactive")?;
    let p50 = |m: &str| {
        at(
            rec,
            &[
                of_series(m),
                ("inactive", value_of(251)),
                ("rate", value_of(r0)),
            ],
            "p50_us",
        )
    };
    let (r, e) = (p50("rtsig"), p50("epoll")).need("rtsig and epoll at the lowest rate")?;
    Ok(verdict(
        if r < 0.95 * e { Outcome::Holds } else if r <= 1.05 * e { Outcome::Partly } else { Outcome::Fails },
        vec![("rate /s", r0), ("rtsig median µs", r), ("epoll median µs", e), ("epoll − rtsig µs", e - r)],
        format!("with 251 inactive at {}/s rtsig's median was {} µs, epoll's {} µs (holds if rtsig is more than 5% faster, partly within ±5%); phhttpd was 1–3 ms faster than thttpd with /dev/poll", fmt_num(r0), fmt_num(r), fmt_num(e)),
    ))
}

fn v_rtsig_jumps(rec: &ScenarioRecord) -> Judged {
    let r = rec.xy(&at251("rtsig"), "rate", "p50_us");
    let e = rec.xy(&at251("epoll"), "rate", "p50_us");
    if r.len() < 2 || e.len() < 2 {
        return Err(missing(
            "rtsig and epoll at two rates or more with 251 inactive",
        ));
    }
    // The seed's regime: ~900 concurrent connections, or rtsig's knee.
    let conc = peak(rec, &at251("rtsig"), "connections_peak").unwrap_or(0.0);
    let knee_at = overloaded_at(rec, &at251("rtsig"));
    let overflows = peak(rec, &at251("rtsig"), "overflows").unwrap_or(0.0);
    if conc < JUMP_CONCURRENCY && knee_at.is_none() {
        let top = r.last().map(|p| p.0).unwrap_or(0.0);
        return unreached(rec, vec![("rtsig peak concurrency", conc), ("top rate /s", top), ("rtsig overflows (most in a run)", overflows)], format!(
            "rtsig's concurrency peaked at {} connections (the seed's jump came past ~900) and it kept up with every rate to {}/s ({} signal-queue overflows)",
            fmt_num(conc),
            fmt_num(top),
            fmt_num(overflows)
        ));
    }
    let rmin = r.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let emin = e.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let jump = r.iter().find(|(_, y)| *y >= 10.0 * rmin);
    let rmax = r.iter().map(|p| p.1 / rmin).fold(0.0, f64::max);
    let reached = vec![
        ("rtsig peak concurrency", conc),
        ("rtsig overflows (most in a run)", overflows),
    ];
    let Some((rate, y)) = jump else {
        return Ok(verdict(
            Outcome::Fails,
            [vec![("rtsig worst/best median ×", rmax)], reached].concat(),
            format!("rtsig reached {} concurrent connections{}, yet its median stayed within ×{} of its best over the whole sweep (a jump is ≥ ×10)", fmt_num(conc), knee_at.map(|k| format!(" and fell behind at {}/s", fmt_num(k))).unwrap_or_default(), fmt_num(rmax)),
        ));
    };
    let er = e.iter().find(|(x, _)| x == rate).map(|p| p.1 / emin);
    let er = er.need("epoll at the rate where rtsig jumped")?;
    Ok(verdict(
        if er <= 3.0 { Outcome::Holds } else { Outcome::Partly },
        [vec![("rate /s", *rate), ("rtsig median µs", *y), ("rtsig ×best", y / rmin), ("epoll ×best", er)], reached].concat(),
        format!("rtsig's median jumped ×{} above its best at {}/s while epoll's was ×{} its best (holds if epoll stays within ×3 there; partly if both jumped)", fmt_num(y / rmin), fmt_num(*rate), fmt_num(er)),
    ))
}

fn v_batch_dequeue(rec: &ScenarioRecord) -> Judged {
    let (Some((rk, _)), Some((bk, _))) =
        (knee(rec, &at251("rtsig")), knee(rec, &at251("rtsig-batch")))
    else {
        return Err(missing("rtsig and rtsig-batch"));
    };
    if overloaded_at(rec, &at251("rtsig")).is_none()
        && overloaded_at(rec, &at251("rtsig-batch")).is_none()
    {
        return unreached(rec, vec![("rtsig kept up to /s", rk.unwrap_or(0.0)), ("rtsig-batch kept up to /s", bk.unwrap_or(0.0))], format!(
            "neither rtsig nor rtsig-batch fell behind with the load generator below its limit: they kept up to {}/s and {}/s, so neither's limit was reached",
            fmt_num(rk.unwrap_or(0.0)),
            fmt_num(bk.unwrap_or(0.0))
        ));
    }
    let (rk, bk) = (rk.unwrap_or(0.0), bk.unwrap_or(0.0));
    let top = |m: &str| {
        let r = largest(rec, &at251(m), "rate")?;
        at(
            rec,
            &[
                of_series(m),
                ("inactive", value_of(251)),
                ("rate", value_of(r)),
            ],
            "reply_rate",
        )
    };
    let (rt, bt) = (top("rtsig"), top("rtsig-batch")).need("reply rates")?;
    Ok(verdict(
        band(bk > rk, bk >= rk && bt >= 1.1 * rt),
        vec![("rtsig kept up to /s", rk), ("rtsig-batch kept up to /s", bk), ("rtsig replies/s at the top rate", rt), ("rtsig-batch replies/s at the top rate", bt)],
        format!("dequeuing many signals per call (the seed's proposed sigtimedwait4; here a read of a signalfd) kept up to {}/s against {}/s one at a time (holds if higher; partly if equal with ≥ 10% more replies at the top rate)", fmt_num(bk), fmt_num(rk)),
    ))
}

/// Per inactive count `m` ran at: `(count, kept up to /s, best replies/s,
/// overloaded)`, ascending.
fn knees(rec: &ScenarioRecord, m: &str) -> Vec<(f64, f64, f64, bool)> {
    let mut counts: Vec<f64> = rec
        .select(&[of_series(m)])
        .filter_map(|p| p.num("inactive"))
        .collect();
    counts.sort_by(f64::total_cmp);
    counts.dedup();
    counts
        .into_iter()
        .filter_map(|i| {
            let f = [of_series(m), ("inactive", value_of(i))];
            let (kept, _) = knee(rec, &f)?;
            Some((
                i,
                kept.unwrap_or(0.0),
                peak(rec, &f, "reply_rate")?,
                overloaded_at(rec, &f).is_some(),
            ))
        })
        .collect()
}

fn v_knee_sooner(rec: &ScenarioRecord) -> Judged {
    let k = knees(rec, "rtsig");
    let (Some(few), Some(many)) = (k.first().copied(), k.last().copied()) else {
        return Err(missing("rtsig at two inactive counts"));
    };
    if k.len() < 2 {
        return Err(missing("rtsig at two inactive counts"));
    }
    if !k.iter().any(|x| x.3) {
        return unreached(rec, vec![("inactive, few", few.0), ("kept up to /s with few", few.1), ("inactive, many", many.0), ("kept up to /s with many", many.1)], format!(
            "rtsig never fell behind with the load generator below its limit, at any inactive count ({}): it kept up to {}/s with {} and to {}/s with {}",
            k.iter().map(|x| fmt_num(x.0)).collect::<Vec<_>>().join(", "),
            fmt_num(few.1),
            fmt_num(few.0),
            fmt_num(many.1),
            fmt_num(many.0)
        ));
    }
    Ok(verdict(
        band(many.1 < few.1, many.1 == few.1 && many.2 <= 0.9 * few.2),
        vec![("inactive, few", few.0), ("kept up to /s with few", few.1), ("inactive, many", many.0), ("kept up to /s with many", many.1), ("best replies/s with few", few.2), ("best replies/s with many", many.2)],
        format!("rtsig kept up to {}/s with {} inactive connections and to {}/s with {} (holds if lower with more; partly if the same rate but ≥ 10% fewer replies at best). phhttpd's knee came sooner at 251 and 501 than at 1.", fmt_num(few.1), fmt_num(few.0), fmt_num(many.1), fmt_num(many.0)),
    ))
}

/// How far apart two peak reply rates must be to call one higher: the
/// spread of one point's reply rate between the rounds of a run, under the
/// budget near the knee, reaches 5–8%.
const PEAK_MARGIN: f64 = 1.1;

fn v_devpoll_scales_better(rec: &ScenarioRecord) -> Judged {
    let (r, e) = (knees(rec, "rtsig"), knees(rec, "epoll"));
    // Counts both ran at, where either was overloaded: (count, rtsig's
    // peak reply rate, epoll's).
    let pairs: Vec<(f64, f64, f64)> = r
        .iter()
        .filter_map(|a| {
            let b = e.iter().find(|b| b.0 == a.0)?;
            (a.3 || b.3).then_some((a.0, a.2, b.2))
        })
        .collect();
    if r.is_empty() || e.is_empty() {
        return Err(missing("rtsig and epoll"));
    }
    if pairs.is_empty() {
        let least =
            |k: &[(f64, f64, f64, bool)]| k.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
        return unreached(rec, vec![("rtsig kept up to /s, least over counts", least(&r)), ("epoll kept up to /s, least over counts", least(&e))], format!(
            "neither rtsig nor epoll fell behind with the load generator below its limit at any inactive count they share (rtsig kept up to {}/s at least, epoll to {}/s)",
            fmt_num(least(&r)),
            fmt_num(least(&e))
        ));
    }
    // The rate a server sustains is its best reply rate over the sweep
    // (the knee, on a grid of a few multiples, is too coarse to compare
    // two servers whose knees fall near the same grid point).
    let better = pairs.iter().filter(|p| p.2 >= PEAK_MARGIN * p.1).count();
    let worse = pairs.iter().filter(|p| p.1 >= PEAK_MARGIN * p.2).count();
    let mut nums: Vec<(String, f64)> = Vec::new();
    for (i, rp, ep) in &pairs {
        nums.push((
            format!("{} inactive: rtsig best replies/s", fmt_num(*i)),
            *rp,
        ));
        nums.push((
            format!("{} inactive: epoll best replies/s", fmt_num(*i)),
            *ep,
        ));
    }
    let outcome = match (better > 0, worse > 0) {
        (true, false) => Outcome::Holds,
        (false, true) => Outcome::Fails,
        _ => Outcome::Partly,
    };
    Ok(verdict(
        outcome,
        nums,
        format!("at the {} inactive counts where a server fell behind, epoll's best reply rate was at least ×{PEAK_MARGIN} rtsig's at {better} and rtsig's at least ×{PEAK_MARGIN} epoll's at {worse} (holds if epoll's is higher somewhere and rtsig's nowhere, fails the other way round, partly if they are within ×{PEAK_MARGIN} everywhere or each is higher somewhere). The seed: thttpd with /dev/poll scaled better than phhttpd with 1, 251 and 501 inactive connections.", pairs.len()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    /// Points (series, inactive, rate, median µs, replies/s, peak
    /// concurrency).
    fn lat(rows: &[(&str, u32, f64, f64, f64, f64)]) -> ScenarioRecord {
        rec(
            "rtsig-latency",
            rows.iter()
                .map(|(m, i, r, p50, y, c)| {
                    pt(
                        m,
                        json!({"rate": r, "inactive": i}),
                        json!({"p50_us": p50, "reply_rate": y, "connections_peak": c}),
                    )
                })
                .collect(),
        )
    }

    const ALL: &[&str] = &[
        "rtsig-faster-low-load",
        "rtsig-latency-jumps",
        "batch-dequeue-helps",
        "rtsig-knee-sooner-inactive",
        "devpoll-scales-better-than-rtsig",
    ];

    #[test]
    fn rtsig_latency_claims() {
        let good = lat(&[
            ("rtsig", 1, 1000.0, 80.0, 1000.0, 300.0),
            ("rtsig", 1, 9000.0, 95.0, 9000.0, 500.0),
            ("rtsig", 251, 1000.0, 80.0, 1000.0, 300.0),
            ("rtsig", 251, 5000.0, 90.0, 5000.0, 500.0),
            ("rtsig", 251, 9000.0, 5000.0, 6000.0, 1200.0),
            ("rtsig-batch", 251, 1000.0, 80.0, 1000.0, 300.0),
            ("rtsig-batch", 251, 5000.0, 90.0, 5000.0, 500.0),
            ("rtsig-batch", 251, 9000.0, 100.0, 9000.0, 600.0),
            ("epoll", 1, 1000.0, 100.0, 1000.0, 300.0),
            ("epoll", 1, 9000.0, 100.0, 9000.0, 500.0),
            ("epoll", 251, 1000.0, 100.0, 1000.0, 300.0),
            ("epoll", 251, 5000.0, 110.0, 5000.0, 500.0),
            ("epoll", 251, 9000.0, 150.0, 9000.0, 600.0),
        ]);
        let bad = lat(&[
            ("rtsig", 1, 1000.0, 200.0, 1000.0, 300.0),
            ("rtsig", 1, 9000.0, 250.0, 6000.0, 1500.0),
            ("rtsig", 251, 1000.0, 200.0, 1000.0, 300.0),
            ("rtsig", 251, 9000.0, 250.0, 9000.0, 1500.0),
            ("rtsig-batch", 251, 1000.0, 200.0, 1000.0, 300.0),
            ("rtsig-batch", 251, 9000.0, 250.0, 5000.0, 1500.0),
            ("epoll", 1, 1000.0, 100.0, 1000.0, 300.0),
            ("epoll", 1, 9000.0, 120.0, 5000.0, 1500.0),
            ("epoll", 251, 1000.0, 100.0, 1000.0, 300.0),
            ("epoll", 251, 9000.0, 120.0, 5000.0, 1500.0),
        ]);
        holds_and_fails(CLAIMS, ALL, &good, &bad);
        for id in ALL {
            check(CLAIMS, id, &empty("rtsig-latency"), Outcome::NotMeasured);
        }
    }

    /// Below the seed's ~900 concurrent connections and the knee, the
    /// overload claims say what was reached instead of a verdict; the
    /// latency claim decides once 900 concurrent connections were reached,
    /// knee or not.
    #[test]
    fn overload_claims_not_reached_below_the_regime() {
        let unloaded = lat(&[
            ("rtsig", 1, 1000.0, 80.0, 1000.0, 260.0),
            ("rtsig", 1, 9000.0, 85.0, 9000.0, 400.0),
            ("rtsig", 251, 1000.0, 80.0, 1000.0, 260.0),
            ("rtsig", 251, 9000.0, 90.0, 9000.0, 422.0),
            ("rtsig-batch", 251, 1000.0, 80.0, 1000.0, 260.0),
            ("rtsig-batch", 251, 9000.0, 85.0, 8990.0, 400.0),
            ("epoll", 1, 1000.0, 100.0, 1000.0, 260.0),
            ("epoll", 1, 9000.0, 100.0, 9000.0, 400.0),
            ("epoll", 251, 1000.0, 100.0, 1000.0, 260.0),
            ("epoll", 251, 9000.0, 110.0, 9000.0, 400.0),
        ]);
        for id in &ALL[1..] {
            check(CLAIMS, id, &unloaded, Outcome::NotReached);
        }
        let v = CLAIMS[1].judge(&unloaded);
        assert!(v.why.contains("peaked at 422 connections"), "{}", v.why);
        // 900 concurrent connections reached without a jump: it fails.
        let mut crowded = unloaded.clone();
        for p in &mut crowded.points {
            p.metrics.insert("connections_peak".into(), 950.0);
        }
        check(CLAIMS, "rtsig-latency-jumps", &crowded, Outcome::Fails);
    }
}
