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
//! A measurement, not a test: run it on a quiet machine, under the bench
//! lock: `flock /tmp/evd-bench.lock evdispatch bench generator`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use evdispatch_harness::{
    docroot, median_interval, run_evdispatch_load_measured, run_wrk, skip_reason, start_peer, Peer,
    PeerConfig, SelfSigned, Tool, WrkArgs,
};
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
    /// Keep-alive connections of each generator.
    #[arg(long, default_value_t = 10)]
    pub connections: u32,
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

/// The figures of one scheme.
#[derive(Debug, Clone, Serialize)]
pub struct SchemeOutcome {
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The URL loaded.
    pub url: String,
    /// `evdispatch load`.
    pub ours: Runs,
    /// `wrk -t1`.
    pub wrk: Runs,
    /// Per-round ratio ours ÷ wrk of replies per CPU-second.
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
    /// Connections per generator.
    pub connections: u32,
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
    for t in [Tool::Nginx, Tool::Wrk] {
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
        nginx: String::new(),
        schemes: Vec::new(),
    };
    for &scheme in &a.schemes {
        let mut cfg = PeerConfig::new(root.path());
        cfg.cpus = vec![a.server_cpu];
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
        let d = a.duration.ceil();
        let ours_load = LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(a.connections.into()),
            duration: Some(Duration::from_secs_f64(d)),
            cacert: (scheme == Scheme::Https).then(|| cert.cert.clone()),
            engine: a.engine,
            ..LoadCommand::new(url.clone())
        };
        let wrk_args = WrkArgs {
            url: url.clone(),
            threads: 1,
            connections: a.connections,
            duration_s: d,
            timeout_s: 5.0,
            cpus: vec![a.client_cpu],
            headers: Vec::new(),
        };
        let (mut ours, mut wrk) = (Runs::default(), Runs::default());
        for round in 0..a.rounds {
            for which in if round % 2 == 0 { [0, 1] } else { [1, 0] } {
                if which == 0 {
                    let (v, cpu) = run_evdispatch_load_measured(
                        &binary,
                        &ours_load,
                        &[a.client_cpu],
                        d + 30.0,
                    )?;
                    let errors = v["errors_total"].as_u64().unwrap_or(0);
                    if errors > 0 {
                        bail!(
                            "evdispatch load had {errors} errors against {url}: {}",
                            v["errors"]
                        );
                    }
                    let replies = v["replies"]
                        .as_u64()
                        .ok_or_else(|| anyhow!("evdispatch load's JSON has no replies"))?;
                    ours.push(replies as f64, d, cpu);
                } else {
                    let r = run_wrk(&wrk_args)?;
                    wrk.push(r.requests as f64, r.duration_s, r.cpu_s);
                }
            }
            if !a.json {
                eprintln!(
                    "{} round {}: ours {:.0}/CPU-s, wrk {:.0}/CPU-s",
                    scheme.name(),
                    round + 1,
                    ours.per_cpu_s[round],
                    wrk.per_cpu_s[round]
                );
            }
        }
        drop(server);
        let ratios: Vec<f64> = ours
            .per_cpu_s
            .iter()
            .zip(&wrk.per_cpu_s)
            .map(|(o, w)| o / w)
            .collect();
        outcome.schemes.push(SchemeOutcome {
            scheme,
            url,
            ratio: Interval::of(&ratios),
            ratios,
            ours,
            wrk,
            target: if scheme == Scheme::Http { 1.2 } else { 1.0 },
        });
    }
    crate::output::emit(&outcome, a.json, a.save.as_deref(), print)
}

fn print(o: &Outcome) {
    println!(
        "Generator capacity: closed loop, keep-alive, {} connections, {} s runs, {} paired rounds, nginx {} on one core",
        o.connections, o.duration_s, o.rounds, o.nginx
    );
    println!(
        "{:<6} {:>16} {:>16} {:>24} {:>7}",
        "scheme", "ours replies/s", "wrk replies/s", "ours÷wrk per CPU-s (90%)", "target"
    );
    for s in &o.schemes {
        let ours = Interval::of(&s.ours.per_s).median;
        let wrk = Interval::of(&s.wrk.per_s).median;
        let r = &s.ratio;
        println!(
            "{:<6} {:>16.0} {:>16.0} {:>9.2} [{:.2}, {:.2}] {:>7} {}",
            s.scheme.name(),
            ours,
            wrk,
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
