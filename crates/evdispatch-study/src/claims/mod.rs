//! The seeds' claims (and today's questions), each with the seed and section
//! it comes from and a function that computes its verdict from this run's
//! data. No verdict is written by hand: every one is `holds`, `partly`,
//! `fails` or `not measured` (with why) according to thresholds stated in
//! its `why`, and comes with the numbers behind it.
//!
//! Thresholds are generous on purpose: a claim about a shape ("grows",
//! "flat", "jumps") is judged on ratios between points of the same run,
//! never on absolute figures from a 400 MHz machine.

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

/// Three bands: `holds` where `good`, `partly` where `fair`, else `fails`.
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
    /// Seed file number (`000`…`004`), or `today` for today's questions.
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

/// `metric` of the first point matching `f`.
fn at(rec: &ScenarioRecord, f: &[(&str, Value)], metric: &str) -> Option<f64> {
    rec.select(f).find_map(|p| p.metric(metric))
}

fn missing(what: &str) -> Verdict {
    nm(format!("no data for {what} in this run"))
}

/// The share of the offered rate a run must answer to count as keeping up.
const KEEP: f64 = 0.95;

/// Where a series stops keeping up with the offered rate: the highest
/// offered rate up to which every point answered ≥ 95% of it (`None` if it
/// fell behind at the lowest rate), and the lowest offered rate it did not
/// keep up with (`None` if it kept up everywhere).
fn knee(rec: &ScenarioRecord, f: &[(&str, Value)]) -> Option<(Option<f64>, Option<f64>)> {
    let xy = rec.xy(f, "rate", "reply_rate");
    if xy.is_empty() {
        return None;
    }
    let kept = xy
        .iter()
        .take_while(|(x, y)| *y >= KEEP * x)
        .last()
        .map(|p| p.0);
    let behind = xy.iter().find(|(x, y)| *y < KEEP * x).map(|p| p.0);
    Some((kept, behind))
}

/// Whether the generator, not the server, may have set a point's figure.
fn generator_bound(p: &Point) -> bool {
    p.metric("generator_limited") == Some(1.0)
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
    let linear = n1 / n0;
    verdict(
        band(g >= 0.1 * linear, g >= 2.0),
        vec![("N from", n0), ("N to", n1), ("poll µs at first N", t0), ("poll µs at last N", t1), ("growth ×", g)],
        format!("poll's median grew ×{} for ×{} descriptors (holds from a tenth of linear growth, ×{}; partly from ×2). Kegel saw ×493 (Linux 2.2.14) and ×300 (2.4.0-test10) from 100 to 10,000.", fmt_num(g), fmt_num(linear), fmt_num(0.1 * linear)),
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
        format!("epoll's median changed ×{} for ×{} descriptors (holds up to ×1.5, partly up to ×3). Linux 2.2's /dev/poll grew ×224, Solaris 7's ×1.5, kqueue's not at all.", fmt_num(g), fmt_num(n1 / n0)),
    )
}

fn v_devpoll_faster(rec: &ScenarioRecord) -> Verdict {
    let mut f = poller_a1();
    f.push(s("poll"));
    let poll = rec.xy(&f, "fds", "median_us");
    let mut f = poller_a1();
    f.push(s("epoll"));
    let epoll = rec.xy(&f, "fds", "median_us");
    let pairs: Vec<(f64, f64)> = poll
        .iter()
        .filter_map(|(n, p)| epoll.iter().find(|(m, _)| m == n).map(|(_, e)| (*n, p / e)))
        .collect();
    if pairs.is_empty() {
        return missing("poll and epoll at the same N");
    }
    let worst = pairs.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let last = pairs.last().map(|p| p.1).unwrap_or(0.0);
    Verdict {
        outcome: band(worst >= 1.5, last >= 1.5),
        numbers: pairs
            .iter()
            .map(|(n, r)| (format!("poll/epoll × at N = {}", fmt_num(*n)), fmt_num(*r)))
            .collect(),
        why: format!("poll took ×{} epoll's time at worst and ×{} at the largest N (holds if epoll is at least ×1.5 faster at every N; partly if only at the largest). Kegel: /dev/poll was six times faster than poll at 1,000 fds and 2.7 times at 10,000 on Linux 2.2.14.", fmt_num(worst), fmt_num(last)),
    }
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
        return missing("epoll at two active counts (the tiny profile runs A = 1 only)");
    };
    let flat_n = t1 / t0 <= 1.5;
    let grows_a = u1 / u0 >= 0.2 * (a1 / a0);
    verdict(
        both(flat_n, grows_a),
        vec![("growth with N ×", t1 / t0), ("A from", a0), ("A to", a1), ("growth with A ×", u1 / u0)],
        format!("flat in N: {} (×{}, needs ≤ 1.5); follows A: {} (×{} for ×{} active, needs ≥ a fifth of proportional)", flat_n, fmt_num(t1 / t0), grows_a, fmt_num(u1 / u0), fmt_num(a1 / a0)),
    )
}

fn v_ring_minor(rec: &ScenarioRecord) -> Verdict {
    let Some(n) = largest(rec, &[("bench", j("poller")), s("poll")], "fds") else {
        return missing("poll");
    };
    let at_n = |m: &str| {
        let mut f = poller_a1();
        f.extend([s(m), ("fds", j(n))]);
        at(rec, &f, "median_us")
    };
    let (Some(p), Some(e), Some(u)) = (at_n("poll"), at_n("epoll"), at_n("uring")) else {
        return missing("poll, epoll and uring at the same N");
    };
    let interest = p / e;
    let ring = e / u;
    verdict(
        band(interest > 2.0 * ring, interest > ring),
        vec![("N", n), ("poll/epoll ×", interest), ("epoll/uring ×", ring)],
        format!("keeping the interest set in the kernel gains ×{} (poll → epoll), the shared result ring ×{} more (epoll → uring); holds if the first gain is over twice the second, partly if larger", fmt_num(interest), fmt_num(ring)),
    )
}

fn v_near_raw(rec: &ScenarioRecord) -> Verdict {
    let Some(n) = largest(rec, &[("bench", j("poller")), s("raw-epoll")], "fds") else {
        return missing("raw-epoll");
    };
    let at_n = |m: &str| {
        let mut f = poller_a1();
        f.extend([s(m), ("fds", j(n))]);
        at(rec, &f, "median_us")
    };
    let Some(raw) = at_n("raw-epoll") else {
        return missing("raw-epoll at the largest N");
    };
    let mut nums = vec![("N", n), ("raw-epoll µs", raw)];
    let mut worst: f64 = 0.0;
    let mut seen = 0;
    for (m, label) in [
        ("epoll", "evdispatch epoll ×raw"),
        ("mio", "mio ×raw"),
        ("polling", "polling ×raw"),
        ("libevent", "libevent ×raw"),
        ("libev", "libev ×raw"),
    ] {
        if let Some(v) = at_n(m) {
            nums.push((label, v / raw));
            seen += 1;
            if m == "epoll" {
                worst = worst.max(v / raw);
            }
        }
    }
    if seen == 0 || !nums.iter().any(|(k, _)| k.starts_with("evdispatch")) {
        return missing("evdispatch's epoll beside raw-epoll");
    }
    verdict(
        band(worst <= 1.25, worst <= 1.6),
        nums,
        format!("evdispatch's epoll row costs ×{} the bare system-call loop at N = {} (holds up to ×1.25, partly up to ×1.6); the other libraries are shown for comparison", fmt_num(worst), fmt_num(n)),
    )
}

fn v_fd_alloc(rec: &ScenarioRecord) -> Verdict {
    let f = [("bench", j("fdalloc"))];
    let Some(((n0, t0), (n1, t1))) = ends(rec, &f, "fds", "second_alloc_far_median_us") else {
        return missing("bench fdalloc at two descriptor counts");
    };
    let near = ends(rec, &f, "fds", "second_alloc_near_median_us");
    let g = if t0 > 0.0 { t1 / t0 } else { f64::INFINITY };
    let mut nums = vec![
        ("open fds from", n0),
        ("open fds to", n1),
        ("far hole µs at first", t0),
        ("far hole µs at last", t1),
        ("growth ×", g),
    ];
    if let Some((_, (_, c1))) = near {
        nums.push(("near hole (control) µs at last", c1));
    }
    verdict(
        band(g <= 2.0, g <= 5.0),
        nums,
        format!("finding the far hole took ×{} longer with ×{} descriptors open (holds up to ×2: allocation flat, as with two bitmaps; partly up to ×5; a single bitmap scanned word by word grows with N)", fmt_num(g), fmt_num(n1 / n0)),
    )
}

// ---- scenario 2: poll vs epoll ----

fn largest_inactive(rec: &ScenarioRecord, m: &str) -> Option<f64> {
    largest(rec, &[s(m)], "inactive")
}

fn v_devpoll_keeps_up(rec: &ScenarioRecord) -> Verdict {
    let Some(i) = largest_inactive(rec, "poll") else {
        return missing("poll");
    };
    let (Some((pk, pb)), Some((ek, eb))) = (
        knee(rec, &[s("poll"), ("inactive", j(i))]),
        knee(rec, &[s("epoll"), ("inactive", j(i))]),
    ) else {
        return missing("poll and epoll at the largest inactive count");
    };
    if pb.is_none() && eb.is_none() {
        return nm(format!(
            "the sweep never overloaded poll nor epoll with {} inactive connections: both answered ≥ 95% of every offered rate up to {}/s (see the CPU and latency claims for what the scan costs below the knee)",
            fmt_num(i),
            fmt_num(pk.unwrap_or(0.0).min(ek.unwrap_or(0.0)))
        ));
    }
    let pk0 = pk.unwrap_or(0.0);
    let ek0 = ek.unwrap_or(0.0);
    let (Some(pbest), Some(ebest)) = (
        peak(rec, &[s("poll"), ("inactive", j(i))], "reply_rate"),
        peak(rec, &[s("epoll"), ("inactive", j(i))], "reply_rate"),
    ) else {
        return missing("reply rates");
    };
    // The generator's own ceiling hides a knee above it.
    let gen_bound = rec
        .select(&[s("epoll"), ("inactive", j(i))])
        .filter(|p| p.num("rate") == eb)
        .any(generator_bound);
    let a = ek0 > pk0;
    let b = ebest >= 1.1 * pbest;
    let mut nums = vec![
        ("inactive", i),
        ("poll kept up to /s", pk0),
        ("epoll kept up to /s", ek0),
        ("poll best replies/s", pbest),
        ("epoll best replies/s", ebest),
    ];
    if let Some(x) = pb {
        nums.push(("poll fell behind at /s", x));
    }
    verdict(
        both(a, b),
        nums,
        format!("with {} inactive: epoll kept up (≥ 95% answered) to a higher offered rate than poll: {a}; epoll's best reply rate ≥ 1.1 × poll's: {b}{}",
            fmt_num(i),
            if gen_bound { " (epoll's last point had the load generator saturated: its knee may lie higher)" } else { "" }),
    )
}

fn v_poll_breaks_at_501(rec: &ScenarioRecord) -> Verdict {
    let counts: Vec<f64> = rec
        .select(&[s("poll")])
        .filter_map(|p| p.num("inactive"))
        .filter(|i| (200.0..=501.0).contains(i))
        .collect();
    let Some(i) = counts.into_iter().reduce(f64::max) else {
        return missing("poll at 251–501 inactive connections");
    };
    let (Some((pk, _)), Some((ek, _))) = (
        knee(rec, &[s("poll"), ("inactive", j(i))]),
        knee(rec, &[s("epoll"), ("inactive", j(i))]),
    ) else {
        return missing("poll and epoll at the seed's inactive count");
    };
    let (pk, ek) = (pk.unwrap_or(0.0), ek.unwrap_or(0.0));
    let cpu = |m: &str| {
        let r = smallest(rec, &[s(m), ("inactive", j(i))], "rate")?;
        at(
            rec,
            &[s(m), ("inactive", j(i)), ("rate", j(r))],
            "server_cpu_pct",
        )
    };
    let mut nums = vec![
        ("inactive", i),
        ("poll kept up to /s", pk),
        ("epoll kept up to /s", ek),
    ];
    let (pc, ec) = (cpu("poll"), cpu("epoll"));
    if let (Some(pc), Some(ec)) = (pc, ec) {
        nums.push(("poll CPU % at the lowest rate", pc));
        nums.push(("epoll CPU % at the lowest rate", ec));
    }
    let fell = pk < ek;
    let costlier = matches!((pc, ec), (Some(p), Some(e)) if p >= 1.3 * e && p - e >= 3.0);
    verdict(
        if fell { Outcome::Holds } else if costlier { Outcome::Partly } else { Outcome::Fails },
        nums,
        format!("at the seed's {} inactive connections poll fell behind at a lower rate than epoll: {fell} (holds); otherwise partly if poll at least cost ×1.3 epoll's CPU (and 3 points more) at the lowest rate: {costlier}. On the seed's 400 MHz K6-2, 501 inactive connections dominated poll's server at every rate.", fmt_num(i)),
    )
}

fn v_poll_cpu_inactive(rec: &ScenarioRecord) -> Verdict {
    let Some(i) = largest_inactive(rec, "poll") else {
        return missing("poll");
    };
    // A rate both kept up with: the lowest.
    let Some(r) = smallest(rec, &[s("poll"), ("inactive", j(i))], "rate") else {
        return missing("poll");
    };
    let f = |m: &str| [s(m), ("inactive", j(i)), ("rate", j(r))];
    let (Some(pc), Some(ec)) = (
        at(rec, &f("poll"), "server_cpu_pct"),
        at(rec, &f("epoll"), "server_cpu_pct"),
    ) else {
        return missing("server CPU of poll and epoll at the same rate");
    };
    let (pl, el) = (
        at(rec, &f("poll"), "p50_us"),
        at(rec, &f("epoll"), "p50_us"),
    );
    let g = pc / ec.max(0.5);
    let mut nums = vec![
        ("inactive", i),
        ("rate /s", r),
        ("poll CPU %", pc),
        ("epoll CPU %", ec),
        ("ratio", g),
    ];
    if let (Some(a), Some(b)) = (pl, el) {
        nums.push(("poll median µs", a));
        nums.push(("epoll median µs", b));
    }
    verdict(
        band(g >= 2.0, g >= 1.3),
        nums,
        format!("with {} inactive connections at {}/s, poll's server used ×{} epoll's CPU (holds from ×2, partly from ×1.3): the scan of inactive descriptors is paid on every wait", fmt_num(i), fmt_num(r), fmt_num(g)),
    )
}

fn v_devpoll_no_errors(rec: &ScenarioRecord) -> Verdict {
    let low: Vec<f64> = rec
        .select(&[s("epoll")])
        .filter(|p| p.num("inactive").map(|i| i < 501.0).unwrap_or(false))
        .filter_map(|p| p.metric("error_pct"))
        .collect();
    let Some(imax) = largest_inactive(rec, "poll") else {
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
    let b = pp > pe + 1.0;
    verdict(
        both(a, b),
        vec![("epoll worst error % below 501 inactive", worst_low), ("inactive", imax), ("poll worst error %", pp), ("epoll worst error %", pe)],
        format!("epoll error-free below 501 inactive (< 0.1%): {a}; poll has more errors than epoll at {} inactive (by more than a point): {b}. Stock thttpd's errors rose to 60%.", fmt_num(imax)),
    )
}

fn v_peer_poll(rec: &ScenarioRecord) -> Verdict {
    let (p, e) = ("lighttpd (poll)", "lighttpd (linux-sysepoll)");
    let Some(i) = largest_inactive(rec, p) else {
        return missing("lighttpd with server.event-handler = poll");
    };
    let Some(r) = smallest(rec, &[s(p), ("inactive", j(i))], "rate") else {
        return missing("lighttpd");
    };
    let f = |m: &str| [s(m), ("inactive", j(i)), ("rate", j(r))];
    let (Some(pc), Some(ec)) = (
        at(rec, &f(p), "server_cpu_pct"),
        at(rec, &f(e), "server_cpu_pct"),
    ) else {
        return missing("lighttpd's CPU with both event handlers at the same rate");
    };
    let g = pc / ec.max(0.5);
    verdict(
        band(g >= 2.0, g >= 1.3),
        vec![("inactive", i), ("rate /s", r), ("lighttpd poll CPU %", pc), ("lighttpd epoll CPU %", ec), ("ratio", g)],
        format!("lighttpd, the same server with two event handlers, used ×{} the CPU on poll as on epoll with {} inactive connections at {}/s (holds from ×2, partly from ×1.3): the cost is the mechanism's, not our server's", fmt_num(g), fmt_num(i), fmt_num(r)),
    )
}

// ---- scenario 3: RT-signal latency ----

fn v_rtsig_faster_low(rec: &ScenarioRecord) -> Verdict {
    let Some(r0) = smallest(rec, &[s("rtsig")], "rate") else {
        return missing("rtsig");
    };
    let p50 = |m: &str| at(rec, &[s(m), ("rate", j(r0))], "p50_us");
    let (Some(r), Some(e)) = (p50("rtsig"), p50("epoll")) else {
        return missing("rtsig and epoll at the lowest rate");
    };
    verdict(
        if r < 0.95 * e { Outcome::Holds } else if r <= 1.05 * e { Outcome::Partly } else { Outcome::Fails },
        vec![("rate /s", r0), ("rtsig median µs", r), ("epoll median µs", e), ("epoll − rtsig µs", e - r)],
        format!("at {}/s rtsig's median was {} µs, epoll's {} µs (holds if rtsig is more than 5% faster, partly within ±5%); phhttpd was 1–3 ms faster than thttpd with /dev/poll", fmt_num(r0), fmt_num(r), fmt_num(e)),
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
                    vec![("rate /s", *rate), ("rtsig median µs", *y), ("rtsig ×best", y / rmin), ("epoll ×best", er)],
                    format!("rtsig's median jumped ×{} above its best at {}/s while epoll's was ×{} its best (holds if epoll stays within ×3 there; partly if both jumped)", fmt_num(y / rmin), fmt_num(*rate), fmt_num(er)),
                ),
            }
        }
    }
}

fn v_batch_dequeue(rec: &ScenarioRecord) -> Verdict {
    let (Some((rk, rb)), Some((bk, bb))) =
        (knee(rec, &[s("rtsig")]), knee(rec, &[s("rtsig-batch")]))
    else {
        return missing("rtsig and rtsig-batch");
    };
    if rb.is_none() && bb.is_none() {
        return nm(format!(
            "the sweep never overloaded rtsig nor rtsig-batch: both answered ≥ 95% of every offered rate up to {}/s, so neither's limit was reached",
            fmt_num(rk.unwrap_or(0.0).min(bk.unwrap_or(0.0)))
        ));
    }
    let (rk, bk) = (rk.unwrap_or(0.0), bk.unwrap_or(0.0));
    let top = |m: &str| {
        let r = largest(rec, &[s(m)], "rate")?;
        at(rec, &[s(m), ("rate", j(r))], "reply_rate")
    };
    let (Some(rt), Some(bt)) = (top("rtsig"), top("rtsig-batch")) else {
        return missing("reply rates");
    };
    verdict(
        band(bk > rk, bk >= rk && bt >= 1.1 * rt),
        vec![("rtsig kept up to /s", rk), ("rtsig-batch kept up to /s", bk), ("rtsig replies/s at the top rate", rt), ("rtsig-batch replies/s at the top rate", bt)],
        format!("dequeuing many signals per call (the seed's proposed sigtimedwait4; here a read of a signalfd) kept up to {}/s against {}/s one at a time (holds if higher; partly if equal with ≥ 10% more replies at the top rate)", fmt_num(bk), fmt_num(rk)),
    )
}

// ---- scenario 4: overhead ----

/// `metric` of `mech` at the fewest and most connections, at the lowest rate.
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
        format!("rtsig's CPU went from {}% to {}% as connections grew (holds past ×1.5 and 2 points; fails within ×1.3 or 2 points). Seed 004 (the previous claim) says the opposite of seed 000 here.", fmt_num(u0), fmt_num(u1)),
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

/// Mean server CPU of `mech` over every connection count at the lowest rate.
fn mean_cpu(rec: &ScenarioRecord, mech: &str) -> Option<(f64, usize)> {
    let r = smallest(rec, &[s(mech)], "rate")?;
    let v: Vec<f64> = rec
        .select(&[s(mech), ("rate", j(r))])
        .filter_map(|p| p.metric("server_cpu_pct"))
        .collect();
    (!v.is_empty()).then(|| (v.iter().sum::<f64>() / v.len() as f64, v.len()))
}

fn v_rtsig_cpu_lowest(rec: &ScenarioRecord) -> Verdict {
    let (Some((r, n)), Some((e, m))) = (mean_cpu(rec, "rtsig"), mean_cpu(rec, "epoll")) else {
        return missing("rtsig and epoll CPU");
    };
    if n != m {
        return missing("rtsig and epoll at the same connection counts");
    }
    let g = r / e.max(0.1);
    verdict(
        band(g <= 0.67, g <= 1.0),
        vec![("rtsig mean CPU %", r), ("epoll mean CPU %", e), ("rtsig/epoll ×", g)],
        format!("averaged over every connection count, rtsig used ×{} epoll's CPU (holds at ≤ ×0.67, \"dramatically lower\"; partly ≤ ×1). The seed compared RT signals with /dev/poll, whose Linux 2.4 implementation was O(n); epoll is its O(1) successor.", fmt_num(g)),
    )
}

fn v_uring_one_call(rec: &ScenarioRecord) -> Verdict {
    let (Some((u, n)), Some((e, m))) = (mean_cpu(rec, "uring"), mean_cpu(rec, "epoll")) else {
        return missing("uring and epoll CPU");
    };
    if n != m {
        return missing("uring and epoll at the same connection counts");
    }
    let g = u / e.max(0.1);
    verdict(
        band(g <= 0.9, g <= 1.1),
        vec![("uring mean CPU %", u), ("epoll mean CPU %", e), ("uring/epoll ×", g)],
        format!("io_uring, which submits interest changes and waits in one io_uring_enter, used ×{} epoll's CPU averaged over every connection count (holds at ≤ ×0.9, partly ≤ ×1.1)", fmt_num(g)),
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

/// `Some(not measured)` when neither `a` nor `b` fell behind the offered
/// rate at the top of the sweep (fewest idle connections): the sweep never
/// reached either one's limit, so their peaks say nothing about which
/// sustains more (on a 2-core machine the loopback stack and the generator
/// may saturate first).
fn neither_overloaded(rec: &ScenarioRecord, a: &str, b: &str) -> Option<Verdict> {
    let top = |m: &str| {
        let mut f = smallest_idle(rec);
        f.push(s(m));
        rec.xy(&f, "rate", "reply_rate").last().copied()
    };
    let ((ra, ya), (rb, yb)) = (top(a)?, top(b)?);
    (ya >= KEEP * ra && yb >= KEEP * rb).then(|| {
        nm(format!(
            "the sweep never overloaded {a} nor {b}: {} and {} replies/s at the top offered rates {}/s and {}/s (≥ 95% answered), so their limits were not reached",
            fmt_num(ya),
            fmt_num(yb),
            fmt_num(ra),
            fmt_num(rb)
        ))
    })
}

fn v_multi_accept(rec: &ScenarioRecord) -> Verdict {
    let (Some(all), Some(one)) = (best_of(rec, "select"), best_of(rec, "select (accept one)"))
    else {
        return missing("select with one accept and with multi-accept");
    };
    if let Some(v) = neither_overloaded(rec, "select", "select (accept one)") {
        return v;
    }
    let g = all / one;
    verdict(band(g >= 1.2, g >= 1.05), vec![("multi-accept best replies/s", all), ("one-accept best replies/s", one), ("ratio", g)],
        format!("multi-accept select's best throughput was ×{} single-accept's (holds from ×1.2, partly from ×1.05)", fmt_num(g)))
}

fn v_multi_accept_like_rtsig(rec: &ScenarioRecord) -> Verdict {
    let (Some(sel), Some(rt)) = (best_of(rec, "select"), best_of(rec, "rtsig")) else {
        return missing("multi-accept select and rtsig");
    };
    if let Some(v) = neither_overloaded(rec, "select", "rtsig") {
        return v;
    }
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
    if at_top >= KEEP * top_rate {
        return nm(format!(
            "the sweep never overloaded epoll: {} replies/s at the top offered rate {}/s",
            fmt_num(at_top),
            fmt_num(top_rate)
        ));
    }
    let g = at_top / best;
    verdict(band(g <= 0.5, g <= 0.8), vec![("epoll peak replies/s", best), ("at the top rate", at_top), ("ratio", g)],
        format!("past its peak epoll kept ×{} of its best throughput (the claim holds if it falls to ≤ 0.5, partly ≤ 0.8; the seed could not explain /dev/poll's collapse)", fmt_num(g)))
}

fn v_rtsig_cpu_lower(rec: &ScenarioRecord) -> Verdict {
    let Some(i) = largest(rec, &[s("rtsig")], "idle") else {
        return missing("rtsig");
    };
    let Some(r) = smallest(rec, &[s("rtsig"), ("idle", j(i))], "rate") else {
        return missing("rtsig");
    };
    let cpu = |m: &str| {
        at(
            rec,
            &[s(m), ("idle", j(i)), ("rate", j(r))],
            "server_cpu_pct",
        )
    };
    let (Some(rt), Some(p)) = (cpu("rtsig"), cpu("poll")) else {
        return missing("rtsig and poll at the same load");
    };
    let g = p / rt.max(0.5);
    verdict(
        band(g >= 2.0, g >= 1.2),
        vec![("idle", i), ("rate /s", r), ("poll CPU %", p), ("rtsig CPU %", rt), ("ratio", g)],
        format!("with {} idle connections at {}/s poll used ×{} rtsig's CPU (holds from ×2, partly from ×1.2)", fmt_num(i), fmt_num(r), fmt_num(g)),
    )
}

fn v_per_fd_higher_load(rec: &ScenarioRecord) -> Verdict {
    let (Some(b), Some(r)) = (best_of(rec, "rtsig-batch"), best_of(rec, "rtsig")) else {
        return missing("rtsig and rtsig-batch");
    };
    if let Some(v) = neither_overloaded(rec, "rtsig-batch", "rtsig") {
        return v;
    }
    let g = b / r;
    verdict(if g >= 1.02 { Outcome::Holds } else if g >= 0.98 { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig-batch best replies/s", b), ("rtsig best replies/s", r), ("ratio", g)],
        format!("rtsig-batch (signals merged per descriptor at dequeue, the nearest Linux has to signal-per-fd) peaked at ×{} rtsig's throughput (holds from ×1.02, partly within ±2%)", fmt_num(g)))
}

fn v_completion(rec: &ScenarioRecord) -> Verdict {
    let f = smallest_idle(rec);
    let Some(r) = smallest(rec, &[f[0].clone(), f[1].clone(), s("epoll")], "rate") else {
        return missing("epoll");
    };
    let per = |m: &str| {
        let mut g = f.clone();
        g.extend([s(m), ("rate", j(r))]);
        at(rec, &g, "cpu_us_per_reply")
    };
    let (Some(c), Some(e)) = (per("uring-completion"), per("epoll")) else {
        return missing("uring-completion and epoll at the same rate");
    };
    let g = c / e;
    verdict(
        band(g <= 0.9, g <= 1.1),
        vec![("rate /s", r), ("uring-completion CPU µs per reply", c), ("epoll CPU µs per reply", e), ("ratio", g)],
        format!("at {}/s, completions (accept, receive and send through io_uring) cost ×{} epoll's CPU per reply (holds at ≤ ×0.9, partly ≤ ×1.1)", fmt_num(r), fmt_num(g)),
    )
}

fn v_ours_like_nginx(rec: &ScenarioRecord) -> Verdict {
    let f = smallest_idle(rec);
    let Some(r) = smallest(rec, &[f[0].clone(), f[1].clone(), s("nginx")], "rate") else {
        return missing("nginx");
    };
    let per = |m: &str| {
        let mut g = f.clone();
        g.extend([s(m), ("rate", j(r))]);
        at(rec, &g, "cpu_us_per_reply")
    };
    let (Some(o), Some(n)) = (per("epoll"), per("nginx")) else {
        return missing("ours on epoll and nginx at the same rate");
    };
    let g = o / n;
    verdict(
        band(g <= 1.2, g <= 2.0),
        vec![("rate /s", r), ("ours (epoll) CPU µs per reply", o), ("nginx CPU µs per reply", n), ("ratio", g)],
        format!("at {}/s our server on epoll spent ×{} nginx's CPU per reply (holds up to ×1.2, partly up to ×2)", fmt_num(r), fmt_num(g)),
    )
}

// ---- scenario 6: Table 1 ----

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

// ---- scenario 7: hybrid ----

fn v_hybrid_best_of_both(rec: &ScenarioRecord) -> Verdict {
    let sweep = ("part", j("sweep"));
    let Some(r0) = smallest(rec, &[s("hybrid"), sweep.clone()], "rate") else {
        return missing("hybrid");
    };
    let p50 = |m: &str| at(rec, &[s(m), sweep.clone(), ("rate", j(r0))], "p50_us");
    let (Some(h), Some(r)) = (p50("hybrid"), p50("rtsig")) else {
        return missing("hybrid and rtsig at the lowest rate");
    };
    let (Some(hb), Some(eb)) = (
        peak(rec, &[s("hybrid"), sweep.clone()], "reply_rate"),
        peak(rec, &[s("epoll"), sweep.clone()], "reply_rate"),
    ) else {
        return missing("hybrid and epoll throughput");
    };
    let a = h <= 1.15 * r;
    let b = hb >= 0.95 * eb;
    verdict(
        both(a, b),
        vec![("hybrid median µs (light)", h), ("rtsig median µs (light)", r), ("hybrid best replies/s", hb), ("epoll best replies/s", eb)],
        format!("light-load latency within ×1.15 of rtsig's: {a}; peak throughput ≥ 0.95 × epoll's: {b}"),
    )
}

fn v_hybrid_switches_back(rec: &ScenarioRecord) -> Verdict {
    let Some(p) = rec.select(&[("part", j("step")), s("hybrid")]).next() else {
        return missing("the hybrid's load step");
    };
    let (Some(sw), Some(l50)) = (p.metric("mode_switches"), p.metric("phase2_p50_us")) else {
        return missing("the hybrid's mode switches and light-phase latency");
    };
    let fresh = p.num("light_rate").and_then(|l| {
        at(
            rec,
            &[("part", j("sweep")), s("hybrid"), ("rate", j(l))],
            "p50_us",
        )
    });
    let Some(fresh) = fresh else {
        return missing("a fresh hybrid at the light rate");
    };
    if sw == 0.0 {
        return nm("the heavy phase never drove the hybrid out of signal mode");
    }
    // Switches alternate, polling first: two or more mean it came back to
    // signals at least once. (The count cannot say where it ended: the
    // generator closes every held connection at once when it exits, a
    // burst that may send the hybrid to polling just before it stops.)
    let back = sw >= 2.0;
    let recovered = l50 <= 1.5 * fresh + 200.0;
    verdict(
        both(back, recovered),
        vec![("mode switches", sw), ("light-phase median µs", l50), ("fresh server's median µs", fresh)],
        format!("the hybrid returned from polling to signals at least once (2 or more switches): {back}; its light-phase median was within ×1.5 (+200 µs) of a fresh server's: {recovered}"),
    )
}

// ---- scenario 8: today ----

fn herd(rec: &ScenarioRecord, mode: &str) -> Option<(f64, f64)> {
    // At the lowest rate: connections arrive one at a time, so every wake-up
    // of a worker that finds nothing to accept is the herd's.
    let f = [("part", j("herd")), ("listener_mode", j(mode))];
    let r = smallest(rec, &f, "rate")?;
    let mut g = f.to_vec();
    g.push(("rate", j(r)));
    Some((r, at(rec, &g, "wakeups_per_accept")?))
}

fn v_no_herd(rec: &ScenarioRecord) -> Verdict {
    let Some((r, plain)) = herd(rec, "shared (plain)") else {
        return missing("wake-ups with a plain shared listener");
    };
    verdict(
        band(plain <= 1.1, plain <= 1.3),
        vec![("rate /s", r), ("listener reports per accept, plain shared listener", plain)],
        format!("two epoll workers sharing a listener without EPOLLEXCLUSIVE: {} listener reports per accepted connection at {}/s (holds up to 1.1, partly up to 1.3; 2.0 would be every worker woken for every connection). Seed 004 said of select: \"not a problem with Linux 2.4.0, as it supports single thread wake-up\"; epoll registrations in several sets are all woken.", fmt_num(plain), fmt_num(r)),
    )
}

fn v_wake_one(rec: &ScenarioRecord) -> Verdict {
    let excl = herd(rec, "shared + EPOLLEXCLUSIVE");
    let rp = herd(rec, "SO_REUSEPORT");
    let plain = herd(rec, "shared (plain)");
    let (Some((_, e)), Some((_, r))) = (excl, rp) else {
        return missing("wake-ups with EPOLLEXCLUSIVE and SO_REUSEPORT");
    };
    let mut nums = vec![
        ("EPOLLEXCLUSIVE reports per accept", e),
        ("SO_REUSEPORT reports per accept", r),
    ];
    if let Some((_, p)) = plain {
        nums.push(("plain shared listener", p));
    }
    verdict(
        band(e <= 1.1 && r <= 1.1, e <= 1.1 || r <= 1.1),
        nums,
        "seed 000 asked for \"the option of waking only one thread\"; Linux now has two: EPOLLEXCLUSIVE on a shared listener and one SO_REUSEPORT listener per worker. Holds if both keep listener reports per accepted connection at ≤ 1.1, partly if one does.",
    )
}

fn mem(rec: &ScenarioRecord, series: &str) -> Option<f64> {
    at(
        rec,
        &[("part", j("memory")), s(series)],
        "rss_per_conn_bytes",
    )
}

fn v_threads_memory(rec: &ScenarioRecord) -> Verdict {
    let (Some(t), Some(e)) = (mem(rec, "threads"), mem(rec, "epoll")) else {
        return missing("memory per connection for threads and epoll");
    };
    let g = t / e.max(1.0);
    verdict(band(g >= 4.0, g >= 1.5), vec![("threads B/conn", t), ("epoll B/conn", e), ("ratio", g)],
        format!("a thread per connection cost ×{} the resident memory of an event loop's connection (holds from ×4, partly from ×1.5). Only touched stack pages are resident, so the gap is smaller than the 8 MB of virtual stack a thread reserves.", fmt_num(g)))
}

fn v_memory_like_peers(rec: &ScenarioRecord) -> Verdict {
    let Some(ours) = mem(rec, "epoll") else {
        return missing("our server's memory per connection");
    };
    let peers: Vec<(&str, f64)> = ["nginx", "lighttpd", "h2o"]
        .into_iter()
        .filter_map(|p| Some((p, mem(rec, p)?)))
        .collect();
    if peers.is_empty() {
        return missing("a peer's memory per connection");
    }
    let best = peers.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let g = ours / best.max(1.0);
    let mut nums = vec![("ours (epoll) B/conn", ours)];
    for (p, v) in &peers {
        nums.push((*p, *v));
    }
    verdict(
        band(g <= 1.5, g <= 3.0),
        nums,
        format!("our server holds an idle connection in ×{} the user memory of the leanest peer (holds up to ×1.5, partly up to ×3)", fmt_num(g)),
    )
}

// ---- scenario 9: the load generator ----

fn v_vs_wrk(rec: &ScenarioRecord) -> Verdict {
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
            nums.push((srv.clone(), o / w));
        }
    }
    if nums.is_empty() {
        return missing("closed loops by wrk and by evdispatch load against the same server");
    }
    Verdict {
        outcome: band(worst >= 0.9, worst >= 0.75),
        numbers: nums
            .into_iter()
            .map(|(k, v)| (format!("ours/wrk replies against {k}"), fmt_num(v)))
            .collect(),
        why: format!("in closed loop over the same 50 connections our generator reached ×{} wrk's reply rate at worst (holds from ×0.9: it is not the limit wrk would lift; partly from ×0.75)", fmt_num(worst)),
    }
}

fn v_vs_httperf(rec: &ScenarioRecord) -> Verdict {
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
            nums.push((r, o, h));
        }
    }
    if nums.is_empty() {
        return missing("open loops by httperf and by evdispatch load at the same rate");
    }
    let mut numbers = Vec::new();
    for (r, o, h) in nums {
        numbers.push((format!("ours replies/s at {}/s", fmt_num(r)), fmt_num(o)));
        numbers.push((format!("httperf replies/s at {}/s", fmt_num(r)), fmt_num(h)));
    }
    Verdict {
        outcome: band(worst <= 0.05, worst <= 0.15),
        numbers,
        why: format!("at the same offered rate of new connections the two generators' reply rates differed by {}% at most (holds within 5%, partly within 15%)", fmt_num(100.0 * worst)),
    }
}

/// Every claim, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "poll-grows", seed: "001", section: "Scalability of poll() and /dev/poll", text: "poll's cost grows with the number of (idle) descriptors watched", scenario: "poller", verdict: v_poll_grows },
    Claim { id: "epoll-flat", seed: "001", section: "/dev/poll vs. poll; kqueue()", text: "a kernel-held interest set (/dev/poll, today epoll) checks for activity in time independent of idle descriptors", scenario: "poller", verdict: v_epoll_flat },
    Claim { id: "devpoll-faster", seed: "001", section: "/dev/poll vs. poll", text: "in all cases tested with sockets, /dev/poll (epoll) was appreciably faster than poll", scenario: "poller", verdict: v_devpoll_faster },
    Claim { id: "active-only", seed: "001", section: "FreeBSD table note (J. Lemon)", text: "kqueue-like mechanisms scale with the active descriptors only: linear in active, flat in total", scenario: "poller", verdict: v_active_only },
    Claim { id: "ring-minor", seed: "000", section: "§3.3 Reducing result copy operations", text: "a result area shared with the kernel (mmap'd, today io_uring's rings) matters less than keeping the interest set in the kernel", scenario: "poller", verdict: v_ring_minor },
    Claim { id: "library-near-raw", seed: "today", section: "Poller_bench rows", text: "evdispatch's Poller adds little over the bare epoll system calls", scenario: "poller", verdict: v_near_raw },
    Claim { id: "fd-alloc-flat", seed: "003", section: "Open and Close", text: "with a two-level bitmap, finding a free descriptor does not slow down as more descriptors are open", scenario: "poller", verdict: v_fd_alloc },
    Claim { id: "devpoll-keeps-up", seed: "000", section: "§5.1, Figs. 4–9", text: "with many inactive connections /dev/poll (epoll) keeps up with the request rate while poll's reply rate falls", scenario: "poll-vs-epoll", verdict: v_devpoll_keeps_up },
    Claim { id: "poll-breaks-at-501", seed: "000", section: "§5.1, Figs. 6 and 8", text: "with 251–501 inactive connections, poll's server breaks down sooner than /dev/poll's", scenario: "poll-vs-epoll", verdict: v_poll_breaks_at_501 },
    Claim { id: "poll-cpu-with-inactive", seed: "000", section: "§3.1–3.2, §5.1", text: "inactive connections cost a poll server on every wait (the interest set is copied and scanned each time)", scenario: "poll-vs-epoll", verdict: v_poll_cpu_inactive },
    Claim { id: "devpoll-no-errors", seed: "000", section: "§5.1, Fig. 10", text: "/dev/poll (epoll) has no connection errors below 501 inactive connections, poll has many", scenario: "poll-vs-epoll", verdict: v_devpoll_no_errors },
    Claim { id: "peer-poll-costs-too", seed: "today", section: "lighttpd server.event-handler", text: "the poll penalty is the mechanism's: lighttpd on poll pays it too", scenario: "poll-vs-epoll", verdict: v_peer_poll },
    Claim { id: "rtsig-faster-low-load", seed: "000", section: "§5.2, Fig. 14", text: "at low load the RT-signal server answers faster than the /dev/poll (epoll) server", scenario: "rtsig-latency", verdict: v_rtsig_faster_low },
    Claim { id: "rtsig-latency-jumps", seed: "000", section: "§5.2, Fig. 14", text: "past its knee the RT-signal server's median latency jumps by orders of magnitude while /dev/poll's (epoll's) stays flat", scenario: "rtsig-latency", verdict: v_rtsig_jumps },
    Claim { id: "batch-dequeue-helps", seed: "000", section: "§6 (sigtimedwait4)", text: "dequeuing many signals per system call lets an RT-signal server sustain more load", scenario: "rtsig-latency", verdict: v_batch_dequeue },
    Claim { id: "rtsig-cpu-flat", seed: "004", section: "§3.1, Fig. 4; 002 slide 13", text: "RT-signal server CPU is independent of the number of idle connections", scenario: "overhead", verdict: v_rtsig_cpu_flat },
    Claim { id: "inactive-hurt-rtsig", seed: "000", section: "§5.2, Figs. 12–13", text: "inactive connections increase an RT-signal server's overhead", scenario: "overhead", verdict: v_inactive_hurt_rtsig },
    Claim { id: "poll-cpu-grows", seed: "004", section: "§3.1, Fig. 4", text: "select/poll-style servers' CPU grows with the number of concurrent connections", scenario: "overhead", verdict: v_poll_cpu_grows },
    Claim { id: "rtsig-response-flat", seed: "004", section: "§3.1, Fig. 5; 002 slide 14", text: "RT-signal response time is independent of the number of concurrent connections", scenario: "overhead", verdict: v_rtsig_response_flat },
    Claim { id: "rtsig-cpu-lowest", seed: "004", section: "§3.1, §3.2", text: "RT signals' CPU usage is dramatically lower than that of /dev/poll (epoll)", scenario: "overhead", verdict: v_rtsig_cpu_lowest },
    Claim { id: "update-and-wait-one-call", seed: "000", section: "§6 (future work)", text: "one call that both updates the interest set and waits (today io_uring) is cheaper than a pair of calls", scenario: "overhead", verdict: v_uring_one_call },
    Claim { id: "multi-accept-select", seed: "004", section: "§4.1–4.2, Figs. 6–9", text: "multi-accept select sustains far higher throughput than select with one accept per call", scenario: "throughput", verdict: v_multi_accept },
    Claim { id: "multi-accept-like-rtsig", seed: "004", section: "§4.1, §5", text: "multi-accept select reaches throughput similar to RT signals despite its overhead", scenario: "throughput", verdict: v_multi_accept_like_rtsig },
    Claim { id: "devpoll-collapses", seed: "004", section: "§4.1, Figs. 6–9", text: "/dev/poll's (epoll's) throughput collapses under overload", scenario: "throughput", verdict: v_devpoll_collapse },
    Claim { id: "rtsig-cpu-lower", seed: "004", section: "§4.1, Figs. 7b–8b", text: "with thousands of idle connections RT signals use far less CPU than polling mechanisms at the same load", scenario: "throughput", verdict: v_rtsig_cpu_lower },
    Claim { id: "per-fd-higher-load", seed: "004", section: "§4.2", text: "signal-per-fd (coalescing; our rtsig-batch) sustains slightly higher load than plain RT signals", scenario: "throughput", verdict: v_per_fd_higher_load },
    Claim { id: "completion-cheaper", seed: "today", section: "004 §2.2 (NT completion ports)", text: "a completion model (io_uring accept/receive/send) costs less CPU per reply than readiness with epoll", scenario: "throughput", verdict: v_completion },
    Claim { id: "ours-like-nginx", seed: "today", section: "peer servers", text: "evdispatch's server on epoll costs about what nginx costs per reply", scenario: "throughput", verdict: v_ours_like_nginx },
    Claim { id: "overflow-past-knee", seed: "004", section: "Table 1", text: "no signal-queue overflow below the knee; past it the RT-signal server overflows and lives on its fallback", scenario: "table1", verdict: v_overflow_past_knee },
    Claim { id: "per-fd-no-overflow", seed: "004", section: "§3.4; 002 slides 17–18", text: "signal-per-fd (coalescing; our rtsig-batch) avoids signal-queue overflow", scenario: "table1", verdict: v_per_fd_no_overflow },
    Claim { id: "overflow-tailspin", seed: "004", section: "§3.3", text: "recovering from overflow with a high-overhead mechanism can send an overloaded server into a tailspin", scenario: "table1", verdict: v_tailspin },
    Claim { id: "recovery-loses-nothing", seed: "004", section: "§3.3 (notification leak); 000 §2", text: "with a flush-and-poll fallback on SIGIO, an RT-signal server loses no event (no hung server)", scenario: "table1", verdict: v_no_event_lost },
    Claim { id: "hybrid-best-of-both", seed: "000", section: "§4, §6, §7", text: "a hybrid server gets RT-signal latency at light load and polling throughput at heavy load", scenario: "hybrid", verdict: v_hybrid_best_of_both },
    Claim { id: "hybrid-switches-back", seed: "000", section: "§6", text: "with the poll interest set maintained alongside, the hybrid returns to signals when load subsides", scenario: "hybrid", verdict: v_hybrid_switches_back },
    Claim { id: "no-thundering-herd", seed: "004", section: "§2.2 (select)", text: "Linux wakes a single thread per event, so there is no thundering herd", scenario: "today", verdict: v_no_herd },
    Claim { id: "wake-one-available", seed: "000", section: "§6", text: "the option of waking only one thread fixes the herd (today EPOLLEXCLUSIVE and SO_REUSEPORT)", scenario: "today", verdict: v_wake_one },
    Claim { id: "threads-memory", seed: "004", section: "§2.1", text: "a thread per connection costs far more memory per connection than an event-driven server", scenario: "today", verdict: v_threads_memory },
    Claim { id: "memory-like-peers", seed: "today", section: "memory per idle connection", text: "evdispatch's server holds an idle connection in as little memory as the peer servers", scenario: "today", verdict: v_memory_like_peers },
    Claim { id: "loadgen-vs-wrk", seed: "today", section: "load generator", text: "evdispatch load drives a server as hard as wrk in closed loop", scenario: "loadcheck", verdict: v_vs_wrk },
    Claim { id: "loadgen-vs-httperf", seed: "today", section: "load generator", text: "evdispatch load and httperf measure the same reply rate in open loop", scenario: "loadcheck", verdict: v_vs_httperf },
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
