//! The intervals as they leave the program while the run goes on: a JSON
//! line on standard output (`--json-stream`), a CSV row (`--csv`) and two
//! histograms of an HdrHistogram interval log (`--hdr-log`).

use std::io::Write;
use std::time::Duration;

use anyhow::{anyhow, Context};
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::results::record::interval::{unix_s, Interval};
use crate::results::summary::Latency;

/// What the `--json-stream` line and the `--csv` row begin with.
#[derive(Debug, Serialize)]
struct Head {
    /// Interval number, from 0.
    interval: u32,
    /// Start and end, seconds from the start of the window.
    start_s: f64,
    end_s: f64,
    /// Wall-clock start, Unix seconds.
    time_unix_s: f64,
    requests: u64,
    replies: u64,
    errors: u64,
    /// Replies per second over the interval.
    reply_rate: f64,
}

impl Head {
    /// The `--csv` columns: the fields' names and values, in order.
    fn cells(&self) -> [(&'static str, String); 8] {
        [
            ("interval", self.interval.to_string()),
            ("start_s", self.start_s.to_string()),
            ("end_s", self.end_s.to_string()),
            ("time_unix_s", format!("{:.6}", self.time_unix_s)),
            ("requests", self.requests.to_string()),
            ("replies", self.replies.to_string()),
            ("errors", self.errors.to_string()),
            ("reply_rate", self.reply_rate.to_string()),
        ]
    }
}

/// One `--json-stream` line: an interval summed over the workers.
#[derive(Debug, Serialize)]
struct StreamLine {
    #[serde(flatten)]
    head: Head,
    latency_us: Latency,
    latency_uncorrected_us: Latency,
}

impl Head {
    /// The head of `iv`.
    fn of(iv: &Interval) -> Head {
        Head {
            interval: iv.index,
            start_s: iv.start_s,
            end_s: iv.end_s,
            time_unix_s: unix_s(iv.window_start + Duration::from_secs_f64(iv.start_s)),
            requests: iv.requests,
            replies: iv.replies,
            errors: iv.errors,
            reply_rate: iv.reply_rate(),
        }
    }
}

/// The `--json-stream` line of `iv` (without its newline).
pub fn json_line(iv: &Interval) -> String {
    let line = StreamLine {
        head: Head::of(iv),
        latency_us: Latency::of(&iv.latency),
        latency_uncorrected_us: Latency::of(&iv.latency_uncorrected),
    };
    serde_json::to_string(&line).unwrap_or_default()
}

/// The percentile columns of `--csv`, after the [`Head`] ones (each also
/// with `uncorrected_` before it), and their quantiles (1: the largest).
const CSV_PERCENTILES: [(&str, f64); 7] = [
    ("p50_us", 0.5),
    ("p75_us", 0.75),
    ("p90_us", 0.9),
    ("p99_us", 0.99),
    ("p99_9_us", 0.999),
    ("p99_99_us", 0.9999),
    ("max_us", 1.0),
];

/// Where the intervals go while the run goes on.
pub struct Sinks {
    stream: bool,
    csv: Option<(csv::Writer<std::fs::File>, bool)>,
    hdr: Option<(std::fs::File, String)>,
}

/// The [`CSV_PERCENTILES`] of `h`, µs (0 when it is empty).
fn quantiles(h: &Histogram<u64>) -> impl Iterator<Item = u64> + '_ {
    CSV_PERCENTILES.iter().map(|&(_, q)| match q {
        _ if h.is_empty() => 0,
        q if q < 1.0 => h.value_at_quantile(q),
        _ => h.max(),
    })
}

impl Sinks {
    /// Open the files named (created or truncated now, so that a bad path
    /// fails before the run).
    pub fn open(
        stream: bool,
        csv_path: Option<&std::path::Path>,
        hdr_path: Option<&std::path::Path>,
    ) -> anyhow::Result<Sinks> {
        let csv = csv_path
            .map(|p| {
                csv::WriterBuilder::new()
                    .has_headers(false)
                    .from_path(p)
                    .map(|w| (w, false))
                    .with_context(|| format!("--csv: cannot create {}", p.display()))
            })
            .transpose()?;
        let hdr = hdr_path
            .map(|p| {
                std::fs::File::create(p)
                    .with_context(|| format!("--hdr-log: cannot create {}", p.display()))
                    .map(|f| (f, p.display().to_string()))
            })
            .transpose()?;
        Ok(Sinks { stream, csv, hdr })
    }

    /// Write every interval that arrives on `rx` until the sender goes away.
    /// The HdrHistogram log's header needs the window's start: it is written
    /// when the first interval comes.
    pub fn run(self, rx: std::sync::mpsc::Receiver<Interval>) -> anyhow::Result<()> {
        let Sinks {
            stream,
            mut csv,
            mut hdr,
        } = self;
        let Ok(first) = rx.recv() else {
            return Ok(());
        };
        let mut ser = V2DeflateSerializer::new();
        let hdr_name = hdr.as_ref().map(|(_, n)| n.clone()).unwrap_or_default();
        let hdr_err = || format!("--hdr-log: cannot write {hdr_name}");
        let mut log = match &mut hdr {
            Some((f, _)) => {
                // The header as HdrHistogram's own writers lay it out, with
                // the column legend they end it with (the crate's writer
                // leaves the legend out; its divisor line follows).
                let t0 = unix_s(first.window_start);
                write!(
                    f,
                    "#[Logged with evdispatch load: values in microseconds, max column in milliseconds]\n\
                     #[Histogram log format version 1.3]\n\
                     #[Tags: corrected (from the intended send time), uncorrected (from the actual send)]\n\
                     #[StartTime: {t0:.3} (seconds since epoch)]\n\
                     #[BaseTime: {t0:.3} (seconds since epoch)]\n\
                     \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
                )
                .with_context(hdr_err)?;
                Some(
                    IntervalLogWriterBuilder::new()
                        .with_max_value_divisor(1000.0)
                        .begin_log_with(f, &mut ser)
                        .with_context(hdr_err)?,
                )
            }
            None => None,
        };
        for iv in std::iter::once(first).chain(rx.iter()) {
            if stream {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{}", json_line(&iv));
                let _ = out.flush();
            }
            if let Some((w, headed)) = &mut csv {
                write_csv(w, headed, &iv).context("--csv: cannot write")?;
            }
            if let Some(w) = &mut log {
                // Timestamps in seconds since the BaseTime (the window's start).
                let start = Duration::from_secs_f64(iv.start_s);
                let len = Duration::from_secs_f64((iv.end_s - iv.start_s).max(0.0));
                for (h, tag) in [
                    (&iv.latency, "corrected"),
                    (&iv.latency_uncorrected, "uncorrected"),
                ] {
                    w.write_histogram(h, start, len, Tag::new(tag))
                        .map_err(|e| anyhow!("{e:?}"))
                        .with_context(hdr_err)?;
                }
            }
        }
        Ok(())
    }
}

/// One `--csv` row: the [`Head`] columns, then the percentiles corrected and
/// uncorrected; the header row before the first.
fn write_csv(
    w: &mut csv::Writer<std::fs::File>,
    headed: &mut bool,
    iv: &Interval,
) -> anyhow::Result<()> {
    let cells = Head::of(iv).cells();
    if !*headed {
        *headed = true;
        let names = cells.iter().map(|(n, _)| n.to_string());
        let pct = CSV_PERCENTILES.iter().map(|(p, _)| p.to_string());
        let upct = CSV_PERCENTILES
            .iter()
            .map(|(p, _)| format!("uncorrected_{p}"));
        w.write_record(names.chain(pct).chain(upct))?;
    }
    let q = quantiles(&iv.latency)
        .chain(quantiles(&iv.latency_uncorrected))
        .map(|v| v.to_string());
    w.write_record(cells.into_iter().map(|(_, v)| v).chain(q))?;
    w.flush()?;
    Ok(())
}
