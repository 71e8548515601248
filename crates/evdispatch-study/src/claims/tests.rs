//! The evaluation over every scenario's claims.

use super::testkit::*;
use super::*;
use crate::scenarios;
use serde_json::json;

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

/// A claim whose figure was renamed in its scenario's output is caught:
/// `missing_keys` names what it looked for, apart from a claim without data
/// for want of a peer (nothing missing: the scenario's points have the key).
#[test]
fn a_renamed_figure_is_a_missing_key_not_a_missing_peer() {
    let judge = |metric: &str| {
        let r = rec(
            "example",
            vec![pt("example", json!({"n": 1}), json!({ metric: 5.0 }))],
        );
        let out = evaluate(scenarios::claims(), &[r]);
        out.into_iter()
            .find(|c| c["id"] == "example-replies")
            .expect("the example claim")
    };
    let renamed = judge("replies");
    assert_eq!(renamed["verdict"], "not measured");
    assert_eq!(renamed["missing_keys"], json!(["reply_rate"]));
    assert!(renamed["why"].as_str().unwrap().contains("reply_rate"));
    let fine = judge("reply_rate");
    assert_eq!(fine["verdict"], "holds");
    assert!(fine.get("missing_keys").is_none(), "{fine}");
    // A filter on a configuration key no point has is caught too.
    let r = rec(
        "poll-vs-epoll",
        vec![pt(
            "poll",
            json!({"inactive_conns": 1, "rate": 1}),
            json!({"reply_rate": 1.0}),
        )],
    );
    let out = evaluate(scenarios::claims(), &[r]);
    let c = out.iter().find(|c| c["id"] == "devpoll-keeps-up").unwrap();
    assert!(
        c["missing_keys"]
            .as_array()
            .unwrap()
            .contains(&json!("inactive")),
        "{c}"
    );
}
