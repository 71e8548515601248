//! HTTP/2 (`--http2`) against real peers on loopback: nginx (h2c by prior
//! knowledge and h2 over TLS, each reply checked against its access log,
//! GOAWAYs from its `keepalive_requests`) and nghttpd (Debian's
//! `nghttp2-server`; its stream limit); each test skips, saying why, when
//! its peer is absent. Then what needs no peer: protocol errors, refused
//! and unanswered streams from a fake server, ALPN refused, `auto`, and the
//! combinations refused before a run. The runs go on both engines
//! (`--engine uring` skipped, saying why, where io_uring cannot be set up).

use std::collections::BTreeMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{
    all_versions, config, h2_frame as frame, h2_ok as ok, h2_send, run, run_on, server_config,
    Certs, Recorder,
};
use evdispatch_harness::{docroot, skip_reason, start_peer, Peer, PeerConfig, PeerTls, Tool};
use evdispatch_load::Summary;

mod common;

const ENGINES: [&str; 2] = ["uring", "readiness"];

/// `args` against `url` on each engine, `check`ed with the engine's name
/// (a `uring` run skipped, said, where io_uring cannot be set up).
fn on_each_engine(url: &str, args: &str, check: impl Fn(&str, Summary)) {
    for engine in ENGINES {
        if let Some(s) = run_on(engine, url, args) {
            check(engine, s);
        }
    }
}

/// nginx with `listen … http2`, an access log, and `extra` in its server
/// block; over TLS with `certs`.
fn nginx_h2(
    certs: Option<&Certs>,
    extra: &str,
) -> Option<(
    tempfile::TempDir,
    PathBuf,
    evdispatch_harness::ServerProcess,
)> {
    if let Some(why) = skip_reason(Tool::Nginx) {
        eprintln!("{why}");
        return None;
    }
    let root = docroot(2_000, &[]).unwrap();
    let log = root.path().join("access.log");
    let mut cfg = PeerConfig::new(root.path());
    cfg.http2 = true;
    cfg.access_log = Some(log.clone());
    cfg.nginx_server_extra = extra.into();
    cfg.tls = certs.map(|c| PeerTls {
        cert: c.path("cert.pem"),
        key: c.path("key.pem"),
        protocols: "TLSv1.2 TLSv1.3".into(),
    });
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    Some((root, log, server))
}

/// Lines of nginx's access log once it has written them (it writes each
/// as the request ends; the server is stopped first).
fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

/// Every reply of the run (measured or not).
fn all_replies(s: &Summary) -> u64 {
    s.replies + s.unmeasured_replies
}

fn check_against_log(s: &Summary, log: &Path, server: evdispatch_harness::ServerProcess) {
    drop(server);
    let lines = log_lines(log);
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    assert!(
        s.replies > 0 && s.replies == s.requests,
        "{} of {}",
        s.replies,
        s.requests
    );
    assert_eq!(
        lines.len() as u64,
        all_replies(s),
        "nginx logged {} requests, the generator counted {} replies",
        lines.len(),
        all_replies(s)
    );
    assert!(
        // nginx logs "HTTP/2.0", h2o "HTTP/2".
        lines.iter().all(|l| l.contains("\"GET /index.html HTTP/2")
            && (l.contains(" HTTP/2.0\" 200 ") || l.contains(" HTTP/2\" 200 "))),
        "{:?}",
        lines.iter().find(|l| !l.contains("\" 200 "))
    );
    let h2 = s.http2.as_ref().expect("http2 counters in an HTTP/2 run");
    assert!(h2.header_bytes_sent_hpack > 0 && h2.header_bytes_sent_hpack < h2.header_bytes_sent);
    assert!(h2.header_bytes_received > 0);
}

/// h2o, h2c by prior knowledge and h2 by ALPN: every reply in its access
/// log, once.
#[test]
fn h2o_h2c_and_h2_every_reply_is_in_its_log() {
    if let Some(why) = skip_reason(Tool::H2o) {
        eprintln!("{why}");
        return;
    }
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    for tls in [false, true] {
        let root = docroot(2_000, &[]).unwrap();
        let log = root.path().join("access.log");
        let mut cfg = PeerConfig::new(root.path());
        cfg.access_log = Some(log.clone());
        cfg.tls = tls.then(|| PeerTls {
            cert: certs.path("cert.pem"),
            key: certs.path("key.pem"),
            protocols: "TLSv1.2 TLSv1.3".into(),
        });
        let server = start_peer(Peer::H2o, &cfg).unwrap();
        let port = server.addr().port();
        let (url, extra) = if tls {
            (
                format!("https://localhost:{port}/index.html"),
                format!(" --cacert {}", certs.ca()),
            )
        } else {
            (format!("http://127.0.0.1:{port}/index.html"), String::new())
        };
        let s = run(&url, &format!("--http2 -c 2 -m 8 -d 1{extra}")).unwrap();
        assert_eq!(s.config.http, evdispatch_load::config::HttpVersion::Http2);
        check_against_log(&s, &log, server);
        drop(root);
    }
}

#[test]
fn h2c_against_nginx_every_reply_is_in_its_log() {
    for engine in ENGINES {
        let Some((_root, log, server)) = nginx_h2(None, "") else {
            return;
        };
        let url = format!("http://127.0.0.1:{}/index.html", server.addr().port());
        let Some(s) = run_on(engine, &url, "--http2 -c 2 -m 8 -d 1") else {
            continue;
        };
        assert_eq!(s.config.http, evdispatch_load::config::HttpVersion::Http2);
        assert_eq!(
            s.connections.established, 2,
            "{engine}: {:?}",
            s.connections
        );
        check_against_log(&s, &log, server);
    }
}

/// nginx ends a connection with GOAWAY after `keepalive_requests`: the
/// generator opens no stream past it, sends again on a new connection what
/// was above its last stream id, and every reply is still in the log once.
#[test]
fn goaway_moves_the_requests_to_a_new_connection() {
    for engine in ENGINES {
        let Some((_root, log, server)) = nginx_h2(None, "keepalive_requests 50;") else {
            return;
        };
        let url = format!("http://127.0.0.1:{}/index.html", server.addr().port());
        let Some(s) = run_on(engine, &url, "--http2 -c 1 -m 8 -d 1") else {
            continue;
        };
        let h2 = s.http2.clone().unwrap();
        assert!(h2.goaways >= 2, "{engine}: {h2:?}");
        // 8 streams in flight when nginx reaches its limit: those sent past
        // it went again on the next connection.
        assert!(h2.retried_after_goaway > 0, "{engine}: {h2:?}");
        assert!(
            s.reconnects >= h2.goaways - 1,
            "{engine}: {} reconnects, {h2:?}",
            s.reconnects
        );
        check_against_log(&s, &log, server);
    }
}

/// Sessions over h2c against nginx: every call of every session is in its
/// log once, on one connection per session, also when nginx's
/// `keepalive_requests` ends a session's connection with GOAWAY partway
/// (the rest of the session goes on over a new one); and a session log's
/// bursts, as concurrent streams.
#[test]
fn h2c_sessions_against_nginx_every_reply_is_in_its_log() {
    for engine in ENGINES {
        let Some((_root, log, server)) = nginx_h2(None, "keepalive_requests 5;") else {
            return;
        };
        let url = format!("http://127.0.0.1:{}/index.html", server.addr().port());
        let Some(s) = run_on(engine, &url, "--http2 --sessions 4 --calls 12 --rate 20") else {
            continue;
        };
        assert_eq!((s.requests, s.sessions_unfinished), (48, 0), "{engine}");
        let h2 = s.http2.clone().unwrap();
        // Each session's connection goes away after 5 requests: 3
        // connections for its 12 calls.
        assert!(h2.goaways >= 8, "{engine}: {h2:?}");
        assert_eq!(
            s.connections.established, 12,
            "{engine}: {:?}",
            s.connections
        );
        check_against_log(&s, &log, server);
    }
    let Some((_root, log, server)) = nginx_h2(None, "") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/index.html", server.addr().port());
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(
        &f,
        "/index.html think=0.05\n\t/index.html\n\t/index.html\n/index.html\n",
    )
    .unwrap();
    let s = run(
        &url,
        &format!("--http2 -m 4 --rate 20 --wsesslog 5,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.requests, s.sessions_unfinished), (20, 0));
    assert_eq!(s.connections.established, 5, "{:?}", s.connections);
    check_against_log(&s, &log, server);
}

/// Slow readers over h2c against nginx: a stream window of `--slow-bytes`
/// given back `--slow-bytes` every `--slow-interval`, so that nginx sends
/// a 2,000-byte reply 500 bytes at a time (four steps of 100 ms, where a
/// window of 4,000 bytes takes it at once); every reply read is in the log.
#[test]
fn slow_readers_take_a_reply_a_window_at_a_time() {
    let Some((_root, log, server)) = nginx_h2(None, "") else {
        return;
    };
    let url = format!("http://127.0.0.1:{}/index.html", server.addr().port());
    let slow = |bytes: u32| {
        run(
            &url,
            &format!("--http2 --slow 2 --slow-bytes {bytes} --slow-interval 100ms -d 1"),
        )
        .unwrap()
    };
    let (s, fast) = (slow(500), slow(4000));
    drop(server);
    eprintln!(
        "{} replies read slowly, {} at once",
        s.slow_replies, fast.slow_replies
    );
    assert_eq!(s.errors_total + fast.errors_total, 0, "{:?}", s.errors);
    // 2 readers over 1 s, a reply every 300 ms or more each.
    assert!(
        (4..=8).contains(&s.slow_replies),
        "{} replies",
        s.slow_replies
    );
    assert!(fast.slow_replies > 5 * s.slow_replies);
    // Every reply read is in the log whole; the reply of each reader cut
    // by the end of its run (at most 4) is there too, whole or in part.
    let lines = log_lines(&log);
    let whole = lines
        .iter()
        .filter(|l| l.contains("HTTP/2.0\" 200 2000 "))
        .count() as u64;
    let read = s.slow_replies + fast.slow_replies;
    assert!(whole >= read, "{whole} whole replies logged, {read} read");
    assert!(lines.len() as u64 <= read + 4, "{lines:?}");
}

/// h2 by ALPN: asked for (`--http2`), and taken where offered (`--http
/// auto`); closed loop, and sessions of three calls.
#[test]
fn h2_over_tls_against_nginx_every_reply_is_in_its_log() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    for engine in ENGINES {
        for args in [
            "--http2 -c 2 -m 4 -d 1",
            "--http auto -c 1 -d 0.5",
            "--http2 --sessions 5 --calls 3 --rate 20",
        ] {
            let Some((_root, log, server)) = nginx_h2(Some(&certs), "") else {
                return;
            };
            let url = format!("https://localhost:{}/index.html", server.addr().port());
            let Some(s) = run_on(engine, &url, &format!("{args} --cacert {}", certs.ca())) else {
                continue;
            };
            assert_eq!(s.config.http, evdispatch_load::config::HttpVersion::Http2);
            assert!(s.config.tls.is_some());
            check_against_log(&s, &log, server);
        }
    }
}

/// nghttpd on loopback, h2c, at most `streams` streams per connection.
struct Nghttpd {
    child: Child,
    addr: SocketAddr,
    _root: tempfile::TempDir,
}

impl Drop for Nghttpd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn nghttpd(streams: u32) -> Option<Nghttpd> {
    let Some(bin) = [
        "/usr/sbin/nghttpd",
        "/usr/bin/nghttpd",
        "/usr/local/bin/nghttpd",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists()) else {
        eprintln!("skipped: nghttpd is not installed (Debian package nghttp2-server)");
        return None;
    };
    let root = docroot(1_000, &[]).unwrap();
    // A free port (nghttpd has no port 0).
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(bin)
        .args([
            "--no-tls",
            "-a",
            "127.0.0.1",
            "-m",
            &streams.to_string(),
            "-d",
        ])
        .arg(root.path())
        .arg(port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let server = Nghttpd {
        child,
        addr,
        _root: root,
    };
    let end = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(addr).is_err() {
        assert!(Instant::now() < end, "nghttpd did not listen on {addr}");
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(server)
}

/// The server allows 3 streams at once; 50 asked for: the generator keeps
/// to 3 (a stream past the limit would be refused, RST_STREAM).
#[test]
fn streams_are_clamped_to_the_servers_limit() {
    let Some(server) = nghttpd(3) else {
        return;
    };
    let url = format!("http://{}/index.html", server.addr);
    on_each_engine(&url, "--http2 -c 2 -m 50 -d 1", |engine, s| {
        let h2 = s.http2.clone().unwrap();
        assert_eq!(
            (s.errors_total, h2.streams_refused),
            (0, 0),
            "{engine}: {:?} {h2:?}",
            s.errors
        );
        assert!(
            s.replies > 100 && s.replies == s.requests,
            "{engine}: {} of {}",
            s.replies,
            s.requests
        );
    });
}

/// Open loop over HTTP/2: each request leaves at its own slot, on a free
/// stream of its connection.
#[test]
fn open_loop_over_h2c() {
    let Some(server) = nghttpd(100) else {
        return;
    };
    let url = format!("http://{}/index.html", server.addr);
    on_each_engine(&url, "--http2 -R 200 -c 2 -m 8 -d 1", |engine, s| {
        assert_eq!(
            s.errors_total, 0,
            "{engine}: {:?} {:?}",
            s.errors, s.warnings
        );
        assert!(
            (190..=210).contains(&s.requests) && s.replies == s.requests,
            "{engine}: {} of {}",
            s.replies,
            s.requests
        );
        // A loopback reply to one small request comes within a second.
        assert!(s.latency_us.max < 1_000_000, "{engine}: {:?}", s.latency_us);
    });
}

/// Uploads past the windows: each 300 kB body goes out in DATA frames as
/// nghttpd's WINDOW_UPDATEs open the windows (on the ring, sends queued
/// while one is in flight), and every request is answered.
#[test]
fn bodies_past_the_windows_go_out_whole() {
    let Some(server) = nghttpd(100) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body.bin");
    let len = 300_000u64;
    std::fs::write(&body, vec![b'b'; len as usize]).unwrap();
    let url = format!("http://{}/index.html", server.addr);
    let args = format!(
        "--http2 -c 2 -m 4 -d 0.5 --method POST --body {}",
        body.display()
    );
    on_each_engine(&url, &args, |engine, s| {
        assert_eq!(
            s.errors_total, 0,
            "{engine}: {:?} {:?}",
            s.errors, s.warnings
        );
        assert!(
            s.replies > 10 && s.replies == s.requests,
            "{engine}: {} of {}",
            s.replies,
            s.requests
        );
        let h2 = s.http2.clone().unwrap();
        assert!(h2.flow_control_waits > 0, "{engine}: {h2:?}");
        assert!(
            s.bytes_sent >= s.requests * len,
            "{engine}: {}",
            s.bytes_sent
        );
    });
}

/// A minimal h2c server: `answer(id)` to each request's HEADERS.
fn fake_h2c(answer: fn(u32) -> Vec<u8>) -> SocketAddr {
    common::fake_h2c_server(&[], move |f, w| f.kind != 1 || h2_send(w, &answer(f.id))).0
}

/// Every third stream (ids 5, 11, 17, …) reset with REFUSED_STREAM, the
/// others answered.
fn refusing_h2c_server() -> SocketAddr {
    fake_h2c(|id| {
        if id % 6 == 5 {
            frame(3, 0, id, &7u32.to_be_bytes())
        } else {
            ok(id)
        }
    })
}

/// A frame that breaks the protocol (DATA on stream 0) after the first
/// reply: a connection error, warned about naming the frame, one error per
/// request lost with the connection, and a new connection.
#[test]
fn a_protocol_error_names_its_frame_and_the_connection_is_replaced() {
    let addr = fake_h2c(|id| {
        let mut r = ok(id);
        if id == 3 {
            r.extend(frame(0, 0, 0, b"x"));
        }
        r
    });
    on_each_engine(
        &format!("http://{addr}/"),
        "--http2 -c 1 -m 1 -d 0.3",
        |engine, s| {
            let h2 = s.http2.clone().unwrap();
            assert!(h2.connection_errors >= 1, "{engine}: {h2:?}");
            assert!(
                s.connections.established >= 2,
                "{engine}: {:?}",
                s.connections
            );
            assert!(
                s.warnings.iter().any(|w| w.contains("protocol_error")
                    && w.contains("caused by a DATA frame")
                    && w.contains("DATA on stream 0")),
                "{engine}: {:?}",
                s.warnings
            );
            assert_eq!(
                h2.connection_errors_by_frame.get("DATA"),
                Some(&h2.connection_errors),
                "{engine}: {h2:?}"
            );
            // The reply to stream 3 came before the bad frame: counted; the
            // connection had nothing else in flight, so the error is its own.
            assert_eq!(
                s.errors["malformed"], h2.connection_errors,
                "{engine}: {:?}",
                s.errors
            );
            assert!(s.replies >= 2 * h2.connection_errors, "{engine}");
        },
    );
}

/// Streams the server refuses are errors (`stream_reset`) and counted by
/// code; the rest of the connection carries on.
#[test]
fn refused_streams_are_counted_and_the_connection_goes_on() {
    let addr = refusing_h2c_server();
    on_each_engine(
        &format!("http://{addr}/"),
        "--http2 -c 1 -m 4 -d 0.5",
        |engine, s| {
            let h2 = s.http2.clone().unwrap();
            let refused = s.errors["stream_reset"];
            assert!(
                s.replies > 30 && refused > 10,
                "{engine}: {} replies, {:?}",
                s.replies,
                s.errors
            );
            assert_eq!(s.errors_total, refused, "{engine}: {:?}", s.errors);
            assert_eq!(h2.streams_refused, refused, "{engine}");
            assert_eq!(h2.resets.get("refused_stream"), Some(&refused), "{engine}");
            assert_eq!(s.requests, s.replies + refused, "{engine}");
            // One in three streams refused.
            assert!(
                s.replies.abs_diff(2 * refused) <= 2,
                "{engine}: {} {}",
                s.replies,
                refused
            );
            assert_eq!(
                s.connections.established, 1,
                "{engine}: {:?}",
                s.connections
            );
        },
    );
}

/// A stream never answered (the third of each connection) times out: its
/// connection ends with a `timeout` error and a new one goes on.
#[test]
fn an_unanswered_stream_times_out_and_its_connection_is_replaced() {
    let addr = fake_h2c(|id| if id == 5 { Vec::new() } else { ok(id) });
    on_each_engine(
        &format!("http://{addr}/"),
        "--http2 -c 1 -m 1 -d 1 -T 200ms",
        |engine, s| {
            let timeouts = s.errors["timeout"];
            assert!(timeouts >= 2, "{engine}: {:?}", s.errors);
            assert_eq!(s.errors_total, timeouts, "{engine}: {:?}", s.errors);
            // The last may time out in the drain, with no connection after it.
            assert!(
                s.connections.established >= timeouts,
                "{engine}: {:?}",
                s.connections
            );
            // Two replies on each connection before its third stream hangs.
            assert!(s.replies >= 2 * timeouts, "{engine}: {} replies", s.replies);
        },
    );
}

/// A server that offers only HTTP/1.1 by ALPN: `--http2` says so before
/// the run; `--http auto` runs HTTP/1.1.
#[test]
fn alpn_without_h2_is_a_clear_error_and_auto_falls_to_http1() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let url = server.url("/x");
    let ca = certs.ca();
    let e = run(&url, &format!("--http2 -c 1 -d 0.3 --cacert {ca}"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("does not offer") && e.contains("--http1.1"),
        "{e}"
    );
    let s = run(&url, &format!("--http auto -c 1 -d 0.3 --cacert {ca}")).unwrap();
    assert_eq!(s.config.http, evdispatch_load::config::HttpVersion::Http1);
    assert!(s.replies > 0 && s.errors_total == 0 && s.http2.is_none());
}

/// An HTTP/1.1 server on an http:// URL: `--http2` (h2c by prior
/// knowledge) says before the run that it does not speak h2c.
#[test]
fn h2c_to_an_http1_server_is_refused_before_the_run() {
    let server = Recorder::start("127.0.0.1:0", None);
    let e = run(&server.http("/"), "--http2 -c 1 -d 0.3 -T 1")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("does not speak h2c") || e.contains("did not answer"),
        "{e}"
    );
    assert!(e.contains("--http1.1"), "{e}");
}

#[test]
fn combinations_http2_does_not_carry_are_refused() {
    let refused = |args: &str| {
        let e = evdispatch_load::Config::from_command_line(
            std::iter::once("http://127.0.0.1:1/").chain(args.split_whitespace()),
        )
        .unwrap_err()
        .to_string();
        e
    };
    assert!(refused("-m 4").contains("needs HTTP/2"));
    assert!(refused("--http2 --http1.1").contains("cannot be used with"));
    assert!(refused("--http2 -w 31").contains("31"));
    // Both engines carry every workload.
    for engine in ENGINES {
        for workload in [
            "-c 2",
            "--sessions 10 --rate 5",
            "--idle 2",
            "--inactive 2",
            "--slow 2",
        ] {
            config(
                "http://127.0.0.1:1/",
                &format!("--http2 --engine {engine} {workload}"),
            );
        }
    }
    let c = config("http://127.0.0.1:1/", "--http2 -m 16 -w 20 -W 24");
    let s = c.h2_settings();
    assert_eq!(
        (c.max_streams, s.stream_window, s.connection_window),
        (16, (1 << 20) - 1, (1 << 24) - 1)
    );
}

/// Each HEADERS the fake server received: connection, stream, path, when.
type Heads = Arc<Mutex<Vec<(u64, u32, String, Instant)>>>;

/// An h2c server that answers each request `delay` after its HEADERS (on a
/// thread of its own, so that streams are answered independently), and
/// records the HEADERS by connection.
fn late_h2c(delay: fn(u32, &str) -> Duration) -> (SocketAddr, Heads) {
    let heads: Heads = Default::default();
    let h = heads.clone();
    let (addr, _) = common::fake_h2c_server(&[], move |f, w| {
        if f.kind == 1 {
            h.lock()
                .unwrap()
                .push((f.conn, f.id, f.path.clone(), Instant::now()));
            let (d, w, id) = (delay(f.id, &f.path), w.clone(), f.id);
            std::thread::spawn(move || {
                std::thread::sleep(d);
                h2_send(&w, &ok(id));
            });
        }
        true
    });
    (addr, heads)
}

/// Sessions over HTTP/2: a session is one connection, its calls streams
/// of it, one after the other; a session log's burst goes out at once as
/// concurrent streams, the next burst after the think time.
#[test]
fn sessions_are_streams_of_one_connection_and_bursts_go_out_at_once() {
    let (addr, heads) = late_h2c(|_, _| Duration::from_millis(100));
    let s = run(
        &format!("http://{addr}/c"),
        "--http2 --sessions 3 --calls 3 --rate 10 -m 8",
    )
    .unwrap();
    assert_eq!((s.requests, s.replies, s.errors_total), (9, 9, 0));
    assert_eq!(s.sessions_unfinished, 0);
    // One connection per session.
    assert_eq!(s.connections.established, 3, "{:?}", s.connections);
    let seen = heads.lock().unwrap().clone();
    assert_eq!(seen.len(), 9);
    let conns: std::collections::BTreeSet<u64> = seen.iter().map(|h| h.0).collect();
    assert_eq!(conns.len(), 3, "one connection per session");
    for conn in conns {
        let mine: Vec<_> = seen.iter().filter(|h| h.0 == conn).collect();
        let ids: Vec<u32> = mine.iter().map(|h| h.1).collect();
        assert_eq!(ids, [1, 3, 5], "session {conn}");
        // One call after the other: each after the last one's reply.
        for pair in mine.windows(2) {
            assert!(pair[1].3 - pair[0].3 >= Duration::from_millis(90));
        }
    }
    // A session log: a burst of three, a think time, a burst of one.
    heads.lock().unwrap().clear();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(
        &f,
        "/a think=0.2
	/b
	/c
/d
",
    )
    .unwrap();
    let s = run(
        &format!("http://{addr}/"),
        &format!("--http2 -m 8 --rate 10 --wsesslog 2,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.requests, s.replies, s.errors_total), (8, 8, 0));
    let seen = heads.lock().unwrap().clone();
    let conns: std::collections::BTreeSet<u64> = seen.iter().map(|h| h.0).collect();
    assert_eq!(conns.len(), 2, "one connection per session");
    for conn in conns {
        let mine: Vec<_> = seen.iter().filter(|h| h.0 == conn).collect();
        let paths: Vec<&str> = mine.iter().map(|h| h.2.as_str()).collect();
        assert_eq!(paths, ["/a", "/b", "/c", "/d"]);
        // The burst at once (its streams in flight together), the next
        // after its replies (100 ms) and the think time (200 ms).
        assert!(mine[2].3 - mine[0].3 < Duration::from_millis(50));
        assert!(mine[3].3 - mine[0].3 >= Duration::from_millis(290));
    }
    // -m 1: the burst's streams one after the other.
    heads.lock().unwrap().clear();
    run(
        &format!("http://{addr}/"),
        &format!("--http2 -m 1 --rate 10 --wsesslog 1,0,{}", f.display()),
    )
    .unwrap();
    let seen = heads.lock().unwrap().clone();
    assert!(seen[2].3 - seen[0].3 >= Duration::from_millis(190));
}

/// Open loop over HTTP/2: a request's intended start is its own slot. One
/// stream answered 300 ms late delays no other request of its connection.
#[test]
fn a_late_stream_delays_only_its_own_request() {
    let (addr, _) = late_h2c(|id, _| {
        if id == 41 {
            Duration::from_millis(300)
        } else {
            Duration::ZERO
        }
    });
    let s = run(&format!("http://{addr}/"), "--http2 -R 100 -c 1 -m 8 -d 1").unwrap();
    let l = &s.latency_us;
    eprintln!("-m 8: {l:?}, missed {}", s.missed_slots);
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    assert!(l.max >= 300_000, "{l:?}");
    // (A loaded machine may miss a slot or two on its own.)
    assert!(
        l.p99 < 50_000 && s.missed_slots < 5,
        "{l:?} {}",
        s.missed_slots
    );
    // One stream at a time: the requests due meanwhile wait behind it, and
    // count from their slots.
    let s = run(&format!("http://{addr}/"), "--http2 -R 100 -c 1 -m 1 -d 1").unwrap();
    assert!(s.latency_us.p90 >= 50_000, "{:?}", s.latency_us);
    assert!(s.missed_slots >= 20, "{}", s.missed_slots);
}

/// A server whose streams start with 10 bytes of window and that opens
/// each stream's window 50 ms after its HEADERS: each POST's body waits
/// about 50 ms, measured in stream and connection time.
#[test]
fn time_blocked_on_flow_control_is_measured() {
    let (addr, _) = common::fake_h2c_server(&[(4, 10)], |f, w| {
        if f.kind == 1 {
            let (w, id) = (w.clone(), f.id);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                let mut r = frame(8, 0, id, &1000u32.to_be_bytes());
                r.extend(ok(id));
                h2_send(&w, &r);
            });
        }
        true
    });
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, [7u8; 100]).unwrap();
    let s = run(
        &format!("http://{addr}/"),
        &format!(
            "--http2 -c 1 -m 1 -d 0.5 --method POST --body {}",
            body.display()
        ),
    )
    .unwrap();
    let h2 = s.http2.clone().unwrap();
    let n = s.requests + s.unmeasured_replies;
    assert!(s.replies >= 5 && s.errors_total == 0, "{:?}", s.errors);
    assert!(h2.flow_control_waits >= n, "{h2:?} {n}");
    let (stream, conn) = (
        h2.flow_control_blocked_stream_us,
        h2.flow_control_blocked_connection_us,
    );
    // One stream at a time: the same time for both.
    assert_eq!(stream, conn);
    assert!(
        stream >= s.replies * 45_000 && stream <= (n + 2) * 150_000,
        "{stream} µs over {} replies",
        s.replies
    );
}

/// Inactive connections over HTTP/2 send the preface and SETTINGS, ACK the
/// server's SETTINGS and PINGs, and nothing else; idle ones send one
/// request first. Closed by the server, each is reopened.
#[test]
fn inactive_and_idle_h2_connections_send_settings_and_ack_pings_only() {
    // Per connection: HEADERS and PING ACKs seen.
    let seen: Arc<Mutex<BTreeMap<u64, (u32, u32)>>> = Default::default();
    let sn = seen.clone();
    let (addr, _) = common::fake_h2c_server(&[], move |f, w| {
        let mut all = sn.lock().unwrap();
        let c = all.entry(f.conn).or_default();
        if f.kind == 4 && f.flags & 1 != 0 {
            // Our SETTINGS acknowledged: a PING, and the connection ends
            // 300 ms later (a keep-alive timeout).
            let w = w.clone();
            h2_send(&w, &frame(6, 0, 0, b"12345678"));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                let _ = w.lock().unwrap().shutdown(std::net::Shutdown::Both);
            });
            return true;
        }
        match f.kind {
            1 => {
                c.0 += 1;
                h2_send(w, &ok(f.id))
            }
            6 if f.flags & 1 != 0 && f.payload == b"12345678" => {
                c.1 += 1;
                true
            }
            _ => true,
        }
    });
    let s = run(
        &format!("http://{addr}/"),
        "--http2 --inactive 3 --idle 2 -d 1",
    )
    .unwrap();
    let all: Vec<(u32, u32)> = seen.lock().unwrap().values().copied().collect();
    eprintln!("{all:?} reopens {}", s.reopens);
    assert!(s.reopens >= 10, "{}", s.reopens);
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    // Every connection answered its PING (the last may be cut by the end).
    assert!(all.iter().filter(|c| c.1 == 1).count() >= all.len() - 5);
    // No request on inactive connections, one on idle ones.
    assert!(all.iter().all(|c| c.0 <= 1), "{all:?}");
    let idle = all.iter().filter(|c| c.0 == 1).count();
    let inactive = all.len() - idle;
    assert!(
        idle >= 4 && inactive >= 6,
        "{idle} idle, {inactive} inactive"
    );
    assert_eq!(s.unmeasured_replies, idle as u64);
}
