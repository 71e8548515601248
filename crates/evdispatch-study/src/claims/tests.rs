//! The evaluation over every scenario's claims.

use super::testkit::*;
use super::*;
use crate::scenarios;
use serde_json::{json, Value};

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
            c.judge(&empty(scenario)).outcome,
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

/// A record of the example scenario measured in rounds: `rates[r]` is the
/// reply rate of round r + 1.
fn example_rounds(rates: &[f64]) -> Value {
    let points = rates
        .iter()
        .enumerate()
        .map(|(i, y)| {
            pt(
                "example",
                json!({"n": 1, "round": i + 1}),
                json!({"reply_rate": y}),
            )
        })
        .collect();
    let out = evaluate(scenarios::claims(), &[rec("example", points)]);
    out.into_iter()
        .find(|c| c["id"] == "example-replies")
        .expect("the example claim")
}

/// The verdict function runs on each round apart: rounds that agree give
/// the verdict with the median and the range; rounds that disagree give
/// `undecided`, each round's verdict listed; one round is flagged. Every
/// entry has the shape of `results::ClaimEntry` (the schema's).
#[test]
fn rounds_are_judged_apart_and_combined() {
    let agree = example_rounds(&[4.0, 6.0, 5.0]);
    assert_eq!(agree["verdict"], "holds", "{agree}");
    assert_eq!(agree["rounds"], 3);
    assert_eq!(agree["numbers"][0]["value"], "5");
    assert_eq!(agree["numbers"][0]["lo"], 4.0);
    assert_eq!(agree["numbers"][0]["hi"], 6.0);
    assert_eq!(agree["coverage"], 0.75);
    assert!(agree.get("one_round").is_none());
    let split = example_rounds(&[4.0, 0.0, 5.0]);
    assert_eq!(split["verdict"], "undecided", "{split}");
    assert_eq!(
        split["round_verdicts"],
        json!([{"round": 1, "verdict": "holds"}, {"round": 2, "verdict": "fails"}, {"round": 3, "verdict": "holds"}])
    );
    assert!(split["more_rounds"].is_string(), "{split}");
    assert!(split["why"].as_str().unwrap().contains("fails in round 2"));
    let one = example_rounds(&[3.0]);
    assert_eq!(one["verdict"], "holds");
    assert_eq!(one["one_round"], true);
    assert!(one["why"]
        .as_str()
        .unwrap()
        .starts_with("Decided on one round"));
    // Two rounds planned, one measured: undecided, and not "decided on one
    // round" (the report would say so of an undecided claim).
    let lone = evaluate(
        scenarios::claims(),
        &[rec(
            "example",
            vec![
                pt(
                    "example",
                    json!({"n": 1, "round": 1}),
                    json!({"reply_rate": 5.0}),
                ),
                pt(
                    "example",
                    json!({"n": 1, "round": 2}),
                    json!({"other": 1.0}),
                ),
            ],
        )],
    )
    .into_iter()
    .find(|c| c["id"] == "example-replies")
    .expect("the example claim");
    assert_eq!(lone["verdict"], "undecided", "{lone}");
    assert_eq!(lone["rounds"], 1, "{lone}");
    assert!(lone.get("one_round").is_none(), "{lone}");
    for c in [agree, split, one, lone] {
        serde_json::from_value::<crate::results::ClaimEntry>(c.clone())
            .unwrap_or_else(|e| panic!("{c} is not a ClaimEntry: {e}"));
    }
}
