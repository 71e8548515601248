//! The opening summary of index.html and report.md: what holds today, what
//! changed since the papers (the claims that fail today), what holds only
//! in part, and what is undecided or not measured on this machine, with
//! the reason each of those claims carries. Computed from the claims'
//! verdicts in `results.json` alone; rendered for `index.html` and for
//! `report.md` from the same [`Summary`].

use std::fmt::Write as _;

use serde_json::Value;

use super::svg::esc;
use crate::claims::rounds::LEVEL;
use crate::figure::fmt_num;

/// `"–"` for null, the text of a string, the JSON of anything else.
pub fn str_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// One number behind a verdict as the report prints it: `name = value`,
/// and its interval where the number carries one (`lo` and `hi`), with
/// the interval's coverage and the rounds behind it where given.
pub fn number_text(n: &Value) -> String {
    let mut t = format!("{} = {}", str_of(&n["name"]), str_of(&n["value"]));
    if let (Some(lo), Some(hi)) = (n["lo"].as_f64(), n["hi"].as_f64()) {
        if lo == hi && n["rounds"].as_u64().is_some_and(|r| r > 1) {
            // A setting, or a figure every round gave alike as printed
            // (the rounds' figures are read back at 3 significant digits).
            let _ = write!(
                t,
                " (all {} rounds alike within display precision)",
                str_of(&n["rounds"])
            );
            return t;
        }
        let _ = write!(t, " (interval {} – {}", fmt_num(lo), fmt_num(hi));
        if let Some(c) = n["coverage"].as_f64() {
            let _ = write!(t, ", {:.0}%", c * 100.0);
        }
        if let Some(r) = n["rounds"].as_u64() {
            let _ = write!(t, ", {r} rounds");
        }
        t.push(')');
    }
    t
}

/// Whether a claim has a verdict (`holds`, `partly` or `fails`).
fn decided(claim: &Value) -> bool {
    matches!(
        claim["verdict"].as_str(),
        Some("holds" | "partly" | "fails")
    )
}

/// The coverage of a decided claim's intervals when it is below the 90%
/// the study aims at (fewer than five rounds); `None` otherwise.
fn low_coverage(claim: &Value) -> Option<f64> {
    claim["coverage"]
        .as_f64()
        .filter(|c| decided(claim) && *c < LEVEL)
}

/// How many rounds decided a claim, as the claims tables print it beside
/// the verdict: `decided on one round`, `N rounds` (with each round's
/// verdict when they disagree), or `all N rounds; 75% interval` for a
/// verdict whose interval covers the median with less than 90%; empty for
/// a claim without data.
pub fn rounds_text(claim: &Value) -> String {
    if claim["one_round"].as_bool() == Some(true) {
        return "decided on one round".into();
    }
    let n = claim["rounds"].as_u64().unwrap_or(0);
    if n < 2 {
        return String::new();
    }
    if let Some(c) = low_coverage(claim) {
        return format!("all {n} rounds; {:.0}% interval", c * 100.0);
    }
    let mut t = format!("{n} rounds");
    if claim["verdict"].as_str() == Some("undecided") {
        let each: Vec<String> = claim["round_verdicts"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|r| format!("{}: {}", str_of(&r["round"]), str_of(&r["verdict"])))
            .collect();
        let _ = write!(t, " ({})", each.join(", "));
    }
    t
}

/// Every number of a claim, as [`number_text`] prints them.
pub fn numbers_of(claim: &Value) -> Vec<String> {
    claim["numbers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(number_text)
        .collect()
}

/// The anchor of a claim's row in the claims table.
pub fn anchor(claim: &Value) -> String {
    format!("claim-{}", str_of(&claim["id"]))
}

/// The claims of a run, sorted by what a reader should take from them.
#[derive(Debug, Default)]
pub struct Summary<'a> {
    /// How many claims were judged.
    pub total: usize,
    /// Claims that hold today.
    pub holds: Vec<&'a Value>,
    /// Claims that fail today: what changed since the papers (or, for a
    /// question of today, the answer no).
    pub fails: Vec<&'a Value>,
    /// Claims that hold in part.
    pub partly: Vec<&'a Value>,
    /// Every other verdict (undecided, not measured), grouped by verdict
    /// and reason, in the order the claims come: `(verdict, why, claims)`.
    pub open: Vec<(String, String, Vec<&'a Value>)>,
    /// The undecided claims (their rounds disagree).
    pub undecided: Vec<&'a Value>,
    /// Claims decided on one round (no interval).
    pub one_round: Vec<&'a Value>,
    /// Claims decided on several rounds whose intervals reach 90%.
    pub at_level: Vec<&'a Value>,
    /// Claims decided on several rounds whose intervals cover less than
    /// 90% (fewer than five rounds).
    pub below_level: Vec<&'a Value>,
}

impl<'a> Summary<'a> {
    /// Sort `claims` (the `claims` of `results.json`) by verdict.
    pub fn of(claims: &'a [Value]) -> Summary<'a> {
        let mut s = Summary {
            total: claims.len(),
            ..Summary::default()
        };
        for c in claims {
            if c["one_round"].as_bool() == Some(true) {
                s.one_round.push(c);
            }
            if c["verdict"].as_str() == Some("undecided") {
                s.undecided.push(c);
            }
            if low_coverage(c).is_some() {
                s.below_level.push(c);
            } else if decided(c) && c["coverage"].as_f64().is_some() {
                s.at_level.push(c);
            }
            match c["verdict"].as_str() {
                Some("holds") => s.holds.push(c),
                Some("fails") => s.fails.push(c),
                Some("partly") => s.partly.push(c),
                _ => {
                    let (verdict, why) = (str_of(&c["verdict"]), str_of(&c["why"]));
                    match s
                        .open
                        .iter()
                        .position(|(v, w, _)| *v == verdict && *w == why)
                    {
                        Some(i) => s.open[i].2.push(c),
                        None => s.open.push((verdict, why, vec![c])),
                    }
                }
            }
        }
        s
    }

    /// How many claims are neither decided one way nor the other.
    pub fn open_count(&self) -> usize {
        self.open.iter().map(|(_, _, g)| g.len()).sum()
    }

    /// The summary as the opening section of `index.html`.
    pub fn html(&self) -> String {
        self.render(Markup::Html)
    }

    /// The summary as the opening section of `report.md`.
    pub fn markdown(&self) -> String {
        self.render(Markup::Markdown)
    }

    fn render(&self, m: Markup) -> String {
        let mut out = String::from(match m {
            Markup::Html => "<section id=\"summary\" class=\"summary\"><h2>Summary</h2>",
            Markup::Markdown => "## Summary\n",
        });
        out.push_str(&m.para(
            "counts",
            "",
            &format!(
                "Of {} claims of the papers and of today, judged on this run: {} hold, {} fail, {} hold in part, {} have no verdict here.{}",
                self.total,
                m.bold(self.holds.len()),
                m.bold(self.fails.len()),
                m.bold(self.partly.len()),
                m.bold(self.open_count()),
                match m {
                    Markup::Html => " Each name links to the claim's row, with its numbers and rule.",
                    Markup::Markdown => "",
                }
            ),
        ));
        if !self.holds.is_empty() {
            out.push_str(&m.para(
                "holds-list",
                &format!("Holds today ({}):", self.holds.len()),
                &format!("{}.", m.names(&self.holds)),
            ));
        }
        if !self.fails.is_empty() {
            let items: Vec<String> = self
                .fails
                .iter()
                .map(|c| {
                    let today = if c["seed"].as_str() == Some("today") {
                        " (a question of today, answered no)"
                    } else {
                        ""
                    };
                    format!(
                        "{}: {}{today}{}",
                        m.names(&[*c]),
                        m.text(&str_of(&c["claim"])),
                        m.aside(&numbers_of(c).join("; "))
                    )
                })
                .collect();
            out.push_str(&m.list(
                "fails-list",
                &format!(
                    "Changed since the papers: fails today ({}).",
                    self.fails.len()
                ),
                &items,
            ));
        }
        if !self.partly.is_empty() {
            out.push_str(&m.para(
                "partly-list",
                &format!("Holds in part ({}):", self.partly.len()),
                &format!("{}.", m.names(&self.partly)),
            ));
        }
        if !self.open.is_empty() {
            let items: Vec<String> = self
                .open
                .iter()
                .map(|(verdict, why, group)| {
                    let nums: Vec<String> = group.iter().flat_map(|c| numbers_of(c)).collect();
                    format!(
                        "{} {}: {}{}",
                        m.names(group),
                        m.verdict(verdict),
                        m.text(why),
                        m.aside(&nums.join("; "))
                    )
                })
                .collect();
            out.push_str(&m.list(
                "open-list",
                &format!(
                    "Without a verdict on this machine ({}), and why.",
                    self.open_count()
                ),
                &items,
            ));
        }
        if !self.undecided.is_empty() {
            let items: Vec<String> = self
                .undecided
                .iter()
                .map(|c| format!("{}: {}", m.ids(&[*c]), m.text(&str_of(&c["more_rounds"]))))
                .collect();
            out.push_str(&m.list(
                "more-rounds-list",
                &format!(
                    "Would more rounds decide them? ({} undecided)",
                    self.undecided.len()
                ),
                &items,
            ));
        }
        if !self.one_round.is_empty() {
            let decided = self.holds.len() + self.fails.len() + self.partly.len();
            let which = if self.one_round.len() == decided {
                "Every verdict above".to_string()
            } else {
                m.ids(&self.one_round)
            };
            out.push_str(&m.para(
                "one-round",
                &format!("Decided on one round ({}):", self.one_round.len()),
                &format!(
                    "{which}. One round gives no interval: such a verdict may flip near its threshold (the quick and full profiles run several rounds)."
                ),
            ));
        }
        if !self.below_level.is_empty() {
            let decided = self.holds.len() + self.fails.len() + self.partly.len();
            let items: Vec<String> = self
                .below_level
                .iter()
                .map(|c| format!("{} ({})", m.ids(&[*c]), rounds_text(c)))
                .collect();
            out.push_str(&m.para(
                "coverage",
                &format!(
                    "Intervals below 90% ({} of {decided} verdicts):",
                    self.below_level.len()
                ),
                &format!(
                    "{} of {decided} verdicts rest on intervals that cover the median with 90% (five rounds or more); these rest on fewer rounds, whose range covers it with less, so a verdict near its threshold may flip: {}.",
                    self.at_level.len(),
                    items.join(", ")
                ),
            ));
        }
        if m == Markup::Html {
            out.push_str("</section>");
        }
        out
    }
}

/// How the summary is written: HTML for `index.html` (escaped, claims
/// linked to their rows), Markdown for `report.md`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Markup {
    Html,
    Markdown,
}

impl Markup {
    fn text(self, s: &str) -> String {
        match self {
            Markup::Html => esc(s),
            Markup::Markdown => s.to_string(),
        }
    }

    fn bold(self, n: usize) -> String {
        match self {
            Markup::Html => format!("<b>{n}</b>"),
            Markup::Markdown => format!("**{n}**"),
        }
    }

    fn verdict(self, v: &str) -> String {
        match self {
            Markup::Html => format!("<i>{}</i>", esc(v)),
            Markup::Markdown => format!("*{v}*"),
        }
    }

    /// The claims' ids, each linked to its row.
    fn names(self, cs: &[&Value]) -> String {
        cs.iter()
            .map(|c| {
                let id = str_of(&c["id"]);
                match self {
                    Markup::Html => format!("<a href=\"#{}\">{}</a>", esc(&anchor(c)), esc(&id)),
                    Markup::Markdown => format!("`{id}`"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The claims' ids, not linked (each claim is linked once, from the
    /// list of its verdict).
    fn ids(self, cs: &[&Value]) -> String {
        cs.iter()
            .map(|c| {
                let id = str_of(&c["id"]);
                match self {
                    Markup::Html => format!("<code>{}</code>", esc(&id)),
                    Markup::Markdown => format!("`{id}`"),
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Numbers set aside after a dash; nothing when there are none.
    fn aside(self, nums: &str) -> String {
        match (self, nums.is_empty()) {
            (_, true) => String::new(),
            (Markup::Html, false) => format!(" <span class=\"params\">— {}</span>", esc(nums)),
            (Markup::Markdown, false) => format!(" — {nums}"),
        }
    }

    /// A paragraph: `lead` in bold (when any), then `rest` (already marked up).
    fn para(self, class: &str, lead: &str, rest: &str) -> String {
        let lead = match (self, lead.is_empty()) {
            (_, true) => String::new(),
            (Markup::Html, false) => format!("<b>{lead}</b> "),
            (Markup::Markdown, false) => format!("**{lead}** "),
        };
        match self {
            Markup::Html => format!("<p class=\"{class}\">{lead}{rest}</p>"),
            Markup::Markdown => format!("\n{lead}{rest}\n"),
        }
    }

    /// `lead` in bold, then `items` (already marked up) as a list.
    fn list(self, class: &str, lead: &str, items: &[String]) -> String {
        match self {
            Markup::Html => format!(
                "<p><b>{lead}</b></p><ul class=\"{class}\">{}</ul>",
                items
                    .iter()
                    .map(|i| format!("<li>{i}</li>"))
                    .collect::<String>()
            ),
            Markup::Markdown => format!(
                "\n**{lead}**\n\n{}",
                items.iter().map(|i| format!("- {i}\n")).collect::<String>()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(id: &str, seed: &str, verdict: &str, why: &str) -> Value {
        json!({"id": id, "seed": seed, "section": "§1", "claim": format!("text of {id} <&>"),
               "scenario": "s", "verdict": verdict, "why": why,
               "numbers": [{"name": "ratio", "value": "1.2", "lo": 1.05, "hi": 1.4}]})
    }

    /// Every claim lands in the group of its verdict; open claims sharing a
    /// reason are listed once under it; text is escaped; intervals shown.
    #[test]
    fn groups_by_verdict_and_reason() {
        let mut claims = vec![
            claim("a", "000", "holds", "x"),
            claim("b", "001", "fails", "y"),
            claim("c", "today", "fails", "y"),
            claim("d", "002", "partly", "z"),
            claim("e", "003", "not measured", "nginx: absent & missing"),
            claim("f", "003", "undecided", "interval straddles 1"),
            claim("g", "004", "not measured", "nginx: absent & missing"),
        ];
        claims[5]["more_rounds"] = json!("about 9 rounds");
        claims[0]["one_round"] = json!(true);
        let s = Summary::of(&claims);
        assert_eq!(
            (s.total, s.holds.len(), s.fails.len(), s.partly.len()),
            (7, 1, 2, 1)
        );
        assert_eq!(s.open.len(), 2, "{:?}", s.open);
        assert_eq!(s.open[0].2.len(), 2);
        assert_eq!(s.open_count(), 3);
        let h = s.html();
        assert!(h.contains("<b>1</b> hold, <b>2</b> fail, <b>1</b> hold in part, <b>3</b> have"));
        assert!(h.contains("text of b &lt;&amp;&gt;"));
        assert!(!h.contains("<&>"));
        assert!(h.contains("<a href=\"#claim-e\">e</a>, <a href=\"#claim-g\">g</a> <i>not measured</i>: nginx: absent &amp; missing"));
        assert!(h.contains("a question of today"));
        assert!(h.contains("ratio = 1.2 (interval 1.05 – 1.40)"), "{h}");
        assert!(h.contains("more-rounds-list"), "{h}");
        assert!(h.contains("<code>f</code>: about 9 rounds"), "{h}");
        assert!(
            h.contains("Decided on one round (1):</b> <code>a</code>."),
            "{h}"
        );
        // Each claim is linked once, from the list of its verdict.
        assert_eq!(h.matches("href=\"#claim-f\"").count(), 1);
        let m = s.markdown();
        assert!(m.contains("- `f`: about 9 rounds"), "{m}");
        let n =
            json!({"name": "r", "value": "2", "lo": 1.5, "hi": 2.5, "coverage": 0.75, "rounds": 3});
        assert_eq!(
            number_text(&n),
            "r = 2 (interval 1.50 – 2.50, 75%, 3 rounds)"
        );
        let same = json!({"name": "N", "value": "100", "lo": 100.0, "hi": 100.0, "rounds": 2});
        assert_eq!(
            number_text(&same),
            "N = 100 (all 2 rounds alike within display precision)"
        );
        assert_eq!(rounds_text(&claims[0]), "decided on one round");
        // A verdict on three rounds: a 75% interval, marked and counted.
        let mut low = claims.clone();
        low[1]["rounds"] = json!(3);
        low[1]["coverage"] = json!(0.75);
        low[2]["rounds"] = json!(5);
        low[2]["coverage"] = json!(0.938);
        assert_eq!(rounds_text(&low[1]), "all 3 rounds; 75% interval");
        assert_eq!(rounds_text(&low[2]), "5 rounds");
        let ls = Summary::of(&low);
        assert_eq!((ls.below_level.len(), ls.at_level.len()), (1, 1));
        let lm = ls.markdown();
        assert!(
            lm.contains("Intervals below 90% (1 of 4 verdicts):")
                && lm.contains("1 of 4 verdicts rest on intervals that cover the median with 90%")
                && lm.contains("`b` (all 3 rounds; 75% interval)"),
            "{lm}"
        );
        assert!(!m.contains("Intervals below 90%"), "{m}");
        let mut u = claims[5].clone();
        u["rounds"] = json!(2);
        u["round_verdicts"] =
            json!([{"round": 1, "verdict": "holds"}, {"round": 2, "verdict": "fails"}]);
        assert_eq!(rounds_text(&u), "2 rounds (1: holds, 2: fails)");
        assert!(m.contains("**Holds today (1):** `a`."));
        assert!(m.contains("- `e`, `g` *not measured*: nginx: absent & missing"));
    }
}
