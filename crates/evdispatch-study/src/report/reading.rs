//! Readings: one paragraph under a chart saying what this run's data show,
//! computed from the chart's own points (never written by hand), in a few
//! standard shapes: growth from the first to the last x, where a reply rate
//! stops keeping up with the offered rate, and the span of each line.

use crate::figure::{fmt_num, Chart, Series};

fn ends(s: &Series) -> Option<((f64, f64), (f64, f64))> {
    let a = s.points.first()?;
    let b = s.points.last()?;
    (s.points.len() >= 2 && a.x != b.x).then_some(((a.x, a.y), (b.x, b.y)))
}

fn saturated_note(chart: &Chart) -> String {
    let n = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| p.hollow)
        .count();
    if n == 0 {
        String::new()
    } else {
        format!(
            " {n} point(s), drawn hollow, had the load generator's core saturated (the generator above 85% of it, or the core 95% busy with its interrupts): there the figure may be the generator's limit."
        )
    }
}

/// "From the first to the last x, each line grew ×g": lines sorted from the
/// steepest to the flattest.
pub fn growth(chart: &Chart, unit: &str) -> String {
    let mut rows: Vec<(f64, String)> = chart
        .series
        .iter()
        .filter_map(|s| {
            let ((x0, y0), (x1, y1)) = ends(s)?;
            (y0 > 0.0).then(|| {
                (
                    y1 / y0,
                    format!(
                        "{} ×{} ({} → {} {unit} for x {} → {})",
                        s.name,
                        fmt_num(y1 / y0),
                        fmt_num(y0),
                        fmt_num(y1),
                        fmt_num(x0),
                        fmt_num(x1)
                    ),
                )
            })
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    format!(
        "From its first to its last point along \"{}\", each line changed by: {}.{}",
        chart.x_label,
        rows.into_iter().map(|r| r.1).collect::<Vec<_>>().join("; "),
        saturated_note(chart)
    )
}

/// For charts of a reply rate against the offered rate: up to which
/// offered rate each line answered at least `share` of it, and its best.
pub fn knee(chart: &Chart, share: f64) -> String {
    let mut parts = Vec::new();
    for s in &chart.series {
        if s.points.is_empty() {
            continue;
        }
        let best = s.points.iter().map(|p| p.y).fold(0.0, f64::max);
        let kept: Vec<f64> = s
            .points
            .iter()
            .take_while(|p| p.y >= share * p.x)
            .map(|p| p.x)
            .collect();
        let first_behind = s.points.iter().find(|p| p.y < share * p.x);
        let text = match (kept.last(), first_behind) {
            (Some(k), None) => format!(
                "{} kept up at every offered rate up to {}/s (best {}/s)",
                s.name,
                fmt_num(*k),
                fmt_num(best)
            ),
            (Some(k), Some(b)) => format!(
                "{} kept up to {}/s and fell to {}/s at {}/s offered (best {}/s)",
                s.name,
                fmt_num(*k),
                fmt_num(b.y),
                fmt_num(b.x),
                fmt_num(best)
            ),
            (None, Some(b)) => format!(
                "{} fell behind already at {}/s offered ({}/s; best {}/s)",
                s.name,
                fmt_num(b.x),
                fmt_num(b.y),
                fmt_num(best)
            ),
            (None, None) => continue,
        };
        parts.push(text);
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "Keeping up means answering at least {:.0}% of the offered rate: {}.{}",
        share * 100.0,
        parts.join("; "),
        saturated_note(chart)
    )
}

/// The span of each line: lowest and highest value, and where.
pub fn span(chart: &Chart, unit: &str) -> String {
    let mut parts = Vec::new();
    for s in &chart.series {
        let lo = s.points.iter().min_by(|a, b| a.y.total_cmp(&b.y));
        let hi = s.points.iter().max_by(|a, b| a.y.total_cmp(&b.y));
        if let (Some(lo), Some(hi)) = (lo, hi) {
            parts.push(if s.points.len() == 1 {
                format!("{} {} {unit}", s.name, fmt_num(lo.y))
            } else {
                format!(
                    "{} from {} {unit} (at {}) to {} {unit} (at {})",
                    s.name,
                    fmt_num(lo.y),
                    fmt_num(lo.x),
                    fmt_num(hi.y),
                    fmt_num(hi.x)
                )
            });
        }
    }
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "Along \"{}\": {}.{}",
        chart.x_label,
        parts.join("; "),
        saturated_note(chart)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Xy;

    fn line(name: &str, pts: &[(f64, f64)]) -> Series {
        Series {
            name: name.into(),
            points: pts
                .iter()
                .map(|&(x, y)| Xy {
                    x,
                    y,
                    err: None,
                    range: None,
                    hollow: x > 9000.0,
                    spread: None,
                })
                .collect(),
        }
    }

    #[test]
    fn readings_follow_the_data() {
        let c = Chart {
            x_label: "offered".into(),
            series: vec![
                line(
                    "epoll",
                    &[(1000.0, 1000.0), (5000.0, 4990.0), (10000.0, 9900.0)],
                ),
                line(
                    "poll",
                    &[(1000.0, 1000.0), (5000.0, 2000.0), (10000.0, 1500.0)],
                ),
            ],
            ..Chart::default()
        };
        let k = knee(&c, 0.9);
        assert!(
            k.contains("epoll kept up at every offered rate up to 10k/s"),
            "{k}"
        );
        assert!(
            k.contains("poll kept up to 1000/s and fell to 2000/s at 5000/s"),
            "{k}"
        );
        assert!(k.contains("2 point(s), drawn hollow"), "{k}");
        let g = growth(&c, "replies/s");
        assert!(
            g.find("epoll ×9.9").unwrap() < g.find("poll ×1.50").unwrap(),
            "{g}"
        );
        let s = span(&c, "r/s");
        assert!(
            s.contains("poll from 1000 r/s (at 1000) to 2000 r/s (at 5000)"),
            "{s}"
        );
        assert_eq!(growth(&Chart::default(), "x"), "");
    }
}
