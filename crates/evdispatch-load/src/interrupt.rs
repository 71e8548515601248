//! Ctrl-C (`SIGINT`) and `SIGTERM`: the run stops where it is, and what was
//! measured so far is reported, marked as interrupted. The handler only
//! records the signal; the workers' loops look at it on every turn (at
//! least every 100 ms). The exit status says which it was: 130 for
//! `SIGINT`, 143 for `SIGTERM` (128 + the signal, as a shell reports it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

use signal_hook::consts::{SIGINT, SIGTERM};

/// The signal that stopped the run (0: none yet).
static SIGNAL: OnceLock<Arc<AtomicUsize>> = OnceLock::new();

fn signal() -> &'static Arc<AtomicUsize> {
    SIGNAL.get_or_init(Default::default)
}

/// Catch `SIGINT` and `SIGTERM` from now on: instead of ending the
/// process, each records itself for [`requested`] and [`which`] to read.
/// Call once per process (`evdispatch load` and its worker processes do).
pub fn catch() -> anyhow::Result<()> {
    for s in [SIGINT, SIGTERM] {
        signal_hook::flag::register_usize(s, signal().clone(), s as usize)
            .map_err(|e| anyhow::anyhow!("cannot catch signal {s}: {e}"))?;
    }
    Ok(())
}

/// True once `SIGINT` or `SIGTERM` arrived.
pub fn requested() -> bool {
    which().is_some()
}

/// The signal that arrived, if one did.
pub fn which() -> Option<i32> {
    match signal().load(Ordering::Relaxed) {
        0 => None,
        s => Some(s as i32),
    }
}

/// The signal that arrived, as reports store it: `"SIGINT"` or `"SIGTERM"`.
pub fn which_name() -> Option<&'static str> {
    which().map(|s| if s == SIGTERM { "SIGTERM" } else { "SIGINT" })
}

/// How the output names an interruption by `signal` (as reports store
/// it): `Ctrl-C` for `SIGINT`, `SIGTERM`; a report that does not say
/// (written by an earlier version) gets both names.
pub fn shown(signal: Option<&str>) -> &str {
    match signal {
        Some("SIGINT") => "Ctrl-C",
        Some(s) => s,
        None => "Ctrl-C or SIGTERM",
    }
}

/// How the output names this process's interruption: `Ctrl-C` or `SIGTERM`.
pub fn name() -> &'static str {
    match which_name() {
        Some("SIGTERM") => "SIGTERM",
        _ => "Ctrl-C",
    }
}

/// Exit status of a run stopped by Ctrl-C (128 + SIGINT).
pub const EXIT_INTERRUPTED: i32 = 128 + SIGINT;
/// Exit status of a run stopped by `SIGTERM` (128 + SIGTERM).
pub const EXIT_TERMINATED: i32 = 128 + SIGTERM;

/// The exit status of an interrupted run: 128 + the signal
/// ([`EXIT_INTERRUPTED`] after Ctrl-C, [`EXIT_TERMINATED`] after
/// `SIGTERM`).
pub fn exit_status() -> i32 {
    128 + which().unwrap_or(SIGINT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigterm_is_named_and_exits_143() {
        catch().unwrap();
        assert_eq!((requested(), name()), (false, "Ctrl-C"));
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert_eq!((requested(), name(), exit_status()), (true, "SIGTERM", 143));
        assert_eq!(which_name(), Some("SIGTERM"));
        assert_eq!(shown(which_name()), "SIGTERM");
        assert_eq!(shown(Some("SIGINT")), "Ctrl-C");
        assert_eq!(EXIT_TERMINATED, 143);
    }
}
