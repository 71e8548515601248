//! The reference load generators: wrk, httperf and h2load, run pinned to
//! CPUs with their output parsed into structs, and `evdispatch load --json`.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context};
use evdispatch_load::cmdline::LoadCommand;

use crate::installed::{find, Tool};
use crate::process::{evdispatch, Background, ChildGroup};
use crate::sys;

/// A wrk run.
#[derive(Debug, Clone)]
pub struct WrkArgs {
    /// The URL.
    pub url: String,
    /// `-t`.
    pub threads: u32,
    /// `-c`.
    pub connections: u32,
    /// `-d`, seconds (wrk takes whole seconds: rounded up, at least 1).
    pub duration_s: f64,
    /// `--timeout`, seconds.
    pub timeout_s: f64,
    /// CPUs wrk is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Extra request headers, `Name: value` (`-H`), e.g. `Connection: close`.
    pub headers: Vec<String>,
}

/// What wrk reported.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WrkResult {
    /// Requests completed.
    pub requests: u64,
    /// Test duration, seconds.
    pub duration_s: f64,
    /// `Requests/sec`.
    pub requests_per_sec: f64,
    /// Bytes read.
    pub read_bytes: f64,
    /// Mean latency, µs.
    pub latency_avg_us: f64,
    /// Latency standard deviation, µs.
    pub latency_stdev_us: f64,
    /// Largest latency, µs.
    pub latency_max_us: f64,
    /// `(percent, µs)` from `--latency` (50, 75, 90, 99).
    pub percentiles: Vec<(f64, f64)>,
    /// Socket errors: connect.
    pub errors_connect: u64,
    /// Socket errors: read.
    pub errors_read: u64,
    /// Socket errors: write.
    pub errors_write: u64,
    /// Socket errors: timeout.
    pub errors_timeout: u64,
    /// Non-2xx or 3xx responses.
    pub non_2xx_3xx: u64,
    /// CPU seconds wrk used (user + system), from its rusage.
    pub cpu_s: f64,
}

/// A value with a unit (`123.45us`, `1.2ms`, `2.00s`, `1m`, `12.34MB`,
/// `40.00k`) in µs for times (read by [`evdispatch_host::parse_duration`]),
/// bytes for sizes, units for counts.
fn with_unit(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(s.len());
    let v: f64 = s[..split].parse().ok()?;
    let mult = match &s[split..] {
        "" => 1.0,
        "B" => 1.0,
        "KB" => 1024.0,
        "MB" => 1024.0 * 1024.0,
        "GB" => 1024.0 * 1024.0 * 1024.0,
        "k" => 1e3,
        "M" => 1e6,
        _ => return Some(evdispatch_host::parse_duration(s).ok()?.as_nanos() as f64 / 1e3),
    };
    Some(v * mult)
}

/// Parse wrk's output.
pub fn parse_wrk(text: &str) -> anyhow::Result<WrkResult> {
    let mut r = WrkResult::default();
    let mut seen_total = false;
    let mut in_dist = false;
    for line in text.lines() {
        let t = line.trim();
        let f: Vec<&str> = t.split_whitespace().collect();
        if t.starts_with("Latency Distribution") {
            in_dist = true;
            continue;
        }
        if in_dist {
            if let [p, v] = f.as_slice() {
                if let (Some(p), Some(v)) = (
                    p.strip_suffix('%').and_then(|p| p.parse().ok()),
                    with_unit(v),
                ) {
                    r.percentiles.push((p, v));
                    continue;
                }
            }
            in_dist = false;
        }
        if f.first() == Some(&"Latency") && f.len() >= 4 {
            r.latency_avg_us = with_unit(f[1]).unwrap_or(0.0);
            r.latency_stdev_us = with_unit(f[2]).unwrap_or(0.0);
            r.latency_max_us = with_unit(f[3]).unwrap_or(0.0);
        } else if t.contains(" requests in ") {
            // "80000 requests in 2.00s, 12.34MB read"
            r.requests = f[0].parse().context("wrk: request count")?;
            r.duration_s = with_unit(f[3].trim_end_matches(',')).unwrap_or(0.0) / 1e6;
            r.read_bytes = f.get(4).and_then(|s| with_unit(s)).unwrap_or(0.0);
            seen_total = true;
        } else if let Some(rest) = t.strip_prefix("Socket errors:") {
            for part in rest.split(',') {
                let p: Vec<&str> = part.split_whitespace().collect();
                if let [k, v] = p.as_slice() {
                    let v: u64 = v.parse().unwrap_or(0);
                    match *k {
                        "connect" => r.errors_connect = v,
                        "read" => r.errors_read = v,
                        "write" => r.errors_write = v,
                        "timeout" => r.errors_timeout = v,
                        _ => {}
                    }
                }
            }
        } else if let Some(rest) = t.strip_prefix("Non-2xx or 3xx responses:") {
            r.non_2xx_3xx = rest.trim().parse().unwrap_or(0);
        } else if let Some(rest) = t.strip_prefix("Requests/sec:") {
            r.requests_per_sec = rest.trim().parse().context("wrk: Requests/sec")?;
        }
    }
    if !seen_total || r.requests_per_sec == 0.0 && r.requests > 0 {
        bail!("wrk output not understood:\n{text}");
    }
    Ok(r)
}

/// wrk's arguments for `a` (after the program name), as [`run_wrk`] runs it.
pub fn wrk_args(a: &WrkArgs) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "-t".into(),
        a.threads.to_string(),
        "-c".into(),
        a.connections.to_string(),
        "-d".into(),
        format!("{}s", a.duration_s.ceil().max(1.0) as u64),
        "--timeout".into(),
        format!("{}s", a.timeout_s),
        "--latency".into(),
    ];
    for h in &a.headers {
        v.extend(["-H".into(), h.clone()]);
    }
    v.push(a.url.clone());
    v
}

/// Seconds a wrk run may take before it is stopped as hung.
pub fn wrk_limit_s(a: &WrkArgs) -> f64 {
    a.duration_s.ceil().max(1.0) + a.timeout_s + GRACE_S
}

/// Run wrk and parse what it prints.
pub fn run_wrk(a: &WrkArgs) -> anyhow::Result<WrkResult> {
    let p = find(Tool::Wrk)?;
    let mut cmd = Command::new(&p.path);
    cmd.args(wrk_args(a));
    let (out, cpu_s) = run_measured(cmd, &a.cpus, "wrk", wrk_limit_s(a))?;
    let mut r = parse_wrk(&out)?;
    r.cpu_s = cpu_s;
    Ok(r)
}

/// An h2load run (nghttp2's HTTP/2 benchmark) for a duration: h2c by prior
/// knowledge on an `http://` URL, h2 by ALPN on an `https://` one (h2load
/// does not check the server's certificate).
#[derive(Debug, Clone)]
pub struct H2loadArgs {
    /// The URL.
    pub url: String,
    /// `-t`.
    pub threads: u32,
    /// `-c`: connections.
    pub clients: u32,
    /// `-m`: concurrent streams per connection.
    pub max_streams: u32,
    /// `-D`, seconds (rounded up to whole seconds, at least 1).
    pub duration_s: f64,
    /// CPUs h2load is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
}

/// What h2load reported.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct H2loadResult {
    /// `finished in`: the run's length, seconds.
    pub duration_s: f64,
    /// `requests: N total`.
    pub total: u64,
    /// `N started`.
    pub started: u64,
    /// `N done`.
    pub done: u64,
    /// `N succeeded` (2xx and 3xx).
    pub succeeded: u64,
    /// `N failed`.
    pub failed: u64,
    /// `N errored`.
    pub errored: u64,
    /// `N timeout`.
    pub timeout: u64,
    /// CPU seconds h2load used (user + system), from its rusage.
    pub cpu_s: f64,
}

/// Parse h2load's output: its `finished in` and `requests:` lines.
pub fn parse_h2load(text: &str) -> anyhow::Result<H2loadResult> {
    let mut r = H2loadResult::default();
    let (mut finished, mut requests) = (false, false);
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("finished in ") {
            // "finished in 2.01s, 11101.00 req/s, 12.17MB/s"
            let d = rest.split(',').next().unwrap_or("");
            r.duration_s = with_unit(d).context("h2load: finished in")? / 1e6;
            finished = true;
        } else if let Some(rest) = t.strip_prefix("requests:") {
            // "requests: 22202 total, 22302 started, 22202 done, 22202
            // succeeded, 0 failed, 0 errored, 0 timeout"
            for part in rest.split(',') {
                if let [n, k] = part.split_whitespace().collect::<Vec<_>>().as_slice() {
                    let n: u64 = n.parse().with_context(|| format!("h2load: {part}"))?;
                    match *k {
                        "total" => r.total = n,
                        "started" => r.started = n,
                        "done" => r.done = n,
                        "succeeded" => r.succeeded = n,
                        "failed" => r.failed = n,
                        "errored" => r.errored = n,
                        "timeout" => r.timeout = n,
                        _ => {}
                    }
                }
            }
            requests = true;
        }
    }
    if !(finished && requests) {
        bail!("h2load output not understood:\n{text}");
    }
    Ok(r)
}

/// h2load's arguments for `a` (after the program name), as [`run_h2load`]
/// runs it.
pub fn h2load_args(a: &H2loadArgs) -> Vec<String> {
    vec![
        "-t".into(),
        a.threads.to_string(),
        "-c".into(),
        a.clients.to_string(),
        "-m".into(),
        a.max_streams.to_string(),
        "-D".into(),
        (a.duration_s.ceil().max(1.0) as u64).to_string(),
        a.url.clone(),
    ]
}

/// Run h2load and parse what it prints, with its CPU seconds measured as
/// [`run_wrk`] measures wrk's.
pub fn run_h2load(a: &H2loadArgs) -> anyhow::Result<H2loadResult> {
    let p = find(Tool::H2load)?;
    let mut cmd = Command::new(&p.path);
    cmd.args(h2load_args(a));
    let limit = a.duration_s.ceil().max(1.0) + GRACE_S;
    let (out, cpu_s) = run_measured(cmd, &a.cpus, "h2load", limit)?;
    let mut r = parse_h2load(&out)?;
    r.cpu_s = cpu_s;
    Ok(r)
}

/// An httperf run.
#[derive(Debug, Clone)]
pub struct HttperfArgs {
    /// Server address.
    pub server: String,
    /// Port.
    pub port: u16,
    /// URI.
    pub uri: String,
    /// `--rate` (connections per second; `None`: one after the other).
    pub rate: Option<f64>,
    /// `--num-conns`.
    pub num_conns: u64,
    /// `--num-calls`.
    pub num_calls: u64,
    /// `--timeout`, seconds.
    pub timeout_s: f64,
    /// CPUs httperf is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
}

/// What httperf reported.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HttperfResult {
    /// Connections made.
    pub connections: u64,
    /// Requests sent.
    pub requests: u64,
    /// Replies received.
    pub replies: u64,
    /// Test duration, seconds.
    pub test_duration_s: f64,
    /// Connection rate, per second.
    pub connection_rate: f64,
    /// Request rate, per second.
    pub request_rate: f64,
    /// Reply rate samples (5 s each): min, avg, max, stddev, count.
    pub reply_rate_min: f64,
    /// See `reply_rate_min`.
    pub reply_rate_avg: f64,
    /// See `reply_rate_min`.
    pub reply_rate_max: f64,
    /// See `reply_rate_min`.
    pub reply_rate_stddev: f64,
    /// See `reply_rate_min`.
    pub reply_rate_samples: u64,
    /// Connect time, ms.
    pub connect_ms: f64,
    /// Reply time (response), ms.
    pub response_ms: f64,
    /// Reply time (transfer), ms.
    pub transfer_ms: f64,
    /// Reply status 1xx … 5xx.
    pub status: [u64; 5],
    /// Errors: total.
    pub errors_total: u64,
    /// Errors: client-timo.
    pub client_timo: u64,
    /// Errors: socket-timo.
    pub socket_timo: u64,
    /// Errors: connrefused.
    pub connrefused: u64,
    /// Errors: connreset.
    pub connreset: u64,
    /// Errors: fd-unavail.
    pub fd_unavail: u64,
    /// Errors: addrunavail.
    pub addrunavail: u64,
    /// Errors: ftab-full.
    pub ftab_full: u64,
    /// Errors: other.
    pub other: u64,
    /// CPU seconds httperf reported (user + system).
    pub cpu_s: f64,
    /// Seconds waited before the run for local ports to come free
    /// (`wait_for_httperf_ports`; not part of httperf's output).
    pub port_wait_s: f64,
}

impl HttperfResult {
    /// Replies per second over the whole test (`replies / test-duration`).
    pub fn replies_per_sec(&self) -> f64 {
        if self.test_duration_s > 0.0 {
            self.replies as f64 / self.test_duration_s
        } else {
            0.0
        }
    }
}

fn after<'a>(f: &'a [&'a str], key: &str) -> Option<f64> {
    f.iter()
        .position(|w| *w == key)
        .and_then(|i| f.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// Parse httperf's output.
pub fn parse_httperf(text: &str) -> anyhow::Result<HttperfResult> {
    let mut r = HttperfResult::default();
    let mut seen = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let n = |k: &str| after(&f, k).unwrap_or(0.0);
        if line.starts_with("Total: connections") {
            r.connections = n("connections") as u64;
            r.requests = n("requests") as u64;
            r.replies = n("replies") as u64;
            r.test_duration_s = n("test-duration");
            seen = true;
        } else if line.starts_with("Connection rate:") {
            r.connection_rate = f.get(2).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        } else if line.starts_with("Request rate:") {
            r.request_rate = f.get(2).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        } else if line.starts_with("Reply rate [replies/s]:") {
            r.reply_rate_min = n("min");
            r.reply_rate_avg = n("avg");
            r.reply_rate_max = n("max");
            r.reply_rate_stddev = n("stddev");
            r.reply_rate_samples = line
                .rsplit('(')
                .next()
                .and_then(|s| s.split_whitespace().next())
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
        } else if line.starts_with("Connection time [ms]: connect") {
            r.connect_ms = n("connect");
        } else if line.starts_with("Reply time [ms]:") {
            r.response_ms = n("response");
            r.transfer_ms = n("transfer");
        } else if line.starts_with("Reply status:") {
            for (i, w) in f.iter().skip(2).enumerate().take(5) {
                r.status[i] = w
                    .split('=')
                    .nth(1)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
            }
        } else if line.starts_with("Errors: total") {
            r.errors_total = n("total") as u64;
            r.client_timo = n("client-timo") as u64;
            r.socket_timo = n("socket-timo") as u64;
            r.connrefused = n("connrefused") as u64;
            r.connreset = n("connreset") as u64;
        } else if line.starts_with("Errors: fd-unavail") {
            r.fd_unavail = n("fd-unavail") as u64;
            r.addrunavail = n("addrunavail") as u64;
            r.ftab_full = n("ftab-full") as u64;
            r.other = n("other") as u64;
        } else if line.starts_with("CPU time [s]:") {
            r.cpu_s = n("user") + n("system");
        }
    }
    if !seen {
        bail!("httperf output not understood:\n{text}");
    }
    Ok(r)
}

/// httperf's arguments for `a` (after the program name), as
/// [`run_httperf`] runs it: with `--hog`, so it may use every ephemeral port.
pub fn httperf_args(a: &HttperfArgs) -> Vec<String> {
    let mut v = vec!["--hog".to_string()];
    for (flag, value) in [
        ("--server", Some(a.server.clone())),
        ("--port", Some(a.port.to_string())),
        ("--uri", Some(a.uri.clone())),
        ("--num-conns", Some(a.num_conns.to_string())),
        ("--num-calls", Some(a.num_calls.to_string())),
        ("--timeout", Some(a.timeout_s.to_string())),
        ("--rate", a.rate.map(|r| r.to_string())),
    ] {
        if let Some(value) = value {
            v.extend([flag.to_string(), value]);
        }
    }
    v
}

/// Seconds an httperf run may take before it is stopped as hung: its
/// planned length (connections at the rate, or one timeout per connection
/// in turn without a rate), then the grace. httperf never gives up by
/// itself when it runs out of local ports (it retries bind for ever).
pub fn httperf_limit_s(a: &HttperfArgs) -> f64 {
    let planned = match a.rate {
        Some(r) if r > 0.0 => a.num_conns as f64 / r,
        _ => a.num_conns as f64 * a.timeout_s,
    };
    planned + a.timeout_s * a.num_calls.max(1) as f64 + GRACE_S
}

/// The local ports httperf `--hog` can count on here, less a margin.
/// Measured with httperf 0.9.0 on Linux 6.18: one run of 40,000
/// connections at 8,000/s stopped making any once 33,263 ports of
/// 1,024–65,535 were held (3,000 of them by an earlier run's TIME_WAITs),
/// and retried `bind` for ever; back-to-back runs hung the same way at
/// 29,500 held with 4,500 more needed, and not at 28,000 with 1,500.
pub const HTTPERF_HOG_PORTS: u64 = 30_000;

/// The lowest port httperf `--hog` binds (its range runs to 65,535).
pub const HTTPERF_LOW_PORT: u16 = 1024;

/// The longest wait for httperf's ports, seconds: a TIME_WAIT socket keeps
/// its port 60 s.
pub const HTTPERF_PORT_WAIT_S: u64 = 61;

/// Wait, at most [`HTTPERF_PORT_WAIT_S`], until httperf `--hog` can take
/// `needed` more ports: until the local TCP ports held in its range, plus
/// `needed`, fit in [`HTTPERF_HOG_PORTS`]. Back-to-
/// back runs otherwise find their ports in TIME_WAIT and hang. Returns the
/// seconds waited; when the ports do not come free, the run goes ahead and
/// its time limit catches it.
pub fn wait_for_httperf_ports(needed: u64) -> f64 {
    let t0 = std::time::Instant::now();
    loop {
        let held =
            evdispatch_host::held_local_ports(HTTPERF_LOW_PORT, u16::MAX).unwrap_or(0) as u64;
        let waited = t0.elapsed().as_secs_f64();
        if held + needed <= HTTPERF_HOG_PORTS || waited >= HTTPERF_PORT_WAIT_S as f64 {
            if waited >= 1.0 {
                eprintln!("httperf: waited {waited:.0} s for local ports to leave TIME_WAIT ({held} held, {needed} needed)");
            }
            return waited;
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
}

/// Run httperf ([`httperf_args`]) and parse what it prints, after
/// `wait_for_httperf_ports`.
pub fn run_httperf(a: &HttperfArgs) -> anyhow::Result<HttperfResult> {
    let p = find(Tool::Httperf)?;
    let port_wait_s = wait_for_httperf_ports(a.num_conns);
    let mut cmd = Command::new(&p.path);
    cmd.args(httperf_args(a));
    let (out, _) = run_measured(cmd, &a.cpus, "httperf", httperf_limit_s(a))?;
    Ok(HttperfResult {
        port_wait_s,
        ..parse_httperf(&out)?
    })
}

/// Time a tool may run beyond its planned length before it is stopped.
const GRACE_S: f64 = 60.0;

/// Run a tool to completion, pinned, returning its standard output and the
/// CPU seconds it used (from the children's rusage; exact when nothing else
/// is reaped meanwhile). A tool still running after `limit_s` seconds is
/// killed (its whole process group) and reported as hung.
fn run_measured(
    mut cmd: Command,
    cpus: &[usize],
    name: &str,
    limit_s: f64,
) -> anyhow::Result<(String, f64)> {
    cmd.stdin(Stdio::null());
    sys::prepare(&mut cmd, cpus)?;
    let before = sys::children_cpu_s();
    let out = run_bounded(cmd, name, limit_s, false)?;
    let cpu = sys::children_cpu_s() - before;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "{name} failed ({}): {}{}",
            out.status,
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok((text, cpu))
}

/// Run `cmd` to completion as its own process group ([`ChildGroup`]),
/// collecting its standard output and error (unless the caller redirected
/// them), for at most `limit_s` seconds: a program still running then is
/// killed with its whole group and reported as hung. With `hold_stdin`, its
/// standard input is a pipe held open until it exits (a program that waits
/// for end-of-file there — e.g. a remote shell watching its ssh connection —
/// sees it only when this side goes away); otherwise the caller sets it.
/// The exit status is returned as it is, not judged.
pub fn run_bounded(
    mut cmd: Command,
    name: &str,
    limit_s: f64,
    hold_stdin: bool,
) -> anyhow::Result<std::process::Output> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    if hold_stdin {
        cmd.stdin(Stdio::piped());
    }
    let mut child = ChildGroup::spawn(cmd, name)?;
    // Taken out so that waiting (which would close it) leaves it open.
    let stdin = child.child_mut().and_then(|c| c.stdin.take());
    let pid = child.pid();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait_output());
    });
    let limit = std::time::Duration::from_secs_f64(limit_s.max(1.0));
    let (got, hung) = match rx.recv_timeout(limit) {
        Ok(r) => (Some(r), false),
        Err(_) => {
            // The program leads its own process group (ChildGroup::spawn).
            let _ = sys::kill_group(pid, libc::SIGKILL);
            (None, true)
        }
    };
    let _ = waiter.join();
    drop(stdin);
    let out = got
        .or_else(|| rx.try_recv().ok())
        .ok_or_else(|| anyhow!("{name}: lost its output"))?
        .with_context(|| format!("cannot run {name}"))?;
    if hung {
        bail!("{name} was still running after {limit_s:.0} s and was stopped (hung)");
    }
    Ok(out)
}

fn load_json(stdout: &[u8]) -> anyhow::Result<serde_json::Value> {
    serde_json::from_slice(stdout).map_err(|e| {
        anyhow!(
            "evdispatch load printed no JSON ({e}): {}",
            String::from_utf8_lossy(stdout)
        )
    })
}

/// Run `BINARY load ARGS --json` and return its JSON summary (the contract
/// documented in the `evdispatch-load` crate), pinned to `cpus` if given.
pub fn run_evdispatch_load(
    binary: &Path,
    load: &LoadCommand,
    cpus: &[usize],
) -> anyhow::Result<serde_json::Value> {
    let load = LoadCommand {
        json: true,
        ..load.clone()
    };
    let mut cmd = evdispatch(binary, "load", load.args(), cpus)?;
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = ChildGroup::spawn(cmd, "evdispatch load")?.wait_output()?;
    // Exit 1 with a summary on standard output is a run in which no reply
    // succeeded: a result to record (a server under attack), not a failure.
    let no_reply = out.status.code() == Some(1) && out.stdout.starts_with(b"{");
    if !(out.status.success() || no_reply) {
        bail!(
            "evdispatch load {load} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    load_json(&out.stdout)
}

/// [`run_evdispatch_load`], measured as [`run_wrk`] measures wrk: also the
/// CPU seconds of the whole process (its children's rusage), stopped as
/// hung after `limit_s`.
pub fn run_evdispatch_load_measured(
    binary: &Path,
    load: &LoadCommand,
    cpus: &[usize],
    limit_s: f64,
) -> anyhow::Result<(serde_json::Value, f64)> {
    let load = LoadCommand {
        json: true,
        ..load.clone()
    };
    // Pinned by run_measured.
    let cmd = evdispatch(binary, "load", load.args(), &[])?;
    let (out, cpu_s) = run_measured(cmd, cpus, "evdispatch load", limit_s)?;
    Ok((load_json(out.as_bytes())?, cpu_s))
}

/// Start `BINARY load ARGS` in the background, pinned to `cpus` if given,
/// its output discarded (standard error kept for [`Background::log_tail`]):
/// for load that must run beside a measurement, such as idle connections
/// held open while another tool measures. It runs until stopped.
pub fn spawn_evdispatch_load(
    binary: &Path,
    load: &LoadCommand,
    cpus: &[usize],
) -> anyhow::Result<Background> {
    let mut cmd = evdispatch(binary, "load", load.args(), cpus)?;
    let dir = tempfile::Builder::new().prefix("evd-load-").tempdir()?;
    cmd.stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("stderr.log"))?);
    Ok(Background {
        group: ChildGroup::spawn(cmd, "evdispatch load")?,
        name: format!("evdispatch load {load}"),
        dir,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `cat` ends at once on /dev/null; with its input held open it waits
    /// for end-of-file until the limit stops it, reported as hung.
    #[test]
    fn a_bounded_run_holds_its_input_and_stops_at_its_limit() {
        let mut cat = Command::new("cat");
        cat.stdin(Stdio::null());
        let out = run_bounded(cat, "cat", 60.0, false).unwrap();
        assert!(out.status.success());
        let err = run_bounded(Command::new("cat"), "cat", 1.0, true).unwrap_err();
        assert!(format!("{err:#}").contains("hung"), "{err:#}");
    }

    #[test]
    fn a_load_without_any_reply_is_a_result_and_a_failed_one_an_error() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let fake = |name: &str, script: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, format!("#!/bin/sh\n{script}\n")).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
            p
        };
        let load = LoadCommand::new("http://127.0.0.1:9/");
        // `evdispatch load` exits 1 after printing its summary when no reply succeeded.
        let none = fake("none", "echo '{\"replies\": 0}'; exit 1");
        let v = run_evdispatch_load(&none, &load, &[]).unwrap();
        assert_eq!(v["replies"], 0);
        let bad = fake("bad", "echo 'evdispatch: bad input' >&2; exit 1");
        let e = run_evdispatch_load(&bad, &load, &[]).unwrap_err();
        assert!(e.to_string().contains("bad input"), "{e}");
        let broken = fake("broken", "echo '{\"replies\": 5}'; exit 99");
        assert!(run_evdispatch_load(&broken, &load, &[]).is_err());
    }

    #[test]
    fn a_hung_tool_is_stopped_and_reported() {
        let t0 = std::time::Instant::now();
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & sleep 30"]);
        let err = run_measured(cmd, &[], "sleeper", 1.0).unwrap_err();
        assert!(format!("{err}").contains("hung"), "{err}");
        // Killed with its process group, not waited for.
        assert!(t0.elapsed().as_secs_f64() < 10.0, "{:?}", t0.elapsed());
        let mut ok = Command::new("sh");
        ok.args(["-c", "echo done"]);
        let (out, _) = run_measured(ok, &[], "echo", 5.0).unwrap();
        assert_eq!(out.trim(), "done");
    }

    const WRK: &str = "Running 2s test @ http://127.0.0.1:40000/
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   210.50us   80.25us   3.10ms   92.00%
    Req/Sec    45.10k     1.20k   47.00k    80.00%
  Latency Distribution
     50%  195.00us
     75%  230.00us
     90%  280.00us
     99%  520.00us
  90200 requests in 2.00s, 21.33MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 3
Requests/sec:  45099.50
Transfer/sec:     10.66MB
";

    #[test]
    fn wrk_output() {
        let r = parse_wrk(WRK).unwrap();
        assert_eq!(r.requests, 90200);
        assert_eq!(r.duration_s, 2.0);
        assert_eq!(r.requests_per_sec, 45099.5);
        assert_eq!(r.latency_avg_us, 210.5);
        assert_eq!(r.latency_max_us, 3100.0);
        assert_eq!(r.percentiles[3], (99.0, 520.0));
        assert_eq!((r.errors_read, r.errors_timeout, r.non_2xx_3xx), (2, 1, 3));
        assert!(parse_wrk("garbage").is_err());
    }

    const H2LOAD: &str = "starting benchmark...
spawning thread #0: 10 total client(s). Timing-based test with 0s of warm-up time and 2s of main duration for measurements.
Application protocol: h2c
Main benchmark duration is over for thread #0. Stopping all clients.

finished in 2.01s, 11101.00 req/s, 12.17MB/s
requests: 22202 total, 22302 started, 22202 done, 22201 succeeded, 1 failed, 0 errored, 0 timeout
status codes: 22201 2xx, 0 3xx, 0 4xx, 0 5xx
traffic: 24.35MB (25532790) total, 2.29MB (2397816) headers (space savings 39.33%), 21.68MB (22734848) data
                     min         max         mean         sd        +/- sd
time for request:      117us     43.58ms      8.73ms      8.80ms    82.57%
";

    #[test]
    fn h2load_output() {
        let r = parse_h2load(H2LOAD).unwrap();
        assert_eq!(r.duration_s, 2.01);
        assert_eq!(
            (r.total, r.started, r.done, r.succeeded, r.failed),
            (22202, 22302, 22202, 22201, 1)
        );
        assert_eq!((r.errored, r.timeout), (0, 0));
        let ms = parse_h2load(&H2LOAD.replace("2.01s", "480.5ms")).unwrap();
        assert!((ms.duration_s - 0.4805).abs() < 1e-9, "{}", ms.duration_s);
        // A run cut short prints no totals.
        assert!(parse_h2load("starting benchmark...\nfinished in 1.00s, 0 req/s").is_err());
        assert_eq!(
            h2load_args(&H2loadArgs {
                url: "http://127.0.0.1:1/".into(),
                threads: 1,
                clients: 10,
                max_streams: 10,
                duration_s: 4.2,
                cpus: vec![1],
            })
            .join(" "),
            "-t 1 -c 10 -m 10 -D 5 http://127.0.0.1:1/"
        );
    }

    const HTTPERF: &str = "httperf --hog --client=0/1 --server=127.0.0.1 --port=40000 --uri=/ --rate=500 --send-buffer=4096 --recv-buffer=16384 --num-conns=1500 --num-calls=1
Maximum connect burst length: 1

Total: connections 1500 requests 1500 replies 1499 test-duration 2.999 s

Connection rate: 500.2 conn/s (2.0 ms/conn, <=3 concurrent connections)
Connection time [ms]: min 0.1 avg 0.2 max 1.5 median 0.5 stddev 0.1
Connection time [ms]: connect 0.1
Connection length [replies/conn]: 1.000

Request rate: 500.2 req/s (2.0 ms/req)
Request size [B]: 62.0

Reply rate [replies/s]: min 499.8 avg 500.0 max 500.2 stddev 0.3 (2 samples)
Reply time [ms]: response 0.1 transfer 0.0
Reply size [B]: header 238.0 content 1024.0 footer 0.0 (total 1262.0)
Reply status: 1xx=0 2xx=1499 3xx=0 4xx=0 5xx=0

CPU time [s]: user 0.80 system 2.10 (user 26.7% system 70.0% total 96.7%)
Net I/O: 646.2 KB/s (5.3*10^6 bps)

Errors: total 1 client-timo 1 socket-timo 0 connrefused 0 connreset 0
Errors: fd-unavail 0 addrunavail 0 ftab-full 0 other 0
";

    #[test]
    fn httperf_output() {
        let r = parse_httperf(HTTPERF).unwrap();
        assert_eq!((r.connections, r.requests, r.replies), (1500, 1500, 1499));
        assert_eq!(r.test_duration_s, 2.999);
        assert_eq!((r.reply_rate_avg, r.reply_rate_samples), (500.0, 2));
        assert_eq!(r.status[1], 1499);
        assert_eq!((r.errors_total, r.client_timo), (1, 1));
        assert!((r.cpu_s - 2.9).abs() < 1e-9);
        assert!((r.replies_per_sec() - 1499.0 / 2.999).abs() < 1e-9);
        assert!(parse_httperf("nothing").is_err());
    }

    #[test]
    fn units() {
        assert_eq!(with_unit("1.5ms"), Some(1500.0));
        assert_eq!(with_unit("2.00s"), Some(2e6));
        assert_eq!(with_unit("40.00k"), Some(40000.0));
        assert_eq!(with_unit("1KB"), Some(1024.0));
        assert_eq!(with_unit("123.45us"), Some(123.45));
        assert_eq!(with_unit("1m"), Some(60e6));
        assert_eq!(with_unit("x"), None);
    }
}
