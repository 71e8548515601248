//! `select(2)` and the descriptor bitmap it takes.

use std::io;
use std::time::Duration;

use super::cvt;

/// `FD_SETSIZE`: select's bitmaps hold descriptors `0..FD_SETSIZE`.
pub const FD_SETSIZE: usize = libc::FD_SETSIZE;

const WORDS: usize = FD_SETSIZE / 64;

/// A descriptor bitmap laid out like `libc::fd_set` (1024 bits), with its
/// words visible so that results can be scanned 64 descriptors at a time.
#[repr(C)]
#[derive(Clone)]
pub struct FdSet {
    words: [u64; WORDS],
}

// The cast in `select` below relies on the two types being the same size.
const _: () = assert!(std::mem::size_of::<FdSet>() == std::mem::size_of::<libc::fd_set>());

impl FdSet {
    /// An empty set.
    pub const fn new() -> FdSet {
        FdSet { words: [0; WORDS] }
    }

    /// Empty the words covering descriptors `0..nfds`.
    #[inline]
    pub fn clear(&mut self, nfds: usize) {
        let n = nfds.div_ceil(64).min(WORDS);
        self.words[..n].fill(0);
    }

    /// Add `fd` (which must be below `FD_SETSIZE`).
    #[inline]
    pub fn insert(&mut self, fd: usize) {
        self.words[fd / 64] |= 1 << (fd % 64);
    }

    /// Word `i` (descriptors `64 i .. 64 i + 64`).
    #[inline]
    pub fn word(&self, i: usize) -> u64 {
        self.words[i]
    }
}

impl Default for FdSet {
    fn default() -> FdSet {
        FdSet::new()
    }
}

/// `select(nfds, read, write, NULL, timeout)`, the timeout rounded *up* to
/// the microsecond so a wait is never shorter than asked. Returns the number
/// of bits left set over both sets; `EINTR` is returned as an error.
pub fn select(
    nfds: usize,
    read: &mut FdSet,
    write: &mut FdSet,
    timeout: Option<Duration>,
) -> io::Result<usize> {
    let mut tv = timeout.map(|d| {
        let us = d.as_nanos().div_ceil(1000);
        libc::timeval {
            tv_sec: (us / 1_000_000).min(libc::time_t::MAX as u128) as libc::time_t,
            tv_usec: (us % 1_000_000) as libc::suseconds_t,
        }
    });
    let tvp = tv
        .as_mut()
        .map_or(std::ptr::null_mut(), |t| t as *mut libc::timeval);
    // SAFETY: `FdSet` is a repr(C) array of the same size as `fd_set` (checked
    // above), both sets are valid for writes for the whole call, `nfds` is at
    // most FD_SETSIZE so the kernel touches no bit beyond them, and `tvp` is
    // null or points at a live timeval.
    let n = unsafe {
        libc::select(
            nfds.min(FD_SETSIZE) as libc::c_int,
            (read as *mut FdSet).cast(),
            (write as *mut FdSet).cast(),
            std::ptr::null_mut(),
            tvp,
        )
    };
    cvt(n).map(|n| n as usize)
}
