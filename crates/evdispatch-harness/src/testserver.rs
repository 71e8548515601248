//! A tiny configurable HTTP/1.1 server for tests, in this process (a thread
//! per connection): a fixed reply, optionally stalling every reply for a
//! while at a fixed period (a server pause, as in wrk2's coordinated-omission
//! demonstration), and optionally closing connections that stay idle. It
//! speaks h2c by prior knowledge instead when asked (`http2`): its SETTINGS
//! and ACKs, PINGs answered, each request's stream answered with `:status
//! 200` and the body, no flow control of its own (bodies are small).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

/// What the test server does.
#[derive(Debug, Clone)]
pub struct TestServerConfig {
    /// Body length of every reply.
    pub body: usize,
    /// Every `period`, stop replying for `length` (all connections).
    pub stall: Option<(Duration, Duration)>,
    /// Close a connection on which no complete request arrived for this long.
    pub idle_close: Option<Duration>,
    /// Speak h2c (HTTP/2 by prior knowledge) instead of HTTP/1.1.
    pub http2: bool,
}

impl Default for TestServerConfig {
    fn default() -> Self {
        TestServerConfig {
            body: 64,
            stall: None,
            idle_close: None,
            http2: false,
        }
    }
}

/// What the test server counted.
#[derive(Debug, Default)]
pub struct TestStats {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// Requests answered.
    pub requests: AtomicU64,
    /// Connections closed by `idle_close`.
    pub idle_closed: AtomicU64,
    /// Stalls so far.
    pub stalls: AtomicU64,
    /// Source addresses of the connections accepted.
    pub sources: Mutex<BTreeSet<IpAddr>>,
}

/// A running test server; dropping it stops it.
pub struct TestServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    stats: Arc<TestStats>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl TestServer {
    /// Start on 127.0.0.1 with an ephemeral port.
    pub fn start(cfg: TestServerConfig) -> std::io::Result<TestServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stats = Arc::new(TestStats::default());
        let gate = Arc::new(Mutex::new(()));
        let mut threads = Vec::new();
        if let Some((period, length)) = cfg.stall {
            let (stop, gate, stats) = (stop.clone(), gate.clone(), stats.clone());
            threads.push(thread::spawn(move || {
                let t0 = Instant::now();
                let mut k = 1u32;
                while !stop.load(Ordering::Relaxed) {
                    let at = t0 + period * k;
                    sleep_until_or_stop(at - length.min(period), &stop);
                    let held = gate.lock();
                    stats.stalls.fetch_add(1, Ordering::Relaxed);
                    sleep_until_or_stop(at, &stop);
                    drop(held);
                    k += 1;
                }
            }));
        }
        let reply = Arc::new(if cfg.http2 {
            // Its stream id is written in before each reply is sent.
            h2_reply(cfg.body)
        } else {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
                cfg.body,
                "x".repeat(cfg.body)
            )
            .into_bytes()
        });
        {
            let (stop, stats) = (stop.clone(), stats.clone());
            threads.push(thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((s, peer)) => {
                            stats.accepted.fetch_add(1, Ordering::Relaxed);
                            if let Ok(mut set) = stats.sources.lock() {
                                set.insert(peer.ip());
                            }
                            let (stop, stats, gate, reply) =
                                (stop.clone(), stats.clone(), gate.clone(), reply.clone());
                            let idle = cfg.idle_close;
                            let serve = if cfg.http2 { serve_h2 } else { serve };
                            thread::spawn(move || serve(s, &stop, &stats, &gate, &reply, idle));
                        }
                        Err(_) => thread::sleep(Duration::from_millis(2)),
                    }
                }
            }));
        }
        Ok(TestServer {
            addr,
            stop,
            stats,
            threads,
        })
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Its counters.
    pub fn stats(&self) -> &TestStats {
        &self.stats
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn sleep_until_or_stop(t: Instant, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if now >= t {
            return;
        }
        thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

fn serve(
    mut s: TcpStream,
    stop: &AtomicBool,
    stats: &TestStats,
    gate: &Mutex<()>,
    reply: &[u8],
    idle: Option<Duration>,
) {
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = Vec::with_capacity(1024);
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if !read_some(&mut s, &mut buf) {
            return;
        }
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            buf.drain(..end + 4);
            drop(gate.lock());
            if s.write_all(reply).is_err() {
                return;
            }
            stats.requests.fetch_add(1, Ordering::Relaxed);
            last = Instant::now();
        }
        if idle_over(idle, last, stats) {
            return;
        }
    }
}

/// Read what came into `buf` (nothing within the read timeout is fine):
/// false when the connection ended.
fn read_some(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    match s.read(&mut chunk) {
        Ok(0) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
        Err(e) => matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// No complete request for `idle` since `last`: counted, and the
/// connection is to close.
fn idle_over(idle: Option<Duration>, last: Instant, stats: &TestStats) -> bool {
    let over = idle.is_some_and(|t| last.elapsed() >= t);
    if over {
        stats.idle_closed.fetch_add(1, Ordering::Relaxed);
    }
    over
}

/// An HTTP/2 frame header: length, type, flags, stream.
fn h2_head(len: usize, kind: u8, flags: u8, id: u32) -> [u8; 9] {
    let l = (len as u32).to_be_bytes();
    let i = id.to_be_bytes();
    [l[1], l[2], l[3], kind, flags, i[0], i[1], i[2], i[3]]
}

/// The HTTP/2 reply to a request: HEADERS (`:status 200`, HPACK's static
/// entry 0x88), then the body in DATA frames of at most 16 KiB, the last
/// with END_STREAM; stream id 0, set by [`h2_for_stream`].
fn h2_reply(body: usize) -> Vec<u8> {
    let mut r = h2_head(1, 1, 0x4, 0).to_vec();
    r.push(0x88);
    let body = vec![b'x'; body];
    let mut chunks = body.chunks(16_384).peekable();
    if chunks.peek().is_none() {
        r.extend_from_slice(&h2_head(0, 0, 0x1, 0));
    }
    while let Some(c) = chunks.next() {
        let end = if chunks.peek().is_none() { 0x1 } else { 0 };
        r.extend_from_slice(&h2_head(c.len(), 0, end, 0));
        r.extend_from_slice(c);
    }
    r
}

/// `reply` (from [`h2_reply`]) with every frame on stream `id`.
fn h2_for_stream(reply: &[u8], id: u32) -> Vec<u8> {
    let mut out = reply.to_vec();
    let mut at = 0;
    while at + 9 <= out.len() {
        let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
        out[at + 5..at + 9].copy_from_slice(&id.to_be_bytes());
        at += 9 + len;
    }
    out
}

/// [`serve`] over h2c: the preface, SETTINGS both ways, and a reply on each
/// stream whose request ended (END_STREAM on its HEADERS or DATA).
fn serve_h2(
    mut s: TcpStream,
    stop: &AtomicBool,
    stats: &TestStats,
    gate: &Mutex<()>,
    reply: &[u8],
    idle: Option<Duration>,
) {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    let _ = s.set_nodelay(true);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    if s.write_all(&h2_head(0, 4, 0, 0)).is_err() {
        return;
    }
    let mut buf = Vec::with_capacity(4096);
    let mut preface = false;
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if !read_some(&mut s, &mut buf) {
            return;
        }
        if !preface {
            if buf.len() < PREFACE.len() {
                continue;
            }
            if !buf.starts_with(PREFACE) {
                return;
            }
            buf.drain(..PREFACE.len());
            preface = true;
        }
        let mut at = 0;
        while buf.len() >= at + 9 {
            let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
            if buf.len() < at + 9 + len {
                break;
            }
            let (kind, flags) = (buf[at + 3], buf[at + 4]);
            let id = u32::from_be_bytes([buf[at + 5], buf[at + 6], buf[at + 7], buf[at + 8]])
                & 0x7fff_ffff;
            let payload = &buf[at + 9..at + 9 + len];
            let answer: Option<Vec<u8>> = match kind {
                // HEADERS or DATA ending the request: the reply.
                0 | 1 if flags & 0x1 != 0 => {
                    drop(gate.lock());
                    stats.requests.fetch_add(1, Ordering::Relaxed);
                    last = Instant::now();
                    Some(h2_for_stream(reply, id))
                }
                4 if flags & 0x1 == 0 => Some(h2_head(0, 4, 0x1, 0).to_vec()),
                6 if flags & 0x1 == 0 => {
                    let mut p = h2_head(8, 6, 0x1, 0).to_vec();
                    p.extend_from_slice(payload);
                    Some(p)
                }
                _ => None,
            };
            at += 9 + len;
            if let Some(a) = answer {
                if s.write_all(&a).is_err() {
                    return;
                }
            }
        }
        buf.drain(..at);
        if idle_over(idle, last, stats) {
            return;
        }
    }
}
