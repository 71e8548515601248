//! The seeds' claims, each with the seed and section it comes from and a
//! function that computes its verdict from this run's data. No verdict is
//! written by hand: every one is `holds`, `fails`, `partly` or `not
//! measured` (with why) according to thresholds stated in its function, and
//! comes with the numbers behind it.

use serde::Serialize;
use serde_json::{json, Value};

use crate::report::figure::fmt_num;
use crate::results::{Point, ScenarioRecord};

/// A verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The data agree with the claim.
    Holds,
    /// Part of the claim holds.
    Partly,
    /// The data contradict the claim.
    Fails,
    /// This run has no data to decide.
    NotMeasured,
}

impl Outcome {
    /// The word used in the report.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Partly => "partly",
            Outcome::Fails => "fails",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// A verdict with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The outcome.
    pub outcome: Outcome,
    /// The numbers it was decided on, as (name, value) pairs.
    pub numbers: Vec<(String, String)>,
    /// How the numbers lead to the outcome (or why nothing was measured).
    pub why: String,
}

fn nm(why: impl Into<String>) -> Verdict {
    Verdict {
        outcome: Outcome::NotMeasured,
        numbers: vec![],
        why: why.into(),
    }
}

fn verdict(outcome: Outcome, numbers: Vec<(&str, f64)>, why: impl Into<String>) -> Verdict {
    Verdict {
        outcome,
        numbers: numbers
            .into_iter()
            .map(|(k, v)| (k.to_string(), fmt_num(v)))
            .collect(),
        why: why.into(),
    }
}

/// Two sub-claims: both → holds, one → partly, none → fails.
fn both(a: bool, b: bool) -> Outcome {
    match (a, b) {
        (true, true) => Outcome::Holds,
        (false, false) => Outcome::Fails,
        _ => Outcome::Partly,
    }
}

/// Three bands on a ratio: `holds` where `good`, `partly` where `fair`.
fn band(good: bool, fair: bool) -> Outcome {
    if good {
        Outcome::Holds
    } else if fair {
        Outcome::Partly
    } else {
        Outcome::Fails
    }
}

/// One claim of the seeds.
pub struct Claim {
    /// Short id.
    pub id: &'static str,
    /// Seed file number (`000`…`004`).
    pub seed: &'static str,
    /// Section, figure or table of the seed.
    pub section: &'static str,
    /// The claim, in our words.
    pub text: &'static str,
    /// The scenario whose data decide it.
    pub scenario: &'static str,
    /// The verdict from that scenario's record.
    pub verdict: fn(&ScenarioRecord) -> Verdict,
}

fn j<T: Serialize>(v: T) -> Value {
    json!(v)
}

fn s(series: &str) -> (&'static str, Value) {
    ("series", j(series))
}

/// `metric` at the smallest and largest `x` among points matching `f`.
fn ends(
    rec: &ScenarioRecord,
    f: &[(&str, Value)],
    x: &str,
    metric: &str,
) -> Option<((f64, f64), (f64, f64))> {
    let xy = rec.xy(f, x, metric);
    if xy.len() < 2 || xy.first()?.0 == xy.last()?.0 {
        return None;
    }
    Some((*xy.first()?, *xy.last()?))
}

/// Largest value of `metric` among points matching `f`.
fn peak(rec: &ScenarioRecord, f: &[(&str, Value)], metric: &str) -> Option<f64> {
    rec.select(f)
        .filter_map(|p| p.metric(metric))
        .reduce(f64::max)
}

fn largest(rec: &ScenarioRecord, f: &[(&str, Value)], key: &str) -> Option<f64> {
    rec.select(f).filter_map(|p| p.num(key)).reduce(f64::max)
}

fn smallest(rec: &ScenarioRecord, f: &[(&str, Value)], key: &str) -> Option<f64> {
    rec.select(f).filter_map(|p| p.num(key)).reduce(f64::min)
}

fn missing(what: &str) -> Verdict {
    nm(format!("no data for {what} in this run"))
}

// ---- scenario 1: poller ----

fn poller_a1() -> Vec<(&'static str, Value)> {
    vec![
        ("bench", j("poller")),
        ("active", j(1)),
        ("placement", j("rotating")),
    ]
}

fn growth(rec: &ScenarioRecord, mech: &str) -> Option<(f64, f64, f64, f64)> {
    let mut f = poller_a1();
    f.push(s(mech));
    let ((n0, t0), (n1, t1)) = ends(rec, &f, "fds", "median_us")?;
    (t0 > 0.0).then_some((n0, n1, t0, t1))
}

fn v_poll_grows(rec: &ScenarioRecord) -> Verdict {
    let Some((n0, n1, t0, t1)) = growth(rec, "poll") else {
        return missing("poll at two descriptor counts");
    };
    let g = t1 / t0;
    verdict(
        band(g >= 10.0, g >= 2.0),
        vec![("N from", n0), ("N to", n1), ("poll µs at first N", t0), ("poll µs at last N", t1), ("growth ×", g)],
        format!("poll's median grew ×{} for ×{} descriptors (holds from ×10, partly from ×2; Kegel saw ×300–493 from 100 to 10,000)", fmt_num(g), fmt_num(n1 / n0)),
    )
}

fn v_epoll_flat(rec: &ScenarioRecord) -> Verdict {
    let Some((n0, n1, t0, t1)) = growth(rec, "epoll") else {
        return missing("epoll at two descriptor counts");
    };
    let g = t1 / t0;
    verdict(
        band(g <= 1.5, g <= 3.0),
        vec![("N from", n0), ("N to", n1), ("epoll µs at first N", t0), ("epoll µs at last N", t1), ("growth ×", g)],
        format!("epoll's median changed ×{} for ×{} descriptors (holds up to ×1.5, partly up to ×3; Linux 2.2's /dev/poll grew ×224, Solaris' ×1.5)", fmt_num(g), fmt_num(n1 / n0)),
    )
}

fn v_active_only(rec: &ScenarioRecord) -> Verdict {
    let Some((_, _, t0, t1)) = growth(rec, "epoll") else {
        return missing("epoll at two descriptor counts");
    };
    let Some(n) = largest(rec, &[("bench", j("poller")), s("epoll")], "fds") else {
        return missing("epoll");
    };
    let f = [
        ("bench", j("poller")),
        s("epoll"),
        ("fds", j(n)),
        ("placement", j("rotating")),
    ];
    let Some(((a0, u0), (a1, u1))) = ends(rec, &f, "active", "median_us") else {
        return missing("epoll at two active counts (the profile runs A = 1 only)");
    };
    let flat_n = t1 / t0 <= 1.5;
    let grows_a = u1 / u0 >= 0.2 * (a1 / a0);
    verdict(
        both(flat_n, grows_a),
        vec![("growth with N ×", t1 / t0), ("A from", a0), ("A to", a1), ("growth with A ×", u1 / u0)],
        format!("flat in N: {} (×{} ≤ 1.5); follows A: {} (×{} for ×{} active, needs ≥ 0.2 of proportional)", flat_n, fmt_num(t1 / t0), grows_a, fmt_num(u1 / u0), fmt_num(a1 / a0)),
    )
}

fn v_ring_minor(rec: &ScenarioRecord) -> Verdict {
    let Some(n) = largest(rec, &[("bench", j("poller")), s("poll")], "fds") else {
        return missing("poll");
    };
    let at = |m: &str| {
        let mut f = poller_a1();
        f.extend([s(m), ("fds", j(n))]);
        rec.select(&f).find_map(|p| p.metric("median_us"))
    };
    let (Some(p), Some(e), Some(u)) = (at("poll"), at("epoll"), at("uring")) else {
        return missing("poll, epoll and uring at the same N");
    };
    let interest = p / e;
    let ring = e / u;
    verdict(
        band(interest > 2.0 * ring, interest > ring),
        vec![("N", n), ("poll/epoll ×", interest), ("epoll/uring ×", ring)],
        format!("keeping the interest set in the kernel gains ×{} (poll→epoll), the shared result ring ×{} more (epoll→uring); holds if the first is over twice the second", fmt_num(interest), fmt_num(ring)),
    )
}

fn v_fd_alloc(rec: &ScenarioRecord) -> Verdict {
    let pts: Vec<&Point> = rec.select(&[("bench", j("fdalloc"))]).collect();
    let Some(first) = pts.first() else {
        return missing("bench fdalloc");
    };
    let Some(x) = ["open_fds", "fds", "n", "open"]
        .into_iter()
        .find(|k| first.num(k).is_some())
    else {
        return nm("fdalloc cells name no descriptor count (open_fds/fds/n)");
    };
    let metric = first
        .metrics
        .keys()
        .find(|k| k.contains("open") && k.contains("median"))
        .or_else(|| first.metrics.keys().find(|k| k.contains("median")))
        .or_else(|| first.metrics.keys().next())
        .cloned();
    let Some(metric) = metric else {
        return nm("fdalloc cells carry no *_us metric");
    };
    let Some(((n0, t0), (n1, t1))) = ends(rec, &[("bench", j("fdalloc"))], x, &metric) else {
        return missing("fdalloc at two descriptor counts");
    };
    let g = if t0 > 0.0 { t1 / t0 } else { f64::INFINITY };
    verdict(
        band(g <= 2.0, g <= 5.0),
        vec![("open fds from", n0), ("open fds to", n1), ("µs at first", t0), ("µs at last", t1), ("growth ×", g)],
        format!("{metric} grew ×{} for ×{} open descriptors; holds (allocation flat, as with two bitmaps) up to ×2, partly up to ×5", fmt_num(g), fmt_num(n1 / n0)),
    )
}

// ---- scenario 2: poll vs epoll ----

fn v_devpoll_keeps_up(rec: &ScenarioRecord) -> Verdict {
    let Some(imax) = largest(rec, &[s("poll")], "inactive") else {
        return missing("poll");
    };
    let Some(imin) = smallest(rec, &[s("poll")], "inactive") else {
        return missing("poll");
    };
    let best = |m: &str, i: f64| peak(rec, &[s(m), ("inactive", j(i))], "reply_rate");
    let (Some(pe), Some(pp), Some(pp0)) =
        (best("epoll", imax), best("poll", imax), best("poll", imin))
    else {
        return missing("poll and epoll at the smallest and largest inactive counts");
    };
    if imax < 501.0 {
        return nm(format!(
            "the largest inactive count run was {imax}; the claim is about ≥ 501"
        ));
    }
    let a = pe >= 1.1 * pp;
    let b = pp <= 0.9 * pp0;
    verdict(
        both(a, b),
        vec![("inactive", imax), ("epoll best replies/s", pe), ("poll best replies/s", pp), ("poll best with fewest inactive", pp0)],
        format!("epoll ≥ 1.1 × poll at {imax} inactive: {a}; poll's best falls ≥ 10% from {imin} to {imax} inactive: {b}"),
    )
}

fn v_devpoll_no_errors(rec: &ScenarioRecord) -> Verdict {
    let low: Vec<f64> = rec
        .select(&[s("epoll")])
        .filter(|p| p.num("inactive").map(|i| i < 501.0).unwrap_or(false))
        .filter_map(|p| p.metric("error_pct"))
        .collect();
    let Some(imax) = largest(rec, &[s("poll")], "inactive") else {
        return missing("poll");
    };
    let (Some(pe), Some(pp)) = (
        peak(rec, &[s("epoll"), ("inactive", j(imax))], "error_pct"),
        peak(rec, &[s("poll"), ("inactive", j(imax))], "error_pct"),
    ) else {
        return missing("error percentages for poll and epoll");
    };
    if low.is_empty() {
        return missing("epoll below 501 inactive");
    }
    let worst_low = low.iter().copied().fold(0.0, f64::max);
    let a = worst_low < 0.1;
    let b = pp > pe;
    verdict(
        both(a, b),
        vec![("epoll worst error % below 501 inactive", worst_low), ("inactive", imax), ("poll worst error %", pp), ("epoll worst error %", pe)],
        format!("epoll error-free below 501 inactive (< 0.1%): {a}; poll has more errors than epoll at {imax} inactive: {b}"),
    )
}

// ---- scenario 3: RT-signal latency ----

fn v_rtsig_faster_low(rec: &ScenarioRecord) -> Verdict {
    let Some(r0) = smallest(rec, &[s("rtsig")], "rate") else {
        return missing("rtsig");
    };
    let at = |m: &str| {
        rec.select(&[s(m), ("rate", j(r0))])
            .find_map(|p| p.metric("p50_us"))
    };
    let (Some(r), Some(e)) = (at("rtsig"), at("epoll")) else {
        return missing("rtsig and epoll at the lowest rate");
    };
    verdict(
        if r < 0.95 * e { Outcome::Holds } else if r <= 1.05 * e { Outcome::Partly } else { Outcome::Fails },
        vec![("rate", r0), ("rtsig median µs", r), ("epoll median µs", e), ("epoll − rtsig µs", e - r)],
        format!("at {}/s rtsig's median is {} µs, epoll's {} µs (holds if rtsig is > 5% faster, partly within ±5%; phhttpd was 1–3 ms faster)", fmt_num(r0), fmt_num(r), fmt_num(e)),
    )
}

fn v_rtsig_jumps(rec: &ScenarioRecord) -> Verdict {
    let r = rec.xy(&[s("rtsig")], "rate", "p50_us");
    let e = rec.xy(&[s("epoll")], "rate", "p50_us");
    if r.len() < 2 || e.len() < 2 {
        return missing("rtsig and epoll at two rates or more");
    }
    let rmin = r.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let emin = e.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let jump = r.iter().find(|(_, y)| *y >= 10.0 * rmin);
    let rmax = r.iter().map(|p| p.1 / rmin).fold(0.0, f64::max);
    match jump {
        None => verdict(Outcome::Fails, vec![("rtsig worst/best median ×", rmax)], format!("rtsig's median stayed within ×{} of its best over the whole sweep (a jump is ≥ ×10)", fmt_num(rmax))),
        Some((rate, y)) => {
            let e_there = e.iter().find(|(x, _)| x == rate).map(|p| p.1 / emin);
            match e_there {
                None => missing("epoll at the rate where rtsig jumped"),
                Some(er) => verdict(
                    if er <= 3.0 { Outcome::Holds } else { Outcome::Partly },
                    vec![("rate", *rate), ("rtsig median µs", *y), ("rtsig ×best", y / rmin), ("epoll ×best", er)],
                    format!("rtsig's median jumped ×{} at {}/s while epoll's was ×{} its best (holds if epoll stays within ×3)", fmt_num(y / rmin), fmt_num(*rate), fmt_num(er)),
                ),
            }
        }
    }
}

// ---- scenario 4: overhead ----

/// CPU (or another metric) of `mech` at the fewest and most connections,
/// at the lowest rate.
fn conn_ends(rec: &ScenarioRecord, mech: &str, metric: &str) -> Option<((f64, f64), (f64, f64))> {
    let r = smallest(rec, &[s(mech)], "rate")?;
    ends(rec, &[s(mech), ("rate", j(r))], "persistent", metric)
}

fn cpu_flat(rec: &ScenarioRecord) -> Option<(f64, f64, f64, f64, bool, bool)> {
    let ((c0, u0), (c1, u1)) = conn_ends(rec, "rtsig", "server_cpu_pct")?;
    let flat = u1 <= 1.3 * u0 || u1 - u0 <= 2.0;
    let grows = u1 > 1.5 * u0 && u1 - u0 > 2.0;
    Some((c0, c1, u0, u1, flat, grows))
}

fn v_rtsig_cpu_flat(rec: &ScenarioRecord) -> Verdict {
    let Some((c0, c1, u0, u1, flat, grows)) = cpu_flat(rec) else {
        return missing("rtsig at two connection counts");
    };
    verdict(
        if flat { Outcome::Holds } else if grows { Outcome::Fails } else { Outcome::Partly },
        vec![("connections from", c0), ("connections to", c1), ("rtsig CPU % at first", u0), ("rtsig CPU % at last", u1)],
        format!("rtsig's CPU went from {}% to {}% (holds within ×1.3 or 2 points; fails past ×1.5 and 2 points)", fmt_num(u0), fmt_num(u1)),
    )
}

fn v_inactive_hurt_rtsig(rec: &ScenarioRecord) -> Verdict {
    let Some((c0, c1, u0, u1, flat, grows)) = cpu_flat(rec) else {
        return missing("rtsig at two connection counts");
    };
    verdict(
        if grows { Outcome::Holds } else if flat { Outcome::Fails } else { Outcome::Partly },
        vec![("connections from", c0), ("connections to", c1), ("rtsig CPU % at first", u0), ("rtsig CPU % at last", u1)],
        format!("rtsig's CPU went from {}% to {}% as connections grew (holds past ×1.5 and 2 points; fails within ×1.3 or 2 points)", fmt_num(u0), fmt_num(u1)),
    )
}

fn v_poll_cpu_grows(rec: &ScenarioRecord) -> Verdict {
    let Some(((c0, u0), (c1, u1))) = conn_ends(rec, "poll", "server_cpu_pct") else {
        return missing("poll at two connection counts");
    };
    let g = if u0 > 0.0 { u1 / u0 } else { f64::INFINITY };
    verdict(
        band(g >= 2.0 && u1 - u0 >= 5.0, g >= 1.3),
        vec![("connections from", c0), ("connections to", c1), ("poll CPU % at first", u0), ("poll CPU % at last", u1)],
        format!("poll's CPU went ×{} from {} to {} connections (holds from ×2 and 5 points, partly from ×1.3)", fmt_num(g), fmt_num(c0), fmt_num(c1)),
    )
}

fn v_rtsig_response_flat(rec: &ScenarioRecord) -> Verdict {
    let Some(((c0, t0), (c1, t1))) = conn_ends(rec, "rtsig", "p50_us") else {
        return missing("rtsig at two connection counts");
    };
    let g = t1 / t0;
    verdict(
        band(g <= 1.5, g <= 3.0),
        vec![("connections from", c0), ("connections to", c1), ("rtsig median µs at first", t0), ("rtsig median µs at last", t1)],
        format!("rtsig's median response time changed ×{} (holds up to ×1.5, partly up to ×3; the seed's stayed ≈0.3 ms)", fmt_num(g)),
    )
}

// ---- scenario 5: throughput ----

fn smallest_idle(rec: &ScenarioRecord) -> Vec<(&'static str, Value)> {
    let i = smallest(rec, &[], "idle").unwrap_or(252.0);
    let b = smallest(rec, &[("idle", j(i))], "reply_bytes").unwrap_or(1.0);
    vec![("idle", j(i)), ("reply_bytes", j(b))]
}

fn best_of(rec: &ScenarioRecord, series: &str) -> Option<f64> {
    let mut f = smallest_idle(rec);
    f.push(s(series));
    peak(rec, &f, "reply_rate")
}

fn v_multi_accept(rec: &ScenarioRecord) -> Verdict {
    let (Some(all), Some(one)) = (best_of(rec, "select"), best_of(rec, "select (accept one)"))
    else {
        return missing("select with one accept and with multi-accept");
    };
    let g = all / one;
    verdict(band(g >= 1.2, g >= 1.05), vec![("multi-accept best replies/s", all), ("one-accept best replies/s", one), ("ratio", g)],
        format!("multi-accept select's best throughput is ×{} single-accept's (holds from ×1.2, partly from ×1.05)", fmt_num(g)))
}

fn v_multi_accept_like_rtsig(rec: &ScenarioRecord) -> Verdict {
    let (Some(sel), Some(rt)) = (best_of(rec, "select"), best_of(rec, "rtsig")) else {
        return missing("multi-accept select and rtsig");
    };
    let g = sel / rt;
    verdict(band(g >= 0.9, g >= 0.75), vec![("multi-accept select best", sel), ("rtsig best", rt), ("ratio", g)],
        format!("multi-accept select reached ×{} of rtsig's best throughput (holds from 0.9, partly from 0.75)", fmt_num(g)))
}

fn v_devpoll_collapse(rec: &ScenarioRecord) -> Verdict {
    let mut f = smallest_idle(rec);
    f.push(s("epoll"));
    let xy = rec.xy(&f, "rate", "reply_rate");
    let Some(&(top_rate, at_top)) = xy.last() else {
        return missing("epoll");
    };
    let best = xy.iter().map(|p| p.1).fold(0.0, f64::max);
    if best >= 0.9 * top_rate {
        return nm(format!(
            "the sweep never overloaded epoll: {} replies/s at the top offered rate {}/s",
            fmt_num(at_top),
            fmt_num(top_rate)
        ));
    }
    let g = at_top / best;
    verdict(band(g <= 0.5, g <= 0.8), vec![("epoll peak replies/s", best), ("at the top rate", at_top), ("ratio", g)],
        format!("past its peak epoll kept ×{} of its best throughput (the claim holds if it falls to ≤ 0.5, partly ≤ 0.8)", fmt_num(g)))
}

fn v_rtsig_cpu_lower(rec: &ScenarioRecord) -> Verdict {
    let Some(i) = largest(rec, &[s("rtsig")], "idle") else {
        return missing("rtsig");
    };
    let Some(r) = smallest(rec, &[s("rtsig"), ("idle", j(i))], "rate") else {
        return missing("rtsig");
    };
    let at = |m: &str| {
        rec.select(&[s(m), ("idle", j(i)), ("rate", j(r))])
            .find_map(|p| p.metric("server_cpu_pct"))
    };
    let (Some(rt), Some(p)) = (at("rtsig"), at("poll")) else {
        return missing("rtsig and poll at the same load");
    };
    let g = p / rt.max(0.01);
    verdict(
        band(g >= 2.0, g >= 1.2),
        vec![
            ("idle", i),
            ("rate", r),
            ("poll CPU %", p),
            ("rtsig CPU %", rt),
            ("ratio", g),
        ],
        format!(
            "with {} idle at {}/s poll used ×{} rtsig's CPU (holds from ×2, partly from ×1.2)",
            fmt_num(i),
            fmt_num(r),
            fmt_num(g)
        ),
    )
}

fn v_per_fd_higher_load(rec: &ScenarioRecord) -> Verdict {
    let (Some(b), Some(r)) = (best_of(rec, "rtsig-batch"), best_of(rec, "rtsig")) else {
        return missing("rtsig and rtsig-batch");
    };
    let g = b / r;
    verdict(if g >= 1.02 { Outcome::Holds } else if g >= 0.98 { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig-batch best", b), ("rtsig best", r), ("ratio", g)],
        format!("rtsig-batch (coalesced per fd) peaked at ×{} rtsig's throughput (holds from ×1.02, partly within ±2%)", fmt_num(g)))
}

// ---- scenario 6: Table 1 ----

fn v_overflow_past_knee(rec: &ScenarioRecord) -> Verdict {
    let i = smallest(rec, &[s("rtsig")], "idle").unwrap_or(252.0);
    let xy = rec.xy(&[s("rtsig"), ("idle", j(i))], "rate", "overflows");
    if xy.len() < 2 {
        return missing("rtsig overflow counts at two rates");
    }
    let (lo, hi) = (xy[0], xy[xy.len() - 1]);
    let a = lo.1 == 0.0;
    let b = hi.1 > 0.0;
    verdict(
        both(a, b),
        vec![
            ("lowest rate", lo.0),
            ("overflows there", lo.1),
            ("highest rate", hi.0),
            ("overflows there", hi.1),
        ],
        format!("no overflow at the lowest rate: {a}; overflows at the highest: {b}"),
    )
}

fn v_per_fd_no_overflow(rec: &ScenarioRecord) -> Verdict {
    let total = |m: &str| -> Option<f64> {
        let v: Vec<f64> = rec
            .select(&[s(m)])
            .filter_map(|p| p.metric("overflows"))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum())
    };
    let (Some(r), Some(b)) = (total("rtsig"), total("rtsig-batch")) else {
        return missing("overflow counts for rtsig and rtsig-batch");
    };
    if r == 0.0 {
        return nm("rtsig never overflowed at these rates, so the queue was not stressed");
    }
    verdict(if b == 0.0 { Outcome::Holds } else if b < r { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig overflows", r), ("rtsig-batch overflows", b)],
        "signal-per-fd coalescing in the kernel made overflow impossible; ours coalesces at dequeue, so the verdict says whether batching alone keeps the queue short enough")
}

// ---- scenario 7: hybrid ----

fn v_hybrid_best_of_both(rec: &ScenarioRecord) -> Verdict {
    let Some(r0) = smallest(rec, &[s("hybrid")], "rate") else {
        return missing("hybrid");
    };
    let p50 = |m: &str| {
        rec.select(&[s(m), ("rate", j(r0))])
            .find_map(|p| p.metric("p50_us"))
    };
    let (Some(h), Some(r)) = (p50("hybrid"), p50("rtsig")) else {
        return missing("hybrid and rtsig at the lowest rate");
    };
    let (Some(hb), Some(eb)) = (
        peak(rec, &[s("hybrid")], "reply_rate"),
        peak(rec, &[s("epoll")], "reply_rate"),
    ) else {
        return missing("hybrid and epoll throughput");
    };
    let a = h <= 1.15 * r;
    let b = hb >= 0.95 * eb;
    verdict(
        both(a, b),
        vec![
            ("hybrid median µs (light)", h),
            ("rtsig median µs (light)", r),
            ("hybrid best replies/s", hb),
            ("epoll best replies/s", eb),
        ],
        format!(
            "light-load latency within ×1.15 of rtsig: {a}; peak throughput ≥ 0.95 × epoll's: {b}"
        ),
    )
}

fn v_hybrid_switches_back(rec: &ScenarioRecord) -> Verdict {
    let pct = rec.xy(&[s("hybrid")], "rate", "poll_mode_pct");
    let sw = rec.xy(&[s("hybrid")], "rate", "mode_switches");
    if pct.is_empty() || sw.is_empty() {
        return missing("hybrid mode statistics");
    }
    let most = sw.iter().map(|p| p.1).fold(0.0, f64::max);
    if most == 0.0 {
        return nm("the load never drove the hybrid out of signal mode");
    }
    let a = pct[0].1 <= 10.0;
    let b = most >= 2.0;
    verdict(both(a, b), vec![("epoll-mode % at the lowest rate", pct[0].1), ("most switches in a run", most)],
        format!("in signal mode ≥ 90% of the time at light load: {a}; switched to epoll and back (≥ 2 switches) under load: {b}"))
}

// ---- scenario 8: today ----

fn v_no_herd(rec: &ScenarioRecord) -> Verdict {
    let w = |mode: &str| {
        rec.select(&[("part", j("herd")), ("listener_mode", j(mode))])
            .find_map(|p| p.metric("wakeups_per_accept"))
    };
    let Some(plain) = w("shared (plain)") else {
        return missing("wake-ups with a plain shared listener");
    };
    let excl = w("shared + EPOLLEXCLUSIVE");
    let rp = w("SO_REUSEPORT");
    let one_somewhere =
        excl.map(|x| x <= 1.2).unwrap_or(false) || rp.map(|x| x <= 1.2).unwrap_or(false);
    let mut nums = vec![("shared plain wake-ups/accept", plain)];
    nums.extend(excl.map(|x| ("EPOLLEXCLUSIVE wake-ups/accept", x)));
    nums.extend(rp.map(|x| ("SO_REUSEPORT wake-ups/accept", x)));
    verdict(if plain <= 1.2 { Outcome::Holds } else if one_somewhere { Outcome::Partly } else { Outcome::Fails }, nums,
        format!("a plain shared listener woke {} workers per connection (holds up to 1.2); partly if only EPOLLEXCLUSIVE or SO_REUSEPORT bring it to one", fmt_num(plain)))
}

fn v_threads_memory(rec: &ScenarioRecord) -> Verdict {
    let m = |sr: &str| {
        rec.select(&[("part", j("memory")), s(sr)])
            .find_map(|p| p.metric("rss_per_conn_bytes"))
    };
    let (Some(t), Some(e)) = (m("threads"), m("epoll")) else {
        return missing("memory per connection for threads and epoll");
    };
    let g = t / e.max(1.0);
    verdict(band(g >= 4.0, g >= 1.5), vec![("threads B/conn", t), ("epoll B/conn", e), ("ratio", g)],
        format!("a thread per connection costs ×{} the memory of an event loop's connection (holds from ×4, partly from ×1.5)", fmt_num(g)))
}

/// Every claim, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "poll-grows", seed: "001", section: "Scalability of poll() and /dev/poll", text: "poll's cost grows with the number of (idle) descriptors watched", scenario: "poller", verdict: v_poll_grows },
    Claim { id: "epoll-flat", seed: "001", section: "/dev/poll vs. poll; kqueue()", text: "a kernel-held interest set (/dev/poll, today epoll) checks for activity in time independent of idle descriptors", scenario: "poller", verdict: v_epoll_flat },
    Claim { id: "active-only", seed: "001", section: "FreeBSD table note (J. Lemon)", text: "kqueue-like mechanisms scale with the active descriptors only: linear in active, flat in total", scenario: "poller", verdict: v_active_only },
    Claim { id: "ring-minor", seed: "000", section: "§3.3 Reducing result copy operations", text: "a result area shared with the kernel (mmap'd, today io_uring's rings) matters less than keeping the interest set in the kernel", scenario: "poller", verdict: v_ring_minor },
    Claim { id: "fd-alloc-flat", seed: "003", section: "Open and Close", text: "with a two-level bitmap, finding a free descriptor does not slow down as more descriptors are open", scenario: "poller", verdict: v_fd_alloc },
    Claim { id: "devpoll-keeps-up", seed: "000", section: "§5.1, Figs. 4–9", text: "with many inactive connections /dev/poll (epoll) keeps up with the request rate while poll's reply rate falls", scenario: "poll-vs-epoll", verdict: v_devpoll_keeps_up },
    Claim { id: "devpoll-no-errors", seed: "000", section: "§5.1, Fig. 10", text: "/dev/poll (epoll) has no connection errors below 501 inactive connections, poll has many", scenario: "poll-vs-epoll", verdict: v_devpoll_no_errors },
    Claim { id: "rtsig-faster-low-load", seed: "000", section: "§5.2, Fig. 14", text: "at low load the RT-signal server answers faster than the /dev/poll (epoll) server", scenario: "rtsig-latency", verdict: v_rtsig_faster_low },
    Claim { id: "rtsig-latency-jumps", seed: "000", section: "§5.2, Fig. 14", text: "past its knee the RT-signal server's median latency jumps by orders of magnitude while /dev/poll's (epoll's) stays flat", scenario: "rtsig-latency", verdict: v_rtsig_jumps },
    Claim { id: "rtsig-cpu-flat", seed: "004", section: "§3.1, Fig. 4; 002 slide 13", text: "RT-signal server CPU is independent of the number of idle connections", scenario: "overhead", verdict: v_rtsig_cpu_flat },
    Claim { id: "inactive-hurt-rtsig", seed: "000", section: "§5.2, Figs. 12–13", text: "inactive connections increase an RT-signal server's overhead", scenario: "overhead", verdict: v_inactive_hurt_rtsig },
    Claim { id: "poll-cpu-grows", seed: "004", section: "§3.1, Fig. 4", text: "select/poll-style servers' CPU grows with the number of concurrent connections", scenario: "overhead", verdict: v_poll_cpu_grows },
    Claim { id: "rtsig-response-flat", seed: "004", section: "§3.1, Fig. 5; 002 slide 14", text: "RT-signal response time is independent of the number of concurrent connections", scenario: "overhead", verdict: v_rtsig_response_flat },
    Claim { id: "multi-accept-select", seed: "004", section: "§4.1–4.2, Figs. 6–9", text: "multi-accept select sustains far higher throughput than select with one accept per call", scenario: "throughput", verdict: v_multi_accept },
    Claim { id: "multi-accept-like-rtsig", seed: "004", section: "§4.1, §5", text: "multi-accept select reaches throughput similar to RT signals despite its overhead", scenario: "throughput", verdict: v_multi_accept_like_rtsig },
    Claim { id: "devpoll-collapses", seed: "004", section: "§4.1, Figs. 6–9", text: "/dev/poll's (epoll's) throughput collapses under overload", scenario: "throughput", verdict: v_devpoll_collapse },
    Claim { id: "rtsig-cpu-lower", seed: "004", section: "§4.1, Figs. 7b–8b", text: "with thousands of idle connections RT signals use far less CPU than polling mechanisms at the same load", scenario: "throughput", verdict: v_rtsig_cpu_lower },
    Claim { id: "per-fd-higher-load", seed: "004", section: "§4.2", text: "signal-per-fd (coalescing, our rtsig-batch) sustains slightly higher load than plain RT signals", scenario: "throughput", verdict: v_per_fd_higher_load },
    Claim { id: "overflow-past-knee", seed: "004", section: "Table 1", text: "no signal-queue overflow below the knee; past it the RT-signal server overflows and lives on its fallback", scenario: "table1", verdict: v_overflow_past_knee },
    Claim { id: "per-fd-no-overflow", seed: "004", section: "§3.4; 002 slides 17–18", text: "signal-per-fd (coalescing, our rtsig-batch) avoids signal-queue overflow", scenario: "table1", verdict: v_per_fd_no_overflow },
    Claim { id: "hybrid-best-of-both", seed: "000", section: "§4, §6, §7", text: "a hybrid server gets RT-signal latency at light load and polling throughput at heavy load", scenario: "hybrid", verdict: v_hybrid_best_of_both },
    Claim { id: "hybrid-switches-back", seed: "000", section: "§6", text: "with the poll interest set maintained alongside, the hybrid switches modes cheaply and returns to signals when load subsides", scenario: "hybrid", verdict: v_hybrid_switches_back },
    Claim { id: "no-thundering-herd", seed: "004", section: "§2.2 (select); 000 §6", text: "Linux wakes a single thread per event, so there is no thundering herd", scenario: "today", verdict: v_no_herd },
    Claim { id: "threads-memory", seed: "004", section: "§2.1", text: "a thread per connection costs far more memory per connection than an event-driven server", scenario: "today", verdict: v_threads_memory },
    Claim { id: "overflow-no-hang", seed: "000", section: "§2 (SIGIO, recovery by poll), §5.2 (phhttpd's overflow meltdown)", text: "a server that recovers from RT-signal queue overflow in its own thread, with the interest set kept, loses no request and does not stall under a signal-queue storm", scenario: "hostile", verdict: crate::scenarios::hostile::v_overflow_no_hang },
    Claim { id: "slow-do-not-starve", seed: "000", section: "§5.1 (inactive connections)", text: "inactive and slow clients do not starve active ones: the active clients' p99 stays within 2× with thousands of slowloris clients", scenario: "hostile", verdict: crate::scenarios::hostile::v_slow_do_not_starve },
    Claim { id: "exhaustion-graceful", seed: "000", section: "§5.1, Fig. 10 (errors climbing to 60%)", text: "more connections than descriptors do not break the server: its clients keep their latency, it does not spin at the limit, and it accepts again when descriptors free", scenario: "hostile", verdict: crate::scenarios::hostile::v_exhaustion_graceful },
];

/// Judge every claim against the records of this run. A claim whose
/// scenario did not run, or measured nothing, is `not measured` with the
/// scenario's reasons.
pub fn evaluate(records: &[ScenarioRecord]) -> Vec<Value> {
    CLAIMS
        .iter()
        .map(|c| {
            let v = match records.iter().find(|r| r.id == c.scenario) {
                None => nm(format!("scenario {} was not run (see --only)", c.scenario)),
                Some(r) if r.points.is_empty() => {
                    let why: Vec<String> = r.skipped.iter().chain(&r.failures).map(|s| format!("{}: {}", s.what, s.why)).collect();
                    nm(format!("scenario {} measured nothing: {}", c.scenario, if why.is_empty() { "no data".to_string() } else { why.join("; ") }))
                }
                Some(r) => (c.verdict)(r),
            };
            json!({
                "id": c.id,
                "seed": c.seed,
                "section": c.section,
                "claim": c.text,
                "scenario": c.scenario,
                "verdict": v.outcome.word(),
                "numbers": v.numbers.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
                "why": v.why,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
