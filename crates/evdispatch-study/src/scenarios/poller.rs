//! Scenario 1: Kegel's Poller_bench (seed 001) and the fd-allocation
//! experiment (seed 003), through `evdispatch bench poller|fdalloc --json`.
//!
//! Points: one per bench cell; config `mechanism`, `fds`, `active`,
//! `placement` (poller) or whatever fdalloc's cells carry; metrics every
//! `*_us` field (`median_us`, `p90_us`, `min_us`, `max_us`, `write_median_us`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::j;
use crate::contracts;
use crate::drive::{self, Caps};
use crate::report::figure::{fmt_num, lines, Chart, Figure, Metrics, Table};
use crate::results::{Point, ScenarioRecord};
use crate::scenario::{Ctx, Job, Plan, Profile, Scenario};

/// The row in the scenario table.
pub const SCENARIO: Scenario = Scenario {
    id: "poller",
    number: 1,
    title: "Poller_bench and fd allocation",
    seeds: "001 (Kegel, Poller_bench table); 003 (CITI, open/close with many fds)",
    about: "N socketpairs watched on their read ends, A of them written before each iteration; one timed wait plus a 1-byte read per ready fd. Kegel tabulated µs for A = 1 against N = 100 / 1,000 / 10,000; we add the raw syscalls, mio, polling, libevent and libev rows the bench provides, and the time to close and reopen descriptors with many open (seed 003).",
    plan,
    run,
    figures,
};

/// One `evdispatch bench` invocation.
#[derive(Debug, Serialize, Deserialize)]
struct BenchJob {
    /// `poller` or `fdalloc`.
    bench: String,
    /// Arguments after `evdispatch bench`.
    args: Vec<String>,
}

fn plan(p: Profile, caps: &Caps) -> Plan {
    let fds = p.pick("100,1000", "100,1000,10000", "100,1000,10000,19000");
    let active = p.pick("1", "1,100", "1,10,100,1000");
    let iterations = p.pick(200, 2000, 20000);
    let mut plan = Plan {
        params: json!({"fds": fds, "active": active, "placement": "rotating", "iterations": iterations}),
        ..Plan::default()
    };
    if caps.bench_poller {
        let args: Vec<String> = [
            "poller",
            "--json",
            "--fds",
            fds,
            "--active",
            active,
            "--placement",
            "rotating",
            "--iterations",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([iterations.to_string()])
        .collect();
        plan.job(
            "bench poller",
            &BenchJob {
                bench: "poller".into(),
                args,
            },
            p.pick(6.0, 45.0, 900.0),
        );
    } else {
        plan.skip(
            "Poller_bench table",
            "`evdispatch bench poller` is not built yet (issue #2)",
        );
    }
    if caps.bench_fdalloc {
        let mut args = vec!["fdalloc".to_string(), "--json".to_string()];
        if p != Profile::Full {
            args.push("--quick".into());
        }
        plan.job(
            "bench fdalloc",
            &BenchJob {
                bench: "fdalloc".into(),
                args,
            },
            p.pick(4.0, 15.0, 120.0),
        );
    } else {
        plan.skip(
            "fd allocation (seed 003)",
            "`evdispatch bench fdalloc` is not built yet (issue #2)",
        );
    }
    plan
}

fn run(ctx: &Ctx, job: &Job) -> anyhow::Result<Vec<Point>> {
    let spec: BenchJob = serde_json::from_value(Value::Object(job.config.clone()))?;
    let (cells, cmdline) = drive::run_bench(ctx, &spec.args, &crate::web::tag(&job.label))?;
    Ok(cells
        .iter()
        .map(|cell| {
            let (mut config, metrics) = contracts::split_cell(cell);
            let series = config
                .get("mechanism")
                .and_then(Value::as_str)
                .or_else(|| config.get("allocator").and_then(Value::as_str))
                .unwrap_or(&spec.bench)
                .to_string();
            config.insert("bench".into(), json!(spec.bench));
            config.insert("cmd".into(), json!(cmdline));
            Point {
                series,
                config,
                metrics,
                raw: Value::Object(cell.clone()),
            }
        })
        .collect())
}

/// The largest `fds` among poller points.
fn max_fds(rec: &ScenarioRecord) -> Option<f64> {
    rec.select(&[("bench", j("poller"))])
        .filter_map(|p| p.num("fds"))
        .reduce(f64::max)
}

fn figures(rec: &ScenarioRecord) -> Vec<Figure> {
    let mut figs = Vec::new();
    let a1 = [
        ("bench", j("poller")),
        ("active", j(1)),
        ("placement", j("rotating")),
    ];
    // Kegel's table: mechanisms × N, median µs at A = 1.
    let mut fds: Vec<f64> = rec.select(&a1).filter_map(|p| p.num("fds")).collect();
    fds.sort_by(f64::total_cmp);
    fds.dedup();
    if !fds.is_empty() {
        let mut t = Table {
            columns: vec!["mechanism".into()],
            rows: vec![],
        };
        t.columns
            .extend(fds.iter().map(|n| format!("N = {}", fmt_num(*n))));
        t.columns.push("growth 1st→last N".into());
        for s in rec.distinct("series") {
            let name = s.as_str().unwrap_or_default().to_string();
            let f = [a1.as_slice(), &[("series", s.clone())]].concat();
            let xy = rec.xy(&f, "fds", "median_us");
            if xy.is_empty() {
                continue;
            }
            let mut row = vec![name];
            for n in &fds {
                row.push(
                    xy.iter()
                        .find(|(x, _)| x == n)
                        .map(|(_, y)| fmt_num(*y))
                        .unwrap_or_else(|| "–".into()),
                );
            }
            let growth = match (xy.first(), xy.last()) {
                (Some(a), Some(b)) if xy.len() >= 2 && a.1 > 0.0 => {
                    format!("×{}", fmt_num(b.1 / a.1))
                }
                _ => "–".into(),
            };
            row.push(growth);
            t.rows.push(row);
        }
        figs.push(Figure::table(
            "Kegel's table: µs per waitAndDispatchEvents, 1 active socket",
            "Median wall-clock µs of one wait plus a 1-byte read per ready fd, A = 1, rotating placement (the touched socket changes each iteration). Kegel, Linux 2.2.14: poll 23 / 890 / 11,333, /dev/poll 19 / 146 / 4,264; FreeBSD kqueue 8 / 8 / 8.",
            t,
        ));
    }
    figs.push(Figure::chart(
        "Cost of one wait against the number of descriptors (A = 1)",
        "Median µs, log–log; the band spans min to p90. A line flat in N is a mechanism whose cost follows the active descriptors only.",
        Chart {
            x_label: "descriptors watched (N)".into(),
            y_label: "µs per wait + reads".into(),
            x_log: true,
            y_log: true,
            series: lines(rec, &a1, "fds", Metrics { y: "median_us", err: None, range: Some(("min_us", "p90_us")) }),
        },
    ));
    if let Some(n) = max_fds(rec) {
        let f = [
            ("bench", j("poller")),
            ("fds", j(n)),
            ("placement", j("rotating")),
        ];
        figs.push(Figure::chart(
            format!("Cost against the number of active descriptors (N = {})", fmt_num(n)),
            "Median µs, log–log. Jonathan Lemon's observation in seed 001: kqueue's time scaled with the active pipes, poll's with the total.",
            Chart {
                x_label: "active descriptors (A)".into(),
                y_label: "µs per wait + reads".into(),
                x_log: true,
                y_log: true,
                series: lines(rec, &f, "active", Metrics::y("median_us")),
            },
        ));
    }
    // fd allocation: every *_us metric against the number of open fds.
    let fd_points: Vec<&Point> = rec.select(&[("bench", j("fdalloc"))]).collect();
    if let Some(first) = fd_points.first() {
        let x = ["open_fds", "fds", "n", "open"]
            .into_iter()
            .find(|k| first.num(k).is_some())
            .unwrap_or("fds");
        for metric in first.metrics.keys() {
            figs.push(Figure::chart(
                format!("fd allocation: {metric} against open descriptors (seed 003)"),
                "With N descriptors open, close the first (or the n-th) and open twice. Seed 003: a single bitmap makes the search linear in N; two bitmaps keep it flat.",
                Chart {
                    x_label: "descriptors open".into(),
                    y_label: metric.clone(),
                    x_log: true,
                    y_log: false,
                    series: lines(rec, &[("bench", j("fdalloc"))], x, Metrics::y(metric)),
                },
            ));
        }
    }
    figs
}
