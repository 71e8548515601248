//! The claims scenario `poller` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use serde_json::Value;

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "poll-grows", seed: "001", section: "Scalability of poll() and /dev/poll", text: "poll's cost grows with the number of (idle) descriptors watched", verdict: v_poll_grows },
    Claim { id: "epoll-flat", seed: "001", section: "/dev/poll vs. poll; kqueue()", text: "a kernel-held interest set (/dev/poll, today epoll) checks for activity in time independent of idle descriptors", verdict: v_epoll_flat },
    Claim { id: "devpoll-faster", seed: "001", section: "/dev/poll vs. poll", text: "in all cases tested with sockets, /dev/poll (epoll) was appreciably faster than poll", verdict: v_devpoll_faster },
    Claim { id: "active-only", seed: "001", section: "FreeBSD table note (J. Lemon)", text: "kqueue-like mechanisms scale with the active descriptors only: linear in active, flat in total", verdict: v_active_only },
    Claim { id: "ring-minor", seed: "000", section: "§3.3 Reducing result copy operations", text: "a result area shared with the kernel (mmap'd, today io_uring's rings) matters less than keeping the interest set in the kernel", verdict: v_ring_minor },
    Claim { id: "library-near-raw", seed: "today", section: "Poller_bench rows", text: "evdispatch's Poller adds little over the bare epoll system calls", verdict: v_near_raw },
    Claim { id: "socketpair-open-close-flat", seed: "001", section: "Poller_bench: time to open and close socketpairs", text: "opening and closing a socketpair costs tens of µs on Linux, per pair not growing with N (Solaris 7's took 165 ms and 30 ms each of 10,000)", verdict: v_pairs_flat },
    Claim { id: "fd-alloc-flat", seed: "003", section: "Open and Close", text: "with a two-level bitmap, finding a free descriptor does not slow down as more descriptors are open", verdict: v_fd_alloc },
];

fn poller_a1() -> Vec<(&'static str, Value)> {
    vec![
        ("bench", value_of("poller")),
        ("active", value_of(1)),
        ("placement", value_of("rotating")),
    ]
}

fn growth(rec: &ScenarioRecord, mech: &str) -> Option<(f64, f64, f64, f64)> {
    let mut f = poller_a1();
    f.push(of_series(mech));
    let ((n0, t0), (n1, t1)) = ends(rec, &f, "fds", "median_us")?;
    (t0 > 0.0).then_some((n0, n1, t0, t1))
}

/// Kegel's largest N with open and close times (10,000 socketpairs).
const KEGEL_PAIRS: f64 = 10_000.0;

fn v_pairs_flat(rec: &ScenarioRecord) -> Judged {
    let f = [("bench", value_of("pairs"))];
    let open = rec.xy(&f, "fds", "open_us_per_pair");
    let close = rec.xy(&f, "fds", "close_us_per_pair");
    let (Some(&(n0, o0)), Some(&(n1, o1))) = (open.first(), open.last()) else {
        return Err(missing("socketpair open and close times"));
    };
    let ((_, c0), (_, c1)) =
        (close.first().copied(), close.last().copied()).need("socketpair close times")?;
    if n1 < KEGEL_PAIRS {
        return unreached(
            rec,
            vec![
                ("largest N", n1),
                ("open µs per pair", o1),
                ("close µs per pair", c1),
            ],
            format!(
                "the largest N run was {} socketpairs; Kegel's times are for 10,000",
                fmt_num(n1)
            ),
        );
    }
    if n0 == n1 {
        return Err(missing("socketpair times at two values of N"));
    }
    let (go, gc) = (o1 / o0.max(1e-9), c1 / c0.max(1e-9));
    let worst = go.max(gc);
    Ok(verdict(
        band(worst <= 2.0, worst <= 4.0),
        vec![("N from", n0), ("N to", n1), ("open µs per pair at first N", o0), ("open µs per pair at last N", o1), ("close µs per pair at first N", c0), ("close µs per pair at last N", c1)],
        format!("from {} to {} socketpairs the time to open one went ×{} ({} µs at the last N), to close one ×{} ({} µs) (holds up to ×2, partly up to ×4). Kegel: 26 µs and 14 µs each of 10,000 on Linux 2.4.0-test10; 165 ms and 30 ms on Solaris 7.", fmt_num(n0), fmt_num(n1), fmt_num(go), fmt_num(o1), fmt_num(gc), fmt_num(c1)),
    ))
}

fn v_poll_grows(rec: &ScenarioRecord) -> Judged {
    let (n0, n1, t0, t1) = growth(rec, "poll").need("poll at two descriptor counts")?;
    let g = t1 / t0;
    let linear = n1 / n0;
    Ok(verdict(
        band(g >= 0.1 * linear, g >= 2.0),
        vec![("N from", n0), ("N to", n1), ("poll µs at first N", t0), ("poll µs at last N", t1), ("growth ×", g)],
        format!("poll's median grew ×{} for ×{} descriptors (holds from a tenth of linear growth, ×{}; partly from ×2). Kegel saw ×493 (Linux 2.2.14) and ×300 (2.4.0-test10) from 100 to 10,000.", fmt_num(g), fmt_num(linear), fmt_num(0.1 * linear)),
    ))
}

fn v_epoll_flat(rec: &ScenarioRecord) -> Judged {
    let (n0, n1, t0, t1) = growth(rec, "epoll").need("epoll at two descriptor counts")?;
    let g = t1 / t0;
    Ok(verdict(
        band(g <= 1.5, g <= 3.0),
        vec![("N from", n0), ("N to", n1), ("epoll µs at first N", t0), ("epoll µs at last N", t1), ("growth ×", g)],
        format!("epoll's median changed ×{} for ×{} descriptors (holds up to ×1.5, partly up to ×3). Linux 2.2's /dev/poll grew ×224, Solaris 7's ×1.5, kqueue's not at all.", fmt_num(g), fmt_num(n1 / n0)),
    ))
}

fn v_devpoll_faster(rec: &ScenarioRecord) -> Judged {
    let mut f = poller_a1();
    f.push(of_series("poll"));
    let poll = rec.xy(&f, "fds", "median_us");
    let mut f = poller_a1();
    f.push(of_series("epoll"));
    let epoll = rec.xy(&f, "fds", "median_us");
    let pairs: Vec<(f64, f64)> = poll
        .iter()
        .filter_map(|(n, p)| epoll.iter().find(|(m, _)| m == n).map(|(_, e)| (*n, p / e)))
        .collect();
    if pairs.is_empty() {
        return Err(missing("poll and epoll at the same N"));
    }
    let worst = pairs.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let last = pairs.last().map(|p| p.1).unwrap_or(0.0);
    let nums = pairs
        .iter()
        .map(|(n, r)| (format!("poll/epoll × at N = {}", fmt_num(*n)), *r));
    Ok(verdict(
        band(worst >= 1.5, last >= 1.5),
        nums.collect(),
        format!("poll took ×{} epoll's time at worst and ×{} at the largest N (holds if epoll is at least ×1.5 faster at every N; partly if only at the largest). Kegel: /dev/poll was six times faster than poll at 1,000 fds and 2.7 times at 10,000 on Linux 2.2.14.", fmt_num(worst), fmt_num(last)),
    ))
}

fn v_active_only(rec: &ScenarioRecord) -> Judged {
    let (_, _, t0, t1) = growth(rec, "epoll").need("epoll at two descriptor counts")?;
    let n = largest(
        rec,
        &[("bench", value_of("poller")), of_series("epoll")],
        "fds",
    )
    .need("epoll")?;
    let f = [
        ("bench", value_of("poller")),
        of_series("epoll"),
        ("fds", value_of(n)),
        ("placement", value_of("rotating")),
    ];
    let ((a0, u0), (a1, u1)) = ends(rec, &f, "active", "median_us")
        .need("epoll at two active counts (the tiny profile runs A = 1 only)")?;
    let flat_n = t1 / t0 <= 1.5;
    let grows_a = u1 / u0 >= 0.2 * (a1 / a0);
    Ok(verdict(
        both(flat_n, grows_a),
        vec![("growth with N ×", t1 / t0), ("A from", a0), ("A to", a1), ("growth with A ×", u1 / u0)],
        format!("flat in N: {} (×{}, needs ≤ 1.5); follows A: {} (×{} for ×{} active, needs ≥ a fifth of proportional)", flat_n, fmt_num(t1 / t0), grows_a, fmt_num(u1 / u0), fmt_num(a1 / a0)),
    ))
}

fn v_ring_minor(rec: &ScenarioRecord) -> Judged {
    let n = largest(
        rec,
        &[("bench", value_of("poller")), of_series("poll")],
        "fds",
    )
    .need("poll")?;
    let at_n = |m: &str| {
        let mut f = poller_a1();
        f.extend([of_series(m), ("fds", value_of(n))]);
        at(rec, &f, "median_us")
    };
    let ((p, e), u) = at_n("poll")
        .zip(at_n("epoll"))
        .zip(at_n("uring"))
        .need("poll, epoll and uring at the same N")?;
    let interest = p / e;
    let ring = e / u;
    Ok(verdict(
        band(interest > 2.0 * ring, interest > ring),
        vec![("N", n), ("poll/epoll ×", interest), ("epoll/uring ×", ring)],
        format!("keeping the interest set in the kernel gains ×{} (poll → epoll), the shared result ring ×{} more (epoll → uring); holds if the first gain is over twice the second, partly if larger", fmt_num(interest), fmt_num(ring)),
    ))
}

fn v_near_raw(rec: &ScenarioRecord) -> Judged {
    let n = largest(
        rec,
        &[("bench", value_of("poller")), of_series("raw-epoll")],
        "fds",
    )
    .need("raw-epoll")?;
    let at_n = |m: &str| {
        let mut f = poller_a1();
        f.extend([of_series(m), ("fds", value_of(n))]);
        at(rec, &f, "median_us")
    };
    let raw = at_n("raw-epoll").need("raw-epoll at the largest N")?;
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
        return Err(missing("evdispatch's epoll beside raw-epoll"));
    }
    Ok(verdict(
        band(worst <= 1.25, worst <= 1.6),
        nums,
        format!("evdispatch's epoll row costs ×{} the bare system-call loop at N = {} (holds up to ×1.25, partly up to ×1.6); the other libraries are shown for comparison", fmt_num(worst), fmt_num(n)),
    ))
}

fn v_fd_alloc(rec: &ScenarioRecord) -> Judged {
    let f = [("bench", value_of("fdalloc"))];
    let ((n0, t0), (n1, t1)) = ends(rec, &f, "fds", "second_alloc_far_median_us")
        .need("bench fdalloc at two descriptor counts")?;
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
    Ok(verdict(
        band(g <= 2.0, g <= 5.0),
        nums,
        format!("finding the far hole took ×{} longer with ×{} descriptors open (holds up to ×2: allocation flat, as with two bitmaps; partly up to ×5; a single bitmap scanned word by word grows with N)", fmt_num(g), fmt_num(n1 / n0)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    /// Poller cells: (row, fds, active, median).
    fn poller(cells: &[(&str, u32, u32, f64)]) -> ScenarioRecord {
        rec(
        "poller",
        cells
            .iter()
            .map(|(m, n, a, t)| {
                pt(m, json!({"bench": "poller", "mechanism": m, "fds": n, "active": a, "placement": "rotating"}), json!({"median_us": t}))
            })
            .collect(),
    )
    }

    #[test]
    fn poller_claims() {
        let good = poller(&[
            ("poll", 100, 1, 5.0),
            ("poll", 10000, 1, 700.0),
            ("epoll", 100, 1, 0.5),
            ("epoll", 10000, 1, 0.55),
            ("epoll", 10000, 100, 30.0),
            ("uring", 10000, 1, 0.4),
            ("raw-epoll", 10000, 1, 0.5),
        ]);
        let bad = poller(&[
            ("poll", 100, 1, 5.0),
            ("poll", 10000, 1, 6.0),
            ("epoll", 100, 1, 0.5),
            ("epoll", 10000, 1, 5.0),
            ("epoll", 10000, 100, 5.5),
            ("uring", 10000, 1, 0.1),
            ("raw-epoll", 10000, 1, 1.0),
        ]);
        holds_and_fails(
            CLAIMS,
            &[
                "poll-grows",
                "epoll-flat",
                "devpoll-faster",
                "active-only",
                "ring-minor",
                "library-near-raw",
            ],
            &good,
            &bad,
        );
        check(
            CLAIMS,
            "poll-grows",
            &poller(&[("poll", 100, 1, 5.0), ("poll", 10000, 1, 25.0)]),
            Outcome::Partly,
        );
        let fd = |far: f64| {
            rec(
                "poller",
                vec![
                    pt(
                        "fdalloc",
                        json!({"bench": "fdalloc", "fds": 100}),
                        json!({"second_alloc_far_median_us": 0.3, "second_alloc_near_median_us": 0.3}),
                    ),
                    pt(
                        "fdalloc",
                        json!({"bench": "fdalloc", "fds": 19000}),
                        json!({"second_alloc_far_median_us": far, "second_alloc_near_median_us": 0.3}),
                    ),
                ],
            )
        };
        check(CLAIMS, "fd-alloc-flat", &fd(0.35), Outcome::Holds);
        check(CLAIMS, "fd-alloc-flat", &fd(9.0), Outcome::Fails);
    }

    /// Socketpair points: (N, open µs per pair, close µs per pair).
    fn pairs(rows: &[(u32, f64, f64)]) -> ScenarioRecord {
        rec(
            "poller",
            rows.iter()
                .map(|(n, o, c)| {
                    pt(
                        "socketpair",
                        json!({"bench": "pairs", "fds": n}),
                        json!({"open_us_per_pair": o, "close_us_per_pair": c}),
                    )
                })
                .collect(),
        )
    }

    #[test]
    fn socketpair_times_hold_fail_and_need_kegels_n() {
        let id = "socketpair-open-close-flat";
        let flat = pairs(&[(100, 3.0, 2.0), (1000, 3.1, 2.0), (10000, 3.5, 2.4)]);
        let growing = pairs(&[(100, 3.0, 2.0), (10000, 30.0, 2.0)]);
        check(CLAIMS, id, &flat, Outcome::Holds);
        check(CLAIMS, id, &growing, Outcome::Fails);
        check(
            CLAIMS,
            id,
            &pairs(&[(100, 3.0, 2.0), (1000, 3.0, 2.0)]),
            Outcome::NotReached,
        );
        check(CLAIMS, id, &empty("poller"), Outcome::NotMeasured);
    }
}
