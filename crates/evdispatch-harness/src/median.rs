//! Medians of measurement rounds, with a distribution-free interval.

/// The median of `v` (sorted in place): the middle value, or the mean of
/// the two middle ones; NaN when `v` is empty. Rounds of a measurement are
/// summarised by it, so one disturbed round moves no figure.
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Sorts `v` and returns `(low, median, high)`: the median and a
/// distribution-free confidence interval for it, made of order statistics
/// (the number of samples below the true median is binomial, n and ½), that
/// covers it with probability at least `level`. With too few samples for
/// `level`, the interval is the whole range.
pub fn median_interval(v: &mut [f64], level: f64) -> (f64, f64, f64) {
    let m = median(v);
    let n = v.len();
    if n == 0 {
        return (f64::NAN, m, f64::NAN);
    }
    // P(B <= j) for B ~ Binomial(n, 1/2), accumulated term by term.
    let (mut term, mut below) = (0.5f64.powi(n as i32), 0.0);
    let mut k = 0;
    for j in 0..n / 2 {
        below += term;
        if 1.0 - 2.0 * below < level {
            break;
        }
        k = j;
        term *= (n - j) as f64 / (j + 1) as f64;
    }
    (v[k], m, v[n - 1 - k])
}

#[cfg(test)]
mod tests {
    use super::median_interval;

    #[test]
    fn median_interval_trims_by_the_binomial_tail() {
        // Eleven samples at 90%: P(B <= 2) = 67/2048, so two are trimmed
        // from each side (coverage 0.935); a third would leave 0.773.
        let mut v: Vec<f64> = (0..11).rev().map(f64::from).collect();
        assert_eq!(median_interval(&mut v, 0.9), (2.0, 5.0, 8.0));
        // Ten samples: one each side (0.979); two would leave 0.891.
        let mut v: Vec<f64> = (0..10).map(f64::from).collect();
        assert_eq!(median_interval(&mut v, 0.9), (1.0, 4.5, 8.0));
        // Too few for the level: the whole range.
        let mut v = vec![3.0, 1.0, 2.0];
        assert_eq!(median_interval(&mut v, 0.9), (1.0, 2.0, 3.0));
    }
}
