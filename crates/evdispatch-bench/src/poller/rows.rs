//! The rows of the Poller_bench table. Each is one small [`Row`]: set up N
//! descriptors, run one timed iteration, tear down. [`all_rows`] is the list:
//! every mechanism of `evdispatch::MECHANISMS` (so a mechanism that lands in
//! the library appears here by itself), then the floors written straight on
//! the system calls, the Rust crates, and the C libraries.

use std::io;
use std::num::NonZeroUsize;
use std::os::fd::RawFd;

use evdispatch::{Events, Interest, Mechanism, Poller, Token, MECHANISMS};
use serde::Serialize;

use crate::sys;

/// Result buffer size for every row that has one (the library's default
/// `initial_events`), so no row is favoured by a bigger batch.
pub const EVENT_CAPACITY: usize = 256;

/// What one timed iteration did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// Bytes read: one per active descriptor.
    pub bytes: u64,
    /// Wait (or loop) calls it took.
    pub waits: u64,
    /// Events whose read found nothing.
    pub spurious: u64,
}

impl Served {
    /// Poller_bench's handler: `read(fd, buf, 1)`, counted as a byte read
    /// or, when nothing was there, as a spurious event.
    #[inline]
    pub fn handle(&mut self, fd: RawFd) {
        if sys::read1(fd) {
            self.bytes += 1;
        } else {
            self.spurious += 1;
        }
    }
}

/// One row of the table.
pub trait Row {
    /// Start watching `fds` (non-blocking read ends) for readability.
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()>;
    /// Wait, and `read(fd, buf, 1)` each ready descriptor, until `active`
    /// bytes have been read. This is what is timed.
    fn iterate(&mut self, active: usize) -> io::Result<Served>;
    /// Stop watching (the descriptors stay open: they are the harness's).
    fn teardown(&mut self) -> io::Result<()>;
    /// What the row runs on, when not obvious (libevent's chosen backend).
    fn detail(&self) -> Option<String> {
        None
    }
}

/// Which family a row belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RowKind {
    /// A mechanism of the evdispatch library.
    Library,
    /// The same loop straight on the system calls.
    Floor,
    /// A Rust crate (dev-grade peer).
    Crate,
    /// A C library through our harness.
    CPeer,
}

/// A row of the table before it runs: its name and how to build it.
pub struct RowSpec {
    /// Name on the command line, in the table and in the JSON.
    pub name: &'static str,
    /// Family.
    pub kind: RowKind,
    /// Highest descriptor number the row can watch plus one (select: 1024).
    pub max_fd: Option<RawFd>,
    /// Build a fresh row, or say why it cannot run here.
    pub open: Box<dyn Fn() -> Result<Box<dyn Row>, Unavailable>>,
}

/// Why a row cannot run here, and how to fix it.
#[derive(Debug, Clone, Serialize)]
pub struct Unavailable {
    /// What is wrong.
    pub reason: String,
    /// The command that fixes it, if one does.
    pub install: Option<String>,
}

impl Unavailable {
    fn because(reason: impl Into<String>) -> Unavailable {
        Unavailable {
            reason: reason.into(),
            install: None,
        }
    }
}

/// Builds a row, or says why it cannot run here.
type Open = fn() -> Result<Box<dyn Row>, Unavailable>;

/// A row that can always run, fresh.
fn fresh<R: Row + Default + 'static>() -> Result<Box<dyn Row>, Unavailable> {
    Ok(Box::<R>::default())
}

/// Every row, in table order: the library's mechanisms first.
pub fn all_rows() -> Vec<RowSpec> {
    let mut rows: Vec<RowSpec> = MECHANISMS
        .iter()
        .map(|m| {
            let mechanism = m.mechanism;
            RowSpec {
                name: m.name,
                kind: RowKind::Library,
                max_fd: m.max_fd,
                open: Box::new(move || LibraryRow::open(mechanism)),
            }
        })
        .collect();
    let others: [(_, _, Open); 6] = [
        ("raw-epoll", RowKind::Floor, fresh::<RawEpollRow>),
        ("raw-poll", RowKind::Floor, fresh::<RawPollRow>),
        ("mio", RowKind::Crate, fresh::<MioRow>),
        ("polling", RowKind::Crate, fresh::<PollingRow>),
        ("libevent", RowKind::CPeer, c_peer::libevent),
        ("libev", RowKind::CPeer, c_peer::libev),
    ];
    rows.extend(others.map(|(name, kind, open)| RowSpec {
        name,
        kind,
        max_fd: None,
        open: Box::new(open),
    }));
    rows
}

/// A mechanism of the library, through `evdispatch::Poller`.
struct LibraryRow {
    mechanism: Mechanism,
    poller: Option<Poller>,
    events: Events,
    fds: Vec<RawFd>,
}

impl LibraryRow {
    fn open(mechanism: Mechanism) -> Result<Box<dyn Row>, Unavailable> {
        // Probe now so an unsupported mechanism is reported before the run.
        match Poller::new(mechanism) {
            Ok(_) => Ok(Box::new(LibraryRow {
                mechanism,
                poller: None,
                events: Events::with_capacity(EVENT_CAPACITY),
                fds: Vec::new(),
            })),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                Err(Unavailable::because(e.to_string()))
            }
            Err(e) => Err(Unavailable::because(format!(
                "creating a {mechanism} poller failed: {e}"
            ))),
        }
    }
}

impl Row for LibraryRow {
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
        let mut poller = Poller::new(self.mechanism)?;
        for (i, &fd) in fds.iter().enumerate() {
            poller.register(fd, Token(i), Interest::READABLE)?;
        }
        self.fds = fds.to_vec();
        self.poller = Some(poller);
        Ok(())
    }

    #[inline]
    fn iterate(&mut self, active: usize) -> io::Result<Served> {
        let poller = self.poller.as_mut().expect("setup before iterate");
        let mut s = Served::default();
        while s.bytes < active as u64 {
            poller.wait(&mut self.events, None)?;
            s.waits += 1;
            for ev in &self.events {
                s.handle(self.fds[ev.token().0]);
            }
        }
        Ok(s)
    }

    fn teardown(&mut self) -> io::Result<()> {
        if let Some(mut poller) = self.poller.take() {
            for &fd in &self.fds {
                poller.deregister(fd)?;
            }
        }
        self.fds.clear();
        Ok(())
    }
}

/// `epoll_wait` + `read`, nothing else: the floor.
#[derive(Default)]
struct RawEpollRow {
    ep: Option<sys::RawEpoll>,
    fds: Vec<RawFd>,
}

impl Row for RawEpollRow {
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
        let mut ep = sys::RawEpoll::new(EVENT_CAPACITY)?;
        for (i, &fd) in fds.iter().enumerate() {
            ep.add(fd, i as u64)?;
        }
        self.ep = Some(ep);
        self.fds = fds.to_vec();
        Ok(())
    }

    #[inline]
    fn iterate(&mut self, active: usize) -> io::Result<Served> {
        let ep = self.ep.as_mut().expect("setup before iterate");
        let mut s = Served::default();
        while s.bytes < active as u64 {
            let ready = ep.wait()?;
            s.waits += 1;
            for ev in ready {
                s.handle(self.fds[ev.u64 as usize]);
            }
        }
        Ok(s)
    }

    fn teardown(&mut self) -> io::Result<()> {
        // Closing the epoll descriptor drops every registration.
        self.ep = None;
        Ok(())
    }
}

/// `poll` over one pollfd array kept across calls, then a scan for
/// `revents`: the floor of the scanning mechanisms.
#[derive(Default)]
struct RawPollRow {
    pfds: Vec<libc::pollfd>,
}

impl Row for RawPollRow {
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
        self.pfds = fds
            .iter()
            .map(|&fd| libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        Ok(())
    }

    #[inline]
    fn iterate(&mut self, active: usize) -> io::Result<Served> {
        let mut s = Served::default();
        while s.bytes < active as u64 {
            let mut left = sys::poll(&mut self.pfds)?;
            s.waits += 1;
            for p in self.pfds.iter_mut() {
                if left == 0 {
                    break;
                }
                if p.revents != 0 {
                    left -= 1;
                    p.revents = 0;
                    s.handle(p.fd);
                }
            }
        }
        Ok(s)
    }

    fn teardown(&mut self) -> io::Result<()> {
        self.pfds.clear();
        Ok(())
    }
}

/// The `mio` crate (edge-triggered epoll underneath).
#[derive(Default)]
struct MioRow {
    poll: Option<mio::Poll>,
    events: Option<mio::Events>,
    fds: Vec<RawFd>,
}

impl Row for MioRow {
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
        let poll = mio::Poll::new()?;
        for (i, fd) in fds.iter().enumerate() {
            poll.registry().register(
                &mut mio::unix::SourceFd(fd),
                mio::Token(i),
                mio::Interest::READABLE,
            )?;
        }
        self.poll = Some(poll);
        self.events = Some(mio::Events::with_capacity(EVENT_CAPACITY));
        self.fds = fds.to_vec();
        Ok(())
    }

    #[inline]
    fn iterate(&mut self, active: usize) -> io::Result<Served> {
        let poll = self.poll.as_mut().expect("setup before iterate");
        let events = self.events.as_mut().expect("setup before iterate");
        let mut s = Served::default();
        while s.bytes < active as u64 {
            poll.poll(events, None)?;
            s.waits += 1;
            for ev in events.iter() {
                s.handle(self.fds[ev.token().0]);
            }
        }
        Ok(s)
    }

    fn teardown(&mut self) -> io::Result<()> {
        if let Some(poll) = self.poll.take() {
            for fd in &self.fds {
                poll.registry().deregister(&mut mio::unix::SourceFd(fd))?;
            }
        }
        self.fds.clear();
        Ok(())
    }
}

/// The `polling` crate, level-triggered (`PollMode::Level`), the mode that
/// matches the library's `epoll` row.
#[derive(Default)]
struct PollingRow {
    poller: Option<polling::Poller>,
    events: Option<polling::Events>,
    fds: Vec<RawFd>,
}

impl Row for PollingRow {
    fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
        let poller = polling::Poller::new()?;
        for (i, &fd) in fds.iter().enumerate() {
            sys::polling_add_level(&poller, fd, i)?;
        }
        self.poller = Some(poller);
        let capacity = NonZeroUsize::new(EVENT_CAPACITY).expect("non-zero");
        self.events = Some(polling::Events::with_capacity(capacity));
        self.fds = fds.to_vec();
        Ok(())
    }

    #[inline]
    fn iterate(&mut self, active: usize) -> io::Result<Served> {
        let poller = self.poller.as_ref().expect("setup before iterate");
        let events = self.events.as_mut().expect("setup before iterate");
        let mut s = Served::default();
        while s.bytes < active as u64 {
            events.clear();
            poller.wait(events, None)?;
            s.waits += 1;
            for ev in events.iter() {
                s.handle(self.fds[ev.key]);
            }
        }
        Ok(s)
    }

    fn teardown(&mut self) -> io::Result<()> {
        if let Some(poller) = self.poller.take() {
            for &fd in &self.fds {
                sys::polling_delete(&poller, fd)?;
            }
        }
        self.fds.clear();
        Ok(())
    }
}

/// libevent and libev through csrc/*.c, when build.rs found them.
mod c_peer {
    use super::{Row, Unavailable};

    const INSTALL: &str =
        "sudo apt-get install -y libevent-dev libev-dev pkg-config, then rebuild: \
                           cargo clean -p evdispatch-bench && cargo build --release";

    #[allow(dead_code)]
    fn missing(what: &str, why: Option<&str>) -> Unavailable {
        Unavailable {
            reason: format!(
                "the {what} harness is not built in: {}",
                why.unwrap_or("its development files were not found at build time")
            ),
            install: Some(INSTALL.to_string()),
        }
    }

    pub fn libevent() -> Result<Box<dyn Row>, Unavailable> {
        #[cfg(evd_libevent)]
        return Ok(Box::new(imp::CRow::new(&crate::sys::c_peers::LIBEVENT)));
        #[cfg(not(evd_libevent))]
        return Err(missing("libevent", option_env!("EVD_LIBEVENT_MISSING")));
    }

    pub fn libev() -> Result<Box<dyn Row>, Unavailable> {
        #[cfg(evd_libev)]
        return Ok(Box::new(imp::CRow::new(&crate::sys::c_peers::LIBEV)));
        #[cfg(not(evd_libev))]
        return Err(missing("libev", option_env!("EVD_LIBEV_MISSING")));
    }

    #[cfg(any(evd_libevent, evd_libev))]
    mod imp {
        use std::io;
        use std::os::fd::RawFd;

        use super::super::{Row, Served};
        use crate::sys::c_peers::{Api, Loop};

        pub struct CRow {
            api: &'static Api,
            looop: Option<Loop>,
        }

        impl CRow {
            pub fn new(api: &'static Api) -> CRow {
                CRow { api, looop: None }
            }
        }

        impl Row for CRow {
            fn setup(&mut self, fds: &[RawFd]) -> io::Result<()> {
                self.looop = Some(Loop::new(self.api, fds)?);
                Ok(())
            }

            #[inline]
            fn iterate(&mut self, active: usize) -> io::Result<Served> {
                let l = self.looop.as_mut().expect("setup before iterate");
                let [bytes, spurious, waits] = l.iterate(active)?;
                Ok(Served {
                    bytes: bytes as u64,
                    waits: waits as u64,
                    spurious: spurious as u64,
                })
            }

            fn teardown(&mut self) -> io::Result<()> {
                self.looop = None;
                Ok(())
            }

            fn detail(&self) -> Option<String> {
                self.looop
                    .as_ref()
                    .map(|l| format!("backend {}", l.backend()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsRawFd, OwnedFd};

    fn pairs(n: usize) -> Vec<(OwnedFd, OwnedFd)> {
        (0..n)
            .map(|_| {
                let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
                a.set_nonblocking(true).unwrap();
                b.set_nonblocking(true).unwrap();
                (a.into(), b.into())
            })
            .collect()
    }

    /// Every row that can run here reads exactly the bytes written, every
    /// iteration, and leaves nothing unread. (A row that lost an event would
    /// wait forever: the work runs in a thread with a generous deadline.)
    #[test]
    fn every_row_reads_every_ready_descriptor() {
        let _g = crate::TEST_FDS.lock().unwrap_or_else(|e| e.into_inner());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let p = pairs(40);
            let reads: Vec<RawFd> = p.iter().map(|(r, _)| r.as_raw_fd()).collect();
            let mut ran = Vec::new();
            for spec in all_rows() {
                let mut row = match (spec.open)() {
                    Ok(r) => r,
                    Err(u) => {
                        eprintln!("skipping {}: {}", spec.name, u.reason);
                        continue;
                    }
                };
                row.setup(&reads).unwrap();
                for (iter, active) in [1usize, 4, 40, 7].into_iter().enumerate() {
                    let spacing = 40 / active;
                    for k in 0..active {
                        assert!(sys::write1(p[(iter + k * spacing) % 40].1.as_raw_fd()));
                    }
                    let s = row.iterate(active).unwrap();
                    assert_eq!(s.bytes, active as u64, "{} active={active}", spec.name);
                    assert!(s.waits >= 1);
                    for &fd in &reads {
                        assert!(!sys::read1(fd), "{}: fd {fd} left readable", spec.name);
                    }
                }
                row.teardown().unwrap();
                ran.push(spec.name);
            }
            // Close every descriptor before the test (and its lock) ends.
            drop(p);
            tx.send(ran).unwrap();
        });
        let ran = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a row never finished an iteration (lost event) or panicked");
        for must in ["epoll", "raw-epoll", "raw-poll", "mio", "polling"] {
            assert!(ran.contains(&must), "{must} did not run: {ran:?}");
        }
    }
}
