//! The second stage of the results: the merged record aggregated into
//! [`Summary`] (rates over the window, percentiles, connection accounting,
//! generator saturation, credentials hidden), which is the `--json`
//! output.
//!
//! # The `--json` contract
//!
//! One JSON object ([`Summary`]); programs (the study) read it. Fields keep
//! their meaning while `schema` is `"evdispatch-load/1"`:
//!
//! | field | type | meaning |
//! |---|---|---|
//! | `schema` | string | `"evdispatch-load/1"` |
//! | `config` | object | the full configuration ([`Config`]): `url` (a password in it shown as `***`, and a user given without a password, often a token, as `***` too), `target` (the address used), `addresses` (all resolved, in the order tried), `tls` (`server_name`, `insecure`, `cacert`; `null` for http), `method`, `body_file`, `body_bytes`, `urls` (`path`, `weight`), `wsesslog` (`sessions`, `think_s`, `file`), `rate` (`{"per_second": R}` or `"max"`, `null` without an active workload), `arrival`, `duration_s` (with `run_to_end`, the window measured), `run_to_end` (the run lasted until its last session ended), `warmup_s`, `timeout_s`, `sessions`, `calls`, `persistent`, `inactive`, `inactive_send`, `idle`, `slow`, `slow_bytes`, `slow_interval_s`, `slow_ramp_s`, `procs`, `server_pids`, `cpus`, `headers` (an `Authorization` or `Proxy-Authorization` value shown as its scheme and `***`, or as `***` alone when it is a single token such as a raw key), `source_addrs`, `mechanism`, `engine` (`auto`, `uring`, `readiness`), `http` (`"1.1"` or `"2"`, as the pre-flight check settled it), `max_streams`, `window_bits`, `connection_window_bits` (HTTP/2's `-m`, `-w`, `-W`), `interval_s`, `slot_tolerance_ms`, `seed`, `connect_burst` |
//! | `duration_s` | number | length of the measured window (with `config.run_to_end`, until the last session ended) |
//! | `requests` | integer | requests of the active workloads whose slot fell in the window and that were sent |
//! | `replies` | integer | complete replies to those requests (including ones that arrived in the drain after the window) |
//! | `replies_in_window` | integer | replies received inside the window |
//! | `reply_rate` | number | `replies_in_window / duration_s`, replies/s |
//! | `rate_intervals` | object | `interval_s`, `samples` (replies/s of each full interval), `min`, `avg`, `max`, `stddev` (as httperf's "Reply rate") |
//! | `latency_us` | object | corrected latency, µs: `count`, `min`, `mean`, `stddev`, `p50`, `p90`, `p99`, `p999`, `max` (all 0 when `count` is 0), and `percentiles`: `[{"percentile": 50.0, "us": …}, …]` at 50, 75, 90, 99, 99.9, 99.99, 99.999 and 100 (empty when `count` is 0) |
//! | `latency_uncorrected_us` | object | the same from the actual send time |
//! | `connect_us` | object | the same for TCP connects completed in the window |
//! | `tls_handshake_us` | object | the same for TLS handshakes completed in the window (from the TCP connect to the handshake's end; `count` 0 for http) |
//! | `missed_slots` | integer | slots whose request could not go out on time |
//! | `unsent_at_end` | integer | measured slots never sent (queued when the run ended; over HTTP/2 also the requests a GOAWAY left unprocessed and not yet sent again, which `requests` then leaves out) |
//! | `errors` | object | cause → count, every cause present: `refused`, `reset`, `timeout`, `client_fd` (generator out of descriptors), `client_port` (out of source ports), `malformed`, `server_closed` (closed with a request outstanding), `tls` (a TLS handshake or record failed), `other` |
//! | `errors_total` | integer | sum of `errors` |
//! | `errors_by_workload` | object | workload (`sessions`, `persistent`, `closed_loop`, `inactive`, `idle`, `slow`) → cause → count |
//! | `status` | object | `1xx` … `5xx`, `other` → replies |
//! | `bytes_sent`, `bytes_received` | integer | bytes written and read, whole run |
//! | `tls_handshakes`, `tls_resumed` | integer | TLS handshakes completed, whole run, and how many of them resumed a session (`--no-tls-resume`: none) |
//! | `connections` | object | `attempted`, `established`, `failed`, `closed_by_client`, `closed_by_server`, `open_at_end`, `peak`, and `accounted` (true when attempted = established + failed and established = closed by either side + open at end) |
//! | `connections_peak` | integer | most connections open at once (workers' per-interval peaks summed: exact for long-lived connections, an upper bound within one interval otherwise) |
//! | `reopens` | integer | inactive and idle connections reopened after the server closed them, whole run |
//! | `reopens_in_window` | integer | those inside the window |
//! | `reopen_rate` | number | `reopens_in_window / duration_s` |
//! | `reconnects` | integer | connections that ended to be replaced by a new one, counted when they end: a persistent or closed-loop connection closed (or reset) by the server between requests or with one outstanding (then also a `server_closed` or `reset` error, as wrk counts a read error); a persistent, closed-loop or session connection closed after a reply because the reply or `-H 'Connection: close'` said so, or by the generator after an early reply whose request could not be finished within `--timeout` (not an error) — a session's only when it has a call left and the window is open; a session's closed by the server during a think time. One that ends in the drain, or in a think time that outlasts the window, is counted though no new connection is opened then |
//! | `slow_replies` | integer | replies to slow clients |
//! | `unmeasured_replies` | integer | replies outside the measurement (warm-up, idle connections' one request) |
//! | `sessions_unfinished` | integer | sessions started that still had calls to make when the run ended: cut by `--duration` (no call starts after the window), or by Ctrl-C or `SIGTERM` (`interrupted`); with `config.run_to_end`, 0 unless interrupted |
//! | `generator_cpu_pct` | number | CPU of all worker processes over the window, % of one core |
//! | `generator_cpu_per_process_pct` | array | the same per worker |
//! | `generator_cores` | integer | cores the generator could use |
//! | `generator_saturated` | bool | a worker above 85% of its core, or all above 85% of theirs: the figures may be the generator's limit (also a `warnings` entry starting `GENERATOR SATURATED`) |
//! | `server_cpu_pct` | number or null | CPU of `--server-pid` and its children over the window, % of one core |
//! | `server_cpu` | object or null | `pids`, `cpu_s`, `pct` |
//! | `setup_s` | number | time to open the long-lived connections before the run |
//! | `warnings` | array | strings the reader must see |
//! | `interrupted` | bool | Ctrl-C (or `SIGTERM`) stopped the run: `duration_s` and the rates cover the window up to then (`config.duration_s` is what was asked) |
//! | `interrupted_by` | string or null | the signal that did, `"SIGINT"` (Ctrl-C) or `"SIGTERM"`, as the workers recorded it (so `load merge` names it too); `null` when not interrupted, and in outputs of earlier versions |
//! | `http2` | object or null | HTTP/2 runs: `streams_refused` (RST_STREAM REFUSED_STREAM), `resets` (streams reset by the server, by error code), `goaways` (GOAWAY frames received), `retried_after_goaway` (requests above a GOAWAY's last stream id, sent again on a new connection), `connection_errors` (frames that broke the protocol), `connection_errors_by_frame` (the same by the type of the frame that caused each: `DATA`, `SETTINGS`, …), `flow_control_waits` (times a body waited for the server's window), `flow_control_blocked_stream_us` (time streams had body bytes to send and no window, summed over the streams, µs), `flow_control_blocked_connection_us` (time connections had at least one such stream, summed over the connections, µs), `header_bytes_sent`, `header_bytes_sent_hpack`, `header_bytes_received`, `header_bytes_received_hpack` (header names and values, and their HPACK blocks); `null` for HTTP/1.1 |
//! | `window_start_unix_s`, `window_end_unix_s` | number | the measured window in wall-clock time, Unix seconds (0 when none began) |
//! | `histograms` | object | `latency`, `latency_uncorrected`, `connect`: the histograms (µs) in HdrHistogram's V2 serialization, base64, what `load merge` adds up |
//! | `checks` | array | the `--fail-if` thresholds: `expr`, `measured`, `limit` (in the expression's unit: µs for latencies), `pass` |
//!

use std::collections::{BTreeMap, BTreeSet};

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::config::Config;
use crate::results::record::{add_counts, decode, encode, per_s, Histograms, Merged};

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

/// Everything a run measured: the `--json` output (the contract is in
/// this module's docs).
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
    /// TLS handshakes completed (whole run; 0 for http).
    #[serde(default)]
    pub tls_handshakes: u64,
    /// Of those, handshakes that resumed a session.
    #[serde(default)]
    pub tls_resumed: u64,
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
    /// the contract in this module's docs.
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
    /// HTTP/2 counters (`null` for HTTP/1.1).
    #[serde(default)]
    pub http2: Option<crate::results::record::H2Counts>,
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
            add_counts(&mut errors, causes);
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
            tls_handshakes: c.tls_handshakes,
            tls_resumed: c.tls_resumed,
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
            http2: (config.http == crate::config::HttpVersion::Http2).then(|| m.http2.clone()),
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::record::idle_workers as merged;

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
        // The user's own header over the URL's credentials, one token: hidden
        // whole.
        let (s, _) = summary(&[
            "http://u:secret@127.0.0.1:1/",
            "-H",
            "Authorization:Bearer_t",
        ]);
        assert_eq!(
            s.config.headers,
            [("Authorization".to_string(), "***".to_string())]
        );
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
