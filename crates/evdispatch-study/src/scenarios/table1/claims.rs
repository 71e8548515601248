//! The claims scenario `table1` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).


use crate::claims::*;
use crate::report::figure::fmt_num;
use crate::results::{Point, ScenarioRecord};

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "overflow-past-knee", seed: "004", section: "Table 1", text: "no signal-queue overflow below the knee; past it the RT-signal server overflows and lives on its fallback", verdict: v_overflow_past_knee },
    Claim { id: "per-fd-no-overflow", seed: "004", section: "§3.4; 002 slides 17–18", text: "signal-per-fd (coalescing; our rtsig-batch) avoids signal-queue overflow", verdict: v_per_fd_no_overflow },
    Claim { id: "overflow-tailspin", seed: "004", section: "§3.3", text: "recovering from overflow with a high-overhead mechanism can send an overloaded server into a tailspin", verdict: v_tailspin },
    Claim { id: "recovery-loses-nothing", seed: "004", section: "§3.3 (notification leak); 000 §2", text: "with a flush-and-poll fallback on SIGIO, an RT-signal server loses no event (no hung server)", verdict: v_no_event_lost },
];

/// The web runs of mechanism `m` (scenario 6), floor runs aside.
fn web_points<'a>(rec: &'a ScenarioRecord, m: &str) -> Vec<&'a Point> {
    rec.select(&[s(m)])
        .filter(|p| p.str("bench").is_none() && p.str("part") != Some("floor"))
        .collect()
}

/// The overflows that opening and closing `idle` held connections cost `m`
/// by themselves (its floor run: the same connections, a token rate):
/// with the queue at 64 entries, the generator's burst of connects at the
/// start and of closes at the end overflow it whatever the rate. 0 if there
/// is no floor run.
fn overflow_floor(rec: &ScenarioRecord, m: &str, idle: f64) -> f64 {
    rec.select(&[s(m), ("part", j("floor")), ("idle", j(idle))])
        .find_map(|p| p.metric("overflows"))
        .unwrap_or(0.0)
}

/// Overflows of a run beyond what its floor explains (1.5 × the floor + 2).
fn overflows_beyond_floor(rec: &ScenarioRecord, m: &str, p: &Point) -> f64 {
    let floor = overflow_floor(rec, m, p.num("idle").unwrap_or(0.0));
    (p.metric("overflows").unwrap_or(0.0) - (1.5 * floor + 2.0)).max(0.0)
}

fn v_overflow_past_knee(rec: &ScenarioRecord) -> Verdict {
    let pts = web_points(rec, "rtsig");
    let mut idles: Vec<f64> = pts.iter().filter_map(|p| p.num("idle")).collect();
    idles.sort_by(f64::total_cmp);
    idles.dedup();
    let mut nums: Vec<(String, f64)> = Vec::new();
    let (mut quiet_below, mut over_above) = (true, false);
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
        let (Some(lo), Some(hi)) = (xy.first(), xy.last()) else {
            continue;
        };
        if xy.len() < 2 {
            continue;
        }
        measured = true;
        let floor = overflow_floor(rec, "rtsig", i);
        quiet_below &= overflows_beyond_floor(rec, "rtsig", lo) == 0.0;
        over_above |= overflows_beyond_floor(rec, "rtsig", hi) > 0.0;
        let n = fmt_num(i);
        nums.push((format!("{n} idle: floor (open/close only)"), floor));
        nums.push((
            format!(
                "{n} idle: overflows at {}/s",
                fmt_num(lo.num("rate").unwrap_or(0.0))
            ),
            lo.metric("overflows").unwrap_or(0.0),
        ));
        nums.push((
            format!(
                "{n} idle: overflows at {}/s",
                fmt_num(hi.num("rate").unwrap_or(0.0))
            ),
            hi.metric("overflows").unwrap_or(0.0),
        ));
    }
    if !measured {
        return missing("rtsig overflow counts at two rates");
    }
    Verdict {
        outcome: both(quiet_below, over_above),
        numbers: nums.into_iter().map(|(k, v)| (k, fmt_num(v))).collect(),
        why: format!("at the lowest rate no overflow beyond the floor (the connects and closes of the held connections alone; beyond = more than 1.5 × floor + 2) at every idle count: {quiet_below}; beyond the floor at the highest rate at some idle count: {over_above}"),
    }
}

fn v_per_fd_no_overflow(rec: &ScenarioRecord) -> Verdict {
    let total = |m: &str| -> Option<f64> {
        let v: Vec<f64> = web_points(rec, m)
            .iter()
            .filter(|p| p.metric("overflows").is_some())
            .map(|p| overflows_beyond_floor(rec, m, p))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let (Some(r), Some(b)) = (total("rtsig"), total("rtsig-batch")) else {
        return missing("overflow counts for rtsig and rtsig-batch");
    };
    if r == 0.0 {
        return nm("rtsig never overflowed beyond its floor (the held connections' connects and closes) at these rates, so the load did not stress the queue");
    }
    verdict(if b == 0.0 { Outcome::Holds } else if b < 0.5 * r { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig overflows beyond the floor", r), ("rtsig-batch overflows beyond the floor", b)],
        "signal-per-fd was a kernel patch that queued at most one signal per descriptor, so the queue could not overflow; mainline Linux never took it, and rtsig-batch merges per descriptor only after dequeuing (many per read). Holds if rtsig-batch never overflowed, partly if it overflowed less than half as often as rtsig, fails otherwise: dequeue-side batching alone does not bound the queue.")
}

fn v_tailspin(rec: &ScenarioRecord) -> Verdict {
    let pts: Vec<&Point> = web_points(rec, "rtsig")
        .into_iter()
        .filter(|p| overflows_beyond_floor(rec, "rtsig", p) > 0.0)
        .collect();
    if pts.is_empty() {
        return nm("rtsig never overflowed beyond its floor (the held connections' connects and closes) at these rates");
    }
    let share = |p: &Point| p.metric("reply_pct_of_offered").unwrap_or(100.0).min(100.0);
    let worst = pts.iter().map(|p| share(p)).fold(100.0, f64::min);
    // Compare with the hybrid at the same configurations.
    let hybrid: Vec<f64> = pts
        .iter()
        .filter_map(|p| {
            rec.select(&[
                s("hybrid"),
                ("idle", j(p.num("idle")?)),
                ("rate", j(p.num("rate")?)),
            ])
            .filter(|q| q.str("part") != Some("floor"))
            .find_map(|q| q.metric("reply_pct_of_offered"))
        })
        .collect();
    let hworst = hybrid.iter().copied().fold(100.0, f64::min);
    let mut nums = vec![
        ("runs with overflows", pts.len() as f64),
        ("rtsig worst % of offered answered", worst),
    ];
    if !hybrid.is_empty() {
        nums.push(("hybrid worst % there", hworst));
    }
    verdict(
        band(worst < 75.0, worst < 95.0),
        nums,
        format!("in the runs where rtsig overflowed beyond its floor it answered as little as {}% of the offered rate (holds — recovery by polling sent it into a tailspin — below 75%; partly below 95%; fails if it kept up while overflowing)", fmt_num(worst)),
    )
}

fn v_no_event_lost(rec: &ScenarioRecord) -> Verdict {
    let cells: Vec<&Point> = rec.select(&[("bench", j("overflow"))]).collect();
    if cells.is_empty() {
        return missing("bench overflow");
    }
    let lost: f64 = cells.iter().filter_map(|p| p.metric("lost")).sum();
    let overflows: f64 = cells.iter().filter_map(|p| p.metric("overflows")).sum();
    verdict(
        if lost == 0.0 && overflows > 0.0 { Outcome::Holds } else if lost == 0.0 { Outcome::Partly } else { Outcome::Fails },
        vec![("cells", cells.len() as f64), ("overflows provoked", overflows), ("events lost", lost)],
        "without a fallback an overflowed queue loses readiness for good and the server hangs (a \"notification leak\"); with the flush-and-poll recovery every written socket must still be reported. Holds if overflows were provoked and no event was lost; fails if any was.",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;
    
    use serde_json::json;

fn t1(rows: &[(&str, f64, f64, f64)]) -> Vec<Pt> {
    rows.iter()
        .map(|(m, r, ovf, pct)| {
            pt(
                m,
                json!({"idle": 252, "rate": r}),
                json!({"overflows": ovf, "reply_pct_of_offered": pct}),
            )
        })
        .collect()
}

#[test]
fn table1_claims() {
    let mut good = t1(&[
        ("rtsig", 1000.0, 0.0, 100.0),
        ("rtsig", 9000.0, 500.0, 50.0),
        ("rtsig-batch", 1000.0, 0.0, 100.0),
        ("rtsig-batch", 9000.0, 0.0, 100.0),
        ("hybrid", 9000.0, 1.0, 100.0),
    ]);
    good.push(pt(
        "rtsig",
        json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
        json!({"overflows": 8.0, "lost": 0.0}),
    ));
    let good = rec("table1", good);
    let mut bad = t1(&[
        ("rtsig", 1000.0, 5.0, 100.0),
        ("rtsig", 9000.0, 0.0, 100.0),
        ("rtsig", 5000.0, 10.0, 100.0),
        ("rtsig-batch", 1000.0, 50.0, 100.0),
    ]);
    bad.push(pt(
        "rtsig",
        json!({"bench": "overflow", "fds": 1000, "queue_limit": 64}),
        json!({"overflows": 8.0, "lost": 3.0}),
    ));
    let bad = rec("table1", bad);
    holds_and_fails(CLAIMS, &[
        "overflow-past-knee",
        "per-fd-no-overflow",
        "overflow-tailspin",
        "recovery-loses-nothing",
    ], &good, &bad);
    // The held connections' connects and closes overflow a 64-entry queue at
    // every rate: the floor run says how much, and only the excess counts.
    let mut floored = t1(&[
        ("rtsig", 1000.0, 8.0, 100.0),
        ("rtsig", 9000.0, 120.0, 60.0),
    ]);
    floored.push(pt(
        "rtsig",
        json!({"idle": 252, "rate": 20.0, "part": "floor"}),
        json!({"overflows": 7.0, "reply_pct_of_offered": 100.0}),
    ));
    let floored = rec("table1", floored);
    check(CLAIMS, "overflow-past-knee", &floored, Outcome::Holds);
    check(CLAIMS, "overflow-tailspin", &floored, Outcome::Holds);
    let mut unfloored = floored.clone();
    unfloored.points.retain(|p| p.str("part") != Some("floor"));
    check(CLAIMS, "overflow-past-knee", &unfloored, Outcome::Partly);
}
}
