//! The run's results: [`Summary`] (the `--json` contract) and the
//! httperf-like human summary.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::config::{Config, Rate};
use crate::record::{decode, encode, new_histogram, Merged};

/// Version of the JSON layout; bumped when a field changes meaning or goes away.
pub const SCHEMA: &str = "evdispatch-load/1";

/// Percentiles of a histogram, µs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min: u64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Median.
    pub p50: u64,
    /// 90th percentile.
    pub p90: u64,
    /// 99th percentile.
    pub p99: u64,
    /// 99.9th percentile.
    pub p999: u64,
    /// Largest.
    pub max: u64,
    /// The percentile table (the `--latency` one): [`PERCENTILES`], in order.
    #[serde(default)]
    pub percentiles: Vec<Percentile>,
}

/// One row of the percentile table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentile {
    /// The percentile, 0–100 (100 is the largest value).
    pub percentile: f64,
    /// The value there, µs.
    pub us: u64,
}

/// The percentiles of the table, as wrk2 `--latency` prints them.
pub const PERCENTILES: [f64; 8] = [50.0, 75.0, 90.0, 99.0, 99.9, 99.99, 99.999, 100.0];

impl Latency {
    /// Summarise a histogram (all zero when it is empty).
    pub fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            count: h.len(),
            min: h.min(),
            mean: h.mean(),
            stddev: h.stdev(),
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p999: h.value_at_quantile(0.999),
            max: h.max(),
            percentiles: PERCENTILES
                .iter()
                .map(|&p| Percentile {
                    percentile: p,
                    us: h.value_at_quantile(p / 100.0),
                })
                .collect(),
        }
    }
}

/// A number as wrk's units.c prints one: `n` in `base`, moved up through
/// `units` (each `scale` times the one before) while it is at least 0.85
/// of the next step, never to the last of them; two decimals.
fn wrk_units(n: f64, scale: f64, base: &str, units: &[&str]) -> String {
    let (mut amount, mut unit) = (n, base);
    for u in &units[..units.len() - 1] {
        if amount < scale * 0.85 {
            break;
        }
        amount /= scale;
        unit = u;
    }
    format!("{amount:.2}{unit}")
}

/// A duration in µs the way wrk prints one: `849.00us`, `0.85ms`, `2.03s`,
/// `1.50m`.
pub fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        wrk_units(us / 1e6, 60.0, "s", &["m", "h"])
    } else {
        wrk_units(us, 1000.0, "us", &["ms", "s"])
    }
}

/// A byte count the way wrk prints one, before its `B`: `512.00`,
/// `1.17M` (binary units).
pub fn fmt_binary(bytes: f64) -> String {
    wrk_units(bytes, 1024.0, "", &["K", "M", "G", "T", "P"])
}

/// The histograms of the run: those a worker records and the parent
/// merges, and in the `--json` output each in HdrHistogram's V2
/// serialization, base64 (what `evdispatch load merge` adds up).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Histograms<H = String> {
    /// Corrected latency, µs.
    pub latency: H,
    /// Uncorrected latency, µs.
    pub latency_uncorrected: H,
    /// Connect time, µs.
    pub connect: H,
    /// TLS handshake time, µs (empty in outputs of versions without TLS).
    #[serde(default)]
    pub tls_handshake: H,
}

impl<H> Histograms<H> {
    /// `f` of each histogram.
    pub fn map<T>(&self, mut f: impl FnMut(&H) -> T) -> Histograms<T> {
        Histograms {
            latency: f(&self.latency),
            latency_uncorrected: f(&self.latency_uncorrected),
            connect: f(&self.connect),
            tls_handshake: f(&self.tls_handshake),
        }
    }
}

/// Four empty histograms ([`crate::record::new_histogram`]).
impl Default for Histograms<Histogram<u64>> {
    fn default() -> Self {
        Histograms {
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
            connect: new_histogram(),
            tls_handshake: new_histogram(),
        }
    }
}

/// Four empty strings (no histograms).
impl Default for Histograms {
    fn default() -> Self {
        Histograms::<Histogram<u64>>::default().map(|_| String::new())
    }
}

/// One `--fail-if` threshold, checked after the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckResult {
    /// The expression as given.
    pub expr: String,
    /// The value measured (in the unit of the expression: µs for latencies,
    /// % for `errors` given in %, replies/s for `reply_rate`, else a count).
    pub measured: f64,
    /// The value it was compared with, in the same unit.
    pub limit: f64,
    /// True when the measured value meets the threshold.
    pub pass: bool,
}

/// Reply rate per interval, as httperf reports it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateIntervals {
    /// Length of one sample, seconds.
    pub interval_s: f64,
    /// Replies per second in each full interval of the window.
    pub samples: Vec<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Mean of the samples.
    pub avg: f64,
    /// Largest sample.
    pub max: f64,
    /// Standard deviation of the samples.
    pub stddev: f64,
}

/// Where every connection went.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    /// Connection attempts.
    pub attempted: u64,
    /// Established.
    pub established: u64,
    /// Attempts that failed (their cause is in `errors`).
    pub failed: u64,
    /// Established connections the generator closed.
    pub closed_by_client: u64,
    /// Established connections the server closed.
    pub closed_by_server: u64,
    /// Open when the run ended.
    pub open_at_end: u64,
    /// Most open at once (see `connections_peak`).
    pub peak: u64,
    /// `attempted == established + failed` and `established ==
    /// closed_by_client + closed_by_server + open_at_end`.
    pub accounted: bool,
}

/// Server CPU over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerCpu {
    /// Processes sampled: the `--server-pid` ones and their children.
    pub pids: Vec<u32>,
    /// CPU seconds used in the window (user + system).
    pub cpu_s: f64,
    /// `cpu_s / window × 100`: 100 is one core.
    pub pct: f64,
}

/// Everything a run measured: the `--json` output. See the crate docs for
/// the contract.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// [`SCHEMA`].
    pub schema: String,
    /// The configuration (command line resolved).
    pub config: Config,
    /// Length of the measured window, seconds.
    pub duration_s: f64,
    /// Requests of the active workloads whose slot was in the window and that were sent.
    pub requests: u64,
    /// Complete replies to those requests.
    pub replies: u64,
    /// Replies received inside the window.
    pub replies_in_window: u64,
    /// `replies_in_window / duration_s`.
    pub reply_rate: f64,
    /// Reply rate per interval.
    pub rate_intervals: RateIntervals,
    /// Latency from the intended send time (coordinated-omission corrected), µs.
    pub latency_us: Latency,
    /// Latency from the actual send time, µs.
    pub latency_uncorrected_us: Latency,
    /// Connect time of connections established in the window, µs.
    pub connect_us: Latency,
    /// TLS handshake time of handshakes completed in the window, µs (`count`
    /// 0 for http).
    #[serde(default)]
    pub tls_handshake_us: Latency,
    /// Slots whose request could not go out on time.
    pub missed_slots: u64,
    /// Measured slots never sent (still queued at the end).
    pub unsent_at_end: u64,
    /// Errors by cause, all workloads.
    pub errors: BTreeMap<String, u64>,
    /// Sum of `errors`.
    pub errors_total: u64,
    /// Errors by workload, then cause.
    pub errors_by_workload: BTreeMap<String, BTreeMap<String, u64>>,
    /// Reply status classes.
    pub status: BTreeMap<String, u64>,
    /// Bytes written.
    pub bytes_sent: u64,
    /// Bytes read.
    pub bytes_received: u64,
    /// Connection accounting.
    pub connections: Connections,
    /// Most connections open at once.
    pub connections_peak: u64,
    /// Inactive and idle connections reopened after the server closed them (whole run).
    pub reopens: u64,
    /// Reopens inside the window.
    pub reopens_in_window: u64,
    /// `reopens_in_window / duration_s`.
    pub reopen_rate: f64,
    /// Connections that ended to be replaced by a new one (persistent,
    /// closed loop, sessions between calls), counted when they end, also
    /// when the drain or the window's end means no new one is opened: see
    /// the crate docs.
    pub reconnects: u64,
    /// Replies to slow clients.
    pub slow_replies: u64,
    /// Replies outside the measurement (warm-up, idle connections' first request).
    pub unmeasured_replies: u64,
    /// Sessions started that still had calls to make when the run ended
    /// (cut by `--duration`, or by Ctrl-C or `SIGTERM`; with `run_to_end`, 0
    /// unless the run was interrupted).
    #[serde(default)]
    pub sessions_unfinished: u64,
    /// Generator CPU over the window, % of one core, all processes.
    pub generator_cpu_pct: f64,
    /// Per worker process.
    pub generator_cpu_per_process_pct: Vec<f64>,
    /// Cores the generator could use (its processes, bounded by the CPUs allowed).
    pub generator_cores: u32,
    /// True when a worker used more than 85% of its core or all of them
    /// more than 85% of their cores: the figure may be the generator's limit.
    pub generator_saturated: bool,
    /// Server CPU over the window, % of one core (`null` without `--server-pid`).
    pub server_cpu_pct: Option<f64>,
    /// Details of the server CPU sample.
    pub server_cpu: Option<ServerCpu>,
    /// Seconds spent opening the long-lived connections before the run.
    pub setup_s: f64,
    /// Anything the reader must know (generator saturation first).
    pub warnings: Vec<String>,
    /// Ctrl-C or `SIGTERM` stopped the run: the figures cover the window up
    /// to that moment.
    #[serde(default)]
    pub interrupted: bool,
    /// The signal that stopped it: `"SIGINT"` (Ctrl-C) or `"SIGTERM"`;
    /// `null` when none did (and in outputs of earlier versions).
    #[serde(default)]
    pub interrupted_by: Option<String>,
    /// Wall-clock start of the measured window, Unix seconds (0 when no
    /// window began).
    #[serde(default)]
    pub window_start_unix_s: f64,
    /// Its end, Unix seconds (`window_start_unix_s + duration_s`).
    #[serde(default)]
    pub window_end_unix_s: f64,
    /// The histograms themselves, so that runs merge without loss.
    #[serde(default)]
    pub histograms: Histograms,
    /// The `--fail-if` thresholds and how they came out.
    #[serde(default)]
    pub checks: Vec<CheckResult>,
}

/// `n` per second over `secs`: 0 over an empty window (one that ended as
/// it began: every session over during the warm-up, an early Ctrl-C).
pub(crate) fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// An `Authorization` value as results show it: its scheme and `***`
/// (`Bearer ***`), or `***` alone when it is one token (a raw API key has
/// no scheme to keep).
fn redacted(value: &str) -> String {
    match value.trim().split_once([' ', '\t']) {
        Some((scheme, _)) => format!("{scheme} ***"),
        None => "***".to_string(),
    }
}

fn rate_intervals(replies: &[u64], interval_s: f64) -> RateIntervals {
    let samples: Vec<f64> = replies.iter().map(|&n| n as f64 / interval_s).collect();
    if samples.is_empty() {
        return RateIntervals {
            interval_s,
            ..Default::default()
        };
    }
    let n = samples.len() as f64;
    let avg = samples.iter().sum::<f64>() / n;
    // Sample variance (one sample: 0).
    let var = samples.iter().map(|s| (s - avg).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    RateIntervals {
        interval_s,
        min: samples.iter().copied().fold(f64::INFINITY, f64::min),
        max: samples.iter().copied().fold(0.0, f64::max),
        avg,
        stddev: var.sqrt(),
        samples,
    }
}

impl Summary {
    /// Build the summary from the merged worker records.
    pub fn new(config: &Config, m: Merged, server_cpu: Option<ServerCpu>) -> Summary {
        let c = &m.counts;
        let d = if m.interrupted || config.run_to_end {
            m.window_s
        } else {
            config.duration_s
        };
        let mut config = config.clone();
        if config.run_to_end {
            config.duration_s = d;
        }
        // Credentials never reach a results file.
        for (name, value) in &mut config.headers {
            if ["authorization", "proxy-authorization"]
                .iter()
                .any(|a| name.eq_ignore_ascii_case(a))
            {
                *value = redacted(value);
            }
        }
        let mut errors: BTreeMap<String, u64> = BTreeMap::new();
        for causes in m.errors.values() {
            crate::record::add_counts(&mut errors, causes);
        }
        let errors_total = errors.values().sum();
        let connections = Connections {
            attempted: c.conn_attempted,
            established: c.conn_established,
            failed: c.conn_failed,
            closed_by_client: c.conn_closed_by_client,
            closed_by_server: c.conn_closed_by_server,
            open_at_end: c.conn_open_at_end,
            peak: c.conn_peak,
            accounted: c.conn_attempted == c.conn_established + c.conn_failed
                && c.conn_established
                    == c.conn_closed_by_client + c.conn_closed_by_server + c.conn_open_at_end,
        };
        let allowed = if config.cpus.is_empty() {
            evdispatch_host::available_cpus()
        } else {
            config.cpus.iter().collect::<BTreeSet<_>>().len()
        };
        let cores = allowed.min(config.procs as usize).max(1) as u32;
        let generator_cpu_pct: f64 = m.cpu_pct.iter().sum();
        let saturated =
            m.cpu_pct.iter().any(|&p| p > 85.0) || generator_cpu_pct > 85.0 * cores as f64;
        let mut warnings = Vec::new();
        if saturated {
            warnings.push(format!(
                "GENERATOR SATURATED: it used {generator_cpu_pct:.0}% of a core over {cores} core(s) \
                 (per process: {}); the figures may be the generator's limit, not the server's",
                m.cpu_pct
                    .iter()
                    .map(|p| format!("{p:.0}%"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !connections.accounted {
            warnings.push(format!(
                "connection accounting does not add up: {connections:?}"
            ));
        }
        warnings.extend(
            m.warnings
                .iter()
                .filter(|w| !w.contains("% of a core"))
                .cloned(),
        );
        Summary {
            schema: SCHEMA.to_string(),
            duration_s: d,
            requests: c.requests,
            replies: c.replies,
            replies_in_window: c.replies_in_window,
            reply_rate: per_s(c.replies_in_window, d),
            rate_intervals: rate_intervals(&m.interval_replies, config.interval_s),
            latency_us: Latency::of(&m.histograms.latency),
            latency_uncorrected_us: Latency::of(&m.histograms.latency_uncorrected),
            connect_us: Latency::of(&m.histograms.connect),
            tls_handshake_us: Latency::of(&m.histograms.tls_handshake),
            missed_slots: c.missed_slots,
            unsent_at_end: c.unsent_at_end,
            errors,
            errors_total,
            errors_by_workload: m.errors.clone(),
            status: m.status.clone(),
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            connections_peak: connections.peak,
            connections,
            reopens: c.reopens,
            reopens_in_window: c.reopens_in_window,
            reopen_rate: per_s(c.reopens_in_window, d),
            reconnects: c.reconnects,
            slow_replies: c.slow_replies,
            unmeasured_replies: c.unmeasured_replies,
            sessions_unfinished: c.sessions_unfinished,
            generator_cpu_pct,
            generator_cpu_per_process_pct: m.cpu_pct.clone(),
            generator_cores: cores,
            generator_saturated: saturated,
            server_cpu_pct: server_cpu.as_ref().map(|s| s.pct),
            server_cpu,
            setup_s: m.setup_s,
            warnings,
            interrupted: m.interrupted,
            interrupted_by: m.signal.clone().filter(|_| m.interrupted),
            window_start_unix_s: m.window_start_unix_s,
            window_end_unix_s: if m.window_start_unix_s > 0.0 {
                m.window_start_unix_s + d
            } else {
                0.0
            },
            histograms: m.histograms.map(|h| encode(h).unwrap_or_default()),
            checks: Vec::new(),
            config,
        }
    }

    /// The histograms carried in `histograms`, decoded: corrected,
    /// uncorrected, connect.
    pub fn decode_histograms(&self) -> anyhow::Result<[Histogram<u64>; 3]> {
        let h = &self.histograms;
        if h.latency.is_empty() {
            anyhow::bail!(
                "this summary carries no histograms (written by an older evdispatch load): \
                 run it again with this version"
            );
        }
        let [c, u, k] = [&h.latency, &h.latency_uncorrected, &h.connect].map(|s| decode(s));
        Ok([c?, u?, k?])
    }

    /// The percentile tables of `--latency`, as wrk2 prints them: corrected
    /// then uncorrected, each followed by its detailed percentile spectrum
    /// (HdrHistogram's own layout, values in ms).
    pub fn latency_tables(&self) -> String {
        let mut o = String::new();
        let hists = self.decode_histograms().ok();
        for (i, (title, l, note)) in [
            (
                "Recorded Latency",
                &self.latency_us,
                "from each request's intended send time (coordinated omission corrected)",
            ),
            (
                "Uncorrected Latency (measured without taking delayed starts into account)",
                &self.latency_uncorrected_us,
                "from the moment each request was actually sent",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            // wrk2's headings, exactly: parsers look for them.
            if i > 0 {
                o.push('\n');
            }
            let _ = writeln!(o, "  Latency Distribution (HdrHistogram - {title})");
            for p in &l.percentiles {
                let _ = writeln!(o, "{:>7.3}%{:>10}", p.percentile, fmt_us(p.us as f64));
            }
            if let Some(h) = hists.as_ref().map(|h| &h[i]).filter(|h| !h.is_empty()) {
                let _ = writeln!(
                    o,
                    "\n  Detailed Percentile spectrum:\n{:>12} {:>12} {:>12} {:>16}\n",
                    "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
                );
                for v in h.iter_quantiles(5) {
                    let q = v.quantile_iterated_to();
                    // The last row, at 100%, has no 1/(1-Percentile).
                    let inv = if q < 1.0 {
                        format!(" {:>12.2}", 1.0 / (1.0 - q))
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        o,
                        "{:>12.3} {:>12.6} {:>12}{inv}",
                        v.value_iterated_to() as f64 / 1000.0,
                        q,
                        (v.quantile() * h.len() as f64).round() as u64,
                    );
                }
                let _ = writeln!(
                    o,
                    "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]\n\
                     #[Max     = {:>12.3}, Total count    = {:>12}]\n\
                     #[Buckets = {:>12}, SubBuckets     = {:>12}]",
                    h.mean() / 1000.0,
                    h.stdev() / 1000.0,
                    h.max() as f64 / 1000.0,
                    h.len(),
                    h.buckets(),
                    // counts = (buckets + 1) × half the sub-buckets
                    2 * h.distinct_values() / (h.buckets() as usize + 1)
                );
            }
            let _ = writeln!(
                o,
                "----------------------------------------------------------\n  ({title}: {note})"
            );
        }
        o
    }

    /// The text summary: the httperf-like lines, the percentile tables
    /// (`latency`), then wrk's closing lines ([`Summary::wrk_lines`]), in
    /// wrk2's order.
    pub fn text(&self, latency: bool) -> String {
        let mut o = self.httperf_lines();
        if latency {
            o.push_str(&self.latency_tables());
        }
        o.push_str(&self.wrk_lines());
        o
    }

    /// The text summary without the percentile tables.
    pub fn human(&self) -> String {
        self.text(false)
    }

    /// wrk's closing lines, formatted as wrk does: `N requests in T, B
    /// read` (the replies in the window, over it), `Socket errors: connect,
    /// read, write, timeout` (when any: refused, out of descriptors or
    /// ports and TLS as connect; reset, malformed, closed by the server and
    /// other as read, the generator not telling a reset on a write from
    /// one on a read), `Non-2xx or 3xx responses` (when any: 4xx, 5xx and
    /// other statuses, as wrk counts above 399), `Requests/sec` (the reply
    /// rate) and `Transfer/sec`.
    pub fn wrk_lines(&self) -> String {
        let mut o = String::new();
        let d = self.duration_s;
        let _ = writeln!(
            o,
            "  {} requests in {}, {}B read",
            self.replies_in_window,
            fmt_us(d * 1e6),
            fmt_binary(self.bytes_received as f64)
        );
        let sum = |keys: &[&str], of: &BTreeMap<String, u64>| -> u64 {
            keys.iter().filter_map(|k| of.get(*k)).sum()
        };
        let e = &self.errors;
        let connect = sum(&["refused", "client_fd", "client_port", "tls"], e);
        let read = sum(&["reset", "malformed", "server_closed", "other"], e);
        let timeout = sum(&["timeout"], e);
        if connect + read + timeout > 0 {
            let _ = writeln!(
                o,
                "  Socket errors: connect {connect}, read {read}, write 0, timeout {timeout}"
            );
        }
        let failed = sum(&["4xx", "5xx", "other"], &self.status);
        if failed > 0 {
            let _ = writeln!(o, "  Non-2xx or 3xx responses: {failed}");
        }
        let _ = writeln!(o, "Requests/sec: {:9.2}", self.reply_rate);
        let _ = writeln!(
            o,
            "Transfer/sec: {:>10}B",
            fmt_binary(per_s(self.bytes_received, d))
        );
        o
    }

    /// The httperf-like lines of the text summary.
    fn httperf_lines(&self) -> String {
        let c = &self.config;
        let ms = |us: u64| us as f64 / 1000.0;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "evdispatch load {} — {:.1} s measured after {:.1} s warm-up; {} process(es) on {}",
            c.url, self.duration_s, c.warmup_s, c.procs, c.mechanism
        );
        if self.interrupted {
            let _ = writeln!(
                o,
                "INTERRUPTED ({}): the figures cover the {:.1} s measured before it",
                crate::interrupt::shown(self.interrupted_by.as_deref()),
                self.duration_s
            );
        }
        let _ = writeln!(
            o,
            "Target: {}{}{}",
            c.target,
            if c.addresses.len() > 1 {
                format!(" (first to accept of {} resolved)", c.addresses.len())
            } else {
                String::new()
            },
            match &c.tls {
                None => String::new(),
                Some(t) if t.insecure => "; TLS, certificate NOT verified (--insecure)".into(),
                Some(t) => format!(
                    "; TLS, certificate verified for '{}' against {}",
                    t.server_name,
                    t.cacert
                        .as_ref()
                        .map_or("the system's roots".into(), |p| p.display().to_string())
                ),
            }
        );
        let mut w = Vec::new();
        let rate = match c.rate {
            Some(Rate::PerSecond(r)) => format!("{r}/s {:?}", c.arrival).to_lowercase(),
            Some(Rate::Max) => "max (closed loop)".into(),
            None => String::new(),
        };
        if let Some(n) = c.sessions {
            let count = if n == 0 {
                "unbounded".to_string()
            } else {
                n.to_string()
            };
            w.push(format!("sessions {count} at {rate} × {} call(s)", c.calls));
        } else if c.persistent > 0 {
            w.push(format!("persistent {} at {rate}", c.persistent));
        }
        for (n, name) in [(c.inactive, "inactive"), (c.idle, "idle"), (c.slow, "slow")] {
            if n > 0 {
                w.push(format!("{name} {n}"));
            }
        }
        let _ = writeln!(o, "Workloads: {}", w.join("; "));
        let k = &self.connections;
        let _ = writeln!(
            o,
            "Connections: attempted {} established {} failed {} closed by client {} by server {} open at end {} (peak {}){}",
            k.attempted,
            k.established,
            k.failed,
            k.closed_by_client,
            k.closed_by_server,
            k.open_at_end,
            k.peak,
            if k.accounted { "" } else { " — DOES NOT ADD UP" }
        );
        if c.inactive + c.idle > 0 {
            let _ = writeln!(
                o,
                "Reopens: {} in the window ({:.1}/s), {} in all; reconnects {}",
                self.reopens_in_window, self.reopen_rate, self.reopens, self.reconnects
            );
        }
        let tls = c
            .tls
            .is_some()
            .then_some(("TLS handshake", &self.tls_handshake_us));
        for (what, l) in std::iter::once(("Connect time", &self.connect_us)).chain(tls) {
            let _ = writeln!(
                o,
                "{what} [ms]: min {:.3} avg {:.3} p99 {:.3} max {:.3} ({} in the window)",
                ms(l.min),
                l.mean / 1000.0,
                ms(l.p99),
                ms(l.max),
                l.count
            );
        }
        let _ = writeln!(
            o,
            "Requests: {} sent, {} replies; missed slots {}, unsent at end {}",
            self.requests, self.replies, self.missed_slots, self.unsent_at_end
        );
        let r = &self.rate_intervals;
        let _ = writeln!(
            o,
            "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples of {} s); overall {:.1}",
            r.min,
            r.avg,
            r.max,
            r.stddev,
            r.samples.len(),
            r.interval_s,
            self.reply_rate
        );
        for (name, l) in [
            ("corrected  ", &self.latency_us),
            ("uncorrected", &self.latency_uncorrected_us),
        ] {
            let _ = writeln!(
                o,
                "Latency [ms] {name}: p50 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3} (mean {:.3})",
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.p999),
                ms(l.max),
                l.mean / 1000.0
            );
        }
        if c.sessions.is_some() && self.sessions_unfinished > 0 {
            let _ = writeln!(
                o,
                "Sessions: {} unfinished when the run ended (cut by {}; without --duration every session runs to its end)",
                self.sessions_unfinished,
                if self.interrupted {
                    crate::interrupt::shown(self.interrupted_by.as_deref())
                } else {
                    "--duration"
                }
            );
        }
        // Every reply, which the "Requests:" line's measured ones are part of.
        let _ = writeln!(
            o,
            "Reply status: {} (all {} replies: {} measured, {} unmeasured, {} to slow clients)",
            self.status
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            self.status.values().sum::<u64>(),
            self.replies,
            self.unmeasured_replies,
            self.slow_replies
        );
        let _ = writeln!(
            o,
            "Net I/O: sent {:.1} KB, received {:.1} KB ({:.1} KB/s)",
            self.bytes_sent as f64 / 1024.0,
            self.bytes_received as f64 / 1024.0,
            per_s(self.bytes_received, self.duration_s) / 1024.0
        );
        let _ = writeln!(
            o,
            "Errors: total {} {}",
            self.errors_total,
            self.errors
                .iter()
                .map(|(k, v)| format!("{}={v}", k.replace('_', "-")))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let server = match &self.server_cpu {
            Some(s) => format!("server {:.1}% of a core (pids {:?})", s.pct, s.pids),
            None => "server not sampled (give --server-pid)".into(),
        };
        let _ = writeln!(
            o,
            "CPU: generator {:.1}% of a core over {} core(s); {server}",
            self.generator_cpu_pct, self.generator_cores
        );
        for w in &self.warnings {
            let _ = writeln!(o, "WARNING: {w}");
        }
        for k in &self.checks {
            let _ = writeln!(o, "Check {k}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn merged(cpu: Vec<f64>) -> Merged {
        let r = crate::record::Recorder::default();
        let reports: Vec<_> = cpu
            .iter()
            .enumerate()
            .map(|(i, &p)| {
                crate::record::WorkerReport::new(i as u32, &r, 0.0, p, 0.0, vec![]).unwrap()
            })
            .collect();
        crate::record::merge(&reports).unwrap()
    }

    #[test]
    fn a_busy_generator_is_flagged_loudly() {
        let mut c = Config::from_command_line([
            "http://127.0.0.1:1/",
            "--idle",
            "1",
            "--procs",
            "2",
            "--cpu",
            "0-1",
        ])
        .unwrap();
        let s = Summary::new(&c, merged(vec![90.0, 10.0]), None);
        assert!(
            s.generator_saturated && s.warnings[0].starts_with("GENERATOR SATURATED"),
            "{:?}",
            s.warnings
        );
        assert_eq!((s.generator_cores, s.generator_cpu_pct), (2, 100.0));
        let s = Summary::new(&c, merged(vec![60.0, 60.0]), None);
        assert!(
            !s.generator_saturated && s.warnings.is_empty(),
            "{:?}",
            s.warnings
        );
        c.procs = 1;
        c.cpus.clear();
        let s = Summary::new(&c, merged(vec![86.0]), None);
        assert!(s.generator_saturated);
        assert!(s.connections.accounted && s.server_cpu_pct.is_none());
    }

    #[test]
    fn no_credential_reaches_the_summary() {
        let summary = |args: &[&str]| {
            let c = Config::from_command_line(args).unwrap();
            let s = Summary::new(&c, merged(vec![1.0]), None);
            let json = serde_json::to_string(&s).unwrap();
            (s, json)
        };
        let (s, json) = summary(&[
            "http://u:secret@127.0.0.1:1/",
            "-H",
            "Proxy-Authorization: Basic cDpx",
        ]);
        assert!(
            !json.contains("secret") && !json.contains("dTpzZWNyZXQ") && !json.contains("cDpx")
        );
        assert!(
            json.contains("u:***@") && json.contains("\"Basic ***\""),
            "{json}"
        );
        assert!(!s.text(false).contains("secret"));
        // A raw key (no scheme), a tab after the scheme, and a token given
        // as the URL's user.
        let (s, json) = summary(&[
            "http://sk_live_T0k3n@127.0.0.1:1/",
            "-H",
            "Authorization: sk-live-abcdef",
            "-H",
            "Proxy-Authorization: Bearer\tt4b",
        ]);
        for secret in ["sk-live", "abcdef", "t4b", "T0k3n", "c2tfbGl2ZV9UMGszbjo"] {
            assert!(!json.contains(secret), "{secret}: {json}");
            assert!(!s.text(false).contains(secret), "{secret}");
        }
        assert_eq!(
            s.config.headers,
            [
                ("Authorization".to_string(), "***".to_string()),
                ("Proxy-Authorization".to_string(), "Bearer ***".to_string())
            ]
        );
        assert!(s.config.url.starts_with("http://***@127.0.0.1"), "{json}");
    }

    #[test]
    fn the_text_ends_as_wrk_s_and_the_tables_have_wrk2_s_headings() {
        let c = Config::from_command_line(["http://127.0.0.1:1/", "-R", "10"]).unwrap();
        let mut s = Summary::new(&c, merged(vec![1.0]), None);
        (s.duration_s, s.replies_in_window, s.reply_rate) = (2.0, 1000, 500.0);
        s.bytes_received = 1_226_833; // 1.17 MiB
        let text = s.text(true);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        assert_eq!(
            tail,
            [
                "Transfer/sec:    599.04KB",
                "Requests/sec:    500.00",
                "  1000 requests in 2.00s, 1.17MB read"
            ]
        );
        assert!(!text.contains("Socket errors") && !text.contains("Non-2xx"));
        s.errors.insert("refused".into(), 2);
        s.errors.insert("timeout".into(), 1);
        s.errors.insert("server_closed".into(), 4);
        s.status.insert("5xx".into(), 3);
        let text = s.human();
        assert!(text.contains("\n  Socket errors: connect 2, read 4, write 0, timeout 1\n  Non-2xx or 3xx responses: 3\nRequests/sec:"), "{text}");
        // The tables come after the httperf-like lines, before wrk's.
        let text = s.text(true);
        let at = |t: &str| {
            text.find(t)
                .unwrap_or_else(|| panic!("{t} missing: {text}"))
        };
        assert!(
            at("Reply status:") < at("  Latency Distribution (HdrHistogram - Recorded Latency)\n")
        );
        assert!(at("\n\n  Latency Distribution (HdrHistogram - Uncorrected Latency (measured without taking delayed starts into account))\n") < at("requests in"));
        // wrk's units.
        assert_eq!(
            [849.0, 850.0, 1_210.0, 2_030_000.0, 90e6].map(fmt_us),
            ["849.00us", "0.85ms", "1.21ms", "2.03s", "1.50m"]
        );
        assert_eq!(
            [512.0, 900.0, 3e12].map(fmt_binary),
            ["512.00", "0.88K", "2.73T"]
        );
    }

    /// The text names the signal the report recorded, not this process's
    /// (`load merge` of a run stopped by SIGTERM says SIGTERM; a unit test
    /// in this binary raises SIGTERM in this process).
    #[test]
    fn an_interruption_is_named_by_the_signal_the_report_recorded() {
        let c = Config::from_command_line([
            "http://127.0.0.1:1/",
            "--sessions",
            "5",
            "--rate",
            "1",
            "-d",
            "2",
        ])
        .unwrap();
        for (signal, shown) in [("SIGTERM", "SIGTERM"), ("SIGINT", "Ctrl-C")] {
            let mut m = merged(vec![1.0]);
            (m.interrupted, m.signal, m.window_s) = (true, Some(signal.into()), 0.5);
            m.counts.sessions_unfinished = 2;
            let s = Summary::new(&c, m, None);
            // Through a results file, as `load merge` reads one.
            let s: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            assert_eq!(s.interrupted_by.as_deref(), Some(signal));
            let text = s.text(false);
            assert!(text.contains(&format!("INTERRUPTED ({shown})")), "{text}");
            assert!(text.contains(&format!("(cut by {shown};")), "{text}");
        }
        // An output of an earlier version does not say which.
        let mut m = merged(vec![1.0]);
        (m.interrupted, m.window_s) = (true, 0.5);
        let mut json = serde_json::to_value(Summary::new(&c, m, None)).unwrap();
        json.as_object_mut().unwrap().remove("interrupted_by");
        let s: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(s.interrupted_by, None);
        assert!(s.text(false).contains("INTERRUPTED (Ctrl-C or SIGTERM)"));
    }

    #[test]
    fn an_empty_window_has_rates_of_zero() {
        // Every session over during the warm-up: the window is empty.
        let c = Config::from_command_line([
            "http://127.0.0.1:1/",
            "--sessions",
            "1",
            "--rate",
            "1",
            "--warmup",
            "1",
        ])
        .unwrap();
        assert!(c.run_to_end);
        let mut m = merged(vec![1.0]);
        m.counts.bytes_received = 2048;
        m.window_s = 0.0;
        let s = Summary::new(&c, m, None);
        assert_eq!((s.duration_s, s.reply_rate, s.reopen_rate), (0.0, 0.0, 0.0));
        let text = s.text(false);
        assert!(text.contains("received 2.0 KB (0.0 KB/s)"), "{text}");
        assert!(text.contains("\nTransfer/sec:       0.00B\n"), "{text}");
        assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
    }

    #[test]
    fn interval_statistics() {
        let r = rate_intervals(&[10, 20, 30], 2.0);
        assert_eq!(r.samples, vec![5.0, 10.0, 15.0]);
        assert_eq!((r.min, r.avg, r.max), (5.0, 10.0, 15.0));
        assert!((r.stddev - 5.0).abs() < 1e-9);
        assert_eq!(rate_intervals(&[], 1.0).samples.len(), 0);
    }
}
