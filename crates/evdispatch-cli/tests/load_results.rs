//! `evdispatch load` for scripts and CI, and its results: exit statuses
//! (1 no reply, 99 a broken --fail-if, 130 Ctrl-C), the default load and
//! wrk's short flags, the percentile tables, the interval outputs
//! (--hdr-log read back with HdrHistogram's own reader, --csv,
//! --json-stream), --start-at, and `load merge` of three generators.

use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use evdispatch_harness::{TestServer, TestServerConfig};
use evdispatch_load::record::decode;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use hdrhistogram::Histogram;

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_evdispatch"));
    c.arg("load");
    c
}

fn load(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\nstderr: {}",
            text(&out.stdout),
            text(&out.stderr)
        )
    })
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

#[test]
fn no_successful_reply_exits_1_with_a_reason() {
    // A server that accepts and closes at once: not one reply.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for s in l.incoming() {
            drop(s);
        }
    });
    let out = load(&[&url, "-c", "2", "-d", "500ms", "--timeout", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("no reply succeeded"), "{err}");
    // The report is printed all the same.
    assert!(
        text(&out.stdout).contains("Errors: total"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn fail_if_thresholds_pass_or_exit_99_and_bad_ones_stop_before_the_run() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    // Two connections at 200/s for 1 s, with these checks.
    let run = |checks: &[&str]| {
        let mut a = vec![url.as_str(), "-R", "200", "-c", "2", "-d", "1s"];
        a.extend_from_slice(checks);
        load(&a)
    };
    let out = run(&[
        "--fail-if",
        "p99<2s",
        "--fail-if",
        "errors<0.1%",
        "--fail-if",
        "reply_rate>=0.5*rate",
    ]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Check p99<2s: measured "), "{stdout}");
    assert!(stdout.contains("— pass"), "{stdout}");
    let out = run(&[
        "--json",
        "--fail-if",
        "replies>1000000",
        "--fail-if",
        "p50<1s",
    ]);
    assert_eq!(out.status.code(), Some(99), "{}", text(&out.stderr));
    let v = json(&out);
    let checks = v["checks"].as_array().unwrap();
    assert_eq!(checks[0]["pass"], false);
    assert_eq!(checks[0]["measured"], v["replies"].as_f64().unwrap());
    assert_eq!(checks[1]["pass"], true);
    assert!(text(&out.stderr).contains("replies>1000000: measured"));
    // A bad expression is refused before anything is sent.
    let before = server.stats().requests.load(Ordering::Relaxed);
    let out = load(&[&url, "-d", "1s", "--fail-if", "p99<5"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("--fail-if 'p99<5'"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.stats().requests.load(Ordering::Relaxed), before);
}

#[test]
fn ctrl_c_stops_the_workers_and_reports_what_was_measured() {
    // In this process (-t 1) and in two worker processes (-t 2).
    for procs in [1usize, 2] {
        interrupt_a_run(procs);
    }
}

fn interrupt_a_run(procs: usize) {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let t = procs.to_string();
    let child = bin()
        .args([
            &server.url(),
            "-R",
            "500",
            "-c",
            "4",
            "-t",
            &t,
            "-d",
            "60s",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until replies flow, then interrupt the parent alone.
    let t0 = std::time::Instant::now();
    while server.stats().requests.load(Ordering::Relaxed) < 200 {
        assert!(t0.elapsed() < Duration::from_secs(30), "no load arrived");
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let v = json(&out);
    assert_eq!(v["interrupted"], true);
    let d = v["duration_s"].as_f64().unwrap();
    assert!(d > 0.0 && d < 60.0, "window {d} s");
    let replies = v["replies"].as_u64().unwrap();
    assert!(replies >= 100, "{replies}");
    assert_eq!(v["latency_us"]["count"].as_u64().unwrap(), replies);
    assert_eq!(
        v["generator_cpu_per_process_pct"].as_array().unwrap().len(),
        procs
    );
    assert!(text(&out.stderr).contains("interrupted"));
    // Merged, it is no interrupted command: exit 0, and a warning names it.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("run.json");
    std::fs::write(&f, &out.stdout).unwrap();
    let m = bin()
        .args(["merge", f.to_str().unwrap(), "--json"])
        .output()
        .unwrap();
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    let w = json(&m)["warnings"].to_string();
    assert!(w.contains("interrupted by Ctrl-C"), "{w}");
}

#[test]
fn a_url_alone_is_a_closed_loop_of_ten_connections() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    // The default load, its duration shortened.
    let out = load(&[&server.url(), "-d", "500ms", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v = json(&out);
    assert_eq!(v["config"]["rate"], "max");
    assert_eq!(v["config"]["persistent"], 10);
    assert_eq!(v["connections"]["established"], 10);
    assert!(v["replies"].as_u64().unwrap() > 0);
}

#[test]
fn latency_tables_follow_wrk2() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let out = load(&[
        &server.url(),
        "-R",
        "300",
        "-c",
        "3",
        "-d",
        "1s",
        "--latency",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let o = text(&out.stdout);
    assert!(
        o.contains("Latency Distribution (HdrHistogram - Recorded Latency"),
        "{o}"
    );
    assert!(o.contains("Latency Distribution (HdrHistogram - Uncorrected Latency"));
    for p in [
        " 50.000%", " 75.000%", " 90.000%", " 99.000%", " 99.900%", " 99.990%", " 99.999%",
        "100.000%",
    ] {
        assert_eq!(o.matches(p).count(), 2, "{p} in both tables:\n{o}");
    }
    assert_eq!(o.matches("Detailed Percentile spectrum").count(), 2);
    assert!(o.contains("#[Max     ="));
    // Without --latency, no table.
    let out = load(&[&server.url(), "-R", "100", "-c", "1", "-d", "300ms"]);
    assert!(!text(&out.stdout).contains("Latency Distribution"));
}

#[test]
fn interval_outputs_add_up_to_the_run() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (hlog, csv) = (dir.path().join("run.hlog"), dir.path().join("run.csv"));
    let out = load(&[
        &server.url(),
        "-R",
        "400",
        "-c",
        "4",
        "-t",
        "2",
        "-d",
        "2s",
        "--interval",
        "500ms",
        "--json-stream",
        "--hdr-log",
        hlog.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    // --json-stream: one line per interval, summed over both workers,
    // printed before the text report.
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .take_while(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    let streamed: u64 = lines.iter().map(|l| l["replies"].as_u64().unwrap()).sum();
    assert!(streamed >= 700, "{streamed}");
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(l["interval"], i as u64);
        assert_eq!(l["latency_us"]["count"], l["replies"]);
    }
    // --csv: a header and the same rows.
    let rows: Vec<String> = std::fs::read_to_string(&csv)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert!(
        rows[0].starts_with(
            "interval,start_s,end_s,time_unix_s,requests,replies,errors,reply_rate,p50_us"
        ),
        "{}",
        rows[0]
    );
    assert_eq!(rows.len(), 5);
    let csv_replies: u64 = rows[1..]
        .iter()
        .map(|r| r.split(',').nth(5).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(csv_replies, streamed);
    // --hdr-log: HdrHistogram's reader finds a start time and, per interval,
    // a corrected and an uncorrected histogram with the interval's replies.
    let log = std::fs::read(&hlog).unwrap();
    // The header ends with the column legend, as HdrHistogram's writers do.
    assert!(
        String::from_utf8_lossy(&log).contains(
            "\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
        ),
        "{}",
        String::from_utf8_lossy(&log)
    );
    let (mut start, mut corrected, mut uncorrected) = (None, Vec::new(), Vec::new());
    for e in IntervalLogIterator::new(&log) {
        match e.expect("a well-formed interval log") {
            LogEntry::StartTime(t) => start = Some(t),
            LogEntry::BaseTime(_) => {}
            LogEntry::Interval(h) => {
                // V2 compressed, base64: the reader of the JSON's histograms reads it too.
                let hist: Histogram<u64> = decode(h.encoded_histogram()).unwrap();
                match h.tag().map(|t| t.as_str()) {
                    Some("corrected") => corrected.push((h.start_timestamp(), hist)),
                    Some("uncorrected") => uncorrected.push(hist),
                    t => panic!("unexpected tag {t:?}"),
                }
            }
        }
    }
    assert!(start.is_some());
    assert_eq!((corrected.len(), uncorrected.len()), (4, 4));
    for (i, (t, h)) in corrected.iter().enumerate() {
        assert_eq!(
            *t,
            Duration::from_millis(500 * i as u64),
            "interval {i} starts on time"
        );
        assert_eq!(h.len(), lines[i]["replies"].as_u64().unwrap());
        assert_eq!(uncorrected[i].len(), h.len());
    }
}

#[test]
fn start_at_waits_for_its_time_and_refuses_odd_ones() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    let past = load(&[&url, "--start-at", "@1000", "-d", "1s"]);
    assert_eq!(past.status.code(), Some(1));
    assert!(text(&past.stderr).contains("ago"), "{}", text(&past.stderr));
    let far = format!("@{}", unix_now() + 3.0 * 86400.0);
    let far = load(&[&url, "--start-at", &far, "-d", "1s"]);
    assert!(
        text(&far.stderr).contains("at most"),
        "{}",
        text(&far.stderr)
    );
    let junk = load(&[&url, "--start-at", "tomorrow", "-d", "1s"]);
    assert!(
        text(&junk.stderr).contains("RFC 3339"),
        "{}",
        text(&junk.stderr)
    );
    assert_eq!(
        server.stats().requests.load(Ordering::Relaxed),
        0,
        "nothing ran"
    );
    for procs in ["1", "2"] {
        let at = unix_now() + 1.5;
        let out = load(&[
            &url,
            "--start-at",
            &format!("@{at}"),
            "-c",
            "2",
            "-t",
            procs,
            "-d",
            "300ms",
            "--json",
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let start = json(&out)["window_start_unix_s"].as_f64().unwrap();
        assert!(
            start >= at,
            "procs {procs}: the window began at {start}, before {at}"
        );
    }
}

#[test]
fn three_generators_merge_into_the_sum_of_their_samples() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    let dir = tempfile::tempdir().unwrap();
    let at = format!("@{}", unix_now() + 1.5);
    let sources = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
    let children: Vec<_> = sources
        .iter()
        .map(|src| {
            bin()
                .args([
                    &url,
                    "-R",
                    "150",
                    "-c",
                    "3",
                    "-d",
                    "1s",
                    "--json",
                    "--start-at",
                    &at,
                    "--source-addr",
                    src,
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut files = Vec::new();
    let mut runs = Vec::new();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let p = dir.path().join(format!("gen{i}.json"));
        std::fs::write(&p, &out.stdout).unwrap();
        files.push(p.to_str().unwrap().to_string());
        runs.push(json(&out));
    }
    // Each generator's connections from its own source address (127.0.0.1:
    // the probe that checks the server is there before a run).
    let seen: Vec<String> = server
        .stats()
        .sources
        .lock()
        .unwrap()
        .iter()
        .map(|a| a.to_string())
        .filter(|a| a != "127.0.0.1")
        .collect();
    assert_eq!(seen, sources);
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().cloned());
    args.push("--json".into());
    let out = bin().args(&args).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let m = json(&out);
    let sum = |k: &str| runs.iter().map(|r| r[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(m["replies"].as_u64().unwrap(), sum("replies"));
    assert_eq!(m["requests"].as_u64().unwrap(), sum("requests"));
    assert_eq!(
        m["replies"].as_u64().unwrap(),
        server.stats().requests.load(Ordering::Relaxed),
        "the server's own count"
    );
    assert_eq!(m["config"]["procs"], 3);
    // The merged histogram: at every value, the count of the three added.
    let hist =
        |v: &serde_json::Value, k: &str| decode(v["histograms"][k].as_str().unwrap()).unwrap();
    for k in ["latency", "latency_uncorrected"] {
        let merged = hist(&m, k);
        let parts: Vec<_> = runs.iter().map(|r| hist(r, k)).collect();
        assert_eq!(merged.len(), parts.iter().map(|h| h.len()).sum::<u64>());
        for v in merged.iter_recorded() {
            let value = v.value_iterated_to();
            let want: u64 = parts.iter().map(|h| h.count_at(value)).sum();
            assert_eq!(v.count_at_value(), want, "{k} at {value} µs");
        }
        for h in &parts {
            for v in h.iter_recorded() {
                assert!(merged.count_at(v.value_iterated_to()) >= v.count_at_value());
            }
        }
    }
    // Rates over the common window; the text report reads like one run's.
    let window =
        m["window_end_unix_s"].as_f64().unwrap() - m["window_start_unix_s"].as_f64().unwrap();
    assert!((m["duration_s"].as_f64().unwrap() - window).abs() < 1e-6);
    let mut targs = vec!["merge".to_string()];
    targs.extend(files);
    let out = bin().args(&targs).output().unwrap();
    assert!(
        text(&out.stdout).contains("Reply rate [replies/s]"),
        "{}",
        text(&out.stdout)
    );
}
