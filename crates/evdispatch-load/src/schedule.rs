//! Open-loop planning, apart from any I/O: when each arrival is due
//! ([`Arrivals`]), which persistent connection takes it ([`RoundRobin`]),
//! and whether it left late enough to count as a missed slot
//! ([`late`]). The engine asks these questions; the answers depend only on
//! the rate, the seed and the clock readings it passes in.

use std::time::{Duration, Instant};

use rand::{rngs::SmallRng, SeedableRng};
use rand_distr::{Distribution, Exp};

use crate::config::Arrival;

/// Planned arrival times of one open-loop workload.
#[derive(Debug, Clone)]
pub struct Arrivals {
    base: Instant,
    rate: f64,
    k: u64,
    poisson: Option<(SmallRng, Exp<f64>, f64)>,
}

impl Arrivals {
    /// Arrivals at `rate` per second from `base`: evenly spaced
    /// (`uniform`, the first at `base`) or with exponential gaps of mean
    /// `1/rate` drawn from a generator seeded with `seed` (`poisson`, the
    /// first at `base` too). `rate` must be positive.
    pub fn new(base: Instant, rate: f64, arrival: Arrival, seed: u64) -> Arrivals {
        let poisson = match arrival {
            Arrival::Uniform => None,
            Arrival::Poisson => Some((
                SmallRng::seed_from_u64(seed),
                Exp::new(rate).expect("positive rate"),
                0.0,
            )),
        };
        Arrivals {
            base,
            rate,
            k: 0,
            poisson,
        }
    }

    /// Arrivals per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The next planned instant, computed from the start (`base + k/rate`,
    /// or the running sum of the gaps), so that no rounding accumulates.
    pub fn next_instant(&mut self) -> Instant {
        let offset = match &mut self.poisson {
            None => self.k as f64 / self.rate,
            Some((rng, exp, acc)) => {
                let now = *acc;
                *acc += exp.sample(rng);
                now
            }
        };
        self.k += 1;
        self.base + Duration::from_secs_f64(offset)
    }
}

/// Deals arrivals to `n` persistent connections in turn (seed 004 §3.1:
/// with `C` connections sharing `R` requests/s, each sends every `C/R`).
#[derive(Debug, Clone, Default)]
pub struct RoundRobin {
    next: usize,
}

impl RoundRobin {
    /// The index, below `n`, of the connection that takes the next arrival.
    /// `n` must not be zero.
    pub fn deal(&mut self, n: usize) -> usize {
        let i = self.next % n;
        self.next = (i + 1) % n;
        i
    }
}

/// True when a request planned for `slot` and sent at `now` left later than
/// `tolerance` allows (one sent early or on time is not).
pub fn late(slot: Instant, now: Instant, tolerance: Duration) -> bool {
    now.saturating_duration_since(slot) > tolerance
}

/// Whether an arrival due at `slot`, seen at `now`, is a missed slot: its
/// connection is not `ready` (still busy with an earlier request, so the
/// arrival queues behind it), or the generator itself is [`late`].
pub fn missed(ready: bool, slot: Instant, now: Instant, tolerance: Duration) -> bool {
    !ready || late(slot, now, tolerance)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(a: &mut Arrivals, base: Instant, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| a.next_instant().duration_since(base).as_secs_f64())
            .collect()
    }

    #[test]
    fn uniform_arrivals_are_evenly_spaced_from_the_base() {
        let base = Instant::now();
        let mut a = Arrivals::new(base, 250.0, Arrival::Uniform, 1);
        let t = offsets(&mut a, base, 10_001);
        assert_eq!(t[0], 0.0, "the first arrival is at the base");
        for (k, x) in t.iter().enumerate() {
            // Each offset is k/rate to the nanosecond: no drift after 10,000 gaps.
            let want = k as f64 / 250.0;
            assert!((x - want).abs() < 2e-9, "arrival {k} at {x}, want {want}");
        }
    }

    #[test]
    fn poisson_arrivals_repeat_with_the_seed_and_keep_the_mean_rate() {
        let base = Instant::now();
        let draw = |seed| {
            offsets(
                &mut Arrivals::new(base, 1000.0, Arrival::Poisson, seed),
                base,
                20_000,
            )
        };
        let (a, b, c) = (draw(7), draw(7), draw(8));
        assert_eq!(a, b, "the same seed plans the same arrivals");
        assert_ne!(a, c, "another seed plans others");
        assert_eq!(a[0], 0.0);
        assert!(a.windows(2).all(|w| w[1] >= w[0]), "arrivals in order");
        let gaps: Vec<f64> = a.windows(2).map(|w| w[1] - w[0]).collect();
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        // Exponential gaps of mean 1 ms: the standard error of the mean of
        // 20,000 of them is 1 ms / sqrt(20,000) ≈ 0.7 %; 5 % is seven of them.
        assert!((mean - 0.001).abs() < 0.000_05, "mean gap {mean} s");
        // Their spread is that of an exponential: standard deviation = mean.
        let var = gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / gaps.len() as f64;
        assert!(
            (var.sqrt() / mean - 1.0).abs() < 0.05,
            "cv {}",
            var.sqrt() / mean
        );
    }

    #[test]
    fn round_robin_deals_each_connection_in_turn() {
        let mut rr = RoundRobin::default();
        let dealt: Vec<usize> = (0..9).map(|_| rr.deal(3)).collect();
        assert_eq!(dealt, [0, 1, 2, 0, 1, 2, 0, 1, 2]);
        // Every connection gets the same share of a long run.
        let mut counts = [0u32; 4];
        for _ in 0..4000 {
            counts[rr.deal(4)] += 1;
        }
        assert_eq!(counts, [1000; 4]);
        let mut one = RoundRobin::default();
        assert!((0..5).all(|_| one.deal(1) == 0));
    }

    #[test]
    fn a_slot_is_missed_only_beyond_the_tolerance() {
        let t = Instant::now();
        let tol = Duration::from_millis(5);
        assert!(!late(t, t, tol), "on time");
        assert!(!late(t + Duration::from_millis(1), t, tol), "early");
        assert!(
            !late(t, t + tol, tol),
            "exactly the tolerance is still on time"
        );
        assert!(late(t, t + tol + Duration::from_micros(1), tol));
        assert!(late(t, t + Duration::from_secs(1), Duration::ZERO));
        // A busy connection misses its slot even when the clock is on time.
        assert!(missed(false, t, t, tol));
        assert!(!missed(true, t, t, tol));
        assert!(missed(true, t, t + Duration::from_millis(6), tol));
    }
}
