//! # evdispatch torture — hostile conditions, measured
//!
//! `evdispatch torture SCENARIO [--profile tiny|quick|full] [--mechanism M]…
//! [--no-nginx] [--json]` starts our server (and nginx where the attack
//! applies) through `evdispatch-harness`, drives it with `evdispatch load`
//! or raw sockets, and prints the figures with a pass/fail against these
//! thresholds:
//!
//! | scenario | what | passes when |
//! |---|---|---|
//! | `storm` | `rtsig`, `rtsig-batch`, `rtsig-perfd`, `hybrid` with `--rlimit-sigpending 16`, offered 1.25× the knee (the closed-loop capacity) on persistent connections | every request answered (requests = replies, 0 errors), no stall ≥ 1 s (longest run of empty 0.25 s intervals, slowest reply from its send), the queue overflowed and every overflow was recovered (server stats) |
//! | `exhaustion` | `--rlimit-nofile` low; keep-alive clients, then a crowd of connections beyond the limit | the clients' p99 within 2× their baseline (the mean of one before and one after), the server idle at the limit (< 5% of a core with the crowd waiting), every waiting connection served once descriptors free |
//! | `slowloris` | 5,000 clients sending their request a byte a second beside a normal load | normal clients' p99 within 2× baseline (the mean of one before and one after the attack; `full` makes five such rounds and takes the median ratio, with its 90% interval and every round reported; a window the hypervisor took more than 0.5% of a CPU from is measured again, at most twice) and no errors, slow clients closed at the header timeout (timed probes: not early, at most 1.5 s late) |
//! | `attacks` | the [`corpus`] (traversal in every encoding, limits, smuggling shapes, pipelining floods, invalid bytes, protocol garbage) | every attack answered as expected and the connection closed or kept as expected; nginx's answers are shown beside ours |
//! | `tls` | our HTTPS server (and nginx, same ECDSA P-256 certificate) sent TCP connections that never send a ClientHello, ClientHellos a byte every 100 ms, malformed ClientHellos, plaintext HTTP, fatal alerts after the handshake and a flood of new full handshakes, while one kept-alive HTTPS client fetches a file every 20 ms | the client served throughout (no failure, no reply over 1 s), every hostile connection closed or answered as nginx does (deadline, alert, `400`), every failure counted by kind in the server's stats, resident memory grown ≤ 64 MiB, the server still running |
//! | `soak` | mixed load (active, sessions churn, idle, inactive, slow) for 3 min (`quick`) or 30 min (`full`) | RSS growth ≤ 1% after warm-up (exact `VmRSS`; its anonymous and file-backed parts reported beside it), descriptors back to baseline after the clients leave, 0 errors on the active workloads |
//!
//! Models: `epoll`, `uring-completion`, `rtsig-batch` and `hybrid` unless
//! `--mechanism` says otherwise (the storm always takes the signal
//! mechanisms). The server is pinned to CPU 0 and the load to CPU 1 when
//! two CPUs are available. The binary driven is this one (or
//! `EVDISPATCH_BIN`). Run it under `flock /tmp/evd-bench.lock` so no other
//! benchmark shares the machine.
//!
//! ## The `--json` contract (`schema: "evdispatch-torture/1"`)
//!
//! ```text
//! { "schema", "profile", "pass": all scenarios passed,
//!   "scenarios": [ { "scenario", "title", "pass", "skipped": [{what, why}],
//!       "runs": [ { "server": "evdispatch"|"nginx", "model", "pass",
//!                   "checks": [{ "name", "value", "limit", "pass" }],
//!                   "figures": { scenario-specific numbers } } ],
//!       "attacks": [ … ] (attacks only: per attack, each server's answer) } ] }
//! ```
//!
//! A run against nginx is for comparison: its checks are reported but do
//! not decide `pass`.

#![deny(missing_docs)]

mod cli;
pub mod corpus;
mod env;
pub mod invariants;
mod json;
pub mod probe;
mod scenarios;
pub mod site;

pub use cli::{run, run_scenario, TortureArgs, Which};
pub use env::{Env, Profile, DEFAULT_MODELS, SIGNAL_MODELS};
pub use json::num;
pub use scenarios::{Check, Report, Run, ScenarioReport, Skipped};

/// Constants the scenarios run with, for tests that reproduce them.
pub mod scenarios_consts {
    pub use crate::scenarios::attacks::{HEADER_S, IDLE_S};
    pub use crate::scenarios::slowloris::LATE_S;
    pub use crate::scenarios::soak::MAX_GROWTH_PCT;
    pub use crate::scenarios::storm::{MAX_STALL_S, SIGPENDING};
    pub use crate::scenarios::tls::{HEADER_S as TLS_HEADER_S, MAX_GROWTH_MIB, SLOWEST_MS};
}

pub use scenarios::soak::duration_s as soak_duration_s;
