//! A test-only scenario, registered in `scenarios/mod.rs` by one line (under
//! a `cfg(test)` attribute) exactly as a real one is: it shows, and the test
//! `the_example_scenario_is_registered_by_one_line` there checks, that a
//! scenario with one claim needs only its folder and that line to reach
//! `--only`, the claims' evaluation and the report. It measures nothing:
//! its one job needs `evdispatch bench` and its run measures nothing.

mod claims;

use serde_json::json;

use crate::figure::{Figure, Metrics};
use crate::results::{Point, ScenarioRecord};
use crate::scenarios::common::chart;
use crate::spec::{Caps, Ctx, Job, Plan, Profile, Scenario, Unavailable};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "example",
    title: "Example (tests only)",
    seeds: "none",
    about: "A scenario that exists in the crate's own tests only.",
    plan,
    run,
    figures,
    opt_in: false,
    claims: claims::CLAIMS,
};

fn plan(_: Profile, caps: &Caps) -> Plan {
    let mut plan = Plan {
        params: json!({"n": [1]}),
        ..Plan::default()
    };
    if caps.bench {
        plan.job("example", &json!({"series": "example", "n": 1}), 0.1);
    } else {
        plan.skip("example", "`evdispatch bench` is not in this build");
    }
    plan
}

fn run(_: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    Err(Unavailable(format!(
        "{}: a test-only scenario measures nothing",
        job.label
    ))
    .into())
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    vec![chart(
        rec,
        &[],
        "n",
        "n",
        Metrics::y("reply_rate"),
        "replies/s",
        (false, false),
        "Example".into(),
        "Test data only.",
    )]
}
