//! `rtsig`, `rtsig-batch` and `rtsig-perfd`: POSIX real-time signals as the
//! readiness mechanism, the design of phhttpd and of the seeds' µservers,
//! made to lose nothing (the queue, overflow and stale-signal handling are in
//! [`signals`](super::signals)).
//!
//! * `rtsig` dequeues with `sigtimedwait`, one signal per call, and reports
//!   one event per wait, exactly as a `sigwaitinfo` loop does.
//! * `rtsig-batch` dequeues many signals per `read()` of a signalfd (what
//!   seed 000's proposed `sigtimedwait4` would have done) and merges the
//!   signals of one wait per descriptor, their bands OR'd, checked in
//!   constant time with a bitmap: seed 004's signal-per-fd, applied where the
//!   events are handed over instead of in the kernel's queue.
//! * `rtsig-perfd` is `rtsig-batch` that also keeps the queue at about one
//!   signal per descriptor, as near as user space comes to seed 004's
//!   signal-per-fd (§3.4), a kernel patch that queued a descriptor's signal
//!   only when none was queued for it already (a bitmap said which), so that
//!   a queue as long as the descriptor table could not overflow and a busy
//!   descriptor could not crowd out the others. Here a descriptor whose
//!   signal is dequeued (or that an overflow recovery or the probe after its
//!   registration finds ready) has its `O_ASYNC` cleared, so it queues
//!   nothing while the consumer serves it; the next wait sets `O_ASYNC`
//!   again on every such descriptor and then re-checks them with one `poll`,
//!   so that nothing that happened while one was disarmed is lost (see
//!   [`signals`](super::signals)).
//!
//!   How far it is from the patch: the patch coalesces at the moment a
//!   signal is queued; this disarms only at the moment one is dequeued. So
//!   between a re-arm (or the registration) and the next dequeue of its
//!   signal, a descriptor still queues one signal per readiness change: a
//!   busy connection that receives several segments before the server
//!   dequeues the first queues several signals, and a listening socket
//!   queues one per incoming connection. The queue can therefore still
//!   overflow (recovery stays: flush, then poll), only less often than
//!   `rtsig`'s; it does not when the queue holds one signal per descriptor
//!   and each armed descriptor changes at most once between its re-arm and
//!   its dequeue (`evdispatch bench storm` measures both cases). It costs what the patch did
//!   not: two `fcntl(F_SETFL)` per served descriptor (disarm, re-arm) and a
//!   `poll` of the re-armed descriptors per wait (counted in `rearms` and
//!   `wait_syscalls`). A descriptor the re-check finds ready is reported and
//!   left armed, so one that stays writable is reported once per re-arm, as
//!   a hint. Disarming and re-arming write the file status flags read at
//!   `register` (with `O_NONBLOCK`), so a flag the application changes on a
//!   registered descriptor is undone at its next re-arm. The next wait is
//!   the re-arm, so it has no descriptor for another event loop to watch:
//!   an outer loop that slept on the signalfd after the consumer drained
//!   would never hear a disarmed descriptor.
//!
//! All three recover from a queue overflow (`SIGIO`) by flushing the queue and
//! polling the interest set, which `register`/`modify`/`deregister` keep
//! current as a `pollfd` array, so a recovery never rebuilds it.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::time::Duration;

use super::backend::Backend;
use super::signals::{BatchWait, Dequeued, SignalQueue};
use crate::config::Config;
use crate::event::{Events, Interest, Token};
use crate::stats::Stats;

pub(crate) struct RtSig {
    q: SignalQueue,
    batch: bool,
}

pub(crate) fn open_per_fd(config: &Config) -> io::Result<Box<dyn Backend>> {
    let q = SignalQueue::open(config, true, true)?.per_fd();
    Ok(Box::new(RtSig { q, batch: true }))
}

pub(crate) fn open_single(config: &Config) -> io::Result<Box<dyn Backend>> {
    let q = SignalQueue::open(config, false, true)?;
    Ok(Box::new(RtSig { q, batch: false }))
}

pub(crate) fn open_batch(config: &Config) -> io::Result<Box<dyn Backend>> {
    let q = SignalQueue::open(config, true, true)?;
    Ok(Box::new(RtSig { q, batch: true }))
}

impl RtSig {
    /// One signal, one event: `sigtimedwait` until a signal yields an event
    /// (blocking only for the first; dropped signals are followed by a look
    /// at the next without waiting).
    fn wait_single(&mut self, timeout: Option<Duration>, stats: &mut Stats) -> io::Result<()> {
        if self.q.run_probes(stats)? {
            return Ok(());
        }
        let mut t = timeout;
        loop {
            match self.q.dequeue_one(t, stats)? {
                None | Some(Dequeued::Event) => return Ok(()),
                Some(Dequeued::Overflow) => return self.q.recover_by_poll(stats),
                Some(Dequeued::Nothing) => t = Some(Duration::ZERO),
            }
        }
    }

    /// The batch wait ([`SignalQueue::wait_batches`]), after re-arming what
    /// the last wait disarmed (`rtsig-perfd`) and the probes, which re-check
    /// those.
    fn wait_batch(&mut self, timeout: Option<Duration>, stats: &mut Stats) -> io::Result<()> {
        self.q.rearm(stats)?;
        self.q.run_probes(stats)?;
        match self.q.wait_batches(timeout, usize::MAX, stats)? {
            BatchWait::Overflow => self.q.recover_by_poll(stats),
            BatchWait::Done | BatchWait::Heavy => Ok(()),
        }
    }
}

impl Backend for RtSig {
    /// The signalfd of `rtsig-batch`; `rtsig` dequeues with `sigtimedwait`
    /// and has none, and `rtsig-perfd` none either: its disarmed descriptors
    /// raise nothing until a wait re-arms them.
    fn wait_fd(&self) -> Option<BorrowedFd<'_>> {
        if self.q.is_per_fd() {
            return None;
        }
        self.q.signalfd()
    }

    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        self.q.register(fd, token, interest, true)
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        self.q.modify(fd, token, interest, true)
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        self.q.deregister(fd)
    }

    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        self.q.check_thread()?;
        let r = if self.q.overflow_noticed() {
            self.q.recover_by_poll(stats)
        } else if self.batch {
            self.wait_batch(timeout, stats)
        } else {
            self.wait_single(timeout, stats)
        };
        self.q.emit(events);
        r
    }
}
