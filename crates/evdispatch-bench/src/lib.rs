//! `evdispatch bench`: the microbenchmarks.
//!
//! * `bench poller`: Dan Kegel's Poller_bench (seed 001) on every mechanism
//!   of the library, beside the same loop written straight on the system
//!   calls (`raw-epoll`, `raw-poll`), the Rust crates `mio` and `polling`, and
//!   the C libraries libevent and libev (a small harness of ours, compiled
//!   when their development files are found). See [`poller`].
//! * `bench fdalloc`: the descriptor-allocation experiment of seed 003. See
//!   [`fdalloc`].
//! * `bench overflow`: the cost of recovering from an RT-signal queue
//!   overflow. See [`overflow`].
//! * `bench server`: `evdispatch serve` against nginx, lighttpd and h2o
//!   (server CPU per request and per connection, idle connections held,
//!   memory per idle connection), judged against its targets, beside two floor
//!   servers (a canned response from memory on epoll and on io_uring) that
//!   every server's CPU per request is divided by. See [`server`].
//!
//! * `bench generator`: `evdispatch load` against `wrk -t1` (`--http2`:
//!   against `h2load -t1`), requests per generator CPU-second, plain HTTP
//!   and HTTPS. See
//!   [`generator`].
//!
//! Each prints a table for people and, with `--json`, one document for
//! programs (the study reads it).

#![deny(missing_docs)]

mod cli;
pub mod fdalloc;
pub mod generator;
mod machine;
mod output;
pub mod overflow;
pub mod poller;
pub mod server;
pub mod storm;
mod summary;
mod sweep;
mod sys;

pub use cli::{run, BenchArgs, BenchCommand};
pub use machine::Machine;
pub use summary::Summary;

/// Tests that open descriptors take this: the fdalloc test checks which
/// numbers the kernel hands back, which another thread opening files at the
/// same moment would change.
#[cfg(test)]
pub(crate) static TEST_FDS: std::sync::Mutex<()> = std::sync::Mutex::new(());
