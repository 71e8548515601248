//! What `bench server` measures: its arguments, the scenarios, the
//! contestants, and the plan resolved from them.

use std::path::PathBuf;

use anyhow::{bail, Context};
use evdispatch_harness::Peer;
use evdispatch_server::Model;
use serde::Serialize;

use super::floor::Floor;

/// Arguments of `evdispatch bench server`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServerArgs {
    /// Servers, comma-separated: our models (any `serve --mechanism` value:
    /// a library mechanism, `threads`, `uring-completion`) and the peers
    /// `nginx`, `lighttpd`, `h2o` (a peer that is not installed is skipped
    /// with the command that installs it), and the floors `floor-epoll`,
    /// `floor-uring` (keepalive only).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "epoll,uring,uring-completion,nginx,lighttpd,h2o,floor-epoll,floor-uring"
    )]
    pub servers: Vec<String>,
    /// Scenarios, comma-separated (`memory` is measured within `idle` when
    /// both are asked for).
    #[arg(long, value_delimiter = ',', default_value = "keepalive,close,idle")]
    pub scenarios: Vec<Scenario>,
    /// Rounds (default 3; 1 with --quick).
    #[arg(long)]
    pub rounds: Option<usize>,
    /// Seconds of each measured wrk or load run (wrk takes whole seconds;
    /// default 8, 2 with --quick). A duration (`8s`, `1min`, or bare seconds).
    #[arg(long, value_parser = evdispatch_host::parse_duration)]
    pub duration: Option<std::time::Duration>,
    /// Seconds of unmeasured load before each measurement (default 1;
    /// 0 skips it). A duration (`500ms`, or bare seconds).
    #[arg(long, value_parser = evdispatch_host::parse_duration)]
    pub warmup: Option<std::time::Duration>,
    /// wrk's connections (`-c`).
    #[arg(long, default_value_t = 100)]
    pub connections: u32,
    /// Size of the file served, bytes.
    #[arg(long, default_value_t = 6144)]
    pub file_size: usize,
    /// Idle connections held (default 10,000; 2,000 with --quick).
    #[arg(long)]
    pub idle: Option<u64>,
    /// Open-loop rate of the p99 measurement, requests/s (default 10,000;
    /// 2,000 with --quick).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Persistent connections sharing --rate.
    #[arg(long, default_value_t = 50)]
    pub persistent: u64,
    /// CPU of the server.
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// CPU of the load tools.
    #[arg(long, default_value_t = 1)]
    pub client_cpu: usize,
    /// Give the peers `TCP_DEFER_ACCEPT` (seconds; 0: as packaged, where
    /// only h2o has it), as our server has it by default (`serve
    /// --defer-accept`): nginx `listen … deferred`, lighttpd
    /// `server.defer-accept`.
    #[arg(long, default_value_t = 1)]
    pub peer_defer_accept: u32,
    /// An extra argument for our server (`evdispatch serve`), repeatable:
    /// `--serve-arg=--no-eager-read`.
    #[arg(long = "serve-arg", allow_hyphen_values = true)]
    pub serve_args: Vec<String>,
    /// Measure in this program's network namespace instead of a fresh one
    /// per measurement.
    #[arg(long)]
    pub shared_netns: bool,
    /// A short run: 1 round, 2 s, 2,000 idle connections at 2,000 req/s
    /// (explicit options still win).
    #[arg(long)]
    pub quick: bool,
    /// The `evdispatch` binary whose `serve` and `load` are run (default:
    /// this program).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// One JSON document instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Also save the JSON document to this file.
    #[arg(long)]
    pub save: Option<PathBuf>,
}

/// A scenario of `bench server`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, clap::ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Persistent connections (wrk).
    Keepalive,
    /// One connection per request (wrk with `Connection: close`).
    Close,
    /// Idle connections held vs none: throughput and open-loop p99.
    Idle,
    /// User-space memory per idle connection.
    Memory,
    /// A 64 KiB range (`Range: bytes=0-65535`) of a 1 MiB file on
    /// persistent connections (wrk): compared with `whole`, paired within
    /// rounds.
    Range,
    /// A whole 64 KiB file on persistent connections (wrk).
    Whole,
    /// `keepalive` over HTTPS (TLS 1.3, the bench's ECDSA P-256
    /// certificate): CPU per request (wrk).
    HttpsKeepalive,
    /// A new HTTPS connection per request, every handshake a full one
    /// (`evdispatch load --no-tls-resume`): full handshakes per server
    /// CPU-second.
    HttpsFull,
    /// The same with every reconnect resuming its session: resumed
    /// handshakes per server CPU-second.
    HttpsResumed,
    /// The 1 MiB file over HTTPS on persistent connections (wrk): bytes
    /// per server CPU-second.
    HttpsLarge,
    /// User-space memory per idle TLS connection (`--idle` of them held,
    /// handshake done, one request each).
    HttpsIdle,
}

impl Scenario {
    /// The name on the command line and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Keepalive => "keepalive",
            Scenario::Close => "close",
            Scenario::Idle => "idle",
            Scenario::Memory => "memory",
            Scenario::Range => "range",
            Scenario::Whole => "whole",
            Scenario::HttpsKeepalive => "https-keepalive",
            Scenario::HttpsFull => "https-full",
            Scenario::HttpsResumed => "https-resumed",
            Scenario::HttpsLarge => "https-large",
            Scenario::HttpsIdle => "https-idle",
        }
    }

    /// Over HTTPS: our server and nginx only, with the same certificate.
    pub fn https(self) -> bool {
        matches!(
            self,
            Scenario::HttpsKeepalive
                | Scenario::HttpsFull
                | Scenario::HttpsResumed
                | Scenario::HttpsLarge
                | Scenario::HttpsIdle
        )
    }
}

/// A server under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Contestant {
    /// `evdispatch serve --mechanism NAME`, with `--access-log` when the
    /// flag says so (`NAME+log`).
    Ours(Model, bool),
    /// A peer server, with its access log on when the flag says so
    /// (`nginx+log`).
    Peer(Peer, bool),
    /// A floor server (`evdispatch bench floor-server`).
    Floor(Floor),
}

/// The suffix of a `--servers` name that turns the access log on.
pub const LOGGED: &str = "+log";

impl Contestant {
    /// Parse a `--servers` entry.
    pub fn parse(s: &str) -> Result<Contestant, String> {
        let s = s.trim();
        let (base, log) = s.strip_suffix(LOGGED).map_or((s, false), |b| (b, true));
        match base {
            "nginx" => Ok(Contestant::Peer(Peer::Nginx, log)),
            "lighttpd" => Ok(Contestant::Peer(Peer::Lighttpd, log)),
            "h2o" => Ok(Contestant::Peer(Peer::H2o, log)),
            other => match Floor::from_name(other) {
                Some(_) if log => Err(format!(
                    "--servers: {s}: the floor servers keep no access log"
                )),
                Some(floor) => Ok(Contestant::Floor(floor)),
                None => {
                    let model = other.parse::<Model>().map_err(|e| {
                        format!(
                            "--servers: {e}; or a peer: nginx, lighttpd, h2o; or a floor: \
                             floor-epoll, floor-uring; NAME+log (not a floor) turns its access \
                             log on"
                        )
                    })?;
                    Ok(Contestant::Ours(model, log))
                }
            },
        }
    }

    /// Its name without the access-log suffix.
    pub fn base_name(self) -> &'static str {
        match self {
            Contestant::Ours(m, _) => m.name(),
            Contestant::Peer(p, _) => p.tool().command(),
            Contestant::Floor(f) => f.name(),
        }
    }

    /// Its access log is on.
    pub fn logged(self) -> bool {
        matches!(self, Contestant::Ours(_, true) | Contestant::Peer(_, true))
    }

    /// Its name in tables and JSON (our models by their mechanism name;
    /// `+log` when its access log is on).
    pub fn name(self) -> String {
        let log = if self.logged() { LOGGED } else { "" };
        format!("{}{log}", self.base_name())
    }

    /// True for nginx, lighttpd and h2o.
    pub fn is_peer(self) -> bool {
        matches!(self, Contestant::Peer(..))
    }

    /// True for the floor servers.
    pub fn is_floor(self) -> bool {
        matches!(self, Contestant::Floor(_))
    }

    /// Whether it takes part in `scenario` (the floors: keepalive only;
    /// HTTPS: ours and nginx).
    pub fn runs(self, scenario: Scenario) -> bool {
        match self {
            Contestant::Floor(_) => scenario == Scenario::Keepalive,
            Contestant::Peer(peer, _) if scenario.https() => peer == Peer::Nginx,
            _ => true,
        }
    }
}

/// The resolved settings of a run (defaults and `--quick` applied).
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Server names, in the order given.
    pub servers: Vec<String>,
    #[serde(skip)]
    pub(super) contestants: Vec<Contestant>,
    /// Scenarios run (in this order within each round).
    pub scenarios: Vec<Scenario>,
    /// Rounds.
    pub rounds: usize,
    /// Seconds of each measured run.
    pub duration_s: f64,
    /// Seconds of warm-up load before each measurement.
    pub warmup_s: f64,
    /// wrk's connections.
    pub connections: u32,
    /// Bytes of the file served.
    pub file_size: usize,
    /// Idle connections to hold.
    pub idle: u64,
    /// Open-loop rate, requests/s.
    pub rate: f64,
    /// Persistent connections of the open loop.
    pub persistent: u64,
    /// The server's CPU.
    pub server_cpu: usize,
    /// The load tools' CPU.
    pub client_cpu: usize,
    /// Peers' TCP_DEFER_ACCEPT, seconds.
    pub peer_defer_accept_s: u32,
    /// Extra arguments of our server.
    pub serve_args: Vec<String>,
    /// A fresh network namespace per measurement.
    pub fresh_netns: bool,
    /// The binary run as `evdispatch serve` / `load`.
    pub binary: PathBuf,
}

impl Plan {
    /// Resolve the arguments: defaults, `--quick`, names checked.
    pub fn new(a: &ServerArgs) -> anyhow::Result<Plan> {
        let contestants = a
            .servers
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| Contestant::parse(s).map_err(anyhow::Error::msg))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if contestants.is_empty() {
            bail!("--servers: give at least one server");
        }
        let mut scenarios = a.scenarios.clone();
        scenarios.sort();
        scenarios.dedup();
        if scenarios.contains(&Scenario::Idle) {
            // The idle runs measure the memory too.
            scenarios.retain(|&s| s != Scenario::Memory);
        }
        if scenarios.is_empty() {
            bail!("--scenarios: give at least one of keepalive, close, idle, memory, range, whole, https-keepalive, https-full, https-resumed, https-large, https-idle");
        }
        let q = a.quick;
        let plan = Plan {
            servers: contestants.iter().map(|c| c.name()).collect(),
            contestants,
            scenarios,
            rounds: a.rounds.unwrap_or(if q { 1 } else { 3 }),
            duration_s: a
                .duration
                .map_or(if q { 2.0 } else { 8.0 }, |d| d.as_secs_f64()),
            warmup_s: a
                .warmup
                .map_or(if q { 0.5 } else { 1.0 }, |d| d.as_secs_f64()),
            connections: a.connections,
            file_size: a.file_size,
            idle: a.idle.unwrap_or(if q { 2_000 } else { 10_000 }),
            rate: a.rate.unwrap_or(if q { 2_000.0 } else { 10_000.0 }),
            persistent: a.persistent,
            server_cpu: a.server_cpu,
            client_cpu: a.client_cpu,
            peer_defer_accept_s: a.peer_defer_accept,
            serve_args: a.serve_args.clone(),
            fresh_netns: !a.shared_netns,
            binary: match &a.binary {
                Some(b) => b.clone(),
                None => std::env::current_exe()
                    .context("finding this program to run its serve and load commands")?,
            },
        };
        if plan.rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        if !(plan.duration_s > 0.0 && plan.warmup_s >= 0.0) {
            bail!("--duration must be positive and --warmup not negative");
        }
        if plan.connections == 0 || plan.persistent == 0 || plan.idle == 0 {
            bail!("--connections, --persistent and --idle must be at least 1");
        }
        if !(plan.rate.is_finite() && plan.rate > 0.0) {
            bail!("--rate must be a positive number of requests per second");
        }
        if plan.server_cpu == plan.client_cpu && crate::machine::machine().cores > 1 {
            eprintln!(
                "note: server and load tools share CPU {}: the server's CPU time then includes waiting for the tools",
                plan.server_cpu
            );
        }
        Ok(plan)
    }
}
