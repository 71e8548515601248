//! Medians and spreads of timing samples.

use serde::Serialize;

/// Order statistics of a set of durations, in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of samples.
    pub count: usize,
    /// Median.
    pub median_us: f64,
    /// 90th percentile (nearest rank).
    pub p90_us: f64,
    /// Smallest.
    pub min_us: f64,
    /// Largest.
    pub max_us: f64,
    /// Arithmetic mean.
    pub mean_us: f64,
}

impl Summary {
    /// Summarise samples given in nanoseconds (sorted in place). `None` when
    /// there are none.
    pub fn of_ns(samples: &mut [u64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let n = samples.len();
        let us = |ns: u64| ns as f64 / 1000.0;
        let rank = |p: f64| {
            let r = (p * n as f64).ceil() as usize;
            samples[r.clamp(1, n) - 1]
        };
        let median = if n % 2 == 1 {
            us(samples[n / 2])
        } else {
            (us(samples[n / 2 - 1]) + us(samples[n / 2])) / 2.0
        };
        Some(Summary {
            count: n,
            median_us: median,
            p90_us: us(rank(0.9)),
            min_us: us(samples[0]),
            max_us: us(samples[n - 1]),
            mean_us: samples.iter().map(|&s| s as f64).sum::<f64>() / n as f64 / 1000.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        let mut s: Vec<u64> = (1..=10).rev().map(|i| i * 1000).collect();
        let m = Summary::of_ns(&mut s).unwrap();
        assert_eq!(m.count, 10);
        assert_eq!(m.median_us, 5.5);
        assert_eq!(m.p90_us, 9.0);
        assert_eq!((m.min_us, m.max_us), (1.0, 10.0));
        assert_eq!(m.mean_us, 5.5);
        let mut one = vec![2500];
        assert_eq!(Summary::of_ns(&mut one).unwrap().median_us, 2.5);
        assert!(Summary::of_ns(&mut []).is_none());
    }
}
