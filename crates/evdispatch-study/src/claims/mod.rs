//! What a claim is and how claims are judged: the verdict types, the
//! helpers verdict functions read a scenario's record with, and the
//! evaluation of every claim against a run's records. The claims themselves
//! live beside their scenario (`scenarios/<name>/claims.rs`), each with the
//! seed and section it comes from and a function that computes its verdict
//! from this run's data. No verdict is written by hand: every one is `holds`, `partly`,
//! `fails` or `not measured` (with why) according to thresholds stated in
//! its `why`, and comes with the numbers behind it.
//!
//! Thresholds are generous on purpose: a claim about a shape ("grows",
//! "flat", "jumps") is judged on ratios between points of the same run,
//! never on absolute figures from a 400 MHz machine.

use serde::Serialize;
use serde_json::{json, Value};

use crate::report::figure::fmt_num;
use crate::results::{reading_keys, Point, ScenarioRecord};

/// A verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The data agree with the claim.
    Holds,
    /// Part of the claim holds.
    Partly,
    /// The data contradict the claim.
    Fails,
    /// This run has no data to decide.
    NotMeasured,
}

impl Outcome {
    /// The word used in the report.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Partly => "partly",
            Outcome::Fails => "fails",
            Outcome::NotMeasured => "not measured",
        }
    }
}

/// A verdict with the numbers behind it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The outcome.
    pub outcome: Outcome,
    /// The numbers it was decided on, as (name, value) pairs.
    pub numbers: Vec<(String, String)>,
    /// How the numbers lead to the outcome (or why nothing was measured).
    pub why: String,
}

/// `not measured`, because `why`.
pub fn nm(why: impl Into<String>) -> Verdict {
    Verdict {
        outcome: Outcome::NotMeasured,
        numbers: vec![],
        why: why.into(),
    }
}

/// A decided verdict on `numbers` (formatted for the report).
pub fn verdict(outcome: Outcome, numbers: Vec<(&str, f64)>, why: impl Into<String>) -> Verdict {
    Verdict {
        outcome,
        numbers: numbers
            .into_iter()
            .map(|(k, v)| (k.to_string(), fmt_num(v)))
            .collect(),
        why: why.into(),
    }
}

/// Two sub-claims: both → holds, one → partly, none → fails.
pub fn both(a: bool, b: bool) -> Outcome {
    match (a, b) {
        (true, true) => Outcome::Holds,
        (false, false) => Outcome::Fails,
        _ => Outcome::Partly,
    }
}

/// Three bands: `holds` where `good`, `partly` where `fair`, else `fails`.
pub fn band(good: bool, fair: bool) -> Outcome {
    if good {
        Outcome::Holds
    } else if fair {
        Outcome::Partly
    } else {
        Outcome::Fails
    }
}

/// One claim of the seeds, listed in the `CLAIMS` of the scenario whose
/// data decide it.
pub struct Claim {
    /// Short id.
    pub id: &'static str,
    /// Seed file number (`000`…`004`), or `today` for today's questions.
    pub seed: &'static str,
    /// Section, figure or table of the seed.
    pub section: &'static str,
    /// The claim, in our words.
    pub text: &'static str,
    /// The verdict from that scenario's record.
    pub verdict: fn(&ScenarioRecord) -> Verdict,
}

/// `json!(v)` shorthand for filters.
pub fn j<T: Serialize>(v: T) -> Value {
    json!(v)
}

/// The filter entry selecting `series`.
pub fn s(series: &str) -> (&'static str, Value) {
    ("series", j(series))
}

/// `metric` at the smallest and largest `x` among points matching `f`.
pub fn ends(
    rec: &ScenarioRecord,
    f: &[(&str, Value)],
    x: &str,
    metric: &str,
) -> Option<((f64, f64), (f64, f64))> {
    let xy = rec.xy(f, x, metric);
    if xy.len() < 2 || xy.first()?.0 == xy.last()?.0 {
        return None;
    }
    Some((*xy.first()?, *xy.last()?))
}

/// Largest value of `metric` among points matching `f`.
pub fn peak(rec: &ScenarioRecord, f: &[(&str, Value)], metric: &str) -> Option<f64> {
    rec.select(f)
        .filter_map(|p| p.metric(metric))
        .reduce(f64::max)
}

/// Largest value of config or metric `key` among points matching `f`.
pub fn largest(rec: &ScenarioRecord, f: &[(&str, Value)], key: &str) -> Option<f64> {
    rec.select(f).filter_map(|p| p.num(key)).reduce(f64::max)
}

/// Smallest value of config or metric `key` among points matching `f`.
pub fn smallest(rec: &ScenarioRecord, f: &[(&str, Value)], key: &str) -> Option<f64> {
    rec.select(f).filter_map(|p| p.num(key)).reduce(f64::min)
}

/// `metric` of the first point matching `f`.
pub fn at(rec: &ScenarioRecord, f: &[(&str, Value)], metric: &str) -> Option<f64> {
    rec.select(f).find_map(|p| p.metric(metric))
}

/// `not measured`: this run has no data for `what`.
pub fn missing(what: &str) -> Verdict {
    nm(format!("no data for {what} in this run"))
}

/// The share of the offered rate a run must answer to count as keeping up.
pub const KEEP: f64 = 0.95;

/// Where a series stops keeping up with the offered rate: the highest
/// offered rate up to which every point answered ≥ 95% of it (`None` if it
/// fell behind at the lowest rate), and the lowest offered rate it did not
/// keep up with (`None` if it kept up everywhere).
pub fn knee(rec: &ScenarioRecord, f: &[(&str, Value)]) -> Option<(Option<f64>, Option<f64>)> {
    let xy = rec.xy(f, "rate", "reply_rate");
    if xy.is_empty() {
        return None;
    }
    let kept = xy
        .iter()
        .take_while(|(x, y)| *y >= KEEP * x)
        .last()
        .map(|p| p.0);
    let behind = xy.iter().find(|(x, y)| *y < KEEP * x).map(|p| p.0);
    Some((kept, behind))
}

/// Whether the generator, not the server, may have set a point's figure.
pub fn generator_bound(p: &Point) -> bool {
    p.metric("generator_limited") == Some(1.0)
}

/// Judge every claim against the records of this run: `claims` pairs each
/// claim with the id of the scenario whose data decide it (in report order,
/// as `crate::scenarios::claims` gives them). A claim whose scenario did
/// not run, or measured nothing, is `not measured` with the scenario's
/// reasons. A claim that reads a configuration key or metric no point of
/// its scenario has gets `missing_keys` (and says so in `why`): its figures
/// were renamed or lost, which a missing peer alone never causes when the
/// scenario skipped nothing.
pub fn evaluate<'a>(
    claims: impl IntoIterator<Item = (&'a str, &'a Claim)>,
    records: &[ScenarioRecord],
) -> Vec<Value> {
    claims
        .into_iter()
        .map(|(scenario, c)| {
            // The keys it looked for that no point of the scenario has: a
            // figure renamed or gone, not a peer or a mechanism missing.
            let mut missing = vec![];
            let v = match records.iter().find(|r| r.id == scenario) {
                None => nm(format!("scenario {scenario} was not run (see --only)")),
                Some(r) if r.points.is_empty() => {
                    let why: Vec<String> = r.skipped.iter().chain(&r.failures).map(|s| format!("{}: {}", s.what, s.why)).collect();
                    nm(format!("scenario {scenario} measured nothing: {}", if why.is_empty() { "no data".to_string() } else { why.join("; ") }))
                }
                Some(r) => {
                    let (v, read) = reading_keys(|| (c.verdict)(r));
                    missing = r.missing_keys(&read);
                    v
                }
            };
            let why = if missing.is_empty() {
                v.why
            } else {
                format!(
                    "{} [keys this claim reads that no point of scenario {scenario} has: {}]",
                    v.why,
                    missing.join(", ")
                )
            };
            let mut claim = json!({
                "id": c.id,
                "seed": c.seed,
                "section": c.section,
                "claim": c.text,
                "scenario": scenario,
                "verdict": v.outcome.word(),
                "numbers": v.numbers.iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
                "why": why,
            });
            if !missing.is_empty() {
                claim["missing_keys"] = json!(missing);
            }
            claim
        })
        .collect()
}

#[cfg(test)]
pub mod testkit;

#[cfg(test)]
mod tests;
