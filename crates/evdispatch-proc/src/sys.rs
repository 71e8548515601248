//! The system calls behind the crate's helpers.

use std::io;

/// `sysconf(_SC_CLK_TCK)`: the unit of `/proc/PID/stat` CPU times.
pub fn clock_ticks_per_sec() -> u64 {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// The `cpu_set_t` holding `cpus` (for `sched_setaffinity`, also in a
/// child between fork and exec, where it must be built beforehand).
pub fn cpu_set(cpus: &[usize]) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        // SAFETY: `c` is below CPU_SETSIZE, checked above.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// Pin the calling thread to the given CPUs (`sched_setaffinity`).
pub fn pin_current_thread(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let r = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if r == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(io::Error::new(
            e.kind(),
            format!("cannot pin to CPUs {cpus:?}: {e}"),
        ))
    }
}

/// The resource limits the commands change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_NOFILE`: open descriptors of this process.
    Nofile,
    /// `RLIMIT_SIGPENDING`: queued signals of this process's *user*.
    Sigpending,
}

/// The soft and hard limits of `resource`.
pub fn get_rlimit(resource: Resource) -> io::Result<(u64, u64)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid rlimit for the kernel to fill.
    if unsafe { libc::getrlimit(resource.raw(), &mut lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((lim.rlim_cur, lim.rlim_max))
}

impl Resource {
    fn raw(self) -> libc::__rlimit_resource_t {
        match self {
            Resource::Nofile => libc::RLIMIT_NOFILE,
            Resource::Sigpending => libc::RLIMIT_SIGPENDING,
        }
    }
}

/// Set the soft limit of `resource` to `soft` (`None`: raise it to the hard
/// limit). Returns the soft limit now in force. Lowering is always allowed;
/// raising past the hard limit needs privilege and is refused with an error.
pub fn set_rlimit(resource: Resource, soft: Option<u64>) -> io::Result<u64> {
    let res = resource.raw();
    let (cur, max) = get_rlimit(resource)?;
    let mut lim = libc::rlimit {
        rlim_cur: cur,
        rlim_max: max,
    };
    let want = soft.unwrap_or(lim.rlim_max);
    if want > lim.rlim_max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{resource:?} limit {want} is above the hard limit {}",
                lim.rlim_max
            ),
        ));
    }
    lim.rlim_cur = want;
    // SAFETY: `lim` is a valid rlimit read above, with rlim_cur <= rlim_max.
    if unsafe { libc::setrlimit(res, &lim) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(want)
}
