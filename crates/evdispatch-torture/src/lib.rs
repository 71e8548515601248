//! # evdispatch torture — hostile conditions, measured
//!
//! `evdispatch torture SCENARIO [--profile tiny|quick|full] [--mechanism M]…
//! [--no-nginx] [--json]` starts our server (and nginx where the attack
//! applies) through `evdispatch-harness`, drives it with `evdispatch load`
//! or raw sockets, and prints the figures with a pass/fail against the
//! thresholds of issue 7:
//!
//! | scenario | what | passes when |
//! |---|---|---|
//! | `storm` | `rtsig`, `rtsig-batch`, `rtsig-perfd`, `hybrid` with `--rlimit-sigpending 16`, offered 1.25× the knee (the closed-loop capacity) on persistent connections | every request answered (requests = replies, 0 errors), no stall ≥ 1 s (longest run of empty 0.25 s intervals, slowest reply from its send), the queue overflowed and every overflow was recovered (server stats) |
//! | `exhaustion` | `--rlimit-nofile` low; keep-alive clients, then a crowd of connections beyond the limit | the clients' p99 within 2× their baseline (the mean of one before and one after), the server idle at the limit (< 5% of a core with the crowd waiting), every waiting connection served once descriptors free |
//! | `slowloris` | 5,000 clients sending their request a byte a second beside a normal load | normal clients' p99 within 2× baseline (the mean of one before and one after the attack; `full` makes five such rounds and takes the median ratio, with its 90% interval and every round reported; a window the hypervisor took more than 0.5% of a CPU from is measured again, at most twice) and no errors, slow clients closed at the header timeout (timed probes: not early, at most 1.5 s late) |
//! | `attacks` | the [`corpus`] (traversal in every encoding, limits, smuggling shapes, pipelining floods, invalid bytes, protocol garbage) | every attack answered as expected and the connection closed or kept as expected; nginx's answers are shown beside ours |
//! | `soak` | mixed load (active, sessions churn, idle, inactive, slow) for 3 min (`quick`) or 30 min (`full`) | RSS growth ≤ 1% after warm-up (exact `VmRSS`; its anonymous and file-backed parts reported beside it), descriptors back to baseline after the clients leave, 0 errors on the active workloads |
//!
//! Models: `epoll`, `uring-completion`, `rtsig-batch` and `hybrid` unless
//! `--mechanism` says otherwise (the storm always takes the signal
//! mechanisms). The server is pinned to CPU 0 and the load to CPU 1 when
//! two CPUs are available. The binary driven is this one (or
//! `EVDISPATCH_BIN`). Run it under `flock /tmp/evd-bench.lock` so no other
//! benchmark shares the machine.
//!
//! ## The `--json` contract (`schema: "evdispatch-torture/1"`)
//!
//! ```text
//! { "schema", "profile", "pass": all scenarios passed,
//!   "scenarios": [ { "scenario", "title", "pass", "skipped": [{what, why}],
//!       "runs": [ { "server": "evdispatch"|"nginx", "model", "pass",
//!                   "checks": [{ "name", "value", "limit", "pass" }],
//!                   "figures": { scenario-specific numbers } } ],
//!       "attacks": [ … ] (attacks only: per attack, each server's answer) } ] }
//! ```
//!
//! A run against nginx is for comparison: its checks are reported but do
//! not decide `pass`.

#![deny(missing_docs)]

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Serialize;
use serde_json::Value;

pub mod corpus;
pub mod invariants;
pub mod probe;
mod scenarios;
pub mod site;

pub use scenarios::{Check, Report, Run, ScenarioReport, Skipped};

/// Constants the scenarios run with, for tests that reproduce them.
pub mod scenarios_consts {
    pub use crate::scenarios::attacks::{HEADER_S, IDLE_S};
    pub use crate::scenarios::slowloris::LATE_S;
    pub use crate::scenarios::soak::MAX_GROWTH_PCT;
    pub use crate::scenarios::storm::{MAX_STALL_S, SIGPENDING};
}

pub use scenarios::soak::duration_s as soak_duration_s;

/// Models measured unless `--mechanism` is given (issue 7's list).
pub const DEFAULT_MODELS: &[&str] = &["epoll", "uring-completion", "rtsig-batch", "hybrid"];

/// The mechanisms whose readiness comes through the signal queue.
pub const SIGNAL_MODELS: &[&str] = &["rtsig", "rtsig-batch", "rtsig-perfd", "hybrid"];

/// How long a run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// Seconds per scenario: the smoke test (thresholds still checked).
    Tiny,
    /// The issue's figures in minutes (storm 60 s, soak 3 min).
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

/// The scenarios, in the order `all` runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Which {
    /// Signal-queue storm.
    Storm,
    /// Descriptor exhaustion.
    Exhaustion,
    /// Slowloris.
    Slowloris,
    /// Malformed and malicious input.
    Attacks,
    /// Long mixed soak.
    Soak,
    /// All five.
    All,
}

impl Which {
    /// The five scenarios `all` stands for.
    pub const EACH: [Which; 5] = [
        Which::Storm,
        Which::Exhaustion,
        Which::Slowloris,
        Which::Attacks,
        Which::Soak,
    ];

    /// Its name on the command line.
    pub fn name(self) -> String {
        let value = clap::ValueEnum::to_possible_value(&self);
        value.map_or_else(String::new, |v| v.get_name().into())
    }
}

/// Command-line arguments of `evdispatch torture`.
#[derive(Debug, Clone, clap::Args)]
pub struct TortureArgs {
    /// Which scenario (or `all`).
    #[arg(value_enum)]
    pub scenario: Which,
    /// Durations and sizes.
    #[arg(long, value_enum, default_value = "quick")]
    pub profile: Profile,
    /// A server model to measure (repeatable; default: epoll,
    /// uring-completion, rtsig-batch, hybrid).
    #[arg(long = "mechanism", value_name = "M")]
    pub mechanisms: Vec<String>,
    /// Do not run nginx for comparison.
    #[arg(long)]
    pub no_nginx: bool,
    /// Print the report as JSON (the contract in the crate docs).
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON report to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// How long the soak runs (`90s`, `15min`, `1h`), instead of the
    /// profile's (3 min quick, 30 min full).
    #[arg(long, value_name = "DURATION", value_parser = evdispatch_proc::parse_duration)]
    pub soak_duration: Option<std::time::Duration>,
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
        let two = evdispatch_proc::available_cpus() >= 2;
        (two.then_some(0), two.then_some(1))
    }
}

/// Run one scenario (not `all`) and return its report.
pub fn run_scenario(env: &Env, which: Which) -> anyhow::Result<ScenarioReport> {
    match which {
        Which::Storm => scenarios::storm::run(env),
        Which::Exhaustion => scenarios::exhaustion::run(env),
        Which::Slowloris => scenarios::slowloris::run(env),
        Which::Attacks => scenarios::attacks::run(env),
        Which::Soak => scenarios::soak::run(env),
        Which::All => bail!("run_scenario takes one scenario; `all` is each of Which::EACH"),
    }
}

/// Run `evdispatch torture`.
pub fn run(args: TortureArgs) -> anyhow::Result<()> {
    for m in &args.mechanisms {
        m.parse::<evdispatch_http::Model>()
            .map_err(anyhow::Error::msg)?;
    }
    let env = Env {
        exe: Env::default_exe()?,
        profile: args.profile,
        models: if args.mechanisms.is_empty() {
            DEFAULT_MODELS.iter().map(|s| s.to_string()).collect()
        } else {
            args.mechanisms.clone()
        },
        models_given: !args.mechanisms.is_empty(),
        nginx: !args.no_nginx,
        progress: true,
        soak_s: args.soak_duration.map(|d| d.as_secs_f64()),
    };
    let which: Vec<Which> = match args.scenario {
        Which::All => Which::EACH.to_vec(),
        w => vec![w],
    };
    let mut scenarios = Vec::new();
    for w in which {
        env.say(format!("== {} ({} profile)", w.name(), env.profile.name()));
        scenarios.push(run_scenario(&env, w)?);
    }
    let report = Report {
        schema: "evdispatch-torture/1",
        profile: env.profile,
        pass: scenarios.iter().all(|s| s.pass),
        scenarios,
    };
    let doc = serde_json::to_value(&report)?;
    if let Some(p) = &args.out {
        std::fs::write(p, serde_json::to_string_pretty(&doc)? + "\n")
            .with_context(|| format!("--out {}", p.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print!("{}", report.human());
    }
    Ok(())
}

/// A number from a JSON document by path (`"latency_us.p99"`), 0 when absent.
pub fn num(v: &Value, path: &str) -> f64 {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
        .unwrap_or(0.0)
}
