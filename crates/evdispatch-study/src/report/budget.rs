//! The report's section on the servers' CPU budget: what the calibration
//! measured and chose (`results.json`'s `calibration`), the rates it gave
//! the scenarios, and the budget's own effect below the knee (pairs of runs
//! with and without it).

use std::fmt::Write as _;

use serde_json::Value;

use super::svg::esc;
use crate::calibrate::effect_ratios;
use crate::results::{Calibration, Results};

/// The multiples of the knee the load scenarios sweep, for the table of
/// derived rates.
const SHOWN_MULTIPLES: &[f64] = &[0.25, 0.5, 1.0, 1.5, 2.0];

/// The lines of the section, as (heading, paragraphs, table rows) shared
/// by both renderings.
struct Section {
    intro: String,
    calibration: Vec<[String; 2]>,
    effect_head: [&'static str; 7],
    effect: Vec<[String; 7]>,
    verdict: Option<String>,
    commands: Vec<String>,
}

fn num(v: &Value, digits: usize) -> String {
    v.as_f64()
        .map(|x| format!("{x:.digits$}"))
        .unwrap_or_else(|| "—".into())
}

fn section(c: &Calibration) -> Section {
    let intro = match (&c.budget, &c.no_budget) {
        (Some(b), _) => format!(
            "The servers of the load scenarios (Table 1, throughput, hybrid) run in a cgroup of their own with a CPU budget of {b} — quota {:.2} ms per period, {} — the study's small machine: the budget puts epoll's knee at about {:.0} new connections/s, {:.0}% of the {:.0}/s one generator process reaches here, so that every mechanism's knee falls within the generator's reach.",
            b.fraction * b.period_us as f64 / 1000.0,
            c.control.as_deref().unwrap_or("?"),
            c.knee,
            100.0 * c.knee / c.generator_ceiling,
            c.generator_ceiling
        ),
        (None, why) => format!(
            "No CPU budget: {}. The servers run with what the host gives (epoll's knee about {:.0} new connections/s against a generator ceiling of {:.0}/s), and the overload claims say \"not reached\" where no server fell behind.",
            why.as_deref().unwrap_or("?"),
            c.knee,
            c.generator_ceiling
        ),
    };
    let mut calibration = vec![
        [
            "generator ceiling G (closed loop, one process)".into(),
            format!(
                "{:.0} new connections/s{}",
                c.generator_ceiling,
                if c.ceiling_generator_limited {
                    " (the generator was the limit)"
                } else {
                    " (the generator was not saturated: the server was the limit)"
                }
            ),
        ],
        [
            format!(
                "epoll's CPU per reply c (unbudgeted, at {:.0}/s)",
                c.probe_rate
            ),
            format!("{:.1} µs", c.cpu_us_per_reply),
        ],
        [
            format!(
                "epoll saturated under a trial budget of {:.1}% of a core",
                100.0 * c.trial_budget
            ),
            format!(
                "{:.0} replies/s: c' = {:.1} µs per reply",
                c.trial_capacity, c.cpu_us_per_reply_saturated
            ),
        ],
        [
            format!("budget b = {} × G × c'", crate::spec::KNEE_OF_CEILING),
            c.budget
                .map(|b| b.to_string())
                .unwrap_or_else(|| "none".into()),
        ],
        [
            "epoll's knee b / c'".into(),
            format!("{:.0} new connections/s", c.knee),
        ],
    ];
    calibration.push([
        "rates swept (multiples of the knee)".into(),
        SHOWN_MULTIPLES
            .iter()
            .map(|m| format!("{m}× = {:.0}", c.rate(*m)))
            .collect::<Vec<_>>()
            .join(", "),
    ]);
    calibration.push(["calibration time".into(), format!("{:.1} s", c.duration_s)]);
    let effect = c
        .effect
        .iter()
        .map(|e| {
            [
                num(&e["pair"], 0),
                if e["budget"] == Value::Bool(true) {
                    "with".into()
                } else {
                    "without".into()
                },
                num(&e["rate"], 0),
                num(&e["reply_rate"], 0),
                num(&e["cpu_us_per_reply"], 1),
                num(&e["p50_us"], 0),
                num(&e["budget_throttled_pct"], 1),
            ]
        })
        .collect();
    let verdict = effect_ratios(c).map(|(cpu, p50)| {
        format!(
            "With the budget, below the knee: CPU per reply ×{cpu:.2}, median latency ×{p50:.2} (median of the pairs' ratios; each pair measured back to back)."
        )
    });
    Section {
        intro,
        calibration,
        effect_head: [
            "pair",
            "budget",
            "offered/s",
            "replies/s",
            "CPU µs/reply",
            "p50 µs",
            "periods throttled %",
        ],
        effect,
        verdict,
        commands: c.commands.clone(),
    }
}

/// The HTML section (empty when the run has no calibration).
pub fn html(res: &Results) -> String {
    let Some(c) = &res.calibration else {
        return String::new();
    };
    let s = section(c);
    let mut h = String::new();
    let _ = write!(
        h,
        "<section id=\"cpu-budget\"><h2>The servers' CPU budget</h2><p>{}</p><table>",
        esc(&s.intro)
    );
    for [k, v] in &s.calibration {
        let _ = write!(
            h,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(k),
            esc(v)
        );
    }
    h.push_str("</table>");
    if !s.effect.is_empty() {
        h.push_str("<h3>The budget's own effect below the knee</h3><table><tr>");
        for t in s.effect_head {
            let _ = write!(h, "<th>{}</th>", esc(t));
        }
        h.push_str("</tr>");
        for row in &s.effect {
            h.push_str("<tr>");
            for cell in row {
                let _ = write!(h, "<td>{}</td>", esc(cell));
            }
            h.push_str("</tr>");
        }
        h.push_str("</table>");
        if let Some(v) = &s.verdict {
            let _ = write!(h, "<p>{}</p>", esc(v));
        }
    }
    h.push_str("<details><summary>commands</summary><ul>");
    for cmd in &s.commands {
        let _ = write!(h, "<li><code>{}</code></li>", esc(cmd));
    }
    h.push_str("</ul></details></section>");
    h
}

/// The Markdown section (empty when the run has no calibration).
pub fn markdown(res: &Results) -> String {
    let Some(c) = &res.calibration else {
        return String::new();
    };
    let s = section(c);
    let mut m = format!(
        "## The servers' CPU budget\n\n{}\n\n| | |\n|---|---|\n",
        s.intro
    );
    for [k, v] in &s.calibration {
        let _ = writeln!(m, "| {k} | {v} |");
    }
    if !s.effect.is_empty() {
        let _ = writeln!(
            m,
            "\n### The budget's own effect below the knee\n\n| {} |\n|{}",
            s.effect_head.join(" | "),
            "---|".repeat(s.effect_head.len())
        );
        for row in &s.effect {
            let _ = writeln!(m, "| {} |", row.join(" | "));
        }
        if let Some(v) = &s.verdict {
            let _ = writeln!(m, "\n{v}");
        }
    }
    m.push('\n');
    m
}
