//! The data a study produces, as written to `results.json`: one record per
//! scenario, each holding every data point with its full configuration.
//!
//! Points are deliberately generic (a configuration map and a map of numeric
//! metrics) so that the claims and the report read them with small queries
//! ([`ScenarioRecord::select`]) and a change in a tool's output format touches
//! only [`crate::contracts`].

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version of the `results.json` layout; bumped on incompatible changes.
pub const SCHEMA: &str = "evdispatch-study/1";

/// The configuration key holding the round a point was measured in (1,
/// 2, …): the study runs every job of a scenario once per round, so the
/// points of one round are paired (see [`ScenarioRecord::rounds`]).
pub const ROUND: &str = "round";

/// One measured data point.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Point {
    /// The line or bar it belongs to in the figures (`poll`, `epoll`, `nginx`…).
    pub series: String,
    /// Everything that defined the run: mechanism, rates, counts, durations,
    /// the exact command lines.
    pub config: Map<String, Value>,
    /// What was measured, by name (see each scenario's docs for the names).
    pub metrics: BTreeMap<String, f64>,
    /// The tools' own output for this point, as parsed JSON, for anyone who
    /// wants a number the study did not extract.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub raw: Value,
}

impl Point {
    /// A point of `series` with `config` and no metrics yet.
    pub fn new(series: impl Into<String>, config: Map<String, Value>) -> Point {
        Point {
            series: series.into(),
            config,
            metrics: BTreeMap::new(),
            raw: Value::Null,
        }
    }

    /// A metric, if measured.
    pub fn metric(&self, name: &str) -> Option<f64> {
        note_read(name);
        self.metrics.get(name).copied().filter(|v| v.is_finite())
    }

    /// A configuration value as a number.
    pub fn num(&self, key: &str) -> Option<f64> {
        note_read(key);
        self.config.get(key).and_then(Value::as_f64)
    }

    /// A configuration value as a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        note_read(key);
        self.config.get(key).and_then(Value::as_str)
    }

    /// Whether every `(key, value)` pair matches this point's configuration
    /// (`series` matches the series name).
    pub fn matches(&self, filter: &[(&str, Value)]) -> bool {
        filter.iter().all(|(k, v)| {
            note_read(k);
            if *k == "series" {
                return Some(self.series.as_str()) == v.as_str();
            }
            match (self.config.get(*k), v) {
                (Some(a), b) if a == b => true,
                // 251 and 251.0 are the same configuration.
                (Some(a), b) => a.as_f64().is_some() && a.as_f64() == b.as_f64(),
                (None, _) => false,
            }
        })
    }
}

thread_local! {
    /// The names read through [`Point`]'s accessors while [`reading_keys`]
    /// runs on this thread.
    static READS: RefCell<Option<BTreeSet<String>>> = const { RefCell::new(None) };
}

fn note_read(name: &str) {
    READS.with(|r| {
        if let Some(set) = r.borrow_mut().as_mut() {
            if !set.contains(name) {
                set.insert(name.to_string());
            }
        }
    });
}

/// Run `f` and return, beside its result, every configuration key and
/// metric name it read from points ([`Point::metric`], [`Point::num`],
/// [`Point::str`], filters): what a claim looks for in its scenario's data,
/// so a renamed figure is caught (see [`ScenarioRecord::missing_keys`])
/// instead of reading as "not measured".
pub fn reading_keys<T>(f: impl FnOnce() -> T) -> (T, BTreeSet<String>) {
    let outer = READS.with(|r| r.borrow_mut().replace(BTreeSet::new()));
    let out = f();
    let read = READS.with(|r| std::mem::replace(&mut *r.borrow_mut(), outer));
    (out, read.unwrap_or_default())
}

/// Something a scenario did not measure, and why.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Skip {
    /// What was not measured (a series, a configuration).
    pub what: String,
    /// Why, and what to do about it (`absent: apt-get install -y nginx`).
    pub why: String,
}

/// How far a scenario got.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Every planned point was measured.
    Complete,
    /// Some points were measured, some skipped or failed.
    Partial,
    /// Nothing could be measured (see the skips).
    NotMeasured,
    /// Stopped by Ctrl-C before it finished; not kept on re-run.
    Interrupted,
}

impl Status {
    /// The word used in the report and on the terminal.
    pub fn word(self) -> &'static str {
        match self {
            Status::Complete => "complete",
            Status::Partial => "partial",
            Status::NotMeasured => "not measured",
            Status::Interrupted => "interrupted",
        }
    }
}

/// Everything one scenario produced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct ScenarioRecord {
    /// The scenario's id (its row of [`crate::scenarios::SCENARIOS`]).
    pub id: String,
    /// How far it got.
    pub status: Status,
    /// The profile it ran under.
    pub profile: String,
    /// The parameters the profile gave it.
    pub params: Value,
    /// When it started (seconds since the Unix epoch).
    pub started_unix: u64,
    /// Wall-clock seconds it took.
    pub duration_s: f64,
    /// The git commit of the evdispatch that measured it.
    pub git_commit: String,
    /// What the binary and the machine could do when it ran (tools built,
    /// mechanisms available, peers present); a scenario that was not complete
    /// is re-run when this changes.
    pub capabilities: Vec<String>,
    /// The data.
    pub points: Vec<Point>,
    /// What was not measured, and why.
    pub skipped: Vec<Skip>,
    /// Runs that failed, with the error.
    pub failures: Vec<Skip>,
    /// Each job's planned and actual wall-clock seconds (the profiles'
    /// budgets are checked against these).
    #[serde(default)]
    pub timings: Vec<JobTiming>,
    /// Seconds spent waiting for the benchmark lock (another benchmark on
    /// the machine), included in `duration_s`.
    #[serde(default)]
    pub lock_wait_s: f64,
    /// How many rounds the plan ran (every job once per round; each point's
    /// `round` says which); 1 for records written before rounds existed.
    #[serde(default = "one_round")]
    pub rounds: u32,
    /// Where the load generators ran: the load host's ssh destination
    /// (`--load-host`), absent for this machine. A saved record stands for
    /// a later run only when this is the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_host: Option<String>,
}

fn one_round() -> u32 {
    1
}

/// How long one job took.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct JobTiming {
    /// The job's label.
    pub label: String,
    /// The round it ran in (1, 2, …).
    #[serde(default = "one_round")]
    pub round: u32,
    /// Planned seconds.
    pub est_s: f64,
    /// Measured seconds (waiting for the benchmark lock excluded).
    pub actual_s: f64,
    /// Runs made: 2 when the first was disturbed by other work on the
    /// machine and repeated.
    pub runs: u32,
}

impl ScenarioRecord {
    /// Points of `series` (or any series if `None`) matching `filter`.
    pub fn select(&self, filter: &[(&str, Value)]) -> std::vec::IntoIter<&Point> {
        self.points
            .iter()
            .filter(|p| p.matches(filter))
            .collect::<Vec<_>>()
            .into_iter()
    }

    /// `(x, y)` pairs: config `x` against metric `y` for points matching
    /// `filter`, sorted by x, points lacking either left out.
    pub fn xy(&self, filter: &[(&str, Value)], x: &str, y: &str) -> Vec<(f64, f64)> {
        let mut v: Vec<(f64, f64)> = self
            .select(filter)
            .filter_map(|p| Some((p.num(x).or_else(|| p.metric(x))?, p.metric(y)?)))
            .collect();
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
        v
    }

    /// The rounds its points were measured in, ascending (the points'
    /// `round`); empty when no point carries one (one round).
    pub fn round_ids(&self) -> Vec<u64> {
        let ids: BTreeSet<u64> = self
            .points
            .iter()
            .filter_map(|p| p.config.get(ROUND).and_then(Value::as_u64))
            .collect();
        ids.into_iter().collect()
    }

    /// The same record with only the points of round `r` (and those that
    /// carry no round, measured once for every round).
    pub fn round(&self, r: u64) -> ScenarioRecord {
        let mut rec = self.clone();
        rec.points.retain(|p| {
            p.config
                .get(ROUND)
                .and_then(Value::as_u64)
                .is_none_or(|x| x == r)
        });
        (rec.timings, rec.rounds) = (vec![], 1);
        rec
    }

    /// Of `names` (config keys and metric names something read), those no
    /// point of this record has, neither in its configuration nor among its
    /// metrics (`series` is every point's).
    pub fn missing_keys(&self, names: &BTreeSet<String>) -> Vec<String> {
        names
            .iter()
            .filter(|n| {
                n.as_str() != "series"
                    && !self.points.iter().any(|p| {
                        p.config.contains_key(n.as_str()) || p.metrics.contains_key(n.as_str())
                    })
            })
            .cloned()
            .collect()
    }

    /// Distinct values of config `key` among the points, in first-seen order.
    pub fn distinct(&self, key: &str) -> Vec<Value> {
        let mut out: Vec<Value> = Vec::new();
        for p in &self.points {
            let v = if key == "series" {
                Value::String(p.series.clone())
            } else if let Some(v) = p.config.get(key) {
                v.clone()
            } else {
                continue;
            };
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }
}

/// One claim's verdict as `results.json` holds it (its `claims`): written
/// by `crate::claims::evaluate`, read by the report and `study diff`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClaimEntry {
    /// Short id.
    pub id: String,
    /// Seed file number (`000`…`004`), or `today`.
    pub seed: String,
    /// Section, figure or table of the seed.
    pub section: String,
    /// The claim, in our words.
    pub claim: String,
    /// The scenario whose data decide it.
    pub scenario: String,
    /// `holds`, `partly`, `fails`, `undecided` (the rounds disagree) or
    /// `not measured`.
    pub verdict: String,
    /// The numbers it was decided on: each the median across rounds, with
    /// its interval.
    pub numbers: Vec<NumberEntry>,
    /// How the numbers lead to the verdict (or why nothing was measured).
    pub why: String,
    /// Rounds that measured something (0: none; absent from results
    /// written before rounds existed).
    #[serde(default)]
    pub rounds: usize,
    /// Each round's own verdict, when there were several rounds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub round_verdicts: Vec<RoundVerdict>,
    /// Decided on one round only: no interval.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub one_round: bool,
    /// The chance that each number's interval holds its true median (0.9
    /// from five rounds; below, the range of the rounds covers less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    /// For an undecided claim: whether more rounds would likely decide it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub more_rounds: Option<String>,
    /// Keys the claim reads that no point of its scenario has (a figure
    /// renamed or lost).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_keys: Vec<String>,
}

/// One number behind a verdict.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NumberEntry {
    /// What it is.
    pub name: String,
    /// The median across rounds, formatted for the report (the rounds'
    /// texts, `/`-separated, for a value that is not a number).
    pub value: String,
    /// The low end of its interval (the k-th smallest round). The rounds'
    /// figures are read back as their verdicts printed them (three
    /// significant digits); the points themselves hold every digit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lo: Option<f64>,
    /// The high end of its interval (the k-th largest round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hi: Option<f64>,
    /// The chance the interval holds the true median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coverage: Option<f64>,
    /// Rounds that gave it.
    #[serde(default)]
    pub rounds: usize,
}

/// One round's verdict on a claim.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoundVerdict {
    /// The round (1, 2, …).
    pub round: u64,
    /// Its verdict.
    pub verdict: String,
}

/// The server's capacity that the experiment sets: measured once per study
/// run, before the scenarios (cached in the output directory and in
/// `results.json`), and used by every scenario whose claims are about load.
///
/// `generator_ceiling` (G) is the rate of new connections (one request
/// each) that one generator process reaches in a closed loop against an
/// unbudgeted epoll server; `cpu_us_per_reply` (c) is that server's CPU per
/// reply at a moderate open-loop rate. A closed loop under a trial budget
/// (`spec::KNEE_OF_CEILING` (0.3) × G × c) then measures what a reply costs
/// a saturated server (`cpu_us_per_reply_saturated`, c'); the budget b =
/// 0.3 × G × c' puts epoll's knee (b / c' replies/s) at 0.3 G; the
/// scenarios sweep rates in multiples of that knee.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Calibration {
    /// Where budgets are set (`cgroup v1 (cpu.cfs_quota_us) at …`), `None`
    /// where none can be (see `no_budget`): then the servers run as the
    /// host gives and the overload claims say "not reached: no CPU budget
    /// here".
    pub control: Option<String>,
    /// G: new connections per second one generator process offers.
    pub generator_ceiling: f64,
    /// Whether the generator (not the server) was the limit of G's run.
    pub ceiling_generator_limited: bool,
    /// c: the unbudgeted epoll server's CPU per reply, µs.
    pub cpu_us_per_reply: f64,
    /// The open-loop rate c was measured at, new connections/s.
    pub probe_rate: f64,
    /// The trial budget of the saturation run (from c), fraction of a core.
    #[serde(default)]
    pub trial_budget: f64,
    /// What epoll answered in a closed loop under the trial budget,
    /// replies/s: its capacity there.
    #[serde(default)]
    pub trial_capacity: f64,
    /// c at saturation: the trial budget's CPU over that capacity, µs per
    /// reply (lower than c: a saturated server batches its work). The
    /// budget is chosen from it, since it is what sets the knee.
    #[serde(default)]
    pub cpu_us_per_reply_saturated: f64,
    /// The budget chosen (`None`: none can be set here, or the server
    /// already saturates below the target knee without one).
    #[schemars(with = "Option<BudgetShape>")]
    pub budget: Option<evdispatch_harness::CpuBudget>,
    /// Why there is no budget, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_budget: Option<String>,
    /// Epoll's expected knee, new connections/s: b / c' with a budget, the
    /// host's 1 / c' without.
    pub knee: f64,
    /// The command lines of the calibration's runs.
    pub commands: Vec<String>,
    /// The budget's own effect below the knee: pairs of runs at half the
    /// knee, with and without the budget (`budget`: true/false), each
    /// with `cpu_us_per_reply`, `p50_us`, `reply_rate` and
    /// `budget_throttled_pct`.
    pub effect: Vec<Value>,
    /// Seconds the calibration took.
    pub duration_s: f64,
    /// When it was measured (Unix seconds).
    pub measured_unix: u64,
}

impl Calibration {
    /// `factor` times the knee, rounded to 10 connections/s.
    pub fn rate(&self, factor: f64) -> f64 {
        ((self.knee * factor) / 10.0).round().max(1.0) * 10.0
    }

    /// What the scenarios record in their parameters: the budget (or why
    /// none), its period and the knee.
    pub fn params(&self) -> Value {
        serde_json::json!({
            "cpu_budget": self.budget,
            "no_cpu_budget": self.no_budget,
            "knee": self.knee,
            "generator_ceiling": self.generator_ceiling,
        })
    }
}

/// A CPU budget as `results.json` holds it.
#[derive(schemars::JsonSchema)]
#[allow(dead_code)]
struct BudgetShape {
    /// Fraction of one core.
    fraction: f64,
    /// Bandwidth period, µs.
    period_us: u64,
}

/// The whole `results.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Results {
    /// [`SCHEMA`].
    pub schema: String,
    /// The profile of the last run.
    pub profile: String,
    /// The machine and software of the last run.
    pub environment: Value,
    /// Every peer program, present (with its version) or absent (with the
    /// command that installs it).
    pub peers: Vec<Value>,
    /// One record per scenario, in table order.
    pub scenarios: Vec<ScenarioRecord>,
    /// Every claim of the seeds with its verdict from this data (each a
    /// [`ClaimEntry`]; kept as JSON for the report's and diff's readers).
    #[schemars(with = "Vec<ClaimEntry>")]
    pub claims: Vec<Value>,
    /// The calibration of the servers' CPU budget the scenarios ran with
    /// (absent in runs made before budgets, and when no scenario of the
    /// run needed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// The JSON Schema of `results.json`, generated from [`Results`] (the file
/// `results.schema.json` at the crate's root; a test keeps it current).
pub fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Results)).expect("a schema is JSON")
}

/// Write `value` as pretty JSON to `path` atomically (temporary file + rename),
/// so an interrupted run never leaves half a file.
pub fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> anyhow::Result<()> {
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value)?;
    fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming {} into place", tmp.display()))?;
    Ok(())
}

/// Write `rec` as CSV to `path`: one row per point; the columns are
/// `series`, every configuration key any point has (in the order the points
/// first have them),
/// then every metric name (sorted; one also used as a configuration key is
/// written `NAME (metric)`). Strings and numbers as they are, other
/// configuration values (lists, objects) as JSON, an absent value empty.
pub fn write_csv(rec: &ScenarioRecord, path: &Path) -> anyhow::Result<()> {
    let mut config: Vec<&str> = Vec::new();
    let mut metrics: BTreeSet<&str> = BTreeSet::new();
    for p in &rec.points {
        for k in p.config.keys() {
            if !config.contains(&k.as_str()) {
                config.push(k);
            }
        }
        metrics.extend(p.metrics.keys().map(String::as_str));
    }
    let mut w =
        csv::Writer::from_path(path).with_context(|| format!("cannot write {}", path.display()))?;
    let header = std::iter::once("series".to_string())
        .chain(config.iter().map(|k| k.to_string()))
        .chain(metrics.iter().map(|m| {
            if config.contains(m) || *m == "series" {
                format!("{m} (metric)")
            } else {
                m.to_string()
            }
        }));
    w.write_record(header)?;
    for p in &rec.points {
        let row = std::iter::once(p.series.clone())
            .chain(config.iter().map(|k| match p.config.get(*k) {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
            }))
            .chain(
                metrics
                    .iter()
                    .map(|m| p.metrics.get(*m).map(|v| v.to_string()).unwrap_or_default()),
            );
        w.write_record(row)?;
    }
    w.flush()
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Read a scenario record saved by an earlier run, if there is a readable one.
pub fn load_record(path: &Path) -> Option<ScenarioRecord> {
    let text = fs::read_to_string(path).ok()?;
    serde_json::from_str(&text).ok()
}

/// A JSON configuration map from pairs: `config![("mechanism", "poll"), ("fds", 100)]`.
#[macro_export]
macro_rules! config {
    ($(($k:expr, $v:expr)),* $(,)?) => {{
        #[allow(unused_mut)]
        let mut m = serde_json::Map::new();
        $( m.insert($k.to_string(), serde_json::json!($v)); )*
        m
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per point, the configuration then the metrics as columns,
    /// absent values empty, commas and quotes quoted.
    #[test]
    fn csv_has_a_row_per_point_and_a_column_per_key() {
        let mut a = Point::new(
            "epoll",
            crate::config![("rate", 1000), ("cmd", "load -r 1,000 \"x\"")],
        );
        a.metrics.insert("p50_us".into(), 120.5);
        a.metrics.insert("rate".into(), 990.0);
        let mut b = Point::new(
            "poll",
            crate::config![("rate", 2000), ("fds", json!([1, 2]))],
        );
        b.metrics.insert("p50_us".into(), 300.0);
        let rec = ScenarioRecord {
            id: "t".into(),
            status: Status::Complete,
            profile: "tiny".into(),
            params: json!({}),
            started_unix: 0,
            duration_s: 0.0,
            git_commit: "t".into(),
            capabilities: vec![],
            points: vec![a, b],
            skipped: vec![],
            failures: vec![],
            timings: vec![],
            lock_wait_s: 0.0,
            load_host: None,
            rounds: 1,
        };
        let path = std::env::temp_dir().join(format!("evd-csv-{}.csv", std::process::id()));
        write_csv(&rec, &path).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let _ = fs::remove_file(&path);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "series,cmd,rate,fds,p50_us,rate (metric)");
        assert_eq!(
            lines[1],
            "epoll,\"load -r 1,000 \"\"x\"\"\",1000,,120.5,990"
        );
        assert_eq!(lines[2], "poll,,2000,\"[1,2]\",300,");
        assert_eq!(lines.len(), 3);
    }
    use serde_json::json;

    #[test]
    fn matching_and_queries() {
        let mut a = Point::new("poll", config![("inactive", 251), ("rate", 100)]);
        a.metrics.insert("reply_rate".into(), 99.0);
        let mut b = Point::new("poll", config![("inactive", 251), ("rate", 50)]);
        b.metrics.insert("reply_rate".into(), 50.0);
        let c = Point::new("epoll", config![("inactive", 1), ("rate", 50)]);
        let rec = ScenarioRecord {
            id: "x".into(),
            status: Status::Complete,
            profile: "tiny".into(),
            params: json!({}),
            started_unix: 0,
            duration_s: 0.0,
            git_commit: "c".into(),
            capabilities: vec![],
            points: vec![a, b, c],
            skipped: vec![],
            failures: vec![],
            timings: vec![],
            lock_wait_s: 0.0,
            load_host: None,
            rounds: 1,
        };
        let f = [("series", json!("poll")), ("inactive", json!(251.0))];
        assert_eq!(
            rec.xy(&f, "rate", "reply_rate"),
            vec![(50.0, 50.0), (100.0, 99.0)]
        );
        assert_eq!(rec.distinct("series"), vec![json!("poll"), json!("epoll")]);
        assert_eq!(rec.select(&[("inactive", json!(1))]).count(), 1);
    }
}
