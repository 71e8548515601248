//! The run's configuration: the command line checked and resolved into
//! [`Config`], every problem found before any connection is made, and the
//! per-process share ([`WorkerSpec`]) each worker receives.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::target::{self, WeightedUrl};
use crate::tls::TlsSettings;
use crate::wsesslog::{Session, SessionLog};
use crate::LoadArgs;

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

/// How arrivals are spaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Evenly spaced, 1/rate apart.
    Uniform,
    /// Exponential gaps with mean 1/rate (a Poisson process).
    Poisson,
}

/// What an inactive connection sends before going silent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum InactiveSend {
    /// Nothing at all: connect and wait.
    None,
    /// The request line and headers without the final blank line, so the
    /// server holds a request it can never complete.
    Partial,
}

/// How a worker does the I/O of its keep-alive connections (`--engine`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum IoEngine {
    /// `uring` where the kernel allows io_uring and the mechanism has a
    /// descriptor, `readiness` otherwise.
    #[default]
    Auto,
    /// Plain-HTTP closed-loop and persistent connections send and receive
    /// through io_uring (one `io_uring_enter` per turn of the loop);
    /// everything else stays on the readiness mechanism.
    Uring,
    /// Every connection on the readiness mechanism (`write`/`read` after
    /// each event).
    Readiness,
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

/// A number and its multiplier from wrk's SI suffix (its units.c: `k`, `M`,
/// `G`, 1000-based for counts, in either case).
fn si(text: &str) -> (&str, u64) {
    let t = text.trim();
    match t.as_bytes().last().map(u8::to_ascii_lowercase) {
        Some(b'k') => (&t[..t.len() - 1], 1_000),
        Some(b'm') => (&t[..t.len() - 1], 1_000_000),
        Some(b'g') => (&t[..t.len() - 1], 1_000_000_000),
        _ => (t, 1),
    }
}

/// A count of connections or sessions, with wrk's SI suffixes: `1k` is
/// 1000 (clap's parser of those flags).
pub fn parse_count(text: &str) -> Result<u64, String> {
    let (n, scale) = si(text);
    n.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("'{text}' is not a count (e.g. 100, 1k, 2M)"))
}

fn share(total: u64, procs: u32, i: u32) -> u64 {
    let p = procs as u64;
    total / p + u64::from((i as u64) < total % p)
}

fn parse_secs(what: &str, text: &str) -> anyhow::Result<f64> {
    evdispatch_host::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| anyhow!("{what}: {e}"))
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

#[derive(clap::Parser)]
#[command(name = "evdispatch load", no_binary_name = true)]
struct CommandLine {
    #[command(flatten)]
    args: LoadArgs,
}

impl Config {
    /// Build a configuration from `evdispatch load`'s arguments (without
    /// the program and subcommand names), for programs and tests that run
    /// the generator in-process: `Config::from_command_line(["http://127.0.0.1:8080/", "--rate", "100", "--sessions", "300"])`.
    pub fn from_command_line<I, S>(args: I) -> anyhow::Result<Config>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        let cl = CommandLine::try_parse_from(args).map_err(|e| anyhow!("{e}"))?;
        Config::from_args(&cl.args)
    }

    /// Check and resolve the command line. Everything that can be known
    /// before the run is checked here; reachability is checked by
    /// [`Config::preflight`] (which also picks the address).
    pub fn from_args(a: &LoadArgs) -> anyhow::Result<Config> {
        let given = a
            .url
            .as_deref()
            .ok_or_else(|| anyhow!("give the URL to load, e.g. http://127.0.0.1:8080/"))?;
        let (url_text, authorization) = target::userinfo(given);
        let mut url = url::Url::parse(given).map_err(|e| {
            anyhow!(
                "malformed URL '{url_text}': {e} (expected e.g. http://127.0.0.1:8080/index.html)"
            )
        })?;
        // Shown in errors as in the summary.
        if url.password().is_some() {
            let _ = url.set_password(Some("***"));
        } else if !url.username().is_empty() {
            let _ = url.set_username("***");
        }
        let mut resolved = target::resolve(&url_text, &url, &a.net)?;
        if a.source_addrs > 1 {
            // Sources in 127.0.0.0/8 reach only IPv4 loopback addresses.
            let all = std::mem::take(&mut resolved.addresses);
            resolved.addresses = all
                .iter()
                .copied()
                .filter(|t| t.is_ipv4() && t.ip().is_loopback())
                .collect();
            if resolved.addresses.is_empty() {
                bail!(
                    "--source-addrs spreads the connections over 127.0.0.0/8: it needs an IPv4 \
                     loopback target ({} resolved to {all:?})",
                    url.host_str().unwrap_or("")
                );
            }
        }
        let target = resolved.addresses[0];
        target::check_method(&a.net.method)?;
        let wsesslog = a
            .net
            .wsesslog
            .as_deref()
            .map(SessionLog::from_option)
            .transpose()?;
        let urls = match &a.net.urls {
            Some(f) => target::read_urls(f, &url)?,
            None => Vec::new(),
        };
        let body = a
            .net
            .body
            .as_deref()
            .map(target::read_body)
            .transpose()?
            .map(Arc::new);
        let mut sessions = a.sessions;
        if let Some(log) = &wsesslog {
            if a.sessions.is_some() {
                bail!("--wsesslog N,X,FILE gives the number of sessions (N): leave out --sessions");
            }
            if a.calls != 1 || !urls.is_empty() || body.is_some() || a.net.method != "GET" {
                bail!("--wsesslog's file says what each session requests: leave out --calls, --urls, --body and --method");
            }
            sessions = Some(log.sessions);
        }

        let no_workload = sessions.is_none()
            && a.persistent.is_none()
            && a.inactive.is_none()
            && a.idle.is_none()
            && a.slow.is_none();
        let rate = match a.rate.as_deref() {
            // The default load (wrk's): closed loop, over -c connections
            // (DEFAULT_CONNECTIONS without -c), for the default 10 s.
            None if no_workload => Some(Rate::Max),
            None if a.connections.is_some() && sessions.is_none() && a.persistent.is_none() => {
                Some(Rate::Max)
            }
            None => None,
            Some("max") => Some(Rate::Max),
            Some(r) => {
                let (n, scale) = si(r);
                let v = n.parse::<f64>().map(|v| v * scale as f64).map_err(|_| {
                    anyhow!("--rate '{r}': give requests per second (e.g. 1000 or 2k) or 'max'")
                })?;
                if !(v.is_finite() && v > 0.0) {
                    bail!("--rate must be positive, or 'max'");
                }
                Some(Rate::PerSecond(v))
            }
        };
        let mut persistent = a.persistent.unwrap_or(0);
        let connections = match (a.connections, rate) {
            (None, Some(Rate::Max)) if no_workload => Some(DEFAULT_CONNECTIONS),
            // -R R -c C, as wrk2: R requests/s over C persistent connections.
            (None, Some(Rate::PerSecond(_))) if no_workload => Some(DEFAULT_CONNECTIONS),
            (c, _) => c,
        };
        if let Some(c) = connections {
            let open_loop = matches!(rate, Some(Rate::PerSecond(_)));
            if open_loop && sessions.is_some() {
                bail!("--connections with an open-loop --rate are persistent connections; sessions open their own (leave out --connections, or use --rate max)");
            }
            if !open_loop && rate != Some(Rate::Max) {
                bail!("--connections is for --rate max (closed loop); for an open-loop rate over persistent connections use --persistent");
            }
            if a.persistent.is_some_and(|p| p != c) {
                let with = if open_loop {
                    "an open-loop --rate"
                } else {
                    "--rate max"
                };
                bail!("give --connections or --persistent with {with}, not both");
            }
            if u64::from(a.procs) > c {
                // wrk's words: every thread needs a connection.
                bail!(
                    "number of connections must be >= threads (-c {c}, -t {})",
                    a.procs
                );
            }
            persistent = c;
        }
        let active = sessions.is_some() || persistent > 0;
        let passive = a.idle.unwrap_or(0) + a.inactive.unwrap_or(0) + a.slow.unwrap_or(0);
        match rate {
            None if active => bail!(
                "--sessions and --persistent need --rate (requests per second, or 'max' for closed loop)"
            ),
            Some(_) if !active => {
                if passive == 0 {
                    bail!("--rate given but no workload: add --sessions N, --persistent C or --connections C")
                }
                bail!("--rate applies to --sessions or --persistent; the idle, inactive and slow workloads have no rate")
            }
            Some(Rate::Max) if sessions.is_some() && a.persistent.is_some() => {
                bail!("--rate max runs one closed loop: give --sessions (with --connections for how many at once) or --persistent, not both")
            }
            _ => {}
        }
        if rate.is_none() && passive == 0 {
            bail!("no workload given: use --sessions N, --persistent C, --rate max --connections C, --inactive I, --idle I or --slow S");
        }
        if a.calls == 0 {
            bail!("--calls must be at least 1");
        }
        if a.procs == 0 {
            bail!("--procs must be at least 1");
        }
        let run_to_end = a.duration.is_none() && sessions.is_some_and(|n| n > 0);
        let duration_s = match (&a.duration, sessions, rate) {
            (Some(d), _, _) => parse_secs("--duration", d)?,
            (None, Some(n), Some(Rate::PerSecond(r))) if n > 0 => n as f64 / r,
            _ if run_to_end => 0.0,
            _ => 10.0,
        };
        if duration_s <= 0.0 && !run_to_end {
            bail!("--duration must be positive");
        }
        let warmup_s = parse_secs("--warmup", &a.warmup)?;
        let timeout_s = parse_secs("--timeout", &a.timeout)?;
        if timeout_s <= 0.0 {
            bail!("--timeout must be positive");
        }
        let interval_s = parse_secs("--interval", &a.interval)?;
        if interval_s < 0.01 {
            bail!("--interval must be at least 10ms");
        }
        let slow_interval_s = parse_secs("--slow-interval", &a.slow_interval)?;
        let slow_ramp_s = parse_secs("--slow-ramp", &a.slow_ramp)?;
        if a.slow_bytes == 0 {
            bail!("--slow-bytes must be at least 1");
        }
        let mut headers = Vec::new();
        for h in &a.header {
            let (n, v) = h
                .split_once(':')
                .ok_or_else(|| anyhow!("--header '{h}' is not NAME:VALUE"))?;
            let n = n.trim();
            if n.is_empty() || n.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
                bail!("--header '{h}': '{n}' is not a valid header name");
            }
            if v.bytes().any(|b| b == b'\r' || b == b'\n') {
                bail!("--header '{h}': the value may not contain a line break");
            }
            headers.push((n.to_string(), v.trim().to_string()));
        }
        // A body goes out as it is, framed by its Content-Length: under the
        // user's Transfer-Encoding (which replaces that) the server would
        // read it as chunks, or to the close.
        let bodies = body.is_some()
            || wsesslog.as_ref().is_some_and(|l| {
                l.log
                    .iter()
                    .flatten()
                    .any(|b| b.requests.iter().any(|r| r.contents.is_some()))
            });
        if bodies
            && headers
                .iter()
                .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && !v.is_empty())
        {
            bail!(
                "--header Transfer-Encoding with a request body (--body, or contents= in \
                 --wsesslog): the body is sent as it is, with its Content-Length, not \
                 chunk-encoded; leave out the header"
            );
        }
        // The URL's user and password, as curl sends them, unless the user
        // gave the header.
        if let Some(value) = authorization {
            if !headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
            {
                headers.push(("Authorization".to_string(), value));
            }
        }
        let cpus = match &a.cpu {
            Some(list) => {
                evdispatch_host::parse_cpu_list(list).map_err(|e| anyhow!("--cpu: {e}"))?
            }
            None => Vec::new(),
        };
        let server_pids = a
            .server_pid
            .iter()
            .flat_map(|s| s.split(','))
            .filter(|s| !s.trim().is_empty())
            .map(|s| {
                let pid: u32 = s
                    .trim()
                    .parse()
                    .map_err(|_| anyhow!("--server-pid '{s}' is not a process id"))?;
                if !std::path::Path::new(&format!("/proc/{pid}/stat")).exists() {
                    bail!("--server-pid {pid}: no such process");
                }
                Ok(pid)
            })
            .collect::<anyhow::Result<Vec<u32>>>()?;
        let mechanism: evdispatch::Mechanism = a
            .mechanism
            .parse()
            .map_err(|e: evdispatch::UnknownMechanism| anyhow!("--mechanism: {e}"))?;
        if a.source_addrs == 0 {
            bail!("--source-addrs must be at least 1");
        }
        if !a.results.source_addr.is_empty() && a.source_addrs > 1 {
            bail!("give --source-addr ADDR (repeatable) or --source-addrs N, not both");
        }
        if let Some(bad) = a
            .results
            .source_addr
            .iter()
            .find(|s| s.is_ipv4() != target.is_ipv4())
        {
            bail!("--source-addr {bad}: the target {target} is of the other address family");
        }
        let source_addrs = if !a.results.source_addr.is_empty() {
            a.results.source_addr.clone()
        } else if a.source_addrs > 1 {
            (0..a.source_addrs).map(source_addr).collect()
        } else {
            Vec::new()
        };
        let cfg = Config {
            url: url_text,
            target,
            addresses: resolved.addresses,
            tls: resolved.tls,
            method: a.net.method.clone(),
            body_file: a.net.body.clone(),
            body_bytes: body.as_ref().map(|b| b.len() as u64),
            body,
            urls,
            wsesslog,
            host: resolved.host_header,
            path: resolved.path,
            rate,
            arrival: a.arrival,
            duration_s,
            run_to_end,
            warmup_s,
            timeout_s,
            sessions,
            calls: a.calls,
            persistent,
            inactive: a.inactive.unwrap_or(0),
            inactive_send: a.inactive_send,
            idle: a.idle.unwrap_or(0),
            slow: a.slow.unwrap_or(0),
            slow_bytes: a.slow_bytes,
            slow_interval_s,
            slow_ramp_s,
            procs: a.procs,
            server_pids,
            cpus,
            headers,
            source_addrs,
            mechanism: mechanism.name().to_string(),
            engine: a.engine,
            interval_s,
            slot_tolerance_ms: a.slot_tolerance_ms,
            seed: a.seed,
            connect_burst: a.connect_burst.max(1),
        };
        cfg.check_capacity()?;
        Ok(cfg)
    }

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
        let target = target::first_reachable(&addresses, self.tls.as_ref(), &self.url, t)?;
        Ok(Config {
            target,
            addresses,
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
    use super::*;

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
        // sent as given, and results show none of it.
        let c = cfg("http://u:secret@127.0.0.1:1/ -H Authorization:Bearer_t").unwrap();
        assert_eq!(c.headers, [("Authorization".into(), "Bearer_t".into())]);
        let s = crate::Summary::new(&c, Default::default(), None);
        assert_eq!(s.config.headers, [("Authorization".into(), "***".into())]);
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
            Some(crate::LoadSubcommand::Merge(_))
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
