//! The command line of `evdispatch torture`: which scenario, with which
//! profile and models, and the report it prints.

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Serialize;

use crate::env::{Env, Profile, DEFAULT_MODELS};
use crate::scenarios::{self, Report, ScenarioReport};

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
    /// TLS handshakes as a hostile surface.
    Tls,
    /// All six.
    All,
}

impl Which {
    /// The six scenarios `all` stands for.
    pub const EACH: [Which; 6] = [
        Which::Storm,
        Which::Exhaustion,
        Which::Slowloris,
        Which::Attacks,
        Which::Tls,
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
    #[arg(long, value_name = "DURATION", value_parser = evdispatch_host::parse_duration)]
    pub soak_duration: Option<std::time::Duration>,
}

/// Run one scenario (not `all`) and return its report.
pub fn run_scenario(env: &Env, which: Which) -> anyhow::Result<ScenarioReport> {
    match which {
        Which::Storm => scenarios::storm::run(env),
        Which::Exhaustion => scenarios::exhaustion::run(env),
        Which::Slowloris => scenarios::slowloris::run(env),
        Which::Attacks => scenarios::attacks::run(env),
        Which::Soak => scenarios::soak::run(env),
        Which::Tls => scenarios::tls::run(env),
        Which::All => bail!("run_scenario takes one scenario; `all` is each of Which::EACH"),
    }
}

/// Run `evdispatch torture`.
pub fn run(args: TortureArgs) -> anyhow::Result<()> {
    for m in &args.mechanisms {
        m.parse::<evdispatch_server::Model>()
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
