//! `evdispatch load` as a command: run the load (or `merge`), print the
//! results, and end with the exit status they earn.
//!
//! Exit status: 0; 1 on bad input, or when no reply succeeded (no reply,
//! or only 4xx/5xx; a line on standard error says which); 99 when a
//! `--fail-if` threshold ([`checks`] has the grammar) is broken; 130 after
//! Ctrl-C (`SIGINT`) and 143 after `SIGTERM`, which stop the run (worker
//! processes too), print the results so far marked as interrupted (naming
//! the signal) and write the interval files up to then.
//!
//! `--start-at TIME` opens the connections, then starts the run at that
//! time, so generators on several machines measure the same window;
//! `evdispatch load merge A.json B.json …` ([`merge`]) combines their
//! `--json` outputs losslessly into one report (itself mergeable).

use crate::args::{LoadArgs, LoadSubcommand, MergeArgs};
use crate::config::Config;
use crate::interrupt;
pub use crate::interrupt::{EXIT_INTERRUPTED, EXIT_TERMINATED};
use crate::results::checks::{self, Check};
use crate::results::merge;
use crate::results::render::intervals::Sinks;
use crate::results::render::Output;
use crate::results::summary::Summary;
use crate::runner::{self, execute, RunOptions};

/// Exit status of a run whose `--fail-if` thresholds were not all met.
pub const EXIT_CHECK_FAILED: i32 = 99;
/// Exit status of a run in which no reply succeeded.
pub const EXIT_NO_REPLY: i32 = 1;

/// Run the command. Besides errors (exit 1 from the caller), the run ends
/// the process with [`EXIT_NO_REPLY`], [`EXIT_CHECK_FAILED`],
/// [`EXIT_INTERRUPTED`] or [`EXIT_TERMINATED`] after printing its results.
pub fn run(args: LoadArgs) -> anyhow::Result<()> {
    if args.worker {
        return runner::worker_main();
    }
    if let Some(LoadSubcommand::Merge(m)) = &args.command {
        return exit_with(run_merge(m)?);
    }
    if args.background {
        anyhow::Context::context(evdispatch_host::set_idle_priority(), "--background")?;
    }
    let cfg = Config::from_args(&args)?;
    let r = &args.results;
    let checks = checks::parse_all(&r.fail_if, &cfg)?;
    let start_at = r
        .start_at
        .as_deref()
        .map(|t| parse_start_at(t, std::time::SystemTime::now()))
        .transpose()?;
    let sinks = Sinks::open(r.json_stream, r.csv.as_deref(), r.hdr_log.as_deref())?;
    let (tx, rx) = std::sync::mpsc::channel();
    let writer = std::thread::spawn(move || sinks.run(rx));
    interrupt::catch()?;
    if let Some(t) = start_at {
        eprintln!(
            "evdispatch load: starting at {} (in {:.1} s), once the connections are open",
            humantime::format_rfc3339_millis(t),
            t.duration_since(std::time::SystemTime::now())
                .unwrap_or_default()
                .as_secs_f64()
        );
    }
    let summary = execute(
        &cfg,
        &RunOptions {
            progress: true,
            worker_exe: None,
            start_at,
            intervals: Some(tx),
        },
    );
    // The sender went with the options: the writer ends with the last interval.
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the interval writer failed"))??;
    let mut summary = summary?;
    let out = Output {
        json: args.json,
        latency: r.latency,
        stream: r.json_stream,
    };
    let status = print_results(&mut summary, &checks, out)?;
    exit_with(status)
}

/// `evdispatch load merge`: read, merge, check and print; the exit status
/// the result earns.
pub fn run_merge(a: &MergeArgs) -> anyhow::Result<i32> {
    let mut s = merge::merge_files(&a.files)?;
    let checks = checks::parse_all(&a.fail_if, &s.config)?;
    let out = Output {
        json: a.json,
        latency: a.latency,
        stream: false,
    };
    print_results(&mut s, &checks, out)
}

/// Evaluate the checks, print the summary (JSON or text, the percentile
/// tables on demand, the checks) and say which exit status the run earns.
pub fn print_results(summary: &mut Summary, checks: &[Check], out: Output) -> anyhow::Result<i32> {
    let json = out.json;
    let passed = checks::evaluate_all(checks, summary)?;
    let (stdout, stderr) = out.render(summary)?;
    print!("{stdout}");
    eprint!("{stderr}");
    let saturated = summary
        .warnings
        .iter()
        .filter(|w| w.starts_with("GENERATOR SATURATED"));
    for w in saturated {
        eprintln!("evdispatch load: WARNING: {w}");
    }
    // The text report lists the checks; with --json they go to stderr too.
    for k in summary.checks.iter().filter(|_| json) {
        eprintln!("evdispatch load: --fail-if {k}");
    }
    let succeeded: u64 = ["1xx", "2xx", "3xx"]
        .iter()
        .filter_map(|k| summary.status.get(*k))
        .sum();
    let expects_replies =
        summary.config.rate.is_some() || summary.config.idle > 0 || summary.config.slow > 0;
    Ok(if summary.interrupted {
        eprintln!(
            "evdispatch load: interrupted ({}): results so far above",
            interrupt::name()
        );
        interrupt::exit_status()
    } else if expects_replies && succeeded == 0 {
        let total: u64 = summary.status.values().sum();
        if total == 0 {
            eprintln!(
                "evdispatch load: no reply succeeded: no reply at all ({} errors: {})",
                summary.errors_total,
                summary
                    .errors
                    .iter()
                    .filter(|(_, v)| **v > 0)
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        } else {
            eprintln!(
                "evdispatch load: no reply succeeded: all {total} replies were 4xx, 5xx or unknown"
            );
        }
        EXIT_NO_REPLY
    } else if !passed {
        EXIT_CHECK_FAILED
    } else {
        0
    })
}

fn exit_with(status: i32) -> anyhow::Result<()> {
    if status != 0 {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(status);
    }
    Ok(())
}

/// The most `--start-at` may lie ahead.
pub const START_AT_MAX_AHEAD: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// Read `--start-at`: RFC 3339 (`2026-11-24T08:00:00Z`, fractions allowed)
/// or `@UNIX_SECONDS`; refused when more than a second before `now` or more
/// than [`START_AT_MAX_AHEAD`] after it.
pub fn parse_start_at(
    text: &str,
    now: std::time::SystemTime,
) -> anyhow::Result<std::time::SystemTime> {
    use anyhow::bail;
    let t = if let Some(secs) = text.strip_prefix('@') {
        let s: f64 = secs.parse().map_err(|_| {
            anyhow::anyhow!("--start-at '{text}': after '@' give Unix seconds, e.g. @1795000000")
        })?;
        if !s.is_finite() || s < 0.0 {
            bail!("--start-at '{text}': Unix seconds must be a non-negative number");
        }
        std::time::UNIX_EPOCH + std::time::Duration::from_secs_f64(s)
    } else {
        humantime::parse_rfc3339_weak(text).map_err(|e| {
            anyhow::anyhow!(
                "--start-at '{text}': {e}; give RFC 3339 (e.g. 2026-11-24T08:00:00Z) or @UNIX_SECONDS"
            )
        })?
    };
    let fmt = |t| humantime::format_rfc3339_millis(t);
    if let Ok(late) = now.duration_since(t) {
        if late > std::time::Duration::from_secs(1) {
            bail!(
                "--start-at {}: that is {:.1} s ago (now {}); give a time in the future",
                fmt(t),
                late.as_secs_f64(),
                fmt(now)
            );
        }
    }
    if let Ok(ahead) = t.duration_since(now) {
        if ahead > START_AT_MAX_AHEAD {
            bail!(
                "--start-at {}: that is {} from now (now {}); at most {} ahead is accepted — is the date or the clock wrong?",
                fmt(t),
                humantime::format_duration(std::time::Duration::from_secs(ahead.as_secs())),
                fmt(now),
                humantime::format_duration(START_AT_MAX_AHEAD)
            );
        }
    }
    Ok(t)
}
