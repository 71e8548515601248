//! The claims scenario `today` decides, each with the seed and section it
//! comes from and the function that computes its verdict from the
//! scenario's record (see [`crate::claims`] for the verdicts and helpers).

use crate::claims::*;
use crate::figure::fmt_num;
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide, in the order the report lists them.
pub static CLAIMS: &[Claim] = &[
    Claim { id: "no-thundering-herd", seed: "004", section: "§2.2 (select)", text: "Linux wakes a single thread per event, so there is no thundering herd", verdict: v_no_herd },
    Claim { id: "wake-one-available", seed: "000", section: "§6", text: "the option of waking only one thread fixes the herd (today EPOLLEXCLUSIVE and SO_REUSEPORT)", verdict: v_wake_one },
    Claim { id: "threads-memory", seed: "004", section: "§2.1", text: "a thread per connection costs far more memory per connection than an event-driven server", verdict: v_threads_memory },
    Claim { id: "memory-like-peers", seed: "today", section: "memory per idle connection", text: "evdispatch's server holds an idle connection in as little memory as the peer servers", verdict: v_memory_like_peers },
];

fn herd(rec: &ScenarioRecord, mode: &str) -> Option<(f64, f64)> {
    // At the lowest rate: connections arrive one at a time, so every wake-up
    // of a worker that finds nothing to accept is the herd's.
    let f = [
        ("part", value_of("herd")),
        ("listener_mode", value_of(mode)),
    ];
    let r = smallest(rec, &f, "rate")?;
    let mut g = f.to_vec();
    g.push(("rate", value_of(r)));
    Some((r, at(rec, &g, "wakeups_per_accept")?))
}

fn v_no_herd(rec: &ScenarioRecord) -> Judged {
    let (r, plain) = herd(rec, "shared (plain)").need("wake-ups with a plain shared listener")?;
    Ok(verdict(
        band(plain <= 1.1, plain <= 1.3),
        vec![("rate /s", r), ("listener reports per accept, plain shared listener", plain)],
        format!("two epoll workers sharing a listener without EPOLLEXCLUSIVE: {} listener reports per accepted connection at {}/s (holds up to 1.1, partly up to 1.3; 2.0 would be every worker woken for every connection). Seed 004 said of select: \"not a problem with Linux 2.4.0, as it supports single thread wake-up\"; epoll registrations in several sets are all woken.", fmt_num(plain), fmt_num(r)),
    ))
}

fn v_wake_one(rec: &ScenarioRecord) -> Judged {
    let excl = herd(rec, "shared + EPOLLEXCLUSIVE");
    let rp = herd(rec, "SO_REUSEPORT");
    let plain = herd(rec, "shared (plain)");
    let ((_, e), (_, r)) = (excl, rp).need("wake-ups with EPOLLEXCLUSIVE and SO_REUSEPORT")?;
    let mut nums = vec![
        ("EPOLLEXCLUSIVE reports per accept", e),
        ("SO_REUSEPORT reports per accept", r),
    ];
    if let Some((_, p)) = plain {
        nums.push(("plain shared listener", p));
    }
    Ok(verdict(
        band(e <= 1.1 && r <= 1.1, e <= 1.1 || r <= 1.1),
        nums,
        "seed 000 asked for \"the option of waking only one thread\"; Linux now has two: EPOLLEXCLUSIVE on a shared listener and one SO_REUSEPORT listener per worker. Holds if both keep listener reports per accepted connection at ≤ 1.1, partly if one does.",
    ))
}

fn mem(rec: &ScenarioRecord, series: &str) -> Option<f64> {
    at(
        rec,
        &[("part", value_of("memory")), of_series(series)],
        "rss_per_conn_bytes",
    )
}

fn v_threads_memory(rec: &ScenarioRecord) -> Judged {
    let (t, e) = (mem(rec, "threads"), mem(rec, "epoll"))
        .need("memory per connection for threads and epoll")?;
    let g = t / e.max(1.0);
    Ok(verdict(band(g >= 4.0, g >= 1.5), vec![("threads B/conn", t), ("epoll B/conn", e), ("ratio", g)],
        format!("a thread per connection cost ×{} the resident memory of an event loop's connection (holds from ×4, partly from ×1.5). Only touched stack pages are resident, so the gap is smaller than the 8 MB of virtual stack a thread reserves.", fmt_num(g))))
}

fn v_memory_like_peers(rec: &ScenarioRecord) -> Judged {
    let ours = mem(rec, "epoll").need("our server's memory per connection")?;
    let peers: Vec<(&str, f64)> = ["nginx", "lighttpd", "h2o"]
        .into_iter()
        .filter_map(|p| Some((p, mem(rec, p)?)))
        .collect();
    if peers.is_empty() {
        return Err(missing("a peer's memory per connection"));
    }
    let best = peers.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let g = ours / best.max(1.0);
    let mut nums = vec![("ours (epoll) B/conn", ours)];
    for (p, v) in &peers {
        nums.push((*p, *v));
    }
    Ok(verdict(
        band(g <= 1.5, g <= 3.0),
        nums,
        format!("our server holds an idle connection in ×{} the user memory of the leanest peer (holds up to ×1.5, partly up to ×3)", fmt_num(g)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;

    use serde_json::json;

    #[test]
    fn today_claims() {
        let herd = |mode: &str, w: f64| {
            pt(
                mode,
                json!({"part": "herd", "listener_mode": mode, "rate": 500.0}),
                json!({"wakeups_per_accept": w}),
            )
        };
        let mem = |s: &str, b: f64| {
            pt(
                s,
                json!({"part": "memory"}),
                json!({"rss_per_conn_bytes": b}),
            )
        };
        let good = rec(
            "today",
            vec![
                herd("shared (plain)", 1.0),
                herd("shared + EPOLLEXCLUSIVE", 1.0),
                herd("SO_REUSEPORT", 1.0),
                mem("threads", 20000.0),
                mem("epoll", 1000.0),
                mem("nginx", 900.0),
            ],
        );
        let bad = rec(
            "today",
            vec![
                herd("shared (plain)", 1.9),
                herd("shared + EPOLLEXCLUSIVE", 1.8),
                herd("SO_REUSEPORT", 1.9),
                mem("threads", 1100.0),
                mem("epoll", 1000.0),
                mem("nginx", 200.0),
            ],
        );
        holds_and_fails(
            CLAIMS,
            &[
                "no-thundering-herd",
                "wake-one-available",
                "threads-memory",
                "memory-like-peers",
            ],
            &good,
            &bad,
        );
    }
}
