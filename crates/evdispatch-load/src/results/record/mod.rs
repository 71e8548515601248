//! The first stage of the results: what a worker records (counters,
//! errors, statuses and the [`histograms`] it owns), how it travels to the
//! parent (one JSON line, histograms in HdrHistogram's V2 serialization,
//! base64) and how the parent merges the workers' records without losing
//! anything; per `--interval`, the same for each [`interval`].

use std::collections::BTreeMap;
use std::io;

use anyhow::anyhow;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

pub mod histograms;
pub mod interval;

pub use histograms::{decode, encode, new_histogram, Histograms, MAX_US};

/// Why a connection or request failed. Their names ([`CAUSE_NAMES`]) are
/// the keys of `errors` in the JSON output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The server refused the connection (`ECONNREFUSED`).
    Refused,
    /// The connection was reset (`ECONNRESET`, `EPIPE`, `ECONNABORTED`).
    Reset,
    /// No reply (or no connection) within `--timeout`.
    Timeout,
    /// The generator ran out of descriptors or buffers (`EMFILE`, `ENFILE`, `ENOBUFS`).
    ClientFd,
    /// The generator ran out of source ports (`EADDRNOTAVAIL`, `EADDRINUSE`).
    ClientPort,
    /// The response could not be parsed.
    Malformed,
    /// The server closed the connection while a request was outstanding.
    ServerClosed,
    /// A TLS handshake or record failed (certificate, protocol, alert).
    Tls,
    /// Anything else.
    Other,
    /// The server reset an HTTP/2 stream (RST_STREAM) before its reply.
    StreamReset,
}

/// The JSON keys of the causes, in the order of [`Cause`]'s variants.
pub const CAUSE_NAMES: [&str; 10] = [
    "refused",
    "reset",
    "timeout",
    "client_fd",
    "client_port",
    "malformed",
    "server_closed",
    "tls",
    "other",
    "stream_reset",
];

impl Cause {
    /// The cause of a failed system call.
    pub fn of(e: &io::Error) -> Cause {
        match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => Cause::Refused,
            Some(libc::ECONNRESET | libc::EPIPE | libc::ECONNABORTED) => Cause::Reset,
            Some(libc::ETIMEDOUT) => Cause::Timeout,
            Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM) => Cause::ClientFd,
            Some(libc::EADDRNOTAVAIL | libc::EADDRINUSE) => Cause::ClientPort,
            _ => Cause::Other,
        }
    }
}

/// The workloads; their names ([`ROLE_NAMES`]) key `errors_by_workload`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A session: new connection, `--calls` requests, close.
    Session,
    /// A persistent connection with periodic requests (open loop).
    Persistent,
    /// A closed-loop connection (`--rate max`).
    Closed,
    /// An inactive connection.
    Inactive,
    /// An idle persistent connection.
    Idle,
    /// A slow client.
    Slow,
}

/// The JSON keys of the workloads, in the order of [`Role`]'s variants.
pub const ROLE_NAMES: [&str; 6] = [
    "sessions",
    "persistent",
    "closed_loop",
    "inactive",
    "idle",
    "slow",
];

/// Defines [`Counts`] and its field-by-field sum from one list of fields.
macro_rules! counts {
    ($($(#[$doc:meta])* $field:ident,)*) => {
        /// Plain counters of one worker (summed over workers when merged).
        #[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
        pub struct Counts {
            $($(#[$doc])* pub $field: u64,)*
        }

        impl Counts {
            fn add(&mut self, o: &Counts) {
                $(self.$field += o.$field;)*
            }
        }
    };
}

counts! {
    /// Requests of the active workloads whose slot falls in the measured window and that were sent.
    requests,
    /// Complete replies to those requests (some may arrive in the drain after the window).
    replies,
    /// Replies received inside the measured window (the reply rate's numerator).
    replies_in_window,
    /// Slots whose request could not go out on time (connection still busy, or the generator late by more than the tolerance).
    missed_slots,
    /// Measured slots still queued when the run ended (never sent).
    unsent_at_end,
    /// Inactive and idle connections reopened after the server closed them (whole run).
    reopens,
    /// Reopens inside the measured window.
    reopens_in_window,
    /// Connections that ended to be replaced by a new one, counted when they end (the `reconnects` of the summary).
    reconnects,
    /// Replies to slow clients.
    slow_replies,
    /// Replies to requests outside the measured window (warm-up, idle connections' first request).
    unmeasured_replies,
    /// Sessions started that still had calls to make when the run ended (cut by `--duration`, Ctrl-C or `SIGTERM`).
    sessions_unfinished,
    /// Bytes written.
    bytes_sent,
    /// Bytes read.
    bytes_received,
    /// Connections attempted (socket + connect).
    conn_attempted,
    /// Connections established.
    conn_established,
    /// Connection attempts that failed (counted in errors too).
    conn_failed,
    /// Established connections the generator closed (end of a session, error, timeout, end of run).
    conn_closed_by_client,
    /// Established connections the server closed (EOF or reset).
    conn_closed_by_server,
    /// Connections open when the run ended (then closed by the generator).
    conn_open_at_end,
    /// Most connections open at once in this worker.
    conn_peak,
    /// TLS handshakes completed (whole run).
    tls_handshakes,
    /// Of those, handshakes that resumed a session (a ticket or a session ID).
    tls_resumed,
}

/// HTTP/2 counters of one worker (summed over workers when merged;
/// `http2` in the JSON output, `null` for HTTP/1.1).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct H2Counts {
    /// Streams the server refused (RST_STREAM REFUSED_STREAM), counted in
    /// `resets` and in the errors (`stream_reset`) too.
    pub streams_refused: u64,
    /// Streams the server reset, by error code (`refused_stream`,
    /// `cancel`, …).
    pub resets: BTreeMap<String, u64>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Requests sent on streams above a GOAWAY's last stream id (not
    /// processed by the server) and sent again on a new connection.
    pub retried_after_goaway: u64,
    /// Connection errors (a frame that broke the protocol; the generator
    /// sent GOAWAY and closed the connection).
    pub connection_errors: u64,
    /// The connection errors by the type of the frame that caused each
    /// (`DATA`, `SETTINGS`, …).
    #[serde(default)]
    pub connection_errors_by_frame: BTreeMap<String, u64>,
    /// Times a request body waited for the server's flow-control window.
    pub flow_control_waits: u64,
    /// Time streams had body bytes to send and no window to send them,
    /// summed over the streams, microseconds.
    #[serde(default)]
    pub flow_control_blocked_stream_us: u64,
    /// Time connections had at least one such stream, summed over the
    /// connections, microseconds.
    #[serde(default)]
    pub flow_control_blocked_connection_us: u64,
    /// Names and values of the header fields sent.
    pub header_bytes_sent: u64,
    /// Their HPACK blocks.
    pub header_bytes_sent_hpack: u64,
    /// Names and values of the header fields received.
    pub header_bytes_received: u64,
    /// Their HPACK blocks.
    pub header_bytes_received_hpack: u64,
}

impl H2Counts {
    /// Add `o` to these.
    pub fn add(&mut self, o: &H2Counts) {
        self.streams_refused += o.streams_refused;
        for (k, v) in &o.resets {
            *self.resets.entry(k.clone()).or_default() += v;
        }
        self.goaways += o.goaways;
        self.retried_after_goaway += o.retried_after_goaway;
        self.connection_errors += o.connection_errors;
        for (k, v) in &o.connection_errors_by_frame {
            *self
                .connection_errors_by_frame
                .entry(k.clone())
                .or_default() += v;
        }
        self.flow_control_waits += o.flow_control_waits;
        self.flow_control_blocked_stream_us += o.flow_control_blocked_stream_us;
        self.flow_control_blocked_connection_us += o.flow_control_blocked_connection_us;
        self.header_bytes_sent += o.header_bytes_sent;
        self.header_bytes_sent_hpack += o.header_bytes_sent_hpack;
        self.header_bytes_received += o.header_bytes_received;
        self.header_bytes_received_hpack += o.header_bytes_received_hpack;
    }
}

/// Everything one worker records.
#[derive(Debug, Clone, Default)]
pub struct Recorder {
    /// Latencies of the replies, connect and TLS handshake times of the
    /// connections established in the window.
    pub histograms: Histograms<Histogram<u64>>,
    /// Counters.
    pub counts: Counts,
    /// Errors, indexed `[role][cause]`.
    pub errors: [[u64; CAUSE_NAMES.len()]; ROLE_NAMES.len()],
    /// Reply status classes: 1xx … 5xx, then anything else.
    pub status: [u64; 6],
    /// Replies received in each interval of the window.
    pub interval_replies: Vec<u64>,
    /// Most connections open at once in each interval of the window.
    pub interval_peak_conns: Vec<u64>,
    /// HTTP/2 counters.
    pub h2: H2Counts,
}

impl Recorder {
    /// Count an error.
    #[inline]
    pub fn error(&mut self, role: Role, cause: Cause) {
        self.errors[role as usize][cause as usize] += 1;
    }

    /// Count a reply status.
    #[inline]
    pub fn status(&mut self, code: u16) {
        let class = match code {
            100..=599 => (code / 100 - 1) as usize,
            _ => 5,
        };
        self.status[class] += 1;
    }

    /// Total errors.
    pub fn errors_total(&self) -> u64 {
        self.errors.iter().flatten().sum()
    }
}

/// `v[i]`, `v` grown to hold it (a window that lasts until its sessions
/// end has no length known ahead; other windows are sized at the start).
#[inline]
pub fn at(v: &mut Vec<u64>, i: usize) -> &mut u64 {
    if i >= v.len() {
        v.resize(i + 1, 0);
    }
    &mut v[i]
}

/// One worker's results as sent to the parent (one JSON line).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkerReport {
    /// Worker index.
    pub index: u32,
    /// Its process id.
    pub pid: u32,
    /// Counters.
    pub counts: Counts,
    /// errors by role, then cause (all keys present).
    pub errors: BTreeMap<String, BTreeMap<String, u64>>,
    /// Reply status classes.
    pub status: BTreeMap<String, u64>,
    /// Corrected latency histogram (V2 serialization, base64).
    pub latency_hist: String,
    /// Uncorrected latency histogram.
    pub latency_uncorrected_hist: String,
    /// Connect-time histogram.
    pub connect_hist: String,
    /// TLS-handshake-time histogram (empty string: none).
    #[serde(default)]
    pub tls_handshake_hist: String,
    /// Replies per interval.
    pub interval_replies: Vec<u64>,
    /// Peak open connections per interval.
    pub interval_peak_conns: Vec<u64>,
    /// CPU seconds this worker used in its measured window.
    pub cpu_s: f64,
    /// Its CPU use over the window, % of one core.
    pub cpu_pct: f64,
    /// Seconds it took to open the long-lived connections.
    pub setup_s: f64,
    /// Things the worker noticed that the reader should know.
    pub warnings: Vec<String>,
    /// Length of its measured window, seconds (shorter than asked when interrupted).
    #[serde(default)]
    pub window_s: f64,
    /// Wall-clock start of its measured window, Unix seconds.
    #[serde(default)]
    pub window_start_unix_s: f64,
    /// Ctrl-C or `SIGTERM` stopped it.
    #[serde(default)]
    pub interrupted: bool,
    /// The signal that did: `"SIGINT"` or `"SIGTERM"` (None: not
    /// interrupted, or a report of an earlier version).
    #[serde(default)]
    pub signal: Option<String>,
    /// HTTP/2 counters (all zero for HTTP/1.1).
    #[serde(default)]
    pub http2: H2Counts,
}

/// Names of the status classes, in the order of [`Recorder::status`].
pub const STATUS_CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "other"];

impl WorkerReport {
    /// Package a recorder.
    pub fn new(
        index: u32,
        rec: &Recorder,
        cpu_s: f64,
        cpu_pct: f64,
        setup_s: f64,
        warnings: Vec<String>,
    ) -> anyhow::Result<WorkerReport> {
        let errors = ROLE_NAMES
            .iter()
            .zip(&rec.errors)
            .map(|(r, by_cause)| {
                let names = CAUSE_NAMES.iter().map(|c| c.to_string());
                (r.to_string(), names.zip(by_cause.iter().copied()).collect())
            })
            .collect();
        let status = STATUS_CLASSES
            .iter()
            .zip(rec.status)
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Ok(WorkerReport {
            index,
            pid: std::process::id(),
            counts: rec.counts.clone(),
            errors,
            status,
            latency_hist: encode(&rec.histograms.latency)?,
            latency_uncorrected_hist: encode(&rec.histograms.latency_uncorrected)?,
            connect_hist: encode(&rec.histograms.connect)?,
            tls_handshake_hist: encode(&rec.histograms.tls_handshake)?,
            interval_replies: rec.interval_replies.clone(),
            interval_peak_conns: rec.interval_peak_conns.clone(),
            cpu_s,
            cpu_pct,
            setup_s,
            warnings,
            window_s: 0.0,
            window_start_unix_s: 0.0,
            interrupted: false,
            signal: None,
            http2: rec.h2.clone(),
        })
    }
}

/// The workers' reports merged: sums, histograms added, intervals added
/// element-wise.
#[derive(Debug, Clone, Default)]
pub struct Merged {
    /// The histograms added.
    pub histograms: Histograms<Histogram<u64>>,
    /// Summed counters (`conn_peak` is recomputed from the intervals).
    pub counts: Counts,
    /// errors by role, then cause.
    pub errors: BTreeMap<String, BTreeMap<String, u64>>,
    /// Status classes.
    pub status: BTreeMap<String, u64>,
    /// Replies per interval, all workers.
    pub interval_replies: Vec<u64>,
    /// Peak connections per interval, summed over workers.
    pub interval_peak_conns: Vec<u64>,
    /// Each worker's CPU use, % of a core.
    pub cpu_pct: Vec<f64>,
    /// Longest setup.
    pub setup_s: f64,
    /// All warnings.
    pub warnings: Vec<String>,
    /// Longest measured window of a worker, seconds.
    pub window_s: f64,
    /// Earliest start of a worker's window, Unix seconds (0: none started).
    pub window_start_unix_s: f64,
    /// A worker was stopped by Ctrl-C or `SIGTERM`.
    pub interrupted: bool,
    /// The signal that stopped the first worker that says.
    pub signal: Option<String>,
    /// HTTP/2 counters, summed.
    pub http2: H2Counts,
}

/// `n` per second over `secs`: 0 over an empty window (one that ended as
/// it began: every session over during the warm-up, an early Ctrl-C).
pub fn per_s(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}

/// Add `from`'s counts into `into`, key by key.
pub fn add_counts(into: &mut BTreeMap<String, u64>, from: &BTreeMap<String, u64>) {
    for (k, v) in from {
        *into.entry(k.clone()).or_default() += v;
    }
}

fn add_vec(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

/// Merge the workers' reports.
pub fn merge(reports: &[WorkerReport]) -> anyhow::Result<Merged> {
    let mut m = Merged::default();
    let mut peak_sum = 0;
    for r in reports {
        let add = |h: &mut Histogram<u64>, s: &str| -> anyhow::Result<()> {
            h.add(decode(s)?)
                .map_err(|e| anyhow!("cannot merge histograms: {e:?}"))
        };
        let h = &mut m.histograms;
        add(&mut h.latency, &r.latency_hist)?;
        add(&mut h.latency_uncorrected, &r.latency_uncorrected_hist)?;
        add(&mut h.connect, &r.connect_hist)?;
        if !r.tls_handshake_hist.is_empty() {
            add(&mut h.tls_handshake, &r.tls_handshake_hist)?;
        }
        m.counts.add(&r.counts);
        m.http2.add(&r.http2);
        peak_sum += r.counts.conn_peak;
        for (role, causes) in &r.errors {
            add_counts(m.errors.entry(role.clone()).or_default(), causes);
        }
        add_counts(&mut m.status, &r.status);
        add_vec(&mut m.interval_replies, &r.interval_replies);
        add_vec(&mut m.interval_peak_conns, &r.interval_peak_conns);
        m.cpu_pct.push(r.cpu_pct);
        m.setup_s = m.setup_s.max(r.setup_s);
        m.warnings.extend(r.warnings.iter().cloned());
        m.window_s = m.window_s.max(r.window_s);
        if r.window_start_unix_s > 0.0
            && (m.window_start_unix_s == 0.0 || r.window_start_unix_s < m.window_start_unix_s)
        {
            m.window_start_unix_s = r.window_start_unix_s;
        }
        m.interrupted |= r.interrupted;
        if m.signal.is_none() {
            m.signal.clone_from(&r.signal);
        }
    }
    // The peak of the sum is at most the sum of the peaks; within one
    // interval the summed per-interval peaks bound it, so take the larger of
    // that and what one worker alone saw.
    let interval_peak = m.interval_peak_conns.iter().copied().max().unwrap_or(0);
    let single = reports
        .iter()
        .map(|r| r.counts.conn_peak)
        .max()
        .unwrap_or(0);
    m.counts.conn_peak = interval_peak.max(single).min(peak_sum);
    Ok(m)
}

/// The merged records of workers that each used `cpu_pct` % of a core
/// and recorded nothing else (for the tests of the later stages).
#[cfg(test)]
pub(crate) fn idle_workers(cpu_pct: Vec<f64>) -> Merged {
    let r = Recorder::default();
    let reports: Vec<_> = cpu_pct
        .iter()
        .enumerate()
        .map(|(i, &p)| WorkerReport::new(i as u32, &r, 0.0, p, 0.0, vec![]).unwrap())
        .collect();
    merge(&reports).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merging_is_lossless() {
        let mut a = Recorder::default();
        let mut b = Recorder::default();
        for v in 1..=1000u64 {
            a.histograms.latency.record(v).unwrap();
            b.histograms.latency.record(v * 1000).unwrap();
        }
        a.counts.replies = 1000;
        b.counts.replies = 1000;
        a.error(Role::Session, Cause::Refused);
        b.error(Role::Session, Cause::Refused);
        b.error(Role::Inactive, Cause::Reset);
        a.interval_replies = vec![1, 2];
        b.interval_replies = vec![10, 20, 30];
        let ra = WorkerReport::new(0, &a, 0.1, 10.0, 0.0, vec![]).unwrap();
        let text = serde_json::to_string(&ra).unwrap();
        let ra: WorkerReport = serde_json::from_str(&text).unwrap();
        let rb = WorkerReport::new(1, &b, 0.1, 10.0, 0.0, vec![]).unwrap();
        let m = merge(&[ra, rb]).unwrap();
        let mut both = a.histograms.latency.clone();
        both.add(&b.histograms.latency).unwrap();
        assert_eq!(m.histograms.latency, both);
        assert_eq!(m.histograms.latency.len(), 2000);
        assert_eq!(m.counts.replies, 2000);
        assert_eq!(m.errors["sessions"]["refused"], 2);
        assert_eq!(m.errors["inactive"]["reset"], 1);
        assert_eq!(m.interval_replies, vec![11, 22, 30]);
    }

    #[test]
    fn causes_from_errno() {
        let e = |n| Cause::of(&io::Error::from_raw_os_error(n));
        assert_eq!(e(libc::ECONNREFUSED), Cause::Refused);
        assert_eq!(e(libc::EPIPE), Cause::Reset);
        assert_eq!(e(libc::EMFILE), Cause::ClientFd);
        assert_eq!(e(libc::EADDRNOTAVAIL), Cause::ClientPort);
        assert_eq!(e(libc::EINVAL), Cause::Other);
    }
}
