//! The thread-per-connection model (seed 004 §2.1, "pre-forked"): a master
//! thread accepts with a blocking `accept` and hands each connection to one
//! of a fixed pool of threads, which serves it with blocking reads and writes
//! until it closes.
//!
//! The pool is the bound. The hand-off is a rendezvous: the master accepts
//! only when a pool thread is free, so beyond the pool connections wait,
//! unaccepted, in the kernel's listen queue (`--backlog`), and past that the
//! kernel drops the handshakes and clients retry. A keep-alive connection
//! holds its thread while idle, which is exactly what the seeds held against
//! this model.

use std::io;
use std::net::TcpStream;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use crate::config::{Bound, ServerConfig};
use crate::conn::lifecycle::{self, AcceptFailure, Expiry, Phase, ACCEPT_RETRY, STOP_GRACE};
use crate::conn::stats::{Counters, WorkerReport};
use crate::conn::transport::{self, Tls, TLS_CHUNK};
use crate::content::response::{OutBatch, Responder};
use crate::sys;

/// A connection accepted, and whether it speaks TLS.
type Accepted = (OwnedFd, bool);

/// Start the master and the pool on the blocking listeners `bound` (the
/// master accepts on the first, an acceptor thread on each other one).
pub(crate) fn start(
    cfg: Arc<ServerConfig>,
    bound: Vec<Bound>,
    responder: Responder,
    stop: Arc<AtomicBool>,
) -> io::Result<JoinHandle<io::Result<WorkerReport>>> {
    let responder = Arc::new(Mutex::new(responder));
    let (tx, rx) = mpsc::sync_channel::<Accepted>(0);
    let rx = Arc::new(Mutex::new(rx));
    let active: Arc<Vec<Mutex<RawFd>>> =
        Arc::new((0..cfg.threads).map(|_| Mutex::new(-1)).collect());
    let open = Arc::new(OpenCount {
        max: cfg.max_connections,
        ..OpenCount::default()
    });
    let mut pool = Vec::with_capacity(cfg.threads);
    for i in 0..cfg.threads {
        let (rx, responder, active, cfg, stop, open) = (
            rx.clone(),
            responder.clone(),
            active.clone(),
            cfg.clone(),
            stop.clone(),
            open.clone(),
        );
        let h = thread::Builder::new()
            .name(format!("evd-conn-{i}"))
            .stack_size(128 * 1024)
            .spawn(move || pool_thread(i, &rx, &responder, &active, &cfg, &stop, &open))?;
        pool.push(h);
    }
    let mut bound = bound.into_iter();
    let first = bound.next().expect("a server has a listener");
    let mut acceptors = Vec::new();
    for (i, b) in bound.enumerate() {
        let (tx, stop, open) = (tx.clone(), stop.clone(), open.clone());
        let h = thread::Builder::new()
            .name(format!("evd-accept-{}", i + 1))
            .spawn(move || {
                let mut counters = Counters::default();
                accept_loop(&b, &tx, &stop, &open, &mut counters);
                counters
            })?;
        acceptors.push(h);
    }
    thread::Builder::new()
        .name("evd-master".into())
        .spawn(move || {
            let mut counters = Counters::default();
            accept_loop(&first, &tx, &stop, &open, &mut counters);
            drop(tx);
            for h in acceptors {
                if let Ok(c) = h.join() {
                    counters.merge(&c);
                }
            }
            master_stop(counters, pool, active, responder, open)
        })
}

/// Accept on `b` and hand each connection to the pool until `stop`.
fn accept_loop(
    b: &Bound,
    tx: &mpsc::SyncSender<Accepted>,
    stop: &AtomicBool,
    open: &OpenCount,
    counters: &mut Counters,
) {
    let listener = &b.listener;
    let mut paused = false;
    while !stop.load(Ordering::Acquire) {
        // At the connection cap, wait for a connection to end before
        // taking another.
        if open.now.load(Ordering::Relaxed) >= open.max {
            if !paused {
                counters.accept_pauses += 1;
                paused = true;
            }
            thread::sleep(Duration::from_millis(10));
            continue;
        }
        paused = false;
        match sys::accept(listener.as_raw_fd(), true) {
            Ok(fd) => {
                // Counted open from here (a pool thread ends the count).
                let now_open = open.now.fetch_add(1, Ordering::Relaxed) + 1;
                open.peak.fetch_max(now_open, Ordering::Relaxed);
                counters.accepted += 1;
                counters.wakeups += 1;
                counters.listener_events += 1;
                if tx.send((fd, b.tls)).is_err() {
                    break;
                }
            }
            Err(e) => {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let errno = e.raw_os_error().unwrap_or(0);
                match lifecycle::accept_failure(errno, counters) {
                    AcceptFailure::Empty | AcceptFailure::Again | AcceptFailure::Next => {}
                    AcceptFailure::Pause => {
                        counters.accept_pauses += 1;
                        thread::sleep(ACCEPT_RETRY);
                    }
                    AcceptFailure::GiveUp => {
                        // Not expected to repeat; but never spin on it.
                        thread::sleep(Duration::from_millis(1));
                    }
                }
            }
        }
    }
}

/// The master's stop, once every accept loop has ended: the pool's
/// connections wound down, its threads joined, the report.
fn master_stop(
    mut counters: Counters,
    pool: Vec<JoinHandle<Counters>>,
    active: Arc<Vec<Mutex<RawFd>>>,
    responder: Arc<Mutex<Responder>>,
    open: Arc<OpenCount>,
) -> io::Result<WorkerReport> {
    // Wake threads blocked reading idle connections: their reads see EOF,
    // while responses being written still go out.
    shutdown_active(&active, libc::SHUT_RD);
    // Busy ones get the grace of every model, then are cut off.
    let deadline = Instant::now() + STOP_GRACE;
    while open.now.load(Ordering::Relaxed) > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    shutdown_active(&active, libc::SHUT_RDWR);
    for h in pool {
        // A thread stuck writing to a client that does not read ends with
        // its send timeout; wait for it.
        if let Ok(c) = h.join() {
            counters.merge(&c);
        }
    }
    let cache = crate::sys::lock(&responder).store.stats();
    counters.peak_open = open.peak.load(Ordering::Relaxed) as u64;
    Ok(WorkerReport {
        worker: 0,
        cpu: None,
        counters,
        poller: serde_json::json!({}),
        cache,
    })
}

/// `shutdown(how)` on every connection a pool thread serves now.
fn shutdown_active(active: &[Mutex<RawFd>], how: libc::c_int) {
    for slot in active {
        let fd = *crate::sys::lock(slot);
        if fd >= 0 {
            sys::shutdown(fd, how);
        }
    }
}

fn pool_thread(
    me: usize,
    rx: &Mutex<mpsc::Receiver<Accepted>>,
    responder: &Mutex<Responder>,
    active: &[Mutex<RawFd>],
    cfg: &ServerConfig,
    stop: &AtomicBool,
    open: &OpenCount,
) -> Counters {
    let mut counters = Counters::default();
    let mut buf = vec![0u8; cfg.max_header].into_boxed_slice();
    let mut out = OutBatch::new();
    let mut chunk = vec![0u8; if cfg.tls.is_some() { TLS_CHUNK } else { 0 }];
    loop {
        let (fd, tls) = {
            let rx = crate::sys::lock(rx);
            match rx.recv() {
                Ok(a) => a,
                Err(_) => break,
            }
        };
        *crate::sys::lock(&active[me]) = fd.as_raw_fd();
        let stream = TcpStream::from(fd);
        let tls = Tls::accept(cfg.tls.as_ref().filter(|_| tls).map(|t| &t.server));
        if let (false, Ok(mut tls)) = (stop.load(Ordering::Acquire), tls) {
            let mut io = Io {
                stream: &stream,
                tls: &mut tls,
                chunk: &mut chunk,
            };
            serve(
                &mut io,
                &mut buf,
                &mut out,
                responder,
                cfg,
                &mut counters,
                stop,
            );
            transport::close_notify(io.tls, stream.as_raw_fd());
        }
        // Close under the lock, so the master never shuts down a reused number.
        let mut slot = crate::sys::lock(&active[me]);
        drop(stream);
        *slot = -1;
        open.now.fetch_sub(1, Ordering::Relaxed);
        counters.closed += 1;
    }
    counters
}

/// Connections being served now, and the most at once.
#[derive(Default)]
struct OpenCount {
    now: AtomicUsize,
    peak: AtomicUsize,
    /// The connection cap.
    max: usize,
}

/// A connection's socket and transport.
struct Io<'a> {
    stream: &'a TcpStream,
    /// The TLS state of an HTTPS connection.
    tls: &'a mut Option<Box<Tls>>,
    /// A file's bytes on their way to the cipher (HTTPS only).
    chunk: &'a mut [u8],
}

impl Io<'_> {
    /// Send `out` (blocking, up to the send timeout): `Ok(false)` when the
    /// timeout cut it short.
    fn send(&mut self, out: &mut OutBatch) -> io::Result<bool> {
        let fd = self.stream.as_raw_fd();
        transport::send(self.tls, out, fd, self.chunk)
    }
}

fn serve(
    io: &mut Io<'_>,
    buf: &mut [u8],
    out: &mut OutBatch,
    responder: &Mutex<Responder>,
    cfg: &ServerConfig,
    counters: &mut Counters,
    stop: &AtomicBool,
) {
    let stream = io.stream;
    let fd = stream.as_raw_fd();
    let _ = stream.set_write_timeout(Some(cfg.idle_timeout));
    let mut start = 0usize;
    let mut end = 0usize;
    // The first request's header clock starts at accept.
    let mut request_began = Some(Instant::now());
    let mut current_timeout = Duration::ZERO;
    loop {
        // The header timeout is a deadline: a read waits for what is left
        // of it (a client trickling a byte now and then must not restart
        // it), and none left is the timeout.
        let want = match request_began {
            Some(t) => cfg.header_timeout.checked_sub(t.elapsed()),
            None => Some(cfg.idle_timeout),
        };
        let read = match want.filter(|w| !w.is_zero()) {
            Some(want) => {
                let slack = if request_began.is_some() {
                    READ_SLACK
                } else {
                    Duration::ZERO
                };
                if let Some(set) = read_timeout(current_timeout, want, slack) {
                    let _ = stream.set_read_timeout(Some(set));
                    current_timeout = set;
                }
                if start > 0 {
                    buf.copy_within(start..end, 0);
                    end -= start;
                    start = 0;
                }
                if let Some(t) = io.tls.as_deref_mut() {
                    t.set_deadline(Instant::now() + want);
                }
                transport::recv(io.tls, fd, &mut buf[end..], counters)
            }
            None => Err(io::ErrorKind::TimedOut.into()),
        };
        let n = match read {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e)
                if e.kind() == io::ErrorKind::WouldBlock || e.kind() == io::ErrorKind::TimedOut =>
            {
                if request_began.is_some_and(|t| t.elapsed() < cfg.header_timeout) {
                    // Woken up to READ_SLACK before the deadline: wait for
                    // the rest of it.
                    continue;
                }
                let phase = match request_began {
                    Some(_) if transport::handshaking(io.tls) => Phase::Handshake {
                        hello: transport::hello_received(io.tls),
                    },
                    Some(_) => Phase::Request {
                        some_input: end > start,
                    },
                    None => Phase::Idle,
                };
                expired(phase, io, buf, start..end, responder, out, counters, stop);
                return;
            }
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                // The TLS connection failed, counted and answered: close
                // after a linger, so the answer is not reset.
                lifecycle::linger_blocking(stream, buf);
                return;
            }
            Err(_) => {
                counters.client_errors += 1;
                return;
            }
        };
        if request_began.is_none() {
            request_began = Some(Instant::now());
        }
        end += n;
        // Answer the complete requests, a batch at a time, all of them
        // before reading again (the client may be waiting for them).
        let mut answered_any = false;
        loop {
            let (close, answered) = {
                let mut r = crate::sys::lock(responder);
                r.set_time(SystemTime::now());
                let closing = stop.load(Ordering::Relaxed);
                let via = transport::via(io.tls, fd);
                let a = r.answer(
                    &buf[start..end],
                    cfg.max_header,
                    out,
                    closing,
                    counters,
                    via,
                );
                start += a.consumed;
                (a.close, a.answered)
            };
            answered_any |= answered > 0;
            if !out.is_empty() {
                // A close follows at once (linger half-closes): its FIN
                // rides on the last segment.
                out.set_last(close);
                let sent = io.send(out);
                counters.bytes_sent += std::mem::take(&mut out.written);
                match sent {
                    Ok(true) => out.clear(),
                    Ok(false) => {
                        // A blocking send came back short: the send timeout.
                        out.clear();
                        let (phase, none) = (Phase::Sending, 0..0);
                        expired(phase, io, buf, none, responder, out, counters, stop);
                        return;
                    }
                    Err(_) => {
                        counters.client_errors += 1;
                        out.clear();
                        return;
                    }
                }
            }
            if close {
                transport::close_notify(io.tls, fd);
                *io.tls = None;
                lifecycle::linger_blocking(stream, buf);
                return;
            }
            if answered == 0 || start == end {
                break;
            }
        }
        if answered_any {
            // The next request's clock starts when the answers are out, as
            // in the other models (`arm_after_response`, `after_send`): a
            // pipelined head that began during a long send is not already
            // late. With nothing left, the idle timeout applies.
            request_began = (start < end).then(Instant::now);
        }
    }
}

/// How much earlier than the header deadline a read may time out (it is
/// then read again for the rest): a head that arrives in several reads
/// within this time costs one `setsockopt` for its read timeout, not one
/// per read.
const READ_SLACK: Duration = Duration::from_millis(50);

/// The read timeout to set before a read that may wait `want`, given the
/// one set now (`current`), or `None` to keep it: kept while it is no
/// longer than `want` and at most `slack` shorter, so a read never waits
/// past the deadline and wakes at most `slack` early; otherwise `want`
/// less the slack (all of `want` when that is less than the slack).
fn read_timeout(current: Duration, want: Duration, slack: Duration) -> Option<Duration> {
    let low = match want.checked_sub(slack) {
        Some(low) if !low.is_zero() => low,
        _ => want,
    };
    (current > want || current < low).then_some(low)
}

/// A timeout met in `phase`: counted, and for a partial request (in
/// `buf[partial]`) a 408 followed by the lingering close, as in every model.
#[allow(clippy::too_many_arguments)]
fn expired(
    phase: Phase,
    io: &mut Io<'_>,
    buf: &mut [u8],
    partial: std::ops::Range<usize>,
    responder: &Mutex<Responder>,
    out: &mut OutBatch,
    counters: &mut Counters,
    stop: &AtomicBool,
) {
    let stopping = stop.load(Ordering::Relaxed);
    if lifecycle::expire(phase, stopping, counters) == Expiry::RequestTimeout {
        let mut r = crate::sys::lock(responder);
        // The Date of the 408 (and the log's time) is now, not the last
        // read's.
        r.set_time(SystemTime::now());
        r.timed_out(
            out,
            transport::via(io.tls, io.stream.as_raw_fd()),
            &buf[partial],
        );
        drop(r);
        out.set_last(true);
        let _ = io.send(out);
        out.clear();
        lifecycle::linger_blocking(io.stream, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_timeouts_are_set_rarely_and_never_past_the_deadline() {
        let ms = Duration::from_millis;
        let slack = READ_SLACK;
        // A head arriving in pieces: set once, kept while what is left
        // stays within the slack above it.
        let first = read_timeout(ms(10_000), ms(5_000), slack).unwrap();
        assert_eq!(first, ms(5_000) - slack);
        for left in [ms(4_999), ms(4_980), ms(4_950)] {
            assert_eq!(read_timeout(first, left, slack), None, "{left:?}");
        }
        // Less left than the timeout set: set again, never longer.
        assert_eq!(
            read_timeout(first, ms(4_949), slack),
            Some(ms(4_949) - slack)
        );
        // The last stretch: exactly what is left.
        assert_eq!(read_timeout(ms(100), slack, slack), Some(slack));
        assert_eq!(read_timeout(ms(100), ms(3), slack), Some(ms(3)));
        assert_eq!(read_timeout(ms(3), ms(3), slack), None);
        // Without slack (the idle timeout): exactly `want`, kept when equal.
        assert_eq!(
            read_timeout(ms(4_000), ms(60_000), Duration::ZERO),
            Some(ms(60_000))
        );
        assert_eq!(read_timeout(ms(60_000), ms(60_000), Duration::ZERO), None);
        // Whatever is set or kept never exceeds what is left.
        for current in (0..300).map(|i| ms(i * 7)) {
            for want in (1..300).map(|i| ms(i * 5)) {
                let used = read_timeout(current, want, slack).unwrap_or(current);
                assert!(used <= want && used + slack >= want, "{current:?} {want:?}");
            }
        }
    }
}
