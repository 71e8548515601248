//! `bench server`: our server against nginx, lighttpd and h2o on one file,
//! server CPU per request and per connection, idle connections held, memory
//! per idle connection, judged against the targets in `report::TARGETS`.
//!
//! Every server runs with one worker pinned to `--server-cpu` (0), and every
//! load tool on `--client-cpu` (1), through the harness
//! (`evdispatch-harness`), which generates the peers' configurations. The
//! figure that ranks fast servers on two cores is the **server's CPU time**
//! (each process's CPU-time clock, to the nanosecond, master and workers summed) over the measured window,
//! divided by the work done: with one core, `wrk -t1` saturates before a
//! good server does, so requests per second alone cannot tell them apart.
//!
//! Scenarios (`--scenarios`):
//!
//! * `keepalive`: `wrk -t1 -c100` on persistent connections, the file of
//!   `--file-size` bytes (6 KB): CPU µs per request, requests/s, wrk's p99.
//! * `close`: the same with `Connection: close`, one connection per
//!   request: CPU µs per connection, connections/s.
//! * `idle`: `--idle` (10,000) idle connections held open by a separate
//!   `evdispatch load --idle` process (one request each, then silence), and
//!   with none: keep-alive throughput and CPU per request (wrk, closed
//!   loop), and the open-loop p99 at `--rate` requests/s over
//!   `--persistent` connections (`evdispatch load`, latency corrected for
//!   coordinated omission). The phases run on the same server process:
//!   none (`*_before`), held (`*_idle`), none again (`*_after`); the
//!   figures "none" (`rps_none`, `p99_none_us`, …) are the mean of the two
//!   phases with none, so that a drift of the machine over the run cancels,
//!   and the ratios (held ÷ none) are taken within the run. How far the two
//!   phases with none disagree (`rps_none_repeat`, `p99_none_repeat`:
//!   after ÷ before) is the noise a held/none ratio must be read against.
//!   A control phase between "before" and "held" (`*_elsewhere`) holds
//!   the same connections at a sink (our epoll server on the client CPU)
//!   while the measured server holds none: `p99_machine_ratio` (elsewhere
//!   ÷ none) is what the machine adds when that many connections exist,
//!   `p99_own_ratio` (held ÷ elsewhere) what holding them costs the
//!   measured server itself; likewise `rps_machine_ratio`, `rps_own_ratio`.
//!   The memory figure below comes with it.
//! * `range`, `whole`: a 64 KiB range (`Range: bytes=0-65535`) of a 1 MiB
//!   file, and a whole 64 KiB file, on persistent connections (wrk): CPU
//!   µs per request of each, and `range ÷ whole` per server paired within
//!   rounds (`range_over_whole`): a range must cost no more than the same
//!   bytes as a file of their own (no copy through user space).
//! * access log: a server named `NAME+log` (`epoll+log`, `nginx+log`) runs
//!   with its access log on a file (ours `--access-log`, nginx `access_log
//!   FILE combined`, lighttpd `mod_accesslog`, h2o `access-log`); beside
//!   `NAME` in the same run, the CPU per request it adds in `keepalive` is
//!   reported per round (`access_log_costs`), ours against nginx's.
//! * `memory`: user-space memory per idle connection, the growth of the
//!   server's resident set while they are held ÷ connections held (alone,
//!   when `idle` is not asked for).
//!
//! The floor: the rows `floor-epoll` and `floor-uring` (in the default
//! `--servers`) are two minimal servers answering a canned keep-alive
//! response from memory ([`floor`]); in `keepalive` every server's CPU per
//! request is also given as a multiple of the lower of the two floors in
//! the same round (`floor_multiples` in the JSON, paired within rounds like
//! the ratios to the best peer). They take part in `keepalive` only (they
//! parse no `Connection: close` and hold no idle connection worth
//! measuring); neither counts as ours or as a peer.
//!
//! Rounds: each round runs every scenario on every server, the servers in
//! an order rotated by one per round, so none always follows the same
//! neighbour. Each figure is reported as the median over rounds with its
//! range; comparisons with the peers are **paired within rounds** (each
//! round's value ÷ the best peer's value in that round) and then
//! summarised. Each measurement starts from a fresh network namespace when
//! the program may create one (root), so no run inherits the `TIME_WAIT`
//! sockets and timers of the runs before it (`--shared-netns` turns this
//! off).
//!
//! The targets are checked at the end ([`report::TARGETS`]); a
//! target is "met" when the median meets it, and the verdict says whether
//! every round did.

pub mod floor;
mod measure;
mod report;

use std::path::PathBuf;

use anyhow::{bail, Context};
use evdispatch_harness::{find, Peer, Tool};
use evdispatch_http::Model;
use serde::Serialize;

pub use floor::{main as floor_main, Floor, FloorArgs};
pub use measure::Run;
pub use report::{LogCostRound, LogCostRow, RatioRow, SummaryRow, Verdict, TARGETS};

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
        }
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

    /// Whether it takes part in `scenario` (the floors: keepalive only).
    pub fn runs(self, scenario: Scenario) -> bool {
        !self.is_floor() || scenario == Scenario::Keepalive
    }
}

/// The resolved settings of a run (defaults and `--quick` applied).
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Server names, in the order given.
    pub servers: Vec<String>,
    #[serde(skip)]
    contestants: Vec<Contestant>,
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
            bail!("--scenarios: give at least one of keepalive, close, idle, memory, range, whole");
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

/// A server that ran, with its version.
#[derive(Debug, Clone, Serialize)]
pub struct ServerInfo {
    /// Name (as in `--servers`).
    pub name: String,
    /// `ours`, `peer` or `floor`.
    pub kind: &'static str,
    /// Version reported by the program.
    pub version: String,
}

/// A server that could not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Name.
    pub server: String,
    /// Why, and what to do.
    pub reason: String,
}

/// The JSON document of `bench server --json`.
#[derive(Debug, Serialize)]
pub struct Outcome {
    /// `"evdispatch-bench-server/1"`.
    pub schema: &'static str,
    /// Where it ran.
    pub machine: crate::machine::Machine,
    /// The resolved settings.
    pub plan: Plan,
    /// The servers that ran.
    pub servers: Vec<ServerInfo>,
    /// Servers left out.
    pub skipped: Vec<Skipped>,
    /// Every measurement: round, scenario, server, figures.
    pub runs: Vec<Run>,
    /// What the runs say: the summary, the ratios and the targets judged
    /// (the fields of `report::Analysis`, at the top level of the JSON).
    #[serde(flatten)]
    pub analysis: report::Analysis,
}

/// Run `evdispatch bench server`.
pub fn run(args: ServerArgs) -> anyhow::Result<()> {
    let plan = Plan::new(&args)?;
    let outcome = measure_all(plan)?;
    crate::output::emit(&outcome, args.json, args.save.as_deref(), report::print)
}

/// Every measurement of `plan`, then the summaries.
pub fn measure_all(mut plan: Plan) -> anyhow::Result<Outcome> {
    if let Err(e) = find(Tool::Wrk) {
        if plan.scenarios.iter().any(|s| *s != Scenario::Memory) {
            bail!("{e} (every scenario but memory runs wrk)");
        }
    }
    let mut skipped = Vec::new();
    let mut contestants = Vec::new();
    for &c in &plan.contestants {
        if let Contestant::Peer(p, _) = c {
            if let Err(e) = find(p.tool()) {
                skipped.push(Skipped {
                    server: c.name(),
                    reason: e.to_string(),
                });
                continue;
            }
        }
        contestants.push(c);
    }
    if plan.fresh_netns {
        if let Err(e) = crate::sys::fresh_netns() {
            eprintln!(
                "note: cannot create a network namespace ({e}); measuring in this one, where \
                 TIME_WAIT sockets of one run outlive it into the next"
            );
            plan.fresh_netns = false;
        }
    }
    let bench = measure::Bench::new(&plan)?;
    let steps = (0..plan.rounds)
        .flat_map(|_| plan.scenarios.iter())
        .map(|&s| contestants.iter().filter(|c| c.runs(s)).count())
        .sum::<usize>() as u64;
    let bar = crate::output::progress_bar(steps, true, true);
    let mut runs = Vec::new();
    let mut servers: Vec<ServerInfo> = Vec::new();
    for round in 0..plan.rounds {
        for &scenario in &plan.scenarios {
            for k in 0..contestants.len() {
                // Rotated by one per round.
                let c = contestants[(k + round) % contestants.len()];
                if !c.runs(scenario) {
                    continue;
                }
                bar.set_message(format!(
                    "round {}/{}: {} on {}",
                    round + 1,
                    plan.rounds,
                    scenario.name(),
                    c.name()
                ));
                if plan.fresh_netns {
                    crate::sys::fresh_netns().context("a fresh network namespace")?;
                }
                let (run, version) = bench.run(scenario, c, round);
                if let Some(e) = &run.error {
                    bar.suspend(|| eprintln!("{} {}: {e}", scenario.name(), c.name()));
                }
                if let Some(v) = version {
                    if !servers.iter().any(|s| s.name == c.name()) {
                        servers.push(ServerInfo {
                            name: c.name(),
                            kind: match c {
                                Contestant::Ours(..) => "ours",
                                Contestant::Peer(..) => "peer",
                                Contestant::Floor(_) => "floor",
                            },
                            version: v,
                        });
                    }
                }
                runs.push(run);
                bar.inc(1);
            }
        }
    }
    bar.finish_and_clear();
    let analysis = report::analyse(&plan, &runs);
    Ok(Outcome {
        schema: "evdispatch-bench-server/1",
        machine: crate::machine::machine(),
        plan,
        servers,
        skipped,
        runs,
        analysis,
    })
}
