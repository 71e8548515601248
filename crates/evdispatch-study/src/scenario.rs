//! The table of scenarios (one per experiment of the seeds) and what a
//! scenario is: a plan of jobs for a profile, a way to run one job, and the
//! figures that draw its data. The CLI (`--only`, `--list`), the runner, the
//! claims and the report all read [`SCENARIOS`].

use std::path::PathBuf;

use clap::ValueEnum;
use serde_json::{Map, Value};

use crate::drive::Caps;
use crate::report::figure::Figure;
use crate::results::{Point, ScenarioRecord, Skip};
use crate::scenarios;

/// How big a run is: rates, counts and durations come from the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A few seconds per scenario: the smoke test.
    Tiny,
    /// Every scenario in at most 10 minutes on a 2-core machine.
    Quick,
    /// The seeds' ranges, scaled to this machine: at most 2 hours.
    Full,
}

impl Profile {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Tiny => "tiny",
            Profile::Quick => "quick",
            Profile::Full => "full",
        }
    }

    /// The wall-clock budget for every scenario together, seconds.
    pub fn budget_s(self) -> f64 {
        match self {
            Profile::Tiny => 90.0,
            Profile::Quick => 600.0,
            Profile::Full => 7200.0,
        }
    }

    /// The part of [`Profile::budget_s`] kept for the opt-in scenarios this
    /// profile runs by default (full runs the hostile conditions, about
    /// 3,380 s planned, its soak 30 minutes): the other scenarios must fit
    /// in the rest.
    pub fn opt_in_reserve_s(self) -> f64 {
        match self {
            Profile::Full => 3_400.0,
            _ => 0.0,
        }
    }

    /// The tiny profile keeps only the entries of `all` named in `tiny`
    /// (enough for every chart and claim to get data); the others keep all.
    pub fn sample(self, all: Vec<String>, tiny: &[&str]) -> Vec<String> {
        match self {
            Profile::Tiny => all
                .into_iter()
                .filter(|m| tiny.contains(&m.as_str()))
                .collect(),
            _ => all,
        }
    }

    /// Pick one of three values by profile.
    pub fn pick<T>(self, tiny: T, quick: T, full: T) -> T {
        match self {
            Profile::Tiny => tiny,
            Profile::Quick => quick,
            Profile::Full => full,
        }
    }
}

/// One unit of work: usually one server + load run, producing one point
/// (a bench run produces many).
#[derive(Debug, Clone)]
pub struct Job {
    /// Shown in the progress bar.
    pub label: String,
    /// The job's full configuration; the scenario's `run` reads it back.
    pub config: Map<String, Value>,
    /// Estimated wall-clock seconds (for the progress bar's ETA and the
    /// profile budget check).
    pub est_s: f64,
}

/// What a scenario will do under a profile, given what is available.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The profile's parameters for this scenario, recorded in the results.
    pub params: Value,
    /// The runs to make.
    pub jobs: Vec<Job>,
    /// What cannot be measured here, and why.
    pub skipped: Vec<Skip>,
}

impl Plan {
    /// Estimated seconds for every job.
    pub fn est_s(&self) -> f64 {
        self.jobs.iter().map(|j| j.est_s).sum::<f64>() + 0.0
    }

    /// Add a job whose configuration is `spec` serialized.
    pub fn job<T: serde::Serialize>(&mut self, label: impl Into<String>, spec: &T, est_s: f64) {
        let config = match serde_json::to_value(spec) {
            Ok(Value::Object(m)) => m,
            other => panic!("a job spec must serialize to an object, got {other:?}"),
        };
        self.jobs.push(Job {
            label: label.into(),
            config,
            est_s,
        });
    }

    /// Record that `what` is not measured because `why`.
    pub fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skip {
            what: what.into(),
            why: why.into(),
        });
    }
}

/// What a job's `run` gets: where to write, what binary to drive.
#[derive(Debug)]
pub struct Ctx {
    /// The profile.
    pub profile: Profile,
    /// The output directory.
    pub out: PathBuf,
    /// The document root our server and the peers serve (files of the
    /// sizes the seeds used).
    pub www: PathBuf,
    /// Where each run's server and load logs go.
    pub logs: PathBuf,
    /// The `evdispatch` binary that provides bench, serve and load.
    pub exe: PathBuf,
    /// What is available.
    pub caps: Caps,
}

/// One experiment. To add one: write a module under `scenarios/` that
/// exports a `SCENARIO` of this type (its plan for each profile, how to run
/// one job — usually [`crate::web::run_web`] — and its figures), add its row
/// to [`SCENARIOS`], and add the claims it decides to
/// [`crate::claims::CLAIMS`] (each naming the scenario's id).
pub struct Scenario {
    /// Short id for `--only` and file names.
    pub id: &'static str,
    /// Its number in the report (the order of [`SCENARIOS`]).
    pub number: u8,
    /// Title in the report.
    pub title: &'static str,
    /// Which seed texts and sections it re-runs.
    pub seeds: &'static str,
    /// What it measures and how the seeds drew it.
    pub about: &'static str,
    /// The jobs for a profile.
    pub plan: fn(Profile, &Caps) -> Plan,
    /// Run one job.
    pub run: fn(&Ctx, &crate::scenario::Job) -> anyhow::Result<Vec<Point>>,
    /// Its figures (charts and tables), drawn from its record.
    pub figures: fn(&ScenarioRecord) -> Vec<Figure>,
    /// Runs only when named with `--only`, or under `--profile full` (long
    /// scenarios that do not fit the quick profile's 10 minutes).
    pub opt_in: bool,
}

impl Scenario {
    /// Whether a run with `profile` and no `--only` includes it.
    pub fn runs_by_default(&self, profile: Profile) -> bool {
        !self.opt_in || profile == Profile::Full
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario").field("id", &self.id).finish()
    }
}

/// Every scenario, in the order they run and appear in the report.
pub static SCENARIOS: &[Scenario] = &[
    scenarios::poller::SCENARIO,
    scenarios::poll_vs_epoll::SCENARIO,
    scenarios::rtsig_latency::SCENARIO,
    scenarios::overhead::SCENARIO,
    scenarios::throughput::SCENARIO,
    scenarios::table1::SCENARIO,
    scenarios::hybrid::SCENARIO,
    scenarios::today::SCENARIO,
    scenarios::loadcheck::SCENARIO,
    scenarios::hostile::SCENARIO,
];

/// The plan of `s` for this run: its own, or, for an opt-in scenario that
/// this run does not include (not named with `--only`, profile below
/// full), no jobs and the reason.
pub fn plan_for(s: &Scenario, p: Profile, caps: &Caps, named: bool) -> Plan {
    let plan = (s.plan)(p, caps);
    if named || s.runs_by_default(p) {
        return plan;
    }
    let est_s = plan.est_s();
    let mut skip = Plan {
        params: plan.params,
        ..Plan::default()
    };
    skip.skip(
        s.id,
        format!(
            "runs in the full profile, or with --only {} (about {:.0} min at this profile)",
            s.id,
            est_s / 60.0
        ),
    );
    skip
}

/// The scenario with `id`.
pub fn find(id: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.id == id)
}

/// The ids, comma-separated, for error messages.
pub fn ids() -> String {
    SCENARIOS
        .iter()
        .map(|s| s.id)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_unique_numbers_in_order() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert_eq!(s.number as usize, i + 1, "{}", s.id);
            assert_eq!(SCENARIOS.iter().filter(|t| t.id == s.id).count(), 1);
            assert!(find(s.id).is_some());
        }
        assert!(
            SCENARIOS.len() >= 9,
            "the issue's 8 and the load cross-check"
        );
    }

    /// With every piece and peer present, the scenarios a profile runs by
    /// default (the opt-in ones aside) fit its budget less the time kept
    /// for the opt-in ones (the estimate is the sum of the jobs' durations
    /// plus their start/stop overhead, calibrated on real runs, so this
    /// checks the profile tables).
    #[test]
    fn profiles_fit_their_budgets_when_everything_is_present() {
        let caps = Caps::everything();
        for p in [Profile::Tiny, Profile::Quick, Profile::Full] {
            let regular = || SCENARIOS.iter().filter(|s| !s.opt_in);
            let total: f64 = regular().map(|s| (s.plan)(p, &caps).est_s()).sum();
            for s in regular() {
                let plan = (s.plan)(p, &caps);
                eprintln!(
                    "{} {}: {} jobs, {:.0} s",
                    p.name(),
                    s.id,
                    plan.jobs.len(),
                    plan.est_s()
                );
            }
            let room = p.budget_s() - p.opt_in_reserve_s();
            assert!(
                total <= room,
                "{}: planned {total:.0} s > {room:.0} s (budget {} s less {} s kept for opt-in scenarios)",
                p.name(),
                p.budget_s(),
                p.opt_in_reserve_s()
            );
            for s in regular() {
                let plan = (s.plan)(p, &caps);
                assert!(
                    !plan.jobs.is_empty(),
                    "{} plans no job under {}",
                    s.id,
                    p.name()
                );
                if p == Profile::Tiny {
                    assert!(
                        plan.est_s() <= 20.0,
                        "{}: tiny plans {:.0} s",
                        s.id,
                        plan.est_s()
                    );
                }
            }
        }
    }

    /// The opt-in scenarios a profile runs by default fit the time kept for
    /// them, so the whole profile fits its budget.
    #[test]
    fn opt_in_scenarios_fit_the_time_kept_for_them() {
        let caps = Caps::everything();
        for p in [Profile::Tiny, Profile::Quick, Profile::Full] {
            let opt_in: f64 = SCENARIOS
                .iter()
                .filter(|s| s.opt_in && s.runs_by_default(p))
                .map(|s| (s.plan)(p, &caps).est_s())
                .sum();
            assert!(
                opt_in <= p.opt_in_reserve_s(),
                "{}: opt-in scenarios plan {opt_in:.0} s > {} s kept for them",
                p.name(),
                p.opt_in_reserve_s()
            );
        }
    }

    /// With nothing built, every scenario says why it measures nothing.
    #[test]
    fn nothing_available_means_reasons_not_silence() {
        let caps = Caps::nothing();
        for s in SCENARIOS {
            let plan = (s.plan)(Profile::Quick, &caps);
            assert!(
                plan.jobs.is_empty(),
                "{} planned jobs with nothing available",
                s.id
            );
            assert!(!plan.skipped.is_empty(), "{} gives no reason", s.id);
        }
    }
}
