//! evdispatch: The load generator.
//!
//! Scaffold: the command line is wired, the work is not built yet.

/// Command-line arguments.
#[derive(Debug, clap::Args)]
pub struct LoadArgs {}

/// Run the command.
pub fn run(_args: LoadArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
