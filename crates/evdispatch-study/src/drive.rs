//! Driving the other programs: what this binary and machine offer
//! ([`Caps`]), starting and stopping a server — ours or a peer, both through
//! `evdispatch-harness` ([`start_server`]) — running the load generator
//! ([`run_load`]) and the microbenchmarks ([`run_bench`]). Command lines and
//! output parsing live in [`crate::contracts`].
//!
//! Placement: the server runs on CPU 0 (its workers on 0..K), the load
//! generator on the last CPU, so on a 2-core machine the generator never
//! takes the server's core (with two server workers it must share).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context as _};
use evdispatch_harness::{children_cpu_s, log_tail, ChildGroup};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::contracts;
use crate::env::PeerStatus;
use crate::scenario::Ctx;

/// The server's dispatch models that are not readiness mechanisms.
pub const MODELS: &[&str] = &["threads", "uring-completion"];

/// Peer servers run beside ours (started by `evdispatch-harness`).
pub const PEER_SERVERS: &[&str] = &["nginx", "lighttpd", "h2o"];

/// An error meaning "this cannot be measured here" rather than "this failed":
/// the scenario records it as skipped, with the reason.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// What the binary, the kernel and the machine offer the study.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Caps {
    /// `evdispatch bench` (poller, fdalloc, overflow) is built.
    pub bench: bool,
    /// `evdispatch serve` is built.
    pub serve: bool,
    /// `evdispatch load` is built.
    pub load: bool,
    /// Mechanisms in the binary's table that work on this kernel.
    pub mechanisms: Vec<String>,
    /// Mechanisms in the binary's table that do not work here, with why.
    pub unavailable_mechanisms: BTreeMap<String, String>,
    /// Descriptor ceilings of bounded mechanisms (select: 1024).
    pub max_fd: BTreeMap<String, i64>,
    /// Rows of `bench poller`: runnable, or why not (with the install command).
    pub poller_rows: BTreeMap<String, Result<(), String>>,
    /// Peers found (name → version) and missing (name → `absent: install command`).
    pub peers: BTreeMap<String, Result<String, String>>,
    /// CPUs this process may use.
    pub cpus: usize,
}

impl Caps {
    /// Probe the binary at `exe` and the machine (peers: [`Caps::set_peers`]).
    pub fn probe(exe: &Path) -> Caps {
        let output = |args: &[&str]| -> Option<String> {
            let o = Command::new(exe)
                .args(args)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        };
        let mut caps = Caps {
            bench: output(&["bench", "--help"]).is_some(),
            serve: output(&["serve", "--help"])
                .map(|h| h.contains("--stats-json"))
                .unwrap_or(false),
            load: output(&["load", "--help"])
                .map(|h| h.contains("--persistent"))
                .unwrap_or(false),
            cpus: evdispatch_proc::available_cpus(),
            ..Caps::default()
        };
        if caps.bench {
            if let Some(list) = output(&["bench", "poller", "--list"]) {
                caps.poller_rows = contracts::poller_rows(&list);
            }
        }
        let table =
            output(&["mechanisms", "--json"]).and_then(|t| serde_json::from_str::<Value>(&t).ok());
        for row in table
            .as_ref()
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = row.get("name").and_then(Value::as_str) else {
                continue;
            };
            if let Some(max) = row.get("max_fd").and_then(Value::as_i64) {
                caps.max_fd.insert(name.to_string(), max);
            }
            match row.get("available").and_then(Value::as_str) {
                Some("yes") | None => caps.mechanisms.push(name.to_string()),
                Some(why) => {
                    caps.unavailable_mechanisms.insert(name.into(), why.into());
                }
            }
        }
        caps
    }

    /// Record which peers are present (from [`crate::env::find_peers`]).
    pub fn set_peers(&mut self, peers: &[PeerStatus]) {
        for p in peers {
            self.peers.insert(
                p.name.to_string(),
                p.version.clone().ok_or_else(|| p.absent_note()),
            );
        }
    }

    /// Everything present (for planning checks in tests).
    pub fn everything() -> Caps {
        let mechanisms: Vec<String> = evdispatch::MECHANISMS
            .iter()
            .map(|m| m.name.to_string())
            .collect();
        Caps {
            bench: true,
            serve: true,
            load: true,
            poller_rows: mechanisms
                .iter()
                .cloned()
                .chain(
                    [
                        "raw-epoll",
                        "raw-poll",
                        "mio",
                        "polling",
                        "libevent",
                        "libev",
                    ]
                    .map(String::from),
                )
                .map(|r| (r, Ok(())))
                .collect(),
            mechanisms,
            unavailable_mechanisms: BTreeMap::new(),
            max_fd: [("select".to_string(), 1024)].into_iter().collect(),
            peers: crate::env::PEER_NAMES
                .iter()
                .map(|p| (p.to_string(), Ok("1.0".to_string())))
                .collect(),
            cpus: 2,
        }
    }

    /// Nothing built, nothing installed.
    pub fn nothing() -> Caps {
        Caps {
            peers: crate::env::PEER_NAMES
                .iter()
                .map(|p| {
                    (
                        p.to_string(),
                        Err(format!("absent: apt-get install -y {p}")),
                    )
                })
                .collect(),
            cpus: 2,
            ..Caps::default()
        }
    }

    /// A stable list of what is available, stored with each scenario so a
    /// partial scenario is re-run when something new lands.
    pub fn fingerprint(&self) -> Vec<String> {
        let mut v = Vec::new();
        for (on, name) in [
            (self.bench, "bench"),
            (self.serve, "serve"),
            (self.load, "load"),
        ] {
            if on {
                v.push(format!("tool:{name}"));
            }
        }
        v.extend(self.mechanisms.iter().map(|m| format!("mechanism:{m}")));
        v.extend(
            self.poller_rows
                .iter()
                .filter(|(_, s)| s.is_ok())
                .map(|(r, _)| format!("row:{r}")),
        );
        v.extend(
            self.peers
                .iter()
                .filter(|(_, s)| s.is_ok())
                .map(|(p, _)| format!("peer:{p}")),
        );
        v
    }

    /// Whether mechanism `m` can run, or why not.
    pub fn mechanism(&self, m: &str) -> Result<(), String> {
        if self.mechanisms.iter().any(|x| x == m) {
            return Ok(());
        }
        match self.unavailable_mechanisms.get(m) {
            Some(why) => Err(format!("mechanism {m} unavailable here: {why}")),
            None => Err(format!(
                "mechanism {m} is not in this build's table (`evdispatch mechanisms`)"
            )),
        }
    }

    /// Why our server cannot be run under load, if it cannot.
    pub fn web_missing(&self) -> Option<String> {
        let mut why = Vec::new();
        if !self.serve {
            why.push("`evdispatch serve` is not in this build");
        }
        if !self.load {
            why.push("`evdispatch load` is not in this build");
        }
        (!why.is_empty()).then(|| why.join("; "))
    }

    /// Whether a peer program (server or load generator) is installed, or
    /// why not with the command that installs it.
    pub fn peer(&self, name: &str) -> Result<(), String> {
        match self.peers.get(name) {
            Some(Ok(_)) => Ok(()),
            Some(Err(absent)) => Err(format!("{name} {absent}")),
            None => Err(format!("{name}: not a peer the study knows")),
        }
    }

    /// Whether a server (ours with a mechanism or model, or a peer) can run.
    pub fn server(&self, server: &ServerSpec) -> Result<(), String> {
        if let Some(w) = self.web_missing() {
            return Err(w);
        }
        if server.server == "ours" {
            match server.mechanism.as_deref() {
                Some(m) if MODELS.contains(&m) => Ok(()),
                Some(m) => self.mechanism(m),
                None => Ok(()),
            }
        } else {
            self.peer(&server.server)
        }
    }

    /// CPUs for a server of `workers` workers, and the CPU of the load
    /// generator: the server from CPU 0 up, the generator on the last CPU;
    /// nothing pinned on a one-CPU machine.
    pub fn cpu_plan(&self, workers: u32) -> (Vec<usize>, Option<usize>) {
        if self.cpus >= 2 {
            let server = (0..workers.max(1) as usize)
                .map(|i| i.min(self.cpus - 1))
                .collect();
            (server, Some(self.cpus - 1))
        } else {
            (vec![], None)
        }
    }
}

fn yes() -> bool {
    true
}

fn default_workers() -> u32 {
    1
}

/// A server to run: ours with its options, or a peer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ServerSpec {
    /// `ours`, or a peer's name (`nginx`, `lighttpd`, `h2o`).
    pub server: String,
    /// Our mechanism or model (`epoll`, `threads`, `uring-completion`…); for
    /// lighttpd, its `server.event-handler` (`poll`, `linux-sysepoll`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mechanism: Option<String>,
    /// Worker event loops (or peer worker processes).
    #[serde(default = "default_workers")]
    pub workers: u32,
    /// `one` or `all` (our server's accept strategy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accept: Option<String>,
    /// `reuseport` or `shared`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
    /// With a shared listener, ask for wake-one (`EPOLLEXCLUSIVE`); false is
    /// `serve --no-exclusive`.
    #[serde(default = "yes")]
    pub exclusive: bool,
    /// Our server reads a new connection at once before registering it (its
    /// default); false is `serve --no-eager-read`, so every connection goes
    /// through the mechanism — what a dispatch comparison measures.
    #[serde(default = "yes")]
    pub eager_read: bool,
    /// `key=value` poller tunables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub poller_opts: Vec<String>,
    /// Lowered RLIMIT_SIGPENDING for the server process (RT-signal overflow).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rlimit_sigpending: Option<u64>,
    /// Close idle keep-alive connections after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_s: Option<f64>,
    /// Close connections that have not sent their headers after this many seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_timeout_s: Option<f64>,
    /// Pool size of the `threads` model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// Further command-line arguments, verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
}

impl ServerSpec {
    /// Our server with `mechanism` and its defaults otherwise.
    pub fn ours(mechanism: &str) -> ServerSpec {
        ServerSpec {
            server: "ours".into(),
            mechanism: Some(mechanism.into()),
            workers: 1,
            accept: None,
            listener: None,
            exclusive: true,
            eager_read: true,
            poller_opts: vec![],
            rlimit_sigpending: None,
            idle_timeout_s: None,
            header_timeout_s: None,
            threads: None,
            extra_args: vec![],
        }
    }

    /// Our server with `mechanism`, every connection through the mechanism
    /// (`--no-eager-read`): the configuration of the dispatch comparisons.
    pub fn dispatch(mechanism: &str) -> ServerSpec {
        ServerSpec {
            eager_read: false,
            ..ServerSpec::ours(mechanism)
        }
    }

    /// A peer server with defaults.
    pub fn peer(name: &str) -> ServerSpec {
        ServerSpec {
            server: name.into(),
            mechanism: None,
            ..ServerSpec::ours("epoll")
        }
    }

    /// The name of its series in figures: the mechanism (with the accept
    /// strategy when it is `one`), or the peer's name (with lighttpd's event
    /// handler).
    pub fn series(&self) -> String {
        if self.server == "ours" {
            let m = self.mechanism.clone().unwrap_or_else(|| "epoll".into());
            match self.accept.as_deref() {
                Some("one") => format!("{m} (accept one)"),
                _ => m,
            }
        } else {
            match &self.mechanism {
                Some(m) => format!("{} ({m})", self.server),
                None => self.server.clone(),
            }
        }
    }
}

/// How fast the load generator sends.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Rate {
    /// Offered requests (or new connections, for sessions) per second.
    PerSec(f64),
    /// Closed loop, as fast as replies come (`--rate max`).
    Max(MaxTag),
}

/// The string `"max"` in JSON.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
pub enum MaxTag {
    /// As fast as possible.
    Max,
}

impl Rate {
    /// `--rate max`.
    pub const MAX: Rate = Rate::Max(MaxTag::Max);

    /// The offered rate, if not closed-loop.
    pub fn per_sec(self) -> Option<f64> {
        match self {
            Rate::PerSec(r) => Some(r),
            Rate::Max(_) => None,
        }
    }
}

fn one() -> u32 {
    1
}

fn two() -> f64 {
    2.0
}

/// A load to offer (the workloads of `evdispatch load`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadSpec {
    /// The document requested (a file of the study's document root).
    pub document: String,
    /// The offered rate.
    pub rate: Rate,
    /// Seconds of measured load.
    pub duration_s: f64,
    /// New connections, each making `calls` requests (httperf's sessions).
    #[serde(default)]
    pub sessions: bool,
    /// Requests per session connection.
    #[serde(default = "one")]
    pub calls: u32,
    /// Keep-alive connections sharing an open-loop rate (seed 004 §3.1).
    #[serde(default)]
    pub persistent: u32,
    /// Connections of a closed loop (`rate` = max).
    #[serde(default)]
    pub connections: u32,
    /// Connections that never complete a request (seed 000 §5).
    #[serde(default)]
    pub inactive: u32,
    /// Connections that make one request and stay silent (seed 004 §4.1).
    #[serde(default)]
    pub idle: u32,
    /// Load-generator processes.
    #[serde(default = "one")]
    pub procs: u32,
    /// Give up on a connect or a reply after this many seconds (an error).
    #[serde(default = "two")]
    pub timeout_s: f64,
}

impl LoadSpec {
    /// Open-loop sessions of one request for `document` at `rate` per second.
    pub fn sessions(document: &str, rate: f64, duration_s: f64) -> LoadSpec {
        LoadSpec {
            document: document.into(),
            rate: Rate::PerSec(rate),
            duration_s,
            sessions: true,
            calls: 1,
            persistent: 0,
            connections: 0,
            inactive: 0,
            idle: 0,
            procs: 1,
            timeout_s: 2.0,
        }
    }

    /// The reply-rate sampling interval: a fifth of the window (at least
    /// 0.1 s, at most 1 s), so every point has min, max and a spread.
    pub fn interval_s(&self) -> f64 {
        (self.duration_s / 5.0).clamp(0.1, 1.0)
    }

    /// Long-lived connections held during the run.
    pub fn held(&self) -> u32 {
        self.inactive + self.idle + self.persistent + self.connections
    }
}

/// A server the study started, until [`RunningServer::stop`].
pub struct RunningServer {
    /// Base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The exact command line (ours) or the peer and its configuration.
    pub cmdline: String,
    /// Its version (peers) or ours.
    pub version: String,
    proc_: evdispatch_harness::ServerProcess,
}

impl RunningServer {
    /// The processes whose CPU and memory are the server's (nginx: master
    /// and workers).
    pub fn pids(&self) -> Vec<u32> {
        self.proc_.pids()
    }

    /// The main pid.
    pub fn pid(&self) -> u32 {
        self.proc_.pid()
    }

    /// Stop it (SIGTERM, then SIGKILL after 10 s) and return our server's
    /// stats document (`None` for peers).
    pub fn stop(self) -> anyhow::Result<Option<Value>> {
        self.proc_.stop()
    }
}

/// Start `spec` for a run holding `held` long-lived connections, serving
/// the study's document root, pinned per [`Caps::cpu_plan`].
pub fn start_server(ctx: &Ctx, spec: &ServerSpec, held: u32) -> anyhow::Result<RunningServer> {
    use evdispatch_harness::{
        start_ours, start_peer, LighttpdEvents, OursConfig, Peer, PeerConfig,
    };
    ctx.caps
        .server(spec)
        .map_err(|why| anyhow!(Unavailable(why)))?;
    let (cpus, _) = ctx.caps.cpu_plan(spec.workers);
    let (proc_, cmdline) = if spec.server == "ours" {
        let serve = contracts::serve_command(spec, &ctx.www, &cpus)?;
        let cmdline = format!("evdispatch serve {serve}");
        let p = start_ours(&OursConfig {
            binary: ctx.exe.clone(),
            serve,
            cpus: cpus.clone(),
            stats_json: true,
            idle: false,
        })
        .with_context(|| format!("starting `{cmdline}`"))?;
        (p, cmdline)
    } else {
        let peer = match spec.server.as_str() {
            "nginx" => Peer::Nginx,
            "lighttpd" => Peer::Lighttpd,
            "h2o" => Peer::H2o,
            other => bail!("unknown peer server '{other}'"),
        };
        let mut cfg = PeerConfig::new(&ctx.www);
        cfg.workers = spec.workers;
        cfg.cpus = cpus.clone();
        // Room for the held connections and the sessions in flight, within
        // the process's descriptor limit.
        cfg.max_connections = (held + 4096).min(19_000);
        cfg.keepalive_timeout_s = 600;
        cfg.request_timeout_s = 600;
        if spec.server == "lighttpd" {
            cfg.lighttpd_events = match spec.mechanism.as_deref() {
                Some("poll") => LighttpdEvents::Poll,
                _ => LighttpdEvents::LinuxSysepoll,
            };
        }
        let cmdline = format!(
            "{} ({} worker(s), CPUs {:?}, max {} connections{})",
            spec.server,
            cfg.workers,
            cfg.cpus,
            cfg.max_connections,
            spec.mechanism
                .as_deref()
                .map(|m| format!(", server.event-handler = {m}"))
                .unwrap_or_default()
        );
        let p = start_peer(peer, &cfg).with_context(|| format!("starting {cmdline}"))?;
        (p, cmdline)
    };
    Ok(RunningServer {
        url: proc_.url(""),
        version: proc_.version().to_string(),
        cmdline,
        proc_,
    })
}

/// What a load run measured.
#[derive(Debug)]
pub struct LoadResult {
    /// Canonical metrics ([`contracts::LOAD_METRICS`]) plus the study's own
    /// samples of the server (`server_rss_start_bytes`,
    /// `server_rss_max_bytes`, `tcp_kernel_growth_bytes`).
    pub metrics: BTreeMap<String, f64>,
    /// The generator's JSON.
    pub raw: Value,
    /// The exact command line.
    pub cmdline: String,
}

/// Resident memory of a set of processes and their children, bytes.
pub fn tree_rss(pids: &[u32]) -> u64 {
    evdispatch_proc::resident_sum(&evdispatch_proc::with_children(pids)).total_bytes
}

/// Kernel memory held by TCP sockets (`/proc/net/sockstat`, `TCP: … mem N`), bytes.
pub fn tcp_kernel_bytes() -> Option<u64> {
    let text = fs::read_to_string("/proc/net/sockstat").ok()?;
    let line = text.lines().find(|l| l.starts_with("TCP:"))?;
    let mut it = line.split_whitespace();
    while let Some(w) = it.next() {
        if w == "mem" {
            return it.next()?.parse::<u64>().ok().map(|pages| pages * 4096);
        }
    }
    None
}

/// CPU ticks (user + system) of a set of processes and their children.
fn tree_ticks(pids: &[u32]) -> u64 {
    evdispatch_proc::with_children(pids)
        .into_iter()
        .filter_map(|p| evdispatch_proc::sample(p).ok())
        .map(|s| s.utime_ticks + s.stime_ticks)
        .sum()
}

/// Run the load generator against `server` while sampling the server's
/// resident memory (every 100 ms) and the kernel's TCP memory, and
/// account for the machine's CPU over the run: how busy the server's and the
/// generator's cores were (`server_core_busy_pct`, `load_core_busy_pct`,
/// interrupts included) and how much CPU went to processes that are not
/// ours (`foreign_cpu_pct`, % of one core: other work on this shared
/// machine). `generator_limited` is 1 when the generator said it was
/// saturated or its core was ≥ 95% busy: the figure may then be the
/// generator's limit.
pub fn run_load(
    ctx: &Ctx,
    spec: &LoadSpec,
    server: &RunningServer,
    tag: &str,
) -> anyhow::Result<LoadResult> {
    if let Some(why) = ctx.caps.web_missing() {
        return Err(anyhow!(Unavailable(why)));
    }
    let (_, load_cpu) = ctx.caps.cpu_plan(1);
    let pids = server.pids();
    let load = contracts::load_command(spec, &server.url, &pids, load_cpu);
    let log_path = ctx.logs.join(format!("{tag}.load.log"));
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("load")
        .args(load.args())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&log_path)?);
    let cmdline = format!("evdispatch load {load}");
    let rss0 = tree_rss(&pids);
    let tcp0 = tcp_kernel_bytes();
    let (cpu0, srv0, kids0, t0) = (
        evdispatch_proc::cpu_times(),
        tree_ticks(&pids),
        children_cpu_s(),
        std::time::Instant::now(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        let pids = pids.clone();
        std::thread::spawn(move || {
            let (mut rss_max, mut tcp_max) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                rss_max = rss_max.max(tree_rss(&pids));
                tcp_max = tcp_max.max(tcp_kernel_bytes().unwrap_or(0));
                std::thread::sleep(Duration::from_millis(100));
            }
            (rss_max, tcp_max)
        })
    };
    let out = ChildGroup::spawn(cmd, "the load generator").and_then(ChildGroup::wait_output);
    let (cpu1, srv1, kids1, wall) = (
        evdispatch_proc::cpu_times(),
        tree_ticks(&pids),
        children_cpu_s(),
        t0.elapsed().as_secs_f64(),
    );
    stop.store(true, Ordering::Relaxed);
    let (rss_max, tcp_max) = sampler.join().unwrap_or((0, 0));
    let out = out?;
    if !out.status.success() {
        let log = log_tail(Some(&log_path), 20);
        bail!(
            "the load generator failed ({}): {cmdline}\n{log}",
            out.status
        );
    }
    let raw: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("`{cmdline}` did not print JSON on stdout"))?;
    let mut metrics = contracts::parse_load(&raw)?;
    metrics.insert("server_rss_start_bytes".into(), rss0 as f64);
    metrics.insert("server_rss_max_bytes".into(), rss_max.max(rss0) as f64);
    if let (Some(t0), true) = (tcp0, tcp_max > 0) {
        metrics.insert(
            "tcp_kernel_growth_bytes".into(),
            tcp_max.saturating_sub(t0) as f64,
        );
    }
    let hz = evdispatch_proc::clock_ticks_per_sec() as f64;
    if cpu0.len() == cpu1.len() && !cpu0.is_empty() && wall > 0.0 {
        // Busy is what processes are charged (user, nice, system) plus
        // steal; interrupts are counted beside it for a core's busy share.
        let d: Vec<_> = cpu0.iter().zip(&cpu1).map(|(a, b)| b.since(a)).collect();
        let busy = |c: &evdispatch_proc::CpuTimes| c.user + c.nice + c.system + c.steal;
        let core = |i: usize| {
            d.get(i)
                .filter(|c| c.total() > 0)
                .map(|c| c.pct(busy(c) + c.irq + c.softirq))
        };
        let (server_cpus, load_cpu) = ctx.caps.cpu_plan(1);
        if let (Some(&sc), Some(lc)) = (server_cpus.first(), load_cpu) {
            if let (Some(a), Some(b)) = (core(sc), core(lc)) {
                metrics.insert("server_core_busy_pct".into(), a);
                metrics.insert("load_core_busy_pct".into(), b);
            }
        }
        let busy_s = d.iter().map(busy).sum::<u64>() as f64 / hz;
        let ours_s = srv1.saturating_sub(srv0) as f64 / hz + (kids1 - kids0).max(0.0);
        metrics.insert(
            "foreign_cpu_pct".into(),
            (100.0 * (busy_s - ours_s) / wall).max(0.0),
        );
    }
    let limited = metrics.get("generator_saturated") == Some(&1.0)
        || metrics
            .get("load_core_busy_pct")
            .is_some_and(|b| *b >= 95.0);
    metrics.insert("generator_limited".into(), if limited { 1.0 } else { 0.0 });
    Ok(LoadResult {
        metrics,
        raw,
        cmdline,
    })
}

/// Run `evdispatch bench ARGS` (ARGS include `--json`) and return its
/// output and the command line.
pub fn run_bench(
    ctx: &Ctx,
    args: &[String],
    tag: &str,
) -> anyhow::Result<(contracts::BenchOutput, String)> {
    let log_path = ctx.logs.join(format!("{tag}.bench.log"));
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(&log_path)?);
    let cmdline = format!("evdispatch bench {}", args.join(" "));
    let out = ChildGroup::spawn(cmd, "the benchmark")?.wait_output()?;
    if !out.status.success() {
        let log = log_tail(Some(&log_path), 20);
        bail!("`{cmdline}` failed ({}):\n{log}", out.status);
    }
    Ok((
        contracts::bench_output(&String::from_utf8_lossy(&out.stdout))
            .with_context(|| format!("reading the output of `{cmdline}`"))?,
        cmdline,
    ))
}
