//! A typed `evdispatch load` command line for programs that run the generator:
//! the flags are [`LoadArgs`](crate::args::LoadArgs)'s, checked by this file's test.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::time::Duration;

use clap::ValueEnum;

use crate::args::IoEngine;
use crate::config::Rate;
use crate::proto::HttpVersion;

/// The arguments after `evdispatch load`: the URL, then each field as the
/// flag of the same name, left out when `None`, empty or `false` (the
/// generator's default then applies).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadCommand {
    /// The URL to load.
    pub url: String,
    /// `--rate` (`R` or `max`).
    pub rate: Option<Rate>,
    /// `--duration`.
    pub duration: Option<Duration>,
    /// `--warmup`.
    pub warmup: Option<Duration>,
    /// `--interval`.
    pub interval: Option<Duration>,
    /// `--timeout`.
    pub timeout: Option<Duration>,
    /// `--sessions`.
    pub sessions: Option<u64>,
    /// `--calls`.
    pub calls: Option<u32>,
    /// `--connections`.
    pub connections: Option<u64>,
    /// `--persistent`.
    pub persistent: Option<u64>,
    /// `--inactive`.
    pub inactive: Option<u64>,
    /// `--idle`.
    pub idle: Option<u64>,
    /// `--slow`.
    pub slow: Option<u64>,
    /// `--slow-bytes`.
    pub slow_bytes: Option<usize>,
    /// `--slow-interval`.
    pub slow_interval: Option<Duration>,
    /// `--slow-ramp`.
    pub slow_ramp: Option<Duration>,
    /// `--procs`.
    pub procs: Option<u32>,
    /// `--source-addrs`.
    pub source_addrs: Option<u32>,
    /// `--background`.
    pub background: bool,
    /// `--cpu`, as a comma-separated list.
    pub cpu: Vec<usize>,
    /// `--server-pid`, as a comma-separated list.
    pub server_pid: Vec<u32>,
    /// `--json`.
    pub json: bool,
    /// `--no-tls-resume`: every connection makes a full TLS handshake.
    pub no_tls_resume: bool,
    /// `--cacert`: the PEM roots an `https://` target is verified against.
    pub cacert: Option<std::path::PathBuf>,
    /// `--engine`.
    pub engine: Option<IoEngine>,
    /// `--http` (`1.1`, `2`, `auto`).
    pub http: Option<HttpVersion>,
    /// `--max-streams` (HTTP/2 streams per connection).
    pub max_streams: Option<u32>,
}

impl LoadCommand {
    /// Load `url`, every other setting the generator's default.
    pub fn new(url: impl Into<String>) -> LoadCommand {
        LoadCommand {
            url: url.into(),
            ..LoadCommand::default()
        }
    }

    /// The arguments, the URL first and the flags in a fixed order.
    pub fn args(&self) -> Vec<OsString> {
        fn text(v: Option<impl ToString>) -> Option<String> {
            v.map(|v| v.to_string())
        }
        fn list(v: &[impl ToString]) -> Option<String> {
            let v: Vec<String> = v.iter().map(ToString::to_string).collect();
            (!v.is_empty()).then(|| v.join(","))
        }
        let secs = |d: Option<Duration>| d.map(|d| format!("{}s", d.as_secs_f64()));
        let rate = self.rate.map(|r| match r {
            Rate::PerSecond(r) => r.to_string(),
            Rate::Max => "max".into(),
        });
        let engine = self.engine.and_then(|e| e.to_possible_value());
        let http = self.http.and_then(|v| v.to_possible_value());
        let mut a: Vec<OsString> = vec![self.url.clone().into()];
        for (flag, value) in [
            ("--rate", rate),
            ("--duration", secs(self.duration)),
            ("--warmup", secs(self.warmup)),
            ("--interval", secs(self.interval)),
            ("--timeout", secs(self.timeout)),
            ("--sessions", text(self.sessions)),
            ("--calls", text(self.calls)),
            ("--connections", text(self.connections)),
            ("--persistent", text(self.persistent)),
            ("--inactive", text(self.inactive)),
            ("--idle", text(self.idle)),
            ("--slow", text(self.slow)),
            ("--slow-bytes", text(self.slow_bytes)),
            ("--slow-interval", secs(self.slow_interval)),
            ("--slow-ramp", secs(self.slow_ramp)),
            ("--procs", text(self.procs)),
            ("--source-addrs", text(self.source_addrs)),
            ("--cpu", list(&self.cpu)),
            ("--server-pid", list(&self.server_pid)),
            (
                "--cacert",
                self.cacert.as_ref().map(|p| p.display().to_string()),
            ),
            ("--engine", engine.map(|v| v.get_name().to_string())),
            ("--http", http.map(|v| v.get_name().to_string())),
            ("--max-streams", text(self.max_streams)),
        ] {
            a.extend(value.into_iter().flat_map(|v| [flag.into(), v.into()]));
        }
        for (flag, on) in [
            ("--background", self.background),
            ("--json", self.json),
            ("--no-tls-resume", self.no_tls_resume),
        ] {
            a.extend(on.then(|| flag.into()));
        }
        a
    }
}

/// The arguments separated by spaces, as a shell would show them.
impl fmt::Display for LoadCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.args().join(OsStr::new(" ")).to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Load {
        #[command(flatten)]
        args: crate::args::LoadArgs,
    }

    fn parse(cmd: &LoadCommand) -> crate::config::Config {
        let mut argv = vec![OsString::from("load")];
        argv.extend(cmd.args());
        let args = Load::try_parse_from(&argv)
            .unwrap_or_else(|e| panic!("`{cmd}` is not accepted by load: {e}"))
            .args;
        crate::config::Config::from_args(&args)
            .unwrap_or_else(|e| panic!("`{cmd}` is not a load configuration: {e:#}"))
    }

    #[test]
    fn every_argument_is_one_load_accepts() {
        let open = LoadCommand {
            rate: Some(Rate::PerSecond(2500.0)),
            duration: Some(Duration::from_millis(1500)),
            warmup: Some(Duration::from_millis(500)),
            interval: Some(Duration::from_millis(250)),
            timeout: Some(Duration::from_secs(5)),
            sessions: Some(0),
            calls: Some(2),
            persistent: Some(10),
            inactive: Some(3),
            idle: Some(4),
            slow: Some(5),
            slow_bytes: Some(2),
            slow_interval: Some(Duration::from_millis(200)),
            slow_ramp: Some(Duration::from_secs(1)),
            procs: Some(2),
            source_addrs: Some(4),
            background: true,
            cpu: vec![1],
            server_pid: vec![42, 43],
            json: true,
            engine: Some(IoEngine::Readiness),
            ..LoadCommand::new("http://127.0.0.1:9/six.txt")
        };
        let c = parse(&open);
        assert_eq!(c.engine, IoEngine::Readiness);
        assert_eq!(c.rate, Some(Rate::PerSecond(2500.0)));
        assert_eq!((c.duration_s, c.warmup_s), (1.5, 0.5));
        let text = open.to_string();
        assert!(
            text.starts_with("http://127.0.0.1:9/six.txt --rate 2500 --duration 1.5s"),
            "{text}"
        );
        for want in ["--server-pid 42,43", "--cpu 1", "--calls 2", "--background"] {
            assert!(text.contains(want), "{want} missing from {text}");
        }
        let closed = LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(50),
            ..LoadCommand::new("http://127.0.0.1:9/")
        };
        assert_eq!(parse(&closed).rate, Some(Rate::Max));
        assert_eq!(
            closed.to_string(),
            "http://127.0.0.1:9/ --rate max --connections 50"
        );
        let h2 = LoadCommand {
            http: Some(HttpVersion::Http2),
            max_streams: Some(8),
            ..closed
        };
        let c = parse(&h2);
        assert_eq!((c.http, c.max_streams), (HttpVersion::Http2, 8));
        assert!(h2.to_string().ends_with("--http 2 --max-streams 8"), "{h2}");
        let https = LoadCommand::new("https://127.0.0.1:9/");
        assert!(parse(&https).tls.unwrap().resume);
        let full = LoadCommand {
            no_tls_resume: true,
            ..https
        };
        assert!(full.to_string().ends_with(" --no-tls-resume"), "{full}");
        assert!(!parse(&full).tls.unwrap().resume);
    }
}
