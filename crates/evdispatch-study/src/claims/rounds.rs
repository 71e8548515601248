//! One verdict from several rounds. A claim's verdict function is run on
//! each round's points apart (the points of one round were measured close
//! in time, so its ratios are paired); this module combines those verdicts:
//! every number becomes the median across rounds with a 90% interval, and
//! the outcome is decided only when the rounds inside that interval agree.
//!
//! The interval is distribution-free: for `n` rounds, sorted, it runs from
//! the k-th smallest to the k-th largest value, with the largest `k` for
//! which the chance that the true median lies inside is at least 90%
//! (`1 − 2·P(Binomial(n, ½) < k)`). That needs five rounds at least; with
//! fewer, the interval is the range of the rounds (k = 1) and its actual
//! coverage, below 90% (75% with three rounds), is stated beside it.
//!
//! The outcome is judged the same way on the rounds' outcomes, ordered
//! `fails` < `partly` < `holds`: decided when the k-th lowest and the k-th
//! highest outcome agree. For a claim decided by one figure against its
//! thresholds, that is when the figure's interval lies on one side of
//! them; a two-part claim (`both(a, b)`) has no single deciding figure, and
//! there it is the rounds' outcomes themselves that must agree. Up to seven
//! rounds, k = 1: every round must agree. A single round decides only where
//! the profile planned one (`tiny`); when only one of several planned rounds
//! measured something, the claim is undecided.

use super::verdict::{Outcome, Verdict};
use crate::figure::fmt_num;
use crate::results::NumberEntry;

/// The wanted coverage of an interval.
pub const LEVEL: f64 = 0.90;

/// The rounds `--profile full` runs: the fewest that give [`LEVEL`].
pub const FULL_ROUNDS: u32 = 5;

/// `P(Binomial(n, ½) < k)`.
fn below(n: usize, k: usize) -> f64 {
    let mut c = 1.0; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..k.min(n + 1) {
        sum += c;
        c = c * (n - i) as f64 / (i + 1) as f64;
    }
    sum / 2f64.powi(n as i32)
}

/// For `n` values: the order statistic `k` (1-based, from each end) of the
/// interval of the median, and its coverage. With `n` ≥ 5 the coverage is
/// at least [`LEVEL`]; below, `k` = 1 (the range) and the coverage is what
/// the range gives (0 for one value: no interval at all).
pub fn order_interval(n: usize) -> (usize, f64) {
    if n == 0 {
        return (1, 0.0);
    }
    let cover = |k: usize| 1.0 - 2.0 * below(n, k);
    let mut k = 1;
    while k < n.div_ceil(2) && cover(k + 1) >= LEVEL {
        k += 1;
    }
    (k, cover(k).max(0.0))
}

/// The median of sorted `v` (the mean of the middle two for an even count).
fn median(v: &[f64]) -> f64 {
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Values of several rounds as one: their median and its interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Across {
    /// The median across the rounds.
    pub median: f64,
    /// The low end of its interval (the k-th smallest round).
    pub lo: f64,
    /// The high end of its interval (the k-th largest round).
    pub hi: f64,
    /// The chance the interval holds the true median (0 for one round).
    pub coverage: f64,
    /// Rounds behind it.
    pub rounds: usize,
}

/// The median of `vals` (one per round) with its interval (see
/// [`order_interval`]); `None` without values.
pub fn across(vals: &[f64]) -> Option<Across> {
    if vals.is_empty() {
        return None;
    }
    let mut v = vals.to_vec();
    v.sort_by(f64::total_cmp);
    let m = v.len();
    let (k, coverage) = order_interval(m);
    Some(Across {
        median: median(&v),
        lo: v[k - 1],
        hi: v[m - k],
        coverage,
        rounds: m,
    })
}

/// Read back a number [`fmt_num`] wrote (`11.3k`, `25M`, `0.457`).
pub fn parse_num(s: &str) -> Option<f64> {
    let s = s.trim();
    let (body, scale) = match s.strip_suffix('k') {
        Some(b) => (b, 1e3),
        None => match s.strip_suffix('M') {
            Some(b) => (b, 1e6),
            None => (s, 1.0),
        },
    };
    body.parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .map(|v| v * scale)
}

fn rank(o: Outcome) -> u8 {
    match o {
        Outcome::Fails => 0,
        Outcome::Partly => 1,
        Outcome::Holds => 2,
        Outcome::Undecided | Outcome::NotMeasured | Outcome::NotReached => 3,
    }
}

/// The claim's verdict over rounds, as the JSON fields it adds to or sets
/// on the claim's entry in `results.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    /// The outcome.
    pub outcome: Outcome,
    /// Each number: median, interval, rounds.
    pub numbers: Vec<NumberEntry>,
    /// How the rounds lead to the outcome.
    pub why: String,
    /// Rounds that measured something.
    pub rounds: usize,
    /// Each round's outcome word, in round order (`rounds` entries and the
    /// rounds that measured nothing).
    pub round_verdicts: Vec<(u64, &'static str)>,
    /// The coverage of the intervals (0 with one round).
    pub coverage: f64,
    /// For an undecided claim: whether more rounds would likely decide it.
    pub more_rounds: Option<String>,
}

/// Combine the verdicts of rounds `per` (round number, verdict), in round
/// order. `per` must not be empty.
pub fn combine(per: &[(u64, Verdict)]) -> Combined {
    let measured: Vec<&(u64, Verdict)> = per.iter().filter(|(_, v)| v.outcome.judged()).collect();
    let round_verdicts = per.iter().map(|(r, v)| (*r, v.outcome.word())).collect();
    let n = measured.len();
    let unmeasured = per.len() - n;
    if n == 0 {
        // Not reached in some round (with what it reached), else not measured.
        let reached: Vec<&(u64, Verdict)> = per
            .iter()
            .filter(|(_, v)| v.outcome == Outcome::NotReached)
            .collect();
        let v = reached.first().map_or(&per[0].1, |r| &r.1);
        return Combined {
            outcome: v.outcome,
            numbers: if reached.is_empty() {
                vec![]
            } else {
                numbers(&reached).into_iter().map(|(e, _)| e).collect()
            },
            why: v.why.clone(),
            rounds: 0,
            round_verdicts,
            coverage: 0.0,
            more_rounds: None,
        };
    }
    let (k, coverage) = order_interval(n);
    let mut outcomes: Vec<Outcome> = measured.iter().map(|(_, v)| v.outcome).collect();
    outcomes.sort_by_key(|o| rank(*o));
    let (low, high) = (outcomes[k - 1], outcomes[n - k]);
    // One round decides only where one was planned (`--profile tiny`): of
    // several planned rounds, a lone measured one has no interval to clear
    // the threshold with.
    let lone = n == 1 && per.len() > 1;
    let outcome = if low == high && !lone {
        low
    } else {
        Outcome::Undecided
    };
    let numbers = numbers(&measured);
    // The round told in `why`: one of the decided outcome whose first
    // number is nearest the median (the first round when none has numbers).
    let first = numbers.first().and_then(|n| n.1);
    let told = measured
        .iter()
        .filter(|(_, v)| outcome == Outcome::Undecided || v.outcome == outcome)
        .min_by(|a, b| {
            let d = |v: &Verdict| match (first, v.numbers.first().and_then(|x| parse_num(&x.1))) {
                (Some(m), Some(x)) => (x - m).abs(),
                _ => f64::INFINITY,
            };
            d(&a.1).total_cmp(&d(&b.1))
        })
        .expect("a measured round");
    let gaps = if unmeasured > 0 {
        format!(
            "; {unmeasured} of {} rounds measured nothing and are left out",
            per.len()
        )
    } else {
        String::new()
    };
    let why = if lone {
        format!(
            "Undecided: only round {} of {} measured something, and one round has no interval; it said ({}): {}",
            told.0,
            per.len(),
            told.1.outcome.word(),
            told.1.why
        )
    } else if n == 1 {
        format!(
            "Decided on one round (round {}){gaps}: {}",
            told.0, told.1.why
        )
    } else if outcome != Outcome::Undecided {
        let agree = outcomes.iter().filter(|o| **o == outcome).count();
        let which = if agree == n {
            format!("{} in all {n} rounds", outcome.word())
        } else {
            format!(
                "{} in {agree} of {n} rounds, which include every round inside the interval",
                outcome.word()
            )
        };
        format!(
            "{which}. Intervals: {}{gaps}. Round {}, nearest the median: {}",
            interval_words(n, coverage),
            told.0,
            told.1.why
        )
    } else {
        let split: Vec<String> = [Outcome::Holds, Outcome::Partly, Outcome::Fails]
            .into_iter()
            .filter_map(|o| {
                let rs: Vec<String> = measured
                    .iter()
                    .filter(|(_, v)| v.outcome == o)
                    .map(|(r, _)| r.to_string())
                    .collect();
                (!rs.is_empty()).then(|| {
                    format!(
                        "{} in round{} {}",
                        o.word(),
                        if rs.len() > 1 { "s" } else { "" },
                        rs.join(", ")
                    )
                })
            })
            .collect();
        let whys: Vec<String> = [Outcome::Holds, Outcome::Partly, Outcome::Fails]
            .into_iter()
            .filter_map(|o| {
                measured
                    .iter()
                    .find(|(_, v)| v.outcome == o)
                    .map(|(r, v)| format!("round {r} ({}): {}", o.word(), v.why))
            })
            .collect();
        format!(
            "Undecided: the rounds disagree ({}). Intervals: {}{gaps}. {}",
            split.join("; "),
            interval_words(n, coverage),
            whys.join(" | ")
        )
    };
    let more_rounds = (outcome == Outcome::Undecided).then(|| {
        if lone {
            format!(
                "{unmeasured} of {} rounds measured nothing: more rounds that measure would decide it",
                per.len()
            )
        } else {
            more_rounds(&outcomes)
        }
    });
    Combined {
        outcome,
        numbers: numbers.into_iter().map(|(n, _)| n).collect(),
        why,
        rounds: n,
        round_verdicts,
        coverage,
        more_rounds,
    }
}

/// How the intervals were made, in words.
pub fn interval_words(n: usize, coverage: f64) -> String {
    let (k, _) = order_interval(n);
    if n <= 1 {
        "none, one round".into()
    } else if k == 1 && coverage < LEVEL {
        format!(
            "the range of {n} rounds, which covers the median with {:.0}% only (five rounds give 90%)",
            coverage * 100.0
        )
    } else if k == 1 {
        format!(
            "the range of {n} rounds, a {:.0}% interval of the median",
            coverage * 100.0
        )
    } else {
        format!(
            "from the {} smallest to the {} largest of {n} rounds, a {:.1}% interval of the median",
            ordinal(k),
            ordinal(k),
            coverage * 100.0
        )
    }
}

/// `k` as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 12th, 21st…
fn ordinal(k: usize) -> String {
    let suffix = match (k % 10, k % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{k}{suffix}")
}

/// Every number of the rounds, in the order they first appear: the median
/// across the rounds that have it, its interval, and how many rounds;
/// beside it the median as a number (`None` for text).
fn numbers(measured: &[&(u64, Verdict)]) -> Vec<(NumberEntry, Option<f64>)> {
    let mut names: Vec<&str> = Vec::new();
    for (_, v) in measured {
        for (name, _) in &v.numbers {
            if !names.contains(&name.as_str()) {
                names.push(name);
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let texts: Vec<&str> = measured
                .iter()
                .filter_map(|(_, v)| v.numbers.iter().find(|(n, _)| n == name))
                .map(|(_, t)| t.as_str())
                .collect();
            let mut entry = NumberEntry {
                name: name.to_string(),
                value: String::new(),
                lo: None,
                hi: None,
                coverage: None,
                rounds: texts.len(),
            };
            let vals: Vec<f64> = texts.iter().filter_map(|t| parse_num(t)).collect();
            if vals.len() < texts.len() || vals.is_empty() {
                // Not numbers (or not all): the rounds' texts as they are.
                let mut distinct: Vec<&str> = Vec::new();
                for t in &texts {
                    if !distinct.contains(t) {
                        distinct.push(t);
                    }
                }
                entry.value = distinct.join(" / ");
                return (entry, None);
            }
            let a = across(&vals).expect("values");
            if a.rounds == 1 {
                entry.value = texts[0].to_string();
                return (entry, Some(a.median));
            }
            entry.value = fmt_num(a.median);
            entry.lo = Some(a.lo);
            entry.hi = Some(a.hi);
            entry.coverage = Some((a.coverage * 1000.0).round() / 1000.0);
            (entry, Some(a.median))
        })
        .collect()
}

/// Whether more rounds would likely decide a claim whose rounds' outcomes
/// (sorted, `fails` first) disagree: at this split, the rounds on the
/// minority side must fall outside the order-statistic interval, i.e. be
/// fewer than its `k` at each end. The smallest round count for which the
/// expected minority count is below that is the estimate; when none up to
/// 60 rounds suffices (the rounds split about evenly), the claim sits on
/// its threshold.
pub fn more_rounds(sorted: &[Outcome]) -> String {
    let n = sorted.len();
    let full = FULL_ROUNDS as usize;
    if n <= 2 {
        return format!(
            "{n} rounds disagree: too few to tell whether it sits on its threshold; more rounds (`--profile full` runs {full}) would tell"
        );
    }
    let mid = sorted[n / 2];
    let below = sorted.iter().filter(|o| rank(**o) < rank(mid)).count();
    let above = sorted.iter().filter(|o| rank(**o) > rank(mid)).count();
    let share = below.max(above) as f64 / n as f64;
    let need = (n + 1..=60).find(|&m| {
        let (k, _) = order_interval(m);
        share * (m as f64) <= (k - 1) as f64
    });
    let profile = |m: usize| {
        if m <= full {
            format!("`--profile full` ({full} rounds) would do")
        } else {
            format!("more than even `--profile full` runs ({full})")
        }
    };
    match need {
        Some(m) => format!(
            "more rounds would likely decide it: {} of {n} rounds left the median's side ({}); at that share about {m} rounds would put them outside the 90% interval: {}",
            below.max(above),
            mid.word(),
            profile(m)
        ),
        None => format!(
            "on the threshold: the rounds split {} / {} around {}, so more rounds would likely not decide it",
            below.max(above),
            n - below.max(above),
            mid.word()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::verdict::verdict;
    use serde_json::json;

    fn js(n: &NumberEntry) -> serde_json::Value {
        serde_json::to_value(n).unwrap()
    }

    fn v(o: Outcome, ratio: f64) -> Verdict {
        verdict(o, vec![("ratio", ratio)], format!("ratio {ratio}"))
    }

    fn rounds(vs: Vec<Verdict>) -> Vec<(u64, Verdict)> {
        (1..).zip(vs).collect()
    }

    /// The order statistics of the median's interval: the range below
    /// five values (with its coverage), 90% from five on, narrower from
    /// eight.
    #[test]
    fn interval_math_on_known_counts() {
        assert_eq!(order_interval(1).0, 1);
        assert_eq!(order_interval(1).1, 0.0);
        assert_eq!(order_interval(3), (1, 0.75));
        assert_eq!(order_interval(4), (1, 0.875));
        assert_eq!(order_interval(5), (1, 0.9375));
        assert_eq!(order_interval(7).0, 1);
        // n = 8: P(B < 2) = 9/256, coverage 1 − 18/256.
        assert_eq!(order_interval(8), (2, 1.0 - 18.0 / 256.0));
        // n = 20: k = 6 (coverage 0.9586), k = 7 would give 0.8847.
        let (k, c) = order_interval(20);
        assert_eq!(k, 6);
        assert!((c - 0.958_610_5).abs() < 1e-6, "{c}");
        assert_eq!(parse_num("11.3k"), Some(11_300.0));
        assert_eq!(parse_num("25M"), Some(25e6));
        assert_eq!(parse_num("0.457"), Some(0.457));
        assert_eq!(parse_num("–"), None);
    }

    #[test]
    fn rounds_that_agree_decide_with_the_median_and_range() {
        let c = combine(&rounds(vec![
            v(Outcome::Holds, 1.4),
            v(Outcome::Holds, 1.2),
            v(Outcome::Holds, 1.9),
        ]));
        assert_eq!(c.outcome, Outcome::Holds);
        assert_eq!(c.rounds, 3);
        assert_eq!(c.coverage, 0.75);
        assert_eq!(
            js(&c.numbers[0]),
            json!({"name": "ratio", "value": "1.40", "lo": 1.2, "hi": 1.9, "coverage": 0.75, "rounds": 3})
        );
        assert!(c.why.starts_with("holds in all 3 rounds"), "{}", c.why);
        assert!(c.why.contains("75%"), "{}", c.why);
        assert!(
            c.why.contains("Round 1, nearest the median: ratio 1.4"),
            "{}",
            c.why
        );
        assert_eq!(c.more_rounds, None);
    }

    #[test]
    fn rounds_that_disagree_are_undecided_with_each_side_shown() {
        let c = combine(&rounds(vec![
            v(Outcome::Holds, 1.3),
            v(Outcome::Fails, 0.9),
            v(Outcome::Holds, 1.25),
        ]));
        assert_eq!(c.outcome, Outcome::Undecided);
        assert_eq!((c.numbers[0].lo, c.numbers[0].hi), (Some(0.9), Some(1.3)));
        assert!(
            c.why.contains("holds in rounds 1, 3; fails in round 2"),
            "{}",
            c.why
        );
        assert!(c.why.contains("round 2 (fails): ratio 0.9"), "{}", c.why);
        assert_eq!(
            c.round_verdicts,
            vec![(1, "holds"), (2, "fails"), (3, "holds")]
        );
        // One round in three on the other side: more rounds would likely decide it.
        let more = c.more_rounds.unwrap();
        assert!(
            more.starts_with("more rounds would likely decide it"),
            "{more}"
        );
        // One in three needs more rounds than the full profile's five.
        assert!(
            more.ends_with("more than even `--profile full` runs (5)"),
            "{more}"
        );
        // An even split sits on the threshold.
        let even = more_rounds(&[
            Outcome::Fails,
            Outcome::Fails,
            Outcome::Holds,
            Outcome::Holds,
        ]);
        assert!(even.starts_with("on the threshold"), "{even}");
        let two = more_rounds(&[Outcome::Fails, Outcome::Holds]);
        assert!(two.contains("too few to tell"), "{two}");
    }

    #[test]
    fn ordinals_read_as_english() {
        let o: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 103].map(ordinal).into();
        assert_eq!(
            o,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "103rd"]
        );
        assert!(interval_words(8, 0.93).contains("the 2nd smallest to the 2nd largest"));
    }

    /// From eight rounds on, an outlying round outside the interval does
    /// not hold the verdict back.
    #[test]
    fn an_outlier_outside_the_interval_does_not_undecide_many_rounds() {
        let mut vs: Vec<Verdict> = (0..8)
            .map(|i| v(Outcome::Holds, 1.3 + i as f64 / 100.0))
            .collect();
        vs[3] = v(Outcome::Fails, 0.8);
        let c = combine(&rounds(vs));
        assert_eq!(c.outcome, Outcome::Holds);
        assert!(c.why.starts_with("holds in 7 of 8 rounds"), "{}", c.why);
    }

    #[test]
    fn one_round_is_decided_and_flagged() {
        let c = combine(&rounds(vec![v(Outcome::Fails, 0.7)]));
        assert_eq!(c.outcome, Outcome::Fails);
        assert_eq!(c.rounds, 1);
        assert_eq!(
            js(&c.numbers[0]),
            json!({"name": "ratio", "value": "0.700", "rounds": 1})
        );
        assert!(
            c.why
                .starts_with("Decided on one round (round 1): ratio 0.7"),
            "{}",
            c.why
        );
        // Of two planned rounds, one that measured decides nothing: no
        // interval to clear the threshold with.
        let c = combine(&rounds(vec![
            crate::claims::verdict::not_measured("no data"),
            v(Outcome::Holds, 2.0),
        ]));
        assert_eq!((c.outcome, c.rounds), (Outcome::Undecided, 1));
        assert!(
            c.why
                .starts_with("Undecided: only round 2 of 2 measured something"),
            "{}",
            c.why
        );
        assert!(c.why.contains("it said (holds): ratio 2"), "{}", c.why);
        assert!(c
            .more_rounds
            .unwrap()
            .starts_with("1 of 2 rounds measured nothing"));
        // Rounds that measured nothing are left out, and said so.
        let c = combine(&rounds(vec![
            crate::claims::verdict::not_measured("no data"),
            v(Outcome::Holds, 2.0),
            v(Outcome::Holds, 2.2),
        ]));
        assert_eq!((c.outcome, c.rounds), (Outcome::Holds, 2));
        assert!(
            c.why.contains("1 of 3 rounds measured nothing"),
            "{}",
            c.why
        );
        let c = combine(&rounds(vec![crate::claims::verdict::not_measured(
            "no data",
        )]));
        assert_eq!(
            (c.outcome, c.why.as_str()),
            (Outcome::NotMeasured, "no data")
        );
        // Rounds that did not reach the regime: left out like those; all
        // of them: not reached, with what they reached.
        let short = || crate::claims::verdict::not_reached(vec![("peak", 3.0)], "never behind");
        let c = combine(&rounds(vec![
            short(),
            v(Outcome::Fails, 2.0),
            v(Outcome::Fails, 2.1),
        ]));
        assert_eq!((c.outcome, c.rounds), (Outcome::Fails, 2));
        let c = combine(&rounds(vec![
            short(),
            short(),
            crate::claims::verdict::not_measured("no data"),
        ]));
        assert_eq!(
            (c.outcome, c.why.as_str()),
            (Outcome::NotReached, "never behind")
        );
        assert_eq!(c.numbers.len(), 1, "what was reached is shown");
    }
}
