//! `evdispatch study` end to end: the tiny profile on whatever this build
//! has (results.json against its schema, every chart with data, the HTML
//! well-formed, a verdict for every claim, resume; then the same page in
//! headless Chromium, see `browser/`), and Ctrl-C leaving no process behind.

mod browser;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use quick_xml::events::Event;
use serde_json::Value;

const EXE: &str = env!("CARGO_BIN_EXE_evdispatch");

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("evd-study-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn study(out: &Path, extra: &[&str]) -> std::process::Output {
    let lock = out.with_extension("lock");
    let mut cmd = Command::new(EXE);
    cmd.args(["study", "--profile", "tiny", "--out"])
        .arg(out)
        .args(extra)
        .env("EVD_BENCH_LOCK", &lock);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "study failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The scenarios a tiny run without `--only` includes.
fn default_scenarios() -> impl Iterator<Item = &'static evdispatch_study::spec::Scenario> {
    evdispatch_study::scenarios::SCENARIOS
        .iter()
        .filter(|s| s.runs_by_default(evdispatch_study::spec::Profile::Tiny))
}

fn check_results(doc: &Value) {
    assert_eq!(doc["schema"], "evdispatch-study/1");
    assert_eq!(doc["profile"], "tiny");
    let env = &doc["environment"];
    for k in [
        "kernel",
        "cpu_model",
        "cpus_online",
        "memory_bytes",
        "rustc",
        "evdispatch_version",
        "git_commit",
    ] {
        assert!(!env[k].is_null(), "environment lacks {k}");
    }
    for p in doc["peers"].as_array().unwrap() {
        let status = p["status"].as_str().unwrap();
        assert!(
            status == "present" && p["version"].is_string()
                || status.starts_with("absent: apt-get install -y "),
            "{p}"
        );
    }
    let recs = doc["scenarios"].as_array().unwrap();
    let ids: Vec<&str> = recs.iter().map(|r| r["id"].as_str().unwrap()).collect();
    let want: Vec<&str> = default_scenarios().map(|s| s.id).collect();
    assert_eq!(ids, want, "one record per scenario, in table order");
    for r in recs {
        let status = r["status"].as_str().unwrap();
        assert!(
            ["complete", "partial", "not-measured"].contains(&status),
            "{status}"
        );
        let points = r["points"].as_array().unwrap();
        let reasons =
            r["skipped"].as_array().unwrap().len() + r["failures"].as_array().unwrap().len();
        if status == "not-measured" {
            assert!(points.is_empty());
            assert!(reasons > 0, "{} gives no reason", r["id"]);
        }
        for p in points {
            assert!(p["series"].is_string());
            assert!(
                !p["config"].as_object().unwrap().is_empty(),
                "a point without configuration"
            );
            assert!(p["metrics"]
                .as_object()
                .unwrap()
                .values()
                .all(Value::is_number));
        }
        for s in r["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .chain(r["failures"].as_array().unwrap())
        {
            assert!(!s["what"].as_str().unwrap().is_empty());
            assert!(!s["why"].as_str().unwrap().is_empty());
        }
    }
    let claims = doc["claims"].as_array().unwrap();
    assert_eq!(claims.len(), evdispatch_study::scenarios::claims().count());
    // Every claim finds the keys it reads in its scenario's real output.
    // A claim may lack data because a peer or mechanism is missing here (its
    // scenario then lists what it skipped), never because a figure it reads
    // was renamed or lost.
    for c in claims {
        let Some(missing) = c.get("missing_keys") else {
            continue;
        };
        let r = recs.iter().find(|r| r["id"] == c["scenario"]);
        let skipped = r.is_some_and(|r| {
            !r["skipped"].as_array().unwrap().is_empty()
                || !r["failures"].as_array().unwrap().is_empty()
        });
        assert!(
            skipped,
            "claim {} reads keys no point of scenario {} has: {missing} (renamed in the scenario's output or in the claim?)",
            c["id"],
            c["scenario"]
        );
        eprintln!(
            "claim {}: keys {missing} absent, explained by what scenario {} skipped",
            c["id"], c["scenario"]
        );
    }
    for c in claims {
        let v = c["verdict"].as_str().unwrap();
        assert!(
            [
                "holds",
                "partly",
                "fails",
                "undecided",
                "not reached",
                "not measured"
            ]
            .contains(&v),
            "{v}"
        );
        // A claim with data was judged on its rounds: one (flagged), or
        // several with an interval on every number that is a number. One
        // whose regime was not reached was judged on none.
        if v != "not measured" && v != "not reached" {
            let rounds = c["rounds"].as_u64().unwrap();
            if rounds == 1 {
                assert_eq!(c["one_round"], true, "{c}");
            } else {
                assert!(rounds >= 2, "{c}");
                for n in c["numbers"].as_array().unwrap() {
                    if n["rounds"].as_u64().unwrap() >= 2
                        && n["value"].as_str().unwrap().parse::<f64>().is_ok()
                    {
                        assert!(n["lo"].is_f64() && n["hi"].is_f64(), "{c}");
                    }
                }
            }
        }
        assert!(!c["why"].as_str().unwrap().is_empty(), "{c}");
        assert!(!c["seed"].as_str().unwrap().is_empty());
        assert!(!c["section"].as_str().unwrap().is_empty());
    }
}

/// Parse the page as XML (it is written well-formed) and check every chart.
fn check_html(html: &str, doc: &Value) {
    assert!(
        !html.contains("<script") && !html.contains("<link") && !html.contains("<img"),
        "the report must be self-contained"
    );
    let body = html.trim_start_matches("<!DOCTYPE html>").trim_start();
    let mut reader = quick_xml::Reader::from_str(body);
    let (mut depth, mut charts, mut in_chart, mut pts) = (0i64, 0, false, 0);
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => {
                depth += 1;
                if e.name().as_ref() == "svg" {
                    charts += 1;
                    in_chart = true;
                    pts = 0;
                    let n: usize = e
                        .try_get_attribute("data-points")
                        .unwrap()
                        .map(|a| a.value.parse().unwrap())
                        .expect("every chart says how many points it draws");
                    assert!(n > 0, "a chart without data");
                }
                if in_chart && e.name().as_ref() == "circle" {
                    pts += 1;
                }
            }
            Ok(Event::End(e)) => {
                depth -= 1;
                if e.name().as_ref() == "svg" {
                    assert!(pts > 0, "a chart drew no point");
                    in_chart = false;
                }
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!(
                "index.html is not well-formed at byte {}: {e}",
                reader.buffer_position()
            ),
        }
    }
    assert_eq!(depth, 0, "unbalanced tags");
    for s in default_scenarios() {
        assert!(
            html.contains(&format!("<section id=\"{}\">", s.id)),
            "no section for {}",
            s.id
        );
    }
    for c in doc["claims"].as_array().unwrap() {
        let text = quick_xml::escape::partial_escape(c["claim"].as_str().unwrap()).to_string();
        assert!(html.contains(&text), "claim not shown: {text}");
    }
    // A missing peer is shown with the command that installs it.
    for p in doc["peers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["version"].is_null())
    {
        // The status holds shell text (`&&`): the page shows it escaped.
        let status = quick_xml::escape::partial_escape(p["status"].as_str().unwrap()).to_string();
        assert!(
            html.contains(&status),
            "missing peer {} not marked: {status}",
            p["name"]
        );
    }
    eprintln!("index.html: {charts} charts, all with data");
}

#[test]
fn tiny_profile_end_to_end_and_resume() {
    let out = tmpdir("smoke");
    let t0 = Instant::now();
    study(&out, &["--fresh"]);
    eprintln!("tiny study took {:.1} s", t0.elapsed().as_secs_f64());
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    check_results(&doc);
    // The poller runs two rounds in tiny: its points come from both, and
    // its claims carry intervals across them.
    let poller = doc["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == "poller")
        .unwrap();
    if !poller["points"].as_array().unwrap().is_empty() {
        assert_eq!(poller["rounds"], 2);
        for r in [1, 2] {
            assert!(
                poller["points"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["config"]["round"] == r),
                "no poller point of round {r}"
            );
        }
    }
    check_html(
        &std::fs::read_to_string(out.join("index.html")).unwrap(),
        &doc,
    );
    // The same page as a reader sees it, in headless Chromium.
    let scratch = tmpdir("browser");
    browser::check_report(&out.join("index.html"), &doc, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    // A CSV per scenario beside results.json: a header, a row per point.
    for r in doc["scenarios"].as_array().unwrap() {
        let id = r["id"].as_str().unwrap();
        let csv = std::fs::read_to_string(out.join(format!("{id}.csv"))).unwrap();
        assert!(csv.starts_with("series"), "{id}.csv: {csv}");
        // Every point says which round measured it.
        if !r["points"].as_array().unwrap().is_empty() {
            assert!(
                csv.lines().next().unwrap().split(',').any(|c| c == "round"),
                "{id}.csv has no round column"
            );
        }
        let rows = csv::Reader::from_reader(csv.as_bytes()).records().count();
        assert_eq!(rows, r["points"].as_array().unwrap().len(), "{id}.csv");
    }
    // A run compared with itself: nothing moved.
    let diff = Command::new(EXE)
        .args(["study", "diff"])
        .arg(&out)
        .arg(out.join("results.json"))
        .output()
        .unwrap();
    assert!(diff.status.success());
    let text = String::from_utf8_lossy(&diff.stdout);
    assert!(
        text.contains("0 verdict(s) changed, 0 claim(s) with figures that moved"),
        "{text}"
    );
    // Three runs side by side (here the same one thrice): every judged
    // claim the same in all, a row per claim.
    let table = Command::new(EXE)
        .args(["study", "diff"])
        .args([&out, &out, &out])
        .output()
        .unwrap();
    assert!(table.status.success());
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("(100%)"), "{text}");
    assert!(
        text.contains("| claim | scenario | run 1 | run 2 | run 3 | same in all |"),
        "{text}"
    );
    assert_eq!(
        text.lines().filter(|l| l.ends_with("| yes |")).count(),
        r_claims(&out),
        "{text}"
    );
    // A reader that stops at once (`| head`) ends it quietly, not with a
    // panic on the closed pipe.
    let mut child = Command::new(EXE)
        .args(["study", "diff"])
        .args([&out, &out, &out])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let gone = child.wait_with_output().unwrap();
    assert!(
        gone.status.success(),
        "{}",
        String::from_utf8_lossy(&gone.stderr)
    );
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Claims") && md.contains("## Environment"));
    // report.md opens with the summary, before the claims table.
    assert!(
        md.find("## Summary")
            .is_some_and(|s| s < md.find("## Claims").unwrap()),
        "report.md does not open with its summary"
    );
    // summary.md fits one screen: the verdicts counted, then the published
    // numbers beside today's.
    let short = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        short.lines().count() <= 40 && short.contains("## Then beside now"),
        "{short}"
    );
    // Re-run without --fresh: every scenario is kept (nothing landed in between).
    let again = study(&out, &[]);
    let err = String::from_utf8_lossy(&again.stderr);
    for s in default_scenarios() {
        assert!(
            err.contains(&format!("{}: kept from an earlier run", s.id)),
            "{} was re-run:\n{err}",
            s.id
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// A stand-in for the evdispatch binary: its server is the real one (the
/// harness waits until it listens) started from a shell that leaves a
/// sleeping grandchild in its process group; its load generator only sleeps
/// (with a grandchild too). Both record their pids: what this tests is that
/// Ctrl-C leaves none of them behind.
const STAND_IN: &str = r#"#!/bin/sh
dir="$EVD_TEST_PIDS"
case "$1 $2" in
  "mechanisms --json") echo '[{"name":"epoll","available":"yes"},{"name":"poll","available":"yes"},{"name":"rtsig","available":"yes"}]'; exit 0;;
  "serve --help") echo "--stats-json"; exit 0;;
  "load --help") echo "--persistent"; exit 0;;
esac
case "$1" in
  serve) sleep 300 & echo $! >> "$dir/pids"; echo $$ >> "$dir/pids"; exec "$EVD_REAL" "$@";;
  load) sleep 300 & echo $! >> "$dir/pids"; echo $$ >> "$dir/pids"; touch "$dir/load-started"; wait;;
  *) exit 2;;
esac
"#;

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .map(|(_, r)| r.trim_start().starts_with('Z'))
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

#[test]
fn ctrl_c_leaves_no_process_behind() {
    let dir = tmpdir("sigint");
    let script = dir.join("evdispatch-stand-in");
    std::fs::write(&script, STAND_IN).unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .unwrap();
    let mut child = Command::new(EXE)
        .args(["study", "--profile", "tiny", "--only", "overhead", "--out"])
        .arg(dir.join("out"))
        .env("EVDISPATCH_BIN", &script)
        .env("EVD_REAL", EXE)
        .env("EVD_TEST_PIDS", &dir)
        .env("EVD_BENCH_LOCK", dir.join("lock"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while !dir.join("load-started").exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the study never started the load generator"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    let pids: Vec<u32> = std::fs::read_to_string(dir.join("pids"))
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(
        pids.len(),
        4,
        "server and load, each with a grandchild: {pids:?}"
    );
    assert!(pids.iter().all(|p| alive(*p)));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "the study exits with 130 on Ctrl-C"
    );
    let t1 = Instant::now();
    while pids.iter().any(|p| alive(*p)) && t1.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(
        left.is_empty(),
        "processes left behind after Ctrl-C: {left:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// How many claims a study output's `results.json` has.
fn r_claims(out: &std::path::Path) -> usize {
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("results.json")).unwrap()).unwrap();
    v["claims"].as_array().unwrap().len()
}
