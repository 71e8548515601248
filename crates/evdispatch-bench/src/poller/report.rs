//! The human output of `bench poller`: Kegel's table (rows are mechanisms,
//! columns are N) for each A, the growth factor from the smallest N to
//! 10,000, the ratio to raw-epoll, and the writer's (untimed) cost.

use std::collections::BTreeMap;

use super::outcome::{Cell, Outcome};
use super::plan::{Placement, WriterKind};

/// The N the growth factor runs to (Kegel's 100 → 10,000).
const GROWTH_TO: usize = 10_000;

fn fmt_us(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// An indented table: one line per row that has a value somewhere.
fn sub_table<'a>(
    names: &[&'a str],
    ns: &[usize],
    width: usize,
    value: impl Fn(&'a str, usize) -> Option<String>,
) {
    for &name in names {
        let cells: Vec<Option<String>> = ns.iter().map(|&n| value(name, n)).collect();
        if cells.iter().all(Option::is_none) {
            continue;
        }
        print!("  {name:<w$}", w = width - 2);
        for c in cells {
            print!("{:>10}", c.as_deref().unwrap_or("-"));
        }
        println!();
    }
}

/// Print the tables.
pub fn print(o: &Outcome) {
    let p = &o.plan;
    println!(
        "Poller_bench (seed 001): median µs for one wait + read(fd, buf, 1) per ready descriptor"
    );
    println!(
        "Linux {}, {} ({} cores); placement {}; {} timed iterations per cell in {} rounds (+{} warm-up); writes by {}; {}",
        o.machine.kernel,
        o.machine.cpu_model,
        o.machine.cores,
        match p.placement {
            Placement::Rotating => "rotating",
            Placement::Fixed => "fixed",
        },
        match p.cell_budget {
            Some(b) => format!("≤{} ({b} s budget)", p.iterations),
            None => p.iterations.to_string(),
        },
        p.rounds,
        p.warmup,
        match p.writer {
            WriterKind::Helper => "a helper process",
            WriterKind::Local => "the bench itself",
        },
        match (p.bench_cpu, p.writer_cpu) {
            (Some(b), Some(w)) if b == w => format!("bench and writer on cpu {b}"),
            (Some(b), Some(w)) => format!("bench on cpu {b}, writer on cpu {w}"),
            (Some(b), None) => format!("bench on cpu {b}"),
            _ => "not pinned".to_string(),
        }
    );
    let details: Vec<String> = o
        .rows
        .iter()
        .filter_map(|r| r.detail.as_ref().map(|d| format!("{}: {d}", r.name)))
        .collect();
    if !details.is_empty() {
        println!("({})", details.join("; "));
    }

    let by: BTreeMap<(&str, usize, usize), &Cell> = o
        .cells
        .iter()
        .map(|c| ((c.mechanism.as_str(), c.fds, c.active), c))
        .collect();
    let names: Vec<&str> = o.rows.iter().map(|r| r.name.as_str()).collect();
    let width = names.iter().map(|n| n.len()).max().unwrap_or(8).max(8) + 2;

    for &a in &p.active {
        let ns: Vec<usize> = p.fds.iter().copied().filter(|&n| n >= a).collect();
        if ns.is_empty() {
            continue;
        }
        let lo = ns[0];
        let hi = ns
            .iter()
            .copied()
            .filter(|&n| n <= GROWTH_TO)
            .max()
            .unwrap_or(lo);
        let growth = (hi > lo).then(|| format!("×{lo}→{hi}"));

        println!();
        println!("A = {a} active");
        print!("{:<width$}", "row");
        for n in &ns {
            print!("{n:>10}");
        }
        if let Some(g) = &growth {
            print!("{g:>14}");
        }
        println!();
        for name in &names {
            if !ns.iter().any(|&n| by.contains_key(&(*name, n, a))) {
                continue;
            }
            print!("{name:<width$}");
            for &n in &ns {
                match by.get(&(*name, n, a)) {
                    Some(c) => print!("{:>10}", fmt_us(c.median_us)),
                    None => print!("{:>10}", "-"),
                }
            }
            if growth.is_some() {
                // A row that stops short of `hi` (select: fds below 1024)
                // shows its growth to the largest N it reached, and says so.
                let reached = ns
                    .iter()
                    .copied()
                    .filter(|&n| n > lo && n <= hi && by.contains_key(&(*name, n, a)))
                    .max();
                match (by.get(&(*name, lo, a)), reached) {
                    (Some(l), Some(n)) => {
                        let g = by[&(*name, n, a)].median_us / l.median_us;
                        let to = if n == hi {
                            String::new()
                        } else {
                            format!(" (→{n})")
                        };
                        print!("{:>14}", format!("×{g:.1}{to}"))
                    }
                    _ => print!("{:>14}", "-"),
                }
            }
            println!();
        }

        type Ratio = fn(&Cell) -> Option<f64>;
        let ratios: [(&str, Ratio); 2] = [
            ("raw-epoll", |c| c.ratio_to_raw_epoll),
            ("epoll", |c| c.ratio_to_epoll),
        ];
        for (base, ratio) in ratios {
            if !o.cells.iter().any(|c| c.active == a && ratio(c).is_some()) {
                continue;
            }
            println!("  ratio to {base} (same N; median over rounds of the ratio within a round)");
            sub_table(&names, &ns, width, |name, n| {
                by.get(&(name, n, a))
                    .and_then(|c| ratio(c))
                    .map(|r| format!("{r:.2}"))
            });
        }
        println!("  writer: median µs to write the {a} byte(s) (untimed)");
        sub_table(&names, &ns, width, |name, n| {
            by.get(&(name, n, a)).map(|c| fmt_us(c.write_median_us))
        });
    }

    if !o.pairs.is_empty() {
        println!();
        for pc in &o.pairs {
            println!(
                "{:.2} µs to open each of {} socketpairs, {:.2} µs to close each",
                pc.open_us_per_pair, pc.fds, pc.close_us_per_pair
            );
        }
    }
    let spurious: Vec<String> = o
        .cells
        .iter()
        .filter(|c| c.spurious > 0)
        .map(|c| format!("{} N={} A={}: {}", c.mechanism, c.fds, c.active, c.spurious))
        .collect();
    if !spurious.is_empty() {
        println!(
            "spurious events (allowed, counted): {}",
            spurious.join("; ")
        );
    }
    if !o.skipped.is_empty() {
        println!();
        for s in &o.skipped {
            let at = s.fds.map(|n| format!(" at N={n}")).unwrap_or_default();
            let fix = s
                .install
                .as_ref()
                .map(|i| format!(" — {i}"))
                .unwrap_or_default();
            println!("not run: {}{at}: {}{fix}", s.row, s.reason);
        }
    }
    println!();
    println!("Every cell read every byte written (checked). JSON: add --json.");
}
