//! # evdispatch
//!
//! One event-dispatch API over every readiness mechanism Linux has had: the
//! descriptor-scanning calls (`select`, `poll`), the kernel-held interest set
//! (`epoll`, the mainline heir of `/dev/poll`), the shared-ring interface
//! (`io_uring`), and POSIX real-time signals with the designs the papers of
//! 2000–2001 proposed for them. A server is written once against [`Poller`];
//! the mechanism is a run-time choice, so every difference measured between
//! two runs is the mechanism's.
//!
//! ```no_run
//! use evdispatch::{Events, Interest, Mechanism, Poller, Token};
//! use std::os::fd::AsRawFd;
//!
//! let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! listener.set_nonblocking(true)?;
//! let mut poller = Poller::new("epoll".parse::<Mechanism>()?)?;
//! poller.register(listener.as_raw_fd(), Token(0), Interest::READABLE)?;
//! let mut events = Events::with_capacity(64);
//! loop {
//!     poller.wait(&mut events, None)?;
//!     for event in &events {
//!         // accept until WouldBlock…
//! #       let _ = event;
//!     }
//! #   break;
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The contract
//!
//! Every mechanism keeps the same promise, so that code written against one
//! runs unchanged on all:
//!
//! * **Events are hints.** An event says a descriptor *may* be ready. The
//!   consumer reads, writes or accepts until the call fails with `EAGAIN`
//!   (`ErrorKind::WouldBlock`), and must tolerate an event that finds nothing
//!   to do: spurious events are allowed.
//! * **No lost wake-ups.** After the consumer has hit `EAGAIN` on a
//!   registered descriptor, the next readiness change of that descriptor is
//!   reported by a later wait. Level-triggered mechanisms report more often
//!   (at every wait while the condition holds); none may report less.
//! * **A short read is as good as `EAGAIN`** on a stream socket or a pipe: a
//!   `read` that returns fewer bytes than asked has emptied the receive
//!   queue, and whatever arrives after it is reported (epoll(7) says the
//!   same of `EPOLLET`), so the extra `read` that would only collect
//!   `EAGAIN` may be skipped. An EOF queued behind the data is left for
//!   one more `read`: it is reported with [`Event::is_read_closed`], or by a
//!   later wait.
//! * **Registrations are the caller's.** `register`, `modify` and
//!   `deregister` fail with an error (never a panic) on a descriptor that is
//!   already registered, not registered, or not open, with the same
//!   [`std::io::ErrorKind`] on every mechanism (closing a descriptor that is
//!   still registered is the caller's error, which each mechanism shows its
//!   own way: [`Poller::deregister`]). Deregister before
//!   closing: once `deregister` has returned, no event of that registration
//!   is reported again, even if the descriptor number is reused at once by a
//!   new socket (mechanisms whose notifications are queued, io_uring and RT
//!   signals, drop the stale ones; at most a spurious hint under the *new*
//!   registration's token may remain).
//! * **Timeouts are never early.** A wait with a timeout that sees nothing
//!   returns after at least that long, whatever the granularity of the
//!   underlying call; an interrupting signal does not shorten it.
//! * **Readiness bits.** Readable covers data, a pending connection, EOF and
//!   a pending error, since a read then returns at once; a hang-up also makes
//!   the descriptor writable. [`Event::is_read_closed`] marks EOF or hang-up.
//!
//! ## The mechanisms
//!
//! The table is [`MECHANISMS`]; the CLI, the conformance suite, the
//! benchmarks and the study's report all read it. In short:
//!
//! | name | trigger | what it is | limits | Linux |
//! |---|---|---|---|---|
//! | `select` | level | `select` on bitmaps rebuilt from the interest table at every wait | fds below 1024 (`FD_SETSIZE`); cost grows with the highest fd | 2.0 |
//! | `poll` | level | `poll` on one `pollfd` array kept across waits | cost grows with the number of registered fds | 2.6.17 |
//! | `epoll` | level | `epoll_wait` on an interest set held in the kernel | none beyond the descriptor limit | 2.6.27 |
//! | `epoll-et` | edge | epoll with `EPOLLET` | consumer must drain to `EAGAIN` | 2.6.27 |
//! | `uring` | edge | io_uring multishot `POLL_ADD` per fd; interest changes ride on the next wait's `io_uring_enter` | consumer must drain to `EAGAIN`; io_uring must be enabled; a completion interrupts the waiting thread's other blocking calls (`EINTR`) | 5.13 |
//! | `rtsig` | edge | RT signals (`F_SETSIG`, `F_SETOWN_EX`), one `sigtimedwait` per event; SIGIO overflow: flush, then poll the interest set | queue bounded by `RLIMIT_SIGPENDING` (per user); sockets, pipes, ttys; waits on the creating thread; one poller per descriptor | 2.6.32 |
//! | `rtsig-batch` | edge | RT signals, many per `read` of a signalfd, merged per fd within a wait | as `rtsig` | 2.6.32 |
//! | `rtsig-perfd` | edge | `rtsig-batch` with a descriptor's `O_ASYNC` cleared from the dequeue of its signal to the next wait, which re-arms it and re-checks with one `poll`: about one queued signal per fd (seed 004's signal-per-fd, in user space) | as `rtsig`; unlike the kernel patch, a descriptor still queues one signal per change between re-arm and dequeue, so the queue can overflow; two `fcntl` per served fd and a `poll` per wait; no descriptor to nest | 2.6.32 |
//! | `hybrid` | edge | `rtsig-batch` at light load, edge-triggered epoll on overflow or large batches, back when load subsides | as `rtsig` | 2.6.32 |
//!
//! ## Examples
//!
//! In `examples/` (`cargo run --release -p evdispatch --example NAME --
//! --help`), both run by the test suite on every mechanism available:
//!
//! * `kegel.rs`: Dan Kegel's Poller_bench loop: N socketpairs watched, one
//!   byte written to A of them, then waits and `read(fd, buf, 1)` until the A
//!   bytes are in, timed; `--mechanism`, `--fds`, `--active`, `--iterations`.
//! * `echo.rs`: a TCP echo server on one `Poller`, written for every
//!   mechanism at once (read and write until `WouldBlock`, interest in
//!   writability only while output is pending); `--mechanism`, `--listen`
//!   (default `127.0.0.1:0`; it prints the address), `--connections`.
//!
//! ## Nesting
//!
//! A `Poller` on `epoll`, `epoll-et`, `uring` or `rtsig-batch` waits on one
//! descriptor, so that another event loop (another `Poller`, tokio's
//! `AsyncFd`, async-io) can watch it: `Poller` implements `AsFd`/`AsRawFd`
//! with it, [`Poller::as_fd_opt`] returns it or `None`, and
//! [`NestablePoller`] is a poller checked once to have one. `select`, `poll`,
//! `rtsig`, `rtsig-perfd` and `hybrid` have none (there the traits panic, as
//! documented).
//!
//! ## io_uring's completion model
//!
//! [`uring`] holds io_uring building blocks (shared with the `uring`
//! mechanism) for loops where the kernel does the I/O itself (the server's
//! and the load generator's are written on them): ring set-up with
//! fallbacks for older kernels, submission that makes room in a full
//! queue, the wait, and a pool of provided buffers for receives.
//!
//! ## Statistics
//!
//! [`Poller::stats`] counts waits, waiting system calls, events,
//! registrations, and the mechanism-specific work (io_uring submissions,
//! RT-signal dequeues and overflows, hybrid mode switches); see [`Stats`].

#![deny(missing_docs)]
#![warn(rust_2018_idioms)]

// Every mechanism is a Linux system call: say so at once rather than deep
// inside libc.
#[cfg(not(target_os = "linux"))]
compile_error!("evdispatch runs on Linux only: its mechanisms are Linux system calls");

mod config;
mod event;
mod mechanism;
mod poller;
mod stats;
mod sys;
pub mod uring;

pub use config::{Config, Mechanism};
pub use event::{Event, Events, Interest, Ready, Token};
pub use mechanism::{MechanismInfo, Trigger, UnknownMechanism, MECHANISMS};
pub use poller::{NestablePoller, Poller, Waker};
pub use stats::Stats;
