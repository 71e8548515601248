//! Both I/O engines (`--engine uring` and `--engine readiness`) run every
//! workload against the harness's test server on loopback with the same
//! accounting: the io_uring path must count requests, replies, bytes and
//! connections exactly as the readiness path does. Where io_uring is not
//! available, the `uring` runs say why and are skipped.

use std::sync::atomic::Ordering;
use std::time::Duration;

use evdispatch_harness::{TestServer, TestServerConfig};
use evdispatch_load::{execute, Config, RunOptions, Summary};

const ENGINES: [&str; 2] = ["uring", "readiness"];

/// Run `args` against `url` on `engine`; `None` when io_uring is not
/// available here (printed).
fn run(url: &str, engine: &str, args: &str) -> Option<Summary> {
    let cfg = Config::from_command_line(
        [url, "--engine", engine]
            .into_iter()
            .chain(args.split_whitespace()),
    )
    .expect("valid configuration");
    match execute(&cfg, &RunOptions::default()) {
        Ok(s) => Some(s),
        Err(e) if engine == "uring" && format!("{e:#}").contains("cannot set up an io_uring") => {
            eprintln!("skipped on {engine}: {e:#}");
            None
        }
        Err(e) => panic!("{engine}: {args}: {e:#}"),
    }
}

#[test]
fn every_workload_on_both_engines() {
    for engine in ENGINES {
        let server = TestServer::start(TestServerConfig::default()).unwrap();
        let Some(s) = run(
            &server.url(),
            engine,
            "--sessions 20 --calls 2 --persistent 2 --rate 100 --idle 2 --inactive 2 --slow 2 \
             --slow-interval 5ms --duration 0.5",
        ) else {
            continue;
        };
        assert_eq!(
            s.errors_total, 0,
            "{engine}: {:?} {:?}",
            s.errors, s.warnings
        );
        assert!(
            s.requests >= 40 && s.replies == s.requests,
            "{engine}: {} requests, {} replies",
            s.requests,
            s.replies
        );
        assert!(s.slow_replies > 0, "{engine}: slow clients complete");
        assert!(s.connections.accounted, "{engine}: {:?}", s.connections);
        // The server answered every reply counted (and the idle clients'
        // first requests, the slow ones, the pre-flight's nothing).
        let answered = server.stats().requests.load(Ordering::Relaxed);
        let replies = s.replies + s.slow_replies + s.unmeasured_replies;
        assert!(
            (replies..=replies + 2).contains(&answered),
            "{engine}: server answered {answered}, generator counted {replies}"
        );

        // The closed loop, the path the uring engine exists for.
        let Some(s) = run(
            &server.url(),
            engine,
            "--rate max --connections 4 --duration 0.3",
        ) else {
            continue;
        };
        assert!(
            s.replies > 50 && s.errors_total == 0,
            "{engine}: {} replies, {:?}",
            s.replies,
            s.errors
        );
        assert_eq!(s.reconnects, 0, "{engine}: keep-alive connections stay");
        // Every reply is the same size: bytes received are exact, for
        // replies in and after the window.
        let per_reply = s.bytes_received / (s.replies + s.unmeasured_replies);
        assert_eq!(
            s.bytes_received % per_reply,
            0,
            "{engine}: {} bytes for {} replies",
            s.bytes_received,
            s.replies + s.unmeasured_replies
        );
        assert!(per_reply > 64, "{engine}: a 64-byte body and a head");
    }
}

#[test]
fn replies_larger_than_a_receive_buffer() {
    // 200 kB bodies: each reply takes many receives (the uring engine's
    // buffer is 16 KiB), and the parser sees it in pieces.
    for engine in ENGINES {
        let server = TestServer::start(TestServerConfig {
            body: 200_000,
            ..Default::default()
        })
        .unwrap();
        let Some(s) = run(
            &server.url(),
            engine,
            "--rate max --connections 2 --duration 0.3",
        ) else {
            continue;
        };
        assert!(s.replies > 5, "{engine}: {} replies", s.replies);
        assert_eq!(s.errors_total, 0, "{engine}: {:?}", s.errors);
        let all = s.replies + s.unmeasured_replies;
        assert!(
            s.bytes_received >= all * 200_000,
            "{engine}: {} bytes for {all} replies",
            s.bytes_received
        );
    }
}

#[test]
fn keep_alive_connections_the_server_closes_are_reopened() {
    // The server closes a connection silent for 100 ms; two persistent
    // connections at 6 req/s in all are each silent ~330 ms between
    // requests, so the server closes them while they wait (on the uring
    // engine, a receive posted on each completes with the end of stream),
    // and the generator reconnects before the next request.
    for engine in ENGINES {
        let server = TestServer::start(TestServerConfig {
            idle_close: Some(Duration::from_millis(100)),
            ..Default::default()
        })
        .unwrap();
        let Some(s) = run(
            &server.url(),
            engine,
            "--persistent 2 --rate 6 --arrival uniform --duration 1.5",
        ) else {
            continue;
        };
        let closed = server.stats().idle_closed.load(Ordering::Relaxed);
        assert!(closed >= 4, "{engine}: the server closed {closed}");
        assert!(
            s.reconnects >= 4,
            "{engine}: {} reconnects, {closed} closed by the server",
            s.reconnects
        );
        assert_eq!(s.errors_total, 0, "{engine}: {:?}", s.errors);
        assert!(
            s.requests >= 8 && s.replies == s.requests,
            "{engine}: {} requests, {} replies",
            s.requests,
            s.replies
        );
        assert!(s.connections.accounted, "{engine}: {:?}", s.connections);
    }
}

#[test]
fn the_uring_engine_needs_a_poller_with_a_descriptor() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    let cfg = Config::from_command_line([
        url.as_str(),
        "--engine",
        "uring",
        "--mechanism",
        "poll",
        "--rate",
        "max",
        "--connections",
        "1",
        "--duration",
        "0.2",
    ])
    .unwrap();
    let e = format!("{:#}", execute(&cfg, &RunOptions::default()).unwrap_err());
    assert!(e.contains("--engine uring") && e.contains("poll"), "{e}");
    // `auto` falls back to the readiness engine there.
    let Some(s) = run(
        &url,
        "auto",
        "--mechanism poll --rate max --connections 1 --duration 0.2",
    ) else {
        unreachable!("auto never asks for io_uring")
    };
    assert!(s.replies > 10 && s.errors_total == 0, "{:?}", s.errors);
}
