//! What a claim is and how claims are judged: the verdict types, the
//! helpers verdict functions read a scenario's record with, and the
//! evaluation of every claim against a run's records. The claims themselves
//! live beside their scenario (`scenarios/<name>/claims.rs`), each with the
//! seed and section it comes from and a function that computes its verdict
//! from this run's data. No verdict is written by hand: every one is `holds`, `partly`,
//! `fails`, `not reached` (the run never got into the claim's regime: what it
//! got instead) or `not measured` (with why) according to thresholds stated in
//! its `why`, and comes with the numbers behind it.
//!
//! Thresholds are generous on purpose: a claim about a shape ("grows",
//! "flat", "jumps") is judged on ratios between points of the same run,
//! never on absolute figures from a 400 MHz machine.

use serde::Serialize;
use serde_json::{json, Value};

use crate::results::{reading_keys, ClaimEntry, Point, RoundVerdict, ScenarioRecord};

pub use verdict::{band, both, not_measured, not_reached, verdict, Outcome, Verdict};

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
    pub verdict: fn(&ScenarioRecord) -> Judged,
}

impl Claim {
    /// Its verdict on `rec`, `not measured` when the data are missing.
    pub fn judge(&self, rec: &ScenarioRecord) -> Verdict {
        (self.verdict)(rec).unwrap_or_else(|not_measured| not_measured)
    }
}

/// What a verdict function returns: `Err` is the `not measured` verdict it
/// stopped at, for data this run lacks ([`Need::need`] with `?`).
pub type Judged = Result<Verdict, Verdict>;

/// Data a verdict needs: `x.need(what)?` goes on with the value, or stops
/// with [`missing`]`(what)` when it (or either of a pair) is absent.
pub trait Need<T> {
    /// The value, or `not measured`: no data for `what`.
    fn need(self, what: &str) -> Result<T, Verdict>;
}

impl<T> Need<T> for Option<T> {
    fn need(self, what: &str) -> Result<T, Verdict> {
        self.ok_or_else(|| missing(what))
    }
}

impl<A, B> Need<(A, B)> for (Option<A>, Option<B>) {
    fn need(self, what: &str) -> Result<(A, B), Verdict> {
        self.0.zip(self.1).need(what)
    }
}

/// `json!(v)` shorthand for filters.
pub fn value_of<T: Serialize>(v: T) -> Value {
    json!(v)
}

/// The filter entry selecting `series`.
pub fn of_series(series: &str) -> (&'static str, Value) {
    ("series", value_of(series))
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

/// One half of a sweep ([`halves`]): its `(smallest, largest)` x and the
/// mean of the metric over its points.
pub type Half = ((f64, f64), f64);

/// A trend read from every point, not from the two ends alone: the mean of
/// `metric` over the points at the lower half of the distinct `x` values
/// matching `f`, and over those at the upper half (the middle `x` left out
/// when their count is odd), each beside its half's `(smallest, largest)`
/// `x`. `None` below two distinct `x`.
pub fn halves(
    rec: &ScenarioRecord,
    f: &[(&str, Value)],
    x: &str,
    metric: &str,
) -> Option<(Half, Half)> {
    let xy = rec.xy(f, x, metric);
    let mut xs: Vec<f64> = xy.iter().map(|p| p.0).collect();
    xs.dedup();
    let half = xs.len() / 2;
    if half == 0 {
        return None;
    }
    let mean_over = |from: f64, to: f64| {
        let v: Vec<f64> = xy
            .iter()
            .filter(|p| p.0 >= from && p.0 <= to)
            .map(|p| p.1)
            .collect();
        ((from, to), v.iter().sum::<f64>() / v.len() as f64)
    };
    let n = xs.len();
    Some((
        mean_over(xs[0], xs[half - 1]),
        mean_over(xs[n - half], xs[n - 1]),
    ))
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
    not_measured(format!("no data for {what} in this run"))
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

/// `not reached`: this run never took the servers into the claim's regime;
/// `numbers` say what it reached. Where the servers ran without a CPU
/// budget (the record's `no_cpu_budget` parameter), the reason starts with
/// "no CPU budget here".
pub fn unreached<K: Into<String>>(
    rec: &ScenarioRecord,
    numbers: Vec<(K, f64)>,
    why: impl Into<String>,
) -> Judged {
    let why = why.into();
    let why = match rec.params.get("no_cpu_budget").and_then(Value::as_str) {
        Some(nb) if nb.starts_with("no CPU budget here") => format!("{nb}; {why}"),
        Some(nb) => format!("no CPU budget here ({nb}); {why}"),
        None => why,
    };
    Err(not_reached(numbers, why))
}

/// The lowest offered rate at which a series matching `f` fell behind
/// (answered < 95% of it) with the load generator not the limit: where
/// the server, not the generator, was overloaded. `None` if it never was.
pub fn overloaded_at(rec: &ScenarioRecord, f: &[(&str, Value)]) -> Option<f64> {
    let mut behind: Vec<f64> = rec
        .select(f)
        .filter(|p| !generator_bound(p))
        .filter_map(|p| Some((p.num("rate")?, p.metric("reply_rate")?)))
        .filter(|(x, y)| *y < KEEP * x)
        .map(|(x, _)| x)
        .collect();
    behind.sort_by(f64::total_cmp);
    behind.first().copied()
}

/// Whether the generator, not the server, may have set a point's figure.
pub fn generator_bound(p: &Point) -> bool {
    p.metric("generator_limited") == Some(1.0)
}

/// Judge every claim against the records of this run: `claims` pairs each
/// claim with the id of the scenario whose data decide it (in report order,
/// as `crate::scenarios::claims` gives them). A claim whose scenario did
/// not run, or measured nothing, is `not measured` with the scenario's
/// reasons. Otherwise its verdict function runs on each round's points
/// apart (the points of one round are paired) and [`rounds::combine`] makes
/// one verdict of them: every number the median across rounds with its 90%
/// interval (`lo`, `hi`, `coverage`, `rounds`), the outcome decided only
/// when the rounds agree, else `undecided` (with `more_rounds`: whether
/// more rounds would likely decide it). A claim that reads a configuration
/// key or metric no point of its scenario has (in any round, or on the
/// whole record) gets `missing_keys` (and says so in `why`): its figures
/// were renamed or lost, which a missing peer alone never causes when the
/// scenario skipped nothing.
pub fn evaluate<'a>(
    claims: impl IntoIterator<Item = (&'a str, &'a Claim)>,
    records: &[ScenarioRecord],
) -> Vec<Value> {
    // Each record split into its rounds once, for every claim it decides.
    let split: Vec<Vec<(u64, ScenarioRecord)>> = records
        .iter()
        .map(|r| match r.round_ids().as_slice() {
            [] | [_] => vec![],
            ids => ids.iter().map(|&i| (i, r.round(i))).collect(),
        })
        .collect();
    claims
        .into_iter()
        .map(|(scenario, c)| {
            // The keys it looked for that no point of the scenario has: a
            // figure renamed or gone, not a peer or a mechanism missing.
            let mut missing = vec![];
            let found = records.iter().position(|r| r.id == scenario);
            let combined = match found.map(|i| (&records[i], &split[i])) {
                None => rounds::combine(&[(
                    1,
                    not_measured(format!("scenario {scenario} was not run (see --only)")),
                )]),
                Some((r, _)) if r.points.is_empty() => {
                    let why: Vec<String> = r
                        .skipped
                        .iter()
                        .chain(&r.failures)
                        .map(|s| format!("{}: {}", s.what, s.why))
                        .collect();
                    rounds::combine(&[(
                        1,
                        not_measured(format!(
                            "scenario {scenario} measured nothing: {}",
                            if why.is_empty() {
                                "no data".to_string()
                            } else {
                                why.join("; ")
                            }
                        )),
                    )])
                }
                Some((r, per_round)) => {
                    let (whole, mut read) = reading_keys(|| c.judge(r));
                    let per: Vec<(u64, Verdict)> = if per_round.is_empty() {
                        vec![(r.round_ids().first().copied().unwrap_or(1), whole)]
                    } else {
                        per_round
                            .iter()
                            .map(|(i, sub)| {
                                let (v, more) = reading_keys(|| c.judge(sub));
                                read.extend(more);
                                (*i, v)
                            })
                            .collect()
                    };
                    missing = r.missing_keys(&read);
                    rounds::combine(&per)
                }
            };
            let why = if missing.is_empty() {
                combined.why
            } else {
                format!(
                    "{} [keys this claim reads that no point of scenario {scenario} has: {}]",
                    combined.why,
                    missing.join(", ")
                )
            };
            let entry = ClaimEntry {
                id: c.id.into(),
                seed: c.seed.into(),
                section: c.section.into(),
                claim: c.text.into(),
                scenario: scenario.into(),
                verdict: combined.outcome.word().into(),
                numbers: combined.numbers,
                why,
                rounds: combined.rounds,
                round_verdicts: if combined.round_verdicts.len() > 1 {
                    combined
                        .round_verdicts
                        .iter()
                        .map(|(r, w)| RoundVerdict {
                            round: *r,
                            verdict: w.to_string(),
                        })
                        .collect()
                } else {
                    vec![]
                },
                // Decided on its one round; a lone measured round of several
                // planned decides nothing (undecided) and is not flagged.
                one_round: combined.rounds == 1 && combined.outcome != Outcome::Undecided,
                coverage: (combined.rounds > 1)
                    .then(|| (combined.coverage * 1000.0).round() / 1000.0),
                more_rounds: combined.more_rounds,
                missing_keys: missing,
            };
            json!(entry)
        })
        .collect()
}

pub mod rounds;
pub mod verdict;

#[cfg(test)]
pub mod testkit;

#[cfg(test)]
mod tests;
