//! What the server counts, and the `--stats-json` document the study reads.

use serde_json::{json, Map, Value};

use crate::files::CacheStats;
use crate::status::Status;
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
    /// Bytes of responses written.
    pub bytes_sent: u64,
    /// Most connections open at once.
    pub peak_open: u64,
}

impl Counters {
    /// Count a response.
    #[inline]
    pub fn response(&mut self, st: Status) {
        self.requests[st.index()] += 1;
    }

    /// Count an `accept` error.
    pub fn accept_error(&mut self, errno: i32) {
        match self.accept_errors.iter_mut().find(|(e, _)| *e == errno) {
            Some((_, n)) => *n += 1,
            None => self.accept_errors.push((errno, 1)),
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
            match self.accept_errors.iter_mut().find(|(x, _)| *x == e) {
                Some((_, m)) => *m += n,
                None => self.accept_errors.push((e, n)),
            }
        }
        self.accept_pauses += other.accept_pauses;
        self.listener_events += other.listener_events;
        self.listener_empty += other.listener_empty;
        self.wakeups += other.wakeups;
        self.bytes_sent += other.bytes_sent;
        self.peak_open += other.peak_open;
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
        let totals = self.totals();
        let poller = sum_json(
            &self
                .workers
                .iter()
                .map(|w| w.poller.clone())
                .collect::<Vec<_>>(),
        );
        let cache = sum_json(
            &self
                .workers
                .iter()
                .map(|w| serde_json::to_value(w.cache).unwrap_or(Value::Null))
                .collect::<Vec<_>>(),
        );
        let mut doc = totals.to_json();
        let obj = doc.as_object_mut().expect("object");
        let mut head = Map::new();
        head.insert("schema".into(), json!("evdispatch-serve-stats/1"));
        head.insert("model".into(), json!(self.model));
        head.insert("mechanism".into(), json!(self.mechanism));
        head.insert("address".into(), json!(self.address));
        head.insert("config".into(), self.config.clone());
        head.insert("elapsed_s".into(), json!(self.elapsed_s));
        for (k, v) in std::mem::take(obj) {
            head.insert(k, v);
        }
        head.insert("poller".into(), poller);
        head.insert("cache".into(), cache);
        head.insert(
            "workers".into(),
            Value::Array(
                self.workers
                    .iter()
                    .map(|w| {
                        let mut v = w.counters.to_json();
                        let o = v.as_object_mut().expect("object");
                        o.insert("worker".into(), json!(w.worker));
                        o.insert("cpu".into(), json!(w.cpu));
                        o.insert("poller".into(), w.poller.clone());
                        o.insert(
                            "cache".into(),
                            serde_json::to_value(w.cache).unwrap_or(Value::Null),
                        );
                        v
                    })
                    .collect(),
            ),
        );
        Value::Object(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let s = sum_json(&[json!({"waits": 2, "x": 1}), json!({"waits": 3})]);
        assert_eq!(s, json!({"waits": 5, "x": 1}));
    }
}
