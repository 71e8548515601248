//! The host's CPUs: time by kind per CPU from `/proc/stat` (steal included),
//! CPU lists, how many this process may use, and the idle states.
//!
//! `/proc/stat` is read here: `procfs`'s `KernelStats` lists the `cpuN`
//! lines in order without their numbers, so an offline CPU would shift every
//! CPU after it, where [`cpu_times`] is indexed by CPU number.

use std::fs;
use std::io;

/// A request that every CPU stay in its shallowest idle state (Linux PM
/// QoS: a latency limit of 0 µs written to `/dev/cpu_dma_latency`), held
/// while this value lives; the kernel drops it when the descriptor closes.
/// An idle CPU then polls instead of halting, so waking it costs the same
/// every time. On a virtual machine a halted vCPU leaves for the
/// hypervisor, and how soon it is back varies from run to run. Idle time
/// stays idle in `/proc/stat`, and no process is charged for it.
/// `cyclictest` takes the same control by default.
#[derive(Debug)]
pub struct ShallowIdle {
    _request: fs::File,
}

impl ShallowIdle {
    /// Make the request (needs write access to the device: root).
    pub fn hold() -> io::Result<ShallowIdle> {
        use std::io::Write;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")?;
        f.write_all(&0i32.to_ne_bytes())?;
        Ok(ShallowIdle { _request: f })
    }
}

/// The CPU idle driver and governor (`cpuidle` in sysfs), `None` where the
/// kernel has none.
pub fn cpuidle() -> Option<(String, String)> {
    let read = |f: &str| {
        fs::read_to_string(format!("/sys/devices/system/cpu/cpuidle/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
    };
    Some((read("current_driver")?, read("current_governor")?))
}
/// Time of one CPU by kind, in clock ticks, as `/proc/stat` counts it since
/// boot. `steal` is time the hypervisor gave this virtual CPU's host thread
/// to something else while the guest wanted to run: on a shared machine the
/// one disturbance a guest can see directly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// User mode.
    pub user: u64,
    /// User mode at a positive nice value.
    pub nice: u64,
    /// Kernel mode (outside interrupts).
    pub system: u64,
    /// Idle.
    pub idle: u64,
    /// Idle with I/O outstanding.
    pub iowait: u64,
    /// Hard interrupts.
    pub irq: u64,
    /// Soft interrupts (most of the network stack).
    pub softirq: u64,
    /// Taken by the hypervisor.
    pub steal: u64,
}

impl CpuTimes {
    /// Every kind summed.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    /// What accrued between `earlier` and `self`.
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        CpuTimes {
            user: d(self.user, earlier.user),
            nice: d(self.nice, earlier.nice),
            system: d(self.system, earlier.system),
            idle: d(self.idle, earlier.idle),
            iowait: d(self.iowait, earlier.iowait),
            irq: d(self.irq, earlier.irq),
            softirq: d(self.softirq, earlier.softirq),
            steal: d(self.steal, earlier.steal),
        }
    }

    /// `part` as a percentage of [`total`](Self::total) (0 when nothing accrued).
    pub fn pct(&self, part: u64) -> f64 {
        match self.total() {
            0 => 0.0,
            t => 100.0 * part as f64 / t as f64,
        }
    }
}

/// Every CPU's [`CpuTimes`] now, indexed by CPU number (an offline CPU's
/// entry is all zero); empty if `/proc/stat` cannot be read.
pub fn cpu_times() -> Vec<CpuTimes> {
    parse_cpu_times(&fs::read_to_string("/proc/stat").unwrap_or_default())
}

/// [`cpu_times`] from the text of `/proc/stat`.
pub fn parse_cpu_times(text: &str) -> Vec<CpuTimes> {
    let mut out: Vec<CpuTimes> = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        let Some(n) = f
            .next()
            .and_then(|name| name.strip_prefix("cpu"))
            .and_then(|n| n.parse::<usize>().ok())
        else {
            continue;
        };
        let v: Vec<u64> = f.map(|x| x.parse().unwrap_or(0)).collect();
        let g = |i: usize| v.get(i).copied().unwrap_or(0);
        if out.len() <= n {
            out.resize(n + 1, CpuTimes::default());
        }
        out[n] = CpuTimes {
            user: g(0),
            nice: g(1),
            system: g(2),
            idle: g(3),
            iowait: g(4),
            irq: g(5),
            softirq: g(6),
            steal: g(7),
        };
    }
    out
}

/// The largest share of any one CPU's time the hypervisor took between two
/// [`cpu_times`] readings, %.
pub fn steal_pct_max(before: &[CpuTimes], after: &[CpuTimes]) -> f64 {
    before
        .iter()
        .zip(after)
        .map(|(a, b)| {
            let d = b.since(a);
            d.pct(d.steal)
        })
        .fold(0.0, f64::max)
}

/// Parse a CPU list such as `0`, `0,1` or `0-3,6`.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let bad = || format!("bad CPU list '{text}': '{part}' is not N or N-M");
        match part.split_once('-') {
            Some((a, b)) => {
                let a: usize = a.trim().parse().map_err(|_| bad())?;
                let b: usize = b.trim().parse().map_err(|_| bad())?;
                if a > b {
                    return Err(bad());
                }
                cpus.extend(a..=b);
            }
            None => cpus.push(part.parse().map_err(|_| bad())?),
        }
    }
    if cpus.is_empty() {
        return Err(format!("empty CPU list '{text}'"));
    }
    Ok(cpus)
}

/// Number of CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shallow_idle_is_the_kernel_s_limit_while_held() {
        use std::io::Read;
        let hold = match ShallowIdle::hold() {
            Ok(h) => h,
            Err(e) => {
                eprintln!("skipped: /dev/cpu_dma_latency: {e} (root needed)");
                return;
            }
        };
        // Reading the device gives the limit in force, in µs.
        let mut v = [0u8; 4];
        fs::File::open("/dev/cpu_dma_latency")
            .unwrap()
            .read_exact(&mut v)
            .unwrap();
        assert_eq!(i32::from_ne_bytes(v), 0);
        drop(hold);
    }

    #[test]
    fn cpu_times_by_number_and_steal() {
        let a = "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu2 5 0 5 50 0 0 0 0 0 0\nintr 1 2 3\n";
        let b = "cpu  30 0 20 160 0 0 0 10 0 0\ncpu0 15 0 10 70 0 0 0 5 0 0\ncpu2 15 0 10 80 0 1 1 5 0 0\nintr 1 2 3\n";
        let (a, b) = (parse_cpu_times(a), parse_cpu_times(b));
        // The aggregate line is skipped, the gap at cpu1 left zero.
        assert_eq!(a.len(), 3);
        assert_eq!(a[1], CpuTimes::default());
        let d0 = b[0].since(&a[0]);
        assert_eq!((d0.total(), d0.steal), (40, 5));
        assert_eq!(d0.pct(d0.steal), 12.5);
        // cpu0: 5 of 40 ticks; cpu2: 5 of 52.
        assert_eq!(steal_pct_max(&a, &b), 12.5);
        assert_eq!(CpuTimes::default().pct(0), 0.0);
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert_eq!(parse_cpu_list("1").unwrap(), vec![1]);
        assert!(parse_cpu_list("2-1").is_err());
        assert!(parse_cpu_list("x").is_err());
        assert!(parse_cpu_list("").is_err());
    }
}
