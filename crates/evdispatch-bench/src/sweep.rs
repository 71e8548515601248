//! The values a benchmark sweeps.

/// The values given on the command line, else `default`; sorted, each once.
pub(crate) fn given_or(given: &[usize], default: Vec<usize>) -> Vec<usize> {
    let mut v = if given.is_empty() {
        default
    } else {
        given.to_vec()
    };
    v.sort_unstable();
    v.dedup();
    v
}
