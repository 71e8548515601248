//! The harness starts each peer server, it answers, and stopping (or
//! dropping) it leaves no process behind.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use evdispatch_harness::{
    docroot, skip_reason, start_peer, LighttpdEvents, Peer, PeerConfig, TestServer,
    TestServerConfig,
};

fn get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purposes; a live process has a stat line with a state other than Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'))
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
    assert!(reply.ends_with(&"abcdefghijklmnopqrstuvwxyz"[..10]), "{peer:?}: body");
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
    assert!(s.stats().idle_closed.load(std::sync::atomic::Ordering::Relaxed) >= 1);
}
