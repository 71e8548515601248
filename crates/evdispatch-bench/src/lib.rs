//! evdispatch: Microbenchmarks: Poller_bench, fd allocation.
//!
//! Scaffold: the command line is wired, the work is not built yet.

/// Command-line arguments.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {}

/// Run the command.
pub fn run(_args: BenchArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
