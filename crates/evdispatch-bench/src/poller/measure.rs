//! The run of `bench poller`: cells and rounds, the writer helper, and the
//! timed loop.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use nix::sys::socket::{socketpair, AddressFamily, SockFlag, SockType};

use super::rows::{all_rows, Row, RowKind, RowSpec};
use super::writer::{self, Touch};

use crate::Summary;

use super::outcome::{Cell, Outcome, PairCost, RowInfo, Skipped};
use super::plan::{Placement, Plan, PollerArgs, WriterKind};
use super::report;

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
