//! How to build a [`Poller`](crate::Poller): the [`Mechanism`] and its
//! tunables ([`Config`]).

/// A readiness-notification mechanism.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mechanism {
    /// `select(2)`, level-triggered; descriptors below `FD_SETSIZE` (1024) only.
    Select,
    /// `poll(2)`, level-triggered.
    Poll,
    /// `epoll(7)`, level-triggered.
    Epoll,
    /// `epoll(7)` with `EPOLLET`, edge-triggered.
    EpollEt,
    /// io_uring multishot `IORING_OP_POLL_ADD`, edge-triggered.
    Uring,
    /// POSIX RT signals, one `sigtimedwait` per event.
    ///
    /// The four signal mechanisms (this one, `RtSigBatch`, `RtSigPerfd` and
    /// `Hybrid`)
    /// change process state. The poller's RT signal and `SIGIO` are blocked
    /// in the thread that creates it; threads it spawns later inherit the
    /// mask, and the signals stay blocked after the poller is dropped.
    /// `register` sets `O_ASYNC | O_NONBLOCK`, the owner thread and the
    /// signal on the open file description, which a `dup` of it or another
    /// process holding it shares; `deregister` clears `O_ASYNC` only. So
    /// register descriptors the program alone holds (sockets, pipes), not an
    /// inherited terminal, and wait from the creating thread. For the same
    /// reason one descriptor is heard by one signal poller only: a second
    /// poller that registers it (a listener shared by several event loops)
    /// takes its signals over, the first hears nothing more, and a
    /// `deregister` in either silences both.
    RtSig,
    /// POSIX RT signals, many per `read` of a signalfd, coalesced per fd.
    RtSigBatch,
    /// `RtSigBatch` with a descriptor's `O_ASYNC` cleared from the dequeue of
    /// its signal until the next wait, which re-arms it and re-checks it with
    /// a `poll`: about one queued signal per descriptor (seed 004's
    /// signal-per-fd, as near as user space comes).
    RtSigPerfd,
    /// RT signals at light load, epoll under overflow or heavy load.
    Hybrid,
}

/// How to build a [`Poller`](crate::Poller): the mechanism and its tunables.
#[derive(Debug, Clone)]
pub struct Config {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// Starting size of the mechanism's result buffer (epoll grows it when a
    /// wait fills it).
    pub initial_events: usize,
    /// io_uring: submission queue entries.
    pub uring_entries: u32,
    /// RT signals: the signal the registered descriptors raise. Default
    /// `SIGRTMIN() + 6`, clear of the two signals glibc reserves below
    /// `SIGRTMIN()` and of `SIGRTMIN()`, which other libraries take first.
    /// A second signal poller on the same thread takes the next free one.
    /// Its disposition is set to `SIG_IGN` process-wide when first used (a
    /// thread that blocks it still queues it; see the `rtsig` mechanism),
    /// and it stays blocked in the poller's thread.
    pub rtsig_signal: i32,
    /// `rtsig-batch`, `hybrid`: signals dequeued per `read` of the signalfd
    /// (default 256: 32 KiB of `signalfd_siginfo`, more than a wait of the
    /// benchmarks ever finds queued).
    pub rtsig_batch: usize,
    /// `hybrid`: a dequeue batch (one `read` of the signalfd) of at least
    /// this many signals moves it to epoll; an overflow always does. Default
    /// 256, a full read: the queue then holds more changes than a wait takes,
    /// the server is behind, and signals, which cost one dequeue per change,
    /// lose to epoll, which reports each ready descriptor once however often
    /// it changed. In Kegel's loop at N = 1,000 (`evdispatch bench poller`;
    /// the loop alone is `examples/kegel.rs`),
    /// `rtsig-batch` matched epoll up to A = 1,000 with one write per active
    /// socket, but took 1.3–1.5x epoll's time at A = 100 and 1.6–3.5x at
    /// A = 300 with four (our runs, a shared 2-core VM). Values above
    /// `rtsig_batch` leave only the overflow trigger.
    pub hybrid_to_epoll_batch: usize,
    /// `hybrid`: this many epoll waits in a row, each with fewer than
    /// `hybrid_to_signal_events` events, bring it back to signals. Default 8:
    /// a short lull between two bursts should not send it back only to
    /// overflow or fill a batch again at the next one.
    pub hybrid_to_signal_waits: u32,
    /// `hybrid`: see `hybrid_to_signal_waits`. Default 32, an eighth of the
    /// default `hybrid_to_epoll_batch`: the band between the two thresholds
    /// is wide, so a steady load cannot make the hybrid flap between modes.
    pub hybrid_to_signal_events: usize,
}

impl Config {
    /// Defaults for `mechanism`.
    pub fn new(mechanism: Mechanism) -> Config {
        Config {
            mechanism,
            initial_events: 256,
            uring_entries: 256,
            rtsig_signal: default_rt_signal(),
            rtsig_batch: 256,
            hybrid_to_epoll_batch: 256,
            hybrid_to_signal_waits: 8,
            hybrid_to_signal_events: 32,
        }
    }

    /// Set a tunable by name, as command lines pass them (`--poller-opt
    /// key=value`), so a program can expose every tunable without knowing it.
    /// [`Config::KEYS`] lists the names.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        fn num<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
            value
                .parse()
                .map_err(|_| format!("poller option {key}: '{value}' is not a valid number"))
        }
        match key {
            "initial_events" => self.initial_events = num(key, value)?,
            "uring_entries" => self.uring_entries = num(key, value)?,
            "rtsig_signal" => {
                let signal = num(key, value)?;
                check_rt_signal(signal)?;
                self.rtsig_signal = signal;
            }
            "rtsig_batch" => self.rtsig_batch = num(key, value)?,
            "hybrid_to_epoll_batch" => self.hybrid_to_epoll_batch = num(key, value)?,
            "hybrid_to_signal_waits" => self.hybrid_to_signal_waits = num(key, value)?,
            "hybrid_to_signal_events" => self.hybrid_to_signal_events = num(key, value)?,
            _ => {
                return Err(format!(
                    "unknown poller option '{key}'; known: {}",
                    Config::KEYS.join(", ")
                ))
            }
        }
        Ok(())
    }

    /// The names [`Config::set`] accepts.
    pub const KEYS: &'static [&'static str] = &[
        "initial_events",
        "uring_entries",
        "rtsig_signal",
        "rtsig_batch",
        "hybrid_to_epoll_batch",
        "hybrid_to_signal_waits",
        "hybrid_to_signal_events",
    ];

    /// Apply `key=value` pairs in order (see [`Config::set`]).
    pub fn apply<'a>(&mut self, pairs: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
        for pair in pairs {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| format!("poller option '{pair}' is not key=value"))?;
            self.set(k.trim(), v.trim())?;
        }
        Ok(())
    }
}

/// The default RT signal: clear of the two glibc keeps below `SIGRTMIN()` for
/// itself (thread cancellation and set*id broadcast), and of `SIGRTMIN()`
/// itself, which other libraries commonly take first.
fn default_rt_signal() -> libc::c_int {
    libc::SIGRTMIN() + 6
}

/// Check a configured signal number.
pub(crate) fn check_rt_signal(signal: libc::c_int) -> Result<(), String> {
    let (lo, hi) = (libc::SIGRTMIN(), libc::SIGRTMAX());
    if (lo..=hi).contains(&signal) {
        Ok(())
    } else {
        Err(format!(
            "rtsig_signal {signal} is not a usable RT signal here; choose one in {lo}..={hi} (SIGRTMIN()..=SIGRTMAX(); glibc reserves those below)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_options_by_name() {
        let mut c = Config::new(Mechanism::Epoll);
        c.apply(["initial_events=8", "uring_entries = 64"]).unwrap();
        assert_eq!((c.initial_events, c.uring_entries), (8, 64));
        assert!(c.set("nope", "1").unwrap_err().contains("initial_events"));
        assert!(c.set("initial_events", "x").is_err());
        assert!(c.apply(["initial_events"]).is_err());
    }

    #[test]
    fn signal_numbers_are_checked() {
        assert!(check_rt_signal(libc::SIGRTMIN()).is_ok());
        assert!(check_rt_signal(libc::SIGRTMAX()).is_ok());
        for bad in [libc::SIGIO, 0, libc::SIGRTMAX() + 1] {
            assert!(
                check_rt_signal(bad).unwrap_err().contains("SIGRTMIN()"),
                "{bad}"
            );
        }
    }
}
