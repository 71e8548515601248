//! What the claims' tests share: synthetic records and a check of one
//! claim's verdict on them. Each scenario's `claims.rs` tests its verdict
//! functions with these: a data set on which the claim holds and one on
//! which it fails (and `not measured` without data).

use serde_json::{json, Value};

use super::{Claim, Outcome};
use crate::results::{Point, ScenarioRecord, Status};

/// A point: series, config, metrics.
pub type Pt = (String, Value, Value);

/// A point of `series`.
pub fn pt(series: &str, config: Value, metrics: Value) -> Pt {
    (series.to_string(), config, metrics)
}

/// A complete record of scenario `id` with these points.
pub fn rec(id: &str, pts: Vec<Pt>) -> ScenarioRecord {
    ScenarioRecord {
        id: id.into(),
        status: Status::Complete,
        profile: "tiny".into(),
        params: json!({}),
        started_unix: 0,
        duration_s: 0.0,
        git_commit: "test".into(),
        capabilities: vec![],
        points: pts
            .into_iter()
            .map(|(series, c, m)| Point {
                series,
                config: c.as_object().unwrap().clone(),
                metrics: m
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
                    .collect(),
                raw: Value::Null,
            })
            .collect(),
        skipped: vec![],
        failures: vec![],
        timings: vec![],
        lock_wait_s: 0.0,
        load_host: None,
        rounds: 1,
    }
}

/// Claim `id` of `claims` (a scenario's `CLAIMS`) gives `want` on `r`
/// (with numbers and a reason).
pub fn check(claims: &[Claim], id: &str, r: &ScenarioRecord, want: Outcome) {
    let claim = claims
        .iter()
        .find(|c| c.id == id)
        .unwrap_or_else(|| panic!("no claim {id}"));
    let v = claim.judge(r);
    assert_eq!(v.outcome, want, "{id}: {v:?}");
    if want != Outcome::NotMeasured {
        assert!(!v.numbers.is_empty(), "{id} gives no numbers");
    }
    assert!(!v.why.is_empty(), "{id} says nothing");
}

/// Each claim of `ids` holds on `good` and fails on `bad`.
pub fn holds_and_fails(
    claims: &[Claim],
    ids: &[&str],
    good: &ScenarioRecord,
    bad: &ScenarioRecord,
) {
    for id in ids {
        check(claims, id, good, Outcome::Holds);
        check(claims, id, bad, Outcome::Fails);
    }
}

/// A record of scenario `id` without points.
pub fn empty(id: &str) -> ScenarioRecord {
    rec(id, vec![])
}
