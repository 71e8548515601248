//! The machine and the software a study ran on, and the peer programs it
//! compares against (found at run time, never assumed).

use std::fs;
use std::process::Command;

use serde_json::{json, Value};

/// CPU ticks charged to processes (user, nice, system) plus steal.
pub(crate) fn charged_ticks(c: &evdispatch_host::CpuTimes) -> u64 {
    c.user + c.nice + c.system + c.steal
}

/// A CPU's busy ticks: [`charged_ticks`] plus the interrupts it served
/// (the busy share of a core, or of a whole load host).
pub(crate) fn busy_ticks(c: &evdispatch_host::CpuTimes) -> u64 {
    charged_ticks(c) + c.irq + c.softirq
}

/// Every peer, in the order the report lists them: the servers run beside
/// ours, the load generators that cross-check ours, and the C event
/// libraries of the dispatch table.
pub const PEER_NAMES: &[&str] = &[
    "nginx", "lighttpd", "h2o", "wrk", "httperf", "libevent", "libev",
];

/// A peer as found on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerStatus {
    /// Its name (one of [`PEER_NAMES`]).
    pub name: &'static str,
    /// `server`, `load generator` or `event library`.
    pub role: &'static str,
    /// Its version, if present.
    pub version: Option<String>,
    /// What to do when it is absent (the command that installs it, and for
    /// the libraries, the rebuild that compiles them in).
    pub install: String,
}

impl PeerStatus {
    /// Whether the peer is installed.
    pub fn present(&self) -> bool {
        self.version.is_some()
    }

    /// `absent: apt-get install -y X`, the text a report shows for a missing peer.
    pub fn absent_note(&self) -> String {
        format!("absent: {}", self.install)
    }
}

/// A library's version from its package manager entry (pkg-config, else
/// dpkg), `None` if not installed.
fn library_version(pkg_config: &str, deb: &str) -> Option<String> {
    let run = |prog: &str, args: &[&str]| -> Option<String> {
        let o = Command::new(prog).args(args).output().ok()?;
        let t = String::from_utf8_lossy(&o.stdout).trim().to_string();
        (o.status.success() && !t.is_empty()).then_some(t)
    };
    run("pkg-config", &["--modversion", pkg_config])
        .or_else(|| run("dpkg-query", &["-W", "-f=${Version}", deb]))
        .and_then(|t| evdispatch_harness::first_version(&t).or(Some(t)))
}

/// Find every peer of [`PEER_NAMES`]: programs through
/// `evdispatch_harness::find`; the C libraries are present when `bench
/// poller` has them built in (`rows`, from `bench poller --list`), with the
/// version their package reports.
pub fn find_peers(
    rows: &std::collections::BTreeMap<String, Result<(), String>>,
) -> Vec<PeerStatus> {
    use evdispatch_harness::{find, Tool};
    let mut out = Vec::new();
    for (name, tool, role) in [
        ("nginx", Tool::Nginx, "server"),
        ("lighttpd", Tool::Lighttpd, "server"),
        ("h2o", Tool::H2o, "server"),
        ("wrk", Tool::Wrk, "load generator"),
        ("httperf", Tool::Httperf, "load generator"),
    ] {
        let found = find(tool);
        out.push(PeerStatus {
            name,
            role,
            install: format!("apt-get install -y {}", tool.package()),
            version: found.ok().map(|p| p.version),
        });
    }
    for (name, pc, deb) in [
        ("libevent", "libevent", "libevent-dev"),
        ("libev", "libev", "libev-dev"),
    ] {
        let install = format!(
            "apt-get install -y {deb} pkg-config, then rebuild evdispatch (cargo build --release)"
        );
        let (version, install) = match rows.get(name) {
            Some(Ok(())) => (
                library_version(pc, deb).or_else(|| Some("built in".into())),
                install,
            ),
            // The bench's own reason, after the command.
            Some(Err(why)) => (None, format!("{install} ({why})")),
            None => (None, install),
        };
        out.push(PeerStatus {
            name,
            role: "event library",
            version,
            install,
        });
    }
    out
}

/// The peers as JSON rows for `results.json`.
pub fn peers_json(peers: &[PeerStatus]) -> Vec<Value> {
    peers
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "role": p.role,
                "status": if p.present() { "present".to_string() } else { p.absent_note() },
                "version": p.version,
                "install": p.install,
            })
        })
        .collect()
}

fn first_line_with(path: &str, key: &str) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

fn read_trim(path: &str) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// The git commit of the source tree this binary was built from, read now if
/// the tree is still there, else as recorded at build time.
pub fn git_commit() -> String {
    Command::new("git")
        .args([
            "-C",
            env!("CARGO_MANIFEST_DIR"),
            "describe",
            "--always",
            "--dirty",
            "--abbrev=12",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| env!("EVD_STUDY_BUILD_COMMIT").to_string())
}

fn limit(name: &str) -> Option<String> {
    let text = fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with(name))?;
    let rest: Vec<&str> = line[name.len()..].split_whitespace().collect();
    Some(format!("soft {} / hard {}", rest.first()?, rest.get(1)?))
}

/// The environment section of `results.json`.
pub fn environment() -> Value {
    let cpus = fs::read_to_string("/proc/cpuinfo")
        .map(|t| t.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(0);
    let mem_kb: Option<u64> = first_line_with("/proc/meminfo", "MemTotal")
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()));
    json!({
        "kernel": read_trim("/proc/sys/kernel/osrelease"),
        "cpu_model": first_line_with("/proc/cpuinfo", "model name"),
        "cpus_online": cpus,
        "cpus_available": evdispatch_host::available_cpus(),
        "memory_bytes": mem_kb.map(|k| k * 1024),
        "rustc": env!("EVD_STUDY_RUSTC"),
        "evdispatch_version": env!("CARGO_PKG_VERSION"),
        "git_commit": git_commit(),
        "loadavg_at_start": read_trim("/proc/loadavg"),
        "limit_open_files": limit("Max open files"),
        "limit_pending_signals": limit("Max pending signals"),
        "somaxconn": read_trim("/proc/sys/net/core/somaxconn"),
        "ip_local_port_range": read_trim("/proc/sys/net/ipv4/ip_local_port_range"),
        "tcp_tw_reuse": read_trim("/proc/sys/net/ipv4/tcp_tw_reuse"),
        "cpufreq_governor": read_trim("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_is_found_or_says_how_to_install_it() {
        let rows = [(
            "libev".to_string(),
            Err("not built in — apt-get install -y libev-dev".to_string()),
        )]
        .into_iter()
        .collect();
        let peers = find_peers(&rows);
        assert_eq!(
            peers.iter().map(|p| p.name).collect::<Vec<_>>(),
            PEER_NAMES.to_vec()
        );
        for p in &peers {
            assert!(
                p.present() || p.absent_note().contains("apt-get install -y"),
                "{p:?}"
            );
        }
        let libev = peers.iter().find(|p| p.name == "libev").unwrap();
        assert!(!libev.present());
        assert!(libev
            .absent_note()
            .starts_with("absent: apt-get install -y libev-dev"));
    }
}
