//! Dan Kegel's Poller_bench loop over any mechanism of the library.
//!
//! N socketpairs; a [`Poller`] watches the read end of each. Each iteration
//! writes one byte to A sockets spaced N/A apart, then, timed, waits and
//! calls `read(fd, buf, 1)` on every ready descriptor until the A bytes are
//! read. The median time of that timed part is printed.
//!
//! ```text
//! cargo run --release -p evdispatch --example kegel -- --mechanism epoll --fds 1000 --active 10
//! ```
//!
//! Options: `--mechanism M` (default `epoll`; `--help` lists
//! them), `--fds N` (default 1000), `--active A` (default 1),
//! `--iterations I` (default 1000). Each socketpair takes two descriptors:
//! raise `ulimit -n` for large N; `select` watches descriptors below 1024
//! only. `evdispatch bench poller` is the measured version of this loop
//! (rounds, pinning, a writer in another process, other libraries beside).

use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use evdispatch::{Events, Interest, Mechanism, Poller, Token};

/// A wait that sees nothing for this long means a lost wake-up: give up
/// rather than hang.
const STALL: Duration = Duration::from_secs(5);

struct Options {
    mechanism: Mechanism,
    fds: usize,
    active: usize,
    iterations: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        mechanism: Mechanism::Epoll,
        fds: 1000,
        active: 1,
        iterations: 1000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            println!("usage: kegel [--mechanism M] [--fds N] [--active A] [--iterations I]");
            println!("mechanisms: {}", Mechanism::names());
            std::process::exit(0);
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
        let number = || {
            value
                .parse::<usize>()
                .map_err(|_| format!("{flag}: '{value}' is not a whole number"))
        };
        match flag.as_str() {
            "--mechanism" => o.mechanism = value.parse().map_err(|e| format!("{e}"))?,
            "--fds" => o.fds = number()?,
            "--active" => o.active = number()?,
            "--iterations" => o.iterations = number()?,
            _ => return Err(format!("unknown option '{flag}' (see --help)")),
        }
    }
    if o.fds == 0 || o.active == 0 || o.active > o.fds || o.iterations == 0 {
        return Err("need 0 < --active <= --fds and --iterations > 0".into());
    }
    Ok(o)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = parse_options()?;

    // The N socketpairs: we write to `.0` and watch `.1`.
    let pairs = (0..o.fds)
        .map(|_| {
            let (w, r) = UnixStream::pair()?;
            r.set_nonblocking(true)?;
            Ok((w, r))
        })
        .collect::<io::Result<Vec<_>>>()?;

    let mut poller = Poller::new(o.mechanism)?;
    for (i, (_, r)) in pairs.iter().enumerate() {
        poller.register(r.as_raw_fd(), Token(i), Interest::READABLE)?;
    }

    let spacing = o.fds / o.active;
    let mut events = Events::with_capacity(o.active.max(64));
    let mut buf = [0u8; 1];
    let mut times = Vec::with_capacity(o.iterations);
    let (mut bytes, mut waits, mut spurious) = (0u64, 0u64, 0u64);

    for _ in 0..o.iterations {
        // Untimed: make A sockets readable.
        for k in 0..o.active {
            (&pairs[k * spacing].0).write_all(b"e")?;
        }
        // Timed: Poller_bench's `waitAndDispatchEvents` until A bytes are in.
        let start = Instant::now();
        let mut read = 0;
        while read < o.active {
            if poller.wait(&mut events, Some(STALL))? == 0 {
                return Err(format!(
                    "no event in {STALL:?} with {} bytes unread",
                    o.active - read
                )
                .into());
            }
            waits += 1;
            for event in &events {
                // One read, not a loop to `WouldBlock`: exactly one byte
                // was written to each active pair, so a read that returns
                // it has emptied the socket. Code that copies this loop for
                // real input must read until `WouldBlock` (or a short read).
                match (&pairs[event.token().0].1).read(&mut buf) {
                    Ok(1) => read += 1,
                    Ok(_) => spurious += 1,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => spurious += 1,
                    Err(e) => return Err(e.into()),
                }
            }
        }
        times.push(start.elapsed());
        bytes += read as u64;
    }

    for (i, (_, r)) in pairs.iter().enumerate() {
        poller
            .deregister(r.as_raw_fd())
            .map_err(|e| format!("deregister {i}: {e}"))?;
    }

    times.sort_unstable();
    let median = times[times.len() / 2];
    println!(
        "{}: fds {} active {} iterations {}: median {:.2} us per iteration; \
         {bytes} bytes read, {waits} waits, {spurious} spurious events",
        o.mechanism,
        o.fds,
        o.active,
        o.iterations,
        median.as_secs_f64() * 1e6,
    );
    Ok(())
}
