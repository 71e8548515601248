//! `poll`: the interest set is one `pollfd` array kept across waits and handed
//! whole to the kernel on every call; the kernel polls each entry and the
//! caller scans every `revents` for the results. A wait thus costs O(number
//! of registered descriptors), however few are active: what the seeds
//! measured (Kegel: ×300–493 from 100 to 10,000 fds on 2.2/2.4 kernels).
//!
//! Registration is O(1): a new entry is pushed at the end; a removed entry is
//! replaced by the last one (swap-remove), and a per-descriptor slot index
//! says where each descriptor's entry is. Tokens and interests live in an
//! array beside the `pollfd`s, index for index, so the array passed to the
//! kernel stays dense.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::backend::Backend;
use super::fdtable::FdTable;
use crate::config::Config;
use crate::event::{Event, Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys;
use crate::sys::poll::PollFd;

const NAME: &str = "poll";

pub(crate) struct Poll {
    /// What the kernel sees.
    fds: Vec<PollFd>,
    /// Token and interest of `fds[i]`, at the same index.
    regs: Vec<(Token, Interest)>,
    /// Descriptor number → index into `fds`.
    index: FdTable<usize>,
}

pub(crate) fn open(config: &Config) -> io::Result<Box<dyn Backend>> {
    Ok(Box::new(Poll {
        fds: Vec::with_capacity(config.initial_events),
        regs: Vec::with_capacity(config.initial_events),
        index: FdTable::new(),
    }))
}

impl Backend for Poll {
    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        self.index.insert(NAME, fd, self.fds.len())?;
        self.fds.push(PollFd {
            fd,
            events: interest.as_poll_events(),
            revents: 0,
        });
        self.regs.push((token, interest));
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let interest = interest.without_exclusive();
        let i = *self.index.get_mut(NAME, fd)?;
        self.fds[i].events = interest.as_poll_events();
        self.regs[i] = (token, interest);
        Ok(())
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        let i = self.index.remove(NAME, fd)?;
        self.fds.swap_remove(i);
        self.regs.swap_remove(i);
        if let Some(moved) = self.fds.get(i) {
            // The former last entry now lives at `i`.
            *self
                .index
                .get_mut(NAME, moved.fd)
                .expect("every pollfd entry has an index slot") = i;
        }
        Ok(())
    }

    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        stats.wait_syscalls += 1;
        let mut left = sys::poll::poll(&mut self.fds, sys::epoll::timeout_ms(timeout))?;
        for (p, &(token, interest)) in self.fds.iter().zip(&self.regs) {
            if left == 0 {
                break;
            }
            if p.revents == 0 {
                continue;
            }
            left -= 1;
            let ready = if p.revents & libc::POLLNVAL != 0 {
                // Closed while registered: say so (a read or write will fail
                // with EBADF) rather than spin on an entry that never clears.
                Ready::ERROR
            } else {
                Ready::from_poll_bits(p.revents as u16 as u32).filter(interest)
            };
            if !ready.is_empty() {
                events.push(Event::new(token, ready));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Events;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn backend() -> Poll {
        Poll {
            fds: Vec::new(),
            regs: Vec::new(),
            index: FdTable::new(),
        }
    }

    /// Swap-remove from the front, middle and end keeps every remaining
    /// descriptor with its own token, and readiness still maps to it.
    #[test]
    fn swap_remove_keeps_the_right_tokens() {
        let mut p = backend();
        let pipes: Vec<(OwnedFd, OwnedFd)> = (0..6).map(|_| sys::pipe().unwrap()).collect();
        for (i, (r, _)) in pipes.iter().enumerate() {
            p.register(r.as_raw_fd(), Token(100 + i), Interest::READABLE)
                .unwrap();
        }
        for gone in [0, 3, 5] {
            p.deregister(pipes[gone].0.as_raw_fd()).unwrap();
        }
        assert_eq!(p.fds.len(), 3);
        for (i, pfd) in p.fds.iter().enumerate() {
            let k = pipes
                .iter()
                .position(|(r, _)| r.as_raw_fd() == pfd.fd)
                .unwrap();
            assert_eq!(p.regs[i].0, Token(100 + k), "entry {i} lost its token");
            assert_eq!(*p.index.get_mut(NAME, pfd.fd).unwrap(), i);
        }
        // Every survivor reports under its own token.
        for (_, w) in &pipes {
            sys::write(w.as_raw_fd(), b"x").unwrap();
        }
        let mut ev = Events::with_capacity(8);
        let mut stats = Stats::default();
        p.wait(&mut ev, Some(Duration::from_secs(5)), &mut stats)
            .unwrap();
        let mut got: Vec<usize> = ev.iter().map(|e| e.token().0).collect();
        got.sort();
        assert_eq!(got, vec![101, 102, 104]);
        // Modify after the moves hits the right entry.
        p.modify(pipes[4].0.as_raw_fd(), Token(7), Interest::WRITABLE)
            .unwrap();
        ev.clear();
        p.wait(&mut ev, Some(Duration::ZERO), &mut stats).unwrap();
        let mut got: Vec<usize> = ev.iter().map(|e| e.token().0).collect();
        got.sort();
        assert_eq!(got, vec![101, 102], "a pipe's read end is never writable");
    }

    #[test]
    fn closed_while_registered_is_an_error_event() {
        let mut p = backend();
        let (r0, _w) = sys::pipe().unwrap();
        // A number no other test thread will be handed while it is closed
        // (descriptors are allocated lowest first).
        let r = sys::dup_at_least(r0.as_raw_fd(), 1000).unwrap();
        p.register(r.as_raw_fd(), Token(1), Interest::READABLE)
            .unwrap();
        drop(r);
        let mut ev = Events::with_capacity(2);
        p.wait(&mut ev, Some(Duration::from_secs(5)), &mut Stats::default())
            .unwrap();
        assert_eq!(ev.len(), 1);
        assert!(ev.as_slice()[0].is_error());
    }
}
