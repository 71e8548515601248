//! `uring`: one multishot `IORING_OP_POLL_ADD` per descriptor, completions
//! read from io_uring's shared completion ring.
//!
//! The interest set lives in the kernel as armed poll requests (seed 000's
//! `/dev/poll`, with the completion ring as its `mmap`'d result area).
//! `register` queues a poll add, `modify` a poll update, `deregister` a poll
//! remove; none of them makes a system call. The next wait submits them all
//! together with the wait itself, in one `io_uring_enter` ("update the
//! interest set and poll in one call", which seed 000 lists as future work);
//! a full submission queue is submitted on the spot. A wait that finds
//! completions already in the ring, with nothing to submit, makes no system
//! call at all.
//!
//! **Trigger: edge.** Without `IORING_POLL_ADD_LEVEL` the kernel arms a
//! multishot poll with `EPOLLET` semantics: it posts a completion when the
//! descriptor's wait queue is woken with a matching event (new data, a new
//! connection, buffer space freed, a hang-up), plus one at arming time if the
//! descriptor is ready then; it does not repeat while the condition merely
//! holds. The consumer must read or write until `EAGAIN`.
//!
//! **Re-arming.** A multishot poll can end (completion ring overflow, a
//! failed update, a cancellation): its last completion lacks
//! `IORING_CQE_F_MORE`, and the poll is armed again with the current
//! interest (`Stats::rearms`).
//!
//! **Stale completions.** `user_data` carries the descriptor number and a
//! generation given at register, so completions still in flight for a
//! removed registration are recognised and dropped (`Stats::stale_dropped`),
//! and never surface under a new registration of the same number. The token
//! and the current interest are one `Vec` index away (by descriptor number);
//! readiness bits are filtered by the current interest, so a completion
//! posted before a `modify` reports only what is now asked for, and one left
//! with no bit is dropped.
//!
//! **Threads.** A poll request belongs to the thread that submitted it, and
//! that thread runs its completion work. Submissions ride on waits, so the
//! polls belong to the thread that waits, wherever the poller was created;
//! only a registration burst that overflows the submission queue is
//! submitted by the registering thread. A poller that changes threads keeps
//! working (the kernel re-arms nothing by itself, but the polls of an exited
//! thread end with `ECANCELED` and are re-armed here), at the cost of waking
//! the old thread for completions until then.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::time::Duration;

use super::backend::Backend;
use super::fdtable::FdTable;
use crate::config::Config;
use crate::event::{Event, Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys::uring::Ring;

const NAME: &str = "uring";

/// `user_data` of a control request (poll update or remove), whose low bits
/// name the poll it acts on.
const CTL: u64 = 1 << 63;
/// With `CTL`: the request is a removal (otherwise an update).
const REMOVE: u64 = 1 << 62;
/// Generations use the 30 bits between the descriptor and the flags.
const GEN_MASK: u32 = (1 << 30) - 1;

/// The `user_data` of the poll of registration `gen` of `fd`.
#[inline]
fn poll_user_data(fd: RawFd, gen: u32) -> u64 {
    (u64::from(gen) << 32) | u64::from(fd as u32)
}

#[inline]
fn poll_mask(interest: Interest) -> u32 {
    u32::from(interest.as_poll_events() as u16)
}

#[derive(Debug)]
struct Reg {
    token: Token,
    interest: Interest,
    gen: u32,
    /// A poll is armed (or queued) for this registration. False after a poll
    /// ended in an error (the descriptor was closed while registered).
    armed: bool,
}

pub(crate) struct Uring {
    ring: Ring,
    table: FdTable<Reg>,
    next_gen: u32,
    /// SQEs submitted by register/modify/deregister to make room in a full
    /// queue, added to the statistics at the next wait.
    submitted: u64,
}

pub(crate) fn open(config: &Config) -> io::Result<Box<dyn Backend>> {
    let entries = config.uring_entries.max(1);
    // Room for a burst of completions between two waits; a burst beyond it
    // ends some multishot polls, which are then re-armed.
    let ring = Ring::new(entries, entries.saturating_mul(4)).map_err(setup_failed)?;
    let f = ring.features();
    if !f.ext_arg || !f.multishot_poll {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "uring needs Linux 5.13 or later (multishot poll, poll update, wait timeouts in \
             io_uring_enter); this kernel's io_uring predates them — use epoll",
        ));
    }
    Ok(Box::new(Uring {
        ring,
        table: FdTable::new(),
        next_gen: 0,
        submitted: 0,
    }))
}

/// Why `io_uring_setup` failed, and what to do.
fn setup_failed(e: io::Error) -> io::Error {
    let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled").ok();
    explain_setup_error(e, sysctl.as_deref().map(str::trim))
}

fn explain_setup_error(e: io::Error, io_uring_disabled: Option<&str>) -> io::Error {
    let unsupported = |msg: String| io::Error::new(io::ErrorKind::Unsupported, msg);
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => unsupported(match io_uring_disabled {
            Some("2") => "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled = 2); \
                 enable it with `sysctl -w kernel.io_uring_disabled=0` as root, or use epoll"
                .to_string(),
            Some("1") => "io_uring is limited to root and the group in kernel.io_uring_group \
                 (sysctl kernel.io_uring_disabled = 1); run as a member of that group, set \
                 kernel.io_uring_disabled=0, or use epoll"
                .to_string(),
            _ => format!(
                "io_uring_setup was refused ({e}), probably by a seccomp filter (container \
                 runtimes often block io_uring); allow io_uring_setup and io_uring_enter in the \
                 sandbox, or use epoll"
            ),
        }),
        Some(libc::ENOSYS) => unsupported(
            "this kernel has no io_uring (io_uring_setup: ENOSYS): it predates Linux 5.1, was \
             built without CONFIG_IO_URING, or a seccomp filter hides the call; uring needs \
             Linux 5.13 or later — use epoll"
                .to_string(),
        ),
        _ => io::Error::new(
            e.kind(),
            format!(
                "io_uring_setup failed: {e} (before Linux 5.12 rings count against the locked-memory \
                 limit: raise `ulimit -l`, or lower the poller option uring_entries)"
            ),
        ),
    }
}

impl Uring {
    fn next_generation(&mut self) -> u32 {
        let gen = self.next_gen;
        self.next_gen = (gen + 1) & GEN_MASK;
        gen
    }
}

impl Backend for Uring {
    fn wait_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.ring.as_fd())
    }

    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        let gen = self.next_generation();
        let reg = Reg {
            token,
            interest,
            gen,
            armed: true,
        };
        self.table.insert(NAME, fd, reg)?;
        match self
            .ring
            .poll_add(fd, poll_mask(interest), poll_user_data(fd, gen))
        {
            Ok(n) => {
                self.submitted += n as u64;
                Ok(())
            }
            Err(e) => {
                let _ = self.table.remove(NAME, fd);
                Err(e)
            }
        }
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        let reg = self.table.get_mut(NAME, fd)?;
        reg.token = token;
        reg.interest = interest;
        let target = poll_user_data(fd, reg.gen);
        let n = if reg.armed {
            self.ring
                .poll_update(target, poll_mask(interest), CTL | target)?
        } else {
            reg.armed = true;
            self.ring.poll_add(fd, poll_mask(interest), target)?
        };
        self.submitted += n as u64;
        Ok(())
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        let reg = self.table.remove(NAME, fd)?;
        if reg.armed {
            let target = poll_user_data(fd, reg.gen);
            let n = self.ring.poll_remove(target, CTL | REMOVE | target)?;
            self.submitted += n as u64;
        }
        Ok(())
    }

    #[inline]
    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        stats.sqes_submitted += std::mem::take(&mut self.submitted);
        let pending = self.ring.sq_pending();
        let ready = self.ring.cq_ready();
        if pending > 0 || ready == 0 || self.ring.needs_enter() {
            stats.wait_syscalls += 1;
            let r = if ready > 0 || timeout == Some(Duration::ZERO) {
                self.ring.enter(0, None)
            } else {
                self.ring.enter(1, timeout)
            };
            match r {
                Ok(_) => {}
                // Timed out, interrupted, or completions backed up behind a
                // full ring (reaping below makes room): all end this wait.
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                    ) => {}
                Err(e) => return Err(e),
            }
            stats.sqes_submitted += pending.saturating_sub(self.ring.sq_pending()) as u64;
        }

        let table = &mut self.table;
        let (mut stale, mut rearms) = (0u64, 0u64);
        let submitted = self.ring.reap(|cqe, sq| {
            let ud = cqe.user_data;
            if ud & CTL != 0 {
                // An update or removal that did not succeed. ENOENT: the
                // poll had already ended; its last completion re-arms it if
                // the registration still exists. EALREADY: the poll was
                // busy posting a completion; try again.
                if cqe.result == -libc::EALREADY {
                    let target = ud & !(CTL | REMOVE);
                    if ud & REMOVE != 0 {
                        sq.poll_remove(target, ud);
                    } else if let Some(reg) = table
                        .slot_mut(target as u32 as usize)
                        .filter(|r| r.gen == (target >> 32) as u32)
                    {
                        sq.poll_update(target, poll_mask(reg.interest), ud);
                    }
                }
                return;
            }
            let fd = ud as u32 as usize;
            let Some(reg) = table.slot_mut(fd).filter(|r| r.gen == (ud >> 32) as u32) else {
                if cqe.result > 0 {
                    stale += 1;
                }
                return;
            };
            if cqe.result > 0 {
                let ready = Ready::from_poll_bits(cqe.result as u32).filter(reg.interest);
                if !ready.is_empty() {
                    events.push(Event::new(reg.token, ready));
                }
            }
            if !cqe.more {
                if cqe.result >= 0 || cqe.result == -libc::ECANCELED {
                    sq.poll_add(fd as RawFd, poll_mask(reg.interest), ud);
                    rearms += 1;
                } else {
                    // The poll failed (EBADF: closed while registered). Say
                    // so once; modify arms it again, deregister forgets it.
                    reg.armed = false;
                    events.push(Event::new(reg.token, Ready::ERROR));
                }
            }
        });
        stats.stale_dropped += stale;
        stats.rearms += rearms;
        stats.sqes_submitted += submitted? as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mechanism, Poller};
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    fn poller(entries: u32) -> Option<Poller> {
        let mut c = Config::new(Mechanism::Uring);
        c.uring_entries = entries;
        match Poller::with_config(c) {
            Ok(p) => Some(p),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                eprintln!("skipping: {e}");
                None
            }
            Err(e) => panic!("{e}"),
        }
    }

    fn pair() -> (UnixStream, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    #[test]
    fn user_data_round_trips() {
        let ud = poll_user_data(19_999, GEN_MASK);
        assert_eq!(ud & (CTL | REMOVE), 0);
        assert_eq!(ud as u32, 19_999);
        assert_eq!((ud >> 32) as u32, GEN_MASK);
        let ctl = CTL | REMOVE | ud;
        assert_eq!(ctl & !(CTL | REMOVE), ud);
    }

    /// Completions posted for a registration that was removed (and the
    /// number re-registered) before they were reaped are dropped and counted.
    #[test]
    fn stale_completions_are_dropped() {
        let Some(mut p) = poller(64) else { return };
        let mut ev = Events::with_capacity(8);
        let (a, b) = pair();
        let fd = a.as_raw_fd();
        p.register(fd, Token(1), Interest::READABLE).unwrap();
        // The add is submitted; then a completion for registration 1 lands
        // in the ring...
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        crate::sys::write(b.as_raw_fd(), b"x").unwrap();
        // ...and before any wait reaps it, the fd is registered anew.
        p.deregister(fd).unwrap();
        p.register(fd, Token(2), Interest::WRITABLE).unwrap();
        let mut seen = Vec::new();
        for _ in 0..5 {
            p.wait(&mut ev, Some(Duration::from_millis(20))).unwrap();
            seen.extend(ev.iter().copied());
        }
        assert!(seen.iter().all(|e| e.token() == Token(2)), "{seen:?}");
        assert!(seen.iter().any(|e| e.is_writable()), "{seen:?}");
        assert!(
            seen.iter().all(|e| !e.is_readable()),
            "readable without read interest: {seen:?}"
        );
        assert!(p.stats().stale_dropped >= 1, "{:?}", p.stats());
    }

    /// More registrations than the submission queue holds are pushed in
    /// batches; a burst of completions beyond the completion ring ends
    /// multishot polls, which are re-armed; nothing is lost.
    #[test]
    fn full_queues_batch_and_rearm() {
        let Some(mut p) = poller(4) else { return };
        let mut ev = Events::with_capacity(8);
        let pairs: Vec<_> = (0..64).map(|_| pair()).collect();
        for (i, (a, _)) in pairs.iter().enumerate() {
            p.register(a.as_raw_fd(), Token(i), Interest::READABLE)
                .unwrap();
        }
        // Registering made no wait, but the queue of 4 had to be submitted.
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert_eq!(p.stats().sqes_submitted, 64, "{:?}", p.stats());
        for round in 0..3 {
            for (_, b) in &pairs {
                crate::sys::write(b.as_raw_fd(), b"y").unwrap();
            }
            let mut got = vec![false; pairs.len()];
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while got.iter().any(|g| !g) {
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: {got:?}"
                );
                p.wait(&mut ev, Some(Duration::from_millis(50))).unwrap();
                for e in ev.iter() {
                    got[e.token().0] = true;
                    let mut buf = [0u8; 8];
                    while crate::sys::read(pairs[e.token().0].0.as_raw_fd(), &mut buf).is_ok() {}
                }
            }
        }
        assert!(
            p.stats().rearms > 0,
            "a 16-entry CQ must overflow: {:?}",
            p.stats()
        );
    }

    /// `modify` updates the running poll in place: one SQE in all, no re-arm.
    #[test]
    fn modify_is_a_poll_update() {
        let Some(mut p) = poller(64) else { return };
        let mut ev = Events::with_capacity(4);
        let (a, _b) = pair();
        p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
            .unwrap();
        p.wait(&mut ev, Some(Duration::from_millis(5))).unwrap();
        assert!(ev.is_empty(), "{:?}", ev.as_slice());
        p.modify(a.as_raw_fd(), Token(2), Interest::WRITABLE)
            .unwrap();
        p.wait(&mut ev, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(ev.len(), 1, "{:?}", ev.as_slice());
        assert!(ev.as_slice()[0].token() == Token(2) && ev.as_slice()[0].is_writable());
        let s = p.stats();
        assert_eq!((s.sqes_submitted, s.rearms), (2, 0), "{s:?}");
    }

    /// Polls submitted by a thread that has since exited still deliver, or
    /// end and are re-armed: a poller may change threads.
    #[test]
    fn survives_the_submitting_thread() {
        let Some(p) = poller(64) else { return };
        let (a, b) = pair();
        let fd = a.as_raw_fd();
        let mut p = std::thread::spawn(move || {
            let mut p = p;
            p.register(fd, Token(5), Interest::READABLE).unwrap();
            let mut ev = Events::with_capacity(4);
            p.wait(&mut ev, Some(Duration::ZERO)).unwrap(); // submitted here
            p
        })
        .join()
        .unwrap();
        let mut ev = Events::with_capacity(4);
        for round in 0..3 {
            crate::sys::write(b.as_raw_fd(), b"z").unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            loop {
                assert!(
                    std::time::Instant::now() < deadline,
                    "round {round}: {:?}",
                    p.stats()
                );
                p.wait(&mut ev, Some(Duration::from_millis(50))).unwrap();
                if ev.iter().any(|e| e.token() == Token(5) && e.is_readable()) {
                    break;
                }
            }
            let mut buf = [0u8; 4];
            while crate::sys::read(fd, &mut buf).is_ok() {}
        }
        eprintln!("after a thread change: {:?}", p.stats());
    }

    #[test]
    fn setup_errors_say_why_and_what_to_do() {
        let eperm = || io::Error::from_raw_os_error(libc::EPERM);
        let e = explain_setup_error(eperm(), Some("2"));
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("io_uring_disabled = 2") && e.to_string().contains("epoll"));
        let e = explain_setup_error(eperm(), Some("1"));
        assert!(e.to_string().contains("io_uring_group"), "{e}");
        let e = explain_setup_error(eperm(), Some("0"));
        assert!(e.to_string().contains("seccomp"), "{e}");
        let e = explain_setup_error(io::Error::from_raw_os_error(libc::ENOSYS), None);
        assert_eq!(e.kind(), io::ErrorKind::Unsupported);
        assert!(e.to_string().contains("5.13"), "{e}");
        let e = explain_setup_error(io::Error::from_raw_os_error(libc::ENOMEM), None);
        assert_ne!(e.kind(), io::ErrorKind::Unsupported);
    }
}
