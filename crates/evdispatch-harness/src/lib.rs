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
//!   ready when it prints `listening on http://IP:PORT`; with
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

pub mod cgroup;
mod peers;
mod process;
mod sys;
mod testserver;
mod tools;

pub use cgroup::{cpu_control, BudgetGroup, BudgetStats, CgroupVersion, CpuBudget, CpuControl};
pub use peers::{
    docroot, find, first_version, start_listening_program, start_ours, start_peer, LighttpdEvents,
    NotInstalled, OursConfig, Peer, PeerConfig, PeerTls, Program, Tool,
};
pub use process::{
    free_port, log_tail, on_interrupt, Background, BenchLock, ChildGroup, ServerProcess,
};
pub use sys::children_cpu_s;
pub use testserver::{TestServer, TestServerConfig, TestStats};
pub use tools::{
    httperf_args, httperf_limit_s, parse_httperf, parse_wrk, run_bounded, run_evdispatch_load,
    run_evdispatch_load_measured, run_httperf, run_wrk, spawn_evdispatch_load, wrk_args,
    wrk_limit_s, HttperfArgs, HttperfResult, WrkArgs, WrkResult, HTTPERF_HOG_PORTS,
    HTTPERF_LOW_PORT, HTTPERF_PORT_WAIT_S,
};

/// The limit of open files of this process, its soft limit raised to the
/// hard one (servers are configured within it); the soft limit as it is if
/// that fails.
pub fn nofile_limit() -> u64 {
    use evdispatch_proc::{get_rlimit, set_rlimit, Resource};
    set_rlimit(Resource::Nofile, None)
        .or_else(|_| get_rlimit(Resource::Nofile).map(|(soft, _)| soft))
        .unwrap_or(1024)
}

/// The median of `v` (sorted in place): the middle value, or the mean of
/// the two middle ones; NaN when `v` is empty. Rounds of a measurement are
/// summarised by it, so one disturbed round moves no figure.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sorts `v` and returns `(low, median, high)`: the median and a
/// distribution-free confidence interval for it, made of order statistics
/// (the number of samples below the true median is binomial, n and ½), that
/// covers it with probability at least `level`. With too few samples for
/// `level`, the interval is the whole range.
pub fn median_interval(v: &mut [f64], level: f64) -> (f64, f64, f64) {
    let m = median(v);
    let n = v.len();
    if n == 0 {
        return (f64::NAN, m, f64::NAN);
    }
    // P(B <= j) for B ~ Binomial(n, 1/2), accumulated term by term.
    let (mut term, mut below) = (0.5f64.powi(n as i32), 0.0);
    let mut k = 0;
    for j in 0..n / 2 {
        below += term;
        if 1.0 - 2.0 * below < level {
            break;
        }
        k = j;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    (v[k], m, v[n - 1 - k])
}

/// Why a test needing `tool` must skip, or `None` when it is installed. The
/// caller prints the reason and returns.
pub fn skip_reason(tool: Tool) -> Option<String> {
    find(tool).err().map(|e| format!("skipped: {e}"))
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn median_interval_trims_by_the_binomial_tail() {
        // Eleven samples at 90%: P(B <= 2) = 67/2048, so two are trimmed
        // from each side (coverage 0.935); a third would leave 0.773.
        let mut v: Vec<f64> = (0..11).rev().map(f64::from).collect();
        assert_eq!(median_interval(&mut v, 0.9), (2.0, 5.0, 8.0));
        // Ten samples: one each side (0.979); two would leave 0.891.
        let mut v: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(median_interval(&mut v, 0.9), (1.0, 4.5, 8.0));
        // Too few for the level: the whole range.
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(median_interval(&mut v, 0.9), (1.0, 2.0, 3.0));
    }
}
