//! The run's results, as a pipeline; each stage imports only the ones
//! before it:
//!
//! 1. [`record`]: what each worker records (counters, errors, the
//!    histograms it owns, per-interval figures), how it travels to the
//!    parent, and the workers' records merged without loss.
//! 2. [`summary`]: the merged record aggregated into [`summary::Summary`],
//!    the `--json` contract (rates, percentiles, accounting, warnings,
//!    credentials hidden).
//! 3. [`checks`]: the `--fail-if` thresholds, evaluated on the summary.
//! 4. [`render`]: the summary as text (httperf's lines, wrk2's tables,
//!    wrk's closing lines) or JSON, and the intervals as JSON Lines, CSV
//!    and an HdrHistogram log.
//!
//! [`merge`] stands beside them: `evdispatch load merge` reads several
//! summaries back as records, merges them as the workers' are, and
//! aggregates them again.

pub mod checks;
pub mod merge;
pub mod record;
pub mod render;
pub mod summary;
