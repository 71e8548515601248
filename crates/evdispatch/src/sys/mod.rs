//! The thin layer of system calls. Every `unsafe` block of the crate lives
//! under `sys/`, each with the reason it is sound.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub mod epoll;
pub mod signal;

/// Turn a `-1`-means-error return into an `io::Result`.
#[inline]
pub fn cvt<T: PartialEq + From<i8>>(ret: T) -> io::Result<T> {
    if ret == T::from(-1) {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `pipe2(O_NONBLOCK | O_CLOEXEC)`: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for the kernel to fill.
    cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by us alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `read(2)` into `buf`.
#[inline]
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, writable for its whole length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    cvt(n).map(|n| n as usize)
}

/// `write(2)` from `buf`.
#[inline]
pub fn write(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, readable for its whole length.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    cvt(n).map(|n| n as usize)
}

/// Read until `EAGAIN` (or EOF), discarding the bytes: empties a waker pipe.
/// Returns how many bytes it read.
pub fn drain(fd: RawFd) -> usize {
    let mut buf = [0u8; 64];
    let mut total = 0;
    while let Ok(n) = read(fd, &mut buf) {
        total += n;
        if n < buf.len() {
            break;
        }
    }
    total
}
