//! `bench overflow`: what an RT-signal queue overflow costs to recover from.
//!
//! For each mechanism, descriptor count N and queue length Q, a child
//! process lowers its `RLIMIT_SIGPENDING` to Q (the limit counts the whole
//! user's queued signals, so it is never lowered in this process), registers
//! N socketpairs, and then, per repetition, writes Q + 1 single bytes across
//! the sockets (one signal each: the queue fills and the last raises
//! `SIGIO`) and times the waits from the overflow until every written socket
//! has been reported. For `rtsig`, `rtsig-batch` and `rtsig-perfd` one wait
//! flushes the queue and polls all N (`rtsig-perfd` also disarms each ready
//! socket, and the untimed wait after the reads re-arms them); `hybrid`
//! moves to epoll and harvests (its epoll buffer may need more than one
//! wait), and its flush comes at the switch back, which is timed separately.
//!
//! Every socket written must be reported; those that are not within 64
//! waits are counted as lost and reported. The queue budget is the user's,
//! so signals queued by other processes of the same user shorten it: the
//! figures say how many signals were queued when the recovery began.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use evdispatch::{Events, Interest, Mechanism, Poller, Token};
use evdispatch_harness::ChildGroup;
use serde::{Deserialize, Serialize};

/// Arguments of `evdispatch bench overflow`.
#[derive(Debug, clap::Args)]
pub struct OverflowArgs {
    /// Mechanisms, comma-separated (those with a signal queue).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "rtsig,rtsig-batch,rtsig-perfd,hybrid"
    )]
    pub mechanisms: Vec<String>,
    /// Registered descriptors N (socketpairs; at most 9,000 under a
    /// 20,000-file limit), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,9000")]
    pub fds: Vec<usize>,
    /// Queue lengths Q (the child's `RLIMIT_SIGPENDING`), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "32,1024,8192")]
    pub queue: Vec<u64>,
    /// Timed repetitions per cell (after 3 untimed).
    #[arg(long, default_value_t = 30)]
    pub reps: usize,
    /// One JSON document instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The environment variable that turns a re-executed `bench overflow` into
/// the child of one cell: `mechanism,N,Q,reps`.
const CHILD: &str = "EVD_BENCH_OVERFLOW_CHILD";

/// One cell's measurements, as the child reports them.
#[derive(Debug, Serialize, Deserialize)]
pub struct Cell {
    /// Mechanism name.
    pub mechanism: String,
    /// Registered descriptors.
    pub fds: usize,
    /// The child's `RLIMIT_SIGPENDING`.
    pub queue_limit: u64,
    /// Timed repetitions.
    pub reps: usize,
    /// Signals queued when the recovery starts (median of the user's count,
    /// `SigQ` in `/proc/self/status`; it includes other processes of the
    /// user, whose signals also shorten this queue).
    pub queued_median: u64,
    /// Sockets made readable per repetition.
    pub ready: usize,
    /// From the overflow to every ready socket reported (the waits that
    /// handle it), µs: median, 10th and 90th percentile.
    pub recover_us: [f64; 3],
    /// Per queued signal plus registered descriptor, ns (median recover / (queued + N)).
    pub ns_per_item: f64,
    /// hybrid: the wait that switches back to signals (flush + epoll sweep), µs.
    pub switch_back_us: Option<[f64; 3]>,
    /// Overflows survived over the whole run (including warm-up).
    pub overflows: u64,
    /// Written sockets never reported within 64 waits of the overflow,
    /// summed over all repetitions (a lost readiness change).
    pub lost: u64,
}

fn quantiles(mut v: Vec<f64>) -> [f64; 3] {
    v.sort_by(f64::total_cmp);
    let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    [q(0.5), q(0.1), q(0.9)]
}

/// Run `evdispatch bench overflow`.
pub fn run(args: OverflowArgs) -> anyhow::Result<()> {
    if let Some(cell) = as_child(CHILD, child)? {
        println!("{}", serde_json::to_string(&cell)?);
        return Ok(());
    }
    let mechanisms = check_cells(&args.mechanisms, &args.fds)?;
    if args.reps == 0 {
        bail!("--reps must be at least 1");
    }
    let total = mechanisms.len() * args.fds.len() * args.queue.len();
    let mut cells = Vec::new();
    for &m in &mechanisms {
        for &n in &args.fds {
            for &q in &args.queue {
                eprint!(
                    "\rbench overflow: {}/{total}: {m} N={n} Q={q}        ",
                    cells.len() + 1
                );
                let spec = format!("{m},{n},{q},{}", args.reps);
                cells.push(cell_in_child::<Cell>(CHILD, &spec)?);
            }
        }
    }
    eprintln!();
    crate::output::emit(&cells, args.json, None, |cells| print(cells))
}

/// In the child of one cell (`env` set): the cell `child` measures.
pub(crate) fn as_child<T>(
    env: &str,
    child: fn(&str) -> anyhow::Result<T>,
) -> anyhow::Result<Option<T>> {
    std::env::var(env).ok().map(|spec| child(&spec)).transpose()
}

/// The `--mechanisms` parsed, once `--fds` is checked.
pub(crate) fn check_cells(mechanisms: &[String], fds: &[usize]) -> anyhow::Result<Vec<Mechanism>> {
    if let Some(n) = fds.iter().find(|&&n| n == 0 || n > 9000) {
        bail!("--fds {n}: choose 1..=9000 (two descriptors per socketpair under the 20,000-file limit)");
    }
    Ok(mechanisms
        .iter()
        .map(|s| s.parse::<Mechanism>())
        .collect::<Result<_, _>>()?)
}

/// Re-run this program with `env`=`spec` (which turns it into the child of
/// one cell: it lowers its own `RLIMIT_SIGPENDING`, as the limit counts the
/// whole user's queued signals) and read the one JSON line it prints.
pub(crate) fn cell_in_child<T: serde::de::DeserializeOwned>(
    env: &str,
    spec: &str,
) -> anyhow::Result<T> {
    let exe = std::env::current_exe().context("finding this program to re-run it")?;
    let mut cmd = Command::new(exe);
    cmd.args(std::env::args().skip(1))
        .env(env, spec)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = ChildGroup::spawn(cmd, "the child")?.wait_output()?;
    if !out.status.success() {
        bail!(
            "{spec}: the child failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let line = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(line.trim()).with_context(|| format!("reading the child's report: {line}"))
}

/// `median (p10–p90)`, to 0.1 µs.
fn spread(q: [f64; 3]) -> String {
    format!("{:.1} ({:.1}–{:.1})", q[0], q[1], q[2])
}

fn print(cells: &[Cell]) {
    let lost: u64 = cells.iter().map(|c| c.lost).sum();
    println!(
        "Overflow recovery: from SIGIO to every ready socket reported, µs (median, p10–p90); events lost: {lost}"
    );
    println!(
        "{:<12} {:>5} {:>6} {:>8} {:>24} {:>9} {:>24} {:>9} {:>5}",
        "mechanism",
        "N",
        "Q",
        "queued",
        "recover µs",
        "ns/item",
        "hybrid switch-back µs",
        "overflows",
        "lost"
    );
    for c in cells {
        let back = c.switch_back_us.map_or_else(|| "-".into(), spread);
        println!(
            "{:<12} {:>5} {:>6} {:>8} {:>24} {:>9.1} {:>24} {:>9} {:>5}",
            c.mechanism,
            c.fds,
            c.queue_limit,
            c.queued_median,
            spread(c.recover_us),
            c.ns_per_item,
            back,
            c.overflows,
            c.lost
        );
    }
}

/// Read `s` until `EAGAIN`; the bytes read.
pub(crate) fn drain(s: &mut UnixStream) -> usize {
    let mut buf = [0u8; 512];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(k) => total += k,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return total,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// The signals queued for this process's user (`SigQ: queued/limit`).
pub(crate) fn user_queued() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigQ:"))
        .and_then(|v| v.trim().split('/').next())
        .and_then(|v| v.parse().ok())
        .context("no SigQ line in /proc/self/status")
}

/// One cell, in the child.
fn child(spec: &str) -> anyhow::Result<Cell> {
    let parts: Vec<&str> = spec.split(',').collect();
    let [m, n, q, reps] = parts[..] else {
        bail!("malformed {CHILD}={spec}");
    };
    let m: Mechanism = m.parse()?;
    let (n, q, reps): (usize, u64, usize) = (n.parse()?, q.parse()?, reps.parse()?);
    evdispatch_host::set_rlimit(evdispatch_host::Resource::Sigpending, Some(q))
        .context("lowering RLIMIT_SIGPENDING")?;
    let mut p = Poller::new(m)?;
    let mut readers = Vec::with_capacity(n);
    let mut writers = Vec::with_capacity(n);
    for i in 0..n {
        let (r, w) = UnixStream::pair()?;
        r.set_nonblocking(true)?;
        w.set_nonblocking(true)?;
        p.register(r.as_raw_fd(), Token(i), Interest::READABLE)?;
        readers.push(r);
        writers.push(w);
    }
    let mut ev = Events::with_capacity(n);
    let mut seen = vec![false; n];
    let writes = q as usize + 1;
    let ready = writes.min(n);
    let (mut recover, mut back, mut queued) = (Vec::new(), Vec::new(), Vec::new());
    let mut lost = 0u64;
    for rep in 0..reps + 3 {
        for k in 0..writes {
            writers[k % n].write_all(b"s")?;
        }
        // Time the waits until every written socket has been reported (one
        // for rtsig and rtsig-batch; the hybrid's epoll buffer may take more).
        let in_queue = user_queued()?;
        let before = p.stats().clone();
        seen.fill(false);
        let mut found = 0;
        let t0 = Instant::now();
        for _ in 0..64 {
            p.wait(&mut ev, Some(Duration::ZERO))?;
            for e in &ev {
                let i = e.token().0;
                if i < ready && !seen[i] {
                    seen[i] = true;
                    found += 1;
                }
            }
            if found == ready {
                break;
            }
        }
        let took = t0.elapsed();
        let after = p.stats().clone();
        lost += (ready - found) as u64;
        if after.overflows != before.overflows + 1 {
            bail!(
                "{m}: {writes} signals against a limit of {q} did not overflow exactly once: {after:?}"
            );
        }
        let mut bytes = 0;
        for r in readers.iter_mut().take(ready) {
            bytes += drain(r);
        }
        if bytes != writes {
            bail!("{m}: read {bytes} bytes of {writes}");
        }
        // The hybrid returns to signals after quiet waits; time the switch.
        let mut switch_back = None;
        if m == Mechanism::Hybrid {
            for _ in 0..1000 {
                let s0 = p.stats().mode_switches;
                let t0 = Instant::now();
                p.wait(&mut ev, Some(Duration::ZERO))?;
                let took = t0.elapsed();
                if p.stats().mode_switches != s0 {
                    switch_back = Some(took);
                    break;
                }
            }
            if switch_back.is_none() || p.stats().mode_switches % 2 != 0 {
                bail!("hybrid did not return to signal mode: {:?}", p.stats());
            }
            for e in &ev {
                // The sweep may re-report what was already read: hints.
                drain(&mut readers[e.token().0]);
            }
        } else {
            // The wait a server makes after serving, in which rtsig-perfd
            // re-arms what the recovery disarmed (it finds nothing new).
            p.wait(&mut ev, Some(Duration::ZERO))?;
            for e in &ev {
                drain(&mut readers[e.token().0]);
            }
        }
        if rep >= 3 {
            recover.push(took.as_secs_f64() * 1e6);
            queued.push(in_queue);
            if let Some(b) = switch_back {
                back.push(b.as_secs_f64() * 1e6);
            }
        }
    }
    queued.sort_unstable();
    let queued_median = queued[queued.len() / 2];
    let recover_us = quantiles(recover);
    Ok(Cell {
        mechanism: m.name().to_string(),
        fds: n,
        queue_limit: q,
        reps,
        queued_median,
        ready,
        recover_us,
        ns_per_item: recover_us[0] * 1e3 / (queued_median as f64 + n as f64),
        switch_back_us: (!back.is_empty()).then(|| quantiles(back)),
        overflows: p.stats().overflows,
        lost,
    })
}
