//! The run's histograms: their bounds, the four a run keeps
//! ([`Histograms`]), and how each travels from the workers and appears in
//! the `--json` output (HdrHistogram's V2 serialization, base64).

use std::io;

use anyhow::{anyhow, Context};
use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2Serializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency the histograms hold, µs (one hour); larger values are
/// clamped to it.
pub const MAX_US: u64 = 3_600_000_000;

/// A new latency histogram: 1 µs to one hour, 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("valid histogram bounds")
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

/// Four empty histograms ([`new_histogram`]).
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

/// A histogram in HdrHistogram's V2 serialization, base64: how histograms
/// travel from the workers and appear in the `--json` output.
pub fn encode(h: &Histogram<u64>) -> anyhow::Result<String> {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| anyhow!("cannot serialize a histogram: {e:?}"))?;
    Ok(base64::engine::general_purpose::STANDARD.encode(buf))
}

/// The histogram [`encode`] wrote.
pub fn decode(s: &str) -> anyhow::Result<Histogram<u64>> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .context("a worker's histogram is not valid base64")?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut io::Cursor::new(bytes))
        .map_err(|e| anyhow!("a worker's histogram does not deserialize: {e:?}"))?;
    Ok(h)
}
