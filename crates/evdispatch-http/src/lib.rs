//! `evdispatch serve`: a static-content web server written once against the
//! [`evdispatch::Poller`] API and run over any mechanism, plus two models that
//! are not readiness-based, for comparison.
//!
//! * **readiness** (`--mechanism` = any name in [`evdispatch::MECHANISMS`]):
//!   `--workers K` event loops, each with its own poller, listener
//!   (`--listener reuseport`, one `SO_REUSEPORT` socket per loop) or a shared
//!   one (`--listener shared`, registered with `Interest::exclusive()` where
//!   the mechanism honours it, unless `--no-exclusive`); `--accept all`
//!   accepts until `EAGAIN`, `--accept one` once per readiness report (the
//!   classic select server of seed 004).
//! * **threads**: a master thread and a pre-spawned pool of `--threads N`
//!   blocking threads, one connection each (seed 004 §2.1).
//! * **uring-completion**: io_uring completions instead of readiness:
//!   multishot accept, multishot receive into provided buffers, gathered
//!   sends.
//!
//! HTTP/1.0 and 1.1, `GET` and `HEAD` (a request body read and
//! discarded), persistent connections and
//! pipelining, conditional and range requests, precompressed variants,
//! `index.html` for directories (or a listing); small files from a bounded
//! in-memory cache revalidated by modification time, large ones with
//! `sendfile`; nothing outside `--root` is ever served (every open is
//! `openat2(RESOLVE_BENEATH)`, symlinks included).
//!
//! # Where things are
//!
//! * **HTTP semantics, once, as pure functions** (no I/O), each in its own
//!   module: request parsing ([`parse_request`], `request.rs`), path
//!   normalisation ([`normalize_target`], `target.rs`), ranges
//!   ([`evaluate_range`], `range.rs`), `Accept-Encoding` ([`negotiate`],
//!   `encoding.rs`), preconditions and validators (`conditional.rs`).
//! * **The answer**: [`Responder`] (`response.rs`) turns a request into
//!   header bytes and body parts in an [`OutBatch`] (`out.rs`, which also
//!   sends it). A cached file's own header lines (type, length, validators)
//!   are built once, when the file enters the cache (`files.rs`); the lines
//!   of each response (status, `Date`, `Connection`) are added per request.
//! * **The connection's life**: the decisions (when to time out, linger,
//!   close) and their constants in `lifecycle.rs`, the deadlines in a timer
//!   wheel (`timer.rs`) that each event loop arms.
//! * **The models**, thin loops that only send what the [`Responder`] put in
//!   the batch: `readiness.rs` (any [`evdispatch::Poller`]), `completion.rs`
//!   (io_uring) and `threads.rs` (blocking threads).
//! * **This file**: the models' names ([`Model`]), [`ServerConfig`],
//!   [`Server`] (start, stop, stats), the command line ([`ServeArgs`]) and
//!   [`run`]. The typed command line other crates build to start a server:
//!   [`cmdline::ServeCommand`].
//!
//! # HTTP semantics (RFC 9110), as nginx and darkhttpd users expect
//!
//! * **Methods.** `GET` and `HEAD` are served. The other methods RFC 9110
//!   defines answer 405 with `Allow: GET, HEAD`, any other token 501
//!   (§9.1: methods are case-sensitive, `get` is unknown); both keep the
//!   connection, as nginx does for 405, a body skipped as below (a request
//!   whose framing is not known closes it, whatever its method).
//! * **Request bodies** (RFC 9112 §6). A `GET` or `HEAD` with a body
//!   (`Content-Length` or `Transfer-Encoding: chunked`, extensions and
//!   trailers included) is answered as without one, as nginx does: the
//!   body is read and discarded, and the next pipelined request follows it.
//!   A body still arriving is waited for (under the header timeout) while
//!   it fits with its head in `--max-header` bytes (the read buffer; the
//!   same bound in the io_uring model, whose input grows); a larger
//!   one, even one all received, or one the client holds back for `Expect: 100-continue` (on
//!   HTTP/1.1: ignored on 1.0, as §10.1.1 requires), is not
//!   read: the answer is sent at once and the connection closed, with the
//!   lingering close draining what still comes (RFC 9110 §9.3.1, §10.1.1;
//!   RFC 9112 §9.5; no `100 Continue` is ever sent). A `Content-Length`
//!   above [`MAX_BODY`] (1 MiB, nginx's `client_max_body_size`) is 413; a
//!   broken chunked coding, a `Transfer-Encoding` other than `chunked`
//!   alone on one line (§6.3: a MUST for a final coding other than
//!   chunked; also `gzip, chunked`, where §6.1 suggests 501; a second
//!   line, even an empty one, which a parser that takes the last line
//!   would read as no body), one beside a
//!   `Content-Length` (the smuggling shape), or one in an HTTP/1.0
//!   request (§6.1: 1.0 has no transfer codings, so its framing is
//!   faulty; nginx answers 400 too) is 400; all of these close.
//!
//! * **Validators.** Every file answer (200, 206, 304) carries
//!   `Last-Modified` and a strong `ETag` built as nginx builds it,
//!   `"mtime-size"` in hex (`-gz`/`-br` appended for a precompressed
//!   variant), from the metadata the cache holds: no `stat` per request. A
//!   modification time in the future is sent as the second the file was
//!   looked up, never later than `Date` (§8.8.2.1), and the date
//!   preconditions compare that same value.
//! * **Lists over several lines.** `If-Match`, `If-None-Match` and
//!   `Accept-Encoding` may be repeated; the lines are read as one list
//!   (§5.3).
//! * **Preconditions** in §13.2.2 order: `If-Match` (a list or `*`, strong
//!   comparison: a weak tag never matches, §13.1.1) and, only when it is
//!   absent, `If-Unmodified-Since` (holds when the file is not newer than
//!   the date; an invalid date is ignored, §13.1.4): either false answers
//!   412 (with `Vary` when the file has variants; GET and HEAD alike, as
//!   nginx). Then `If-None-Match` (a list, `*`, weak comparison; elements
//!   that are not entity tags are skipped) and, only when it is absent,
//!   `If-Modified-Since` (not modified when the file is not newer than the
//!   date, §13.1.3; an unparsable date is ignored). A match answers 304 with
//!   `ETag`, `Last-Modified`, `Vary` when the file has variants, and no body.
//!   A `--listing` page, which has neither tag nor date, is evaluated the
//!   same way: `If-Match: *` holds and any tag fails (412),
//!   `If-None-Match: *` answers 304 and any tag does not, the dates are
//!   ignored (as nginx).
//! * **Ranges.** `Accept-Ranges: bytes` on every 200 of a file. One range
//!   (`a-b`, `a-`, `-n`) answers 206 with `Content-Range: bytes a-b/LEN`;
//!   none satisfiable 416 with `Content-Range: bytes */LEN` (but `-n` of an
//!   empty file, satisfiable and empty, §14.1.2: 200, as nginx); overlapping or
//!   touching ranges are coalesced (§14.2 allows it). Several disjoint ranges
//!   answer 206 `multipart/byteranges` (§14.6) as nginx does: a random
//!   20-digit boundary, each part with `Content-Type` and `Content-Range`,
//!   in the order asked for, `Content-Length` computed ahead (HEAD: the same
//!   head). A set of more than [`MAX_RANGES`] (16, as nginx's `max_ranges`)
//!   gets the whole file with 200, the answer to "many small ranges" §14.2
//!   allows (at most 16 part headers of overhead otherwise), as does any
//!   invalid header (another unit, `5-1`, junk; §14.2 lets a server ignore
//!   it). `If-Range` applies the range only
//!   when its entity tag matches strongly or its date equals
//!   `Last-Modified` exactly (§13.1.5). HEAD answers GET's headers, 206 and
//!   416 included. A range of a cached file is a slice of the cached bytes;
//!   of a large file, `sendfile` from the range's offset (a multipart
//!   answer: part header, `sendfile` segment, next part header…) on every model
//!   (uring-completion included: it waits for writability with a one-shot
//!   poll when the socket is full), never a copy through user space.
//! * **Precompressed variants** (nginx `gzip_static`, `brotli_static`): when
//!   `f.br` or `f.gz` sits beside `f` and `Accept-Encoding` takes it (q-values
//!   honoured, `q=0` refuses, `*` counts, an invalid q-value voids its
//!   element, br preferred to gzip at equal weight, identity least preferred
//!   unless weighted), the variant is sent with `Content-Encoding`, the
//!   `Content-Type` of `f` and an ETag of its own; ranges apply to the
//!   encoded bytes. Every answer for a file that has a variant (identity and
//!   304 included) carries `Vary: Accept-Encoding`. Variants are looked for
//!   when a file enters the cache and on its once-a-second revalidation (for
//!   large files, in a small per-path memo with the same period). A
//!   directory answers as its `index.html` does, variants included
//!   (`/dir/` with `index.html.gz` beside the index: `Content-Encoding`,
//!   `Vary`), as nginx's `gzip_static` does for the index it redirects to.
//! * **Paths.** A directory named without its slash answers 301 with
//!   `Location:` the path as sent (percent-encoding kept, leading slashes
//!   collapsed to one) plus `/`, query kept. A backslash is an ordinary
//!   byte of a name (Linux has no other separator than `/`), served when
//!   such a file exists, as nginx does. `--dotfiles deny` (default):
//!   any path segment starting with `.` answers 404, except `.well-known` at
//!   the root (RFC 8615); `--dotfiles allow` serves them. A directory without
//!   `index.html` answers 403 (as nginx with `autoindex off`), or with
//!   `--listing` an HTML listing (sorted, names escaped and percent-encoded
//!   in links, sizes, dates, directories with a trailing `/`, dotfiles
//!   hidden unless allowed). Media types from `mime_guess` (but `.mjs` is
//!   `text/javascript` as `.js` is, RFC 9239), with
//!   `; charset=utf-8` for `text/*`, JavaScript, JSON and XML.
//!
//! `tests/nginx_diff.rs` serves one tree with nginx and with this server and
//! compares the answers to a corpus of requests (multipart bodies byte for
//! byte, boundaries aside). Deliberate differences, each allowed by the
//! clause named: overlapping ranges (one coalesced range here, where nginx
//! sends them as separate parts; §14.2, §15.3.7.2); an invalid range such as `bytes=a-b` (ignored here, 416
//! there; §14.2); `bytes=0-` of an empty file (416 here, ignored there:
//! §14.1.1 makes it unsatisfiable); an invalid `If-Unmodified-Since` date (ignored here, 412
//! there; §13.1.4 says ignore); `If-Unmodified-Since` beside a matching
//! `If-Match` (not evaluated here, 412 there; §13.2.2); ranges of a
//! precompressed variant (served here with
//! `Accept-Ranges`, not by `gzip_static`; §14.1, §14.3); the `Location` of a
//! percent-encoded directory name (kept as sent here, decoded there;
//! RFC 3986 §6.2.2.2); a `Transfer-Encoding` whose final coding is not
//! `chunked` (400 here, as RFC 9112 §6.3 requires; 501 there, §6.1); a
//! body that does not fit the read buffer with its head, or one held back
//! for `Expect: 100-continue` (answered without it and the connection
//! closed here; read and discarded there, after a `100 Continue`; RFC 9110
//! §9.3.1, §10.1.1, RFC 9112 §9.5); and `/%2e%2e/…` (403 here, 400 there;
//! both refuse it).
//!
//! Timeouts: `--header-timeout` runs from accept for the first request and
//! from its first byte for later ones (for one whose bytes came while the
//! answers before it were being sent, from the end of those answers, in
//! every model); `--idle-timeout` between requests on a
//! keep-alive connection, and while a client does not read its response. In
//! the readiness and io_uring models a timer wheel holds them and a wait
//! sleeps until the next deadline; the `threads` model sets them as the
//! sockets' read and write timeouts (the header timeout as what is left of
//! it at each read: a deadline there too, however the bytes trickle in; a
//! read timeout up to 50 ms shorter than that is kept, and a read woken
//! early waits again, so a head in several pieces costs one `setsockopt`).
//!
//! Limits: a request head of at most `--max-header` bytes (default 8 KiB;
//! more: 431, or 414 when the request line alone is longer), and, whatever
//! that allows, a target of at most [`MAX_TARGET`] bytes (8 KiB, nginx's
//! default line size; more: 414) and at most [`MAX_HEADERS`] header lines
//! (100; more: 431); at most [`MAX_RANGES`] ranges (16; more: the whole
//! file); a `Content-Length` of at most [`MAX_BODY`] (1 MiB; more: 413),
//! a body read only when it fits in `--max-header` with its head
//! (larger: answered without it, then closed, in every model).
//!
//! # Command-line contract
//!
//! Once every worker listens, the server prints exactly one line,
//! `listening on http://IP:PORT`, to standard output (with `--listen …:0`, the
//! port the kernel chose), and flushes. SIGINT or SIGTERM stops it
//! gracefully (no new connections; idle ones closed; busy ones get up to 3 s
//! to finish) and then `--stats-json FILE` is written (`-`: standard output).
//! SIGHUP never stops it: it reopens the `--access-log` file (logrotate's
//! `postrotate`), and is ignored without one. Start-up fails with "address
//! already in use" and a non-zero exit when another process listens on the
//! address, also with `--listener reuseport` (see the listeners' probe).
//!
//! # Operations
//!
//! `--access-log FILE` (or `-`) writes one line per response in the
//! Combined Log Format, from per-worker buffers through a writer thread, so
//! no event loop waits on the disk (see the `access_log` module).
//! `$body_bytes_sent` is what was sent of the body, as in nginx (a line is
//! completed when its response's output is written or given up, so an
//! abandoned download shows); unlike nginx, `$time_local` is when the
//! response was made, not when its last byte went. The
//! connection lifecycle every model shares (accept pauses, timer expiry,
//! lingering close, graceful stop, and their constants) is the `lifecycle`
//! module.
//!
//! # The stats document (`schema: "evdispatch-serve-stats/1"`)
//!
//! ```text
//! { "schema", "model": "readiness"|"threads"|"uring-completion",
//!   "mechanism": the --mechanism value, "address": "IP:PORT" listened on,
//!   "config": { "root", "listen", "model", "mechanism", "workers",
//!       "accept", "listener", "exclusive", "idle_timeout_ms",
//!       "header_timeout_ms", "cpus", "max_connections", "threads",
//!       "cache_bytes", "cache_max_file", "max_header", "backlog",
//!       "eager_read", "defer_accept_s", "dotfiles", "listing", "access_log",
//!       "poller_opts", "initial_events", "uring_entries" },
//!   "elapsed_s",
//!   "requests": { "total", "by_status": { "200": n, "404": n, … } },
//!   "connections": { "accepted", "closed", "header_timed_out",
//!       "idle_timed_out", "write_timed_out", "client_errors",
//!       "register_errors", "peak_open" },
//!   "accept": { "listener_events", "listener_empty", "pauses",
//!       "errors": { "EMFILE": n, … }, "wakeups_per_accept" },
//!   "wakeups", "bytes_sent",
//!   "turns": { "count", "total_ms", "p50_le_us", "p99_le_us", "p999_le_us",
//!       "at_least_256us", "at_least_1ms", "log2_us_buckets": [24 counts],
//!       "longest": { "us", "events", "accepted", "closed", "expired" },
//!       "long_256us": { "count", "sum": { same fields, added up } } },
//!   "poller": evdispatch::Stats summed over workers,
//!   "cache": { "hits", "misses", "revalidations", "reloads", "evictions",
//!       "bytes", "entries" } summed,
//!   "workers": [ { "worker", "cpu", "requests", "connections", "accept",
//!       "wakeups", "bytes_sent", "turns", "poller", "cache" }, … ] }
//! ```
//!
//! `turns` times the event loop's turns, from a wait's return to the next
//! wait (a request that arrives during a turn waits for the rest of it):
//! bucket `k` of `log2_us_buckets` counts turns of `[2^(k-1), 2^k)` µs
//! (bucket 0: under 1 µs), the `_le_us` quantiles are bounds in whole µs
//! (all derived from an HdrHistogram of 3 significant digits), and
//! `longest` is the longest turn with what it did, `long_256us` what the
//! turns of 256 µs or more did between them. Empty for `threads`.
//!
//! `accept.wakeups_per_accept` is listener reports per accepted connection:
//! above 1 with a shared listener is the thundering herd. For `threads` the
//! poller object is empty; for `uring-completion` it holds the ring's
//! counters (`waits`, `wait_syscalls`, `events` = completions,
//! `sqes_submitted`, `rearms`).

#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

use std::fmt;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use anyhow::Context;
use evdispatch::{Mechanism, Waker};
use serde_json::json;

mod access_log;
pub mod cmdline;
mod completion;
mod conditional;
mod encoding;
mod files;
mod lifecycle;
mod listing;
mod out;
mod paths;
mod range;
mod readiness;
mod request;
mod response;
mod stats;
mod status;
mod sys;
mod target;
mod threads;
mod timer;

pub use access_log::{AccessLog, Entry as AccessLogEntry, LogBuffer};
pub use conditional::{Coding, ETag};
pub use encoding::negotiate;
pub use files::{content_type, CacheLimits, CacheStats, ContentType, FileStore};
pub use paths::{Dotfiles, SiteOptions};
pub use range::{evaluate_range, RangeAnswer, Ranges, MAX_RANGES};
pub use request::{
    parse_request, FieldLines, Framing, Method, Parsed, Request, RequestEnd, Version, MAX_BODY,
    MAX_HEADERS, MAX_TARGET,
};
pub use response::{Answered, OutBatch, Responder, MAX_BATCH};
pub use stats::{Counters, ServerReport, TurnWork, Turns, WorkerReport, TURN_BUCKETS};
pub use status::Status;
pub use target::normalize_target;
pub use timer::TimerWheel;

/// How connections are dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Event loops over a readiness mechanism of the library.
    Readiness(Mechanism),
    /// A pre-spawned pool of blocking threads, one per connection.
    Threads,
    /// io_uring completions (accept, receive and send as completions).
    UringCompletion,
}

impl Model {
    /// Every model: each library mechanism, then `threads` and
    /// `uring-completion`. Tests and the study iterate this.
    pub fn all() -> Vec<Model> {
        Mechanism::all()
            .map(Model::Readiness)
            .chain([Model::Threads, Model::UringCompletion])
            .collect()
    }

    /// The `--mechanism` name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Readiness(m) => m.name(),
            Model::Threads => "threads",
            Model::UringCompletion => "uring-completion",
        }
    }

    /// `readiness`, `threads` or `uring-completion`.
    pub fn kind(self) -> &'static str {
        match self {
            Model::Readiness(_) => "readiness",
            other => other.name(),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Model, String> {
        match s {
            "threads" => Ok(Model::Threads),
            "uring-completion" => Ok(Model::UringCompletion),
            _ => s.parse::<Mechanism>().map(Model::Readiness).map_err(|_| {
                format!(
                    "unknown mechanism '{s}'; choose one of: {}, threads, uring-completion",
                    Mechanism::names()
                )
            }),
        }
    }
}

/// `--accept`: how many connections to accept per listener report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AcceptMode {
    /// One `accept` per report (the classic select server).
    One,
    /// `accept` until `EAGAIN` (multi-accept).
    All,
}

/// `--listener`: one socket per worker, or one shared by all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListenerMode {
    /// One `SO_REUSEPORT` listener per worker (the kernel spreads connections).
    Reuseport,
    /// One listener registered in every worker's poller.
    Shared,
}

/// Everything a server needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Document root.
    pub root: PathBuf,
    /// Address to listen on (port 0: the kernel picks).
    pub listen: SocketAddr,
    /// Dispatch model.
    pub model: Model,
    /// Poller configuration (its mechanism is the model's, when readiness;
    /// `uring_entries` also sizes the completion model's ring).
    pub poller: evdispatch::Config,
    /// The `--poller-opt` pairs as given (for the report).
    pub poller_opts: Vec<String>,
    /// Event loops (readiness and uring-completion).
    pub workers: usize,
    /// Accept strategy.
    pub accept: AcceptMode,
    /// Listener arrangement.
    pub listener: ListenerMode,
    /// Use the wake-one modifier on a shared listener where supported.
    pub exclusive: bool,
    /// Keep-alive idle limit (and the limit on a client not reading).
    pub idle_timeout: Duration,
    /// Limit for receiving a request's headers.
    pub header_timeout: Duration,
    /// CPUs to pin workers to (worker i on `cpus[i % len]`).
    pub cpus: Option<Vec<usize>>,
    /// Most connections open at once, over all workers (each worker takes
    /// an equal share, rounded up); accepting pauses at the limit.
    pub max_connections: usize,
    /// Pool size of the `threads` model.
    pub threads: usize,
    /// File cache limits (over all workers).
    pub cache: CacheLimits,
    /// Largest request head accepted (bytes); also the read buffer size.
    pub max_header: usize,
    /// Listen backlog.
    pub backlog: i32,
    /// Readiness model: read a new connection at once, before registering
    /// it (adaptive: tried only now and then while it keeps finding nothing).
    pub eager_read: bool,
    /// `TCP_DEFER_ACCEPT` on the listeners, seconds (0: off): the kernel
    /// hands over a connection once its request has begun to arrive (a
    /// silent client after about this long), so the first read of a new
    /// connection finds data. h2o sets 1 s; nginx has it as `deferred`.
    pub defer_accept_s: u32,
    /// Dotfiles and directory listings (`--dotfiles`, `--listing`).
    pub site: SiteOptions,
    /// `--access-log`: the Combined Log Format file (`-`: standard output);
    /// `None`: no access log.
    pub access_log: Option<PathBuf>,
}

impl ServerConfig {
    /// Defaults for serving `root` with `model` on 127.0.0.1, port 0: those
    /// of the command line ([`ServeArgs`]), so they are written once.
    pub fn new(root: impl Into<PathBuf>, model: Model) -> ServerConfig {
        #[derive(clap::Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeArgs,
        }
        let mut args = <Serve as clap::Parser>::parse_from(["serve"]).args;
        args.root = root.into();
        args.listen = "127.0.0.1:0".into();
        args.mechanism = model.name().into();
        args.config().expect("the default command line is valid")
    }

    /// The configuration as JSON (the report's `config`).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "root": self.root.display().to_string(),
            "listen": self.listen.to_string(),
            "model": self.model.kind(),
            "mechanism": self.model.name(),
            "workers": self.workers,
            "accept": format!("{:?}", self.accept).to_lowercase(),
            "listener": format!("{:?}", self.listener).to_lowercase(),
            "exclusive": self.exclusive,
            "idle_timeout_ms": self.idle_timeout.as_millis() as u64,
            "header_timeout_ms": self.header_timeout.as_millis() as u64,
            "cpus": self.cpus,
            "max_connections": if self.max_connections == usize::MAX { None } else { Some(self.max_connections) },
            "threads": self.threads,
            "cache_bytes": self.cache.max_bytes,
            "cache_max_file": self.cache.max_file,
            "max_header": self.max_header,
            "backlog": self.backlog,
            "eager_read": self.eager_read,
            "defer_accept_s": self.defer_accept_s,
            "access_log": self.access_log.as_ref().map(|p| p.display().to_string()),
            "dotfiles": format!("{:?}", self.site.dotfiles).to_lowercase(),
            "listing": self.site.listing,
            "poller_opts": self.poller_opts,
            "initial_events": self.poller.initial_events,
            "uring_entries": self.poller.uring_entries,
        })
    }

    /// Each worker's share of `max_connections` (rounded up).
    pub(crate) fn max_open_per_worker(&self) -> usize {
        if self.max_connections == usize::MAX {
            usize::MAX
        } else {
            self.max_connections.div_ceil(self.workers.max(1))
        }
    }

    /// Slots each worker reserves for its connection table up front: its
    /// share of the cap (none when uncapped). Reserved, not touched: a page
    /// becomes resident when connections first use it, so a new peak of
    /// connections costs its own pages, never a copy of the whole table (a
    /// doubling table moves every entry, stalls the loop meanwhile and,
    /// past the allocator's mmap threshold, shows as a step of RSS).
    pub(crate) fn table_reserve(&self) -> usize {
        match self.max_open_per_worker() {
            usize::MAX => 0,
            n => n.min(1 << 20),
        }
    }

    /// A responder over the document root with a cache of `limits`,
    /// logging into `log` when there is an access log.
    fn responder(&self, limits: CacheLimits, log: Option<LogBuffer>) -> io::Result<Responder> {
        let mut r = Responder::new(FileStore::open(&self.root, limits)?, self.site);
        if let Some(log) = log {
            r.set_access_log(log);
        }
        Ok(r)
    }

    fn cpu_for(&self, worker: usize) -> Option<usize> {
        self.cpus.as_ref().map(|c| c[worker % c.len()])
    }
}

/// A running server.
pub struct Server {
    addr: SocketAddr,
    cfg: Arc<ServerConfig>,
    stop: Arc<AtomicBool>,
    wakers: Vec<Wakeup>,
    joins: Vec<JoinHandle<io::Result<WorkerReport>>>,
    started: Instant,
    access_log: Option<AccessLog>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("addr", &self.addr)
            .field("model", &self.cfg.model)
            .finish()
    }
}

impl Server {
    /// Start serving; returns once every worker listens. A mechanism that is
    /// not available here fails with `ErrorKind::Unsupported`.
    pub fn start(cfg: ServerConfig) -> io::Result<Server> {
        if cfg.workers == 0 || cfg.threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--workers and --threads must be at least 1",
            ));
        }
        if cfg.max_header < 256 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--max-header must be at least 256 bytes",
            ));
        }
        let cfg = Arc::new(cfg);
        let stop = Arc::new(AtomicBool::new(false));
        let per_worker_cache = CacheLimits {
            max_bytes: cfg.cache.max_bytes / cfg.workers.max(1),
            max_file: cfg.cache.max_file,
        };
        let started = Instant::now();
        let access_log = cfg.access_log.as_deref().map(AccessLog::open).transpose()?;
        let log_buffer = || access_log.as_ref().map(AccessLog::buffer);
        // Each worker (the pool's master) sends how to wake it, or its
        // start-up error.
        let (tx, rx) = mpsc::channel();
        let (addr, joins) = match cfg.model {
            Model::Threads => {
                let l = sys::listen(cfg.listen, cfg.backlog, false, true, cfg.defer_accept_s)?;
                let listener = Arc::new(TcpListener::from(l));
                let addr = listener.local_addr()?;
                if let Some(cpus) = &cfg.cpus {
                    evdispatch_host::pin_current_thread(cpus)?;
                }
                let master = threads::start(
                    cfg.clone(),
                    listener.clone(),
                    cfg.responder(cfg.cache, log_buffer())?,
                    stop.clone(),
                )?;
                let _ = tx.send(Ok(Wakeup::Master(listener)));
                (addr, vec![master])
            }
            Model::Readiness(_) | Model::UringCompletion => {
                let listeners = make_listeners(&cfg)?;
                let addr = listeners[0].local_addr()?;
                let mut joins = Vec::new();
                for i in 0..cfg.workers {
                    let listener = listeners[i.min(listeners.len() - 1)].clone();
                    let shared = cfg.listener == ListenerMode::Shared;
                    let (cfg, stop, tx) = (cfg.clone(), stop.clone(), tx.clone());
                    let log = log_buffer();
                    let h = thread::Builder::new()
                        .name(format!("evd-worker-{i}"))
                        .spawn(move || -> io::Result<WorkerReport> {
                            let cpu = cfg.cpu_for(i);
                            let fail = |e: io::Error| {
                                let _ = tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                                e
                            };
                            if let Some(c) = cpu {
                                evdispatch_host::pin_current_thread(&[c]).map_err(fail)?;
                            }
                            let responder = cfg.responder(per_worker_cache, log).map_err(fail)?;
                            let c = cfg.clone();
                            if cfg.model == Model::UringCompletion {
                                let (w, wake) =
                                    completion::Worker::new(i, cpu, c, listener, responder, stop)
                                        .map_err(fail)?;
                                let _ = tx.send(Ok(Wakeup::Completion(wake)));
                                drop(tx);
                                return w.run();
                            }
                            let (w, waker) = readiness::Worker::new(
                                i, cpu, c, listener, shared, responder, stop,
                            )
                            .map_err(fail)?;
                            let _ = tx.send(Ok(Wakeup::Poller(waker)));
                            drop(tx);
                            w.run()
                        })?;
                    joins.push(h);
                }
                (addr, joins)
            }
        };
        drop(tx);
        let mut server = Server {
            addr,
            cfg,
            stop,
            wakers: Vec::new(),
            joins,
            started,
            access_log,
        };
        let mut first_error = None;
        for _ in 0..server.joins.len() {
            let exited = || Err(io::Error::other("a worker exited during start-up"));
            match rx.recv().unwrap_or_else(|_| exited()) {
                Ok(w) => server.wakers.push(w),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            let _ = server.stop();
            return Err(e);
        }
        Ok(server)
    }

    /// The address the server listens on (the real port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Reopen the access log file by its name (SIGHUP, after logrotate
    /// renamed it); nothing without one.
    pub fn reopen_access_log(&self) {
        if let Some(l) = &self.access_log {
            l.reopen();
        }
    }

    /// Stop gracefully and collect every worker's report.
    pub fn stop(mut self) -> io::Result<ServerReport> {
        self.stop.store(true, Ordering::Release);
        for w in &self.wakers {
            w.wake();
        }
        let panicked = match self.cfg.model {
            Model::Threads => "the master thread panicked",
            _ => "a worker thread panicked",
        };
        let mut workers = Vec::new();
        let mut first_error = None;
        for h in self.joins.drain(..) {
            match h.join().unwrap_or_else(|_| Err(io::Error::other(panicked))) {
                Ok(r) => workers.push(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Every line of the stopped workers, written.
        if let Some(log) = self.access_log.take() {
            log.finish();
        }
        if workers.is_empty() {
            if let Some(e) = first_error {
                return Err(e);
            }
        }
        workers.sort_by_key(|w| w.worker);
        Ok(ServerReport {
            model: self.cfg.model.kind(),
            mechanism: self.cfg.model.name().to_string(),
            config: self.cfg.to_json(),
            address: self.addr.to_string(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            workers,
        })
    }
}

/// How [`Server::stop`] wakes a worker out of its wait.
enum Wakeup {
    Poller(Waker),
    /// A completion worker, through the eventfd its ring reads.
    Completion(Arc<OwnedFd>),
    /// The thread pool's master, out of its blocking `accept`.
    Master(Arc<TcpListener>),
}

impl Wakeup {
    fn wake(&self) {
        match self {
            Wakeup::Poller(w) => {
                let _ = w.wake();
            }
            Wakeup::Completion(fd) => sys::eventfd_signal(fd.as_raw_fd()),
            Wakeup::Master(l) => sys::shutdown(l.as_raw_fd(), libc::SHUT_RD),
        }
    }
}

/// The listening sockets: one per worker (reuseport; the first binds the
/// requested port, possibly 0, the others the port it got) or one shared.
///
/// With `SO_REUSEPORT`, a bind succeeds wherever another socket of the same
/// user holds the port with it too: a second server would silently take
/// half the connections. So the address is first bound without it (a probe,
/// closed at once, never listening), which fails with `EADDRINUSE` whenever
/// anyone listens there; only this server's own workers then share the
/// port. (A server starting in the instant between the probe and the bind
/// could still join.)
fn make_listeners(cfg: &ServerConfig) -> io::Result<Vec<Arc<TcpListener>>> {
    let reuse = cfg.listener == ListenerMode::Reuseport;
    let listen = |addr| {
        let l = sys::listen(addr, cfg.backlog, reuse, false, cfg.defer_accept_s)?;
        io::Result::Ok(Arc::new(TcpListener::from(l)))
    };
    let first = listen(if reuse {
        sys::probe_bind(cfg.listen)?
    } else {
        cfg.listen
    })?;
    let addr = first.local_addr()?;
    let mut v = vec![first];
    if reuse {
        for _ in 1..cfg.workers {
            v.push(listen(addr)?);
        }
    }
    Ok(v)
}

/// Command-line arguments of `evdispatch serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Document root.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Address to listen on (port 0: any free port; the real one is printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// A library mechanism (`evdispatch mechanisms`), or the models `threads`
    /// and `uring-completion`.
    #[arg(long, default_value = "epoll")]
    pub mechanism: String,
    /// Event loops (one per core), readiness and uring-completion models.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Accept one connection per listener report, or all until EAGAIN.
    #[arg(long, value_enum, default_value = "all")]
    pub accept: AcceptMode,
    /// One SO_REUSEPORT listener per worker, or one shared by all.
    #[arg(long, value_enum, default_value = "reuseport")]
    pub listener: ListenerMode,
    /// With a shared listener, do not ask for wake-one (shows the herd).
    #[arg(long)]
    pub no_exclusive: bool,
    /// Close a keep-alive connection idle this long (also: a client not reading).
    #[arg(long, default_value = "60s", value_parser = evdispatch_host::parse_duration)]
    pub idle_timeout: Duration,
    /// Close a connection whose request headers take longer than this.
    #[arg(long, default_value = "10s", value_parser = evdispatch_host::parse_duration)]
    pub header_timeout: Duration,
    /// CPUs to pin workers to, e.g. `0`, `0,1`, `0-3`.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Write the final statistics here as JSON when stopped (`-`: stdout).
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// A poller tunable, `key=value` (repeatable; see evdispatch::Config::KEYS).
    #[arg(long = "poller-opt")]
    pub poller_opt: Vec<String>,
    /// Set this process's descriptor limit (RLIMIT_NOFILE) first.
    #[arg(long)]
    pub rlimit_nofile: Option<u64>,
    /// Set this process's queued-signal limit (RLIMIT_SIGPENDING) first.
    #[arg(long)]
    pub rlimit_sigpending: Option<u64>,
    /// Most connections open at once; accepting pauses at the limit.
    /// Never more than the descriptor limit allows with a reserve kept for
    /// files and the workers' own descriptors (`--fd-reserve`).
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Descriptors kept free for the files being sent when capping the
    /// connections by the descriptor limit (default: 16 + 1/64 of the
    /// limit; 0: no cap, accept until EMFILE).
    #[arg(long)]
    pub fd_reserve: Option<usize>,
    /// Pool size of the `threads` model.
    #[arg(long, default_value_t = 256)]
    pub threads: usize,
    /// Bytes of file content cached in memory (over all workers).
    #[arg(long, default_value_t = 64 << 20)]
    pub cache_bytes: usize,
    /// Largest file cached; larger files are sent with sendfile.
    #[arg(long, default_value_t = 256 << 10)]
    pub cache_max_file: usize,
    /// Largest request head accepted, bytes (larger: 431, or 414 when the
    /// request line alone is longer); also the read buffer. Fixed limits
    /// besides: a request target of at most 8192 bytes (414), at most 100
    /// header lines (431), a Content-Length of at most 1 MiB (413); a GET
    /// body is waited for (and discarded) only while it fits in this many
    /// bytes with its head, else answered without and the connection closed.
    #[arg(long, default_value_t = 8192)]
    pub max_header: usize,
    /// Listen backlog.
    #[arg(long, default_value_t = 4096)]
    pub backlog: i32,
    /// Readiness model: always wait for the mechanism's first report on a
    /// new connection instead of trying to read it at once.
    #[arg(long)]
    pub no_eager_read: bool,
    /// TCP_DEFER_ACCEPT on the listener: accept a connection only once its
    /// request has begun to arrive, or after about this long for a silent
    /// client (whole seconds; 0: off, accept at the handshake).
    #[arg(long, default_value = "1s", value_parser = evdispatch_host::parse_duration)]
    pub defer_accept: Duration,
    // HTTP semantics (issue 18 items 1-3): keep these flags together.
    /// Files and directories whose name starts with `.`: `deny` answers 404
    /// (`.well-known` at the root excepted), `allow` serves them.
    #[arg(long, value_enum, default_value = "deny")]
    pub dotfiles: Dotfiles,
    /// An HTML listing for a directory without index.html (else 403).
    #[arg(long)]
    pub listing: bool,
    /// Log every response to FILE in the Combined Log Format (nginx's
    /// `combined`), `-` for standard output; SIGHUP reopens FILE (for
    /// logrotate). Written by a thread of its own, at least once a second.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
}

impl ServeArgs {
    /// The server configuration these arguments describe.
    pub fn config(&self) -> anyhow::Result<ServerConfig> {
        let model: Model = self.mechanism.parse().map_err(anyhow::Error::msg)?;
        let listen = self
            .listen
            .to_socket_addrs()
            .with_context(|| format!("--listen {}: not an address", self.listen))?
            .next()
            .with_context(|| format!("--listen {}: resolves to nothing", self.listen))?;
        let mut poller = evdispatch::Config::new(match model {
            Model::Readiness(m) => m,
            _ => Mechanism::Epoll,
        });
        poller
            .apply(self.poller_opt.iter().map(String::as_str))
            .map_err(anyhow::Error::msg)?;
        let cpus = self.cpu.as_deref().map(evdispatch_host::parse_cpu_list);
        Ok(ServerConfig {
            root: self.root.clone(),
            listen,
            model,
            poller,
            poller_opts: self.poller_opt.clone(),
            workers: self.workers,
            accept: self.accept,
            listener: self.listener,
            exclusive: !self.no_exclusive,
            idle_timeout: self.idle_timeout,
            header_timeout: self.header_timeout,
            cpus: cpus.transpose().map_err(anyhow::Error::msg)?,
            max_connections: self.max_connections.unwrap_or(usize::MAX),
            threads: self.threads,
            cache: CacheLimits {
                max_bytes: self.cache_bytes,
                max_file: self.cache_max_file,
            },
            max_header: self.max_header,
            backlog: self.backlog,
            eager_read: !self.no_eager_read,
            defer_accept_s: self.defer_accept.as_secs_f64().ceil() as u32,
            site: SiteOptions {
                dotfiles: self.dotfiles,
                listing: self.listing,
            },
            access_log: self.access_log.clone(),
        })
    }
}

/// Lock `m`, also when a thread panicked while holding it (nothing guarded
/// here is left half-changed by a panic that matters).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many connections a server may hold with `nofile` descriptors
/// allowed, `open_now` open before it starts and `workers` workers: what is
/// left after 8 descriptors per worker (listener, poller, waker, timers)
/// and `reserve` for the files being sent (`None`: 16 plus 1/64 of the
/// limit). `Some(0)`: no cap (accept until `EMFILE`).
pub fn connection_budget(
    nofile: u64,
    open_now: usize,
    workers: usize,
    reserve: Option<usize>,
) -> Option<usize> {
    let nofile = usize::try_from(nofile).unwrap_or(usize::MAX);
    let reserve = match reserve {
        Some(0) => return None,
        Some(r) => r,
        None => 16 + nofile / 64,
    };
    Some(
        nofile
            .saturating_sub(open_now + reserve + 8 * workers.max(1))
            .max(1),
    )
}

/// Run `evdispatch serve` until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    use evdispatch_host::{set_rlimit, Resource};
    if let Some(n) = args.rlimit_nofile {
        set_rlimit(Resource::Nofile, Some(n)).context("--rlimit-nofile")?;
    }
    if let Some(n) = args.rlimit_sigpending {
        set_rlimit(Resource::Sigpending, Some(n)).context("--rlimit-sigpending")?;
    }
    let mut cfg = args.config()?;
    // Stop accepting before the descriptor table is full, so that a request
    // arriving on an accepted connection can still open its file (at the
    // very limit it would get a 500).
    let nofile = evdispatch_host::get_rlimit(Resource::Nofile)
        .context("cannot read RLIMIT_NOFILE")?
        .0;
    let open_now = evdispatch_host::open_fds(std::process::id())
        .context("cannot count this process's descriptors")?;
    if let Some(budget) = connection_budget(nofile, open_now, cfg.workers, args.fd_reserve) {
        cfg.max_connections = cfg.max_connections.min(budget);
    }
    // Block the stop signals before any thread exists, so every thread
    // inherits the mask and only the sigwait below receives them.
    // SIGHUP too: it reopens the access log and never stops the server.
    let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    sys::block_signals(&signals)?;
    // The RT-signal mechanisms direct their signals (and SIGIO on queue
    // overflow) at their own thread, where they are blocked; blocking them in
    // every thread as well means a stray process-directed one can never take
    // its default action (terminate) in a thread that does not expect it.
    let rt: Vec<libc::c_int> = std::iter::once(libc::SIGIO)
        .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
        .collect();
    sys::block_signals(&rt)?;
    let model = cfg.model;
    let server = Server::start(cfg).with_context(|| format!("cannot start the {model} server"))?;
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on http://{}", server.local_addr())?;
        out.flush()?;
    }
    while sys::wait_signal(&signals)? == libc::SIGHUP {
        server.reopen_access_log();
    }
    let report = server.stop()?;
    let doc = serde_json::to_string_pretty(&report.to_json())?;
    match &args.stats_json {
        Some(p) if p.as_os_str() == "-" => println!("{doc}"),
        Some(p) => std::fs::write(p, doc + "\n")
            .with_context(|| format!("--stats-json {}", p.display()))?,
        None => {}
    }
    let t = report.totals();
    eprintln!(
        "evdispatch serve: stopped after {:.1}s: {} requests, {} connections",
        report.elapsed_s,
        t.total_requests(),
        t.accepted
    );
    Ok(())
}

/// Every word of exactly `len` pieces (with repetition): the exhaustive
/// checks of the pure parsers run over these.
#[cfg(test)]
pub(crate) fn each_word(pieces: &[&str], len: usize, mut f: impl FnMut(String)) {
    let mut idx = vec![0usize; len];
    loop {
        f(idx.iter().map(|&i| pieces[i]).collect());
        let mut k = 0;
        loop {
            if k == idx.len() {
                return;
            }
            idx[k] += 1;
            if idx[k] < pieces.len() {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_the_one_grammar() {
        use clap::Parser;
        #[derive(Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeArgs,
        }
        let a = Serve::try_parse_from([
            "serve",
            "--idle-timeout",
            "1min",
            "--header-timeout",
            "500us",
        ])
        .unwrap()
        .args;
        assert_eq!(a.idle_timeout, Duration::from_secs(60));
        assert_eq!(a.header_timeout, Duration::from_micros(500));
        assert!(Serve::try_parse_from(["serve", "--idle-timeout", "5q"]).is_err());
    }

    #[test]
    fn model_names() {
        for m in Model::all() {
            assert_eq!(m.name().parse::<Model>().unwrap(), m);
        }
        let e = "kqueue".parse::<Model>().unwrap_err();
        assert!(e.contains("threads") && e.contains("epoll"), "{e}");
    }

    #[test]
    fn connection_budget_keeps_a_reserve() {
        // 20,000 descriptors, 10 open, 2 workers: 16 + 312 + 16 reserved.
        assert_eq!(
            connection_budget(20_000, 10, 2, None),
            Some(20_000 - 10 - 344)
        );
        // A tiny limit still leaves room for files, and never zero.
        assert_eq!(connection_budget(96, 10, 1, None), Some(96 - 10 - 25));
        assert_eq!(connection_budget(16, 10, 1, None), Some(1));
        assert_eq!(connection_budget(1000, 10, 1, Some(100)), Some(882));
        assert_eq!(connection_budget(1000, 10, 1, Some(0)), None);
    }
}
