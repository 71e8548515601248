//! One sampling interval (`--interval`) of the measured window: what a
//! worker sends as the interval ends ([`IntervalReport`]), and the sum over
//! the workers that the parent builds ([`IntervalJoin`] → [`Interval`]),
//! sent on while the run goes on (the render stage writes it out).
//!
//! A reply belongs to the interval in which the worker's loop received it;
//! requests to the interval in which they were sent (so the intervals add
//! up to the run's `requests`, but for measured requests that waited for
//! their connection past the window); errors to the one in which they were
//! counted. Replies that arrive in the drain after the window are in the
//! run's totals, not in any interval.

use std::collections::BTreeMap;
use std::sync::mpsc::Sender;
use std::time::{Duration, SystemTime};

use anyhow::anyhow;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::{decode, new_histogram, per_s};

/// One worker's interval, as sent to the parent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalReport {
    /// Interval number, 0 at the start of the window.
    pub index: u32,
    /// Its start, seconds from the start of the window.
    pub start_s: f64,
    /// Its end, seconds from the start of the window (shorter than
    /// `--interval` for the last one of an interrupted run).
    pub end_s: f64,
    /// Measured requests sent in it.
    pub requests: u64,
    /// Measured replies received in it.
    pub replies: u64,
    /// Errors counted in it.
    pub errors: u64,
    /// Corrected latency of its replies (V2 serialization, base64).
    pub latency_hist: String,
    /// Uncorrected latency of its replies.
    pub latency_uncorrected_hist: String,
}

/// An interval summed over all workers, histograms decoded.
#[derive(Debug, Clone)]
pub struct Interval {
    /// Interval number.
    pub index: u32,
    /// Start, seconds from the start of the window.
    pub start_s: f64,
    /// End, seconds from the start of the window.
    pub end_s: f64,
    /// Wall-clock start of the window (all intervals count from it).
    pub window_start: SystemTime,
    /// Measured requests sent in it.
    pub requests: u64,
    /// Measured replies received in it.
    pub replies: u64,
    /// Errors counted in it.
    pub errors: u64,
    /// Corrected latency, µs.
    pub latency: Histogram<u64>,
    /// Uncorrected latency, µs.
    pub latency_uncorrected: Histogram<u64>,
}

impl Interval {
    fn empty(index: u32, window_start: SystemTime) -> Interval {
        Interval {
            index,
            start_s: f64::MAX,
            end_s: 0.0,
            window_start,
            requests: 0,
            replies: 0,
            errors: 0,
            latency: new_histogram(),
            latency_uncorrected: new_histogram(),
        }
    }

    fn add(&mut self, r: &IntervalReport) -> anyhow::Result<()> {
        self.start_s = self.start_s.min(r.start_s);
        self.end_s = self.end_s.max(r.end_s);
        self.requests += r.requests;
        self.replies += r.replies;
        self.errors += r.errors;
        for (h, s) in [
            (&mut self.latency, &r.latency_hist),
            (&mut self.latency_uncorrected, &r.latency_uncorrected_hist),
        ] {
            h.add(decode(s)?)
                .map_err(|e| anyhow!("cannot add an interval histogram: {e:?}"))?;
        }
        Ok(())
    }

    /// Replies per second over the interval.
    pub fn reply_rate(&self) -> f64 {
        per_s(self.replies, self.end_s - self.start_s)
    }
}

/// Seconds since the Unix epoch.
pub fn unix_s(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Sums the workers' reports of each interval and sends each on as it
/// completes: when every worker has sent it (each sends them in order, so
/// they complete in order).
#[derive(Debug)]
pub struct IntervalJoin {
    workers: usize,
    tx: Option<Sender<Interval>>,
    /// Wall-clock start of the window (None: not started, or finished).
    window_start: Option<SystemTime>,
    partial: BTreeMap<u32, (usize, Interval)>,
}

impl IntervalJoin {
    /// A join over `workers` workers that sends the sums on `tx`.
    pub fn new(tx: Option<Sender<Interval>>, workers: usize) -> IntervalJoin {
        IntervalJoin {
            workers,
            tx,
            window_start: None,
            partial: BTreeMap::new(),
        }
    }

    /// The run starts now: its window starts after the warm-up.
    pub fn go(&mut self, warmup_s: f64) {
        self.window_start = Some(SystemTime::now() + Duration::from_secs_f64(warmup_s));
    }

    /// Add one worker's report; send the sum when it was the last one missing.
    pub fn add(&mut self, r: &IntervalReport) -> anyhow::Result<()> {
        let (Some(ws), Some(tx)) = (self.window_start, &self.tx) else {
            return Ok(());
        };
        let (n, iv) = self
            .partial
            .entry(r.index)
            .or_insert_with(|| (0, Interval::empty(r.index, ws)));
        iv.add(r)?;
        *n += 1;
        if *n < self.workers {
            return Ok(());
        }
        if let Some((_, iv)) = self.partial.remove(&r.index) {
            let _ = tx.send(iv);
        }
        Ok(())
    }

    /// Send on, in order, the intervals not every worker sent (a worker
    /// stopped early); add nothing after.
    pub fn finish(&mut self) {
        if let (Some(_), Some(tx)) = (self.window_start.take(), &self.tx) {
            for (_, iv) in std::mem::take(&mut self.partial).into_values() {
                let _ = tx.send(iv);
            }
        }
    }
}
