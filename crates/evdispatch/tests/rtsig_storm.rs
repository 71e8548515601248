//! The RT-signal mechanisms under what the conformance suite cannot do:
//! queue overflow storms, stale signals for reused descriptor numbers, the
//! hybrid's mode switches, and the thread rules.
//!
//! Overflow tests lower `RLIMIT_SIGPENDING` to 32. That limit counts the
//! queued signals of the whole *user*, so it is never lowered here: each such
//! test re-executes this test binary, selecting itself by name, with
//! `EVD_RTSIG_CHILD` set, and the child lowers its own limit. The parent
//! bounds the child in time and passes its output on.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use evdispatch::{Config, Events, Interest, Mechanism, Poller, Stats, Token};

const CHILD: &str = "EVD_RTSIG_CHILD";
const SIGNAL_MECHANISMS: [Mechanism; 4] = [
    Mechanism::RtSig,
    Mechanism::RtSigBatch,
    Mechanism::RtSigPerfd,
    Mechanism::Hybrid,
];

/// Run `body` in a child process with `RLIMIT_SIGPENDING` lowered to 32.
/// `name` must be the calling test's name (the child runs only it).
fn in_child(name: &str, body: impl FnOnce()) {
    if std::env::var(CHILD).as_deref() == Ok(name) {
        evdispatch_host::set_rlimit(evdispatch_host::Resource::Sigpending, Some(32))
            .expect("lowering RLIMIT_SIGPENDING in the child");
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("re-executing the test binary");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let err = thread::spawn(move || {
        let mut s = String::new();
        let _ = err.read_to_string(&mut s);
        s
    });
    let limit = Duration::from_secs(120);
    let t0 = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let (out, err) = (out.join().unwrap(), err.join().unwrap());
    println!("--- child {name} stdout ---\n{out}--- child {name} stderr ---\n{err}");
    match status {
        None => panic!("child {name} did not finish within {limit:?}"),
        Some(s) => assert!(s.success(), "child {name} failed ({s}); output above"),
    }
    assert!(
        out.contains("1 passed"),
        "child {name} did not run the test; output above"
    );
}

fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

fn read_all(s: &mut UnixStream) -> usize {
    let mut buf = [0u8; 4096];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return total,
            Ok(n) => total += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return total,
            Err(e) => panic!("read: {e}"),
        }
    }
}

/// Wait and read until every socket has delivered `want` bytes in all, or
/// fail naming the ones whose readiness was lost.
fn read_until(
    p: &mut Poller,
    ev: &mut Events,
    socks: &mut [UnixStream],
    got: &mut [usize],
    want: usize,
    what: &str,
) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.iter().any(|&g| g < want) {
        if Instant::now() > deadline {
            let lost: Vec<usize> = (0..got.len()).filter(|&i| got[i] < want).collect();
            panic!(
                "{}: {what}: readiness lost: {} sockets still hold unread bytes (first: {:?}); {:?}",
                p.mechanism(),
                lost.len(),
                &lost[..lost.len().min(10)],
                p.stats()
            );
        }
        p.wait(ev, Some(Duration::from_millis(100))).unwrap();
        for e in ev.iter() {
            let i = e.token().0;
            got[i] += read_all(&mut socks[i]);
        }
    }
    assert!(
        got.iter().all(|&g| g == want),
        "{}: {what}: more bytes than were written",
        p.mechanism()
    );
}

const SOCKETS: usize = 1000;
const ROUNDS: usize = 20;

/// 1,000 sockets made readable at once, `ROUNDS` times from this thread, then
/// `ROUNDS` more times from a writer thread racing the waits.
fn storm(m: Mechanism) -> Stats {
    storm_with(Config::new(m), |_| {})
}

/// `storm` on a poller built from `config`, with `setup` run on it first.
fn storm_with(config: Config, setup: impl FnOnce(&Poller)) -> Stats {
    let m = config.mechanism;
    let mut p = Poller::with_config(config).unwrap();
    setup(&p);
    let mut ev = Events::with_capacity(1024);
    let (mut readers, writers): (Vec<_>, Vec<_>) = (0..SOCKETS).map(|_| pair()).unzip();
    for (i, r) in readers.iter().enumerate() {
        p.register(r.as_raw_fd(), Token(i), Interest::READABLE)
            .unwrap();
    }
    let mut got = vec![0usize; SOCKETS];
    let mut writers: Vec<UnixStream> = writers;
    for round in 1..=ROUNDS {
        for w in writers.iter_mut() {
            w.write_all(&[round as u8]).unwrap();
        }
        read_until(&mut p, &mut ev, &mut readers, &mut got, round, "storm");
    }
    let writer = thread::spawn(move || {
        for round in 0..ROUNDS {
            for w in writers.iter_mut() {
                w.write_all(&[round as u8]).unwrap();
            }
            thread::sleep(Duration::from_micros(200));
        }
        writers
    });
    read_until(
        &mut p,
        &mut ev,
        &mut readers,
        &mut got,
        2 * ROUNDS,
        "storm racing a writer thread",
    );
    let writers = writer.join().unwrap();
    let s = p.stats().clone();
    println!(
        "{m}: {SOCKETS} sockets x {} rounds: {} bytes read, 0 lost; overflows survived {}, recoveries {}, \
         signals dequeued {}, dequeue calls {}, coalesced {}, stale dropped {}, mode switches {}",
        2 * ROUNDS,
        got.iter().sum::<usize>(),
        s.overflows,
        s.recoveries,
        s.signals_dequeued,
        s.dequeue_calls,
        s.coalesced,
        s.stale_dropped,
        s.mode_switches
    );
    assert!(s.overflows > 0, "{m}: the storm never overflowed: {s:?}");
    assert_eq!(s.recoveries, s.overflows, "{m}: {s:?}");
    if m == Mechanism::Hybrid {
        assert!(s.mode_switches >= 1, "{m}: never left signal mode: {s:?}");
        // Load has stopped: quiet waits bring it back to signals.
        for _ in 0..64 {
            if p.stats().mode_switches % 2 == 0 {
                break;
            }
            p.wait(&mut ev, Some(Duration::from_millis(2))).unwrap();
            assert!(ev.is_empty(), "{m}: events after the storm: {ev:?}");
        }
        let s = p.stats().clone();
        assert!(
            s.mode_switches >= 2 && s.mode_switches % 2 == 0,
            "{m}: not back in signal mode after the storm: {s:?}"
        );
        assert!(s.poll_mode_ns > 0 && s.signal_mode_ns > 0, "{m}: {s:?}");
        // And it still works: one write, one event (as a signal, unless the
        // user's queue budget, shared with every process of the user, is
        // full again, in which case it overflows to epoll once more).
        let before = (s.signals_dequeued, s.overflows);
        let mut w = writers;
        w[7].write_all(b"!").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(
                Instant::now() < deadline,
                "{m}: the write after the storm was lost"
            );
            p.wait(&mut ev, Some(Duration::from_millis(100))).unwrap();
            if ev.iter().any(|e| e.token() == Token(7)) {
                assert_eq!(read_all(&mut readers[7]), 1);
                break;
            }
        }
        let s = p.stats().clone();
        assert!(
            s.signals_dequeued > before.0 || s.overflows > before.1,
            "{m}: {s:?}"
        );
        println!(
            "{m}: back in signal mode after the storm: {} switches, {:.1} ms in signal mode, {:.1} ms in epoll mode",
            s.mode_switches,
            s.signal_mode_ns as f64 / 1e6,
            s.poll_mode_ns as f64 / 1e6
        );
    }
    s
}

#[test]
fn overflow_storm_rtsig() {
    in_child("overflow_storm_rtsig", || {
        storm(Mechanism::RtSig);
    });
}

#[test]
fn overflow_storm_rtsig_batch() {
    in_child("overflow_storm_rtsig_batch", || {
        storm(Mechanism::RtSigBatch);
    });
}

#[test]
fn overflow_storm_rtsig_perfd() {
    in_child("overflow_storm_rtsig_perfd", || {
        let s = storm(Mechanism::RtSigPerfd);
        // Every dequeued signal disarmed its descriptor until the next wait.
        assert!(s.rearms > 0, "{s:?}");
    });
}

#[test]
fn overflow_storm_hybrid() {
    in_child("overflow_storm_hybrid", || {
        storm(Mechanism::Hybrid);
    });
}

extern "C" fn do_nothing(_: libc::c_int) {}

/// The same storms after the application has given the poller's signal a
/// handler of its own: the mechanisms can then no longer let the kernel
/// discard the queue (it is not ignored any more) and fall back to
/// dequeuing it, which must lose nothing either.
#[test]
fn overflow_storm_with_a_handler_installed() {
    in_child("overflow_storm_with_a_handler_installed", || {
        for m in SIGNAL_MECHANISMS {
            let mut c = Config::new(m);
            let signal = libc::SIGRTMAX() - 2;
            c.set("rtsig_signal", &signal.to_string()).unwrap();
            let s = storm_with(c, |_| {
                // SAFETY: a valid sigaction with a handler that does nothing;
                // the signal stays blocked in the poller's thread anyway.
                let mut act: libc::sigaction = unsafe { std::mem::zeroed() };
                act.sa_sigaction = do_nothing as extern "C" fn(libc::c_int) as usize;
                let r = unsafe { libc::sigaction(signal, &act, std::ptr::null_mut()) };
                assert_eq!(r, 0);
            });
            // Dequeued one by one or by batch: the flushes show in the count.
            assert!(s.signals_dequeued > 0, "{m}: {s:?}");
        }
    });
}

/// Replace the socket numbered like `old` by `fresh`, atomically (`dup2`), so
/// no other thread of the test process can take the number in between.
fn reuse_number(old: UnixStream, fresh: UnixStream) -> UnixStream {
    let old = std::mem::ManuallyDrop::new(old);
    let fd = old.as_raw_fd();
    // SAFETY: both descriptors are open; dup2 closes `fd` and makes it a copy
    // of `fresh`, whose own number is then closed by dropping `fresh`.
    let r = unsafe { libc::dup2(fresh.as_raw_fd(), fd) };
    assert_eq!(r, fd);
    drop(fresh);
    // SAFETY: `fd` is now a descriptor nobody else owns (`old` was forgotten).
    UnixStream::from(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Signals for a socket are queued, it is deregistered and its number
/// reused by a new socket: none of them may surface under the new token, and
/// the new socket's own readiness must.
fn reuse_with_signals_queued(m: Mechanism, queued: usize, rounds: usize) -> Stats {
    let mut p = Poller::new(m).unwrap();
    let mut ev = Events::with_capacity(64);
    for round in 0..rounds {
        let (old, mut old_peer) = pair();
        let fd = old.as_raw_fd();
        let old_token = Token(1000 + round);
        let new_token = Token(5000 + round);
        p.register(fd, old_token, Interest::BOTH).unwrap();
        for _ in 0..queued {
            old_peer.write_all(b"stale").unwrap();
        }
        if round % 2 == 1 {
            drop(old_peer); // a hang-up queued too
        }
        p.deregister(fd).unwrap();
        let (fresh, mut fresh_peer) = pair();
        let mut reused = reuse_number(old, fresh);
        p.register(fd, new_token, Interest::READABLE).unwrap();
        // Nothing for the new socket yet: every event now would be stale.
        p.wait(&mut ev, Some(Duration::from_millis(5))).unwrap();
        for e in ev.iter() {
            assert_ne!(e.token(), old_token, "{m}: stale event under the old token");
            assert_ne!(
                e.token(),
                new_token,
                "{m}: round {round}: a stale signal reported under the new token: {e:?}; {:?}",
                p.stats()
            );
        }
        fresh_peer.write_all(b"n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            assert!(
                Instant::now() < deadline,
                "{m}: the new socket's readiness was lost"
            );
            p.wait(&mut ev, Some(Duration::from_millis(100))).unwrap();
            assert!(ev.iter().all(|e| e.token() != old_token), "{m}: {ev:?}");
            if ev.iter().any(|e| e.token() == new_token) {
                break;
            }
        }
        assert_eq!(read_all(&mut reused), 1, "{m}: the new socket's own byte");
        p.deregister(fd).unwrap();
    }
    p.stats().clone()
}

#[test]
fn fd_reuse_with_signals_queued() {
    // A few signals per round: well inside the normal queue, so this runs in
    // the test process.
    for m in SIGNAL_MECHANISMS {
        let s = reuse_with_signals_queued(m, 4, 30);
        println!("{m}: {s:?}");
        // Unless the user's queue was full (other processes share the
        // budget) and the overflow flush removed them, the stale signals were
        // recognised one by one.
        assert!(
            s.stale_dropped > 0 || s.overflows > 0,
            "{m}: no stale signal was seen, so the test proved nothing: {s:?}"
        );
    }
}

#[test]
fn fd_reuse_with_the_queue_full() {
    in_child("fd_reuse_with_the_queue_full", || {
        for m in SIGNAL_MECHANISMS {
            // 40 signals per round against a limit of 32: the marker that
            // guards the new registration cannot be queued either.
            let s = reuse_with_signals_queued(m, 40, 10);
            println!("{m}: {s:?}");
            assert!(s.overflows > 0, "{m}: {s:?}");
        }
    });
}

#[test]
fn wait_on_another_thread_is_an_error() {
    for m in SIGNAL_MECHANISMS {
        let mut p = Poller::new(m).unwrap();
        let err = thread::spawn(move || {
            let mut ev = Events::with_capacity(4);
            p.wait(&mut ev, Some(Duration::ZERO)).unwrap_err()
        })
        .join()
        .unwrap();
        let msg = err.to_string();
        assert!(msg.contains("thread"), "{m}: unclear error: {msg}");
    }
}

#[test]
fn pollers_sharing_a_thread_keep_their_own_signals() {
    let mut pollers: Vec<Poller> = SIGNAL_MECHANISMS
        .iter()
        .chain(SIGNAL_MECHANISMS.iter())
        .map(|&m| Poller::new(m).unwrap())
        .collect();
    let mut socks: Vec<(UnixStream, UnixStream)> = pollers.iter().map(|_| pair()).collect();
    for (i, (p, (a, _))) in pollers.iter_mut().zip(&socks).enumerate() {
        p.register(a.as_raw_fd(), Token(i), Interest::READABLE)
            .unwrap();
    }
    for (_, b) in socks.iter_mut() {
        b.write_all(b"x").unwrap();
    }
    let mut ev = Events::with_capacity(8);
    for (i, p) in pollers.iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        while !seen.contains(&Token(i)) {
            assert!(
                Instant::now() < deadline,
                "poller {i} ({}) lost its event; saw {seen:?}",
                p.mechanism()
            );
            p.wait(&mut ev, Some(Duration::from_millis(50))).unwrap();
            seen.extend(ev.iter().map(|e| e.token()));
        }
        assert!(
            seen.iter().all(|&t| t == Token(i)),
            "poller {i} saw another poller's events: {seen:?}"
        );
    }
}

#[test]
fn hybrid_switches_on_a_large_batch_and_back() {
    let mut c = Config::new(Mechanism::Hybrid);
    c.apply([
        "hybrid_to_epoll_batch=8",
        "hybrid_to_signal_waits=3",
        "hybrid_to_signal_events=2",
    ])
    .unwrap();
    let mut p = Poller::with_config(c).unwrap();
    let mut ev = Events::with_capacity(64);
    let (mut readers, mut writers): (Vec<_>, Vec<_>) = (0..20).map(|_| pair()).unzip();
    for (i, r) in readers.iter().enumerate() {
        p.register(r.as_raw_fd(), Token(i), Interest::READABLE)
            .unwrap();
    }
    let mut got = vec![0usize; readers.len()];
    for round in 1..=5 {
        for w in writers.iter_mut() {
            w.write_all(b"b").unwrap();
        }
        read_until(&mut p, &mut ev, &mut readers, &mut got, round, "batch");
        let s = p.stats();
        assert!(s.mode_switches >= 1, "20 signals in one batch: {s:?}");
        // Quiet waits: back to signals.
        for _ in 0..3 {
            p.wait(&mut ev, Some(Duration::from_millis(1))).unwrap();
        }
        let s = p.stats();
        assert_eq!(s.mode_switches, 2 * round as u64, "round {round}: {s:?}");
    }
    // The switches came from the batch size, unless the user's signal budget
    // (shared with the user's other processes) happened to be exhausted.
    let s = p.stats();
    if s.overflows > 0 {
        println!("note: the user's RT-signal queue overflowed during the test: {s:?}");
    }
    assert!(s.mode_switches > 2 * s.overflows, "{s:?}");
}

#[test]
fn bad_signal_numbers_are_refused() {
    let mut c = Config::new(Mechanism::RtSig);
    let err = c.set("rtsig_signal", "10").unwrap_err();
    assert!(err.contains("SIGRTMIN"), "{err}");
    assert!(c.set("rtsig_signal", &libc::SIGRTMAX().to_string()).is_ok());
    assert!(Poller::with_config(c).is_ok());
}

/// The hybrid kept in epoll mode after its first signal keeps the contract:
/// data waiting at register, every new write after EAGAIN, modify, writable
/// after the peer drains, and no event for a deregistered, reused number.
#[test]
fn hybrid_in_epoll_mode_keeps_the_contract() {
    let mut c = Config::new(Mechanism::Hybrid);
    c.apply(["hybrid_to_epoll_batch=1", "hybrid_to_signal_waits=1000000"])
        .unwrap();
    let mut p = Poller::with_config(c).unwrap();
    let mut ev = Events::with_capacity(64);
    let expect = |p: &mut Poller, ev: &mut Events, token: Token, what: &str| {
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = Vec::new();
        while !seen.iter().any(|e: &evdispatch::Event| e.token() == token) {
            assert!(Instant::now() < deadline, "{what}: no event; saw {seen:?}");
            p.wait(ev, Some(Duration::from_millis(100))).unwrap();
            seen.extend(ev.iter().copied());
        }
        seen
    };
    // One signal moves it to epoll mode.
    let (mut a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    b.write_all(b"go").unwrap();
    expect(&mut p, &mut ev, Token(1), "first signal");
    assert_eq!(read_all(&mut a), 2);
    assert_eq!(p.stats().mode_switches, 1, "{:?}", p.stats());
    // Data waiting at register, in epoll mode.
    let (mut c2, mut d) = pair();
    d.write_all(b"early").unwrap();
    p.register(c2.as_raw_fd(), Token(2), Interest::READABLE)
        .unwrap();
    expect(&mut p, &mut ev, Token(2), "data waiting at register");
    assert_eq!(read_all(&mut c2), 5);
    // Every new write after EAGAIN.
    for round in 0..30u8 {
        b.write_all(&[round]).unwrap();
        expect(&mut p, &mut ev, Token(1), "new data after EAGAIN");
        assert_eq!(read_all(&mut a), 1);
    }
    // Epoll mode queues no signal: written, unread, and yet none pending.
    b.write_all(b"q").unwrap();
    let signal = Config::new(Mechanism::Hybrid).rtsig_signal;
    assert!(!thread_has_pending(signal), "signals queue in epoll mode");
    expect(&mut p, &mut ev, Token(1), "the unread write");
    assert_eq!(read_all(&mut a), 1);
    // Modify to writable: reported at once.
    p.modify(a.as_raw_fd(), Token(3), Interest::WRITABLE)
        .unwrap();
    let seen = expect(&mut p, &mut ev, Token(3), "modified to writable");
    assert!(seen.iter().all(|e| e.token() != Token(1)));
    // Fill, then the peer drains: writable again.
    let chunk = [0u8; 65536];
    while a.write(&chunk).is_ok() {}
    p.wait(&mut ev, Some(Duration::from_millis(5))).unwrap();
    read_all(&mut b);
    expect(&mut p, &mut ev, Token(3), "writable after the peer drained");
    // Deregister with data pending, reuse the number.
    b.write_all(b"stale").unwrap();
    p.deregister(a.as_raw_fd()).unwrap();
    let fd = a.as_raw_fd();
    let (fresh, mut fresh_peer) = pair();
    let mut reused = reuse_number(a, fresh);
    p.register(fd, Token(4), Interest::READABLE).unwrap();
    p.wait(&mut ev, Some(Duration::from_millis(5))).unwrap();
    assert!(ev
        .iter()
        .all(|e| e.token() != Token(3) && e.token() != Token(4)));
    fresh_peer.write_all(b"n").unwrap();
    let seen = expect(&mut p, &mut ev, Token(4), "the new socket");
    assert!(seen.iter().all(|e| e.token() != Token(3)));
    assert_eq!(read_all(&mut reused), 1);
    assert_eq!(p.stats().mode_switches, 1, "{:?}", p.stats());
}

/// Whether `signal` is pending for the calling thread (`SigPnd` in
/// `/proc/thread-self/status`).
fn thread_has_pending(signal: libc::c_int) -> bool {
    let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
    let mask = status
        .lines()
        .find_map(|l| l.strip_prefix("SigPnd:"))
        .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
        .expect("SigPnd in /proc/thread-self/status");
    mask & (1u64 << (signal - 1)) != 0
}

#[test]
fn signal_mode_does_queue() {
    // The counterpart of the epoll-mode check above: in signal mode an
    // unread write leaves the signal pending.
    let mut p = Poller::new(Mechanism::Hybrid).unwrap();
    let (a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    b.write_all(b"x").unwrap();
    // (Or SIGIO, should the user's queue budget be exhausted by others.)
    let signal = Config::new(Mechanism::Hybrid).rtsig_signal;
    assert!(thread_has_pending(signal) || thread_has_pending(libc::SIGIO));
    p.deregister(a.as_raw_fd()).unwrap();
}

/// A hybrid tuned to switch at nearly every wait, fed by a writer thread:
/// the switches race the writes, and not one readiness change may be lost.
#[test]
fn hybrid_switching_at_every_wait_loses_nothing() {
    let mut c = Config::new(Mechanism::Hybrid);
    c.apply([
        "hybrid_to_epoll_batch=1",
        "hybrid_to_signal_waits=1",
        "hybrid_to_signal_events=1000000",
    ])
    .unwrap();
    let mut p = Poller::with_config(c).unwrap();
    let mut ev = Events::with_capacity(256);
    const N: usize = 200;
    const ROUNDS: usize = 40;
    let (mut readers, mut writers): (Vec<_>, Vec<_>) = (0..N).map(|_| pair()).unzip();
    for (i, r) in readers.iter().enumerate() {
        p.register(r.as_raw_fd(), Token(i), Interest::READABLE)
            .unwrap();
    }
    let writer = thread::spawn(move || {
        for round in 0..ROUNDS {
            for (i, w) in writers.iter_mut().enumerate() {
                w.write_all(&[round as u8]).unwrap();
                if i % 16 == 0 {
                    thread::yield_now();
                }
            }
            thread::sleep(Duration::from_micros(300));
        }
        writers
    });
    let mut got = vec![0usize; N];
    read_until(&mut p, &mut ev, &mut readers, &mut got, ROUNDS, "switching");
    drop(writer.join().unwrap());
    let s = p.stats();
    println!("hybrid switching at every wait: {s:?}");
    assert!(s.mode_switches >= 10, "{s:?}");
}

/// A batch wait that blocked for its first signal hands over, in the same
/// wait, the signals raised while its thread was waking: a writer makes 16
/// sockets readable one after the other while the poller sleeps, and some
/// wake must return more than one of them (a `sigtimedwait` wake alone
/// returns exactly one). Twenty tries, as how many queue behind the first
/// depends on how fast the thread wakes.
#[test]
fn a_wake_up_takes_the_signals_behind_it() {
    const N: usize = 16;
    for m in [
        Mechanism::RtSigBatch,
        Mechanism::RtSigPerfd,
        Mechanism::Hybrid,
    ] {
        let mut p = Poller::new(m).unwrap();
        let mut ev = Events::with_capacity(64);
        let (mut readers, mut writers): (Vec<_>, Vec<_>) = (0..N).map(|_| pair()).unzip();
        for (i, r) in readers.iter().enumerate() {
            p.register(r.as_raw_fd(), Token(i), Interest::READABLE)
                .unwrap();
        }
        let mut per_wake = Vec::new();
        for _ in 0..20 {
            // Nothing queued: the next wait blocks.
            loop {
                p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
                if ev.is_empty() {
                    break;
                }
            }
            let writer = thread::spawn(move || {
                thread::sleep(Duration::from_millis(20));
                for w in writers.iter_mut() {
                    w.write_all(b"x").unwrap();
                }
                writers
            });
            p.wait(&mut ev, Some(Duration::from_secs(5))).unwrap();
            per_wake.push(ev.len());
            writers = writer.join().unwrap();
            let mut got = vec![0usize; N];
            for e in ev.iter() {
                got[e.token().0] += read_all(&mut readers[e.token().0]);
            }
            read_until(&mut p, &mut ev, &mut readers, &mut got, 1, "after a wake");
        }
        println!("{m}: events per wake-up: {per_wake:?}");
        assert!(
            per_wake.iter().all(|&n| n >= 1),
            "{m}: a wake-up without an event: {per_wake:?}"
        );
        assert!(
            per_wake.iter().any(|&n| n > 1),
            "{m}: every wake-up returned one event: {per_wake:?}"
        );
    }
}

fn has_o_async(fd: libc::c_int) -> bool {
    // SAFETY: F_GETFL takes no argument.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    assert!(flags >= 0, "F_GETFL");
    flags & libc::O_ASYNC != 0
}

/// `rtsig-perfd` disarms a descriptor from the dequeue of its signal to the
/// next wait: writes made meanwhile queue no signal, and the next wait
/// re-arms it and finds them by its re-check.
#[test]
fn perfd_is_silent_from_dequeue_to_the_next_wait() {
    let mut p = Poller::new(Mechanism::RtSigPerfd).unwrap();
    let signal = Config::new(Mechanism::RtSigPerfd).rtsig_signal;
    let mut ev = Events::with_capacity(8);
    let (mut a, mut b) = pair();
    let fd = a.as_raw_fd();
    p.register(fd, Token(1), Interest::READABLE).unwrap();
    assert!(has_o_async(fd));
    for round in 0..20 {
        b.write_all(b"x").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while !ev.iter().any(|e| e.token() == Token(1)) {
            assert!(Instant::now() < deadline, "round {round}: no event");
            p.wait(&mut ev, Some(Duration::from_millis(100))).unwrap();
        }
        // Served: disarmed, so more data while it is served queues nothing.
        assert!(
            !has_o_async(fd),
            "round {round}: still armed after its event"
        );
        b.write_all(b"yz").unwrap();
        assert!(
            !thread_has_pending(signal),
            "round {round}: a disarmed descriptor queued a signal"
        );
        assert_eq!(read_all(&mut a), 3);
        // The next wait re-arms it and re-checks: nothing new, no event.
        p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
        assert!(has_o_async(fd), "round {round}: not re-armed by the wait");
        assert!(ev.is_empty(), "round {round}: {ev:?}");
    }
    // Data that arrives while it is disarmed is found by the re-arming wait.
    b.write_all(b"1").unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ev.iter().any(|e| e.token() == Token(1)) {
        assert!(Instant::now() < deadline, "no event");
        p.wait(&mut ev, Some(Duration::from_millis(100))).unwrap();
    }
    b.write_all(b"2").unwrap();
    assert_eq!(read_all(&mut a), 2);
    b.write_all(b"3").unwrap(); // after the drain, while still disarmed
    p.wait(&mut ev, Some(Duration::from_millis(100))).unwrap();
    assert!(
        ev.iter().any(|e| e.token() == Token(1)),
        "the write while disarmed was lost: {:?}",
        p.stats()
    );
    assert_eq!(read_all(&mut a), 1);
    let s = p.stats();
    assert!(s.rearms >= 21, "{s:?}");
    p.deregister(fd).unwrap();
    assert!(!has_o_async(fd));
}

/// `rtsig-perfd` reports a condition that persists without a change (here:
/// writable, with nothing written) a bounded number of times, not at every
/// wait: the probe after `register` reports and disarms it, the next wait's
/// re-check reports it and leaves it armed, and then it is silent.
#[test]
fn perfd_does_not_repeat_a_lasting_condition() {
    let mut p = Poller::new(Mechanism::RtSigPerfd).unwrap();
    let mut ev = Events::with_capacity(8);
    let (a, _b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::WRITABLE)
        .unwrap();
    let mut reports = 0;
    for _ in 0..10 {
        p.wait(&mut ev, Some(Duration::from_millis(10))).unwrap();
        reports += ev.iter().filter(|e| e.token() == Token(1)).count();
    }
    assert!(
        (1..=2).contains(&reports),
        "writable reported {reports} times in 10 waits: {:?}",
        p.stats()
    );
    assert!(has_o_async(a.as_raw_fd()), "left disarmed");
}
