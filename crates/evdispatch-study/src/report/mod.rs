//! The report: `index.html` (self-contained, inline SVG, readable without
//! script), `summary.md` (one screen) and `report.md` (the whole report in
//! Markdown), all drawn from [`Results`] alone, so a report
//! can be re-rendered from a `results.json`.

pub mod budget;
pub mod reading;
pub mod summary;
pub mod svg;
pub mod tables;
pub mod thennow;

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context as _;

use serde_json::Value;

use crate::figure::{self, fmt_num, Body, Figure};
use crate::results::{Results, ScenarioRecord};
use crate::scenarios::SCENARIOS;
use summary::{anchor, numbers_of, rounds_text, str_of, Summary};
use svg::esc;

/// A scenario's figures. Over several rounds, charts draw every round
/// (merged into medians with their spread), and each table is drawn from
/// every round apart and set into one ([`tables::across_rounds`]): each
/// number the median of the rounds with the lowest and highest beside it.
fn figures_of(rec: &ScenarioRecord) -> Vec<Figure> {
    let Some(sc) = SCENARIOS.iter().find(|s| s.id == rec.id) else {
        return vec![];
    };
    let mut figs = (sc.figures)(rec);
    let rounds = rec.round_ids();
    if rounds.len() > 1 {
        let each: Vec<Vec<Figure>> = rounds
            .iter()
            .map(|r| (sc.figures)(&rec.round(*r)))
            .collect();
        for f in figs.iter_mut().filter(|f| matches!(f.body, Body::Table(_))) {
            let bodies: Vec<&figure::Table> = each
                .iter()
                .filter_map(
                    |fs| match fs.iter().find(|g| g.title == f.title).map(|g| &g.body) {
                        Some(Body::Table(t)) => Some(t),
                        _ => None,
                    },
                )
                .collect();
            if bodies.is_empty() {
                continue;
            }
            f.body = Body::Table(tables::across_rounds(&bodies));
            f.caption = format!(
                "{} Each number is the median of {} rounds, with the lowest and highest round in brackets where they differ; every round's points are in results.json and the scenario's CSV.",
                f.caption,
                bodies.len()
            );
        }
    }
    figs.into_iter().filter(Figure::has_data).collect()
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:1040px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}td,th{border:1px solid #ccc;padding:3px 7px;text-align:right;vertical-align:top}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}td.l,th.l{text-align:left}.holds{background:#dff3df}.fails{background:#f8dada}\
.partly{background:#fbf0cc}.summary{border-top:none;margin-top:0}.summary ul{margin:.3em 0;padding-left:1.4em}.summary li,.summary p{margin:.25em 0}.not-measured{background:#eee;color:#555}.not-reached{background:#f3e8f7;color:#555}.undecided{background:#e4ecf7}figure{margin:1.4em 0}figcaption{font-size:.88em;color:#444;max-width:760px}\
p.reading{font-size:.9em;max-width:760px;background:#f6f8fa;border-left:3px solid #0072b2;padding:.3em .6em}\
.skip{color:#8a4b00}code{background:#f4f4f4;padding:0 3px}section{border-top:1px solid #ddd;margin-top:2em}.params{font-size:.85em;color:#444}";

/// The profile's parameters of a scenario as `key = value; …`.
fn params_text(v: &Value) -> String {
    match v.as_object() {
        Some(o) => o
            .iter()
            .map(|(k, v)| format!("{k} = {}", str_of(v)))
            .collect::<Vec<_>>()
            .join("; "),
        None => String::new(),
    }
}

/// Each verdict word of `claims` with how many claims got it: the usual
/// words first (`undecided` and `not reached` only when some claim is), then any other word
/// in the order the claims first give it, so a new outcome is counted
/// without a change here.
pub fn verdict_tally(claims: &[Value]) -> Vec<(String, usize)> {
    let mut words: Vec<String> = [
        "holds",
        "partly",
        "fails",
        "undecided",
        "not reached",
        "not measured",
    ]
    .map(String::from)
    .into();
    for c in claims {
        if let Some(w) = c["verdict"].as_str() {
            if !words.iter().any(|x| x == w) {
                words.push(w.to_string());
            }
        }
    }
    words
        .into_iter()
        .map(|w| {
            let n = claims
                .iter()
                .filter(|c| c["verdict"].as_str() == Some(w.as_str()))
                .count();
            (w, n)
        })
        .filter(|(w, n)| !((w == "undecided" || w == "not reached") && *n == 0))
        .collect()
}

/// The verdicts of a run counted, every verdict word it has:
/// `43 claims: 21 hold, 3 partly, 2 fail, 6 undecided, 11 not measured`.
pub fn verdict_counts(res: &Results) -> String {
    let counts: Vec<String> = verdict_tally(&res.claims)
        .into_iter()
        .map(|(w, n)| match w.as_str() {
            "holds" => format!("{n} hold"),
            "fails" => format!("{n} fail"),
            _ => format!("{n} {w}"),
        })
        .collect();
    format!("{} claims: {}", res.claims.len(), counts.join(", "))
}

/// A claim's `why` as short sentences: split after each full stop that
/// ends a sentence (outside brackets) and at the ` | ` between rounds.
pub fn sentences(why: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let chars: Vec<char> = why.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        match ch {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => {}
        }
        if depth == 0 && ch == '|' && cur.ends_with(' ') && chars.get(i + 1) == Some(&' ') {
            out.push(cur.trim().to_string());
            cur.clear();
            i += 2;
            continue;
        }
        cur.push(ch);
        let ends = ch == '.'
            && depth == 0
            && chars.get(i + 1) == Some(&' ')
            && chars
                .get(i + 2)
                .is_some_and(|c| c.is_uppercase() || *c == '(');
        if ends {
            out.push(cur.trim().to_string());
            cur.clear();
            i += 2;
            continue;
        }
        i += 1;
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Where the server and the load generators ran, in words (a sentence
/// without its full stop).
fn placement(env: &Value) -> String {
    match env.get("load_host").filter(|h| !h.is_null()) {
        Some(h) => format!(
            "The server runs here pinned to CPU 0; the load generators ran on the load host {} ({}, Linux {}, {} CPUs), over ssh",
            str_of(&h["destination"]),
            str_of(&h["hostname"]),
            str_of(&h["kernel"]),
            str_of(&h["cpus_online"])
        ),
        None => "The server runs pinned to CPU 0 and the load generator to the last CPU".into(),
    }
}

/// Write the report of `res` into `out`: `index.html`, `summary.md` (one
/// screen) and `report.md` (everything, charts as tables).
pub fn write(out: &Path, res: &Results) -> anyhow::Result<()> {
    for (name, text) in [
        ("index.html", html(res)),
        ("summary.md", summary_markdown(res)),
        ("report.md", markdown(res)),
    ] {
        std::fs::write(out.join(name), text)
            .with_context(|| format!("cannot write {}", out.join(name).display()))?;
    }
    Ok(())
}

/// Render `index.html`.
pub fn html(res: &Results) -> String {
    let mut h = String::new();
    h.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/><title>evdispatch study</title>");
    let _ = write!(h, "<style>{STYLE}</style></head><body>");
    let env = &res.environment;
    let _ = write!(
        h,
        "<h1>evdispatch study</h1><p>The experiments of the 2000–2001 event-dispatch papers (Provos &amp; Lever; Kegel; Chandra &amp; Mosberger; CITI) re-run on this machine — Linux {}, {} × {}, profile <code>{}</code> — with today's mechanisms (epoll, io_uring) and peer servers beside them. Every number below was measured by <code>evdispatch study</code> in this run; every point's full configuration and command lines are in <code>results.json</code>. {}; points drawn hollow had the generator's core saturated.</p>",
        esc(&str_of(&env["kernel"])),
        esc(&str_of(&env["cpus_online"])),
        esc(&str_of(&env["cpu_model"])),
        esc(&res.profile),
        esc(&placement(env))
    );
    h.push_str(&Summary::of(&res.claims).html());
    h.push_str(&thennow::html(res));
    // Claims.
    let _ = write!(
        h,
        "<h2 id=\"claims\">Claims of the seeds, judged on this run</h2><p>{}. Each verdict is computed from this run's data by the rule stated in its last column, on each round apart; a claim holds or fails only when its rounds agree (else <i>undecided</i>), and each number is the median across rounds with its interval (the range of the rounds, or from five rounds on a 90% interval of the median from order statistics; the percentage is its coverage); <i>today</i> marks questions the seeds could not ask.</p><table><tr><th>seed</th><th class=\"l\">claim</th><th>verdict</th><th class=\"l\">numbers</th><th class=\"l\">why</th></tr>",
        verdict_counts(res)
    );
    for c in &res.claims {
        let verdict = str_of(&c["verdict"]);
        let nums: Vec<String> = numbers_of(c).iter().map(|n| esc(n)).collect();
        let _ = write!(
            h,
            "<tr id=\"{}\"><td>{} {}</td><td class=\"l\">{} <a href=\"#{}\">[{}]</a></td><td class=\"{}\">{}{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&anchor(c)),
            esc(&str_of(&c["seed"])),
            esc(&str_of(&c["section"])),
            esc(&str_of(&c["claim"])),
            esc(&str_of(&c["scenario"])),
            esc(&str_of(&c["scenario"])),
            verdict.replace(' ', "-"),
            esc(&verdict),
            match rounds_text(c) {
                t if t.is_empty() => String::new(),
                t => format!("<br/><small class=\"rounds\">{}</small>", esc(&t)),
            },
            nums.join("<br/>"),
            sentences(&str_of(&c["why"]))
                .iter()
                .map(|s| esc(s))
                .collect::<Vec<_>>()
                .join("<br/>")
        );
    }
    h.push_str("</table>");
    // The run: what ran, for how long.
    h.push_str("<h2 id=\"run\">The run</h2><table><tr><th>#</th><th class=\"l\">scenario</th><th>status</th><th>points</th><th>seconds</th><th>of which waiting for the lock</th><th>planned</th><th>jobs repeated</th></tr>");
    for rec in &res.scenarios {
        let Some(sc) = SCENARIOS.iter().find(|s| s.id == rec.id) else {
            continue;
        };
        let planned: f64 = rec.timings.iter().map(|t| t.est_s).sum();
        let repeated = rec.timings.iter().filter(|t| t.runs > 1).count();
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"l\"><a href=\"#{}\">{}</a> ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            crate::scenarios::number(sc),
            esc(sc.id),
            esc(sc.title),
            esc(&rec.profile),
            rec.status.word(),
            rec.points.len(),
            fmt_num(rec.duration_s),
            fmt_num(rec.lock_wait_s),
            fmt_num(planned),
            repeated
        );
    }
    h.push_str("</table><p class=\"params\">A job is repeated once when other processes on this shared machine took more than a quarter of a core while it ran; the calmer run is kept.</p>");
    // Scenarios.
    for rec in &res.scenarios {
        let Some(sc) = SCENARIOS.iter().find(|s| s.id == rec.id) else {
            continue;
        };
        let _ = write!(
            h,
            "<section id=\"{}\"><h2>{}. {}</h2><p><em>Seeds: {}.</em> {}</p><p class=\"params\">Status: <b>{}</b>, {} points, {} s, profile {}, commit <code>{}</code>. Parameters: {}.</p>",
            esc(sc.id),
            crate::scenarios::number(sc),
            esc(sc.title),
            esc(sc.seeds),
            esc(sc.about),
            rec.status.word(),
            rec.points.len(),
            fmt_num(rec.duration_s),
            esc(&rec.profile),
            esc(&rec.git_commit),
            esc(&params_text(&rec.params))
        );
        for f in figures_of(rec) {
            let _ = write!(h, "<figure><h3>{}</h3>", esc(&f.title));
            match &f.body {
                Body::Chart(c) => h.push_str(&svg::render(c, &f.title)),
                Body::Table(t) => {
                    h.push_str("<table class=\"data\"><tr>");
                    for c in &t.columns {
                        let _ = write!(h, "<th>{}</th>", esc(c));
                    }
                    h.push_str("</tr>");
                    for r in &t.rows {
                        h.push_str("<tr>");
                        for c in r {
                            let _ = write!(h, "<td>{}</td>", esc(c));
                        }
                        h.push_str("</tr>");
                    }
                    h.push_str("</table>");
                }
            }
            let _ = write!(h, "<figcaption>{}</figcaption>", esc(&f.caption));
            if !f.reading.is_empty() {
                let _ = write!(
                    h,
                    "<p class=\"reading\"><b>This run:</b> {}</p>",
                    esc(&f.reading)
                );
            }
            h.push_str("</figure>");
        }
        if !rec.skipped.is_empty() || !rec.failures.is_empty() {
            h.push_str("<h3>Not measured</h3><ul>");
            for s in &rec.skipped {
                let _ = write!(
                    h,
                    "<li class=\"skip\">{}: {}</li>",
                    esc(&s.what),
                    esc(&s.why)
                );
            }
            for s in &rec.failures {
                let _ = write!(
                    h,
                    "<li class=\"skip\">{} <b>failed</b>: {}</li>",
                    esc(&s.what),
                    esc(&s.why)
                );
            }
            h.push_str("</ul>");
        }
        h.push_str("</section>");
    }
    h.push_str(&budget::html(res));
    // Peers and environment.
    h.push_str("<section id=\"peers\"><h2>Peers</h2><p>Found at run time; a missing one is listed with the command that installs it (all of them: <code>bash .ci/install-peers</code>).</p><table><tr><th>peer</th><th class=\"l\">role</th><th class=\"l\">status</th></tr>");
    for p in &res.peers {
        let status = match p["version"].as_str() {
            Some(v) => format!("present, version {v}"),
            None => str_of(&p["status"]),
        };
        let _ = write!(
            h,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&str_of(&p["name"])),
            esc(&str_of(&p["role"])),
            esc(&status)
        );
    }
    h.push_str("</table></section><section id=\"environment\"><h2>Environment</h2><table>");
    if let Some(env) = res.environment.as_object() {
        for (k, v) in env {
            let _ = write!(
                h,
                "<tr><td>{}</td><td class=\"l\">{}</td></tr>",
                esc(k),
                esc(&str_of(v))
            );
        }
    }
    h.push_str("</table></section></body></html>\n");
    h
}

/// The opening lines of `summary.md` and `report.md`: the profile, the
/// machine, where the load ran.
fn markdown_head(res: &Results, title: &str) -> String {
    let env = &res.environment;
    format!(
        "# evdispatch study (profile `{}`){title}\n\nLinux {}, {} × {}. {}; every point's configuration is in `results.json`.\n",
        res.profile,
        str_of(&env["kernel"]),
        str_of(&env["cpus_online"]),
        str_of(&env["cpu_model"]),
        placement(env)
    )
}

/// Render `summary.md`, one screen: the verdicts counted, the claims of
/// each verdict by id, then the published numbers of the headline claims
/// beside today's. The reasons are in the claims tables of `index.html`
/// and `report.md`.
pub fn summary_markdown(res: &Results) -> String {
    let mut m = markdown_head(res, ": summary");
    let _ = writeln!(m, "\n**{}.**\n", verdict_counts(res));
    for (word, n) in verdict_tally(&res.claims) {
        if n == 0 {
            continue;
        }
        let ids: Vec<String> = res
            .claims
            .iter()
            .filter(|c| c["verdict"].as_str() == Some(word.as_str()))
            .map(|c| format!("`{}`", str_of(&c["id"])))
            .collect();
        let _ = writeln!(m, "- {word} ({n}): {}", ids.join(", "));
    }
    let _ = writeln!(
        m,
        "\n## Then beside now: the headline numbers\n\n{}",
        thennow::markdown(res, true)
    );
    let _ = writeln!(
        m,
        "Now: the median across rounds [lowest – highest round]; ratio: now over then. Every published number beside today's is in index.html (Then beside now); every claim with its numbers and reasons in index.html and report.md."
    );
    m
}

/// Render `report.md`: the same content as `index.html`, charts as tables.
pub fn markdown(res: &Results) -> String {
    let mut m = markdown_head(res, "");
    let _ = writeln!(m, "{}", Summary::of(&res.claims).markdown());
    let _ = writeln!(
        m,
        "## Then beside now\n\nEvery number the seeds published beside this run's at the same parameters: the median across rounds [lowest – highest round], the ratio now over then, the verdict of the claim it belongs to.\n\n{}",
        thennow::markdown(res, false)
    );
    let _ = writeln!(
        m,
        "## Claims\n\n{}.\n\n| seed | claim | verdict | numbers | why |\n|---|---|---|---|---|",
        verdict_counts(res)
    );
    for c in &res.claims {
        let nums = numbers_of(c);
        let _ = writeln!(
            m,
            "| {} {} | {} | **{}**{} | {} | {} |",
            str_of(&c["seed"]),
            str_of(&c["section"]),
            str_of(&c["claim"]),
            str_of(&c["verdict"]),
            match rounds_text(c) {
                t if t.is_empty() => String::new(),
                t => format!(" ({t})"),
            },
            nums.join("; ").replace('|', "/"),
            str_of(&c["why"]).replace('|', "/")
        );
    }
    let _ = writeln!(
        m,
        "\n## The run\n\n| # | scenario | status | points | seconds | waiting for the lock | planned | jobs repeated |\n|---|---|---|---|---|---|---|---|"
    );
    for rec in &res.scenarios {
        let Some(sc) = SCENARIOS.iter().find(|s| s.id == rec.id) else {
            continue;
        };
        let planned: f64 = rec.timings.iter().map(|t| t.est_s).sum();
        let _ = writeln!(
            m,
            "| {} | {} ({}) | {} | {} | {} | {} | {} | {} |",
            crate::scenarios::number(sc),
            sc.id,
            rec.profile,
            rec.status.word(),
            rec.points.len(),
            fmt_num(rec.duration_s),
            fmt_num(rec.lock_wait_s),
            fmt_num(planned),
            rec.timings.iter().filter(|t| t.runs > 1).count()
        );
    }
    for rec in &res.scenarios {
        let Some(sc) = SCENARIOS.iter().find(|s| s.id == rec.id) else {
            continue;
        };
        let _ = writeln!(
            m,
            "\n## {}. {}\n\nSeeds: {}. Status: {}, {} points, {} s.\n\n{}\n\nParameters: {}.\n",
            crate::scenarios::number(sc),
            sc.title,
            sc.seeds,
            rec.status.word(),
            rec.points.len(),
            fmt_num(rec.duration_s),
            sc.about,
            params_text(&rec.params)
        );
        for f in figures_of(rec) {
            let _ = writeln!(m, "### {}\n", f.title);
            match &f.body {
                Body::Table(t) => {
                    let _ = writeln!(
                        m,
                        "| {} |\n|{}",
                        t.columns.join(" | "),
                        "---|".repeat(t.columns.len())
                    );
                    for r in &t.rows {
                        let _ = writeln!(m, "| {} |", r.join(" | "));
                    }
                }
                Body::Chart(c) => {
                    let mut xs: Vec<f64> = c
                        .series
                        .iter()
                        .flat_map(|s| s.points.iter().map(|p| p.x))
                        .collect();
                    xs.sort_by(f64::total_cmp);
                    xs.dedup();
                    let _ = writeln!(m, "{} against {}:\n", c.y_label, c.x_label);
                    let _ = writeln!(
                        m,
                        "| {} | {} |\n|{}",
                        c.x_label,
                        c.series
                            .iter()
                            .map(|s| s.name.as_str())
                            .collect::<Vec<_>>()
                            .join(" | "),
                        "---|".repeat(c.series.len() + 1)
                    );
                    for x in xs {
                        let cells: Vec<String> = c
                            .series
                            .iter()
                            .map(|s| {
                                s.points
                                    .iter()
                                    .find(|p| p.x == x)
                                    .map(|p| {
                                        let mut v = match p.err {
                                            Some(e) => {
                                                format!("{} ± {}", fmt_num(p.y), fmt_num(e))
                                            }
                                            None => fmt_num(p.y),
                                        };
                                        if p.hollow {
                                            v.push_str(" (g)");
                                        }
                                        v
                                    })
                                    .unwrap_or_else(|| "–".into())
                            })
                            .collect();
                        let _ = writeln!(m, "| {} | {} |", fmt_num(x), cells.join(" | "));
                    }
                    if c.series.iter().flat_map(|s| &s.points).any(|p| p.hollow) {
                        let _ = writeln!(m, "\n(g): the load generator's core was saturated.");
                    }
                }
            }
            let _ = writeln!(m, "\n{}", f.caption);
            if !f.reading.is_empty() {
                let _ = writeln!(m, "\n> **This run:** {}", f.reading);
            }
            let _ = writeln!(m);
        }
        for s in &rec.skipped {
            let _ = writeln!(m, "- not measured: {}: {}", s.what, s.why);
        }
        for s in &rec.failures {
            let _ = writeln!(m, "- FAILED: {}: {}", s.what, s.why);
        }
    }
    let _ = writeln!(m, "\n## Peers\n");
    for p in &res.peers {
        let status = p["version"]
            .as_str()
            .map(|v| format!("present, {v}"))
            .unwrap_or_else(|| str_of(&p["status"]));
        let _ = writeln!(
            m,
            "- {} ({}): {}",
            str_of(&p["name"]),
            str_of(&p["role"]),
            status
        );
    }
    m.push_str(&budget::markdown(res));
    let _ = writeln!(m, "\n## Environment\n");
    if let Some(env) = res.environment.as_object() {
        for (k, v) in env {
            let _ = writeln!(m, "- {k}: {}", str_of(v));
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Point, Status};
    use crate::spec::Caps;
    use crate::spec::Profile;
    use serde_json::json;

    /// Every verdict word is counted, one unknown to the report among them,
    /// and `undecided` only when some claim is.
    #[test]
    fn verdicts_are_counted_whatever_their_word() {
        let claims: Vec<Value> = ["holds", "withdrawn", "holds", "fails", "withdrawn"]
            .iter()
            .map(|v| json!({"id": "x", "verdict": v}))
            .collect();
        let tally = verdict_tally(&claims);
        assert_eq!(
            tally,
            [
                ("holds", 2),
                ("partly", 0),
                ("fails", 1),
                ("not measured", 0),
                ("withdrawn", 2)
            ]
            .map(|(w, n)| (w.to_string(), n))
        );
    }

    /// A reason splits into its sentences, not inside brackets, and at the
    /// bar between rounds.
    #[test]
    fn reasons_split_into_sentences() {
        assert_eq!(
            sentences("holds in all 3 rounds. Intervals: the range (five rounds. Give 90%). Round 1: x ×1.5. Kegel saw ×493 | round 2 (fails): y."),
            [
                "holds in all 3 rounds.",
                "Intervals: the range (five rounds. Give 90%).",
                "Round 1: x ×1.5.",
                "Kegel saw ×493",
                "round 2 (fails): y.",
            ]
        );
    }

    /// Every figure function finds the points its scenario's plan produces:
    /// synthetic metrics on each planned job's configuration (never
    /// reported; this checks the plumbing from plan to chart).
    #[test]
    fn every_scenario_draws_its_planned_points() {
        let caps = Caps::everything();
        let mut records = Vec::new();
        for sc in SCENARIOS {
            let plan = (sc.plan)(Profile::Tiny, &caps);
            let mut points = Vec::new();
            for (i, job) in plan.jobs.iter().enumerate() {
                let x = 1.0 + i as f64;
                let series = job
                    .config
                    .get("series")
                    .and_then(Value::as_str)
                    .unwrap_or("x")
                    .to_string();
                if sc.id == "poller" {
                    for (n, a, m) in [
                        (100, 1, "poll"),
                        (1000, 1, "poll"),
                        (100, 1, "epoll"),
                        (1000, 1, "epoll"),
                        (1000, 100, "epoll"),
                    ] {
                        let mut p = Point::new(
                            m,
                            crate::config![
                                ("bench", "poller"),
                                ("mechanism", m),
                                ("fds", n),
                                ("active", a),
                                ("placement", "rotating")
                            ],
                        );
                        p.metrics.extend([
                            ("median_us".into(), n as f64 / 10.0),
                            ("min_us".into(), 1.0),
                            ("p90_us".into(), n as f64 / 5.0),
                        ]);
                        points.push(p);
                    }
                    let mut p = Point::new(
                        "fdalloc",
                        crate::config![("bench", "fdalloc"), ("fds", 1000)],
                    );
                    p.metrics.insert("second_alloc_far_median_us".into(), 1.0);
                    let mut q = p.clone();
                    points.push(p);
                    q.config.insert("fds".into(), json!(19000));
                    points.push(q);
                    break;
                }
                let mut p = Point::new(series, job.config.clone());
                for k in [
                    "reply_rate",
                    "reply_rate_stddev",
                    "reply_rate_min",
                    "reply_rate_max",
                    "error_pct",
                    "p50_us",
                    "p99_us",
                    "server_cpu_pct",
                    "overflows",
                    "signals_dequeued",
                    "mode_switches",
                    "poll_mode_pct",
                    "rss_per_conn_bytes",
                    "tcp_kernel_per_conn_bytes",
                    "wakeups_per_accept",
                    "worker_wakeups",
                    "worker_accepts",
                    "connections_peak",
                ] {
                    p.metrics.insert(k.into(), x * 10.0);
                }
                points.push(p);
            }
            let figs = (sc.figures)(&ScenarioRecord {
                id: sc.id.into(),
                status: Status::Complete,
                profile: "tiny".into(),
                params: plan.params.clone(),
                started_unix: 0,
                duration_s: 1.0,
                git_commit: "test".into(),
                capabilities: vec![],
                points: points.clone(),
                skipped: plan.skipped.clone(),
                failures: vec![],
                timings: vec![],
                lock_wait_s: 0.0,
                load_host: None,
                rounds: 1,
            });
            assert!(!figs.is_empty(), "{} draws no figure", sc.id);
            for f in &figs {
                assert!(f.has_data(), "{}: '{}' has no data", sc.id, f.title);
            }
            records.push(ScenarioRecord {
                id: sc.id.into(),
                status: Status::Complete,
                profile: "tiny".into(),
                params: plan.params,
                started_unix: 0,
                duration_s: 1.0,
                git_commit: "test".into(),
                capabilities: vec![],
                points,
                skipped: plan.skipped,
                failures: vec![],
                timings: vec![],
                lock_wait_s: 0.0,
                load_host: None,
                rounds: 1,
            });
        }
        let res = Results {
            schema: crate::results::SCHEMA.into(),
            profile: "tiny".into(),
            environment: json!({"kernel": "test"}),
            peers: crate::env::peers_json(&[]),
            claims: crate::claims::evaluate(crate::scenarios::claims(), &records),
            scenarios: records,
            calibration: None,
        };
        let page = html(&res);
        // Every scenario and every claim is shown (the test-only `example`
        // scenario among them: registered by one line, it reaches the report).
        for sc in SCENARIOS {
            assert!(page.contains(&esc(sc.title)), "{} not shown", sc.id);
        }
        for (_, c) in crate::scenarios::claims() {
            assert!(page.contains(&esc(c.text)), "claim {} not shown", c.id);
        }
        assert!(page.contains("Example (tests only)"));
        assert!(
            page.matches("<svg").count() >= 20,
            "{} charts",
            page.matches("<svg").count()
        );
        assert!(!page.contains("NaN"));
        let md = markdown(&res);
        assert!(md.contains("## 8. "));
        // summary.md: one screen, the verdicts counted, then the headline
        // numbers beside today's.
        let short = summary_markdown(&res);
        assert!(short.lines().count() <= 40, "{short}");
        assert!(short.contains("## Then beside now") && short.contains("| 001 results table"));
        assert!(page.contains("id=\"then-vs-now\""));
        let _ = std::fs::write(std::env::temp_dir().join("evd-synthetic-report.html"), page);
    }
}
