//! A tiny configurable HTTP/1.1 server for tests, in this process (a thread
//! per connection): a fixed reply, optionally stalling every reply for a
//! while at a fixed period (a server pause, as in wrk2's coordinated-omission
//! demonstration), and optionally closing connections that stay idle.

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
}

impl Default for TestServerConfig {
    fn default() -> Self {
        TestServerConfig {
            body: 64,
            stall: None,
            idle_close: None,
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
        let reply = Arc::new(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n{}",
                cfg.body,
                "x".repeat(cfg.body)
            )
            .into_bytes(),
        );
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
    let mut chunk = [0u8; 4096];
    let mut last = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
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
        if let Some(t) = idle {
            if last.elapsed() >= t {
                stats.idle_closed.fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
    }
}
