//! The last stage of the results: the summary as it is printed, and the
//! intervals as they leave the program while the run goes on.
//!
//! * **The document**: `--json` prints the [`Summary`] (the contract in
//!   [`summary`](crate::results::summary)), pretty, or as one compact line
//!   when `--json-stream` holds standard output for JSON Lines.
//! * **The text** ([`text`]): without `--json`, the same figures in
//!   httperf's manner; its `Requests:` line counts the measured requests
//!   and replies; `Reply status:` counts every reply, and says how many of
//!   them were measured. With `-L`, wrk2's percentile tables follow (their
//!   headings exactly wrk2's, a note after each saying where its latency is
//!   measured from), and the text ends as wrk's does, in wrk's number
//!   format, for scripts written for wrk: `N requests in T, B read` (the
//!   replies in the window), `Socket errors: connect A, read B, write C,
//!   timeout D` and `Non-2xx or 3xx responses: N` when not zero
//!   ([`Summary::wrk_lines`] maps the error causes), `Requests/sec:` (the
//!   reply rate) and `Transfer/sec:`. With `--json-stream` the text goes to
//!   standard error.
//! * **Per `--interval`** ([`intervals`]): `--json-stream` prints one JSON
//!   line (the sum over the workers) as each ends, with `interval`,
//!   `start_s`, `end_s` (from the window's start), `time_unix_s`,
//!   `requests`, `replies`, `errors`, `reply_rate`, `latency_us` and
//!   `latency_uncorrected_us` (as in the summary), and standard output
//!   stays clean JSON Lines to the end: the text summary goes to standard
//!   error then, and with `--json` the final document is one compact line
//!   after the intervals'; `--csv FILE` one row (columns in `--help`);
//!   `--hdr-log FILE` an HdrHistogram interval log (V2 compressed, tags
//!   `corrected` and `uncorrected`, values in µs: give
//!   HistogramLogProcessor `-outputValueUnitRatio 1000` for ms).

use crate::results::summary::Summary;

pub mod intervals;
pub mod text;

/// How the results are printed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Output {
    /// `--json`: the JSON document instead of the text.
    pub json: bool,
    /// `--latency`: the percentile tables in the text.
    pub latency: bool,
    /// `--json-stream`: standard output carries JSON lines only, so the
    /// document is one compact line and the text goes to standard error.
    pub stream: bool,
}

impl Output {
    /// The summary as printed: what goes to standard output, and to
    /// standard error.
    pub fn render(&self, summary: &Summary) -> anyhow::Result<(String, String)> {
        Ok(match (self.json, self.stream) {
            (true, false) => (serde_json::to_string_pretty(summary)? + "\n", String::new()),
            (true, true) => (serde_json::to_string(summary)? + "\n", String::new()),
            (false, stream) => {
                let text = summary.text(self.latency);
                if stream {
                    (String::new(), text)
                } else {
                    (text, String::new())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::results::record::Merged;
    use crate::results::summary::SCHEMA;

    #[test]
    fn a_json_stream_leaves_standard_output_to_json_lines() {
        let cfg = Config::from_command_line(["http://127.0.0.1:1/", "-R", "10"]).unwrap();
        let s = Summary::new(&cfg, Merged::default(), None);
        let out = |json, stream| {
            Output {
                json,
                latency: true,
                stream,
            }
            .render(&s)
            .unwrap()
        };
        // --json-stream alone: the text goes to standard error.
        let (stdout, stderr) = out(false, true);
        assert!(
            stdout.is_empty() && stderr.contains("Requests:"),
            "{stdout}"
        );
        // With --json: one compact line, a JSON value.
        let (stdout, stderr) = out(true, true);
        assert_eq!(stdout.lines().count(), 1);
        assert!(stdout.ends_with('\n') && stderr.is_empty());
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(v["schema"], SCHEMA);
        // Without --json-stream: text or a pretty document on standard output.
        assert!(out(false, false).0.contains("Requests:"));
        assert!(out(true, false).0.lines().count() > 10);
    }
}
