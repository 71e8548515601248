//! The JSON document of `bench server --json`: the plan, the servers, every
//! run and the analysis.

use serde::Serialize;

use super::analysis::Analysis;
use super::measure::Run;
use super::plan::Plan;

/// A server that ran, with its version.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Name (as in `--servers`).
    pub name: String,
    /// `ours`, `peer` or `floor`.
    pub kind: &'static str,
    /// Version reported by the program.
    pub version: String,
}

/// A server that could not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Name.
    pub server: String,
    /// Why, and what to do.
    pub reason: String,
}

/// The JSON document of `bench server --json`.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// `"evdispatch-bench-server/1"`.
    pub schema: &'static str,
    /// Where it ran.
    pub machine: crate::machine::Machine,
    /// The resolved settings.
    pub plan: Plan,
    /// The servers that ran.
    pub servers: Vec<ServerInfo>,
    /// Servers left out.
    pub skipped: Vec<Skipped>,
    /// Every measurement: round, scenario, server, figures.
    pub runs: Vec<Run>,
    /// What the runs say: the summary, the ratios and the targets judged
    /// (the fields of `report::Analysis`, at the top level of the JSON).
    #[serde(flatten)]
    pub analysis: Analysis,
}
