//! `evdispatch bench poller`: Dan Kegel's Poller_bench (seed 001).
//!
//! N socketpairs; a row (a mechanism of the library, a raw-syscall floor, a
//! crate, a C library) watches their read ends. Before each iteration a
//! helper process writes one byte to A sockets spaced N/A apart (untimed,
//! but its time is reported: io_uring and RT signals do part of their work
//! in the writer). The timed part is one wait plus `read(fd, buf, 1)` for
//! each ready descriptor, looping on waits until the A bytes are read.
//!
//! The rows run one at a time on the same descriptors (two watchers on one
//! socket would slow each other's wake-ups), in `--rounds` interleaved
//! blocks so that a noisy neighbour on a shared machine hits every row
//! alike. With `--placement rotating` the touched set moves every
//! iteration (a scattered stride over the N/A slots), so the touched sockets
//! are cold; `fixed` writes to the same A sockets each time.
//!
//! By default the bench and the writer are pinned to one CPU: left to the
//! scheduler, the writer lands on the bench's core for some blocks and on
//! the other for others, and the two placements cost differently (here
//! ≈1.8 µs against ≈2.8 µs for epoll at A = 1), which made the spread
//! bimodal. `--cpu 0,1` measures the cross-core case on purpose. Ratios
//! between rows (`ratio_to_raw_epoll`, `ratio_to_epoll`) are paired by
//! round: the median over rounds of the two rows' medians in that round,
//! so that a neighbour's build slowing one round slows both sides of it.
//!
//! Here: the arguments, the run over cells and rounds, and the timed loop.
//! Beside it: `rows` (each row's watcher: library, raw syscalls, crates, C
//! libraries), `writer` (the helper process that writes the bytes) and
//! `report` (medians, paired ratios, the tables and the JSON).

mod report;
mod rows;
mod writer;

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};
use serde::Serialize;

pub use rows::{all_rows, Row, RowKind, RowSpec, Served, Unavailable, EVENT_CAPACITY};
pub use writer::{helper_main as writer_main, Touch, HELPER_ARGS};

use crate::Summary;

/// Where the bytes go each iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// The touched set moves every iteration: touched sockets are cold.
    Rotating,
    /// The same A sockets every iteration: they stay hot in the caches.
    Fixed,
}

/// Who writes the bytes before each iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum WriterKind {
    /// A helper process holds the write ends (any N up to the descriptor
    /// limit); readiness then arrives from another process, as from a
    /// network peer.
    Helper,
    /// The bench writes itself, right before the timed part (Kegel's way):
    /// both ends of every pair open here, so N is at most half the limit.
    Local,
}

/// `evdispatch bench poller` options. Explicit options override `--quick`.
#[derive(Debug, Clone, clap::Args)]
pub struct PollerArgs {
    /// Rows to run, comma-separated (default: all). Rows are the library's
    /// mechanisms, raw-epoll, raw-poll, mio, polling, libevent, libev.
    #[arg(long, value_delimiter = ',')]
    pub mechanisms: Vec<String>,
    /// Numbers of socketpairs N (default 100,1000,10000,19000).
    #[arg(long, value_delimiter = ',')]
    pub fds: Vec<usize>,
    /// Numbers of active sockets A written before each iteration (default 1,10,100).
    #[arg(long, value_delimiter = ',')]
    pub active: Vec<usize>,
    /// Where the bytes go each iteration.
    #[arg(long, value_enum, default_value_t = Placement::Rotating)]
    pub placement: Placement,
    /// Timed iterations per cell (default 2000; --quick 300).
    #[arg(long)]
    pub iterations: Option<usize>,
    /// Untimed iterations after each setup (default 30; --quick 20).
    #[arg(long)]
    pub warmup: Option<usize>,
    /// Interleaved blocks the iterations are split into (default 10; --quick 3).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Stop a cell's timed iterations once they have taken this many
    /// seconds in all (spread evenly over the rounds; at least 10 per
    /// round), so that poll and select at large N do not take the run
    /// hostage. The JSON's `iterations` says how many ran. A duration
    /// (`30s`, `1min`, or bare seconds).
    #[arg(long, value_name = "DURATION", value_parser = evdispatch_host::parse_duration)]
    pub cell_budget: Option<std::time::Duration>,
    /// A short profile that still shows the shape: N = 100,1000,10000,
    /// A = 1,100, 300 iterations.
    #[arg(long)]
    pub quick: bool,
    /// Who writes the bytes.
    #[arg(long, value_enum, default_value_t = WriterKind::Helper)]
    pub writer: WriterKind,
    /// Pin the bench to a CPU and the writer helper to another (`--cpu 0,1`:
    /// readiness crosses cores, as from a NIC's interrupt elsewhere), or
    /// both to one (`--cpu 0`: the writer runs while the bench yields, as
    /// in Kegel's single process). Default: both on the last CPU.
    #[arg(long, value_delimiter = ',', num_args = 1..=2, conflicts_with = "no_pin")]
    pub cpu: Vec<usize>,
    /// Leave placement to the scheduler. It then puts the writer on the
    /// bench's core for some blocks and on another for others, two costs
    /// apart: expect a bimodal spread.
    #[arg(long)]
    pub no_pin: bool,
    /// Print one JSON document (cells, unavailable rows, socketpair costs).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to this file (with the table on stdout).
    #[arg(long, value_name = "FILE")]
    pub save: Option<std::path::PathBuf>,
    /// List the rows and whether each can run here, then stop.
    #[arg(long)]
    pub list: bool,
}

/// Arguments of the hidden writer-helper subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct WriterArgs {
    /// Pin the helper to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// The resolved plan of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// N values.
    pub fds: Vec<usize>,
    /// A values.
    pub active: Vec<usize>,
    /// Placement.
    pub placement: Placement,
    /// Timed iterations per cell (rounds × per round).
    pub iterations: usize,
    /// Untimed iterations after each setup.
    pub warmup: usize,
    /// Interleaved blocks.
    pub rounds: usize,
    /// Seconds of timed iterations a cell may take in all, if bounded.
    pub cell_budget: Option<f64>,
    /// Who writes.
    pub writer: WriterKind,
    /// CPU of the bench, if pinned.
    pub bench_cpu: Option<usize>,
    /// CPU of the writer helper, if pinned.
    pub writer_cpu: Option<usize>,
}

impl Plan {
    /// Defaults, `--quick`, then explicit options.
    pub fn from_args(a: &PollerArgs) -> anyhow::Result<Plan> {
        let (fds, active, iterations, warmup, rounds) = if a.quick {
            (vec![100, 1000, 10_000], vec![1, 100], 300, 20, 3)
        } else {
            (
                vec![100, 1000, 10_000, 19_000],
                vec![1, 10, 100],
                2000,
                30,
                10,
            )
        };
        let (fds, active) = (
            crate::sweep::given_or(&a.fds, fds),
            crate::sweep::given_or(&a.active, active),
        );
        if fds.contains(&0) || active.contains(&0) {
            bail!("--fds and --active take positive numbers");
        }
        let rounds = a.rounds.unwrap_or(rounds).max(1);
        let iterations = a.iterations.unwrap_or(iterations).max(1);
        let per_round = iterations.div_ceil(rounds);
        let (bench_cpu, writer_cpu) = if a.no_pin {
            (None, None)
        } else if let Some(&b) = a.cpu.first() {
            (Some(b), Some(a.cpu.get(1).copied().unwrap_or(b)))
        } else {
            let last = crate::machine::last_allowed_cpu();
            (last, last)
        };
        Ok(Plan {
            fds,
            active,
            placement: a.placement,
            iterations: per_round * rounds,
            warmup: a.warmup.unwrap_or(warmup),
            rounds,
            cell_budget: a.cell_budget.map(|d| d.as_secs_f64()).filter(|s| *s > 0.0),
            writer: a.writer,
            bench_cpu,
            writer_cpu,
        })
    }

    fn per_round(&self) -> usize {
        self.iterations / self.rounds
    }
}

/// One cell of the table: a row at N fds and A active.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Row name (a mechanism of the library, or a peer).
    pub mechanism: String,
    /// Row family.
    pub kind: RowKind,
    /// N.
    pub fds: usize,
    /// A.
    pub active: usize,
    /// Placement.
    pub placement: Placement,
    /// Median of the timed part (wait + reads), µs.
    pub median_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// Fastest iteration, µs.
    pub min_us: f64,
    /// Slowest iteration, µs.
    pub max_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median time the helper took to write the A bytes (untimed part), µs.
    pub write_median_us: f64,
    /// 90th percentile of the write time, µs.
    pub write_p90_us: f64,
    /// Timed iterations.
    pub iterations: usize,
    /// Wait (or loop) calls per timed iteration, on average.
    pub waits_per_iteration: f64,
    /// Events that found nothing to read, over the timed iterations.
    pub spurious: u64,
    /// Bytes read in the timed iterations (= iterations × active).
    pub bytes_read: u64,
    /// Bytes found unread after the row's iterations (must be 0).
    pub leftover: u64,
    /// This row over raw-epoll, same N and A, when both ran: the median,
    /// over rounds, of the ratio of the two rows' medians in that round
    /// (pairing by round cancels the drift of a shared machine).
    pub ratio_to_raw_epoll: Option<f64>,
    /// This row over the library's `epoll` row, paired by round the same way.
    pub ratio_to_epoll: Option<f64>,
    /// The median of each round's samples, µs (their spread shows the noise).
    pub round_medians_us: Vec<f64>,
    /// Registration cost at setup, µs per descriptor (median over rounds).
    pub setup_us_per_fd: f64,
}

/// Cost of creating and closing the socketpairs (Kegel reported these too).
#[derive(Debug, Clone, Serialize)]
pub struct PairCost {
    /// N.
    pub fds: usize,
    /// `socketpair()` per pair, µs.
    pub open_us_per_pair: f64,
    /// Closing both ends, per pair, µs (read end here, write end in the helper).
    pub close_us_per_pair: f64,
}

/// A row (or a row at some N) that did not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Row name.
    pub row: String,
    /// N, when only some N are out of reach.
    pub fds: Option<usize>,
    /// Why.
    pub reason: String,
    /// The command that makes it available, if one does.
    pub install: Option<String>,
}

/// Everything a run measured: what `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// "poller".
    pub bench: &'static str,
    /// Where it ran.
    pub machine: crate::machine::Machine,
    /// The plan.
    pub plan: Plan,
    /// Rows that ran, with what they run on.
    pub rows: Vec<RowInfo>,
    /// Rows or cells that did not run.
    pub skipped: Vec<Skipped>,
    /// One object per cell.
    pub cells: Vec<Cell>,
    /// Socketpair creation and close costs per N.
    pub pairs: Vec<PairCost>,
}

/// A row that ran.
#[derive(Debug, Clone, Serialize)]
pub struct RowInfo {
    /// Name.
    pub name: String,
    /// Family.
    pub kind: RowKind,
    /// What it runs on, when not obvious (libevent's backend).
    pub detail: Option<String>,
}

/// Run `evdispatch bench poller`.
pub fn run(args: PollerArgs) -> anyhow::Result<()> {
    let plan = Plan::from_args(&args)?;
    let mut specs = select_rows(&args.mechanisms)?;
    if args.list {
        for s in &specs {
            match (s.open)() {
                Ok(_) => println!("{:<12} {:<8} available", s.name, kind_name(s.kind)),
                Err(u) => println!(
                    "{:<12} {:<8} unavailable: {}{}",
                    s.name,
                    kind_name(s.kind),
                    u.reason,
                    u.install.map(|i| format!(" — {i}")).unwrap_or_default()
                ),
            }
        }
        return Ok(());
    }
    let limit = evdispatch_harness::nofile_limit();
    // The bench's own descriptors besides the read ends: stdio, the control
    // socket, a poller or two, the C libraries' internals.
    const RESERVE: usize = 64;
    let per_pair: u64 = match plan.writer {
        WriterKind::Helper => 1,
        WriterKind::Local => 2,
    };
    if let Some(&n) = plan
        .fds
        .iter()
        .find(|&&n| n as u64 * per_pair + RESERVE as u64 > limit)
    {
        bail!(
            "--fds {n} needs {} descriptors plus ~{RESERVE} others, but this process may hold \
             {limit} (RLIMIT_NOFILE); use N ≤ {}{}",
            n as u64 * per_pair,
            limit.saturating_sub(RESERVE as u64) / per_pair,
            if per_pair == 2 {
                " with --writer local, or the default --writer helper"
            } else {
                ""
            }
        );
    }
    let outcome = measure(&plan, &mut specs, true)?;
    crate::output::emit(&outcome, args.json, args.save.as_deref(), report::print)
}

fn kind_name(k: RowKind) -> &'static str {
    match k {
        RowKind::Library => "library",
        RowKind::Floor => "floor",
        RowKind::Crate => "crate",
        RowKind::CPeer => "c-peer",
    }
}

/// The rows named by `--mechanisms`, in table order (all when empty).
fn select_rows(names: &[String]) -> anyhow::Result<Vec<RowSpec>> {
    let all = all_rows();
    if names.is_empty() {
        return Ok(all);
    }
    let known: Vec<&str> = all.iter().map(|r| r.name).collect();
    for n in names {
        if !known.iter().any(|k| k.eq_ignore_ascii_case(n.trim())) {
            bail!("unknown row '{n}'; choose from: {}", known.join(", "));
        }
    }
    Ok(all
        .into_iter()
        .filter(|r| names.iter().any(|n| n.trim().eq_ignore_ascii_case(r.name)))
        .collect())
}

/// The socketpairs of one N: read ends here, write ends in the helper.
struct Pairs {
    reads: Vec<OwnedFd>,
    raw: Vec<RawFd>,
    open_ns: u64,
}

impl Pairs {
    fn create(n: usize, writer: &mut writer::Writer) -> anyhow::Result<Pairs> {
        let mut reads = Vec::with_capacity(n);
        let mut open_ns = 0u64;
        for i in 0..n {
            let t0 = Instant::now();
            let (r, w) = socketpair(
                AddressFamily::Unix,
                SockType::Stream,
                None,
                SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
            )
            .with_context(|| format!("socketpair #{i} of {n}"))?;
            open_ns += t0.elapsed().as_nanos() as u64;
            // Passing each write end at once keeps the read ends densely
            // numbered (the next pair reuses the number just closed).
            writer.give(w)?;
            reads.push(r);
        }
        let held = writer.sync()?;
        if held != n {
            bail!("the writer helper holds {held} write ends, expected {n}");
        }
        let raw = reads.iter().map(|r| r.as_raw_fd()).collect();
        Ok(Pairs {
            reads,
            raw,
            open_ns,
        })
    }

    /// Bytes still unread on the read ends (each is drained).
    fn leftover(&self) -> u64 {
        let mut n = 0;
        for &fd in &self.raw {
            while crate::sys::read1(fd) {
                n += 1;
            }
        }
        n
    }
}

/// A stride that scatters offsets over `spacing` slots: near the golden
/// section of `spacing` and coprime with it, so every slot comes round.
fn scatter_stride(spacing: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    if spacing <= 2 {
        return 1;
    }
    let mut s = (spacing as f64 * 0.618) as usize;
    while gcd(s, spacing) != 1 {
        s += 1;
    }
    s
}

/// The median over rounds of `row[r] / floor[r]`.
fn paired_ratio(row: &[f64], floor: &[f64]) -> Option<f64> {
    let mut r: Vec<f64> = row
        .iter()
        .zip(floor)
        .filter(|(_, f)| **f > 0.0)
        .map(|(a, f)| a / f)
        .collect();
    (!r.is_empty()).then(|| evdispatch_harness::median(&mut r))
}

/// Let the kernel finish what a setup or teardown left behind (closing an
/// epoll instance frees its entries through RCU callbacks, run later on
/// this CPU) before the next row's iterations, so that one row's teardown
/// is not charged to the next.
fn settle() {
    std::thread::sleep(Duration::from_millis(25));
}

/// Stops the run when a row makes no progress: a lost event makes a row
/// wait forever for a byte that was written.
struct Watchdog {
    beat: Arc<AtomicU64>,
    label: Arc<Mutex<String>>,
    stop: Arc<AtomicBool>,
}

impl Watchdog {
    const STALL: Duration = Duration::from_secs(30);

    fn start() -> Watchdog {
        let w = Watchdog {
            beat: Arc::new(AtomicU64::new(0)),
            label: Arc::new(Mutex::new(String::new())),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (beat, label, stop) = (w.beat.clone(), w.label.clone(), w.stop.clone());
        std::thread::spawn(move || {
            let mut last = u64::MAX;
            let mut since = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let b = beat.load(Ordering::Relaxed);
                if b != last {
                    last = b;
                    since = Instant::now();
                } else if since.elapsed() > Watchdog::STALL {
                    eprintln!(
                        "evdispatch bench poller: no progress for {}s in {}: the row waits for \
                         bytes that were written but never reported (a lost event)",
                        Watchdog::STALL.as_secs(),
                        label.lock().map(|l| l.clone()).unwrap_or_default()
                    );
                    std::process::exit(3);
                }
            }
        });
        w
    }

    #[inline]
    fn beat(&self) {
        self.beat.fetch_add(1, Ordering::Relaxed);
    }

    fn label(&self, s: String) {
        if let Ok(mut l) = self.label.lock() {
            *l = s;
        }
        self.beat();
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct CellData {
    samples: Vec<u64>,
    writes: Vec<u64>,
    waits: u64,
    spurious: u64,
    bytes: u64,
    leftover: u64,
    setup_ns_per_fd: Vec<u64>,
    /// Median of each round's samples, in round order.
    round_medians: Vec<f64>,
}

/// One row's iterations at one N and A within one round.
struct Block<'a> {
    plan: &'a Plan,
    n: usize,
    active: usize,
    name: &'a str,
}

impl Block<'_> {
    /// Warm up, then time `per_round` iterations into `cell`. `counter`
    /// numbers the iterations of this N, for the rotating placement.
    fn run(
        &self,
        row: &mut dyn Row,
        writer: &mut writer::Writer,
        counter: &mut usize,
        cell: &mut CellData,
        dog: &Watchdog,
    ) -> anyhow::Result<()> {
        let (n, a, name) = (self.n, self.active, self.name);
        let spacing = n / a;
        let stride = scatter_stride(spacing);
        let per_round = self.plan.per_round();
        let budget = self
            .plan
            .cell_budget
            .map(|s| Duration::from_secs_f64(s / self.plan.rounds as f64));
        let first = cell.samples.len();
        let mut spent = Duration::ZERO;
        for it in 0..self.plan.warmup + per_round {
            let offset = match self.plan.placement {
                Placement::Rotating => (*counter * stride) % spacing,
                Placement::Fixed => 0,
            };
            *counter += 1;
            let touch = Touch {
                offset,
                spacing,
                count: a,
                n,
            };
            let wrote = writer.write(touch)?;
            let t0 = Instant::now();
            let s = row.iterate(a);
            let el = t0.elapsed();
            let s = s.with_context(|| format!("{name}: N={n} A={a}"))?;
            if s.bytes != a as u64 {
                bail!("{name}: read {} bytes of {a} written", s.bytes);
            }
            if it >= self.plan.warmup {
                spent += el;
                cell.samples.push(el.as_nanos() as u64);
                cell.writes.push(wrote.as_nanos() as u64);
                cell.waits += s.waits;
                cell.spurious += s.spurious;
                cell.bytes += s.bytes;
            }
            dog.beat();
            if budget.is_some_and(|b| spent > b) && cell.samples.len() - first >= 10 {
                break;
            }
        }
        let mut this_round = cell.samples[first..].to_vec();
        if let Some(r) = Summary::of_ns(&mut this_round) {
            cell.round_medians.push(r.median_us);
        }
        Ok(())
    }
}

/// Run the plan over the rows; `progress` draws a bar on stderr.
pub fn measure(plan: &Plan, specs: &mut [RowSpec], progress: bool) -> anyhow::Result<Outcome> {
    let mut skipped = Vec::new();
    let mut rows: Vec<(&RowSpec, Box<dyn Row>)> = Vec::new();
    for spec in specs.iter() {
        match (spec.open)() {
            Ok(r) => rows.push((spec, r)),
            Err(u) => {
                eprintln!("skipping {}: {}", spec.name, u.reason);
                skipped.push(Skipped {
                    row: spec.name.to_string(),
                    fds: None,
                    reason: u.reason,
                    install: u.install,
                });
            }
        }
    }
    if rows.is_empty() {
        bail!("no row can run here (see the reasons above)");
    }
    let _pinned = plan.bench_cpu.map(crate::machine::pin_scoped).transpose()?;
    let mut writer = match plan.writer {
        WriterKind::Helper => writer::Writer::helper(plan.writer_cpu)?,
        WriterKind::Local => writer::Writer::local(),
    };
    let dog = Watchdog::start();

    let blocks = (plan.fds.len() * plan.rounds * rows.len()) as u64;
    let bar = crate::output::progress_bar(blocks, progress, true);

    let mut data: BTreeMap<(usize, usize, usize), CellData> = BTreeMap::new();
    let mut details: Vec<Option<String>> = vec![None; rows.len()];
    let mut pairs_cost = Vec::new();

    for &n in &plan.fds {
        bar.set_message(format!("N={n}: creating socketpairs"));
        dog.label(format!("N={n}, creating socketpairs"));
        let pairs = Pairs::create(n, &mut writer)?;
        settle();
        let max_fd = pairs.raw.iter().copied().max().unwrap_or(0);
        let mut counter = 0usize;
        for round in 0..plan.rounds {
            // Each round starts one row further on, so no row always
            // follows the same neighbour.
            let count = rows.len();
            for ri in (0..count).map(|k| (k + round) % count) {
                let (spec, row) = &mut rows[ri];
                let spec: &RowSpec = spec;
                bar.set_message(format!(
                    "N={n} round {}/{} {}",
                    round + 1,
                    plan.rounds,
                    spec.name
                ));
                if let Some(limit) = spec.max_fd {
                    if max_fd >= limit {
                        if round == 0 {
                            skipped.push(Skipped {
                                row: spec.name.to_string(),
                                fds: Some(n),
                                reason: format!(
                                    "watches descriptors below {limit} only; N={n} needs up to {max_fd}"
                                ),
                                install: None,
                            });
                        }
                        bar.inc(1);
                        continue;
                    }
                }
                dog.label(format!("{} setup, N={n}", spec.name));
                let t0 = Instant::now();
                row.setup(&pairs.raw)
                    .with_context(|| format!("{}: watching {n} descriptors", spec.name))?;
                let setup_ns = t0.elapsed().as_nanos() as u64 / n as u64;
                if details[ri].is_none() {
                    details[ri] = row.detail();
                }
                for &a in plan.active.iter().filter(|&&a| a <= n) {
                    dog.label(format!("{}, N={n}, A={a}, round {}", spec.name, round + 1));
                    let cell = data.entry((ri, n, a)).or_default();
                    cell.setup_ns_per_fd.push(setup_ns);
                    let block = Block {
                        plan,
                        n,
                        active: a,
                        name: spec.name,
                    };
                    block.run(row.as_mut(), &mut writer, &mut counter, cell, &dog)?;
                    cell.leftover += pairs.leftover();
                }
                row.teardown()
                    .with_context(|| format!("{}: teardown at N={n}", spec.name))?;
                settle();
                bar.inc(1);
            }
        }
        bar.set_message(format!("N={n}: closing socketpairs"));
        dog.label(format!("N={n}, closing socketpairs"));
        let Pairs { reads, open_ns, .. } = pairs;
        let t0 = Instant::now();
        drop(reads);
        let close_here = t0.elapsed();
        let close_there = writer.close_all()?;
        pairs_cost.push(PairCost {
            fds: n,
            open_us_per_pair: open_ns as f64 / 1000.0 / n as f64,
            close_us_per_pair: (close_here + close_there).as_nanos() as f64 / 1000.0 / n as f64,
        });
    }
    bar.finish_and_clear();
    drop(dog);

    let mut cells = Vec::new();
    for ((ri, n, a), mut d) in data {
        let Some(t) = Summary::of_ns(&mut d.samples) else {
            continue;
        };
        let w = Summary::of_ns(&mut d.writes).expect("one write per sample");
        d.setup_ns_per_fd.sort_unstable();
        let setup = d.setup_ns_per_fd[d.setup_ns_per_fd.len() / 2];
        let (spec, _) = &rows[ri];
        cells.push(Cell {
            mechanism: spec.name.to_string(),
            kind: spec.kind,
            fds: n,
            active: a,
            placement: plan.placement,
            median_us: t.median_us,
            p90_us: t.p90_us,
            min_us: t.min_us,
            max_us: t.max_us,
            mean_us: t.mean_us,
            write_median_us: w.median_us,
            write_p90_us: w.p90_us,
            iterations: t.count,
            waits_per_iteration: d.waits as f64 / t.count as f64,
            spurious: d.spurious,
            bytes_read: d.bytes,
            leftover: d.leftover,
            ratio_to_raw_epoll: None,
            ratio_to_epoll: None,
            round_medians_us: d.round_medians.clone(),
            setup_us_per_fd: setup as f64 / 1000.0,
        });
    }
    let rounds_of = |row: &str| -> BTreeMap<(usize, usize), Vec<f64>> {
        cells
            .iter()
            .filter(|c| c.mechanism == row)
            .map(|c| ((c.fds, c.active), c.round_medians_us.clone()))
            .collect()
    };
    let (raw, epoll) = (rounds_of("raw-epoll"), rounds_of("epoll"));
    for c in &mut cells {
        let against = |base: &BTreeMap<(usize, usize), Vec<f64>>| {
            base.get(&(c.fds, c.active))
                .and_then(|f| paired_ratio(&c.round_medians_us, f))
        };
        c.ratio_to_raw_epoll = against(&raw);
        c.ratio_to_epoll = against(&epoll);
    }
    if let Some(bad) = cells.iter().find(|c| c.leftover > 0) {
        bail!(
            "{} left {} bytes unread at N={} A={}: an event was lost",
            bad.mechanism,
            bad.leftover,
            bad.fds,
            bad.active
        );
    }
    let rows_info = rows
        .iter()
        .zip(details)
        .map(|((spec, _), detail)| RowInfo {
            name: spec.name.to_string(),
            kind: spec.kind,
            detail,
        })
        .collect();
    Ok(Outcome {
        bench: "poller",
        machine: crate::machine::machine(),
        plan: plan.clone(),
        rows: rows_info,
        skipped,
        cells,
        pairs: pairs_cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_is_paired_by_round() {
        // A slow second round hits both rows; pairing keeps the ratio.
        assert_eq!(
            paired_ratio(&[2.0, 20.0, 2.2], &[2.0, 20.0, 2.0]),
            Some(1.0)
        );
        assert_eq!(paired_ratio(&[3.0, 3.0], &[2.0, 1.0]), Some(2.25));
        assert_eq!(paired_ratio(&[], &[]), None);
    }

    #[test]
    fn stride_visits_every_slot() {
        for spacing in [1usize, 2, 3, 10, 100, 1000, 9999] {
            let s = scatter_stride(spacing);
            let mut seen = vec![false; spacing];
            for i in 0..spacing {
                seen[(i * s) % spacing] = true;
            }
            assert!(seen.iter().all(|&b| b), "spacing {spacing} stride {s}");
        }
    }

    #[test]
    fn quick_profile_and_overrides() {
        let a = PollerArgs {
            mechanisms: vec![],
            fds: vec![],
            active: vec![],
            placement: Placement::Rotating,
            iterations: Some(10),
            warmup: None,
            rounds: Some(3),
            cell_budget: None,
            quick: true,
            cpu: vec![0, 1],
            no_pin: false,
            writer: WriterKind::Helper,
            json: false,
            save: None,
            list: false,
        };
        let p = Plan::from_args(&a).unwrap();
        assert_eq!(p.fds, vec![100, 1000, 10_000]);
        assert_eq!(p.iterations, 12); // rounded up to whole rounds
        assert_eq!((p.bench_cpu, p.writer_cpu), (Some(0), Some(1)));
    }

    #[test]
    fn unknown_row_names_are_refused_with_the_list() {
        let e = select_rows(&["kqueue".into()]).err().unwrap().to_string();
        assert!(
            e.contains("kqueue") && e.contains("raw-epoll") && e.contains("epoll,"),
            "{e}"
        );
        let r = select_rows(&["raw-poll".into(), "EPOLL".into()]).unwrap();
        assert_eq!(
            r.iter().map(|r| r.name).collect::<Vec<_>>(),
            vec!["epoll", "raw-poll"]
        );
    }
}
