//! `evdispatch study diff A B`: what moved between two runs of the study
//! (two kernels, two machines, before and after a change), claim by claim:
//! verdicts that changed and figures that moved, with both values, their
//! intervals where the results carry them (a number's `lo` and `hi`), and
//! whether the move is beyond the noise (the two intervals do not overlap).

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::Value;

/// Arguments of `evdispatch study diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// The earlier run: a study output directory or its results.json.
    pub a: PathBuf,
    /// The later run: a study output directory or its results.json.
    pub b: PathBuf,
    /// List every claim, the unchanged ones too.
    #[arg(long)]
    pub all: bool,
}

/// Read a run's `results.json` (`path` is the file or the directory holding it).
pub fn load(path: &Path) -> anyhow::Result<Value> {
    let file = if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    };
    let text = fs::read_to_string(&file).with_context(|| {
        format!(
            "cannot read {} (give a study output directory or its results.json)",
            file.display()
        )
    })?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", file.display()))?;
    if doc["claims"].as_array().is_none() {
        bail!(
            "{} has no claims: not a study's results.json",
            file.display()
        );
    }
    Ok(doc)
}

/// One figure of a claim: its value and, where the results have one, its
/// interval.
#[derive(Debug, Clone, PartialEq)]
struct Figure {
    value: String,
    interval: Option<(f64, f64)>,
}

fn figures(claim: &Value) -> Vec<(String, Figure)> {
    claim["numbers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| {
            let name = n["name"].as_str()?.to_string();
            let value = match &n["value"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let interval = match (n["lo"].as_f64(), n["hi"].as_f64()) {
                (Some(lo), Some(hi)) => Some((lo, hi)),
                _ => None,
            };
            Some((name, Figure { value, interval }))
        })
        .collect()
}

/// Whether a move from `a` to `b` is beyond the noise, as words.
fn noise(a: &Figure, b: &Figure) -> String {
    match (a.interval, b.interval) {
        (Some((alo, ahi)), Some((blo, bhi))) => {
            if ahi < blo || bhi < alo {
                format!("beyond the noise: [{alo}, {ahi}] and [{blo}, {bhi}] do not overlap")
            } else {
                format!("within the noise: [{alo}, {ahi}] and [{blo}, {bhi}] overlap")
            }
        }
        _ => "no interval: cannot tell whether beyond the noise".to_string(),
    }
}

fn show(f: &Figure) -> String {
    match f.interval {
        Some((lo, hi)) => format!("{} [{lo}, {hi}]", f.value),
        None => f.value.clone(),
    }
}

/// The lines `diff` prints for runs `a` and `b`: one block per claim whose
/// verdict or figures moved (every claim with `all`), then a count.
pub fn report(a: &Value, b: &Value, all: bool) -> Vec<String> {
    let claims = |d: &Value| d["claims"].as_array().cloned().unwrap_or_default();
    let (ca, cb) = (claims(a), claims(b));
    let mut out = Vec::new();
    let (mut verdicts, mut moved) = (0, 0);
    let label = |c: &Value| format!("{} ({})", str_of(&c["id"]), str_of(&c["scenario"]));
    for x in &ca {
        let Some(y) = cb.iter().find(|y| y["id"] == x["id"]) else {
            out.push(format!(
                "{}: only in A ({})",
                label(x),
                str_of(&x["verdict"])
            ));
            continue;
        };
        let (va, vb) = (str_of(&x["verdict"]), str_of(&y["verdict"]));
        let (fa, fb) = (figures(x), figures(y));
        let mut lines = Vec::new();
        for (name, f) in &fa {
            match fb.iter().find(|(n, _)| n == name) {
                Some((_, g)) if g != f => lines.push(format!(
                    "  {name}: {} → {} ({})",
                    show(f),
                    show(g),
                    noise(f, g)
                )),
                Some(_) => {}
                None => lines.push(format!("  {name}: {} → (not in B)", show(f))),
            }
        }
        for (name, g) in &fb {
            if !fa.iter().any(|(n, _)| n == name) {
                lines.push(format!("  {name}: (not in A) → {}", show(g)));
            }
        }
        if va != vb {
            verdicts += 1;
        }
        if !lines.is_empty() {
            moved += 1;
        }
        if va != vb || !lines.is_empty() || all {
            out.push(if va == vb {
                format!("{}: {va}", label(x))
            } else {
                format!("{}: {va} → {vb}", label(x))
            });
            out.extend(lines);
        }
    }
    for y in cb.iter().filter(|y| !ca.iter().any(|x| x["id"] == y["id"])) {
        out.push(format!(
            "{}: only in B ({})",
            label(y),
            str_of(&y["verdict"])
        ));
    }
    out.push(format!(
        "{verdicts} verdict(s) changed, {moved} claim(s) with figures that moved, of {} claims in A and {} in B",
        ca.len(),
        cb.len()
    ));
    out
}

fn str_of(v: &Value) -> String {
    v.as_str()
        .map(String::from)
        .unwrap_or_else(|| v.to_string())
}

/// Run `evdispatch study diff`.
pub fn run(args: &DiffArgs) -> anyhow::Result<()> {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    for side in [("A", &args.a, &a), ("B", &args.b, &b)] {
        println!(
            "{}: {} (profile {}, commit {}, kernel {})",
            side.0,
            side.1.display(),
            str_of(&side.2["profile"]),
            str_of(&side.2["environment"]["git_commit"]),
            str_of(&side.2["environment"]["kernel"])
        );
    }
    for line in report(&a, &b, args.all) {
        println!("{line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_of(claims: Value) -> Value {
        json!({"profile": "tiny", "environment": {}, "claims": claims})
    }

    #[test]
    fn lists_what_moved_with_both_values_and_the_noise() {
        let a = run_of(json!([
            {"id": "c1", "scenario": "s", "verdict": "holds", "numbers": [{"name": "ratio", "value": "2.0"}]},
            {"id": "c2", "scenario": "s", "verdict": "fails", "numbers": [{"name": "x", "value": "1", "lo": 0.9, "hi": 1.1}]},
            {"id": "c3", "scenario": "s", "verdict": "holds", "numbers": [{"name": "y", "value": "5"}]},
            {"id": "gone", "scenario": "s", "verdict": "holds", "numbers": []}
        ]));
        let b = run_of(json!([
            {"id": "c1", "scenario": "s", "verdict": "fails", "numbers": [{"name": "ratio", "value": "0.8"}]},
            {"id": "c2", "scenario": "s", "verdict": "fails", "numbers": [{"name": "x", "value": "2", "lo": 1.8, "hi": 2.2}]},
            {"id": "c3", "scenario": "s", "verdict": "holds", "numbers": [{"name": "y", "value": "5"}]},
            {"id": "new", "scenario": "s", "verdict": "partly", "numbers": []}
        ]));
        let out = report(&a, &b, false).join("\n");
        assert!(out.contains("c1 (s): holds → fails"), "{out}");
        assert!(
            out.contains("ratio: 2.0 → 0.8 (no interval: cannot tell"),
            "{out}"
        );
        assert!(
            out.contains("x: 1 [0.9, 1.1] → 2 [1.8, 2.2] (beyond the noise"),
            "{out}"
        );
        assert!(!out.contains("c3"), "unchanged claims are left out: {out}");
        assert!(out.contains("gone (s): only in A"), "{out}");
        assert!(out.contains("new (s): only in B"), "{out}");
        assert!(out.ends_with("1 verdict(s) changed, 2 claim(s) with figures that moved, of 4 claims in A and 4 in B"), "{out}");
        assert!(report(&a, &b, true).join("\n").contains("c3 (s): holds"));
        let close = |lo, hi| Figure {
            value: "1".into(),
            interval: Some((lo, hi)),
        };
        assert!(noise(&close(1.0, 2.0), &close(1.5, 3.0)).starts_with("within"));
    }

    /// On the claims `evaluate` writes (medians over rounds with their
    /// intervals): a figure whose rounds' ranges do not overlap moved
    /// beyond the noise.
    #[test]
    fn works_on_the_claims_evaluate_writes() {
        use crate::results::ScenarioRecord;
        let run = |rates: [f64; 3]| {
            let points: Vec<Value> = rates
                .iter()
                .enumerate()
                .map(|(i, y)| json!({"series": "example", "config": {"n": 1, "round": i + 1}, "metrics": {"reply_rate": y}}))
                .collect();
            let rec: ScenarioRecord = serde_json::from_value(json!({
                "id": "example", "status": "complete", "profile": "quick", "params": {},
                "started_unix": 0, "duration_s": 0.0, "git_commit": "t", "capabilities": [],
                "skipped": [], "failures": [], "points": points, "rounds": 3,
            }))
            .unwrap();
            run_of(json!(crate::claims::evaluate(
                crate::scenarios::claims(),
                &[rec]
            )))
        };
        let out = report(&run([4.0, 6.0, 5.0]), &run([14.0, 16.0, 15.0]), false).join("\n");
        assert!(
            out.contains("lowest reply rate: 5 [4, 6] → 15 [14, 16] (beyond the noise"),
            "{out}"
        );
        let out = report(&run([4.0, 6.0, 5.0]), &run([5.5, 7.0, 4.5]), false).join("\n");
        assert!(out.contains("(within the noise"), "{out}");
    }

    #[test]
    fn reads_a_directory_or_a_file_and_says_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("evd-diff-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("results.json"), run_of(json!([])).to_string()).unwrap();
        assert!(load(&dir).is_ok());
        assert!(load(&dir.join("results.json")).is_ok());
        fs::write(dir.join("other.json"), "{}").unwrap();
        let e = load(&dir.join("other.json")).unwrap_err().to_string();
        assert!(e.contains("not a study's results.json"), "{e}");
        let e = format!("{:#}", load(&dir.join("nope")).unwrap_err());
        assert!(e.contains("cannot read"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }
}
