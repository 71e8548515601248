//! `bench storm`: how often each RT-signal mechanism overflows its queue in
//! a storm of busy descriptors, with the queue at least one signal per
//! descriptor (seed 004's condition for signal-per-fd never to overflow) and
//! smaller.
//!
//! For each mechanism, descriptor count N and queue length Q, a child
//! process lowers its `RLIMIT_SIGPENDING` to Q (the limit counts the whole
//! user's queued signals, so it is never lowered in this process) and
//! registers N socketpairs for reading. Each round writes one byte to every
//! socket (a signal each), then serves them: at each wait, every socket
//! reported for the first time in the round receives `burst` more single
//! bytes *while it is served* (data arriving on a busy connection, a signal
//! each where the socket is armed) and is read until `EAGAIN`. The round
//! ends when every socket has been served, and the consumer then waits
//! until a wait finds nothing (idle between rounds). No thread races the
//! waits, so a cell repeats exactly, apart from signals that other processes
//! of the user queue meanwhile (they count against the same limit).
//!
//! `rtsig` and `rtsig-batch` queue a signal per byte, so the bursts pile up
//! behind the round's first signals: about N·(1 + burst) at the peak.
//! `rtsig-perfd` queues nothing for a socket from the dequeue of its signal
//! to the next wait, so the bursts queue nothing and its queue holds at most
//! one signal per socket; with Q below N its round's first writes still
//! overflow (the gap between it and the kernel patch: an armed socket queues
//! one signal per change until its first dequeue).

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use evdispatch::{Events, Interest, Mechanism, Poller, Token};
use serde::{Deserialize, Serialize};

use crate::overflow::{as_child, cell_in_child, check_cells, drain, user_queued};

/// Arguments of `evdispatch bench storm`.
#[derive(Debug, clap::Args)]
pub struct StormArgs {
    /// Mechanisms, comma-separated (those with a signal queue).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "rtsig,rtsig-batch,rtsig-perfd"
    )]
    pub mechanisms: Vec<String>,
    /// Registered descriptors N (socketpairs, at most 9,000), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    pub fds: Vec<usize>,
    /// Queue lengths Q (the child's `RLIMIT_SIGPENDING`), comma-separated:
    /// a number, or relative to N as `fds`, `fds+K` or `fds/K`. The default
    /// gives one signal per descriptor plus 256 for the user's other
    /// processes (the limit counts theirs too: at exactly `fds`, one signal
    /// queued elsewhere makes a round's N-th write overflow), and a quarter
    /// of N.
    #[arg(long, value_delimiter = ',', default_value = "fds+256,fds/4")]
    pub queue: Vec<String>,
    /// Rounds (every socket written once and served per round).
    #[arg(long, default_value_t = 20)]
    pub rounds: usize,
    /// Bytes written to a socket, one at a time, while it is served.
    #[arg(long, default_value_t = 3)]
    pub burst: usize,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The environment variable that turns a re-executed `bench storm` into the
/// child of one cell: `mechanism,N,Q,rounds,burst`.
const CHILD: &str = "EVD_BENCH_STORM_CHILD";

/// One cell's figures, as the child reports them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StormCell {
    /// Mechanism name.
    pub mechanism: String,
    /// Registered descriptors.
    pub fds: usize,
    /// The child's `RLIMIT_SIGPENDING` (0: left as it was, in tests).
    pub queue_limit: u64,
    /// Rounds run.
    pub rounds: usize,
    /// Bytes written to each socket while it was served.
    pub burst: usize,
    /// Queue overflows (`SIGIO`), each recovered by a flush and a poll.
    pub overflows: u64,
    /// Recoveries.
    pub recoveries: u64,
    /// The most signals the user had queued before a wait (`SigQ`, which
    /// includes other processes of the user).
    pub queued_max: u64,
    /// Signals dequeued.
    pub signals_dequeued: u64,
    /// Dequeuing system calls.
    pub dequeue_calls: u64,
    /// Events merged into another of the same wait.
    pub coalesced: u64,
    /// rtsig-perfd: descriptors re-armed.
    pub rearms: u64,
    /// Waits.
    pub waits: u64,
    /// Events returned.
    pub events: u64,
    /// Sockets not served within 10 s of their round's writes (readiness lost).
    pub lost: u64,
    /// Wall time of the storm, ms (a shared machine's: for orientation only).
    pub elapsed_ms: f64,
}

/// `fds`, `fds+K`, `fds/K` or a number, for N = `n`.
fn queue_for(spec: &str, n: usize) -> anyhow::Result<u64> {
    let bad = || format!("--queue {spec}: a number, fds, fds+K or fds/K");
    let q = if let Some(rest) = spec.strip_prefix("fds") {
        match rest.split_at(rest.len().min(1)) {
            ("", _) => n as u64,
            ("+", k) => n as u64 + k.parse::<u64>().with_context(bad)?,
            ("/", k) => n as u64 / k.parse::<u64>().with_context(bad)?.max(1),
            _ => bail!(bad()),
        }
    } else {
        spec.parse().with_context(bad)?
    };
    if q == 0 {
        bail!("--queue {spec}: a queue of 0 signals for N = {n}");
    }
    Ok(q)
}

/// Run `evdispatch bench storm`.
pub fn run(args: StormArgs) -> anyhow::Result<()> {
    if let Some(cell) = as_child(CHILD, child)? {
        println!("{}", serde_json::to_string(&cell)?);
        return Ok(());
    }
    let mechanisms = check_cells(&args.mechanisms, &args.fds)?;
    if args.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    let mut cells = Vec::new();
    for &n in &args.fds {
        for q in &args.queue {
            let q = queue_for(q, n)?;
            for &m in &mechanisms {
                eprint!("\rbench storm: {m} N={n} Q={q}        ");
                let spec = format!("{m},{n},{q},{},{}", args.rounds, args.burst);
                cells.push(cell_in_child::<StormCell>(CHILD, &spec)?);
            }
        }
    }
    eprintln!();
    crate::output::emit(&cells, args.json, None, |cells| print(cells))
}

fn print(cells: &[StormCell]) {
    let lost: u64 = cells.iter().map(|c| c.lost).sum();
    if let Some(c) = cells.first() {
        println!(
            "Storm of busy descriptors: {} rounds, each socket written once, then {} more bytes while served; events lost: {lost}",
            c.rounds, c.burst
        );
    }
    println!(
        "{:<12} {:>5} {:>6} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>9} {:>5}",
        "mechanism",
        "N",
        "Q",
        "overflows",
        "queued max",
        "dequeued",
        "coalesced",
        "rearms",
        "waits",
        "events",
        "ms",
        "lost"
    );
    for c in cells {
        println!(
            "{:<12} {:>5} {:>6} {:>9} {:>10} {:>10} {:>9} {:>9} {:>8} {:>7} {:>9.1} {:>5}",
            c.mechanism,
            c.fds,
            c.queue_limit,
            c.overflows,
            c.queued_max,
            c.signals_dequeued,
            c.coalesced,
            c.rearms,
            c.waits,
            c.events,
            c.elapsed_ms,
            c.lost
        );
    }
}

/// One cell, in the child.
fn child(spec: &str) -> anyhow::Result<StormCell> {
    let parts: Vec<&str> = spec.split(',').collect();
    let [m, n, q, rounds, burst] = parts[..] else {
        bail!("malformed {CHILD}={spec}");
    };
    let q: u64 = q.parse()?;
    evdispatch_host::set_rlimit(evdispatch_host::Resource::Sigpending, Some(q))
        .context("lowering RLIMIT_SIGPENDING")?;
    let mut cell = busy_storm(m.parse()?, n.parse()?, rounds.parse()?, burst.parse()?)?;
    cell.queue_limit = q;
    Ok(cell)
}

/// The storm on `n` socketpairs, under whatever `RLIMIT_SIGPENDING` the
/// process has (see the module docs).
pub fn busy_storm(
    m: Mechanism,
    n: usize,
    rounds: usize,
    burst: usize,
) -> anyhow::Result<StormCell> {
    let mut p = Poller::new(m)?;
    let (mut readers, mut writers) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let (r, w) = UnixStream::pair()?;
        r.set_nonblocking(true)?;
        w.set_nonblocking(true)?;
        p.register(r.as_raw_fd(), Token(i), Interest::READABLE)?;
        readers.push(r);
        writers.push(w);
    }
    let mut ev = Events::with_capacity(256);
    let mut served = vec![false; n];
    let (mut lost, mut queued_max, mut bytes) = (0u64, 0u64, 0usize);
    let t0 = Instant::now();
    for _ in 0..rounds {
        for w in &mut writers {
            w.write_all(b"r")?;
        }
        served.fill(false);
        let mut left = n;
        let deadline = Instant::now() + Duration::from_secs(10);
        while left > 0 && Instant::now() < deadline {
            queued_max = queued_max.max(user_queued()?);
            p.wait(&mut ev, Some(Duration::from_millis(100)))?;
            for e in &ev {
                let i = e.token().0;
                if !served[i] {
                    served[i] = true;
                    left -= 1;
                    for _ in 0..burst {
                        writers[i].write_all(b"b")?;
                    }
                }
                bytes += drain(&mut readers[i]);
            }
        }
        lost += left as u64;
        // Idle between rounds: wait until a wait finds nothing.
        for _ in 0..=n {
            p.wait(&mut ev, Some(Duration::ZERO))?;
            if ev.is_empty() {
                break;
            }
            for e in &ev {
                bytes += drain(&mut readers[e.token().0]);
            }
        }
        if left > 0 {
            for r in &mut readers {
                bytes += drain(r);
            }
        }
    }
    let elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
    if bytes != rounds * n * (1 + burst) {
        bail!("{m}: read {bytes} bytes of {}", rounds * n * (1 + burst));
    }
    let s = p.stats();
    Ok(StormCell {
        mechanism: m.name().to_string(),
        fds: n,
        queue_limit: 0,
        rounds,
        burst,
        overflows: s.overflows,
        recoveries: s.recoveries,
        queued_max,
        signals_dequeued: s.signals_dequeued,
        dequeue_calls: s.dequeue_calls,
        coalesced: s.coalesced,
        rearms: s.rearms,
        waits: s.waits,
        events: s.events,
        lost,
        elapsed_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_lengths_parse_relative_to_n() {
        assert_eq!(queue_for("fds", 1000).unwrap(), 1000);
        assert_eq!(queue_for("fds+256", 1000).unwrap(), 1256);
        assert_eq!(queue_for("fds/4", 1000).unwrap(), 250);
        assert_eq!(queue_for("77", 1000).unwrap(), 77);
        for bad in ["fds-3", "fds+", "x", "0", "fds/2000"] {
            assert!(queue_for(bad, 1000).is_err(), "{bad}");
        }
    }

    /// True in the child; in the parent, re-run this test binary with only
    /// `name`, marked by the variable `CHILD_TEST`, and fail with its output
    /// if it fails.
    fn in_child(name: &str) -> bool {
        const CHILD_TEST: &str = "EVD_BENCH_STORM_TEST_CHILD";
        if std::env::var(CHILD_TEST).as_deref() == Ok(name) {
            return true;
        }
        // The pipes of the child's output are descriptors of this process.
        let _fds = crate::TEST_FDS.lock().unwrap_or_else(|e| e.into_inner());
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe)
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_TEST, name)
            .output()
            .expect("re-executing the test binary");
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        println!("--- child stdout ---\n{o}--- child stderr ---\n{e}");
        assert!(out.status.success(), "child {name} failed; output above");
        assert!(o.contains("1 passed"), "child {name} did not run the test");
        false
    }

    /// The seed's condition, a queue of at least one signal per descriptor
    /// (plus room for the user's other processes): in the same storm rtsig
    /// and rtsig-batch overflow, rtsig-perfd never does, and nothing is lost.
    #[test]
    fn perfd_does_not_overflow_a_queue_of_one_signal_per_descriptor() {
        if !in_child("storm::tests::perfd_does_not_overflow_a_queue_of_one_signal_per_descriptor") {
            return;
        }
        const N: usize = 1000;
        let q = queue_for("fds+256", N).unwrap();
        evdispatch_host::set_rlimit(evdispatch_host::Resource::Sigpending, Some(q)).unwrap();
        let run = |m| {
            let c = busy_storm(m, N, 4, 3).unwrap();
            println!("{c:?}");
            assert_eq!(c.lost, 0, "{c:?}");
            assert_eq!(c.recoveries, c.overflows, "{c:?}");
            c
        };
        for m in [Mechanism::RtSig, Mechanism::RtSigBatch] {
            let c = run(m);
            assert!(
                c.overflows > 0,
                "{m} did not overflow, so the storm proves nothing: {c:?}"
            );
        }
        let c = run(Mechanism::RtSigPerfd);
        assert_eq!(c.overflows, 0, "{c:?}");
        assert!(
            c.rearms >= (4 * N) as u64,
            "every served socket was re-armed: {c:?}"
        );
    }
}
