//! The few system calls the generator needs that its crates do not offer.
//! The only `unsafe` of the crate lives here.

use std::io;
use std::os::fd::RawFd;

/// `setsockopt(IP_BIND_ADDRESS_NO_PORT, 1)`: a later `bind(addr, 0)` does not
/// reserve a port; `connect` picks one unique for the 4-tuple, so a source
/// address serves as many connections per destination as there are ports.
pub fn bind_address_no_port(fd: RawFd) -> io::Result<()> {
    let one: libc::c_int = 1;
    // SAFETY: `one` is a valid c_int for the duration of the call and its size is passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Make `fd` non-blocking (`O_NONBLOCK`).
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL takes no pointer; an invalid fd yields EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL with an integer flag set; no pointers.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `read(2)` on a raw descriptor (the worker's standard input).
pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the pointer and length describe `buf`, writable for its whole length.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// A non-blocking `timerfd` on `CLOCK_MONOTONIC` (the clock of `Instant`):
/// readable when it expires, with nanosecond resolution where a poller's
/// timeout has only milliseconds.
pub fn timerfd() -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: no pointers; the flags are valid.
    let fd = unsafe {
        libc::timerfd_create(
            libc::CLOCK_MONOTONIC,
            libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: timerfd_create succeeded, so `fd` is a fresh descriptor we own.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Arm `fd` (a timerfd) to expire once, `after` from now (at least 1 ns).
pub fn timerfd_arm(fd: RawFd, after: std::time::Duration) -> io::Result<()> {
    let after = after.max(std::time::Duration::from_nanos(1));
    let spec = libc::itimerspec {
        it_interval: libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        },
        it_value: libc::timespec {
            tv_sec: after.as_secs() as libc::time_t,
            tv_nsec: after.subsec_nanos() as libc::c_long,
        },
    };
    // SAFETY: `spec` is a valid itimerspec; the old value is not asked for (null).
    let r = unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Set the calling thread's timer slack to 1 ns (`PR_SET_TIMERSLACK`; the
/// default lets the kernel fire timers up to 50 µs late to batch wake-ups).
pub fn tight_timer_slack() -> io::Result<()> {
    // SAFETY: prctl with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Send `SIGINT` to process `pid` (a worker, so that it stops with its
/// results when the parent was interrupted).
pub fn interrupt(pid: u32) -> io::Result<()> {
    // SAFETY: kill takes no pointers; a gone process yields ESRCH.
    if unsafe { libc::kill(pid as libc::pid_t, libc::SIGINT) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
