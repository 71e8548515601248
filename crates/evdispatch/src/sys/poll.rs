//! `poll(2)`.

use std::io;

use super::cvt;

pub use libc::pollfd as PollFd;

/// `poll` on the whole of `fds` with a timeout in milliseconds (`-1`: none;
/// see [`super::epoll::timeout_ms`], which rounds up). Returns how many
/// entries have a non-zero `revents`; `EINTR` is returned as an error.
#[inline]
pub fn poll(fds: &mut [PollFd], timeout_ms: libc::c_int) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `fds`, valid for reads and
    // writes of every entry for the duration of the call.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    cvt(n).map(|n| n as usize)
}
