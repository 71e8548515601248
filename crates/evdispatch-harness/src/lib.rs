//! # evdispatch-harness
//!
//! Start and stop servers on loopback for measurements and tests, and drive
//! the reference load generators. The server benchmark, the study and the
//! hostile-conditions scenarios all go through it, so every measurement
//! starts servers the same way.
//!
//! * **Peers** ([`start_peer`]): nginx, lighttpd and h2o (Debian packages),
//!   each found at run time with its version ([`find`]); a missing one is an
//!   error saying `X is not installed: apt-get install -y X`
//!   ([`NotInstalled`]). The configuration is generated in a temporary
//!   directory from [`PeerConfig`]: the given number of workers (one by
//!   default), port (0: a free one) and document root, keep-alive on, access
//!   log off, pinned to the given CPUs; lighttpd's `server.event-handler` is
//!   [`LighttpdEvents::Poll`] or [`LighttpdEvents::LinuxSysepoll`].
//! * **Ours** ([`start_ours`]): `evdispatch serve ARGS` from a given binary;
//!   ready when it prints `listening on http://IP:PORT` (`https://`: its
//!   [`ServerProcess::url`]s are too); with
//!   `stats_json`, [`ServerProcess::stop`] sends SIGTERM and returns the
//!   `--stats-json` file it wrote.
//! * **Processes** (for the bench, the study and the torture suite): every
//!   child leads its own process group, killed when its handle is dropped
//!   ([`ServerProcess`], [`Background`], [`ChildGroup`]) and by the one
//!   Ctrl-C/SIGTERM handler ([`on_interrupt`]); `PR_SET_PDEATHSIG` takes a
//!   server down if the program is killed outright; [`BenchLock`] is the
//!   machine-wide lock of measurements.
//! * **CPU budgets** ([`cgroup`]): a server may run in a cgroup of its own
//!   with CPU bandwidth control ([`CpuBudget`]: a fraction of a core over a
//!   short period; v1 or v2, detected at run time by [`cpu_control`]), so
//!   that the experiment sets its capacity; the group goes with the server.
//! * **Tools**: [`run_wrk`] and [`run_httperf`] run pinned and return parsed
//!   results ([`WrkResult`], [`HttperfResult`]) including the CPU they used;
//!   [`run_evdispatch_load`] runs `evdispatch load … --json` and returns its
//!   JSON summary; [`spawn_evdispatch_load`] keeps one running in the
//!   background ([`Background`], killed when dropped), e.g. to hold idle
//!   connections while another tool measures.
//! * **Test server** ([`TestServer`]): a tiny in-process HTTP/1.1 server
//!   that can stall every reply for a while once per period, or close idle
//!   connections after a time.
//! * **Figures**: the `load-figures` binary measures the load generator's
//!   figures (cost of idle connections, 30,000 connections, latency against
//!   a stalling server); its capacity against wrk is `evdispatch bench
//!   generator`.

#![deny(missing_docs)]

mod certificate;
pub mod cgroup;
mod installed;
mod median;
mod peers;
mod process;
mod sys;
mod testserver;
mod tools;

pub use certificate::SelfSigned;
pub use cgroup::{cpu_control, BudgetGroup, BudgetStats, CgroupVersion, CpuBudget, CpuControl};
pub use installed::{find, first_version, skip_reason, NotInstalled, Program, Tool};
pub use median::{median, median_interval};
pub use peers::{
    docroot, start_listening_program, start_ours, start_peer, LighttpdEvents, OursConfig, Peer,
    PeerConfig, PeerTls,
};
pub use process::{
    free_port, log_tail, nofile_limit, on_interrupt, Background, BenchLock, ChildGroup,
    ServerProcess,
};
pub use sys::children_cpu_s;
pub use testserver::{TestServer, TestServerConfig, TestStats};
pub use tools::{
    h2load_args, httperf_args, httperf_limit_s, parse_h2load, parse_httperf, parse_wrk,
    run_bounded, run_evdispatch_load, run_evdispatch_load_measured, run_h2load, run_httperf,
    run_wrk, spawn_evdispatch_load, wrk_args, wrk_limit_s, H2loadArgs, H2loadResult, HttperfArgs,
    HttperfResult, WrkArgs, WrkResult, HTTPERF_HOG_PORTS, HTTPERF_LOW_PORT, HTTPERF_PORT_WAIT_S,
};
