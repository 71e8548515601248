//! The mechanisms, one backend file per family (`epoll.rs` serves `epoll`
//! and `epoll-et`, `rtsig.rs` `rtsig`, `rtsig-batch` and `rtsig-perfd`; `signals.rs` and
//! `fdtable.rs` are what several share; `backend.rs` the trait each
//! implements), and the one table that lists them.
//!
//! Adding a mechanism touches its own file (its system calls in `sys/`, the
//! only place with `unsafe`), one variant of [`Mechanism`] (in `config.rs`,
//! below the mechanisms, which read their tunables from it), one row of
//! [`MECHANISMS`], its row in the crate docs' table, and its line in the
//! conformance suite's `conformance!` list and `which_mechanisms_have_a_descriptor`:
//! tests fail until each is there. The CLI, the benchmarks and the study's
//! report read the table.

use std::fmt;
use std::io;
use std::os::fd::RawFd;
use std::str::FromStr;

use crate::config::{Config, Mechanism};

mod backend;
mod epoll;
mod fdtable;
mod hybrid;
mod poll;
mod rtsig;
mod select;
mod signals;
mod uring;

pub(crate) use backend::Backend;

/// When a mechanism reports readiness.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub enum Trigger {
    /// Reported at every wait while the condition holds.
    Level,
    /// Reported when the condition changes; the consumer must drain to `EAGAIN`.
    Edge,
}

/// One row of the mechanism table.
#[derive(Clone)]
pub struct MechanismInfo {
    /// The variant.
    pub mechanism: Mechanism,
    /// The name used on command lines, in JSON and in the report.
    pub name: &'static str,
    /// Level or edge.
    pub trigger: Trigger,
    /// One line: what the mechanism is.
    pub summary: &'static str,
    /// Its limits, in words (descriptor ceiling, queue length…).
    pub limits: &'static str,
    /// The first Linux version that has everything this mechanism uses.
    pub min_kernel: &'static str,
    /// The highest descriptor number it can watch plus one, if bounded.
    pub max_fd: Option<RawFd>,
    /// Whether `Interest::exclusive()` is honoured (wake-one on shared listeners).
    pub exclusive: bool,
    pub(crate) open: fn(&Config) -> io::Result<Box<dyn Backend>>,
}

impl fmt::Debug for MechanismInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MechanismInfo")
            .field("name", &self.name)
            .field("trigger", &self.trigger)
            .field("min_kernel", &self.min_kernel)
            .field("max_fd", &self.max_fd)
            .field("exclusive", &self.exclusive)
            .finish()
    }
}

/// Every mechanism, in the order the report and the CLI list them.
pub static MECHANISMS: &[MechanismInfo] = &[
    MechanismInfo {
        mechanism: Mechanism::Select,
        name: "select",
        trigger: Trigger::Level,
        summary:
            "select() on read and write bitmaps rebuilt from the interest table at every wait; \
                  kernel and caller scan every descriptor up to the highest registered",
        limits: "descriptors below FD_SETSIZE (1024) only; a wait costs O(highest registered fd)",
        min_kernel: "2.0",
        max_fd: Some(1024),
        exclusive: false,
        open: select::open,
    },
    MechanismInfo {
        mechanism: Mechanism::Poll,
        name: "poll",
        trigger: Trigger::Level,
        summary: "poll() on one pollfd array kept across waits (O(1) add and swap-remove); \
                  kernel and caller scan every entry",
        limits: "none beyond the process descriptor limit; a wait costs O(registered fds)",
        min_kernel: "2.6.17",
        max_fd: None,
        exclusive: false,
        open: poll::open,
    },
    MechanismInfo {
        mechanism: Mechanism::Epoll,
        name: "epoll",
        trigger: Trigger::Level,
        summary:
            "epoll_wait on an interest set kept in the kernel (the mainline successor of /dev/poll)",
        limits: "none beyond the process descriptor limit; the result buffer grows when it fills",
        min_kernel: "2.6.27",
        max_fd: None,
        exclusive: true,
        open: epoll::open_level,
    },
    MechanismInfo {
        mechanism: Mechanism::EpollEt,
        name: "epoll-et",
        trigger: Trigger::Edge,
        summary: "epoll with EPOLLET: one report per readiness change",
        limits: "as epoll; the consumer must read or write until EAGAIN",
        min_kernel: "2.6.27",
        max_fd: None,
        exclusive: true,
        open: epoll::open_edge,
    },
    MechanismInfo {
        mechanism: Mechanism::Uring,
        name: "uring",
        trigger: Trigger::Edge,
        summary: "io_uring: a multishot POLL_ADD per fd, updated and removed through the ring; \
                  changes are submitted with the next wait in one io_uring_enter, and events read \
                  from the shared completion ring",
        limits: "edge-triggered (drain to EAGAIN); io_uring must be enabled \
                 (kernel.io_uring_disabled, seccomp); a burst beyond the completion ring \
                 (4 x uring_entries) re-arms the polls that overflowed; EXCLUSIVE is ignored; \
                 a completion is task work for the thread that submitted, so it interrupts \
                 that thread's other blocking calls (EINTR), between waits too",
        min_kernel: "5.13",
        max_fd: None,
        exclusive: false,
        open: uring::open,
    },
    MechanismInfo {
        mechanism: Mechanism::RtSig,
        name: "rtsig",
        trigger: Trigger::Edge,
        summary: "POSIX RT signals (F_SETSIG, F_SETOWN_EX to the creating thread), one sigtimedwait per event; on SIGIO overflow the queue is flushed and the interest set polled",
        limits: "queue bounded by RLIMIT_SIGPENDING, per user (overflow costs a flush and a poll of every fd); sockets, pipes and ttys only; waits on the creating thread only; a descriptor is heard by one signal poller (the last to register it); Linux 2.6.32 (F_SETOWN_EX)",
        min_kernel: "2.6.32",
        max_fd: None,
        exclusive: false,
        open: rtsig::open_single,
    },
    MechanismInfo {
        mechanism: Mechanism::RtSigBatch,
        name: "rtsig-batch",
        trigger: Trigger::Edge,
        summary: "RT signals dequeued many per read() of a signalfd (seed 000's sigtimedwait4), merged per fd within a wait (signal-per-fd at the dispatch boundary)",
        limits: "as rtsig",
        min_kernel: "2.6.32",
        max_fd: None,
        exclusive: false,
        open: rtsig::open_batch,
    },
    MechanismInfo {
        mechanism: Mechanism::RtSigPerfd,
        name: "rtsig-perfd",
        trigger: Trigger::Edge,
        summary: "rtsig-batch that clears a descriptor's O_ASYNC when its signal is dequeued and sets it again at the next wait (the consumer has drained it by then), then re-checks the re-armed descriptors with one poll: about one queued signal per descriptor (seed 004's signal-per-fd, in user space)",
        limits: "as rtsig, but a descriptor is silent from the dequeue of its signal to the next wait; unlike the kernel patch, which coalesced when a signal was queued, a descriptor still queues one signal per readiness change between its re-arm (or registration) and its next dequeue (several for a busy connection, one per incoming connection for a listener), so the queue can still overflow (recovered by flush and poll), and it costs two fcntl(F_SETFL) per served descriptor and a poll of the re-armed ones per wait; no descriptor to nest (a wait must re-arm)",
        min_kernel: "2.6.32",
        max_fd: None,
        exclusive: false,
        open: rtsig::open_per_fd,
    },
    MechanismInfo {
        mechanism: Mechanism::Hybrid,
        name: "hybrid",
        trigger: Trigger::Edge,
        summary: "rtsig-batch at light load, edge-triggered epoll on overflow or large batches, back to signals when load subsides; both interest sets kept at every registration (seed 000's proposal)",
        limits: "as rtsig; epoll mode unblocks the (ignored) signal so nothing queues; a switch back costs a sweep of the ready list",
        min_kernel: "2.6.32",
        max_fd: None,
        exclusive: false,
        open: hybrid::open,
    },
];

impl Mechanism {
    /// This mechanism's row of [`MECHANISMS`].
    pub fn info(self) -> &'static MechanismInfo {
        MECHANISMS
            .iter()
            .find(|m| m.mechanism == self)
            .expect("every Mechanism variant has a row in MECHANISMS")
    }

    /// The command-line name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Every mechanism, in table order.
    pub fn all() -> impl Iterator<Item = Mechanism> {
        MECHANISMS.iter().map(|m| m.mechanism)
    }

    /// The comma-separated list of names, for error messages and help texts.
    pub fn names() -> String {
        MECHANISMS
            .iter()
            .map(|m| m.name)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The error of parsing an unknown mechanism name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMechanism(pub String);

impl fmt::Display for UnknownMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown mechanism '{}'; choose one of: {}",
            self.0,
            Mechanism::names()
        )
    }
}

impl std::error::Error for UnknownMechanism {}

impl FromStr for Mechanism {
    type Err = UnknownMechanism;
    fn from_str(s: &str) -> Result<Mechanism, UnknownMechanism> {
        MECHANISMS
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(s))
            .map(|m| m.mechanism)
            .ok_or_else(|| UnknownMechanism(s.to_string()))
    }
}

/// A mechanism serializes as its [`name`](Mechanism::name).
#[cfg(feature = "serde")]
impl serde::Serialize for Mechanism {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        for m in Mechanism::all() {
            assert_eq!(m.name().parse::<Mechanism>().unwrap(), m);
            assert_eq!(MECHANISMS.iter().filter(|i| i.name == m.name()).count(), 1);
        }
        let err = "kqueue".parse::<Mechanism>().unwrap_err().to_string();
        assert!(err.contains("kqueue") && err.contains("epoll"), "{err}");
    }

    #[test]
    fn crate_docs_list_every_mechanism() {
        let docs = include_str!("../lib.rs");
        for m in MECHANISMS {
            let row = docs
                .lines()
                .find(|l| l.starts_with(&format!("//! | `{}` |", m.name)))
                .unwrap_or_else(|| {
                    panic!("the mechanism table in lib.rs lacks a row for {}", m.name)
                });
            assert!(
                row.ends_with(&format!("| {} |", m.min_kernel)),
                "lib.rs gives {} a Linux version other than the table's {}",
                m.name,
                m.min_kernel
            );
        }
    }
}
