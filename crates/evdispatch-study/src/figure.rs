//! What a scenario draws: charts (lines with error bars and min–max bands,
//! linear or log axes) and tables, built from its record. The HTML report
//! renders them as inline SVG, the Markdown summary as tables.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::results::{ScenarioRecord, ROUND};

/// One figure of the report.
#[derive(Debug, Clone)]
pub struct Figure {
    /// Title, as the seeds captioned theirs.
    pub title: String,
    /// What it shows and how to read it.
    pub caption: String,
    /// What this run's data show, computed from them (empty: none).
    pub reading: String,
    /// The drawing.
    pub body: Body,
}

/// A chart or a table.
#[derive(Debug, Clone)]
pub enum Body {
    /// Lines against an x axis.
    Chart(Chart),
    /// Rows and columns (Kegel's table, Table 1).
    Table(Table),
}

/// Lines against an x axis.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// X axis label.
    pub x_label: String,
    /// Y axis label.
    pub y_label: String,
    /// Logarithmic x axis.
    pub x_log: bool,
    /// Logarithmic y axis.
    pub y_log: bool,
    /// The lines.
    pub series: Vec<Series>,
}

/// One line.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// Its points, sorted by x.
    pub points: Vec<Xy>,
}

/// One point, with an optional ± error bar and min–max range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Xy {
    /// X.
    pub x: f64,
    /// Y.
    pub y: f64,
    /// Half-height of the error bar (a standard deviation).
    pub err: Option<f64>,
    /// Minimum and maximum (drawn as a band).
    pub range: Option<(f64, f64)>,
    /// Drawn hollow: the load generator was saturated at this point, so
    /// the figure may be the generator's limit rather than the server's.
    pub hollow: bool,
    /// The lowest and highest `y` of the rounds when several rounds
    /// measured this point (`y` is then their median), drawn as a whisker.
    pub spread: Option<(f64, f64)>,
}

/// Rows and columns of text.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column headers.
    pub columns: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers and no rows yet.
    pub fn new(columns: &[&str]) -> Table {
        Table {
            columns: columns.iter().map(|c| c.to_string()).collect(),
            rows: vec![],
        }
    }
}

impl Chart {
    /// Points drawn in all.
    pub fn n_points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }
}

impl Figure {
    /// A chart figure.
    pub fn chart(title: impl Into<String>, caption: impl Into<String>, chart: Chart) -> Figure {
        Figure {
            title: title.into(),
            caption: caption.into(),
            reading: String::new(),
            body: Body::Chart(chart),
        }
    }

    /// The same figure with a reading of this run's data.
    pub fn with_reading(mut self, reading: impl Into<String>) -> Figure {
        self.reading = reading.into();
        self
    }

    /// The same figure with a reading computed from its chart (see
    /// [`crate::report::reading`]); tables get none.
    pub fn read(self, f: impl FnOnce(&Chart) -> String) -> Figure {
        let r = match &self.body {
            Body::Chart(c) => f(c),
            Body::Table(_) => String::new(),
        };
        self.with_reading(r)
    }

    /// A table figure.
    pub fn table(title: impl Into<String>, caption: impl Into<String>, table: Table) -> Figure {
        Figure {
            title: title.into(),
            caption: caption.into(),
            reading: String::new(),
            body: Body::Table(table),
        }
    }

    /// Whether it has anything to show.
    pub fn has_data(&self) -> bool {
        match &self.body {
            Body::Chart(c) => c.n_points() > 0,
            Body::Table(t) => !t.rows.is_empty(),
        }
    }
}

/// Which metrics make a line: `y` and, optionally, the error bar's metric
/// and the range's (min, max) metrics.
#[derive(Debug, Clone, Copy)]
pub struct Metrics<'a> {
    /// The plotted metric.
    pub y: &'a str,
    /// ± error metric (standard deviation).
    pub err: Option<&'a str>,
    /// Min and max metrics.
    pub range: Option<(&'a str, &'a str)>,
}

impl<'a> Metrics<'a> {
    /// Just `y`.
    pub fn y(y: &'a str) -> Metrics<'a> {
        Metrics {
            y,
            err: None,
            range: None,
        }
    }
}

/// One series per distinct `series` among the points matching `filter`:
/// config (or metric) `x` against `m`. A point measured again in each
/// round becomes one: the k-th point of every round at the same `x` merge
/// into the median `y`, the rounds' lowest and highest as its `spread`, and
/// the error bar and range of the round nearest the median. Points of one
/// round at the same `x` (different runs) stay apart, as do all points of
/// a record without rounds.
pub fn lines(
    rec: &ScenarioRecord,
    filter: &[(&str, Value)],
    x: &str,
    m: Metrics<'_>,
) -> Vec<Series> {
    // Each series' points with their round, in the record's order.
    let mut out: Vec<(String, Vec<(u64, Xy)>)> = Vec::new();
    for p in rec.select(filter) {
        let (Some(xv), Some(yv)) = (p.num(x).or_else(|| p.metric(x)), p.metric(m.y)) else {
            continue;
        };
        let xy = Xy {
            x: xv,
            y: yv,
            err: m.err.and_then(|e| p.metric(e)),
            range: m
                .range
                .and_then(|(lo, hi)| Some((p.metric(lo)?, p.metric(hi)?))),
            hollow: p.metric("generator_limited") == Some(1.0),
            spread: None,
        };
        let round = p.config.get(ROUND).and_then(Value::as_u64).unwrap_or(1);
        match out.iter_mut().find(|(name, _)| *name == p.series) {
            Some((_, points)) => points.push((round, xy)),
            None => out.push((p.series.clone(), vec![(round, xy)])),
        }
    }
    out.into_iter()
        .map(|(name, points)| {
            let mut points = merge_rounds(&points);
            points.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.y.total_cmp(&b.y)));
            Series { name, points }
        })
        .collect()
}

/// Points with their round, in the record's order: the k-th point of each
/// round at the same `x` merged into one (see [`lines`]); a group of one
/// (a single round) is kept as it is.
fn merge_rounds(points: &[(u64, Xy)]) -> Vec<Xy> {
    // (x, k) -> the k-th point at x of each round.
    let mut groups: Vec<((f64, usize), Vec<Xy>)> = Vec::new();
    let mut seen: BTreeMap<(u64, u64), usize> = BTreeMap::new();
    for &(round, p) in points {
        let k = seen.entry((round, p.x.to_bits())).or_default();
        let key = (p.x, *k);
        *k += 1;
        match groups
            .iter_mut()
            .find(|((x, i), _)| x.to_bits() == key.0.to_bits() && *i == key.1)
        {
            Some((_, g)) => g.push(p),
            None => groups.push((key, vec![p])),
        }
    }
    groups
        .into_iter()
        .map(|(_, mut same)| {
            let n = same.len();
            if n == 1 {
                return same[0];
            }
            same.sort_by(|a, b| a.y.total_cmp(&b.y));
            let y = if n % 2 == 1 {
                same[n / 2].y
            } else {
                (same[n / 2 - 1].y + same[n / 2].y) / 2.0
            };
            Xy {
                y,
                spread: Some((same[0].y, same[n - 1].y)),
                hollow: same.iter().any(|p| p.hollow),
                ..same[(n - 1) / 2]
            }
        })
        .collect()
}

/// A number for a table cell or a label: 3 significant digits, thousands
/// as `k`/`M` above 10,000.
pub fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1e7 {
        format!("{:.1}M", v / 1e6).replace(".0M", "M")
    } else if a >= 1e4 {
        let s = format!("{:.1}k", v / 1e3);
        s.replace(".0k", "k")
    } else if a >= 100.0 || v.fract() == 0.0 {
        // Counts (and round ticks) without decimals they do not have.
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds at the same x become their median with the rounds' spread.
    #[test]
    fn rounds_merge_into_a_median_with_its_spread() {
        use serde_json::json;
        let pt = |series: &str, n: u32, round: u32, y: f64| json!({"series": series, "config": {"n": n, "round": round}, "metrics": {"y": y}});
        let r: ScenarioRecord = serde_json::from_value(json!({
            "id": "x", "status": "complete", "profile": "tiny", "params": {},
            "started_unix": 0, "duration_s": 0.0, "git_commit": "t", "capabilities": [],
            "skipped": [], "failures": [],
            "points": [pt("a", 1, 1, 5.0), pt("a", 1, 2, 9.0), pt("a", 1, 3, 6.0),
                       pt("a", 2, 1, 1.0), pt("a", 2, 2, 3.0), pt("b", 1, 1, 4.0)],
        }))
        .unwrap();
        let s = lines(&r, &[], "n", Metrics::y("y"));
        assert_eq!(s.len(), 2);
        let a = &s[0].points;
        assert_eq!(
            (a.len(), a[0].x, a[0].y, a[0].spread),
            (2, 1.0, 6.0, Some((5.0, 9.0)))
        );
        assert_eq!((a[1].x, a[1].y, a[1].spread), (2.0, 2.0, Some((1.0, 3.0))));
        assert_eq!(s[1].points[0].spread, None);
    }

    /// Two runs of one round at the same x are two points, each merged only
    /// with its own runs of the other rounds; without rounds, nothing merges.
    #[test]
    fn points_of_one_round_at_the_same_x_stay_apart() {
        use serde_json::json;
        let pt = |k: u32, round: Option<u32>, y: f64| {
            let mut config = json!({"n": 1, "k": k});
            if let Some(r) = round {
                config["round"] = json!(r);
            }
            json!({"series": "a", "config": config, "metrics": {"y": y}})
        };
        let rec = |points: Vec<Value>| -> ScenarioRecord {
            serde_json::from_value(json!({
                "id": "x", "status": "complete", "profile": "tiny", "params": {},
                "started_unix": 0, "duration_s": 0.0, "git_commit": "t", "capabilities": [],
                "skipped": [], "failures": [], "points": points,
            }))
            .unwrap()
        };
        let r = rec(vec![
            pt(1, Some(1), 10.0),
            pt(2, Some(1), 100.0),
            pt(1, Some(2), 12.0),
            pt(2, Some(2), 90.0),
        ]);
        let a = &lines(&r, &[], "n", Metrics::y("y"))[0].points;
        assert_eq!(a.len(), 2);
        assert_eq!((a[0].y, a[0].spread), (11.0, Some((10.0, 12.0))));
        assert_eq!((a[1].y, a[1].spread), (95.0, Some((90.0, 100.0))));
        let single = rec(vec![pt(1, None, 10.0), pt(2, None, 100.0)]);
        let b = &lines(&single, &[], "n", Metrics::y("y"))[0].points;
        assert_eq!(b.len(), 2);
        assert!(b.iter().all(|p| p.spread.is_none()));
    }

    #[test]
    fn number_formats() {
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_num(64.0), "64");
        assert_eq!(fmt_num(5.0), "5");
        assert_eq!(fmt_num(4.8123), "4.81");
        assert_eq!(fmt_num(45.07), "45.1");
        assert_eq!(fmt_num(703.2), "703");
        assert_eq!(fmt_num(11333.0), "11.3k");
        assert_eq!(fmt_num(10000.0), "10k");
        assert_eq!(fmt_num(25_000_000.0), "25M");
        assert_eq!(fmt_num(0.4567), "0.457");
    }
}
