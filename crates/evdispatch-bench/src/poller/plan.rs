//! What `bench poller` measures: its arguments and the plan resolved from them.

use anyhow::bail;
use serde::Serialize;

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

    pub(super) fn per_round(&self) -> usize {
        self.iterations / self.rounds
    }
}
