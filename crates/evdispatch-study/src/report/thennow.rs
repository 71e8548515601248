//! Then beside now: each number the seeds published ([`crate::published`])
//! beside what this run measured at the same parameters, looked up in its
//! records: the median across rounds with its interval, both machines, the
//! ratio and the verdict of the claim the number belongs to. Where this run
//! has no point at those parameters the row says "not measured here" and
//! why (which parameter is missing, and what the run has instead).

use std::fmt::Write as _;

use serde_json::Value;

use super::summary::{anchor, str_of};
use super::svg::esc;
use crate::claims::rounds::{across, Across};
use crate::claims::{generator_bound, KEEP};
use crate::figure::fmt_num;
use crate::published::{self, Is, Now, Published, Take, Unit, Want};
use crate::results::{Point, Results, ScenarioRecord};

/// Today's side of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Today {
    /// The median across rounds with its interval, in the published unit.
    Measured(Across),
    /// No measurement at these parameters here, and why.
    NotMeasured(String),
}

/// One row of the table: a published number, one of today's counterparts,
/// and the verdict of its claim.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// The published number.
    pub then: &'a Published,
    /// Today's counterpart.
    pub now: &'a Now,
    /// Its value here.
    pub today: Today,
    /// The claim's verdict in this run (`None`: no claim, or not in it).
    pub verdict: Option<String>,
}

/// Whether `p` meets `want` on `key` (a configuration value, a metric, or
/// `series`).
fn meets(p: &Point, key: &str, want: &Want) -> bool {
    if key == "series" {
        return matches!(want, Want::Str(s) if *s == p.series);
    }
    let num = || p.num(key).or_else(|| p.metric(key));
    match want {
        Want::Str(s) => p.str(key) == Some(*s),
        Want::Num(x) => num() == Some(*x),
        Want::OneOf(xs) => num().is_some_and(|v| xs.contains(&v)),
        Want::AtLeast(x) => num().is_some_and(|v| v >= *x),
        Want::Within(a, b) => num().is_some_and(|v| v >= *a && v <= *b),
    }
}

fn select<'r>(rec: &'r ScenarioRecord, filter: &[(&str, Want)]) -> Vec<&'r Point> {
    rec.points
        .iter()
        .filter(|p| filter.iter().all(|(k, w)| meets(p, k, w)))
        .collect()
}

/// The value of `now`'s metric at one point, in the published unit.
fn at_point(p: &Point, now: &Now) -> Option<f64> {
    let v = p.metric(now.metric)? * now.scale;
    match now.per {
        Some(per) => {
            let d = p.metric(per)?;
            (d > 0.0).then_some(v / d)
        }
        None => Some(v),
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    across(v).map(|a| a.median)
}

/// One value from the points matching `filter` in one round's record.
fn one_value(rec: &ScenarioRecord, filter: &[(&str, Want)], now: &Now) -> Option<f64> {
    let mut pts = select(rec, filter);
    if let Take::Knee(key) = now.take {
        // A point the generator could not push is not the server's knee.
        let mut xy: Vec<(f64, f64)> = pts
            .iter()
            .filter(|p| !generator_bound(p))
            .filter_map(|p| Some((p.num(key)?, p.metric(now.metric)?)))
            .collect();
        xy.sort_by(|a, b| a.0.total_cmp(&b.0));
        return xy
            .iter()
            .find(|(x, y)| *y < KEEP * x)
            .map(|(x, _)| x * now.scale);
    }
    if let Take::LowestOf(key) = now.take {
        let low = pts.iter().filter_map(|p| p.num(key)).reduce(f64::min)?;
        pts.retain(|p| p.num(key) == Some(low));
    }
    let mut vals: Vec<f64> = pts.iter().filter_map(|p| at_point(p, now)).collect();
    if vals.is_empty() {
        return None;
    }
    match now.take {
        Take::Median | Take::LowestOf(_) | Take::Knee(_) => median(&mut vals),
        Take::Max => vals.into_iter().reduce(f64::max),
        Take::Mean => Some(vals.iter().sum::<f64>() / vals.len() as f64),
    }
}

/// `now`'s value in one round's record (less its `minus` points' value).
fn round_value(rec: &ScenarioRecord, now: &Now) -> Option<f64> {
    let v = one_value(rec, &now.filter, now)?;
    match &now.minus {
        Some(other) => Some(v - one_value(rec, other, now)?),
        None => Some(v),
    }
}

fn want_text(w: &Want) -> String {
    match w {
        Want::Str(s) => format!("= {s}"),
        Want::Num(x) => format!("= {}", fmt_num(*x)),
        Want::OneOf(xs) => format!(
            "in {}",
            xs.iter()
                .map(|x| fmt_num(*x))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Want::AtLeast(x) => format!("≥ {}", fmt_num(*x)),
        Want::Within(a, b) => format!("from {} to {}", fmt_num(*a), fmt_num(*b)),
    }
}

/// What this run has of `key` among `pts`: its distinct values (a few),
/// or for a threshold the largest.
fn has_text(pts: &[&Point], key: &str, want: &Want) -> String {
    if key == "series" {
        let mut names: Vec<&str> = Vec::new();
        for p in pts {
            if !names.contains(&p.series.as_str()) {
                names.push(&p.series);
            }
        }
        return format!("series {}", names.join(", "));
    }
    let nums: Vec<f64> = pts
        .iter()
        .filter_map(|p| p.num(key).or_else(|| p.metric(key)))
        .collect();
    if matches!(want, Want::AtLeast(_)) {
        return match nums.iter().copied().reduce(f64::max) {
            Some(m) => format!("{key} reached {} at most", fmt_num(m)),
            None => format!("no {key}"),
        };
    }
    let mut vals: Vec<String> = Vec::new();
    for p in pts {
        let v = match p.config.get(key) {
            Some(Value::String(s)) => s.clone(),
            Some(v) if v.is_number() => fmt_num(v.as_f64().unwrap_or(f64::NAN)),
            _ => continue,
        };
        if !vals.contains(&v) {
            vals.push(v);
        }
    }
    if vals.is_empty() {
        return format!("no {key}");
    }
    let more = vals.len() > 8;
    vals.truncate(8);
    format!(
        "{key} = {}{}",
        vals.join(", "),
        if more { ", …" } else { "" }
    )
}

/// Why `filter` finds nothing in `rec`: the first condition that leaves no
/// point, and what the run has instead; or the metric missing.
fn why_none(rec: &ScenarioRecord, filter: &[(&str, Want)], now: &Now) -> String {
    let mut pts: Vec<&Point> = rec.points.iter().collect();
    for (key, want) in filter {
        let next: Vec<&Point> = pts
            .iter()
            .copied()
            .filter(|p| meets(p, key, want))
            .collect();
        if next.is_empty() {
            let mut why = format!(
                "no point with {key} {} in {} (this run: {})",
                want_text(want),
                rec.id,
                has_text(&pts, key, want)
            );
            // A skip of the scenario naming the series (and the missing
            // value) says why the run has no such point.
            let mut names: Vec<String> = filter
                .iter()
                .filter_map(|(k, w)| match w {
                    Want::Str(s) if *k == "series" => Some(s.to_string()),
                    _ => None,
                })
                .collect();
            match want {
                Want::Num(x) => names.push(format!("{x}")),
                Want::Str(s) => names.push(s.to_string()),
                _ => {}
            }
            if let Some(skip) = rec
                .skipped
                .iter()
                .find(|k| names.iter().all(|n| k.what.contains(n.as_str())))
            {
                let _ = write!(why, "; {}: {}", skip.what, skip.why);
            }
            return why;
        }
        pts = next;
    }
    format!("no {} at those points of {}", now.metric, rec.id)
}

/// Today's value of `now` in `records`: per round, then the median across
/// rounds with its interval; or why there is none.
pub fn lookup(now: &Now, records: &[ScenarioRecord]) -> Today {
    let Some(rec) = records.iter().find(|r| r.id == now.scenario) else {
        return Today::NotMeasured(format!("scenario {} is not in this run", now.scenario));
    };
    if rec.points.is_empty() {
        let why: Vec<String> = rec
            .skipped
            .iter()
            .chain(&rec.failures)
            .map(|s| format!("{}: {}", s.what, s.why))
            .take(2)
            .collect();
        return Today::NotMeasured(format!(
            "scenario {} measured nothing{}",
            rec.id,
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({})", why.join("; "))
            }
        ));
    }
    let ids = rec.round_ids();
    let vals: Vec<f64> = if ids.len() > 1 {
        ids.iter()
            .filter_map(|&r| round_value(&rec.round(r), now))
            .collect()
    } else {
        round_value(rec, now).into_iter().collect()
    };
    match across(&vals) {
        Some(a) => Today::Measured(a),
        None => {
            if let Take::Knee(key) = now.take {
                let top = select(rec, &now.filter)
                    .iter()
                    .filter(|p| p.metric(now.metric).is_some())
                    .filter_map(|p| p.num(key))
                    .reduce(f64::max);
                if let Some(top) = top {
                    return Today::NotMeasured(format!(
                        "{} kept up (answered ≥ {:.0}% of the offered rate) at every {key} up to {} in {}: its knee was not reached",
                        now.label,
                        KEEP * 100.0,
                        fmt_num(top),
                        rec.id
                    ));
                }
            }
            let mut why = why_none(rec, &now.filter, now);
            if select(rec, &now.filter)
                .iter()
                .any(|p| at_point(p, now).is_some())
            {
                if let Some(other) = &now.minus {
                    why = format!("for the difference, {}", why_none(rec, other, now));
                }
            }
            Today::NotMeasured(why)
        }
    }
}

/// Every published number with each of today's counterparts, looked up
/// in `res`.
pub fn rows<'a>(all: &'a [Published], res: &Results) -> Vec<Row<'a>> {
    all.iter()
        .flat_map(|then| then.now.iter().map(move |now| (then, now)))
        .map(|(then, now)| Row {
            then,
            now,
            today: lookup(now, &res.scenarios),
            verdict: then.claim.and_then(|id| {
                res.claims
                    .iter()
                    .find(|c| c["id"].as_str() == Some(id))
                    .map(|c| str_of(&c["verdict"]))
            }),
        })
        .collect()
}

/// A number with three significant digits however small (`0.000815`),
/// as [`fmt_num`] prints it from 0.01 up.
fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() || v.abs() >= 0.01 {
        return fmt_num(v);
    }
    let digits = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}")
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// A published number as printed: `≈ 6.67%`, `> 120 ms`, `1–3 ms`.
pub fn then_text(p: &Published) -> String {
    let u = p.unit.suffix();
    let f = |v: f64| match p.unit {
        Unit::CountPerRun => {
            // Counts as the seed printed them, every digit.
            let s = format!("{v:.0}");
            let mut out = String::new();
            for (i, ch) in s.chars().enumerate() {
                if i > 0 && (s.len() - i) % 3 == 0 {
                    out.push(',');
                }
                out.push(ch);
            }
            out
        }
        Unit::PerDequeue => sig3(v),
        // Every digit the seed printed.
        _ => format!("{v}"),
    };
    match p.value {
        Is::Exact(v) => format!("{}{u}", f(v)),
        Is::About(v) => format!("≈ {}{u}", f(v)),
        Is::Over(v) => format!("> {}{u}", f(v)),
        Is::Under(v) => format!("< {}{u}", f(v)),
        Is::UpTo(v) => format!("up to {}{u}", f(v)),
        Is::Between(a, b) => format!("{}–{}{u}", f(a), f(b)),
    }
}

/// Today's value as printed: `1436 µs [1422 – 1450, 3 rounds]`.
pub fn today_text(row: &Row<'_>) -> String {
    match &row.today {
        Today::NotMeasured(why) => format!("not measured here: {why}"),
        Today::Measured(a) => {
            let u = row.then.unit.suffix();
            let f = sig3;
            if a.rounds == 1 {
                format!("{}{u} [1 round]", f(a.median))
            } else if a.lo == a.hi {
                format!("{}{u} [all {} rounds]", f(a.median), a.rounds)
            } else {
                format!(
                    "{}{u} [{} – {}, {} rounds]",
                    f(a.median),
                    f(a.lo),
                    f(a.hi),
                    a.rounds
                )
            }
        }
    }
}

/// Today over then, or why there is no ratio.
pub fn ratio_text(row: &Row<'_>) -> String {
    let Today::Measured(a) = &row.today else {
        return "–".into();
    };
    if row.then.unit == Unit::CountPerRun {
        return "– (counts per run; the seed gives no run length)".into();
    }
    let (lo, hi) = row.then.value.ends();
    if lo == 0.0 || hi == 0.0 {
        return "– (published 0)".into();
    }
    if a.median < 0.0 {
        return "– (opposite sign)".into();
    }
    // Below a tenth as a fraction, which reads better than ×0.000.
    let r = |d: f64| match a.median / d {
        x if x == 0.0 || x >= 0.1 => format!("×{}", fmt_num(x)),
        x => format!("×1/{}", fmt_num(1.0 / x)),
    };
    if lo == hi {
        r(lo)
    } else {
        format!("{} – {}", r(hi), r(lo))
    }
}

/// This machine, as the table names it.
pub fn this_machine(res: &Results) -> String {
    let env = &res.environment;
    format!(
        "this machine ({} × {}, Linux {})",
        str_of(&env["cpus_online"]),
        str_of(&env["cpu_model"]),
        str_of(&env["kernel"])
    )
}

fn seed_title(seed: &str) -> &'static str {
    match seed {
        "000" => "Provos & Lever, Scalable Network I/O in Linux (thttpd, phhttpd)",
        "001" => "Kegel, Poller_bench",
        "004" => "Chandra & Mosberger, Scalability of Linux Event-Dispatch Mechanisms",
        _ => "",
    }
}

fn verdict_cell(row: &Row<'_>, html: bool) -> String {
    match (row.then.claim, &row.verdict) {
        (Some(id), Some(v)) if html => format!(
            "<a href=\"#{}\">{}</a>: <span class=\"{}\">{}</span>",
            esc(&anchor(&serde_json::json!({ "id": id }))),
            esc(id),
            esc(&v.replace(' ', "-")),
            esc(v)
        ),
        (Some(id), Some(v)) => format!("`{id}`: **{v}**"),
        (Some(id), None) if html => format!("{} (not in this run)", esc(id)),
        (Some(id), None) => format!("`{id}` (not in this run)"),
        (None, _) => "– (no claim judges it)".into(),
    }
}

/// The whole table for `index.html`, grouped by seed, with the machines
/// named beneath.
pub fn html(res: &Results) -> String {
    let all = published::all();
    let rows = rows(&all, res);
    let measured = rows
        .iter()
        .filter(|r| matches!(r.today, Today::Measured(_)))
        .count();
    let mut h = String::new();
    let _ = write!(
        h,
        "<h2 id=\"then-vs-now\">Then beside now</h2><p>Every number the seeds published, beside what this run measured at the same parameters on {}: {} of {} rows measured here. Today's value is the median across rounds with the lowest and highest round in brackets (the interval of the claims table). The ratio is today over then. The verdict is that of the claim the number belongs to. A row without a measurement says why, never a stand-in value.</p>",
        esc(&this_machine(res)),
        measured,
        rows.len()
    );
    h.push_str("<table class=\"thennow\"><tr><th class=\"l\">source</th><th class=\"l\">what</th><th class=\"l\">parameters</th><th class=\"l\">then (machine)</th><th class=\"l\">now</th><th>ratio</th><th class=\"l\">claim: verdict</th></tr>");
    let mut seed = "";
    for r in &rows {
        if r.then.seed != seed {
            seed = r.then.seed;
            let _ = write!(
                h,
                "<tr><th class=\"l\" colspan=\"7\">{} — {} (<code>{}</code>)</th></tr>",
                esc(seed),
                esc(seed_title(seed)),
                esc(published::seed_file(seed))
            );
        }
        let class = match r.today {
            Today::Measured(_) => "",
            Today::NotMeasured(_) => " class=\"not-measured l\"",
        };
        let _ = write!(
            h,
            "<tr><td class=\"l\">{} {}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}<br/><small>{}</small></td><td{}>{}<br/><small>{}</small></td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(r.then.seed),
            esc(r.then.source),
            esc(&r.then.what),
            esc(&r.then.params),
            esc(&then_text(r.then)),
            esc(r.then.machine.name),
            if class.is_empty() { " class=\"l\"" } else { class },
            esc(&today_text(r)),
            esc(r.now.label),
            esc(&ratio_text(r)),
            verdict_cell(r, true)
        );
    }
    h.push_str("</table><p class=\"params\"><b>Machines.</b> ");
    let machines: Vec<String> = published::MACHINES
        .iter()
        .map(|m| format!("<i>{}</i>: {}.", esc(m.name), esc(m.about)))
        .collect();
    h.push_str(&machines.join(" "));
    let _ = write!(
        h,
        " <i>Now</i>: {}, profile <code>{}</code>.</p>",
        esc(&this_machine(res)),
        esc(&res.profile)
    );
    h
}

/// The table in Markdown: every row (`report.md`), or the headline rows
/// only (`summary.md`).
pub fn markdown(res: &Results, headlines_only: bool) -> String {
    let all = published::all();
    let rows: Vec<Row<'_>> = rows(&all, res)
        .into_iter()
        .filter(|r| r.then.headline || !headlines_only)
        .collect();
    let mut m = format!(
        "| seed | published (machine) | parameters | now: {} | ratio | claim: verdict |\n|---|---|---|---|---|---|\n",
        this_machine(res)
    );
    for r in &rows {
        let _ = writeln!(
            m,
            "| {} {} | {}: {} ({}) | {} | {}: {} | {} | {} |",
            r.then.seed,
            r.then.source,
            r.then.what,
            then_text(r.then),
            r.then.machine.name,
            r.then.params,
            r.now.label,
            today_text(r),
            ratio_text(r),
            verdict_cell(r, false)
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::testkit::{pt, rec};
    use serde_json::json;

    fn poller_point(mech: &str, fds: u32, round: u32, us: f64) -> crate::claims::testkit::Pt {
        pt(
            mech,
            json!({"bench": "poller", "fds": fds, "active": 1, "placement": "rotating", "round": round}),
            json!({"median_us": us}),
        )
    }

    fn results(records: Vec<ScenarioRecord>, claims: Vec<Value>) -> Results {
        Results {
            schema: crate::results::SCHEMA.into(),
            profile: "quick".into(),
            environment: json!({"kernel": "6.1", "cpus_online": 2, "cpu_model": "Test CPU"}),
            peers: vec![],
            scenarios: records,
            claims,
            calibration: None,
        }
    }

    /// Today's value is the median of the rounds, with the lowest and
    /// highest beside it, at exactly the published parameters.
    #[test]
    fn looks_up_the_median_across_rounds_at_the_same_parameters() {
        let r = rec(
            "poller",
            vec![
                poller_point("poll", 10000, 1, 1400.0),
                poller_point("poll", 10000, 2, 1500.0),
                poller_point("poll", 10000, 3, 1450.0),
                // Another N and another mechanism: not read.
                poller_point("poll", 1000, 1, 9.0),
                poller_point("epoll", 10000, 1, 2.0),
            ],
        );
        let all = published::all();
        let kegel = all
            .iter()
            .find(|p| {
                p.machine == published::KEGEL_LINUX22
                    && p.what.starts_with("poll:")
                    && p.params == "N = 10000, A = 1"
            })
            .unwrap();
        let t = lookup(&kegel.now[0], std::slice::from_ref(&r));
        let Today::Measured(a) = t else {
            panic!("{t:?}")
        };
        assert_eq!(
            (a.median, a.lo, a.hi, a.rounds),
            (1450.0, 1400.0, 1500.0, 3)
        );
        let res = results(
            vec![r],
            vec![json!({"id": "poll-grows", "verdict": "holds"})],
        );
        let rows = rows(std::slice::from_ref(kegel), &res);
        assert_eq!(rows[0].verdict.as_deref(), Some("holds"));
        assert_eq!(today_text(&rows[0]), "1450 µs [1400 – 1500, 3 rounds]");
        // 1450 / 11,333.
        assert_eq!(ratio_text(&rows[0]), "×0.128");
        assert!(html(&res).contains("1450 µs [1400 – 1500, 3 rounds]"));
    }

    /// A parameter this run did not measure gives "not measured here",
    /// naming the parameter and what the run has instead; never a value.
    #[test]
    fn a_missing_point_is_not_measured_with_why() {
        let r = rec(
            "poller",
            vec![
                poller_point("poll", 100, 1, 1.0),
                poller_point("poll", 10000, 1, 1400.0),
            ],
        );
        let all = published::all();
        let n30k = all
            .iter()
            .find(|p| p.what.starts_with("poll:") && p.params == "N = 30000, A = 1")
            .unwrap();
        match lookup(&n30k.now[0], std::slice::from_ref(&r)) {
            Today::NotMeasured(why) => {
                assert!(why.contains("fds = 30k"), "{why}");
                assert!(why.contains("fds = 100, 10k"), "{why}");
            }
            t => panic!("{t:?}"),
        }
        // A skip that names the series and the value is quoted.
        let mut skipped = rec(
            "throughput",
            vec![pt(
                "select (accept one)",
                json!({"idle": 252, "rate": 500}),
                json!({"server_cpu_pct": 50.0}),
            )],
        );
        skipped.skipped.push(crate::results::Skip {
            what: "select (accept one), 6000 idle".into(),
            why: "select watches descriptors below 1024 only".into(),
        });
        let cpu = all
            .iter()
            .find(|p| p.what.starts_with("select (one accept"))
            .unwrap();
        match lookup(&cpu.now[0], &[skipped]) {
            Today::NotMeasured(why) => assert!(
                why.contains("idle = 252") && why.ends_with("below 1024 only"),
                "{why}"
            ),
            t => panic!("{t:?}"),
        }
        // No record of the scenario at all.
        match lookup(&n30k.now[0], &[]) {
            Today::NotMeasured(why) => assert!(why.contains("not in this run"), "{why}"),
            t => panic!("{t:?}"),
        }
        // A threshold never reached: phhttpd's jump past 900 connections.
        let lat = rec(
            "rtsig-latency",
            vec![pt(
                "rtsig",
                json!({"server": "ours", "inactive": 251, "rate": 500, "round": 1}),
                json!({"p50_us": 80.0, "connections_peak": 300.0}),
            )],
        );
        let jump = all
            .iter()
            .find(|p| p.claim == Some("rtsig-latency-jumps"))
            .unwrap();
        let res = results(vec![lat], vec![]);
        let rows = rows(std::slice::from_ref(jump), &res);
        let text = today_text(&rows[0]);
        assert!(
            text.starts_with("not measured here: no point with connections_peak ≥ 900")
                && text.contains("connections_peak reached 300 at most"),
            "{text}"
        );
        assert_eq!(ratio_text(&rows[0]), "–");
        assert!(markdown(&res, true).contains("not measured here"));
    }

    /// Derived values: a difference of two servers at the lowest rate, a
    /// share of two metrics, a mean over a range of connections.
    #[test]
    fn differences_shares_and_means() {
        let all = published::all();
        let faster = all
            .iter()
            .find(|p| p.claim == Some("rtsig-faster-low-load"))
            .unwrap();
        let p = |series: &str, rate: u32, us: f64| {
            pt(
                series,
                json!({"server": "ours", "inactive": 251, "rate": rate}),
                json!({"p50_us": us}),
            )
        };
        let r = rec(
            "rtsig-latency",
            vec![
                p("epoll", 500, 900.0),
                p("rtsig", 500, 400.0),
                p("epoll", 4000, 5000.0),
            ],
        );
        assert_eq!(
            lookup(&faster.now[0], &[r]),
            Today::Measured(across(&[0.5]).unwrap())
        );
        let share = all
            .iter()
            .find(|p| {
                p.what.contains("per signal dequeued") && p.params.starts_with("4000 req/s, 252")
            })
            .unwrap();
        let t = rec(
            "table1",
            vec![pt(
                "rtsig",
                json!({"part": "sweep", "idle": 252, "rate": 4000}),
                json!({"overflows": 5.0, "signals_dequeued": 20.0}),
            )],
        );
        assert_eq!(
            lookup(&share.now[0], &[t]),
            Today::Measured(across(&[0.25]).unwrap())
        );
        let cpu = all
            .iter()
            .find(|p| p.claim == Some("rtsig-cpu-flat") && p.params.starts_with("1000 req/s"))
            .unwrap();
        let o = |conns: u32, cpu: f64| {
            pt(
                "rtsig",
                json!({"server": "ours", "rate": 1000, "persistent": conns}),
                json!({"server_cpu_pct": cpu}),
            )
        };
        assert_eq!(
            (sig3(0.000813), sig3(-0.003), sig3(0.25)),
            ("0.000813".into(), "-0.003".into(), "0.250".into())
        );
        // The knee: the lowest offered rate answered below 95%; none when
        // the server kept up everywhere.
        let knee = all.iter().find(|p| p.what.contains("saturated")).unwrap();
        let k = |rate: u32, replies: f64| {
            pt(
                "rtsig",
                json!({"idle": 252, "document": "1b.txt", "rate": rate}),
                json!({"reply_rate": replies}),
            )
        };
        let past = rec(
            "throughput",
            vec![k(3000, 3000.0), k(6000, 5000.0), k(9000, 5100.0)],
        );
        assert_eq!(
            lookup(&knee.now[0], &[past]),
            Today::Measured(across(&[6000.0]).unwrap())
        );
        let kept = rec("throughput", vec![k(3000, 3000.0), k(10000, 9990.0)]);
        match lookup(&knee.now[0], &[kept]) {
            Today::NotMeasured(why) => {
                assert!(
                    why.contains("up to 10k") && why.contains("knee was not reached"),
                    "{why}"
                )
            }
            t => panic!("{t:?}"),
        }
        // 10,000 connections lie outside the seed's 250–3000: left out.
        let r = rec("overhead", vec![o(250, 2.0), o(1000, 4.0), o(10000, 40.0)]);
        assert_eq!(
            lookup(&cpu.now[0], &[r]),
            Today::Measured(across(&[3.0]).unwrap())
        );
    }
}
