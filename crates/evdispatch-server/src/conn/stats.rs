//! What the server counts, and the `--stats-json` document the study reads.
//!
//! # The stats document (`schema: "evdispatch-serve-stats/1"`)
//!
//! ```text
//! { "schema", "model": "readiness"|"threads"|"uring-completion",
//!   "mechanism": the --mechanism value, "address": "IP:PORT" listened on,
//!   "config": { "root", "listen", "model", "mechanism", "workers",
//!       "accept", "listener", "exclusive", "idle_timeout_ms",
//!       "header_timeout_ms", "cpus", "max_connections", "threads",
//!       "cache_bytes", "cache_max_file", "max_header", "backlog",
//!       "eager_read", "defer_accept_s", "dotfiles", "listing", "access_log",
//!       "poller_opts", "initial_events", "uring_entries", "tls_cert",
//!       "tls_key" },
//!   "elapsed_s",
//!   "requests": { "total", "by_status": { "200": n, "404": n, … } },
//!   "connections": { "accepted", "closed", "header_timed_out",
//!       "idle_timed_out", "write_timed_out", "client_errors",
//!       "register_errors", "peak_open" },
//!   "accept": { "listener_events", "listener_empty", "pauses",
//!       "errors": { "EMFILE": n, … }, "wakeups_per_accept" },
//!   "wakeups", "bytes_sent",
//!   "turns": { "count", "total_ms", "p50_le_us", "p99_le_us", "p999_le_us",
//!       "at_least_256us", "at_least_1ms", "log2_us_buckets": [24 counts],
//!       "longest": { "us", "events", "accepted", "closed", "expired" },
//!       "long_256us": { "count", "sum": { same fields, added up } } },
//!   "tls": { "handshakes_full", "handshakes_resumed",
//!       "handshake_failures": { "timeout_before_hello",
//!           "timeout_in_handshake", "malformed", "alert_received",
//!           "plaintext_http", "refused", "closed" } (each failure in
//!           exactly one kind, so that they add up),
//!       "alerts_after_handshake" },
//!   "poller": evdispatch::Stats summed over workers,
//!   "cache": { "hits", "misses", "revalidations", "reloads", "evictions",
//!       "bytes", "entries" } summed,
//!   "workers": [ { "worker", "cpu", "requests", "connections", "accept",
//!       "wakeups", "bytes_sent", "turns", "tls", "poller", "cache" }, … ] }
//! ```
//!
//! `turns` times the event loop's turns, from a wait's return to the next
//! wait (a request that arrives during a turn waits for the rest of it):
//! bucket `k` of `log2_us_buckets` counts turns of `[2^(k-1), 2^k)` µs
//! (bucket 0: under 1 µs), the `_le_us` quantiles are bounds in whole µs
//! (all derived from an HdrHistogram of 3 significant digits), and
//! `longest` is the longest turn with what it did, `long_256us` what the
//! turns of 256 µs or more did between them. Empty for `threads`.
//!
//! `accept.wakeups_per_accept` is listener reports per accepted connection:
//! above 1 with a shared listener is the thundering herd. For `threads` the
//! poller object is empty; for `uring-completion` it holds the ring's
//! counters (`waits`, `wait_syscalls`, `events` = completions,
//! `sqes_submitted`, `rearms`).

use std::time::Instant;

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use crate::content::files::CacheStats;
use crate::semantics::status::Status;
use crate::sys::errno_name;

/// Counters of one worker (one event loop, or the whole thread pool).
#[derive(Debug, Clone, Default)]
pub struct Counters {
    /// Responses sent, by [`Status::index`].
    pub requests: [u64; Status::ALL.len()],
    /// Connections accepted.
    pub accepted: u64,
    /// Connections closed (for any reason).
    pub closed: u64,
    /// Closed because the request headers did not arrive within `--header-timeout`.
    pub header_timed_out: u64,
    /// Closed because a keep-alive connection stayed idle past `--idle-timeout`.
    pub idle_timed_out: u64,
    /// Closed because the client stopped reading a response for `--idle-timeout`.
    pub write_timed_out: u64,
    /// Closed after an error or EOF from the client side (reset, broken pipe).
    pub client_errors: u64,
    /// Connections closed at once because the poller could not watch them
    /// (for example `select` and a descriptor ≥ 1024).
    pub register_errors: u64,
    /// `accept` failures, by errno.
    pub accept_errors: Vec<(i32, u64)>,
    /// Times accepting was paused (descriptor exhaustion or `--max-connections`).
    pub accept_pauses: u64,
    /// Times the listener was reported ready to this worker (the thundering
    /// herd shows as many of these per accepted connection).
    pub listener_events: u64,
    /// Listener reports that found nothing to accept (`EAGAIN` at once).
    pub listener_empty: u64,
    /// Waits that returned at least one event (or completion).
    pub wakeups: u64,
    /// Bytes of responses written (over TLS: the HTTP bytes handed to
    /// the encryption, not the records on the wire).
    pub bytes_sent: u64,
    /// Most connections open at once.
    pub peak_open: u64,
    /// How long the event loop's turns took (the work between two waits):
    /// a request that arrives during a turn waits for the rest of it.
    pub turns: Turns,
    /// TLS handshakes (all zero without `--tls-cert`).
    pub tls: TlsCounters,
}

/// TLS handshakes completed, by kind, and handshakes that failed, by why.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TlsCounters {
    /// Full handshakes completed.
    pub full: u64,
    /// Resumed handshakes completed (a session ticket or a cached session).
    pub resumed: u64,
    /// Handshakes closed at their deadline (`--header-timeout` from the
    /// accept) before the client sent a byte (no ClientHello began).
    pub failed_silent: u64,
    /// Handshakes closed at their deadline after the client began one (a
    /// ClientHello sent slowly, a handshake left unfinished).
    pub failed_timeout: u64,
    /// Plaintext HTTP sent to the HTTPS port (answered 400, as nginx does).
    pub failed_plaintext_http: u64,
    /// The client aborted the handshake with an alert (for example, it
    /// does not trust the certificate).
    pub failed_alert: u64,
    /// Handshake records or messages that do not decode, or come where
    /// none of their kind may (answered with an alert).
    pub failed_malformed: u64,
    /// Anything else the server refused: well-formed handshakes with no
    /// common version, cipher suite or ALPN protocol, or that break the
    /// protocol's rules (answered with an alert).
    pub failed_refused: u64,
    /// The client closed or reset the connection during the handshake.
    pub failed_closed: u64,
    /// Established connections the client ended with a fatal alert (also
    /// counted in [`Counters::client_errors`]).
    pub alerts_after_handshake: u64,
}

impl TlsCounters {
    fn merge(&mut self, o: &TlsCounters) {
        self.full += o.full;
        self.resumed += o.resumed;
        self.failed_silent += o.failed_silent;
        self.failed_timeout += o.failed_timeout;
        self.failed_plaintext_http += o.failed_plaintext_http;
        self.failed_alert += o.failed_alert;
        self.failed_malformed += o.failed_malformed;
        self.failed_refused += o.failed_refused;
        self.failed_closed += o.failed_closed;
        self.alerts_after_handshake += o.alerts_after_handshake;
    }

    /// Handshakes that failed, whatever the kind.
    pub fn failed(&self) -> u64 {
        self.failed_silent
            + self.failed_timeout
            + self.failed_plaintext_http
            + self.failed_alert
            + self.failed_malformed
            + self.failed_refused
            + self.failed_closed
    }

    fn to_json(self) -> Value {
        json!({
            "handshakes_full": self.full,
            "handshakes_resumed": self.resumed,
            "handshake_failures": {
                "timeout_before_hello": self.failed_silent,
                "timeout_in_handshake": self.failed_timeout,
                "malformed": self.failed_malformed,
                "alert_received": self.failed_alert,
                "plaintext_http": self.failed_plaintext_http,
                "refused": self.failed_refused,
                "closed": self.failed_closed,
            },
            "alerts_after_handshake": self.alerts_after_handshake,
        })
    }
}

/// Buckets of [`Turns`]: bucket 0 is under 1 µs, bucket `k` is
/// `[2^(k-1), 2^k)` µs, the last one everything longer.
pub const TURN_BUCKETS: usize = 24;

/// What one turn of the event loop did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnWork {
    /// Its length, nanoseconds.
    pub ns: u64,
    /// Events (or completions) it handled.
    pub events: u64,
    /// Connections it accepted.
    pub accepted: u64,
    /// Connections it closed.
    pub closed: u64,
    /// Timers that fired in it.
    pub expired: u64,
}

/// The distribution of the event loop's turn lengths, and the longest turn.
/// Measured between the return of one wait and the start of the next, from
/// clock reads the loop makes anyway.
///
/// The lengths go into an HdrHistogram (nanoseconds, 3 significant digits,
/// up to `TURN_MAX_NS`; longer turns count as that), allocated at the
/// first turn (the thread pool, which has no turns, never pays for one);
/// the JSON's power-of-two buckets and quantiles are derived from it.
#[derive(Debug, Clone, Default)]
pub struct Turns {
    hist: Option<Box<Histogram<u64>>>,
    /// Total time in turns, nanoseconds.
    pub total_ns: u64,
    /// The longest turn.
    pub longest: TurnWork,
    /// The turns of at least `LONG_TURN_US` added up: what the long turns
    /// were busy with.
    pub long: TurnWork,
    /// How many turns `long` adds up.
    pub long_count: u64,
}

/// A turn this long (µs) or longer is a long one (see [`Turns::long`]).
pub const LONG_TURN_US: u64 = 256;

/// The longest turn the histogram tells apart, ns (100 s).
pub const TURN_MAX_NS: u64 = 100_000_000_000;

impl TurnWork {
    fn add(&mut self, o: &TurnWork) {
        self.ns += o.ns;
        self.events += o.events;
        self.accepted += o.accepted;
        self.closed += o.closed;
        self.expired += o.expired;
    }

    fn to_json(self) -> Value {
        json!({
            "us": self.ns as f64 / 1e3,
            "events": self.events,
            "accepted": self.accepted,
            "closed": self.closed,
            "expired": self.expired,
        })
    }
}

impl Turns {
    fn hist(&mut self) -> &mut Histogram<u64> {
        self.hist.get_or_insert_with(|| {
            Box::new(Histogram::new_with_bounds(1, TURN_MAX_NS, 3).expect("valid bounds"))
        })
    }

    /// Count a turn.
    #[inline]
    pub fn record(&mut self, work: TurnWork) {
        self.hist().saturating_record(work.ns.max(1));
        self.total_ns += work.ns;
        if work.ns > self.longest.ns {
            self.longest = work;
        }
        if work.ns / 1000 >= LONG_TURN_US {
            self.long.add(&work);
            self.long_count += 1;
        }
    }

    /// Turns counted.
    pub fn count(&self) -> u64 {
        self.hist.as_ref().map_or(0, |h| h.len())
    }

    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &Turns) {
        if let Some(h) = &other.hist {
            // Same bounds on both sides: never fails.
            let _ = self.hist().add(&**h);
        }
        self.total_ns += other.total_ns;
        if other.longest.ns > self.longest.ns {
            self.longest = other.longest;
        }
        self.long.add(&other.long);
        self.long_count += other.long_count;
    }

    /// Turns of `[lo, hi]` ns.
    fn between_ns(&self, lo: u64, hi: u64) -> u64 {
        self.hist
            .as_ref()
            .map_or(0, |h| h.count_between(lo, hi.min(h.high())))
    }

    /// Turns by length in powers of two: bucket `k` counts turns of
    /// `[2^(k-1), 2^k)` µs (bucket 0: under 1 µs; the last: all longer).
    pub fn buckets(&self) -> [u64; TURN_BUCKETS] {
        let mut b = [0u64; TURN_BUCKETS];
        for (k, slot) in b.iter_mut().enumerate() {
            let lo = if k == 0 { 0 } else { (1u64 << (k - 1)) * 1000 };
            let hi = if k == TURN_BUCKETS - 1 {
                u64::MAX
            } else {
                (1u64 << k) * 1000 - 1
            };
            *slot = self.between_ns(lo, hi);
        }
        b
    }

    /// A bound, µs, that quantile `q` of the turns does not exceed (the
    /// histogram's value rounded up to whole µs).
    pub fn quantile_bound_us(&self, q: f64) -> u64 {
        match &self.hist {
            Some(h) if !h.is_empty() => h.value_at_quantile(q).div_ceil(1000),
            _ => 0,
        }
    }

    /// Turns at least `us` microseconds long.
    pub fn at_least_us(&self, us: u64) -> u64 {
        self.between_ns(us.saturating_mul(1000), u64::MAX)
    }

    fn to_json(&self) -> Value {
        json!({
            "count": self.count(),
            "total_ms": self.total_ns as f64 / 1e6,
            "p50_le_us": self.quantile_bound_us(0.5),
            "p99_le_us": self.quantile_bound_us(0.99),
            "p999_le_us": self.quantile_bound_us(0.999),
            "at_least_256us": self.at_least_us(256),
            "at_least_1ms": self.at_least_us(1000),
            "log2_us_buckets": self.buckets().to_vec(),
            "longest": self.longest.to_json(),
            "long_256us": { "count": self.long_count, "sum": self.long.to_json() },
        })
    }
}

/// Times the turns of an event loop: [`begin`](Self::begin) when a wait
/// returns, [`end`](Self::end) before the next wait, with the clock reads the
/// loop makes anyway.
#[derive(Debug, Default)]
pub(crate) struct TurnMeter {
    open: Option<TurnWork>,
}

impl TurnMeter {
    /// A turn starts with `events` to handle.
    #[inline]
    pub(crate) fn begin(&mut self, events: usize, counters: &Counters) {
        self.open = Some(TurnWork {
            events: events as u64,
            accepted: counters.accepted,
            closed: counters.closed,
            ..TurnWork::default()
        });
    }

    /// Timers fired in this turn.
    #[inline]
    pub(crate) fn expired(&mut self, n: u64) {
        if let Some(t) = &mut self.open {
            t.expired += n;
        }
    }

    /// The turn begun at `started` ends at `now` (nothing if none began).
    #[inline]
    pub(crate) fn end(&mut self, started: Instant, now: Instant, counters: &mut Counters) {
        if let Some(mut t) = self.open.take() {
            t.ns = now.saturating_duration_since(started).as_nanos() as u64;
            t.accepted = counters.accepted - t.accepted;
            t.closed = counters.closed - t.closed;
            counters.turns.record(t);
        }
    }
}

impl Counters {
    /// Count a response.
    #[inline]
    pub fn response(&mut self, st: Status) {
        self.requests[st.index()] += 1;
    }

    /// Count an `accept` error.
    pub fn accept_error(&mut self, errno: i32) {
        self.accept_errors_add(errno, 1);
    }

    fn accept_errors_add(&mut self, errno: i32, n: u64) {
        match self.accept_errors.iter_mut().find(|(e, _)| *e == errno) {
            Some((_, m)) => *m += n,
            None => self.accept_errors.push((errno, n)),
        }
    }

    /// Add `other` into `self`.
    pub fn merge(&mut self, other: &Counters) {
        for (a, b) in self.requests.iter_mut().zip(other.requests.iter()) {
            *a += b;
        }
        self.accepted += other.accepted;
        self.closed += other.closed;
        self.header_timed_out += other.header_timed_out;
        self.idle_timed_out += other.idle_timed_out;
        self.write_timed_out += other.write_timed_out;
        self.client_errors += other.client_errors;
        self.register_errors += other.register_errors;
        for &(e, n) in &other.accept_errors {
            self.accept_errors_add(e, n);
        }
        self.accept_pauses += other.accept_pauses;
        self.listener_events += other.listener_events;
        self.listener_empty += other.listener_empty;
        self.wakeups += other.wakeups;
        self.bytes_sent += other.bytes_sent;
        self.peak_open += other.peak_open;
        self.turns.merge(&other.turns);
        self.tls.merge(&other.tls);
    }

    /// Total responses.
    pub fn total_requests(&self) -> u64 {
        self.requests.iter().sum()
    }

    fn requests_json(&self) -> Value {
        let mut by = Map::new();
        for st in Status::ALL {
            let n = self.requests[st.index()];
            if n > 0 {
                by.insert(st.code().to_string(), json!(n));
            }
        }
        json!({ "total": self.total_requests(), "by_status": by })
    }

    fn accept_errors_json(&self) -> Value {
        let mut m = Map::new();
        for &(e, n) in &self.accept_errors {
            m.insert(errno_name(e), json!(n));
        }
        Value::Object(m)
    }

    /// The JSON of these counters (the `totals` object and each worker's).
    pub fn to_json(&self) -> Value {
        json!({
            "requests": self.requests_json(),
            "connections": {
                "accepted": self.accepted,
                "closed": self.closed,
                "header_timed_out": self.header_timed_out,
                "idle_timed_out": self.idle_timed_out,
                "write_timed_out": self.write_timed_out,
                "client_errors": self.client_errors,
                "register_errors": self.register_errors,
                "peak_open": self.peak_open,
            },
            "accept": {
                "listener_events": self.listener_events,
                "listener_empty": self.listener_empty,
                "pauses": self.accept_pauses,
                "errors": self.accept_errors_json(),
                "wakeups_per_accept": ratio(self.listener_events, self.accepted),
            },
            "wakeups": self.wakeups,
            "bytes_sent": self.bytes_sent,
            "turns": self.turns.to_json(),
            "tls": self.tls.to_json(),
        })
    }
}

fn ratio(a: u64, b: u64) -> Value {
    if b == 0 {
        Value::Null
    } else {
        json!(a as f64 / b as f64)
    }
}

/// Field-wise sum of numeric JSON objects (used for the pollers' `Stats`,
/// so a counter added to the library is summed without this code knowing it).
pub fn sum_json(values: &[Value]) -> Value {
    let mut out = Map::new();
    for v in values {
        if let Value::Object(m) = v {
            for (k, x) in m {
                let add = x.as_u64().unwrap_or(0);
                let e = out.entry(k.clone()).or_insert(json!(0u64));
                *e = json!(e.as_u64().unwrap_or(0) + add);
            }
        }
    }
    Value::Object(out)
}

/// One worker's final report.
#[derive(Debug, Clone)]
pub struct WorkerReport {
    /// Worker number.
    pub worker: usize,
    /// The CPU it was pinned to, if any.
    pub cpu: Option<usize>,
    /// Its counters.
    pub counters: Counters,
    /// The poller's (or ring's) statistics, as JSON (`evdispatch::Stats`).
    pub poller: Value,
    /// Its file cache's statistics.
    pub cache: CacheStats,
}

/// Everything the server reports when it stops.
#[derive(Debug, Clone)]
pub struct ServerReport {
    /// `readiness`, `threads` or `uring-completion`.
    pub model: &'static str,
    /// The `--mechanism` value.
    pub mechanism: String,
    /// The configuration, as JSON.
    pub config: Value,
    /// The address actually listened on (the real port when 0 was asked).
    pub address: String,
    /// Seconds from listening to stopped.
    pub elapsed_s: f64,
    /// One report per worker.
    pub workers: Vec<WorkerReport>,
}

impl ServerReport {
    /// All workers' counters added up.
    pub fn totals(&self) -> Counters {
        let mut t = Counters::default();
        for w in &self.workers {
            t.merge(&w.counters);
        }
        t
    }

    /// The `--stats-json` document (see the crate docs for the schema).
    pub fn to_json(&self) -> Value {
        let cache = |w: &WorkerReport| serde_json::to_value(w.cache).unwrap_or(Value::Null);
        let sum = |f: &dyn Fn(&WorkerReport) -> Value| {
            sum_json(&self.workers.iter().map(f).collect::<Vec<_>>())
        };
        let head = json!({
            "schema": "evdispatch-serve-stats/1",
            "model": self.model,
            "mechanism": self.mechanism,
            "address": self.address,
            "config": self.config,
            "elapsed_s": self.elapsed_s,
        });
        let workers: Vec<Value> = self
            .workers
            .iter()
            .map(|w| {
                let more = json!({
                    "worker": w.worker,
                    "cpu": w.cpu,
                    "poller": w.poller,
                    "cache": cache(w),
                });
                merged(w.counters.to_json(), more)
            })
            .collect();
        let tail = json!({
            "poller": sum(&|w| w.poller.clone()),
            "cache": sum(&cache),
            "workers": workers,
        });
        merged(merged(head, self.totals().to_json()), tail)
    }
}

/// The object `a` with the members of the object `b` added after its own.
fn merged(mut a: Value, b: Value) -> Value {
    if let (Value::Object(a), Value::Object(b)) = (&mut a, b) {
        a.extend(b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(ns: u64) -> TurnWork {
        TurnWork {
            ns,
            ..TurnWork::default()
        }
    }

    #[test]
    fn turn_histogram() {
        let mut t = Turns::default();
        assert_eq!((t.count(), t.quantile_bound_us(0.5)), (0, 0));
        // 0.5 µs → bucket 0, 1 µs → 1, 3 µs → 2 ([2, 4)), 1,500 µs → 11.
        for ns in [500, 1_000, 3_000, 3_900, 1_500_000] {
            t.record(turn(ns));
        }
        let b = t.buckets();
        assert_eq!(b[0], 1);
        assert_eq!(b[1], 1);
        assert_eq!(b[2], 2);
        assert_eq!(b[11], 1);
        assert_eq!(b.iter().sum::<u64>(), 5);
        assert_eq!(t.count(), 5);
        assert_eq!(t.longest.ns, 1_500_000);
        // The median turn took 3 µs, the 99th percentile 1.5 ms: bounds
        // from the top of their histogram buckets (3 digits), in whole µs.
        assert!((3..=4).contains(&t.quantile_bound_us(0.5)));
        assert!((1500..=1502).contains(&t.quantile_bound_us(0.99)));
        assert_eq!(t.at_least_us(1000), 1);
        assert_eq!(t.at_least_us(2), 3);
        assert_eq!(t.at_least_us(LONG_TURN_US), t.long_count);
        assert_eq!(t.long.ns, 1_500_000);
        // Very long turns land in the last bucket.
        t.record(turn(u64::MAX / 2));
        assert_eq!(t.buckets()[TURN_BUCKETS - 1], 1);
        let mut u = Turns::default();
        u.record(turn(2_000_000));
        u.merge(&t);
        assert_eq!(u.count(), 7);
        assert_eq!(u.buckets()[11], 2);
        assert_eq!(u.longest.ns, u64::MAX / 2);
        // A bucket boundary belongs to the bucket above it.
        let mut e = Turns::default();
        e.record(turn(2_048_000 - 1));
        e.record(turn(2_048_000));
        assert_eq!((e.buckets()[11], e.buckets()[12]), (1, 1));
    }

    #[test]
    fn merge_and_json() {
        let mut a = Counters::default();
        a.response(Status::Ok);
        a.accept_error(libc::EMFILE);
        a.accepted = 2;
        a.listener_events = 4;
        let mut b = Counters::default();
        b.response(Status::NotFound);
        b.accept_error(libc::EMFILE);
        b.accept_error(libc::EMFILE);
        b.accept_error(libc::ENFILE);
        a.merge(&b);
        let j = a.to_json();
        assert_eq!(j["requests"]["total"], 2);
        assert_eq!(j["requests"]["by_status"]["404"], 1);
        assert_eq!(j["accept"]["errors"]["EMFILE"], 3);
        assert_eq!(j["accept"]["errors"]["ENFILE"], 1);
        assert_eq!(j["accept"]["wakeups_per_accept"], 2.0);
        assert_eq!(j["turns"]["count"], 0);
        let s = sum_json(&[json!({"waits": 2, "x": 1}), json!({"waits": 3})]);
        assert_eq!(s, json!({"waits": 5, "x": 1}));
    }
}
