//! The verdict types and the helpers verdict functions build them with
//! (below [`super::rounds`], which combines rounds' verdicts, and the
//! evaluation in [`super`]).

use serde::Serialize;

use crate::figure::fmt_num;

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
    /// The rounds disagree: the claim's deciding figure straddles its
    /// threshold (only [`combine`](crate::claims::rounds::combine) gives it, never a verdict function).
    Undecided,
    /// This run has no data to decide.
    NotMeasured,
    /// The runs measured, but never in the regime the claim is about (the
    /// server never fell behind, the generator was the limit, the hybrid
    /// never switched…): its numbers say what was reached instead.
    NotReached,
}

impl Outcome {
    /// The word used in the report.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Partly => "partly",
            Outcome::Fails => "fails",
            Outcome::Undecided => "undecided",
            Outcome::NotMeasured => "not measured",
            Outcome::NotReached => "not reached",
        }
    }

    /// Whether it says something about the claim: holds, partly, fails or
    /// undecided (not "not measured" nor "not reached").
    pub fn judged(self) -> bool {
        !matches!(self, Outcome::NotMeasured | Outcome::NotReached)
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
pub fn not_measured(why: impl Into<String>) -> Verdict {
    Verdict {
        outcome: Outcome::NotMeasured,
        numbers: vec![],
        why: why.into(),
    }
}

/// `not reached`, because `why`, with what was reached (`numbers`).
pub fn not_reached<K: Into<String>>(numbers: Vec<(K, f64)>, why: impl Into<String>) -> Verdict {
    Verdict {
        outcome: Outcome::NotReached,
        ..verdict(Outcome::NotReached, numbers, why)
    }
}

/// A decided verdict on `numbers` (formatted for the report).
pub fn verdict<K: Into<String>>(
    outcome: Outcome,
    numbers: Vec<(K, f64)>,
    why: impl Into<String>,
) -> Verdict {
    Verdict {
        outcome,
        numbers: numbers
            .into_iter()
            .map(|(k, v)| (k.into(), fmt_num(v)))
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
