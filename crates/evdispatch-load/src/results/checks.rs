//! `--fail-if EXPR`: thresholds checked after the run, for scripts and CI.
//!
//! ```text
//! EXPR   := METRIC OP VALUE            (spaces allowed between the parts)
//! OP     := <  <=  >  >=  ==
//! METRIC := LATENCY | uncorrected_LATENCY | connect_LATENCY
//!         | errors | non_2xx | requests | replies | missed_slots | reply_rate
//! LATENCY:= pN (N a percentile: p50, p99, p99.9, p99.999, p100) | min | mean | max
//! ```
//!
//! A latency (corrected unless `uncorrected_`; `connect_` is the connect
//! time) takes a duration with its unit, in the one grammar of every flag
//! ([`evdispatch_host::parse_duration`]): `5ms`, `1.5ms`,
//! `250us`, `1s`, `1s 500ms`. `errors` takes a count, or a percentage of the
//! attempts (`errors<0.1%`: errors ÷ (replies + errors)). `reply_rate`
//! takes replies/s, or a factor of the offered rate (`reply_rate>=0.99*rate`,
//! open loop only; `rate` is in requests/s: `--rate` drives each workload,
//! and a session makes `--calls` requests, or its session log's mean). The
//! others take a count. A latency check over no
//! samples fails. Examples: `p99<5ms`, `p99.9<=20ms`, `errors<0.1%`,
//! `reply_rate>=0.99*rate`, `replies>1000`.

use anyhow::anyhow;

use crate::config::{Config, Rate};
use crate::results::summary::{CheckResult, Summary};

/// A latency histogram, in the order [`Summary::decode_histograms`] gives them.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Which {
    Corrected,
    Uncorrected,
    Connect,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stat {
    /// A percentile, 0–100.
    Percentile(f64),
    Min,
    Mean,
    Max,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Metric {
    Latency(Which, Stat),
    Errors { percent: bool },
    Non2xx,
    Requests,
    Replies,
    MissedSlots,
    ReplyRate,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
        }
    }
}

/// One parsed `--fail-if` expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    expr: String,
    metric: Metric,
    op: Op,
    limit: f64,
}

const GRAMMAR: &str = "expected METRIC OP VALUE, e.g. p99<5ms, p99.9<=20ms, errors<0.1%, \
     reply_rate>=0.99*rate, replies>1000 (metrics: pN, min, mean, max, with uncorrected_ or \
     connect_ before them; errors, non_2xx, requests, replies, missed_slots, reply_rate)";

fn latency_stat(s: &str) -> Option<Stat> {
    match s {
        "min" => Some(Stat::Min),
        "mean" => Some(Stat::Mean),
        "max" => Some(Stat::Max),
        _ => {
            let p: f64 = s.strip_prefix('p')?.parse().ok()?;
            (p > 0.0 && p <= 100.0).then_some(Stat::Percentile(p))
        }
    }
}

/// True when `metric` (lowercase) is a latency: `p99`, `min`, `mean`,
/// `max`, with `uncorrected_` or `connect_` before them or not.
pub fn is_latency(metric: &str) -> bool {
    latency_stat(
        metric
            .trim_start_matches("uncorrected_")
            .trim_start_matches("connect_"),
    )
    .is_some()
}

impl Check {
    /// Parse `text` for a run configured as `cfg` (`*rate` needs an
    /// open-loop rate).
    pub fn parse(text: &str, cfg: &Config) -> anyhow::Result<Check> {
        let bad = |why: String| anyhow!("--fail-if '{text}': {why}");
        let t: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let at = t
            .find(['<', '>', '='])
            .ok_or_else(|| bad(format!("no comparison; {GRAMMAR}")))?;
        let (name, rest) = t.split_at(at);
        let (op, value) = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .into_iter()
        .find_map(|(s, op)| rest.strip_prefix(s).map(|v| (op, v)))
        .ok_or_else(|| bad(format!("unknown comparison in '{rest}'; {GRAMMAR}")))?;
        if value.is_empty() {
            return Err(bad(format!("no value after the comparison; {GRAMMAR}")));
        }
        let metric = match name.to_ascii_lowercase().as_str() {
            "errors" => Metric::Errors {
                percent: value.ends_with('%'),
            },
            "non_2xx" => Metric::Non2xx,
            "requests" => Metric::Requests,
            "replies" => Metric::Replies,
            "missed_slots" => Metric::MissedSlots,
            "reply_rate" => Metric::ReplyRate,
            n => {
                let (which, stat) = if let Some(s) = n.strip_prefix("uncorrected_") {
                    (Which::Uncorrected, s)
                } else if let Some(s) = n.strip_prefix("connect_") {
                    (Which::Connect, s)
                } else {
                    (Which::Corrected, n)
                };
                let stat = latency_stat(stat)
                    .ok_or_else(|| bad(format!("unknown metric '{name}'; {GRAMMAR}")))?;
                Metric::Latency(which, stat)
            }
        };
        let number = |v: &str| -> anyhow::Result<f64> {
            let x: f64 = v
                .parse()
                .map_err(|_| bad(format!("'{v}' is not a number")))?;
            if !x.is_finite() || x < 0.0 {
                return Err(bad(format!("'{v}' must be a non-negative number")));
            }
            Ok(x)
        };
        let limit = match metric {
            Metric::Latency(..) => {
                // A latency limit names its unit: a bare number is refused.
                let d = value
                    .trim()
                    .ends_with(|c: char| c.is_ascii_alphabetic())
                    .then(|| evdispatch_host::parse_duration(value).ok())
                    .flatten()
                    .ok_or_else(|| {
                        bad(format!(
                            "'{value}' is not a duration; give its unit: 5ms, 1.5ms, 250us, 1s"
                        ))
                    })?;
                d.as_secs_f64() * 1e6
            }
            Metric::Errors { percent: true } => {
                let p = number(value.trim_end_matches('%'))?;
                if p > 100.0 {
                    return Err(bad("a percentage is at most 100%".into()));
                }
                p
            }
            Metric::ReplyRate => match value.split_once('*') {
                Some((f, "rate")) => match cfg.rate {
                    Some(Rate::PerSecond(r)) => number(f)? * offered_requests(cfg, r),
                    _ => return Err(bad(
                        "'*rate' needs an offered rate (--rate R); in closed loop give replies/s"
                            .into(),
                    )),
                },
                Some(_) => {
                    return Err(bad(format!("'{value}': write FACTOR*rate, e.g. 0.99*rate")))
                }
                None => number(value)?,
            },
            _ => number(value)?,
        };
        Ok(Check {
            expr: text.trim().to_string(),
            metric,
            op,
            limit,
        })
    }

    /// Check the summary of a run (its histograms give any percentile).
    pub fn evaluate(&self, s: &Summary) -> anyhow::Result<CheckResult> {
        let mut samples = true;
        let measured = match self.metric {
            Metric::Latency(which, stat) => {
                let h = &s.decode_histograms()?[which as usize];
                samples = !h.is_empty();
                match stat {
                    _ if h.is_empty() => 0.0,
                    Stat::Percentile(p) => h.value_at_quantile(p / 100.0) as f64,
                    Stat::Min => h.min() as f64,
                    Stat::Mean => h.mean(),
                    Stat::Max => h.max() as f64,
                }
            }
            Metric::Errors { percent: false } => s.errors_total as f64,
            Metric::Errors { percent: true } => {
                // No attempt, no error: 0%.
                let attempts = (s.replies + s.errors_total).max(1);
                s.errors_total as f64 * 100.0 / attempts as f64
            }
            Metric::Non2xx => s
                .status
                .iter()
                .filter(|(k, _)| k.as_str() != "2xx")
                .map(|(_, v)| v)
                .sum::<u64>() as f64,
            Metric::Requests => s.requests as f64,
            Metric::Replies => s.replies as f64,
            Metric::MissedSlots => s.missed_slots as f64,
            Metric::ReplyRate => s.reply_rate,
        };
        Ok(CheckResult {
            expr: self.expr.clone(),
            measured,
            limit: self.limit,
            pass: samples && self.op.holds(measured, self.limit),
        })
    }
}

/// Parse every `--fail-if` before the run.
pub fn parse_all(exprs: &[String], cfg: &Config) -> anyhow::Result<Vec<Check>> {
    exprs.iter().map(|e| Check::parse(e, cfg)).collect()
}

/// Evaluate the checks; `Ok(true)` when all pass.
pub fn evaluate_all(checks: &[Check], s: &mut Summary) -> anyhow::Result<bool> {
    s.checks = checks
        .iter()
        .map(|c| c.evaluate(s))
        .collect::<anyhow::Result<_>>()?;
    Ok(s.checks.iter().all(|c| c.pass))
}

/// The requests per second a run offers at `--rate r`: the rate drives each
/// active workload, a persistent connection's arrival is one request, and a
/// session's is `--calls` requests (a session log's: the mean over its
/// sessions, which the run cycles through).
fn offered_requests(cfg: &Config, r: f64) -> f64 {
    let per_session = match &cfg.wsesslog {
        Some(l) if !l.log.is_empty() => {
            let requests: usize = l
                .log
                .iter()
                .flat_map(|s| s.iter().map(|b| b.requests.len()))
                .sum();
            requests as f64 / l.log.len() as f64
        }
        _ => f64::from(cfg.calls),
    };
    let per_arrival = cfg.sessions.map_or(0.0, |_| per_session) + f64::from(cfg.persistent > 0);
    r * if per_arrival > 0.0 { per_arrival } else { 1.0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate: &str) -> Config {
        Config::from_command_line(["http://127.0.0.1:1/", "--rate", rate, "--persistent", "2"])
            .unwrap()
    }

    #[test]
    fn the_grammar_reads_the_examples_and_refuses_the_rest() {
        let c = cfg("200");
        let p = |e: &str| Check::parse(e, &c);
        assert_eq!(p("p99<5ms").unwrap().limit, 5000.0);
        assert_eq!(p(" p99.9 <= 20ms ").unwrap().op, Op::Le);
        assert_eq!(
            p("p99.9<=20ms").unwrap().metric,
            Metric::Latency(Which::Corrected, Stat::Percentile(99.9))
        );
        assert_eq!(
            p("uncorrected_max<1s").unwrap().metric,
            Metric::Latency(Which::Uncorrected, Stat::Max)
        );
        let e = p("errors<0.1%").unwrap();
        assert_eq!((e.metric, e.limit), (Metric::Errors { percent: true }, 0.1));
        assert_eq!(p("reply_rate>=0.99*rate").unwrap().limit, 0.99 * 200.0);
        assert_eq!(p("replies>1000").unwrap().limit, 1000.0);
        let err = |e: &str| p(e).unwrap_err().to_string();
        assert!(
            err("p99 5ms").contains("no comparison"),
            "{}",
            err("p99 5ms")
        );
        assert!(err("p99<5").contains("duration"), "{}", err("p99<5"));
        assert!(err("p101<5ms").contains("unknown metric"));
        assert!(err("latency<5ms").contains("unknown metric"));
        assert!(err("errors<x").contains("not a number"));
        assert!(err("errors<200%").contains("at most 100%"));
        assert!(err("replies=>3").contains("comparison"));
        assert!(err("reply_rate>0.9*speed").contains("FACTOR*rate"));
        // Sessions of three calls at 100/s offer 300 requests/s.
        let sessions = Config::from_command_line([
            "http://127.0.0.1:1/",
            "--rate",
            "100",
            "--sessions",
            "50",
            "--calls",
            "3",
        ])
        .unwrap();
        let limit = Check::parse("reply_rate>=0.99*rate", &sessions)
            .unwrap()
            .limit;
        assert!((limit - 297.0).abs() < 1e-9, "{limit}");
        let closed = cfg("max");
        let e = Check::parse("reply_rate>=0.99*rate", &closed).unwrap_err();
        assert!(e.to_string().contains("needs an offered rate"), "{e}");
    }

    #[test]
    fn checks_compare_the_measured_values() {
        let c = cfg("200");
        let mut r = crate::results::record::Recorder::default();
        for v in 1..=1000u64 {
            r.histograms.latency.record(v).unwrap();
        }
        r.counts.replies = 1000;
        r.counts.replies_in_window = 1000;
        r.error(
            crate::results::record::Role::Persistent,
            crate::results::record::Cause::Timeout,
        );
        let rep = crate::results::record::WorkerReport::new(0, &r, 0.0, 0.0, 0.0, vec![]).unwrap();
        let mut s = Summary::new(&c, crate::results::record::merge(&[rep]).unwrap(), None);
        let run =
            |e: &str, s: &mut Summary| evaluate_all(&[Check::parse(e, &c).unwrap()], s).unwrap();
        assert!(run("p99<1ms", &mut s)); // p99 is 990 µs
        assert_eq!(s.checks[0].measured, 990.0);
        assert!(!run("p99<900us", &mut s));
        assert!(!s.checks[0].pass);
        assert!(run("p100<=1ms", &mut s));
        assert!(run("errors<0.1%", &mut s)); // 1 of 1001
        assert!(!run("errors<0.05%", &mut s));
        assert!(run("errors==1", &mut s));
        // 1000 replies over the default 10 s: 100/s, half the offered 200/s.
        assert!(run("reply_rate>=0.5*rate", &mut s));
        assert!(!run("reply_rate>=0.99*rate", &mut s));
        // No samples: a latency check cannot pass.
        assert!(!run("uncorrected_p50<1s", &mut s));
    }
}
