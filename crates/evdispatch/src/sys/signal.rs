//! The system calls of the RT-signal mechanisms: per-descriptor signal
//! ownership (`fcntl` `F_SETOWN_EX`/`F_SETSIG`/`O_ASYNC`), the thread's signal
//! mask, dequeuing (`sigtimedwait`, `read` of a signalfd), thread-directed
//! queuing (`rt_tgsigqueueinfo`), `sigpending`, and the `poll` used for
//! probes and overflow recovery.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

use libc::{c_int, c_long, pid_t, uid_t};

use super::cvt;

// Linux fcntl commands and owner type the libc crate does not export for
// Linux (values from <asm-generic/fcntl.h>, the same on every architecture).
const F_SETSIG: c_int = 10;
const F_GETSIG: c_int = 11;
const F_SETOWN_EX: c_int = 15;
const F_GETOWN_EX: c_int = 16;
const F_OWNER_TID: c_int = 0;

/// `struct f_owner_ex`.
#[repr(C)]
struct FOwnerEx {
    kind: c_int,
    pid: pid_t,
}

/// A set of signals (`sigset_t`).
#[derive(Clone, Copy)]
pub struct SigSet(libc::sigset_t);

impl SigSet {
    /// The set holding exactly `signals`.
    pub fn of(signals: &[c_int]) -> SigSet {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the whole set it is given.
        unsafe { libc::sigemptyset(set.as_mut_ptr()) };
        // SAFETY: initialised just above.
        let mut set = unsafe { set.assume_init() };
        for &s in signals {
            // SAFETY: `set` is a valid, initialised sigset_t; an invalid
            // number only makes sigaddset fail, which the callers exclude.
            unsafe { libc::sigaddset(&mut set, s) };
        }
        SigSet(set)
    }

    /// True when `signal` is in the set.
    pub fn contains(&self, signal: c_int) -> bool {
        // SAFETY: `self.0` is a valid, initialised sigset_t.
        unsafe { libc::sigismember(&self.0, signal) == 1 }
    }
}

/// Add `set` to the calling thread's blocked signals.
pub fn block(set: &SigSet) -> io::Result<()> {
    // SAFETY: `set` is a valid sigset_t; the old mask is not asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set.0, std::ptr::null_mut()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Remove `set` from the calling thread's blocked signals. Pending signals
/// of the set whose disposition is `SIG_IGN` are discarded by the kernel
/// before this returns (on the way back to user space).
pub fn unblock(set: &SigSet) -> io::Result<()> {
    // SAFETY: `set` is a valid sigset_t; the old mask is not asked for.
    let r = unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set.0, std::ptr::null_mut()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(r))
    }
}

/// Set `signal`'s process-wide disposition to `SIG_IGN`. A blocked signal is
/// still queued (the kernel never ignores a blocked signal), so threads that
/// block it keep dequeuing it; a thread that unblocks it stops receiving it.
/// Pending instances in every thread are discarded.
pub fn ignore(signal: c_int) -> io::Result<()> {
    // SAFETY: sigaction is plain data; zeroed is an empty mask and no flags.
    let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
    act.sa_sigaction = libc::SIG_IGN;
    // SAFETY: `act` is a valid sigaction; the old one is not asked for.
    cvt(unsafe { libc::sigaction(signal, &act, std::ptr::null_mut()) }).map(|_| ())
}

/// True when `signal`'s disposition is `SIG_IGN`.
pub fn is_ignored(signal: c_int) -> io::Result<bool> {
    // SAFETY: as above; sigaction only writes the current action into `old`.
    let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
    // SAFETY: a null new action only reads the current one into `old`.
    cvt(unsafe { libc::sigaction(signal, std::ptr::null(), &mut old) })?;
    Ok(old.sa_sigaction == libc::SIG_IGN)
}

/// The kernel id of the calling thread.
pub fn gettid() -> pid_t {
    // SAFETY: gettid takes nothing and cannot fail.
    unsafe { libc::gettid() }
}

/// The process id.
pub fn getpid() -> pid_t {
    // SAFETY: getpid takes nothing and cannot fail.
    unsafe { libc::getpid() }
}

/// Direct `fd`'s I/O signals to thread `tid` (`F_SETOWN_EX`, `F_OWNER_TID`)
/// as signal `signal` (`F_SETSIG`), so they carry `si_fd` and `si_band`.
pub fn set_owner(fd: RawFd, tid: pid_t, signal: c_int) -> io::Result<()> {
    let owner = FOwnerEx {
        kind: F_OWNER_TID,
        pid: tid,
    };
    // SAFETY: F_SETOWN_EX reads one f_owner_ex, which `owner` is for the whole call.
    cvt(unsafe { libc::fcntl(fd, F_SETOWN_EX, &owner as *const FOwnerEx) })?;
    // SAFETY: F_SETSIG takes an integer argument.
    cvt(unsafe { libc::fcntl(fd, F_SETSIG, signal) })?;
    Ok(())
}

/// True when `fd`'s I/O signals go to thread `tid` as `signal`.
pub fn owned_by(fd: RawFd, tid: pid_t, signal: c_int) -> bool {
    let mut owner = FOwnerEx { kind: -1, pid: 0 };
    // SAFETY: F_GETOWN_EX writes one f_owner_ex into `owner`, valid for the call.
    let r = unsafe { libc::fcntl(fd, F_GETOWN_EX, &mut owner as *mut FOwnerEx) };
    // SAFETY: F_GETSIG takes no argument.
    r == 0
        && owner.kind == F_OWNER_TID
        && owner.pid == tid
        && unsafe { libc::fcntl(fd, F_GETSIG) } == signal
}

/// The file status flags (`F_GETFL`).
pub fn flags(fd: RawFd) -> io::Result<c_int> {
    // SAFETY: F_GETFL takes no argument.
    cvt(unsafe { libc::fcntl(fd, libc::F_GETFL) })
}

/// Set the file status flags (`F_SETFL`).
pub fn set_flags(fd: RawFd, flags: c_int) -> io::Result<()> {
    // SAFETY: F_SETFL takes an integer argument.
    cvt(unsafe { libc::fcntl(fd, libc::F_SETFL, flags) }).map(|_| ())
}

/// The file type bits (`st_mode & S_IFMT`) of an open descriptor.
pub fn file_type(fd: RawFd) -> io::Result<libc::mode_t> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills the stat buffer it is given when it succeeds.
    cvt(unsafe { libc::fstat(fd, st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so `st` is initialised.
    Ok(unsafe { st.assume_init() }.st_mode & libc::S_IFMT)
}

/// What a dequeued signal says, from a `siginfo_t` or a `signalfd_siginfo`.
#[derive(Clone, Copy, Debug)]
pub struct SigInfo {
    /// The signal number.
    pub signo: c_int,
    /// `si_code`: `POLL_IN`…`POLL_HUP` (> 0) for I/O signals, `SI_QUEUE` for sigqueue.
    pub code: c_int,
    /// The sender's process id (`SI_QUEUE`).
    pub pid: pid_t,
    /// `si_fd` for I/O signals, `si_value.sival_int` for `SI_QUEUE`.
    pub fd_or_value: c_int,
    /// `si_band`: the poll bits of an I/O signal.
    pub band: u32,
}

/// The `_sigpoll` view of a `siginfo_t` (repr(C) places `band` after the
/// preamble with the union's alignment, as the kernel does).
#[repr(C)]
struct PollView {
    signo: c_int,
    errno: c_int,
    code: c_int,
    band: c_long,
    fd: c_int,
}

/// The `_rt` view of a `siginfo_t`; the empty array gives the union's alignment.
#[repr(C)]
struct RtView {
    signo: c_int,
    errno: c_int,
    code: c_int,
    _align: [c_long; 0],
    pid: pid_t,
    uid: uid_t,
    value_int: c_int,
}

/// `si_code` of a hang-up (`POLL_HUP` in `asm-generic/siginfo.h`; libc
/// does not export the `POLL_*` codes).
const POLL_HUP: c_int = 6;

impl SigInfo {
    /// The readiness an I/O signal reports, as poll bits. The kernel fills
    /// `si_band` from a fixed table by `si_code`, and a hang-up's entry is
    /// `POLLHUP|POLLERR` though no error is pending (a Unix peer's close, a
    /// TCP FIN after our own shutdown): a hang-up is reported as one. A FIN
    /// alone comes as `POLL_IN`, plain readable, with nothing to tell it
    /// from data: the read's EOF is the only word of it.
    pub fn poll_bits(&self) -> u32 {
        if self.code == POLL_HUP {
            self.band & !(libc::POLLERR as u32)
        } else {
            self.band
        }
    }
}

const _: () = assert!(std::mem::size_of::<PollView>() <= std::mem::size_of::<libc::siginfo_t>());
const _: () = assert!(std::mem::size_of::<RtView>() <= std::mem::size_of::<libc::siginfo_t>());

impl SigInfo {
    fn from_siginfo(si: &libc::siginfo_t) -> SigInfo {
        let p = si as *const libc::siginfo_t;
        // SAFETY: both views are plain-data prefixes of siginfo_t (sizes checked
        // above, alignment no greater than siginfo_t's) laid out as the kernel's
        // `_sigpoll` and `_rt` members; every bit pattern is a valid integer.
        let (poll, rt) = unsafe { (&*(p as *const PollView), &*(p as *const RtView)) };
        if poll.code > 0 {
            SigInfo {
                signo: poll.signo,
                code: poll.code,
                pid: 0,
                fd_or_value: poll.fd,
                band: poll.band as u32,
            }
        } else {
            SigInfo {
                signo: rt.signo,
                code: rt.code,
                pid: rt.pid,
                fd_or_value: rt.value_int,
                band: 0,
            }
        }
    }

    /// From a signalfd record.
    pub fn from_signalfd(s: &libc::signalfd_siginfo) -> SigInfo {
        let code = s.ssi_code;
        SigInfo {
            signo: s.ssi_signo as c_int,
            code,
            pid: s.ssi_pid as pid_t,
            fd_or_value: if code > 0 { s.ssi_fd } else { s.ssi_int },
            band: s.ssi_band,
        }
    }
}

fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: d.as_secs().min(libc::time_t::MAX as u64) as libc::time_t,
        tv_nsec: d.subsec_nanos() as c_long,
    }
}

/// `sigtimedwait(set, timeout)`: one signal of `set`, or `None` when the
/// timeout passed (`None` timeout: wait without limit). `EINTR` is an error.
#[inline]
pub fn sigtimedwait(set: &SigSet, timeout: Option<Duration>) -> io::Result<Option<SigInfo>> {
    let ts = timeout.map(timespec);
    let tsp = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    let mut si = MaybeUninit::<libc::siginfo_t>::zeroed();
    // SAFETY: `set` is a valid sigset_t, `si` a writable siginfo_t, `tsp`
    // null or a timespec that lives until the call returns.
    let r = unsafe { libc::sigtimedwait(&set.0, si.as_mut_ptr(), tsp) };
    if r == -1 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: zero-initialised, then filled by the kernel.
    let si = unsafe { si.assume_init() };
    Ok(Some(SigInfo::from_siginfo(&si)))
}

/// A non-blocking, close-on-exec signalfd for `set`.
pub fn signalfd(set: &SigSet) -> io::Result<OwnedFd> {
    // SAFETY: `set` is a valid sigset_t; -1 asks for a new descriptor.
    let fd = cvt(unsafe { libc::signalfd(-1, &set.0, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) })?;
    // SAFETY: signalfd succeeded, so `fd` is a fresh descriptor we own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// A zeroed buffer of `n` signalfd records.
pub fn signalfd_buffer(n: usize) -> Vec<libc::signalfd_siginfo> {
    // SAFETY: signalfd_siginfo is plain integers, for which all-zero is valid.
    vec![unsafe { std::mem::zeroed() }; n.max(1)]
}

/// One `read` of a signalfd into `buf`: the number of records dequeued
/// (0 when none is pending).
#[inline]
pub fn read_signalfd(fd: RawFd, buf: &mut [libc::signalfd_siginfo]) -> io::Result<usize> {
    let bytes = std::mem::size_of_val(buf);
    // SAFETY: `buf` is writable for `bytes` bytes; the kernel writes whole records.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), bytes) };
    if n == -1 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::EAGAIN) => Ok(0),
            _ => Err(e),
        };
    }
    Ok(n as usize / std::mem::size_of::<libc::signalfd_siginfo>())
}

/// Queue `signal` to thread `tid` of this process with `si_code = SI_QUEUE`
/// and `si_value.sival_int = value` (what `pthread_sigqueue` does, by thread id).
pub fn queue_to_thread(tid: pid_t, signal: c_int, value: c_int) -> io::Result<()> {
    let mut si = MaybeUninit::<libc::siginfo_t>::zeroed();
    let view = si.as_mut_ptr() as *mut RtView;
    let tgid = getpid();
    // SAFETY: RtView is a prefix of the zeroed siginfo_t (size checked above).
    unsafe {
        (*view).signo = signal;
        (*view).code = libc::SI_QUEUE;
        (*view).pid = tgid;
        (*view).uid = libc::getuid();
        (*view).value_int = value;
    }
    // SAFETY: `si` is a valid siginfo_t for the duration of the call.
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_tgsigqueueinfo,
            tgid as c_long,
            tid as c_long,
            signal as c_long,
            si.as_ptr(),
        )
    };
    cvt(r).map(|_| ())
}

/// True when `signal` is pending for the calling thread (or its process).
pub fn is_pending(signal: c_int) -> io::Result<bool> {
    let mut set = SigSet::of(&[]);
    // SAFETY: sigpending writes a sigset_t into `set`.
    cvt(unsafe { libc::sigpending(&mut set.0) })?;
    Ok(set.contains(signal))
}

/// `poll(fds, 0)`: look without waiting; returns how many have `revents`.
pub fn poll_now(fds: &mut [libc::pollfd]) -> io::Result<usize> {
    // SAFETY: `fds` is valid for `fds.len()` entries, which the kernel updates.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 0) };
    cvt(n).map(|n| n as usize)
}

/// `CLOCK_MONOTONIC_COARSE` in nanoseconds: a clock read without touching
/// the TSC (a few ns from the vDSO), ticking at the scheduler tick. Summed
/// differences telescope, so totals are exact to one tick.
#[inline]
pub fn coarse_now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
