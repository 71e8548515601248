//! The [`Poller`]: one API whatever the mechanism underneath.

use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::config::{Config, Mechanism};
use crate::event::{Events, Interest, Token};
use crate::mechanism::{Backend, MechanismInfo};
use crate::stats::Stats;
use crate::sys;

/// The pipe behind a [`Waker`]. Both ends live as long as the poller or any
/// waker does, so a wake after the poller is gone writes into a pipe nobody
/// reads (harmless) instead of raising `SIGPIPE`.
#[derive(Debug)]
struct WakePipe {
    read: OwnedFd,
    write: OwnedFd,
}

/// Wakes a [`Poller`] blocked in [`Poller::wait`] from any thread.
///
/// The wait returns an event with the waker's token. Wakes that arrive before
/// the wait collapse into one event. Works on every mechanism: it is a
/// non-blocking pipe registered like any other descriptor, drained by the
/// poller when it reports it.
#[derive(Debug, Clone)]
pub struct Waker {
    pipe: Arc<WakePipe>,
}

impl Waker {
    /// Wake the poller. Never blocks; wakes already pending make this a no-op.
    pub fn wake(&self) -> io::Result<()> {
        match sys::write(self.pipe.write.as_raw_fd(), &[1]) {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Watches many descriptors and says which are ready, with the mechanism
/// chosen at run time.
///
/// A `Poller` is used from one thread at a time (the RT-signal mechanisms
/// from the thread that created it, which is where the kernel sends their
/// signals); wake it from others with a [`Waker`].
pub struct Poller {
    backend: Box<dyn Backend>,
    info: &'static MechanismInfo,
    stats: Stats,
    waker: Option<(Arc<WakePipe>, Token)>,
}

impl fmt::Debug for Poller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poller")
            .field("mechanism", &self.info.name)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Poller {
    /// A poller on `mechanism` with default settings.
    ///
    /// Fails with `ErrorKind::Unsupported` and a message saying why when the
    /// mechanism is not available here (io_uring disabled, for example).
    pub fn new(mechanism: Mechanism) -> io::Result<Poller> {
        Poller::with_config(Config::new(mechanism))
    }

    /// A poller built from `config`.
    pub fn with_config(config: Config) -> io::Result<Poller> {
        let info = config.mechanism.info();
        let backend = (info.open)(&config)?;
        Ok(Poller {
            backend,
            info,
            stats: Stats::default(),
            waker: None,
        })
    }

    /// The mechanism underneath.
    pub fn mechanism(&self) -> Mechanism {
        self.info.mechanism
    }

    /// The mechanism's table row.
    pub fn info(&self) -> &'static MechanismInfo {
        self.info
    }

    /// Counters since creation.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The one descriptor that becomes readable when this poller has an
    /// event for [`wait`](Poller::wait), so that it can be watched by another
    /// event loop (another `Poller`, tokio's `AsyncFd`, async-io, mio's
    /// `SourceFd`); `None` for the mechanisms that have no such descriptor.
    ///
    /// | mechanism | descriptor |
    /// |---|---|
    /// | `epoll`, `epoll-et` | the epoll instance |
    /// | `uring` | the io_uring ring (readable when completions are queued) |
    /// | `rtsig-batch` | the signalfd; readable only in the thread that created the poller, to which the signals go: watch it from that thread |
    /// | `select`, `poll` | none: the interest set lives in the process, not the kernel |
    /// | `rtsig` | none: it dequeues with `sigtimedwait` |
    /// | `rtsig-perfd` | none: a descriptor it reported raises nothing until the next wait re-arms it |
    /// | `hybrid` | none: it waits on the signalfd or on epoll, by mode |
    ///
    /// The descriptor shows what the kernel holds. `uring` submits
    /// registrations and `rtsig-batch` probes new ones at the next wait, so
    /// after `register`, `modify` or `deregister` call `wait` once with a
    /// zero timeout before the outer loop sleeps; and, as for any nested
    /// poller, when the outer loop reports the descriptor, call `wait` with a
    /// zero timeout (the report is a hint, like every event). `Poller`
    /// implements [`AsFd`] and [`AsRawFd`] with this descriptor (they panic
    /// for the mechanisms without one); [`into_nestable`](Poller::into_nestable)
    /// checks once and gives a type whose `as_fd` cannot fail.
    pub fn as_fd_opt(&self) -> Option<BorrowedFd<'_>> {
        self.backend.wait_fd()
    }

    /// [`as_fd_opt`](Poller::as_fd_opt) as a raw descriptor.
    pub fn as_raw_fd_opt(&self) -> Option<RawFd> {
        self.as_fd_opt().map(|fd| fd.as_raw_fd())
    }

    /// This poller as a [`NestablePoller`], which implements [`AsFd`] and
    /// [`AsRawFd`]; fails with `ErrorKind::Unsupported` for the mechanisms
    /// that wait on no single descriptor (see
    /// [`as_fd_opt`](Poller::as_fd_opt)).
    pub fn into_nestable(self) -> io::Result<NestablePoller> {
        if self.as_fd_opt().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "a {} poller waits on no single descriptor, so it cannot be nested in another \
                     event loop; use epoll, epoll-et, uring or rtsig-batch",
                    self.info.name
                ),
            ));
        }
        Ok(NestablePoller(self))
    }

    /// Start watching `fd` for `interest`; its events carry `token`.
    ///
    /// The descriptor should be non-blocking (events are hints; see the crate
    /// docs). Errors, the same [`io::ErrorKind`] on every mechanism (match on
    /// the kind: only some carry an OS error number): `AlreadyExists` when
    /// registered already, `InvalidInput` when `fd` is not an open
    /// descriptor, beyond what the mechanism can watch (select: fd ≥ 1024)
    /// or `token` is the [`waker`](Poller::waker)'s, `PermissionDenied` when
    /// the descriptor cannot be watched (a regular file: epoll, the signal
    /// mechanisms).
    pub fn register(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        self.check_token(token)?;
        self.backend
            .register(fd, token, interest)
            .map_err(|e| same_kind(e, fd, io::ErrorKind::InvalidInput))?;
        self.stats.registrations += 1;
        Ok(())
    }

    /// Change the token and interest of a registered descriptor (`NotFound`
    /// if it is not registered or not open; `InvalidInput` for the waker's
    /// token).
    pub fn modify(&mut self, fd: RawFd, token: Token, interest: Interest) -> io::Result<()> {
        self.check_token(token)?;
        self.backend
            .modify(fd, token, interest)
            .map_err(|e| same_kind(e, fd, io::ErrorKind::NotFound))?;
        self.stats.modifications += 1;
        Ok(())
    }

    /// Stop watching `fd` (`NotFound` if it is not registered or not open).
    /// Deregister
    /// before closing: afterwards no event of this registration is reported,
    /// even if the number is reused by a new descriptor.
    ///
    /// Closing a descriptor that is still registered is the caller's error,
    /// and each mechanism shows it its own way: epoll forgets the
    /// registration (a later `deregister` fails with `NotFound`), poll reports
    /// `ERROR` at every wait until it is deregistered, select fails every wait
    /// with `InvalidInput` naming the descriptor, the signal mechanisms hear
    /// nothing more of it, and io_uring reports `ERROR` once, unless its poll
    /// was already armed: that poll then holds the socket open (the peer sees
    /// no FIN) until `deregister`. Every mechanism but epoll keeps its record
    /// until a `deregister`, which then succeeds. With io_uring,
    /// the removal is submitted with the next wait, so a socket closed right
    /// after `deregister` is released then.
    pub fn deregister(&mut self, fd: RawFd) -> io::Result<()> {
        self.backend
            .deregister(fd)
            .map_err(|e| same_kind(e, fd, io::ErrorKind::NotFound))?;
        self.stats.deregistrations += 1;
        Ok(())
    }

    /// Refuse the waker's token for a registration: the waker's events are
    /// told apart by their token alone, so a descriptor sharing it would
    /// have its events taken for wakes.
    #[inline]
    fn check_token(&self, token: Token) -> io::Result<()> {
        match &self.waker {
            Some((_, w)) if *w == token => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{token:?} is this poller's waker token; give the registration another"),
            )),
            _ => Ok(()),
        }
    }

    /// A [`Waker`] whose wakes make `wait` return an event with `token`.
    /// One per poller; further calls return clones of the first (with its
    /// original token) when `token` matches, and an error otherwise.
    ///
    /// `token` must be no registration's: wakes are told apart by their
    /// token, so a registration sharing it would lose events. Later
    /// `register` and `modify` calls with it are refused; choose it before
    /// registering anything, or a token no registration uses.
    pub fn waker(&mut self, token: Token) -> io::Result<Waker> {
        if let Some((pipe, existing)) = &self.waker {
            if *existing == token {
                return Ok(Waker { pipe: pipe.clone() });
            }
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("this poller already has a waker with {existing:?}; one waker per poller (clone it)"),
            ));
        }
        let (read, write) = sys::pipe()?;
        let pipe = Arc::new(WakePipe { read, write });
        self.register(pipe.read.as_raw_fd(), token, Interest::READABLE)?;
        self.waker = Some((pipe.clone(), token));
        Ok(Waker { pipe })
    }

    /// Wait until at least one registration is ready, the waker is woken, or
    /// `timeout` has passed (`None`: no limit; `Some(ZERO)`: just look).
    ///
    /// `events` is cleared, then filled; the count is returned. The wait is
    /// never shorter than `timeout` when nothing happens (a mechanism that
    /// wakes early is put back to sleep for the rest), and a signal
    /// interrupting the system call does not end it.
    pub fn wait(&mut self, events: &mut Events, timeout: Option<Duration>) -> io::Result<usize> {
        events.clear();
        self.stats.waits += 1;
        let start = timeout.map(|t| (Instant::now(), t));
        let mut remaining = timeout;
        loop {
            match self.backend.wait(events, remaining, &mut self.stats) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
            self.note_waker(events);
            if !events.is_empty() {
                break;
            }
            if let Some((t0, total)) = start {
                let elapsed = t0.elapsed();
                if elapsed >= total {
                    break;
                }
                remaining = Some(total - elapsed);
            }
        }
        let n = events.len();
        self.stats.events += n as u64;
        if n == 0 {
            self.stats.empty_waits += 1;
        }
        Ok(n)
    }

    /// Drain the waker pipe when its event is among `events`, so the next
    /// wake is a new readiness change for edge-triggered mechanisms too.
    /// Several events for the waker (possible with signal mechanisms) are
    /// merged into one. When the pipe was already empty, the event is a
    /// leftover notification of a wake an earlier wait reported (mechanisms
    /// that queue one notification per write, RT signals and io_uring, leave
    /// those), and it is dropped.
    #[inline]
    fn note_waker(&mut self, events: &mut Events) {
        let Some((pipe, token)) = &self.waker else {
            return;
        };
        let token = *token;
        let count = events.iter().filter(|e| e.token() == token).count();
        if count == 0 {
            return;
        }
        if sys::drain(pipe.read.as_raw_fd()) == 0 {
            events.retain(|e| e.token() != token);
            return;
        }
        self.stats.wakeups += 1;
        if count > 1 {
            let mut seen = false;
            events.retain(|e| {
                if e.token() != token {
                    return true;
                }
                !std::mem::replace(&mut seen, true)
            });
        }
    }
}

/// An `EBADF` from the kernel (epoll) as the kind the mechanisms that keep
/// their own table give: registering a descriptor that is not open is
/// `InvalidInput`, and modifying or deregistering one is `NotFound` (a
/// closed descriptor is registered nowhere), so that every mechanism
/// answers alike.
fn same_kind(e: io::Error, fd: RawFd, kind: io::ErrorKind) -> io::Error {
    if e.raw_os_error() == Some(libc::EBADF) {
        io::Error::new(kind, format!("fd {fd} is not an open descriptor (EBADF)"))
    } else {
        e
    }
}

/// The descriptor of [`Poller::as_fd_opt`], for nesting a poller in another
/// event loop (as mio's `Poll` and polling's `Poller` expose theirs).
///
/// # Panics
///
/// For the mechanisms that wait on no single descriptor (`select`, `poll`,
/// `rtsig`, `rtsig-perfd`, `hybrid`): call [`as_fd_opt`](Poller::as_fd_opt) where the
/// mechanism is not known, or [`into_nestable`](Poller::into_nestable) to
/// check once and get a type whose `as_fd` cannot fail.
impl AsFd for Poller {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.as_fd_opt().unwrap_or_else(|| {
            panic!(
                "a {} poller waits on no single descriptor (use Poller::as_fd_opt, or epoll, \
                 epoll-et, uring or rtsig-batch)",
                self.info.name
            )
        })
    }
}

/// [`AsFd`] for [`Poller`] as a raw descriptor; it panics where that does.
impl AsRawFd for Poller {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

/// A [`Poller`] whose mechanism waits on one descriptor (epoll, epoll-et,
/// uring, rtsig-batch), which it exposes through [`AsFd`] and [`AsRawFd`] so
/// that another event loop can watch it. Made by
/// [`Poller::into_nestable`]; it dereferences to the `Poller`. Read the
/// rules of nesting at [`Poller::as_fd_opt`].
#[derive(Debug)]
pub struct NestablePoller(Poller);

impl NestablePoller {
    /// The poller back.
    pub fn into_inner(self) -> Poller {
        self.0
    }
}

impl Deref for NestablePoller {
    type Target = Poller;
    fn deref(&self) -> &Poller {
        &self.0
    }
}

impl DerefMut for NestablePoller {
    fn deref_mut(&mut self) -> &mut Poller {
        &mut self.0
    }
}

impl AsFd for NestablePoller {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // into_nestable checked that the mechanism has one.
        self.0.as_fd()
    }
}

impl AsRawFd for NestablePoller {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}
