//! Operations: the access log in the Combined Log Format
//! on every model, SIGHUP reopening it without stopping the server, and a
//! clear failure when the address is taken by another process.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{on_every_model, site, spawn, start, Client};
use evdispatch_server::cmdline::ServeCommand;
use evdispatch_server::ListenerMode;

fn bad<T>(line: &str) -> T {
    panic!("not a combined log line: {line:?}")
}

/// One Combined Log Format line, split into its fields.
#[derive(Debug)]
struct Line {
    remote: String,
    request: String,
    status: u16,
    bytes: u64,
    referer: String,
    agent: String,
}

/// Parse `$remote_addr - $remote_user [$time_local] "$request" $status
/// $body_bytes_sent "$http_referer" "$http_user_agent"`, strictly.
fn parse(line: &str) -> Line {
    let (remote, rest) = line.split_once(" - - [").unwrap_or_else(|| bad(line));
    let (time, rest) = rest.split_once("] \"").unwrap_or_else(|| bad(line));
    let (request, rest) = rest.split_once("\" ").unwrap_or_else(|| bad(line));
    let (status, rest) = rest.split_once(' ').unwrap_or_else(|| bad(line));
    let (bytes, rest) = rest.split_once(" \"").unwrap_or_else(|| bad(line));
    let (referer, rest) = rest.split_once("\" \"").unwrap_or_else(|| bad(line));
    let agent = rest.strip_suffix('"').unwrap_or_else(|| bad(line));
    // 24/Nov/2026:07:05:00 +0000
    let t: Vec<&str> = time.split(['/', ':', ' ']).collect();
    assert_eq!(t.len(), 7, "time {time:?}");
    assert!(t[1].len() == 3 && t[6] == "+0000", "time {time:?}");
    Line {
        remote: remote.into(),
        request: request.into(),
        status: status.parse().unwrap_or_else(|_| bad(line)),
        bytes: bytes.parse().unwrap_or_else(|_| bad(line)),
        referer: referer.into(),
        agent: agent.into(),
    }
}

fn lines(path: &Path) -> Vec<Line> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(parse)
        .collect()
}

#[test]
fn access_log_lines_on_every_model() {
    on_every_model(|model, site| {
        let path = site.dir.path().join(format!("access-{}.log", model.name()));
        let Some(server) = start(model, &site.root, |c| c.access_log = Some(path.clone())) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(
            b"GET /six.txt?x=1 HTTP/1.1\r\nHost: t\r\nUser-Agent: probe \"1\"\r\nReferer: http://r/\r\n\r\n",
        );
        assert_eq!(c.response(false).unwrap().status, 200);
        c.send(b"HEAD /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(true).unwrap().status, 200);
        assert_eq!(c.get("/missing").status, 404);
        c.send(b"BREW / HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(false).unwrap();
        server.stop().unwrap();
        let l = lines(&path);
        assert_eq!(l.len(), 4, "{model}: {l:?}");
        assert!(l.iter().all(|x| x.remote == "127.0.0.1"), "{model}: {l:?}");
        assert_eq!(l[0].request, "GET /six.txt?x=1 HTTP/1.1", "{model}");
        assert_eq!((l[0].status, l[0].bytes), (200, 6144), "{model}");
        assert_eq!(l[0].referer, "http://r/", "{model}");
        assert_eq!(l[0].agent, "probe \\x221\\x22", "{model}");
        assert_eq!(l[1].request, "HEAD /six.txt HTTP/1.1", "{model}");
        assert_eq!((l[1].status, l[1].bytes), (200, 0), "{model}");
        assert_eq!((l[1].referer.as_str(), l[1].agent.as_str()), ("-", "-"));
        assert_eq!(l[2].status, 404, "{model}");
        assert_eq!(l[2].request, "GET /missing HTTP/1.1", "{model}");
        assert_eq!(l[3].status, r.status, "{model}");
        assert_eq!(l[3].bytes, r.body.len() as u64, "{model}");
    });
}

#[test]
fn access_log_counts_the_body_bytes_sent() {
    // As nginx's $body_bytes_sent: what was sent of the body, so a client
    // that goes away part-way shows; bodies built in the head buffer (a
    // listing, multipart part headers) count too.
    on_every_model(|model, site| {
        let big = site.root.join(format!("big-{}.bin", model.name()));
        let len: u64 = 64 << 20;
        std::fs::File::create(&big).unwrap().set_len(len).unwrap();
        let path = site.dir.path().join(format!("bytes-{}.log", model.name()));
        let Some(server) = start(model, &site.root, |c| {
            c.access_log = Some(path.clone());
            c.site.listing = true;
        }) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        let listing = c.get("/empty/");
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1,10-20\r\n\r\n");
        let multipart = c.response(false).unwrap();
        assert_eq!(multipart.status, 206, "{model}");
        // A download abandoned after a little.
        let mut quitter = Client::connect(server.local_addr());
        socket2::SockRef::from(&quitter.s)
            .set_recv_buffer_size(16 << 10)
            .unwrap();
        let name = big.file_name().unwrap().to_str().unwrap();
        quitter.send(format!("GET /{name} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        let mut some = [0u8; 4096];
        std::io::Read::read_exact(&mut quitter.s, &mut some).unwrap();
        drop(quitter);
        // The server notices when its next send fails; the line is written
        // then (or at the stop).
        std::thread::sleep(Duration::from_millis(300));
        server.stop().unwrap();
        let l = lines(&path);
        assert_eq!(l.len(), 3, "{model}: {l:?}");
        assert_eq!(l[0].bytes, listing.body.len() as u64, "{model}: listing");
        assert_eq!(
            l[1].bytes,
            multipart.body.len() as u64,
            "{model}: multipart"
        );
        assert_eq!(l[2].status, 200, "{model}");
        assert!(
            l[2].bytes > 0 && l[2].bytes < len,
            "{model}: {} of {len} bytes logged for an abandoned download",
            l[2].bytes
        );
    });
}

#[test]
fn access_log_request_lines_after_empty_lines_and_at_a_408() {
    // Empty lines before a request are no part of it (RFC 9112 §2.2), and
    // a 408 whose request line had arrived logs it, as nginx does.
    on_every_model(|model, site| {
        let path = site.dir.path().join(format!("lines-{}.log", model.name()));
        let Some(server) = start(model, &site.root, |c| {
            c.access_log = Some(path.clone());
            c.header_timeout = Duration::from_millis(300);
        }) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(b"\r\n\r\nGET /six.txt?two HTTP/1.1\r\nHost: t\r\nUser-Agent: UA-2\r\nReferer: http://ref/\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 200, "{model}");
        let mut slow = Client::connect(server.local_addr());
        slow.send(b"GET /index.html HTTP/1.1\r\nUser-Agent: slow\r\nHo");
        assert_eq!(slow.response(false).unwrap().status, 408, "{model}");
        server.stop().unwrap();
        let l = lines(&path);
        assert_eq!(l.len(), 2, "{model}: {l:?}");
        assert_eq!(l[0].request, "GET /six.txt?two HTTP/1.1", "{model}");
        assert_eq!(
            (l[0].referer.as_str(), l[0].agent.as_str()),
            ("http://ref/", "UA-2")
        );
        assert_eq!(l[1].request, "GET /index.html HTTP/1.1", "{model}");
        assert_eq!((l[1].status, l[1].agent.as_str()), (408, "slow"), "{model}");
    });
}

fn signal(child: &Child, sig: &str) {
    // Through kill(1): the test stays free of unsafe code.
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !done() {
        assert!(t0.elapsed() < Duration::from_secs(20), "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `--root ROOT --listen 127.0.0.1:0`, the default mechanism.
fn on_loopback(root: &str) -> ServeCommand {
    ServeCommand {
        root: Some(root.into()),
        listen: Some("127.0.0.1:0".into()),
        ..ServeCommand::default()
    }
}

/// logrotate's way: rename the file, SIGHUP, and the next lines go to a new
/// file of the old name; the server serves on, and its statistics are
/// written at the stop as before. Without an access log SIGHUP is ignored.
#[test]
fn sighup_reopens_the_access_log_and_never_stops_the_server() {
    let site = site();
    let root = site.root.to_str().unwrap();
    let log = site.dir.path().join("access.log");
    let stats = site.dir.path().join("stats.json");
    for mechanism in ["epoll", "threads"] {
        let _ = std::fs::remove_file(&log);
        let mut s = spawn(&ServeCommand {
            access_log: Some(log.clone()),
            stats_json: Some(stats.clone()),
            ..ServeCommand::loopback(root, mechanism)
        });
        let mut c = Client::connect(s.addr);
        assert_eq!(c.get("/six.txt").status, 200);
        // Its line is written once the response is sent, a moment after the
        // client may have it: rotate after it is in.
        wait_for("the first line was never written", || {
            lines(&log).len() == 1
        });
        let rotated = site.dir.path().join("access.log.1");
        std::fs::rename(&log, &rotated).unwrap();
        signal(&s.child, "-HUP");
        // The line of the first request lands in the renamed file, and the
        // new file appears once the log is reopened.
        wait_for("the log was never reopened", || log.exists());
        assert_eq!(c.get("/index.html").status, 200, "{mechanism}");
        assert_eq!(Client::connect(s.addr).get("/").status, 200);
        signal(&s.child, "-TERM");
        let st = s.child.wait().unwrap();
        assert!(st.success(), "{mechanism}: exited with {st}");
        let old = lines(&rotated);
        assert_eq!(old.len(), 1, "{mechanism}: {old:?}");
        assert_eq!(old[0].request, "GET /six.txt HTTP/1.1");
        // A line is written once its response is sent (as nginx logs at the
        // request's end), so two pool threads of `threads` may log in either
        // order.
        let mut new: Vec<_> = lines(&log).into_iter().map(|l| l.request).collect();
        new.sort();
        assert_eq!(
            new,
            ["GET / HTTP/1.1", "GET /index.html HTTP/1.1"],
            "{mechanism}"
        );
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        assert_eq!(doc["requests"]["total"], 3, "{mechanism}");
        assert_eq!(doc["config"]["access_log"], log.to_str().unwrap());
        std::fs::remove_file(&stats).unwrap();
    }
    // No access log: SIGHUP changes nothing.
    let mut s = spawn(&on_loopback(root));
    signal(&s.child, "-HUP");
    std::thread::sleep(Duration::from_millis(200));
    assert!(s.child.try_wait().unwrap().is_none(), "SIGHUP stopped it");
    assert_eq!(Client::connect(s.addr).get("/").status, 200);
}

/// A second server on a port already listened on fails at start-up with a
/// message, whether the holder is another evdispatch (both with the
/// default `--listener reuseport`) or any other program.
#[test]
fn an_address_in_use_fails_start_up() {
    let site = site();
    let root = site.root.to_str().unwrap();
    let first = spawn(&on_loopback(root));
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = [first.addr, other.local_addr().unwrap()];
    for addr in taken {
        let at = ServeCommand {
            listen: Some(addr.to_string()),
            ..on_loopback(root)
        };
        for cmd in [
            ServeCommand {
                listener: Some(ListenerMode::Reuseport),
                workers: Some(2),
                ..at.clone()
            },
            ServeCommand {
                mechanism: Some("threads".into()),
                ..at.clone()
            },
        ] {
            let mut child = Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
                .args(cmd.args())
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            // A server that did start serves until stopped: stop it.
            let t0 = Instant::now();
            while child.try_wait().unwrap().is_none() && t0.elapsed() < Duration::from_secs(10) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{addr} {cmd}: started: {err}");
            assert!(
                err.contains("address already in use") && err.contains(&addr.to_string()),
                "{addr} {cmd}: {err}"
            );
            assert!(
                String::from_utf8_lossy(&out.stdout).is_empty(),
                "announced a listener"
            );
        }
    }
    // The first server still has its port to itself and serves.
    assert_eq!(Client::connect(first.addr).get("/").status, 200);
}
