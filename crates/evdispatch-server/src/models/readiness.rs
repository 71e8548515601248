//! The readiness model: one event loop per worker over a [`Poller`], the
//! mechanism chosen at run time. The connection state machine below is
//! written once against the Poller contract (events are hints; act until the
//! kernel says "no more") and never asks which mechanism it runs on.
//!
//! What "no more" means for a stream socket. The contract counts a read that
//! returns fewer bytes than asked as good as `EAGAIN` (it emptied the
//! receive queue; whatever arrives later is reported, on every mechanism,
//! edge-triggered ones included), so a short read ends the turn and the
//! second `read` that would only collect `EAGAIN` is never made. The one
//! exception is an event that says the peer has shut down its side: its EOF
//! may be queued behind the data, so the loop reads on until EOF. A complete
//! gathered write never waits for a writability event at all.
//!
//! Memory per connection: a slab entry (a few dozen bytes) and a timer-wheel
//! link. A read buffer is taken from a pool when data arrives and given back
//! as soon as no partial request is left in it, so idle connections hold
//! none; a connection left holding a short partial request (a slow client's
//! first bytes) moves it to a small buffer of its own, so thousands of slow
//! clients cost a kilobyte each rather than `--max-header`. Output is
//! written straight from a per-worker batch and only copied into a
//! per-connection box when the socket is full.
//!
//! # What a plain keep-alive request costs
//!
//! A `GET` of a small file on a persistent plain-HTTP connection, in the
//! steady state, costs:
//!
//! * **System calls: one `recv` and one `sendmsg`.** The wait that
//!   reported the socket is shared by every connection ready in that turn;
//!   a short read counts as drained (no `recv` for `EAGAIN`); the response
//!   head and the cached body go out in one gathered `sendmsg` (`sendfile`
//!   after the head for a file too large for the cache). No `open`, `stat`
//!   or `clock_gettime` per request: a cached file is checked against the
//!   disk (`openat2`, `fstat`) at most once a second, the clocks are read
//!   through the vDSO once per turn, and the `Date` line is formatted once
//!   a second ([`DateCache`](crate::content::response::DateCache)).
//! * **No allocation.** The read buffer comes from the worker's pool and
//!   goes back when drained; the head is written into the worker's reused
//!   batch buffer; the body is the cached bytes (an `Arc` clone, no copy);
//!   the file the last request found is answered again without hashing
//!   its path ([`FileStore`](crate::content::files::FileStore)).
//! * **The request**: httparse and the checks of
//!   [`parse_request`](crate::parse_request) (byte classes are table
//!   lookups); a target with nothing to decode and no dot or empty segment
//!   is taken as it is, in one pass
//!   ([`normalize_target`](crate::normalize_target)).
//! * **The response head**: the status line, `Server`, the cached `Date`
//!   line and the file's entity headers prebuilt when it was cached
//!   (`Content-Type`, `Content-Length`, `Last-Modified`, `ETag`,
//!   `Accept-Ranges`), copied; conditionals, ranges and variants leave this
//!   path only when the request carries them (or the file has variants).
//! * **Timers**: the idle deadline is moved later in place (no relinking in
//!   the wheel); the header deadline is armed only for a request that is
//!   not answered at once.
//! * **TLS and the access log** cost a branch each when off: the transport
//!   is `None` for a plain connection ([`transport`]), and without
//!   `--access-log` nothing is formatted. Over TLS the request still costs
//!   one `recv`: a short read counts as drained when the transport says
//!   the socket was emptied under it
//!   ([`short_read_drains`](transport::short_read_drains)).
//!
//! `evdispatch bench server` compares this with the floor (a canned
//! response from memory, `floor-epoll`): server CPU per request as a
//! multiple of the floor's.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use evdispatch::{Events, Interest, Poller, Token, Waker};

use crate::config::{AcceptMode, Bound, ServerConfig};
use crate::conn::lifecycle::{self, AcceptFailure, Expiry, Gate, Phase, LINGER, LINGER_MAX_BYTES};
use crate::conn::stats::{Counters, TurnMeter, WorkerReport};
use crate::conn::timer::TimerWheel;
use crate::conn::transport::{self, Tls, TLS_CHUNK};
use crate::content::response::{OutBatch, Responder};
use crate::sys;

const WAKER: Token = Token(usize::MAX - 1);
/// Listener `i`'s token is `LISTENERS - i`; connections' tokens (their
/// table slots) stay far below.
const LISTENERS: usize = usize::MAX - 2;
/// Most listeners (`--listen` addresses) a worker watches.
const MAX_LISTENERS: usize = 64;

/// The token of listener `i`.
fn listener_token(i: usize) -> Token {
    Token(LISTENERS - i)
}

/// Which listener a token is, if one.
fn listener_of(t: Token, listeners: usize) -> Option<usize> {
    let i = LISTENERS.checked_sub(t.0)?;
    (t.0 <= LISTENERS && i < listeners).then_some(i)
}

/// A listening socket of the worker.
struct Listening {
    listener: Arc<TcpListener>,
    /// Its connections speak TLS.
    tls: bool,
    /// Not known to be drained: accept again before waiting.
    hot: bool,
    /// Reported ready by the last wait.
    ready: bool,
}
/// Read buffers kept for reuse.
const POOL_KEEP: usize = 256;
/// The buffer a short partial request moves to when its connection has been
/// drained (nginx starts a request at 1 KiB too); it grows back to
/// `--max-header` when it fills.
const SMALL_BUF: usize = 1024;
/// Most connections accepted in one turn of the loop (more waiting: the
/// listener stays hot and the next turn, after serving what is ready, goes
/// on), so a burst of connections does not hold up the open ones.
const ACCEPT_BATCH: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Lingering,
}

/// One slab entry. Kept small: an idle connection is this and its timer link.
#[derive(Debug)]
struct Conn {
    sock: Option<OwnedFd>,
    state: State,
    /// Known to the poller (a connection answered by the eager read and
    /// closed never is).
    registered: bool,
    /// The last read emptied the socket's receive queue (a short read or
    /// `EAGAIN`) and no EOF is known to wait behind it: the mechanism will
    /// report what comes next.
    drained: bool,
    /// The last read emptied the receive queue (a short read or `EAGAIN`):
    /// nothing unread is known, so a close sends no reset.
    emptied: bool,
    /// A request has begun (or the connection is new) and is not complete:
    /// the header deadline applies.
    partial: bool,
    /// Close once the pending output is written.
    close_after: bool,
    /// Registered for writability (output pending) instead of readability.
    writing: bool,
    /// Drain the client's input for a while before closing (after an error).
    linger_after: bool,
    start: u32,
    end: u32,
    buf: Option<Box<[u8]>>,
    out: Option<Box<OutBatch>>,
    /// The TLS state of an HTTPS connection.
    tls: Option<Box<Tls>>,
}

impl Conn {
    const FREE: Conn = Conn {
        sock: None,
        state: State::Free,
        registered: false,
        drained: true,
        emptied: true,
        partial: false,
        close_after: false,
        writing: false,
        linger_after: false,
        start: 0,
        end: 0,
        buf: None,
        out: None,
        tls: None,
    };

    #[inline]
    fn fd(&self) -> RawFd {
        self.sock.as_ref().map_or(-1, |s| s.as_raw_fd())
    }
}

enum Flow {
    /// Carry on (all output written).
    Done,
    /// Output is pending; wait for writability.
    Blocked,
    /// The connection was closed (or is lingering).
    Closed,
}

pub(crate) struct Worker {
    index: usize,
    cpu: Option<usize>,
    cfg: Arc<ServerConfig>,
    poller: Poller,
    conns: Vec<Conn>,
    free: Vec<u32>,
    open: usize,
    wheel: TimerWheel,
    fired: Vec<usize>,
    pool: Vec<Box<[u8]>>,
    batch: Box<OutBatch>,
    // Boxed: a batch moves whole into a blocked connection (one pointer).
    #[allow(clippy::vec_box)]
    spare: Vec<Box<OutBatch>>,
    responder: Responder,
    counters: Counters,
    listeners: Vec<Listening>,
    listener_interest: Interest,
    /// Every listener is registered (they are registered and deregistered
    /// together).
    listener_registered: bool,
    stop: Arc<AtomicBool>,
    /// Accept pauses and the graceful stop.
    gate: Gate,
    now: Instant,
    scratch: Box<[u8]>,
    /// A file's bytes on their way to the cipher (HTTPS only; empty
    /// otherwise).
    tls_chunk: Box<[u8]>,
    /// The mechanism's descriptor ceiling (select).
    max_fd: Option<RawFd>,
    /// Recent success of eager reads (0: they found nothing lately).
    eager_score: u8,
    accepted_since_probe: u32,
    /// Set by `serve` when a read returned data.
    read_got_data: bool,
}

impl Worker {
    /// Build the worker: poller, waker, listener registration. Run on the
    /// worker's own thread (RT-signal pollers belong to their thread).
    pub(crate) fn new(
        index: usize,
        cpu: Option<usize>,
        cfg: Arc<ServerConfig>,
        bound: Vec<Bound>,
        shared_listener: bool,
        responder: Responder,
        stop: Arc<AtomicBool>,
    ) -> io::Result<(Worker, Waker)> {
        let mechanism = cfg.poller.mechanism;
        let mut poller = Poller::with_config(cfg.poller.clone())?;
        let waker = poller.waker(WAKER)?;
        let mut interest = Interest::READABLE;
        if shared_listener && cfg.exclusive && mechanism.info().exclusive {
            interest = interest.exclusive();
        }
        if bound.len() > MAX_LISTENERS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("at most {MAX_LISTENERS} --listen addresses"),
            ));
        }
        for (i, b) in bound.iter().enumerate() {
            poller.register(b.listener.as_raw_fd(), listener_token(i), interest)?;
        }
        let listeners = bound
            .into_iter()
            .map(|b| Listening {
                listener: b.listener,
                tls: b.tls,
                hot: false,
                ready: false,
            })
            .collect();
        let reserve = cfg.table_reserve();
        let worker = Worker {
            index,
            cpu,
            poller,
            conns: Vec::with_capacity(reserve),
            free: Vec::with_capacity(reserve),
            open: 0,
            wheel: TimerWheel::with_capacity(Duration::from_millis(10), reserve),
            fired: Vec::new(),
            pool: Vec::new(),
            batch: Box::new(OutBatch::new()),
            spare: Vec::new(),
            responder,
            counters: Counters::default(),
            listeners,
            listener_interest: interest,
            listener_registered: true,
            stop,
            gate: Gate::default(),
            now: Instant::now(),
            scratch: vec![0u8; 4096].into_boxed_slice(),
            tls_chunk: vec![0u8; if cfg.tls.is_some() { TLS_CHUNK } else { 0 }].into_boxed_slice(),
            max_fd: mechanism.info().max_fd,
            eager_score: 8,
            accepted_since_probe: 0,
            read_got_data: false,
            cfg,
        };
        Ok((worker, waker))
    }

    /// The event loop; returns the worker's report when stopped.
    pub(crate) fn run(mut self) -> io::Result<WorkerReport> {
        let mut events = Events::with_capacity(1024);
        let mut turn = TurnMeter::default();
        loop {
            let now = Instant::now();
            turn.end(self.now, now, &mut self.counters);
            let timeout = self.wait_timeout(now);
            self.poller.wait(&mut events, timeout)?;
            self.now = Instant::now();
            turn.begin(events.len(), &self.counters);
            self.responder.set_time(SystemTime::now());
            if !events.is_empty() {
                self.counters.wakeups += 1;
            }
            let mut listener_ready = false;
            for ev in events.iter() {
                match ev.token() {
                    WAKER => {}
                    t => match listener_of(t, self.listeners.len()) {
                        Some(i) => {
                            self.counters.listener_events += 1;
                            self.listeners[i].ready = true;
                            listener_ready = true;
                        }
                        None => self.conn_event(t.0, ev.is_readable(), ev.is_read_closed()),
                    },
                }
            }
            if self.gate.resume_due(self.now) {
                self.resume_accept();
            }
            if (listener_ready || self.any_hot()) && !self.gate.stopping() {
                for i in 0..self.listeners.len() {
                    let l = &mut self.listeners[i];
                    let reported = std::mem::take(&mut l.ready);
                    if reported || l.hot {
                        self.accept_some(i, reported);
                    }
                }
            }
            turn.expired(self.expire_timers());
            if !self.gate.stopping() && self.stop.load(Ordering::Acquire) {
                self.begin_stop();
            }
            if self.gate.finished(self.open, self.now) {
                break;
            }
        }
        for idx in 0..self.conns.len() {
            if self.conns[idx].state != State::Free {
                self.close(idx);
            }
        }
        let poller = serde_json::to_value(self.poller.stats()).unwrap_or_default();
        Ok(WorkerReport {
            worker: self.index,
            cpu: self.cpu,
            counters: self.counters,
            poller,
            cache: self.responder.store.stats(),
        })
    }

    /// Some listener is not known to be drained.
    fn any_hot(&self) -> bool {
        self.listeners.iter().any(|l| l.hot)
    }

    fn set_hot(&mut self, hot: bool) {
        for l in &mut self.listeners {
            l.hot = hot;
        }
    }

    fn wait_timeout(&self, now: Instant) -> Option<Duration> {
        if self.any_hot() && !self.gate.stopping() {
            return Some(Duration::ZERO);
        }
        self.gate.wait_timeout(self.wheel.timeout(now), now)
    }

    // ---- accepting ------------------------------------------------------

    /// Accept on listener `i` (`reported`: the mechanism said it is
    /// ready).
    fn accept_some(&mut self, i: usize, reported: bool) {
        if !self.listener_registered {
            return;
        }
        let one = self.cfg.accept == AcceptMode::One;
        let mut first = true;
        let mut accepted = 0;
        loop {
            if self.open >= self.cfg.max_open_per_worker() {
                self.pause_accept();
                return;
            }
            if accepted == ACCEPT_BATCH {
                self.listeners[i].hot = true;
                return;
            }
            match sys::accept(self.listeners[i].listener.as_raw_fd(), false) {
                Ok(fd) => {
                    first = false;
                    accepted += 1;
                    self.counters.accepted += 1;
                    self.add_conn(fd, self.listeners[i].tls);
                    if one {
                        // Not known to be drained: come back after the next
                        // wait even if the mechanism reports nothing new.
                        self.listeners[i].hot = true;
                        return;
                    }
                }
                Err(e) => {
                    let errno = e.raw_os_error().unwrap_or(0);
                    match lifecycle::accept_failure(errno, &mut self.counters) {
                        AcceptFailure::Empty => {
                            if first && reported {
                                self.counters.listener_empty += 1;
                            }
                            self.listeners[i].hot = false;
                            return;
                        }
                        AcceptFailure::Again | AcceptFailure::Next => continue,
                        AcceptFailure::Pause => {
                            self.pause_accept();
                            return;
                        }
                        AcceptFailure::GiveUp => {
                            self.listeners[i].hot = false;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Stop watching the listener (so a level-triggered mechanism does not
    /// report it at every wait) until a connection closes or the retry timer.
    fn pause_accept(&mut self) {
        self.deregister_listeners();
        self.gate.pause(self.now, &mut self.counters);
    }

    /// Stop watching every listener.
    fn deregister_listeners(&mut self) {
        self.set_hot(false);
        if self.listener_registered {
            for l in &self.listeners {
                let _ = self.poller.deregister(l.listener.as_raw_fd());
            }
            self.listener_registered = false;
        }
    }

    fn resume_accept(&mut self) {
        self.gate.resumed();
        if self.listener_registered || self.gate.stopping() {
            return;
        }
        let mut registered = 0;
        for (i, l) in self.listeners.iter().enumerate() {
            let fd = l.listener.as_raw_fd();
            if self
                .poller
                .register(fd, listener_token(i), self.listener_interest)
                .is_err()
            {
                break;
            }
            registered += 1;
        }
        if registered == self.listeners.len() {
            self.listener_registered = true;
            // Connections may be waiting already: try at once.
            self.set_hot(true);
        } else {
            for l in &self.listeners[..registered] {
                let _ = self.poller.deregister(l.listener.as_raw_fd());
            }
            self.gate.retry_later(self.now);
        }
    }

    /// A connection accepted on a listener that speaks TLS when `tls`.
    fn add_conn(&mut self, fd: OwnedFd, tls: bool) {
        if self.max_fd.is_some_and(|m| fd.as_raw_fd() >= m) {
            // Beyond what the mechanism can watch (select): refuse at once.
            self.counters.register_errors += 1;
            self.counters.closed += 1;
            return;
        }
        let idx = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.conns.push(Conn::FREE);
                self.conns.len() - 1
            }
        };
        let config = self.cfg.tls.as_ref().filter(|_| tls).map(|t| &t.server);
        let Ok(tls) = Tls::accept(config) else {
            self.counters.closed += 1;
            self.free.push(idx as u32);
            return;
        };
        self.conns[idx] = Conn {
            sock: Some(fd),
            state: State::Open,
            drained: false,
            emptied: false,
            partial: true,
            tls,
            ..Conn::FREE
        };
        self.open += 1;
        self.counters.peak_open = self.counters.peak_open.max(self.open as u64);
        self.wheel.set(idx, self.now + self.cfg.header_timeout);
        // Eager read: the client usually sends its request right after the
        // handshake, so it is often there already; answering it before
        // registering saves the registration (and, for a one-request
        // connection, the deregistration) and a wait. Where it keeps
        // finding nothing (idle clients), it is tried only now and then.
        self.accepted_since_probe = self.accepted_since_probe.wrapping_add(1);
        if self.cfg.eager_read && (self.eager_score > 0 || self.accepted_since_probe & 15 == 0) {
            self.read_got_data = false;
            self.serve(idx, true, false);
            // Over TLS a ClientHello found is what counts (the request
            // comes after the handshake).
            let tls_input = transport::hello_received(&self.conns[idx].tls);
            if self.read_got_data || tls_input {
                self.eager_score = (self.eager_score + 1).min(8);
            } else {
                self.eager_score = self.eager_score.saturating_sub(2);
            }
        }
        let c = &self.conns[idx];
        if c.state != State::Free && !c.registered {
            let interest = if c.writing {
                Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if self.poller.register(c.fd(), Token(idx), interest).is_ok() {
                self.conns[idx].registered = true;
            } else {
                self.counters.register_errors += 1;
                self.close(idx);
            }
        }
    }

    /// Change a connection's interest (only once it is registered; before
    /// that, `add_conn` registers with the interest the flags say).
    fn set_interest(&mut self, idx: usize, interest: Interest) {
        let c = &self.conns[idx];
        if c.registered {
            let _ = self.poller.modify(c.fd(), Token(idx), interest);
        }
    }

    // ---- connections ----------------------------------------------------

    fn conn_event(&mut self, idx: usize, readable: bool, read_closed: bool) {
        let Some(c) = self.conns.get(idx) else {
            return;
        };
        match c.state {
            State::Free => {}
            State::Lingering => self.linger_read(idx),
            State::Open => {
                if c.out.is_some() && !self.flush(idx) {
                    return;
                }
                let c = &self.conns[idx];
                if c.state == State::Open {
                    let may_read = readable || read_closed || !c.drained;
                    self.serve(idx, may_read, read_closed);
                }
            }
        }
    }

    /// Write pending output. True when nothing is pending any more and the
    /// connection is still open.
    fn flush(&mut self, idx: usize) -> bool {
        let c = &mut self.conns[idx];
        let fd = c.fd();
        let mut out = c.out.take().expect("pending output");
        let sent = transport::send(&mut c.tls, &mut out, fd, &mut self.tls_chunk);
        self.counters.bytes_sent += std::mem::take(&mut out.written);
        match sent {
            Ok(true) => {
                out.clear();
                if self.spare.len() < 64 {
                    self.spare.push(out);
                }
                let c = &mut self.conns[idx];
                if c.writing {
                    c.writing = false;
                    self.set_interest(idx, Interest::READABLE);
                }
                if self.conns[idx].close_after {
                    self.finish_close(idx);
                    return false;
                }
                if !transport::handshaking(&self.conns[idx].tls) {
                    self.arm_after_response(idx);
                }
                true
            }
            Ok(false) => {
                self.conns[idx].out = Some(out);
                self.wheel.set(idx, self.now + self.cfg.idle_timeout);
                false
            }
            Err(_) => {
                self.counters.client_errors += 1;
                self.close(idx);
                false
            }
        }
    }

    /// Read and answer until the socket is drained or output blocks.
    /// `read_closed`: the event said the peer has shut down its side; its
    /// EOF may already be queued behind the data, and an edge-triggered
    /// mechanism will not report it again, so a short read does not count
    /// as drained: read on until EOF.
    fn serve(&mut self, idx: usize, mut may_read: bool, read_closed: bool) {
        loop {
            let c = &self.conns[idx];
            if c.end > c.start {
                match self.process(idx) {
                    Flow::Done => {}
                    Flow::Blocked | Flow::Closed => return,
                }
            }
            if !may_read {
                return;
            }
            let mut buf = match self.conns[idx].buf.take() {
                Some(b) => b,
                None => self.full_buffer(),
            };
            let c = &mut self.conns[idx];
            if c.start > 0 {
                buf.copy_within(c.start as usize..c.end as usize, 0);
                c.end -= c.start;
                c.start = 0;
            }
            if c.end as usize == buf.len() && buf.len() < self.cfg.max_header {
                // A small buffer is full: back to a full-size one.
                let n = c.end as usize;
                let mut big = self.full_buffer();
                big[..n].copy_from_slice(&buf[..n]);
                buf = big;
            }
            let c = &mut self.conns[idx];
            let space = buf.len() - c.end as usize;
            let fd = c.fd();
            let got = transport::recv(
                &mut c.tls,
                fd,
                &mut buf[c.end as usize..],
                &mut self.counters,
            );
            let c = &mut self.conns[idx];
            match got {
                Ok(0) => {
                    c.buf = Some(buf);
                    // EOF: the client is done (half-close after its last
                    // request is fine: everything was answered above).
                    self.close(idx);
                    return;
                }
                Ok(n) => {
                    self.read_got_data = true;
                    // A new request begins on an idle connection. Its
                    // header deadline is armed below only if it is not
                    // answered at once (the usual keep-alive request is,
                    // and its answer arms the idle deadline instead).
                    let began = c.end == 0 && !c.partial;
                    c.partial |= began;
                    c.end += n as u32;
                    // Over TLS a short read empties the socket only when
                    // the transport says so; else read on until WouldBlock.
                    c.emptied = n < space && transport::short_read_drains(&c.tls);
                    c.drained = c.emptied && !read_closed;
                    may_read = !c.drained;
                    c.buf = Some(buf);
                    match self.process(idx) {
                        Flow::Done => {}
                        Flow::Blocked | Flow::Closed => return,
                    }
                    let c = &self.conns[idx];
                    if began && c.start == 0 {
                        // Nothing consumed: the request is still partial,
                        // its deadline counts from its first bytes.
                        self.wheel.set(idx, self.now + self.cfg.header_timeout);
                    }
                    if c.drained {
                        self.release_or_shrink(idx);
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    c.drained = true;
                    c.emptied = true;
                    c.buf = Some(buf);
                    self.release_or_shrink(idx);
                    if self.conns[idx]
                        .tls
                        .as_ref()
                        .is_some_and(|t| t.wants_write())
                    {
                        // Handshake records the socket did not take: wait
                        // for writability with an empty batch (the send
                        // writes what rustls holds first).
                        self.block_on_tls_records(idx);
                    }
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                    // The TLS connection failed, counted and answered:
                    // close after a linger, so the answer is not reset.
                    c.buf = Some(buf);
                    c.linger_after = true;
                    self.finish_close(idx);
                    return;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    c.buf = Some(buf);
                }
                Err(_) => {
                    c.buf = Some(buf);
                    self.counters.client_errors += 1;
                    self.close(idx);
                    return;
                }
            }
        }
    }

    /// Wait for writability to send the TLS records rustls holds (an
    /// empty batch pending: flushing it writes them).
    fn block_on_tls_records(&mut self, idx: usize) {
        let empty = self
            .spare
            .pop()
            .unwrap_or_else(|| Box::new(OutBatch::new()));
        let c = &mut self.conns[idx];
        if c.out.is_none() {
            c.out = Some(empty);
        }
        if !c.writing {
            c.writing = true;
            self.set_interest(idx, Interest::WRITABLE);
        }
    }

    /// A read buffer from the pool, or a new one.
    fn full_buffer(&mut self) -> Box<[u8]> {
        self.pool
            .pop()
            .unwrap_or_else(|| vec![0u8; self.cfg.max_header].into_boxed_slice())
    }

    /// A buffer no connection holds any more: into the pool if it is a
    /// full-size one and the pool has room.
    fn give_back(&mut self, b: Option<Box<[u8]>>) {
        if let Some(b) = b {
            if b.len() == self.cfg.max_header && self.pool.len() < POOL_KEEP {
                self.pool.push(b);
            }
        }
    }

    /// The socket is drained: give the read buffer back when no partial
    /// request is left in it, or move a short one to a small buffer (the
    /// connection may wait seconds for the rest).
    fn release_or_shrink(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let left = (c.end - c.start) as usize;
        if left == 0 {
            c.start = 0;
            c.end = 0;
            let b = c.buf.take();
            self.give_back(b);
        } else if left <= SMALL_BUF / 2 && c.buf.as_ref().is_some_and(|b| b.len() > SMALL_BUF) {
            let big = c.buf.take().expect("checked");
            let mut small = vec![0u8; SMALL_BUF].into_boxed_slice();
            small[..left].copy_from_slice(&big[c.start as usize..c.end as usize]);
            c.buf = Some(small);
            c.start = 0;
            c.end = left as u32;
            self.give_back(Some(big));
        }
    }

    /// Answer every complete request in the buffer, a batch at a time, and
    /// write each batch. All of them now: the socket may already be drained,
    /// and no event would come back for requests left in the buffer.
    fn process(&mut self, idx: usize) -> Flow {
        loop {
            match self.process_batch(idx) {
                (Flow::Done, true) if self.conns[idx].end > self.conns[idx].start => {}
                (flow, _) => return flow,
            }
        }
    }

    /// Answer up to one batch of the buffered requests and write it; also
    /// whether any request was answered.
    fn process_batch(&mut self, idx: usize) -> (Flow, bool) {
        let closing = self.gate.stopping();
        let c = &mut self.conns[idx];
        let buf = c.buf.take().expect("process needs a buffer");
        let (start, end, via) = (
            c.start as usize,
            c.end as usize,
            transport::via(&c.tls, c.fd()),
        );
        let a = self.responder.answer(
            &buf[start..end],
            self.cfg.max_header,
            &mut self.batch,
            closing,
            &mut self.counters,
            via,
        );
        let (close_after, linger) = (a.close, a.linger);
        let c = &mut self.conns[idx];
        c.start = (start + a.consumed) as u32;
        c.buf = Some(buf);
        if a.answered > 0 {
            c.partial = c.end > c.start;
        }
        let fd = c.fd();
        if !self.batch.is_empty() {
            // The close follows at once: its FIN rides on the last segment.
            self.batch.set_last(close_after);
            let tls = &mut self.conns[idx].tls;
            let sent = transport::send(tls, &mut self.batch, fd, &mut self.tls_chunk);
            self.counters.bytes_sent += std::mem::take(&mut self.batch.written);
            match sent {
                Ok(true) => self.batch.clear(),
                Ok(false) => {
                    let fresh = self
                        .spare
                        .pop()
                        .unwrap_or_else(|| Box::new(OutBatch::new()));
                    let pending = std::mem::replace(&mut self.batch, fresh);
                    let c = &mut self.conns[idx];
                    c.out = Some(pending);
                    c.close_after = close_after;
                    c.linger_after = linger;
                    if !c.writing {
                        c.writing = true;
                        self.set_interest(idx, Interest::WRITABLE);
                    }
                    self.wheel.set(idx, self.now + self.cfg.idle_timeout);
                    return (Flow::Blocked, true);
                }
                Err(_) => {
                    self.batch.clear();
                    self.counters.client_errors += 1;
                    self.close(idx);
                    return (Flow::Closed, true);
                }
            }
        }
        if close_after {
            self.conns[idx].linger_after = linger;
            self.finish_close(idx);
            return (Flow::Closed, true);
        }
        if a.answered > 0 {
            self.arm_after_response(idx);
        }
        (Flow::Done, a.answered > 0)
    }

    /// After a response: the idle deadline, or the header deadline when a
    /// partial request is already buffered.
    fn arm_after_response(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.end > c.start {
            c.partial = true;
            self.wheel.set(idx, self.now + self.cfg.header_timeout);
        } else {
            c.partial = false;
            let t = self.gate.keepalive(self.cfg.idle_timeout);
            self.wheel.set(idx, self.now + t);
        }
    }

    /// Close after the last response: at once when nothing more is known to
    /// be coming, else half-close and drain for a while first (a close with
    /// unread input sends a reset that can destroy the response in flight).
    fn finish_close(&mut self, idx: usize) {
        let c = &self.conns[idx];
        let unread = c.end > c.start || !c.emptied;
        if lifecycle::must_linger(c.linger_after, unread) {
            self.start_linger(idx);
        } else {
            self.close(idx);
        }
    }

    fn start_linger(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let fd = c.fd();
        transport::close_notify(&mut c.tls, fd);
        c.tls = None;
        sys::shutdown(fd, libc::SHUT_WR);
        c.state = State::Lingering;
        c.start = 0;
        c.end = 0;
        let (b, writing) = (c.buf.take(), std::mem::take(&mut c.writing));
        self.give_back(b);
        if writing {
            self.set_interest(idx, Interest::READABLE);
        }
        self.wheel.set(idx, self.now + LINGER);
        self.linger_read(idx);
    }

    fn linger_read(&mut self, idx: usize) {
        let fd = self.conns[idx].fd();
        let mut total = 0usize;
        loop {
            match sys::recv(fd, &mut self.scratch) {
                Ok(0) => break,
                Ok(n) => {
                    total += n;
                    if total > LINGER_MAX_BYTES {
                        break; // enough patience
                    }
                    if n < self.scratch.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        self.close(idx);
    }

    fn close(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.state == State::Free {
            return;
        }
        if c.registered {
            let _ = self.poller.deregister(c.fd());
            c.registered = false;
        }
        if c.tls.is_some() {
            let fd = c.fd();
            transport::close_notify(&mut c.tls, fd);
            c.tls = None;
        }
        c.sock = None; // closes the descriptor, after the deregistration
        c.state = State::Free;
        c.out = None;
        c.start = 0;
        c.end = 0;
        c.linger_after = false;
        let b = c.buf.take();
        self.give_back(b);
        self.wheel.cancel(idx);
        self.free.push(idx as u32);
        self.open -= 1;
        self.counters.closed += 1;
        if !self.listener_registered && self.gate.paused() {
            self.resume_accept();
        }
    }

    // ---- timers and stopping --------------------------------------------

    /// Handle the timers due now (at most a batch); how many fired.
    fn expire_timers(&mut self) -> u64 {
        let mut fired = std::mem::take(&mut self.fired);
        self.wheel
            .expire_at_most(self.now, &mut fired, crate::conn::timer::EXPIRE_BATCH);
        let n = fired.len() as u64;
        for &idx in &fired {
            let c = &self.conns[idx];
            let phase = match c.state {
                State::Free => continue,
                State::Lingering => Phase::Lingering,
                State::Open if transport::handshaking(&c.tls) => Phase::Handshake {
                    hello: transport::hello_received(&c.tls),
                },
                State::Open if c.out.is_some() => Phase::Sending,
                State::Open if c.partial => Phase::Request {
                    some_input: c.end > c.start,
                },
                State::Open => Phase::Idle,
            };
            let fd = c.fd();
            match lifecycle::expire(phase, self.gate.stopping(), &mut self.counters) {
                Expiry::Close => self.close(idx),
                Expiry::RequestTimeout => {
                    let c = &self.conns[idx];
                    let partial = match &c.buf {
                        Some(b) => &b[c.start as usize..c.end as usize],
                        None => &[],
                    };
                    let via = transport::via(&c.tls, fd);
                    self.responder.timed_out(&mut self.batch, via, partial);
                    // Half-closed right after (finish_close lingers).
                    self.batch.set_last(true);
                    let tls = &mut self.conns[idx].tls;
                    let _ = transport::send(tls, &mut self.batch, fd, &mut self.tls_chunk);
                    self.batch.clear();
                    self.conns[idx].linger_after = true;
                    self.finish_close(idx);
                }
            }
        }
        fired.clear();
        self.fired = fired;
        n
    }

    fn begin_stop(&mut self) {
        let deadline = self.gate.begin_stop(self.now);
        self.deregister_listeners();
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            let idle = c.state == State::Open && c.out.is_none() && c.end == c.start;
            if idle || c.state == State::Lingering {
                // Idle, new with nothing received, or already answered:
                // nothing to finish.
                self.close(idx);
            } else if c.state != State::Free {
                self.wheel.set(idx, deadline);
            }
        }
    }
}
