//! `evdispatch serve`: a static-content web server written once against the
//! [`evdispatch::Poller`] API and run over any mechanism, plus two models that
//! are not readiness-based, for comparison ([`Model`]):
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
//! HTTP/1.0 and 1.1, over TCP or over TLS 1.3 and 1.2 (`--tls-cert`,
//! `--tls-key`: [`TlsConfig`], rustls, certificates chosen by SNI and
//! reloaded on SIGHUP; every model), on one or several `--listen`
//! addresses, plain and HTTPS side by side ([`Listen`]; `--redirect-https`,
//! `--hsts`: [`Https`]), `GET`, `HEAD` and
//! `OPTIONS` (a request body read and discarded; what the RFCs call invalid
//! refused), persistent connections and pipelining, conditional and range
//! requests, precompressed variants, `index.html` for directories (or a
//! listing); small files from a bounded
//! in-memory cache revalidated by modification time, large ones with
//! `sendfile` (over TLS, encrypted from the page cache a bounded chunk at a
//! time: [`conn::transport`]); nothing outside `--root` is ever served (every open is
//! `openat2(RESOLVE_BENEATH)`, symlinks included).
//!
//! # Layers
//!
//! Each folder is a layer; a layer imports only the layers below it:
//!
//! * [`models`]: thin event loops (readiness, io_uring completion, a
//!   thread pool) that move bytes between sockets and the connection layer;
//! * [`conn`]: a connection's life (timeouts, lingering close, graceful
//!   stop), its timer wheel, the counters and stats document, and the
//!   exchange that answers the requests in its input;
//! * [`content`]: the document root, its cache and listings, the
//!   [`Responder`] that builds one response, the [`OutBatch`] that sends
//!   it, and the access log;
//! * [`semantics`]: HTTP as pure functions: [`parse_request`],
//!   [`normalize_target`], [`evaluate_range`], preconditions, [`negotiate`],
//!   [`Status`].
//!
//! Beside them, at the root: [`ServerConfig`] and [`Model`] (`config.rs`,
//! read by the models), [`TlsConfig`] (`tls.rs`: the certificate and key
//! of HTTPS, checked at start-up), [`Server`] (`server.rs`: listeners, workers, stop,
//! stats), [`ServeArgs`] and [`run`] (`cli.rs`), and [`cmdline::ServeCommand`],
//! the typed command line other crates start a server with; `sys.rs`, the
//! ground floor, holds the system calls and every `unsafe` outside io_uring.
//!
//! # Where the specification is
//!
//! Each part of the behaviour is specified in the module that implements
//! it: methods, bodies, lists and limits in [`semantics::request`];
//! validators and preconditions in [`semantics::conditional`]; ranges in
//! [`semantics::range`]; the differences from nginx, each with the clause
//! that allows it, in [`semantics`]; precompressed variants in
//! [`content::response`]; paths, dotfiles and listings in
//! [`content::paths`]; the access log in [`content::access_log`]; timeouts
//! and the connection's life in [`conn::lifecycle`]; the stats document in
//! [`conn::stats`]; the command-line contract in [`run`].

#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

mod cli;
pub mod cmdline;
mod config;
pub mod conn;
pub mod content;
pub mod models;
pub mod semantics;
mod server;
mod sys;
mod tls;

pub use cli::{connection_budget, run, ServeArgs};
pub use config::{AcceptMode, Listen, ListenerMode, Model, ServerConfig};
pub use conn::exchange::{Answered, MAX_BATCH};
pub use conn::stats::{
    Counters, ServerReport, TlsCounters, TurnWork, Turns, WorkerReport, TURN_BUCKETS,
};
pub use conn::timer::TimerWheel;
pub use content::access_log::{AccessLog, Entry as AccessLogEntry, LogBuffer, LogFormat, TlsInfo};
pub use content::files::{content_type, CacheLimits, CacheStats, ContentType, FileStore};
pub use content::paths::{Dotfiles, SiteOptions};
pub use content::response::{Https, OutBatch, Responder, Via};
pub use semantics::conditional::{Coding, ETag};
pub use semantics::encoding::negotiate;
pub use semantics::range::{evaluate_range, RangeAnswer, Ranges, MAX_RANGES};
pub use semantics::request::{
    parse_request, FieldLines, Framing, Method, Parsed, Request, RequestEnd, Version, MAX_BODY,
    MAX_HEADERS, MAX_TARGET,
};
pub use semantics::status::Status;
pub use semantics::target::normalize_target;
pub use server::Server;
pub use tls::{aes_in_hardware, CertPair, TlsConfig, SESSION_CACHE};
