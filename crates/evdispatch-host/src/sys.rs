//! The system calls behind the crate's helpers, through `nix`; the one
//! `libc` call left is `sched_setscheduler`, which `nix` does not wrap.

use std::io;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{getrlimit, setrlimit, Resource as NixResource};
use nix::unistd::{sysconf, Pid, SysconfVar};

fn sysconf_or(var: SysconfVar, default: u64) -> u64 {
    match sysconf(var) {
        Ok(Some(v)) if v > 0 => v as u64,
        _ => default,
    }
}

/// `sysconf(_SC_CLK_TCK)`: the unit of `/proc/PID/stat` CPU times.
pub fn clock_ticks_per_sec() -> u64 {
    sysconf_or(SysconfVar::CLK_TCK, 100)
}

/// The CPU time (user + system, every thread, those that exited included)
/// of process `pid` (0: this one), read from its CPU-time clock
/// (`clock_getcpuclockid` + `clock_gettime`): the scheduler's own count in
/// nanoseconds, where `/proc/PID/stat` rounds to clock ticks (10 ms at the
/// usual 100 Hz, which is 1.7% of a core over a 0.6 s window).
pub fn process_cpu_time(pid: u32) -> io::Result<std::time::Duration> {
    use nix::time::{clock_getcpuclockid, clock_gettime, ClockId};
    let clock = if pid == 0 {
        ClockId::CLOCK_PROCESS_CPUTIME_ID
    } else {
        clock_getcpuclockid(Pid::from_raw(pid as i32)).map_err(io::Error::from)?
    };
    let t = clock_gettime(clock).map_err(io::Error::from)?;
    Ok(std::time::Duration::new(
        t.tv_sec().max(0) as u64,
        t.tv_nsec().clamp(0, 999_999_999) as u32,
    ))
}

pub(crate) fn page_size() -> u64 {
    sysconf_or(SysconfVar::PAGE_SIZE, 4096)
}

/// The CPU set holding `cpus`, for [`set_affinity`] (also in a child between
/// fork and exec, where it must be built beforehand).
pub fn cpu_set(cpus: &[usize]) -> io::Result<CpuSet> {
    let mut set = CpuSet::new();
    for &c in cpus {
        set.set(c).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE ({})", CpuSet::count()),
            )
        })?;
    }
    Ok(set)
}

/// Pin the calling thread to `set` (`sched_setaffinity`). Allocates nothing,
/// so a child may call it between fork and exec.
pub fn set_affinity(set: &CpuSet) -> io::Result<()> {
    sched_setaffinity(Pid::from_raw(0), set).map_err(io::Error::from)
}

/// Have the kernel send `SIGKILL` to the calling process when the thread
/// that forked it exits (`prctl(PR_SET_PDEATHSIG)`). Allocates nothing, so a
/// child may call it between fork and exec.
pub fn die_with_parent() -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL).map_err(io::Error::from)
}

/// Run this process (and the threads and children it creates from now on)
/// at the lowest CPU priority, `SCHED_IDLE`: it then runs only when nothing
/// else on its CPU wants to.
pub fn set_idle_priority() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: pid 0 is this process; `param` is a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pin the calling thread to the given CPUs (`sched_setaffinity`).
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    set_affinity(&cpu_set(cpus)?)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot pin to CPUs {cpus:?}: {e}")))
}

/// The resource limits the commands change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_NOFILE`: open descriptors of this process.
    Nofile,
    /// `RLIMIT_SIGPENDING`: queued signals of this process's *user*.
    Sigpending,
}

impl Resource {
    fn raw(self) -> NixResource {
        match self {
            Resource::Nofile => NixResource::RLIMIT_NOFILE,
            Resource::Sigpending => NixResource::RLIMIT_SIGPENDING,
        }
    }
}

/// The soft and hard limits of `resource`.
pub fn get_rlimit(resource: Resource) -> io::Result<(u64, u64)> {
    getrlimit(resource.raw()).map_err(io::Error::from)
}

/// Set the soft limit of `resource` to `soft` (`None`: raise it to the hard
/// limit). Returns the soft limit now in force. Lowering is always allowed;
/// raising past the hard limit needs privilege and is refused with an error.
pub fn set_rlimit(resource: Resource, soft: Option<u64>) -> io::Result<u64> {
    let (_, max) = get_rlimit(resource)?;
    let want = soft.unwrap_or(max);
    if want > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{resource:?} limit {want} is above the hard limit {max}"),
        ));
    }
    setrlimit(resource.raw(), want, max).map_err(io::Error::from)?;
    Ok(want)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_sets_and_limits_say_what_is_wrong() {
        let set = cpu_set(&[0]).unwrap();
        assert!(set.is_set(0).unwrap() && !set.is_set(1).unwrap());
        let e = cpu_set(&[CpuSet::count()]).unwrap_err();
        assert!(e.to_string().contains("beyond CPU_SETSIZE"), "{e}");
        assert!(clock_ticks_per_sec() > 0 && page_size() >= 4096);
        let (soft, hard) = get_rlimit(Resource::Nofile).unwrap();
        assert!(soft <= hard);
        if hard < u64::MAX {
            let e = set_rlimit(Resource::Nofile, Some(hard + 1)).unwrap_err();
            assert!(e.to_string().contains("above the hard limit"), "{e}");
        }
        // Setting the soft limit to what it is changes nothing.
        assert_eq!(set_rlimit(Resource::Nofile, Some(soft)).unwrap(), soft);
    }

    #[test]
    fn pinning_a_thread_to_a_cpu_it_may_use() {
        std::thread::spawn(|| {
            let allowed = nix::sched::sched_getaffinity(Pid::from_raw(0)).unwrap();
            let cpu = (0..CpuSet::count())
                .find(|&c| allowed.is_set(c).unwrap())
                .unwrap();
            pin_current_thread(&[cpu]).unwrap();
            let now = nix::sched::sched_getaffinity(Pid::from_raw(0)).unwrap();
            let on: Vec<usize> = (0..CpuSet::count())
                .filter(|&c| now.is_set(c).unwrap())
                .collect();
            assert_eq!(on, [cpu]);
        })
        .join()
        .unwrap();
    }
}
