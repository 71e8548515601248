//! A typed `evdispatch serve` command line for programs that start the server:
//! the flags are [`ServeArgs`](crate::ServeArgs)'s, checked by this file's test.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

use crate::config::{AcceptMode, ListenerMode};

/// The arguments after `evdispatch serve`: each field is the flag of the
/// same name, left out when `None`, empty or `false` (the server's default
/// then applies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServeCommand {
    /// `--root`.
    pub root: Option<PathBuf>,
    /// `--listen`.
    pub listen: Option<String>,
    /// `--mechanism` (a mechanism or a model).
    pub mechanism: Option<String>,
    /// `--workers`.
    pub workers: Option<usize>,
    /// `--accept`.
    pub accept: Option<AcceptMode>,
    /// `--listener`.
    pub listener: Option<ListenerMode>,
    /// `--cpu`, as a comma-separated list.
    pub cpu: Vec<usize>,
    /// `--rlimit-sigpending`.
    pub rlimit_sigpending: Option<u64>,
    /// `--rlimit-nofile`.
    pub rlimit_nofile: Option<u64>,
    /// `--idle-timeout`.
    pub idle_timeout: Option<Duration>,
    /// `--header-timeout`.
    pub header_timeout: Option<Duration>,
    /// `--threads`.
    pub threads: Option<usize>,
    /// `--no-exclusive`.
    pub no_exclusive: bool,
    /// `--no-eager-read`.
    pub no_eager_read: bool,
    /// `--poller-opt`, one per tunable.
    pub poller_opt: Vec<String>,
    /// Further arguments, verbatim (a user's own, passed through).
    pub extra: Vec<OsString>,
    /// `--stats-json`.
    pub stats_json: Option<PathBuf>,
    /// `--access-log`.
    pub access_log: Option<PathBuf>,
    /// `--tls-cert`.
    pub tls_cert: Option<PathBuf>,
    /// `--tls-key`.
    pub tls_key: Option<PathBuf>,
}

impl ServeCommand {
    /// `--root ROOT --listen 127.0.0.1:0 --mechanism MECHANISM`: a server
    /// on an ephemeral loopback port (it prints the real one).
    pub fn loopback(root: impl Into<PathBuf>, mechanism: &str) -> ServeCommand {
        ServeCommand {
            root: Some(root.into()),
            listen: Some("127.0.0.1:0".into()),
            mechanism: Some(mechanism.into()),
            ..ServeCommand::default()
        }
    }

    /// The arguments, flags in a fixed order.
    pub fn args(&self) -> Vec<OsString> {
        fn text(v: Option<impl ToString>) -> Option<String> {
            v.map(|v| v.to_string())
        }
        fn name(v: Option<impl ValueEnum>) -> Option<String> {
            Some(v?.to_possible_value()?.get_name().into())
        }
        let secs = |d: Option<Duration>| d.map(|d| format!("{}s", d.as_secs_f64()));
        let cpus: Vec<String> = self.cpu.iter().map(usize::to_string).collect();
        let mut a: Vec<OsString> = Vec::new();
        if let Some(root) = &self.root {
            a.extend(["--root".into(), root.into()]);
        }
        for (flag, value) in [
            ("--listen", self.listen.clone()),
            ("--mechanism", self.mechanism.clone()),
            ("--workers", text(self.workers)),
            ("--accept", name(self.accept)),
            ("--listener", name(self.listener)),
            ("--cpu", (!cpus.is_empty()).then(|| cpus.join(","))),
            ("--rlimit-sigpending", text(self.rlimit_sigpending)),
            ("--rlimit-nofile", text(self.rlimit_nofile)),
            ("--idle-timeout", secs(self.idle_timeout)),
            ("--header-timeout", secs(self.header_timeout)),
            ("--threads", text(self.threads)),
        ] {
            a.extend(value.into_iter().flat_map(|v| [flag.into(), v.into()]));
        }
        for (flag, on) in [
            ("--no-exclusive", self.no_exclusive),
            ("--no-eager-read", self.no_eager_read),
        ] {
            a.extend(on.then(|| flag.into()));
        }
        for o in &self.poller_opt {
            a.extend(["--poller-opt".into(), o.into()]);
        }
        a.extend(self.extra.iter().cloned());
        for (flag, path) in [
            ("--stats-json", &self.stats_json),
            ("--access-log", &self.access_log),
            ("--tls-cert", &self.tls_cert),
            ("--tls-key", &self.tls_key),
        ] {
            a.extend(path.iter().flat_map(|p| [flag.into(), p.into()]));
        }
        a
    }
}

/// The arguments separated by spaces, as a shell would show them.
impl fmt::Display for ServeCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.args().join(OsStr::new(" ")).to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: crate::cli::ServeArgs,
    }

    #[test]
    fn every_argument_is_one_serve_accepts() {
        let cmd = ServeCommand {
            workers: Some(2),
            accept: Some(AcceptMode::One),
            listener: Some(ListenerMode::Shared),
            cpu: vec![0, 1],
            rlimit_sigpending: Some(64),
            rlimit_nofile: Some(4096),
            idle_timeout: Some(Duration::from_millis(1500)),
            header_timeout: Some(Duration::from_secs(60)),
            threads: Some(8),
            no_exclusive: true,
            no_eager_read: true,
            poller_opt: vec!["rtsig_batch=64".into()],
            extra: vec!["--backlog".into(), "128".into()],
            stats_json: Some("/tmp/stats.json".into()),
            tls_cert: Some("/etc/c.pem".into()),
            tls_key: Some("/etc/k.pem".into()),
            ..ServeCommand::loopback("/www", "poll")
        };
        let mut argv = vec![OsString::from("serve")];
        argv.extend(cmd.args());
        let mut parsed = Serve::try_parse_from(&argv)
            .unwrap_or_else(|e| panic!("`{cmd}` is not accepted by serve: {e}"))
            .args;
        assert_eq!(parsed.root, PathBuf::from("/www"));
        assert_eq!(parsed.mechanism, "poll");
        assert_eq!((parsed.workers, parsed.threads), (2, 8));
        assert_eq!(parsed.accept, AcceptMode::One);
        assert_eq!(parsed.listener, ListenerMode::Shared);
        assert_eq!(parsed.cpu.as_deref(), Some("0,1"));
        assert_eq!(parsed.idle_timeout, Duration::from_millis(1500));
        assert_eq!(parsed.header_timeout, Duration::from_secs(60));
        assert_eq!(
            (parsed.rlimit_sigpending, parsed.rlimit_nofile),
            (Some(64), Some(4096))
        );
        assert!(parsed.no_exclusive && parsed.no_eager_read);
        assert_eq!(parsed.poller_opt, ["rtsig_batch=64"]);
        assert_eq!(parsed.backlog, 128);
        assert_eq!(parsed.stats_json, Some(PathBuf::from("/tmp/stats.json")));
        assert_eq!(parsed.tls_cert, [PathBuf::from("/etc/c.pem")]);
        assert_eq!(parsed.tls_key, [PathBuf::from("/etc/k.pem")]);
        // And the server can be configured from them (but the files).
        (parsed.tls_cert, parsed.tls_key) = (Vec::new(), Vec::new());
        parsed.config().unwrap();
        assert!(cmd
            .to_string()
            .starts_with("--root /www --listen 127.0.0.1:0 --mechanism poll --workers 2"));
    }

    #[test]
    fn nothing_set_is_nothing_said() {
        assert!(ServeCommand::default().args().is_empty());
    }
}
