//! `evdispatch bench fdalloc`: seed 003's descriptor-allocation experiment.
//!
//! With N descriptors open, close the first and the n-th (here the last,
//! the farthest), then allocate twice: POSIX gives back the lowest free
//! number, so the first allocation returns the first descriptor and the
//! second must find the hole at the far end. With a single bitmap scanned
//! word by word (Linux 2.2) the second search grows with N; the CITI patch
//! (and Linux since 2.6.x: `open_fds` plus `full_fds_bits`, one bit per
//! full word) makes it nearly flat.
//!
//! The seed opened about 100,000 descriptors; one process here may hold
//! 20,000, so N stops below that. A control closes the first and the
//! *second* descriptor (no search), so the difference between the two is
//! the cost of finding the far hole. Allocation is by `fcntl(F_DUPFD)` by
//! default (the same kernel allocator as `open()`, without the path walk
//! that would drown it); `--via open` uses `open("/dev/null")` as the seed
//! did.

use anyhow::bail;
use serde::Serialize;
use std::time::Instant;

use crate::sys::FdBlock;
use crate::Summary;

/// How descriptors are allocated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Via {
    /// `fcntl(fd, F_DUPFD_CLOEXEC, 0)`: the allocator alone.
    Dup,
    /// `open("/dev/null")`: the allocator plus a path walk (the seed's call).
    Open,
}

/// `evdispatch bench fdalloc` options.
#[derive(Debug, Clone, clap::Args)]
pub struct FdallocArgs {
    /// Numbers of open descriptors N (default 100,1000,2000,5000,10000,15000,19000).
    #[arg(long, value_delimiter = ',')]
    pub fds: Vec<usize>,
    /// Repetitions per N (default 20000; --quick 3000).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Fewer N and repetitions.
    #[arg(long)]
    pub quick: bool,
    /// How to allocate.
    #[arg(long, value_enum, default_value_t = Via::Dup)]
    pub via: Via,
    /// Pin to this CPU.
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Print one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON document to this file (with the table on stdout).
    #[arg(long, value_name = "FILE")]
    pub save: Option<std::path::PathBuf>,
}

/// The timings at one N, in µs, flat (one object per cell, like
/// `bench poller`'s). "far": close the first and the last descriptor, then
/// allocate twice; "near" (the control): close the first and the second.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// N.
    pub fds: usize,
    /// How descriptors were allocated.
    pub via: Via,
    /// Repetitions (each of far and near).
    pub reps: usize,
    /// Far: two closes and two allocations, median.
    pub far_median_us: f64,
    /// Far, 90th percentile.
    pub far_p90_us: f64,
    /// Far, fastest.
    pub far_min_us: f64,
    /// Near (control), median.
    pub near_median_us: f64,
    /// Near, 90th percentile.
    pub near_p90_us: f64,
    /// Near, fastest.
    pub near_min_us: f64,
    /// The second allocation alone, far case (finding the hole at the end), median.
    pub second_alloc_far_median_us: f64,
    /// The second allocation alone, near case, median.
    pub second_alloc_near_median_us: f64,
}

/// What `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// "fdalloc".
    pub bench: &'static str,
    /// Where it ran.
    pub machine: crate::machine::Machine,
    /// How descriptors were allocated.
    pub via: Via,
    /// Repetitions per N (each of far and near).
    pub reps: usize,
    /// The descriptor limit of this process.
    pub fd_limit: u64,
    /// The seed's scale, for the record.
    pub seed_fds: usize,
    /// One cell per N.
    pub cells: Vec<Cell>,
}

/// Run `evdispatch bench fdalloc`.
pub fn run(args: FdallocArgs) -> anyhow::Result<()> {
    let (fds, reps) = if args.quick {
        (vec![100, 1000, 10_000, 19_000], 3000)
    } else {
        (vec![100, 1000, 2000, 5000, 10_000, 15_000, 19_000], 20_000)
    };
    let fds = crate::sweep::given_or(&args.fds, fds);
    let reps = args.reps.unwrap_or(reps).max(1);
    if fds.iter().any(|&n| n < 2) {
        bail!("--fds needs N ≥ 2 (the experiment closes two descriptors)");
    }
    let limit = evdispatch_harness::nofile_limit();
    const RESERVE: u64 = 32;
    if let Some(&n) = fds.iter().find(|&&n| n as u64 + RESERVE > limit) {
        bail!(
            "--fds {n} is more than this process may open: RLIMIT_NOFILE is {limit} here, so \
             N ≤ {} (seed 003 used about 100,000; raise the hard limit to go that far)",
            limit.saturating_sub(RESERVE)
        );
    }
    let _pinned = args.cpu.map(crate::machine::pin_scoped).transpose()?;
    let outcome = measure(&fds, reps, args.via, limit, true)?;
    crate::output::emit(&outcome, args.json, args.save.as_deref(), print)
}

/// Measure every N.
pub fn measure(
    fds: &[usize],
    reps: usize,
    via: Via,
    limit: u64,
    progress: bool,
) -> anyhow::Result<Outcome> {
    let bar = crate::output::progress_bar(fds.len() as u64, progress, false);
    let mut cells = Vec::new();
    for &n in fds {
        bar.set_message(format!("N={n}"));
        cells.push(measure_one(n, reps, via)?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(Outcome {
        bench: "fdalloc",
        machine: crate::machine::machine(),
        via,
        reps,
        fd_limit: limit,
        seed_fds: 100_000,
        cells,
    })
}

fn measure_one(n: usize, reps: usize, via: Via) -> anyhow::Result<Cell> {
    let mut block = FdBlock::open(n, via == Via::Open)?;
    let fds = block.fds();
    let (first, second, last) = (fds[0], fds[1], fds[n - 1]);
    let [mut far, mut near, mut far2, mut near2] = [(); 4].map(|_| Vec::with_capacity(reps));
    // Alternate the two cases so that noise falls on both alike.
    for _ in 0..reps {
        for (other, total, alloc2) in [(last, &mut far, &mut far2), (second, &mut near, &mut near2)]
        {
            let t0 = Instant::now();
            block.close(first)?;
            block.close(other)?;
            let a = block.alloc()?;
            let t1 = Instant::now();
            let b = block.alloc()?;
            let t2 = Instant::now();
            if (a, b) != (first, other) {
                bail!(
                    "the kernel returned descriptors {a} and {b}, expected {first} and {other} \
                     (the lowest free numbers); did another thread open files?"
                );
            }
            total.push((t2 - t0).as_nanos() as u64);
            alloc2.push((t2 - t1).as_nanos() as u64);
        }
    }
    let s = |v: &mut Vec<u64>| Summary::of_ns(v).expect("reps ≥ 1");
    let (far, near) = (s(&mut far), s(&mut near));
    Ok(Cell {
        fds: n,
        via,
        reps: far.count,
        far_median_us: far.median_us,
        far_p90_us: far.p90_us,
        far_min_us: far.min_us,
        near_median_us: near.median_us,
        near_p90_us: near.p90_us,
        near_min_us: near.min_us,
        second_alloc_far_median_us: s(&mut far2).median_us,
        second_alloc_near_median_us: s(&mut near2).median_us,
    })
}

fn print(o: &Outcome) {
    println!(
        "fd allocation (seed 003): close the first and the n-th of N descriptors, then allocate twice"
    );
    println!(
        "Linux {}, {}; allocation by {}; median of {} repetitions per N; ns",
        o.machine.kernel,
        o.machine.cpu_model,
        match o.via {
            Via::Dup => "fcntl(F_DUPFD)",
            Via::Open => "open(\"/dev/null\")",
        },
        o.reps
    );
    println!(
        "(seed 003 used about {} descriptors; this process may hold {}, so N stops below that)",
        o.seed_fds, o.fd_limit
    );
    println!();
    println!(
        "{:>8} {:>10} {:>10} {:>10} {:>10} {:>15} {:>15}",
        "N", "far", "far p90", "near", "far-near", "2nd alloc far", "2nd alloc near"
    );
    let ns = |us: f64| format!("{:.0}", us * 1000.0);
    for c in &o.cells {
        println!(
            "{:>8} {:>10} {:>10} {:>10} {:>10} {:>15} {:>15}",
            c.fds,
            ns(c.far_median_us),
            ns(c.far_p90_us),
            ns(c.near_median_us),
            ns(c.far_median_us - c.near_median_us),
            ns(c.second_alloc_far_median_us),
            ns(c.second_alloc_near_median_us),
        );
    }
    if let (Some(a), Some(b)) = (o.cells.first(), o.cells.last()) {
        if b.fds > a.fds {
            let growth = b.second_alloc_far_median_us / a.second_alloc_far_median_us;
            let per_k = (b.second_alloc_far_median_us - a.second_alloc_far_median_us) * 1000.0
                / ((b.fds - a.fds) as f64 / 1000.0);
            println!();
            println!(
                "Finding the far hole: the second allocation took ×{growth:.2} as long at N={} as at \
                 N={} ({per_k:+.1} ns per 1,000 descriptors).",
                b.fds, a.fds
            );
            println!(
                "A single bitmap scanned word by word grows linearly with N; Linux's two-level \
                 bitmap (open_fds, and full_fds_bits with one bit per full 64-descriptor word) \
                 skips full words 64 at a time."
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reopened_numbers_are_the_closed_ones() {
        let _g = crate::TEST_FDS.lock().unwrap_or_else(|e| e.into_inner());
        let c = measure_one(50, 20, Via::Dup).unwrap();
        assert_eq!((c.fds, c.reps), (50, 20));
        assert!(c.far_min_us > 0.0 && c.far_min_us <= c.far_median_us);
        assert!(c.second_alloc_far_median_us > 0.0);
        let c = measure_one(10, 5, Via::Open).unwrap();
        assert_eq!((c.reps, c.via), (5, Via::Open));
    }
}
