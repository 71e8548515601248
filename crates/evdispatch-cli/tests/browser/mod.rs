//! The report as a reader sees it: `index.html` opened in headless
//! Chromium, its DOM after load dumped (`--dump-dom`) and its console
//! logged to stderr (`--enable-logging=stderr`). Checked: no console
//! message, every chart drew marks with a geometry, every claim's row shows
//! its text, verdict and numbers with their intervals, the opening summary
//! names every claim once in the group of its verdict, and nothing points
//! outside the machine. Skipped, with the reason, where Chromium is absent.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::os::unix::process::CommandExt as _;

use evdispatch_study::figure::fmt_num;
use serde_json::Value;

/// How long one page may take, start to exit, before Chromium is killed.
const LIMIT: Duration = Duration::from_secs(60);

/// Chromium's binary: `/usr/bin/chromium` or the first of its names on PATH.
fn chromium() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/chromium");
    if fixed.is_file() {
        return Some(fixed);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|d| {
            ["chromium", "chromium-browser", "google-chrome"]
                .into_iter()
                .map(move |n| d.join(n))
        })
        .find(|p| p.is_file())
}

/// What Chromium made of a page: the DOM after load and its stderr.
struct Rendered {
    dom: String,
    stderr: String,
}

/// Open `page` in headless Chromium (its own profile in `scratch`), killed
/// with its whole process group when it outlives [`LIMIT`].
fn render(exe: &Path, page: &Path, scratch: &Path) -> Rendered {
    let profile = scratch.join("profile");
    std::fs::create_dir_all(&profile).unwrap();
    let (out, err) = (scratch.join("dom.html"), scratch.join("stderr.txt"));
    let mut child = Command::new(exe)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.canonicalize().unwrap().display()))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .process_group(0)
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if t0.elapsed() > LIMIT {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(child.id() as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
            let _ = child.wait();
            panic!(
                "Chromium did not finish {} within {LIMIT:?}: {}",
                page.display(),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err).unwrap_or_default();
    assert!(status.success(), "Chromium failed ({status}): {stderr}");
    Rendered {
        dom: std::fs::read_to_string(&out).unwrap(),
        stderr,
    }
}

/// The console lines Chromium logged for the page.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// A page's text as a reader sees it: tags dropped, entities decoded,
/// spaces folded.
fn text_of(html: &str) -> String {
    let mut t = String::with_capacity(html.len());
    let mut in_tag = false;
    for ch in html.chars() {
        match ch {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                t.push(' ');
            }
            c if !in_tag => t.push(c),
            _ => {}
        }
    }
    let t = t
        .replace("&nbsp;", " ")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&");
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `name`'s value in the tag starting at `tag` (Chromium writes every
/// attribute double-quoted).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let end = tag.find('>').unwrap_or(tag.len());
    let tag = &tag[..end];
    let key = format!(" {name}=\"");
    let at = tag.find(&key)? + key.len();
    tag[at..].find('"').map(|e| &tag[at..at + e])
}

fn num(tag: &str, name: &str) -> f64 {
    attr(tag, name)
        .and_then(|v| v.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The element `<tag ...>…</tag>` whose start carries `id="id"`.
fn element<'a>(dom: &'a str, tag: &str, id: &str) -> Option<&'a str> {
    let start = dom.find(&format!("<{tag} id=\"{id}\""))?;
    let end = dom[start..].find(&format!("</{tag}>"))?;
    Some(&dom[start..start + end])
}

/// Every chart drew data marks inside its own box.
fn check_charts(dom: &str, source: &str) {
    let charts: Vec<&str> = dom.split("<svg").skip(1).collect();
    assert_eq!(
        charts.len(),
        source.matches("<svg").count(),
        "Chromium's DOM lost charts"
    );
    for (i, chart) in charts.iter().enumerate() {
        let chart = &chart[..chart.find("</svg>").expect("an unclosed chart")];
        let label = attr(chart, "aria-label").unwrap_or("?");
        let (w, h) = (num(chart, "width"), num(chart, "height"));
        assert!(w > 0.0 && h > 0.0, "chart {i} ({label}) has no size");
        let mut marks = 0;
        for c in chart.split("<circle").skip(1) {
            let (x, y, r) = (num(c, "cx"), num(c, "cy"), num(c, "r"));
            assert!(
                r > 0.0 && (0.0..=w).contains(&x) && (0.0..=h).contains(&y),
                "chart {i} ({label}): a marker off the chart: {}",
                &c[..c.find('>').unwrap_or(c.len())]
            );
            marks += 1;
        }
        let lines = chart
            .split("<polyline")
            .skip(1)
            .filter(|p| attr(p, "points").is_some_and(|v| v.split_whitespace().count() >= 2))
            .count();
        assert!(
            marks > 0,
            "chart {i} ({label}) drew no marker ({lines} lines)"
        );
        let declared: usize = attr(chart, "data-points")
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        assert!(
            declared > 0 && marks >= declared,
            "chart {i} ({label}) says {declared} points, drew {marks} markers"
        );
    }
    eprintln!("browser: {} charts, each with its markers", charts.len());
}

/// Every claim's row shows its text, verdict and numbers (intervals too);
/// the summary names every claim once, in the group of its verdict.
fn check_claims(dom: &str, doc: &Value) {
    let claims = doc["claims"].as_array().unwrap();
    let summary = element(dom, "section", "summary").expect("no summary section");
    for c in claims {
        let id = c["id"].as_str().unwrap();
        let verdict = c["verdict"].as_str().unwrap();
        let row = element(dom, "tr", &format!("claim-{id}"))
            .unwrap_or_else(|| panic!("no row for claim {id}"));
        let text = text_of(row);
        let claim = c["claim"].as_str().unwrap();
        assert!(
            text.contains(claim),
            "claim {id}: {claim:?} not in {text:?}"
        );
        assert!(
            row.contains(&format!(">{verdict}<")),
            "claim {id}: verdict {verdict} not shown: {text:?}"
        );
        // Every judged claim shows its interval or says it was decided on
        // one round (one whose regime was not reached was judged on none).
        if verdict != "not measured" && verdict != "not reached" {
            let rounds = c["rounds"].as_u64().unwrap();
            let want = if rounds == 1 {
                "decided on one round".to_string()
            } else {
                format!("{rounds} rounds")
            };
            assert!(text.contains(&want), "claim {id}: {want:?} not in {text:?}");
            if rounds > 1 && !c["numbers"].as_array().unwrap().is_empty() {
                let with = c["numbers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|n| n["lo"].is_f64());
                assert_eq!(
                    with,
                    text.contains("(interval ")
                        || text.contains(" alike within display precision)"),
                    "claim {id}: its intervals are not shown: {text:?}"
                );
            }
        }
        for n in c["numbers"].as_array().unwrap() {
            let value = format!(
                "{} = {}",
                n["name"].as_str().unwrap(),
                n["value"].as_str().unwrap()
            );
            assert!(
                text.contains(&value),
                "claim {id}: {value:?} not in {text:?}"
            );
            if let (Some(lo), Some(hi)) = (n["lo"].as_f64(), n["hi"].as_f64()) {
                for b in [fmt_num(lo), fmt_num(hi)] {
                    assert!(
                        text.contains(&b),
                        "claim {id}: interval bound {b} not in {text:?}"
                    );
                }
            }
        }
        let link = format!("href=\"#claim-{id}\"");
        assert_eq!(
            summary.matches(&link).count(),
            1,
            "claim {id} is not named once in the summary"
        );
        // The list it is named in is the one of its verdict.
        let at = summary.find(&link).unwrap();
        let list = ["holds-list", "fails-list", "partly-list", "open-list"]
            .into_iter()
            .filter_map(|l| summary[..at].rfind(l).map(|p| (p, l)))
            .max()
            .map(|(_, l)| l);
        let want = match verdict {
            "holds" => "holds-list",
            "fails" => "fails-list",
            "partly" => "partly-list",
            _ => "open-list",
        };
        assert_eq!(
            list,
            Some(want),
            "claim {id} ({verdict}) listed under {list:?}"
        );
        if want == "open-list" {
            // Its reason is given.
            let why = c["why"]
                .as_str()
                .unwrap()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            assert!(
                text_of(summary).contains(&why),
                "claim {id}: reason {why:?} not in the summary"
            );
        }
    }
    eprintln!("browser: {} claims shown with their verdicts", claims.len());
}

/// No address outside the machine in any src or href of the page.
fn check_offline(dom: &str) {
    for key in [" src=\"", " href=\"", " xlink:href=\""] {
        for part in dom.split(key).skip(1) {
            let url = &part[..part.find('"').unwrap_or(part.len())];
            let lower = url.to_ascii_lowercase();
            let Some(rest) = lower
                .strip_prefix("http://")
                .or_else(|| lower.strip_prefix("https://"))
                .or_else(|| lower.strip_prefix("//"))
            else {
                continue;
            };
            let host = rest.split(['/', '?', '#']).next().unwrap_or("");
            let loopback = host.starts_with("127.")
                || host.starts_with("localhost")
                || host.starts_with("[::1]");
            assert!(
                loopback,
                "the report fetches {url}: it must be self-contained"
            );
        }
    }
    assert!(
        !dom.contains("url(http"),
        "a style fetches from the network"
    );
}

/// Open the study's `index.html` (beside `doc`, its `results.json`) in
/// headless Chromium and check it as a reader would see it. Prints why and
/// returns where Chromium is absent.
pub fn check_report(page: &Path, doc: &Value, scratch: &Path) {
    let Some(exe) = chromium() else {
        eprintln!("SKIP browser check: no chromium (/usr/bin/chromium or on PATH); bash .ci/install-peers installs it");
        return;
    };
    let t0 = Instant::now();
    // A page that logs an error, rendered beside the report: the console
    // scan below must see it, or a clean report would prove nothing.
    let probe_dir = scratch.join("probe");
    std::fs::create_dir_all(&probe_dir).unwrap();
    let probe = probe_dir.join("probe.html");
    std::fs::write(
        &probe,
        "<!DOCTYPE html><html><body><script>console.error('evd-probe-error')</script></body></html>",
    )
    .unwrap();
    let report_dir = scratch.join("report");
    let (probe_run, report) = std::thread::scope(|s| {
        let p = s.spawn(|| render(&exe, &probe, &probe_dir));
        let r = render(&exe, page, &report_dir);
        (p.join().unwrap(), r)
    });
    assert!(
        console_lines(&probe_run.stderr)
            .iter()
            .any(|l| l.contains("evd-probe-error")),
        "Chromium's console is not logged where this test looks: {}",
        probe_run.stderr
    );
    let console = console_lines(&report.stderr);
    assert!(console.is_empty(), "console messages: {console:#?}");
    let source = std::fs::read_to_string(page).unwrap();
    check_charts(&report.dom, &source);
    check_claims(&report.dom, doc);
    check_offline(&report.dom);
    eprintln!(
        "browser: index.html checked in {} in {:.1} s",
        exe.display(),
        t0.elapsed().as_secs_f64()
    );
}
