//! The machine and the software a study ran on, and the peer programs it
//! compares against (found at run time, never assumed).

use std::fs;
use std::process::Command;

use serde_json::{json, Value};

/// What role a peer plays in the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A web server run beside ours (scenarios 2, 5, 8).
    Server,
    /// A load generator that cross-checks ours.
    Load,
    /// A C event library in the dispatch table (scenario 1).
    Library,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Load => "load generator",
            Role::Library => "event library",
        }
    }
}

/// One peer program: how to find it, its version, and how to install it.
#[derive(Debug, Clone, Copy)]
pub struct PeerInfo {
    /// The name used in results and the report.
    pub name: &'static str,
    /// Its role.
    pub role: Role,
    /// The command that prints its version (first element is the program).
    pub version_cmd: &'static [&'static str],
    /// The Debian package that provides it.
    pub package: &'static str,
}

/// Every peer, in the order the report lists them.
pub static PEERS: &[PeerInfo] = &[
    PeerInfo {
        name: "nginx",
        role: Role::Server,
        version_cmd: &["nginx", "-v"],
        package: "nginx",
    },
    PeerInfo {
        name: "lighttpd",
        role: Role::Server,
        version_cmd: &["lighttpd", "-v"],
        package: "lighttpd",
    },
    PeerInfo {
        name: "h2o",
        role: Role::Server,
        version_cmd: &["h2o", "--version"],
        package: "h2o",
    },
    PeerInfo {
        name: "wrk",
        role: Role::Load,
        version_cmd: &["wrk", "--version"],
        package: "wrk",
    },
    PeerInfo {
        name: "httperf",
        role: Role::Load,
        version_cmd: &["httperf", "--version"],
        package: "httperf",
    },
    PeerInfo {
        name: "libevent",
        role: Role::Library,
        version_cmd: &["pkg-config", "--modversion", "libevent"],
        package: "libevent-dev",
    },
    PeerInfo {
        name: "libev",
        role: Role::Library,
        version_cmd: &["dpkg-query", "-W", "-f=${Version}", "libev-dev"],
        package: "libev-dev",
    },
];

/// A peer as found on this machine.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerStatus {
    /// Its row of [`PEERS`].
    pub name: &'static str,
    /// Its version, if present.
    pub version: Option<String>,
    /// The command that installs it.
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

/// The first `N.N[.N…]` in `text`.
pub fn version_in(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && (i == 0 || !(b[i - 1].is_ascii_digit() || b[i - 1] == b'.')) {
            let start = i;
            let mut dots = 0;
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || (b[i] == b'.' && i + 1 < b.len() && b[i + 1].is_ascii_digit()))
            {
                if b[i] == b'.' {
                    dots += 1;
                }
                i += 1;
            }
            if dots >= 1 {
                return Some(text[start..i].to_string());
            }
        }
        i += 1;
    }
    None
}

fn probe(peer: &PeerInfo) -> PeerStatus {
    let install = format!("apt-get install -y {}", peer.package);
    let out = Command::new(peer.version_cmd[0])
        .args(&peer.version_cmd[1..])
        .output();
    let version = out.ok().and_then(|o| {
        // wrk prints its version and exits 1; a missing library makes
        // pkg-config fail with a message but no version.
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let text = text.trim();
        if text.is_empty()
            || text.contains("not installed")
            || text.contains("No package")
            || text.contains("was not found")
        {
            None
        } else {
            version_in(text)
        }
    });
    PeerStatus {
        name: peer.name,
        version,
        install,
    }
}

/// Find every peer of [`PEERS`].
pub fn find_peers() -> Vec<PeerStatus> {
    PEERS.iter().map(probe).collect()
}

/// The peers as JSON rows for `results.json`.
pub fn peers_json(peers: &[PeerStatus]) -> Vec<Value> {
    peers
        .iter()
        .map(|p| {
            let info = PEERS.iter().find(|i| i.name == p.name).expect("from PEERS");
            json!({
                "name": p.name,
                "role": info.role.name(),
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
        "cpus_available": evdispatch_proc::available_cpus(),
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
    fn versions_from_tool_banners() {
        assert_eq!(
            version_in("nginx version: nginx/1.22.1").as_deref(),
            Some("1.22.1")
        );
        assert_eq!(
            version_in("lighttpd/1.4.69 (ssl) - a light").as_deref(),
            Some("1.4.69")
        );
        assert_eq!(
            version_in("h2o version 2.2.5\nOpenSSL: 3.0").as_deref(),
            Some("2.2.5")
        );
        assert_eq!(
            version_in("wrk 4.1.0 [epoll] Copyright").as_deref(),
            Some("4.1.0")
        );
        assert_eq!(version_in("httperf-0.9.0").as_deref(), Some("0.9.0"));
        assert_eq!(version_in("4.33-1").as_deref(), Some("4.33"));
        assert_eq!(version_in("no version here 7"), None);
    }

    #[test]
    fn a_missing_peer_says_how_to_install_it() {
        let p = probe(&PeerInfo {
            name: "nosuch",
            role: Role::Server,
            version_cmd: &["evd-no-such-program-xyz", "-v"],
            package: "nosuch-pkg",
        });
        assert!(!p.present());
        assert_eq!(p.absent_note(), "absent: apt-get install -y nosuch-pkg");
    }
}
