//! The system calls of the harness: the child set-up between fork and exec,
//! signals to process groups, and the CPU time of reaped children. The only
//! `unsafe` of the crate lives here; the calls themselves go through `nix`,
//! `rustix` and `evdispatch-host`.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{killpg, Signal};
use nix::sys::time::TimeVal;
use nix::unistd::Pid;

/// Prepare `cmd` so that its child dies with the thread that started it
/// (`PR_SET_PDEATHSIG`) and runs on `cpus` (empty: anywhere). The child is
/// also made leader of its own process group (`process_group(0)`), so the
/// whole group can be signalled.
pub fn prepare(cmd: &mut Command, cpus: &[usize]) -> io::Result<()> {
    cmd.process_group(0);
    let set = evdispatch_host::cpu_set(cpus)?;
    let pin = !cpus.is_empty();
    // SAFETY: the closure runs in the child between fork and exec; it only
    // makes async-signal-safe system calls (prctl, sched_setaffinity) on
    // data prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            evdispatch_host::die_with_parent()?;
            if pin {
                evdispatch_host::set_affinity(&set)?;
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
        cmd.pre_exec(evdispatch_host::set_idle_priority);
    }
}

/// Make the child of `cmd` write `0` (itself) to the cgroup file `procs`
/// between fork and exec, joining that group before the program starts.
pub fn join_cgroup_in_child(cmd: &mut Command, procs: &std::path::Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(procs.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    // SAFETY: the closure runs in the child between fork and exec; it makes
    // only async-signal-safe system calls (open, write, close) on a path
    // prepared before the fork, and allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let n = libc::write(fd, b"0".as_ptr().cast(), 1);
            let err = io::Error::last_os_error();
            libc::close(fd);
            if n != 1 {
                return Err(err);
            }
            Ok(())
        });
    }
    Ok(())
}

/// Whether this process runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Send `signal` to every process of group `pgid` (0: no signal, only the
/// check that the group still has a member).
pub fn kill_group(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    let signal = match signal {
        0 => None,
        s => Some(Signal::try_from(s).map_err(io::Error::from)?),
    };
    killpg(Pid::from_raw(pgid as libc::pid_t), signal).map_err(io::Error::from)
}

/// CPU seconds (user + system) of all reaped children of this process.
pub fn children_cpu_s() -> f64 {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return 0.0;
    };
    let tv = |t: TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    tv(usage.user_time()) + tv(usage.system_time())
}

/// Try once to take an exclusive `flock` on `fd` without blocking (through
/// rustix: nix's `flock` is deprecated for an owning wrapper, and `fd` may be
/// one this process inherited and must not close).
pub fn try_flock(fd: std::os::fd::RawFd) -> io::Result<bool> {
    use rustix::fs::{flock, FlockOperation};
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: `fd` is not -1 (`borrow_raw`'s one requirement on the number)
    // and is borrowed for this one call, which closes nothing; a number that
    // is not open makes flock fail with EBADF.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    match flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_zero_tells_whether_a_group_has_members() {
        let mut cmd = Command::new("sleep");
        cmd.arg("5");
        prepare(&mut cmd, &[]).unwrap();
        let mut child = cmd.spawn().unwrap();
        let pgid = child.id();
        kill_group(pgid, 0).unwrap();
        kill_group(pgid, libc::SIGKILL).unwrap();
        child.wait().unwrap();
        let e = kill_group(pgid, 0).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ESRCH), "{e}");
    }
}
