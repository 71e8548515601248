//! `evdispatch load` as a program: worker processes merged into one JSON
//! summary, source addresses, and bad input refused before the run.

use std::ffi::OsString;
use std::process::Command;
use std::time::Duration;

use evdispatch_harness::{TestServer, TestServerConfig};
use evdispatch_load::cmdline::LoadCommand;
use evdispatch_load::config::Rate;

/// `evdispatch load ARGS`: raw arguments where a test checks how the
/// command line itself is read, [`LoadCommand::args`] elsewhere.
fn load<S: Into<OsString>>(args: impl IntoIterator<Item = S>) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_evdispatch"))
        .arg("load")
        .args(args.into_iter().map(Into::into))
        .output()
        .expect("the binary runs")
}

/// One idle connection to `url` (a run that fails before it starts).
fn idle(url: impl Into<String>) -> Vec<OsString> {
    LoadCommand {
        idle: Some(1),
        ..LoadCommand::new(url)
    }
    .args()
}

/// Run `cmd`, which must fail with `want` in its standard error.
fn fails_saying(cmd: &mut Command, want: &str) {
    let out = cmd.output().expect("the command runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains(want), "{err}");
}

#[test]
fn worker_processes_are_merged_into_one_summary() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    let out = load(
        LoadCommand {
            persistent: Some(10),
            rate: Some(Rate::PerSecond(200.0)),
            idle: Some(40),
            procs: Some(2),
            source_addrs: Some(2),
            duration: Some(Duration::from_secs_f64(1.5)),
            json: true,
            ..LoadCommand::new(url)
        }
        .args(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "evdispatch-load/1");
    assert_eq!(v["config"]["procs"], 2);
    assert_eq!(
        v["generator_cpu_per_process_pct"].as_array().unwrap().len(),
        2
    );
    let replies = v["replies"].as_u64().unwrap();
    assert!(
        (290..=300).contains(&replies),
        "{replies} replies for 200/s over 1.5 s"
    );
    assert_eq!(
        v["latency_us"]["count"].as_u64().unwrap(),
        replies,
        "histograms merged"
    );
    for k in ["p50", "p90", "p99", "p999", "max"] {
        assert!(v["latency_us"][k].as_u64().unwrap() > 0, "{k}");
        assert!(v["latency_uncorrected_us"][k].as_u64().is_some(), "{k}");
    }
    assert_eq!(v["connections"]["attempted"], 50);
    assert_eq!(v["connections"]["open_at_end"], 50);
    assert_eq!(v["connections"]["accounted"], true);
    assert_eq!(v["connections_peak"], 50);
    assert_eq!(v["errors_total"], 0, "{}", v["errors"]);
    assert!(v["reply_rate"].as_f64().unwrap() > 150.0);
    // 1.5 s with the default 1 s interval: one full interval, one sample of
    // about 200/s (the last half second is no sample: as httperf, only full
    // intervals give a rate).
    let samples = v["rate_intervals"]["samples"].as_array().unwrap();
    assert_eq!(samples.len(), 1, "{samples:?}");
    let sample = samples[0].as_f64().unwrap();
    assert!(
        (150.0..=250.0).contains(&sample),
        "{sample} replies/s for 200/s"
    );
    assert!(v.get("server_cpu_pct").is_some() && v.get("missed_slots").is_some());
    let sources = server.stats().sources.lock().unwrap().clone();
    assert_eq!(
        sources.iter().map(|a| a.to_string()).collect::<Vec<_>>(),
        ["127.0.0.1", "127.0.1.1"],
        "connections spread over two source addresses"
    );
}

#[test]
fn the_human_summary_reads_like_httperf() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let out = load(
        LoadCommand {
            sessions: Some(50),
            rate: Some(Rate::PerSecond(100.0)),
            ..LoadCommand::new(server.url())
        }
        .args(),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for line in [
        "Reply rate [replies/s]: min",
        "Latency [ms] corrected",
        "Latency [ms] uncorrected",
        "Errors: total 0",
        "Connections: attempted 50",
    ] {
        assert!(text.contains(line), "missing '{line}' in:\n{text}");
    }
}

#[test]
fn bad_input_is_refused_before_the_run() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["htp:/nowhere", "--idle", "1"],
            "only http:// and https://",
        ),
        (&["http://127.0.0.1:1/", "--inactive", "30000"], "--procs 2"),
        (&["http://127.0.0.1:1/", "--sessions", "10"], "need --rate"),
        (
            &[
                "http://127.0.0.1:1/",
                "--idle",
                "1",
                "--body",
                "/nonexistent/body",
            ],
            "--body: cannot read '/nonexistent/body'",
        ),
    ];
    for (args, want) in cases {
        let out = load(args.iter().copied());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.code() == Some(1) && err.contains(want),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
    // A flag clap refuses exits 1 as well (wrk: usage, exit 1), not clap's 2;
    // help still exits 0.
    for args in [
        &["http://127.0.0.1:1/", "-c", "abc"][..],
        &["--no-such-flag"][..],
    ] {
        let out = load(args.iter().copied());
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(!out.stderr.is_empty(), "{args:?}: no message");
    }
    let out = load(["--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--rate"));
    let port = evdispatch_harness::free_port().unwrap();
    let out = load(idle(format!("http://127.0.0.1:{port}/")));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("cannot connect"),
        "{err}"
    );
}

#[test]
fn a_malformed_session_log_names_its_line() {
    let f = std::env::temp_dir().join(format!("evd-wsesslog-{}.log", std::process::id()));
    std::fs::write(&f, "/a\n\t/b method=\n").unwrap();
    let arg = format!("1,0,{}", f.display());
    let out = load(["http://127.0.0.1:1/", "--rate", "1", "--wsesslog", &arg]);
    let err = String::from_utf8_lossy(&out.stderr);
    let want = format!("{}:2: expected a method token", f.display());
    let _ = std::fs::remove_file(&f);
    assert!(!out.status.success() && err.contains(&want), "{err}");
}

#[test]
fn an_unresolvable_name_is_an_error() {
    // In a network namespace of its own (no interface up, so no DNS query
    // leaves the machine) the lookup fails whatever the resolver is.
    let probe = Command::new("unshare").args(["-n", "true"]).status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: `unshare -n` is not available here (needs root or user namespaces); an unresolvable-name test must not send a DNS query off the machine");
        return;
    }
    fails_saying(
        Command::new("unshare")
            .arg("-n")
            .arg(env!("CARGO_BIN_EXE_evdispatch"))
            .args(["load", "http://no-such-host.invalid/", "--idle", "1"]),
        "cannot resolve host 'no-such-host.invalid'",
    );
}

#[test]
fn https_with_worker_processes_against_nginx() {
    use evdispatch_harness::{docroot, skip_reason, start_peer, Peer, PeerConfig, PeerTls, Tool};
    if let Some(why) = skip_reason(Tool::Nginx) {
        eprintln!("{why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("evd-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let (cert_pem, key_pem) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert_pem, cert.pem()).unwrap();
    std::fs::write(&key_pem, key.serialize_pem()).unwrap();
    let root = docroot(256, &[]).unwrap();
    let mut cfg = PeerConfig::new(root.path());
    cfg.tls = Some(PeerTls {
        cert: cert_pem.clone(),
        key: key_pem,
        protocols: "TLSv1.2 TLSv1.3".into(),
    });
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    let url = format!("https://127.0.0.1:{}/index.html", server.addr().port());
    let out = load(
        LoadCommand {
            persistent: Some(4),
            rate: Some(Rate::PerSecond(100.0)),
            idle: Some(4),
            procs: Some(2),
            duration: Some(Duration::from_secs(1)),
            cacert: Some(cert_pem.clone()),
            json: true,
            ..LoadCommand::new(&url)
        }
        .args(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["errors_total"], 0, "{}", v["errors"]);
    assert!(v["replies"].as_u64().unwrap() >= 90, "{}", v["replies"]);
    assert_eq!(v["config"]["tls"]["server_name"], "127.0.0.1");
    assert_eq!(
        v["config"]["target"],
        format!("127.0.0.1:{}", server.addr().port())
    );
    assert!(v["tls_handshake_us"].is_object());
    // The same server without its CA: the certificate is not trusted.
    let out = load(idle(&url));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("unknown issuer"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_session_log_is_shared_by_worker_processes() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let f = std::env::temp_dir().join(format!("evd-wsesslog-procs-{}.log", std::process::id()));
    // Two sessions: a burst of three requests, then a single request.
    std::fs::write(&f, "/a think=0.01\n\t/b\n\t/c\n\n/d\n").unwrap();
    let arg = format!("4,0,{}", f.display());
    let out = load([
        &server.url(),
        "--rate",
        "20",
        "--wsesslog",
        &arg,
        "--procs",
        "2",
        "--json",
    ]);
    let _ = std::fs::remove_file(&f);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Each worker plays two sessions, one of each: 2 × (3 + 1) requests.
    assert_eq!(v["replies"], 8, "{}", v["errors"]);
    assert_eq!(v["config"]["wsesslog"]["sessions"], 4);
    assert_eq!(v["connections"]["attempted"], 4);
}

#[test]
fn no_trusted_roots_is_a_clear_error() {
    // rustls-native-certs reads only these when they are set.
    fails_saying(
        Command::new(env!("CARGO_BIN_EXE_evdispatch"))
            .args(["load", "https://127.0.0.1:1/", "--idle", "1"])
            .env("SSL_CERT_FILE", "/nonexistent/roots.pem")
            .env("SSL_CERT_DIR", "/nonexistent/roots"),
        "no trusted root certificates",
    );
}
