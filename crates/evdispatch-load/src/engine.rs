//! One worker: a single-threaded event loop on an evdispatch [`Poller`]
//! that opens the long-lived connections, then plays the planned arrivals
//! and records everything in a [`Recorder`].
//!
//! Time line of a worker: *setup* (open the persistent, inactive, idle and
//! slow connections, at most `connect_burst` connecting at once), *go*
//! (immediately, or when the parent writes `go` on standard input so that
//! every worker starts together), *warm-up*, the *measured window*, then a
//! *drain* of at most `--timeout` for the requests still outstanding.

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

use crate::config::{Config, InactiveSend, IoEngine, Rate, WorkerSpec};
use crate::http::{build_request, Feed, Request, ResponseParser};
use crate::interval::{unix_s, IntervalReport};
use crate::record::{encode, new_histogram, Cause, Recorder, Role, WorkerReport};
use crate::ring::{self, Completion, Kind, Ring, Target, Wait};
use crate::schedule::{missed, Arrivals, RoundRobin};
use crate::tls::TlsClient;

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

/// Hooks that do nothing.
pub struct NoHooks;
impl Hooks for NoHooks {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum St {
    Free,
    /// Waiting out the retry delay after a failed connect.
    Backoff,
    Connecting,
    /// TCP connected, TLS handshake under way.
    Handshaking,
    Sending,
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
    /// A new request started while the previous send was still in flight:
    /// send it when that completes.
    send_again: bool,
    /// How the ring names the socket (its entry in the table of registered
    /// files, or its descriptor) while `ring`.
    target: Target,
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
            send_again: false,
            target: Target::Fd(-1),
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
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Timer {
    SlowStep {
        slot: usize,
        gen: u32,
    },
    Retry {
        slot: usize,
        gen: u32,
    },
    /// A session log's think time is over.
    Think {
        slot: usize,
        gen: u32,
    },
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
    timers: BinaryHeap<Reverse<(Instant, Timer)>>,
    /// Every request this worker sends, built once.
    requests: Vec<Request>,
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
    cpu: Option<evdispatch_proc::CpuMeter>,
    cpu_use: Option<evdispatch_proc::CpuUse>,
    open: u64,
    /// Long-lived connections not yet opened, by role.
    to_open: VecDeque<(Role, u64)>,
    /// Slow clients opened so far (their first connects follow the ramp).
    slow_opened: u64,
    connecting: u64,
    idle_first_pending: u64,
    sessions_left: Option<u64>,
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
    /// Requests and errors counted before it began (None: window not begun).
    iv_base: Option<(u64, u64)>,
    /// Wall-clock start of the measured window, Unix seconds.
    window_start_unix_s: f64,
    /// Ctrl-C stopped the run.
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
        let poller = Poller::with_config(PollerConfig::new(mechanism))
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
        let tls = c.tls.as_ref().map(TlsClient::new).transpose()?;
        let now = Instant::now();
        let mut to_open = VecDeque::new();
        let closed_sessions = match (spec.rate, spec.sessions) {
            (Some(Rate::Max), Some(_)) => spec.persistent.max(1),
            _ => 0,
        };
        let persistent = if closed_sessions > 0 {
            0
        } else {
            spec.persistent
        };
        let persistent_role = if spec.rate == Some(Rate::Max) {
            Role::Closed
        } else {
            Role::Persistent
        };
        for (role, n) in [
            (persistent_role, persistent),
            (Role::Idle, spec.idle),
            (Role::Inactive, spec.inactive),
            (Role::Slow, spec.slow),
        ] {
            if n > 0 {
                to_open.push_back((role, n));
            }
        }
        let interval = Duration::from_secs_f64(c.interval_s);
        // A window that is not a whole number of intervals ends with a
        // shorter one of its own; only full intervals give a rate sample.
        let n_intervals = ((c.duration_s / c.interval_s) - 1e-9).ceil().max(1.0) as usize;
        let rec = Recorder {
            interval_replies: vec![0; n_intervals],
            interval_peak_conns: vec![0; n_intervals],
            ..Default::default()
        };
        // CLOCK_MONOTONIC is the clock of `Instant`; the timerfd has nanosecond
        // resolution where a poller's timeout has only milliseconds.
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .context("cannot create a timerfd")?;
        let mut poller = poller;
        poller
            .register(
                timer.as_fd().as_raw_fd(),
                Token(TIMER_TOKEN),
                Interest::READABLE,
            )
            .context("cannot watch the timerfd")?;
        let ring = match (c.engine, poller.as_raw_fd_opt()) {
            (IoEngine::Readiness, _) => None,
            (IoEngine::Auto, None) => None,
            (IoEngine::Uring, None) => bail!(
                "--engine uring needs a poller with a descriptor (epoll, epoll-et, uring); \
                 --mechanism {} has none",
                c.mechanism
            ),
            (IoEngine::Auto, Some(fd)) => {
                Ring::new(RING_ENTRIES, fd, ring_files(&spec), ring_pool(&spec)).ok()
            }
            (IoEngine::Uring, Some(fd)) => Some(
                Ring::new(RING_ENTRIES, fd, ring_files(&spec), ring_pool(&spec)).with_context(
                    || {
                        "--engine uring: cannot set up an io_uring; use --engine readiness"
                            .to_string()
                    },
                )?,
            ),
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
            sessions_left: spec.sessions.filter(|&n| n > 0),
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
            evdispatch_proc::pin_current_thread(&[cpu])?;
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
            + Duration::from_millis(self.long_lived_total() / 2)
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
                        && self
                            .timers
                            .iter()
                            .all(|t| !matches!(t.0 .1, Timer::Retry { .. }))
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
                    self.arrivals(now);
                    if now >= self.t_ms && self.cpu.is_none() && self.cpu_use.is_none() {
                        self.cpu = Some(evdispatch_proc::CpuMeter::start(0)?);
                    }
                    if now >= self.t_ms && self.iv_base.is_none() {
                        self.iv_base = Some((self.rec.counts.requests, self.rec.errors_total()));
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
                    self.serve_without_waiting()?;
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
            let timeout = wake.map(|t| t.saturating_duration_since(now) + Duration::from_millis(5));
            if self.ring.is_some() {
                self.ring_turn(timeout)?;
            } else {
                self.poller.wait(&mut self.events, timeout)?;
                self.dispatch_events()?;
            }
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

    /// Take what the network has for us now, without waiting.
    fn serve_without_waiting(&mut self) -> anyhow::Result<()> {
        if self.ring.is_some() {
            self.ring_turn(Some(Duration::ZERO))
        } else {
            self.poller.wait(&mut self.events, Some(Duration::ZERO))?;
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
        {
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
                    St::Sending if ev.is_writable() => {
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
        }
        Ok(())
    }

    fn long_lived_total(&self) -> u64 {
        self.to_open.iter().map(|(_, n)| n).sum()
    }

    fn outstanding(&self, c: &Conn) -> bool {
        matches!(c.role, Role::Session | Role::Persistent | Role::Closed)
            && (matches!(
                c.st,
                St::Connecting | St::Handshaking | St::Sending | St::Receiving
            ) || (!c.queue.is_empty() && c.st != St::Backoff))
    }

    fn error_summary(&self) -> String {
        let mut parts = Vec::new();
        for c in crate::record::CAUSES {
            let n: u64 = self.rec.errors.iter().map(|r| r[c as usize]).sum();
            if n > 0 {
                parts.push(format!("{} {n}", c.name()));
            }
        }
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
        self.t_me = self.t_ms + Duration::from_secs_f64(c.duration_s);
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
                    self.start_request(i, now, now >= self.t_ms, now);
                }
            }
            for _ in 0..self.closed_sessions {
                self.start_session(now, now);
            }
        }
    }

    fn in_window(&self, t: Instant) -> bool {
        t >= self.t_ms && t < self.t_me
    }

    // ---- arrivals ------------------------------------------------------

    fn arrivals(&mut self, now: Instant) {
        while let Some(t) = self.next_session.filter(|&t| t <= now) {
            if t >= self.t_me || self.sessions_left == Some(0) {
                self.next_session = None;
                break;
            }
            if let Some(n) = &mut self.sessions_left {
                *n -= 1;
            }
            if self.in_window(t) && missed(true, t, now, self.tolerance) {
                self.rec.counts.missed_slots += 1;
            }
            self.start_session(t, now);
            self.next_session = self.session_arrivals.as_mut().map(|a| a.next_instant());
        }
        while let Some(t) = self.next_persistent.filter(|&t| t <= now) {
            if t >= self.t_me {
                self.next_persistent = None;
                break;
            }
            let slot = self.persistent_slots[self.persistent_rr.deal(self.persistent_slots.len())];
            let measured = self.in_window(t);
            let c = &mut self.slab[slot];
            let ready = c.st == St::Waiting && c.queue.is_empty();
            if measured && missed(ready, t, now, self.tolerance) {
                self.rec.counts.missed_slots += 1;
            }
            if ready {
                self.start_request(slot, t, measured, now);
            } else {
                c.queue.push_back((t, measured));
            }
            self.next_persistent = self.persistent_arrivals.as_mut().map(|a| a.next_instant());
        }
    }

    fn start_session(&mut self, intended: Instant, now: Instant) {
        let slot = self.alloc(Role::Session, now);
        let c = &mut self.slab[slot];
        c.intended = intended;
        c.measured = intended >= self.t_ms && intended < self.t_me;
        c.calls_left = self.spec.config.calls;
        c.script = None;
        if !self.scripts.is_empty() {
            let session = self.next_script % self.scripts.len();
            self.next_script += 1;
            c.script = Some(ScriptPos {
                session,
                burst: 0,
                pos: 0,
            });
            c.req = self.scripts[session][0].0[0];
        }
        self.connect(slot, now);
    }

    /// Move a session to its next call (`--calls`, or its session log's next
    /// request): `Some(None)` to send it now, `Some(Some(think))` after a
    /// think time, `None` when the session is over.
    fn session_next(&mut self, slot: usize) -> Option<Option<Duration>> {
        let c = &mut self.slab[slot];
        if c.script.is_some() {
            return self.script_advance(slot);
        }
        c.calls_left = c.calls_left.saturating_sub(1);
        (c.calls_left > 0).then_some(None)
    }

    /// The server closed a session's connection after a reply (`next` is
    /// what [`Engine::session_next`] said comes after it): the session goes
    /// on over a new connection, after its think time if one is due, as
    /// httperf's sessions do. After the run, or after its last call, it is
    /// over.
    fn session_resume(&mut self, slot: usize, next: Option<Option<Duration>>, now: Instant) {
        match next {
            Some(think) if self.phase == Phase::Run => {
                self.rec.counts.reconnects += 1;
                match think {
                    // No connection while it thinks: the timer reconnects.
                    Some(t) if !t.is_zero() => self.think(slot, now + t),
                    _ => self.session_reconnect(slot, now),
                }
            }
            _ => {
                self.free.push(slot);
                self.session_over(now);
            }
        }
    }

    /// A session waits for its next request until `until` (its think time).
    fn think(&mut self, slot: usize, until: Instant) {
        let c = &mut self.slab[slot];
        c.st = St::Waiting;
        let gen = c.gen;
        self.timers
            .push(Reverse((until, Timer::Think { slot, gen })));
    }

    /// Open a new connection for a session whose server closed the last
    /// one; its next request is due now.
    fn session_reconnect(&mut self, slot: usize, now: Instant) {
        let measured = self.in_window(now);
        let c = &mut self.slab[slot];
        // A new connection: events of the old one (still being read) are
        // not its own.
        c.gen = c.gen.wrapping_add(1);
        c.intended = now;
        c.measured = measured;
        self.connect(slot, now);
    }

    /// Move a session log's session to its next request: `Some(None)` to
    /// send it now, `Some(Some(think))` after a think time, `None` when
    /// the session is over.
    fn script_advance(&mut self, slot: usize) -> Option<Option<Duration>> {
        let c = &mut self.slab[slot];
        let p = c.script.as_mut()?;
        let script = &self.scripts[p.session];
        if p.pos + 1 < script[p.burst].0.len() {
            p.pos += 1;
            c.req = script[p.burst].0[p.pos];
            return Some(None);
        }
        if p.burst + 1 < script.len() {
            let think = script[p.burst].1;
            p.burst += 1;
            p.pos = 0;
            c.req = script[p.burst].0[0];
            return Some(Some(Duration::from_secs_f64(think)));
        }
        None
    }

    // ---- connections ---------------------------------------------------

    fn alloc(&mut self, role: Role, now: Instant) -> usize {
        match self.free.pop() {
            Some(i) => {
                let c = &mut self.slab[i];
                c.role = role;
                c.gen = c.gen.wrapping_add(1);
                c.queue.clear();
                c.calls_left = 0;
                i
            }
            None => {
                self.slab.push(Conn::new(role, now));
                self.slab.len() - 1
            }
        }
    }

    /// When the next slow client may open, if the ramp holds it back.
    fn slow_open_due(&self) -> Option<Instant> {
        let ramp = self.spec.config.slow_ramp_s;
        match self.to_open.front() {
            Some((Role::Slow, _)) if ramp > 0.0 && self.spec.slow > 0 => {
                let share = self.slow_opened as f64 / self.spec.slow as f64;
                Some(self.t_begin + Duration::from_secs_f64(ramp * share))
            }
            _ => None,
        }
    }

    fn pump_opens(&mut self, now: Instant) {
        while self.connecting < self.spec.config.connect_burst {
            if self.slow_open_due().is_some_and(|due| due > now) {
                return;
            }
            let Some((role, n)) = self.to_open.front_mut() else {
                return;
            };
            let role = *role;
            if role == Role::Slow {
                self.slow_opened += 1;
            }
            *n -= 1;
            if *n == 0 {
                self.to_open.pop_front();
            }
            let slot = self.alloc(role, now);
            if matches!(role, Role::Persistent | Role::Closed) {
                self.persistent_slots.push(slot);
            }
            if role == Role::Idle {
                self.idle_first_pending += 1;
            }
            self.connect(slot, now);
        }
    }

    fn note_open(&mut self, now: Instant, delta: i64) {
        self.open = (self.open as i64 + delta) as u64;
        if delta > 0 {
            self.rec.counts.conn_peak = self.rec.counts.conn_peak.max(self.open);
            if self.phase == Phase::Run && now >= self.t_ms && now < self.t_me {
                let i = self.interval_index(now);
                let p = &mut self.rec.interval_peak_conns[i];
                *p = (*p).max(self.open);
            }
        }
    }

    fn interval_index(&self, now: Instant) -> usize {
        let i =
            (now.duration_since(self.t_ms).as_secs_f64() / self.interval.as_secs_f64()) as usize;
        i.min(self.n_intervals - 1)
    }

    fn new_socket(&mut self) -> io::Result<Socket> {
        let s = Socket::new(
            self.domain,
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        s.set_tcp_nodelay(true)?;
        let srcs = &self.spec.config.source_addrs;
        if !srcs.is_empty() {
            let src = srcs[self.src_rr % srcs.len()];
            self.src_rr = self.src_rr.wrapping_add(1);
            nix::sys::socket::setsockopt(
                &s,
                nix::sys::socket::sockopt::IpBindAddressNoPort,
                &true,
            )?;
            s.bind(&SockAddr::from(SocketAddr::new(src, 0)))?;
        }
        Ok(s)
    }

    /// Open (or re-open) the connection of `slot`.
    fn connect(&mut self, slot: usize, now: Instant) {
        self.rec.counts.conn_attempted += 1;
        let sock = match self.new_socket() {
            Ok(s) => s,
            Err(e) => return self.connect_failed(slot, Cause::of(&e), now),
        };
        let res = sock.connect(&self.target);
        let in_progress = match &res {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
            Err(e) => {
                let cause = Cause::of(e);
                drop(sock);
                return self.connect_failed(slot, cause, now);
            }
        };
        self.poller_dirty = true;
        if let Err(e) = self
            .poller
            .register(sock.as_raw_fd(), Token(slot), Interest::BOTH)
        {
            drop(sock);
            return self.connect_failed(slot, Cause::of(&e), now);
        }
        let c = &mut self.slab[slot];
        c.sock = Some(sock);
        c.interest = Some(Interest::BOTH);
        c.st = St::Connecting;
        c.t_connect = now;
        c.deadline = Some(now + self.timeout);
        c.established = false;
        c.tls = None;
        c.parser.reset();
        self.connecting += 1;
        self.note_open(now, 1);
        if !in_progress {
            self.on_connected(slot);
        }
    }

    fn connect_failed(&mut self, slot: usize, cause: Cause, now: Instant) {
        self.rec.counts.conn_failed += 1;
        let role = self.slab[slot].role;
        self.rec.error(role, cause);
        self.after_loss(slot, now, true);
    }

    fn on_connected(&mut self, slot: usize) {
        let now = Instant::now();
        let err = {
            let c = &self.slab[slot];
            match c.sock.as_ref().map(|s| s.take_error()) {
                Some(Ok(None)) => None,
                Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
                None => Some(io::Error::other("no socket")),
            }
        };
        self.connecting -= 1;
        if let Some(e) = err {
            self.close(slot, now);
            return self.connect_failed(slot, Cause::of(&e), now);
        }
        self.rec.counts.conn_established += 1;
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let c = &mut self.slab[slot];
        c.established = true;
        c.deadline = None;
        if in_window {
            let _ = self.rec.connect.record(elapsed_us(c.t_connect, now).max(1));
        }
        if let Some(client) = &self.tls {
            // The handshake counts as part of connecting (the connect burst
            // and the setup wait for it).
            self.connecting += 1;
            c.st = St::Handshaking;
            c.t_tcp = now;
            c.deadline = Some(now + self.timeout);
            match client.connection() {
                Ok(t) => c.tls = Some(Box::new(t)),
                Err(e) => return self.tls_failed(slot, &e, now),
            }
            return self.on_readable(slot);
        }
        self.ready(slot, now);
    }

    /// The TLS handshake of `slot` is complete.
    fn handshake_done(&mut self, slot: usize, now: Instant) {
        self.connecting -= 1;
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let c = &mut self.slab[slot];
        c.deadline = None;
        if in_window {
            let _ = self
                .rec
                .tls_handshake
                .record(elapsed_us(c.t_tcp, now).max(1));
        }
        self.ready(slot, now);
    }

    /// A TLS failure: counted as `tls`, explained once in the warnings.
    fn tls_failed(&mut self, slot: usize, e: &rustls::Error, now: Instant) {
        if !self.tls_warned {
            self.tls_warned = true;
            self.warnings.push(format!(
                "TLS failure with {}: {}",
                self.spec.config.target,
                crate::tls::explain(e)
            ));
        }
        self.fail(slot, Cause::Tls, now);
    }

    /// The connection (with its TLS handshake, if any) is ready: start what
    /// its role does.
    fn ready(&mut self, slot: usize, now: Instant) {
        if matches!(self.slab[slot].role, Role::Persistent | Role::Closed) && !self.adopt(slot, now)
        {
            return; // failed, and already handled
        }
        let c = &mut self.slab[slot];
        match c.role {
            Role::Session => {
                let (intended, measured) = (c.intended, c.measured);
                self.start_request(slot, intended, measured, now);
            }
            Role::Persistent | Role::Closed => {
                if let Some((t, m)) = c.queue.pop_front() {
                    self.start_request(slot, t, m, now);
                } else if c.role == Role::Closed && self.phase == Phase::Run && now < self.t_me {
                    let m = self.in_window(now);
                    self.start_request(slot, now, m, now);
                } else {
                    c.st = St::Waiting;
                    self.set_interest(slot, Interest::READABLE);
                }
            }
            Role::Inactive => {
                c.st = St::Sending;
                c.woff = 0;
                if let Some((w, rng)) = &mut self.pick {
                    c.req = w.sample(rng);
                }
                self.write_request(slot);
            }
            Role::Idle => {
                self.start_request(slot, now, false, now);
            }
            Role::Slow => {
                c.st = St::Dribbling;
                c.woff = 0;
                if let Some((w, rng)) = &mut self.pick {
                    c.req = w.sample(rng);
                }
                c.parser.expect_no_body(self.requests[c.req].head);
                c.sent = now;
                c.intended = now;
                // Each slow client dribbles at its own phase of the
                // interval, as independent clients would: started together,
                // thousands of them would otherwise send in one burst per
                // interval, an artefact of one generator driving them all.
                let gen = c.gen;
                let phase = (slot as f64 * 0.618_033_988_749_895).fract();
                let at = now + Duration::from_secs_f64(phase * self.spec.config.slow_interval_s);
                self.timers
                    .push(Reverse((at, Timer::SlowStep { slot, gen })));
                self.set_interest(slot, Interest::READABLE);
            }
        }
    }

    fn set_interest(&mut self, slot: usize, want: Interest) {
        let c = &mut self.slab[slot];
        if c.interest == Some(want) || c.ring {
            return;
        }
        let fd = c.fd();
        self.poller_dirty = true;
        if self.poller.modify(fd, Token(slot), want).is_ok() {
            c.interest = Some(want);
        }
    }

    // ---- the uring engine's connections -------------------------------

    /// Move the plain connection of `slot` from the poller to the ring,
    /// where a receive stays posted for as long as it is open (a reply, or
    /// the server closing it, completes it). False when that failed (the
    /// failure is handled: the slot is reconnecting or backing off).
    fn adopt(&mut self, slot: usize, now: Instant) -> bool {
        let c = &mut self.slab[slot];
        let Some(sock) = c.sock.as_ref() else {
            return true;
        };
        if self.ring.is_none() || c.tls.is_some() || c.ring {
            return true;
        }
        // The ring waits for the socket itself: a blocking socket makes it
        // poll instead of answering EAGAIN. Then the poller forgets it.
        let fd = sock.as_raw_fd();
        if let Err(e) = sock.set_nonblocking(false) {
            self.fail(slot, Cause::of(&e), now);
            return false;
        }
        self.poller_dirty = true;
        if let Err(e) = self.poller.deregister(fd) {
            self.fail(slot, Cause::of(&e), now);
            return false;
        }
        let c = &mut self.slab[slot];
        c.interest = None;
        c.ring = true;
        c.target = match self.ring.as_mut() {
            Some(r) => r.register(slot, fd),
            None => Target::Fd(fd),
        };
        c.ring_id = ring::next_id(c.ring_id);
        c.send_inflight = false;
        c.send_again = false;
        let multishot = self.ring.as_ref().is_some_and(|r| r.multishot());
        if c.rbuf.is_none() && !multishot {
            c.rbuf = Some(vec![0u8; ring_buf_size(&self.spec)].into_boxed_slice());
        }
        let id = c.ring_id;
        self.ring_post_recv(slot, now);
        let c = &self.slab[slot];
        c.ring && c.ring_id == id
    }

    /// Post the receive of `slot`, unless one is still in flight for the
    /// slot (an earlier connection's, not yet completed, that may still
    /// write the slot's buffer: its completion posts this one). A multishot
    /// receive (into the ring's pool) stays posted until it ends.
    #[allow(unsafe_code)]
    fn ring_post_recv(&mut self, slot: usize, now: Instant) {
        let c = &mut self.slab[slot];
        let (Some(ring), Some(_)) = (self.ring.as_mut(), c.sock.as_ref()) else {
            return;
        };
        if !c.ring || c.recv_inflight {
            return;
        }
        let posted = if ring.multishot() {
            ring.recv_multi(c.target, slot, c.ring_id)
        } else {
            let Some(buf) = c.rbuf.as_deref_mut() else {
                return;
            };
            // SAFETY: the buffer is the slot's, which keeps it (never frees
            // or touches it) while `recv_inflight`, cleared only by the
            // completion.
            unsafe { ring.recv(c.target, buf, slot, c.ring_id) }
        };
        match posted {
            Ok(()) => c.recv_inflight = true,
            Err(e) => self.fail(slot, Cause::of(&e), now),
        }
    }

    /// Queue the send of what remains of the request of `slot`.
    #[allow(unsafe_code)]
    fn ring_send(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        if c.send_inflight {
            c.send_again = true;
            return;
        }
        let (Some(ring), Some(_)) = (self.ring.as_mut(), c.sock.as_ref()) else {
            return;
        };
        let bytes = &self.requests[c.req].bytes[c.woff..];
        // SAFETY: `requests` is built once in `new` and never changed or
        // dropped before the engine, whose `finish` reaps every completion
        // (or leaks what the kernel could still touch).
        match unsafe { ring.send(c.target, bytes, slot, c.ring_id) } {
            Ok(true) => {
                // Sent whole, or its completion says it failed.
                self.rec.counts.bytes_sent += bytes.len() as u64;
                c.woff += bytes.len();
                c.st = St::Receiving;
            }
            Ok(false) => c.send_inflight = true,
            Err(e) => self.fail(slot, Cause::of(&e), Instant::now()),
        }
    }

    /// A send of `slot` completed.
    fn ring_sent(&mut self, slot: usize, id: u32, res: i32, quiet: bool) {
        let Some(c) = self.slab.get_mut(slot) else {
            return;
        };
        if !c.ring || c.ring_id != id || c.sock.is_none() {
            return; // an earlier connection's (adopt cleared the flag)
        }
        c.send_inflight = false;
        if quiet {
            // Quiet sends complete only when they fail or fall short (the
            // socket broke midway): either way the request is lost.
            let e = io::Error::from_raw_os_error(if res < 0 { -res } else { libc::EPIPE });
            return self.fail(slot, Cause::of(&e), Instant::now());
        }
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock {
                return self.ring_send(slot);
            }
            return self.fail(slot, Cause::of(&e), Instant::now());
        }
        self.rec.counts.bytes_sent += res as u64;
        if std::mem::take(&mut c.send_again) {
            // The bytes were the previous request's: start the new one.
            return self.ring_send(slot);
        }
        c.woff += res as usize;
        if c.st == St::Sending {
            if c.woff < self.requests[c.req].bytes.len() {
                self.ring_send(slot);
            } else {
                c.st = St::Receiving;
            }
        }
    }

    /// A receive of `slot` completed: the reply's bytes, or the end.
    #[allow(unsafe_code)]
    fn ring_received(&mut self, done: &Completion) {
        let (slot, res) = (done.slot, done.result);
        let now = Instant::now();
        // A multishot receive's bytes are in a pool buffer, lent until parsed.
        let lent = match (done.buf, self.ring.as_ref()) {
            // SAFETY: given back below, before this returns; nothing here
            // drops the ring.
            (Some(bid), Some(r)) => Some(unsafe { r.lend(bid, res.max(0) as usize) }),
            _ => None,
        };
        let Some(c) = self.slab.get_mut(slot) else {
            if let (Some(l), Some(r)) = (lent, self.ring.as_mut()) {
                r.recycle(l);
            }
            return;
        };
        if !done.more {
            c.recv_inflight = false;
        }
        if c.ring && c.ring_id == done.id && c.sock.is_some() {
            match res {
                0 => self.on_eof(slot, now),
                n if n > 0 => {
                    let n = n as usize;
                    self.rec.counts.bytes_received += n as u64;
                    if let Some(l) = &lent {
                        self.on_data(slot, l);
                    } else {
                        let buf = c.rbuf.take().expect("a posted receive has its buffer");
                        self.on_data(slot, &buf[..n]);
                        // A connection that replaced this one in `on_data`
                        // (the reply closed it, the reconnect was immediate)
                        // has its own buffer, maybe lent to the kernel
                        // already: keep it, and let this one, no longer the
                        // kernel's, go.
                        let c = &mut self.slab[slot];
                        if c.rbuf.is_none() {
                            c.rbuf = Some(buf);
                        }
                    }
                }
                // The pool ran dry: the bytes wait in the socket for the
                // receive posted again below.
                n if n == -libc::ENOBUFS && lent.is_none() && !done.more => {}
                _ => {
                    let e = io::Error::from_raw_os_error(-res);
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) {
                        if matches!(c.st, St::Holding | St::Waiting) {
                            self.server_closed_quietly(slot, now);
                        } else {
                            self.fail(slot, Cause::of(&e), now);
                        }
                    }
                }
            }
        }
        if let (Some(l), Some(r)) = (lent, self.ring.as_mut()) {
            r.recycle(l);
        }
        // The connection of the slot now (this one, or a newer one that
        // waited for the buffer) gets its next receive.
        self.ring_post_recv(slot, now);
    }

    fn start_request(&mut self, slot: usize, intended: Instant, measured: bool, now: Instant) {
        let c = &mut self.slab[slot];
        c.intended = intended;
        c.measured = measured;
        c.sent = now;
        c.woff = 0;
        c.deadline = Some(now + self.timeout);
        c.st = St::Sending;
        if c.script.is_none() {
            if let Some((w, rng)) = &mut self.pick {
                c.req = w.sample(rng);
            }
        }
        c.parser.expect_no_body(self.requests[c.req].head);
        if measured {
            self.rec.counts.requests += 1;
        }
        self.write_request(slot);
    }

    /// Write what remains of the request (the partial one for inactive
    /// connections).
    fn write_request(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        let req = &self.requests[c.req];
        let end = match (c.role, self.spec.config.inactive_send) {
            // An inactive connection sends everything but the final CRLF.
            (Role::Inactive, InactiveSend::Partial) => req.head_len - 2,
            (Role::Inactive, InactiveSend::None) => 0,
            _ => req.bytes.len(),
        };
        if c.ring {
            c.st = St::Sending;
            return self.ring_send(slot);
        }
        let sock = c.sock.as_ref().expect("a sending connection has a socket");
        if let Some(tls) = c.tls.as_deref_mut() {
            loop {
                if c.woff < end {
                    match tls.writer().write(&req.bytes[c.woff..end]) {
                        Ok(n) => c.woff += n,
                        Err(e) => return self.fail(slot, Cause::of(&e), Instant::now()),
                    }
                }
                match tls_flush(tls, sock, &mut self.rec.counts.bytes_sent) {
                    Ok(true) if c.woff >= end => break,
                    Ok(true) => {}
                    Ok(false) => {
                        self.set_interest(slot, Interest::BOTH);
                        return;
                    }
                    Err(e) => return self.fail(slot, Cause::of(&e), Instant::now()),
                }
            }
        } else {
            while c.woff < end {
                let mut sock = sock;
                match sock.write(&req.bytes[c.woff..end]) {
                    Ok(n) => {
                        c.woff += n;
                        self.rec.counts.bytes_sent += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.set_interest(slot, Interest::BOTH);
                        return;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return self.fail(slot, Cause::of(&e), Instant::now()),
                }
            }
        }
        if c.role == Role::Inactive {
            c.st = St::Holding;
            c.deadline = None;
        } else {
            c.st = St::Receiving;
        }
        self.set_interest(slot, Interest::READABLE);
    }

    fn slow_step(&mut self, slot: usize, now: Instant) {
        let step = self.spec.config.slow_bytes;
        let c = &mut self.slab[slot];
        let bytes = &self.requests[c.req].bytes;
        let end = (c.woff + step).min(bytes.len());
        let mut sock = c.sock.as_ref().expect("a slow client has a socket");
        let mut flushed = true;
        if let Some(tls) = c.tls.as_deref_mut() {
            // One TLS record per step, as a slow client over TLS sends.
            let res = tls.writer().write(&bytes[c.woff..end]).and_then(|n| {
                c.woff += n;
                tls_flush(tls, sock, &mut self.rec.counts.bytes_sent)
            });
            match res {
                Ok(all) => flushed = all,
                Err(e) => return self.fail(slot, Cause::of(&e), now),
            }
        } else {
            match sock.write(&bytes[c.woff..end]) {
                Ok(n) => {
                    c.woff += n;
                    self.rec.counts.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return self.fail(slot, Cause::of(&e), now),
            }
        }
        if c.woff >= bytes.len() {
            c.sent = now;
            c.deadline = Some(now + self.timeout);
            if flushed {
                c.st = St::Receiving;
                self.set_interest(slot, Interest::READABLE);
            } else {
                // The last records wait for the socket: finish as a request.
                c.st = St::Sending;
                self.set_interest(slot, Interest::BOTH);
            }
        } else {
            let gen = c.gen;
            let at = now + Duration::from_secs_f64(self.spec.config.slow_interval_s);
            self.timers
                .push(Reverse((at, Timer::SlowStep { slot, gen })));
            if c.interest != Some(Interest::READABLE) {
                self.set_interest(slot, Interest::READABLE);
            }
        }
    }

    fn on_readable(&mut self, slot: usize) {
        if self.slab[slot].tls.is_some() {
            return self.on_readable_tls(slot);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let gen = self.slab[slot].gen;
        loop {
            let c = &self.slab[slot];
            if c.gen != gen || c.sock.is_none() {
                break;
            }
            let res = c.sock.as_ref().unwrap().read(&mut buf);
            match res {
                Ok(0) => {
                    self.on_eof(slot, Instant::now());
                    break;
                }
                Ok(n) => {
                    self.rec.counts.bytes_received += n as u64;
                    self.on_data(slot, &buf[..n]);
                    if n < buf.len() && !self.edge {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let now = Instant::now();
                    let c = &self.slab[slot];
                    if matches!(c.st, St::Holding | St::Waiting) {
                        // A reset of a connection with nothing outstanding is
                        // the server closing it.
                        self.server_closed_quietly(slot, now);
                    } else {
                        self.fail(slot, Cause::of(&e), now);
                    }
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Read TLS records, decrypt, hand the plaintext to the parser; drive
    /// the handshake and send what rustls wants to send (handshake
    /// messages, alerts).
    fn on_readable_tls(&mut self, slot: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        let gen = self.slab[slot].gen;
        loop {
            let c = &mut self.slab[slot];
            let (Some(sock), Some(tls)) = (c.sock.as_ref(), c.tls.as_deref_mut()) else {
                break;
            };
            if c.gen != gen {
                break;
            }
            let mut eof = false;
            let mut drained = false;
            let mut r: &Socket = sock;
            match tls.read_tls(&mut r) {
                Ok(0) => eof = true,
                Ok(n) => {
                    self.rec.counts.bytes_received += n as u64;
                    // rustls reads up to 4 KiB at a time: a shorter read
                    // emptied the socket, and a level-triggered poller
                    // reports it again if more comes (saves the read that
                    // would say EAGAIN, as the plain path does).
                    drained = n < TLS_READ && !self.edge;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let now = Instant::now();
                    if matches!(c.st, St::Holding | St::Waiting) {
                        self.server_closed_quietly(slot, now);
                    } else {
                        self.fail(slot, Cause::of(&e), now);
                    }
                    break;
                }
            }
            if let Err(e) = tls.process_new_packets() {
                // Send the alert rustls queued, then give up.
                let _ = tls_flush(tls, sock, &mut self.rec.counts.bytes_sent);
                self.tls_failed(slot, &e, Instant::now());
                break;
            }
            // The plaintext, to the parser.
            loop {
                let c = &mut self.slab[slot];
                let Some(tls) = c.tls.as_deref_mut().filter(|_| c.gen == gen) else {
                    break;
                };
                match tls.reader().read(&mut buf) {
                    Ok(0) => {
                        eof = true; // close_notify
                        break;
                    }
                    Ok(n) => self.on_data(slot, &buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        eof = true; // closed without close_notify
                        break;
                    }
                }
            }
            let c = &mut self.slab[slot];
            let (Some(sock), Some(tls)) = (c.sock.as_ref(), c.tls.as_deref_mut()) else {
                break;
            };
            if c.gen != gen {
                break;
            }
            let handshaking = c.st == St::Handshaking;
            let now = Instant::now();
            match tls_flush(tls, sock, &mut self.rec.counts.bytes_sent) {
                Err(e) => {
                    self.fail(slot, Cause::of(&e), now);
                    break;
                }
                Ok(all) if handshaking => {
                    if !tls.is_handshaking() && all {
                        self.handshake_done(slot, now);
                        if self.slab[slot].gen != gen {
                            break;
                        }
                    } else {
                        let want = if all {
                            Interest::READABLE
                        } else {
                            Interest::BOTH
                        };
                        self.set_interest(slot, want);
                    }
                }
                Ok(_) => {}
            }
            if eof {
                self.on_eof(slot, Instant::now());
                break;
            }
            if drained {
                break;
            }
        }
        self.buf = buf;
    }

    fn on_data(&mut self, slot: usize, data: &[u8]) {
        let c = &mut self.slab[slot];
        match c.st {
            St::Receiving | St::Sending | St::Dribbling => {}
            // Bytes nobody asked for on a silent connection (a 408 before the
            // server closes it): ignore them, the EOF follows.
            _ => return,
        }
        match c.parser.feed(data) {
            Ok(Feed::More) => {}
            Ok(Feed::Done {
                status,
                close,
                used,
            }) => {
                let now = Instant::now();
                if used < data.len() {
                    return self.fail(slot, Cause::Malformed, now);
                }
                self.complete(slot, status, close, now);
            }
            Err(_) => self.fail(slot, Cause::Malformed, Instant::now()),
        }
    }

    fn on_eof(&mut self, slot: usize, now: Instant) {
        let c = &mut self.slab[slot];
        match c.st {
            St::Receiving | St::Sending | St::Dribbling => match c.parser.eof() {
                Ok(Some(status)) => {
                    self.complete(slot, status, true, now);
                }
                _ => {
                    self.rec.counts.conn_closed_by_server += 1;
                    let role = c.role;
                    self.rec.error(role, Cause::ServerClosed);
                    self.close(slot, now);
                    self.after_loss(slot, now, false);
                }
            },
            St::Handshaking => {
                if !self.tls_warned {
                    self.tls_warned = true;
                    self.warnings.push(format!(
                        "TLS failure with {}: the server closed the connection during the \
                         handshake — is it speaking TLS on this port?",
                        self.spec.config.target
                    ));
                }
                self.fail(slot, Cause::Tls, now)
            }
            _ => self.server_closed_quietly(slot, now),
        }
    }

    /// The server closed a connection with nothing outstanding: reopen it
    /// (inactive, idle: a reopen; persistent: a reconnect; a session in its
    /// think time: a reconnect when the think time is over).
    fn server_closed_quietly(&mut self, slot: usize, now: Instant) {
        self.rec.counts.conn_closed_by_server += 1;
        let role = self.slab[slot].role;
        if role == Role::Session && self.slab[slot].st == St::Waiting {
            // A keep-alive timeout shorter than the think time: its timer,
            // still armed, opens the next connection.
            self.rec.counts.reconnects += 1;
            self.close(slot, now);
            self.slab[slot].st = St::Waiting;
            return;
        }
        match role {
            Role::Inactive | Role::Idle => {
                self.rec.counts.reopens += 1;
                if self.phase == Phase::Run && self.in_window(now) {
                    self.rec.counts.reopens_in_window += 1;
                }
            }
            Role::Persistent | Role::Closed => self.rec.counts.reconnects += 1,
            _ => {}
        }
        self.close(slot, now);
        self.after_loss(slot, now, false);
    }

    fn complete(&mut self, slot: usize, status: u16, close: bool, now: Instant) {
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let idx = self.interval_index(now);
        let c = &mut self.slab[slot];
        self.rec.status(status);
        let role = c.role;
        if c.measured {
            self.rec.counts.replies += 1;
            let corrected = elapsed_us(c.intended, now).clamp(1, crate::record::MAX_US);
            let uncorrected = elapsed_us(c.sent, now).clamp(1, crate::record::MAX_US);
            let _ = self.rec.latency.record(corrected);
            let _ = self.rec.latency_uncorrected.record(uncorrected);
            if in_window {
                let _ = self.iv_latency.record(corrected);
                let _ = self.iv_latency_uncorrected.record(uncorrected);
            }
        } else if role == Role::Slow {
            self.rec.counts.slow_replies += 1;
        } else {
            self.rec.counts.unmeasured_replies += 1;
        }
        if in_window && role != Role::Slow {
            self.rec.counts.replies_in_window += 1;
            self.rec.interval_replies[idx] += 1;
        }
        c.deadline = None;
        c.measured = false;
        if close {
            // The server announced it closes the connection.
            self.rec.counts.conn_closed_by_server += 1;
            if matches!(role, Role::Persistent | Role::Closed | Role::Idle) {
                self.rec.counts.reconnects += u64::from(role != Role::Idle);
                if role == Role::Idle {
                    self.idle_settled(slot);
                    self.rec.counts.reopens += 1;
                }
            }
            if role == Role::Session {
                // As httperf: a server may close between the calls of a
                // session; the rest go out over a new connection.
                let next = self.session_next(slot);
                self.close(slot, now);
                return self.session_resume(slot, next, now);
            }
            self.close(slot, now);
            return self.after_loss(slot, now, false);
        }
        match role {
            Role::Session => {
                let next = self.session_next(slot);
                if let Some(think) = next {
                    match think {
                        Some(t) if !t.is_zero() => {
                            self.think(slot, now + t);
                            self.set_interest(slot, Interest::READABLE);
                        }
                        _ => {
                            let m = self.in_window(now);
                            self.start_request(slot, now, m, now);
                        }
                    }
                } else {
                    self.rec.counts.conn_closed_by_client += 1;
                    self.close(slot, now);
                    self.free.push(slot);
                    self.session_over(now);
                }
            }
            Role::Persistent => {
                if let Some((t, m)) = c.queue.pop_front() {
                    self.start_request(slot, t, m, now);
                } else {
                    c.st = St::Waiting;
                }
            }
            Role::Closed => {
                if self.phase == Phase::Run && now < self.t_me {
                    let m = self.in_window(now);
                    self.start_request(slot, now, m, now);
                } else {
                    c.st = St::Waiting;
                }
            }
            Role::Idle => {
                c.st = St::Holding;
                self.idle_settled(slot);
            }
            Role::Slow => {
                self.rec.counts.conn_closed_by_client += 1;
                self.close(slot, now);
                self.connect(slot, now);
            }
            Role::Inactive => {}
        }
    }

    fn idle_settled(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        if !c.established || c.calls_left == u32::MAX {
            return;
        }
        // calls_left marks "first reply seen" for idle connections.
        c.calls_left = u32::MAX;
        self.idle_first_pending = self.idle_first_pending.saturating_sub(1);
    }

    fn session_over(&mut self, now: Instant) {
        if self.closed_sessions > 0 && self.phase == Phase::Run && now < self.t_me {
            if let Some(n) = &mut self.sessions_left {
                if *n == 0 {
                    return;
                }
                *n -= 1;
            }
            self.start_session(now, now);
        }
    }

    /// An error on an established connection or request: count it, close,
    /// and carry on as the role wants.
    fn fail(&mut self, slot: usize, cause: Cause, now: Instant) {
        let c = &self.slab[slot];
        let role = c.role;
        if c.st == St::Connecting {
            self.connecting -= 1;
            self.close(slot, now);
            return self.connect_failed(slot, cause, now);
        }
        if c.st == St::Handshaking {
            // Established, then the handshake failed: closed by the
            // generator, and retried after a pause like a failed connect.
            self.connecting -= 1;
            self.rec.error(role, cause);
            self.rec.counts.conn_closed_by_client += 1;
            self.close(slot, now);
            return self.after_loss(slot, now, true);
        }
        self.rec.error(role, cause);
        if matches!(cause, Cause::Reset | Cause::ServerClosed) {
            self.rec.counts.conn_closed_by_server += 1;
        } else {
            self.rec.counts.conn_closed_by_client += 1;
        }
        self.close(slot, now);
        self.after_loss(slot, now, false);
    }

    fn close(&mut self, slot: usize, now: Instant) {
        let c = &mut self.slab[slot];
        let had = c.sock.take();
        c.interest = None;
        c.deadline = None;
        c.st = St::Free;
        c.parser.reset();
        if let (Some(mut tls), Some(sock)) = (c.tls.take(), had.as_ref()) {
            if !tls.is_handshaking() {
                tls.send_close_notify();
                let mut sent = 0;
                let _ = tls_flush(&mut tls, sock, &mut sent);
                self.rec.counts.bytes_sent += sent;
            }
        }
        if let Some(sock) = had {
            if std::mem::take(&mut c.ring) {
                // A receive in flight holds the socket open past `close`:
                // shutting it down completes that receive (with 0).
                let _ = sock.shutdown(std::net::Shutdown::Both);
                c.send_again = false;
                if let Some(r) = self.ring.as_mut() {
                    // Requests queued this turn for this connection go out
                    // now, while its entry and descriptor still name it
                    // (the slot may reconnect before the turn submits).
                    let _ = r.flush();
                    if let Target::Fixed(i) = c.target {
                        // The table holds the socket open too.
                        r.unregister(i);
                    }
                }
                c.target = Target::Fd(-1);
            } else {
                self.poller_dirty = true;
                let _ = self.poller.deregister(sock.as_raw_fd());
            }
            drop(sock);
            self.note_open(now, -1);
        }
    }

    /// After a connection is gone: sessions end, long-lived connections come
    /// back (after a pause when the connect itself failed).
    fn after_loss(&mut self, slot: usize, now: Instant, connect_failed: bool) {
        let c = &mut self.slab[slot];
        c.deadline = None;
        match c.role {
            Role::Session => {
                c.st = St::Free;
                self.free.push(slot);
                self.session_over(now);
            }
            _ => {
                // An idle connection lost before its first reply stays
                // pending; its reopen settles it.
                c.gen = c.gen.wrapping_add(1);
                if connect_failed || self.phase == Phase::Drain {
                    c.st = St::Backoff;
                    let gen = c.gen;
                    self.timers
                        .push(Reverse((now + RETRY, Timer::Retry { slot, gen })));
                } else {
                    self.connect(slot, now);
                }
            }
        }
    }

    /// Reap the completions of the receives (and sends) still in flight
    /// after every connection was closed, for at most a second (the
    /// shutdowns complete them at once); a buffer still the kernel's after
    /// that is leaked rather than freed (see `Drop for Conn`).
    fn ring_drain(&mut self) -> anyhow::Result<()> {
        let until = Instant::now() + Duration::from_secs(1);
        let mut done = std::mem::take(&mut self.completions);
        while let Some(ring) = self.ring.as_mut() {
            let now = Instant::now();
            if now >= until || !self.slab.iter().any(|c| c.recv_inflight) {
                break;
            }
            ring.turn(Wait::Upto(until - now), &mut done)
                .context("io_uring_enter failed")?;
            for c in &done {
                match c.kind {
                    Kind::Send => self.ring_sent(c.slot, c.id, c.result, false),
                    Kind::QuietSend => self.ring_sent(c.slot, c.id, c.result, true),
                    Kind::Recv => self.ring_received(c),
                    Kind::Poller => {}
                }
            }
        }
        self.completions = done;
        Ok(())
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((at, t))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            match t {
                Timer::SlowStep { slot, gen } => {
                    let c = &self.slab[slot];
                    if c.gen == gen && c.st == St::Dribbling {
                        self.slow_step(slot, now);
                    }
                }
                Timer::Think { slot, gen } => {
                    let c = &self.slab[slot];
                    if c.gen == gen && c.st == St::Waiting && self.phase == Phase::Run {
                        if c.sock.is_none() {
                            // The server closed it during the think time.
                            self.session_reconnect(slot, now);
                        } else {
                            let m = self.in_window(now);
                            self.start_request(slot, now, m, now);
                        }
                    }
                }
                Timer::Retry { slot, gen } => {
                    let c = &self.slab[slot];
                    if c.gen == gen && c.st == St::Backoff && self.phase != Phase::Drain {
                        self.connect(slot, now);
                    }
                }
            }
        }
    }

    fn tick(&mut self, now: Instant) {
        self.next_tick = now + TICK;
        for slot in 0..self.slab.len() {
            if let Some(d) = self.slab[slot].deadline {
                if d <= now {
                    self.fail(slot, Cause::Timeout, now);
                }
            }
        }
        if self.phase == Phase::Run && now >= self.t_ms && now < self.t_me {
            let i = self.interval_index(now);
            let p = &mut self.rec.interval_peak_conns[i];
            *p = (*p).max(self.open);
        }
        if matches!(self.phase, Phase::Run | Phase::Drain) && now >= self.next_progress {
            let phase = match self.phase {
                Phase::Drain => "drain",
                _ if now < self.t_ms => "warmup",
                _ => "measure",
            };
            self.emit_progress(now, phase);
        }
    }

    fn emit_progress(&mut self, now: Instant, phase: &str) {
        let since = if self.phase == Phase::Setup {
            self.t_begin
        } else {
            self.t0
        };
        self.next_progress = now + self.interval.max(Duration::from_millis(500));
        let r = &self.rec.counts;
        let p = Progress {
            index: self.spec.index,
            phase: phase.to_string(),
            t_s: now.duration_since(since).as_secs_f64(),
            replies: r.replies + r.unmeasured_replies + r.slow_replies,
            errors: self.rec.errors_total(),
            open: self.open,
            reopens: r.reopens,
        };
        self.hooks.progress(&p);
    }

    /// The end of sampling interval `i` (the last one runs to the end of the window).
    fn interval_end(&self, i: u32) -> Instant {
        if i as usize + 1 >= self.n_intervals {
            self.t_me
        } else {
            (self.t_ms + self.interval * (i + 1)).min(self.t_me)
        }
    }

    /// Report the sampling intervals that are over at `now`.
    fn flush_intervals(&mut self, now: Instant) -> anyhow::Result<()> {
        while (self.iv_index as usize) < self.n_intervals
            && self.t_ms + self.interval * self.iv_index < self.t_me
            && now >= self.interval_end(self.iv_index)
        {
            let i = self.iv_index;
            let (requests, errors) = (self.rec.counts.requests, self.rec.errors_total());
            let (base_requests, base_errors) = self.iv_base.unwrap_or((requests, errors));
            let r = IntervalReport {
                index: i,
                start_s: (self.interval * i).as_secs_f64(),
                end_s: self.interval_end(i).duration_since(self.t_ms).as_secs_f64(),
                requests: requests - base_requests,
                replies: self.iv_latency.len(),
                errors: errors - base_errors,
                latency_hist: encode(&self.iv_latency)?,
                latency_uncorrected_hist: encode(&self.iv_latency_uncorrected)?,
            };
            self.iv_base = Some((requests, errors));
            self.iv_latency.reset();
            self.iv_latency_uncorrected.reset();
            self.iv_index += 1;
            self.hooks.interval(&r);
        }
        Ok(())
    }

    fn end_window(&mut self, now: Instant) -> anyhow::Result<()> {
        self.flush_intervals(now.max(self.t_me))?;
        if let Some(m) = self.cpu.take() {
            self.cpu_use = Some(m.read()?);
        } else if self.cpu_use.is_none() {
            self.cpu_use = Some(evdispatch_proc::CpuMeter::start(0)?.read()?);
        }
        self.phase = Phase::Drain;
        self.next_session = None;
        self.next_persistent = None;
        self.drain_end = now + self.timeout + TICK * 2;
        // Closed-loop connections stop here; nothing else is started.
        Ok(())
    }

    fn finish(mut self, now: Instant) -> anyhow::Result<WorkerReport> {
        for slot in 0..self.slab.len() {
            let c = &mut self.slab[slot];
            let unsent = c.queue.iter().filter(|(_, m)| *m).count() as u64;
            self.rec.counts.unsent_at_end += unsent;
            c.queue.clear();
            if matches!(c.st, St::Sending | St::Receiving) && c.measured && !self.interrupted {
                // Still outstanding after the drain: it timed out.
                let role = c.role;
                self.rec.error(role, Cause::Timeout);
            }
            if c.sock.is_some() {
                if c.established {
                    self.rec.counts.conn_open_at_end += 1;
                } else {
                    self.rec.counts.conn_failed += 1;
                    let role = c.role;
                    self.rec.error(role, Cause::Timeout);
                }
                self.close(slot, now);
            }
        }
        self.ring_drain()?;
        let cpu = self.cpu_use.unwrap_or(evdispatch_proc::CpuUse {
            wall_s: 0.0,
            cpu_s: 0.0,
            user_s: 0.0,
            system_s: 0.0,
            pct_of_core: 0.0,
            rss_bytes: 0,
        });
        if cpu.pct_of_core > 85.0 {
            self.warnings.push(format!(
                "worker {} (pid {}) used {:.0}% of a core over the measured window: the results may show the generator's limit, not the server's — add --procs or free a core",
                self.spec.index,
                std::process::id(),
                cpu.pct_of_core
            ));
        }
        let window_s = self.t_me.saturating_duration_since(self.t_ms).as_secs_f64();
        // Only the intervals the window covered in full give a rate (as
        // httperf's reply-rate samples): not a shorter last one, nor those
        // after Ctrl-C.
        let full = ((window_s / self.interval.as_secs_f64()) + 1e-9).floor() as usize;
        self.rec.interval_replies.truncate(full);
        let mut report = WorkerReport::new(
            self.spec.index,
            &self.rec,
            cpu.cpu_s,
            cpu.pct_of_core,
            self.setup_s,
            std::mem::take(&mut self.warnings),
        )?;
        report.window_s = window_s;
        report.window_start_unix_s = self.window_start_unix_s;
        report.interrupted = self.interrupted;
        Ok(report)
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
                                requests.push(build_request(
                                    &r.method,
                                    &c.host,
                                    &r.uri,
                                    &c.headers,
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
    let one = |path: &str| build_request(&c.method, &c.host, path, &c.headers, body);
    let requests = if c.urls.is_empty() {
        vec![one(&c.path)]
    } else {
        c.urls.iter().map(|u| one(&u.path)).collect()
    };
    (requests, Vec::new())
}

/// Run one worker in this process and return its report.
pub fn run_worker(
    spec: WorkerSpec,
    start: Start,
    hooks: &mut dyn Hooks,
) -> anyhow::Result<WorkerReport> {
    evdispatch_proc::set_rlimit(evdispatch_proc::Resource::Nofile, None)
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
