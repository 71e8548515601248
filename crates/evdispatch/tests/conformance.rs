//! One conformance suite, instantiated for every mechanism of the table.
//!
//! Each behaviour is a function taking a `Mechanism`; the `conformance!`
//! macro at the bottom turns it into one `#[test]` per mechanism, so a new
//! mechanism joins by adding one line there (and `every_mechanism_is_tested`
//! fails until it does).
//!
//! Cargo runs these as threads of one process, which may hold 20,000 files in
//! all: the tests that open thousands of descriptors take `FD_HEAVY` first.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use evdispatch::{Event, Events, Interest, Mechanism, Poller, Token, MECHANISMS};

/// Serialises the descriptor-hungry tests of this process.
static FD_HEAVY: Mutex<()> = Mutex::new(());

const LONG: Duration = Duration::from_secs(5);
const QUIET: Duration = Duration::from_millis(60);

/// A poller on `m`, or `None` (with the reason printed) when the mechanism is
/// not available on this machine.
fn poller(m: Mechanism) -> Option<Poller> {
    match Poller::new(m) {
        Ok(p) => Some(p),
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            eprintln!("skipping {m}: not available here: {e}");
            None
        }
        Err(e) => panic!("{m}: cannot create a poller: {e}"),
    }
}

macro_rules! poller_or_skip {
    ($m:expr) => {
        match poller($m) {
            Some(p) => p,
            None => return,
        }
    };
}

fn pair() -> (UnixStream, UnixStream) {
    let (a, b) = UnixStream::pair().expect("socketpair");
    a.set_nonblocking(true).unwrap();
    b.set_nonblocking(true).unwrap();
    (a, b)
}

/// Wait until an event for `token` arrives (other events are kept too), or panic.
fn wait_for(p: &mut Poller, events: &mut Events, token: Token, what: &str) -> Vec<Event> {
    let deadline = Instant::now() + LONG;
    let mut seen = Vec::new();
    while Instant::now() < deadline {
        p.wait(events, Some(Duration::from_millis(100))).unwrap();
        seen.extend(events.iter().copied());
        if seen.iter().any(|e| e.token() == token) {
            return seen;
        }
    }
    panic!(
        "{}: no event for {token:?} ({what}) within {LONG:?}; saw {seen:?}",
        p.mechanism()
    );
}

/// The events for `token` among `seen`, merged into one.
fn merged(seen: &[Event], token: Token) -> Event {
    let ready = seen
        .iter()
        .filter(|e| e.token() == token)
        .fold(evdispatch::Ready::EMPTY, |acc, e| acc | e.ready());
    Event::new(token, ready)
}

/// Waits for `QUIET` and asserts that nothing at all is reported.
fn expect_nothing(p: &mut Poller, events: &mut Events, why: &str) {
    let n = p.wait(events, Some(QUIET)).unwrap();
    assert_eq!(
        n,
        0,
        "{}: expected no event ({why}), got {:?}",
        p.mechanism(),
        events.as_slice()
    );
}

fn read_until_eagain(s: &mut impl Read) -> usize {
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

fn readable_after_write(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (mut a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(7), Interest::READABLE)
        .unwrap();
    expect_nothing(&mut p, &mut ev, "nothing written yet");
    b.write_all(b"x").unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(7), "after a write");
    assert!(merged(&seen, Token(7)).is_readable(), "{m}: {seen:?}");
    assert_eq!(read_until_eagain(&mut a), 1);
}

fn writable(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, _b) = pair();
    p.register(a.as_raw_fd(), Token(3), Interest::WRITABLE)
        .unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(3), "fresh socket is writable");
    let e = merged(&seen, Token(3));
    assert!(e.is_writable(), "{m}: {e:?}");
    assert!(
        !e.is_readable(),
        "{m}: readable reported without read interest: {e:?}"
    );
}

/// Data already waiting when the registration is made must be reported.
fn data_waiting_at_register(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (mut a, mut b) = pair();
    b.write_all(b"early").unwrap();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(1), "data written before register");
    assert!(merged(&seen, Token(1)).is_readable());
    assert_eq!(read_until_eagain(&mut a), 5);
}

fn idle_timeout_honoured(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, _b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    for ms in [0.0, 1.0, 2.5, 13.0, 50.0] {
        let t = Duration::from_secs_f64(ms / 1000.0);
        let t0 = Instant::now();
        let n = p.wait(&mut ev, Some(t)).unwrap();
        let took = t0.elapsed();
        assert_eq!(n, 0, "{m}: idle socket reported {:?}", ev.as_slice());
        assert!(took >= t, "{m}: wait({t:?}) returned early, after {took:?}");
        assert!(
            took < t + Duration::from_secs(1),
            "{m}: wait({t:?}) took {took:?}"
        );
    }
}

fn peer_close_reported(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    // Unix socketpair.
    let (mut a, b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    drop(b);
    let seen = wait_for(&mut p, &mut ev, Token(1), "unix peer closed");
    let closed = merged(&seen, Token(1));
    assert!(closed.is_readable(), "{m}: {seen:?}");
    // A hang-up, not an error; select knows neither bit.
    assert!(!closed.is_error(), "{m}: {seen:?}");
    assert_eq!(
        closed.is_read_closed(),
        m != Mechanism::Select,
        "{m}: {seen:?}"
    );
    assert_eq!(
        a.read(&mut [0u8; 8]).unwrap(),
        0,
        "EOF after the close event"
    );
    // TCP, with data before the FIN: data then EOF.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut s, _) = l.accept().unwrap();
    s.set_nonblocking(true).unwrap();
    p.register(s.as_raw_fd(), Token(2), Interest::READABLE)
        .unwrap();
    c.write_all(b"bye").unwrap();
    drop(c);
    let seen = wait_for(&mut p, &mut ev, Token(2), "tcp peer closed");
    assert!(merged(&seen, Token(2)).is_readable(), "{m}: {seen:?}");
    let mut got = Vec::new();
    let deadline = Instant::now() + LONG;
    loop {
        let mut buf = [0u8; 16];
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "{m}: EOF never came");
                p.wait(&mut ev, Some(Duration::from_millis(50))).unwrap();
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(got, b"bye");
    p.deregister(s.as_raw_fd()).unwrap();
}

fn modify_changes_interest(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    expect_nothing(&mut p, &mut ev, "readable interest, nothing to read");
    p.modify(a.as_raw_fd(), Token(2), Interest::WRITABLE)
        .unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(2), "modified to writable");
    assert!(merged(&seen, Token(2)).is_writable(), "{m}: {seen:?}");
    assert!(
        !seen.iter().any(|e| e.token() == Token(1)),
        "{m}: old token reported after modify: {seen:?}"
    );
    p.modify(a.as_raw_fd(), Token(3), Interest::READABLE)
        .unwrap();
    // Drain whatever was in flight from the writable phase, then expect quiet.
    p.wait(&mut ev, Some(Duration::from_millis(10))).unwrap();
    assert!(
        ev.iter().all(|e| !e.is_writable()),
        "{m}: writable reported under read-only interest: {:?}",
        ev.as_slice()
    );
    expect_nothing(&mut p, &mut ev, "back to readable interest");
    b.write_all(b"r").unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(3), "readable after modify back");
    assert!(merged(&seen, Token(3)).is_readable());
}

fn deregister_stops_events(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::BOTH).unwrap();
    wait_for(&mut p, &mut ev, Token(1), "writable at first");
    p.deregister(a.as_raw_fd()).unwrap();
    b.write_all(b"after").unwrap();
    expect_nothing(&mut p, &mut ev, "deregistered");
    // And it can come back.
    p.register(a.as_raw_fd(), Token(4), Interest::READABLE)
        .unwrap();
    wait_for(&mut p, &mut ev, Token(4), "registered again");
}

/// Deregister + close + a new socket under the same number: nothing meant for
/// the old socket may be reported under its token. `dup2` closes and reuses
/// the number atomically, so no other test thread can take it in between.
fn fd_reuse_gets_no_stale_event(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    for round in 0..20 {
        let (old, mut old_peer) = pair();
        let fd = old.as_raw_fd();
        p.register(fd, Token(1000 + round), Interest::BOTH).unwrap();
        // Make notifications pile up for the old socket without consuming them.
        old_peer.write_all(b"stale").unwrap();
        if round % 2 == 0 {
            drop(old_peer);
        }
        p.deregister(fd).unwrap();
        let (fresh, mut fresh_peer) = pair();
        // `old` is forgotten: dup2 closes its number and the new OwnedFd owns it.
        let old_fd = std::mem::ManuallyDrop::new(old);
        let r = unsafe { libc::dup2(fresh.as_raw_fd(), old_fd.as_raw_fd()) };
        assert_eq!(r, fd);
        drop(fresh);
        let reused = unsafe { OwnedFd::from_raw_fd(fd) };
        let new_token = Token(5000 + round);
        p.register(fd, new_token, Interest::READABLE).unwrap();
        p.wait(&mut ev, Some(Duration::from_millis(20))).unwrap();
        for e in ev.iter() {
            assert_ne!(
                e.token(),
                Token(1000 + round),
                "{m}: event for the deregistered socket: {e:?}"
            );
        }
        fresh_peer.write_all(b"n").unwrap();
        let seen = wait_for(&mut p, &mut ev, new_token, "new socket readable");
        assert!(seen.iter().all(|e| e.token() != Token(1000 + round)));
        let mut s = UnixStream::from(reused);
        assert_eq!(
            read_until_eagain(&mut s),
            1,
            "{m}: the new socket holds only its own byte"
        );
        p.deregister(fd).unwrap();
    }
}

/// Edge contract: once the consumer has hit EAGAIN, new data is reported again,
/// every round; and a full socket buffer drained by the peer reports writable.
fn edge_contract(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (mut a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    for round in 0..50u8 {
        b.write_all(&[round; 3]).unwrap();
        let seen = wait_for(&mut p, &mut ev, Token(1), "new data after EAGAIN");
        assert!(merged(&seen, Token(1)).is_readable());
        assert_eq!(read_until_eagain(&mut a), 3, "{m}: round {round}");
    }
    // Writable side: fill until EAGAIN, then let the peer drain.
    p.modify(a.as_raw_fd(), Token(2), Interest::WRITABLE)
        .unwrap();
    let chunk = [0u8; 65536];
    loop {
        match a.write(&chunk) {
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
            Err(e) => panic!("{e}"),
        }
    }
    p.wait(&mut ev, Some(Duration::from_millis(10))).unwrap();
    read_until_eagain(&mut b);
    let seen = wait_for(&mut p, &mut ev, Token(2), "writable after the peer drained");
    assert!(merged(&seen, Token(2)).is_writable());
}

/// A short read on a stream socket is as good as `EAGAIN`: one `read` that
/// returns fewer bytes than asked, and nothing more, still gets the next
/// arrival reported; so does a peer's EOF queued behind the data, and an
/// arrival between the report and the read. Unix and TCP streams.
fn short_read_is_enough(m: Mechanism) {
    let Some(p) = poller(m) else { return };
    let (a, b) = pair();
    let p = short_read_rounds(m, p, a, b, "unix");
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (a, _) = l.accept().unwrap();
    a.set_nonblocking(true).unwrap();
    b.set_nodelay(true).unwrap();
    short_read_rounds(m, p, a, b, "tcp");
}

fn short_read_rounds<S: Read + Write + AsRawFd>(
    m: Mechanism,
    mut p: Poller,
    mut a: S,
    mut b: S,
    kind: &str,
) -> Poller {
    let mut ev = Events::with_capacity(8);
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    let mut buf = [0u8; 64];
    for round in 0..30u8 {
        b.write_all(&[round; 3]).unwrap();
        let seen = wait_for(&mut p, &mut ev, Token(1), "new data after a short read");
        assert!(merged(&seen, Token(1)).is_readable());
        let mut want = 3;
        if round % 3 == 2 {
            // More arrives after the report, before the one read.
            b.write_all(&[round; 4]).unwrap();
            want = 7;
        }
        let mut got = 0;
        while got < want {
            // On TCP the second write may not have landed yet: wait for it.
            match a.read(&mut buf[got..]) {
                Ok(n) => got += n,
                Err(e) if e.kind() == ErrorKind::WouldBlock && got > 0 => {
                    wait_for(&mut p, &mut ev, Token(1), "the rest");
                }
                Err(e) => panic!("{m} {kind}: round {round}: {e}"),
            }
        }
        assert_eq!(got, want, "{m} {kind}: round {round}");
    }
    // Data, then EOF: the one short read takes the data; the EOF is reported.
    b.write_all(b"last").unwrap();
    wait_for(&mut p, &mut ev, Token(1), "the last data");
    drop(b);
    let mut got = a.read(&mut buf).unwrap();
    if got == 4 {
        let seen = wait_for(&mut p, &mut ev, Token(1), "EOF after a short read");
        let e = merged(&seen, Token(1));
        assert!(e.is_readable() || e.is_read_closed(), "{m} {kind}: {e:?}");
        got = a.read(&mut buf).unwrap();
    }
    assert_eq!(got, 0, "{m} {kind}: EOF expected");
    p.deregister(a.as_raw_fd()).unwrap();
    p
}

/// 100 TCP clients on loopback, each sends a line and expects it echoed.
fn hundred_tcp_clients(m: Mechanism) {
    let _guard = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(64);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    const LISTENER: Token = Token(usize::MAX);
    p.register(listener.as_raw_fd(), LISTENER, Interest::READABLE)
        .unwrap();
    const CLIENTS: usize = 100;
    let clients = thread::spawn(move || -> io::Result<usize> {
        let mut conns = Vec::new();
        for i in 0..CLIENTS {
            let mut c = TcpStream::connect(addr)?;
            c.set_read_timeout(Some(LONG))?;
            c.write_all(format!("hello {i}\n").as_bytes())?;
            conns.push((i, c));
        }
        let mut ok = 0;
        for (i, mut c) in conns {
            let want = format!("hello {i}\n");
            let mut got = vec![0u8; want.len()];
            c.read_exact(&mut got)?;
            if got == want.as_bytes() {
                ok += 1;
            }
        }
        Ok(ok)
    });
    let mut conns: Vec<Option<(TcpStream, Vec<u8>)>> = Vec::new();
    let mut served = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while served < CLIENTS {
        assert!(
            Instant::now() < deadline,
            "{m}: only {served} of {CLIENTS} served"
        );
        p.wait(&mut ev, Some(Duration::from_millis(200))).unwrap();
        for e in ev.iter() {
            if e.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((s, _)) => {
                            s.set_nonblocking(true).unwrap();
                            p.register(s.as_raw_fd(), Token(conns.len()), Interest::READABLE)
                                .unwrap();
                            conns.push(Some((s, Vec::new())));
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(e) => panic!("accept: {e}"),
                    }
                }
                continue;
            }
            let Some((s, buf)) = conns[e.token().0].as_mut() else {
                continue; // a spurious hint for a finished connection
            };
            let mut tmp = [0u8; 256];
            loop {
                match s.read(&mut tmp) {
                    Ok(0) => break,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("read: {e}"),
                }
            }
            if buf.ends_with(b"\n") {
                s.set_nonblocking(false).unwrap();
                s.write_all(buf).unwrap();
                p.deregister(s.as_raw_fd()).unwrap();
                conns[e.token().0] = None;
                served += 1;
            }
        }
    }
    assert_eq!(clients.join().unwrap().unwrap(), CLIENTS, "{m}");
}

/// Thousands of registered sockets, one active at a time: exactly it is reported.
fn many_registered_one_active(m: Mechanism) {
    let _guard = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(64);
    let limit = m.info().max_fd;
    let mut pairs = Vec::new();
    while pairs.len() < 3000 {
        let (a, b) = pair();
        if let Some(max) = limit {
            // Leave room below the ceiling for the waker and test helpers.
            if a.as_raw_fd() >= max - 16 || b.as_raw_fd() >= max - 16 {
                break;
            }
        }
        p.register(a.as_raw_fd(), Token(pairs.len()), Interest::READABLE)
            .unwrap();
        pairs.push((a, b));
    }
    let n = pairs.len();
    assert!(n >= 300, "{m}: only {n} sockets could be registered");
    for k in [n / 2, 0, n - 1, n / 3] {
        pairs[k].1.write_all(b"!").unwrap();
        let seen = wait_for(&mut p, &mut ev, Token(k), "the one active socket");
        let others: Vec<_> = seen.iter().filter(|e| e.token() != Token(k)).collect();
        assert!(others.is_empty(), "{m}: idle sockets reported: {others:?}");
        assert_eq!(read_until_eagain(&mut pairs[k].0), 1);
    }
    for (a, _) in &pairs {
        p.deregister(a.as_raw_fd()).unwrap();
    }
    assert_eq!(p.stats().registrations, n as u64);
    assert_eq!(p.stats().deregistrations, n as u64);
}

fn waker_from_another_thread(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let waker = p.waker(Token(99)).unwrap();
    assert!(p.waker(Token(98)).is_err(), "one waker per poller");
    for _ in 0..3 {
        let w = waker.clone();
        let t0 = Instant::now();
        let h = thread::spawn(move || {
            thread::sleep(Duration::from_millis(30));
            w.wake().unwrap();
        });
        let n = p.wait(&mut ev, Some(LONG)).unwrap();
        let took = t0.elapsed();
        assert_eq!(n, 1, "{m}: {:?}", ev.as_slice());
        assert_eq!(ev.as_slice()[0].token(), Token(99));
        assert!(
            took >= Duration::from_millis(25) && took < LONG,
            "{m}: {took:?}"
        );
        h.join().unwrap();
        // The pipe was drained with the report: nothing is left.
        p.wait(&mut ev, Some(Duration::from_millis(20))).unwrap();
        assert!(
            ev.is_empty(),
            "{m}: waker reported twice: {:?}",
            ev.as_slice()
        );
    }
    // Wakes before the wait make it return at once, collapsed into one event,
    // and leave nothing behind. (Two wakes from another thread while the
    // poller is waking up may legitimately give two events: the second can
    // land after the first was reported and drained, so only wakes made
    // before the wait are asserted to collapse.)
    waker.wake().unwrap();
    waker.wake().unwrap();
    let t0 = Instant::now();
    assert_eq!(
        p.wait(&mut ev, Some(LONG)).unwrap(),
        1,
        "{m}: {:?}",
        ev.as_slice()
    );
    assert!(t0.elapsed() < Duration::from_secs(1));
    p.wait(&mut ev, Some(Duration::from_millis(20))).unwrap();
    assert!(
        ev.is_empty(),
        "{m}: waker reported twice: {:?}",
        ev.as_slice()
    );
    assert!(p.stats().wakeups >= 4, "{m}: {:?}", p.stats());
}

fn closed_fd_number() -> RawFd {
    // The process may hold at most 20,000 files; pick a high number that is
    // verifiably closed right now.
    (19_000..19_990)
        .rev()
        .find(|&fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1)
        .expect("a closed descriptor number")
}

fn bad_input_is_an_error(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, mut b) = pair();
    let fd = a.as_raw_fd();
    // The same kind on every mechanism, whoever notices: the kernel or the
    // poller's own table.
    let kind = |r: io::Result<()>| r.expect_err("an error").kind();
    use ErrorKind::{AlreadyExists, InvalidInput, NotFound};
    let r = p.modify(fd, Token(1), Interest::READABLE);
    assert_eq!(kind(r), NotFound, "{m}: modify unregistered");
    assert_eq!(
        kind(p.deregister(fd)),
        NotFound,
        "{m}: deregister unregistered"
    );
    p.register(fd, Token(1), Interest::READABLE).unwrap();
    let r = p.register(fd, Token(2), Interest::READABLE);
    assert_eq!(kind(r), AlreadyExists, "{m}: double register");
    let closed = closed_fd_number();
    let r = p.register(closed, Token(3), Interest::READABLE);
    assert_eq!(kind(r), InvalidInput, "{m}: closed fd");
    let r = p.register(-1, Token(3), Interest::READABLE);
    assert_eq!(kind(r), InvalidInput, "{m}: fd -1");
    assert_eq!(
        kind(p.deregister(closed)),
        NotFound,
        "{m}: deregister closed fd"
    );
    let r = p.modify(closed, Token(3), Interest::READABLE);
    assert_eq!(kind(r), NotFound, "{m}: modify closed fd");
    // The waker's token is refused for a registration.
    let _waker = p.waker(Token(7)).unwrap();
    let (c, _d) = pair();
    let r = p.register(c.as_raw_fd(), Token(7), Interest::READABLE);
    assert_eq!(kind(r), InvalidInput, "{m}: the waker's token");
    assert_eq!(
        kind(p.modify(fd, Token(7), Interest::READABLE)),
        InvalidInput
    );
    // The errors left the poller intact.
    b.write_all(b"still works").unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(1), "after the errors");
    assert!(merged(&seen, Token(1)).is_readable());
    assert_eq!(p.stats().registrations, 2, "{m}: the pair and the waker");
}

/// A descriptor closed while registered (the caller's error, see
/// `Poller::deregister`): deregister answers `Ok` (the poller forgets its
/// record) or `NotFound` (epoll: the kernel forgot it at the close), never
/// another kind, and the number then serves a new registration.
fn closed_while_registered(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    // The number is closed and then taken again by dup2: it must be one no
    // other test of this process can open meanwhile. Descriptors are handed
    // out lowest first, so a high one (below select's 1024) is safe while the
    // tests that open thousands wait.
    let _heavy = FD_HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let (low, _b) = pair();
    // SAFETY of the test: F_DUPFD_CLOEXEC returns a fresh descriptor, owned below.
    let fd = unsafe { libc::fcntl(low.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 1000) };
    assert!(fd >= 1000);
    let a = unsafe { OwnedFd::from_raw_fd(fd) };
    drop(low);
    p.register(fd, Token(1), Interest::READABLE).unwrap();
    p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
    // The next socket, opened first so that it does not take the number.
    let (c, mut d) = pair();
    drop(a);
    if let Err(e) = p.deregister(fd) {
        assert_eq!(e.kind(), ErrorKind::NotFound, "{m}: {e}");
    }
    // The new socket on the same number (dup2 gives exactly it).
    // SAFETY of the test: `fd` is closed, and dup2 makes it a new descriptor,
    // owned below.
    assert_eq!(unsafe { libc::dup2(c.as_raw_fd(), fd) }, fd);
    let again = unsafe { OwnedFd::from_raw_fd(fd) };
    drop(c);
    p.register(again.as_raw_fd(), Token(2), Interest::READABLE)
        .unwrap();
    d.write_all(b"x").unwrap();
    let seen = wait_for(&mut p, &mut ev, Token(2), "the number registered again");
    assert!(merged(&seen, Token(2)).is_readable(), "{m}: {seen:?}");
    p.deregister(again.as_raw_fd()).unwrap();
}

/// Mechanisms with a descriptor ceiling (select: FD_SETSIZE) refuse beyond it
/// with an error naming the ceiling; the others accept high numbers.
fn high_descriptor_numbers(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, mut b) = pair();
    let at_least = m.info().max_fd.unwrap_or(1500);
    // F_DUPFD_CLOEXEC returns a fresh descriptor, owned below.
    let high = unsafe { libc::fcntl(a.as_raw_fd(), libc::F_DUPFD_CLOEXEC, at_least) };
    assert!(high >= at_least);
    let high = unsafe { OwnedFd::from_raw_fd(high) };
    let r = p.register(high.as_raw_fd(), Token(1), Interest::READABLE);
    match m.info().max_fd {
        Some(max) => {
            let err = r
                .expect_err("beyond the ceiling must be refused")
                .to_string();
            assert!(err.contains(&max.to_string()), "{m}: unclear error: {err}");
        }
        None => {
            r.unwrap();
            b.write_all(b"h").unwrap();
            wait_for(&mut p, &mut ev, Token(1), "high-numbered descriptor");
        }
    }
}

fn stats_count(m: Mechanism) {
    let mut p = poller_or_skip!(m);
    let mut ev = Events::with_capacity(8);
    let (a, mut b) = pair();
    p.register(a.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    p.modify(a.as_raw_fd(), Token(1), Interest::BOTH).unwrap();
    b.write_all(b"s").unwrap();
    wait_for(&mut p, &mut ev, Token(1), "stats");
    p.deregister(a.as_raw_fd()).unwrap();
    let s = p.stats().clone();
    assert_eq!(
        (s.registrations, s.modifications, s.deregistrations),
        (1, 1, 1)
    );
    assert!(
        s.waits >= 1 && s.wait_syscalls >= s.waits && s.events >= 1,
        "{m}: {s:?}"
    );
}

macro_rules! conformance {
    ($($module:ident => $mech:expr),* $(,)?) => {
        const TESTED: &[Mechanism] = &[$($mech),*];
        $(
            mod $module {
                use super::*;
                #[test] fn readable_after_write() { super::readable_after_write($mech) }
                #[test] fn writable() { super::writable($mech) }
                #[test] fn data_waiting_at_register() { super::data_waiting_at_register($mech) }
                #[test] fn idle_timeout_honoured() { super::idle_timeout_honoured($mech) }
                #[test] fn peer_close_reported() { super::peer_close_reported($mech) }
                #[test] fn modify_changes_interest() { super::modify_changes_interest($mech) }
                #[test] fn deregister_stops_events() { super::deregister_stops_events($mech) }
                #[test] fn fd_reuse_gets_no_stale_event() { super::fd_reuse_gets_no_stale_event($mech) }
                #[test] fn edge_contract() { super::edge_contract($mech) }
                #[test] fn short_read_is_enough() { super::short_read_is_enough($mech) }
                #[test] fn hundred_tcp_clients() { super::hundred_tcp_clients($mech) }
                #[test] fn many_registered_one_active() { super::many_registered_one_active($mech) }
                #[test] fn waker_from_another_thread() { super::waker_from_another_thread($mech) }
                #[test] fn bad_input_is_an_error() { super::bad_input_is_an_error($mech) }
                #[test] fn closed_while_registered() { super::closed_while_registered($mech) }
                #[test] fn high_descriptor_numbers() { super::high_descriptor_numbers($mech) }
                #[test] fn stats_count() { super::stats_count($mech) }
            }
        )*
    };
}

// One line per mechanism.
conformance! {
    epoll => Mechanism::Epoll,
    epoll_et => Mechanism::EpollEt,
    select => Mechanism::Select,
    poll => Mechanism::Poll,
    uring => Mechanism::Uring,
    rtsig => Mechanism::RtSig,
    rtsig_batch => Mechanism::RtSigBatch,
    rtsig_perfd => Mechanism::RtSigPerfd,
    hybrid => Mechanism::Hybrid,
}

#[test]
fn every_mechanism_is_tested() {
    for info in MECHANISMS {
        assert!(
            TESTED.contains(&info.mechanism),
            "mechanism {} has no line in the conformance! list",
            info.name
        );
    }
}

/// `hybrid`'s way back to signals sweeps the whole epoll ready list, even
/// when a sweep fills its buffer: what it left there, signal mode would never
/// read (a small buffer makes the case certain; by default it needs more
/// changes inside the switch than the buffer holds).
#[test]
fn hybrid_back_to_signals_loses_nothing() {
    let mut c = evdispatch::Config::new(Mechanism::Hybrid);
    c.initial_events = 4;
    c.hybrid_to_epoll_batch = 1;
    c.hybrid_to_signal_waits = 2;
    let Some(mut p) = Poller::with_config(c)
        .map_err(|e| eprintln!("skipping hybrid: {e}"))
        .ok()
    else {
        return;
    };
    let mut ev = Events::with_capacity(64);
    let pairs: Vec<_> = (0..40).map(|_| pair()).collect();
    for (i, (a, _)) in pairs.iter().enumerate() {
        p.register(a.as_raw_fd(), Token(i), Interest::READABLE)
            .unwrap();
    }
    p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
    // One signal fills a batch of one: epoll mode.
    (&pairs[0].1).write_all(b"x").unwrap();
    wait_for(&mut p, &mut ev, Token(0), "the first write");
    (&pairs[0].0).read_exact(&mut [0u8; 1]).unwrap();
    assert_eq!(p.stats().mode_switches, 1, "in epoll mode: {:?}", p.stats());
    // One calm wait: the next calm one goes back to signals.
    p.wait(&mut ev, Some(Duration::ZERO)).unwrap();
    // Changes on every descriptor, ten times the buffer: the wait that finds
    // them (calm before the fix: fewer than `hybrid_to_signal_events`) and
    // the sweep of the switch both fill their buffers.
    for (_, b) in &pairs {
        (&*b).write_all(b"y").unwrap();
    }
    let switches = p.stats().mode_switches;
    // Every one is reported, in whatever mode the hybrid is now.
    let mut left: std::collections::BTreeSet<usize> = (0..pairs.len()).collect();
    let deadline = Instant::now() + LONG;
    while !left.is_empty() && Instant::now() < deadline {
        p.wait(&mut ev, Some(Duration::from_millis(50))).unwrap();
        for e in &ev {
            let i = e.token().0;
            while (&pairs[i].0).read(&mut [0u8; 8]).is_ok() {}
            left.remove(&i);
        }
    }
    assert!(
        left.is_empty(),
        "never reported: {left:?} (mode switches {switches} before the writes, {:?})",
        p.stats()
    );
}

// A poller nested in another: the inner one's descriptor (`Poller::as_fd_opt`,
// `NestablePoller`'s `AsFd`) is readable in the outer one exactly when the
// inner one has an event.

/// `inner` nested in `outer`: quiet while the inner poller has nothing,
/// readable once a watched socket is, and the inner wait then finds it.
fn nest(inner: Mechanism, outer: Mechanism) {
    let (Some(inner_poller), Some(mut outer)) = (poller(inner), poller(outer)) else {
        return;
    };
    let mut inner_poller = inner_poller
        .into_nestable()
        .unwrap_or_else(|e| panic!("{inner} should be nestable: {e}"));
    let (mut w, r) = UnixStream::pair().unwrap();
    r.set_nonblocking(true).unwrap();
    inner_poller
        .register(r.as_raw_fd(), Token(7), Interest::READABLE)
        .unwrap();
    let mut events = Events::with_capacity(8);
    // Hand the registration to the kernel (uring submits, rtsig-batch probes, at a wait).
    assert_eq!(
        inner_poller
            .wait(&mut events, Some(Duration::ZERO))
            .unwrap(),
        0
    );
    assert_eq!(inner_poller.as_raw_fd_opt(), Some(inner_poller.as_raw_fd()));

    outer
        .register(inner_poller.as_raw_fd(), Token(1), Interest::READABLE)
        .unwrap();
    assert_eq!(
        outer.wait(&mut events, Some(QUIET)).unwrap(),
        0,
        "{inner} in {outer:?}: readable with nothing to report"
    );

    w.write_all(b"x").unwrap();
    assert_eq!(
        outer.wait(&mut events, Some(LONG)).unwrap(),
        1,
        "{inner} in {outer:?}: the inner event never made the descriptor readable"
    );
    let e = events.iter().next().unwrap();
    assert!(e.token() == Token(1) && e.is_readable(), "{e:?}");
    assert_eq!(inner_poller.wait(&mut events, Some(LONG)).unwrap(), 1);
    let e = events.iter().next().unwrap();
    assert!(e.token() == Token(7) && e.is_readable(), "{e:?}");

    outer.deregister(inner_poller.as_raw_fd()).unwrap();
    inner_poller.deregister(r.as_raw_fd()).unwrap();
}

#[test]
fn every_descriptor_mechanism_nests_in_epoll() {
    for inner in Mechanism::all() {
        if poller(inner).is_some_and(|p| p.as_fd_opt().is_some()) {
            nest(inner, Mechanism::Epoll);
        }
    }
}

#[test]
fn an_epoll_poller_nests_in_every_mechanism_that_watches_any_descriptor() {
    // The RT-signal mechanisms watch sockets, pipes and ttys only.
    for outer in [
        Mechanism::Select,
        Mechanism::Poll,
        Mechanism::Epoll,
        Mechanism::EpollEt,
        Mechanism::Uring,
    ] {
        nest(Mechanism::Epoll, outer);
    }
}

#[test]
fn which_mechanisms_have_a_descriptor() {
    let expected = [
        (Mechanism::Select, false),
        (Mechanism::Poll, false),
        (Mechanism::Epoll, true),
        (Mechanism::EpollEt, true),
        (Mechanism::Uring, true),
        (Mechanism::RtSig, false),
        (Mechanism::RtSigBatch, true),
        (Mechanism::RtSigPerfd, false),
        (Mechanism::Hybrid, false),
    ];
    assert_eq!(
        expected.len(),
        Mechanism::all().count(),
        "a mechanism is missing here"
    );
    for (m, has) in expected {
        let Some(p) = poller(m) else { continue };
        assert_eq!(p.as_fd_opt().is_some(), has, "{m}");
        // `Poller`'s own AsRawFd: the same descriptor, or a panic without one.
        let by_trait = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| p.as_raw_fd()));
        assert_eq!(by_trait.ok(), p.as_raw_fd_opt(), "{m}");
        match p.into_nestable() {
            Ok(n) => assert!(has && n.as_raw_fd() >= 0, "{m}"),
            Err(e) => {
                assert!(!has, "{m}: {e}");
                assert_eq!(e.kind(), ErrorKind::Unsupported);
                assert!(e.to_string().contains("epoll, epoll-et"), "{e}");
            }
        }
    }
}
