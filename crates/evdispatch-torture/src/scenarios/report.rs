//! The report the scenarios fill: checks per run, runs per scenario, and the
//! whole report, as JSON (`evdispatch-torture/1`) and for a person.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::env::{Env, Profile};

/// One threshold check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What is checked.
    pub name: String,
    /// The measured value.
    pub value: Value,
    /// The threshold, as text.
    pub limit: String,
    /// Whether the value meets it.
    pub pass: bool,
}

/// One server under one scenario.
#[derive(Debug, Clone, Serialize)]
pub struct Run {
    /// `evdispatch` or `nginx`.
    pub server: String,
    /// Our model (`epoll`, …) or nginx's version.
    pub model: String,
    /// All checks passed.
    pub pass: bool,
    /// The checks.
    pub checks: Vec<Check>,
    /// The figures measured.
    pub figures: Value,
}

impl Run {
    /// A run of `server`/`model` with no checks yet.
    pub fn new(server: &str, model: &str) -> Run {
        Run {
            server: server.into(),
            model: model.into(),
            pass: true,
            checks: Vec::new(),
            figures: Value::Object(Default::default()),
        }
    }

    /// Record a check.
    pub fn check(&mut self, name: &str, value: impl Into<Value>, limit: &str, pass: bool) {
        self.pass &= pass;
        self.checks.push(Check {
            name: name.into(),
            value: value.into(),
            limit: limit.into(),
            pass,
        });
    }

    /// True for our server (whose checks decide the scenario).
    pub fn ours(&self) -> bool {
        self.server == "evdispatch"
    }
}

/// Something not measured, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// What.
    pub what: String,
    /// Why.
    pub why: String,
}

/// One scenario's report.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioReport {
    /// Its name (`storm`, …).
    pub scenario: &'static str,
    /// A title.
    pub title: &'static str,
    /// Every run of our server passed (and there was at least one).
    pub pass: bool,
    /// What was not measured.
    pub skipped: Vec<Skipped>,
    /// The runs.
    pub runs: Vec<Run>,
    /// The attacks scenario's table: per attack, each server's answer.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attacks: Vec<Value>,
}

impl ScenarioReport {
    /// An empty report.
    pub fn new(scenario: &'static str, title: &'static str) -> ScenarioReport {
        ScenarioReport {
            scenario,
            title,
            pass: false,
            skipped: Vec::new(),
            runs: Vec::new(),
            attacks: Vec::new(),
        }
    }

    /// Set `pass` from the runs of our server.
    pub fn finish(mut self) -> ScenarioReport {
        let ours: Vec<&Run> = self.runs.iter().filter(|r| r.ours()).collect();
        self.pass = !ours.is_empty() && ours.iter().all(|r| r.pass);
        self
    }

    /// Add `run`, saying `what` with its verdict.
    pub fn add(&mut self, env: &Env, run: Run, what: String) {
        let verdict = if run.pass { "pass" } else { "FAIL" };
        env.say(format!("{what}: {verdict}"));
        self.runs.push(run);
    }

    /// Record a skip.
    pub fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skipped {
            what: what.into(),
            why: why.into(),
        });
    }
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// `evdispatch-torture/1`.
    pub schema: &'static str,
    /// The profile.
    pub profile: Profile,
    /// Every scenario passed.
    pub pass: bool,
    /// The scenarios.
    pub scenarios: Vec<ScenarioReport>,
}

impl Report {
    /// The report for a person.
    pub fn human(&self) -> String {
        let mut s = String::new();
        for sc in &self.scenarios {
            let verdict = if sc.pass { "PASS" } else { "FAIL" };
            let _ = writeln!(s, "\n== {} — {}: {verdict}", sc.scenario, sc.title);
            for r in &sc.runs {
                let tag = if r.ours() { "" } else { " (comparison)" };
                let verdict = if r.pass { "pass" } else { "FAIL" };
                let _ = writeln!(s, "  {} {}{tag}: {verdict}", r.server, r.model);
                for c in &r.checks {
                    let ok = if c.pass { "ok" } else { "XX" };
                    let value = fmt_value(&c.value);
                    let _ = writeln!(s, "    [{ok}] {}: {value} (limit {})", c.name, c.limit);
                }
                if let Value::Object(m) = &r.figures {
                    let line: Vec<String> = m
                        .iter()
                        .map(|(k, v)| format!("{k}={}", fmt_value(v)))
                        .collect();
                    let _ = writeln!(s, "    figures: {}", line.join(" "));
                }
            }
            for a in &sc.attacks {
                let _ = writeln!(s, "    {}", attack_row_text(a));
            }
            for k in &sc.skipped {
                let _ = writeln!(s, "  skipped {}: {}", k.what, k.why);
            }
        }
        let verdict = if self.pass { "PASS" } else { "FAIL" };
        let _ = writeln!(s, "\ntorture ({} profile): {verdict}", self.profile.name());
        s
    }
}

fn fmt_value(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() != 0.0 => format!("{f:.3}"),
            _ => n.to_string(),
        },
        Value::String(t) => t.clone(),
        other => other.to_string(),
    }
}

/// One line of the attacks table for a person.
fn attack_row_text(row: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let expect = format!("{} {}", text(&row["expected"]), text(&row["after"]));
    let mut s = format!("{:<24} expect {expect:<12}", text(&row["id"]));
    if let Some(m) = row["ours"].as_object() {
        let fails: Vec<String> = m
            .iter()
            .filter(|(_, v)| v["pass"] != true)
            .map(|(k, v)| format!("{k}: {}", text(&v["why"])))
            .collect();
        if fails.is_empty() {
            s.push_str(&format!(" ours ok ×{}", m.len()));
        } else {
            s.push_str(&format!(" ours FAIL [{}]", fails.join("; ")));
        }
    }
    if let Some(n) = row.get("nginx").filter(|n| !n.is_null()) {
        let (statuses, outcome) = (text(&n["statuses"]), text(&n["outcome"]));
        let differs = if n["differs"] == true {
            " (differs)"
        } else {
            ""
        };
        s.push_str(&format!(" | nginx {statuses} {outcome}{differs}"));
    }
    s
}
