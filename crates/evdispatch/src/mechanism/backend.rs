//! The [`Backend`] trait every mechanism file implements.

use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::time::Duration;

use crate::event::{Events, Interest, Token};
use crate::stats::Stats;

/// What each mechanism file implements. The [`Poller`](crate::Poller) does the
/// bookkeeping common to all (statistics, the waker, timeouts that are never
/// early, retries after `EINTR`), so a backend only translates.
pub(crate) trait Backend: Send {
    /// Start watching `fd`. Errors: `EEXIST` if already registered, `EBADF`
    /// if not open, `EINVAL`/`EPERM` if the mechanism cannot watch it.
    fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()>;
    /// Change the token or interest of a registered `fd` (`ENOENT` if not registered).
    fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()>;
    /// Stop watching `fd` (`ENOENT` if not registered). After this returns, no
    /// event for the old registration may be reported, even if `fd`'s number
    /// is reused by a new descriptor.
    fn deregister(&mut self, fd: RawFd) -> io::Result<()>;
    /// Wait at most `timeout` (`None`: without limit) and push what is ready
    /// into `events` (which the poller has cleared). May return early with no
    /// event; the poller then waits again for the rest of the time. An `EINTR`
    /// may be returned as `ErrorKind::Interrupted`.
    fn wait(
        &mut self,
        events: &mut Events,
        timeout: Option<Duration>,
        stats: &mut Stats,
    ) -> io::Result<()>;
    /// The one descriptor that becomes readable when a wait would find an
    /// event, if the mechanism has one (see [`Poller::as_fd_opt`](crate::Poller::as_fd_opt)).
    fn wait_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
}
