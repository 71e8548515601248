//! The command line checked and resolved into a [`Config`], one part at a
//! time: the target, the request mix (with httperf's session log), the
//! workloads (closed loop, open loop over persistent connections,
//! sessions, and the idle, inactive and slow clients), the window, the
//! headers, and where the workers run. Everything that can be known before
//! the run is checked here; reachability is checked by
//! [`Config::preflight`] (which also picks the address).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::{anyhow, bail};

use super::{source_addr, Config, HttpVersion, Rate, DEFAULT_CONNECTIONS};
use crate::args::{si, LoadArgs};
use crate::target::{self, Resolved, WeightedUrl};
use crate::wsesslog::SessionLog;

/// `evdispatch load`'s arguments as clap reads them from a list.
#[derive(clap::Parser)]
#[command(name = "evdispatch load", no_binary_name = true)]
pub(super) struct CommandLine {
    #[command(flatten)]
    pub(super) args: LoadArgs,
}

impl Config {
    /// Build a configuration from `evdispatch load`'s arguments (without
    /// the program and subcommand names), for programs and tests that run
    /// the generator in-process: `Config::from_command_line(["http://127.0.0.1:8080/", "--rate", "100", "--sessions", "300"])`.
    pub fn from_command_line<I, S>(args: I) -> anyhow::Result<Config>
    where
        I: IntoIterator<Item = S>,
        S: Into<std::ffi::OsString> + Clone,
    {
        use clap::Parser;
        let cl = CommandLine::try_parse_from(args).map_err(|e| anyhow!("{e}"))?;
        Config::from_args(&cl.args)
    }

    /// Check and resolve the command line. Everything that can be known
    /// before the run is checked here; reachability is checked by
    /// [`Config::preflight`] (which also picks the address).
    pub fn from_args(a: &LoadArgs) -> anyhow::Result<Config> {
        let place = Place::of(a)?;
        let target = place.resolved.addresses[0];
        let mix = Mix::of(a, &place.url)?;
        let w = Workloads::of(a, mix.sessions)?;
        let (duration_s, run_to_end) = window(a, w.sessions, w.rate)?;
        let t = Times::of(a)?;
        let headers = headers(a, mix.has_bodies(), place.authorization)?;
        let cpus = match &a.cpu {
            Some(list) => {
                evdispatch_host::parse_cpu_list(list).map_err(|e| anyhow!("--cpu: {e}"))?
            }
            None => Vec::new(),
        };
        let server_pids = server_pids(&a.server_pid)?;
        let mechanism = mechanism(&a.mechanism)?;
        let source_addrs = source_addrs(a, target)?;
        let cfg = Config {
            url: place.url_text,
            target,
            addresses: place.resolved.addresses,
            tls: place.resolved.tls,
            method: a.net.method.clone(),
            body_file: a.net.body.clone(),
            body_bytes: mix.body.as_ref().map(|b| b.len() as u64),
            body: mix.body,
            urls: mix.urls,
            wsesslog: mix.wsesslog,
            host: place.resolved.host_header,
            path: place.resolved.path,
            rate: w.rate,
            arrival: a.arrival,
            duration_s,
            run_to_end,
            warmup_s: t.warmup_s,
            timeout_s: t.timeout_s,
            sessions: w.sessions,
            calls: a.calls,
            persistent: w.persistent,
            inactive: a.inactive.unwrap_or(0),
            inactive_send: a.inactive_send,
            idle: a.idle.unwrap_or(0),
            slow: a.slow.unwrap_or(0),
            slow_bytes: a.slow_bytes,
            slow_interval_s: t.slow_interval_s,
            slow_ramp_s: t.slow_ramp_s,
            procs: a.procs,
            server_pids,
            cpus,
            headers,
            source_addrs,
            mechanism,
            engine: a.engine,
            http: http_version(a)?,
            max_streams: a.max_streams,
            window_bits: a.window_bits,
            connection_window_bits: a.connection_window_bits,
            interval_s: t.interval_s,
            slot_tolerance_ms: a.slot_tolerance_ms,
            seed: a.seed,
            connect_burst: a.connect_burst.max(1),
        };
        cfg.check_capacity()?;
        Ok(cfg)
    }
}

/// `--http2`, `--http1.1` or `--http`, and `--max-streams` with it.
fn http_version(a: &LoadArgs) -> anyhow::Result<HttpVersion> {
    let v = if a.http2 {
        HttpVersion::Http2
    } else if a.http1_1 {
        HttpVersion::Http1
    } else {
        a.http.unwrap_or_default()
    };
    if a.max_streams == 0 {
        bail!("--max-streams must be at least 1");
    }
    if a.max_streams > 1 && v == HttpVersion::Http1 {
        bail!("--max-streams {} needs HTTP/2 (--http2): HTTP/1.1 carries one request at a time per connection", a.max_streams);
    }
    Ok(v)
}

/// Where the load goes: the URL as shown (credentials hidden), its
/// credentials as an `Authorization` value, and the addresses resolved.
struct Place {
    url_text: String,
    authorization: Option<String>,
    url: url::Url,
    resolved: Resolved,
}

impl Place {
    fn of(a: &LoadArgs) -> anyhow::Result<Place> {
        let given = a
            .url
            .as_deref()
            .ok_or_else(|| anyhow!("give the URL to load, e.g. http://127.0.0.1:8080/"))?;
        let (url_text, authorization) = target::userinfo(given);
        let mut url = url::Url::parse(given).map_err(|e| {
            anyhow!(
                "malformed URL '{url_text}': {e} (expected e.g. http://127.0.0.1:8080/index.html)"
            )
        })?;
        // Shown in errors as in the summary.
        if url.password().is_some() {
            let _ = url.set_password(Some("***"));
        } else if !url.username().is_empty() {
            let _ = url.set_username("***");
        }
        let mut resolved = target::resolve(&url_text, &url, &a.net)?;
        if a.source_addrs > 1 {
            // Sources in 127.0.0.0/8 reach only IPv4 loopback addresses.
            let all = std::mem::take(&mut resolved.addresses);
            resolved.addresses = all
                .iter()
                .copied()
                .filter(|t| t.is_ipv4() && t.ip().is_loopback())
                .collect();
            if resolved.addresses.is_empty() {
                bail!(
                    "--source-addrs spreads the connections over 127.0.0.0/8: it needs an IPv4 \
                     loopback target ({} resolved to {all:?})",
                    url.host_str().unwrap_or("")
                );
            }
        }
        Ok(Place {
            url_text,
            authorization,
            url,
            resolved,
        })
    }
}

/// What is requested: `--method`, `--urls`, `--body`, or httperf's session
/// log (`--wsesslog`), which also gives the number of sessions.
struct Mix {
    wsesslog: Option<SessionLog>,
    urls: Vec<WeightedUrl>,
    body: Option<Arc<Vec<u8>>>,
    /// `--sessions`, or the session log's count.
    sessions: Option<u64>,
}

impl Mix {
    fn of(a: &LoadArgs, url: &url::Url) -> anyhow::Result<Mix> {
        target::check_method(&a.net.method)?;
        let wsesslog = a
            .net
            .wsesslog
            .as_deref()
            .map(SessionLog::from_option)
            .transpose()?;
        let urls = match &a.net.urls {
            Some(f) => target::read_urls(f, url)?,
            None => Vec::new(),
        };
        let body = a
            .net
            .body
            .as_deref()
            .map(target::read_body)
            .transpose()?
            .map(Arc::new);
        let mut sessions = a.sessions;
        if let Some(log) = &wsesslog {
            if a.sessions.is_some() {
                bail!("--wsesslog N,X,FILE gives the number of sessions (N): leave out --sessions");
            }
            if a.calls != 1 || !urls.is_empty() || body.is_some() || a.net.method != "GET" {
                bail!("--wsesslog's file says what each session requests: leave out --calls, --urls, --body and --method");
            }
            sessions = Some(log.sessions);
        }
        Ok(Mix {
            wsesslog,
            urls,
            body,
            sessions,
        })
    }

    /// Some request carries a body (`--body`, or `contents=` in the log).
    fn has_bodies(&self) -> bool {
        self.body.is_some()
            || self.wsesslog.as_ref().is_some_and(|l| {
                l.log
                    .iter()
                    .flatten()
                    .any(|b| b.requests.iter().any(|r| r.contents.is_some()))
            })
    }
}

/// The workloads with a rate: the rate, the persistent (or closed-loop)
/// connections and the sessions.
struct Workloads {
    rate: Option<Rate>,
    persistent: u64,
    sessions: Option<u64>,
}

impl Workloads {
    fn of(a: &LoadArgs, sessions: Option<u64>) -> anyhow::Result<Workloads> {
        let no_workload = sessions.is_none()
            && a.persistent.is_none()
            && a.inactive.is_none()
            && a.idle.is_none()
            && a.slow.is_none();
        let rate = rate(a, sessions, no_workload)?;
        let persistent = match connections(a, rate, no_workload) {
            Some(c) => closed_or_wrk2(a, c, rate, sessions)?,
            None => a.persistent.unwrap_or(0),
        };
        let w = Workloads {
            rate,
            persistent,
            sessions,
        };
        w.check(a)?;
        Ok(w)
    }

    /// A rate where there is an active workload, none where there is not,
    /// and at least one workload.
    fn check(&self, a: &LoadArgs) -> anyhow::Result<()> {
        let active = self.sessions.is_some() || self.persistent > 0;
        let passive = a.idle.unwrap_or(0) + a.inactive.unwrap_or(0) + a.slow.unwrap_or(0);
        match self.rate {
            None if active => bail!(
                "--sessions and --persistent need --rate (requests per second, or 'max' for closed loop)"
            ),
            Some(_) if !active => {
                if passive == 0 {
                    bail!("--rate given but no workload: add --sessions N, --persistent C or --connections C")
                }
                bail!("--rate applies to --sessions or --persistent; the idle, inactive and slow workloads have no rate")
            }
            Some(Rate::Max) if self.sessions.is_some() && a.persistent.is_some() => {
                bail!("--rate max runs one closed loop: give --sessions (with --connections for how many at once) or --persistent, not both")
            }
            _ => {}
        }
        if self.rate.is_none() && passive == 0 {
            bail!("no workload given: use --sessions N, --persistent C, --rate max --connections C, --inactive I, --idle I or --slow S");
        }
        if a.calls == 0 {
            bail!("--calls must be at least 1");
        }
        if a.procs == 0 {
            bail!("--procs must be at least 1");
        }
        Ok(())
    }
}

/// `--rate`: requests (or sessions) per second with wrk's SI suffixes, or
/// `max`; without it, the closed loop of the default load (wrk's) or of
/// `-c` alone.
fn rate(a: &LoadArgs, sessions: Option<u64>, no_workload: bool) -> anyhow::Result<Option<Rate>> {
    Ok(match a.rate.as_deref() {
        // The default load (wrk's): closed loop, over -c connections
        // (DEFAULT_CONNECTIONS without -c), for the default 10 s.
        None if no_workload => Some(Rate::Max),
        None if a.connections.is_some() && sessions.is_none() && a.persistent.is_none() => {
            Some(Rate::Max)
        }
        None => None,
        Some("max") => Some(Rate::Max),
        Some(r) => {
            let (n, scale) = si(r);
            let v = n.parse::<f64>().map(|v| v * scale as f64).map_err(|_| {
                anyhow!("--rate '{r}': give requests per second (e.g. 1000 or 2k) or 'max'")
            })?;
            if !(v.is_finite() && v > 0.0) {
                bail!("--rate must be positive, or 'max'");
            }
            Some(Rate::PerSecond(v))
        }
    })
}

/// `-c`, or the default load's connections: wrk's closed loop, or with an
/// open-loop `-R`, wrk2's rate over persistent connections.
fn connections(a: &LoadArgs, rate: Option<Rate>, no_workload: bool) -> Option<u64> {
    match (a.connections, rate) {
        (None, Some(Rate::Max)) if no_workload => Some(DEFAULT_CONNECTIONS),
        // -R R -c C, as wrk2: R requests/s over C persistent connections.
        (None, Some(Rate::PerSecond(_))) if no_workload => Some(DEFAULT_CONNECTIONS),
        (c, _) => c,
    }
}

/// `c` connections as the closed loop's (`--rate max`) or, with an
/// open-loop rate, wrk2's persistent connections sharing it.
fn closed_or_wrk2(
    a: &LoadArgs,
    c: u64,
    rate: Option<Rate>,
    sessions: Option<u64>,
) -> anyhow::Result<u64> {
    let open_loop = matches!(rate, Some(Rate::PerSecond(_)));
    if open_loop && sessions.is_some() {
        bail!("--connections with an open-loop --rate are persistent connections; sessions open their own (leave out --connections, or use --rate max)");
    }
    if !open_loop && rate != Some(Rate::Max) {
        bail!("--connections is for --rate max (closed loop); for an open-loop rate over persistent connections use --persistent");
    }
    if a.persistent.is_some_and(|p| p != c) {
        let with = if open_loop {
            "an open-loop --rate"
        } else {
            "--rate max"
        };
        bail!("give --connections or --persistent with {with}, not both");
    }
    if u64::from(a.procs) > c {
        // wrk's words: every thread needs a connection.
        bail!(
            "number of connections must be >= threads (-c {c}, -t {})",
            a.procs
        );
    }
    Ok(c)
}

/// The measured window and whether the run lasts until its sessions end:
/// `--duration`; without it, `--sessions N` (or `--wsesslog`) runs to the
/// last session's end (httperf's test); else 10 s.
fn window(a: &LoadArgs, sessions: Option<u64>, rate: Option<Rate>) -> anyhow::Result<(f64, bool)> {
    let run_to_end = a.duration.is_none() && sessions.is_some_and(|n| n > 0);
    let duration_s = match (&a.duration, sessions, rate) {
        (Some(d), _, _) => parse_secs("--duration", d)?,
        (None, Some(n), Some(Rate::PerSecond(r))) if n > 0 => n as f64 / r,
        _ if run_to_end => 0.0,
        _ => 10.0,
    };
    if duration_s <= 0.0 && !run_to_end {
        bail!("--duration must be positive");
    }
    Ok((duration_s, run_to_end))
}

/// The `--header`s, checked; a `Transfer-Encoding` over a request body
/// refused; the URL's credentials as `Authorization` unless one is given.
fn headers(
    a: &LoadArgs,
    bodies: bool,
    authorization: Option<String>,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut headers = Vec::new();
    for h in &a.header {
        let (n, v) = h
            .split_once(':')
            .ok_or_else(|| anyhow!("--header '{h}' is not NAME:VALUE"))?;
        let n = n.trim();
        if n.is_empty() || n.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
            bail!("--header '{h}': '{n}' is not a valid header name");
        }
        if v.bytes().any(|b| b == b'\r' || b == b'\n') {
            bail!("--header '{h}': the value may not contain a line break");
        }
        headers.push((n.to_string(), v.trim().to_string()));
    }
    // A body goes out as it is, framed by its Content-Length: under the
    // user's Transfer-Encoding (which replaces that) the server would
    // read it as chunks, or to the close.
    if bodies
        && headers
            .iter()
            .any(|(n, v)| n.eq_ignore_ascii_case("transfer-encoding") && !v.is_empty())
    {
        bail!(
            "--header Transfer-Encoding with a request body (--body, or contents= in \
             --wsesslog): the body is sent as it is, with its Content-Length, not \
             chunk-encoded; leave out the header"
        );
    }
    // The URL's user and password, as curl sends them, unless the user
    // gave the header.
    if let Some(value) = authorization {
        if !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("authorization"))
        {
            headers.push(("Authorization".to_string(), value));
        }
    }
    Ok(headers)
}

/// `--server-pid PID[,PID…]` (repeatable), each a running process.
fn server_pids(given: &[String]) -> anyhow::Result<Vec<u32>> {
    given
        .iter()
        .flat_map(|s| s.split(','))
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            let pid: u32 = s
                .trim()
                .parse()
                .map_err(|_| anyhow!("--server-pid '{s}' is not a process id"))?;
            if !std::path::Path::new(&format!("/proc/{pid}/stat")).exists() {
                bail!("--server-pid {pid}: no such process");
            }
            Ok(pid)
        })
        .collect()
}

/// `--mechanism`, by its canonical name.
fn mechanism(name: &str) -> anyhow::Result<String> {
    let m: evdispatch::Mechanism = name
        .parse()
        .map_err(|e: evdispatch::UnknownMechanism| anyhow!("--mechanism: {e}"))?;
    Ok(m.name().to_string())
}

/// The source addresses: `--source-addr` (of the target's family), or
/// `--source-addrs N` spread over 127.0.0.0/8, or none (the kernel picks).
fn source_addrs(a: &LoadArgs, target: SocketAddr) -> anyhow::Result<Vec<IpAddr>> {
    let given = &a.results.source_addr;
    if a.source_addrs == 0 {
        bail!("--source-addrs must be at least 1");
    }
    if !given.is_empty() && a.source_addrs > 1 {
        bail!("give --source-addr ADDR (repeatable) or --source-addrs N, not both");
    }
    if let Some(bad) = given.iter().find(|s| s.is_ipv4() != target.is_ipv4()) {
        bail!("--source-addr {bad}: the target {target} is of the other address family");
    }
    Ok(if !given.is_empty() {
        given.clone()
    } else if a.source_addrs > 1 {
        (0..a.source_addrs).map(source_addr).collect()
    } else {
        Vec::new()
    })
}

fn parse_secs(what: &str, text: &str) -> anyhow::Result<f64> {
    evdispatch_host::parse_duration(text)
        .map(|d| d.as_secs_f64())
        .map_err(|e| anyhow!("{what}: {e}"))
}

/// The other times of the run, and the slow clients' step.
struct Times {
    warmup_s: f64,
    timeout_s: f64,
    interval_s: f64,
    slow_interval_s: f64,
    slow_ramp_s: f64,
}

impl Times {
    fn of(a: &LoadArgs) -> anyhow::Result<Times> {
        let warmup_s = parse_secs("--warmup", &a.warmup)?;
        let timeout_s = parse_secs("--timeout", &a.timeout)?;
        if timeout_s <= 0.0 {
            bail!("--timeout must be positive");
        }
        let interval_s = parse_secs("--interval", &a.interval)?;
        if interval_s < 0.01 {
            bail!("--interval must be at least 10ms");
        }
        let slow_interval_s = parse_secs("--slow-interval", &a.slow_interval)?;
        let slow_ramp_s = parse_secs("--slow-ramp", &a.slow_ramp)?;
        if a.slow_bytes == 0 {
            bail!("--slow-bytes must be at least 1");
        }
        Ok(Times {
            warmup_s,
            timeout_s,
            interval_s,
            slow_interval_s,
            slow_ramp_s,
        })
    }
}
