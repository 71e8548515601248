//! Charts as inline SVG: lines with markers, ± error bars, min–max bands,
//! linear or logarithmic axes, a legend. No script, no external resource;
//! every data marker carries class `pt` and a `<title>` with its values, and
//! the `<svg>` element carries `data-points`, so a reader (or a test) can see
//! what was drawn.

use std::fmt::Write as _;

use crate::figure::{fmt_num, Chart};

const W: f64 = 680.0;
const H: f64 = 380.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 180.0;
const TOP: f64 = 16.0;
const BOTTOM: f64 = 48.0;

/// Colours for the series, in order (colour-blind-safe palette).
const PALETTE: &[&str] = &[
    "#0072b2", "#d55e00", "#009e73", "#cc79a7", "#e69f00", "#56b4e9", "#000000", "#8c564b",
    "#f0e442", "#7f7f7f", "#17becf", "#bcbd22",
];

/// Escape text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

struct Axis {
    lo: f64,
    hi: f64,
    log: bool,
    from: f64,
    to: f64,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64>, log: bool, from: f64, to: f64, zero: bool) -> Axis {
        let vals: Vec<f64> = values
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut lo, mut hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(*v), b.max(*v))
            });
        if vals.is_empty() {
            (lo, hi) = (1.0, 10.0);
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            if zero && lo > 0.0 {
                lo = 0.0;
            }
            if hi <= lo {
                hi = lo + lo.abs().max(1.0);
            }
            let step = nice_step((hi - lo) / 5.0);
            lo = (lo / step).floor() * step;
            hi = (hi / step).ceil() * step;
        }
        Axis {
            lo,
            hi,
            log,
            from,
            to,
        }
    }

    fn map(&self, v: f64) -> f64 {
        let t = if self.log {
            (v.max(self.lo * 1e-3).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        };
        self.from + t * (self.to - self.from)
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let mut v = Vec::new();
            let mut t = self.lo;
            while t <= self.hi * 1.0001 {
                v.push(t);
                t *= 10.0;
            }
            v
        } else {
            let step = nice_step((self.hi - self.lo) / 5.0);
            let n = ((self.hi - self.lo) / step).round() as usize;
            (0..=n).map(|i| self.lo + i as f64 * step).collect()
        }
    }
}

fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Characters of 11-pixel text that fit the legend's column.
const LEGEND_CHARS: usize = 24;

/// `text` in lines of at most `width` characters, broken at spaces (a
/// longer word stays whole).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= width => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// Render `chart` as an `<svg>` element.
pub fn render(chart: &Chart, title: &str) -> String {
    let plot_r = W - RIGHT;
    let plot_b = H - BOTTOM;
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x));
    let ys = chart.series.iter().flat_map(|s| {
        s.points.iter().flat_map(|p| {
            let mut v = vec![p.y];
            if let Some(e) = p.err {
                v.extend([p.y - e, p.y + e]);
            }
            if let Some((a, b)) = p.range {
                v.extend([a, b]);
            }
            if let Some((a, b)) = p.spread {
                v.extend([a, b]);
            }
            v
        })
    });
    let xa = Axis::new(xs, chart.x_log, LEFT, plot_r, false);
    let ya = Axis::new(ys, chart.y_log, plot_b, TOP, true);
    let drawable = |x: f64, y: f64| (!chart.x_log || x > 0.0) && (!chart.y_log || y > 0.0);
    let drawn = chart
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|p| drawable(p.x, p.y))
        .count();
    // The legend, names wrapped to its column: the top of each entry and
    // its lines; the picture grows downwards if a long legend needs it.
    let mut legend: Vec<(f64, Vec<String>)> = Vec::new();
    let mut ly = TOP + 8.0;
    for series in &chart.series {
        let lines = wrap(&series.name, LEGEND_CHARS);
        let n = lines.len() as f64;
        legend.push((ly, lines));
        ly += 18.0 + 13.0 * (n - 1.0);
    }
    let height = H.max(ly);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {W} {height}" width="{W}" height="{height}" data-points="{drawn}" role="img" aria-label="{}">"#,
        esc(title)
    );
    let _ = write!(
        s,
        r##"<rect x="{LEFT}" y="{TOP}" width="{}" height="{}" fill="#fff" stroke="#999"/>"##,
        plot_r - LEFT,
        plot_b - TOP
    );
    // Grid and tick labels.
    for t in xa.ticks() {
        let x = xa.map(t);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{plot_b}" stroke="#eee"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            plot_b + 14.0,
            fmt_num(t)
        );
    }
    for t in ya.ticks() {
        let y = ya.map(t);
        let _ = write!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{plot_r}" y2="{y:.1}" stroke="#eee"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            LEFT - 5.0,
            y + 4.0,
            fmt_num(t)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}{}</text>"#,
        (LEFT + plot_r) / 2.0,
        H - 10.0,
        esc(&chart.x_label),
        if chart.x_log { " (log)" } else { "" }
    );
    let _ = write!(
        s,
        r#"<text transform="translate(14,{:.1}) rotate(-90)" font-size="12" text-anchor="middle">{}{}</text>"#,
        (TOP + plot_b) / 2.0,
        esc(&chart.y_label),
        if chart.y_log { " (log)" } else { "" }
    );
    for (i, series) in chart.series.iter().enumerate() {
        let c = PALETTE[i % PALETTE.len()];
        // Past the palette, colours repeat: the line (and its legend entry)
        // is then dashed, dotted on the third round, so no two series look alike.
        let dash = match i / PALETTE.len() {
            0 => "",
            1 => r#" stroke-dasharray="6,3""#,
            _ => r#" stroke-dasharray="2,2""#,
        };
        let pts: Vec<_> = series
            .points
            .iter()
            .filter(|p| drawable(p.x, p.y))
            .collect();
        let _ = write!(s, r#"<g class="series" data-name="{}">"#, esc(&series.name));
        // Min–max band.
        let banded: Vec<_> = pts
            .iter()
            .filter_map(|p| p.range.map(|r| (p.x, r)))
            .collect();
        if banded.len() >= 2 {
            let mut poly = String::new();
            for (x, (_, hi)) in &banded {
                let _ = write!(poly, "{:.1},{:.1} ", xa.map(*x), ya.map(*hi));
            }
            for (x, (lo, _)) in banded.iter().rev() {
                let _ = write!(poly, "{:.1},{:.1} ", xa.map(*x), ya.map(*lo));
            }
            let _ = write!(
                s,
                r#"<polygon points="{}" fill="{c}" fill-opacity="0.12" stroke="none"/>"#,
                poly.trim()
            );
        }
        for p in &pts {
            if let Some((lo, hi)) = p.range {
                let x = xa.map(p.x);
                for v in [lo, hi] {
                    let _ = write!(
                        s,
                        r#"<line x1="{:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="{c}" stroke-dasharray="2,2"/>"#,
                        x - 6.0,
                        x + 6.0,
                        y = ya.map(v)
                    );
                }
            }
        }
        if pts.len() >= 2 {
            let path: Vec<String> = pts
                .iter()
                .map(|p| format!("{:.1},{:.1}", xa.map(p.x), ya.map(p.y)))
                .collect();
            let _ = write!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="1.8"{dash}/>"#,
                path.join(" ")
            );
        }
        for p in &pts {
            let (x, y) = (xa.map(p.x), ya.map(p.y));
            // The rounds' spread: a broad pale whisker from the lowest
            // round to the highest, behind the median's mark.
            if let Some((lo, hi)) = p
                .spread
                .filter(|(lo, hi)| drawable(p.x, *lo) && drawable(p.x, *hi))
            {
                let _ = write!(
                    s,
                    r#"<line class="spread" x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="5" stroke-opacity="0.35" stroke-linecap="round"/>"#,
                    ya.map(lo),
                    ya.map(hi)
                );
            }
            if let Some(e) = p.err {
                let (y0, y1) = (ya.map(p.y - e), ya.map(p.y + e));
                let _ = write!(
                    s,
                    r#"<path d="M{x:.1},{y0:.1}V{y1:.1}M{:.1},{y0:.1}H{:.1}M{:.1},{y1:.1}H{:.1}" stroke="{c}" fill="none"/>"#,
                    x - 3.0,
                    x + 3.0,
                    x - 3.0,
                    x + 3.0
                );
            }
            let mut tip = format!("{}: x={} y={}", series.name, fmt_num(p.x), fmt_num(p.y));
            if let Some(e) = p.err {
                tip += &format!(" ±{}", fmt_num(e));
            }
            if let Some((lo, hi)) = p.range {
                tip += &format!(" [min {} max {}]", fmt_num(lo), fmt_num(hi));
            }
            if let Some((lo, hi)) = p.spread {
                tip += &format!(
                    " (median of rounds; rounds from {} to {})",
                    fmt_num(lo),
                    fmt_num(hi)
                );
            }
            if p.hollow {
                tip += " (load generator saturated)";
            }
            let fill = if p.hollow { "#fff" } else { c };
            let _ = write!(
                s,
                r#"<circle class="pt" cx="{x:.1}" cy="{y:.1}" r="3.2" fill="{fill}" stroke="{c}" stroke-width="1.5"><title>{}</title></circle>"#,
                esc(&tip)
            );
        }
        // Legend entry.
        let (ly, lines) = &legend[i];
        let _ = write!(
            s,
            r#"<line x1="{:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{c}" stroke-width="2.5"{dash}/><text x="{:.1}" y="{:.1}" font-size="11">"#,
            plot_r + 10.0,
            plot_r + 28.0,
            plot_r + 32.0,
            ly + 4.0,
        );
        for (k, line) in lines.iter().enumerate() {
            let _ = write!(
                s,
                r#"<tspan x="{:.1}" dy="{}">{}</tspan>"#,
                plot_r + 32.0,
                if k == 0 { 0.0 } else { 13.0 },
                esc(line)
            );
        }
        s.push_str("</text></g>");
    }
    s.push_str("</svg>");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::{Series, Xy};

    fn xy(x: f64, y: f64) -> Xy {
        Xy {
            x,
            y,
            err: Some(y / 10.0),
            range: Some((y * 0.5, y * 1.5)),
            hollow: false,
            spread: None,
        }
    }

    #[test]
    fn renders_every_point_and_escapes() {
        let chart = Chart {
            x_label: "fds".into(),
            y_label: "µs".into(),
            x_log: true,
            y_log: true,
            series: vec![
                Series {
                    name: "poll <raw>".into(),
                    points: vec![xy(100.0, 4.8), xy(1000.0, 45.0), xy(10000.0, 703.0)],
                },
                Series {
                    name: "epoll".into(),
                    points: vec![xy(100.0, 0.46), xy(10000.0, 0.57)],
                },
            ],
        };
        let svg = render(&chart, "t & t");
        assert_eq!(svg.matches(r#"class="pt""#).count(), 5);
        assert!(svg.contains(r#"data-points="5""#));
        assert!(svg.contains("poll &lt;raw&gt;") && svg.contains("t &amp; t"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
        assert!(svg.contains("(log)"));
    }

    #[test]
    fn long_legend_names_wrap_and_stay_whole() {
        let name = "close first + last, allocate twice (control)";
        let lines = wrap(name, LEGEND_CHARS);
        assert!(lines.len() >= 2, "{lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= LEGEND_CHARS));
        assert_eq!(lines.join(" "), name);
        let chart = Chart {
            x_label: "N".into(),
            y_label: "µs".into(),
            x_log: false,
            y_log: false,
            series: (0..20)
                .map(|i| Series {
                    name: format!("{name} {i}"),
                    points: vec![xy(1.0, 1.0), xy(2.0, 2.0)],
                })
                .collect(),
        };
        let svg = render(&chart, "many");
        // Every word of every name is drawn, the picture grew to hold them,
        // and the series past the palette are dashed.
        assert!(svg.contains(" 19</tspan>") || svg.contains(">19</tspan>"));
        assert!(!svg.contains(&format!(r#"height="{H}""#)));
        assert!(svg.contains("stroke-dasharray=\"6,3\""));
    }

    #[test]
    fn the_rounds_spread_is_a_whisker() {
        let chart = Chart {
            series: vec![Series {
                name: "a".into(),
                points: vec![
                    Xy {
                        spread: Some((3.0, 9.0)),
                        ..xy(1.0, 5.0)
                    },
                    xy(2.0, 6.0),
                ],
            }],
            ..Chart::default()
        };
        let svg = render(&chart, "x");
        assert_eq!(svg.matches(r#"class="spread""#).count(), 1, "{svg}");
        assert!(svg.contains("rounds from 3 to 9"), "{svg}");
    }

    #[test]
    fn log_axes_skip_non_positive_values() {
        let chart = Chart {
            x_log: false,
            y_log: true,
            series: vec![Series {
                name: "a".into(),
                points: vec![
                    Xy {
                        x: 1.0,
                        y: 0.0,
                        err: None,
                        range: None,
                        hollow: false,
                        spread: None,
                    },
                    Xy {
                        x: 2.0,
                        y: 5.0,
                        err: None,
                        range: None,
                        hollow: false,
                        spread: None,
                    },
                ],
            }],
            ..Chart::default()
        };
        assert_eq!(render(&chart, "x").matches(r#"class="pt""#).count(), 1);
    }

    #[test]
    fn ticks_are_round() {
        let a = Axis::new([3.0, 97.0].into_iter(), false, 0.0, 1.0, true);
        assert_eq!(a.ticks(), vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let l = Axis::new([100.0, 30000.0].into_iter(), true, 0.0, 1.0, false);
        assert_eq!(l.ticks(), vec![100.0, 1000.0, 10000.0, 100000.0]);
    }
}
