//! evdispatch: Microbenchmarks: Poller_bench, fd allocation, RT-signal
//! overflow recovery.
//!
//! * `bench overflow`: the cost of recovering from an RT-signal queue
//!   overflow. See [`overflow`].

#![deny(missing_docs)]

pub mod overflow;

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
    /// RT-signal queue overflow: time to recover a full queue of Q signals
    /// with N descriptors registered (in a child with RLIMIT_SIGPENDING = Q).
    Overflow(overflow::OverflowArgs),
}

/// Run `evdispatch bench …`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    match args.command {
        BenchCommand::Overflow(a) => overflow::run(a),
    }
}
