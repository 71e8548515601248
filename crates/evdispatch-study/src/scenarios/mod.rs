//! One module per experiment of the seeds; each exports a `SCENARIO` row for
//! [`crate::scenario::SCENARIOS`].

pub mod hostile;
pub mod hybrid;
pub mod overhead;
pub mod poll_vs_epoll;
pub mod poller;
pub mod rtsig_latency;
pub mod table1;
pub mod throughput;
pub mod today;

use serde_json::{json, Value};

use crate::drive::{Caps, MODELS};
use crate::report::figure::{lines, Chart, Figure, Metrics};
use crate::results::ScenarioRecord;

/// The documents every scenario may request, written into the document root
/// by the runner: name and size in bytes (seed 000's 6 KB index.html, seed
/// 004's 1-byte and 92-byte replies).
pub const DOCUMENTS: &[(&str, usize)] = &[("6k.html", 6144), ("1b.txt", 1), ("92b.html", 92)];

/// Every readiness mechanism of the binary's table (except the edge-triggered
/// epoll variant, which dispatches exactly as epoll does) followed by the
/// server's other models: "every mechanism and model".
pub fn all_dispatch(caps: &Caps) -> Vec<String> {
    let mut v: Vec<String> = caps
        .mechanisms
        .iter()
        .filter(|m| m.as_str() != "epoll-et")
        .cloned()
        .collect();
    // Seed mechanisms not in this build still get a row, so the report
    // says what they wait for.
    for (m, _) in crate::drive::SEED_MECHANISMS {
        if !v.iter().any(|x| x == m) {
            v.push(m.to_string());
        }
    }
    v.extend(MODELS.iter().map(|m| m.to_string()));
    v
}

/// Whether `mechanism` can watch `fds` descriptors (select: below 1024).
pub fn fd_limit(caps: &Caps, mechanism: &str, fds: u32) -> Result<(), String> {
    match caps.max_fd.get(mechanism) {
        Some(&max) if fds as i64 + 32 > max => Err(format!(
            "{mechanism} watches descriptors below {max} only; {fds} connections need more (the seeds' select had a raised FD_SETSIZE)"
        )),
        _ => Ok(()),
    }
}

/// A chart with one line per series: config `x` against `m`, for points
/// matching `filter`.
#[allow(clippy::too_many_arguments)]
pub fn chart(
    rec: &ScenarioRecord,
    filter: &[(&str, Value)],
    x: &str,
    x_label: &str,
    m: Metrics<'_>,
    y_label: &str,
    logs: (bool, bool),
    title: String,
    caption: &str,
) -> Figure {
    Figure::chart(
        title,
        caption,
        Chart {
            x_label: x_label.into(),
            y_label: y_label.into(),
            x_log: logs.0,
            y_log: logs.1,
            series: lines(rec, filter, x, m),
        },
    )
}

/// `json!(v)` shorthand for filters.
pub fn j<T: serde::Serialize>(v: T) -> Value {
    json!(v)
}

/// The session workload most scenarios sweep: new connections at `rate`,
/// one request each for `document`, with `inactive` and `idle` connections
/// held, against our server on `mechanism` (timeouts long enough that the
/// held connections stay).
pub fn session_job(
    mechanism: &str,
    rate: f64,
    duration_s: f64,
    inactive: u32,
    idle: u32,
    document: &str,
) -> crate::web::WebJob {
    use crate::drive::{LoadSpec, Rate, ServerSpec};
    crate::web::WebJob {
        series: mechanism.to_string(),
        server: ServerSpec {
            idle_timeout_s: Some(60.0),
            header_timeout_s: Some(60.0),
            ..ServerSpec::ours(mechanism)
        },
        load: LoadSpec {
            document: document.into(),
            rate: Rate::PerSec(rate),
            duration_s,
            sessions: true,
            calls: 1,
            persistent: 0,
            inactive,
            idle,
            procs: 1,
        },
    }
}
