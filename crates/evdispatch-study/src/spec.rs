//! What the study's layers share: the profiles, a scenario's definition
//! (its plan of jobs, how to run one, its figures and its claims), what the
//! machine offers ([`Caps`]) and the servers and loads a job runs
//! ([`ServerSpec`], [`LoadSpec`]). [`crate::drive`] and [`crate::contracts`]
//! both import these; this module imports neither (nor any scenario), so the
//! crate's modules form layers, not a circle: `spec` below `contracts` below
//! `drive` below `web` below each scenario below `scenarios` (the list).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::claims::Claim;
use crate::env::PeerStatus;
use crate::figure::Figure;
pub use crate::results::Calibration;
use crate::results::{Point, ScenarioRecord, Skip};

/// How big a run is: rates, counts and durations come from the profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// A few seconds per scenario: the smoke test.
    Tiny,
    /// Every scenario in at most 10 minutes on a 2-core machine.
    Quick,
    /// The seeds' ranges, scaled to this machine: at most 2 hours.
    Full,
}

impl Profile {
    /// The name used on the command line and in results.
    pub fn name(self) -> &'static str {
        self.pick("tiny", "quick", "full")
    }

    /// The wall-clock budget for every scenario together, seconds (tiny:
    /// two minutes, its overload points waiting out their tails).
    pub fn budget_s(self) -> f64 {
        self.pick(120.0, 600.0, 7200.0)
    }

    /// The part of [`Profile::budget_s`] kept for the opt-in scenarios this
    /// profile runs by default (full runs the hostile conditions, about
    /// 2,940 s planned with its 15-minute soak; the rest is slack, since
    /// they ran 13% over their plan in the full run of 2026-11-24): the other scenarios must
    /// fit in the rest.
    pub fn opt_in_reserve_s(self) -> f64 {
        self.pick(0.0, 0.0, 3_400.0)
    }

    /// The tiny profile keeps only the entries of `all` named in `tiny`
    /// (enough for every chart and claim to get data); the others keep all.
    pub fn sample(self, all: Vec<String>, tiny: &[&str]) -> Vec<String> {
        match self {
            Profile::Tiny => all
                .into_iter()
                .filter(|m| tiny.contains(&m.as_str()))
                .collect(),
            _ => all,
        }
    }

    /// How many rounds a scenario's jobs run by default under this
    /// profile (a scenario's plan may ask for fewer, see [`Plan::rounds`]):
    /// one in tiny (its verdicts are flagged as decided on one round), three
    /// in quick (the least that gives a range across rounds), five in full
    /// (the least whose range covers the median with at least 90%).
    pub fn rounds(self) -> u32 {
        self.pick(1, 3, crate::claims::rounds::FULL_ROUNDS)
    }

    /// Pick one of three values by profile.
    pub fn pick<T>(self, tiny: T, quick: T, full: T) -> T {
        match self {
            Profile::Tiny => tiny,
            Profile::Quick => quick,
            Profile::Full => full,
        }
    }
}

/// One unit of work: usually one server + load run, producing one point
/// (a bench run produces many).
#[derive(Debug, Clone)]
pub struct Job {
    /// Shown in the progress bar.
    pub label: String,
    /// The job's full configuration; the scenario's `run` reads it back.
    pub config: Map<String, Value>,
    /// Estimated wall-clock seconds (for the progress bar's ETA and the
    /// profile budget check).
    pub est_s: f64,
    /// The round it runs in when the plan has several (its logs are then
    /// the round's own); 0 when the plan has one.
    pub round: u32,
}

/// A file-name-safe version of a label.
pub fn tag(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Job {
    /// A file-name-safe name for its logs: its label's, with `.rN` for
    /// round N when the plan has several rounds (each keeps its own logs).
    pub fn tag(&self) -> String {
        let tag = tag(&self.label);
        match self.round {
            0 => tag,
            r => format!("{tag}.r{r}"),
        }
    }
}

/// What a scenario will do under a profile, given what is available.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// The profile's parameters for this scenario, recorded in the results.
    pub params: Value,
    /// The runs to make.
    pub jobs: Vec<Job>,
    /// What cannot be measured here, and why.
    pub skipped: Vec<Skip>,
    /// How many rounds the jobs run (round r = every job once, in order,
    /// so one round's points are measured close in time and compare as
    /// pairs); 0 means the profile's [`Profile::rounds`], which
    /// [`Scenario::plan_for`] fills in.
    pub rounds: u32,
}

impl Plan {
    /// Estimated seconds for every job of every round.
    pub fn est_s(&self) -> f64 {
        // `+ 0.0`: an empty sum is -0.0, which prints as "-0".
        self.jobs.iter().map(|j| j.est_s).sum::<f64>() * f64::from(self.rounds.max(1)) + 0.0
    }

    /// Add a job whose configuration is `spec` serialized.
    pub fn job<T: serde::Serialize>(&mut self, label: impl Into<String>, spec: &T, est_s: f64) {
        let config = match serde_json::to_value(spec) {
            Ok(Value::Object(m)) => m,
            other => panic!("a job spec must serialize to an object, got {other:?}"),
        };
        self.jobs.push(Job {
            label: label.into(),
            config,
            est_s,
            round: 0,
        });
    }

    /// Record that `what` is not measured because `why`.
    pub fn skip(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.skipped.push(Skip {
            what: what.into(),
            why: why.into(),
        });
    }
}

/// What a job's `run` gets: where to write, what binary to drive.
#[derive(Debug)]
pub struct Ctx {
    /// The profile.
    pub profile: Profile,
    /// The output directory.
    pub out: PathBuf,
    /// The document root our server and the peers serve (files of the
    /// sizes the seeds used).
    pub www: PathBuf,
    /// Where each run's server and load logs go.
    pub logs: PathBuf,
    /// The `evdispatch` binary that provides bench, serve and load.
    pub exe: PathBuf,
    /// What is available.
    pub caps: Caps,
    /// The second host the load generators run on (`--load-host`), `None`:
    /// here.
    pub load_host: Option<crate::remote::LoadHost>,
}

/// One experiment. To add one: write a folder `scenarios/<name>/` whose
/// `mod.rs` exports a `SCENARIO` of this type (its plan for each profile,
/// how to run one job — usually `crate::web::run_web` — and its figures)
/// and whose `claims.rs` holds the claims its data decide, then add
/// `<name>` to the list in `scenarios/mod.rs` (one line).
pub struct Scenario {
    /// Short id for `--only` and file names.
    pub id: &'static str,
    /// Title in the report.
    pub title: &'static str,
    /// Which seed texts and sections it re-runs.
    pub seeds: &'static str,
    /// What it measures and how the seeds drew it.
    pub about: &'static str,
    /// The jobs for a profile.
    pub plan: fn(Profile, &Caps) -> Plan,
    /// Run one job.
    pub run: fn(&Ctx, &Job) -> anyhow::Result<Vec<Point>>,
    /// Its figures (charts and tables), drawn from its record.
    pub figures: fn(&ScenarioRecord) -> Vec<Figure>,
    /// Runs only when named with `--only`, or under `--profile full` (long
    /// scenarios that do not fit the quick profile's 10 minutes).
    pub opt_in: bool,
    /// The seeds' claims its data decide, in the order the report lists them.
    pub claims: &'static [Claim],
}

impl Scenario {
    /// Whether a run with `profile` and no `--only` includes it.
    pub fn runs_by_default(&self, profile: Profile) -> bool {
        !self.opt_in || profile == Profile::Full
    }

    /// Its plan for this run: its own, or, for an opt-in scenario that this
    /// run does not include (not named with `--only`, profile below full),
    /// no jobs and the reason.
    pub fn plan_for(&self, p: Profile, caps: &Caps, named: bool) -> Plan {
        let mut plan = (self.plan)(p, caps);
        if plan.rounds == 0 {
            plan.rounds = p.rounds();
        }
        if named || self.runs_by_default(p) {
            return plan;
        }
        let est_s = plan.est_s();
        let mut skip = Plan {
            params: plan.params,
            rounds: plan.rounds,
            ..Plan::default()
        };
        skip.skip(
            self.id,
            format!(
                "runs in the full profile, or with --only {} (about {:.0} min at this profile)",
                self.id,
                est_s / 60.0
            ),
        );
        skip
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scenario").field("id", &self.id).finish()
    }
}

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
    /// Descriptors one process may hold here (RLIMIT_NOFILE, its soft limit
    /// raised to the hard one); 0 when unknown.
    pub nofile: u64,
    /// Whether a server can be given a CPU budget here (a cgroup with CPU
    /// bandwidth control), or why not.
    pub budgets: BudgetSupport,
    /// This run's calibration of the server's CPU budget (see
    /// [`Calibration`]); `None` before it is measured (and in `--list`
    /// without a saved one).
    pub calibration: Option<Calibration>,
}

/// Whether CPU budgets can be set on this machine: `Ok` with where
/// (`cgroup v1 (cpu.cfs_quota_us) at /sys/fs/cgroup/cpu`), `Err` with why
/// not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetSupport(pub Result<String, String>);

impl Default for BudgetSupport {
    fn default() -> Self {
        BudgetSupport(Err("not probed".into()))
    }
}

/// The fraction of the generator's ceiling at which the calibration puts
/// the knee of the mechanism that saturates last (epoll, the cheapest per
/// reply of ours): the other mechanisms' knees fall below it. The ceiling
/// is measured in a closed loop, which offers about 1.5 times what one
/// generator process offers in the open loop the scenarios use, so 0.3 of
/// it is about 0.45 of the open-loop ceiling, and sweeps to twice the knee
/// stay within what the generator can offer.
pub const KNEE_OF_CEILING: f64 = 0.3;

impl Caps {
    /// The calibrated budget for servers of load scenarios (`None`: run as
    /// the host gives, see [`Calibration::no_budget`]).
    pub fn cpu_budget(&self) -> Option<evdispatch_harness::CpuBudget> {
        self.calibration.as_ref().and_then(|c| c.budget)
    }

    /// `server` with the calibrated budget.
    pub fn budgeted(&self, server: ServerSpec) -> ServerSpec {
        ServerSpec {
            cpu_budget: self.cpu_budget(),
            ..server
        }
    }

    /// The rates a load scenario sweeps: `multiples` of the calibrated
    /// knee, or `fallback` (fixed rates, new connections/s) without a
    /// calibration.
    pub fn rates(&self, multiples: &[f64], fallback: Vec<f64>) -> Vec<f64> {
        match &self.calibration {
            Some(c) => multiples.iter().map(|m| c.rate(*m)).collect(),
            None => fallback,
        }
    }

    /// What a load scenario records of the budget in its parameters: the
    /// calibration's (budget, knee, ceiling) and `no_cpu_budget` with why
    /// when the servers ran without one (the claims say so).
    pub fn budget_params(&self) -> Value {
        let mut v = match &self.calibration {
            Some(c) => c.params(),
            None => serde_json::json!({}),
        };
        if let (Some(why), Some(m)) = (self.no_budget(), v.as_object_mut()) {
            m.insert("no_cpu_budget".into(), Value::String(why));
        }
        v
    }

    /// A scenario's `params` with [`Caps::budget_params`] added.
    pub fn with_budget_params(&self, mut params: Value) -> Value {
        if let (Some(m), Value::Object(b)) = (params.as_object_mut(), self.budget_params()) {
            m.extend(b);
        }
        params
    }

    /// Why servers run without a budget, `None` when they have one.
    pub fn no_budget(&self) -> Option<String> {
        match &self.calibration {
            Some(c) => c.no_budget.clone(),
            None => Some(match &self.budgets.0 {
                Err(why) => why.clone(),
                Ok(_) => "not calibrated".into(),
            }),
        }
    }
}

impl Caps {
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
            nofile: 20_000,
            budgets: BudgetSupport(Ok(
                "cgroup v1 (cpu.cfs_quota_us) at /sys/fs/cgroup/cpu".into()
            )),
            calibration: None,
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
        if self.budgets.0.is_ok() {
            v.push("cpu-budget".into());
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
    /// The server's CPU budget (a cgroup of its own, see
    /// `evdispatch_harness::cgroup`); `None`: as much as the host gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_budget: Option<evdispatch_harness::CpuBudget>,
    /// Serve HTTPS (TLS 1.3) with a self-signed ECDSA P-256 certificate
    /// made for the run (nginx: the same certificate, `ssl_protocols
    /// TLSv1.3`); the load generator trusts it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub tls: bool,
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
            cpu_budget: None,
            tls: false,
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

fn is_zero(v: &f64) -> bool {
    *v == 0.0
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
    /// Seconds of the same load offered before the measured window and left
    /// out of its figures (the generator's `--warmup`: the server's caches,
    /// its interest set and the held connections settle first).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_s: f64,
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
    /// Over HTTPS: every connection makes a full TLS handshake (`load
    /// --no-tls-resume`) instead of resuming a session.
    #[serde(default, skip_serializing_if = "is_false")]
    pub full_handshakes: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl LoadSpec {
    /// Open-loop sessions of one request for `document` at `rate` per second.
    pub fn sessions(document: &str, rate: f64, duration_s: f64) -> LoadSpec {
        LoadSpec {
            document: document.into(),
            rate: Rate::PerSec(rate),
            duration_s,
            warmup_s: 0.0,
            sessions: true,
            calls: 1,
            persistent: 0,
            connections: 0,
            inactive: 0,
            idle: 0,
            procs: 1,
            timeout_s: 2.0,
            full_handshakes: false,
        }
    }

    /// The reply-rate sampling interval: a fifth of the window (at least
    /// 0.1 s, at most 1 s), so every point has min, max and a spread.
    pub fn interval_s(&self) -> f64 {
        (self.duration_s / 5.0).clamp(0.1, 1.0)
    }

    /// The same with `warmup_s` seconds of unmeasured load first.
    pub fn warmed(self, warmup_s: f64) -> LoadSpec {
        LoadSpec { warmup_s, ..self }
    }

    /// Seconds the generator offers load: the warm-up and the window.
    pub fn offered_s(&self) -> f64 {
        self.warmup_s + self.duration_s
    }

    /// Long-lived connections held during the run.
    pub fn held(&self) -> u32 {
        self.inactive + self.idle + self.persistent + self.connections
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_round_of_a_job_has_its_own_log_tag() {
        let mut plan = Plan::default();
        plan.job("epoll, 100 conns", &serde_json::json!({}), 1.0);
        let job = plan.jobs.remove(0);
        assert_eq!(job.tag(), "epoll--100-conns");
        let r2 = Job {
            round: 2,
            ..job.clone()
        };
        let r3 = Job { round: 3, ..job };
        assert_eq!(r2.tag(), "epoll--100-conns.r2");
        assert_ne!(r2.tag(), r3.tag());
    }
}
