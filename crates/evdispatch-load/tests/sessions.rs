//! Sessions: closed-loop sessions run exactly N, sessions run to their end
//! or are counted unfinished, httperf's session log plays its bursts in
//! order, and a session goes on over a new connection when the server
//! closes one.

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::{closing_server, delay_server, run, Recorder, Seen};
use evdispatch_load::Config;

mod common;

#[test]
fn closed_loop_sessions_run_exactly_n_and_end_with_the_last() {
    let server = Recorder::start("127.0.0.1:0", None);
    for (n, c) in [(1, 2), (3, 2), (7, 3)] {
        let before = server.requests().len();
        let t = std::time::Instant::now();
        let s = run(
            &server.http("/cl"),
            &format!("--rate max -c {c} --sessions {n}"),
        )
        .unwrap();
        let took = t.elapsed();
        assert_eq!(server.requests().len() - before, n, "-c {c} --sessions {n}");
        assert_eq!((s.requests, s.replies), (n as u64, n as u64));
        assert!(s.config.run_to_end);
        // Not the default 10 s: the window is the sessions' time.
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(s.duration_s < 1.0 && s.duration_s == s.config.duration_s);
        assert!(s.reply_rate > n as f64, "{}", s.reply_rate);
    }
}

#[test]
fn sessions_run_to_their_end_or_are_counted_unfinished() {
    let (addr, seen) = delay_server(Duration::from_millis(200));
    let url = format!("http://{addr}/delay");
    let sent = |seen: &Seen| seen.requests.lock().unwrap().len() as u64;
    // Without --duration (httperf): every call of every session, measured.
    let s = run(&url, "--sessions 3 --calls 3 --rate 10").unwrap();
    assert_eq!((s.requests, s.replies, sent(&seen)), (9, 9, 9));
    assert_eq!((s.status["2xx"], s.sessions_unfinished), (9, 0));
    assert!(s.duration_s > 0.6 && s.duration_s < 2.0, "{}", s.duration_s);
    // A session log's think times fire for as long as sessions run.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(&f, "/a\n\n/b think=0.2\n/c\n").unwrap();
    let s = run(&url, &format!("--rate 10 --wsesslog 2,0.1,{}", f.display())).unwrap();
    assert_eq!((s.requests, s.replies, s.sessions_unfinished), (3, 3, 0));
    // With --duration: the calls after the window are not made, and the
    // sessions cut short are counted; what was sent was measured. Sessions
    // begin at 0, 0.1 and 0.2 s and their replies come 0.2 s apart, so no
    // reply is due within 50 ms of the end at 0.35 s; and every session has
    // its third call (0.4 s after its start at the earliest) cut, whenever
    // a loaded machine handles what.
    let before = sent(&seen);
    let s = run(&url, "--sessions 3 --calls 3 --rate 10 --duration 0.35").unwrap();
    assert_eq!(
        sent(&seen) - before,
        s.requests,
        "a call went out after the window"
    );
    assert_eq!(s.replies, s.requests);
    assert_eq!(s.status["2xx"], s.replies + s.unmeasured_replies);
    assert_eq!(s.sessions_unfinished, 3);
    let text = s.human();
    assert!(text.contains("Sessions: 3 unfinished"), "{text}");
    assert!(
        text.contains(&format!(
            "(all {} replies: {} measured",
            s.replies, s.replies
        )),
        "{text}"
    );
}

#[test]
fn a_session_log_plays_bursts_in_order() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(
        &f,
        "# session 1\n/foo.html think=0.05\n\t/pict1.gif\n\t/pict2.gif\n/foo2.html method=POST contents='Post data'\n\n# session 2\n/foo3.html method=HEAD\n",
    )
    .unwrap();
    let s = run(
        &server.http("/"),
        &format!("--rate 20 --wsesslog 2,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (5, 0), "{:?}", s.errors);
    let heads: Vec<String> = server
        .requests()
        .iter()
        .map(|(h, b)| {
            format!(
                "{} {}",
                h.lines().next().unwrap(),
                String::from_utf8_lossy(b)
            )
        })
        .collect();
    let first: Vec<&str> = heads
        .iter()
        .filter(|h| !h.contains("foo3"))
        .map(|s| s.as_str())
        .collect();
    assert_eq!(
        first,
        [
            "GET /foo.html HTTP/1.1 ",
            "GET /pict1.gif HTTP/1.1 ",
            "GET /pict2.gif HTTP/1.1 ",
            "POST /foo2.html HTTP/1.1 Post data"
        ]
    );
    assert!(heads.iter().any(|h| h.starts_with("HEAD /foo3.html")));
    // A malformed log: FILE:LINE.
    std::fs::write(&f, "/a\n/b think=x\n").unwrap();
    let e = Config::from_command_line([
        server.http("/").as_str(),
        "--rate",
        "1",
        "--wsesslog",
        &format!("1,0,{}", f.display()),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!("{}:2: expected think=", f.display())),
        "{e}"
    );
}

#[test]
fn sessions_go_on_over_a_new_connection_when_the_server_closes() {
    // As httperf: a server may close between the calls of a session; the
    // rest of the session goes out over a new connection, not lost.
    let (addr, seen) = closing_server(true, Duration::ZERO);
    let s = run(
        &format!("http://{addr}/x"),
        "--rate 20 --sessions 4 --calls 3 --duration 1",
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (12, 0), "{:?}", s.errors);
    // One connection per call (and the generator's reachability check).
    assert_eq!(seen.requests.lock().unwrap().len(), 12);
    assert!(seen.connections.load(Ordering::Relaxed) >= 12);
    // Closed during a think time (a keep-alive timeout of 100 ms against a
    // think time of 300 ms): the next burst reconnects when it is due.
    let (addr, seen) = closing_server(false, Duration::from_millis(100));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(&f, "/a think=0.3\n/b\n").unwrap();
    let s = run(
        &format!("http://{addr}/"),
        &format!("--rate 20 --duration 1 --wsesslog 2,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (4, 0), "{:?}", s.errors);
    let b = seen
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(h, _)| h.starts_with("GET /b "))
        .count();
    assert_eq!(b, 2, "each session's second burst was sent");
}
