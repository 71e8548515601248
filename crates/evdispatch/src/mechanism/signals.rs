//! The RT-signal queue shared by `rtsig`, `rtsig-batch`, `rtsig-perfd` and
//! `hybrid`: the registration table, signal ownership, dequeuing, the
//! stale-signal guard, register-time probes, overflow detection, flushing,
//! per-wait coalescing, and `rtsig-perfd`'s disarming and re-arming.
//!
//! # How a descriptor raises signals
//!
//! `register` points the descriptor's I/O signals at the thread that created
//! the poller (`F_SETOWN_EX`/`F_OWNER_TID`) as one RT signal (`F_SETSIG`) and
//! sets `O_ASYNC|O_NONBLOCK`. From then on the kernel queues one signal per
//! readiness change, carrying `si_fd` and `si_band`, whatever the interest:
//! the interest is applied here, when a signal is dequeued. A signal reports a
//! change, not a state, so readiness that predates the registration (or a
//! `modify`) is found by a *probe*, made after `O_ASYNC` is set so that a
//! change in between is seen by one or the other. `rtsig` probes at once
//! (`poll` of the one descriptor) and reports the result at the next wait;
//! the batch mechanisms defer it: the next wait `poll`s, in one call, every
//! descriptor registered or modified since the previous one, and the
//! coalescing merges a probe with the signal of the same change.
//!
//! # Overflow
//!
//! The queue is bounded by `RLIMIT_SIGPENDING`, counted per user. When a
//! signal cannot be queued the kernel raises `SIGIO` instead, which is
//! blocked and dequeued with the RT signal (and before it: lower numbers
//! first). On `SIGIO` the queue is flushed *first*, then a pending `SIGIO` is
//! taken, then the interest set is polled: a change after the flush started
//! is either seen by the poll or queued anew (there is room again), so none
//! is lost; one before it is in the poll's answer if it still holds. The
//! order matters: polling before the flush would let the flush discard the
//! signal of a change made in between.
//!
//! The flush is the kernel's: the signal's disposition is `SIG_IGN`
//! process-wide, and unblocking an ignored signal in a thread discards its
//! queued instances before the call returns; blocking it again resumes
//! queuing (a blocked signal is never ignored). Two calls whatever the queue
//! length, instead of one dequeue per signal; the hybrid leaves the signal
//! unblocked for the whole of its epoll mode, so that nothing queues then.
//!
//! # One signal per descriptor (`rtsig-perfd`)
//!
//! With [`per_fd`](SignalQueue::per_fd) set, a descriptor reported because
//! its signal was dequeued, or because an overflow recovery's poll or the
//! probe after its `register` or `modify` found it ready, is *disarmed*:
//! `O_ASYNC` is cleared (`F_SETFL`, from the file status flags cached at
//! `register`), so it queues nothing while the consumer serves it. The next wait is the moment the consumer has drained
//! it (the Poller contract: read or write until `EAGAIN` before waiting
//! again), so [`rearm`](SignalQueue::rearm) sets `O_ASYNC` on every disarmed
//! descriptor and queues a deferred probe of each: the wait's one `poll`
//! over them comes after `O_ASYNC` is set, so a change made while one was
//! disarmed is found by the poll, and a change after it queues a signal. A
//! descriptor the re-check finds ready is reported but stays armed, so one
//! that stays ready without a change (writable with nothing to write, an
//! end of file not acted on yet) is reported once, not at every wait.
//!
//! # Stale signals
//!
//! `deregister` clears `O_ASYNC`, after which the old file raises no more
//! signals, but those already queued stay queued and name only a descriptor
//! number. If the number is registered again before they are dequeued, they
//! would be reported under the new registration. To prevent it, registering a
//! number whose old signals may still be queued first queues a *marker* (the
//! same RT signal, `SI_QUEUE`, value = the descriptor) to the owner thread.
//! One signal number's queue is FIFO, so every stale signal precedes the
//! marker: signals for the descriptor are dropped (counted in
//! `stale_dropped`) until its markers have been dequeued. The marker is
//! skipped when it is not needed: when the queue has been seen empty since the
//! deregistration, or when the signal is not pending at all. A marker that
//! cannot be queued (the queue is full) forces a recovery at the next wait,
//! whose flush removes the stale signals.

use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use libc::{c_int, pid_t};

use crate::config::{check_rt_signal, Config};
use crate::event::{Event, Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys::signal as sig;

thread_local! {
    /// A process-unique number for the current thread (kernel thread ids are
    /// reused; this is not).
    static THREAD_KEY: u64 = {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        NEXT.fetch_add(1, Ordering::Relaxed)
    };
    /// How many `SIGIO`s this thread's signal pollers have dequeued. `SIGIO`
    /// is one per thread while each poller has its own RT signal, so a poller
    /// that dequeues it tells the others through this count.
    static OVERFLOWS: Cell<u64> = const { Cell::new(0) };
}

/// RT signals in use, by thread key: two pollers on one thread need two
/// signal numbers, or one would dequeue the other's signals.
static IN_USE: Mutex<Vec<(u64, c_int)>> = Mutex::new(Vec::new());

/// RT signals whose disposition this process has set to `SIG_IGN` (once per
/// number: setting it discards pending instances in every thread).
static IGNORED: Mutex<Vec<c_int>> = Mutex::new(Vec::new());

/// Make `signal` ignored process-wide, the first time it is used. Threads
/// that block it still queue and dequeue it (the kernel never ignores a
/// blocked signal); a thread that unblocks it has its queued instances
/// discarded and no new ones queued, which is how a flush and the hybrid's
/// epoll mode stop paying for signals. It also means a stray instance can no
/// longer kill the process, which is an RT signal's default action.
fn ensure_ignored(signal: c_int) -> io::Result<()> {
    let mut done = IGNORED.lock().unwrap_or_else(|e| e.into_inner());
    if !done.contains(&signal) {
        sig::ignore(signal)?;
        done.push(signal);
    }
    Ok(())
}

fn thread_key() -> u64 {
    THREAD_KEY.with(|k| *k)
}

/// Take `wanted` for this thread, or the next free RT signal after it.
fn allocate_signal(key: u64, wanted: c_int) -> io::Result<c_int> {
    let mut used = IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    let (lo, hi) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    let span = hi - lo + 1;
    for i in 0..span {
        let s = lo + (wanted - lo + i).rem_euclid(span);
        if !used.iter().any(|&(k, u)| k == key && u == s) {
            used.push((key, s));
            return Ok(s);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!("every RT signal ({lo}..={hi}) is taken by another signal poller on this thread; use fewer pollers per thread"),
    ))
}

fn release_signal(key: u64, signal: c_int) {
    let mut used = IN_USE.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(i) = used.iter().position(|&(k, s)| k == key && s == signal) {
        used.swap_remove(i);
    }
}

/// A descriptor number's row.
#[derive(Clone, Copy)]
struct Slot {
    token: Token,
    interest: Interest,
    registered: bool,
    /// Queued for a probe at the next wait.
    probe: bool,
    /// What an immediate probe found (reported at the next wait).
    probed: Ready,
    /// Markers queued ahead of this number's current signals, not yet dequeued.
    awaiting: u32,
    /// `empty_epoch` at the last deregistration (`NEVER` if none).
    dereg_epoch: u64,
    /// Index in `pollfds` while registered.
    poll_idx: u32,
    /// Index in `out` while reported by the current wait (coalescing).
    out_idx: u32,
    /// `O_ASYNC` is set (false while `rtsig-perfd` has it disarmed).
    armed: bool,
    /// The queued probe is `rtsig-perfd`'s re-check after a re-arm, whose
    /// finding leaves the descriptor armed.
    recheck: bool,
    /// The file status flags at `register`, with `O_NONBLOCK` and without
    /// `O_ASYNC`: what `rtsig-perfd` disarms and re-arms with.
    flags: c_int,
}

const NEVER: u64 = u64::MAX;

impl Slot {
    const EMPTY: Slot = Slot {
        token: Token(0),
        interest: Interest::READABLE,
        registered: false,
        probe: false,
        probed: Ready::EMPTY,
        awaiting: 0,
        dereg_epoch: NEVER,
        poll_idx: 0,
        out_idx: 0,
        armed: false,
        recheck: false,
        flags: 0,
    };
}

/// What one dequeued signal amounted to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dequeued {
    /// A readiness hint, added to the wait's results.
    Event,
    /// `SIGIO`: the queue overflowed.
    Overflow,
    /// Dropped: stale, outside the interest, a marker, or foreign.
    Nothing,
}

/// How [`SignalQueue::wait_batches`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BatchWait {
    /// The wait has what there is (perhaps nothing, at the timeout).
    Done,
    /// `SIGIO` was dequeued: the queue overflowed.
    Overflow,
    /// One `read` dequeued at least the `heavy` count given.
    Heavy,
}

/// The signal side of a poller.
pub(crate) struct SignalQueue {
    /// The RT signal the registered descriptors raise.
    signal: c_int,
    tid: pid_t,
    tgid: pid_t,
    key: u64,
    /// `{signal, SIGIO}`: what a wait dequeues.
    set: sig::SigSet,
    /// `{signal}` and `{SIGIO}`.
    only: sig::SigSet,
    sigio: sig::SigSet,
    /// The signal is blocked in the owner thread, so it queues (false while
    /// the hybrid is in epoll mode: unblocked and ignored, it is dropped).
    queuing: bool,
    /// Descriptors whose `awaiting` may be non-zero.
    awaiting_fds: Vec<RawFd>,
    slots: Vec<Slot>,
    /// The interest set as `poll` wants it, kept current at every call so a
    /// recovery never rebuilds it (not kept for the hybrid, whose epoll set
    /// plays that part).
    pollfds: Option<Vec<libc::pollfd>>,
    /// Descriptors registered or modified since the last wait.
    probes: Vec<RawFd>,
    probe_buf: Vec<libc::pollfd>,
    /// Probe at register/modify instead of at the next wait.
    probe_now: bool,
    /// `poll`s made by immediate probes since the last wait, which counts them.
    probe_polls: u64,
    /// Bumped whenever the queue is seen empty.
    empty_epoch: u64,
    /// `OVERFLOWS` when this poller last recovered.
    overflows_seen: u64,
    /// A marker could not be queued: recover at the next wait.
    need_recovery: bool,
    /// Merge the results of one wait per descriptor (signal-per-fd semantics).
    coalesce: bool,
    /// One bit per descriptor number: reported by the current wait.
    reported: Vec<u64>,
    /// The current wait's results, by descriptor.
    out: Vec<(RawFd, Ready)>,
    /// The batch side: a signalfd and its read buffer (rtsig-batch,
    /// rtsig-perfd, hybrid).
    signalfd: Option<(OwnedFd, Vec<libc::signalfd_siginfo>)>,
    /// Disarm a descriptor when it is reported by a signal or a recovery,
    /// until the next wait (`rtsig-perfd`).
    per_fd: bool,
    /// Descriptors disarmed since the last [`rearm`](SignalQueue::rearm).
    disarmed: Vec<RawFd>,
}

impl SignalQueue {
    /// Block the signals in this thread, take a signal number, and (when
    /// `batch`) open a signalfd reading `config.rtsig_batch` at a time.
    pub(crate) fn open(config: &Config, batch: bool, keep_pollfds: bool) -> io::Result<Self> {
        check_rt_signal(config.rtsig_signal)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let key = thread_key();
        let signal = allocate_signal(key, config.rtsig_signal)?;
        let set = sig::SigSet::of(&[signal, libc::SIGIO]);
        let opened = (|| {
            ensure_ignored(signal)?;
            sig::block(&set)?;
            // Leftovers of an earlier poller of this number on this thread.
            let only = sig::SigSet::of(&[signal]);
            while sig::sigtimedwait(&only, Some(Duration::ZERO))?.is_some() {}
            let signalfd = if batch {
                let fd = sig::signalfd(&set)?;
                Some((fd, sig::signalfd_buffer(config.rtsig_batch.max(1))))
            } else {
                None
            };
            Ok::<_, io::Error>(signalfd)
        })();
        let signalfd = match opened {
            Ok(s) => s,
            Err(e) => {
                release_signal(key, signal);
                return Err(e);
            }
        };
        Ok(SignalQueue {
            signal,
            tid: sig::gettid(),
            tgid: sig::getpid(),
            key,
            set,
            only: sig::SigSet::of(&[signal]),
            sigio: sig::SigSet::of(&[libc::SIGIO]),
            queuing: true,
            awaiting_fds: Vec::new(),
            slots: Vec::new(),
            pollfds: keep_pollfds.then(Vec::new),
            probes: Vec::new(),
            probe_buf: Vec::new(),
            probe_now: !batch,
            probe_polls: 0,
            empty_epoch: 0,
            overflows_seen: OVERFLOWS.with(Cell::get),
            need_recovery: false,
            coalesce: batch,
            reported: Vec::new(),
            out: Vec::new(),
            signalfd,
            per_fd: false,
            disarmed: Vec::new(),
        })
    }

    /// This queue disarms what it reports until the next wait
    /// (`rtsig-perfd`; see the module docs). Needs the deferred probes of a
    /// batch queue, whose one `poll` is the re-check.
    pub(crate) fn per_fd(mut self) -> Self {
        assert!(!self.probe_now, "per_fd needs a batch queue");
        self.per_fd = true;
        self
    }

    /// Whether this queue disarms what it reports.
    #[inline]
    pub(crate) fn is_per_fd(&self) -> bool {
        self.per_fd
    }

    /// Waits must run on the thread the signals go to.
    #[inline]
    pub(crate) fn check_thread(&self) -> io::Result<()> {
        if thread_key() == self.key {
            return Ok(());
        }
        Err(io::Error::other(format!(
            "this RT-signal poller belongs to thread {} (its creator), which receives its signals; \
             wait on that thread, or create the poller on the thread that waits",
            self.tid
        )))
    }

    fn slot(&self, fd: RawFd) -> Option<&Slot> {
        usize::try_from(fd).ok().and_then(|i| self.slots.get(i))
    }

    fn registered(&self, fd: RawFd) -> Option<&Slot> {
        self.slot(fd).filter(|s| s.registered)
    }

    fn not_registered(fd: RawFd) -> io::Error {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("fd {fd} is not registered with this poller"),
        )
    }

    /// Start watching `fd`: ownership, signal, `O_ASYNC|O_NONBLOCK`, the
    /// stale guard, and (when `probe`) a probe at the next wait.
    pub(crate) fn register(
        &mut self,
        fd: RawFd,
        token: Token,
        interest: Interest,
        probe: bool,
    ) -> io::Result<()> {
        if fd < 0 {
            return Err(io::Error::from_raw_os_error(libc::EBADF));
        }
        if self.registered(fd).is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("fd {fd} is already registered with this poller; use modify"),
            ));
        }
        let kind = sig::file_type(fd)?;
        if ![libc::S_IFSOCK, libc::S_IFIFO, libc::S_IFCHR].contains(&kind) {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("fd {fd} is not a socket, pipe or character device, so it raises no I/O signals; use poll or epoll for it"),
            ));
        }
        let flags = sig::flags(fd)?;
        let i = fd as usize;
        if i >= self.slots.len() {
            self.slots.resize((i + 1).next_power_of_two(), Slot::EMPTY);
            self.reported.resize(self.slots.len().div_ceil(64), 0);
        }
        // The stale guard goes first, so that every signal of the old file
        // is queued ahead of the marker and every one of the new file after it.
        // (Not while the signal is paused: nothing queues then, and the
        // pause discarded what was queued.)
        let old = self.slots[i];
        if self.queuing && old.dereg_epoch == self.empty_epoch {
            let may_be_queued = thread_key() != self.key || sig::is_pending(self.signal)?;
            if may_be_queued {
                match sig::queue_to_thread(self.tid, self.signal, fd) {
                    Ok(()) => {
                        self.slots[i].awaiting += 1;
                        self.awaiting_fds.push(fd);
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => self.need_recovery = true,
                    Err(e) => return Err(e),
                }
            }
        }
        sig::set_owner(fd, self.tid, self.signal)?;
        let flags = (flags | libc::O_NONBLOCK) & !libc::O_ASYNC;
        sig::set_flags(fd, flags | libc::O_ASYNC)?;
        let s = &mut self.slots[i];
        s.token = token;
        s.interest = interest;
        s.registered = true;
        s.armed = true;
        s.flags = flags;
        s.dereg_epoch = NEVER;
        if let Some(pollfds) = &mut self.pollfds {
            s.poll_idx = pollfds.len() as u32;
            pollfds.push(libc::pollfd {
                fd,
                events: interest.as_poll_events(),
                revents: 0,
            });
        }
        if probe {
            self.queue_probe(fd)?;
        }
        Ok(())
    }

    fn queue_probe(&mut self, fd: RawFd) -> io::Result<()> {
        if self.probe_now {
            let interest = self.slots[fd as usize].interest;
            let mut one = [libc::pollfd {
                fd,
                events: interest.as_poll_events(),
                revents: 0,
            }];
            self.probe_polls += 1;
            sig::poll_now(&mut one)?;
            let ready = Ready::from_poll_bits(one[0].revents as u32);
            self.slots[fd as usize].probed = ready;
            if ready.is_empty() {
                return Ok(());
            }
        }
        self.slots[fd as usize].recheck = false;
        self.defer_probe(fd);
        Ok(())
    }

    /// Put `fd` on the list the next `run_probes` polls (once however often).
    fn defer_probe(&mut self, fd: RawFd) {
        let s = &mut self.slots[fd as usize];
        if !s.probe {
            s.probe = true;
            self.probes.push(fd);
        }
    }

    /// `add`, and with `per_fd` the disarming of what it adds: the consumer
    /// now serves `fd`, and it stays silent until the next wait.
    #[inline]
    fn add_disarming(&mut self, fd: RawFd, ready: Ready, stats: &mut Stats) -> bool {
        let added = self.add(fd, ready, stats);
        if added && self.per_fd {
            self.disarm(fd);
        }
        added
    }

    /// Clear `fd`'s `O_ASYNC` until the next [`rearm`](SignalQueue::rearm).
    /// Should the call fail, `fd` stays armed, which loses nothing.
    fn disarm(&mut self, fd: RawFd) {
        let s = &mut self.slots[fd as usize];
        if s.armed && sig::set_flags(fd, s.flags).is_ok() {
            s.armed = false;
            self.disarmed.push(fd);
        }
    }

    /// Set `O_ASYNC` again on every descriptor disarmed since the last call,
    /// and queue a deferred probe of each, so that the wait's `run_probes`
    /// (one `poll` for all) re-checks them after they are armed. A
    /// descriptor closed while registered is skipped; on another error the
    /// ones not yet re-armed stay on the list for the next wait.
    pub(crate) fn rearm(&mut self, stats: &mut Stats) -> io::Result<()> {
        let mut list = std::mem::take(&mut self.disarmed);
        let mut r = Ok(());
        for k in 0..list.len() {
            let fd = list[k];
            let s = &mut self.slots[fd as usize];
            if !s.registered || s.armed {
                continue;
            }
            match sig::set_flags(fd, s.flags | libc::O_ASYNC) {
                Ok(()) => {
                    s.armed = true;
                    // (A probe queued by `modify` stays one.)
                    s.recheck = !s.probe;
                    stats.rearms += 1;
                    self.defer_probe(fd);
                }
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => {}
                Err(e) => {
                    self.disarmed.extend_from_slice(&list[k..]);
                    r = Err(e);
                    break;
                }
            }
        }
        list.clear();
        if self.disarmed.is_empty() {
            self.disarmed = list;
        }
        r
    }

    /// New token and interest; a probe finds readiness the new interest
    /// covers that no signal will announce.
    pub(crate) fn modify(
        &mut self,
        fd: RawFd,
        token: Token,
        interest: Interest,
        probe: bool,
    ) -> io::Result<()> {
        if self.registered(fd).is_none() {
            return Err(Self::not_registered(fd));
        }
        let s = &mut self.slots[fd as usize];
        s.token = token;
        s.interest = interest;
        let idx = s.poll_idx as usize;
        if let Some(pollfds) = &mut self.pollfds {
            pollfds[idx].events = interest.as_poll_events();
        }
        if probe {
            self.queue_probe(fd)?;
        }
        Ok(())
    }

    /// Stop watching `fd`: clear `O_ASYNC` (after which the file raises no
    /// signal) and remember when, for the stale guard. The registration is
    /// forgotten even when the descriptor turns out to be closed already.
    pub(crate) fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        if self.registered(fd).is_none() {
            return Err(Self::not_registered(fd));
        }
        let cleared = sig::flags(fd).and_then(|f| sig::set_flags(fd, f & !libc::O_ASYNC));
        let epoch = self.empty_epoch;
        let s = &mut self.slots[fd as usize];
        s.registered = false;
        s.armed = false;
        s.probe = false;
        s.dereg_epoch = epoch;
        let idx = s.poll_idx as usize;
        if let Some(pollfds) = &mut self.pollfds {
            pollfds.swap_remove(idx);
            if let Some(moved) = pollfds.get(idx) {
                self.slots[moved.fd as usize].poll_idx = idx as u32;
            }
        }
        match cleared {
            // Closed while registered: its file description, and the
            // `O_ASYNC` on it, are gone; forgetting the record is all there
            // is to do (as poll and select do).
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => Ok(()),
            other => other,
        }
    }

    /// True when an overflow is waiting to be handled: a `SIGIO` dequeued by
    /// another poller of this thread, or a marker that could not be queued.
    #[inline]
    pub(crate) fn overflow_noticed(&self) -> bool {
        self.need_recovery || OVERFLOWS.with(Cell::get) != self.overflows_seen
    }

    /// Add a hint for `fd` to this wait's results, filtered by the interest
    /// and, when coalescing, merged into an earlier hint for the same fd.
    #[inline]
    fn add(&mut self, fd: RawFd, ready: Ready, stats: &mut Stats) -> bool {
        let Some(s) = self.registered(fd) else {
            return false;
        };
        let ready = ready.filter(s.interest);
        if ready.is_empty() {
            return false;
        }
        if self.coalesce {
            let i = fd as usize;
            let (word, bit) = (i / 64, 1u64 << (i % 64));
            if self.reported[word] & bit != 0 {
                let o = self.slots[i].out_idx as usize;
                self.out[o].1 = self.out[o].1 | ready;
                stats.coalesced += 1;
                return true;
            }
            self.reported[word] |= bit;
            self.slots[i].out_idx = self.out.len() as u32;
        }
        self.out.push((fd, ready));
        true
    }

    /// Interpret one dequeued signal. `discard`: part of a flush, so only
    /// markers count.
    #[inline]
    fn accept(&mut self, info: sig::SigInfo, discard: bool, stats: &mut Stats) -> Dequeued {
        if info.signo == libc::SIGIO {
            OVERFLOWS.with(|o| o.set(o.get() + 1));
            return Dequeued::Overflow;
        }
        if info.signo != self.signal {
            return Dequeued::Nothing;
        }
        stats.signals_dequeued += 1;
        let fd = info.fd_or_value;
        if info.code == libc::SI_QUEUE && info.pid == self.tgid {
            if let Some(s) = usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) {
                s.awaiting = s.awaiting.saturating_sub(1);
            }
            return Dequeued::Nothing;
        }
        if info.code <= 0 || discard {
            return Dequeued::Nothing; // foreign (kill, sigqueue from elsewhere) or flushed
        }
        match self.registered(fd) {
            Some(s) if s.awaiting == 0 => {
                if self.add_disarming(fd, Ready::from_poll_bits(info.poll_bits()), stats) {
                    Dequeued::Event
                } else {
                    Dequeued::Nothing
                }
            }
            _ => {
                stats.stale_dropped += 1;
                Dequeued::Nothing
            }
        }
    }

    /// Probe what was registered or modified since the last wait (one
    /// `poll` for all of them). Returns whether anything was found.
    pub(crate) fn run_probes(&mut self, stats: &mut Stats) -> io::Result<bool> {
        stats.wait_syscalls += std::mem::take(&mut self.probe_polls);
        if self.probes.is_empty() {
            return Ok(false);
        }
        let mut buf = std::mem::take(&mut self.probe_buf);
        buf.clear();
        let mut probes = std::mem::take(&mut self.probes);
        let mut found = false;
        for fd in probes.drain(..) {
            let s = &mut self.slots[fd as usize];
            if !(s.probe && s.registered) {
                continue;
            }
            s.probe = false;
            if self.probe_now {
                let ready = s.probed;
                found |= self.add(fd, ready, stats);
            } else {
                buf.push(libc::pollfd {
                    fd,
                    events: s.interest.as_poll_events(),
                    revents: 0,
                });
            }
        }
        self.probes = probes;
        if buf.is_empty() {
            self.probe_buf = buf;
            return Ok(found);
        }
        stats.wait_syscalls += 1;
        let r = sig::poll_now(&mut buf);
        if r.is_ok() {
            for p in &buf {
                let recheck = std::mem::take(&mut self.slots[p.fd as usize].recheck);
                if p.revents != 0 {
                    let ready = Ready::from_poll_bits(p.revents as u32);
                    found |= if recheck {
                        self.add(p.fd, ready, stats)
                    } else {
                        self.add_disarming(p.fd, ready, stats)
                    };
                }
            }
        }
        self.probe_buf = buf;
        r.map(|_| found)
    }

    /// Forget pending probes (a recovery poll or an epoll sweep covers them).
    pub(crate) fn clear_probes(&mut self) {
        for fd in self.probes.drain(..) {
            self.slots[fd as usize].probe = false;
        }
    }

    /// One `sigtimedwait`: dequeue and interpret one signal. `Ok(None)` when
    /// the timeout passed with the queue empty.
    #[inline]
    pub(crate) fn dequeue_one(
        &mut self,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<Option<Dequeued>> {
        stats.wait_syscalls += 1;
        stats.dequeue_calls += 1;
        match sig::sigtimedwait(&self.set, timeout)? {
            None => {
                self.empty_epoch += 1;
                Ok(None)
            }
            Some(info) => Ok(Some(self.accept(info, false, stats))),
        }
    }

    /// One `read` of the signalfd. Returns how many signals it dequeued and
    /// whether one was `SIGIO` (the rest of that batch is then discarded, as
    /// the recovery that follows covers it).
    #[inline]
    pub(crate) fn read_batch(&mut self, stats: &mut Stats) -> io::Result<(usize, bool)> {
        let Some((fd, mut buf)) = self.signalfd.take() else {
            unreachable!("read_batch on a poller without a signalfd");
        };
        stats.wait_syscalls += 1;
        stats.dequeue_calls += 1;
        let r = sig::read_signalfd(fd.as_raw_fd(), &mut buf);
        let mut overflow = false;
        if let Ok(n) = r {
            if n < buf.len() {
                self.empty_epoch += 1;
            }
            for rec in &buf[..n] {
                let info = sig::SigInfo::from_signalfd(rec);
                if self.accept(info, overflow, stats) == Dequeued::Overflow {
                    overflow = true;
                }
            }
        }
        self.signalfd = Some((fd, buf));
        r.map(|n| (n, overflow))
    }

    /// The batch wait (rtsig-batch, hybrid in signal mode): read what is
    /// queued, a batch per `read`; when nothing is, block in `sigtimedwait`
    /// for the first signal (a signalfd read cannot time out), then read
    /// once more, so that the signals raised while the thread was waking
    /// come back in this wait instead of one now and the rest in the next.
    /// A `read` of at least `heavy` signals ends the wait at once.
    pub(crate) fn wait_batches(
        &mut self,
        timeout: Option<Duration>,
        heavy: usize,
        stats: &mut Stats,
    ) -> io::Result<BatchWait> {
        let mut woken = false;
        loop {
            let (n, overflow) = self.read_batch(stats)?;
            if overflow {
                return Ok(BatchWait::Overflow);
            }
            if n >= heavy {
                return Ok(BatchWait::Heavy);
            }
            if woken || self.pending_hints() > 0 || timeout == Some(Duration::ZERO) {
                return Ok(BatchWait::Done);
            }
            if n == self.batch_len() {
                continue; // a full batch of dropped signals: more are queued
            }
            match self.dequeue_one(timeout, stats)? {
                None => return Ok(BatchWait::Done),
                Some(Dequeued::Overflow) => return Ok(BatchWait::Overflow),
                Some(_) => woken = true,
            }
        }
    }

    /// Empty the queue of this poller's signal, then take a pending `SIGIO`
    /// (the recovery that follows covers it, so it must come after).
    ///
    /// The kernel does the emptying: the signal is ignored process-wide, so
    /// unblocking it in this thread discards every queued instance before
    /// the call returns, and blocking it again resumes queuing. That takes
    /// two system calls whatever the queue length, where dequeuing costs one
    /// per signal (`rtsig`) or per batch. Markers go with the rest, so the
    /// stale guard is reset. Should the application have installed a handler
    /// for the signal since, the queue is dequeued instead.
    pub(crate) fn flush(&mut self, stats: &mut Stats) -> io::Result<()> {
        if self.queuing {
            stats.wait_syscalls += 1;
            if sig::is_ignored(self.signal)? {
                stats.wait_syscalls += 2;
                sig::unblock(&self.only)?;
                sig::block(&self.only)?;
                self.reset_awaiting();
            } else {
                self.dequeue_all(stats)?;
            }
        }
        self.absorb_sigio(stats)?;
        self.empty_epoch += 1;
        self.need_recovery = false;
        Ok(())
    }

    /// Flush by dequeuing everything, counting markers as it goes.
    fn dequeue_all(&mut self, stats: &mut Stats) -> io::Result<()> {
        if let Some((fd, mut buf)) = self.signalfd.take() {
            let r = loop {
                stats.wait_syscalls += 1;
                stats.dequeue_calls += 1;
                match sig::read_signalfd(fd.as_raw_fd(), &mut buf) {
                    Ok(n) => {
                        for rec in &buf[..n] {
                            self.accept(sig::SigInfo::from_signalfd(rec), true, stats);
                        }
                        if n < buf.len() {
                            break Ok(());
                        }
                    }
                    Err(e) => break Err(e),
                }
            };
            self.signalfd = Some((fd, buf));
            r
        } else {
            loop {
                stats.wait_syscalls += 1;
                stats.dequeue_calls += 1;
                match sig::sigtimedwait(&self.set, Some(Duration::ZERO))? {
                    Some(info) => {
                        self.accept(info, true, stats);
                    }
                    None => return Ok(()),
                }
            }
        }
    }

    /// Dequeue a pending `SIGIO`, telling the thread's other pollers.
    fn absorb_sigio(&mut self, stats: &mut Stats) -> io::Result<()> {
        stats.wait_syscalls += 1;
        stats.dequeue_calls += 1;
        if sig::sigtimedwait(&self.sigio, Some(Duration::ZERO))?.is_some() {
            OVERFLOWS.with(|o| o.set(o.get() + 1));
        }
        self.overflows_seen = OVERFLOWS.with(Cell::get);
        Ok(())
    }

    fn reset_awaiting(&mut self) {
        for fd in self.awaiting_fds.drain(..) {
            self.slots[fd as usize].awaiting = 0;
        }
    }

    /// Stop the signal (the hybrid's epoll mode): unblocked and ignored, it
    /// is no longer queued and what was queued is discarded, so it neither
    /// costs a dequeue nor holds the user's queue budget. Falls back to
    /// letting it queue (flushed by `resume`) if the application has given
    /// the signal a handler.
    pub(crate) fn pause(&mut self, stats: &mut Stats) -> io::Result<()> {
        stats.wait_syscalls += 1;
        if self.queuing && sig::is_ignored(self.signal)? {
            stats.wait_syscalls += 1;
            sig::unblock(&self.only)?;
            self.queuing = false;
            self.reset_awaiting();
            self.empty_epoch += 1;
        }
        self.clear_probes();
        Ok(())
    }

    /// Queue the signal again after `pause`, then flush anything left over
    /// and a pending `SIGIO`. The caller sweeps the interest set next.
    pub(crate) fn resume(&mut self, stats: &mut Stats) -> io::Result<()> {
        if !self.queuing {
            stats.wait_syscalls += 1;
            sig::block(&self.only)?;
            self.queuing = true;
            self.empty_epoch += 1;
            self.need_recovery = false;
            self.absorb_sigio(stats)
        } else {
            self.flush(stats)
        }
    }

    /// Overflow recovery by polling: flush, then `poll` the interest set,
    /// which is always current. Needs `pollfds` (rtsig, rtsig-batch).
    pub(crate) fn recover_by_poll(&mut self, stats: &mut Stats) -> io::Result<()> {
        stats.overflows += 1;
        self.flush(stats)?;
        self.clear_probes();
        let mut pollfds = self
            .pollfds
            .take()
            .expect("recover_by_poll needs the poll interest set");
        stats.wait_syscalls += 1;
        let r = sig::poll_now(&mut pollfds);
        if r.is_ok() {
            for p in &pollfds {
                if p.revents != 0 {
                    self.add_disarming(p.fd, Ready::from_poll_bits(p.revents as u32), stats);
                }
            }
        }
        self.pollfds = Some(pollfds);
        r?;
        stats.recoveries += 1;
        Ok(())
    }

    /// Add a hint found by another mechanism (the hybrid's epoll).
    #[inline]
    pub(crate) fn add_hint(&mut self, fd: RawFd, ready: Ready, stats: &mut Stats) {
        self.add(fd, ready, stats);
    }

    /// The signalfd of the batch mechanisms: readable, in the owner thread,
    /// while one of the signals a wait dequeues is pending for it.
    pub(crate) fn signalfd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd;
        self.signalfd.as_ref().map(|(fd, _)| fd.as_fd())
    }

    /// Signals one `read_batch` can dequeue.
    #[inline]
    pub(crate) fn batch_len(&self) -> usize {
        self.signalfd.as_ref().map_or(1, |(_, buf)| buf.len())
    }

    /// An overflow was handled without a flush (the hybrid pauses the
    /// signal instead).
    pub(crate) fn acknowledge_overflow(&mut self) {
        self.overflows_seen = OVERFLOWS.with(Cell::get);
        self.need_recovery = false;
    }

    /// How many hints this wait has so far.
    #[inline]
    pub(crate) fn pending_hints(&self) -> usize {
        self.out.len()
    }

    /// Move this wait's results into `events`.
    #[inline]
    pub(crate) fn emit(&mut self, events: &mut Events) {
        events.reserve(self.out.len());
        for &(fd, ready) in &self.out {
            let i = fd as usize;
            events.push(Event::new(self.slots[i].token, ready));
            if self.coalesce {
                self.reported[i / 64] = 0;
            }
        }
        self.out.clear();
    }
}

impl Drop for SignalQueue {
    fn drop(&mut self) {
        // Registrations left at drop: stop their signals, where the descriptor
        // still is the one we set up (a number closed without deregister may
        // belong to someone else by now).
        for (fd, s) in self.slots.iter().enumerate() {
            let fd = fd as RawFd;
            if s.registered && sig::owned_by(fd, self.tid, self.signal) {
                if let Ok(f) = sig::flags(fd) {
                    let _ = sig::set_flags(fd, f & !libc::O_ASYNC);
                }
            }
        }
        if thread_key() == self.key && self.queuing {
            // Leave nothing of ours queued for the next poller of this number.
            while let Ok(Some(_)) = sig::sigtimedwait(&self.only, Some(Duration::ZERO)) {}
        }
        release_signal(self.key, self.signal);
    }
}

#[cfg(test)]
mod tests {
    //! The queue's bookkeeping, fed with made-up dequeued signals: no signal
    //! is raised here (the floods are in `tests/rtsig_storm.rs`).

    use super::*;
    use std::os::unix::net::UnixStream;

    /// A queue on this test's thread (its signal blocked here, nothing queued).
    fn queue(batch: bool) -> SignalQueue {
        SignalQueue::open(&Config::new(crate::Mechanism::RtSigBatch), batch, true).unwrap()
    }

    fn io_signal(q: &SignalQueue, fd: RawFd, band: libc::c_short) -> sig::SigInfo {
        sig::SigInfo {
            signo: q.signal,
            code: 1, // POLL_IN
            pid: 0,
            fd_or_value: fd,
            band: band as u32,
        }
    }

    fn marker(q: &SignalQueue, fd: RawFd) -> sig::SigInfo {
        sig::SigInfo {
            signo: q.signal,
            code: libc::SI_QUEUE,
            pid: q.tgid,
            fd_or_value: fd,
            band: 0,
        }
    }

    fn emitted(q: &mut SignalQueue) -> Vec<(Token, Ready)> {
        let mut events = Events::with_capacity(8);
        q.emit(&mut events);
        events.iter().map(|e| (e.token(), e.ready())).collect()
    }

    #[test]
    fn signal_numbers_are_shared_out_per_thread() {
        // A key no thread has: the whole range, then a refusal, then reuse.
        let key = u64::MAX - 7;
        let span = (libc::SIGRTMAX() - libc::SIGRTMIN() + 1) as usize;
        let wanted = libc::SIGRTMAX();
        let mut got: Vec<c_int> = (0..span)
            .map(|_| allocate_signal(key, wanted).unwrap())
            .collect();
        assert_eq!(got[0], wanted);
        assert_eq!(got[1], libc::SIGRTMIN(), "wraps around after SIGRTMAX()");
        got.sort_unstable();
        got.dedup();
        assert_eq!(got.len(), span, "every number once");
        let e = allocate_signal(key, wanted).unwrap_err();
        assert!(e.to_string().contains("fewer pollers per thread"), "{e}");
        // Another thread's key is not affected by this one's.
        let other = allocate_signal(key - 1, wanted).unwrap();
        release_signal(key - 1, other);
        release_signal(key, wanted);
        assert_eq!(allocate_signal(key, libc::SIGRTMIN()).unwrap(), wanted);
        for s in got {
            release_signal(key, s);
        }
    }

    #[test]
    fn hints_are_filtered_by_interest_and_merged_per_fd_within_a_wait() {
        let mut q = queue(true);
        let mut stats = Stats::default();
        let (a, _a) = UnixStream::pair().unwrap();
        let (b, _b) = UnixStream::pair().unwrap();
        let (fa, fb) = (a.as_raw_fd(), b.as_raw_fd());
        q.register(fa, Token(1), Interest::READABLE, false).unwrap();
        q.register(fb, Token(2), Interest::BOTH, false).unwrap();

        // Writability outside a's interest: dropped; its input: kept.
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLOUT), false, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLIN), false, &mut stats),
            Dequeued::Event
        );
        assert_eq!(
            q.accept(io_signal(&q, fb, libc::POLLOUT), false, &mut stats),
            Dequeued::Event
        );
        // A second hint for b in the same wait merges into the first.
        assert_eq!(
            q.accept(io_signal(&q, fb, libc::POLLIN), false, &mut stats),
            Dequeued::Event
        );
        assert_eq!(stats.coalesced, 1);
        assert_eq!(stats.signals_dequeued, 4);
        assert_eq!(q.pending_hints(), 2);
        assert_eq!(
            emitted(&mut q),
            [
                (Token(1), Ready::READABLE),
                (Token(2), Ready::READABLE | Ready::WRITABLE)
            ]
        );
        // The next wait starts afresh: b is reported again, not merged.
        q.accept(io_signal(&q, fb, libc::POLLIN), false, &mut stats);
        assert_eq!(stats.coalesced, 1);
        assert_eq!(emitted(&mut q), [(Token(2), Ready::READABLE)]);

        // A modify changes the token and interest the next hint is read with.
        q.modify(fa, Token(9), Interest::WRITABLE, false).unwrap();
        q.accept(
            io_signal(&q, fa, libc::POLLIN | libc::POLLOUT),
            false,
            &mut stats,
        );
        assert_eq!(emitted(&mut q), [(Token(9), Ready::WRITABLE)]);
    }

    #[test]
    fn without_coalescing_every_signal_is_an_event() {
        let mut q = queue(false);
        let mut stats = Stats::default();
        let (a, _a) = UnixStream::pair().unwrap();
        q.register(a.as_raw_fd(), Token(3), Interest::READABLE, false)
            .unwrap();
        for _ in 0..3 {
            q.accept(
                io_signal(&q, a.as_raw_fd(), libc::POLLIN),
                false,
                &mut stats,
            );
        }
        assert_eq!(stats.coalesced, 0);
        assert_eq!(emitted(&mut q).len(), 3);
    }

    #[test]
    fn stale_signals_are_dropped_until_their_marker_is_dequeued() {
        let mut q = queue(true);
        let mut stats = Stats::default();
        let (a, _a) = UnixStream::pair().unwrap();
        let fa = a.as_raw_fd();
        q.register(fa, Token(1), Interest::READABLE, false).unwrap();
        // As if a marker had been queued ahead of the new registration's signals.
        q.slots[fa as usize].awaiting = 1;
        q.awaiting_fds.push(fa);
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLIN), false, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(stats.stale_dropped, 1);
        assert_eq!(
            q.accept(marker(&q, fa), false, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(q.slots[fa as usize].awaiting, 0);
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLIN), false, &mut stats),
            Dequeued::Event
        );
        emitted(&mut q);

        // A marker dequeued during a flush still counts; the I/O signals don't.
        q.slots[fa as usize].awaiting = 1;
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLIN), true, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(
            q.accept(marker(&q, fa), true, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(q.slots[fa as usize].awaiting, 0);
        assert_eq!(q.pending_hints(), 0);

        // Signals for a number no longer registered are stale too.
        q.deregister(fa).unwrap();
        let before = stats.stale_dropped;
        assert_eq!(
            q.accept(io_signal(&q, fa, libc::POLLIN), false, &mut stats),
            Dequeued::Nothing
        );
        assert_eq!(stats.stale_dropped, before + 1);
        // Nothing of the signal is pending, so registering the number again
        // queues no marker.
        q.register(fa, Token(5), Interest::READABLE, false).unwrap();
        assert_eq!(q.slots[fa as usize].awaiting, 0);
        assert!(!q.need_recovery);
    }

    #[test]
    fn foreign_signals_are_ignored_and_sigio_is_an_overflow_for_every_poller_of_the_thread() {
        let mut q = queue(true);
        let mut other = queue(true);
        let mut stats = Stats::default();
        let (a, _a) = UnixStream::pair().unwrap();
        q.register(a.as_raw_fd(), Token(1), Interest::READABLE, false)
            .unwrap();
        let mut kill = io_signal(&q, a.as_raw_fd(), libc::POLLIN);
        kill.code = libc::SI_USER;
        assert_eq!(q.accept(kill, false, &mut stats), Dequeued::Nothing);
        let mut elsewhere = marker(&q, a.as_raw_fd());
        elsewhere.pid = q.tgid + 1; // sigqueue from another process: not a marker
        assert_eq!(q.accept(elsewhere, false, &mut stats), Dequeued::Nothing);
        let mut not_ours = io_signal(&q, a.as_raw_fd(), libc::POLLIN);
        not_ours.signo = other.signal;
        assert_eq!(q.accept(not_ours, false, &mut stats), Dequeued::Nothing);
        assert_eq!(q.pending_hints(), 0);

        assert!(!q.overflow_noticed() && !other.overflow_noticed());
        let mut sigio = io_signal(&q, 0, 0);
        sigio.signo = libc::SIGIO;
        assert_eq!(q.accept(sigio, false, &mut stats), Dequeued::Overflow);
        assert!(q.overflow_noticed() && other.overflow_noticed());
        q.acknowledge_overflow();
        other.acknowledge_overflow();
        assert!(!q.overflow_noticed() && !other.overflow_noticed());
    }

    #[test]
    fn the_poll_set_follows_registrations() {
        let mut q = queue(true);
        let pairs: Vec<_> = (0..3).map(|_| UnixStream::pair().unwrap()).collect();
        let fds: Vec<RawFd> = pairs.iter().map(|(s, _)| s.as_raw_fd()).collect();
        for (i, &fd) in fds.iter().enumerate() {
            q.register(fd, Token(i), Interest::READABLE, false).unwrap();
        }
        let e = q
            .register(fds[0], Token(0), Interest::READABLE, false)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        q.modify(fds[2], Token(2), Interest::BOTH, false).unwrap();
        q.deregister(fds[0]).unwrap();
        assert_eq!(
            q.deregister(fds[0]).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        let pollfds = q.pollfds.as_ref().unwrap();
        let set: Vec<(RawFd, libc::c_short)> = pollfds.iter().map(|p| (p.fd, p.events)).collect();
        assert_eq!(
            set,
            [
                (fds[2], Interest::BOTH.as_poll_events()),
                (fds[1], Interest::READABLE.as_poll_events())
            ],
            "the last entry moves into the removed one's place"
        );
        for (i, p) in pollfds.iter().enumerate() {
            assert_eq!(q.slots[p.fd as usize].poll_idx as usize, i);
        }
        // Deferred probes: one per descriptor, however often it changed.
        q.modify(fds[1], Token(1), Interest::READABLE, true)
            .unwrap();
        q.modify(fds[1], Token(1), Interest::READABLE, true)
            .unwrap();
        assert_eq!(q.probes, [fds[1]]);
        q.clear_probes();
        assert!(q.probes.is_empty() && !q.slots[fds[1] as usize].probe);
    }
}
