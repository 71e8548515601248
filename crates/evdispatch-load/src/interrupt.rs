//! Ctrl-C (`SIGINT`): the run stops where it is, and what was measured so
//! far is reported, marked as interrupted. The handler only raises a flag;
//! the workers' loops look at it on every turn (at least every 100 ms).

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Catch `SIGINT` from now on: instead of ending the process, it raises the
/// flag that [`requested`] reads. Call once per process (`evdispatch load`
/// and its worker processes do).
pub fn catch() -> anyhow::Result<()> {
    ctrlc::set_handler(|| REQUESTED.store(true, Ordering::SeqCst))
        .map_err(|e| anyhow::anyhow!("cannot catch Ctrl-C: {e}"))
}

/// True once `SIGINT` arrived.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}
