//! The text summary: the httperf-like lines, wrk2's percentile tables
//! (`--latency`) and wrk's closing lines, in wrk's number format; and a
//! `--fail-if` check as the text lists it.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::config::Rate;
use crate::results::checks::is_latency;
use crate::results::record::per_s;
use crate::results::summary::{CheckResult, Summary};

/// A number as wrk's units.c prints one: `n` in `base`, moved up through
/// `units` (each `scale` times the one before) while it is at least 0.85
/// of the next step, never to the last of them; two decimals.
fn wrk_units(n: f64, scale: f64, base: &str, units: &[&str]) -> String {
    let (mut amount, mut unit) = (n, base);
    for u in &units[..units.len() - 1] {
        if amount < scale * 0.85 {
            break;
        }
        amount /= scale;
        unit = u;
    }
    format!("{amount:.2}{unit}")
}

/// A duration in µs the way wrk prints one: `849.00us`, `0.85ms`, `2.03s`,
/// `1.50m`.
pub fn fmt_us(us: f64) -> String {
    if us >= 1e6 {
        wrk_units(us / 1e6, 60.0, "s", &["m", "h"])
    } else {
        wrk_units(us, 1000.0, "us", &["ms", "s"])
    }
}

/// A byte count the way wrk prints one, before its `B`: `512.00`,
/// `1.17M` (binary units).
pub fn fmt_binary(bytes: f64) -> String {
    wrk_units(bytes, 1024.0, "", &["K", "M", "G", "T", "P"])
}

/// `EXPR: measured VALUE — pass` (or `FAIL`), as the report lists a check.
impl std::fmt::Display for CheckResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let measured = fmt_measured(&self.expr, self.measured);
        let verdict = if self.pass { "pass" } else { "FAIL" };
        write!(f, "{}: measured {measured} — {verdict}", self.expr)
    }
}

/// A measured value in the unit its expression uses.
pub fn fmt_measured(expr: &str, v: f64) -> String {
    // Metric names are read case-insensitively, so they are printed so too.
    let name = expr
        .split(['<', '>', '='])
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if is_latency(&name) {
        fmt_us(v)
    } else if expr.trim_end().ends_with('%') {
        format!("{v:.3}%")
    } else if name == "reply_rate" {
        format!("{v:.1}/s")
    } else {
        format!("{v}")
    }
}

/// The summary as text (the methods of [`Summary`] that print it).
impl Summary {
    /// The percentile tables of `--latency`, as wrk2 prints them: corrected
    /// then uncorrected, each followed by its detailed percentile spectrum
    /// (HdrHistogram's own layout, values in ms).
    pub fn latency_tables(&self) -> String {
        let mut o = String::new();
        let hists = self.decode_histograms().ok();
        for (i, (title, l, note)) in [
            (
                "Recorded Latency",
                &self.latency_us,
                "from each request's intended send time (coordinated omission corrected)",
            ),
            (
                "Uncorrected Latency (measured without taking delayed starts into account)",
                &self.latency_uncorrected_us,
                "from the moment each request was actually sent",
            ),
        ]
        .into_iter()
        .enumerate()
        {
            // wrk2's headings, exactly: parsers look for them.
            if i > 0 {
                o.push('\n');
            }
            let _ = writeln!(o, "  Latency Distribution (HdrHistogram - {title})");
            for p in &l.percentiles {
                let _ = writeln!(o, "{:>7.3}%{:>10}", p.percentile, fmt_us(p.us as f64));
            }
            if let Some(h) = hists.as_ref().map(|h| &h[i]).filter(|h| !h.is_empty()) {
                let _ = writeln!(
                    o,
                    "\n  Detailed Percentile spectrum:\n{:>12} {:>12} {:>12} {:>16}\n",
                    "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
                );
                for v in h.iter_quantiles(5) {
                    let q = v.quantile_iterated_to();
                    // The last row, at 100%, has no 1/(1-Percentile).
                    let inv = if q < 1.0 {
                        format!(" {:>12.2}", 1.0 / (1.0 - q))
                    } else {
                        String::new()
                    };
                    let _ = writeln!(
                        o,
                        "{:>12.3} {:>12.6} {:>12}{inv}",
                        v.value_iterated_to() as f64 / 1000.0,
                        q,
                        (v.quantile() * h.len() as f64).round() as u64,
                    );
                }
                let _ = writeln!(
                    o,
                    "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]\n\
                     #[Max     = {:>12.3}, Total count    = {:>12}]\n\
                     #[Buckets = {:>12}, SubBuckets     = {:>12}]",
                    h.mean() / 1000.0,
                    h.stdev() / 1000.0,
                    h.max() as f64 / 1000.0,
                    h.len(),
                    h.buckets(),
                    // counts = (buckets + 1) × half the sub-buckets
                    2 * h.distinct_values() / (h.buckets() as usize + 1)
                );
            }
            let _ = writeln!(
                o,
                "----------------------------------------------------------\n  ({title}: {note})"
            );
        }
        o
    }

    /// The text summary: the httperf-like lines, the percentile tables
    /// (`latency`), then wrk's closing lines ([`Summary::wrk_lines`]), in
    /// wrk2's order.
    pub fn text(&self, latency: bool) -> String {
        let mut o = self.httperf_lines();
        if latency {
            o.push_str(&self.latency_tables());
        }
        o.push_str(&self.wrk_lines());
        o
    }

    /// The text summary without the percentile tables.
    pub fn human(&self) -> String {
        self.text(false)
    }

    /// wrk's closing lines, formatted as wrk does: `N requests in T, B
    /// read` (the replies in the window, over it), `Socket errors: connect,
    /// read, write, timeout` (when any: refused, out of descriptors or
    /// ports and TLS as connect; reset, malformed, closed by the server and
    /// other as read, the generator not telling a reset on a write from
    /// one on a read), `Non-2xx or 3xx responses` (when any: 4xx, 5xx and
    /// other statuses, as wrk counts above 399), `Requests/sec` (the reply
    /// rate) and `Transfer/sec`.
    pub fn wrk_lines(&self) -> String {
        let mut o = String::new();
        let d = self.duration_s;
        let _ = writeln!(
            o,
            "  {} requests in {}, {}B read",
            self.replies_in_window,
            fmt_us(d * 1e6),
            fmt_binary(self.bytes_received as f64)
        );
        let sum = |keys: &[&str], of: &BTreeMap<String, u64>| -> u64 {
            keys.iter().filter_map(|k| of.get(*k)).sum()
        };
        let e = &self.errors;
        let connect = sum(&["refused", "client_fd", "client_port", "tls"], e);
        let read = sum(&["reset", "malformed", "server_closed", "other"], e);
        let timeout = sum(&["timeout"], e);
        if connect + read + timeout > 0 {
            let _ = writeln!(
                o,
                "  Socket errors: connect {connect}, read {read}, write 0, timeout {timeout}"
            );
        }
        let failed = sum(&["4xx", "5xx", "other"], &self.status);
        if failed > 0 {
            let _ = writeln!(o, "  Non-2xx or 3xx responses: {failed}");
        }
        let _ = writeln!(o, "Requests/sec: {:9.2}", self.reply_rate);
        let _ = writeln!(
            o,
            "Transfer/sec: {:>10}B",
            fmt_binary(per_s(self.bytes_received, d))
        );
        o
    }

    /// The httperf-like lines of the text summary.
    fn httperf_lines(&self) -> String {
        let c = &self.config;
        let ms = |us: u64| us as f64 / 1000.0;
        let mut o = String::new();
        let _ = writeln!(
            o,
            "evdispatch load {} — {:.1} s measured after {:.1} s warm-up; {} process(es) on {}",
            c.url, self.duration_s, c.warmup_s, c.procs, c.mechanism
        );
        if self.interrupted {
            let _ = writeln!(
                o,
                "INTERRUPTED ({}): the figures cover the {:.1} s measured before it",
                crate::interrupt::shown(self.interrupted_by.as_deref()),
                self.duration_s
            );
        }
        let _ = writeln!(
            o,
            "Target: {}{}{}",
            c.target,
            if c.addresses.len() > 1 {
                format!(" (first to accept of {} resolved)", c.addresses.len())
            } else {
                String::new()
            },
            match &c.tls {
                None => String::new(),
                Some(t) if t.insecure => "; TLS, certificate NOT verified (--insecure)".into(),
                Some(t) => format!(
                    "; TLS, certificate verified for '{}' against {}",
                    t.server_name,
                    t.cacert
                        .as_ref()
                        .map_or("the system's roots".into(), |p| p.display().to_string())
                ),
            }
        );
        let mut w = Vec::new();
        let rate = match c.rate {
            Some(Rate::PerSecond(r)) => format!("{r}/s {:?}", c.arrival).to_lowercase(),
            Some(Rate::Max) => "max (closed loop)".into(),
            None => String::new(),
        };
        if let Some(n) = c.sessions {
            let count = if n == 0 {
                "unbounded".to_string()
            } else {
                n.to_string()
            };
            w.push(format!("sessions {count} at {rate} × {} call(s)", c.calls));
        } else if c.persistent > 0 {
            w.push(format!("persistent {} at {rate}", c.persistent));
        }
        if c.http == crate::config::HttpVersion::Http2 {
            let how = if c.tls.is_some() {
                "h2 by ALPN"
            } else {
                "h2c, prior knowledge"
            };
            w.push(format!(
                "HTTP/2 ({how}), up to {} stream(s) per connection",
                c.max_streams
            ));
        }
        for (n, name) in [(c.inactive, "inactive"), (c.idle, "idle"), (c.slow, "slow")] {
            if n > 0 {
                w.push(format!("{name} {n}"));
            }
        }
        let _ = writeln!(o, "Workloads: {}", w.join("; "));
        let k = &self.connections;
        let _ = writeln!(
            o,
            "Connections: attempted {} established {} failed {} closed by client {} by server {} open at end {} (peak {}){}",
            k.attempted,
            k.established,
            k.failed,
            k.closed_by_client,
            k.closed_by_server,
            k.open_at_end,
            k.peak,
            if k.accounted { "" } else { " — DOES NOT ADD UP" }
        );
        if c.inactive + c.idle > 0 {
            let _ = writeln!(
                o,
                "Reopens: {} in the window ({:.1}/s), {} in all; reconnects {}",
                self.reopens_in_window, self.reopen_rate, self.reopens, self.reconnects
            );
        }
        let tls = c
            .tls
            .is_some()
            .then_some(("TLS handshake", &self.tls_handshake_us));
        for (what, l) in std::iter::once(("Connect time", &self.connect_us)).chain(tls) {
            let _ = writeln!(
                o,
                "{what} [ms]: min {:.3} avg {:.3} p99 {:.3} max {:.3} ({} in the window)",
                ms(l.min),
                l.mean / 1000.0,
                ms(l.p99),
                ms(l.max),
                l.count
            );
        }
        let _ = writeln!(
            o,
            "Requests: {} sent, {} replies; missed slots {}, unsent at end {}",
            self.requests, self.replies, self.missed_slots, self.unsent_at_end
        );
        let r = &self.rate_intervals;
        let _ = writeln!(
            o,
            "Reply rate [replies/s]: min {:.1} avg {:.1} max {:.1} stddev {:.1} ({} samples of {} s); overall {:.1}",
            r.min,
            r.avg,
            r.max,
            r.stddev,
            r.samples.len(),
            r.interval_s,
            self.reply_rate
        );
        for (name, l) in [
            ("corrected  ", &self.latency_us),
            ("uncorrected", &self.latency_uncorrected_us),
        ] {
            let _ = writeln!(
                o,
                "Latency [ms] {name}: p50 {:.3} p90 {:.3} p99 {:.3} p99.9 {:.3} max {:.3} (mean {:.3})",
                ms(l.p50),
                ms(l.p90),
                ms(l.p99),
                ms(l.p999),
                ms(l.max),
                l.mean / 1000.0
            );
        }
        if c.sessions.is_some() && self.sessions_unfinished > 0 {
            let _ = writeln!(
                o,
                "Sessions: {} unfinished when the run ended (cut by {}; without --duration every session runs to its end)",
                self.sessions_unfinished,
                if self.interrupted {
                    crate::interrupt::shown(self.interrupted_by.as_deref())
                } else {
                    "--duration"
                }
            );
        }
        // Every reply, which the "Requests:" line's measured ones are part of.
        let _ = writeln!(
            o,
            "Reply status: {} (all {} replies: {} measured, {} unmeasured, {} to slow clients)",
            self.status
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            self.status.values().sum::<u64>(),
            self.replies,
            self.unmeasured_replies,
            self.slow_replies
        );
        let _ = writeln!(
            o,
            "Net I/O: sent {:.1} KB, received {:.1} KB ({:.1} KB/s)",
            self.bytes_sent as f64 / 1024.0,
            self.bytes_received as f64 / 1024.0,
            per_s(self.bytes_received, self.duration_s) / 1024.0
        );
        let _ = writeln!(
            o,
            "Errors: total {} {}",
            self.errors_total,
            self.errors
                .iter()
                .map(|(k, v)| format!("{}={v}", k.replace('_', "-")))
                .collect::<Vec<_>>()
                .join(" ")
        );
        if let Some(h) = &self.http2 {
            let resets: Vec<String> = h.resets.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(
                o,
                "HTTP/2: GOAWAYs {} (requests sent again after one {}), streams refused {}, \
                 resets {}, connection errors {}{}, bodies held by flow control {} (blocked \
                 {:.3} stream-s, {:.3} connection-s); header bytes sent {} ({} HPACK), \
                 received {} ({} HPACK)",
                h.goaways,
                h.retried_after_goaway,
                h.streams_refused,
                if resets.is_empty() {
                    "0".into()
                } else {
                    resets.join(" ")
                },
                h.connection_errors,
                if h.connection_errors_by_frame.is_empty() {
                    String::new()
                } else {
                    let by: Vec<String> = h
                        .connection_errors_by_frame
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    format!(" ({})", by.join(" "))
                },
                h.flow_control_waits,
                h.flow_control_blocked_stream_us as f64 / 1e6,
                h.flow_control_blocked_connection_us as f64 / 1e6,
                h.header_bytes_sent,
                h.header_bytes_sent_hpack,
                h.header_bytes_received,
                h.header_bytes_received_hpack
            );
        }
        let server = match &self.server_cpu {
            Some(s) => format!("server {:.1}% of a core (pids {:?})", s.pct, s.pids),
            None => "server not sampled (give --server-pid)".into(),
        };
        let _ = writeln!(
            o,
            "CPU: generator {:.1}% of a core over {} core(s); {server}",
            self.generator_cpu_pct, self.generator_cores
        );
        for w in &self.warnings {
            let _ = writeln!(o, "WARNING: {w}");
        }
        for k in &self.checks {
            let _ = writeln!(o, "Check {k}");
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::results::record::idle_workers as merged;

    #[test]
    fn the_text_ends_as_wrk_s_and_the_tables_have_wrk2_s_headings() {
        let c = Config::from_command_line(["http://127.0.0.1:1/", "-R", "10"]).unwrap();
        let mut s = Summary::new(&c, merged(vec![1.0]), None);
        (s.duration_s, s.replies_in_window, s.reply_rate) = (2.0, 1000, 500.0);
        s.bytes_received = 1_226_833; // 1.17 MiB
        let text = s.text(true);
        let tail: Vec<&str> = text.lines().rev().take(3).collect();
        assert_eq!(
            tail,
            [
                "Transfer/sec:    599.04KB",
                "Requests/sec:    500.00",
                "  1000 requests in 2.00s, 1.17MB read"
            ]
        );
        assert!(!text.contains("Socket errors") && !text.contains("Non-2xx"));
        s.errors.insert("refused".into(), 2);
        s.errors.insert("timeout".into(), 1);
        s.errors.insert("server_closed".into(), 4);
        s.status.insert("5xx".into(), 3);
        let text = s.human();
        assert!(text.contains("\n  Socket errors: connect 2, read 4, write 0, timeout 1\n  Non-2xx or 3xx responses: 3\nRequests/sec:"), "{text}");
        // The tables come after the httperf-like lines, before wrk's.
        let text = s.text(true);
        let at = |t: &str| {
            text.find(t)
                .unwrap_or_else(|| panic!("{t} missing: {text}"))
        };
        assert!(
            at("Reply status:") < at("  Latency Distribution (HdrHistogram - Recorded Latency)\n")
        );
        assert!(at("\n\n  Latency Distribution (HdrHistogram - Uncorrected Latency (measured without taking delayed starts into account))\n") < at("requests in"));
        // wrk's units.
        assert_eq!(
            [849.0, 850.0, 1_210.0, 2_030_000.0, 90e6].map(fmt_us),
            ["849.00us", "0.85ms", "1.21ms", "2.03s", "1.50m"]
        );
        assert_eq!(
            [512.0, 900.0, 3e12].map(fmt_binary),
            ["512.00", "0.88K", "2.73T"]
        );
        // A check's measured value, in its expression's unit.
        assert_eq!(fmt_measured("p99<1ms", 990.0), "0.99ms");
        assert_eq!(fmt_measured("P99<1ms", 990.0), "0.99ms");
        assert_eq!(fmt_measured("Reply_Rate>=10", 12.0), "12.0/s");
        assert_eq!(fmt_measured("errors<0.1%", 0.0999), "0.100%");
    }

    /// The text names the signal the report recorded, not this process's
    /// (`load merge` of a run stopped by SIGTERM says SIGTERM; a unit test
    /// in this binary raises SIGTERM in this process).
    #[test]
    fn an_interruption_is_named_by_the_signal_the_report_recorded() {
        let c = Config::from_command_line([
            "http://127.0.0.1:1/",
            "--sessions",
            "5",
            "--rate",
            "1",
            "-d",
            "2",
        ])
        .unwrap();
        for (signal, shown) in [("SIGTERM", "SIGTERM"), ("SIGINT", "Ctrl-C")] {
            let mut m = merged(vec![1.0]);
            (m.interrupted, m.signal, m.window_s) = (true, Some(signal.into()), 0.5);
            m.counts.sessions_unfinished = 2;
            let s = Summary::new(&c, m, None);
            // Through a results file, as `load merge` reads one.
            let s: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
            assert_eq!(s.interrupted_by.as_deref(), Some(signal));
            let text = s.text(false);
            assert!(text.contains(&format!("INTERRUPTED ({shown})")), "{text}");
            assert!(text.contains(&format!("(cut by {shown};")), "{text}");
        }
        // An output of an earlier version does not say which.
        let mut m = merged(vec![1.0]);
        (m.interrupted, m.window_s) = (true, 0.5);
        let mut json = serde_json::to_value(Summary::new(&c, m, None)).unwrap();
        json.as_object_mut().unwrap().remove("interrupted_by");
        let s: Summary = serde_json::from_value(json).unwrap();
        assert_eq!(s.interrupted_by, None);
        assert!(s.text(false).contains("INTERRUPTED (Ctrl-C or SIGTERM)"));
    }
}
