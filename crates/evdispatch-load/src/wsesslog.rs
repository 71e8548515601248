//! httperf's session log (`--wsesslog N,X,FILE`), read in httperf's own
//! format so that an existing file works unchanged:
//!
//! - a line starting with `#` is a comment;
//! - lines holding only whitespace end a session (several in a row make
//!   no empty session);
//! - any other line is one request: a URI, then optional `method=M`,
//!   `contents=STRING` (the body; quoted with `'` or `"` when it holds
//!   spaces, `\n` for a newline, `\` at the end of a line continues the
//!   string on the next line with a newline) and `think=SECONDS` (the
//!   think time after this burst; default `X`);
//! - a line starting with whitespace belongs to the burst of the last line
//!   that did not: it is requested after that line's reply.
//!
//! A session plays its bursts in order: the burst's first request, then
//! (when its reply is in) the burst's other requests, then the think time,
//! then the next burst. httperf sends a burst's embedded requests over
//! several connections at once; this generator sends them one after the
//! other on the session's connection.

use std::path::Path;

use anyhow::{anyhow, bail};
use serde::{Deserialize, Serialize};

/// One request of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogRequest {
    /// The URI (path and query) requested.
    pub uri: String,
    /// `method=`, `GET` when absent.
    pub method: String,
    /// `contents=`: the body, sent with its `Content-Length`.
    pub contents: Option<String>,
}

/// A burst: a request, then the requests that follow its reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Burst {
    /// The burst's requests, the leading one first.
    pub requests: Vec<LogRequest>,
    /// Think time after the burst's last reply, seconds.
    pub think_s: f64,
}

/// A user session: bursts separated by think times.
pub type Session = Vec<Burst>;

/// The `--wsesslog` option: how many sessions, the default think time and
/// the sessions of the file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionLog {
    /// `N`: sessions to start (they cycle through the file's sessions).
    pub sessions: u64,
    /// `X`: think time of a burst without `think=`, seconds.
    pub think_s: f64,
    /// `FILE`.
    pub file: String,
    /// The sessions read from the file (not in the JSON output).
    #[serde(skip)]
    pub log: Vec<Session>,
}

impl SessionLog {
    /// Parse the option's value `N,X,FILE` and read the file.
    pub fn from_option(value: &str) -> anyhow::Result<SessionLog> {
        let mut parts = value.splitn(3, ',');
        let (Some(n), Some(x), Some(file)) = (parts.next(), parts.next(), parts.next()) else {
            bail!("--wsesslog '{value}': expected N,X,FILE (sessions, default think time in seconds, session log file), e.g. 100,0.5,sessions.log");
        };
        let sessions: u64 = n
            .trim()
            .parse()
            .map_err(|_| anyhow!("--wsesslog '{value}': N '{n}' is not a number of sessions"))?;
        let think_s: f64 = x
            .trim()
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| {
                anyhow!("--wsesslog '{value}': X '{x}' is not a think time in seconds")
            })?;
        let text = std::fs::read_to_string(file)
            .map_err(|e| anyhow!("--wsesslog: cannot read session log '{file}': {e}"))?;
        let log = parse(Path::new(file), &text, think_s)?;
        Ok(SessionLog {
            sessions,
            think_s,
            file: file.to_string(),
            log,
        })
    }
}

/// Parse a session log's text; errors read `FILE:LINE: expected …`.
pub fn parse(file: &Path, text: &str, default_think_s: f64) -> anyhow::Result<Vec<Session>> {
    let mut sessions: Vec<Session> = Vec::new();
    let mut current: Session = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((i, first)) = lines.next() {
        let at = |n: usize| format!("{}:{}", file.display(), n + 1);
        if first.starts_with('#') {
            continue;
        }
        if first.trim().is_empty() {
            if !current.is_empty() {
                sessions.push(std::mem::take(&mut current));
            }
            continue;
        }
        // A quoted string may continue on the next line after a backslash.
        let mut line = first.to_string();
        while line.ends_with('\\') && open_quote(&line) {
            line.pop();
            line.push('\n');
            match lines.next() {
                Some((_, next)) => line.push_str(next),
                None => bail!("{}: expected the continuation of a quoted string after '\\' at the end of the line, found the end of the file", at(i)),
            }
        }
        let indented = line.starts_with([' ', '\t']);
        let (req, think) = parse_request(&line).map_err(|e| anyhow!("{}: {e}", at(i)))?;
        // An indented line joins the burst above; a session's first line
        // starts its first burst however it is indented (as httperf reads it).
        if let (true, Some(burst)) = (indented, current.last_mut()) {
            burst.requests.push(req);
            if let Some(t) = think {
                burst.think_s = t;
            }
        } else {
            current.push(Burst {
                requests: vec![req],
                think_s: think.unwrap_or(default_think_s),
            });
        }
    }
    if !current.is_empty() {
        sessions.push(current);
    }
    if sessions.is_empty() {
        bail!(
            "{}: expected at least one request line (a URI such as /index.html)",
            file.display()
        );
    }
    Ok(sessions)
}

/// True when `line` ends inside a quoted string.
fn open_quote(line: &str) -> bool {
    let mut quote = None;
    let mut escaped = false;
    for ch in line.chars() {
        match (quote, ch) {
            _ if escaped => escaped = false,
            (Some(_), '\\') => escaped = true,
            (Some(q), c) if c == q => quote = None,
            (None, '\'' | '"') => quote = Some(ch),
            _ => {}
        }
    }
    quote.is_some()
}

/// One request line: URI and attributes; the think time if given.
fn parse_request(line: &str) -> Result<(LogRequest, Option<f64>), String> {
    let mut rest = line.trim_start();
    let uri_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    let uri = &rest[..uri_end];
    if !uri.starts_with('/') && !uri.starts_with("http") {
        return Err(format!("expected a URI starting with '/', found '{uri}'"));
    }
    rest = &rest[uri_end..];
    let mut req = LogRequest {
        uri: uri.to_string(),
        method: "GET".into(),
        contents: None,
    };
    let mut think = None;
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            break;
        }
        let Some(eq) = rest.find('=') else {
            return Err(format!(
                "expected an attribute method=, contents= or think=, found '{rest}'"
            ));
        };
        let key = &rest[..eq];
        rest = &rest[eq + 1..];
        let value = take_value(&mut rest)?;
        match key {
            "method" => {
                if !crate::proto::http1::is_token(&value) {
                    return Err(format!(
                        "expected a method token after method=, found '{value}'"
                    ));
                }
                req.method = value;
            }
            "contents" => req.contents = Some(value),
            "think" => {
                let t: f64 = value
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t >= 0.0)
                    .ok_or_else(|| {
                        format!(
                            "expected think=SECONDS (a non-negative number), found think={value}"
                        )
                    })?;
                think = Some(t);
            }
            other => {
                return Err(format!(
                    "expected an attribute method=, contents= or think=, found '{other}='"
                ))
            }
        }
    }
    Ok((req, think))
}

/// An attribute's value: up to the next whitespace, or a quoted string;
/// either with `\n`, `\r`, `\t`, `\\`, `\'` and `\"` escapes.
fn take_value(rest: &mut &str) -> Result<String, String> {
    let quote = rest.chars().next().filter(|&q| q == '\'' || q == '"');
    // Unquoted: up to the next whitespace, with the same escapes (httperf
    // reads `contents=a\nb` as two lines too).
    let end = match quote {
        Some(_) => rest.len(),
        None => rest.find(char::is_whitespace).unwrap_or(rest.len()),
    };
    let start = quote.map_or(0, char::len_utf8);
    let mut out = String::new();
    let mut chars = rest[start..end].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, 'r')) => out.push('\r'),
                Some((_, 't')) => out.push('\t'),
                Some((_, o)) => out.push(o),
                None => break,
            },
            c if Some(c) == quote => {
                *rest = &rest[start + i + 1..];
                return Ok(out);
            }
            c => out.push(c),
        }
    }
    match quote {
        Some(q) => Err(format!("expected a closing {q} for the quoted value")),
        None => {
            *rest = &rest[end..];
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of httperf's man-page example.
    const EXAMPLE: &str = "# Comment lines start with a '#'.\n\
# session 1 definition (this is a comment)\n\
/foo.html think=2.0\n\
\t/pict1.gif\n\
\t/pict2.gif\n\
/foo2.html method=POST contents='Post data'\n\
\t/pict3.gif\n\
\t/pict4.gif\n\
\t\n\
\n\
# session 2 definition\n\
/foo3.html method=POST contents=\"Multiline\\ndata\"\n\
/foo4.html method=HEAD\n";

    fn get(uri: &str) -> LogRequest {
        LogRequest {
            uri: uri.into(),
            method: "GET".into(),
            contents: None,
        }
    }

    #[test]
    fn the_man_page_example() {
        let s = parse(Path::new("f"), EXAMPLE, 0.5).unwrap();
        assert_eq!(s.len(), 2, "{s:#?}");
        assert_eq!(
            s[0][0],
            Burst {
                requests: vec![get("/foo.html"), get("/pict1.gif"), get("/pict2.gif")],
                think_s: 2.0
            }
        );
        let post = &s[0][1];
        assert_eq!(post.think_s, 0.5);
        assert_eq!(post.requests.len(), 3);
        assert_eq!(post.requests[0].method, "POST");
        assert_eq!(post.requests[0].contents.as_deref(), Some("Post data"));
        assert_eq!(s[1].len(), 2);
        assert_eq!(
            s[1][0].requests[0].contents.as_deref(),
            Some("Multiline\ndata")
        );
        assert_eq!(s[1][1].requests[0].method, "HEAD");
    }

    #[test]
    fn unquoted_values_take_escapes_too() {
        let s = parse(
            Path::new("f"),
            "/a method=POST contents=one\\ntwo\\\\x\n",
            0.0,
        )
        .unwrap();
        assert_eq!(s[0][0].requests[0].contents.as_deref(), Some("one\ntwo\\x"));
    }

    #[test]
    fn continued_strings_and_many_blank_lines() {
        let text = "/a contents='one\\\ntwo'\n\n\n\n/b\n";
        let s = parse(Path::new("f"), text, 0.0).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0][0].requests[0].contents.as_deref(), Some("one\ntwo"));
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let e = |t: &str| parse(Path::new("s.log"), t, 0.0).unwrap_err().to_string();
        assert!(
            e("/a\n\tpict\n").starts_with("s.log:2: expected a URI"),
            "{}",
            e("/a\n\tpict\n")
        );
        // An indented first line starts the session's first burst (httperf).
        let s = parse(Path::new("s.log"), "\n\t/x\n\t/y\n", 0.0).unwrap();
        assert_eq!(s[0].len(), 1);
        assert_eq!(s[0][0].requests, vec![get("/x"), get("/y")]);
        assert!(e("/a think=soon\n").starts_with("s.log:1: expected think=SECONDS"));
        assert!(e("/a colour=red\n").starts_with("s.log:1: expected an attribute"));
        assert!(e("# x\n/a contents='open\n").starts_with("s.log:2: expected a closing '"));
        assert!(e("# only comments\n").contains("expected at least one request"));
    }

    #[test]
    fn the_option_value() {
        assert!(SessionLog::from_option("10,x")
            .unwrap_err()
            .to_string()
            .contains("N,X,FILE"));
        assert!(SessionLog::from_option("10,0,/nonexistent/s.log")
            .unwrap_err()
            .to_string()
            .contains("cannot read session log"));
    }
}
