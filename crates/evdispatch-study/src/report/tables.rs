//! A table of several rounds as one: each scenario draws its tables from
//! one round's points at a time, and this module sets the rounds' tables
//! cell by cell into one, each number the median of the rounds with the
//! lowest and highest round beside it, so a table shows what every round
//! measured rather than the first round's figures.
//!
//! Rows are matched across rounds by their labels (the first cell and
//! every cell without a digit), the k-th row with the same labels of each
//! round together; columns by their headers.

use crate::claims::rounds::{across, parse_num};
use crate::figure::{fmt_num, Table};

/// The text of a cell with its numbers taken out (each replaced by `\0`),
/// and the numbers; `None` when a number does not read back.
fn template(cell: &str) -> Option<(String, Vec<f64>)> {
    let c: Vec<char> = cell.chars().collect();
    let mut text = String::new();
    let mut nums = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let starts = c[i].is_ascii_digit()
            || (c[i] == '-' && c.get(i + 1).is_some_and(|d| d.is_ascii_digit()));
        let after_word = i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_');
        if !starts || after_word {
            text.push(c[i]);
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < c.len()
            && (c[j].is_ascii_digit()
                || (c[j] == '.' && c.get(j + 1).is_some_and(|d| d.is_ascii_digit())))
        {
            j += 1;
        }
        if j < c.len()
            && (c[j] == 'k' || c[j] == 'M')
            && !c.get(j + 1).is_some_and(|d| d.is_alphanumeric())
        {
            j += 1;
        }
        if c.get(j).is_some_and(|d| d.is_alphabetic()) {
            // `1b.txt`, `2nd`: a word, not a number.
            text.extend(&c[i..j]);
            i = j;
            continue;
        }
        let token: String = c[i..j].iter().collect();
        nums.push(parse_num(&token)?);
        text.push('\0');
        i = j;
    }
    Some((text, nums))
}

/// Whether a cell says nothing was measured.
fn blank(cell: &str) -> bool {
    matches!(cell.trim(), "" | "–" | "-")
}

/// One cell from the rounds' cells (`None`: the round lacks the row).
fn merge_cell(cells: &[Option<&str>]) -> String {
    let present: Vec<&str> = cells.iter().flatten().copied().collect();
    let Some(first) = present.first() else {
        return "–".into();
    };
    if present.iter().all(|c| c == first) && present.len() == cells.len() {
        return first.to_string();
    }
    let filled: Vec<&str> = present.iter().copied().filter(|c| !blank(c)).collect();
    let parsed: Option<Vec<(String, Vec<f64>)>> = filled.iter().map(|c| template(c)).collect();
    let same = parsed.as_ref().and_then(|p| {
        let t = &p.first()?.0;
        (p.iter().all(|(u, n)| u == t && n.len() == p[0].1.len())).then_some(p)
    });
    let Some(p) = same else {
        let mut distinct: Vec<&str> = Vec::new();
        for c in &present {
            if !distinct.contains(c) {
                distinct.push(c);
            }
        }
        return distinct.join(" / ");
    };
    let mut slots = (0..p[0].1.len()).map(|k| {
        let vals: Vec<f64> = p.iter().map(|(_, n)| n[k]).collect();
        let a = across(&vals).expect("values");
        let (lo, hi) = vals
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
                (l.min(*v), h.max(*v))
            });
        if fmt_num(lo) == fmt_num(hi) {
            fmt_num(a.median)
        } else {
            format!("{} ({}–{})", fmt_num(a.median), fmt_num(lo), fmt_num(hi))
        }
    });
    let mut out = String::new();
    for ch in p[0].0.chars() {
        match ch {
            '\0' => out.push_str(&slots.next().unwrap_or_default()),
            c => out.push(c),
        }
    }
    if filled.len() < cells.len() && !p[0].1.is_empty() {
        out.push_str(&format!(" ({} of {} rounds)", filled.len(), cells.len()));
    }
    out
}

/// The labels a row is matched by across rounds.
fn key(row: &[String]) -> Vec<String> {
    row.iter()
        .enumerate()
        .filter(|(i, c)| *i == 0 || (!blank(c) && !c.chars().any(|ch| ch.is_ascii_digit())))
        .map(|(_, c)| c.clone())
        .collect()
}

/// A row's labels and which of the rows with those labels it is.
type RowId = (Vec<String>, usize);

/// The rounds' tables, one per round that drew it, as one table.
pub fn across_rounds(tables: &[&Table]) -> Table {
    let mut columns: Vec<String> = Vec::new();
    for t in tables {
        for c in &t.columns {
            if !columns.contains(c) {
                columns.push(c.clone());
            }
        }
    }
    // (labels, occurrence) of each row, in first-seen order.
    let mut order: Vec<RowId> = Vec::new();
    // Per table: its rows by (labels, occurrence).
    let mut keyed: Vec<Vec<(RowId, &Vec<String>)>> = Vec::new();
    for t in tables {
        let mut seen: Vec<Vec<String>> = Vec::new();
        let mut rows = Vec::new();
        for r in &t.rows {
            let k = key(r);
            let occurrence = seen.iter().filter(|s| **s == k).count();
            seen.push(k.clone());
            let id = (k, occurrence);
            if !order.contains(&id) {
                order.push(id.clone());
            }
            rows.push((id, r));
        }
        keyed.push(rows);
    }
    let rows = order
        .iter()
        .map(|id| {
            columns
                .iter()
                .map(|col| {
                    let cells: Vec<Option<&str>> = tables
                        .iter()
                        .zip(&keyed)
                        .map(|(t, rows)| {
                            let at = t.columns.iter().position(|c| c == col)?;
                            let (_, r) = rows.iter().find(|(k, _)| k == id)?;
                            r.get(at).map(String::as_str)
                        })
                        .collect();
                    merge_cell(&cells)
                })
                .collect()
        })
        .collect();
    Table { columns, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: &[&[&str]]) -> Table {
        Table {
            columns: vec![
                "row".into(),
                "kind".into(),
                "N = 100".into(),
                "growth".into(),
            ],
            rows: rows
                .iter()
                .map(|r| r.iter().map(|c| c.to_string()).collect())
                .collect(),
        }
    }

    /// Numbers become the median of the rounds with their range; labels
    /// and equal cells stay; text numbers inside a cell merge one by one.
    #[test]
    fn cells_become_medians_with_their_spread() {
        let a = table(&[
            &["poll", "library", "14.3", "×100 for ×100 fds"],
            &["epoll", "library", "1.36", "×1.13 for ×100 fds"],
        ]);
        let b = table(&[
            &["epoll", "library", "1.40", "×1.20 for ×100 fds"],
            &["poll", "library", "15.0", "×105 for ×100 fds"],
        ]);
        let c = table(&[
            &["poll", "library", "14.0", "×101 for ×100 fds"],
            &["epoll", "library", "1.36", "×1.13 for ×100 fds"],
        ]);
        let m = across_rounds(&[&a, &b, &c]);
        assert_eq!(m.columns, a.columns);
        assert_eq!(
            m.rows[0],
            [
                "poll",
                "library",
                "14.3 (14–15)",
                "×101 (100–105) for ×100 fds"
            ]
        );
        assert_eq!(
            m.rows[1],
            [
                "epoll",
                "library",
                "1.36 (1.36–1.40)",
                "×1.13 (1.13–1.20) for ×100 fds"
            ]
        );
    }

    /// A row or a value one round lacks is said, not hidden; texts that
    /// differ in kind are listed.
    #[test]
    fn gaps_and_texts_are_said() {
        let a = table(&[
            &["poll", "library", "10", "–"],
            &["uring", "library", "1", "x"],
        ]);
        let b = table(&[&["poll", "library", "–", "–"]]);
        let c = table(&[&["poll", "library", "30", "–"]]);
        let m = across_rounds(&[&a, &b, &c]);
        assert_eq!(m.rows[0][2], "20 (10–30) (2 of 3 rounds)");
        assert_eq!(m.rows[0][3], "–");
        assert_eq!(m.rows[1][2], "1 (1 of 3 rounds)");
        assert_eq!(m.rows[1][3], "x");
        assert_eq!(merge_cell(&[Some("yes"), Some("no")]), "yes / no");
        // Rows with the same labels pair up in order (two rates of one listener).
        let h = |x: &str, y: &str| Table {
            columns: vec!["listener".into(), "rate".into(), "per accept".into()],
            rows: vec![
                vec!["plain".into(), "500".into(), x.into()],
                vec!["plain".into(), "5000".into(), y.into()],
            ],
        };
        let m = across_rounds(&[&h("1.19", "1.05"), &h("1.21", "1.03")]);
        assert_eq!(m.rows[0], ["plain", "500", "1.20 (1.19–1.21)"]);
        assert_eq!(m.rows[1], ["plain", "5000", "1.04 (1.03–1.05)"]);
        assert_eq!(
            template("1b.txt at 6k"),
            Some(("1b.txt at \0".into(), vec![6000.0]))
        );
    }
}
