//! A CPU budget for a child process: a cgroup made for it with CPU
//! bandwidth control, so that the experiment, not the host, sets how much
//! CPU a server may use (the seeds' small machines).
//!
//! * [`CpuBudget`]: a fraction of one core over a short period (the
//!   kernel's bandwidth control gives the group `quota` µs of CPU in every
//!   `period` µs and throttles it for the rest of the period once they are
//!   spent; the quota is at least 1 ms, so [`CpuBudget::new`] picks the
//!   shortest period that allows it, which bounds the stall a budget adds on
//!   its own).
//! * [`cpu_control`]: where bandwidth control lives on this machine,
//!   detected at run time from `/proc/self/mountinfo`: cgroup v2 (`cpu.max`
//!   in a `cgroup2` mount whose `cgroup.controllers` lists `cpu`) or v1 (the
//!   `cpu` controller's own mount, `cpu.cfs_quota_us` and
//!   `cpu.cfs_period_us`); or why there is none (not mounted, not writable:
//!   not root).
//! * [`BudgetGroup`]: one cgroup `evdispatch-PID-N` at the root of that
//!   hierarchy, with the budget written; [`BudgetGroup::attach`] makes a
//!   [`Command`]'s child join it between fork and exec (so everything it
//!   forks is inside too); its statistics ([`BudgetGroup::stats`]: periods,
//!   throttled periods, time throttled) say whether the budget bit. The
//!   group is removed when dropped (after its processes are gone), by the
//!   Ctrl-C handler of [`crate::on_interrupt`], and, for groups left by a
//!   program killed outright, by the next [`BudgetGroup::create`].

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde::{Deserialize, Serialize};

use crate::sys;

/// The smallest quota (and period) the kernel accepts, µs.
pub const MIN_QUOTA_US: u64 = 1_000;

/// The longest period [`CpuBudget::new`] picks, µs (a budget of 2% of a
/// core needs 50 ms).
pub const MAX_PERIOD_US: u64 = 100_000;

/// The shortest period [`CpuBudget::new`] picks, µs: below a few
/// milliseconds the bandwidth timer's own cost grows.
pub const MIN_PERIOD_US: u64 = 2_000;

/// How much CPU a process (with everything it forks) may use.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuBudget {
    /// Fraction of one core (0.25: a quarter; above 1 spans several cores).
    pub fraction: f64,
    /// The bandwidth period, µs: the group gets `fraction × period` µs of
    /// CPU in each, and waits for the next once they are spent.
    pub period_us: u64,
}

impl CpuBudget {
    /// `fraction` of a core over the shortest period whose quota is at
    /// least [`MIN_QUOTA_US`] (and at least [`MIN_PERIOD_US`], at most
    /// [`MAX_PERIOD_US`]): the shorter the period, the shorter the stall
    /// once the quota is spent.
    pub fn new(fraction: f64) -> CpuBudget {
        let period = if fraction > 0.0 && fraction.is_finite() {
            (MIN_QUOTA_US as f64 / fraction).ceil() as u64
        } else {
            MAX_PERIOD_US
        };
        CpuBudget {
            fraction,
            period_us: period.clamp(MIN_PERIOD_US, MAX_PERIOD_US),
        }
    }

    /// The quota per period, µs, or why the kernel would refuse it.
    pub fn quota_us(&self) -> anyhow::Result<u64> {
        if !(self.fraction > 0.0 && self.fraction.is_finite()) {
            bail!(
                "a CPU budget must be a positive fraction, not {}",
                self.fraction
            );
        }
        if !(MIN_QUOTA_US..=1_000_000).contains(&self.period_us) {
            bail!(
                "a CPU budget's period must be 1 ms to 1 s, not {} µs",
                self.period_us
            );
        }
        let quota = (self.fraction * self.period_us as f64).round() as u64;
        if quota < MIN_QUOTA_US {
            bail!(
                "{:.3} of a core over {} µs is a quota of {quota} µs, below the kernel's 1 ms",
                self.fraction,
                self.period_us
            );
        }
        Ok(quota)
    }
}

impl std::fmt::Display for CpuBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{:.1}% of a core (period {:.1} ms)",
            100.0 * self.fraction,
            self.period_us as f64 / 1000.0
        )
    }
}

/// Which cgroup interface holds CPU bandwidth control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CgroupVersion {
    /// cgroup v1: `cpu.cfs_quota_us` and `cpu.cfs_period_us`.
    V1,
    /// cgroup v2: `cpu.max`.
    V2,
}

/// Where CPU bandwidth control lives on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuControl {
    /// The interface.
    pub version: CgroupVersion,
    /// The hierarchy's mount point, under which groups are made.
    pub root: PathBuf,
}

impl std::fmt::Display for CpuControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let v = match self.version {
            CgroupVersion::V1 => "cgroup v1 (cpu.cfs_quota_us)",
            CgroupVersion::V2 => "cgroup v2 (cpu.max)",
        };
        write!(f, "{v} at {}", self.root.display())
    }
}

/// The mounts of cgroup hierarchies in a `/proc/self/mountinfo` text: a v2
/// mount point, and the mount point of the v1 hierarchy that holds the
/// `cpu` controller (alone or with others, e.g. `cpu,cpuacct`).
pub fn parse_mountinfo(text: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v2, mut v1_cpu) = (None, None);
    for line in text.lines() {
        // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount) = left.split_whitespace().nth(4) else {
            continue;
        };
        let mut r = right.split_whitespace();
        let (fstype, _source, superopts) = (r.next(), r.next(), r.next().unwrap_or(""));
        let mount = PathBuf::from(unescape_mount(mount));
        match fstype {
            Some("cgroup2") if v2.is_none() => v2 = Some(mount),
            Some("cgroup") if v1_cpu.is_none() && superopts.split(',').any(|o| o == "cpu") => {
                v1_cpu = Some(mount)
            }
            _ => {}
        }
    }
    (v2, v1_cpu)
}

/// A mountinfo path with its octal escapes (`\040` for a space) decoded.
fn unescape_mount(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let oct = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], oct) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Choose the interface from the mounts and the v2 root's list of
/// controllers: v2 when it offers `cpu`, else the v1 `cpu` hierarchy.
pub fn choose_control(
    v2: Option<&Path>,
    v2_controllers: &str,
    v1_cpu: Option<&Path>,
) -> Result<CpuControl, String> {
    if let Some(root) = v2.filter(|_| v2_controllers.split_whitespace().any(|c| c == "cpu")) {
        return Ok(CpuControl {
            version: CgroupVersion::V2,
            root: root.to_path_buf(),
        });
    }
    if let Some(root) = v1_cpu {
        return Ok(CpuControl {
            version: CgroupVersion::V1,
            root: root.to_path_buf(),
        });
    }
    Err(match v2 {
        Some(p) => format!(
            "the cgroup v2 hierarchy at {} has no cpu controller and no cgroup v1 cpu hierarchy is mounted",
            p.display()
        ),
        None => "no cgroup hierarchy with the cpu controller is mounted".into(),
    })
}

/// Where CPU bandwidth control lives here and whether this process may make
/// groups in it (root, a writable hierarchy), or why not. Detected once.
pub fn cpu_control() -> Result<CpuControl, String> {
    static DETECTED: OnceLock<Result<CpuControl, String>> = OnceLock::new();
    DETECTED
        .get_or_init(|| {
            let text = fs::read_to_string("/proc/self/mountinfo")
                .map_err(|e| format!("cannot read /proc/self/mountinfo: {e}"))?;
            let (v2, v1) = parse_mountinfo(&text);
            let controllers = v2
                .as_ref()
                .and_then(|p| fs::read_to_string(p.join("cgroup.controllers")).ok())
                .unwrap_or_default();
            let control = choose_control(v2.as_deref(), &controllers, v1.as_deref())?;
            if !sys::is_root() {
                return Err(format!(
                    "{control}: making a cgroup needs root (this process is not)"
                ));
            }
            if control.version == CgroupVersion::V2 {
                enable_v2_cpu(&control.root)?;
            }
            // Try it: a group that can be made and removed.
            let probe = control
                .root
                .join(format!("evdispatch-{}-probe", std::process::id()));
            fs::create_dir(&probe).map_err(|e| format!("{control}: cannot make a group ({e})"))?;
            let _ = fs::remove_dir(&probe);
            Ok(control)
        })
        .clone()
}

/// Let the children of a v2 root use the cpu controller
/// (`cgroup.subtree_control` += `cpu`).
fn enable_v2_cpu(root: &Path) -> Result<(), String> {
    let path = root.join("cgroup.subtree_control");
    let now = fs::read_to_string(&path).unwrap_or_default();
    if now.split_whitespace().any(|c| c == "cpu") {
        return Ok(());
    }
    fs::write(&path, "+cpu").map_err(|e| {
        format!(
            "cannot enable the cpu controller for the groups under {} ({e})",
            root.display()
        )
    })
}

/// Bandwidth statistics of a group (`cpu.stat`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct BudgetStats {
    /// Periods in which the group ran.
    pub periods: u64,
    /// Periods in which it spent its quota and was throttled.
    pub throttled: u64,
    /// Time it spent throttled, seconds.
    pub throttled_s: f64,
}

impl BudgetStats {
    /// The change from `earlier` to this.
    pub fn since(&self, earlier: &BudgetStats) -> BudgetStats {
        BudgetStats {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
            throttled_s: (self.throttled_s - earlier.throttled_s).max(0.0),
        }
    }
}

/// Read a `cpu.stat` text: v1 (`nr_periods`, `nr_throttled`,
/// `throttled_time` in ns) or v2 (`throttled_usec`).
pub fn parse_cpu_stat(text: &str) -> Option<BudgetStats> {
    let mut s = BudgetStats::default();
    let (mut seen_periods, mut seen_time) = (false, false);
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(k), Some(v)) = (it.next(), it.next().and_then(|v| v.parse::<u64>().ok())) else {
            continue;
        };
        match k {
            "nr_periods" => {
                s.periods = v;
                seen_periods = true;
            }
            "nr_throttled" => s.throttled = v,
            "throttled_time" => {
                s.throttled_s = v as f64 / 1e9;
                seen_time = true;
            }
            "throttled_usec" => {
                s.throttled_s = v as f64 / 1e6;
                seen_time = true;
            }
            _ => {}
        }
    }
    (seen_periods && seen_time).then_some(s)
}

/// Groups this program made and has not removed (for the Ctrl-C handler).
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static SERIAL: AtomicU32 = AtomicU32::new(0);

fn live() -> std::sync::MutexGuard<'static, BTreeSet<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Remove a group, waiting (at most `patience`) for its processes to leave.
fn remove_group(path: &Path, patience: Duration) -> bool {
    let t0 = Instant::now();
    loop {
        match fs::remove_dir(path) {
            Ok(()) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return true,
            Err(_) if t0.elapsed() < patience => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => return false,
        }
    }
}

/// Remove every group this program made that is still there (the Ctrl-C
/// handler calls it after killing the children).
pub(crate) fn remove_all() {
    let paths: Vec<PathBuf> = live().iter().cloned().collect();
    for p in paths {
        remove_group(&p, Duration::from_millis(500));
    }
}

/// Remove groups `evdispatch-PID-N` under `root` whose program (PID) is
/// gone: left by a program killed outright. Groups still holding
/// processes stay.
fn sweep_stale(root: &Path) {
    let Ok(dir) = fs::read_dir(root) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("evdispatch-"))
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// A cgroup with a CPU budget, removed when dropped.
#[derive(Debug)]
pub struct BudgetGroup {
    path: PathBuf,
    version: CgroupVersion,
    budget: CpuBudget,
}

impl BudgetGroup {
    /// Make a group with `budget` in this machine's CPU hierarchy
    /// ([`cpu_control`]); fails, saying why, where none can be made.
    pub fn create(budget: CpuBudget) -> anyhow::Result<BudgetGroup> {
        let quota = budget.quota_us()?;
        let control = cpu_control().map_err(|why| anyhow::anyhow!("no CPU budget here: {why}"))?;
        sweep_stale(&control.root);
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let path = control
            .root
            .join(format!("evdispatch-{}-{n}", std::process::id()));
        fs::create_dir(&path).with_context(|| format!("cannot make {}", path.display()))?;
        live().insert(path.clone());
        let group = BudgetGroup {
            path,
            version: control.version,
            budget,
        };
        let write = |file: &str, value: String| -> anyhow::Result<()> {
            let p = group.path.join(file);
            fs::write(&p, &value)
                .with_context(|| format!("cannot write {value} to {}", p.display()))
        };
        match control.version {
            CgroupVersion::V2 => write("cpu.max", format!("{quota} {}", budget.period_us))?,
            CgroupVersion::V1 => {
                write("cpu.cfs_period_us", budget.period_us.to_string())?;
                write("cpu.cfs_quota_us", quota.to_string())?;
            }
        }
        Ok(group)
    }

    /// The group's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its budget.
    pub fn budget(&self) -> CpuBudget {
        self.budget
    }

    /// The interface it was made with.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Make the child of `cmd` join this group between fork and exec (it
    /// writes `0`, itself, to the group's `cgroup.procs`), so that the
    /// program and everything it forks run within the budget.
    pub fn attach(&self, cmd: &mut Command) -> std::io::Result<()> {
        sys::join_cgroup_in_child(cmd, &self.path.join("cgroup.procs"))
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Its bandwidth statistics so far.
    pub fn stats(&self) -> Option<BudgetStats> {
        parse_cpu_stat(&fs::read_to_string(self.path.join("cpu.stat")).ok()?)
    }
}

impl Drop for BudgetGroup {
    fn drop(&mut self) {
        if remove_group(&self.path, Duration::from_secs(2)) {
            live().remove(&self.path);
        } else {
            eprintln!(
                "evdispatch-harness: cannot remove {} (processes still in it)",
                self.path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn mountinfo_finds_the_cpu_hierarchy_not_cpuacct_or_cpuset() {
        let (v2, v1) = parse_mountinfo(HYBRID);
        assert_eq!(v2.as_deref(), Some(Path::new("/sys/fs/cgroup/unified")));
        assert_eq!(v1.as_deref(), Some(Path::new("/sys/fs/cgroup/cpu")));
        // Only cpuacct and cpuset: no cpu hierarchy.
        let no_cpu = HYBRID.replace("rw,cpu\n", "rw,blkio\n");
        assert_eq!(parse_mountinfo(&no_cpu).1, None);
        // Joined controllers, optional fields and an escaped space.
        let joined =
            "25 1 0:22 / /sys/fs/cgroup/cpu\\040x rw shared:9 - cgroup cgroup rw,cpu,cpuacct\n";
        assert_eq!(
            parse_mountinfo(joined).1.as_deref(),
            Some(Path::new("/sys/fs/cgroup/cpu x"))
        );
        let pure_v2 = "30 1 0:26 / /sys/fs/cgroup rw shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        assert_eq!(
            parse_mountinfo(pure_v2),
            (Some(PathBuf::from("/sys/fs/cgroup")), None)
        );
    }

    #[test]
    fn v2_is_chosen_only_when_it_offers_cpu() {
        let (v2, v1) = parse_mountinfo(HYBRID);
        // This machine's kind: v2 mounted with hugetlb only, cpu on v1.
        let c = choose_control(v2.as_deref(), "hugetlb\n", v1.as_deref()).unwrap();
        assert_eq!(c.version, CgroupVersion::V1);
        assert_eq!(c.root, Path::new("/sys/fs/cgroup/cpu"));
        let c =
            choose_control(v2.as_deref(), "cpuset cpu io memory pids\n", v1.as_deref()).unwrap();
        assert_eq!(c.version, CgroupVersion::V2);
        // "cpuset" is not "cpu".
        let e = choose_control(v2.as_deref(), "cpuset io\n", None).unwrap_err();
        assert!(e.contains("no cpu controller"), "{e}");
        assert!(choose_control(None, "", None).is_err());
    }

    #[test]
    fn cpu_stat_reads_both_versions() {
        let v1 = "nr_periods 200\nnr_throttled 150\nthrottled_time 1500000000\nnr_bursts 0\n";
        assert_eq!(
            parse_cpu_stat(v1),
            Some(BudgetStats {
                periods: 200,
                throttled: 150,
                throttled_s: 1.5
            })
        );
        let v2 = "usage_usec 10\nuser_usec 5\nsystem_usec 5\nnr_periods 10\nnr_throttled 2\nthrottled_usec 250000\n";
        let s = parse_cpu_stat(v2).unwrap();
        assert_eq!((s.periods, s.throttled), (10, 2));
        assert!((s.throttled_s - 0.25).abs() < 1e-12);
        // A group without bandwidth control has no such lines.
        assert_eq!(parse_cpu_stat("usage_usec 10\n"), None);
        let d = s.since(&BudgetStats {
            periods: 4,
            throttled: 1,
            throttled_s: 0.05,
        });
        assert_eq!((d.periods, d.throttled), (6, 1));
    }

    #[test]
    fn the_period_is_the_shortest_with_a_one_millisecond_quota() {
        let b = CpuBudget::new(0.2);
        assert_eq!(b.period_us, 5_000);
        assert_eq!(b.quota_us().unwrap(), 1_000);
        let b = CpuBudget::new(0.3);
        assert_eq!(b.period_us, 3_334);
        assert!(b.quota_us().unwrap() >= MIN_QUOTA_US);
        // Large budgets keep the shortest period allowed, small ones the longest.
        assert_eq!(CpuBudget::new(0.9).period_us, MIN_PERIOD_US);
        assert_eq!(CpuBudget::new(0.001).period_us, MAX_PERIOD_US);
        assert!(CpuBudget::new(0.001).quota_us().is_err());
        assert!(CpuBudget::new(0.0).quota_us().is_err());
        let tight = CpuBudget {
            fraction: 0.1,
            period_us: 5_000,
        };
        assert!(tight.quota_us().unwrap_err().to_string().contains("below"));
    }

    #[test]
    fn mount_escapes_decode() {
        assert_eq!(unescape_mount("a\\040b\\011c"), "a b\tc");
        assert_eq!(unescape_mount("plain\\x"), "plain\\x");
    }
}
