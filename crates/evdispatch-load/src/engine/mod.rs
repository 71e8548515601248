//! One worker: a single-threaded event loop on an evdispatch [`Poller`]
//! that opens the long-lived connections, then plays the planned arrivals
//! and records everything in a [`Recorder`].
//!
//! Time line of a worker: *setup* (open the persistent, inactive, idle and
//! slow connections, at most `connect_burst` connecting at once), *go*
//! (immediately, or when the parent writes `go` on standard input so that
//! every worker starts together), *warm-up*, the *measured window*, then a
//! *drain* of at most `--timeout` for the requests still outstanding.
//!
//! Here: the worker's state, its setup and its loop (waiting, dispatching
//! events). What the loop does is in five files beside this one:
//! `arrivals` (requests and sessions start), `connections` (open,
//! handshake, readiness, close), `requests` (write a request, read and
//! parse replies), `ring_io` (the same over io_uring) and `timeline`
//! (timers, intervals, the end of the run).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::time::{Duration, Instant, SystemTime};

use anyhow::{anyhow, bail, Context};
use evdispatch::{Config as PollerConfig, Events, Interest, Mechanism, Poller, Token};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use rand::distr::weighted::WeightedIndex;
use rand::{rngs::SmallRng, SeedableRng};
use rand_distr::Distribution;
use rustls::ClientConnection;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::config::{Config, HttpVersion, InactiveSend, IoEngine, Rate, WorkerSpec};
use crate::proto::http1::{build_request, Feed, Request, ResponseParser};
use crate::results::record::interval::{unix_s, IntervalReport};
use crate::results::record::{encode, new_histogram, Cause, Recorder, Role, WorkerReport};
use crate::ring::{self, Completion, Kind, Ring, Target, Wait};
use crate::schedule::{missed, Arrivals, RoundRobin};
use crate::tls::TlsClient;

mod arrivals;
mod connections;
mod h2;
mod requests;
mod ring_io;
mod timeline;

const STDIN_TOKEN: usize = usize::MAX;
const TIMER_TOKEN: usize = usize::MAX - 1;
/// How often timeouts are swept and progress is considered.
const TICK: Duration = Duration::from_millis(100);
/// Wait before re-trying a long-lived connection whose connect failed.
const RETRY: Duration = Duration::from_millis(100);
const READ_BUF: usize = 64 * 1024;
/// What rustls' `read_tls` asks of the socket at a time.
const TLS_READ: usize = 4096;
/// Receive buffer of the ring: one per connection on it where receives are
/// not multishot (a pool of at most 1,024 shared by all where they are),
/// and its size for workers with more than `RING_MANY` such connections
/// (30,000 persistent connections then hold 120 MB, not 480, without the
/// pool; 4 MB with it).
const RING_BUF: usize = 16 * 1024;
const RING_BUF_SMALL: usize = 4 * 1024;
const RING_MANY: u64 = 1024;
/// Submission slots of the ring (it grows nothing: a full queue is submitted).
const RING_ENTRIES: u32 = 256;

/// How the worker learns that it may start the run.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    /// As soon as the long-lived connections are open.
    Now,
    /// When a line `go` arrives on standard input (worker processes); the
    /// end of standard input aborts the worker.
    Stdin,
    /// At this wall-clock time (`--start-at`), or as soon as the
    /// long-lived connections are open if it is already past.
    At(SystemTime),
}

/// A progress sample (one JSON line from a worker process).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Progress {
    /// Worker index.
    pub index: u32,
    /// "setup", "warmup", "measure" or "drain".
    pub phase: String,
    /// Seconds since go (since the worker started, during setup).
    pub t_s: f64,
    /// Replies so far (all workloads).
    pub replies: u64,
    /// Errors so far.
    pub errors: u64,
    /// Connections open now.
    pub open: u64,
    /// Reopens so far.
    pub reopens: u64,
}

/// Callbacks from the worker's loop.
pub trait Hooks {
    /// The long-lived connections are open (before go).
    fn ready(&mut self) {}
    /// The run started at this instant.
    fn go(&mut self, _t0: Instant) {}
    /// A progress sample, about once per interval.
    fn progress(&mut self, _p: &Progress) {}
    /// A sampling interval of the measured window is over.
    fn interval(&mut self, _r: &IntervalReport) {}
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Free,
    /// Waiting out the retry delay after a failed connect.
    Backoff,
    Connecting,
    /// TCP connected, TLS handshake under way.
    Handshaking,
    Sending,
    /// The reply came before the whole request was sent, and the
    /// connection stays open: the rest of the request goes out first (its
    /// framing is on the wire: RFC 9112 §9.5), then what follows the reply.
    /// When it cannot within `--timeout`, the generator closes the
    /// connection (not an error: the reply is in) and goes on over a new one.
    Finishing,
    Receiving,
    /// Connected, no request outstanding (persistent, closed loop).
    Waiting,
    /// Connected and silent for good (inactive, idle after its request).
    Holding,
    /// A slow client between two steps of its request.
    Dribbling,
}

struct Conn {
    sock: Option<Socket>,
    role: Role,
    st: St,
    gen: u32,
    interest: Option<Interest>,
    t_connect: Instant,
    intended: Instant,
    sent: Instant,
    measured: bool,
    deadline: Option<Instant>,
    woff: usize,
    parser: ResponseParser,
    calls_left: u32,
    queue: VecDeque<(Instant, bool)>,
    established: bool,
    /// The TLS session of an https:// connection.
    tls: Option<Box<ClientConnection>>,
    /// When the TCP connect completed (the handshake's start).
    t_tcp: Instant,
    /// Index of the request being sent (in the engine's table).
    req: usize,
    /// Where a `--wsesslog` session is in its script.
    script: Option<ScriptPos>,
    /// The connection does its I/O on the worker's ring (it is not
    /// registered with the poller then).
    ring: bool,
    /// Identity of the connection on the ring (a completion carrying
    /// another is for an earlier connection of the slot).
    ring_id: u32,
    /// The receive buffer on the ring (None with multishot receives, which
    /// use the ring's pool); the slot keeps it across connections, and the
    /// kernel owns it while `recv_inflight`.
    rbuf: Option<Box<[u8]>>,
    recv_inflight: bool,
    send_inflight: bool,
    /// The bytes an HTTP/2 connection on the ring is sending (taken from
    /// its codec), from `wbuf_off` on, for the connection `wbuf_id`; the
    /// slot keeps the buffer across connections, and the kernel reads it
    /// while `wbuf_inflight`.
    wbuf: Vec<u8>,
    wbuf_off: usize,
    wbuf_id: u32,
    wbuf_inflight: bool,
    /// How the ring names the socket (its entry in the table of registered
    /// files, or its descriptor) while `ring`.
    target: Target,
    /// The HTTP/2 connection (`--http2`), once established.
    h2: Option<Box<h2::H2Conn>>,
    /// HTTP/2 requests a GOAWAY left unprocessed, sent again first on the
    /// next connection.
    h2_retry: VecDeque<h2::Retry>,
    /// The requests of a session's burst not yet on a stream (HTTP/2: a
    /// burst's calls go out at once, as concurrent streams).
    h2_burst: VecDeque<h2::Retry>,
}

/// A session log's session in progress: session, burst, request.
#[derive(Debug, Clone, Copy)]
struct ScriptPos {
    session: usize,
    burst: usize,
    pos: usize,
}

/// A session of the log as request indices: bursts and their think times.
type Script = Vec<(Vec<usize>, f64)>;

impl Conn {
    fn new(role: Role, now: Instant) -> Conn {
        Conn {
            sock: None,
            role,
            st: St::Free,
            gen: 0,
            interest: None,
            t_connect: now,
            intended: now,
            sent: now,
            measured: false,
            deadline: None,
            woff: 0,
            parser: ResponseParser::default(),
            calls_left: 0,
            queue: VecDeque::new(),
            established: false,
            tls: None,
            t_tcp: now,
            req: 0,
            script: None,
            ring: false,
            ring_id: 0,
            rbuf: None,
            recv_inflight: false,
            send_inflight: false,
            wbuf: Vec::new(),
            wbuf_off: 0,
            wbuf_id: 0,
            wbuf_inflight: false,
            target: Target::Fd(-1),
            h2: None,
            h2_retry: VecDeque::new(),
            h2_burst: VecDeque::new(),
        }
    }

    fn fd(&self) -> RawFd {
        self.sock.as_ref().map(|s| s.as_raw_fd()).unwrap_or(-1)
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if self.recv_inflight {
            // The kernel may still write into it (a worker that failed
            // before reaping every receive): never free it.
            if let Some(b) = self.rbuf.take() {
                Box::leak(b);
            }
        }
        if self.wbuf_inflight {
            // Likewise, the kernel may still read it.
            std::mem::forget(std::mem::take(&mut self.wbuf));
        }
    }
}

/// What a timer is for (armed for a slot's connection of one `gen`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    SlowStep,
    Retry,
    /// A session log's think time is over.
    Think,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Setup,
    WaitGo,
    Run,
    Drain,
}

/// The worker.
pub struct Engine<'h> {
    spec: WorkerSpec,
    hooks: &'h mut dyn Hooks,
    start: Start,
    poller: Poller,
    events: Events,
    /// Wakes the loop at the next planned instant with nanosecond
    /// precision (epoll's timeout has milliseconds: a slot would be late by
    /// up to 1 ms).
    timer: TimerFd,
    armed: Option<Instant>,
    /// How early the timer is armed for an arrival, which is then spun to:
    /// a high quantile of how late a timer wake-up comes (tens of µs on a
    /// VM), so that a request leaves on its slot instead of that much
    /// after it, which corrected latency would count.
    lead: Duration,
    /// The early instant armed for the next arrival, to measure how late
    /// the wake-up came.
    armed_early: Option<Instant>,
    slab: Vec<Conn>,
    free: Vec<usize>,
    /// When, what, slot, gen.
    timers: BinaryHeap<Reverse<(Instant, Timer, usize, u32)>>,
    /// Every request this worker sends, built once.
    requests: Vec<Request>,
    /// The same requests as HTTP/2 sends them (empty for HTTP/1.1).
    h2_requests: Vec<crate::proto::http2::Request>,
    /// The codec's events of one read (kept for its allocation).
    h2_events: Vec<crate::proto::http2::Event>,
    /// An HTTP/2 connection error was put in the warnings.
    h2_warned: bool,
    /// `--urls` weights and the seeded generator that picks by them.
    pick: Option<(WeightedIndex<f64>, SmallRng)>,
    /// `--wsesslog` sessions; the next one a session plays.
    scripts: Vec<Script>,
    next_script: usize,
    /// TLS for https:// targets.
    tls: Option<TlsClient>,
    tls_warned: bool,
    buf: Vec<u8>,
    rec: Recorder,
    edge: bool,
    target: SockAddr,
    domain: Domain,
    src_rr: usize,
    timeout: Duration,
    tolerance: Duration,
    interval: Duration,
    n_intervals: usize,
    phase: Phase,
    t_begin: Instant,
    t0: Instant,
    t_ms: Instant,
    t_me: Instant,
    drain_end: Instant,
    next_tick: Instant,
    next_progress: Instant,
    cpu: Option<evdispatch_host::CpuMeter>,
    cpu_use: Option<evdispatch_host::CpuUse>,
    open: u64,
    /// Long-lived connections not yet opened, by role.
    to_open: VecDeque<(Role, u64)>,
    /// Slow clients opened so far (their first connects follow the ramp).
    slow_opened: u64,
    connecting: u64,
    idle_first_pending: u64,
    /// Sessions still to start (None: no limit).
    sessions_left: Option<u64>,
    /// Sessions started and not over.
    sessions_active: u64,
    session_arrivals: Option<Arrivals>,
    next_session: Option<Instant>,
    persistent_slots: Vec<usize>,
    persistent_rr: RoundRobin,
    persistent_arrivals: Option<Arrivals>,
    next_persistent: Option<Instant>,
    closed_sessions: u64,
    setup_s: f64,
    warnings: Vec<String>,
    /// The instant `Start::At` names, once the connections are open.
    go_at: Option<Instant>,
    /// The sampling interval being recorded.
    iv_index: u32,
    /// Its corrected and uncorrected latencies.
    iv_latency: hdrhistogram::Histogram<u64>,
    iv_latency_uncorrected: hdrhistogram::Histogram<u64>,
    /// Errors counted before it began (None: window not begun).
    iv_base: Option<u64>,
    /// Measured requests sent in each interval (by the instant they left).
    iv_requests: Vec<u64>,
    /// Wall-clock start of the measured window, Unix seconds.
    window_start_unix_s: f64,
    /// Ctrl-C or `SIGTERM` stopped the run.
    interrupted: bool,
    /// The `uring` engine's ring (None: the readiness engine).
    ring: Option<Ring>,
    /// The poller may have events not yet taken (it is polled without
    /// waiting before the ring sleeps).
    poller_dirty: bool,
    completions: Vec<Completion>,
}

fn elapsed_us(from: Instant, to: Instant) -> u64 {
    to.saturating_duration_since(from)
        .as_micros()
        .min(u64::MAX as u128) as u64
}

impl<'h> Engine<'h> {
    /// Prepare a worker for `spec`.
    pub fn new(spec: WorkerSpec, start: Start, hooks: &'h mut dyn Hooks) -> anyhow::Result<Self> {
        let c = &spec.config;
        let mechanism: Mechanism = c.mechanism.parse()?;
        let mut poller = Poller::with_config(PollerConfig::new(mechanism))
            .with_context(|| format!("cannot create a {} poller", c.mechanism))?;
        let (requests, scripts) = build_requests(c);
        let pick = if c.urls.len() > 1 {
            let w = WeightedIndex::new(c.urls.iter().map(|u| u.weight))
                .map_err(|e| anyhow!("--urls weights: {e}"))?;
            let seed = c.seed.wrapping_add(spec.index as u64) ^ 0x5851_f42d_4c95_7f2d;
            Some((w, SmallRng::seed_from_u64(seed)))
        } else {
            None
        };
        let tls = c
            .tls
            .as_ref()
            .map(|t| TlsClient::new(t, c.http))
            .transpose()?;
        let now = Instant::now();
        let (persistent, closed_sessions) =
            crate::config::split_persistent(spec.rate, spec.sessions, spec.persistent);
        let persistent_role = if spec.rate == Some(Rate::Max) {
            Role::Closed
        } else {
            Role::Persistent
        };
        let to_open = [
            (persistent_role, persistent),
            (Role::Idle, spec.idle),
            (Role::Inactive, spec.inactive),
            (Role::Slow, spec.slow),
        ]
        .into_iter()
        .filter(|&(_, n)| n > 0)
        .collect();
        let interval = Duration::from_secs_f64(c.interval_s);
        let n_intervals = if c.run_to_end {
            usize::MAX // known when the window ends
        } else {
            intervals_in(c.duration_s, c.interval_s)
        };
        // Sized now where the window's length is known (grown otherwise).
        let known = if c.run_to_end { 0 } else { n_intervals };
        let rec = Recorder {
            interval_replies: vec![0; known],
            interval_peak_conns: vec![0; known],
            ..Default::default()
        };
        // CLOCK_MONOTONIC is the clock of `Instant`; the timerfd has nanosecond
        // resolution where a poller's timeout has only milliseconds.
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .context("cannot create a timerfd")?;
        poller
            .register(
                timer.as_fd().as_raw_fd(),
                Token(TIMER_TOKEN),
                Interest::READABLE,
            )
            .context("cannot watch the timerfd")?;
        let http2 = c.http == HttpVersion::Http2;
        let h2_requests = if http2 {
            build_h2_requests(c)
        } else {
            Vec::new()
        };
        let ring = match (c.engine, poller.as_raw_fd_opt()) {
            // HTTP/2 stays on the readiness engine unless asked: every
            // workload runs there, and h2c is cheaper there (a ring send
            // waits for its completion, a second io_uring_enter a turn).
            (IoEngine::Readiness, _) | (IoEngine::Auto, None) => None,
            (IoEngine::Auto, _) if http2 => None,
            (IoEngine::Uring, None) => bail!(
                "--engine uring needs a poller with a descriptor (epoll, epoll-et, uring); \
                 --mechanism {} has none",
                c.mechanism
            ),
            (engine, Some(fd)) => {
                let ring = Ring::new(RING_ENTRIES, fd, ring_files(&spec), ring_pool(&spec));
                match engine {
                    IoEngine::Auto => ring.ok(),
                    _ => Some(ring.context(
                        "--engine uring: cannot set up an io_uring; use --engine readiness",
                    )?),
                }
            }
        };
        Ok(Engine {
            edge: poller.info().trigger == evdispatch::Trigger::Edge,
            timer,
            armed: None,
            lead: LEAD_START,
            armed_early: None,
            poller,
            events: Events::with_capacity(1024),
            slab: Vec::new(),
            free: Vec::new(),
            timers: BinaryHeap::new(),
            requests,
            h2_requests,
            h2_events: Vec::new(),
            h2_warned: false,
            pick,
            scripts,
            next_script: spec.index as usize,
            tls,
            tls_warned: false,
            buf: vec![0; READ_BUF],
            rec,
            target: SockAddr::from(c.target),
            domain: Domain::for_address(c.target),
            src_rr: spec.index as usize,
            timeout: Duration::from_secs_f64(c.timeout_s),
            tolerance: Duration::from_secs_f64(c.slot_tolerance_ms / 1000.0),
            interval,
            n_intervals,
            phase: Phase::Setup,
            t_begin: now,
            t0: now,
            t_ms: now,
            t_me: now,
            drain_end: now,
            next_tick: now,
            next_progress: now + Duration::from_secs(1),
            cpu: None,
            cpu_use: None,
            open: 0,
            to_open,
            slow_opened: 0,
            connecting: 0,
            idle_first_pending: 0,
            // `Some(0)` is no limit for the run, and a worker's empty share
            // of a limited one.
            sessions_left: spec.sessions.filter(|_| c.sessions != Some(0)),
            sessions_active: 0,
            session_arrivals: None,
            next_session: None,
            persistent_slots: Vec::new(),
            persistent_rr: RoundRobin::default(),
            persistent_arrivals: None,
            next_persistent: None,
            closed_sessions,
            setup_s: 0.0,
            warnings: Vec::new(),
            go_at: None,
            iv_index: 0,
            iv_latency: new_histogram(),
            iv_latency_uncorrected: new_histogram(),
            iv_base: None,
            iv_requests: vec![0; known],
            window_start_unix_s: 0.0,
            interrupted: false,
            ring,
            poller_dirty: true,
            completions: Vec::new(),
            start,
            hooks,
            spec,
        })
    }

    /// Run to the end and report.
    pub fn run(mut self) -> anyhow::Result<WorkerReport> {
        if let Some(cpu) = self.spec.cpu {
            evdispatch_host::pin_current_thread(&[cpu])?;
        }
        // The default slack lets the kernel fire timers up to 50 µs late.
        nix::sys::prctl::set_timerslack(1).context("cannot set the timer slack")?;
        if matches!(self.start, Start::Stdin) {
            let stdin = io::stdin();
            let flags = OFlag::from_bits_retain(fcntl(&stdin, FcntlArg::F_GETFL)?);
            fcntl(&stdin, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))
                .context("cannot make standard input non-blocking")?;
            self.poller
                .register(0, Token(STDIN_TOKEN), Interest::READABLE)
                .context("cannot watch standard input")?;
        }
        let setup_limit = Duration::from_secs(30)
            + Duration::from_secs_f64(self.spec.config.slow_ramp_s)
            + Duration::from_millis(self.to_open.iter().map(|(_, n)| n).sum::<u64>() / 2)
            + self.timeout;
        loop {
            let now = Instant::now();
            if crate::interrupt::requested() && !self.interrupted {
                self.interrupted = true;
                match self.phase {
                    Phase::Setup | Phase::WaitGo => return self.finish(now),
                    Phase::Run => {
                        // The window ends now (it is empty if still warming up).
                        self.t_ms = self.t_ms.min(now);
                        self.t_me = now;
                        self.end_window(now)?;
                    }
                    Phase::Drain => {}
                }
                self.drain_end = now;
            }
            self.fire_timers(now);
            match self.phase {
                Phase::Setup => {
                    self.pump_opens(now);
                    if self.to_open.is_empty()
                        && self.connecting == 0
                        && self.idle_first_pending == 0
                        && self.timers.iter().all(|t| t.0 .1 != Timer::Retry)
                    {
                        self.setup_s = now.duration_since(self.t_begin).as_secs_f64();
                        self.hooks.ready();
                        match self.start {
                            Start::Now => self.go(now),
                            Start::Stdin => self.phase = Phase::WaitGo,
                            Start::At(t) => {
                                let wait = t.duration_since(SystemTime::now()).unwrap_or_default();
                                self.go_at = Some(Instant::now() + wait);
                                self.phase = Phase::WaitGo;
                            }
                        }
                        continue;
                    }
                    if now.duration_since(self.t_begin) > setup_limit {
                        bail!(
                            "worker {}: could not open the long-lived connections within {:.0} s \
                             ({} open, errors so far: {}); is the server accepting that many?",
                            self.spec.index,
                            setup_limit.as_secs_f64(),
                            self.open,
                            self.error_summary()
                        );
                    }
                    if now >= self.next_progress {
                        self.emit_progress(now, "setup");
                    }
                }
                Phase::WaitGo => {
                    if self.go_at.is_some_and(|t| now >= t) {
                        self.go(now);
                        continue;
                    }
                }
                Phase::Run => {
                    self.pump_opens(now);
                    if now >= self.t_ms && self.iv_base.is_none() {
                        self.iv_base = Some(self.rec.errors_total());
                    }
                    self.arrivals(now);
                    if now >= self.t_ms && self.cpu.is_none() && self.cpu_use.is_none() {
                        self.cpu = Some(evdispatch_host::CpuMeter::start(0)?);
                    }
                    if self.spec.config.run_to_end && now < self.t_me && self.sessions_done() {
                        // httperf's test-duration: the window ends with the
                        // last session.
                        self.t_me = now.max(self.t_ms);
                        let window = self.t_me.duration_since(self.t_ms).as_secs_f64();
                        self.n_intervals = intervals_in(window, self.interval.as_secs_f64());
                    }
                    self.flush_intervals(now)?;
                    if now >= self.t_me {
                        self.end_window(now)?;
                    }
                }
                Phase::Drain => {
                    self.pump_opens(now);
                    if now >= self.drain_end || !self.slab.iter().any(|c| self.outstanding(c)) {
                        return self.finish(now);
                    }
                }
            }
            if now >= self.next_tick {
                self.tick(now);
            }
            let wake = self.next_wake();
            let now = Instant::now();
            let arrival = self.next_arrival();
            let spin = self.spin_window();
            // An arrival closer than a wake-up's lateness: spin to it,
            // serving the network on the way without blocking, so that a
            // reply that comes meanwhile is taken (and timed) at once.
            if let Some(d) = arrival.filter(|&d| d > now && d - now <= spin) {
                loop {
                    self.serve(Some(Duration::ZERO))?;
                    let t = Instant::now();
                    if t >= d {
                        break;
                    }
                    let until = d.min(t + SPIN_POLL);
                    while Instant::now() < until {
                        std::hint::spin_loop();
                    }
                }
                continue;
            }
            if let Some(t) = wake {
                // An arrival is slept to `spin` before it, then spun to.
                let early = (Some(t) == arrival).then(|| t.checked_sub(spin).unwrap_or(t));
                let t = early.unwrap_or(t);
                self.armed_early = early;
                if self.armed != Some(t) {
                    // At least 1 ns: a zero expiry would disarm the timer.
                    let after = t
                        .saturating_duration_since(now)
                        .max(Duration::from_nanos(1));
                    self.timer.set(
                        Expiration::OneShot(TimeSpec::from_duration(after)),
                        TimerSetTimeFlags::empty(),
                    )?;
                    self.armed = Some(t);
                }
            }
            // The timerfd wakes the wait on time; the timeout is a backstop.
            self.serve(wake.map(|t| t.saturating_duration_since(now) + Duration::from_millis(5)))?;
            // Only a wake-up at or after the early instant is the timer's
            // (one before it came from the network and says nothing of how
            // late the timer wakes).
            if let Some(early) = self.armed_early.take() {
                let now = Instant::now();
                if now >= early {
                    self.lead = next_lead(self.lead, now - early);
                }
            }
        }
    }

    /// How far before an arrival the loop stops sleeping and spins: the
    /// lead (the timer's wake-up lateness), but at most a quarter of the
    /// mean gap between arrivals. Past a few thousand arrivals a second the
    /// lead would cover most of every gap and the generator would spend its
    /// core spinning (and look saturated); there a send may leave up to a
    /// wake-up's lateness after its slot instead.
    fn spin_window(&self) -> Duration {
        let rate: f64 = [&self.session_arrivals, &self.persistent_arrivals]
            .into_iter()
            .flatten()
            .map(|a| a.rate())
            .sum();
        spin_window(self.lead, rate)
    }

    /// Take what the network has for us, waiting at most `timeout`.
    fn serve(&mut self, timeout: Option<Duration>) -> anyhow::Result<()> {
        if self.ring.is_some() {
            self.ring_turn(timeout)
        } else {
            self.poller.wait(&mut self.events, timeout)?;
            self.dispatch_events()
        }
    }

    /// The next request arrival of the open-loop schedules (sessions and
    /// persistent connections), while the run is on.
    fn next_arrival(&self) -> Option<Instant> {
        if self.phase != Phase::Run {
            return None;
        }
        match (self.next_session, self.next_persistent) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// One turn of the `uring` engine: submit the queued sends and
    /// receives, wait for completions (not at all while the poller may hold
    /// events), handle them, then the poller's events if it has some.
    fn ring_turn(&mut self, timeout: Option<Duration>) -> anyhow::Result<()> {
        let wait = match timeout {
            _ if self.poller_dirty => Wait::No,
            Some(d) if d.is_zero() => Wait::No,
            // The armed timerfd wakes the wait through the poll on the
            // poller: no timeout (and no kernel timer per sleep) needed.
            _ if self.armed.is_some() => Wait::Completion,
            Some(d) => Wait::Upto(d),
            None => Wait::Upto(Duration::from_secs(3600)),
        };
        let mut done = std::mem::take(&mut self.completions);
        self.ring
            .as_mut()
            .expect("ring_turn runs with a ring")
            .turn(wait, &mut done)
            .context("io_uring_enter failed")?;
        for c in &done {
            match c.kind {
                Kind::Poller => {
                    self.poller_dirty = true;
                    if !c.more {
                        if let Some(r) = self.ring.as_mut() {
                            r.watch_poller()
                                .context("cannot re-arm the poll on the poller")?;
                        }
                    }
                }
                Kind::Send => self.ring_sent(c.slot, c.id, c.result, false),
                Kind::QuietSend => self.ring_sent(c.slot, c.id, c.result, true),
                Kind::Recv => self.ring_received(c),
            }
        }
        self.completions = done;
        if self.poller_dirty {
            let n = self.poller.wait(&mut self.events, Some(Duration::ZERO))?;
            // Events taken: ask again next turn, until it has none (a
            // level-triggered descriptor left ready is reported again,
            // while the ring's poll reports only new wake-ups).
            self.poller_dirty = n > 0;
            self.dispatch_events()?;
        }
        Ok(())
    }

    /// Handle the events of the last poller wait.
    fn dispatch_events(&mut self) -> anyhow::Result<()> {
        let events = std::mem::take(&mut self.events);
        for ev in &events {
            let token = ev.token().0;
            if token == STDIN_TOKEN {
                self.on_stdin()?;
                continue;
            }
            if token == TIMER_TOKEN {
                let mut b = [0u8; 8];
                let _ = nix::unistd::read(&self.timer, &mut b);
                self.armed = None;
                continue;
            }
            let Some(c) = self.slab.get(token) else {
                continue;
            };
            let gen = c.gen;
            if c.h2.is_some() {
                if ev.is_writable() && !self.h2_flush(token) {
                    continue;
                }
                if ev.is_readable() && self.slab[token].gen == gen {
                    self.on_readable(token);
                }
                continue;
            }
            match c.st {
                St::Free | St::Backoff => continue,
                St::Connecting => {
                    self.on_connected(token);
                    if self.slab[token].gen != gen || !ev.is_readable() {
                        continue;
                    }
                }
                St::Handshaking => {
                    // Reads, processes and flushes whatever the
                    // handshake needs, for either readiness.
                    self.on_readable(token);
                    continue;
                }
                St::Sending | St::Finishing if ev.is_writable() => {
                    self.write_request(token);
                    if self.slab[token].gen != gen {
                        continue;
                    }
                }
                _ => {}
            }
            if ev.is_readable() {
                self.on_readable(token);
            }
        }
        self.events = events;
        Ok(())
    }

    /// What the drain waits for. `Finishing` too: its reply is counted,
    /// but the server is still reading its request, which `finish` would
    /// otherwise cut in the middle of the body (the deadline bounds it).
    fn outstanding(&self, c: &Conn) -> bool {
        matches!(c.role, Role::Session | Role::Persistent | Role::Closed)
            && (matches!(
                c.st,
                St::Connecting | St::Handshaking | St::Sending | St::Finishing | St::Receiving
            ) || (!c.queue.is_empty() && c.st != St::Backoff)
                || !c.h2_retry.is_empty())
    }

    fn error_summary(&self) -> String {
        let parts: Vec<String> = crate::results::record::CAUSE_NAMES
            .iter()
            .enumerate()
            .filter_map(|(i, name)| {
                let n: u64 = self.rec.errors.iter().map(|r| r[i]).sum();
                (n > 0).then(|| format!("{name} {n}"))
            })
            .collect();
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }

    fn next_wake(&self) -> Option<Instant> {
        let mut t = Some(self.next_tick);
        let mut consider = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        consider(self.timers.peek().map(|r| r.0 .0));
        consider(self.next_session);
        consider(self.next_persistent);
        // A slow client already due waits for a connect slot: a connect
        // finishing wakes the loop, not a timer.
        let now = Instant::now();
        consider(self.slow_open_due().filter(|&due| due > now));
        if self.phase == Phase::Run {
            if self.cpu.is_none() && self.cpu_use.is_none() {
                consider(Some(self.t_ms));
            }
            consider(Some(self.t_me));
        }
        if self.phase == Phase::WaitGo {
            // Wake at least every tick, to see Ctrl-C.
            return Some(self.go_at.map_or(self.next_tick, |g| g.min(self.next_tick)));
        }
        if self.phase == Phase::Run && (self.iv_index as usize) < self.n_intervals {
            consider(Some(self.interval_end(self.iv_index)));
        }
        t
    }

    fn on_stdin(&mut self) -> anyhow::Result<()> {
        let mut b = [0u8; 64];
        loop {
            match nix::unistd::read(io::stdin(), &mut b).map_err(io::Error::from) {
                Ok(0) => bail!(
                    "worker {}: the parent process went away (standard input closed)",
                    self.spec.index
                ),
                Ok(n) => {
                    if b[..n].windows(2).any(|w| w == b"go") && self.phase == Phase::WaitGo {
                        self.go(Instant::now());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context("reading standard input"),
            }
        }
    }

    fn go(&mut self, now: Instant) {
        let c = &self.spec.config;
        self.phase = Phase::Run;
        self.t0 = now;
        self.t_ms = now + Duration::from_secs_f64(c.warmup_s);
        self.t_me = self.t_ms
            + if c.run_to_end {
                // Until the last session ends (`run`).
                UNTIL_THE_END
            } else {
                Duration::from_secs_f64(c.duration_s)
            };
        self.window_start_unix_s = unix_s(SystemTime::now()) + c.warmup_s;
        self.next_progress = now + self.interval;
        self.hooks.go(now);
        let base = now + Duration::from_secs_f64(self.spec.phase_s);
        let seed = c.seed.wrapping_add(self.spec.index as u64);
        if self.spec.sessions.is_some() && self.spec.session_rate > 0.0 {
            let mut a = Arrivals::new(base, self.spec.session_rate, c.arrival, seed);
            self.next_session = Some(a.next_instant());
            self.session_arrivals = Some(a);
        }
        if !self.persistent_slots.is_empty() && self.spec.persistent_rate > 0.0 {
            let mut a = Arrivals::new(
                base,
                self.spec.persistent_rate,
                c.arrival,
                seed ^ 0x9e37_79b9_7f4a_7c15,
            );
            self.next_persistent = Some(a.next_instant());
            self.persistent_arrivals = Some(a);
        }
        if self.spec.rate == Some(Rate::Max) {
            for i in 0..self.slab.len() {
                if self.slab[i].role == Role::Closed && self.slab[i].st == St::Waiting {
                    if self.slab[i].h2.is_some() {
                        self.h2_fill(i, now);
                        self.h2_flush(i);
                    } else {
                        self.start_request(i, now, now >= self.t_ms, now);
                    }
                }
            }
            // As many at once as the connections, of the sessions given.
            for _ in 0..self.closed_sessions {
                if !self.take_session() {
                    break;
                }
                self.start_session(now, now);
            }
        }
    }

    fn in_window(&self, t: Instant) -> bool {
        t >= self.t_ms && t < self.t_me
    }

    /// May a session's next call, or a closed-loop request, start at
    /// `now`? Only while the run is on and before the window's end: the
    /// phase changes at the top of the loop, so a reply or a timer handled
    /// in the turn that passes `t_me` still sees `Phase::Run`.
    fn may_start(&self, now: Instant) -> bool {
        self.phase == Phase::Run && now < self.t_me
    }
}

/// Write rustls' pending records to the socket: `Ok(true)` when all are
/// out, `Ok(false)` when the socket is full.
fn tls_flush(tls: &mut ClientConnection, sock: &Socket, sent: &mut u64) -> io::Result<bool> {
    while tls.wants_write() {
        let mut w: &Socket = sock;
        match tls.write_tls(&mut w) {
            Ok(n) => *sent += n as u64,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The requests of a run, built once: one per `--urls` entry (or the URL's
/// path), or every request of the session log with the sessions as index
/// scripts.
fn build_requests(c: &Config) -> (Vec<Request>, Vec<Script>) {
    requests_with(c, |method, path, body| {
        build_request(method, &c.host, path, &c.headers, body)
    })
}

/// The requests of an HTTP/2 run, in the order of [`build_requests`]' (the
/// session log's scripts index both).
fn build_h2_requests(c: &Config) -> Vec<crate::proto::http2::Request> {
    let scheme = if c.tls.is_some() { "https" } else { "http" };
    requests_with(c, |method, path, body| {
        crate::proto::http2::Request::new(method, scheme, &c.host, path, &c.headers, body)
    })
    .0
}

/// The run's requests made by `one(method, path, body)`: the session log's
/// (with its sessions as index scripts), or one per `--urls` entry (or the
/// URL's path).
fn requests_with<R>(
    c: &Config,
    one: impl Fn(&str, &str, Option<&[u8]>) -> R,
) -> (Vec<R>, Vec<Script>) {
    if let Some(log) = &c.wsesslog {
        let mut requests = Vec::new();
        let scripts = log
            .log
            .iter()
            .map(|session| {
                session
                    .iter()
                    .map(|burst| {
                        let idx = burst
                            .requests
                            .iter()
                            .map(|r| {
                                requests.push(one(
                                    &r.method,
                                    &r.uri,
                                    r.contents.as_deref().map(str::as_bytes),
                                ));
                                requests.len() - 1
                            })
                            .collect();
                        (idx, burst.think_s)
                    })
                    .collect()
            })
            .collect();
        return (requests, scripts);
    }
    let body = c.body.as_deref().map(|b| b.as_slice());
    let requests = if c.urls.is_empty() {
        vec![one(&c.method, &c.path, body)]
    } else {
        c.urls
            .iter()
            .map(|u| one(&c.method, &u.path, body))
            .collect()
    };
    (requests, Vec::new())
}

/// Sampling intervals in a window of `window_s`: a window that is not a
/// whole number of them ends with a shorter one (at least one).
fn intervals_in(window_s: f64, interval_s: f64) -> usize {
    ((window_s / interval_s) - 1e-9).ceil().max(1.0) as usize
}

/// How far ahead the end of a `run_to_end` window is put until its last
/// session ends (a year: never reached).
const UNTIL_THE_END: Duration = Duration::from_secs(365 * 24 * 3600);

/// Run one worker in this process and return its report.
pub fn run_worker(
    spec: WorkerSpec,
    start: Start,
    hooks: &mut dyn Hooks,
) -> anyhow::Result<WorkerReport> {
    evdispatch_host::set_rlimit(evdispatch_host::Resource::Nofile, None)
        .map_err(|e| anyhow!("cannot raise the descriptor limit: {e}"))?;
    Engine::new(spec, start, hooks)?.run()
}

impl Drop for Engine<'_> {
    /// An engine dropped before `finish` (an error on the way) may still
    /// have sends queued in its ring that read the request bytes later:
    /// leak those (built once, a few KiB) rather than free memory the
    /// kernel may still read. Receive buffers see to themselves (`Drop for
    /// Conn`).
    fn drop(&mut self) {
        if self.ring.is_some() {
            std::mem::forget(std::mem::take(&mut self.requests));
        }
    }
}

/// Entries of the ring's table of registered files: one per slot a
/// connection on the ring can take. Those connections (closed loop and
/// persistent) are opened first, so they hold the lowest slots; a slot past
/// the table is named by its descriptor.
fn ring_files(spec: &WorkerSpec) -> u32 {
    spec.persistent.clamp(1, 1 << 16) as u32
}

/// Size of a receive buffer on the ring: smaller for workers with many
/// connections on it (a buffer per connection without the pool).
fn ring_buf_size(spec: &WorkerSpec) -> usize {
    if spec.persistent > RING_MANY {
        RING_BUF_SMALL
    } else {
        RING_BUF
    }
}

/// The ring's pool for multishot receives: a buffer per connection on the
/// ring up to 1,024 (a power of two), of [`ring_buf_size`]. Buffers go back
/// as soon as a completion is parsed, so only the completions of one turn
/// hold them; a turn that runs dry ends receives with `ENOBUFS`, posted
/// again.
fn ring_pool(spec: &WorkerSpec) -> (u16, usize) {
    let n = spec.persistent.clamp(8, 1024).next_power_of_two() as u16;
    (n, ring_buf_size(spec))
}

/// The arrival lead to start from, before any wake-up was timed.
const LEAD_START: Duration = Duration::from_micros(50);

/// The most an arrival's wake-up is advanced (and so the most spun per
/// arrival): past it, a late wake-up is the machine's stall, not its
/// wake-up latency.
const LEAD_MAX: Duration = Duration::from_micros(250);

/// [`Engine::spin_window`] for a `lead` and arrivals at `rate` per second
/// (0: none planned).
fn spin_window(lead: Duration, rate: f64) -> Duration {
    if rate > 0.0 {
        lead.min(Duration::from_secs_f64(0.25 / rate))
    } else {
        lead
    }
}

/// While spinning to an arrival, the network is looked at this often.
const SPIN_POLL: Duration = Duration::from_micros(20);

/// The lead after a wake-up `late` past the early instant armed: up by a
/// quarter of the excess when later than `lead`, down by a thirty-second
/// of the margin otherwise, so it settles at a high quantile of the
/// lateness (a late wake-up costs a late send; an early one only a spin).
fn next_lead(lead: Duration, late: Duration) -> Duration {
    let next = if late > lead {
        lead + (late - lead) / 4
    } else {
        lead - (lead - late) / 32
    };
    next.min(LEAD_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoHooks;
    impl Hooks for NoHooks {}

    /// A reply or a timer handled in the loop's turn that passes the
    /// window's end (the phase is still `Run` then) starts nothing: not a
    /// session's next call, nor its reconnect, nor a closed-loop request.
    #[test]
    fn nothing_starts_after_the_window_in_the_turn_that_ends_it() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/", l.local_addr().unwrap());
        let cfg = Config::from_command_line([
            url.as_str(),
            "--sessions",
            "9",
            "--calls",
            "3",
            "--rate",
            "10",
            "--duration",
            "1",
            "--engine",
            "readiness",
        ])
        .unwrap();
        let mut hooks = NoHooks;
        let mut e = Engine::new(cfg.worker_spec(0), Start::Now, &mut hooks).unwrap();
        let now = Instant::now();
        e.phase = Phase::Run;
        e.t_ms = now - Duration::from_secs(1);
        e.t_me = now - Duration::from_millis(1);
        // A session connected, its first reply in: calls are left.
        let session = |e: &mut Engine, st: St| {
            e.sessions_active += 1;
            let slot = e.alloc(Role::Session, now);
            e.slab[slot].calls_left = 3;
            e.connect(slot, now);
            e.slab[slot].st = st;
            slot
        };
        let a = session(&mut e, St::Receiving);
        e.after_reply(a, None, now);
        assert_eq!(e.slab[a].st, St::Waiting, "a call after a reply");
        // Its think time over.
        let b = session(&mut e, St::Waiting);
        e.set_timer(now - Duration::from_millis(1), Timer::Think, b);
        e.fire_timers(now);
        assert_eq!(e.slab[b].st, St::Waiting, "a call after a think time");
        // The server closed it after a reply: no new connection.
        let c = session(&mut e, St::Receiving);
        e.after_reply(c, Some(true), now);
        assert_eq!(e.slab[c].st, St::Free, "a session reconnected");
        assert_eq!(
            (e.rec.counts.reconnects, e.rec.counts.sessions_unfinished),
            (0, 1)
        );
        // Closed loop.
        let d = e.alloc(Role::Closed, now);
        e.connect(d, now);
        e.slab[d].st = St::Receiving;
        e.after_reply(d, None, now);
        assert_eq!(e.slab[d].st, St::Waiting, "a closed-loop request");
        assert_eq!(e.rec.counts.requests + e.rec.counts.bytes_sent, 0);
    }

    /// `--engine auto` takes the ring for HTTP/1.1 wherever `--engine uring`
    /// can set one up, and keeps HTTP/2 on the readiness engine; `uring`
    /// takes the ring for both, `readiness` for neither.
    #[test]
    fn auto_takes_the_ring_for_http1_and_readiness_for_http2() {
        let on_ring = |args: &[&str]| {
            let cfg = Config::from_command_line(
                ["http://127.0.0.1:1/", "-c", "2", "-d", "1"]
                    .into_iter()
                    .chain(args.iter().copied()),
            )
            .unwrap();
            let mut hooks = NoHooks;
            Engine::new(cfg.worker_spec(0), Start::Now, &mut hooks).map(|e| e.ring.is_some())
        };
        let uring = match on_ring(&["--http2", "--engine", "uring"]) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: {e:#}");
                return;
            }
        };
        assert!(uring, "--engine uring without a ring");
        assert!(
            on_ring(&["--http1.1", "--engine", "auto"]).unwrap(),
            "HTTP/1.1: auto left the ring out"
        );
        assert!(
            !on_ring(&["--http2", "--engine", "auto"]).unwrap(),
            "HTTP/2: auto took the ring"
        );
        for http in ["--http1.1", "--http2"] {
            assert!(
                !on_ring(&[http, "--engine", "readiness"]).unwrap(),
                "{http}"
            );
        }
    }

    #[test]
    fn the_arrival_lead_settles_at_a_high_quantile_of_the_lateness() {
        let us = Duration::from_micros;
        // Up by a quarter of the excess, down by a thirty-second of the margin.
        assert_eq!(next_lead(us(40), us(80)), us(50));
        assert_eq!(next_lead(us(72), us(8)), us(70));
        // Never past the cap, however late a stalled machine wakes.
        assert_eq!(next_lead(us(240), Duration::from_millis(50)), LEAD_MAX);
        // Lateness of 20 µs nine times in ten and 60 µs once: the lead ends
        // between them, above the common case.
        let mut lead = LEAD_START;
        for i in 0..5000 {
            lead = next_lead(lead, if i % 10 == 0 { us(60) } else { us(20) });
        }
        assert!(lead > us(20) && lead < us(60), "{lead:?}");
    }

    /// The loop spins to an arrival over the lead at low rates, but never
    /// over more than a quarter of the gap between arrivals: at 6,500/s a
    /// lead of 200 µs would have the loop spin (and not serve the network)
    /// through every gap of 154 µs.
    #[test]
    fn the_spin_before_an_arrival_is_a_quarter_of_the_gap_at_most() {
        let us = Duration::from_micros;
        assert_eq!(spin_window(us(120), 100.0), us(120));
        assert_eq!(spin_window(us(120), 1000.0), us(120));
        assert_eq!(
            spin_window(us(200), 6500.0),
            Duration::from_secs_f64(0.25 / 6500.0)
        );
        assert_eq!(spin_window(us(200), 10_000.0), us(25));
        assert_eq!(spin_window(us(80), 0.0), us(80));
    }
}
