//! The programs the harness may run (nginx, lighttpd, h2o, wrk, httperf,
//! h2load),
//! found at run time with their versions; a missing one is an error that
//! says how to install it.

use std::fmt;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A program the harness may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    /// nginx (package `nginx`).
    Nginx,
    /// lighttpd (package `lighttpd`).
    Lighttpd,
    /// h2o (package `h2o`).
    H2o,
    /// wrk (package `wrk`).
    Wrk,
    /// httperf (package `httperf`).
    Httperf,
    /// h2load, nghttp2's HTTP/2 benchmark (package `nghttp2-client`).
    H2load,
}

impl Tool {
    /// The executable's name.
    pub fn command(self) -> &'static str {
        match self {
            Tool::Nginx => "nginx",
            Tool::Lighttpd => "lighttpd",
            Tool::H2o => "h2o",
            Tool::Wrk => "wrk",
            Tool::Httperf => "httperf",
            Tool::H2load => "h2load",
        }
    }

    /// The Debian package that installs it.
    pub fn package(self) -> &'static str {
        match self {
            Tool::H2load => "nghttp2-client",
            t => t.command(),
        }
    }

    /// The arguments that make it print its version.
    pub fn version_args(self) -> &'static [&'static str] {
        match self {
            Tool::Httperf | Tool::H2load => &["--version"],
            _ => &["-v"],
        }
    }

    /// Its version in what [`version_args`](Self::version_args) made it
    /// print, or "unknown".
    pub fn version_in(self, text: &str) -> String {
        // The version is on a line naming the program (h2o also prints
        // OpenSSL's; httperf may warn about its file limit first).
        text.lines()
            .filter(|l| l.to_lowercase().contains(self.command()))
            .find_map(first_version)
            .unwrap_or_else(|| "unknown".into())
    }
}

/// A program that is not installed; its message says how to install it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotInstalled(pub Tool);

impl fmt::Display for NotInstalled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not installed: apt-get install -y {}",
            self.0.command(),
            self.0.package()
        )
    }
}

impl std::error::Error for NotInstalled {}

/// A program found on this machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    /// Which.
    pub tool: Tool,
    /// Its path.
    pub path: PathBuf,
    /// Its version (e.g. "1.22.1").
    pub version: String,
}

/// The first `N.N[.N]` in `text`.
pub fn first_version(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit()
            && (i == 0 || !b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'/' || b[i - 1] == b'-')
        {
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

/// Find `tool` on `PATH` (and in /usr/sbin, /sbin, where Debian puts servers)
/// and ask it its version.
pub fn find(tool: Tool) -> Result<Program, NotInstalled> {
    let path_var = std::env::var_os("PATH");
    let also = [
        "/usr/sbin",
        "/sbin",
        "/usr/bin",
        "/usr/local/bin",
        "/usr/local/sbin",
    ];
    let path = path_var
        .iter()
        .flat_map(std::env::split_paths)
        .chain(also.iter().map(PathBuf::from))
        .map(|d| d.join(tool.command()))
        .find(|p| p.is_file())
        .ok_or(NotInstalled(tool))?;
    let out = Command::new(&path)
        .args(tool.version_args())
        .stdin(Stdio::null())
        .output()
        .map_err(|_| NotInstalled(tool))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let version = tool.version_in(&text);
    Ok(Program {
        tool,
        path,
        version,
    })
}

/// Why a test needing `tool` must skip, or `None` when it is installed. The
/// caller prints the reason and returns.
pub fn skip_reason(tool: Tool) -> Option<String> {
    find(tool).err().map(|e| format!("skipped: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_banners() {
        assert_eq!(
            first_version("nginx version: nginx/1.22.1").as_deref(),
            Some("1.22.1")
        );
        assert_eq!(
            first_version("lighttpd/1.4.69 (ssl) - a light and fast webserver").as_deref(),
            Some("1.4.69")
        );
        assert_eq!(first_version("h2o version 2.2.5").as_deref(), Some("2.2.5"));
        assert_eq!(
            first_version("httperf: httperf-0.9.0 compiled without DEBUG").as_deref(),
            Some("0.9.0")
        );
        assert_eq!(
            first_version("wrk debian/4.1.0-3+b2 [epoll] Copyright").as_deref(),
            Some("4.1.0")
        );
        assert_eq!(first_version("no digits here"), None);
        // httperf may warn before its banner.
        assert_eq!(
            Tool::Httperf.version_in(
                "httperf: warning: open file limit > FD_SETSIZE\nhttperf: httperf-0.9.0 compiled\n"
            ),
            "0.9.0"
        );
        assert_eq!(Tool::Wrk.version_in("Usage: nothing"), "unknown");
        assert_eq!(Tool::H2load.version_in("h2load nghttp2/1.52.0\n"), "1.52.0");
    }

    #[test]
    fn missing_program_says_how_to_install() {
        assert_eq!(
            NotInstalled(Tool::Wrk).to_string(),
            "wrk is not installed: apt-get install -y wrk"
        );
        assert_eq!(
            NotInstalled(Tool::H2load).to_string(),
            "h2load is not installed: apt-get install -y nghttp2-client"
        );
    }
}
