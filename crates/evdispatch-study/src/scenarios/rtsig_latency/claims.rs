//! The claims scenario `rtsig-latency` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::report::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "rtsig-faster-low-load", seed: "000", section: "§5.2, Fig. 14", text: "at low load the RT-signal server answers faster than the /dev/poll (epoll) server", verdict: v_rtsig_faster_low },
    Claim { id: "rtsig-latency-jumps", seed: "000", section: "§5.2, Fig. 14", text: "past its knee the RT-signal server's median latency jumps by orders of magnitude while /dev/poll's (epoll's) stays flat", verdict: v_rtsig_jumps },
    Claim { id: "batch-dequeue-helps", seed: "000", section: "§6 (sigtimedwait4)", text: "dequeuing many signals per system call lets an RT-signal server sustain more load", verdict: v_batch_dequeue },
];

fn v_rtsig_faster_low(rec: &ScenarioRecord) -> Judged {
    let r0 = smallest(rec, &[s("rtsig")], "rate").need("rtsig")?;
    let p50 = |m: &str| at(rec, &[s(m), ("rate", j(r0))], "p50_us");
    let (r, e) = (p50("rtsig"), p50("epoll")).need("rtsig and epoll at the lowest rate")?;
    Ok(verdict(
        if r < 0.95 * e { Outcome::Holds } else if r <= 1.05 * e { Outcome::Partly } else { Outcome::Fails },
        vec![("rate /s", r0), ("rtsig median µs", r), ("epoll median µs", e), ("epoll − rtsig µs", e - r)],
        format!("at {}/s rtsig's median was {} µs, epoll's {} µs (holds if rtsig is more than 5% faster, partly within ±5%); phhttpd was 1–3 ms faster than thttpd with /dev/poll", fmt_num(r0), fmt_num(r), fmt_num(e)),
    ))
}

fn v_rtsig_jumps(rec: &ScenarioRecord) -> Judged {
    let r = rec.xy(&[s("rtsig")], "rate", "p50_us");
    let e = rec.xy(&[s("epoll")], "rate", "p50_us");
    if r.len() < 2 || e.len() < 2 {
        return Err(missing("rtsig and epoll at two rates or more"));
    }
    let rmin = r.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let emin = e.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let jump = r.iter().find(|(_, y)| *y >= 10.0 * rmin);
    let rmax = r.iter().map(|p| p.1 / rmin).fold(0.0, f64::max);
    let Some((rate, y)) = jump else {
        return Ok(verdict(Outcome::Fails, vec![("rtsig worst/best median ×", rmax)], format!("rtsig's median stayed within ×{} of its best over the whole sweep (a jump is ≥ ×10)", fmt_num(rmax))));
    };
    let er = e.iter().find(|(x, _)| x == rate).map(|p| p.1 / emin);
    let er = er.need("epoll at the rate where rtsig jumped")?;
    Ok(verdict(
        if er <= 3.0 { Outcome::Holds } else { Outcome::Partly },
        vec![("rate /s", *rate), ("rtsig median µs", *y), ("rtsig ×best", y / rmin), ("epoll ×best", er)],
        format!("rtsig's median jumped ×{} above its best at {}/s while epoll's was ×{} its best (holds if epoll stays within ×3 there; partly if both jumped)", fmt_num(y / rmin), fmt_num(*rate), fmt_num(er)),
    ))
}

fn v_batch_dequeue(rec: &ScenarioRecord) -> Judged {
    let (Some((rk, rb)), Some((bk, bb))) =
        (knee(rec, &[s("rtsig")]), knee(rec, &[s("rtsig-batch")]))
    else {
        return Err(missing("rtsig and rtsig-batch"));
    };
    if rb.is_none() && bb.is_none() {
        return Err(nm(format!(
            "the sweep never overloaded rtsig nor rtsig-batch: both answered ≥ 95% of every offered rate up to {}/s, so neither's limit was reached",
            fmt_num(rk.unwrap_or(0.0).min(bk.unwrap_or(0.0)))
        )));
    }
    let (rk, bk) = (rk.unwrap_or(0.0), bk.unwrap_or(0.0));
    let top = |m: &str| {
        let r = largest(rec, &[s(m)], "rate")?;
        at(rec, &[s(m), ("rate", j(r))], "reply_rate")
    };
    let (rt, bt) = (top("rtsig"), top("rtsig-batch")).need("reply rates")?;
    Ok(verdict(
        band(bk > rk, bk >= rk && bt >= 1.1 * rt),
        vec![("rtsig kept up to /s", rk), ("rtsig-batch kept up to /s", bk), ("rtsig replies/s at the top rate", rt), ("rtsig-batch replies/s at the top rate", bt)],
        format!("dequeuing many signals per call (the seed's proposed sigtimedwait4; here a read of a signalfd) kept up to {}/s against {}/s one at a time (holds if higher; partly if equal with ≥ 10% more replies at the top rate)", fmt_num(bk), fmt_num(rk)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    fn lat(rows: &[(&str, f64, f64, f64)]) -> ScenarioRecord {
        rec(
            "rtsig-latency",
            rows.iter()
                .map(|(m, r, p50, y)| {
                    pt(
                        m,
                        json!({"rate": r, "inactive": 251}),
                        json!({"p50_us": p50, "reply_rate": y}),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn rtsig_latency_claims() {
        let good = lat(&[
            ("rtsig", 1000.0, 80.0, 1000.0),
            ("rtsig", 5000.0, 90.0, 5000.0),
            ("rtsig", 9000.0, 5000.0, 6000.0),
            ("rtsig-batch", 1000.0, 80.0, 1000.0),
            ("rtsig-batch", 5000.0, 90.0, 5000.0),
            ("rtsig-batch", 9000.0, 100.0, 9000.0),
            ("epoll", 1000.0, 100.0, 1000.0),
            ("epoll", 5000.0, 110.0, 5000.0),
            ("epoll", 9000.0, 150.0, 9000.0),
        ]);
        let bad = lat(&[
            ("rtsig", 1000.0, 200.0, 1000.0),
            ("rtsig", 9000.0, 250.0, 6000.0),
            ("rtsig-batch", 1000.0, 200.0, 1000.0),
            ("rtsig-batch", 9000.0, 250.0, 5000.0),
            ("epoll", 1000.0, 100.0, 1000.0),
            ("epoll", 9000.0, 120.0, 9000.0),
        ]);
        holds_and_fails(
            CLAIMS,
            &[
                "rtsig-faster-low-load",
                "rtsig-latency-jumps",
                "batch-dequeue-helps",
            ],
            &good,
            &bad,
        );
        let unloaded = lat(&[
            ("rtsig", 1000.0, 80.0, 1000.0),
            ("rtsig", 9000.0, 90.0, 9000.0),
            ("rtsig-batch", 1000.0, 80.0, 1000.0),
            ("rtsig-batch", 9000.0, 85.0, 8990.0),
        ]);
        check(
            CLAIMS,
            "batch-dequeue-helps",
            &unloaded,
            Outcome::NotMeasured,
        );
    }
}
