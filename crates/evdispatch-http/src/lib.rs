//! evdispatch: The static-content micro web server.
//!
//! Scaffold: the command line is wired, the work is not built yet.

/// Command-line arguments.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {}

/// Run the command.
pub fn run(_args: ServeArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
