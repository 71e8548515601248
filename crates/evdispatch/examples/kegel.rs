//! Kegel's Poller_bench loop (seed 001), interleaved across mechanisms in one
//! run so their figures compare as ratios: N socketpairs registered for
//! reading; each iteration writes one byte to A of them, spaced N/A apart
//! with a rotating offset (untimed), then times the waits and the one-byte
//! `read` of every reported socket until all A bytes are read.
//!
//! ```text
//! flock /tmp/evd-bench.lock cargo run --release -p evdispatch --example kegel -- \
//!     --n 1000 --a 1,100 --mechanisms epoll,rtsig-batch,hybrid [--cpu 1] [--json]
//! ```
//!
//! A stop-gap until `evdispatch bench poller` covers these mechanisms.

use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use evdispatch::{Events, Interest, Mechanism, Poller, Token};

struct Args {
    n: usize,
    a: Vec<usize>,
    mechanisms: Vec<Mechanism>,
    iters: usize,
    blocks: usize,
    cpu: Option<usize>,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut args = Args {
        n: 1000,
        a: vec![1, 100],
        mechanisms: vec![Mechanism::Epoll, Mechanism::RtSigBatch, Mechanism::Hybrid],
        iters: 200,
        blocks: 20,
        cpu: None,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<usize>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--n" => args.n = num(value()?)?,
            "--a" => {
                args.a = value()?
                    .split(',')
                    .map(|s| num(s.to_string()))
                    .collect::<Result<_, _>>()?
            }
            "--mechanisms" => {
                args.mechanisms = value()?
                    .split(',')
                    .map(|s| s.parse::<Mechanism>().map_err(|e| e.to_string()))
                    .collect::<Result<_, _>>()?
            }
            "--iters" => args.iters = num(value()?)?,
            "--blocks" => args.blocks = num(value()?)?,
            "--cpu" => args.cpu = Some(num(value()?)?),
            "--json" => args.json = true,
            _ => return Err(format!("unknown flag {flag}; see the file's docs")),
        }
    }
    Ok(args)
}

struct Rig {
    poller: Poller,
    readers: Vec<UnixStream>,
    writers: Vec<UnixStream>,
    events: Events,
}

impl Rig {
    fn new(m: Mechanism, n: usize) -> Rig {
        let mut poller = Poller::new(m).expect("poller");
        let mut readers = Vec::with_capacity(n);
        let mut writers = Vec::with_capacity(n);
        for i in 0..n {
            let (r, w) = UnixStream::pair().expect("socketpair");
            r.set_nonblocking(true).unwrap();
            poller
                .register(r.as_raw_fd(), Token(i), Interest::READABLE)
                .unwrap();
            readers.push(r);
            writers.push(w);
        }
        Rig {
            poller,
            readers,
            writers,
            events: Events::with_capacity(n),
        }
    }

    /// One iteration; returns the timed part.
    fn iteration(&mut self, a: usize, offset: usize) -> Duration {
        let n = self.readers.len();
        let stride = (n / a).max(1);
        for k in 0..a {
            let i = (offset + k * stride) % n;
            self.writers[i].write_all(b"x").unwrap();
        }
        let mut buf = [0u8; 1];
        let mut left = a;
        let t0 = Instant::now();
        while left > 0 {
            self.poller
                .wait(&mut self.events, Some(Duration::from_secs(5)))
                .unwrap();
            assert!(!self.events.is_empty(), "an event was lost");
            for e in &self.events {
                match self.readers[e.token().0].read(&mut buf) {
                    Ok(1) => left -= 1,
                    Ok(_) => panic!("EOF"),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        t0.elapsed()
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args = parse().unwrap_or_else(|e| {
        eprintln!("kegel: {e}");
        std::process::exit(2)
    });
    if let Some(cpu) = args.cpu {
        evdispatch_proc::pin_current_thread(&[cpu]).expect("pinning");
    }
    let mut rigs: Vec<Rig> = args
        .mechanisms
        .iter()
        .map(|&m| Rig::new(m, args.n))
        .collect();
    let mut rows = Vec::new();
    for &a in &args.a {
        let mut samples: Vec<Vec<f64>> = vec![Vec::new(); rigs.len()];
        let mut offset = 0;
        for rig in rigs.iter_mut() {
            for _ in 0..args.iters / 4 {
                rig.iteration(a, offset); // warm-up
                offset += 1;
            }
        }
        for block in 0..args.blocks {
            // Alternate the order so neither mechanism always runs first.
            let order: Vec<usize> = if block % 2 == 0 {
                (0..rigs.len()).collect()
            } else {
                (0..rigs.len()).rev().collect()
            };
            for r in order {
                let mut total = Duration::ZERO;
                for _ in 0..args.iters {
                    total += rigs[r].iteration(a, offset);
                    offset += 1;
                }
                samples[r].push(total.as_secs_f64() * 1e6 / args.iters as f64);
            }
            eprint!("\rA={a}: block {}/{}", block + 1, args.blocks);
        }
        eprintln!();
        for (r, s) in samples.iter_mut().enumerate() {
            s.sort_by(f64::total_cmp);
            rows.push((
                rigs[r].poller.mechanism(),
                a,
                quantile(s, 0.5),
                quantile(s, 0.1),
                quantile(s, 0.9),
            ));
        }
    }
    if args.json {
        let items: Vec<String> = rows
            .iter()
            .map(|(m, a, med, p10, p90)| {
                format!(
                    "{{\"mechanism\":\"{m}\",\"n\":{},\"a\":{a},\"median_us\":{med:.3},\"p10_us\":{p10:.3},\"p90_us\":{p90:.3}}}",
                    args.n
                )
            })
            .collect();
        println!("[{}]", items.join(","));
        return;
    }
    println!(
        "N = {}, {} blocks of {} iterations; µs per iteration (median of block means, p10–p90)",
        args.n, args.blocks, args.iters
    );
    for &a in &args.a {
        let best = rows
            .iter()
            .filter(|r| r.1 == a)
            .map(|r| r.2)
            .fold(f64::INFINITY, f64::min);
        for (m, ra, med, p10, p90) in rows.iter().filter(|r| r.1 == a) {
            println!(
                "A={ra:<4} {:<12} {med:>9.2} ({p10:.2}–{p90:.2})  x{:.3} of the best",
                m.name(),
                med / best
            );
        }
    }
}
