//! `epoll(7)` system calls.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use super::cvt;

pub use libc::epoll_event as EpollEvent;

/// `epoll_create1(EPOLL_CLOEXEC)`.
pub fn create() -> io::Result<OwnedFd> {
    // SAFETY: no pointers; the flag is valid.
    let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
    // SAFETY: the call succeeded, so `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `epoll_ctl(epfd, op, fd, {events, data})`.
pub fn ctl(epfd: RawFd, op: libc::c_int, fd: RawFd, events: u32, data: u64) -> io::Result<()> {
    let mut ev = libc::epoll_event { events, u64: data };
    // SAFETY: `ev` is a valid epoll_event for the duration of the call (the
    // kernel ignores it for EPOLL_CTL_DEL but older kernels want non-null).
    cvt(unsafe { libc::epoll_ctl(epfd, op, fd, &mut ev) }).map(|_| ())
}

/// Milliseconds for `epoll_wait`/`poll`, rounded *up* so a wait is never
/// shorter than asked; `-1` for no timeout.
pub fn timeout_ms(timeout: Option<Duration>) -> libc::c_int {
    match timeout {
        None => -1,
        Some(d) => {
            let ms = d.as_nanos().div_ceil(1_000_000);
            ms.min(libc::c_int::MAX as u128) as libc::c_int
        }
    }
}

/// `epoll_wait` into the whole of `buf`; returns how many entries were filled.
/// `EINTR` is returned as an error for the caller to decide.
#[inline]
pub fn wait(epfd: RawFd, buf: &mut [EpollEvent], timeout_ms: libc::c_int) -> io::Result<usize> {
    let max = buf.len().min(libc::c_int::MAX as usize) as libc::c_int;
    // The system call directly, as mio and rustix do: glibc's wrapper adds a
    // thread-cancellation point (enable, call, disable) that nothing here uses
    // and that costs about a fifth of the dispatch path. `epoll_pwait` with no
    // signal mask is `epoll_wait` on every architecture (some lack the latter).
    // SAFETY: `buf` is valid for `max` entries, which the kernel writes at
    // most; a null mask pointer means "leave the signal mask alone".
    let n = unsafe {
        libc::syscall(
            libc::SYS_epoll_pwait,
            epfd,
            buf.as_mut_ptr(),
            max,
            timeout_ms,
            std::ptr::null::<libc::sigset_t>(),
            8usize,
        )
    };
    cvt(n).map(|n| n as usize)
}
