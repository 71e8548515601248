//! Every experiment of the seeds, one folder each: `<name>/mod.rs` exports
//! its `SCENARIO` (plan, run, figures) and `<name>/claims.rs` the claims its
//! data decide. [`SCENARIOS`] lists them in the order they run and appear in
//! the report; the CLI (`--only`, `--list`), the runner, the claims'
//! evaluation and the report all read it.
//!
//! Adding a scenario with its claims touches only its folder and one line
//! of the list below: a scenario's number in the report is its place in the
//! list ([`number`]), not a field to keep in step (the test-only `example`
//! scenario is registered that way, and its test checks it reaches the
//! claims and the report).

pub mod common;

use crate::claims::Claim;
use crate::spec::Scenario;

/// Declares each scenario's module and lists its `SCENARIO`, in order: one
/// line per scenario. `cargo fmt` does not enter modules declared in a
/// macro: format a scenario's files with `rustfmt --edition 2021
/// crates/evdispatch-study/src/scenarios/*/*.rs` (`.ci/run` checks them).
macro_rules! scenarios {
    ($($(#[$attr:meta])* $name:ident),* $(,)?) => {
        $($(#[$attr])* pub mod $name;)*

        /// Every scenario, in the order they run and appear in the report.
        pub static SCENARIOS: &[Scenario] = &[$($(#[$attr])* $name::SCENARIO,)*];
    };
}

scenarios! {
    poller,
    poll_vs_epoll,
    rtsig_latency,
    overhead,
    throughput,
    table1,
    hybrid,
    today,
    loadcheck,
    hostile,
    #[cfg(test)]
    example,
}

/// The number of scenario `s` in the report and in `--list`: its place in
/// [`SCENARIOS`], from 1 (0 for a scenario not in the list).
pub fn number(s: &Scenario) -> usize {
    SCENARIOS
        .iter()
        .position(|t| t.id == s.id)
        .map_or(0, |i| i + 1)
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

/// Every claim with the id of the scenario whose data decide it, in the
/// order the report lists them (the scenarios' order, then each one's).
pub fn claims() -> impl Iterator<Item = (&'static str, &'static Claim)> {
    SCENARIOS
        .iter()
        .flat_map(|s| s.claims.iter().map(move |c| (s.id, c)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::{pt, rec};
    use crate::spec::{Caps, Profile};
    use serde_json::json;

    #[test]
    fn ids_unique_numbers_in_order() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert_eq!(number(s), i + 1, "{}", s.id);
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
        // Under a CPU budget whose knee is the one measured on the 2-core
        // machine the quick profile is sized for (8,130 conn/s), so the
        // runs past it are planned with their tails.
        let caps = Caps {
            calibration: Some(crate::results::Calibration {
                knee: 8_130.0,
                ..crate::calibrate::tests::cal(vec![])
            }),
            ..Caps::everything()
        };
        for p in [Profile::Tiny, Profile::Quick, Profile::Full] {
            let regular = || SCENARIOS.iter().filter(|s| !s.opt_in);
            // The calibration of the servers' CPU budget runs first.
            let total: f64 = regular()
                .map(|s| s.plan_for(p, &caps, true).est_s())
                .sum::<f64>()
                + crate::calibrate::est_s(p);
            for s in regular() {
                let plan = s.plan_for(p, &caps, true);
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
                let plan = s.plan_for(p, &caps, true);
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
                .map(|s| s.plan_for(p, &caps, true).est_s())
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

    /// One line in the list puts the test-only `example` scenario in the
    /// list (last, numbered in order) and its claim among every claim and in
    /// the evaluation (the report's test draws it and shows its claim).
    #[test]
    fn the_example_scenario_is_registered_by_one_line() {
        assert_eq!(find("example").map(number), Some(SCENARIOS.len()));
        assert_eq!(SCENARIOS.last().map(|s| s.id), Some("example"));
        assert!(ids().ends_with(", example"));
        assert_eq!(
            claims().last().map(|(s, c)| (s, c.id)),
            Some(("example", "example-replies"))
        );
        let records = vec![rec(
            "example",
            vec![pt("example", json!({"n": 1}), json!({"reply_rate": 5.0}))],
        )];
        let claims = crate::claims::evaluate(claims(), &records);
        let ours = claims.last().expect("claims");
        assert_eq!(ours["id"], "example-replies");
        assert_eq!(ours["scenario"], "example");
        assert_eq!(ours["verdict"], "holds");
    }
}
