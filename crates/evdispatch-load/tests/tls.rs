//! HTTPS: every workload over rustls against a recording server made
//! here (certificates made at run time with rcgen), TLS failures named,
//! one-version servers, and nginx over TLS when it is installed. Loopback
//! only.

use std::sync::atomic::Ordering;

use common::{all_versions, run, server_config, Certs, Recorder};
use evdispatch_harness::{docroot, skip_reason, start_peer, Peer, PeerConfig, PeerTls, Tool};

mod common;

#[test]
fn every_workload_runs_over_tls() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let ca = certs.ca();
    let s = run(
        &server.url("/x"),
        &format!(
            "--sessions 20 --calls 2 --persistent 2 --rate 40 --idle 2 --inactive 2 --slow 2 \
             --slow-interval 5ms --duration 0.5 --cacert {ca}"
        ),
    )
    .unwrap();
    eprintln!("{:?} {:?}", s.errors, s.tls_handshake_us);
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    assert!(
        s.requests >= 18 && s.replies == s.requests,
        "{} {}",
        s.requests,
        s.replies
    );
    assert!(s.slow_replies > 0, "slow clients complete over TLS");
    assert!(s.tls_handshake_us.count > 0 && s.connect_us.count > 0);
    // Every connection was a handshake: 20 sessions, 2 persistent, 2 idle,
    // 2 inactive, the slow ones once per request, and the pre-flight.
    let hs = server.seen.handshakes.load(Ordering::Relaxed);
    let want = 20 + 2 + 2 + 2 + 2 + 1;
    assert!(hs >= want, "{hs} handshakes, want {want}");
    // Reconnects resume their session (the sessions' connections at least).
    let resumed = server.seen.resumed.load(Ordering::Relaxed);
    assert!(resumed >= 10, "{resumed} of {hs} handshakes resumed");
    // The inactive connections' partial requests never complete, so the
    // server saw the replies of every other kind, and at most one more
    // request per slow client (finished as the run ended, its reply never
    // read: the run does not wait for slow clients).
    let complete = server.requests().len() as u64;
    let replies = s.replies + s.slow_replies + s.unmeasured_replies;
    assert!(
        (replies..=replies + 2).contains(&complete),
        "{complete} requests completed by the server, {replies} replies"
    );
    assert!(server
        .requests()
        .iter()
        .all(|(h, _)| h.starts_with("GET /x HTTP/1.1\r\n")));

    // Closed loop too, on a level- and an edge-triggered poller.
    for mechanism in ["epoll", "epoll-et", "poll"] {
        let s = run(
            &format!("https://localhost:{}/", server.addr.port()),
            &format!(
                "--rate max --connections 2 --duration 0.3 --cacert {ca} --mechanism {mechanism}"
            ),
        )
        .unwrap();
        assert!(
            s.replies > 10 && s.errors_total == 0,
            "{mechanism}: {} {:?}",
            s.replies,
            s.errors
        );
    }
}

/// The generator counts the handshakes it made and those that resumed, as
/// the server saw them; `--no-tls-resume` makes every one a full handshake.
#[test]
fn resumed_handshakes_are_counted_and_can_be_turned_off() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let ca = certs.ca();
    for (flag, resumes) in [("", true), (" --no-tls-resume", false)] {
        let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
        let s = run(
            &server.url("/x"),
            &format!("--sessions 12 --calls 1 --rate 60 --duration 0.3 --cacert {ca}{flag}"),
        )
        .unwrap();
        assert_eq!(s.errors_total, 0, "{flag}: {:?} {:?}", s.errors, s.warnings);
        let (hs, resumed) = (
            server.seen.handshakes.load(Ordering::Relaxed),
            server.seen.resumed.load(Ordering::Relaxed),
        );
        // The server also saw the pre-flight check's handshake.
        assert_eq!(s.tls_handshakes + 1, hs, "{flag}");
        assert_eq!(s.tls_resumed, resumed, "{flag}");
        assert!(s.tls_handshakes >= 12, "{flag}: {}", s.tls_handshakes);
        if resumes {
            assert!(
                s.tls_resumed >= 10,
                "{} of {}",
                s.tls_resumed,
                s.tls_handshakes
            );
        } else {
            assert_eq!(s.tls_resumed, 0);
        }
    }
    // A closed loop of 32 connections reconnecting at once: each finds a
    // ticket (TLS 1.3 tickets are single-use, and more than 8 wait).
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let s = run(
        &server.url("/x"),
        &format!("--rate max -c 32 --sessions 0 --calls 1 --duration 0.5 --cacert {ca}"),
    )
    .unwrap();
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    let full = s.tls_handshakes - s.tls_resumed;
    assert!(
        s.tls_handshakes > 100 && full <= 40,
        "{full} full of {} handshakes",
        s.tls_handshakes
    );
}

#[test]
fn tls_failures_are_named() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let err = |url: &str, args: &str| format!("{:#}", run(url, args).unwrap_err());
    let e = err(&server.url("/"), "--idle 1");
    assert!(
        e.contains("unknown issuer") && e.contains("--cacert"),
        "{e}"
    );
    // A certificate issued for other names.
    let other = Certs::new(&["other.example"]);
    let wrong = Recorder::start("127.0.0.1:0", Some(server_config(&other, &all_versions())));
    let e = err(
        &wrong.url("/"),
        &format!("--idle 1 --cacert {}", other.ca()),
    );
    assert!(e.contains("name mismatch"), "{e}");
    // --insecure accepts it, and says so.
    let s = run(
        &wrong.url("/"),
        "--persistent 1 --rate 20 --duration 0.3 --insecure",
    )
    .unwrap();
    assert!(s.replies > 0 && s.errors_total == 0);
    assert!(
        s.warnings.iter().any(|w| w.contains("--insecure")),
        "{:?}",
        s.warnings
    );
    // Plain HTTP on the port: not TLS.
    let plain = Recorder::start("127.0.0.1:0", None);
    let e = err(&plain.url("/"), "--idle 1 --insecure");
    assert!(e.contains("TLS handshake"), "{e}");
    // A bad --cacert.
    let e = err(&server.url("/"), "--idle 1 --cacert /nonexistent/ca.pem");
    assert!(e.contains("--cacert"), "{e}");
}

#[test]
fn tls_1_2_only_and_1_3_only_servers() {
    let certs = Certs::new(&["127.0.0.1"]);
    for v in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &[v])));
        let s = run(
            &server.url("/"),
            &format!("--sessions 5 --rate 50 --cacert {}", certs.ca()),
        )
        .unwrap();
        assert_eq!(
            (s.replies, s.errors_total),
            (5, 0),
            "{v:?}: {:?}",
            s.warnings
        );
    }
}

fn nginx_tls(
    certs: &Certs,
    protocols: &str,
) -> Option<(tempfile::TempDir, evdispatch_harness::ServerProcess)> {
    if let Some(why) = skip_reason(Tool::Nginx) {
        eprintln!("{why}");
        return None;
    }
    // Larger than a TLS record: replies span records and reads.
    let root = docroot(70_000, &[]).unwrap();
    let mut cfg = PeerConfig::new(root.path());
    cfg.keepalive_timeout_s = 1;
    cfg.request_timeout_s = 1;
    cfg.tls = Some(PeerTls {
        cert: certs.path("cert.pem"),
        key: certs.path("key.pem"),
        protocols: protocols.into(),
    });
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    Some((root, server))
}

fn nginx_url(server: &evdispatch_harness::ServerProcess, host: &str) -> String {
    format!("https://{host}:{}/index.html", server.addr().port())
}

#[test]
fn nginx_over_tls() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let Some((_root, server)) = nginx_tls(&certs, "TLSv1.2 TLSv1.3") else {
        return;
    };
    let ca = certs.ca();
    let url = nginx_url(&server, "localhost");
    let s = run(
        &url,
        &format!("--sessions 10 --calls 2 --persistent 2 --rate 40 --slow 1 --slow-bytes 20 --slow-interval 5ms --duration 1 --cacert {ca}"),
    )
    .unwrap();
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    // 60 requests offered (10 sessions of 2 calls, 40 persistent at 40/s over
    // 1 s): at least 28 must be answered, under half, a margin for a loaded
    // machine.
    assert!(
        s.replies == s.requests && s.replies >= 28 && s.slow_replies > 0,
        "replies {} of {} requests, slow {}",
        s.replies,
        s.requests,
        s.slow_replies
    );
    assert_eq!(
        s.status.get("2xx").copied().unwrap_or(0),
        s.replies + s.slow_replies + s.unmeasured_replies
    );
    // nginx closes idle and inactive connections after 1 s: reopened over TLS.
    let s = run(
        &url,
        &format!("--idle 2 --inactive 2 --duration 2.5 --cacert {ca}"),
    )
    .unwrap();
    assert!(s.reopens >= 4, "reopens {}: {:?}", s.reopens, s.errors);
    // Without --cacert: unknown issuer, a non-zero exit for the CLI.
    let e = format!("{:#}", run(&url, "--idle 1").unwrap_err());
    assert!(e.contains("unknown issuer"), "{e}");
    let e = format!(
        "{:#}",
        run(
            &nginx_url(&server, "127.0.0.2"),
            &format!("--idle 1 --cacert {ca}")
        )
        .unwrap_err()
    );
    assert!(
        e.contains("name mismatch") || e.contains("cannot connect"),
        "{e}"
    );
    let s = run(&url, "--rate max --connections 2 --duration 0.3 --insecure").unwrap();
    assert!(s.replies > 0 && s.errors_total == 0);
}

#[test]
fn nginx_tls_1_2_only_1_3_only_and_too_old() {
    let certs = Certs::new(&["127.0.0.1"]);
    for p in ["TLSv1.2", "TLSv1.3"] {
        let Some((_root, server)) = nginx_tls(&certs, p) else {
            return;
        };
        let s = run(
            &nginx_url(&server, "127.0.0.1"),
            &format!("--sessions 5 --rate 50 --cacert {}", certs.ca()),
        )
        .unwrap();
        assert_eq!((s.replies, s.errors_total), (5, 0), "{p}: {:?}", s.warnings);
    }
    // A server that only speaks versions older than 1.2.
    let Some((_root, server)) = nginx_tls(&certs, "TLSv1 TLSv1.1") else {
        return;
    };
    let url = nginx_url(&server, "127.0.0.1");
    let e = format!(
        "{:#}",
        run(&url, &format!("--idle 1 --cacert {}", certs.ca())).unwrap_err()
    );
    assert!(e.contains("protocol version"), "{e}");
}
