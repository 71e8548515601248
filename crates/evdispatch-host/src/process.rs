//! Facts about one process or a few, read from `/proc`: CPU time and memory
//! ([`sample`], [`resident`], [`CpuMeter`]), open descriptors, children.
//!
//! The study runs servers and load generators as separate processes, so the
//! CPU a figure is charged to is read from the kernel, never guessed: the
//! total from the process's CPU-time clock, to the nanosecond, and its
//! user/system split from `/proc/PID/stat`, in clock ticks. A process's
//! files (`stat`, `status`, `fd/`, the process list) are read with `procfs`.

use std::io;
use std::time::{Duration, Instant};

use crate::sys::{self, clock_ticks_per_sec, process_cpu_time};

/// CPU time and memory of one process at one instant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProcSample {
    /// CPU time (user + system), nanoseconds: from the process's CPU-time
    /// clock ([`process_cpu_time`]) when sampled live, from the ticks when
    /// parsed from text. Differences of this, not of the ticks, measure a
    /// window: a tick is 10 ms.
    pub cpu_ns: u64,
    /// User-mode CPU time, in clock ticks.
    pub utime_ticks: u64,
    /// Kernel-mode CPU time, in clock ticks.
    pub stime_ticks: u64,
    /// Resident set size, in bytes: approximate. The kernel keeps this
    /// count per CPU (Linux 6.2 on) and `/proc/PID/stat` reads only the
    /// folded total, which lags by up to a batch per CPU (32 pages, 128 KiB,
    /// on small machines) and moves in such steps; [`resident`] reads the
    /// exact figure.
    pub rss_bytes: u64,
    /// Number of threads.
    pub threads: u64,
}

impl ProcSample {
    /// Total CPU time (user + system).
    pub fn cpu(&self) -> Duration {
        Duration::from_nanos(self.cpu_ns)
    }

    /// CPU seconds from `self` to `later` (0 if the count went back, as it
    /// does when a process was replaced by another of the same pid).
    pub fn cpu_s_to(&self, later: &ProcSample) -> f64 {
        later.cpu_ns.saturating_sub(self.cpu_ns) as f64 / 1e9
    }
}

/// The process `pid` (0: this process).
fn process(pid: u32) -> io::Result<procfs::process::Process> {
    let p = if pid == 0 {
        procfs::process::Process::myself()
    } else {
        procfs::process::Process::new(pid as i32)
    };
    p.map_err(io_error)
}

/// A `procfs` error as an `io::Error` of the same kind, with its message.
pub(crate) fn io_error(e: procfs::ProcError) -> io::Error {
    let kind = match &e {
        procfs::ProcError::NotFound(_) => io::ErrorKind::NotFound,
        procfs::ProcError::PermissionDenied(_) => io::ErrorKind::PermissionDenied,
        procfs::ProcError::Io(e, _) => e.kind(),
        _ => io::ErrorKind::InvalidData,
    };
    io::Error::new(kind, e.to_string())
}

impl ProcSample {
    fn from_stat(st: &procfs::process::Stat) -> ProcSample {
        let ticks = st.utime + st.stime;
        ProcSample {
            cpu_ns: (ticks as u128 * 1_000_000_000 / clock_ticks_per_sec() as u128) as u64,
            utime_ticks: st.utime,
            stime_ticks: st.stime,
            threads: st.num_threads.max(0) as u64,
            rss_bytes: st.rss * sys::page_size(),
        }
    }
}

/// Read `/proc/PID/stat` and the process's CPU-time clock (`pid` 0 means
/// this process).
pub fn sample(pid: u32) -> io::Result<ProcSample> {
    let st = process(pid)?.stat().map_err(io_error)?;
    let mut s = ProcSample::from_stat(&st);
    s.cpu_ns = process_cpu_time(pid)?.as_nanos() as u64;
    Ok(s)
}

/// Parse the text of a `/proc/PID/stat` file (a command name with spaces and
/// parentheses included).
pub fn parse_stat(text: &str) -> Option<ProcSample> {
    use procfs::FromRead;
    let st = procfs::process::Stat::from_read(text.as_bytes()).ok()?;
    Some(ProcSample::from_stat(&st))
}

/// The resident set, exact, and split by kind, from `/proc/PID/status`:
/// what the process owns (anonymous: heap, stacks, its tables) apart from
/// the pages of its executable and libraries it has mapped (file-backed,
/// shared with the page cache; they appear as code runs for the first
/// time). Unlike [`ProcSample::rss_bytes`] the kernel sums its per-CPU
/// counts for this file (checked on 6.18: `VmRSS` equals `smaps_rollup`'s
/// `Rss` page for page), so a difference of a few pages is real.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Resident {
    /// The whole resident set, bytes (`VmRSS`).
    pub total_bytes: u64,
    /// Anonymous resident memory, bytes (`RssAnon`).
    pub anon_bytes: u64,
    /// File-backed resident memory, bytes (`RssFile`).
    pub file_bytes: u64,
    /// Shared-memory resident memory, bytes (`RssShmem`).
    pub shmem_bytes: u64,
}

/// Read the resident set by kind of a process (`pid` 0: this one).
pub fn resident(pid: u32) -> io::Result<Resident> {
    let st = process(pid)?.status().map_err(io_error)?;
    resident_of(&st).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("/proc/{pid}/status: no VmRSS/RssAnon/RssFile/RssShmem lines"),
        )
    })
}

fn resident_of(st: &procfs::process::Status) -> Option<Resident> {
    Some(Resident {
        total_bytes: st.vmrss? * 1024,
        anon_bytes: st.rssanon? * 1024,
        file_bytes: st.rssfile? * 1024,
        shmem_bytes: st.rssshmem? * 1024,
    })
}

/// Parse the `VmRSS`, `RssAnon`, `RssFile` and `RssShmem` lines (in kB) of
/// a `/proc/PID/status` text.
pub fn parse_status_resident(text: &str) -> Option<Resident> {
    use procfs::FromRead;
    resident_of(&procfs::process::Status::from_read(text.as_bytes()).ok()?)
}

/// [`resident`] of several processes, added up; processes that are gone
/// count nothing.
pub fn resident_sum(pids: &[u32]) -> Resident {
    pids.iter()
        .filter_map(|&p| resident(p).ok())
        .fold(Resident::default(), |a, r| Resident {
            total_bytes: a.total_bytes + r.total_bytes,
            anon_bytes: a.anon_bytes + r.anon_bytes,
            file_bytes: a.file_bytes + r.file_bytes,
            shmem_bytes: a.shmem_bytes + r.shmem_bytes,
        })
}

/// [`sample`] of several processes (a server's master and workers) summed:
/// CPU ticks, resident memory and threads added up. Fails if any is gone.
pub fn sample_sum(pids: &[u32]) -> io::Result<ProcSample> {
    let mut total = ProcSample::default();
    for &pid in pids {
        let s = sample(pid)?;
        total.cpu_ns += s.cpu_ns;
        total.utime_ticks += s.utime_ticks;
        total.stime_ticks += s.stime_ticks;
        total.rss_bytes += s.rss_bytes;
        total.threads += s.threads;
    }
    Ok(total)
}

/// [`open_fds`] of several processes, added up.
pub fn open_fds_sum(pids: &[u32]) -> io::Result<usize> {
    pids.iter().map(|&p| open_fds(p)).sum()
}

/// Number of open descriptors of a process (`pid` 0: this one).
pub fn open_fds(pid: u32) -> io::Result<usize> {
    process(pid)?.fd_count().map_err(io_error)
}

/// The given processes followed by their direct children (found by the
/// parent field of every `/proc/PID/stat`), so that a master/worker server
/// such as nginx can be measured whole.
pub fn with_children(pids: &[u32]) -> Vec<u32> {
    let mut all: Vec<u32> = pids.to_vec();
    let Ok(procs) = procfs::process::all_processes() else {
        return all;
    };
    for p in procs.flatten() {
        let Ok(st) = p.stat() else { continue };
        let (pid, ppid) = (st.pid as u32, st.ppid as u32);
        if pids.contains(&ppid) && !all.contains(&pid) {
            all.push(pid);
        }
    }
    all
}

/// CPU use of a process over a window, as a fraction of one core.
#[derive(Debug, Clone, Copy)]
pub struct CpuMeter {
    pid: u32,
    start: ProcSample,
    t0: Instant,
}

/// What a [`CpuMeter`] measured.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CpuUse {
    /// Wall-clock length of the window, seconds.
    pub wall_s: f64,
    /// CPU seconds (user + system) used in the window, to the nanosecond.
    pub cpu_s: f64,
    /// User-mode CPU seconds, counted in clock ticks (so it need not add up
    /// with `system_s` to `cpu_s` exactly).
    pub user_s: f64,
    /// Kernel-mode CPU seconds, counted in clock ticks.
    pub system_s: f64,
    /// `cpu_s / wall_s × 100`: 100 is one core busy the whole time.
    pub pct_of_core: f64,
    /// Resident set size at the end of the window, bytes.
    pub rss_bytes: u64,
}

impl CpuMeter {
    /// Start measuring `pid` (0: this process) now.
    pub fn start(pid: u32) -> io::Result<CpuMeter> {
        Ok(CpuMeter {
            pid,
            start: sample(pid)?,
            t0: Instant::now(),
        })
    }

    /// CPU used since `start`.
    pub fn read(&self) -> io::Result<CpuUse> {
        let now = sample(self.pid)?;
        let wall_s = self.t0.elapsed().as_secs_f64();
        let hz = clock_ticks_per_sec() as f64;
        let user_s = now.utime_ticks.saturating_sub(self.start.utime_ticks) as f64 / hz;
        let system_s = now.stime_ticks.saturating_sub(self.start.stime_ticks) as f64 / hz;
        let cpu_s = self.start.cpu_s_to(&now);
        Ok(CpuUse {
            wall_s,
            cpu_s,
            user_s,
            system_s,
            pct_of_core: if wall_s > 0.0 {
                cpu_s / wall_s * 100.0
            } else {
                0.0
            },
            rss_bytes: now.rss_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_and_gone_processes() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let n = open_fds(0).unwrap();
        assert!(n >= 5, "{n}");
        drop(a);
        // pid_max is at most 2^22: this one never exists.
        let gone = 1 << 30;
        assert_eq!(sample(gone).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(open_fds(gone).unwrap_err().kind(), io::ErrorKind::NotFound);
        assert_eq!(resident_sum(&[gone]), Resident::default());
    }

    #[test]
    fn stat_with_odd_command_name() {
        // Fields 1-25 as the kernel writes them, then 26-52 (zero here).
        let line = format!(
            "1234 (a (b) c) S 1 2 3 4 5 6 7 8 9 10 250 30 0 0 20 0 3 0 99 1000 42 18446744073709551615{}\n",
            " 0".repeat(27)
        );
        let s = parse_stat(&line).unwrap();
        assert_eq!((s.utime_ticks, s.stime_ticks, s.threads), (250, 30, 3));
        assert_eq!(s.rss_bytes, 42 * sys::page_size());
    }

    #[test]
    fn status_resident_kinds() {
        // This process's status with the four lines set to known values.
        let real = std::fs::read_to_string("/proc/self/status").unwrap();
        let with = |values: &[(&str, &str)]| {
            real.lines()
                .filter_map(|l| {
                    let key = l.split(':').next().unwrap_or("");
                    match values.iter().find(|(k, _)| *k == key) {
                        Some((_, "")) => None,
                        Some((k, v)) => Some(format!("{k}:\t{v}")),
                        None => Some(l.to_string()),
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        let text = with(&[
            ("VmRSS", "    7000 kB"),
            ("RssAnon", "    1000 kB"),
            ("RssFile", "    5990 kB"),
            ("RssShmem", "      10 kB"),
        ]);
        let r = parse_status_resident(&text).unwrap();
        assert_eq!(
            (r.total_bytes, r.anon_bytes, r.file_bytes, r.shmem_bytes),
            (7000 * 1024, 1000 * 1024, 5990 * 1024, 10 * 1024)
        );
        assert_eq!(parse_status_resident(&with(&[("VmRSS", "")])), None);
        // This process: a heap and a mapped executable.
        let me = resident(0).unwrap();
        assert!(me.anon_bytes > 0 && me.file_bytes > 0, "{me:?}");
        assert!(me.total_bytes >= me.anon_bytes + me.file_bytes, "{me:?}");
        // 16 MiB touched show at once. The kernel's counts are per-CPU
        // sums that may lag by some 64 pages, the allocator may hand back
        // memory already resident, and other test threads free meanwhile
        // (by more than a quarter of the block, now and then): so a block
        // far larger than the first two, a margin of a quarter, and up to
        // five tries, one of which must see it.
        let page = sys::page_size() as usize;
        let pages = (16 << 20) / page;
        let want = (pages * page * 3 / 4) as u64;
        let mut seen = Vec::new();
        for _ in 0..5 {
            let before = resident(0).unwrap().anon_bytes;
            let block = vec![1u8; pages * page];
            let after = resident(0).unwrap().anon_bytes;
            std::hint::black_box(&block);
            seen.push((before, after));
            if after >= before + want {
                break;
            }
        }
        assert!(
            seen.iter().any(|(b, a)| *a >= b + want),
            "anon bytes before -> after each try: {seen:?}"
        );
        let id = std::process::id();
        assert!(resident_sum(&[id, id]).anon_bytes >= me.anon_bytes);
    }

    #[test]
    fn own_cpu_grows_when_busy() {
        let m = CpuMeter::start(0).unwrap();
        let t0 = Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < Duration::from_millis(150) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let u = m.read().unwrap();
        assert!(u.cpu_s > 0.0 && u.wall_s >= 0.15, "{u:?}");
        assert!(u.rss_bytes > 0);
        assert!(open_fds(0).unwrap() >= 3);
        let me = std::process::id();
        let two = sample_sum(&[me, me]).unwrap();
        assert!(two.rss_bytes > 0 && two.threads >= 2, "{two:?}");
        assert_eq!(open_fds_sum(&[]).unwrap(), 0);
        assert!(open_fds_sum(&[me]).unwrap() >= 3);
    }

    /// The CPU-time clock of another process is readable, agrees with the
    /// ticks of its `/proc/PID/stat` to within the ticks' rounding, and is
    /// gone with the process.
    #[test]
    fn another_process_cpu_clock_agrees_with_its_ticks() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(300));
        let s = sample(pid).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        let hz = clock_ticks_per_sec() as f64;
        let ticks_s = (s.utime_ticks + s.stime_ticks) as f64 / hz;
        let clock_s = s.cpu().as_secs_f64();
        assert!(clock_s > 0.0, "{s:?}");
        // Read a moment apart, each rounded down to a tick.
        assert!((clock_s - ticks_s).abs() <= 3.0 / hz, "{s:?}");
        assert!(
            process_cpu_time(pid).is_err(),
            "a reaped child has no clock"
        );
        // This process's own clock counts a spin to the microsecond.
        let a = sample(0).unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_millis(3) {}
        let b = sample(0).unwrap();
        assert!(a.cpu_s_to(&b) > 0.0 && b.cpu_s_to(&a) == 0.0);
    }

    #[test]
    fn children_are_found() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let all = with_children(&[std::process::id()]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(all[0], std::process::id());
        assert!(all.contains(&child.id()), "{all:?}");
    }
}
