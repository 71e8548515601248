//! `evdispatch bench poller`: Dan Kegel's Poller_bench (seed 001).
//!
//! N socketpairs; a row (a mechanism of the library, a raw-syscall floor, a
//! crate, a C library) watches their read ends. Before each iteration a
//! helper process writes one byte to A sockets spaced N/A apart (untimed,
//! but its time is reported: io_uring and RT signals do part of their work
//! in the writer). The timed part is one wait plus `read(fd, buf, 1)` for
//! each ready descriptor, looping on waits until the A bytes are read.
//!
//! The rows run one at a time on the same descriptors (two watchers on one
//! socket would slow each other's wake-ups), in `--rounds` interleaved
//! blocks so that a noisy neighbour on a shared machine hits every row
//! alike. With `--placement rotating` the touched set moves every
//! iteration (a scattered stride over the N/A slots), so the touched sockets
//! are cold; `fixed` writes to the same A sockets each time.
//!
//! By default the bench and the writer are pinned to one CPU: left to the
//! scheduler, the writer lands on the bench's core for some blocks and on
//! the other for others, and the two placements cost differently (here
//! ≈1.8 µs against ≈2.8 µs for epoll at A = 1), which made the spread
//! bimodal. `--cpu 0,1` measures the cross-core case on purpose. Ratios
//! between rows (`ratio_to_raw_epoll`, `ratio_to_epoll`) are paired by
//! round: the median over rounds of the two rows' medians in that round,
//! so that a neighbour's build slowing one round slows both sides of it.
//!
//! The modules: `plan` (the arguments and the plan resolved from them),
//! `measure` (the run over cells and rounds, and the timed loop), `rows`
//! (each row's watcher: library, raw syscalls, crates, C libraries),
//! `writer` (the helper process that writes the bytes), `outcome` (what a
//! run measured, the JSON) and `report` (the tables).

mod measure;
mod outcome;
mod plan;
mod report;
mod rows;
mod writer;

pub use measure::{measure, run};
pub use outcome::{Cell, Outcome, PairCost, RowInfo, Skipped};
pub use plan::{Placement, Plan, PollerArgs, WriterArgs, WriterKind};
pub use rows::{all_rows, Row, RowKind, RowSpec, Served, Unavailable, EVENT_CAPACITY};
pub use writer::{helper_main as writer_main, Touch, HELPER_ARGS};
