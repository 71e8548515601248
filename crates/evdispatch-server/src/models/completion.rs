//! The io_uring completion model: the kernel does the I/O and reports it
//! done, instead of reporting that it could be done.
//!
//! Per worker, one ring: a multishot `accept` on each listener; per
//! connection a one-shot first `recv` (the request is usually there at
//! accept, so it completes at submission), then, once the connection is
//! known to stay open, one multishot `recv`; both draw from a ring of
//! provided buffers (so an idle connection owns no buffer at all, not even
//! in the kernel); responses as one `sendmsg` of header and cached body, at most one
//! in flight per connection. Large files (and ranges of them, from their
//! offset) go with `sendfile` straight from the page cache into the
//! non-blocking socket, no copy through user space (a cold disk would stall
//! the loop, as a read would); when the socket is full, a one-shot poll for
//! writability takes the send's place in flight, and its completion resumes
//! the file. The same timer wheel gives the wait's timeout.
//!
//! Over TLS the receives are the same (the ciphertext in a provided buffer
//! goes through rustls into the connection's input); the output is
//! encrypted and written from the loop with non-blocking `sendmsg` calls,
//! as `sendfile` is, and the same poll for writability resumes it when the
//! socket is full (see [`crate::conn::transport`]).
//!
//! Closing: a connection with a `recv` in flight is cancelled first and its
//! descriptor closed when the last completion for it has arrived; every
//! completion carries the connection's generation, so a late one for a reused
//! slot is dropped.

use std::io;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use evdispatch::uring::{self, BufRing, Issuer, Wait};
use io_uring::{cqueue, opcode, squeue, types, IoUring};

use crate::config::{Bound, ServerConfig};
use crate::conn::lifecycle::{self, AcceptFailure, Expiry, Gate, Phase, LINGER};
use crate::conn::stats::{Counters, TurnMeter, WorkerReport};
use crate::conn::timer::TimerWheel;
use crate::conn::transport::{self, Tls, TLS_CHUNK};
use crate::content::response::{OutBatch, Responder};
use crate::sys;

const K_ACCEPT: u64 = 1;
const K_RECV: u64 = 2;
const K_SEND: u64 = 3;
const K_WAKE: u64 = 4;
const K_CANCEL: u64 = 5;

const BUF_SIZE: usize = 4096;
const BUF_COUNT: u16 = 1024;
const POOL_KEEP: usize = 256;
/// Send states kept for reuse.
const SPARE_KEEP: usize = 64;

fn ud(kind: u64, gen: u32, idx: usize) -> u64 {
    (kind << 60) | ((gen as u64 & 0x0fff_ffff) << 32) | idx as u64
}

fn ud_parts(u: u64) -> (u64, u32, usize) {
    (
        u >> 60,
        ((u >> 32) & 0x0fff_ffff) as u32,
        (u & 0xffff_ffff) as usize,
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Free,
    Open,
    Lingering,
    Closing,
}

/// One send in flight: the batch and the kernel-visible message describing
/// it. Boxed, so the addresses handed to the kernel stay put. One exists per
/// send in flight, and a burst of new connections answered in one turn of
/// the loop puts hundreds in flight at once, so it starts small and grows
/// with what it sends (a typical response: a header of ~200 bytes and a
/// cached body, two slices), and the list of spare ones is bounded.
struct SendState {
    batch: OutBatch,
    /// Gathered slices; not touched while a send is in flight.
    iov: Vec<libc::iovec>,
    msg: libc::msghdr,
    /// What is in flight is a poll for writability (or a no-op), not a
    /// send: its result is not a byte count.
    polling: bool,
}

impl SendState {
    fn new() -> Box<SendState> {
        Box::new(SendState {
            batch: OutBatch::default(),
            iov: Vec::new(),
            msg: sys::empty_msghdr(),
            polling: false,
        })
    }
}

struct UConn {
    sock: Option<OwnedFd>,
    gen: u32,
    state: State,
    recv_armed: bool,
    cancel_sent: bool,
    send: Option<Box<SendState>>,
    send_inflight: bool,
    partial: bool,
    close_after: bool,
    linger_after: bool,
    eof: bool,
    input: Vec<u8>,
    start: usize,
    /// The TLS state of an HTTPS connection.
    tls: Option<Box<Tls>>,
}

impl UConn {
    const FREE: UConn = UConn {
        sock: None,
        gen: 0,
        state: State::Free,
        recv_armed: false,
        cancel_sent: false,
        send: None,
        send_inflight: false,
        partial: false,
        close_after: false,
        linger_after: false,
        eof: false,
        input: Vec::new(),
        start: 0,
        tls: None,
    };

    fn fd(&self) -> i32 {
        self.sock.as_ref().map_or(-1, |s| s.as_raw_fd())
    }
}

pub(crate) struct Worker {
    // Field order is drop order: the ring goes before the boxed buffers its
    // entries name (`wake_buf`, the send states). The pool of receive
    // buffers is released from the ring first (`Drop for Worker`).
    ring: IoUring,
    bufs: Option<BufRing>,
    index: usize,
    cpu: Option<usize>,
    cfg: Arc<ServerConfig>,
    /// One accept per listener (its index is the accept's `idx`).
    acceptors: Vec<Acceptor>,
    stop: Arc<AtomicBool>,
    wake_fd: Arc<OwnedFd>,
    wake_buf: Box<[u8; 8]>,
    conns: Vec<UConn>,
    free: Vec<u32>,
    open: usize,
    wheel: TimerWheel,
    fired: Vec<usize>,
    inputs: Vec<Vec<u8>>,
    // Boxed: a send state's address is handed to the kernel, and it moves
    // between this list and a connection while staying put.
    #[allow(clippy::vec_box)]
    spare: Vec<Box<SendState>>,
    responder: Responder,
    counters: Counters,
    stats: evdispatch::Stats,
    /// Accept pauses and the graceful stop.
    gate: Gate,
    now: Instant,
    cqes: Vec<(u64, i32, u32)>,
    rearm: Vec<usize>,
    /// A file's bytes on their way to the cipher (HTTPS only; empty
    /// otherwise).
    tls_chunk: Box<[u8]>,
}

/// A listener and the accept armed on it.
struct Acceptor {
    listener: Arc<TcpListener>,
    /// Its connections speak TLS.
    tls: bool,
    armed: bool,
    /// The armed accept is multishot.
    multi: bool,
    cancel: bool,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Unregistered before it is freed: the kernel then takes none of its
        // buffers (else it is leaked, not freed under the kernel).
        if let Some(bufs) = self.bufs.take() {
            // SAFETY: the pool was registered with this ring (`new`).
            unsafe { bufs.release(&self.ring) };
        }
    }
}

impl Worker {
    pub(crate) fn new(
        index: usize,
        cpu: Option<usize>,
        cfg: Arc<ServerConfig>,
        bound: Vec<Bound>,
        responder: Responder,
        stop: Arc<AtomicBool>,
    ) -> io::Result<(Worker, Arc<OwnedFd>)> {
        let entries = cfg.poller.uring_entries.max(8).next_power_of_two();
        // One thread submits and reaps (SINGLE_ISSUER), and completion work
        // runs only when it asks for completions (DEFER_TASKRUN, Linux 6.1):
        // fewer interruptions of the loop. Older kernels get cooperative
        // task running, then a plain ring.
        let (ring, _) = uring::setup(entries, entries * 16, Issuer::Single).map_err(|e| {
            let kind = if matches!(e.raw_os_error(), Some(libc::ENOSYS) | Some(libc::EPERM)) {
                io::ErrorKind::Unsupported
            } else {
                e.kind()
            };
            io::Error::new(
                kind,
                format!("io_uring is not available here ({e}); use a readiness mechanism"),
            )
        })?;
        let bufs = BufRing::register(&ring, BUF_COUNT, BUF_SIZE, 0).map_err(|e| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                format!("io_uring provided-buffer rings need Linux 5.19 ({e})"),
            )
        })?;
        let reserve = cfg.table_reserve();
        let wake_fd = Arc::new(sys::eventfd()?);
        let mut w = Worker {
            ring,
            bufs: Some(bufs),
            index,
            cpu,
            acceptors: bound
                .into_iter()
                .map(|b| Acceptor {
                    listener: b.listener,
                    tls: b.tls,
                    armed: false,
                    multi: false,
                    cancel: false,
                })
                .collect(),
            stop,
            wake_fd: wake_fd.clone(),
            wake_buf: Box::new([0; 8]),
            conns: Vec::with_capacity(reserve),
            free: Vec::with_capacity(reserve),
            open: 0,
            wheel: TimerWheel::with_capacity(Duration::from_millis(10), reserve),
            fired: Vec::new(),
            inputs: Vec::new(),
            spare: Vec::new(),
            responder,
            counters: Counters::default(),
            stats: evdispatch::Stats::default(),
            gate: Gate::default(),
            now: Instant::now(),
            cqes: Vec::with_capacity(256),
            rearm: Vec::new(),
            tls_chunk: vec![0u8; if cfg.tls.is_some() { TLS_CHUNK } else { 0 }].into_boxed_slice(),
            cfg,
        };
        w.arm_wake()?;
        w.arm_accept()?;
        w.submit()?;
        Ok((w, wake_fd))
    }

    /// Keep a finished send state for reuse (a bounded number of them).
    fn recycle(&mut self, mut st: Box<SendState>) {
        st.batch.clear();
        st.polling = false;
        if self.spare.len() < SPARE_KEEP {
            self.spare.push(st);
        }
    }

    fn push(&mut self, entry: io_uring::squeue::Entry) {
        // SAFETY: every buffer an entry points to lives in boxed state owned
        // by this worker (wake_buf, a connection's SendState, the BufRing)
        // and is kept until the operation's completion has been reaped.
        if let Err(e) = unsafe { uring::push(&mut self.ring, &entry) } {
            // The submission queue could not be flushed: nothing sensible
            // remains but to report it on the next wait.
            eprintln!("evdispatch serve: io_uring submit failed: {e}");
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        let n = self.ring.submit()?;
        self.stats.sqes_submitted += n as u64;
        Ok(())
    }

    fn arm_wake(&mut self) -> io::Result<()> {
        let e = opcode::Read::new(
            types::Fd(self.wake_fd.as_raw_fd()),
            self.wake_buf.as_mut_ptr(),
            8,
        )
        .build()
        .user_data(ud(K_WAKE, 0, 0));
        self.push(e);
        Ok(())
    }

    /// Closer than this to the connection cap, accepts are single-shot: a
    /// full accept queue and some.
    fn near_cap(&self) -> usize {
        usize::try_from(self.cfg.backlog).unwrap_or(0) + 64
    }

    /// Arm an accept on every listener that has none.
    fn arm_accept(&mut self) -> io::Result<()> {
        for i in 0..self.acceptors.len() {
            self.arm_accept_on(i);
        }
        Ok(())
    }

    fn arm_accept_on(&mut self, i: usize) {
        if self.acceptors[i].armed || self.gate.stopping() {
            return;
        }
        let fd = types::Fd(self.acceptors[i].listener.as_raw_fd());
        let flags = libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC;
        // A multishot accept takes every connection queued before we see
        // the first (and its cancel lands later still), so within a full
        // accept queue of the connection cap (or the descriptor limit
        // behind it) one connection at a time: the cap holds instead of
        // being overshot into EMFILE.
        let room = self.cfg.max_open_per_worker().saturating_sub(self.open);
        let multi = room > self.near_cap();
        let e = if multi {
            opcode::AcceptMulti::new(fd).flags(flags).build()
        } else {
            opcode::Accept::new(fd, std::ptr::null_mut(), std::ptr::null_mut())
                .flags(flags)
                .build()
        }
        .user_data(ud(K_ACCEPT, 0, i));
        self.push(e);
        let a = &mut self.acceptors[i];
        (a.armed, a.multi, a.cancel) = (true, multi, false);
    }

    /// Cancel every armed accept (the last completion of each clears its
    /// `armed`).
    fn cancel_accept(&mut self) {
        for i in 0..self.acceptors.len() {
            self.cancel_accept_on(i);
        }
    }

    fn cancel_accept_on(&mut self, i: usize) {
        let a = &mut self.acceptors[i];
        if a.armed && !a.cancel {
            a.cancel = true;
            self.cancel(ud(K_ACCEPT, 0, i));
        }
    }

    /// An accept is armed on some listener.
    fn accept_armed(&self) -> bool {
        self.acceptors.iter().any(|a| a.armed)
    }

    fn pause_accept(&mut self) {
        self.cancel_accept();
        self.gate.pause(self.now, &mut self.counters);
    }

    /// Arm a multishot receive: every arrival completes into a provided
    /// buffer until it is cancelled.
    fn arm_recv(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let bgid = self.bufs.as_ref().map_or(0, |b| b.group());
        let e = opcode::RecvMulti::new(types::Fd(c.fd()), bgid)
            .build()
            .user_data(ud(K_RECV, c.gen, idx));
        c.recv_armed = true;
        self.push(e);
    }

    /// A new connection's first receive: one shot, into a provided buffer.
    /// Its request is usually there already (deferred accept), so the
    /// kernel completes it at submission without arming a poll, and a
    /// connection closed after one response then has no receive to cancel.
    /// The multishot receive is armed once a response has gone out on a
    /// connection that stays open.
    fn arm_first_recv(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let bgid = self.bufs.as_ref().map_or(0, |b| b.group());
        let e = opcode::Recv::new(types::Fd(c.fd()), std::ptr::null_mut(), BUF_SIZE as u32)
            .buf_group(bgid)
            .build()
            .flags(squeue::Flags::BUFFER_SELECT)
            .user_data(ud(K_RECV, c.gen, idx));
        c.recv_armed = true;
        self.push(e);
    }

    pub(crate) fn run(mut self) -> io::Result<WorkerReport> {
        let mut turn = TurnMeter::default();
        loop {
            let now = Instant::now();
            turn.end(self.now, now, &mut self.counters);
            let timeout = self.wait_timeout(now);
            self.stats.waits += 1;
            self.stats.wait_syscalls += 1;
            let pending = self.ring.submission().len();
            let wait = timeout.map_or(Wait::Completion, Wait::Upto);
            match uring::enter(&self.ring, 1, wait) {
                Ok(_) => self.stats.sqes_submitted += pending as u64,
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                    self.stats.sqes_submitted += pending as u64
                }
                Err(e) if uring::ends_wait(&e) => {}
                Err(e) => return Err(e),
            }
            self.now = Instant::now();
            self.responder.set_time(SystemTime::now());
            let mut cqes = std::mem::take(&mut self.cqes);
            cqes.extend(
                self.ring
                    .completion()
                    .map(|c| (c.user_data(), c.result(), c.flags())),
            );
            turn.begin(cqes.len(), &self.counters);
            if cqes.is_empty() {
                self.stats.empty_waits += 1;
            } else {
                self.counters.wakeups += 1;
                self.stats.events += cqes.len() as u64;
            }
            for &(u, res, flags) in &cqes {
                self.completion(u, res, flags);
            }
            cqes.clear();
            self.cqes = cqes;
            let rearm = std::mem::take(&mut self.rearm);
            for &idx in &rearm {
                let c = &self.conns[idx];
                if (c.state == State::Open || c.state == State::Lingering)
                    && !c.recv_armed
                    && !c.eof
                {
                    self.stats.rearms += 1;
                    self.arm_recv(idx);
                }
            }
            self.rearm = rearm;
            self.rearm.clear();
            if self.gate.resume_due(self.now) {
                if self.open < self.cfg.max_open_per_worker() {
                    self.gate.resumed();
                    self.arm_accept()?;
                } else {
                    // Still full: a close resumes accepting.
                    self.gate.retry_later(self.now);
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
        self.shutdown_all();
        let poller = serde_json::to_value(&self.stats).unwrap_or_default();
        Ok(WorkerReport {
            worker: self.index,
            cpu: self.cpu,
            counters: std::mem::take(&mut self.counters),
            poller,
            cache: self.responder.store.stats(),
        })
    }

    fn wait_timeout(&self, now: Instant) -> Option<Duration> {
        self.gate.wait_timeout(self.wheel.timeout(now), now)
    }

    fn completion(&mut self, u: u64, res: i32, flags: u32) {
        let (kind, gen, idx) = ud_parts(u);
        match kind {
            K_WAKE => {
                let _ = self.arm_wake();
            }
            K_CANCEL => {}
            K_ACCEPT => self.on_accept(idx, res, flags),
            K_RECV => self.on_recv(gen, idx, res, flags),
            K_SEND => self.on_send(gen, idx, res),
            _ => {}
        }
    }

    /// A completion of the accept on listener `i`.
    fn on_accept(&mut self, i: usize, res: i32, flags: u32) {
        if i >= self.acceptors.len() {
            return;
        }
        if !cqueue::more(flags) {
            let a = &mut self.acceptors[i];
            (a.armed, a.cancel) = (false, false);
        }
        if res >= 0 {
            self.counters.listener_events += 1;
            self.counters.accepted += 1;
            let fd = sys::owned_fd(res);
            if self.gate.stopping() {
                self.counters.closed += 1;
                return; // closes it
            }
            self.add_conn(fd, self.acceptors[i].tls);
            let room = self.cfg.max_open_per_worker().saturating_sub(self.open);
            if room == 0 {
                self.pause_accept();
            } else if room <= self.near_cap() {
                // Single-shot from here (each re-armed so once it ends).
                for j in 0..self.acceptors.len() {
                    if self.acceptors[j].multi {
                        self.cancel_accept_on(j);
                    }
                }
            }
        } else {
            if lifecycle::accept_failure(-res, &mut self.counters) == AcceptFailure::Pause {
                self.pause_accept();
            }
        }
        if !self.acceptors[i].armed && !self.gate.paused() && !self.gate.stopping() {
            self.arm_accept_on(i);
        }
    }

    /// A connection accepted on a listener that speaks TLS when `tls`.
    fn add_conn(&mut self, fd: OwnedFd, tls: bool) {
        let config = self.cfg.tls.as_ref().filter(|_| tls).map(|t| &t.server);
        let Ok(tls) = Tls::accept(config) else {
            self.counters.closed += 1;
            return;
        };
        let idx = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.conns.push(UConn::FREE);
                self.conns.len() - 1
            }
        };
        let c = &mut self.conns[idx];
        *c = UConn {
            sock: Some(fd),
            gen: c.gen,
            state: State::Open,
            partial: true,
            send: c.send.take(),
            input: std::mem::take(&mut c.input),
            tls,
            ..UConn::FREE
        };
        self.open += 1;
        self.counters.peak_open = self.counters.peak_open.max(self.open as u64);
        self.wheel.set(idx, self.now + self.cfg.header_timeout);
        self.arm_first_recv(idx);
    }

    fn live(&self, gen: u32, idx: usize) -> bool {
        self.conns
            .get(idx)
            .is_some_and(|c| c.state != State::Free && (c.gen & 0x0fff_ffff) == gen)
    }

    fn on_recv(&mut self, gen: u32, idx: usize, res: i32, flags: u32) {
        let mut tls_failed = false;
        let bid = cqueue::buffer_select(flags);
        if !self.live(gen, idx) {
            if let (Some(b), Some(bufs)) = (bid, self.bufs.as_mut()) {
                // SAFETY: this completion handed buffer `b` over, and nothing
                // read it.
                unsafe { bufs.give_back(b) };
            }
            return;
        }
        let more = cqueue::more(flags);
        if !more {
            self.conns[idx].recv_armed = false;
        }
        if res > 0 {
            let Some(bid) = bid else {
                return;
            };
            let bufs = self.bufs.take().expect("buffer ring");
            // SAFETY: this completion handed buffer `bid` over; it is given
            // back below, after the last use of `data`.
            let data = unsafe { bufs.buf(bid, res as usize) };
            let c = &mut self.conns[idx];
            // Lingering or closing: the data is dropped.
            if c.state == State::Open {
                if c.input.len() == c.start && !c.partial {
                    c.partial = true;
                    self.wheel.set(idx, self.now + self.cfg.header_timeout);
                }
                let c = &mut self.conns[idx];
                if c.input.capacity() == 0 {
                    c.input = self.inputs.pop().unwrap_or_default();
                }
                let fd = c.fd();
                match &mut c.tls {
                    None => c.input.extend_from_slice(data),
                    Some(t) => {
                        if t.feed(data, fd, &mut c.input, &mut self.counters).is_err() {
                            // Failed, counted and answered: close after a
                            // linger, so the answer is not reset.
                            tls_failed = true;
                        }
                    }
                }
            }
            let mut bufs = bufs;
            // SAFETY: handed over by this completion; `data` is gone.
            unsafe { bufs.give_back(bid) };
            self.bufs = Some(bufs);
            let c = &mut self.conns[idx];
            if tls_failed {
                c.close_after = true;
                c.linger_after = true;
                c.input.clear();
                c.start = 0;
                if !c.send_inflight {
                    self.start_linger(idx);
                }
            } else if c.state == State::Open {
                if !c.send_inflight {
                    self.pump(idx);
                    self.send_tls_records(idx);
                } else if c.input.len() - c.start > self.cfg.max_header
                    && c.recv_armed
                    && !c.cancel_sent
                {
                    // Backpressure: stop receiving until the send completes.
                    self.cancel_recv(idx);
                }
            }
        } else if res == 0 {
            let c = &mut self.conns[idx];
            c.eof = true;
            if let Some(t) = &mut c.tls {
                t.eof(&mut self.counters);
            }
            match c.state {
                State::Open if !c.send_inflight => {
                    self.pump(idx);
                    if self.conns[idx].state == State::Open && !self.conns[idx].send_inflight {
                        self.close_conn(idx);
                    }
                }
                State::Lingering => self.close_conn(idx),
                _ => {}
            }
        } else {
            match -res {
                libc::ENOBUFS => self.rearm.push(idx),
                libc::ECANCELED => {
                    self.conns[idx].cancel_sent = false;
                }
                _ => {
                    if self.conns[idx].state == State::Open {
                        self.counters.client_errors += 1;
                    }
                    self.close_conn(idx);
                }
            }
        }
        if !more {
            let c = &self.conns[idx];
            match c.state {
                State::Closing => self.maybe_free(idx),
                State::Open | State::Lingering if !c.eof && !c.send_inflight && res >= 0 => {
                    self.rearm.push(idx);
                }
                _ => {}
            }
        }
    }

    /// Send the TLS records rustls holds (handshake replies, tickets) when
    /// nothing else is being sent (a send in flight sends them when it
    /// resumes).
    fn send_tls_records(&mut self, idx: usize) {
        let c = &self.conns[idx];
        if c.state == State::Open
            && !c.send_inflight
            && c.tls.as_ref().is_some_and(|t| t.wants_write())
        {
            let st = self.spare.pop().unwrap_or_else(SendState::new);
            self.start_send(idx, st);
        }
    }

    fn cancel_recv(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.recv_armed && !c.cancel_sent {
            c.cancel_sent = true;
            let target = ud(K_RECV, c.gen, idx);
            self.cancel(target);
        }
    }

    /// Cancel the operation whose user data is `target`.
    fn cancel(&mut self, target: u64) {
        self.push(
            opcode::AsyncCancel::new(target)
                .build()
                .user_data(ud(K_CANCEL, 0, 0)),
        );
    }

    /// Answer the complete requests buffered (no send may be in flight).
    fn pump(&mut self, idx: usize) {
        let closing = self.gate.stopping();
        let c = &mut self.conns[idx];
        debug_assert!(!c.send_inflight);
        let input = std::mem::take(&mut c.input);
        let mut st = self.spare.pop().unwrap_or_else(SendState::new);
        let a = self.responder.answer(
            &input[c.start..],
            self.cfg.max_header,
            &mut st.batch,
            closing,
            &mut self.counters,
            transport::via(&c.tls, c.fd()),
        );
        let start = c.start + a.consumed;
        let (close_after, linger, answered) = (a.close, a.linger, a.answered);
        let c = &mut self.conns[idx];
        c.input = input;
        if start >= c.input.len() {
            self.release_input(idx);
        } else {
            c.start = start;
            if start > 0 && start * 2 > c.input.len() {
                c.input.drain(..start);
                c.start = 0;
            }
        }
        let c = &mut self.conns[idx];
        if answered > 0 {
            c.partial = c.input.len() > c.start;
        }
        c.close_after |= close_after;
        c.linger_after |= linger;
        if !st.batch.is_empty() {
            self.start_send(idx, st);
            return;
        }
        self.recycle(st);
        self.after_send(idx, answered > 0);
    }

    /// Nothing left in the connection's input: its buffer goes back to the
    /// pool (or is freed).
    #[inline]
    fn release_input(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let mut input = std::mem::take(&mut c.input);
        c.start = 0;
        if self.inputs.len() < POOL_KEEP && input.capacity() > 0 {
            input.clear();
            self.inputs.push(input);
        }
    }

    /// The connection's output is all written: close, or wait for more.
    fn after_send(&mut self, idx: usize, answered: bool) {
        let c = &self.conns[idx];
        if c.state != State::Open {
            return;
        }
        if c.close_after {
            if lifecycle::must_linger(c.linger_after, c.input.len() > c.start) {
                self.start_linger(idx);
            } else {
                self.close_conn(idx);
            }
            return;
        }
        if c.eof {
            self.close_conn(idx);
            return;
        }
        let c = &mut self.conns[idx];
        if c.input.len() > c.start {
            if answered || !c.partial {
                c.partial = true;
                self.wheel.set(idx, self.now + self.cfg.header_timeout);
            }
        } else if answered {
            c.partial = false;
            let t = self.gate.keepalive(self.cfg.idle_timeout);
            self.wheel.set(idx, self.now + t);
        }
        let c = &self.conns[idx];
        if !c.recv_armed && !c.eof {
            self.stats.rearms += 1;
            self.arm_recv(idx);
        }
    }

    fn start_send(&mut self, idx: usize, mut st: Box<SendState>) {
        let fd = self.conns[idx].fd();
        // A file, or anything over TLS, is written here, as much as the
        // non-blocking socket takes (`sendfile`; or encrypted and written
        // with `sendmsg`); a poll for writability resumes it, a no-op
        // completes it through the ring.
        let tls = self.conns[idx].tls.is_some();
        if tls || st.batch.front_file().is_some() {
            let before = st.batch.written;
            let sent = match self.conns[idx].tls.as_mut() {
                Some(t) => t.send(&mut st.batch, fd, &mut self.tls_chunk),
                None => st.batch.send_front_file(fd),
            };
            self.counters.bytes_sent += st.batch.written - before;
            let wait = match sent {
                Err(_) => {
                    // Shrunk, unreadable or reset: the response cannot be completed.
                    self.recycle(st);
                    self.counters.client_errors += 1;
                    self.close_conn(idx);
                    return;
                }
                // The socket is full: wait until it takes more.
                Ok(false) => {
                    Some(opcode::PollAdd::new(types::Fd(fd), libc::POLLOUT as u32).build())
                }
                // All sent: completing through the ring (a no-op) rather
                // than here keeps `pump` from recursing into itself.
                Ok(true) if tls || st.batch.is_empty() => Some(opcode::Nop::new().build()),
                Ok(true) => None, // memory parts follow
            };
            if let Some(e) = wait {
                st.polling = true;
                let c = &mut self.conns[idx];
                c.send = Some(st);
                c.send_inflight = true;
                let e = e.user_data(ud(K_SEND, c.gen, idx));
                self.push(e);
                return;
            }
        }
        let mut slices = [std::io::IoSlice::new(&[]); 64];
        let (n, _) = st.batch.gather(&mut slices);
        st.iov.clear();
        st.iov.extend(slices[..n].iter().map(|s| libc::iovec {
            iov_base: s.as_ptr() as *mut libc::c_void,
            iov_len: s.len(),
        }));
        st.msg.msg_iovlen = n as _;
        st.msg.msg_iov = st.iov.as_mut_ptr();
        let c = &mut self.conns[idx];
        // The last output of a connection closed (or half-closed) as soon as
        // it completes: held back (MSG_MORE) so that the close attaches its
        // FIN to the same segment (see `OutBatch::set_last`).
        let more = if c.close_after { libc::MSG_MORE } else { 0 };
        let e = opcode::SendMsg::new(types::Fd(fd), &st.msg as *const libc::msghdr)
            .flags((libc::MSG_NOSIGNAL | more) as u32)
            .build()
            .user_data(ud(K_SEND, c.gen, idx));
        c.send = Some(st);
        c.send_inflight = true;
        self.push(e);
    }

    fn on_send(&mut self, gen: u32, idx: usize, res: i32) {
        if !self.live(gen, idx) {
            return;
        }
        let c = &mut self.conns[idx];
        c.send_inflight = false;
        let mut st = c.send.take().expect("send state");
        if c.state == State::Closing {
            self.recycle(st);
            self.maybe_free(idx);
            return;
        }
        if res < 0 {
            self.recycle(st);
            self.counters.client_errors += 1;
            self.close_conn(idx);
            return;
        }
        if st.polling {
            // Writable again (or hung up: the next sendfile says which).
            st.polling = false;
        } else {
            let n = res as usize;
            self.counters.bytes_sent += n as u64;
            st.batch.advance(n);
        }
        let tls_left = c.tls.as_ref().is_some_and(|t| t.wants_write());
        if !st.batch.is_empty() || tls_left {
            self.wheel.set(idx, self.now + self.cfg.idle_timeout);
            self.start_send(idx, st);
            return;
        }
        self.recycle(st);
        let c = &self.conns[idx];
        if c.close_after || c.eof || c.input.len() == c.start {
            // (Handshake records sent: no answer, the deadline stays.)
            let answered = !transport::handshaking(&c.tls);
            self.after_send(idx, answered);
        } else {
            // Pipelined requests arrived meanwhile.
            self.pump(idx);
        }
    }

    fn start_linger(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        let fd = c.fd();
        transport::close_notify(&mut c.tls, fd);
        c.tls = None;
        sys::shutdown(fd, libc::SHUT_WR);
        c.state = State::Lingering;
        c.input.clear();
        c.start = 0;
        self.wheel.set(idx, self.now + LINGER);
        if !c.recv_armed {
            self.close_conn(idx);
        }
    }

    /// Begin closing: cancel what is in flight, close when it has completed.
    fn close_conn(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.state == State::Free || c.state == State::Closing {
            return;
        }
        if c.state == State::Open && c.tls.is_some() {
            let fd = c.fd();
            transport::close_notify(&mut c.tls, fd);
        }
        c.state = State::Closing;
        self.wheel.cancel(idx);
        self.release_input(idx);
        let c = &self.conns[idx];
        if c.send_inflight {
            // Make the send finish now (with an error).
            sys::shutdown(c.fd(), libc::SHUT_RDWR);
        }
        if c.recv_armed {
            self.cancel_recv(idx);
        }
        self.maybe_free(idx);
    }

    fn maybe_free(&mut self, idx: usize) {
        let c = &mut self.conns[idx];
        if c.state != State::Closing || c.recv_armed || c.send_inflight {
            return;
        }
        c.sock = None;
        c.tls = None;
        c.state = State::Free;
        c.gen = c.gen.wrapping_add(1);
        if let Some(st) = c.send.take() {
            self.recycle(st);
        }
        self.free.push(idx as u32);
        self.open -= 1;
        self.counters.closed += 1;
        if self.gate.paused() && self.open < self.cfg.max_open_per_worker() {
            self.gate.resumed();
            let _ = self.arm_accept();
        }
    }

    /// Handle the timers due now (at most a batch); how many fired.
    fn expire_timers(&mut self) -> u64 {
        let mut fired = std::mem::take(&mut self.fired);
        self.wheel
            .expire_at_most(self.now, &mut fired, crate::conn::timer::EXPIRE_BATCH);
        let n = fired.len() as u64;
        for &idx in &fired {
            let c = &self.conns[idx];
            let phase = match c.state {
                State::Free | State::Closing => continue,
                State::Lingering => Phase::Lingering,
                State::Open if transport::handshaking(&c.tls) => Phase::Handshake {
                    hello: transport::hello_received(&c.tls),
                },
                State::Open if c.send_inflight => Phase::Sending,
                State::Open if c.partial => Phase::Request {
                    some_input: c.input.len() > c.start,
                },
                State::Open => Phase::Idle,
            };
            match lifecycle::expire(phase, self.gate.stopping(), &mut self.counters) {
                Expiry::Close => self.close_conn(idx),
                Expiry::RequestTimeout => {
                    let mut st = self.spare.pop().unwrap_or_else(SendState::new);
                    let c = &self.conns[idx];
                    let via = transport::via(&c.tls, c.fd());
                    self.responder
                        .timed_out(&mut st.batch, via, &c.input[c.start..]);
                    let c = &mut self.conns[idx];
                    c.close_after = true;
                    c.linger_after = true;
                    c.input.clear();
                    c.start = 0;
                    self.start_send(idx, st);
                }
            }
        }
        fired.clear();
        self.fired = fired;
        n
    }

    fn begin_stop(&mut self) {
        let deadline = self.gate.begin_stop(self.now);
        self.cancel_accept();
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            let idle = c.state == State::Open && !c.send_inflight && c.input.len() == c.start;
            if idle || (c.state == State::Lingering && !c.send_inflight) {
                self.close_conn(idx);
            } else if c.state == State::Open || c.state == State::Lingering {
                self.wheel.set(idx, deadline);
            }
        }
    }

    /// Close everything and wait (briefly) for the kernel to finish with
    /// every buffer it was given.
    fn shutdown_all(&mut self) {
        for idx in 0..self.conns.len() {
            let c = &self.conns[idx];
            if c.state != State::Free {
                sys::shutdown(c.fd(), libc::SHUT_RDWR);
                self.close_conn(idx);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(2);
        while (self.open > 0 || self.accept_armed()) && Instant::now() < deadline {
            let _ = uring::enter(&self.ring, 1, Wait::Upto(Duration::from_millis(10)));
            let cqes: Vec<_> = self
                .ring
                .completion()
                .map(|c| (c.user_data(), c.result(), c.flags()))
                .collect();
            for (u, res, flags) in cqes {
                let (kind, _, i) = ud_parts(u);
                if kind == K_ACCEPT {
                    if let Some(a) = self.acceptors.get_mut(i).filter(|_| !cqueue::more(flags)) {
                        a.armed = false;
                    }
                    if res >= 0 {
                        drop(sys::owned_fd(res));
                    }
                    continue;
                }
                self.completion(u, res, flags);
            }
        }
    }
}
