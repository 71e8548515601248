//! The machine a benchmark runs on: what it is ([`Machine`]), and the CPU
//! the measuring thread is pinned to.

/// Restores the thread's CPU affinity when dropped (so a program that runs
/// a benchmark through this library is not left pinned).
pub(crate) struct Pinned(Option<evdispatch_host::CpuSet>);

impl Drop for Pinned {
    fn drop(&mut self) {
        if let Some(set) = self.0.take() {
            let _ = evdispatch_host::set_affinity(&set);
        }
    }
}

/// Pin the calling thread to `cpu` until the guard is dropped.
pub(crate) fn pin_scoped(cpu: usize) -> anyhow::Result<Pinned> {
    let before = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    pin_to(cpu)?;
    Ok(Pinned(before))
}

/// Pin the calling thread (and so a single-threaded process) to `cpu`.
pub(crate) fn pin_to(cpu: usize) -> anyhow::Result<()> {
    evdispatch_host::pin_current_thread(&[cpu]).map_err(|e| {
        anyhow::anyhow!(
            "{e}; this machine has {} cpus (numbered from 0)",
            std::thread::available_parallelism().map_or(1, |n| n.get())
        )
    })
}

/// The highest-numbered CPU this process may run on (the default pinning:
/// CPU 0 tends to take more of the machine's housekeeping).
pub(crate) fn last_allowed_cpu() -> Option<usize> {
    use nix::sched::{sched_getaffinity, CpuSet};
    use nix::unistd::Pid;
    let set = sched_getaffinity(Pid::from_raw(0)).ok()?;
    (0..CpuSet::count())
        .rev()
        .find(|&c| set.is_set(c).unwrap_or(false))
}

/// One line about the machine: kernel, CPU model, cores.
pub(crate) fn machine() -> Machine {
    let kernel = nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into());
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    // Online CPUs of the machine, not of this thread's affinity (which
    // --cpu narrows).
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count()
        .max(1);
    Machine {
        kernel,
        cpu_model,
        cores,
    }
}

/// Where a measurement ran.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    /// `uname -r`.
    pub kernel: String,
    /// From /proc/cpuinfo.
    pub cpu_model: String,
    /// Usable cores.
    pub cores: usize,
}
