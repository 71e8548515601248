//! The claims scenario `throughput` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use serde_json::Value;

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "multi-accept-select", seed: "004", section: "§4.1–4.2, Figs. 6–9", text: "multi-accept select sustains far higher throughput than select with one accept per call", verdict: v_multi_accept },
    Claim { id: "multi-accept-like-rtsig", seed: "004", section: "§4.1, §5", text: "multi-accept select reaches throughput similar to RT signals despite its overhead", verdict: v_multi_accept_like_rtsig },
    Claim { id: "devpoll-collapses", seed: "004", section: "§4.1, Figs. 6–9", text: "/dev/poll's (epoll's) throughput collapses under overload", verdict: v_devpoll_collapse },
    Claim { id: "rtsig-cpu-lower", seed: "004", section: "§4.1, Figs. 7b–8b", text: "with thousands of idle connections RT signals use far less CPU than polling mechanisms at the same load", verdict: v_rtsig_cpu_lower },
    Claim { id: "per-fd-higher-load", seed: "004", section: "§4.2", text: "signal-per-fd (at most one signal queued per descriptor; our rtsig-perfd) sustains slightly higher load than plain RT signals", verdict: v_per_fd_higher_load },
    Claim { id: "completion-cheaper", seed: "today", section: "004 §2.2 (NT completion ports)", text: "a completion model (io_uring accept/receive/send) costs less CPU per reply than readiness with epoll", verdict: v_completion },
    Claim { id: "ours-like-nginx", seed: "today", section: "peer servers", text: "evdispatch's server on epoll costs about what nginx costs per reply", verdict: v_ours_like_nginx },
];

fn smallest_idle(rec: &ScenarioRecord) -> Vec<(&'static str, Value)> {
    let i = smallest(rec, &[], "idle").unwrap_or(252.0);
    let b = smallest(rec, &[("idle", value_of(i))], "reply_bytes").unwrap_or(1.0);
    vec![("idle", value_of(i)), ("reply_bytes", value_of(b))]
}

fn best_of(rec: &ScenarioRecord, series: &str) -> Option<f64> {
    let mut f = smallest_idle(rec);
    f.push(of_series(series));
    peak(rec, &f, "reply_rate")
}

/// The top of `m`'s sweep (fewest idle connections): its offered rate,
/// its replies, and whether the server fell behind there (answered < 95%)
/// with the generator not the limit.
fn top(rec: &ScenarioRecord, m: &str) -> Option<(f64, f64, bool)> {
    let mut f = smallest_idle(rec);
    f.push(of_series(m));
    let p = rec
        .select(&f)
        .filter(|p| p.num("rate").is_some() && p.metric("reply_rate").is_some())
        .max_by(|a, b| {
            a.num("rate")
                .unwrap_or(0.0)
                .total_cmp(&b.num("rate").unwrap_or(0.0))
        })?;
    let (r, y) = (p.num("rate")?, p.metric("reply_rate")?);
    Some((r, y, y < KEEP * r && !generator_bound(p)))
}

/// `Err(not reached)` when neither `a` nor `b` fell behind the offered
/// rate at the top of the sweep (fewest idle connections) with the
/// generator not the limit: the sweep never reached either one's limit,
/// so their peaks (both the offered rate) could not differ.
fn neither_overloaded(rec: &ScenarioRecord, a: &str, b: &str) -> Result<(), Verdict> {
    let Some(((ra, ya, ba), (rb, yb, bb))) = top(rec, a).and_then(|x| Some((x, top(rec, b)?)))
    else {
        return Ok(());
    };
    if ba || bb {
        return Ok(());
    }
    unreached(
        rec,
        vec![
            (format!("{a} replies/s at the top rate"), ya),
            (format!("{b} replies/s at the top rate"), yb),
            ("top offered rate /s".into(), ra.max(rb)),
        ],
        format!(
            "the sweep never overloaded {a} nor {b} (each answered ≥ 95% of the top offered rates {}/s and {}/s, or the generator may have been the limit), so their limits were not reached",
            fmt_num(ra),
            fmt_num(rb)
        ),
    )
    .map(|_| ())
}

fn v_multi_accept(rec: &ScenarioRecord) -> Judged {
    let (all, one) = (best_of(rec, "select"), best_of(rec, "select (accept one)"))
        .need("select with one accept and with multi-accept")?;
    neither_overloaded(rec, "select", "select (accept one)")?;
    let g = all / one;
    Ok(verdict(band(g >= 1.2, g >= 1.05), vec![("multi-accept best replies/s", all), ("one-accept best replies/s", one), ("ratio", g)],
        format!("multi-accept select's best throughput was ×{} single-accept's (holds from ×1.2, partly from ×1.05)", fmt_num(g))))
}

fn v_multi_accept_like_rtsig(rec: &ScenarioRecord) -> Judged {
    let (sel, rt) =
        (best_of(rec, "select"), best_of(rec, "rtsig")).need("multi-accept select and rtsig")?;
    neither_overloaded(rec, "select", "rtsig")?;
    let g = sel / rt;
    Ok(verdict(band(g >= 0.9, g >= 0.75), vec![("multi-accept select best", sel), ("rtsig best", rt), ("ratio", g)],
        format!("multi-accept select reached ×{} of rtsig's best throughput (holds from 0.9, partly from 0.75)", fmt_num(g))))
}

fn v_devpoll_collapse(rec: &ScenarioRecord) -> Judged {
    let mut f = smallest_idle(rec);
    f.push(of_series("epoll"));
    let xy = rec.xy(&f, "rate", "reply_rate");
    let best = xy.iter().map(|p| p.1).fold(0.0, f64::max);
    let (top_rate, at_top, behind) = top(rec, "epoll").need("epoll")?;
    if !behind {
        return unreached(
            rec,
            vec![("epoll replies/s at the top rate", at_top), ("top offered rate /s", top_rate)],
            format!(
                "the sweep never overloaded epoll: {} replies/s at the top offered rate {}/s (≥ 95% answered, or the generator may have been the limit)",
                fmt_num(at_top),
                fmt_num(top_rate)
            ),
        );
    }
    let g = at_top / best;
    Ok(verdict(band(g <= 0.5, g <= 0.8), vec![("epoll peak replies/s", best), ("at the top rate", at_top), ("ratio", g)],
        format!("past its peak epoll kept ×{} of its best throughput (the claim holds if it falls to ≤ 0.5, partly ≤ 0.8; the seed could not explain /dev/poll's collapse)", fmt_num(g))))
}

fn v_rtsig_cpu_lower(rec: &ScenarioRecord) -> Judged {
    let i = largest(rec, &[of_series("rtsig")], "idle").need("rtsig")?;
    let r = smallest(rec, &[of_series("rtsig"), ("idle", value_of(i))], "rate").need("rtsig")?;
    let cpu = |m: &str| {
        at(
            rec,
            &[of_series(m), ("idle", value_of(i)), ("rate", value_of(r))],
            "server_cpu_pct",
        )
    };
    let (rt, p) = (cpu("rtsig"), cpu("poll")).need("rtsig and poll at the same load")?;
    let g = p / rt.max(0.5);
    Ok(verdict(
        band(g >= 2.0, g >= 1.2),
        vec![("idle", i), ("rate /s", r), ("poll CPU %", p), ("rtsig CPU %", rt), ("ratio", g)],
        format!("with {} idle connections at {}/s poll used ×{} rtsig's CPU (holds from ×2, partly from ×1.2)", fmt_num(i), fmt_num(r), fmt_num(g)),
    ))
}

fn v_per_fd_higher_load(rec: &ScenarioRecord) -> Judged {
    let (b, r) =
        (best_of(rec, "rtsig-perfd"), best_of(rec, "rtsig")).need("rtsig and rtsig-perfd")?;
    neither_overloaded(rec, "rtsig-perfd", "rtsig")?;
    let g = b / r;
    Ok(verdict(if g >= 1.02 { Outcome::Holds } else if g >= 0.98 { Outcome::Partly } else { Outcome::Fails },
        vec![("rtsig-perfd best replies/s", b), ("rtsig best replies/s", r), ("ratio", g)],
        format!("rtsig-perfd (at most one signal queued per descriptor, user space's signal-per-fd) peaked at ×{} rtsig's throughput (holds from ×1.02, partly within ±2%)", fmt_num(g))))
}

fn v_completion(rec: &ScenarioRecord) -> Judged {
    let f = smallest_idle(rec);
    let r = smallest(
        rec,
        &[f[0].clone(), f[1].clone(), of_series("epoll")],
        "rate",
    )
    .need("epoll")?;
    let per = |m: &str| {
        let mut g = f.clone();
        g.extend([of_series(m), ("rate", value_of(r))]);
        at(rec, &g, "cpu_us_per_reply")
    };
    let (c, e) = (per("uring-completion"), per("epoll"))
        .need("uring-completion and epoll at the same rate")?;
    let g = c / e;
    Ok(verdict(
        band(g <= 0.9, g <= 1.1),
        vec![("rate /s", r), ("uring-completion CPU µs per reply", c), ("epoll CPU µs per reply", e), ("ratio", g)],
        format!("at {}/s, completions (accept, receive and send through io_uring) cost ×{} epoll's CPU per reply (holds at ≤ ×0.9, partly ≤ ×1.1)", fmt_num(r), fmt_num(g)),
    ))
}

fn v_ours_like_nginx(rec: &ScenarioRecord) -> Judged {
    let f = smallest_idle(rec);
    let r = smallest(
        rec,
        &[f[0].clone(), f[1].clone(), of_series("nginx")],
        "rate",
    )
    .need("nginx")?;
    let per = |m: &str| {
        let mut g = f.clone();
        g.extend([of_series(m), ("rate", value_of(r))]);
        at(rec, &g, "cpu_us_per_reply")
    };
    let (o, n) = (per("epoll"), per("nginx")).need("ours on epoll and nginx at the same rate")?;
    let g = o / n;
    Ok(verdict(
        band(g <= 1.2, g <= 2.0),
        vec![("rate /s", r), ("ours (epoll) CPU µs per reply", o), ("nginx CPU µs per reply", n), ("ratio", g)],
        format!("at {}/s our server on epoll spent ×{} nginx's CPU per reply (holds up to ×1.2, partly up to ×2)", fmt_num(r), fmt_num(g)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    fn thr(rows: &[(&str, u32, f64, f64, f64)]) -> ScenarioRecord {
        rec(
        "throughput",
        rows.iter()
            .map(|(m, idle, r, y, cpu)| {
                pt(m, json!({"idle": idle, "reply_bytes": 1, "rate": r}), json!({"reply_rate": y, "server_cpu_pct": cpu, "cpu_us_per_reply": cpu / 100.0 / y * 1e6}))
            })
            .collect(),
    )
    }

    #[test]
    fn throughput_claims() {
        let good = thr(&[
            ("select", 252, 4000.0, 4000.0, 50.0),
            ("select (accept one)", 252, 4000.0, 2500.0, 100.0),
            ("rtsig", 252, 4000.0, 4000.0, 30.0),
            ("rtsig-perfd", 252, 4000.0, 4000.0, 25.0),
            ("rtsig-perfd", 252, 8000.0, 7000.0, 80.0),
            ("rtsig", 252, 8000.0, 4200.0, 100.0),
            ("epoll", 252, 4000.0, 4000.0, 40.0),
            ("epoll", 252, 8000.0, 9000.0, 100.0),
            ("epoll", 252, 12000.0, 3000.0, 100.0),
            ("uring-completion", 252, 4000.0, 4000.0, 30.0),
            ("nginx", 252, 4000.0, 4000.0, 38.0),
            ("rtsig", 6000, 2000.0, 2000.0, 10.0),
            ("poll", 6000, 2000.0, 2000.0, 60.0),
        ]);
        let bad = thr(&[
            ("select", 252, 4000.0, 2500.0, 100.0),
            ("select (accept one)", 252, 4000.0, 2500.0, 100.0),
            ("rtsig", 252, 4000.0, 4000.0, 30.0),
            ("rtsig-perfd", 252, 4000.0, 3000.0, 40.0),
            ("epoll", 252, 4000.0, 4000.0, 40.0),
            ("epoll", 252, 12000.0, 9000.0, 100.0),
            ("uring-completion", 252, 4000.0, 4000.0, 60.0),
            ("nginx", 252, 4000.0, 4000.0, 10.0),
            ("rtsig", 6000, 2000.0, 2000.0, 60.0),
            ("poll", 6000, 2000.0, 2000.0, 60.0),
        ]);
        holds_and_fails(
            CLAIMS,
            &[
                "multi-accept-select",
                "multi-accept-like-rtsig",
                "devpoll-collapses",
                "rtsig-cpu-lower",
                "per-fd-higher-load",
                "completion-cheaper",
                "ours-like-nginx",
            ],
            &good,
            &bad,
        );
        // A sweep that overloads nobody decides no comparison of peaks.
        let unloaded = thr(&[
            ("select", 252, 4000.0, 3990.0, 50.0),
            ("select (accept one)", 252, 4000.0, 4000.0, 90.0),
            ("rtsig", 252, 4000.0, 3980.0, 30.0),
            ("rtsig-perfd", 252, 4000.0, 4000.0, 25.0),
            ("epoll", 252, 4000.0, 4000.0, 25.0),
        ]);
        for id in [
            "multi-accept-select",
            "multi-accept-like-rtsig",
            "per-fd-higher-load",
            "devpoll-collapses",
        ] {
            check(CLAIMS, id, &unloaded, Outcome::NotReached);
        }
        // Nor does one that fell behind because the generator was the limit.
        let mut bound = good.clone();
        for p in bound.points.iter_mut() {
            p.metrics.insert("generator_limited".into(), 1.0);
        }
        for id in [
            "multi-accept-select",
            "devpoll-collapses",
            "per-fd-higher-load",
        ] {
            check(CLAIMS, id, &bound, Outcome::NotReached);
        }
    }
}
