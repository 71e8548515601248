//! `hybrid`: the RT-signal/epoll server seed 000 proposed and nobody built.
//!
//! It starts in *signal mode*, which is `rtsig-batch` (signalfd batches,
//! per-descriptor coalescing). It moves to *epoll mode* when the signal queue
//! overflows (`SIGIO`) or when one dequeue batch reaches
//! `Config::hybrid_to_epoll_batch` signals, and back to signal mode after
//! `Config::hybrid_to_signal_waits` epoll waits in a row each returned fewer
//! than `Config::hybrid_to_signal_events` events.
//!
//! Every registration is made in both places at once: `O_ASYNC` ownership and
//! signal on the descriptor, and an edge-triggered entry in an epoll set. A
//! switch therefore rebuilds nothing; it only changes which queue a wait reads.
//!
//! In epoll mode the signal is *paused*: it is ignored process-wide (see
//! [`signals`](super::signals)), so unblocking it in the owner thread makes
//! the kernel discard what is queued and queue nothing more. Epoll mode then
//! pays nothing for signals and holds none of the user's queue budget
//! (`RLIMIT_SIGPENDING`, shared by every process of the user).
//!
//! Why nothing is lost at a switch:
//!
//! * **To epoll.** Every wake-up that queued a signal (or failed to, on
//!   overflow) also put the descriptor on the epoll ready list, where it
//!   stays until a harvest, and edge-triggered epoll re-checks readiness when
//!   it reports. The first epoll wait therefore reports every descriptor
//!   still ready whose signal was not read; the signals themselves are
//!   discarded.
//! * **To signals.** First the signal is blocked again, so every change from
//!   then on queues a signal; then a pending `SIGIO` is taken; then epoll is
//!   swept with `epoll_wait(…, 0)`. A change before the block is on the epoll
//!   ready list, so the sweep reports it; one after it is queued, and read by
//!   the next signal-mode wait (at worst a hint comes twice, from the sweep
//!   and the signal). A signal raised between the sweep and the first
//!   signal-mode wait is simply queued. A `SIGIO` raised after the sweep
//!   stays pending and is handled as a new overflow.
//!
//! Edge-triggered epoll is used for epoll mode so that its event counts
//! measure activity, as signals do: level-triggered epoll would report every
//! writable socket at every wait and the load would never seem to subside.
//! The contract is the same either way, as the consumer drains to `EAGAIN`.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::backend::Backend;
use super::epoll::flags as epoll_flags;
use super::signals::{BatchWait, SignalQueue};
use crate::config::Config;
use crate::event::{Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys::epoll as ep;
use crate::sys::signal as sig;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Signal,
    Epoll,
}

pub(crate) struct Hybrid {
    q: SignalQueue,
    ep: OwnedFd,
    buf: Vec<ep::EpollEvent>,
    mode: Mode,
    /// Epoll waits in a row with few events.
    calm: u32,
    to_epoll_batch: usize,
    to_signal_waits: u32,
    to_signal_events: usize,
    /// Time accounted to the modes up to here (`CLOCK_MONOTONIC_COARSE`, ns:
    /// read at every wait, so it must be cheap; the sums are exact to a tick).
    mark: u64,
}

pub(crate) fn open(config: &Config) -> io::Result<Box<dyn Backend>> {
    Ok(Box::new(Hybrid::new(config)?))
}

impl Hybrid {
    fn new(config: &Config) -> io::Result<Hybrid> {
        let q = SignalQueue::open(config, true, false)?;
        let ep = ep::create()?;
        let empty = libc::epoll_event { events: 0, u64: 0 };
        Ok(Hybrid {
            q,
            ep,
            buf: vec![empty; config.initial_events.max(1)],
            mode: Mode::Signal,
            calm: 0,
            to_epoll_batch: config.hybrid_to_epoll_batch.max(1),
            to_signal_waits: config.hybrid_to_signal_waits.max(1),
            to_signal_events: config.hybrid_to_signal_events,
            mark: sig::coarse_now_ns(),
        })
    }

    /// Charge the time since the last mark to the current mode.
    #[inline]
    fn account(&mut self, stats: &mut Stats) {
        let now = sig::coarse_now_ns();
        let ns = now.saturating_sub(self.mark);
        match self.mode {
            Mode::Signal => stats.signal_mode_ns += ns,
            Mode::Epoll => stats.poll_mode_ns += ns,
        }
        self.mark = now;
    }

    fn switch_to_epoll(&mut self, overflow: bool, stats: &mut Stats) -> io::Result<()> {
        if overflow {
            stats.overflows += 1;
            stats.recoveries += 1;
            self.q.acknowledge_overflow();
        }
        self.q.pause(stats)?;
        self.account(stats);
        self.mode = Mode::Epoll;
        self.calm = 0;
        stats.mode_switches += 1;
        Ok(())
    }

    /// Resume the signal, then sweep epoll: in that order (see the module
    /// docs). The sweep goes on while a harvest fills the buffer: what it
    /// leaves on the ready list, signal mode would never read, and the
    /// signals of those changes were discarded while the signal was paused.
    fn switch_to_signals(&mut self, stats: &mut Stats) -> io::Result<()> {
        self.q.resume(stats)?;
        while self.harvest(Some(Duration::ZERO), stats)?.1 {}
        self.account(stats);
        self.mode = Mode::Signal;
        self.calm = 0;
        stats.mode_switches += 1;
        Ok(())
    }

    /// One `epoll_wait`; its events join this wait's hints. Returns how
    /// many, and whether they filled the buffer (more may be ready; the
    /// buffer is then doubled for the next harvest).
    #[inline]
    fn harvest(
        &mut self,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<(usize, bool)> {
        stats.wait_syscalls += 1;
        let n = ep::wait(self.ep.as_raw_fd(), &mut self.buf, ep::timeout_ms(timeout))?;
        for i in 0..n {
            let ev = self.buf[i];
            self.q
                .add_hint(ev.u64 as RawFd, Ready::from_poll_bits(ev.events), stats);
        }
        let full = n == self.buf.len();
        if full {
            let grown = self.buf.len() * 2;
            self.buf
                .resize(grown, libc::epoll_event { events: 0, u64: 0 });
            stats.buffer_grows += 1;
        }
        Ok((n, full))
    }

    /// Overflow in signal mode: go to epoll and harvest at once.
    fn overflowed(&mut self, stats: &mut Stats) -> io::Result<()> {
        self.switch_to_epoll(true, stats)?;
        self.harvest(Some(Duration::ZERO), stats).map(|_| ())
    }

    fn wait_signal(&mut self, timeout: Option<Duration>, stats: &mut Stats) -> io::Result<()> {
        if self.q.overflow_noticed() {
            return self.overflowed(stats);
        }
        self.q.run_probes(stats)?;
        match self.q.wait_batches(timeout, self.to_epoll_batch, stats)? {
            BatchWait::Done => Ok(()),
            BatchWait::Overflow => self.overflowed(stats),
            // Heavy load: report this batch, then let epoll take over.
            BatchWait::Heavy => self.switch_to_epoll(false, stats),
        }
    }

    fn wait_epoll(&mut self, timeout: Option<Duration>, stats: &mut Stats) -> io::Result<()> {
        let (n, full) = self.harvest(timeout, stats)?;
        // A full buffer is not calm: it may have left ready ones behind.
        if n < self.to_signal_events && !full {
            self.calm += 1;
        } else {
            self.calm = 0;
        }
        if self.calm >= self.to_signal_waits {
            self.switch_to_signals(stats)?;
        }
        Ok(())
    }
}

impl Backend for Hybrid {
    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        self.q
            .register(fd, token, interest, self.mode == Mode::Signal)?;
        let added = ep::ctl(
            self.ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            fd,
            epoll_flags(interest, true),
            fd as u64,
        );
        if let Err(e) = added {
            let _ = self.q.deregister(fd);
            return Err(e);
        }
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        // Epoll first: it refuses a descriptor that is not registered or no
        // longer open before the signal side has changed anything.
        ep::ctl(
            self.ep.as_raw_fd(),
            libc::EPOLL_CTL_MOD,
            fd,
            epoll_flags(interest, true),
            fd as u64,
        )?;
        self.q
            .modify(fd, token, interest, self.mode == Mode::Signal)
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        let r = self.q.deregister(fd);
        if !matches!(&r, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            // A descriptor closed before deregister has left epoll already.
            let _ = ep::ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, 0, 0);
        }
        r
    }

    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        self.q.check_thread()?;
        let r = match self.mode {
            Mode::Signal => self.wait_signal(timeout, stats),
            Mode::Epoll => self.wait_epoll(timeout, stats),
        };
        self.q.emit(events);
        self.account(stats);
        r
    }
}

#[cfg(test)]
mod tests {
    //! The mode switches on a real signal queue and epoll set, driven
    //! directly: a few descriptors, so a few signals at most (the floods are
    //! in `tests/rtsig_storm.rs`).

    use super::*;
    use std::io::Write;
    use std::os::unix::net::UnixStream;

    /// A hybrid with a 4-entry epoll buffer in epoll mode, and 40 registered
    /// sockets each made readable while in it.
    fn forty_ready(to_signal_waits: u32) -> (Hybrid, Stats, Vec<(UnixStream, UnixStream)>) {
        let mut c = Config::new(crate::Mechanism::Hybrid);
        c.initial_events = 4;
        c.hybrid_to_signal_waits = to_signal_waits;
        let mut h = Hybrid::new(&c).unwrap();
        let mut stats = Stats::default();
        let pairs: Vec<_> = (0..40).map(|_| UnixStream::pair().unwrap()).collect();
        for (i, (a, _)) in pairs.iter().enumerate() {
            a.set_nonblocking(true).unwrap();
            h.register(a.as_raw_fd(), Token(i), Interest::READABLE)
                .unwrap();
        }
        h.switch_to_epoll(false, &mut stats).unwrap();
        for (_, b) in &pairs {
            (&*b).write_all(b"x").unwrap();
        }
        (h, stats, pairs)
    }

    fn tokens(h: &mut Hybrid) -> std::collections::BTreeSet<usize> {
        let mut events = Events::with_capacity(64);
        h.q.emit(&mut events);
        events.iter().map(|e| e.token().0).collect()
    }

    #[test]
    fn the_way_back_to_signals_sweeps_the_whole_ready_list() {
        let (mut h, mut stats, _pairs) = forty_ready(8);
        h.switch_to_signals(&mut stats).unwrap();
        assert_eq!(h.mode, Mode::Signal);
        // One harvest would have taken 4; signal mode never reads the rest.
        assert_eq!(tokens(&mut h).len(), 40, "{stats:?}");
    }

    #[test]
    fn a_harvest_that_fills_the_buffer_is_not_calm() {
        let (mut h, mut stats, _pairs) = forty_ready(1);
        h.wait_epoll(Some(Duration::ZERO), &mut stats).unwrap();
        // 4 events, fewer than hybrid_to_signal_events, but more are ready.
        assert_eq!((h.mode, h.calm), (Mode::Epoll, 0));
        assert_eq!(tokens(&mut h).len(), 4);
    }
}
