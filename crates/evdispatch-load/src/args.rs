//! The command line of `evdispatch load` as clap reads it: the flags
//! ([`LoadArgs`], [`ResultsArgs`], and the target's
//! [`NetArgs`](crate::target::NetArgs)), the `merge` subcommand
//! ([`MergeArgs`]), the values the flags take ([`Arrival`],
//! [`InactiveSend`], [`IoEngine`]) and wrk's counts with SI suffixes
//! ([`parse_count`]). The configuration (`config`) checks and resolves
//! them.

use std::path::PathBuf;

pub use crate::proto::HttpVersion;

use serde::{Deserialize, Serialize};

use crate::target;

/// Command-line arguments of `evdispatch load`.
#[derive(Debug, Clone, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct LoadArgs {
    /// `merge`: combine the `--json` outputs of several runs.
    #[command(subcommand)]
    pub command: Option<LoadSubcommand>,
    /// The URL to load: http:// or https://, any host (names through the
    /// system resolver, IPv4 or IPv6), e.g. `https://example.org/index.html`.
    /// Alone, it runs the default load: closed loop over 10 connections for
    /// 10 s (as `--rate max -c 10 -d 10s`). A user and password in it
    /// (`http://user:pass@host/`) are sent as `Authorization: Basic`, as curl
    /// does, unless `-H Authorization:…` is given; the password is never
    /// printed.
    #[arg(required_unless_present = "worker")]
    pub url: Option<String>,
    /// Offered rate of the active workloads, requests (or sessions) per
    /// second (wrk's SI suffixes: 2k is 2000), or `max` for closed loop. With `-c C` and no other workload,
    /// `-R R` spreads R requests/s over C persistent connections (wrk2).
    #[arg(long, short = 'R', value_name = "R|max")]
    pub rate: Option<String>,
    /// Length of the measured window (e.g. 10, 10s, 500ms, 1m). Default 10
    /// s; with --sessions N (or --wsesslog) the run lasts until the last
    /// session ends, every call measured (httperf's test-duration).
    #[arg(long, short = 'd')]
    pub duration: Option<String>,
    /// Unmeasured time before the window.
    #[arg(long, default_value = "0")]
    pub warmup: String,
    /// Sessions workload: start this many sessions, warm-up included (0: as
    /// many as the rate gives over --duration). With --rate max, -c C of
    /// them at a time.
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub sessions: Option<u64>,
    /// Requests per session.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub calls: u32,
    /// Persistent connections sharing --rate (each sends periodically).
    #[arg(long, value_name = "C", value_parser = parse_count)]
    pub persistent: Option<u64>,
    /// Connections of the closed loop (--rate max, or no --rate: closed
    /// loop, as wrk), or with an open-loop --rate the persistent connections
    /// sharing it (as wrk2 -c with -R).
    #[arg(long, short = 'c', value_name = "C", value_parser = parse_count)]
    pub connections: Option<u64>,
    /// Inactive connections: connect, never complete a request, reopen when
    /// closed (HTTP/2: the preface and SETTINGS, then nothing).
    #[arg(long, value_name = "I", value_parser = parse_count)]
    pub inactive: Option<u64>,
    /// What an inactive connection sends: a request without its end, or nothing.
    #[arg(long, value_enum, default_value = "partial")]
    pub inactive_send: InactiveSend,
    /// Idle persistent connections: one request, then silence.
    #[arg(long, value_name = "I", value_parser = parse_count)]
    pub idle: Option<u64>,
    /// Slow clients: send the request a few bytes at a time (HTTP/2: read
    /// the reply a few bytes at a time, by flow control).
    #[arg(long, value_name = "S", value_parser = parse_count)]
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
    /// Worker processes (each holds its share of every workload; `-t` and
    /// `--threads` as wrk's threads: each worker is one single-threaded
    /// event loop).
    #[arg(
        long,
        short = 't',
        visible_alias = "threads",
        default_value_t = 1,
        value_name = "P"
    )]
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
    /// Give up on a connect or a reply after this long (e.g. 5, 500ms;
    /// `-T` as wrk's).
    #[arg(long, short = 'T', default_value = "5")]
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
    /// I/O of the plain keep-alive connections (HTTP/1.1 and h2c): `uring`
    /// (io_uring send and receive completions, one system call per turn of
    /// the loop; the closed and open loops' connections, the others stay on
    /// the mechanism), `readiness`
    /// (`write`/`read` on the mechanism's events), or `auto` (`uring` where
    /// available for HTTP/1.1, `readiness` for HTTP/2).
    #[arg(long, value_enum, default_value_t = IoEngine::Auto)]
    pub engine: IoEngine,
    /// HTTP/2: over https:// by ALPN (an error if the server does not
    /// offer h2), over http:// by prior knowledge (h2c).
    #[arg(long, conflicts_with_all = ["http1_1", "http"])]
    pub http2: bool,
    /// HTTP/1.1 (the default).
    #[arg(long = "http1.1", id = "http1_1", conflicts_with = "http")]
    pub http1_1: bool,
    /// The protocol: `1.1`, `2`, or `auto` (what ALPN gives over https://,
    /// HTTP/1.1 over http://).
    #[arg(long, value_enum, value_name = "VERSION")]
    pub http: Option<HttpVersion>,
    /// HTTP/2: concurrent streams per connection, at most the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS (h2load's `-m`).
    #[arg(long, short = 'm', default_value_t = 1, value_name = "N")]
    pub max_streams: u32,
    /// HTTP/2: each stream's receive window is 2^N-1 bytes (h2load's `-w`).
    #[arg(long, short = 'w', default_value_t = 30, value_name = "N",
          value_parser = clap::value_parser!(u8).range(16..=30))]
    pub window_bits: u8,
    /// HTTP/2: the connection's receive window is 2^N-1 bytes (h2load's `-W`).
    #[arg(long, short = 'W', default_value_t = 30, value_name = "N",
          value_parser = clap::value_parser!(u8).range(16..=30))]
    pub connection_window_bits: u8,
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
    /// Results: thresholds, percentile tables, interval outputs, start time.
    #[command(flatten)]
    pub results: ResultsArgs,
}

/// What `evdispatch load` does with its results, and when it starts.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ResultsArgs {
    /// Fail (exit 99) unless this holds after the run, e.g. `p99<5ms`,
    /// `p99.9<=20ms`, `errors<0.1%`, `reply_rate>=0.99*rate`, `replies>1000`
    /// (repeatable; grammar in `evdispatch_load::results::checks`). Each is
    /// printed with its measured value.
    #[arg(long, value_name = "EXPR")]
    pub fail_if: Vec<String>,
    /// Print the percentile tables (50 … 99.999, 100) of the corrected and
    /// uncorrected latency with their detailed spectrum, as wrk2 --latency
    /// (`-L`).
    #[arg(long, short = 'L')]
    pub latency: bool,
    /// Write an HdrHistogram interval log (V2 compressed, tags `corrected`
    /// and `uncorrected`, values in µs) with one histogram per --interval.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<std::path::PathBuf>,
    /// Write one CSV row per --interval: interval, start_s, end_s,
    /// time_unix_s, requests, replies, errors, reply_rate, p50_us, p75_us,
    /// p90_us, p99_us, p99_9_us, p99_99_us, max_us, then the same
    /// percentiles uncorrected (uncorrected_p50_us … uncorrected_max_us).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<std::path::PathBuf>,
    /// Print one JSON line per --interval on standard output as the run
    /// goes (the sum over the worker processes); standard output then
    /// holds JSON lines only: the text summary goes to standard error, and
    /// --json's document is one compact last line.
    #[arg(long)]
    pub json_stream: bool,
    /// Start the run at this time (RFC 3339, e.g. 2026-11-24T08:00:00Z, or
    /// @UNIX_SECONDS) once the long-lived connections are open, so that
    /// generators on several machines measure the same window.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Bind the connections to these source addresses, round-robin
    /// (repeatable; instead of --source-addrs N).
    #[arg(long, value_name = "ADDR")]
    pub source_addr: Vec<std::net::IpAddr>,
}

/// Subcommands of `evdispatch load` (the typed command line that runs a
/// load is `cmdline::LoadCommand`).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum LoadSubcommand {
    /// Combine the `--json` outputs of several runs (say, generators on
    /// several machines) into one: histograms added, counters summed, rates
    /// over the common window. The result is itself mergeable.
    Merge(MergeArgs),
}

/// Arguments of `evdispatch load merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The `evdispatch load --json` outputs to combine.
    #[arg(required = true, num_args = 1.., value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Print the merged summary as JSON (the same contract as one run's).
    #[arg(long)]
    pub json: bool,
    /// Print the percentile tables, as `evdispatch load --latency`.
    #[arg(long)]
    pub latency: bool,
    /// Thresholds on the merged results, as `evdispatch load --fail-if`
    /// (exit 99 when one is broken).
    #[arg(long, value_name = "EXPR")]
    pub fail_if: Vec<String>,
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
    /// Plain-HTTP (HTTP/1.1 and h2c) closed-loop and persistent
    /// connections send and receive through io_uring (one `io_uring_enter`
    /// per turn of the loop);
    /// everything else stays on the readiness mechanism.
    Uring,
    /// Every connection on the readiness mechanism (`write`/`read` after
    /// each event).
    Readiness,
}

/// A number and its multiplier from wrk's SI suffix (its units.c: `k`, `M`,
/// `G`, 1000-based for counts, in either case).
pub(crate) fn si(text: &str) -> (&str, u64) {
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
