//! Driving the other commands: what this binary can do ([`Caps`]), starting
//! and stopping a server ([`start_server`]), running the load generator
//! ([`run_load`]) and the microbenchmarks ([`run_bench`]). Command lines and
//! output parsing live in [`crate::contracts`].

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _};
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::child::Proc;
use crate::contracts;
use crate::env::PeerStatus;
use crate::scenario::Ctx;

/// The readiness mechanisms the seeds' experiments need, with the issue that
/// brings each; used only to say what a run is waiting for. The mechanisms
/// actually run come from the binary's own table (`evdispatch mechanisms`).
pub const SEED_MECHANISMS: &[(&str, &str)] = &[
    ("select", "issue #2"),
    ("poll", "issue #2"),
    ("epoll", "issue #2"),
    ("uring", "issue #2"),
    ("rtsig", "issue #3"),
    ("rtsig-batch", "issue #3"),
    ("hybrid", "issue #3"),
];

/// The server's dispatch models that are not readiness mechanisms.
pub const MODELS: &[&str] = &["threads", "uring-completion"];

/// Peer servers run beside ours.
pub const PEER_SERVERS: &[&str] = &["nginx", "lighttpd", "h2o"];

/// Whether this build can start peer servers (nginx, lighttpd, h2o) with
/// generated configurations. That is `evdispatch-harness`'s job (issue #5).
pub const PEER_SERVERS_RUNNABLE: bool = false;
const HARNESS_PENDING: &str =
    "peer servers are started by evdispatch-harness (issue #5), not merged into this build yet";

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
    /// `evdispatch bench poller` is built.
    pub bench_poller: bool,
    /// `evdispatch bench fdalloc` is built.
    pub bench_fdalloc: bool,
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
    /// Peers found (name → version) and missing (name → install command).
    pub peers: BTreeMap<String, Result<String, String>>,
    /// Peer servers can be started (see [`PEER_SERVERS_RUNNABLE`]).
    pub peer_servers_runnable: bool,
    /// CPUs this process may use.
    pub cpus: usize,
}

impl Caps {
    /// Probe the binary at `exe` and the machine.
    pub fn probe(exe: &Path, peers: &[PeerStatus]) -> Caps {
        let help = |args: &[&str]| -> Option<String> {
            let o = Command::new(exe).args(args).arg("--help").output().ok()?;
            o.status
                .success()
                .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
        };
        let mut caps = Caps {
            bench_poller: help(&["bench", "poller"]).is_some(),
            bench_fdalloc: help(&["bench", "fdalloc"]).is_some(),
            serve: help(&["serve"])
                .map(|h| h.contains("--stats-json"))
                .unwrap_or(false),
            load: help(&["load"])
                .map(|h| h.contains("--persistent"))
                .unwrap_or(false),
            peer_servers_runnable: PEER_SERVERS_RUNNABLE,
            cpus: evdispatch_proc::available_cpus(),
            ..Caps::default()
        };
        let table = Command::new(exe)
            .args(["mechanisms", "--json"])
            .output()
            .ok()
            .and_then(|o| serde_json::from_slice::<Value>(&o.stdout).ok());
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
                Some("yes") => caps.mechanisms.push(name.to_string()),
                Some(why) => {
                    caps.unavailable_mechanisms.insert(name.into(), why.into());
                }
                None => caps.mechanisms.push(name.to_string()),
            }
        }
        for p in peers {
            caps.peers.insert(
                p.name.to_string(),
                p.version.clone().ok_or_else(|| p.absent_note()),
            );
        }
        caps
    }

    /// Everything present (for planning checks in tests).
    pub fn everything() -> Caps {
        Caps {
            bench_poller: true,
            bench_fdalloc: true,
            serve: true,
            load: true,
            mechanisms: SEED_MECHANISMS.iter().map(|(m, _)| m.to_string()).collect(),
            unavailable_mechanisms: BTreeMap::new(),
            max_fd: [("select".to_string(), 1024)].into_iter().collect(),
            peers: crate::env::PEERS
                .iter()
                .map(|p| (p.name.to_string(), Ok("1.0".to_string())))
                .collect(),
            peer_servers_runnable: true,
            cpus: 2,
        }
    }

    /// Nothing built, nothing installed.
    pub fn nothing() -> Caps {
        Caps {
            peers: crate::env::PEERS
                .iter()
                .map(|p| {
                    (
                        p.name.to_string(),
                        Err(format!("absent: apt-get install -y {}", p.package)),
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
            (self.bench_poller, "bench-poller"),
            (self.bench_fdalloc, "bench-fdalloc"),
            (self.serve, "serve"),
            (self.load, "load"),
            (self.peer_servers_runnable, "peer-servers"),
        ] {
            if on {
                v.push(format!("tool:{name}"));
            }
        }
        v.extend(self.mechanisms.iter().map(|m| format!("mechanism:{m}")));
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
        if let Some(why) = self.unavailable_mechanisms.get(m) {
            return Err(format!("mechanism {m} unavailable here: {why}"));
        }
        let issue = SEED_MECHANISMS
            .iter()
            .find(|(n, _)| *n == m)
            .map(|(_, i)| *i)
            .unwrap_or("its issue");
        Err(format!("mechanism {m} is not in this build yet ({issue})"))
    }

    /// Why our server cannot be run under load, if it cannot.
    pub fn web_missing(&self) -> Option<String> {
        let mut why = Vec::new();
        if !self.serve {
            why.push("`evdispatch serve` is not built yet (issue #4)");
        }
        if !self.load {
            why.push("`evdispatch load` is not built yet (issue #5)");
        }
        (!why.is_empty()).then(|| why.join("; "))
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
            match self.peers.get(&server.server) {
                Some(Err(absent)) => Err(format!("{}: {absent}", server.server)),
                None => Err(format!("{}: unknown peer", server.server)),
                Some(Ok(_)) if !self.peer_servers_runnable => Err(HARNESS_PENDING.to_string()),
                Some(Ok(_)) => Ok(()),
            }
        }
    }

    /// The CPU the server is pinned to and the one the load runs on.
    pub fn cpu_plan(&self) -> (Option<&'static str>, Option<&'static str>) {
        if self.cpus >= 2 {
            (Some("0"), Some("1"))
        } else {
            (None, None)
        }
    }
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
    /// `reuseport` or `shared` (plus any extra flags in `extra_args`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub listener: Option<String>,
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
    /// Further command-line arguments, verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extra_args: Vec<String>,
}

impl ServerSpec {
    /// Our server with `mechanism` and defaults otherwise.
    pub fn ours(mechanism: &str) -> ServerSpec {
        ServerSpec {
            server: "ours".into(),
            mechanism: Some(mechanism.into()),
            workers: 1,
            accept: None,
            listener: None,
            poller_opts: vec![],
            rlimit_sigpending: None,
            idle_timeout_s: None,
            header_timeout_s: None,
            extra_args: vec![],
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
    /// strategy when it is `one`), or the peer's name.
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
    /// Offered requests (or connections, for sessions) per second.
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

/// A load to offer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadSpec {
    /// The document requested (a file of the study's document root).
    pub document: String,
    /// The offered rate.
    pub rate: Rate,
    /// Seconds of measured load.
    pub duration_s: f64,
    /// New connections, each making `calls` requests (httperf's sessions);
    /// 0 with `persistent` > 0.
    #[serde(default)]
    pub sessions: bool,
    /// Requests per session connection.
    #[serde(default = "one")]
    pub calls: u32,
    /// Persistent connections sharing the rate (seed 004 §3.1).
    #[serde(default)]
    pub persistent: u32,
    /// Connections that never complete a request (seed 000 §5).
    #[serde(default)]
    pub inactive: u32,
    /// Connections that make one request and stay silent (seed 004 §4.1).
    #[serde(default)]
    pub idle: u32,
    /// Load-generator processes.
    #[serde(default = "one")]
    pub procs: u32,
}

fn one() -> u32 {
    1
}

/// A server the study started, until [`RunningServer::stop`].
#[derive(Debug)]
pub struct RunningServer {
    /// Base URL (`http://127.0.0.1:PORT`).
    pub url: String,
    /// The exact command line.
    pub cmdline: String,
    proc_: Proc,
    stats_path: Option<PathBuf>,
}

impl RunningServer {
    /// The server's main pid.
    pub fn pid(&self) -> u32 {
        self.proc_.pid()
    }

    /// Ask it to stop (SIGTERM), wait for it, and read its stats file (ours
    /// only). The process group is killed in any case.
    pub fn stop(mut self) -> anyhow::Result<Option<Value>> {
        let _ = self.proc_.signal(Signal::SIGTERM);
        let exited = self.proc_.wait_timeout(Duration::from_secs(10))?;
        let stats = match (&self.stats_path, exited) {
            (Some(p), Some(_)) => {
                let text = fs::read_to_string(p).with_context(|| {
                    format!("the server wrote no stats file {} on SIGTERM", p.display())
                })?;
                Some(
                    serde_json::from_str(&text)
                        .with_context(|| format!("{} is not JSON", p.display()))?,
                )
            }
            (Some(_), None) => bail!("{} did not stop within 10 s of SIGTERM", self.proc_.what()),
            (None, _) => None,
        };
        self.proc_.kill_group();
        Ok(stats)
    }
}

/// Start `spec`, logging to `logs/<tag>.server.log`, and wait until it
/// listens.
pub fn start_server(ctx: &Ctx, spec: &ServerSpec, tag: &str) -> anyhow::Result<RunningServer> {
    ctx.caps
        .server(spec)
        .map_err(|why| anyhow!(Unavailable(why)))?;
    if spec.server != "ours" {
        // Peers: through evdispatch-harness once merged.
        return Err(anyhow!(Unavailable(HARNESS_PENDING.into())));
    }
    let stats_path = ctx.logs.join(format!("{tag}.stats.json"));
    let _ = fs::remove_file(&stats_path);
    let (server_cpu, _) = ctx.caps.cpu_plan();
    let args = contracts::serve_args(spec, &ctx.www, &stats_path, server_cpu);
    let log = File::create(ctx.logs.join(format!("{tag}.server.log")))?;
    let mut cmd = Command::new(&ctx.exe);
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log);
    let cmdline = format!("evdispatch {}", args.join(" "));
    let mut proc_ = Proc::spawn(cmd, format!("the server ({})", spec.series()))?;
    let stdout = proc_.child_mut().stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(url) = contracts::parse_listening(&line) {
                let _ = tx.send(url);
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(15)) {
        Ok(url) => Ok(RunningServer {
            url,
            cmdline,
            proc_,
            stats_path: Some(stats_path),
        }),
        Err(_) => {
            let log =
                fs::read_to_string(ctx.logs.join(format!("{tag}.server.log"))).unwrap_or_default();
            bail!(
                "the server did not print 'listening on http://…' within 15 s: {cmdline}\n{}",
                tail(&log, 20)
            )
        }
    }
}

fn tail(text: &str, lines: usize) -> String {
    let v: Vec<&str> = text.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// What a load run measured.
#[derive(Debug)]
pub struct LoadResult {
    /// Canonical metrics ([`contracts::LOAD_METRICS`]) plus the study's own
    /// samples of the server (`server_rss_max_bytes`, `server_cpu_pct_study`).
    pub metrics: BTreeMap<String, f64>,
    /// The generator's JSON.
    pub raw: Value,
    /// The exact command line.
    pub cmdline: String,
}

/// All pids of `pid`'s process tree (the pid and its descendants).
pub fn tree_pids(pid: u32) -> Vec<u32> {
    let mut parent: Vec<(u32, u32)> = Vec::new();
    if let Ok(dir) = fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Ok(stat) = fs::read_to_string(format!("/proc/{p}/stat")) {
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, r)| r.split_whitespace().nth(1))
                    .and_then(|s| s.parse::<u32>().ok());
                if let Some(pp) = ppid {
                    parent.push((p, pp));
                }
            }
        }
    }
    let mut out = vec![pid];
    let mut i = 0;
    while i < out.len() {
        let cur = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == cur).map(|(p, _)| *p));
        i += 1;
    }
    out
}

/// RSS and CPU ticks of a process tree.
pub fn tree_sample(pid: u32) -> (u64, u64) {
    tree_pids(pid)
        .into_iter()
        .filter_map(|p| evdispatch_proc::sample(p).ok())
        .fold((0, 0), |(rss, t), s| {
            (rss + s.rss_bytes, t + s.utime_ticks + s.stime_ticks)
        })
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

/// Run the load generator against `url` while sampling the server's process
/// tree (RSS every 100 ms, CPU over the whole run).
pub fn run_load(
    ctx: &Ctx,
    spec: &LoadSpec,
    url: &str,
    server_pid: u32,
    tag: &str,
) -> anyhow::Result<LoadResult> {
    if let Some(why) = ctx.caps.web_missing() {
        return Err(anyhow!(Unavailable(why)));
    }
    let (_, load_cpu) = ctx.caps.cpu_plan();
    let args = contracts::load_args(spec, url, server_pid);
    let mut cmd = match load_cpu {
        Some(cpu) if which("taskset") => {
            let mut c = Command::new("taskset");
            c.args(["-c", cpu]).arg(&ctx.exe);
            c
        }
        _ => Command::new(&ctx.exe),
    };
    cmd.args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(ctx.logs.join(format!("{tag}.load.log")))?);
    let cmdline = format!("evdispatch {}", args.join(" "));
    let t0 = Instant::now();
    let (rss0, ticks0) = tree_sample(server_pid);
    let tcp0 = tcp_kernel_bytes();
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut rss_max, mut tcp_max) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                rss_max = rss_max.max(tree_sample(server_pid).0);
                tcp_max = tcp_max.max(tcp_kernel_bytes().unwrap_or(0));
                std::thread::sleep(Duration::from_millis(100));
            }
            (rss_max, tcp_max)
        })
    };
    let proc_ = Proc::spawn(cmd, "the load generator")?;
    let out = proc_.wait_output();
    stop.store(true, Ordering::Relaxed);
    let (rss_max, tcp_max) = sampler.join().unwrap_or((0, 0));
    let out = out?;
    let wall = t0.elapsed().as_secs_f64();
    let (_, ticks1) = tree_sample(server_pid);
    if !out.status.success() {
        let log = fs::read_to_string(ctx.logs.join(format!("{tag}.load.log"))).unwrap_or_default();
        bail!(
            "the load generator failed ({}): {cmdline}\n{}",
            out.status,
            tail(&log, 20)
        );
    }
    let raw: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("`{cmdline}` did not print JSON on stdout"))?;
    let mut metrics = contracts::parse_load(&raw);
    let hz = evdispatch_proc::clock_ticks_per_sec() as f64;
    metrics.insert(
        "server_cpu_pct_study".into(),
        100.0 * (ticks1.saturating_sub(ticks0)) as f64 / hz / wall,
    );
    metrics.insert("server_rss_start_bytes".into(), rss0 as f64);
    metrics.insert("server_rss_max_bytes".into(), rss_max.max(rss0) as f64);
    if let (Some(t0), true) = (tcp0, tcp_max > 0) {
        metrics.insert(
            "tcp_kernel_growth_bytes".into(),
            tcp_max.saturating_sub(t0) as f64,
        );
    }
    Ok(LoadResult {
        metrics,
        raw,
        cmdline,
    })
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

/// Run `evdispatch bench ARGS --json` and return its cells.
pub fn run_bench(
    ctx: &Ctx,
    args: &[String],
    tag: &str,
) -> anyhow::Result<(Vec<serde_json::Map<String, Value>>, String)> {
    let mut cmd = Command::new(&ctx.exe);
    cmd.arg("bench")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(File::create(ctx.logs.join(format!("{tag}.bench.log")))?);
    let cmdline = format!("evdispatch bench {}", args.join(" "));
    let out = Proc::spawn(cmd, "the benchmark")?.wait_output()?;
    if !out.status.success() {
        let log = fs::read_to_string(ctx.logs.join(format!("{tag}.bench.log"))).unwrap_or_default();
        bail!("`{cmdline}` failed ({}):\n{}", out.status, tail(&log, 20));
    }
    Ok((
        contracts::bench_cells(&String::from_utf8_lossy(&out.stdout))?,
        cmdline,
    ))
}

/// The exclusive lock every timing measurement on this shared machine runs
/// under (`/tmp/evd-bench.lock`), held until dropped.
pub struct BenchLock(#[allow(dead_code)] nix::fcntl::Flock<File>);

impl BenchLock {
    /// Take the lock, calling `waiting` once if someone else holds it.
    /// `$EVD_BENCH_LOCK` names another lock file (tests use a private one).
    pub fn take(waiting: impl FnOnce()) -> anyhow::Result<BenchLock> {
        use nix::fcntl::{Flock, FlockArg};
        let path = std::env::var("EVD_BENCH_LOCK").unwrap_or_else(|_| "/tmp/evd-bench.lock".into());
        let path = path.as_str();
        let open = || {
            fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)
                .with_context(|| format!("cannot open {path}"))
        };
        match Flock::lock(open()?, FlockArg::LockExclusiveNonblock) {
            Ok(l) => Ok(BenchLock(l)),
            Err(_) => {
                waiting();
                Flock::lock(open()?, FlockArg::LockExclusive)
                    .map(BenchLock)
                    .map_err(|(_, e)| anyhow!("cannot lock {path}: {e}"))
            }
        }
    }
}
