//! The run's configuration: the command line checked and resolved into
//! [`Config`] ([`Config::from_args`], in `config/build.rs`, part by part:
//! target, request mix, workloads, window, headers, placement), every
//! problem found before any connection is made; the descriptor and port
//! budget; and the per-process share ([`WorkerSpec`]) each worker
//! receives.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

mod build;

pub use crate::args::{Arrival, InactiveSend, IoEngine};
pub use crate::proto::HttpVersion;
use crate::target::{self, WeightedUrl};
use crate::tls::TlsSettings;
use crate::wsesslog::{Session, SessionLog};

/// Connections of the default load (`evdispatch load URL` alone, or with
/// only `-R`), as wrk's default `-c 10`.
pub const DEFAULT_CONNECTIONS: u64 = 10;

/// Descriptors a worker keeps for itself (poller, pipes, stdio, files) on
/// top of its connections.
pub const FD_OVERHEAD: u64 = 64;

/// The offered request rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Open loop: arrivals per second.
    PerSecond(f64),
    /// Closed loop: each connection sends its next request as soon as the
    /// previous reply is in (saturation, like wrk).
    Max,
}

/// The whole configuration of a run, as reported in the JSON output
/// (`config`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Config {
    /// The URL as given, its credentials hidden ([`target::userinfo`]).
    pub url: String,
    /// The address connected to: the first of `addresses` that accepted
    /// the pre-flight connect (the first resolved before it).
    pub target: SocketAddr,
    /// Every address the URL's host resolved to, in the order tried.
    #[serde(default)]
    pub addresses: Vec<SocketAddr>,
    /// TLS of an `https://` URL (`null` for `http://`).
    #[serde(default)]
    pub tls: Option<TlsSettings>,
    /// Request method (`--method`).
    #[serde(default = "default_method")]
    pub method: String,
    /// `--body`: the file sent as every request's body (`-`: standard input).
    #[serde(default)]
    pub body_file: Option<String>,
    /// Length of that body, bytes.
    #[serde(default)]
    pub body_bytes: Option<u64>,
    /// The body itself (travels to worker processes in [`WorkerSpec`]).
    #[serde(skip)]
    pub body: Option<Arc<Vec<u8>>>,
    /// `--urls`: paths requested, picked by weight (empty: `path` only).
    #[serde(default)]
    pub urls: Vec<WeightedUrl>,
    /// `--wsesslog`: httperf's session log (the sessions workload plays it).
    #[serde(default)]
    pub wsesslog: Option<SessionLog>,
    /// `Host` header value.
    pub host: String,
    /// Path and query requested.
    pub path: String,
    /// Offered rate of each active workload (sessions and persistent).
    pub rate: Option<Rate>,
    /// Arrival process.
    pub arrival: Arrival,
    /// Measured window, seconds (with `run_to_end`: the one measured; the
    /// workers get the sessions' planned arrival span, 0 in closed loop).
    pub duration_s: f64,
    /// `--sessions N` (or `--wsesslog`) without `--duration`: the window
    /// lasts until the last session ends, every call measured (httperf's
    /// test-duration).
    #[serde(default)]
    pub run_to_end: bool,
    /// Unmeasured run time before the window, seconds.
    pub warmup_s: f64,
    /// Per-request and per-connect timeout, seconds.
    pub timeout_s: f64,
    /// Sessions workload: total sessions to start (0 = as many as the rate
    /// gives over the run); `None` when the workload is off.
    pub sessions: Option<u64>,
    /// Requests per session, one after the other on its connection.
    pub calls: u32,
    /// Persistent connections sharing the rate (open loop), or sending
    /// back to back (`--rate max`).
    pub persistent: u64,
    /// Inactive connections (connect, never complete a request; reopened
    /// when the server closes them).
    pub inactive: u64,
    /// What inactive connections send.
    pub inactive_send: InactiveSend,
    /// Idle persistent connections (one request, then silence; reopened
    /// when the server closes them).
    pub idle: u64,
    /// Slow clients (send the request a few bytes at a time, then start over).
    pub slow: u64,
    /// Bytes a slow client sends per step.
    pub slow_bytes: usize,
    /// Time between a slow client's steps, seconds.
    pub slow_interval_s: f64,
    /// Time over which the slow clients' first connects are spread, seconds
    /// (0: at once).
    #[serde(default)]
    pub slow_ramp_s: f64,
    /// Worker processes.
    pub procs: u32,
    /// Server processes whose CPU is sampled over the measured window.
    pub server_pids: Vec<u32>,
    /// CPUs the workers are pinned to (worker i on `cpus[i % len]`).
    pub cpus: Vec<usize>,
    /// Extra request headers.
    pub headers: Vec<(String, String)>,
    /// Source addresses used (empty: the kernel picks, 127.0.0.1 on loopback).
    pub source_addrs: Vec<IpAddr>,
    /// Readiness mechanism of the workers.
    pub mechanism: String,
    /// How the workers do the I/O of their keep-alive connections.
    #[serde(default)]
    pub engine: IoEngine,
    /// The HTTP version spoken (`auto` only before the pre-flight check,
    /// which resolves it by ALPN).
    #[serde(default)]
    pub http: HttpVersion,
    /// HTTP/2: concurrent streams per connection asked for (`-m`; the
    /// server's SETTINGS_MAX_CONCURRENT_STREAMS caps it).
    #[serde(default = "one")]
    pub max_streams: u32,
    /// HTTP/2: each stream's receive window, 2^N-1 bytes (`-w`).
    #[serde(default = "thirty")]
    pub window_bits: u8,
    /// HTTP/2: the connection's receive window, 2^N-1 bytes (`-W`).
    #[serde(default = "thirty")]
    pub connection_window_bits: u8,
    /// Length of one reply-rate sample, seconds.
    pub interval_s: f64,
    /// A request sent later than its slot by more than this counts as a
    /// missed slot, milliseconds.
    pub slot_tolerance_ms: f64,
    /// Seed of the Poisson arrivals (worker i uses seed + i).
    pub seed: u64,
    /// Connection attempts in flight at once per worker while the
    /// long-lived connections are being opened.
    pub connect_burst: u64,
}

fn default_method() -> String {
    "GET".into()
}

fn one() -> u32 {
    1
}

fn thirty() -> u8 {
    30
}

impl Config {
    /// The HTTP/2 windows asked for (`-w`, `-W`).
    pub fn h2_settings(&self) -> crate::proto::http2::Settings {
        crate::proto::http2::Settings {
            stream_window: (1u32 << self.window_bits) - 1,
            connection_window: (1u32 << self.connection_window_bits) - 1,
            slow_read: false,
        }
    }
}

/// What a worker process needs that the JSON `config` leaves out: the
/// request body (base64) and the session log's sessions.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Payload {
    /// `--body`, base64.
    pub body_base64: Option<String>,
    /// `--wsesslog`'s sessions.
    pub sessions: Vec<Session>,
}

/// One worker's share of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerSpec {
    /// Body and session log, restored into `config` by [`WorkerSpec::restore`].
    #[serde(default)]
    pub payload: Payload,
    /// Index of this worker, 0-based.
    pub index: u32,
    /// The whole run's configuration.
    pub config: Config,
    /// `Max` for closed loop, else the run's rate.
    pub rate: Option<Rate>,
    /// This worker's session arrivals per second (open loop).
    pub session_rate: f64,
    /// This worker's persistent-connection requests per second (open loop):
    /// the run's rate in proportion to its share of the connections.
    pub persistent_rate: f64,
    /// Offset of this worker's first uniform arrival, seconds.
    pub phase_s: f64,
    /// This worker's share of the sessions (`Some(0)`: unlimited).
    pub sessions: Option<u64>,
    /// This worker's persistent connections.
    pub persistent: u64,
    /// This worker's inactive connections.
    pub inactive: u64,
    /// This worker's idle connections.
    pub idle: u64,
    /// This worker's slow clients.
    pub slow: u64,
    /// CPU to pin to.
    pub cpu: Option<usize>,
}

/// `persistent` (`--connections`) as persistent connections and as the
/// closed-loop sessions open at once: with `--rate max --sessions`, all are
/// sessions (at least one).
pub fn split_persistent(rate: Option<Rate>, sessions: Option<u64>, persistent: u64) -> (u64, u64) {
    match (rate, sessions) {
        (Some(Rate::Max), Some(_)) => (0, persistent.max(1)),
        _ => (persistent, 0),
    }
}

fn share(total: u64, procs: u32, i: u32) -> u64 {
    let p = procs as u64;
    total / p + u64::from((i as u64) < total % p)
}

/// The first port and count of the ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`).
pub fn ephemeral_ports() -> u64 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| {
            let mut it = s.split_whitespace().map(|x| x.parse::<u64>().ok());
            let lo = it.next()??;
            let hi = it.next()??;
            Some(hi.saturating_sub(lo) + 1)
        })
        .unwrap_or(28232)
}

/// The `k`-th source address: 127.0.0.1, 127.0.1.1, 127.0.2.1, … spread over
/// 127.0.0.0/8.
pub fn source_addr(k: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, (k >> 8) as u8, k as u8, 1))
}

impl Config {
    /// Connections held for the whole run (persistent, closed loop,
    /// inactive, idle, slow), plus the sessions open at once in closed loop.
    pub fn long_lived(&self) -> u64 {
        let (persistent, closed_sessions) =
            split_persistent(self.rate, self.sessions, self.persistent);
        persistent + self.inactive + self.idle + self.slow + closed_sessions
    }

    /// The descriptor and port budget: fail before the run, saying how many
    /// processes and source addresses the workload needs.
    pub fn check_capacity(&self) -> anyhow::Result<()> {
        // Raising the soft `RLIMIT_NOFILE` to the hard one returns the hard one.
        let hard =
            evdispatch_host::set_rlimit(evdispatch_host::Resource::Nofile, None).unwrap_or(1024);
        let per_proc = hard.saturating_sub(FD_OVERHEAD).max(1);
        let conns = self.long_lived();
        let busiest = conns.div_ceil(self.procs as u64);
        if busiest > per_proc {
            let need = conns.div_ceil(per_proc);
            bail!(
                "this workload holds {conns} connections at once; with {} descriptors per process \
                 (hard limit {hard}, {FD_OVERHEAD} kept for the worker) that needs --procs {need} \
                 or more ({} given)",
                per_proc,
                self.procs
            );
        }
        let ports = ephemeral_ports();
        let per_addr = ports.saturating_sub(ports / 20).max(1); // keep 5% for TIME_WAIT and others
        let addrs = self.source_addrs.len().max(1) as u64;
        if conns.div_ceil(addrs) > per_addr {
            let need = conns.div_ceil(per_addr);
            bail!(
                "this workload holds {conns} connections to {} at once; one source address gives \
                 at most {per_addr} of the {ports} ephemeral ports (net.ipv4.ip_local_port_range): \
                 use --source-addrs {need} or more ({addrs} given)",
                self.target
            );
        }
        Ok(())
    }

    /// The pre-flight check: connect to each resolved address in turn (with
    /// the run's timeout, at most 5 s) and, for https, complete one TLS
    /// handshake; the run uses the first address that accepts. An
    /// unreachable server or a TLS failure is one clear error before the
    /// run, not a run of errors.
    pub fn preflight(&self) -> anyhow::Result<Config> {
        let t = Duration::from_secs_f64(self.timeout_s.min(5.0));
        let addresses = if self.addresses.is_empty() {
            vec![self.target]
        } else {
            self.addresses.clone()
        };
        let (target, alpn) =
            target::first_reachable(&addresses, self.tls.as_ref(), self.http, &self.url, t)?;
        let http = match (self.http, alpn.as_deref()) {
            (HttpVersion::Http1, _) => HttpVersion::Http1,
            (HttpVersion::Http2, Some(b"h2")) => HttpVersion::Http2,
            // h2c by prior knowledge.
            (HttpVersion::Http2, _) if self.tls.is_none() => HttpVersion::Http2,
            (HttpVersion::Http2, other) => bail!(
                "--http2: {} does not offer HTTP/2 (ALPN h2) over TLS: it chose {}; use \
                 --http1.1 (or --http auto to take what it offers)",
                self.url,
                match other {
                    Some(p) => format!("'{}'", String::from_utf8_lossy(p)),
                    None => "no protocol".into(),
                }
            ),
            (_, Some(b"h2")) => HttpVersion::Http2,
            _ => HttpVersion::Http1,
        };
        if http == HttpVersion::Http2 && self.tls.is_none() {
            target::check_h2c(target, &self.url, t)?;
        }
        Ok(Config {
            target,
            addresses,
            http,
            ..self.clone()
        })
    }

    /// The share of worker `index`.
    pub fn worker_spec(&self, index: u32) -> WorkerSpec {
        let p = self.procs;
        let persistent = share(self.persistent, p, index);
        let (session_rate, persistent_rate, phase_s) = match self.rate {
            Some(Rate::PerSecond(v)) => (
                v / p as f64,
                v * persistent as f64 / self.persistent.max(1) as f64,
                index as f64 / v,
            ),
            _ => (0.0, 0.0, 0.0),
        };
        WorkerSpec {
            payload: Payload {
                body_base64: self
                    .body
                    .as_ref()
                    .map(|b| base64::engine::general_purpose::STANDARD.encode(b.as_slice())),
                sessions: self
                    .wsesslog
                    .as_ref()
                    .map(|l| l.log.clone())
                    .unwrap_or_default(),
            },
            index,
            config: self.clone(),
            rate: self.rate,
            session_rate,
            persistent_rate,
            phase_s,
            sessions: self
                .sessions
                .map(|n| if n == 0 { 0 } else { share(n, p, index) }),
            persistent,
            inactive: share(self.inactive, p, index),
            idle: share(self.idle, p, index),
            slow: share(self.slow, p, index),
            cpu: (!self.cpus.is_empty()).then(|| self.cpus[index as usize % self.cpus.len()]),
        }
    }
}

impl WorkerSpec {
    /// Put the payload back into `config` (in a worker process, after the
    /// spec crossed the pipe as JSON).
    pub fn restore(&mut self) -> anyhow::Result<()> {
        let p = std::mem::take(&mut self.payload);
        if let Some(b) = p.body_base64 {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(b)
                .map_err(|e| anyhow!("a worker's request body is not valid base64: {e}"))?;
            self.config.body = Some(Arc::new(bytes));
        }
        if let Some(log) = &mut self.config.wsesslog {
            log.log = p.sessions;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::build::CommandLine;
    use super::*;
    use crate::args::parse_count;

    fn cfg(args: &str) -> anyhow::Result<Config> {
        Config::from_command_line(args.split_whitespace())
    }

    #[test]
    fn shares_add_up() {
        for total in [0u64, 1, 7, 30000] {
            for p in 1..5 {
                assert_eq!((0..p).map(|i| share(total, p, i)).sum::<u64>(), total);
            }
        }
    }

    #[test]
    fn url_credentials_are_sent_but_never_shown() {
        let c = cfg("http://u:secret@127.0.0.1:1/x").unwrap();
        assert_eq!(c.url, "http://u:***@127.0.0.1:1/x");
        assert_eq!(c.path, "/x");
        let auth = (
            "Authorization".to_string(),
            "Basic dTpzZWNyZXQ=".to_string(),
        );
        assert_eq!(c.headers, [auth]);
        // The user's own header wins; a value of one token (a raw key) is
        // sent as given (the summary hides it: its tests).
        let c = cfg("http://u:secret@127.0.0.1:1/ -H Authorization:Bearer_t").unwrap();
        assert_eq!(c.headers, [("Authorization".into(), "Bearer_t".into())]);
        let e = cfg("http://u:secret@127.0.0.1:1/ --insecure").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
        // A token given as the user (no password) is sent, and hidden too.
        let c = cfg("http://sk_live_T0k3n@127.0.0.1:1/x").unwrap();
        assert_eq!(c.url, "http://***@127.0.0.1:1/x");
        let auth = ("Authorization".into(), "Basic c2tfbGl2ZV9UMGszbjo=".into());
        assert_eq!(c.headers, [auth]);
        let e = cfg("http://sk_live_T0k3n@127.0.0.1:1/ --insecure").unwrap_err();
        assert!(!e.to_string().contains("T0k3n"), "{e}");
    }

    #[test]
    fn bad_input_is_refused_with_a_reason() {
        let e = |a: &str| cfg(a).unwrap_err().to_string();
        assert!(e("not-a-url --idle 1").contains("malformed URL"));
        assert!(e("ftp://127.0.0.1/ --idle 1").contains("only http:// and https://"));
        assert!(e("http://127.0.0.1/ --idle 1 --insecure").contains("for https://"));
        assert!(e("http://127.0.0.1/ --idle 1 --method A/B").contains("--method"));
        assert!(e("http://127.0.0.1/ --idle 1 --body /nonexistent/b").contains("cannot read"));
        assert!(e("http://127.0.0.1:1/ --sessions 5").contains("need --rate"));
        assert!(e("http://127.0.0.1:1/ --persistent 2 -c 3 --rate 10").contains("not both"));
        assert!(e("http://127.0.0.1:1/ --source-addr ::1 --idle 1").contains("family"));
        assert!(e("http://127.0.0.1:1/ --rate x --sessions 1").contains("--rate 'x'"));
        assert!(e("http://127.0.0.1:1/ --idle 1 --header bad").contains("NAME:VALUE"));
        let fd = e("http://127.0.0.1:1/ --inactive 30000");
        assert!(fd.contains("--procs 2"), "{fd}");
        let ports = e("http://127.0.0.1:1/ --inactive 30000 --procs 2");
        assert!(ports.contains("--source-addrs 2"), "{ports}");
        assert!(cfg("http://127.0.0.1:1/ --inactive 30000 --procs 2 --source-addrs 2").is_ok());
    }

    #[test]
    fn a_transfer_encoding_over_a_body_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let body = dir.path().join("b");
        std::fs::write(&body, b"hello").unwrap();
        let log = dir.path().join("s.log");
        std::fs::write(&log, "/a method=POST contents=hi\n").unwrap();
        let url = "http://127.0.0.1:1/ --rate 1";
        for args in [
            format!("{url} --sessions 1 --method POST --body {}", body.display()),
            format!("{url} --wsesslog 1,0,{}", log.display()),
        ] {
            for te in [
                "Transfer-Encoding:chunked",
                "transfer-encoding:gzip,chunked",
            ] {
                let e = cfg(&format!("{args} -H {te}")).unwrap_err().to_string();
                assert!(e.contains("Transfer-Encoding with a request body"), "{e}");
            }
            assert!(cfg(&args).is_ok(), "{args}");
        }
        // Without a body, the user's framing is the user's.
        assert!(cfg(&format!("{url} --sessions 1 -H Transfer-Encoding:chunked")).is_ok());
    }

    #[test]
    fn sessions_set_the_duration_and_rates_split() {
        let c = cfg("http://localhost:8080/x?y=1 --rate 100 --sessions 250 --procs 2").unwrap();
        assert_eq!(c.duration_s, 2.5);
        assert_eq!(c.path, "/x?y=1");
        assert_eq!(c.host, "localhost:8080");
        let w = c.worker_spec(1);
        assert_eq!(w.session_rate, 50.0);
        assert_eq!(w.sessions, Some(125));
        assert_eq!(w.phase_s, 0.01);
    }

    #[test]
    fn any_host_ipv6_and_https() {
        let c = cfg("https://[::1]:8443/a?b --idle 1 --insecure").unwrap();
        assert_eq!(c.target, "[::1]:8443".parse().unwrap());
        assert_eq!((c.host.as_str(), c.path.as_str()), ("[::1]:8443", "/a?b"));
        let tls = c.tls.unwrap();
        assert_eq!((tls.server_name.as_str(), tls.insecure), ("::1", true));
        let c = cfg("http://localhost:1/ --idle 1").unwrap();
        assert!(!c.addresses.is_empty() && c.addresses.iter().all(|a| a.ip().is_loopback()));
        assert!(c.tls.is_none());
        // Not loopback: accepted now (nothing is sent by the configuration).
        assert_eq!(cfg("http://192.0.2.1/ --idle 1").unwrap().target.port(), 80);
        let e = cfg("http://192.0.2.1/ --idle 1 --source-addrs 2").unwrap_err();
        assert!(e.to_string().contains("loopback target"), "{e}");
        let c = cfg("http://localhost:1/ --idle 1 --source-addrs 2").unwrap();
        assert_eq!(c.target, "127.0.0.1:1".parse().unwrap());
    }

    #[test]
    fn the_payload_crosses_to_workers() {
        let dir = tempfile::tempdir().unwrap();
        let body = dir.path().join("b");
        std::fs::write(&body, b"\x00\x01hello").unwrap();
        let c = cfg(&format!(
            "http://127.0.0.1:1/ --rate 1 --sessions 1 --method PUT --body {}",
            body.display()
        ))
        .unwrap();
        assert_eq!(c.body_bytes, Some(7));
        let text = serde_json::to_string(&c.worker_spec(0)).unwrap();
        let mut w: WorkerSpec = serde_json::from_str(&text).unwrap();
        assert!(w.config.body.is_none());
        w.restore().unwrap();
        assert_eq!(
            w.config.body.as_deref().map(|b| b.as_slice()),
            Some(&b"\x00\x01hello"[..])
        );
        assert_eq!(w.config.method, "PUT");
    }

    #[test]
    fn closed_loop_sessions() {
        let c = cfg("http://127.0.0.1:1/ --rate max --connections 4 --sessions 0").unwrap();
        assert_eq!((c.persistent, c.long_lived()), (4, 4));
        assert!(cfg("http://127.0.0.1:1/ --rate max --persistent 4 --sessions 0").is_err());
    }

    #[test]
    fn the_flags_do_not_clash() {
        // clap checks names, short flags and subcommands only in debug
        // builds: ask it here, whatever the profile.
        use clap::{CommandFactory, Parser};
        CommandLine::command().debug_assert();
        let merge = CommandLine::try_parse_from(["merge", "a.json", "b.json", "--json"]).unwrap();
        assert!(matches!(
            merge.args.command,
            Some(crate::args::LoadSubcommand::Merge(_))
        ));
    }

    #[test]
    fn a_url_alone_runs_the_default_load_and_wrk_flags_map() {
        // wrk: closed loop over 10 connections for 10 s.
        let c = cfg("http://127.0.0.1:1/").unwrap();
        assert_eq!(
            (c.rate, c.persistent, c.duration_s),
            (Some(Rate::Max), 10, 10.0)
        );
        let c = cfg("http://127.0.0.1:1/ -c 50 -d 1m -t 2 -H X-A:1").unwrap();
        assert_eq!(
            (c.rate, c.persistent, c.duration_s, c.procs),
            (Some(Rate::Max), 50, 60.0, 2)
        );
        assert_eq!(c.headers, [("X-A".to_string(), "1".to_string())]);
        // wrk2: -R spreads the rate over the -c connections (10 by default).
        let c = cfg("http://127.0.0.1:1/ -R 1000 -c 4").unwrap();
        assert_eq!((c.rate, c.persistent), (Some(Rate::PerSecond(1000.0)), 4));
        let c = cfg("http://127.0.0.1:1/ -R 1000").unwrap();
        assert_eq!(c.persistent, 10);
        // Another workload given: no default connections are added.
        let c = cfg("http://127.0.0.1:1/ --idle 3").unwrap();
        assert_eq!((c.rate, c.persistent, c.idle), (None, 0, 3));
    }

    #[test]
    fn wrk_si_suffixes_threads_and_at_least_a_connection_per_thread() {
        let c = cfg("http://127.0.0.1:1/ -c 1k -R 2k --threads 2").unwrap();
        assert_eq!((c.persistent, c.procs), (1000, 2));
        assert_eq!(c.rate, Some(Rate::PerSecond(2000.0)));
        let c = cfg("http://127.0.0.1:1/ --sessions 1M -R 1.5k --idle 2K").unwrap();
        assert_eq!(
            (c.sessions, c.rate, c.idle),
            (Some(1_000_000), Some(Rate::PerSecond(1500.0)), 2000)
        );
        assert_eq!(parse_count("3g"), Ok(3_000_000_000));
        assert!(parse_count("1x").is_err() && parse_count("k").is_err());
        let e = cfg("http://127.0.0.1:1/ -t 4 -c 2")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("number of connections must be >= threads"),
            "{e}"
        );
        assert!(cfg("http://127.0.0.1:1/ -t 2 -c 2").is_ok());
    }

    #[test]
    fn persistent_rate_follows_the_connections() {
        let c = cfg("http://127.0.0.1:1/ --persistent 3 --rate 300 --procs 2").unwrap();
        let (a, b) = (c.worker_spec(0), c.worker_spec(1));
        assert_eq!((a.persistent, b.persistent), (2, 1));
        assert_eq!((a.persistent_rate, b.persistent_rate), (200.0, 100.0));
        let c = cfg("http://127.0.0.1:1/ --persistent 1 --rate 300 --procs 2").unwrap();
        assert_eq!(c.worker_spec(1).persistent_rate, 0.0);
        assert_eq!(c.worker_spec(0).persistent_rate, 300.0);
    }

    #[test]
    fn source_addresses_are_loopback_and_distinct() {
        let a: Vec<IpAddr> = (0..600).map(source_addr).collect();
        assert_eq!(a[0], "127.0.0.1".parse::<IpAddr>().unwrap());
        assert!(a.iter().all(|x| x.is_loopback()));
        let set: std::collections::HashSet<_> = a.iter().collect();
        assert_eq!(set.len(), a.len());
    }
}
