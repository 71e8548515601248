//! Counters every poller keeps, read with [`Poller::stats`](crate::Poller::stats).

/// What a poller has done since it was created.
///
/// Every mechanism fills the common counters; the mechanism-specific ones stay
/// zero where they do not apply (a select poller never overflows a signal
/// queue). With the `serde` feature (on by default) they serialize under these
/// names (the evdispatch server writes them into its `--stats-json` file), so
/// the names are part of the interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Stats {
    /// Calls to [`Poller::wait`](crate::Poller::wait).
    pub waits: u64,
    /// Waiting system calls made (`select`, `poll`, `epoll_wait`,
    /// `io_uring_enter`, `sigtimedwait`, `read` of a signalfd…); a wait may
    /// make several (retries after `EINTR`, a too-early wake-up, recovery),
    /// and an io_uring wait none, when completions are already waiting in the
    /// shared ring and nothing is queued for submission.
    pub wait_syscalls: u64,
    /// Events returned to the caller, over all waits.
    pub events: u64,
    /// Waits that returned no event (a timeout; a wake is an event).
    pub empty_waits: u64,
    /// Successful `register` calls.
    pub registrations: u64,
    /// Successful `modify` calls.
    pub modifications: u64,
    /// Successful `deregister` calls.
    pub deregistrations: u64,
    /// Waker wake-ups observed by waits.
    pub wakeups: u64,
    /// Times the mechanism's result buffer was full and grew (epoll).
    pub buffer_grows: u64,

    /// io_uring: submission queue entries submitted.
    pub sqes_submitted: u64,
    /// io_uring: multishot polls re-armed because a completion lacked
    /// `IORING_CQE_F_MORE`. `rtsig-perfd`: descriptors whose `O_ASYNC` a
    /// wait set again after the dequeue of their signal (or a recovery)
    /// had cleared it (each also cost the `fcntl` that cleared it).
    pub rearms: u64,
    /// io_uring / RT signals: completions or signals dropped because they
    /// belonged to a registration that no longer exists.
    pub stale_dropped: u64,

    /// RT signals: signals dequeued (the seeds' "sigwaitinfo" count).
    pub signals_dequeued: u64,
    /// RT signals: dequeuing system calls (one per signal for `rtsig`, one per
    /// batch for `rtsig-batch`).
    pub dequeue_calls: u64,
    /// RT signals: SIGIO received because the signal queue overflowed.
    pub overflows: u64,
    /// RT signals: recoveries by polling the interest set after an overflow.
    pub recoveries: u64,
    /// RT signals: events merged into an earlier event for the same fd in one wait.
    pub coalesced: u64,
    /// Hybrid: switches between signal mode and epoll mode.
    pub mode_switches: u64,
    /// Hybrid: nanoseconds spent in signal mode.
    pub signal_mode_ns: u64,
    /// Hybrid: nanoseconds spent in epoll mode.
    pub poll_mode_ns: u64,
}
