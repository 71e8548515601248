//! `epoll` and `epoll-et`: the interest set lives in the kernel (`epoll_ctl`),
//! a wait returns only the ready descriptors (`epoll_wait`). The token rides
//! in `epoll_event.data`, so dispatch needs no lookup.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::time::Duration;

use super::backend::Backend;
use crate::config::Config;
use crate::event::{Event, Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys::epoll as sys;

pub(crate) struct Epoll {
    ep: OwnedFd,
    buf: Vec<sys::EpollEvent>,
    edge: bool,
}

pub(crate) fn open_level(config: &Config) -> io::Result<Box<dyn Backend>> {
    Epoll::new(config, false).map(|e| Box::new(e) as Box<dyn Backend>)
}

pub(crate) fn open_edge(config: &Config) -> io::Result<Box<dyn Backend>> {
    Epoll::new(config, true).map(|e| Box::new(e) as Box<dyn Backend>)
}

impl Epoll {
    fn new(config: &Config, edge: bool) -> io::Result<Epoll> {
        let ep = sys::create()?;
        let empty = libc::epoll_event { events: 0, u64: 0 };
        Ok(Epoll {
            ep,
            buf: vec![empty; config.initial_events.max(1)],
            edge,
        })
    }

    fn flags(&self, interest: Interest) -> u32 {
        flags(interest, self.edge)
    }
}

/// The `epoll_event.events` bits for `interest` (without `EPOLLEXCLUSIVE`).
pub(super) fn flags(interest: Interest, edge: bool) -> u32 {
    let mut flags = 0u32;
    if interest.is_readable() {
        flags |= (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
    }
    if interest.is_writable() {
        flags |= libc::EPOLLOUT as u32;
    }
    if edge {
        flags |= libc::EPOLLET as u32;
    }
    flags
}

impl Backend for Epoll {
    fn wait_fd(&self) -> Option<BorrowedFd<'_>> {
        Some(self.ep.as_fd())
    }

    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        let mut flags = self.flags(interest);
        if interest.is_exclusive() {
            // The kernel refuses EPOLLEXCLUSIVE with anything but EPOLLIN,
            // EPOLLOUT, EPOLLWAKEUP and EPOLLET (EINVAL); a shared listening
            // socket has no use for EPOLLRDHUP anyway.
            flags &= !(libc::EPOLLRDHUP as u32);
            flags |= libc::EPOLLEXCLUSIVE as u32;
        }
        sys::ctl(
            self.ep.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            fd,
            flags,
            token.0 as u64,
        )
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        if interest.is_exclusive() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the EXCLUSIVE modifier can only be set at register (EPOLLEXCLUSIVE is refused by EPOLL_CTL_MOD)",
            ));
        }
        let flags = self.flags(interest);
        sys::ctl(
            self.ep.as_raw_fd(),
            libc::EPOLL_CTL_MOD,
            fd,
            flags,
            token.0 as u64,
        )
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        sys::ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    #[inline]
    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        stats.wait_syscalls += 1;
        let n = sys::wait(self.ep.as_raw_fd(), &mut self.buf, sys::timeout_ms(timeout))?;
        events.extend(
            self.buf[..n]
                .iter()
                .map(|ev| Event::new(Token(ev.u64 as usize), Ready::from_poll_bits(ev.events))),
        );
        if n == self.buf.len() {
            // Full: there may be more ready; let the next wait take them all.
            let grown = self.buf.len() * 2;
            self.buf
                .resize(grown, libc::epoll_event { events: 0, u64: 0 });
            stats.buffer_grows += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::{Interest, Mechanism, Poller, Token};
    use std::os::fd::AsRawFd;

    #[test]
    fn exclusive_registration_is_accepted() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        for m in [Mechanism::Epoll, Mechanism::EpollEt] {
            let mut p = Poller::new(m).unwrap();
            p.register(l.as_raw_fd(), Token(1), Interest::READABLE.exclusive())
                .unwrap_or_else(|e| panic!("{m}: EPOLLEXCLUSIVE refused: {e}"));
        }
    }
}
