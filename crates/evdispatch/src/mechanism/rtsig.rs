//! `rtsig` and `rtsig-batch`: POSIX real-time signals as the readiness
//! mechanism, the design of phhttpd and of the seeds' µservers, made to lose
//! nothing (the queue, overflow and stale-signal handling are in
//! [`signals`](super::signals)).
//!
//! * `rtsig` dequeues with `sigtimedwait`, one signal per call, and reports
//!   one event per wait, exactly as a `sigwaitinfo` loop does.
//! * `rtsig-batch` dequeues many signals per `read()` of a signalfd (what
//!   seed 000's proposed `sigtimedwait4` would have done) and merges the
//!   signals of one wait per descriptor, their bands OR'd, checked in
//!   constant time with a bitmap: seed 004's signal-per-fd, applied where the
//!   events are handed over instead of in the kernel's queue.
//!
//! Both recover from a queue overflow (`SIGIO`) by flushing the queue and
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

    /// The batch wait ([`SignalQueue::wait_batches`]), after the probes.
    fn wait_batch(&mut self, timeout: Option<Duration>, stats: &mut Stats) -> io::Result<()> {
        self.q.run_probes(stats)?;
        match self.q.wait_batches(timeout, usize::MAX, stats)? {
            BatchWait::Overflow => self.q.recover_by_poll(stats),
            BatchWait::Done | BatchWait::Heavy => Ok(()),
        }
    }
}

impl Backend for RtSig {
    /// The signalfd of `rtsig-batch`; `rtsig` dequeues with `sigtimedwait`
    /// and has none.
    fn wait_fd(&self) -> Option<BorrowedFd<'_>> {
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
