//! evdispatch: The study: every experiment of the seeds, into a report.
//!
//! Scaffold: the command line is wired, the work is not built yet.

/// Command-line arguments.
#[derive(Debug, clap::Args)]
pub struct StudyArgs {}

/// Run the command.
pub fn run(_args: StudyArgs) -> anyhow::Result<()> {
    anyhow::bail!("not built yet")
}
