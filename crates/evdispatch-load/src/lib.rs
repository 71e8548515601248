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
//! | closed loop | `--rate max --connections C` | `C` connections, each sending its next request when the reply is in (saturation, like wrk); with `--sessions N`, `N` sessions in all, `C` at a time |
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
//! same name; a `Transfer-Encoding` over a body is refused, the body being
//! sent as it is with its `Content-Length`), pick their path by weight from `--urls FILE`, or play
//! httperf's session log with `--wsesslog N,X,FILE` ([`wsesslog`]). A
//! reply that comes before its request is all written (a server answering
//! an upload early) is counted when it arrives, and the rest of the
//! request still goes out before the next one on that connection (its
//! framing is on the wire: RFC 9112 §9.5), as wrk and curl do; when it
//! cannot within `--timeout`, the generator closes the connection and goes
//! on over a new one (`connections.closed_by_client`, a reconnect), which
//! is not an error: the request has its reply.
//!
//! ## How long a run lasts
//!
//! `--duration` (default 10 s) is the measured window, after `--warmup`;
//! then the requests still outstanding are waited for, `--timeout` at
//! most. With `--sessions N` (or `--wsesslog N,…`) and no `--duration`,
//! the run lasts, as httperf's test, until the last of the `N` sessions
//! ends: every call of every session is measured, and `duration_s` is that
//! window (`config.run_to_end` says so). It always ends by itself: every
//! connect and every call has its `--timeout`, think times are finite and a
//! session's failed connection ends it. With `--duration`, no session call
//! starts after the window; the sessions cut short are counted
//! (`sessions_unfinished`).
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
//! ## The I/O engine
//!
//! `--engine` chooses how a worker does the I/O of its plain-HTTP
//! closed-loop and persistent connections, the path whose cost per reply
//! bounds a generator's capacity:
//!
//! * `readiness`: every connection on the `--mechanism` poller; a `write`
//!   per request and a `read` per reply after the mechanism's event.
//! * `uring`: once connected, those connections leave the poller for a
//!   per-worker io_uring: a receive stays posted while the connection is
//!   open, each request is a `send` queued as soon as the previous reply is
//!   handled, and one `io_uring_enter` per turn of the loop submits the
//!   turn's sends and waits for the next completions (about 0.9 system
//!   calls per reply against 2.9). Nothing waits to be batched: a turn ends
//!   when its completions are handled, as wrk's does. Everything else
//!   (connecting, TLS, sessions, idle, inactive and slow clients, timers)
//!   stays on the poller, whose descriptor the ring watches.
//! * `auto` (the default): `uring` where the kernel allows io_uring (5.11;
//!   `DEFER_TASKRUN` and receive-poll-first from 6.1) and the mechanism has
//!   a descriptor (epoll, epoll-et, uring), `readiness` otherwise.
//!
//! The JSON's `config.engine` says what was asked.
//!
//! ## The `--json` contract
//!
//! One JSON object ([`Summary`]); programs (the study) read it. Fields keep
//! their meaning while `schema` is `"evdispatch-load/1"`:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `schema` | string | `"evdispatch-load/1"` |
//! | `config` | object | the full configuration ([`Config`]): `url` (a password in it shown as `***`, and a user given without a password, often a token, as `***` too), `target` (the address used), `addresses` (all resolved, in the order tried), `tls` (`server_name`, `insecure`, `cacert`; `null` for http), `method`, `body_file`, `body_bytes`, `urls` (`path`, `weight`), `wsesslog` (`sessions`, `think_s`, `file`), `rate` (`{"per_second": R}` or `"max"`, `null` without an active workload), `arrival`, `duration_s` (with `run_to_end`, the window measured), `run_to_end` (the run lasted until its last session ended), `warmup_s`, `timeout_s`, `sessions`, `calls`, `persistent`, `inactive`, `inactive_send`, `idle`, `slow`, `slow_bytes`, `slow_interval_s`, `slow_ramp_s`, `procs`, `server_pids`, `cpus`, `headers` (an `Authorization` or `Proxy-Authorization` value shown as its scheme and `***`, or as `***` alone when it is a single token such as a raw key), `source_addrs`, `mechanism`, `engine` (`auto`, `uring`, `readiness`), `interval_s`, `slot_tolerance_ms`, `seed`, `connect_burst` |
//! | `duration_s` | number | length of the measured window (with `config.run_to_end`, until the last session ended) |
//! | `requests` | integer | requests of the active workloads whose slot fell in the window and that were sent |
//! | `replies` | integer | complete replies to those requests (including ones that arrived in the drain after the window) |
//! | `replies_in_window` | integer | replies received inside the window |
//! | `reply_rate` | number | `replies_in_window / duration_s`, replies/s |
//! | `rate_intervals` | object | `interval_s`, `samples` (replies/s of each full interval), `min`, `avg`, `max`, `stddev` (as httperf's "Reply rate") |
//! | `latency_us` | object | corrected latency, µs: `count`, `min`, `mean`, `stddev`, `p50`, `p90`, `p99`, `p999`, `max` (all 0 when `count` is 0), and `percentiles`: `[{"percentile": 50.0, "us": …}, …]` at 50, 75, 90, 99, 99.9, 99.99, 99.999 and 100 (empty when `count` is 0) |
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
//! | `reconnects` | integer | connections that ended to be replaced by a new one, counted when they end: a persistent or closed-loop connection closed (or reset) by the server between requests or with one outstanding (then also a `server_closed` or `reset` error, as wrk counts a read error); a persistent, closed-loop or session connection closed after a reply because the reply or `-H 'Connection: close'` said so, or by the generator after an early reply whose request could not be finished within `--timeout` (not an error) — a session's only when it has a call left and the window is open; a session's closed by the server during a think time. One that ends in the drain, or in a think time that outlasts the window, is counted though no new connection is opened then |
//! | `slow_replies` | integer | replies to slow clients |
//! | `unmeasured_replies` | integer | replies outside the measurement (warm-up, idle connections' one request) |
//! | `sessions_unfinished` | integer | sessions started that still had calls to make when the run ended: cut by `--duration` (no call starts after the window), or by Ctrl-C or `SIGTERM` (`interrupted`); with `config.run_to_end`, 0 unless interrupted |
//! | `generator_cpu_pct` | number | CPU of all worker processes over the window, % of one core |
//! | `generator_cpu_per_process_pct` | array | the same per worker |
//! | `generator_cores` | integer | cores the generator could use |
//! | `generator_saturated` | bool | a worker above 85% of its core, or all above 85% of theirs: the figures may be the generator's limit (also a `warnings` entry starting `GENERATOR SATURATED`) |
//! | `server_cpu_pct` | number or null | CPU of `--server-pid` and its children over the window, % of one core |
//! | `server_cpu` | object or null | `pids`, `cpu_s`, `pct` |
//! | `setup_s` | number | time to open the long-lived connections before the run |
//! | `warnings` | array | strings the reader must see |
//! | `interrupted` | bool | Ctrl-C (or `SIGTERM`) stopped the run: `duration_s` and the rates cover the window up to then (`config.duration_s` is what was asked) |
//! | `interrupted_by` | string or null | the signal that did, `"SIGINT"` (Ctrl-C) or `"SIGTERM"`, as the workers recorded it (so `load merge` names it too); `null` when not interrupted, and in outputs of earlier versions |
//! | `window_start_unix_s`, `window_end_unix_s` | number | the measured window in wall-clock time, Unix seconds (0 when none began) |
//! | `histograms` | object | `latency`, `latency_uncorrected`, `connect`: the histograms (µs) in HdrHistogram's V2 serialization, base64, what `load merge` adds up |
//! | `checks` | array | the `--fail-if` thresholds: `expr`, `measured`, `limit` (in the expression's unit: µs for latencies), `pass` |
//!
//! ## Scripts, CI and several machines
//!
//! `evdispatch load URL` alone runs the default load: closed loop over
//! [`config::DEFAULT_CONNECTIONS`] (10, as wrk) connections for 10 s. wrk's
//! short flags work, and their counts take wrk's SI suffixes (`-c 1k`, `-R
//! 2k`, `--sessions 1M`: 1000-based; also `--persistent`, `--inactive`,
//! `--idle`, `--slow`): `-c` connections (closed loop without `-R`; with
//! `-R R`, wrk2's open loop of `R` requests/s dealt over them), `-d`
//! duration, `-R` rate, `-H` header, `-T` timeout, `-t`/`--threads` worker
//! processes (each one single-threaded loop, as a wrk thread; no more than
//! the connections, as wrk requires), `-L`/`--latency` the
//! percentile tables as wrk2 prints them.
//!
//! Exit status: 0; 1 on bad input, or when no reply succeeded (no reply, or
//! only 4xx/5xx; a line on standard error says which); 99 when a
//! `--fail-if` threshold ([`check`] has the grammar) is broken; 130 after
//! Ctrl-C (`SIGINT`) and 143 after `SIGTERM`, which stop the run (worker
//! processes too), print the results so far marked as interrupted (naming
//! the signal) and write the interval files up to then.
//!
//! Per `--interval` ([`interval`]): `--json-stream` prints one JSON line
//! (the sum over the workers) as each ends, with `interval`, `start_s`,
//! `end_s` (from the window's start), `time_unix_s`, `requests`, `replies`,
//! `errors`, `reply_rate`, `latency_us` and `latency_uncorrected_us` (as in
//! the summary), and standard output stays clean JSON Lines to the end: the
//! text summary goes to standard error then, and with `--json` the final
//! document is one compact line after the intervals'; `--csv FILE` one row (columns
//! in `--help`); `--hdr-log FILE` an HdrHistogram interval log (V2
//! compressed, tags `corrected` and `uncorrected`, values in µs: give
//! HistogramLogProcessor `-outputValueUnitRatio 1000` for ms).
//!
//! `--start-at TIME` opens the connections, then starts the run at that
//! time, so generators on several machines measure the same window;
//! `evdispatch load merge A.json B.json …` ([`merge`]) combines their
//! `--json` outputs losslessly into one report (itself mergeable).
//!
//! The human summary (without `--json`) shows the same figures in httperf's
//! manner; a progress line runs on standard error while it works. Its
//! `Requests:` line counts the measured requests and replies; `Reply
//! status:` counts every reply, and says how many of them were measured.
//! With `-L`, wrk2's percentile tables follow (their headings exactly
//! wrk2's, a note after each saying where its latency is measured from),
//! and the text ends as wrk's does, in wrk's number format, for scripts
//! written for wrk: `N requests in T, B read` (the replies in the window),
//! `Socket errors: connect A, read B, write C, timeout D` and `Non-2xx or
//! 3xx responses: N` when not zero ([`Summary::wrk_lines`] maps the error
//! causes), `Requests/sec:` (the reply rate) and `Transfer/sec:`.
//!
//! ## Where things are
//!
//! * **The flags**: [`LoadArgs`] in this file; [`config`] checks them and
//!   turns them into a [`config::Config`] and each worker's share.
//! * **When requests start**: [`schedule`] (arrivals, the round-robin over
//!   persistent connections).
//! * **The worker**: [`engine`], one event loop per process (its files:
//!   arrivals, connections, requests, the io_uring path, the timeline);
//!   [`http`] (requests and the reply parser), [`tls`], `ring` (the io_uring
//!   engine's ring).
//! * **Several workers**: [`runner`] starts the processes and sums their
//!   reports.
//! * **The results**: [`record`] (histograms and counters), [`report`](mod@report) (the
//!   summary and `--json`), [`interval`], [`merge`], [`check`] (`--fail-if`).
//! * **For other crates**: [`cmdline::LoadCommand`], the typed command line
//!   that starts a load.

#![deny(missing_docs)]
// `unsafe` only where io_uring lends the kernel a buffer: `ring` and the two
// engine calls that post a send or a receive, each allowed where it is.
#![deny(unsafe_code)]

pub mod check;
pub mod cmdline;
pub mod config;
pub mod engine;
pub mod http;
pub mod interrupt;
pub mod interval;
pub mod merge;
pub mod record;
pub mod report;
#[allow(unsafe_code)]
mod ring;
pub mod runner;
pub mod schedule;
pub mod target;
pub mod tls;
pub mod wsesslog;

pub use config::{Arrival, Config, InactiveSend, IoEngine, Rate, WorkerSpec};
pub use report::{Latency, Summary};
pub use runner::{execute, RunOptions};

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
    #[arg(long, value_name = "N", value_parser = config::parse_count)]
    pub sessions: Option<u64>,
    /// Requests per session.
    #[arg(long, default_value_t = 1, value_name = "K")]
    pub calls: u32,
    /// Persistent connections sharing --rate (each sends periodically).
    #[arg(long, value_name = "C", value_parser = config::parse_count)]
    pub persistent: Option<u64>,
    /// Connections of the closed loop (--rate max, or no --rate: closed
    /// loop, as wrk), or with an open-loop --rate the persistent connections
    /// sharing it (as wrk2 -c with -R).
    #[arg(long, short = 'c', value_name = "C", value_parser = config::parse_count)]
    pub connections: Option<u64>,
    /// Inactive connections: connect, never complete a request, reopen when closed.
    #[arg(long, value_name = "I", value_parser = config::parse_count)]
    pub inactive: Option<u64>,
    /// What an inactive connection sends: a request without its end, or nothing.
    #[arg(long, value_enum, default_value = "partial")]
    pub inactive_send: InactiveSend,
    /// Idle persistent connections: one request, then silence.
    #[arg(long, value_name = "I", value_parser = config::parse_count)]
    pub idle: Option<u64>,
    /// Slow clients: send the request a few bytes at a time.
    #[arg(long, value_name = "S", value_parser = config::parse_count)]
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
    /// I/O of the plain keep-alive connections: `uring` (io_uring send and
    /// receive completions, one system call per turn of the loop),
    /// `readiness` (`write`/`read` on the mechanism's events), or `auto`
    /// (`uring` where available).
    #[arg(long, value_enum, default_value_t = IoEngine::Auto)]
    pub engine: IoEngine,
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
    /// (repeatable; grammar in `evdispatch_load::check`). Each is printed
    /// with its measured value.
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
/// load is [`cmdline::LoadCommand`]).
#[derive(Debug, Clone, clap::Subcommand)]
pub enum LoadSubcommand {
    /// Combine the `--json` outputs of several runs (say, generators on
    /// several machines) into one: histograms added, counters summed, rates
    /// over the common window. The result is itself mergeable.
    Merge(merge::MergeArgs),
}

/// Exit status of a run whose `--fail-if` thresholds were not all met.
pub const EXIT_CHECK_FAILED: i32 = 99;
/// Exit status of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 130;
/// Exit status of a run stopped by `SIGTERM` (128 + SIGTERM).
pub const EXIT_TERMINATED: i32 = 143;
/// Exit status of a run in which no reply succeeded.
pub const EXIT_NO_REPLY: i32 = 1;

/// Run the command. Besides errors (exit 1 from the caller), the run ends
/// the process with [`EXIT_NO_REPLY`], [`EXIT_CHECK_FAILED`],
/// [`EXIT_INTERRUPTED`] or [`EXIT_TERMINATED`] after printing its results.
pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    if args.worker {
        return runner::worker_main();
    }
    if let Some(LoadSubcommand::Merge(m)) = &args.command {
        return exit_with(merge::run(m)?);
    }
    if args.background {
        anyhow::Context::context(evdispatch_host::set_idle_priority(), "--background")?;
    }
    let cfg = Config::from_args(&args)?;
    let r = &args.results;
    let checks = check::parse_all(&r.fail_if, &cfg)?;
    let start_at = r
        .start_at
        .as_deref()
        .map(|t| parse_start_at(t, std::time::SystemTime::now()))
        .transpose()?;
    let sinks = interval::Sinks::open(r.json_stream, r.csv.as_deref(), r.hdr_log.as_deref())?;
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || sinks.run(rx));
    interrupt::catch()?;
    if let Some(t) = start_at {
        eprintln!(
            "evdispatch load: starting at {} (in {:.1} s), once the connections are open",
            humantime::format_rfc3339_millis(t),
            t.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
                .as_secs_f64()
        );
    }
    let summary = execute(
        &cfg,
        &RunOptions {
            progress: true,
            worker_exe: None,
            start_at,
            intervals: Some(tx),
        },
    );
    // The sender went with the options: the writer ends with the last interval.
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the interval writer failed"))??;
    let mut summary = summary?;
    let out = Output {
        json: args.json,
        latency: r.latency,
        stream: r.json_stream,
    };
    let status = report(&mut summary, &checks, out)?;
    exit_with(status)
}

/// How the results are printed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Output {
    /// `--json`: the JSON document instead of the text.
    pub json: bool,
    /// `--latency`: the percentile tables in the text.
    pub latency: bool,
    /// `--json-stream`: standard output carries JSON lines only, so the
    /// document is one compact line and the text goes to standard error.
    pub stream: bool,
}

impl Output {
    /// The summary as printed: what goes to standard output, and to
    /// standard error.
    pub fn render(&self, summary: &Summary) -> anyhow::Result<(String, String)> {
        Ok(match (self.json, self.stream) {
            (true, false) => (serde_json::to_string_pretty(summary)? + "\n", String::new()),
            (true, true) => (serde_json::to_string(summary)? + "\n", String::new()),
            (false, stream) => {
                let text = summary.text(self.latency);
                if stream {
                    (String::new(), text)
                } else {
                    (text, String::new())
                }
            }
        })
    }
}

/// Evaluate the checks, print the summary (JSON or text, the percentile
/// tables on demand, the checks) and say which exit status the run earns.
pub fn report(summary: &mut Summary, checks: &[check::Check], out: Output) -> anyhow::Result<i32> {
    let json = out.json;
    let passed = check::evaluate_all(checks, summary)?;
    let (stdout, stderr) = out.render(summary)?;
    print!("{stdout}");
    eprint!("{stderr}");
    let saturated = summary
        .warnings
        .iter()
        .filter(|w| w.starts_with("GENERATOR SATURATED"));
    for w in saturated {
        eprintln!("evdispatch load: WARNING: {w}");
    }
    // The text report lists the checks; with --json they go to stderr too.
    for k in summary.checks.iter().filter(|_| json) {
        eprintln!("evdispatch load: --fail-if {k}");
    }
    let succeeded: u64 = ["1xx", "2xx", "3xx"]
        .iter()
        .filter_map(|k| summary.status.get(*k))
        .sum();
    let expects_replies =
        summary.config.rate.is_some() || summary.config.idle > 0 || summary.config.slow > 0;
    Ok(if summary.interrupted {
        eprintln!(
            "evdispatch load: interrupted ({}): results so far above",
            interrupt::name()
        );
        interrupt::exit_status()
    } else if expects_replies && succeeded == 0 {
        let total: u64 = summary.status.values().sum();
        if total == 0 {
            eprintln!(
                "evdispatch load: no reply succeeded: no reply at all ({} errors: {})",
                summary.errors_total,
                summary
                    .errors
                    .iter()
                    .filter(|(_, v)| **v > 0)
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        } else {
            eprintln!(
                "evdispatch load: no reply succeeded: all {total} replies were 4xx, 5xx or unknown"
            );
        }
        EXIT_NO_REPLY
    } else if !passed {
        EXIT_CHECK_FAILED
    } else {
        0
    })
}

fn exit_with(status: i32) -> anyhow::Result<()> {
    if status != 0 {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(status);
    }
    Ok(())
}

/// The most `--start-at` may lie ahead.
pub const START_AT_MAX_AHEAD: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Read `--start-at`: RFC 3339 (`2026-11-24T08:00:00Z`, fractions allowed)
/// or `@UNIX_SECONDS`; refused when more than a second before `now` or more
/// than [`START_AT_MAX_AHEAD`] after it.
pub fn parse_start_at(
    text: &str,
    now: std::time::SystemTime,
) -> anyhow::Result<std::time::SystemTime> {
    use anyhow::bail;
    let t = if let Some(secs) = text.strip_prefix('@') {
        let s: f64 = secs.parse().map_err(|_| {
            anyhow::anyhow!("--start-at '{text}': after '@' give Unix seconds, e.g. @1795000000")
        })?;
        if !s.is_finite() || s < 0.0 {
            bail!("--start-at '{text}': Unix seconds must be a non-negative number");
        }
        std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s)
    } else {
        humantime::parse_rfc3339_weak(text).map_err(|e| {
            anyhow::anyhow!(
                "--start-at '{text}': {e}; give RFC 3339 (e.g. 2026-11-24T08:00:00Z) or @UNIX_SECONDS"
            )
        })?
    };
    let fmt = |t| humantime::format_rfc3339_millis(t);
    if let Ok(late) = now.duration_since(t) {
        if late > std::time::Duration::from_secs(1) {
            bail!(
                "--start-at {}: that is {:.1} s ago (now {}); give a time in the future",
                fmt(t),
                late.as_secs_f64(),
                fmt(now)
            );
        }
    }
    if let Ok(ahead) = t.duration_since(now) {
        if ahead > START_AT_MAX_AHEAD {
            bail!(
                "--start-at {}: that is {} from now (now {}); at most {} ahead is accepted — is the date or the clock wrong?",
                fmt(t),
                humantime::format_duration(std::time::Duration::from_secs(ahead.as_secs())),
                fmt(now),
                humantime::format_duration(START_AT_MAX_AHEAD)
            );
        }
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_json_stream_leaves_standard_output_to_json_lines() {
        let cfg = Config::from_command_line(["http://127.0.0.1:1/", "-R", "10"]).unwrap();
        let s = Summary::new(&cfg, record::Merged::default(), None);
        let out = |json, stream| {
            Output {
                json,
                latency: true,
                stream,
            }
            .render(&s)
            .unwrap()
        };
        // --json-stream alone: the text goes to standard error.
        let (stdout, stderr) = out(false, true);
        assert!(
            stdout.is_empty() && stderr.contains("Requests:"),
            "{stdout}"
        );
        // With --json: one compact line, a JSON value.
        let (stdout, stderr) = out(true, true);
        assert_eq!(stdout.lines().count(), 1);
        assert!(stdout.ends_with('\n') && stderr.is_empty());
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["schema"], report::SCHEMA);
        // Without --json-stream, as before: text or a pretty document.
        assert!(out(false, false).0.contains("Requests:"));
        assert!(out(true, false).0.lines().count() > 10);
    }
}
