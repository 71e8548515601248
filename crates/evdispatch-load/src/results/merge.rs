//! `evdispatch load merge A.json B.json …`: the `--json` outputs of several
//! runs (generators on several machines, started together with
//! `--start-at`) combined as if one generator had made them all.
//!
//! Lossless where it can be: the histograms each output carries are added
//! (so every percentile of the merge is that of all the samples), counters
//! and errors are summed, the per-interval reply counts added interval by
//! interval. The window is the common one, from the earliest start to the
//! latest end, and every rate is over it. The merged output carries its
//! histograms and window too, so it merges again.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context};

use crate::config::Rate;
use crate::results::record::{merge as merge_reports, Counts, WorkerReport};
use crate::results::summary::{Summary, SCHEMA};

/// Read the files and merge them; a run that a signal stopped is named in
/// a warning (the merge itself was not stopped).
pub fn merge_files(files: &[PathBuf]) -> anyhow::Result<Summary> {
    let runs = files
        .iter()
        .map(|p| read(p).with_context(|| format!("merge: {}", p.display())))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut s = merge(&runs)?;
    // Exit 130 or 143 says this command was stopped by a signal; the merge
    // was not. A run that was is a warning (its window is shorter).
    if let Some(note) = interrupted_note(&runs, files) {
        s.warnings.push(note);
        s.interrupted = false;
        s.interrupted_by = None;
    }
    Ok(s)
}

/// The warning that names the runs a signal stopped, by the signal each
/// output recorded, if any was: `interrupted by SIGTERM (a.json) and by
/// Ctrl-C (b.json, c.json), so their windows are shorter`.
fn interrupted_note(runs: &[Summary], files: &[PathBuf]) -> Option<String> {
    let mut by: Vec<(&str, Vec<String>)> = Vec::new();
    for (r, p) in runs.iter().zip(files).filter(|(r, _)| r.interrupted) {
        let signal = crate::interrupt::shown(r.interrupted_by.as_deref());
        let file = p.display().to_string();
        match by.iter_mut().find(|(s, _)| *s == signal) {
            Some((_, list)) => list.push(file),
            None => by.push((signal, vec![file])),
        }
    }
    let groups: Vec<String> = by
        .iter()
        .map(|(signal, list)| format!("by {signal} ({})", list.join(", ")))
        .collect();
    (!groups.is_empty()).then(|| {
        format!(
            "interrupted {}, so their windows are shorter",
            groups.join(" and ")
        )
    })
}

/// One `--json` output.
pub fn read(path: &std::path::Path) -> anyhow::Result<Summary> {
    let text = std::fs::read_to_string(path).context("cannot read it")?;
    let s: Summary = serde_json::from_str(&text)
        .map_err(|e| anyhow!("not the output of `evdispatch load --json`: {e}"))?;
    if s.schema != SCHEMA {
        bail!("schema '{}', this program reads '{SCHEMA}'", s.schema);
    }
    s.decode_histograms()?;
    Ok(s)
}

/// A run's summary seen as one worker's report, so that runs merge the
/// way workers do.
fn as_report(i: usize, s: &Summary) -> WorkerReport {
    let k = &s.connections;
    let interval_s = s.rate_intervals.interval_s;
    WorkerReport {
        index: i as u32,
        pid: 0,
        counts: Counts {
            requests: s.requests,
            replies: s.replies,
            replies_in_window: s.replies_in_window,
            missed_slots: s.missed_slots,
            unsent_at_end: s.unsent_at_end,
            reopens: s.reopens,
            reopens_in_window: s.reopens_in_window,
            reconnects: s.reconnects,
            slow_replies: s.slow_replies,
            unmeasured_replies: s.unmeasured_replies,
            sessions_unfinished: s.sessions_unfinished,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
            conn_attempted: k.attempted,
            conn_established: k.established,
            conn_failed: k.failed,
            conn_closed_by_client: k.closed_by_client,
            conn_closed_by_server: k.closed_by_server,
            conn_open_at_end: k.open_at_end,
            conn_peak: s.connections_peak,
            tls_handshakes: s.tls_handshakes,
            tls_resumed: s.tls_resumed,
        },
        errors: s.errors_by_workload.clone(),
        status: s.status.clone(),
        latency_hist: s.histograms.latency.clone(),
        latency_uncorrected_hist: s.histograms.latency_uncorrected.clone(),
        connect_hist: s.histograms.connect.clone(),
        tls_handshake_hist: s.histograms.tls_handshake.clone(),
        interval_replies: s
            .rate_intervals
            .samples
            .iter()
            .map(|r| (r * interval_s).round() as u64)
            .collect(),
        interval_peak_conns: Vec::new(),
        cpu_s: 0.0,
        cpu_pct: s.generator_cpu_pct,
        setup_s: s.setup_s,
        // What Summary::new derives again (saturation, accounting) is left out.
        warnings: s
            .warnings
            .iter()
            .filter(|w| {
                !w.starts_with("GENERATOR SATURATED")
                    && !w.starts_with("connection accounting does not add up")
            })
            .cloned()
            .collect(),
        window_s: s.duration_s,
        window_start_unix_s: s.window_start_unix_s,
        interrupted: s.interrupted,
        signal: s.interrupted_by.clone(),
        http2: s.http2.clone().unwrap_or_default(),
    }
}

/// Merge the summaries of several runs into one.
pub fn merge(runs: &[Summary]) -> anyhow::Result<Summary> {
    let first = runs.first().ok_or_else(|| anyhow!("nothing to merge"))?;
    let reports: Vec<WorkerReport> = runs
        .iter()
        .enumerate()
        .map(|(i, s)| as_report(i, s))
        .collect();
    let mut m = merge_reports(&reports)?;
    let mut notes = Vec::new();
    // The common window: earliest start to latest end of the runs that had one.
    let windows: Vec<(f64, f64)> = runs
        .iter()
        .filter(|s| s.window_start_unix_s > 0.0)
        .map(|s| (s.window_start_unix_s, s.window_start_unix_s + s.duration_s))
        .collect();
    let (start, end) = windows
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &(s, e)| (a.min(s), b.max(e)));
    let span = if windows.is_empty() {
        runs.iter().map(|s| s.duration_s).fold(0.0, f64::max)
    } else {
        end - start
    };
    let interval_s = first.rate_intervals.interval_s;
    if runs
        .iter()
        .any(|s| s.rate_intervals.interval_s != interval_s)
    {
        m.interval_replies.clear();
        notes.push(
            "the runs sampled different --interval lengths: no merged reply-rate samples"
                .to_string(),
        );
    } else if windows.iter().any(|&(s, _)| s - start > interval_s / 2.0) {
        notes.push(format!(
            "the runs' windows began up to {:.3} s apart: interval samples are added by their number \
             (start the generators with --start-at)",
            windows.iter().map(|&(s, _)| s - start).fold(0.0, f64::max)
        ));
    }
    if runs.iter().any(|s| s.config.url != first.config.url) {
        notes.push(format!(
            "the runs loaded different URLs ({}); the config shown is the first's",
            runs.iter()
                .map(|s| s.config.url.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // Each run's own peak: the merged peak is at most their sum.
    m.counts.conn_peak = runs.iter().map(|s| s.connections_peak).sum();
    m.cpu_pct = runs
        .iter()
        .flat_map(|s| s.generator_cpu_per_process_pct.iter().copied())
        .collect();
    m.window_s = span;
    m.window_start_unix_s = if windows.is_empty() { 0.0 } else { start };
    let mut config = first.config.clone();
    config.duration_s = span;
    config.procs = runs.iter().map(|s| s.config.procs).sum();
    // What the runs offered together: their rates (when every run had one
    // in requests/s), connections and sessions add up, so that `rate` in a
    // `--fail-if` of the merge is the total offered.
    let rates: Option<f64> = runs
        .iter()
        .map(|s| match s.config.rate {
            Some(Rate::PerSecond(r)) => Some(r),
            _ => None,
        })
        .sum();
    if let Some(r) = rates {
        config.rate = Some(Rate::PerSecond(r));
    }
    if let Some(n) = runs
        .iter()
        .map(|s| s.config.sessions.filter(|&n| n > 0))
        .sum::<Option<u64>>()
    {
        config.sessions = Some(n);
    }
    config.persistent = runs.iter().map(|s| s.config.persistent).sum();
    config.inactive = runs.iter().map(|s| s.config.inactive).sum();
    config.idle = runs.iter().map(|s| s.config.idle).sum();
    config.slow = runs.iter().map(|s| s.config.slow).sum();
    config.cpus.clear();
    config.server_pids.clear();
    let mut s = Summary::new(&config, m, None);
    // Cores and saturation are the runs' own (their machines, not this one).
    s.generator_cores = runs.iter().map(|r| r.generator_cores).sum();
    s.generator_saturated = runs.iter().any(|r| r.generator_saturated);
    s.warnings.retain(|w| !w.starts_with("GENERATOR SATURATED"));
    for (i, r) in runs.iter().enumerate() {
        for w in r
            .warnings
            .iter()
            .filter(|w| w.starts_with("GENERATOR SATURATED"))
        {
            s.warnings.insert(0, format!("{w} (run {})", i + 1));
        }
    }
    if runs.iter().any(|r| r.server_cpu.is_some()) {
        notes.push("server CPU is in each run's own output, not merged".to_string());
    }
    s.warnings.extend(notes);
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::results::record::{merge as merge_workers, Recorder};

    fn run(values: std::ops::RangeInclusive<u64>, start: f64, replies: u64) -> Summary {
        let cfg =
            Config::from_command_line(["http://127.0.0.1:1/", "-R", "100", "-d", "2"]).unwrap();
        let mut r = Recorder::default();
        for v in values {
            r.histograms.latency.record(v).unwrap();
            r.histograms.latency_uncorrected.record(v / 2 + 1).unwrap();
        }
        r.counts.replies = replies;
        r.counts.replies_in_window = replies;
        r.interval_replies = vec![replies / 2, replies - replies / 2];
        r.status(200);
        let mut w = WorkerReport::new(0, &r, 0.1, 5.0, 0.0, vec![]).unwrap();
        w.window_s = 2.0;
        w.window_start_unix_s = start;
        Summary::new(&cfg, merge_workers(&[w]).unwrap(), None)
    }

    #[test]
    fn runs_merge_losslessly_and_the_merge_merges_again() {
        let (a, b, c) = (
            run(1..=100, 1000.0, 100),
            run(50..=5000, 1000.5, 300),
            run(7..=7, 1001.0, 2),
        );
        let a_persistent = a.config.persistent;
        assert!(a_persistent > 0);
        let ab = merge(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(ab.replies, 400);
        assert_eq!((ab.window_start_unix_s, ab.duration_s), (1000.0, 2.5));
        assert_eq!(ab.reply_rate, 400.0 / 2.5, "rates over the common window");
        assert_eq!(ab.rate_intervals.samples, vec![200.0, 200.0]);
        let [h, u, _] = ab.decode_histograms().unwrap();
        let [ha, ua, _] = a.decode_histograms().unwrap();
        let [hb, ub, _] = b.decode_histograms().unwrap();
        let mut want = ha.clone();
        want.add(&hb).unwrap();
        assert_eq!(h, want);
        let mut want_u = ua.clone();
        want_u.add(&ub).unwrap();
        assert_eq!(u, want_u);
        assert_eq!(ab.latency_us.count, 100 + 4951);
        // Merging the merge with a third run equals merging all three at once.
        let abc = merge(&[ab, c.clone()]).unwrap();
        let all = merge(&[a, b, c]).unwrap();
        assert_eq!(
            abc.decode_histograms().unwrap()[0],
            all.decode_histograms().unwrap()[0]
        );
        assert_eq!((abc.replies, all.replies), (402, 402));
        assert_eq!(abc.duration_s, 3.0);
        assert_eq!(abc.config.procs, 3);
        // Three generators at 100/s offered 300/s together.
        assert_eq!(abc.config.rate, Some(Rate::PerSecond(300.0)));
        assert_eq!(all.config.rate, Some(Rate::PerSecond(300.0)));
        assert_eq!(all.config.persistent, 3 * a_persistent);
        assert!(
            abc.warnings.iter().any(|w| w.contains("began up to")),
            "{:?}",
            abc.warnings
        );
    }

    #[test]
    fn an_interrupted_run_is_named_with_its_own_signal() {
        let files: Vec<PathBuf> = ["a.json", "b.json", "c.json"].map(PathBuf::from).into();
        let mut runs = vec![
            run(1..=10, 1000.0, 10),
            run(1..=10, 1000.0, 10),
            run(1..=10, 1000.0, 10),
        ];
        assert_eq!(interrupted_note(&runs, &files), None);
        (runs[1].interrupted, runs[1].interrupted_by) = (true, Some("SIGTERM".into()));
        (runs[2].interrupted, runs[2].interrupted_by) = (true, Some("SIGINT".into()));
        assert_eq!(
            interrupted_note(&runs, &files).as_deref(),
            Some("interrupted by SIGTERM (b.json) and by Ctrl-C (c.json), so their windows are shorter")
        );
        (runs[0].interrupted, runs[0].interrupted_by) = (true, Some("SIGINT".into()));
        assert_eq!(
            interrupted_note(&runs, &files).as_deref(),
            Some("interrupted by Ctrl-C (a.json, c.json) and by SIGTERM (b.json), so their windows are shorter")
        );
        // The merge keeps the signal of the first run that says one.
        let m = merge(&runs).unwrap();
        assert!(m.interrupted && m.interrupted_by.as_deref() == Some("SIGINT"));
    }

    #[test]
    fn outputs_without_histograms_are_refused() {
        let mut a = run(1..=10, 1000.0, 10);
        a.histograms = Default::default();
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("old.json");
        std::fs::write(&p, serde_json::to_string(&a).unwrap()).unwrap();
        let e = read(&p).unwrap_err().to_string();
        assert!(e.contains("no histograms"), "{e}");
        std::fs::write(&p, "{}").unwrap();
        assert!(read(&p).unwrap_err().to_string().contains("not the output"));
    }
}
