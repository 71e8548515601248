//! The harness starts each peer server, it answers, and stopping (or
//! dropping) it leaves no process behind.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use evdispatch_harness::{
    docroot, run_h2load, skip_reason, start_peer, H2loadArgs, LighttpdEvents, Peer, PeerConfig,
    TestServer, TestServerConfig, Tool,
};

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purposes; a live process has a stat line with a state other than Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

fn check(peer: Peer, cfg: PeerConfig) {
    if let Some(why) = skip_reason(peer.tool()) {
        eprintln!("{why}");
        return;
    }
    let server = start_peer(peer, &cfg).unwrap();
    assert!(!server.version().is_empty() && server.version() != "unknown");
    let reply = get(server.addr(), "/index.html");
    assert!(reply.starts_with("HTTP/1.1 200"), "{peer:?}: {reply}");
    assert!(
        reply.ends_with(&"abcdefghijklmnopqrstuvwxyz"[..10]),
        "{peer:?}: body"
    );
    let pids = server.pids();
    assert!(!pids.is_empty());
    drop(server);
    for p in pids {
        assert!(!alive(p), "{peer:?}: process {p} left behind");
    }
}

#[test]
fn nginx_with_two_workers() {
    let root = docroot(10, &[]).unwrap();
    let mut c = PeerConfig::new(root.path());
    c.workers = 2;
    c.cpus = vec![0];
    check(Peer::Nginx, c);
}

/// h2load against nginx with `http2` (h2c): every request it counts
/// succeeded, over about its duration, its CPU time measured.
#[test]
fn h2load_runs_against_nginx_over_h2c() {
    for t in [Tool::Nginx, Tool::H2load] {
        if let Some(why) = skip_reason(t) {
            eprintln!("{why}");
            return;
        }
    }
    let root = docroot(1024, &[]).unwrap();
    let mut cfg = PeerConfig::new(root.path());
    cfg.http2 = true;
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    let r = run_h2load(&H2loadArgs {
        url: format!("http://127.0.0.1:{}/index.html", server.addr().port()),
        threads: 1,
        clients: 2,
        max_streams: 4,
        duration_s: 1.0,
        cpus: Vec::new(),
    })
    .unwrap();
    assert!(r.succeeded > 100, "{r:?}");
    assert_eq!(r.failed + r.errored + r.timeout, 0, "{r:?}");
    assert!((0.9..5.0).contains(&r.duration_s), "{r:?}");
    assert!(r.cpu_s > 0.0, "{r:?}");
}

#[test]
fn lighttpd_on_poll() {
    let root = docroot(10, &[]).unwrap();
    let mut c = PeerConfig::new(root.path());
    c.lighttpd_events = LighttpdEvents::Poll;
    check(Peer::Lighttpd, c);
}

#[test]
fn h2o() {
    let root = docroot(10, &[]).unwrap();
    check(Peer::H2o, PeerConfig::new(root.path()));
}

#[test]
fn test_server_answers_and_closes_idle() {
    let s = TestServer::start(TestServerConfig {
        body: 5,
        idle_close: Some(Duration::from_millis(100)),
        ..Default::default()
    })
    .unwrap();
    let reply = get(s.addr(), "/");
    assert!(reply.starts_with("HTTP/1.1 200") && reply.ends_with("xxxxx"));
    let mut c = TcpStream::connect(s.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut b = [0u8; 1];
    assert_eq!(c.read(&mut b).unwrap(), 0, "an idle connection is closed");
    assert!(
        s.stats()
            .idle_closed
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1
    );
}

/// A stand-in for `evdispatch serve`: announces its address like ours and
/// writes its statistics on SIGTERM.
const STAND_IN: &str = r#"#!/usr/bin/env python3
import json, signal, socket, sys
args = sys.argv[1:]
assert args[0] == "serve", args
stats = args[args.index("--stats-json") + 1]
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(16)
def term(*_):
    with open(stats, "w") as f:
        json.dump({"args": args[1:args.index("--stats-json")]}, f)
    sys.exit(0)
signal.signal(signal.SIGTERM, term)
print("evdispatch serve: epoll", flush=True)
print("listening on http://127.0.0.1:%d" % s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    c.close()
"#;

#[test]
fn ours_is_started_from_its_announcement_and_stopped_with_its_statistics() {
    use std::os::unix::fs::PermissionsExt;
    if std::process::Command::new("python3")
        .arg("-c")
        .arg("1")
        .status()
        .is_err()
    {
        eprintln!("skipped: python3 (the stand-in server) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("evdispatch");
    std::fs::write(&bin, STAND_IN).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cfg = evdispatch_harness::OursConfig {
        binary: bin,
        serve: evdispatch_server::cmdline::ServeCommand {
            mechanism: Some("epoll".into()),
            ..Default::default()
        },
        cpus: vec![],
        stats_json: true,
        idle: false,
        cpu_budget: None,
    };
    // A script just written may be "busy" for a moment: another test's
    // fork can still hold the descriptor it was written through (ETXTBSY).
    let mut tries = 0;
    let server = loop {
        match evdispatch_harness::start_ours(&cfg) {
            Ok(s) => break s,
            Err(e) if format!("{e:#}").contains("Text file busy") && tries < 20 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{e:#}"),
        }
    };
    assert_ne!(server.addr().port(), 0);
    TcpStream::connect(server.addr()).unwrap();
    let pid = server.pid();
    let stats = server
        .stop()
        .unwrap()
        .expect("statistics written on SIGTERM");
    assert_eq!(stats["args"], serde_json::json!(["--mechanism", "epoll"]));
    assert!(!alive(pid));
}
