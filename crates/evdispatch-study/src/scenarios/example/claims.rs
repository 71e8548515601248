//! The claim of the test-only `example` scenario.

use crate::claims::{missing, verdict, Claim, Judged, Outcome};
use crate::results::ScenarioRecord;

/// The claims this scenario's data decide.
pub static CLAIMS: &[Claim] = &[Claim {
    id: "example-replies",
    seed: "today",
    section: "tests",
    text: "every example point had replies",
    verdict: v_replies,
}];

fn v_replies(rec: &ScenarioRecord) -> Judged {
    let v: Vec<f64> = rec
        .points
        .iter()
        .filter_map(|p| p.metric("reply_rate"))
        .collect();
    if v.is_empty() {
        return Err(missing("example points"));
    }
    let low = v.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(verdict(
        if low > 0.0 {
            Outcome::Holds
        } else {
            Outcome::Fails
        },
        vec![("lowest reply rate", low)],
        "holds if every point replied",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::*;
    use serde_json::json;

    #[test]
    fn example_claims() {
        let r = |y: f64| {
            rec(
                "example",
                vec![pt("example", json!({"n": 1}), json!({"reply_rate": y}))],
            )
        };
        check(CLAIMS, "example-replies", &r(5.0), Outcome::Holds);
        check(CLAIMS, "example-replies", &r(0.0), Outcome::Fails);
    }
}
