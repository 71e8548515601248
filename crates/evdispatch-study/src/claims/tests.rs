//! The evaluation over every scenario's claims.

use super::testkit::*;
use super::*;
use crate::scenarios;

#[test]
fn every_claim_has_a_unique_id_and_says_why_without_data() {
    for (scenario, c) in scenarios::claims() {
        assert_eq!(
            scenarios::claims().filter(|(_, d)| d.id == c.id).count(),
            1,
            "{}",
            c.id
        );
        // Without data every claim says so rather than guessing.
        assert_eq!(
            (c.verdict)(&empty(scenario)).outcome,
            Outcome::NotMeasured,
            "{}",
            c.id
        );
    }
}

#[test]
fn unrun_or_empty_scenarios_are_not_measured_with_reasons() {
    let mut empty = rec("poller", vec![]);
    empty.skipped.push(crate::results::Skip {
        what: "Poller_bench table".into(),
        why: "not built".into(),
    });
    let out = evaluate(scenarios::claims(), &[empty]);
    assert_eq!(out.len(), scenarios::claims().count());
    for c in &out {
        assert_eq!(c["verdict"], "not measured");
        assert!(!c["why"].as_str().unwrap().is_empty());
    }
    assert!(out[0]["why"].as_str().unwrap().contains("not built"));
}
