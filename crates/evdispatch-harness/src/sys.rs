//! The system calls of the harness: the child set-up between fork and exec,
//! signals to process groups, and the CPU time of reaped children. The only
//! `unsafe` of the crate lives here.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Prepare `cmd` so that its child dies with the thread that started it
/// (`PR_SET_PDEATHSIG`) and runs on `cpus` (empty: anywhere). The child is
/// also made leader of its own process group (`process_group(0)`), so the
/// whole group can be signalled.
pub fn prepare(cmd: &mut Command, cpus: &[usize]) -> io::Result<()> {
    cmd.process_group(0);
    let set = evdispatch_proc::cpu_set(cpus)?;
    let pin = !cpus.is_empty();
    // SAFETY: the closure runs in the child between fork and exec; it only
    // makes async-signal-safe system calls (prctl, sched_setaffinity) on
    // data prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if pin && libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0
            {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Run the command at `SCHED_IDLE` (kept across `exec`, inherited by its
/// threads).
pub fn idle_priority(cmd: &mut Command) {
    // SAFETY: the hook runs in the child between fork and exec; it makes one
    // async-signal-safe system call on a value on its stack and allocates
    // nothing.
    unsafe {
        cmd.pre_exec(evdispatch_proc::set_idle_priority);
    }
}

/// Send `signal` to every process of group `pgid`.
pub fn kill_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    // SAFETY: kill takes no pointers; a negative pid names a process group.
    if unsafe { libc::kill(-(pgid as libc::pid_t), signal) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// CPU seconds (user + system) of all reaped children of this process.
pub fn children_cpu_s() -> f64 {
    // SAFETY: rusage is plain data; zeroed is a valid value for the kernel to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to fill.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0.0;
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Try once to take an exclusive `flock` on `fd` without blocking.
pub fn try_flock(fd: std::os::fd::RawFd) -> io::Result<bool> {
    // SAFETY: flock takes no pointers; an invalid fd yields EBADF.
    if unsafe { libc::flock(fd, libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}
