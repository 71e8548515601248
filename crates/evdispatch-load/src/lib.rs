//! # evdispatch load — the load generator
//!
//! `evdispatch load URL` offers HTTP/1.1 load, plain or over TLS
//! (`https://`), to any server a user names, with the workloads of the
//! seeds, combinable in one run:
//!
//! | workload | flags | what each client does |
//! |---|---|---|
//! | sessions | `--sessions N --calls K --rate R` | new connection at each arrival, `K` requests one after the other, close (httperf's `--num-conns --num-calls --rate`) |
//! | persistent | `--persistent C --rate R` | `C` keep-alive connections sharing `R` requests/s: arrivals are dealt round-robin, so each connection sends periodically (seed 004 §3.1) |
//! | closed loop | `--rate max --connections C` | `C` connections, each sending its next request when the reply is in (saturation, like wrk); with `--sessions`, `C` sessions back to back |
//! | inactive | `--inactive I [--inactive-send partial\|none]` | connect, send the request without its final blank line (or nothing), never finish it; reopened when the server closes it (seed 000 §5, httperf's idleconn) |
//! | idle | `--idle I` | one request, then silence on the open connection; reopened when the server closes it (seed 004 §4.1) |
//! | slow | `--slow S --slow-bytes B --slow-interval T [--slow-ramp R]` | sends the request `B` bytes every `T`, reads the reply, starts over |
//!
//! ## Targets, HTTPS and request mixes
//!
//! The URL's host goes through the system resolver; every address is tried
//! in the resolver's order by a pre-flight connect and the run uses the
//! first that accepts (see [`target`]). `https://` runs TLS 1.2 or 1.3 with
//! rustls inside the same non-blocking loop ([`tls`]): SNI from the host,
//! ALPN `http/1.1`, the system's roots, `--cacert FILE` or `--insecure`;
//! the handshake time is reported apart from the connect time. Requests use
//! `--method`, `--body FILE` and `--header` (which replaces a default of the
//! same name), pick their path by weight from `--urls FILE`, or play
//! httperf's session log with `--wsesslog N,X,FILE` ([`wsesslog`]).
//!
//! ## Open loop and coordinated omission
//!
//! With `--rate R` the arrivals are planned ahead (`--arrival uniform`:
//! `1/R` apart; `poisson`: exponential gaps, seeded) and do not wait for the
//! server. Every reply is recorded twice: the **corrected** latency from the
//! *intended* send time (the slot), and the **uncorrected** latency from the
//! moment the request was actually written. A request that could not leave
//! at its slot — its persistent connection still busy with the previous
//! reply, or the generator itself late by more than `--slot-tolerance-ms` —
//! counts as a **missed slot**; it is sent as soon as possible and its
//! corrected latency includes the wait. For sessions the corrected latency
//! includes the connect; later calls of a session are issued when the
//! previous reply arrives, as in httperf, so their slot is that moment. In
//! closed loop (`--rate max`) the slot is the send time: both latencies are
//! the same, which is precisely the omission wrk2 documented.
//!
//! ## Scale
//!
//! `--procs P` re-executes this binary as `P` worker processes (`load
//! --worker`, hidden): each gets its share of every workload and rate as one
//! JSON line on standard input, opens its long-lived connections, says
//! `ready`, and starts when the parent writes `go` to all of them; it answers
//! with one JSON report whose histograms travel in HdrHistogram's V2
//! serialization, so the merge is lossless. `--source-addrs N` binds the
//! connections round-robin to `127.0.0.1`, `127.0.1.1`, `127.0.2.1`, … with
//! `IP_BIND_ADDRESS_NO_PORT`, so ports are allocated per 4-tuple and each
//! address gives the whole ephemeral range again. A workload that needs more
//! descriptors or ports than the processes and addresses given can provide
//! is refused before the run, with the numbers needed.
//!
//! ## The `--json` contract
//!
//! One JSON object ([`Summary`]); programs (the study) read it. Fields keep
//! their meaning while `schema` is `"evdispatch-load/1"`:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `schema` | string | `"evdispatch-load/1"` |
//! | `config` | object | the full configuration ([`Config`]): `url`, `target` (the address used), `addresses` (all resolved, in the order tried), `tls` (`server_name`, `insecure`, `cacert`; `null` for http), `method`, `body_file`, `body_bytes`, `urls` (`path`, `weight`), `wsesslog` (`sessions`, `think_s`, `file`), `rate` (`{"per_second": R}` or `"max"`, `null` without an active workload), `arrival`, `duration_s`, `warmup_s`, `timeout_s`, `sessions`, `calls`, `persistent`, `inactive`, `inactive_send`, `idle`, `slow`, `slow_bytes`, `slow_interval_s`, `slow_ramp_s`, `procs`, `server_pids`, `cpus`, `headers`, `source_addrs`, `mechanism`, `interval_s`, `slot_tolerance_ms`, `seed`, `connect_burst` |
//! | `duration_s` | number | length of the measured window |
//! | `requests` | integer | requests of the active workloads whose slot fell in the window and that were sent |
//! | `replies` | integer | complete replies to those requests (including ones that arrived in the drain after the window) |
//! | `replies_in_window` | integer | replies received inside the window |
//! | `reply_rate` | number | `replies_in_window / duration_s`, replies/s |
//! | `rate_intervals` | object | `interval_s`, `samples` (replies/s of each full interval), `min`, `avg`, `max`, `stddev` (as httperf's "Reply rate") |
//! | `latency_us` | object | corrected latency, µs: `count`, `min`, `mean`, `stddev`, `p50`, `p90`, `p99`, `p999`, `max` (all 0 when `count` is 0) |
//! | `latency_uncorrected_us` | object | the same from the actual send time |
//! | `connect_us` | object | the same for TCP connects completed in the window |
//! | `tls_handshake_us` | object | the same for TLS handshakes completed in the window (from the TCP connect to the handshake's end; `count` 0 for http) |
//! | `missed_slots` | integer | slots whose request could not go out on time |
//! | `unsent_at_end` | integer | measured slots never sent (queued when the run ended) |
//! | `errors` | object | cause → count, every cause present: `refused`, `reset`, `timeout`, `client_fd` (generator out of descriptors), `client_port` (out of source ports), `malformed`, `server_closed` (closed with a request outstanding), `tls` (a TLS handshake or record failed), `other` |
//! | `errors_total` | integer | sum of `errors` |
//! | `errors_by_workload` | object | workload (`sessions`, `persistent`, `closed_loop`, `inactive`, `idle`, `slow`) → cause → count |
//! | `status` | object | `1xx` … `5xx`, `other` → replies |
//! | `bytes_sent`, `bytes_received` | integer | bytes written and read, whole run |
//! | `connections` | object | `attempted`, `established`, `failed`, `closed_by_client`, `closed_by_server`, `open_at_end`, `peak`, and `accounted` (true when attempted = established + failed and established = closed by either side + open at end) |
//! | `connections_peak` | integer | most connections open at once (workers' per-interval peaks summed: exact for long-lived connections, an upper bound within one interval otherwise) |
//! | `reopens` | integer | inactive and idle connections reopened after the server closed them, whole run |
//! | `reopens_in_window` | integer | those inside the window |
//! | `reopen_rate` | number | `reopens_in_window / duration_s` |
//! | `reconnects` | integer | persistent or closed-loop connections re-established after the server closed them |
//! | `slow_replies` | integer | replies to slow clients |
//! | `unmeasured_replies` | integer | replies outside the measurement (warm-up, idle connections' one request) |
//! | `generator_cpu_pct` | number | CPU of all worker processes over the window, % of one core |
//! | `generator_cpu_per_process_pct` | array | the same per worker |
//! | `generator_cores` | integer | cores the generator could use |
//! | `generator_saturated` | bool | a worker above 85% of its core, or all above 85% of theirs: the figures may be the generator's limit (also a `warnings` entry starting `GENERATOR SATURATED`) |
//! | `server_cpu_pct` | number or null | CPU of `--server-pid` and its children over the window, % of one core |
//! | `server_cpu` | object or null | `pids`, `cpu_s`, `pct` |
//! | `setup_s` | number | time to open the long-lived connections before the run |
//! | `warnings` | array | strings the reader must see |
//!
//! The human summary (without `--json`) shows the same figures in httperf's
//! manner; a progress line runs on standard error while it works.

#![deny(missing_docs)]

pub mod cmdline;
pub mod config;
pub mod engine;
pub mod http;
pub mod record;
pub mod report;
pub mod runner;
mod sys;
pub mod target;
pub mod tls;
pub mod wsesslog;

pub use config::{Arrival, Config, InactiveSend, Rate, WorkerSpec};
pub use report::{Latency, Summary};
pub use runner::{execute, RunOptions};

/// Command-line arguments of `evdispatch load`.
#[derive(Debug, Clone, clap::Args)]
pub struct LoadArgs {
    /// The URL to load: http:// or https://, any host (names through the
    /// system resolver, IPv4 or IPv6), e.g. https://example.org/index.html.
    #[arg(required_unless_present = "worker")]
    pub url: Option<String>,
    /// Offered rate of the active workloads, requests (or sessions) per
    /// second, or `max` for closed loop.
    #[arg(long, value_name = "R|max")]
    pub rate: Option<String>,
    /// Length of the measured window (e.g. 10, 10s, 500ms). Default 10 s, or
    /// sessions ÷ rate when --sessions N is given with a rate.
    #[arg(long)]
    pub duration: Option<String>,
    /// Unmeasured time before the window.
    #[arg(long, default_value = "0")]
    pub warmup: String,
    /// Sessions workload: start this many sessions, warm-up included (0: as
    /// many as the rate gives over the run).
    #[arg(long, value_name = "N")]
    pub sessions: Option<u64>,
    /// Requests per session.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub calls: u32,
    /// Persistent connections sharing --rate (each sends periodically).
    #[arg(long, value_name = "C")]
    pub persistent: Option<u64>,
    /// Connections of the closed loop (--rate max).
    #[arg(long, value_name = "C")]
    pub connections: Option<u64>,
    /// Inactive connections: connect, never complete a request, reopen when closed.
    #[arg(long, value_name = "I")]
    pub inactive: Option<u64>,
    /// What an inactive connection sends: a request without its end, or nothing.
    #[arg(long, value_enum, default_value = "partial")]
    pub inactive_send: InactiveSend,
    /// Idle persistent connections: one request, then silence.
    #[arg(long, value_name = "I")]
    pub idle: Option<u64>,
    /// Slow clients: send the request a few bytes at a time.
    #[arg(long, value_name = "S")]
    pub slow: Option<u64>,
    /// Bytes per step of a slow client.
    #[arg(long, default_value_t = 1)]
    pub slow_bytes: usize,
    /// Time between a slow client's steps.
    #[arg(long, default_value = "100ms")]
    pub slow_interval: String,
    /// Spread the slow clients' first connects evenly over this time, as
    /// independent clients would arrive (0: all at once, as fast as
    /// `--connect-burst` allows).
    #[arg(long, default_value = "0s", value_name = "T")]
    pub slow_ramp: String,
    /// Worker processes (each holds its share of every workload).
    #[arg(long, default_value_t = 1, value_name = "P")]
    pub procs: u32,
    /// Server process(es) whose CPU (with their children's) is sampled over the window.
    #[arg(long, value_name = "PID[,PID…]")]
    pub server_pid: Vec<String>,
    /// Arrival process of the open loop.
    #[arg(long, value_enum, default_value = "uniform")]
    pub arrival: Arrival,
    /// Print the summary as JSON (the contract in the crate docs).
    #[arg(long)]
    pub json: bool,
    /// Pin the workers to these CPUs (worker i on the i-th, cycling), e.g. 1 or 0-1.
    #[arg(long, value_name = "LIST")]
    pub cpu: Option<String>,
    /// Run at the lowest CPU priority (SCHED_IDLE): a background load (say,
    /// attackers that stand for other machines) that must not delay a
    /// measured generator sharing its CPU.
    #[arg(long)]
    pub background: bool,
    /// Give up on a connect or a reply after this long (e.g. 5, 500ms).
    #[arg(long, default_value = "5")]
    pub timeout: String,
    /// Request header (repeatable); one named like a default (Host,
    /// User-Agent) replaces it, an empty value removes it.
    #[arg(long, short = 'H', value_name = "NAME:VALUE")]
    pub header: Vec<String>,
    /// Source addresses spread over 127.0.0.0/8 (bound with IP_BIND_ADDRESS_NO_PORT).
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub source_addrs: u32,
    /// Readiness mechanism of the generator.
    #[arg(long, default_value = "epoll")]
    pub mechanism: String,
    /// Length of one reply-rate sample.
    #[arg(long, default_value = "1")]
    pub interval: String,
    /// A request later than its slot by more than this (ms) is a missed slot.
    #[arg(long, default_value_t = 5.0)]
    pub slot_tolerance_ms: f64,
    /// Seed of the Poisson arrivals.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Connects in flight at once per worker while opening the long-lived connections.
    #[arg(long, default_value_t = 256)]
    pub connect_burst: u64,
    /// Target, TLS and request-mix options.
    #[command(flatten)]
    pub net: target::NetArgs,
    /// Internal: run as a worker process of `evdispatch load --procs N`.
    #[arg(long, hide = true)]
    pub worker: bool,
}

/// Run the command.
pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    if args.worker {
        return runner::worker_main();
    }
    if args.background {
        anyhow::Context::context(evdispatch_proc::set_idle_priority(), "--background")?;
    }
    let cfg = Config::from_args(&args)?;
    let summary = execute(
        &cfg,
        &RunOptions {
            progress: true,
            worker_exe: None,
        },
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{}", summary.human());
    }
    for w in &summary.warnings {
        if w.starts_with("GENERATOR SATURATED") {
            eprintln!("evdispatch load: WARNING: {w}");
        }
    }
    Ok(())
}
