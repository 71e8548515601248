//! `evdispatch bench`: the microbenchmarks.
//!
//! * `bench poller`: Dan Kegel's Poller_bench (seed 001) on every mechanism
//!   of the library, beside the same loop written straight on the system
//!   calls (`raw-epoll`, `raw-poll`), the Rust crates `mio` and `polling`, and
//!   the C libraries libevent and libev (a small harness of ours, compiled
//!   when their development files are found). See [`poller`].
//! * `bench fdalloc`: the descriptor-allocation experiment of seed 003. See
//!   [`fdalloc`].
//! * `bench overflow`: the cost of recovering from an RT-signal queue
//!   overflow. See [`overflow`].
//! * `bench storm`: how often each RT-signal mechanism overflows in a storm
//!   of busy descriptors, with a queue of one signal per descriptor and a
//!   smaller one (rtsig-perfd beside rtsig and rtsig-batch). See [`storm`].
//! * `bench server`: `evdispatch serve` against nginx, lighttpd and h2o
//!   (server CPU per request and per connection, idle connections held,
//!   memory per idle connection), the figures of issues 4 and 18, beside two floor
//!   servers (a canned response from memory on epoll and on io_uring) that
//!   every server's CPU per request is divided by. See [`server`].
//!
//! * `bench generator`: `evdispatch load` against `wrk -t1`, requests per
//!   generator CPU-second, plain HTTP and HTTPS (issue 17). See
//!   [`generator`].
//!
//! Each prints a table for people and, with `--json`, one document for
//! programs (the study reads it).

#![deny(missing_docs)]

pub mod fdalloc;
pub mod generator;
pub mod overflow;
pub mod poller;
pub mod server;
pub mod storm;
mod summary;
mod sys;

pub use summary::Summary;

/// Tests that open descriptors take this: the fdalloc test checks which
/// numbers the kernel hands back, which another thread opening files at the
/// same moment would change.
#[cfg(test)]
pub(crate) static TEST_FDS: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Command-line arguments of `evdispatch bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Which benchmark.
    #[command(subcommand)]
    pub command: BenchCommand,
}

/// The benchmarks. Add one by adding a variant and its arm in [`run`].
#[derive(Debug, clap::Subcommand)]
pub enum BenchCommand {
    /// Poller_bench (seed 001): time one wait plus a 1-byte read per ready
    /// descriptor, with N socketpairs watched and A of them written.
    Poller(poller::PollerArgs),
    /// Descriptor allocation (seed 003): with N descriptors open, close the
    /// first and the last, then open twice.
    Fdalloc(fdalloc::FdallocArgs),
    /// RT-signal queue overflow: time to recover a full queue of Q signals
    /// with N descriptors registered (in a child with RLIMIT_SIGPENDING = Q).
    Overflow(overflow::OverflowArgs),
    /// RT-signal queue storm: overflows of each signal mechanism when busy
    /// descriptors receive data while served, with RLIMIT_SIGPENDING = Q.
    Storm(storm::StormArgs),
    /// Our server against nginx, lighttpd and h2o: server CPU per request
    /// (keep-alive) and per connection (Connection: close), idle
    /// connections held, memory per idle connection.
    Server(server::ServerArgs),
    /// The load generator's capacity against `wrk -t1`: requests per
    /// generator CPU-second, closed loop, keep-alive, HTTP and HTTPS.
    Generator(generator::GeneratorArgs),
    /// Internal: the writer helper `bench poller` starts (control socket on
    /// standard input).
    #[command(name = "poller-writer", hide = true)]
    PollerWriter(poller::WriterArgs),
    /// Internal: a floor server of `bench server` (a canned response from
    /// memory on epoll or io_uring), run as its child.
    #[command(name = "floor-server", hide = true)]
    FloorServer(server::FloorArgs),
}

/// Run `evdispatch bench …`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Poller(a) => poller::run(a),
        BenchCommand::Fdalloc(a) => fdalloc::run(a),
        BenchCommand::Overflow(a) => overflow::run(a),
        BenchCommand::Storm(a) => storm::run(a),
        BenchCommand::Server(a) => server::run(a),
        BenchCommand::Generator(a) => generator::run(a),
        BenchCommand::PollerWriter(a) => poller::writer_main(a.cpu),
        BenchCommand::FloorServer(a) => server::floor_main(a),
    }
}

/// Print `outcome` as JSON (`json`) or with `print`, and also save the JSON
/// to `save` when given.
pub(crate) fn emit<T: serde::Serialize>(
    outcome: &T,
    json: bool,
    save: Option<&std::path::Path>,
    print: impl FnOnce(&T),
) -> anyhow::Result<()> {
    use anyhow::Context;
    let text = serde_json::to_string_pretty(outcome)?;
    if let Some(path) = save {
        std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
    }
    if json {
        println!("{text}");
    } else {
        print(outcome);
    }
    Ok(())
}

/// A progress bar on stderr of `len` steps (hidden unless `shown`), in the
/// style every bench draws; `eta` adds the estimated time left.
pub(crate) fn progress_bar(len: u64, shown: bool, eta: bool) -> indicatif::ProgressBar {
    let bar = if shown {
        indicatif::ProgressBar::new(len)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let template = if eta {
        "{elapsed_precise} [{bar:30}] {pos}/{len} {msg} (eta {eta})"
    } else {
        "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}"
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

/// The values given on the command line, else `default`; sorted, each once.
pub(crate) fn given_or(given: &[usize], default: Vec<usize>) -> Vec<usize> {
    let mut v = if given.is_empty() {
        default
    } else {
        given.to_vec()
    };
    v.sort_unstable();
    v.dedup();
    v
}

/// Restores the thread's CPU affinity when dropped (so a program that runs
/// a benchmark through this library is not left pinned).
pub(crate) struct Pinned(Option<evdispatch_proc::CpuSet>);

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(set) = self.0.take() {
            let _ = evdispatch_proc::set_affinity(&set);
        }
    }
}

/// Pin the calling thread to `cpu` until the guard is dropped.
pub(crate) fn pin_scoped(cpu: usize) -> anyhow::Result<Pinned> {
    let before = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    pin_to(cpu)?;
    Ok(Pinned(before))
}

/// Pin the calling thread (and so a single-threaded process) to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> anyhow::Result<()> {
    evdispatch_proc::pin_current_thread(&[cpu]).map_err(|e| {
        anyhow::anyhow!(
            "{e}; this machine has {} cpus (numbered from 0)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )
    })
}

/// The highest-numbered CPU this process may run on (the default pinning:
/// CPU 0 tends to take more of the machine's housekeeping).
pub(crate) fn last_allowed_cpu() -> Option<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    (0..CpuSet::count())
        .rev()
        .find(|&c| set.is_set(c).unwrap_or(false))
}

/// One line about the machine: kernel, CPU model, cores.
pub(crate) fn machine() -> Machine {
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // Online CPUs of the machine, not of this thread's affinity (which
    // --cpu narrows).
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(1);
    Machine {
        kernel,
        cpu_model,
        cores,
    }
}

/// Where a measurement ran.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    /// `uname -r`.
    pub kernel: String,
    /// From /proc/cpuinfo.
    pub cpu_model: String,
    /// Usable cores.
    pub cores: usize,
}
