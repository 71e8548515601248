//! `bench generator`: the load generator's own capacity, as two figures
//! (plain HTTP and HTTPS). One nginx worker pinned to `--server-cpu` serves a small file
//! over keep-alive, plain HTTP and HTTPS (TLS 1.2 and 1.3 offered, a
//! certificate made for 127.0.0.1 at run time). On `--client-cpu`, in
//! paired rounds whose order alternates (ours first in even rounds, wrk
//! first in odd ones), run `evdispatch load --rate max --connections C`
//! (one process) and `wrk -t1 -c C` for the same duration. Each is
//! measured the same way: replies it counted divided by the CPU seconds of
//! its whole process (its rusage as a child). The figure is the per-round
//! ratio ours ÷ wrk, reported as the median with its 90% interval
//! (binomial, [`evdispatch_harness::median_interval`]), judged against its
//! target: ≥ 1.2 on plain HTTP and ≥ 1.0 on HTTPS.
//!
//! With `--http2` the same over HTTP/2 against `h2load -t1`: nginx listens
//! with `http2` (h2c by prior knowledge on `http`, h2 by ALPN on `https`),
//! and for each shape of `--h2-shapes` (`C`x`M`: `C` connections carrying
//! `M` streams each; 1x100 and 10x10 by default) ours runs `--http2 -c C
//! -m M` and h2load `-c C -m M` for the same duration; each counts the
//! replies (h2load's `succeeded`) per CPU-second of its whole process. The
//! target is ≥ 1.0 on both schemes.
//!
//! A measurement, not a test: run it on a quiet machine, under the bench
//! lock: `flock /tmp/evd-bench.lock evdispatch bench generator` (and
//! `… bench generator --http2`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use evdispatch_harness::{
    docroot, median_interval, run_evdispatch_load_measured, run_h2load, run_wrk, skip_reason,
    start_peer, H2loadArgs, Peer, PeerConfig, SelfSigned, Tool, WrkArgs,
};
use evdispatch_load::proto::HttpVersion;
use evdispatch_load::{cmdline::LoadCommand, IoEngine, Rate};
use serde::Serialize;

/// `evdispatch bench generator`'s options.
#[derive(Debug, Clone, clap::Args)]
pub struct GeneratorArgs {
    /// Paired rounds per scheme.
    #[arg(long, default_value_t = 7)]
    pub rounds: usize,
    /// Seconds of each run (wrk takes whole seconds: give a whole number).
    #[arg(long, default_value_t = 5.0)]
    pub duration: f64,
    /// Keep-alive connections of each generator (HTTP/1.1).
    #[arg(long, default_value_t = 10)]
    pub connections: u32,
    /// Over HTTP/2, against `h2load -t1` instead of wrk (h2c on `http`, h2
    /// by ALPN on `https`), in each shape of `--h2-shapes`.
    #[arg(long)]
    pub http2: bool,
    /// HTTP/2 shapes, `C`x`M` (`C` connections, `M` streams each),
    /// comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1x100,10x10")]
    pub h2_shapes: Vec<Shape>,
    /// Schemes measured, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "http,https")]
    pub schemes: Vec<Scheme>,
    /// The `evdispatch` binary whose `load` is measured (default: this one).
    #[arg(long)]
    pub binary: Option<PathBuf>,
    /// `--engine` of the measured `load` (default: its own default, `auto`).
    #[arg(long, value_enum)]
    pub engine: Option<IoEngine>,
    /// CPU of the nginx worker.
    #[arg(long, default_value_t = 0)]
    pub server_cpu: usize,
    /// CPU of the generators.
    #[arg(long, default_value_t = 1)]
    pub client_cpu: usize,
    /// Size of the file served, bytes.
    #[arg(long, default_value_t = 1024)]
    pub file_size: usize,
    /// Print the outcome as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON outcome to this file.
    #[arg(long)]
    pub save: Option<PathBuf>,
}

/// Plain or TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Plain HTTP keep-alive.
    Http,
    /// HTTPS keep-alive.
    Https,
}

impl Scheme {
    fn name(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }
}

/// An HTTP/2 shape: connections, and streams at once on each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    /// Connections (`-c`).
    pub connections: u32,
    /// Streams per connection (`-m`).
    pub streams: u32,
}

impl std::str::FromStr for Shape {
    type Err = String;
    fn from_str(s: &str) -> Result<Shape, String> {
        let bad = || format!("'{s}': a shape is CONNECTIONSxSTREAMS, e.g. 10x10");
        let (c, m) = s.split_once(['x', 'X']).ok_or_else(bad)?;
        let (connections, streams) = (
            c.trim().parse().map_err(|_| bad())?,
            m.trim().parse().map_err(|_| bad())?,
        );
        if connections == 0 || streams == 0 {
            return Err(bad());
        }
        Ok(Shape {
            connections,
            streams,
        })
    }
}

/// A median with its 90% interval.
#[derive(Debug, Clone, Serialize)]
pub struct Interval {
    /// Lower bound.
    pub lo: f64,
    /// Median.
    pub median: f64,
    /// Upper bound.
    pub hi: f64,
}

impl Interval {
    fn of(v: &[f64]) -> Interval {
        let mut v = v.to_vec();
        let (lo, median, hi) = median_interval(&mut v, 0.9);
        Interval { lo, median, hi }
    }
}

/// One generator's runs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Runs {
    /// Replies per CPU-second, each round.
    pub per_cpu_s: Vec<f64>,
    /// Replies per second of wall time, each round.
    pub per_s: Vec<f64>,
    /// CPU seconds, each round.
    pub cpu_s: Vec<f64>,
}

impl Runs {
    fn push(&mut self, replies: f64, wall_s: f64, cpu_s: f64) {
        self.per_cpu_s.push(replies / cpu_s.max(1e-9));
        self.per_s.push(replies / wall_s);
        self.cpu_s.push(cpu_s);
    }
}

/// The figures of one scheme (of one shape, over HTTP/2).
#[derive(Debug, Clone, Serialize)]
pub struct SchemeOutcome {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The URL loaded.
    pub url: String,
    /// Connections of each generator.
    pub connections: u32,
    /// HTTP/2: streams per connection (`-m`); absent over HTTP/1.1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<u32>,
    /// `evdispatch load`.
    pub ours: Runs,
    /// `wrk -t1` (HTTP/1.1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wrk: Option<Runs>,
    /// `h2load -t1` (HTTP/2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2load: Option<Runs>,
    /// Per-round ratio ours ÷ the reference of replies per CPU-second.
    pub ratios: Vec<f64>,
    /// Its median and 90% interval.
    pub ratio: Interval,
    /// The median's target (at least this).
    pub target: f64,
}

/// The whole outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Paired rounds.
    pub rounds: usize,
    /// Seconds per run.
    pub duration_s: f64,
    /// Connections per generator (HTTP/1.1).
    pub connections: u32,
    /// Over HTTP/2 against h2load.
    pub http2: bool,
    /// nginx's version.
    pub nginx: String,
    /// One entry per scheme.
    pub schemes: Vec<SchemeOutcome>,
}

/// Run the benchmark.
pub fn run(a: GeneratorArgs) -> anyhow::Result<()> {
    if a.rounds == 0 || a.connections == 0 || a.duration.is_nan() || a.duration < 1.0 {
        bail!("--rounds and --connections must be at least 1, --duration at least 1 s");
    }
    let reference = if a.http2 { Tool::H2load } else { Tool::Wrk };
    if a.http2 && a.h2_shapes.is_empty() {
        bail!("--h2-shapes needs at least one shape");
    }
    for t in [Tool::Nginx, reference] {
        if let Some(why) = skip_reason(t) {
            bail!("{why}");
        }
    }
    let binary = match &a.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("finding this program to run its load command")?,
    };
    let root = docroot(a.file_size, &[]).context("cannot make the document root")?;
    let cert = SelfSigned::create()?;
    let mut outcome = Outcome {
        rounds: a.rounds,
        duration_s: a.duration.ceil(),
        connections: a.connections,
        http2: a.http2,
        nginx: String::new(),
        schemes: Vec::new(),
    };
    // HTTP/1.1: one case per scheme; HTTP/2: one per scheme and shape.
    let shapes: Vec<Option<Shape>> = if a.http2 {
        a.h2_shapes.iter().copied().map(Some).collect()
    } else {
        vec![None]
    };
    for &scheme in &a.schemes {
        let mut cfg = PeerConfig::new(root.path());
        cfg.cpus = vec![a.server_cpu];
        cfg.http2 = a.http2;
        if scheme == Scheme::Https {
            cfg.tls = Some(cert.peer_tls("TLSv1.2 TLSv1.3"));
        }
        let server = start_peer(Peer::Nginx, &cfg)?;
        outcome.nginx = server.version().to_string();
        let url = format!(
            "{}://127.0.0.1:{}/index.html",
            scheme.name(),
            server.addr().port()
        );
        for &shape in &shapes {
            let case = Case {
                a: &a,
                binary: &binary,
                cert: &cert.cert,
                scheme,
                url: &url,
                shape,
            };
            outcome.schemes.push(case.measure()?);
        }
        drop(server);
    }
    crate::output::emit(&outcome, a.json, a.save.as_deref(), print)
}

/// One figure: a scheme, and over HTTP/2 a shape.
struct Case<'a> {
    a: &'a GeneratorArgs,
    binary: &'a std::path::Path,
    cert: &'a std::path::Path,
    scheme: Scheme,
    url: &'a str,
    shape: Option<Shape>,
}

impl Case<'_> {
    fn connections(&self) -> u32 {
        self.shape.map_or(self.a.connections, |s| s.connections)
    }

    /// The paired rounds and their ratio.
    fn measure(&self) -> anyhow::Result<SchemeOutcome> {
        let a = self.a;
        let d = a.duration.ceil();
        let (mut ours, mut theirs) = (Runs::default(), Runs::default());
        let label = match self.shape {
            Some(s) => format!("{} {}x{}", self.scheme.name(), s.connections, s.streams),
            None => self.scheme.name().to_string(),
        };
        let reference = if self.shape.is_some() {
            "h2load"
        } else {
            "wrk"
        };
        for round in 0..a.rounds {
            for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
                if which == 0 {
                    let (replies, cpu) = self.ours(d)?;
                    ours.push(replies, d, cpu);
                } else {
                    let (replies, wall, cpu) = self.reference(d)?;
                    theirs.push(replies, wall, cpu);
                }
            }
            if !a.json {
                eprintln!(
                    "{label} round {}: ours {:.0}/CPU-s, {reference} {:.0}/CPU-s",
                    round + 1,
                    ours.per_cpu_s[round],
                    theirs.per_cpu_s[round]
                );
            }
        }
        let ratios: Vec<f64> = ours
            .per_cpu_s
            .iter()
            .zip(&theirs.per_cpu_s)
            .map(|(o, w)| o / w)
            .collect();
        let http2 = self.shape.is_some();
        Ok(SchemeOutcome {
            scheme: self.scheme,
            url: self.url.to_string(),
            connections: self.connections(),
            streams: self.shape.map(|s| s.streams),
            ratio: Interval::of(&ratios),
            ratios,
            ours,
            wrk: (!http2).then(|| theirs.clone()),
            h2load: http2.then_some(theirs),
            target: if self.scheme == Scheme::Http && !http2 {
                1.2
            } else {
                1.0
            },
        })
    }

    /// `evdispatch load` for `d` seconds: its replies and CPU seconds.
    fn ours(&self, d: f64) -> anyhow::Result<(f64, f64)> {
        let load = LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(self.connections().into()),
            duration: Some(Duration::from_secs_f64(d)),
            cacert: (self.scheme == Scheme::Https).then(|| self.cert.to_path_buf()),
            engine: self.a.engine,
            http: self.shape.map(|_| HttpVersion::Http2),
            max_streams: self.shape.map(|s| s.streams),
            ..LoadCommand::new(self.url.to_string())
        };
        let (v, cpu) =
            run_evdispatch_load_measured(self.binary, &load, &[self.a.client_cpu], d + 30.0)?;
        let errors = v["errors_total"].as_u64().unwrap_or(0);
        if errors > 0 {
            bail!(
                "evdispatch load had {errors} errors against {}: {}",
                self.url,
                v["errors"]
            );
        }
        let replies = v["replies"]
            .as_u64()
            .ok_or_else(|| anyhow!("evdispatch load's JSON has no replies"))?;
        Ok((replies as f64, cpu))
    }

    /// The reference (wrk, or h2load over HTTP/2) for `d` seconds: its
    /// replies, wall seconds and CPU seconds.
    fn reference(&self, d: f64) -> anyhow::Result<(f64, f64, f64)> {
        let cpus = vec![self.a.client_cpu];
        match self.shape {
            None => {
                let r = run_wrk(&WrkArgs {
                    url: self.url.to_string(),
                    threads: 1,
                    connections: self.a.connections,
                    duration_s: d,
                    timeout_s: 5.0,
                    cpus,
                    headers: Vec::new(),
                })?;
                Ok((r.requests as f64, r.duration_s, r.cpu_s))
            }
            Some(s) => {
                let r = run_h2load(&H2loadArgs {
                    url: self.url.to_string(),
                    threads: 1,
                    clients: s.connections,
                    max_streams: s.streams,
                    duration_s: d,
                    cpus,
                })?;
                if r.failed + r.errored + r.timeout > 0 {
                    bail!(
                        "h2load had {} failed, {} errored, {} timed-out requests against {}",
                        r.failed,
                        r.errored,
                        r.timeout,
                        self.url
                    );
                }
                Ok((r.succeeded as f64, r.duration_s, r.cpu_s))
            }
        }
    }
}

fn print(o: &Outcome) {
    let (proto, reference) = if o.http2 {
        ("HTTP/2", "h2load")
    } else {
        ("keep-alive", "wrk")
    };
    println!(
        "Generator capacity: closed loop, {proto}, {} s runs, {} paired rounds, nginx {} on one core",
        o.duration_s, o.rounds, o.nginx
    );
    println!(
        "{:<6} {:>7} {:>16} {:>16} {:>24} {:>7}",
        "scheme",
        "conns",
        "ours replies/s",
        format!("{reference} replies/s"),
        format!("ours÷{reference} per CPU-s (90%)"),
        "target"
    );
    for s in &o.schemes {
        let ours = Interval::of(&s.ours.per_s).median;
        let theirs = s
            .wrk
            .as_ref()
            .or(s.h2load.as_ref())
            .map_or(0.0, |r| Interval::of(&r.per_s).median);
        let shape = match s.streams {
            Some(m) => format!("{}x{m}", s.connections),
            None => s.connections.to_string(),
        };
        let r = &s.ratio;
        println!(
            "{:<6} {:>7} {:>16.0} {:>16.0} {:>9.2} [{:.2}, {:.2}] {:>7} {}",
            s.scheme.name(),
            shape,
            ours,
            theirs,
            r.median,
            r.lo,
            r.hi,
            format!("≥{:.1}", s.target),
            if r.median >= s.target {
                "met"
            } else {
                "NOT met"
            }
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_read_as_connections_by_streams() {
        let s: Shape = "10x10".parse().unwrap();
        assert_eq!((s.connections, s.streams), (10, 10));
        let s: Shape = "1X100".parse().unwrap();
        assert_eq!((s.connections, s.streams), (1, 100));
        for bad in ["10", "x10", "0x5", "3x0", "ax2"] {
            assert!(bad.parse::<Shape>().is_err(), "{bad}");
        }
    }
}
