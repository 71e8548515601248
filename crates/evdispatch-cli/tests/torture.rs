//! `evdispatch torture` as a program, tiny profile: a short signal-queue
//! storm (the server a child process with its queue limit lowered to 16)
//! and a short descriptor exhaustion. Only behaviour is asserted (nothing
//! lost, every overflow recovered, accepting resumes, no spinning); the
//! latency thresholds are the command's figures, not a test's.

use std::process::Command;

use serde_json::Value;

fn torture(args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_evdispatch"))
        .arg("torture")
        .args(args)
        .args(["--profile", "tiny", "--json", "--no-nginx"])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "torture {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["schema"], "evdispatch-torture/1");
    v
}

fn check<'a>(run: &'a Value, name: &str) -> &'a Value {
    run["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"].as_str().unwrap().starts_with(name))
        .unwrap_or_else(|| panic!("no check '{name}' in {run}"))
}

#[test]
fn a_signal_queue_storm_loses_nothing() {
    let v = torture(&["storm", "--mechanism", "rtsig", "--mechanism", "hybrid"]);
    let sc = &v["scenarios"][0];
    assert_eq!(sc["scenario"], "storm");
    let runs = sc["runs"].as_array().unwrap();
    if runs.is_empty() {
        eprintln!("skipped: {}", sc["skipped"]);
        return;
    }
    for run in runs {
        let f = &run["figures"];
        let m = run["model"].as_str().unwrap();
        assert!(f["requests"].as_f64().unwrap() > 0.0, "{m}: {f}");
        assert_eq!(f["lost"], 0.0, "{m}: {f}");
        assert_eq!(f["errors"], 0.0, "{m}: {f}");
        assert_eq!(check(run, "queue overflowed")["pass"], true, "{m}: {f}");
        assert_eq!(f["overflows"], f["recoveries"], "{m}: {f}");
        // A hang would show as a stall of seconds; generous, not a timing test.
        assert!(f["longest_gap_s"].as_f64().unwrap() < 3.0, "{m}: {f}");
    }
}

#[test]
fn descriptor_exhaustion_resumes_and_does_not_spin() {
    let v = torture(&["exhaustion", "--mechanism", "epoll"]);
    let run = &v["scenarios"][0]["runs"][0];
    let f = &run["figures"];
    assert_eq!(run["model"], "epoll");
    assert!(
        f["accept_pauses"].as_f64().unwrap() > 0.0,
        "limit never reached: {f}"
    );
    assert_eq!(f["keepalive_errors"], 0, "{f}");
    assert_eq!(f["crowd_served_after_free"], f["crowd_waiting"], "{f}");
    assert_eq!(check(run, "a fresh connection")["value"], 200, "{f}");
    // Spinning on EMFILE burns a whole core; idle is ~0%.
    assert!(
        f["server_cpu_idle_at_limit_pct"].as_f64().unwrap() < 50.0,
        "{f}"
    );
}

/// The TLS attacks on the readiness and completion models: every failure
/// counted by kind, every hostile connection closed or answered, the
/// kept-alive client served throughout (its slowest reply is a figure, not
/// asserted here).
#[test]
fn tls_attacks_are_closed_answered_and_counted() {
    let v = torture(&[
        "tls",
        "--mechanism",
        "epoll",
        "--mechanism",
        "uring-completion",
    ]);
    let sc = &v["scenarios"][0];
    assert_eq!(sc["scenario"], "tls");
    for run in sc["runs"].as_array().unwrap() {
        let m = run["model"].as_str().unwrap();
        let f = &run["figures"];
        assert_eq!(check(run, "served client: failed")["value"], 0, "{m}: {f}");
        for name in [
            "silent connections closed",
            "byte-a-time hellos closed",
            "malformed hellos answered",
            "plaintext HTTP answered 400",
            "fatal alerts after the handshake",
            "counted timeout_before_hello",
            "counted timeout_in_handshake",
            "counted malformed",
            "counted plaintext_http",
            "counted alerts_after_handshake",
            "counted full handshakes",
        ] {
            assert_eq!(check(run, name)["pass"], true, "{m} {name}: {f}");
        }
        let failures = &f["server_tls"]["handshake_failures"];
        assert_eq!(failures["timeout_before_hello"], f["silent"], "{m}: {f}");
        assert_eq!(failures["malformed"], f["malformed"], "{m}: {f}");
    }
}
