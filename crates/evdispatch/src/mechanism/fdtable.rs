//! The interest table of the mechanisms that keep it in user space (`select`,
//! `poll`, `uring`): one slot per descriptor number, with the checks
//! `epoll_ctl` would make in the kernel (`EBADF`, `EEXIST`, `ENOENT`).
//!
//! Descriptor numbers are small and dense (the kernel hands out the lowest
//! free one), so a `Vec` indexed by number is both the smallest and the
//! fastest map: a lookup is one bounds check and one load.

use std::io;
use std::os::fd::RawFd;

use crate::sys;

/// Per-descriptor slots holding a mechanism's `T`.
#[derive(Debug)]
pub(crate) struct FdTable<T> {
    slots: Vec<Option<T>>,
}

impl<T> FdTable<T> {
    pub(crate) fn new() -> FdTable<T> {
        FdTable { slots: Vec::new() }
    }

    /// Register `fd` with `value`: `EBADF` if it is negative or not open,
    /// `EEXIST` if it is registered already.
    pub(crate) fn insert(&mut self, name: &str, fd: RawFd, value: T) -> io::Result<&mut T> {
        if !sys::fd_is_open(fd) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name}: fd {fd} is not an open descriptor (EBADF); register open descriptors only"),
            ));
        }
        let i = fd as usize;
        if i >= self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let slot = &mut self.slots[i];
        if slot.is_some() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("{name}: fd {fd} is already registered (EEXIST); use modify to change it"),
            ));
        }
        Ok(slot.insert(value))
    }

    /// The slot of a registered `fd` (`ENOENT` otherwise).
    #[inline]
    pub(crate) fn get_mut(&mut self, name: &str, fd: RawFd) -> io::Result<&mut T> {
        match usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) {
            Some(Some(v)) => Ok(v),
            _ => Err(not_registered(name, fd)),
        }
    }

    /// The slot of `fd` if registered, without error construction (hot paths).
    #[inline]
    pub(crate) fn get(&self, fd: usize) -> Option<&T> {
        self.slots.get(fd).and_then(Option::as_ref)
    }

    /// The slot of `fd` if registered, mutable (hot paths).
    #[inline]
    pub(crate) fn slot_mut(&mut self, fd: usize) -> Option<&mut T> {
        self.slots.get_mut(fd).and_then(Option::as_mut)
    }

    /// Forget a registered `fd` and return its value (`ENOENT` otherwise).
    pub(crate) fn remove(&mut self, name: &str, fd: RawFd) -> io::Result<T> {
        match usize::try_from(fd).ok().and_then(|i| self.slots.get_mut(i)) {
            Some(slot @ Some(_)) => Ok(slot.take().expect("checked to be Some")),
            _ => Err(not_registered(name, fd)),
        }
    }

    /// One past the highest slot that may be registered (a bound, not exact:
    /// trailing slots are trimmed lazily by [`FdTable::trim`]).
    pub(crate) fn bound(&self) -> usize {
        self.slots.len()
    }

    /// Drop trailing empty slots so that [`FdTable::bound`] is one past the
    /// highest registered descriptor.
    pub(crate) fn trim(&mut self) {
        while matches!(self.slots.last(), Some(None)) {
            self.slots.pop();
        }
    }

    /// The registered descriptors below [`FdTable::bound`], in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(fd, s)| s.as_ref().map(|v| (fd, v)))
    }
}

fn not_registered(name: &str, fd: RawFd) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{name}: fd {fd} is not registered (ENOENT); register it first"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn checks_like_epoll_ctl() {
        let (r, _w) = sys::pipe().unwrap();
        let fd = r.as_raw_fd();
        let mut t = FdTable::new();
        assert_eq!(
            t.get_mut("t", fd).unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        *t.insert("t", fd, 5u8).unwrap() += 1;
        let dup = t.insert("t", fd, 0).unwrap_err();
        assert_eq!(dup.kind(), io::ErrorKind::AlreadyExists);
        assert!(dup.to_string().contains("EEXIST"), "{dup}");
        assert!(t
            .insert("t", -1, 0)
            .unwrap_err()
            .to_string()
            .contains("EBADF"));
        assert_eq!(t.get(fd as usize), Some(&6));
        assert_eq!(t.remove("t", fd).unwrap(), 6);
        assert!(t
            .remove("t", fd)
            .unwrap_err()
            .to_string()
            .contains("ENOENT"));
        t.trim();
        assert_eq!(t.bound(), 0);
    }
}
