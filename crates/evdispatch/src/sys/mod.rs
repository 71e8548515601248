//! The thin layer of system calls. Every `unsafe` block of the crate lives
//! under `sys/`, each with the reason it is sound.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};

pub mod epoll;
pub mod poll;
pub mod select;
pub mod uring;

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
pub fn drain(fd: RawFd) {
    let mut buf = [0u8; 64];
    while let Ok(n) = read(fd, &mut buf) {
        if n < buf.len() {
            break;
        }
    }
}

/// True when `fd` is an open descriptor of this process (`fcntl(F_GETFD)`
/// succeeds). Mechanisms that keep the interest set in user space check this
/// at register, where epoll's `epoll_ctl` would say `EBADF`.
pub fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD takes no pointer argument; any fd value is safe to ask about.
    fd >= 0 && unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1
}

/// A duplicate of `fd` numbered at least `min` (`F_DUPFD_CLOEXEC`): tests
/// use it to get high descriptor numbers.
#[cfg(test)]
pub fn dup_at_least(fd: RawFd, min: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: F_DUPFD_CLOEXEC takes an integer argument, no pointer.
    let new = cvt(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, min) })?;
    // SAFETY: the call succeeded, so `new` is a fresh descriptor owned by us alone.
    Ok(unsafe { OwnedFd::from_raw_fd(new) })
}
