//! `select`: the interest set lives in user space and is handed to the kernel
//! as two bitmaps on every wait, which the kernel scans descriptor by
//! descriptor, and the caller scans again for the results. The cost of a wait
//! therefore grows with the highest registered descriptor number, whatever
//! few of them are active: the behaviour the seeds measured.
//!
//! As a select server must (the call overwrites its arguments), the bitmaps
//! are rebuilt from the interest table before every call. Results are scanned
//! a 64-bit word at a time and only up to the highest registered descriptor,
//! and the scan stops once every ready bit the kernel counted has been seen.
//! `select` cannot watch descriptors at or above `FD_SETSIZE` (1024): they are
//! refused at register.

use std::io;
use std::os::fd::RawFd;
use std::time::Duration;

use super::backend::Backend;
use super::fdtable::FdTable;
use crate::config::Config;
use crate::event::{Event, Events, Interest, Ready, Token};
use crate::stats::Stats;
use crate::sys;
use crate::sys::select::{FdSet, FD_SETSIZE};

const NAME: &str = "select";

#[derive(Debug, Clone, Copy)]
struct Reg {
    token: Token,
    interest: Interest,
}

pub(crate) struct Select {
    table: FdTable<Reg>,
    read: FdSet,
    write: FdSet,
}

pub(crate) fn open(_config: &Config) -> io::Result<Box<dyn Backend>> {
    Ok(Box::new(Select {
        table: FdTable::new(),
        read: FdSet::new(),
        write: FdSet::new(),
    }))
}

/// The error for a descriptor select cannot hold.
fn beyond_fd_setsize(fd: RawFd) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "select supports fds below {FD_SETSIZE} (FD_SETSIZE); fd {fd} given — use poll or epoll"
        ),
    )
}

impl Select {
    /// The EBADF of a select call means a registered descriptor was closed:
    /// name it, since the kernel does not.
    fn explain_ebadf(&self) -> io::Error {
        let closed: Vec<String> = self
            .table
            .iter()
            .filter(|(fd, _)| !sys::fd_is_open(*fd as RawFd))
            .map(|(fd, _)| fd.to_string())
            .collect();
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "select failed with EBADF: registered fd(s) {} closed while still registered; \
                 deregister a descriptor before closing it",
                if closed.is_empty() {
                    "?".to_string()
                } else {
                    closed.join(", ")
                }
            ),
        )
    }
}

impl Backend for Select {
    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        if fd >= 0 && fd as usize >= FD_SETSIZE {
            return Err(beyond_fd_setsize(fd));
        }
        let interest = interest.without_exclusive();
        self.table.insert(NAME, fd, Reg { token, interest })?;
        Ok(())
    }

    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        *self.table.get_mut(NAME, fd)? = Reg {
            token,
            interest: interest.without_exclusive(),
        };
        Ok(())
    }

    fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        self.table.remove(NAME, fd)?;
        self.table.trim();
        Ok(())
    }

    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()> {
        // Rebuild both bitmaps from the interest table.
        let nfds = self.table.bound();
        self.read.clear(nfds);
        self.write.clear(nfds);
        for (fd, reg) in self.table.iter() {
            if reg.interest.is_readable() {
                self.read.insert(fd);
            }
            if reg.interest.is_writable() {
                self.write.insert(fd);
            }
        }
        stats.wait_syscalls += 1;
        let mut left = match sys::select::select(nfds, &mut self.read, &mut self.write, timeout) {
            Ok(n) => n,
            Err(e) if e.raw_os_error() == Some(libc::EBADF) => return Err(self.explain_ebadf()),
            Err(e) => return Err(e),
        };
        // Scan the results a word at a time, up to nfds, until all are found.
        let mut word = 0;
        while left > 0 && word * 64 < nfds {
            let (r, w) = (self.read.word(word), self.write.word(word));
            let mut bits = r | w;
            while bits != 0 {
                let bit = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let fd = word * 64 + bit;
                let mut ready = Ready::EMPTY;
                if r >> bit & 1 != 0 {
                    ready = ready | Ready::READABLE;
                    left -= 1;
                }
                if w >> bit & 1 != 0 {
                    ready = ready | Ready::WRITABLE;
                    left = left.saturating_sub(1);
                }
                if let Some(reg) = self.table.get(fd) {
                    events.push(Event::new(reg.token, ready));
                }
            }
            word += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Mechanism, Poller};
    use std::os::fd::AsRawFd;

    #[test]
    fn refuses_fd_setsize_and_above_with_a_clear_message() {
        let mut p = Poller::new(Mechanism::Select).unwrap();
        let (r, _w) = sys::pipe().unwrap();
        let high = sys::dup_at_least(r.as_raw_fd(), 1500).unwrap();
        let err = p
            .register(high.as_raw_fd(), Token(1), Interest::READABLE)
            .unwrap_err();
        let msg = err.to_string();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(
            msg.contains("1024")
                && msg.contains("FD_SETSIZE")
                && msg.contains(&high.as_raw_fd().to_string()),
            "{msg}"
        );
        assert!(msg.contains("poll or epoll"), "says what to do: {msg}");
        // A low descriptor still works.
        p.register(r.as_raw_fd(), Token(2), Interest::READABLE)
            .unwrap();
    }

    #[test]
    fn closed_while_registered_is_named() {
        let mut p = Poller::new(Mechanism::Select).unwrap();
        let (r0, w) = sys::pipe().unwrap();
        // A number no other test thread will be handed while it is closed
        // (descriptors are allocated lowest first).
        let r = sys::dup_at_least(r0.as_raw_fd(), 1000).unwrap();
        let fd = r.as_raw_fd();
        p.register(fd, Token(1), Interest::READABLE).unwrap();
        p.register(w.as_raw_fd(), Token(2), Interest::WRITABLE)
            .unwrap();
        drop(r);
        let mut ev = Events::with_capacity(4);
        let err = p
            .wait(&mut ev, Some(Duration::from_millis(1)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(&fd.to_string()) && err.contains("deregister"),
            "{err}"
        );
    }

    #[test]
    fn both_directions_in_one_event() {
        let mut p = Poller::new(Mechanism::Select).unwrap();
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        p.register(a.as_raw_fd(), Token(9), Interest::BOTH).unwrap();
        sys::write(b.as_raw_fd(), b"x").unwrap();
        let mut ev = Events::with_capacity(4);
        p.wait(&mut ev, Some(Duration::from_secs(5))).unwrap();
        assert_eq!(ev.len(), 1, "{:?}", ev.as_slice());
        let e = ev.as_slice()[0];
        assert!(
            e.token() == Token(9) && e.is_readable() && e.is_writable(),
            "{e:?}"
        );
    }
}
