//! How a run counts: the intervals' requests add up to the run's, a close
//! with a request outstanding is an error and a reconnect, and a user's
//! `Connection: close` is one request per connection.

use std::io::{BufReader, Write};
use std::sync::atomic::Ordering;

use common::{accept_each, config, read_head, run, Recorder};
use evdispatch_load::{execute, RunOptions};

mod common;

#[test]
fn interval_requests_add_up_to_the_run() {
    let server = Recorder::start("127.0.0.1:0", None);
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = RunOptions {
        intervals: Some(tx),
        ..RunOptions::default()
    };
    let cfg = config(&server.http("/"), "-R 200 -c 2 -d 1 --interval 0.25");
    let s = execute(&cfg, &opts).unwrap();
    drop(opts);
    let ivs: Vec<_> = rx.iter().collect();
    let per: Vec<u64> = ivs.iter().map(|i| i.requests).collect();
    assert_eq!(ivs.len(), 4);
    // The 200 slots of the window: each sent once, or still queued.
    assert_eq!(s.requests + s.unsent_at_end, 200, "{per:?}");
    // A request counts in the interval it leaves in. Only a missed slot
    // (queued behind a busy connection, or the generator late past
    // --slot-tolerance-ms, as on a loaded machine) may leave after the
    // window, when no interval is left to count it; every other request
    // is in exactly one interval.
    let sum: u64 = per.iter().sum();
    let missed = s.missed_slots;
    assert!(
        sum <= s.requests && sum + missed >= s.requests,
        "intervals {per:?}, requests {}, missed {missed}",
        s.requests
    );
    // 50 slots in each quarter; a slot on a boundary belongs to the next.
    // Leaving late moves a request to a later interval: a missed slot by
    // any number, another (within the 5 ms tolerance, slots 5 ms apart) by
    // one boundary at most.
    for iv in &ivs {
        assert!(
            iv.requests.abs_diff(50) <= missed + 1,
            "interval {}: {} (missed slots {missed})",
            iv.index,
            iv.requests
        );
    }
}

#[test]
fn a_close_with_a_request_outstanding_is_an_error_and_a_reconnect() {
    // Answers one request per connection, then closes without a word on
    // the next one.
    let (addr, _) = accept_each("127.0.0.1:0", |sock, _| {
        let mut r = BufReader::new(sock);
        if read_head(&mut r).is_some() {
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
        let _ = read_head(&mut r);
    });
    let s = run(&format!("http://{addr}/"), "--rate max -c 1 --duration 0.3").unwrap();
    let closed = s.errors["server_closed"] + s.errors["reset"];
    assert!(closed >= 3, "{:?}", s.errors);
    assert_eq!(s.reconnects, closed, "{:?}", s.errors);
}

#[test]
fn a_users_connection_close_is_one_request_per_connection() {
    // The server would keep the connection; the request says close.
    let server = Recorder::start("127.0.0.1:0", None);
    let s = run(
        &server.http("/"),
        "--rate max -c 1 --duration 0.3 -H Connection:close",
    )
    .unwrap();
    let conns = server.seen.connections.load(Ordering::Relaxed);
    let replies = s.replies + s.unmeasured_replies;
    assert!(replies >= 5, "{replies}");
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    // One connection per request (and the pre-flight's).
    assert!(
        conns >= replies,
        "{conns} connections for {replies} replies"
    );
    assert!(s.reconnects + 1 >= replies, "{} reconnects", s.reconnects);
    assert!(s.connections.accounted, "{:?}", s.connections);
}
