//! What every scenario runs with: the [`Env`] (binary, profile, models),
//! the [`Profile`] of durations, and the model lists.

use std::path::PathBuf;

use anyhow::Context;
use serde::Serialize;

/// Models measured unless `--mechanism` is given.
pub const DEFAULT_MODELS: &[&str] = &["epoll", "uring-completion", "rtsig-batch", "hybrid"];

/// The mechanisms whose readiness comes through the signal queue.
pub const SIGNAL_MODELS: &[&str] = &["rtsig", "rtsig-batch", "rtsig-perfd", "hybrid"];

/// How long a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Seconds per scenario: the smoke test (thresholds still checked).
    Tiny,
    /// The thresholds' figures in minutes (storm 60 s, soak 3 min).
    Quick,
    /// The soak for 30 minutes.
    Full,
}

impl Profile {
    /// Pick one of three values.
    pub fn pick<T>(self, tiny: T, quick: T, full: T) -> T {
        match self {
            Profile::Tiny => tiny,
            Profile::Quick => quick,
            Profile::Full => full,
        }
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        self.pick("tiny", "quick", "full")
    }
}

/// Everything a scenario needs.
#[derive(Debug, Clone)]
pub struct Env {
    /// The `evdispatch` binary that provides `serve` and `load`.
    pub exe: PathBuf,
    /// The profile.
    pub profile: Profile,
    /// Models to measure.
    pub models: Vec<String>,
    /// Whether `--mechanism` was given (the storm then keeps only the
    /// signal mechanisms among them).
    pub models_given: bool,
    /// Compare with nginx where it applies.
    pub nginx: bool,
    /// Print progress lines on standard error.
    pub progress: bool,
    /// The soak's length in seconds (`None`: the profile's).
    pub soak_s: Option<f64>,
}

impl Env {
    /// The binary to drive: `EVDISPATCH_BIN`, else this program.
    pub fn default_exe() -> anyhow::Result<PathBuf> {
        match std::env::var_os("EVDISPATCH_BIN") {
            Some(p) => Ok(PathBuf::from(p)),
            None => std::env::current_exe().context("cannot find this program's path"),
        }
    }

    /// Print a progress line.
    pub fn say(&self, msg: impl AsRef<str>) {
        if self.progress {
            eprintln!("torture: {}", msg.as_ref());
        }
    }

    /// CPUs of the server and of the load generator (none with one CPU).
    pub fn cpus(&self) -> (Option<usize>, Option<usize>) {
        let two = evdispatch_host::available_cpus() >= 2;
        (two.then_some(0), two.then_some(1))
    }
}
