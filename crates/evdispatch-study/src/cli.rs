//! The command line of `evdispatch study`: the run's arguments and the
//! subcommands beside it (`diff`, `render`).

use std::path::PathBuf;

use crate::spec::Profile;
use crate::{diff, remote};

/// Command-line arguments of `evdispatch study`.
#[derive(Debug, clap::Args)]
pub struct StudyArgs {
    /// Rates, counts and durations: tiny (seconds per scenario, the smoke
    /// test), quick (about 10 minutes, under the CPU budget), full (≤ 2 hours).
    #[arg(long, value_enum, default_value = "quick")]
    pub profile: Profile,
    /// Run only these scenarios (ids from --list); the others' saved results
    /// stay in the report.
    #[arg(long, num_args = 1.., value_name = "SCENARIO")]
    pub only: Vec<String>,
    /// Output directory.
    #[arg(long, default_value = "study-out")]
    pub out: PathBuf,
    /// Discard saved results and re-run everything selected.
    #[arg(long)]
    pub fresh: bool,
    /// List the scenarios, what each would run here and for how long, and exit
    /// (with --load-host: probe that host, copying nothing).
    #[arg(long)]
    pub list: bool,
    /// Let idle CPUs halt as they are configured to. By default the study
    /// holds them in their shallowest idle state while it runs (PM QoS,
    /// `/dev/cpu_dma_latency` = 0, as `cyclictest` does), so that waking
    /// an idle server costs the same in every run; `results.json` says
    /// which (`environment.cpu_idle`).
    #[arg(long)]
    pub allow_deep_idle: bool,
    /// The load on a second host (--load-host and its options).
    #[command(flatten)]
    pub load: remote::LoadHostArgs,
    /// Instead of running the study: `diff A B` compares two runs.
    #[command(subcommand)]
    pub command: Option<StudyCommand>,
}

/// What `evdispatch study` does besides running the study.
#[derive(Debug, clap::Subcommand)]
pub enum StudyCommand {
    /// List the claims whose verdicts or figures moved between two runs (A,
    /// B: study output directories or results.json files), with both values
    /// and whether each move is beyond the noise.
    Diff(diff::DiffArgs),
    /// Write the report (index.html, summary.md, report.md) of a saved
    /// run again, without measuring: its records read from FROM (a study
    /// output directory, or a results.json or results.json.gz), the claims
    /// judged again by this build.
    Render(RenderArgs),
}

/// Arguments of `evdispatch study render`.
#[derive(Debug, clap::Args)]
pub struct RenderArgs {
    /// The saved run: a study output directory or its results.json(.gz).
    pub from: PathBuf,
    /// Where to write the report (created if absent).
    #[arg(long)]
    pub out: PathBuf,
}
