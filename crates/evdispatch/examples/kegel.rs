//! Kegel's Poller_bench loop (seed 001), interleaved across mechanisms in one
//! run so their figures compare as ratios: N socketpairs registered for
//! reading; each iteration writes one byte to A of them, spaced N/A apart
//! with a rotating offset (untimed), then times the waits and the one-byte
//! `read` of every reported socket until all A bytes are read.
//!
//! ```text
//! flock /tmp/evd-bench.lock cargo run --release -p evdispatch --example kegel -- \
//!     --n 1000 --a 1,100 --mechanisms epoll,rtsig-batch,hybrid [--writes 1] [--cpu 1] [--json]
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
    /// One-byte writes per active socket per iteration (each a readiness
    /// change: a signal each, one epoll report in all).
    writes: usize,
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
        writes: 1,
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
            "--writes" => args.writes = num(value()?)?.max(1),
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
    fn iteration(&mut self, a: usize, offset: usize, writes: usize) -> Duration {
        let n = self.readers.len();
        let stride = (n / a).max(1);
        for _ in 0..writes {
            for k in 0..a {
                let i = (offset + k * stride) % n;
                self.writers[i].write_all(b"x").unwrap();
            }
        }
        let mut buf = [0u8; 64];
        let mut left = a;
        let t0 = Instant::now();
        while left > 0 {
            self.poller
                .wait(&mut self.events, Some(Duration::from_secs(5)))
                .unwrap();
            assert!(!self.events.is_empty(), "an event was lost");
            for e in &self.events {
                match self.readers[e.token().0].read(&mut buf) {
                    Ok(0) => panic!("EOF"),
                    Ok(_) => left -= 1,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        t0.elapsed()
    }
}

struct Row {
    mechanism: Mechanism,
    a: usize,
    median: f64,
    p10: f64,
    p90: f64,
    /// Median over blocks of (this / epoll).
    vs_epoll: Option<f64>,
    /// Median over blocks of (this / the better of epoll and rtsig-batch).
    vs_better: Option<f64>,
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
                rig.iteration(a, offset, args.writes); // warm-up
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
                    total += rigs[r].iteration(a, offset, args.writes);
                    offset += 1;
                }
                samples[r].push(total.as_secs_f64() * 1e6 / args.iters as f64);
            }
            eprint!("\rA={a}: block {}/{}", block + 1, args.blocks);
        }
        eprintln!();
        // Ratios are taken block by block (the mechanisms of one block ran
        // back to back), then their median: drift on a shared machine cancels.
        let mech: Vec<Mechanism> = rigs.iter().map(|r| r.poller.mechanism()).collect();
        let col = |m: Mechanism| mech.iter().position(|&x| x == m);
        let best_of = |b: usize, ms: &[Mechanism]| {
            ms.iter()
                .filter_map(|&m| col(m))
                .map(|c| samples[c][b])
                .fold(f64::INFINITY, f64::min)
        };
        for (r, s) in samples.iter().enumerate() {
            let ratio = |ms: &[Mechanism]| {
                let mut v: Vec<f64> = (0..s.len()).map(|b| s[b] / best_of(b, ms)).collect();
                v.sort_by(f64::total_cmp);
                (ms.iter().all(|&m| col(m).is_some()) && !v.is_empty()).then(|| quantile(&v, 0.5))
            };
            let vs_epoll = ratio(&[Mechanism::Epoll]);
            let vs_better = ratio(&[Mechanism::Epoll, Mechanism::RtSigBatch]);
            let mut sorted = s.clone();
            sorted.sort_by(f64::total_cmp);
            rows.push(Row {
                mechanism: mech[r],
                a,
                median: quantile(&sorted, 0.5),
                p10: quantile(&sorted, 0.1),
                p90: quantile(&sorted, 0.9),
                vs_epoll,
                vs_better,
            });
        }
    }
    let opt = |v: Option<f64>| v.map_or("null".to_string(), |x| format!("{x:.4}"));
    if args.json {
        let items: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{{\"mechanism\":\"{}\",\"n\":{},\"a\":{},\"median_us\":{:.3},\"p10_us\":{:.3},\"p90_us\":{:.3},\"ratio_to_epoll\":{},\"ratio_to_better_of_epoll_and_rtsig_batch\":{}}}",
                    r.mechanism, args.n, r.a, r.median, r.p10, r.p90, opt(r.vs_epoll), opt(r.vs_better)
                )
            })
            .collect();
        println!("[{}]", items.join(","));
        return;
    }
    println!(
        "N = {}, {} blocks of {} iterations; µs per iteration (median of block means, p10–p90); \
         ratios: median over blocks of the per-block ratio",
        args.n, args.blocks, args.iters
    );
    for r in &rows {
        println!(
            "A={:<4} {:<12} {:>9.2} ({:.2}–{:.2})  /epoll {:>6}  /better(epoll,rtsig-batch) {:>6}",
            r.a,
            r.mechanism.name(),
            r.median,
            r.p10,
            r.p90,
            r.vs_epoll.map_or("-".into(), |x| format!("{x:.3}")),
            r.vs_better.map_or("-".into(), |x| format!("{x:.3}")),
        );
    }
}
