//! Agreement with the reference generators on the same server in the same
//! run: reply rate within 3% of httperf's at a rate httperf can drive, saturation throughput within 5% of wrk's. nginx serves (one
//! worker, CPU 0); every client runs on CPU 1. Skipped, with the reason
//! printed, when nginx, httperf or wrk is absent.

use std::sync::Mutex;
use std::time::Duration;

use evdispatch_harness::{
    docroot, median_interval, run_httperf, run_wrk, skip_reason, start_peer, BenchLock,
    HttperfArgs, Peer, PeerConfig, Tool, WrkArgs,
};
use evdispatch_load::cmdline::LoadCommand;
use evdispatch_load::{execute, Config, Rate, RunOptions, Summary};

/// The comparisons must not overlap each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn skip(tools: &[Tool]) -> bool {
    if evdispatch_host_cpus() < 2 {
        eprintln!("skipped: the comparison pins the server and the clients to CPUs 0 and 1; this machine has one");
        return true;
    }
    for t in tools {
        if let Some(why) = skip_reason(*t) {
            eprintln!("{why}");
            return true;
        }
    }
    false
}

fn ours(cmd: &LoadCommand) -> Summary {
    let cfg = Config::from_command_line(cmd.args()).unwrap();
    // The run pins the calling thread; do it in a thread of its own.
    let h = std::thread::spawn(move || execute(&cfg, &RunOptions::default()));
    h.join().unwrap().unwrap()
}

fn nginx() -> (tempfile::TempDir, evdispatch_harness::ServerProcess) {
    let root = docroot(1024, &[]).unwrap();
    let mut cfg = PeerConfig::new(root.path());
    cfg.cpus = vec![0];
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    (root, server)
}

#[test]
fn reply_rate_agrees_with_httperf() {
    if skip(&[Tool::Nginx, Tool::Httperf]) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _bench = BenchLock::acquire(Duration::from_secs(60));
    let (_root, server) = nginx();
    let (rate, conns) = (400.0, 1200u64);
    let h = run_httperf(&HttperfArgs {
        server: "127.0.0.1".into(),
        port: server.addr().port(),
        uri: "/index.html".into(),
        rate: Some(rate),
        num_conns: conns,
        num_calls: 1,
        timeout_s: 5.0,
        cpus: vec![1],
    })
    .unwrap();
    let s = ours(&LoadCommand {
        rate: Some(Rate::PerSecond(rate)),
        sessions: Some(conns),
        cpu: vec![1],
        ..LoadCommand::new(server.url("/index.html"))
    });
    let theirs = h.replies_per_sec();
    eprintln!(
        "httperf {theirs:.1} replies/s ({} replies in {:.3} s); evdispatch {:.1} replies/s",
        h.replies, h.test_duration_s, s.reply_rate
    );
    assert_eq!(h.errors_total, 0, "httperf saw errors: {h:?}");
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    let diff = (s.reply_rate - theirs).abs() / theirs;
    assert!(
        diff <= 0.03,
        "reply rates differ by {:.1}%: evdispatch {:.1}, httperf {theirs:.1}",
        diff * 100.0,
        s.reply_rate
    );
}

#[test]
fn saturation_agrees_with_wrk() {
    if skip(&[Tool::Nginx, Tool::Wrk]) {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let _bench = BenchLock::acquire(Duration::from_secs(60));
    let (_root, server) = nginx();
    let url = server.url("/index.html");
    // Pairs of short runs back to back see the same machine; the pairs
    // alternate which generator goes first, so a drift of the machine within a
    // pair doesn't favour one of them. The median of the pairs' ratios is
    // compared, with a distribution-free 90% interval around it: this
    // machine's throughput moves by tens of percent from one second to the
    // next, so a 5% difference is only called when the interval says so.
    let wrk = || {
        run_wrk(&WrkArgs {
            url: url.clone(),
            threads: 1,
            connections: 16,
            duration_s: 1.0,
            timeout_s: 5.0,
            cpus: vec![1],
            headers: Vec::new(),
        })
        .unwrap()
        .requests_per_sec
    };
    let evd = || {
        let s = ours(&LoadCommand {
            rate: Some(Rate::Max),
            connections: Some(16),
            duration: Some(Duration::from_secs(1)),
            warmup: Some(Duration::from_millis(100)),
            cpu: vec![1],
            ..LoadCommand::new(&url)
        });
        assert_eq!(s.errors_total, 0, "{:?}", s.errors);
        s.reply_rate
    };
    let mut ratios = Vec::new();
    for pair in 0..11 {
        let (theirs, mine) = if pair % 2 == 0 {
            (wrk(), evd())
        } else {
            let mine = evd();
            (wrk(), mine)
        };
        eprintln!("wrk {theirs:.0} req/s, evdispatch {mine:.0} req/s");
        ratios.push(mine / theirs);
    }
    let (low, median, high) = median_interval(&mut ratios, 0.9);
    eprintln!(
        "ratios evdispatch/wrk {ratios:.3?}: median {median:.3}, 90% interval {low:.3}..{high:.3}"
    );
    let within = |r: f64| (r - 1.0).abs() <= 0.05;
    if within(median) {
        return;
    }
    assert!(
        !(high < 0.95 || low > 1.05),
        "saturation throughput differs from wrk's by {:.1}% (median of {} pairs {ratios:.3?}; \
         the 90% interval {low:.3}..{high:.3} lies wholly outside ±5%)",
        (median - 1.0) * 100.0,
        ratios.len()
    );
    eprintln!(
        "inconclusive, not failed: the median is {:.1}% off, but the machine's noise \
         ({low:.3}..{high:.3}) can't tell that from within 5%",
        (median - 1.0) * 100.0
    );
}

fn evdispatch_host_cpus() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}
