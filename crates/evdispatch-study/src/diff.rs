//! `evdispatch study diff A B`: what moved between two runs of the study
//! (two kernels, two machines, before and after a change), claim by claim:
//! verdicts that changed and figures that moved, with both values, their
//! intervals where the results carry them (a number's `lo` and `hi`), and
//! whether the move is beyond the noise (the two intervals do not overlap).
//!
//! `evdispatch study diff A B C…` (three runs or more, or `--table`): the
//! runs' verdicts side by side, each with its rounds' verdicts, and how
//! stable they were: how many claims got the same verdict in every run, and
//! which held in one run and failed in another.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::Value;

use crate::report::summary::str_of;

/// Arguments of `evdispatch study diff`.
#[derive(Debug, Clone, clap::Args)]
pub struct DiffArgs {
    /// The runs, earlier first: study output directories or their
    /// results.json. Two are compared figure by figure; three or more (or
    /// two with --table) are shown as a table of verdicts side by side.
    #[arg(num_args = 2.., required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// List every claim, the unchanged ones too.
    #[arg(long)]
    pub all: bool,
    /// The verdicts of every run side by side (Markdown), with how many
    /// claims got the same verdict in all of them.
    #[arg(long)]
    pub table: bool,
}

/// Read a run's `results.json` (`path` is the file or the directory holding
/// it), or its gzip-compressed `results.json.gz` as runs are kept under
/// `results/`.
pub fn load(path: &Path) -> anyhow::Result<Value> {
    let file = if path.is_dir() {
        let plain = path.join("results.json");
        let gz = path.join("results.json.gz");
        if !plain.exists() && gz.exists() {
            gz
        } else {
            plain
        }
    } else {
        path.to_path_buf()
    };
    let read = || -> std::io::Result<String> {
        if file.extension().is_some_and(|e| e == "gz") {
            let mut text = String::new();
            std::io::Read::read_to_string(
                &mut flate2::read::GzDecoder::new(fs::File::open(&file)?),
                &mut text,
            )?;
            Ok(text)
        } else {
            fs::read_to_string(&file)
        }
    };
    let text = read().with_context(|| {
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

/// A claim's verdict in one run with its rounds' verdicts as letters
/// (`holds (HHF)`; H holds, P partly, F fails, ? measured nothing).
fn verdict_cell(c: &Value) -> String {
    let v = str_of(&c["verdict"]);
    let rounds: String = c["round_verdicts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| match r["verdict"].as_str() {
            Some("holds") => 'H',
            Some("partly") => 'P',
            Some("fails") => 'F',
            _ => '?',
        })
        .collect();
    if rounds.is_empty() || v == "not measured" {
        v
    } else {
        format!("{v} ({rounds})")
    }
}

/// The verdicts of `runs` side by side, as Markdown: a count first (claims
/// judged in some run, those with the same verdict in every run, those
/// that held in one run and failed in another), then one row per claim of
/// the first run (and those only in later ones).
pub fn table(runs: &[Value]) -> Vec<String> {
    let mut ids: Vec<(String, String)> = Vec::new();
    for r in runs {
        for c in r["claims"].as_array().into_iter().flatten() {
            let id = str_of(&c["id"]);
            if !ids.iter().any(|(i, _)| *i == id) {
                ids.push((id, str_of(&c["scenario"])));
            }
        }
    }
    let find = |r: &Value, id: &str| -> Option<Value> {
        r["claims"]
            .as_array()?
            .iter()
            .find(|c| c["id"].as_str() == Some(id))
            .cloned()
    };
    let n = runs.len();
    let mut rows = Vec::new();
    let (mut judged, mut same, mut same_decided) = (0, 0, 0);
    let mut flips = Vec::new();
    for (id, scenario) in &ids {
        let cs: Vec<Option<Value>> = runs.iter().map(|r| find(r, id)).collect();
        let vs: Vec<String> = cs
            .iter()
            .map(|c| {
                c.as_ref()
                    .map_or("absent".into(), |c| str_of(&c["verdict"]))
            })
            .collect();
        let all_same = vs.iter().all(|v| *v == vs[0]);
        if !vs
            .iter()
            .all(|v| v == "not measured" || v == "not reached" || v == "absent")
        {
            judged += 1;
            if all_same {
                same += 1;
                if matches!(vs[0].as_str(), "holds" | "partly" | "fails") {
                    same_decided += 1;
                }
            }
        }
        if vs.iter().any(|v| v == "holds") && vs.iter().any(|v| v == "fails") {
            flips.push(id.clone());
        }
        let cells: Vec<String> = cs
            .iter()
            .map(|c| c.as_ref().map_or("absent".into(), verdict_cell))
            .collect();
        rows.push(format!(
            "| {id} | {scenario} | {} | {} |",
            cells.join(" | "),
            if all_same { "yes" } else { "no" }
        ));
    }
    let pct = if judged > 0 {
        100.0 * same as f64 / judged as f64
    } else {
        0.0
    };
    let mut out = vec![
        format!(
            "- Claims judged (measured in at least one of the {n} runs): {judged}; the same verdict in all {n} (undecided included): {same} ({pct:.0}%), of which decided (holds, partly or fails): {same_decided}."
        ),
        format!(
            "- Claims that hold in one run and fail in another: {}{}.",
            flips.len(),
            if flips.is_empty() {
                String::new()
            } else {
                format!(": {}", flips.join(", "))
            }
        ),
        String::new(),
        format!(
            "| claim | scenario | {} | same in all |",
            (1..=n)
                .map(|i| format!("run {i}"))
                .collect::<Vec<_>>()
                .join(" | ")
        ),
        format!("|---|---|{}---|", "---|".repeat(n)),
    ];
    out.extend(rows);
    out
}

/// Run `evdispatch study diff`. Its output may go to a pager or `head`: a
/// reader that stops reading ends it quietly.
pub fn run(args: &DiffArgs) -> anyhow::Result<()> {
    use std::fmt::Write as _;
    let docs: Vec<Value> = args
        .runs
        .iter()
        .map(|p| load(p))
        .collect::<anyhow::Result<_>>()?;
    let side_by_side = args.table || docs.len() > 2;
    let mut text = String::new();
    for (i, (path, doc)) in args.runs.iter().zip(&docs).enumerate() {
        let name = if side_by_side {
            format!("run {}", i + 1)
        } else {
            ["A", "B"][i].to_string()
        };
        let _ = writeln!(
            text,
            "{name}: {} (profile {}, commit {}, kernel {})",
            path.display(),
            str_of(&doc["profile"]),
            str_of(&doc["environment"]["git_commit"]),
            str_of(&doc["environment"]["kernel"])
        );
    }
    let lines = if side_by_side {
        text.push_str(
            "Verdicts side by side; in brackets each round's verdict (H holds, P partly, F fails).\n",
        );
        table(&docs)
    } else {
        report(&docs[0], &docs[1], args.all)
    };
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    match std::io::Write::write_all(&mut std::io::stdout().lock(), text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
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

    /// Three runs side by side: each verdict with its rounds, the count of
    /// claims the same in all (undecided counts as a verdict; a claim no
    /// run measured is not judged), and the claims that flipped.
    #[test]
    fn verdicts_of_several_runs_side_by_side() {
        let c = |id: &str, v: &str, rounds: &[&str]| {
            json!({"id": id, "scenario": "s", "verdict": v,
                "round_verdicts": rounds.iter().enumerate().map(|(i, r)| json!({"round": i + 1, "verdict": r})).collect::<Vec<_>>()})
        };
        let runs = [
            run_of(json!([
                c("a", "holds", &["holds", "holds"]),
                c("b", "undecided", &["holds", "fails"]),
                c("nm", "not measured", &[]),
                c("f", "holds", &["holds"])
            ])),
            run_of(json!([
                c("a", "holds", &["holds", "holds"]),
                c("b", "undecided", &["fails", "partly"]),
                c("nm", "not measured", &[]),
                c("f", "fails", &["fails"])
            ])),
            run_of(json!([
                c("a", "holds", &["holds", "holds"]),
                c("b", "fails", &["fails", "fails"]),
                c("nm", "not measured", &[]),
                c("f", "undecided", &["holds", "fails"])
            ])),
        ];
        let out = table(&runs).join("\n");
        assert!(out.contains("Claims judged (measured in at least one of the 3 runs): 3; the same verdict in all 3 (undecided included): 1 (33%), of which decided (holds, partly or fails): 1."), "{out}");
        assert!(
            out.contains("hold in one run and fail in another: 1: f."),
            "{out}"
        );
        assert!(out.contains("| claim | scenario | run 1 | run 2 | run 3 | same in all |\n|---|---|---|---|---|---|"), "{out}");
        assert!(
            out.contains("| a | s | holds (HH) | holds (HH) | holds (HH) | yes |"),
            "{out}"
        );
        assert!(
            out.contains("| b | s | undecided (HF) | undecided (FP) | fails (FF) | no |"),
            "{out}"
        );
        assert!(
            out.contains("| nm | s | not measured | not measured | not measured | yes |"),
            "{out}"
        );
    }

    #[test]
    fn reads_a_directory_or_a_file_and_says_what_is_wrong() {
        let dir = std::env::temp_dir().join(format!("evd-diff-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("results.json"), run_of(json!([])).to_string()).unwrap();
        assert!(load(&dir).is_ok());
        assert!(load(&dir.join("results.json")).is_ok());
        // Compressed, as results/ keeps them.
        let gz = dir.join("kept");
        fs::create_dir_all(&gz).unwrap();
        let mut enc = flate2::write::GzEncoder::new(
            fs::File::create(gz.join("results.json.gz")).unwrap(),
            flate2::Compression::default(),
        );
        std::io::Write::write_all(&mut enc, run_of(json!([])).to_string().as_bytes()).unwrap();
        enc.finish().unwrap();
        assert!(load(&gz).is_ok());
        assert!(load(&gz.join("results.json.gz")).is_ok());
        fs::write(dir.join("other.json"), "{}").unwrap();
        let e = load(&dir.join("other.json")).unwrap_err().to_string();
        assert!(e.contains("not a study's results.json"), "{e}");
        let e = format!("{:#}", load(&dir.join("nope")).unwrap_err());
        assert!(e.contains("cannot read"), "{e}");
        let _ = fs::remove_dir_all(&dir);
    }
}
