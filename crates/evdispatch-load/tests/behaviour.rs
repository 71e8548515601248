//! The generator against the harness's test server: coordinated omission is
//! corrected, inactive and idle connections that the server times out are
//! reopened and counted, slow clients complete, and every connection is
//! accounted for.

use std::sync::atomic::Ordering;
use std::time::Duration;

use evdispatch_harness::{TestServer, TestServerConfig};
use evdispatch_load::{execute, Config, RunOptions, Summary};

fn run(url: &str, args: &str) -> Summary {
    let cfg = Config::from_command_line(std::iter::once(url).chain(args.split_whitespace()))
        .expect("valid configuration");
    execute(&cfg, &RunOptions::default()).expect("the run completes")
}

#[test]
fn a_stalling_server_shows_in_corrected_latency_only() {
    stalling_server_shows_in_corrected_latency_only(false, "");
}

/// The same over h2c, one stream per connection: the same truth and
/// tolerance as over HTTP/1.1.
#[test]
fn a_stalling_h2c_server_shows_in_corrected_latency_only() {
    stalling_server_shows_in_corrected_latency_only(true, "--http2 -m 1");
}

/// Over h2c with many streams per connection, each request due during a
/// stall leaves on its slot on a free stream and waits out the stall on
/// it: corrected and uncorrected latency both show the stall, and hardly
/// a slot is missed.
#[test]
fn a_stalling_h2c_server_with_free_streams_delays_each_request_from_its_slot() {
    let (s, stalls) = stalled_run(true, "--http2 -m 256");
    assert!(stalls >= 2);
    let (c, u) = (&s.latency_us, &s.latency_uncorrected_us);
    eprintln!(
        "corrected {c:?}\nuncorrected {u:?}\nmissed {}",
        s.missed_slots
    );
    assert!(c.p99 >= 150_000, "corrected p99 {} µs", c.p99);
    assert!(u.p99 >= 150_000, "uncorrected p99 {} µs", u.p99);
    // Hundreds with one stream per connection; a few here, sent late while
    // a stall's replies are taken in at once.
    assert!(s.missed_slots < 100, "{}", s.missed_slots);
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    assert!(s.requests >= 2900 && s.replies == s.requests);
}

/// Two persistent connections offering 1000 req/s for 3 s to a server
/// that stops replying 200 ms of every second (over h2c with `http2`);
/// the summary and the stalls seen.
fn stalled_run(http2: bool, args: &str) -> (Summary, u64) {
    let server = TestServer::start(TestServerConfig {
        body: 32,
        stall: Some((Duration::from_secs(1), Duration::from_millis(200))),
        http2,
        ..Default::default()
    })
    .unwrap();
    let s = run(
        &server.url(),
        &format!("--persistent 2 --rate 1000 --duration 3 --timeout 2 {args}"),
    );
    (s, server.stats().stalls.load(Ordering::Relaxed))
}

fn stalling_server_shows_in_corrected_latency_only(http2: bool, args: &str) {
    // Every second the server stops replying for 200 ms. Two persistent
    // connections offer 1000 req/s: during a stall only two requests are in
    // flight (their uncorrected latency is high), the others wait for their
    // connection and are counted from their slot.
    let (s, stalls) = stalled_run(http2, args);
    assert!(stalls >= 2);
    assert_eq!(s.http2.is_some(), http2);
    let (c, u) = (&s.latency_us, &s.latency_uncorrected_us);
    eprintln!(
        "corrected {c:?}\nuncorrected {u:?}\nmissed {}",
        s.missed_slots
    );
    assert!(
        c.p99 >= 150_000,
        "corrected p99 {} µs should show the 200 ms stalls",
        c.p99
    );
    assert!(
        u.p99 < 50_000,
        "uncorrected p99 {} µs should stay low",
        u.p99
    );
    assert!(
        u.max >= 100_000,
        "the requests caught in a stall see it uncorrected too"
    );
    assert!(
        s.missed_slots >= 200,
        "requests queued behind a stall missed their slot"
    );
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    assert!(
        s.requests >= 2900 && s.replies == s.requests,
        "{} {}",
        s.requests,
        s.replies
    );
}

#[test]
fn timed_out_inactive_and_idle_connections_are_reopened_and_counted() {
    let server = TestServer::start(TestServerConfig {
        idle_close: Some(Duration::from_millis(300)),
        ..Default::default()
    })
    .unwrap();
    let s = run(
        &server.url(),
        "--inactive 20 --idle 10 --duration 2 --mechanism epoll-et",
    );
    let closed = server.stats().idle_closed.load(Ordering::Relaxed);
    eprintln!(
        "reopens {} (window {}), server closed {closed}",
        s.reopens, s.reopens_in_window
    );
    // 30 connections closed every ~0.3 s for 2 s: some 200 reopens.
    assert!(s.reopens >= 100, "{}", s.reopens);
    // Each server close is seen and reopened, except those that happened as
    // the run ended (at most one per connection).
    assert!(
        s.reopens <= closed && closed <= s.reopens + 30,
        "{} vs {closed}",
        s.reopens
    );
    assert_eq!(
        s.connections.attempted,
        30 + s.reopens,
        "{:?}",
        s.connections
    );
    assert!(s.connections.accounted, "{:?}", s.connections);
    assert_eq!(s.connections.open_at_end, 30);
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    assert!(
        s.reopens_in_window > 0 && (s.reopen_rate - s.reopens_in_window as f64 / 2.0).abs() < 1e-9
    );
    // The idle connections made one request per (re)open.
    assert!(s.unmeasured_replies >= 10);
}

#[test]
fn sessions_slow_clients_and_accounting() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let s = run(
        &server.url(),
        "--sessions 300 --calls 2 --rate 200 --slow 2 --slow-bytes 16 --slow-interval 20ms --arrival poisson",
    );
    // The window runs until the last session ends (Poisson arrivals: about
    // 1.5 s), every call of every session measured.
    assert!(s.config.run_to_end);
    assert!(s.duration_s > 0.8 && s.duration_s < 3.0, "{}", s.duration_s);
    assert_eq!(s.requests, 600);
    assert_eq!(s.replies, s.requests);
    assert!(
        s.slow_replies >= 2,
        "slow clients completed {} requests",
        s.slow_replies
    );
    assert!(s.connections.accounted, "{:?}", s.connections);
    assert!(s.connections.closed_by_client >= 300);
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    assert!(s.connect_us.count >= 290);
    assert_eq!(
        s.status["2xx"],
        s.replies + s.slow_replies + s.unmeasured_replies
    );
}

#[test]
fn slow_clients_arrive_over_the_ramp() {
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let args = "--slow 20 --slow-bytes 8 --slow-interval 50ms --duration 1";
    let at_once = run(&server.url(), args);
    let ramped = run(&server.url(), &format!("{args} --slow-ramp 800ms"));
    eprintln!(
        "setup at once {:.3} s, ramped {:.3} s",
        at_once.setup_s, ramped.setup_s
    );
    // The 20th client may connect 19/20 of the way through the ramp.
    assert!(ramped.setup_s >= 0.75, "{}", ramped.setup_s);
    assert!(at_once.setup_s < 0.5, "{}", at_once.setup_s);
    for s in [&at_once, &ramped] {
        assert!(s.slow_replies >= 20, "{}", s.slow_replies);
        assert_eq!(s.errors_total, 0, "{:?}", s.errors);
        assert!(s.connections.accounted, "{:?}", s.connections);
    }
}

#[test]
fn a_refusing_server_is_an_error_before_the_run() {
    let port = evdispatch_harness::free_port().unwrap();
    let cfg = Config::from_command_line([
        format!("http://127.0.0.1:{port}/"),
        "--idle".into(),
        "1".into(),
    ])
    .unwrap();
    let e = execute(&cfg, &RunOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot connect") && e.contains("is the server running"),
        "{e}"
    );
}

#[test]
fn a_server_closing_mid_run_is_counted_by_cause() {
    // Requests to a server that is gone: the timeout is not early and every
    // failure has a cause.
    let server = TestServer::start(TestServerConfig::default()).unwrap();
    let url = server.url();
    let cfg = Config::from_command_line([
        url.as_str(),
        "--sessions",
        "0",
        "--rate",
        "200",
        "--duration",
        "1.5",
    ])
    .unwrap();
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(server);
    });
    let s = execute(&cfg, &RunOptions::default()).unwrap();
    stopper.join().unwrap();
    assert!(s.replies > 0);
    assert!(s.errors["refused"] > 50, "{:?}", s.errors);
    assert!(s.connections.accounted, "{:?}", s.connections);
}
