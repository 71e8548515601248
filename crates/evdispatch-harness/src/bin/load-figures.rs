//! `load-figures`: the load generator's figures (the cost of idle
//! connections, 30,000 connections, latency against a stalling server), measured against
//! nginx started by the harness, printed as a table and as JSON.
//!
//! ```text
//! cargo build --release -p evdispatch-cli -p evdispatch-harness
//! flock /tmp/evd-bench.lock target/release/load-figures idle
//! flock /tmp/evd-bench.lock target/release/load-figures scale
//! flock /tmp/evd-bench.lock target/release/load-figures latency
//! flock /tmp/evd-bench.lock target/release/load-figures latency --http2 --max-streams 1
//! target/release/load-figures nginx        # hold an nginx for manual runs
//! ```

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use evdispatch_harness::{
    docroot, median, median_interval, run_evdispatch_load, start_peer, Peer, PeerConfig,
    TestServer, TestServerConfig,
};
use evdispatch_load::{cmdline::LoadCommand, config::HttpVersion, Rate};
use serde_json::{json, Value};

const USAGE: &str =
    "usage: load-figures idle|scale|latency|nginx [--evdispatch PATH] [--rounds N] [--seconds S]
                    [--http2 [--max-streams N]]

  idle      CPU cost of 10,000 idle connections held by the generator
  scale     30,000 concurrent connections in one run (2 nginx workers,
            --procs 2 --source-addrs 2), every one accounted for
  latency   corrected latency against the truth: a server that stalls 200 ms of
            every second (wrk2's stall test), then a quiet server at a low rate
            (what the correction adds when nothing stalls); with --http2,
            the same over h2c, N streams per connection (1 by default)
  nginx     start an nginx (1 worker, CPU 0) and wait, for manual runs

The generator's capacity against wrk -t1 (per CPU-second, plain HTTP and
HTTPS, paired rounds) is `evdispatch bench generator`.

Run the measurements under `flock /tmp/evd-bench.lock`.";

struct Opts {
    evdispatch: PathBuf,
    rounds: usize,
    seconds: f64,
    /// `latency` over h2c, with this many streams per connection.
    http2: Option<u32>,
}

fn f(v: &Value, path: &str) -> f64 {
    v.pointer(path).and_then(Value::as_f64).unwrap_or(f64::NAN)
}

fn idle(o: &Opts) -> anyhow::Result<Value> {
    let root = docroot(100, &[])?;
    let mut cfg = PeerConfig::new(root.path());
    cfg.cpus = vec![0];
    cfg.max_connections = 12000;
    cfg.keepalive_timeout_s = 600;
    let nginx = start_peer(Peer::Nginx, &cfg)?;
    let n = 10_000;
    let mut pcts = Vec::new();
    let mut runs = Vec::new();
    for round in 0..o.rounds {
        let v = run_evdispatch_load(
            &o.evdispatch,
            &LoadCommand {
                idle: Some(n),
                duration: Some(Duration::from_secs_f64(o.seconds)),
                ..LoadCommand::new(nginx.url("/index.html"))
            },
            &[1],
        )?;
        let pct = f(&v, "/generator_cpu_pct");
        let held = f(&v, "/connections/open_at_end");
        eprintln!(
            "round {round}: {held} idle connections held, generator {pct:.3}% of a core over {} s",
            o.seconds
        );
        if held < n as f64 {
            bail!("only {held} of {n} idle connections were held: {v}");
        }
        pcts.push(pct);
        runs.push(v);
    }
    let m = median(&mut pcts);
    println!(
        "idle: {n} idle connections held for {} s cost {m:.3}% of a core (median of {} rounds)",
        o.seconds, o.rounds
    );
    Ok(
        json!({"figure": "idle", "connections": n, "generator_cpu_pct_median": m,
        "runs": runs.iter().map(|v| json!({"generator_cpu_pct": v["generator_cpu_pct"], "connections": v["connections"]})).collect::<Vec<_>>()}),
    )
}

fn scale(o: &Opts) -> anyhow::Result<Value> {
    let root = docroot(100, &[])?;
    let mut cfg = PeerConfig::new(root.path());
    cfg.workers = 2;
    cfg.max_connections = 19_000;
    cfg.request_timeout_s = 300;
    cfg.keepalive_timeout_s = 300;
    let nginx = start_peer(Peer::Nginx, &cfg)?;
    let v = run_evdispatch_load(
        &o.evdispatch,
        &LoadCommand {
            inactive: Some(29_000),
            persistent: Some(1000),
            rate: Some(Rate::PerSecond(2000.0)),
            procs: Some(2),
            source_addrs: Some(2),
            duration: Some(Duration::from_secs_f64(o.seconds)),
            server_pid: vec![nginx.pid()],
            ..LoadCommand::new(nginx.url("/index.html"))
        },
        &[],
    )?;
    let c = &v["connections"];
    println!(
        "scale: peak {} connections; attempted {} established {} failed {} closed by client {} by server {} open at end {}; accounted: {}",
        v["connections_peak"], c["attempted"], c["established"], c["failed"], c["closed_by_client"],
        c["closed_by_server"], c["open_at_end"], c["accounted"]
    );
    println!(
        "       persistent load: {:.0} replies/s, p99 {:.2} ms corrected; errors {}; setup {:.1} s; generator {:.0}% of a core, server {:.0}%",
        f(&v, "/reply_rate"),
        f(&v, "/latency_us/p99") / 1000.0,
        v["errors_total"],
        f(&v, "/setup_s"),
        f(&v, "/generator_cpu_pct"),
        f(&v, "/server_cpu_pct")
    );
    Ok(json!({"figure": "scale", "summary": v}))
}

/// The percentiles the latency figure compares.
const TRUTH_PCTS: [f64; 6] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99];

/// `percentile` (e.g. 99.9) of a run's `latency_us` or
/// `latency_uncorrected_us` table, µs.
fn pct_us(v: &Value, table: &str, percentile: f64) -> f64 {
    v[table]["percentiles"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["percentile"].as_f64() == Some(percentile))
        .and_then(|p| p["us"].as_f64())
        .unwrap_or(f64::NAN)
}

/// What an open-loop client must see, µs, at `percentile` when the server
/// answers in `base_us` but stops answering for `stall` of every `period`:
/// a request due `t` into a stall waits `stall − t`, so the share of requests
/// waiting more than `x` is `(stall − x) / period` for `x < stall`.
fn stall_truth_us(percentile: f64, period: Duration, stall: Duration, base_us: f64) -> f64 {
    let above = (100.0 - percentile) / 100.0 * period.as_secs_f64();
    let wait = (stall.as_secs_f64() - above).max(0.0);
    wait * 1e6 + base_us
}

/// wrk2's stall test, and the correction's cost when nothing stalls.
fn latency(o: &Opts) -> anyhow::Result<Value> {
    let (period, stall) = (Duration::from_secs(1), Duration::from_millis(200));
    let (rate, conns) = (1000.0, 20u64);
    let run = |server: &TestServer, rate: f64| {
        run_evdispatch_load(
            &o.evdispatch,
            &LoadCommand {
                rate: Some(Rate::PerSecond(rate)),
                connections: Some(conns),
                duration: Some(Duration::from_secs_f64(o.seconds)),
                warmup: Some(Duration::from_millis(500)),
                http: o.http2.map(|_| HttpVersion::Http2),
                max_streams: o.http2,
                ..LoadCommand::new(server.url())
            },
            &[1],
        )
    };
    let mut rounds = Vec::new();
    // Per percentile: corrected ÷ truth under stalls; corrected − uncorrected
    // at a low rate without stalls.
    let mut ratio: Vec<Vec<f64>> = vec![Vec::new(); TRUTH_PCTS.len()];
    let mut omitted: Vec<Vec<f64>> = vec![Vec::new(); TRUTH_PCTS.len()];
    let mut added: Vec<Vec<f64>> = vec![Vec::new(); TRUTH_PCTS.len()];
    for round in 0..o.rounds {
        let quiet = TestServer::start(TestServerConfig {
            http2: o.http2.is_some(),
            ..TestServerConfig::default()
        })?;
        let low = run(&quiet, 100.0)?;
        drop(quiet);
        let stalling = TestServer::start(TestServerConfig {
            stall: Some((period, stall)),
            http2: o.http2.is_some(),
            ..TestServerConfig::default()
        })?;
        let stalled = run(&stalling, rate)?;
        drop(stalling);
        // The service time when nothing stalls, from the quiet run.
        let base = pct_us(&low, "latency_uncorrected_us", 50.0);
        let mut rows = Vec::new();
        for (i, &p) in TRUTH_PCTS.iter().enumerate() {
            let truth = stall_truth_us(p, period, stall, base);
            let c = pct_us(&stalled, "latency_us", p);
            let u = pct_us(&stalled, "latency_uncorrected_us", p);
            let (lc, lu) = (
                pct_us(&low, "latency_us", p),
                pct_us(&low, "latency_uncorrected_us", p),
            );
            ratio[i].push(c / truth);
            omitted[i].push(u / truth);
            added[i].push(lc - lu);
            rows.push(
                json!({"percentile": p, "truth_us": truth, "corrected_us": c,
                "uncorrected_us": u, "low_rate_corrected_us": lc, "low_rate_uncorrected_us": lu}),
            );
        }
        let i99 = TRUTH_PCTS.iter().position(|&p| p == 99.0).unwrap_or(0);
        eprintln!(
            "round {round}: stall p99 truth {:.0} µs corrected {:.0} uncorrected {:.0}; low rate p99 corrected − uncorrected {:.0} µs",
            rows[i99]["truth_us"].as_f64().unwrap_or(f64::NAN),
            rows[i99]["corrected_us"].as_f64().unwrap_or(f64::NAN),
            rows[i99]["uncorrected_us"].as_f64().unwrap_or(f64::NAN),
            added[i99][round]
        );
        rounds.push(json!({"stalled": {"reply_rate": stalled["reply_rate"], "replies": stalled["replies"], "errors_total": stalled["errors_total"]},
            "low_rate": {"reply_rate": low["reply_rate"], "replies": low["replies"]}, "percentiles": rows}));
    }
    let over = match o.http2 {
        Some(1) => "h2c connections (1 stream each)".into(),
        Some(m) => format!("h2c connections ({m} streams each)"),
        None => "HTTP/1.1 connections".into(),
    };
    println!(
        "latency: open loop {rate}/s over {conns} {over}, {} s runs, {} rounds; the server stops answering {} ms of every {} s",
        o.seconds,
        o.rounds,
        stall.as_millis(),
        period.as_secs()
    );
    println!("  (truth: a request due t into a stall waits 200 ms − t, plus the quiet run's median service time; median [90% interval] of the rounds)");
    println!("  percentile  truth ms   corrected ÷ truth      uncorrected ÷ truth    low rate: corrected − uncorrected µs");
    let mut table = Vec::new();
    for (i, &p) in TRUTH_PCTS.iter().enumerate() {
        let truth = rounds[0]["percentiles"][i]["truth_us"]
            .as_f64()
            .unwrap_or(f64::NAN)
            / 1e3;
        let (rl, rm, rh) = median_interval(&mut ratio[i], 0.9);
        let (ul, um, uh) = median_interval(&mut omitted[i], 0.9);
        let (al, am, ah) = median_interval(&mut added[i], 0.9);
        println!("  p{p:<9} {truth:>8.1}   {rm:>6.3} [{rl:.3}, {rh:.3}]   {um:>6.3} [{ul:.3}, {uh:.3}]   {am:>6.0} [{al:.0}, {ah:.0}]");
        table.push(
            json!({"percentile": p, "truth_ms": truth, "corrected_over_truth": [rl, rm, rh],
            "uncorrected_over_truth": [ul, um, uh], "added_at_low_rate_us": [al, am, ah]}),
        );
    }
    Ok(
        json!({"figure": "latency", "rate": rate, "connections": conns,
        "http2_streams": o.http2,
        "stall_ms": stall.as_millis() as u64, "period_s": period.as_secs(),
        "table": table, "rounds": rounds}),
    )
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let what = args.next().unwrap_or_default();
    let mut o = Opts {
        evdispatch: std::env::current_exe()?
            .parent()
            .context("no directory")?
            .join("evdispatch"),
        rounds: 3,
        seconds: 3.0,
        http2: None,
    };
    while let Some(a) = args.next() {
        let mut val = || args.next().context("missing value");
        match a.as_str() {
            "--evdispatch" => o.evdispatch = val()?.into(),
            "--rounds" => o.rounds = val()?.parse()?,
            "--seconds" => o.seconds = val()?.parse()?,
            "--http2" => o.http2 = Some(o.http2.unwrap_or(1)),
            "--max-streams" => o.http2 = Some(val()?.parse()?),
            _ => bail!("unknown argument '{a}'\n{USAGE}"),
        }
    }
    type Figure = fn(&Opts) -> anyhow::Result<Value>;
    // Each figure with the shortest run it is measured over, seconds.
    let (least_s, figure): (f64, Figure) = match what.as_str() {
        "idle" => (10.0, idle),
        "scale" => (5.0, scale),
        "latency" => (10.0, latency),
        "nginx" => {
            let root = docroot(100, &[])?;
            let mut cfg = PeerConfig::new(root.path());
            cfg.cpus = vec![0];
            cfg.max_connections = 19_000;
            let n = start_peer(Peer::Nginx, &cfg)?;
            println!(
                "nginx {} at {} (pid {}); Ctrl-C to stop",
                n.version(),
                n.url("/index.html"),
                n.pid()
            );
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        _ => bail!("{USAGE}"),
    };
    o.seconds = o.seconds.max(least_s);
    let out = figure(&o)?;
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
