//! What several scenarios share: the documents served, the list of every
//! mechanism and model, the descriptor ceiling check, the chart shorthand
//! and the session workload.

use serde_json::Value;

use crate::figure::{fmt_num, lines, Chart, Figure, Metrics};
use crate::results::ScenarioRecord;
use crate::spec::{Caps, LoadSpec, ServerSpec, MODELS};
use crate::web::WebJob;

/// The documents every scenario may request, written into the document root
/// by the runner: name and size in bytes (seed 000's 6 KB index.html, seed
/// 004's 1-byte and 92-byte replies).
pub const DOCUMENTS: &[(&str, usize)] = &[
    ("6k.html", 6144),
    ("1b.txt", 1),
    ("92b.html", 92),
    ("index.html", 6144),
];

/// Every readiness mechanism of the library's table (`evdispatch::MECHANISMS`,
/// except the edge-triggered epoll variant, which dispatches as epoll does)
/// followed by the server's other models: "every mechanism and model".
/// Mechanisms this kernel lacks stay in the list, so the report says why
/// they were not measured.
pub fn all_dispatch() -> Vec<String> {
    evdispatch::MECHANISMS
        .iter()
        .map(|m| m.name)
        .filter(|m| *m != "epoll-et")
        .chain(MODELS.iter().copied())
        .map(String::from)
        .collect()
}

/// Whether `mechanism` can watch `fds` descriptors (select: below 1024).
pub fn fd_limit(caps: &Caps, mechanism: &str, fds: u32) -> Result<(), String> {
    match caps.max_fd.get(mechanism) {
        Some(&max) if fds as i64 + 32 > max => Err(format!(
            "{mechanism} watches descriptors below {max} only; {fds} descriptors needed (the seeds' select had a raised FD_SETSIZE)"
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

/// A [`chart`] of `m` against the offered rate of new connections (the x
/// axis of the session sweeps), for points matching `filter`.
pub fn rate_chart(
    rec: &ScenarioRecord,
    filter: &[(&str, Value)],
    m: Metrics<'_>,
    y_label: &str,
    logs: (bool, bool),
    title: String,
    caption: &str,
) -> Figure {
    let x_label = "request rate (new connections/s)";
    chart(
        rec, filter, "rate", x_label, m, y_label, logs, title, caption,
    )
}

/// The reply rate, with its standard deviation over the sampling intervals
/// as error bars.
pub const REPLY_RATE: Metrics<'static> = Metrics {
    y: "reply_rate",
    err: Some("reply_rate_stddev"),
    range: None,
};

/// A table cell: the number as the report writes numbers, `–` when there
/// is none.
pub fn cell(v: Option<f64>) -> String {
    v.map(fmt_num).unwrap_or_else(|| "–".into())
}

pub use crate::claims::value_of;

/// The session workload several scenarios sweep: new connections at
/// `rate`, one request each for `document`, with `inactive` and `idle`
/// connections held, against `server` (its timeouts long enough that the
/// held connections stay).
pub fn session_job(
    server: ServerSpec,
    rate: f64,
    duration_s: f64,
    inactive: u32,
    idle: u32,
    document: &str,
) -> WebJob {
    let server = if server.server == "ours" {
        ServerSpec {
            idle_timeout_s: Some(600.0),
            header_timeout_s: Some(600.0),
            ..server
        }
    } else {
        server
    };
    WebJob {
        series: server.series(),
        server,
        load: LoadSpec {
            inactive,
            idle,
            ..LoadSpec::sessions(document, rate, duration_s)
        },
        then: vec![],
    }
}
