//! The claims scenario `table1` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::{Point, ScenarioRecord};

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "overflow-past-knee", seed: "004", section: "Table 1", text: "no signal-queue overflow below the knee; past it the RT-signal server overflows and lives on its fallback", verdict: v_overflow_past_knee },
    Claim { id: "overflow-every-dequeue", seed: "004", section: "Table 1", text: "past the knee every dequeue ends in overflow", verdict: v_every_dequeue },
    Claim { id: "per-fd-no-overflow", seed: "004", section: "§3.4; 002 slides 17–18", text: "signal-per-fd (at most one signal queued per descriptor; our rtsig-perfd) avoids signal-queue overflow", verdict: v_per_fd_no_overflow },
    Claim { id: "overflow-tailspin", seed: "004", section: "§3.3", text: "recovering from overflow with a high-overhead mechanism can send an overloaded server into a tailspin", verdict: v_tailspin },
    Claim { id: "recovery-loses-nothing", seed: "004", section: "§3.3 (notification leak); 000 §2", text: "with a flush-and-poll fallback on SIGIO, an RT-signal server loses no event (no hung server)", verdict: v_no_event_lost },
];

/// The web runs of mechanism `m` (scenario 6), floor runs aside.
fn web_points<'a>(rec: &'a ScenarioRecord, m: &str) -> Vec<&'a Point> {
    rec.select(&[of_series(m)])
        .filter(|p| p.str("bench").is_none() && p.str("part") != Some("floor"))
        .collect()
}

/// The overflows that opening and closing `idle` held connections cost `m`
/// by themselves (its floor run: the same connections, a token rate):
/// with the queue at 64 entries, the generator's burst of connects at the
/// start and of closes at the end overflow it whatever the rate. 0 if there
/// is no floor run.
fn overflow_floor(rec: &ScenarioRecord, m: &str, idle: f64) -> f64 {
    rec.select(&[
        of_series(m),
        ("part", value_of("floor")),
        ("idle", value_of(idle)),
    ])
    .find_map(|p| p.metric("overflows"))
    .unwrap_or(0.0)
}

/// Overflows of a run beyond what its floor explains (1.5 × the floor + 2).
fn overflows_beyond_floor(rec: &ScenarioRecord, m: &str, p: &Point) -> f64 {
    let floor = overflow_floor(rec, m, p.num("idle").unwrap_or(0.0));
    (p.metric("overflows").unwrap_or(0.0) - (1.5 * floor + 2.0)).max(0.0)
}

/// Whether run `p` took its server past the knee: it answered less than
/// 95% of the offered rate, and the generator was not the limit. The
/// seed's overflows began where its server saturated (about 3,200 req/s);
/// below that, a full queue can only come from a burst, which the floor
/// run measures.
fn past_knee(p: &Point) -> bool {
    match (p.num("rate"), p.metric("reply_rate")) {
        (Some(r), Some(y)) => y < KEEP * r && !generator_bound(p),
        _ => false,
    }
}

/// `not reached` for a sweep that never took rtsig past its knee: what
/// the top offered rate got at each idle count (the numbers), and `below`,
/// what the runs under the knee showed (they say nothing about the other
/// half).
fn never_past_knee(rec: &ScenarioRecord, pts: &[&Point], below: &str) -> Judged {
    let mut tops: Vec<(f64, f64, f64)> = Vec::new();
    for p in pts {
        let (Some(i), Some(r), Some(y)) = (p.num("idle"), p.num("rate"), p.metric("reply_rate"))
        else {
            continue;
        };
        match tops.iter_mut().find(|t| t.0 == i) {
            Some(t) if r > t.1 => *t = (i, r, y),
            Some(_) => {}
            None => tops.push((i, r, y)),
        }
    }
    if tops.is_empty() {
        return Err(missing("rtsig runs with a reply rate"));
    }
    tops.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut nums: Vec<(String, f64)> = Vec::new();
    for (i, r, y) in &tops {
        nums.push((format!("{} idle: top offered rate /s", fmt_num(*i)), *r));
        nums.push((format!("{} idle: replies/s there", fmt_num(*i)), *y));
    }
    let tops: Vec<String> = tops
        .iter()
        .map(|(i, r, y)| {
            format!(
                "{} idle: {} replies/s at {}/s",
                fmt_num(*i),
                fmt_num(*y),
                fmt_num(*r)
            )
        })
        .collect();
    unreached(
        rec,
        nums,
        format!(
            "the sweep never took rtsig past its knee (every run answered ≥ 95% of the offered rate, or its generator may have been the limit: {}), so the load that overflowed the seed's queue was not reached. {below}",
            tops.join("; ")
        ),
    )
}

fn v_overflow_past_knee(rec: &ScenarioRecord) -> Judged {
    let pts = web_points(rec, "rtsig");
    let mut idles: Vec<f64> = pts.iter().filter_map(|p| p.num("idle")).collect();
    idles.sort_by(f64::total_cmp);
    idles.dedup();
    let mut nums: Vec<(String, f64)> = Vec::new();
    let (mut quiet_below, mut over_above, mut any_past) = (true, false, false);
    let mut measured = false;
    for i in idles {
        let mut xy: Vec<&Point> = pts
            .iter()
            .copied()
            .filter(|p| p.num("idle") == Some(i) && p.metric("overflows").is_some())
            .collect();
        xy.sort_by(|a, b| {
            a.num("rate")
                .unwrap_or(0.0)
                .total_cmp(&b.num("rate").unwrap_or(0.0))
        });
        if xy.len() < 2 {
            continue;
        }
        measured = true;
        let floor = overflow_floor(rec, "rtsig", i);
        let n = fmt_num(i);
        nums.push((format!("{n} idle: floor (open/close only)"), floor));
        // Below the knee: the lowest rate the server kept up at (with a
        // generator that was not the limit).
        if let Some(lo) = xy.iter().find(|p| !past_knee(p) && !generator_bound(p)) {
            quiet_below &= overflows_beyond_floor(rec, "rtsig", lo) == 0.0;
            nums.push((
                format!("{n} idle: overflows at the lowest rate"),
                lo.metric("overflows").unwrap_or(0.0),
            ));
        }
        // Past the knee: the highest rate the server fell behind at.
        if let Some(hi) = xy.iter().rev().find(|p| past_knee(p)) {
            any_past = true;
            over_above |= overflows_beyond_floor(rec, "rtsig", hi) > 0.0;
            nums.push((
                format!("{n} idle: overflows past the knee"),
                hi.metric("overflows").unwrap_or(0.0),
            ));
            nums.push((
                format!("{n} idle: that run's offered rate /s"),
                hi.num("rate").unwrap_or(0.0),
            ));
        }
    }
    if !measured {
        return Err(missing("rtsig overflow counts at two rates"));
    }
    if !any_past {
        return never_past_knee(
            rec,
            &pts,
            &format!("Below the knee, at the lowest rate, no overflow beyond the floor (the held connections' connects and closes; beyond = more than 1.5 × floor + 2) at every idle count: {quiet_below}."),
        );
    }
    Ok(verdict(
        both(quiet_below, over_above),
        nums,
        format!("at the lowest rate the server kept up at, no overflow beyond the floor (the connects and closes of the held connections alone; beyond = more than 1.5 × floor + 2) at every idle count: {quiet_below}; beyond the floor at the highest rate where the server fell behind (answered < 95% of the offered rate) at some idle count: {over_above}"),
    ))
}

/// Past the knee the seed's server overflowed at every dequeue (Table 1,
/// from 3,400 req/s): rtsig's overflows per dequeue call at the highest
/// rate it fell behind at, at each idle count.
fn v_every_dequeue(rec: &ScenarioRecord) -> Judged {
    let pts = web_points(rec, "rtsig");
    if !pts
        .iter()
        .any(|p| p.metric("overflows_per_dequeue").is_some())
    {
        return Err(missing("rtsig overflows per dequeue call"));
    }
    let mut idles: Vec<f64> = pts.iter().filter_map(|p| p.num("idle")).collect();
    idles.sort_by(f64::total_cmp);
    idles.dedup();
    let mut nums: Vec<(String, f64)> = Vec::new();
    let mut worst = f64::INFINITY;
    for i in idles {
        let top = pts
            .iter()
            .filter(|p| p.num("idle") == Some(i) && past_knee(p))
            .filter(|p| p.metric("overflows_per_dequeue").is_some())
            .max_by(|a, b| {
                a.num("rate")
                    .unwrap_or(0.0)
                    .total_cmp(&b.num("rate").unwrap_or(0.0))
            });
        if let Some(p) = top {
            let share = p.metric("overflows_per_dequeue").unwrap_or(0.0);
            worst = worst.min(share);
            nums.push((
                format!("{} idle: SIGIOs per dequeue past the knee", fmt_num(i)),
                share,
            ));
            nums.push((
                format!("{} idle: that run's offered rate /s", fmt_num(i)),
                p.num("rate").unwrap_or(0.0),
            ));
        }
    }
    if nums.is_empty() {
        return never_past_knee(
            rec,
            &pts,
            "Below the knee the seed's server never overflowed.",
        );
    }
    Ok(verdict(
        band(worst >= 0.9, worst >= 0.5),
        nums,
        "the seed's Table 1: from 3,400 req/s, past its knee, every dequeue of its RT-signal server ended in overflow (SIGIOs = dequeues). Here: rtsig's overflows over its dequeue calls in the highest-rate run it fell behind in (answered < 95% of the offered rate, the generator not the limit), at each idle count. Holds if at least 0.9 at every idle count, partly if at least 0.5, fails below.",
    ))
}

/// The configurations (idle, rate) at which rtsig fell behind.
fn rtsig_past_knee(rec: &ScenarioRecord) -> Vec<(f64, f64)> {
    web_points(rec, "rtsig")
        .into_iter()
        .filter(|p| past_knee(p))
        .filter_map(|p| Some((p.num("idle")?, p.num("rate")?)))
        .collect()
}

fn v_per_fd_no_overflow(rec: &ScenarioRecord) -> Judged {
    let over = rtsig_past_knee(rec);
    if over.is_empty() {
        return never_past_knee(
            rec,
            &web_points(rec, "rtsig"),
            "Below the knee the two mechanisms are alike, as in the seed, and the claim is about overload.",
        );
    }
    // Both mechanisms at the configurations where rtsig fell behind, where
    // both have a run.
    let at = |m: &str, i: f64, r: f64| -> Option<f64> {
        web_points(rec, m)
            .into_iter()
            .find(|p| {
                p.num("idle") == Some(i)
                    && p.num("rate") == Some(r)
                    && p.metric("overflows").is_some()
            })
            .map(|p| overflows_beyond_floor(rec, m, p))
    };
    let pairs: Vec<(f64, f64)> = over
        .iter()
        .filter_map(|&(i, r)| Some((at("rtsig", i, r)?, at("rtsig-perfd", i, r)?)))
        .collect();
    if pairs.is_empty() {
        return Err(missing(
            "overflow counts for rtsig and rtsig-perfd past rtsig's knee",
        ));
    }
    let r: f64 = pairs.iter().map(|p| p.0).sum();
    let b: f64 = pairs.iter().map(|p| p.1).sum();
    if r == 0.0 {
        return unreached(
            rec,
            vec![("rtsig overflows beyond the floor, past its knee", r)],
            "rtsig did not overflow beyond its floor (the held connections' connects and closes) even where it fell behind, so the load did not stress the queue",
        );
    }
    Ok(verdict(if b == 0.0 { Outcome::Holds } else if b < 0.5 * r { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig overflows beyond the floor, past its knee", r), ("rtsig-perfd overflows beyond the floor, same runs", b)],
        "signal-per-fd was a kernel patch that queued at most one signal per descriptor, so the queue could not overflow; rtsig-perfd comes as near as user space can (a descriptor's signal is disarmed once queued and re-armed once it is drained, so what can still queue is one signal per descriptor plus the ones raised before the first dequeue). Counted at the offered rates where rtsig fell behind (answered < 95%, its generator not the limit) and both ran. Holds if rtsig-perfd never overflowed there, partly if it overflowed less than half as often as rtsig, fails otherwise."))
}

fn v_tailspin(rec: &ScenarioRecord) -> Judged {
    let web = web_points(rec, "rtsig");
    let pts: Vec<&Point> = web
        .iter()
        .copied()
        .filter(|p| past_knee(p) && overflows_beyond_floor(rec, "rtsig", p) > 0.0)
        .collect();
    if pts.is_empty() {
        if rtsig_past_knee(rec).is_empty() {
            return never_past_knee(rec, &web, "A tailspin is a fall past the knee.");
        }
        return unreached(
            rec,
            vec![("runs past the knee", rtsig_past_knee(rec).len() as f64)],
            "rtsig fell behind but did not overflow beyond its floor (the held connections' connects and closes), so no recovery ran under overload",
        );
    }
    // A tailspin is throughput falling away from the server's peak as the
    // offered load grows: each overflowing run's replies against the best
    // rtsig reached at the same idle count, at that offered rate or below.
    let peak = |i: f64, rate: f64| {
        web.iter()
            .filter(|q| q.num("idle") == Some(i) && q.num("rate").is_some_and(|x| x <= rate))
            .filter_map(|q| q.metric("reply_rate"))
            .fold(0.0, f64::max)
    };
    let share = |p: &Point| -> f64 {
        let top = peak(p.num("idle").unwrap_or(0.0), p.num("rate").unwrap_or(0.0));
        if top > 0.0 {
            100.0 * p.metric("reply_rate").unwrap_or(0.0) / top
        } else {
            100.0
        }
    };
    let worst = pts.iter().map(|p| share(p)).fold(100.0, f64::min);
    // Compare with the hybrid at the same configurations.
    let hybrid: Vec<f64> = pts
        .iter()
        .filter_map(|p| {
            rec.select(&[
                of_series("hybrid"),
                ("idle", value_of(p.num("idle")?)),
                ("rate", value_of(p.num("rate")?)),
            ])
            .filter(|q| q.str("part") != Some("floor"))
            .find_map(|q| q.metric("reply_pct_of_offered"))
        })
        .collect();
    let hworst = hybrid.iter().copied().fold(100.0, f64::min);
    let mut nums = vec![
        ("runs past the knee with overflows", pts.len() as f64),
        ("rtsig worst replies there, % of its peak", worst),
    ];
    if !hybrid.is_empty() {
        nums.push(("hybrid worst % of offered there", hworst));
    }
    Ok(verdict(
        band(worst < 75.0, worst < 95.0),
        nums,
        format!("in the runs where rtsig fell behind (answered < 95% of the offered rate, its generator not the limit) and overflowed beyond its floor, it answered as little as {}% of the best reply rate it reached at that idle count at that offered rate or below (holds — recovery by polling sent it into a tailspin — below 75%; partly below 95%; fails if it held its peak while overflowing)", fmt_num(worst)),
    ))
}

fn v_no_event_lost(rec: &ScenarioRecord) -> Judged {
    let cells: Vec<&Point> = rec.select(&[("bench", value_of("overflow"))]).collect();
    if cells.is_empty() {
        return Err(missing("bench overflow"));
    }
    let lost: f64 = cells.iter().filter_map(|p| p.metric("lost")).sum();
    let overflows: f64 = cells.iter().filter_map(|p| p.metric("overflows")).sum();
    Ok(verdict(
        if lost == 0.0 && overflows > 0.0 { Outcome::Holds } else if lost == 0.0 { Outcome::Partly } else { Outcome::Fails },
        vec![("cells", cells.len() as f64), ("overflows provoked", overflows), ("events lost", lost)],
        "without a fallback an overflowed queue loses readiness for good and the server hangs (a \"notification leak\"); with the flush-and-poll recovery every written socket must still be reported. Holds if overflows were provoked and no event was lost; fails if any was.",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    /// Rows (mechanism, rate, overflows, % answered); 500 overflows or
    /// more are one per dequeue, fewer a share of 450 dequeues beside them.
    fn t1(rows: &[(&str, f64, f64, f64)]) -> Vec<Pt> {
        rows.iter()
        .map(|(m, r, ovf, pct)| {
            let per_dequeue = if *ovf >= 500.0 { 1.0 } else { ovf / (ovf + 450.0) };
            pt(
                m,
                json!({"idle": 252, "rate": r}),
                json!({"overflows": ovf, "overflows_per_dequeue": per_dequeue, "reply_pct_of_offered": pct, "reply_rate": r * pct / 100.0}),
            )
        })
        .collect()
    }

    #[test]
    fn table1_claims() {
        // rtsig keeps up to 5,000/s, then falls behind at 9,000/s, overflows and
        // answers less than at 5,000 (a tailspin), every dequeue an
        // overflow; rtsig-perfd never overflows.
        let mut good = t1(&[
            ("rtsig", 1000.0, 0.0, 100.0),
            ("rtsig", 5000.0, 0.0, 100.0),
            ("rtsig", 9000.0, 500.0, 30.0),
            ("rtsig-perfd", 1000.0, 0.0, 100.0),
            ("rtsig-perfd", 9000.0, 0.0, 100.0),
            ("rtsig-batch", 9000.0, 400.0, 50.0),
            ("hybrid", 9000.0, 1.0, 100.0),
        ]);
        good.push(pt(
            "rtsig",
            json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
            json!({"overflows": 8.0, "lost": 0.0}),
        ));
        let good = rec("table1", good);
        // rtsig overflows at the lowest rate; past its knee it overflows at
        // 7,000/s but not at its top rate, and holds its peak there; rtsig-perfd
        // overflows as often.
        let mut bad = t1(&[
            ("rtsig", 1000.0, 5.0, 100.0),
            ("rtsig", 7000.0, 50.0, 80.0),
            ("rtsig", 9000.0, 0.0, 62.0),
            ("rtsig-perfd", 7000.0, 50.0, 90.0),
        ]);
        bad.push(pt(
            "rtsig",
            json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
            json!({"overflows": 8.0, "lost": 3.0}),
        ));
        let bad = rec("table1", bad);
        holds_and_fails(
            CLAIMS,
            &[
                "overflow-past-knee",
                "overflow-every-dequeue",
                "per-fd-no-overflow",
                "overflow-tailspin",
                "recovery-loses-nothing",
            ],
            &good,
            &bad,
        );
        // The held connections' connects and closes overflow a 64-entry queue at
        // every rate: the floor run says how much, and only the excess counts.
        let mut floored = t1(&[
            ("rtsig", 1000.0, 8.0, 100.0),
            ("rtsig", 5000.0, 8.0, 100.0),
            ("rtsig", 9000.0, 120.0, 40.0),
        ]);
        floored.push(pt(
            "rtsig",
            json!({"idle": 252, "rate": 20.0, "part": "floor"}),
            json!({"overflows": 7.0, "reply_pct_of_offered": 100.0, "reply_rate": 20.0}),
        ));
        let floored = rec("table1", floored);
        check(CLAIMS, "overflow-past-knee", &floored, Outcome::Holds);
        check(CLAIMS, "overflow-tailspin", &floored, Outcome::Holds);
        let mut unfloored = floored.clone();
        unfloored.points.retain(|p| p.str("part") != Some("floor"));
        check(CLAIMS, "overflow-past-knee", &unfloored, Outcome::Partly);
        // A sweep that never takes rtsig past its knee (every run answered) says
        // nothing of overload, however many overflows its bursts caused.
        let unloaded = rec(
            "table1",
            t1(&[
                ("rtsig", 1000.0, 0.0, 100.0),
                ("rtsig", 9000.0, 300.0, 99.0),
                ("rtsig-perfd", 1000.0, 0.0, 100.0),
                ("rtsig-perfd", 9000.0, 0.0, 100.0),
            ]),
        );
        for id in [
            "overflow-past-knee",
            "overflow-every-dequeue",
            "per-fd-no-overflow",
            "overflow-tailspin",
        ] {
            check(CLAIMS, id, &unloaded, Outcome::NotReached);
        }
        // Without a CPU budget the reason says so first.
        let mut no_budget = unloaded.clone();
        no_budget.params = json!({"no_cpu_budget": "no CPU budget here: not root"});
        let v = CLAIMS[0].judge(&no_budget);
        assert_eq!(v.outcome, Outcome::NotReached);
        assert!(
            v.why.starts_with("no CPU budget here: not root;"),
            "{}",
            v.why
        );
        // Nor does a run that fell behind because the generator could not
        // offer the rate: the good record's overload, generator-bound.
        let mut bound = good.clone();
        for p in bound.points.iter_mut() {
            p.metrics.insert("generator_limited".into(), 1.0);
        }
        for id in [
            "overflow-past-knee",
            "overflow-every-dequeue",
            "per-fd-no-overflow",
            "overflow-tailspin",
        ] {
            check(CLAIMS, id, &bound, Outcome::NotReached);
        }
    }
}
