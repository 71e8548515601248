//! A typed `evdispatch serve` command line, for the programs that start the
//! server (the bench, the study, the torture suite, the harness): the flags
//! are [`ServeArgs`]'s, so a renamed flag breaks this crate's test rather
//! than a measurement.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use clap::ValueEnum;

#[cfg(doc)]
use crate::ServeArgs;
use crate::{AcceptMode, ListenerMode};

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
        let mut a: Vec<OsString> = Vec::new();
        let cpus: Vec<String> = self.cpu.iter().map(usize::to_string).collect();
        let text = |v: &dyn fmt::Display| Some(OsString::from(v.to_string()));
        for (flag, value) in [
            ("--root", self.root.clone().map(OsString::from)),
            ("--listen", self.listen.as_ref().and_then(|v| text(v))),
            ("--mechanism", self.mechanism.as_ref().and_then(|v| text(v))),
            ("--workers", self.workers.and_then(|v| text(&v))),
            ("--accept", self.accept.and_then(|v| text(&name(v)))),
            ("--listener", self.listener.and_then(|v| text(&name(v)))),
            ("--cpu", (!cpus.is_empty()).then(|| cpus.join(",").into())),
            (
                "--rlimit-sigpending",
                self.rlimit_sigpending.and_then(|v| text(&v)),
            ),
            ("--rlimit-nofile", self.rlimit_nofile.and_then(|v| text(&v))),
            (
                "--idle-timeout",
                self.idle_timeout.and_then(|d| text(&seconds(d))),
            ),
            (
                "--header-timeout",
                self.header_timeout.and_then(|d| text(&seconds(d))),
            ),
            ("--threads", self.threads.and_then(|v| text(&v))),
        ] {
            if let Some(v) = value {
                a.extend([flag.into(), v]);
            }
        }
        for (flag, on) in [
            ("--no-exclusive", self.no_exclusive),
            ("--no-eager-read", self.no_eager_read),
        ] {
            if on {
                a.push(flag.into());
            }
        }
        for o in &self.poller_opt {
            a.extend(["--poller-opt".into(), o.into()]);
        }
        a.extend(self.extra.iter().cloned());
        if let Some(p) = &self.stats_json {
            a.extend(["--stats-json".into(), p.into()]);
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

fn name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

/// `{seconds}s`.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Serve {
        #[command(flatten)]
        args: crate::ServeArgs,
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
            ..ServeCommand::loopback("/www", "poll")
        };
        let mut argv = vec![OsString::from("serve")];
        argv.extend(cmd.args());
        let parsed = Serve::try_parse_from(&argv)
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
        // And the server can be configured from them.
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
