//! # evdispatch load — the load generator
//!
//! `evdispatch load URL` offers HTTP/1.1 or HTTP/2 load, plain or over TLS
//! (`https://`), to any server a user names, with the workloads of the
//! seeds, combinable in one run (HTTP/2: see below for which):
//!
//! | workload | flags | what each client does |
//! |---|---|---|
//! | sessions | `--sessions N --calls K --rate R` | new connection at each arrival, `K` requests one after the other, close (httperf's `--num-conns --num-calls --rate`) |
//! | persistent | `--persistent C --rate R` | `C` keep-alive connections sharing `R` requests/s: arrivals are dealt round-robin, so each connection sends periodically (seed 004 §3.1) |
//! | closed loop | `--rate max --connections C` | `C` connections, each sending its next request when the reply is in (saturation, like wrk); with `--sessions N`, `N` sessions in all, `C` at a time |
//! | inactive | `--inactive I [--inactive-send partial\|none]` | connect, send the request without its final blank line (or nothing), never finish it; reopened when the server closes it (seed 000 §5, httperf's idleconn) |
//! | idle | `--idle I` | one request, then silence on the open connection; reopened when the server closes it (seed 004 §4.1) |
//! | slow | `--slow S --slow-bytes B --slow-interval T [--slow-ramp R]` | sends the request `B` bytes every `T`, reads the reply, starts over (HTTP/2: reads the reply `B` bytes every `T`) |
//!
//! ## Targets, HTTPS and request mixes
//!
//! The URL's host goes through the system resolver; every address is tried
//! in the resolver's order by a pre-flight connect and the run uses the
//! first that accepts (see [`target`]). `https://` runs TLS 1.2 or 1.3 with
//! rustls inside the same non-blocking loop ([`tls`]): SNI from the host,
//! ALPN `http/1.1` (`h2` with `--http2`), the system's roots, `--cacert FILE` or `--insecure`;
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
//! ## HTTP/2
//!
//! `--http2` speaks HTTP/2: over `https://` by ALPN (`h2`; a server that
//! does not offer it is refused before the run, naming what it chose),
//! over `http://` by prior knowledge (h2c). `--http auto` takes what ALPN
//! gives (h2 first; HTTP/1.1 over `http://`); `--http1.1` is the default.
//! Each connection carries up to `-m/--max-streams` requests at once (as
//! h2load's `-m`), never more than the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS; `-w`/`-W` set the stream and connection
//! receive windows to 2^N-1 bytes (h2load's flags; 30 by default). HTTP/2
//! carries every workload:
//!
//! - the closed loop (`-c C -m M`: `C × M` requests in flight);
//! - the persistent connections of an open-loop `-R`, where each request
//!   takes a free stream at its own slot, and its corrected latency counts
//!   from that slot (a slot that finds every stream busy is a missed slot
//!   and waits on its connection);
//! - sessions (`--sessions N --calls K`) and `--wsesslog`: a session is
//!   one connection; its calls are streams of it, `--calls` one after the
//!   other, a session log's burst all at once as concurrent streams (up to
//!   `-m` and the server's limit), the next burst after the think time;
//!   counted as over HTTP/1.1 (a session whose connection goes away, by
//!   GOAWAY or a close, goes on over a new one);
//! - idle connections (one stream, then silence) and inactive ones (the
//!   preface and SETTINGS, then nothing: `--inactive-send` has no meaning
//!   there). Both acknowledge the server's SETTINGS and PINGs (RFC 9113
//!   §6.5, §6.7), which is all HTTP/2 asks of a silent client; the HTTP/1.1
//!   idle clients have no keep-alive probe of their own to mirror;
//! - slow clients, as slow *readers* (h2load users' slow-read test): an
//!   HTTP/1.1 slow client dribbles its request, which holds a server's
//!   request parser, but an HTTP/2 server reads whole frames into buffers
//!   that SETTINGS and flow control size, so a dribbled frame would only
//!   hold a connection open, as `--inactive` does. Over HTTP/2 the slow
//!   client sends its request at once with a stream window of
//!   `--slow-bytes` (SETTINGS_INITIAL_WINDOW_SIZE) and gives `--slow-bytes`
//!   of it back every `--slow-interval`: the server holds the reply and
//!   sends it a window at a time. The reply read, it starts over on a new
//!   connection (`slow_replies`), as over HTTP/1.1; `--timeout` bounds
//!   each read.
//!
//! Both engines carry every workload. On `--engine uring` the h2c
//! connections of the closed and open loops send and receive through
//! io_uring (each send waits for its completion, which costs a second
//! `io_uring_enter` a turn: slower than the readiness engine, so `--engine
//! auto` keeps HTTP/2 there); sessions, idle, inactive and slow
//! connections, and h2 over TLS, stay on the readiness mechanism within
//! it, as over HTTP/1.1. A GOAWAY stops new streams on its
//! connection; requests above its last stream id go again on a new
//! connection (`http2.retried_after_goaway`). Each stream's latency goes
//! into the same histograms as HTTP/1.1 replies; the `http2` object of the
//! results counts refused and reset streams (by error code), GOAWAYs,
//! connection errors (by the type of the frame that caused each, also
//! named in the run's warning), the time streams and connections had body
//! bytes to send and no flow-control window, and header bytes before and
//! after HPACK ([`proto::http2`] says what is written by hand).
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
//! The results are printed as text or as one JSON document, the contract
//! programs read ([`results::summary`]); the exit status says how the run
//! went ([`cli`]); `--interval`'s figures leave while the run goes on, as
//! JSON Lines, CSV or an HdrHistogram log ([`results::render`]); `evdispatch
//! load merge` combines the runs of several generators ([`results::merge`]).
//!
//! ## Where things are
//!
//! * **The command line**: [`args`] (the flags, clap's), [`cli`] (running
//!   the command, printing, exit statuses); [`config`] checks the flags and
//!   turns them into a [`Config`] and each worker's share;
//!   [`cmdline::LoadCommand`] is the typed command line other programs
//!   start a load with.
//! * **What is loaded**: [`target`] (URL, addresses, `--urls`, `--body`),
//!   [`wsesslog`] (httperf's session log), [`tls`].
//! * **When requests start**: [`schedule`] (arrivals, the round-robin over
//!   persistent connections).
//! * **The worker**: [`engine`], one event loop per process (its files:
//!   arrivals, connections, requests, the io_uring path, the timeline);
//!   [`proto`] (the codecs: [`proto::http1`], requests and the reply
//!   parser), `ring` (the io_uring engine's ring), [`interrupt`] (Ctrl-C
//!   and `SIGTERM`).
//! * **Several workers**: [`runner`] starts the processes and sums their
//!   reports.
//! * **The results**: [`results`], a pipeline: [`results::record`] →
//!   [`results::summary`] → [`results::checks`] → [`results::render`], with
//!   [`results::merge`] beside them.

#![deny(missing_docs)]
// `unsafe` only where io_uring lends the kernel a buffer: `ring` and the two
// engine calls that post a send or a receive, each allowed where it is.
#![deny(unsafe_code)]

pub mod args;
pub mod cli;
pub mod cmdline;
pub mod config;
pub mod engine;
pub mod interrupt;
pub mod proto;
pub mod results;
#[allow(unsafe_code)]
mod ring;
pub mod runner;
pub mod schedule;
pub mod target;
pub mod tls;
pub mod wsesslog;

pub use args::{LoadArgs, LoadSubcommand, ResultsArgs};
pub use cli::{
    parse_start_at, run, EXIT_CHECK_FAILED, EXIT_INTERRUPTED, EXIT_NO_REPLY, EXIT_TERMINATED,
    START_AT_MAX_AHEAD,
};
pub use config::{Arrival, Config, InactiveSend, IoEngine, Rate, WorkerSpec};
/// The first stage of the results, also at its earlier path
/// (`evdispatch_load::record`).
pub use results::record;
pub use results::summary::{Latency, Summary};
pub use runner::{execute, RunOptions};
