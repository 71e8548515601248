//! The study crate's modules form layers: no import circle between its
//! files, so it cannot come back unnoticed.
//!
//! Each `.rs` file under `src/` is a node (`crate::drive`,
//! `crate::scenarios::poller::claims`…). A file depends on another when its
//! code (comments and string literals aside, tests included) names it:
//! - a path from `crate::`, `super::` or `self::` (grouped `use` paths
//!   expanded), resolved to the longest prefix that is a module, or for a
//!   macro (`crate::config!`) to the file that defines it;
//! - a path through a module name a `use` brought in (`use crate::drive;`
//!   then `drive::run_load`);
//! - one of its own child modules by name, anywhere but the `mod NAME;`
//!   line that declares it (a list of its children, as `scenarios/mod.rs`
//!   keeps, uses them; declaring alone does not).
//!
//! A circle in that graph fails the test, which prints it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// A module's source: its path (`crate::a::b`) and its code.
struct Module {
    path: String,
    code: String,
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())) {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `src/lib.rs` → `crate`, `src/a/mod.rs` → `crate::a`, `src/a/b.rs` →
/// `crate::a::b`.
fn module_path(src: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src).expect("under src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    if last != "lib.rs" && last != "mod.rs" {
        parts.push(last.trim_end_matches(".rs").to_string());
    }
    std::iter::once("crate".to_string())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

/// The code with comments and the contents of string and character
/// literals replaced by spaces (lines kept).
fn code_only(src: &str) -> String {
    let c: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && (next == Some('"') || next == Some('#'))
            && !c
                .get(i.wrapping_sub(1))
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            out.push_str(&" ".repeat(j + 1 - i));
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|k| c.get(i + 1 + k) == Some(&'#')) {
                    out.push_str(&" ".repeat(1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && next == Some('\\') {
            // An escaped character literal.
            out.push_str("  ");
            i += 2;
            while i < c.len() && c[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            out.push_str("   ");
            i += 3;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

fn is_ident(ch: char) -> bool {
    ch.is_alphanumeric() || ch == '_'
}

/// The ranges of `code` inside inline modules (`mod NAME { … }`), with
/// their names.
fn inline_mods(code: &str) -> Vec<(usize, usize, String)> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(k) = code[from..].find("mod ") {
        let at = from + k;
        from = at + 4;
        if at > 0 && is_ident(b[at - 1] as char) {
            continue;
        }
        let rest = &code[at + 4..];
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        let after = rest[name.len()..].trim_start();
        if name.is_empty() || !after.starts_with('{') {
            continue;
        }
        let open = code.len() - after.len();
        let mut depth = 0;
        for (i, ch) in code[open..].char_indices() {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push((open, open + i, name.clone()));
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The paths of a `use` tree or expression starting at `code` (just past
/// `crate::`, `super::` or `self::`): `a::b`, or `{a, b::{c, d}}` expanded;
/// each with whether it is a macro (`name!`).
fn paths_at(code: &str) -> Vec<(Vec<String>, bool)> {
    let s = code.trim_start();
    if let Some(inner) = s.strip_prefix('{') {
        let mut out = Vec::new();
        let mut depth = 0;
        let mut start = 0;
        for (i, ch) in inner.char_indices() {
            match ch {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.extend(paths_at(&inner[start..i]));
                    return out;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.extend(paths_at(&inner[start..i]));
                    start = i + 1;
                }
                _ => {}
            }
        }
        return out;
    }
    let mut segs = Vec::new();
    let mut rest = s;
    loop {
        let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
        if name.is_empty() {
            break;
        }
        rest = &rest[name.len()..];
        segs.push(name);
        if let Some(r) = rest.strip_prefix("::") {
            if r.trim_start().starts_with('{') {
                return paths_at(r)
                    .into_iter()
                    .map(|(p, m)| (segs.iter().cloned().chain(p).collect(), m))
                    .collect();
            }
            rest = r;
        } else {
            break;
        }
    }
    let mac = rest.starts_with('!');
    vec![(segs, mac)]
}

/// Which module each file depends on.
fn graph(modules: &[Module]) -> BTreeMap<String, BTreeSet<String>> {
    let known: BTreeSet<&str> = modules.iter().map(|m| m.path.as_str()).collect();
    let mut macros: BTreeMap<String, String> = BTreeMap::new();
    for m in modules {
        for (i, _) in m.code.match_indices("macro_rules!") {
            let name: String = m.code[i + 12..]
                .trim_start()
                .chars()
                .take_while(|c| is_ident(*c))
                .collect();
            macros.insert(name, m.path.clone());
        }
    }
    let resolve = |segs: &[String]| -> Option<String> {
        (1..=segs.len())
            .rev()
            .map(|n| segs[..n].join("::"))
            .find(|p| known.contains(p.as_str()))
    };
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for m in modules {
        let deps = g.entry(m.path.clone()).or_default();
        let inline = inline_mods(&m.code);
        let here: Vec<String> = m.path.split("::").map(String::from).collect();
        let b = m.code.as_bytes();
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for kw in ["crate::", "super::", "self::"] {
            for (at, _) in m.code.match_indices(kw) {
                if at > 0 && (is_ident(b[at - 1] as char) || b[at - 1] == b'$') {
                    continue;
                }
                // The module this occurrence is in: the file's, then the
                // inline modules around it.
                let mut base = here.clone();
                base.extend(
                    inline
                        .iter()
                        .filter(|(s, e, _)| *s < at && at < *e)
                        .map(|(_, _, n)| n.clone()),
                );
                let mut prefix: Vec<String> = match kw {
                    "crate::" => vec!["crate".into()],
                    "super::" => base[..base.len() - 1].to_vec(),
                    _ => base,
                };
                let mut rest = &m.code[at + kw.len()..];
                while let Some(r) = rest.strip_prefix("super::") {
                    prefix.pop();
                    rest = r;
                }
                for (segs, mac) in paths_at(rest) {
                    let target = if mac {
                        segs.last().and_then(|n| macros.get(n).cloned())
                    } else {
                        let mut full: Vec<String> = prefix.iter().cloned().chain(segs).collect();
                        if full.last().is_some_and(|l| l == "self") {
                            full.pop();
                        }
                        let t = resolve(&full);
                        // `use crate::a::b;` binds `b` to a module: its
                        // later `b::…` paths are read below.
                        if t.as_deref() == Some(full.join("::").as_str()) && full.len() > 1 {
                            aliases.insert(full.last().expect("a name").clone(), full.clone());
                        }
                        t
                    };
                    if let Some(t) = target.filter(|t| *t != m.path) {
                        deps.insert(t);
                    }
                }
            }
        }
        // Paths through a module name brought in by `use`.
        for (alias, full) in &aliases {
            for (at, _) in m.code.match_indices(&format!("{alias}::")) {
                if at > 0 && (is_ident(b[at - 1] as char) || b[at - 1] == b':') {
                    continue;
                }
                for (segs, _) in paths_at(&m.code[at + alias.len() + 2..]) {
                    let p: Vec<String> = full.iter().cloned().chain(segs).collect();
                    if let Some(t) = resolve(&p).filter(|t| *t != m.path) {
                        deps.insert(t);
                    }
                }
            }
        }
        // Its children named in its code (their declarations aside).
        for child in modules.iter().filter(|c| {
            c.path
                .strip_prefix(&format!("{}::", m.path))
                .is_some_and(|rest| !rest.contains("::"))
        }) {
            let name = child.path.rsplit("::").next().expect("a name");
            let named = m.code.lines().any(|line| {
                let t = line.trim();
                let declaration = t.ends_with(&format!("mod {name};"))
                    && t.split_whitespace().all(|w| {
                        ["pub", "pub(crate)", "mod"].contains(&w) || w == format!("{name};")
                    });
                !declaration
                    && line.match_indices(name).any(|(i, _)| {
                        let before = line[..i].chars().next_back();
                        let after = line[i + name.len()..].chars().next();
                        !before.is_some_and(|c| is_ident(c) || c == ':' || c == '.')
                            && !after.is_some_and(is_ident)
                    })
            });
            if named {
                deps.insert(child.path.clone());
            }
        }
    }
    g
}

/// A circle in `g`, if there is one: the modules around it, the first
/// repeated at the end.
fn circle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        mark: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        mark.insert(n.to_string(), Mark::Open);
        stack.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            match mark.get(d).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = stack.iter().position(|s| s == d).expect("on the stack");
                    let mut c = stack[from..].to_vec();
                    c.push(d.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(d, g, mark, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        mark.insert(n.to_string(), Mark::Done);
        None
    }
    let mut mark = BTreeMap::new();
    for n in g.keys() {
        if mark.get(n).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(n, g, &mut mark, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn modules_of(files: &[(&str, &str)]) -> Vec<Module> {
    files
        .iter()
        .map(|(p, s)| Module {
            path: p.to_string(),
            code: code_only(s),
        })
        .collect()
}

#[test]
fn the_study_crate_has_no_import_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: Vec<Module> = files
        .iter()
        .map(|f| Module {
            path: module_path(&src, f),
            code: code_only(&fs::read_to_string(f).expect("readable source")),
        })
        .collect();
    let g = graph(&modules);
    for (m, deps) in &g {
        eprintln!(
            "{m} -> {}",
            deps.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    // The graph is read, not empty: the layers the crate documents are there.
    for (from, to) in [
        ("crate::drive", "crate::spec"),
        ("crate::contracts", "crate::spec"),
        ("crate::drive", "crate::contracts"),
        ("crate::scenarios", "crate::scenarios::poller"),
        (
            "crate::scenarios::poller",
            "crate::scenarios::poller::claims",
        ),
        ("crate::scenarios::poller::claims", "crate::claims"),
        ("crate::report", "crate::results"),
        ("crate::report", "crate::scenarios"),
    ] {
        assert!(
            g.get(from).is_some_and(|d| d.contains(to)),
            "{from} should depend on {to}"
        );
    }
    if let Some(c) = circle(&g) {
        panic!(
            "import circle between the study crate's modules: {} (move what both need into a module below them)",
            c.join(" -> ")
        );
    }
}

/// The checker finds the shapes this crate had: a list of scenarios beside
/// the types its scenarios import, two modules using each other, and a
/// child using what its parent lists.
#[test]
fn the_checker_finds_circles() {
    let old = modules_of(&[
        ("crate", "pub mod scenario; pub mod scenarios;"),
        (
            "crate::scenario",
            "use crate::scenarios;\npub struct Scenario;\npub static S: &[Scenario] = &[scenarios::a::SCENARIO];",
        ),
        ("crate::scenarios", "pub mod a;"),
        (
            "crate::scenarios::a",
            "use crate::scenario::Scenario; // crate::nothing\npub const SCENARIO: Scenario = Scenario;",
        ),
    ]);
    let c = circle(&graph(&old)).expect("the old knot");
    assert!(c.contains(&"crate::scenario".to_string()), "{c:?}");

    let pair = modules_of(&[
        (
            "crate::drive",
            "use crate::{contracts::{self, x}, results};",
        ),
        ("crate::contracts", "fn f() { crate::drive::run(); }"),
        ("crate::results", ""),
    ]);
    assert!(circle(&graph(&pair)).is_some());

    let child = modules_of(&[
        (
            "crate::scenarios",
            "mod a;\nlist! { a }\npub fn helper() {}",
        ),
        ("crate::scenarios::a", "use super::helper;"),
    ]);
    assert!(circle(&graph(&child)).is_some());

    // Declaring a child, a name in a comment or a string, and a test module
    // using its own file are not dependencies.
    let fine = modules_of(&[
        ("crate::claims", "pub mod testkit;\npub struct Outcome;\n// crate::scenarios\nconst S: &str = \"crate::scenarios\";\n#[cfg(test)]\nmod tests { use super::*; }"),
        ("crate::claims::testkit", "use super::Outcome;"),
        ("crate::scenarios", "use crate::claims::Outcome;"),
    ]);
    assert_eq!(circle(&graph(&fine)), None);
}
