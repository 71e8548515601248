//! What `bench poller` measured: the cells, the pair costs, the rows that ran
//! or did not; what `--json` prints.

use serde::Serialize;

use super::rows::RowKind;

use super::plan::{Placement, Plan};

/// One cell of the table: a row at N fds and A active.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Row name (a mechanism of the library, or a peer).
    pub mechanism: String,
    /// Row family.
    pub kind: RowKind,
    /// N.
    pub fds: usize,
    /// A.
    pub active: usize,
    /// Placement.
    pub placement: Placement,
    /// Median of the timed part (wait + reads), µs.
    pub median_us: f64,
    /// 90th percentile, µs.
    pub p90_us: f64,
    /// Fastest iteration, µs.
    pub min_us: f64,
    /// Slowest iteration, µs.
    pub max_us: f64,
    /// Mean, µs.
    pub mean_us: f64,
    /// Median time the helper took to write the A bytes (untimed part), µs.
    pub write_median_us: f64,
    /// 90th percentile of the write time, µs.
    pub write_p90_us: f64,
    /// Timed iterations.
    pub iterations: usize,
    /// Wait (or loop) calls per timed iteration, on average.
    pub waits_per_iteration: f64,
    /// Events that found nothing to read, over the timed iterations.
    pub spurious: u64,
    /// Bytes read in the timed iterations (= iterations × active).
    pub bytes_read: u64,
    /// Bytes found unread after the row's iterations (must be 0).
    pub leftover: u64,
    /// This row over raw-epoll, same N and A, when both ran: the median,
    /// over rounds, of the ratio of the two rows' medians in that round
    /// (pairing by round cancels the drift of a shared machine).
    pub ratio_to_raw_epoll: Option<f64>,
    /// This row over the library's `epoll` row, paired by round the same way.
    pub ratio_to_epoll: Option<f64>,
    /// The median of each round's samples, µs (their spread shows the noise).
    pub round_medians_us: Vec<f64>,
    /// Registration cost at setup, µs per descriptor (median over rounds).
    pub setup_us_per_fd: f64,
}

/// Cost of creating and closing the socketpairs (Kegel reported these too).
#[derive(Debug, Clone, Serialize)]
pub struct PairCost {
    /// N.
    pub fds: usize,
    /// `socketpair()` per pair, µs.
    pub open_us_per_pair: f64,
    /// Closing both ends, per pair, µs (read end here, write end in the helper).
    pub close_us_per_pair: f64,
}

/// A row (or a row at some N) that did not run, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    /// Row name.
    pub row: String,
    /// N, when only some N are out of reach.
    pub fds: Option<usize>,
    /// Why.
    pub reason: String,
    /// The command that makes it available, if one does.
    pub install: Option<String>,
}

/// Everything a run measured: what `--json` prints.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// "poller".
    pub bench: &'static str,
    /// Where it ran.
    pub machine: crate::machine::Machine,
    /// The plan.
    pub plan: Plan,
    /// Rows that ran, with what they run on.
    pub rows: Vec<RowInfo>,
    /// Rows or cells that did not run.
    pub skipped: Vec<Skipped>,
    /// One object per cell.
    pub cells: Vec<Cell>,
    /// Socketpair creation and close costs per N.
    pub pairs: Vec<PairCost>,
}

/// A row that ran.
#[derive(Debug, Clone, Serialize)]
pub struct RowInfo {
    /// Name.
    pub name: String,
    /// Family.
    pub kind: RowKind,
    /// What it runs on, when not obvious (libevent's backend).
    pub detail: Option<String>,
}
