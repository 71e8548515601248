//! The attack corpus: malformed and malicious requests, each with the
//! answer our server must give and what must happen to the connection.
//! The torture command sends it to our server on every model and to nginx
//! (whose answers are reported beside ours, not judged); the test suite
//! sends it to every model; the fuzz targets start from its bytes.

use serde::Serialize;

/// What kind of attack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    /// Escaping the document root: `..` in every encoding, symlinks.
    Traversal,
    /// Request line, headers or header count beyond the limits.
    Limits,
    /// Bodies and the request-smuggling shapes (CL+TE, duplicated CL).
    Smuggling,
    /// Many requests on one connection.
    Pipelining,
    /// Bytes that are not what HTTP allows: invalid UTF-8, NUL, control.
    Encoding,
    /// Methods, versions, Host rules, garbage.
    Protocol,
}

/// What must happen to the connection after the expected responses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum After {
    /// The server closes it, sending nothing more.
    Close,
    /// It stays usable: a follow-up request is answered 200.
    KeepAlive,
}

/// How the bytes are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Written while the responses are read.
    Normal,
    /// Written, then the write side shut down (the client's FIN).
    HalfClose,
    /// Written and never read: the server must not buffer without bound
    /// and must drop the connection once the client stops reading for the
    /// idle timeout. `responses` is empty; `After::Close` is the check.
    NoRead,
}

/// One attack.
#[derive(Debug, Clone, Serialize)]
pub struct Attack {
    /// Short unique name.
    pub id: &'static str,
    /// Its kind.
    pub group: Group,
    /// What it tries.
    pub what: &'static str,
    /// The bytes sent on a fresh connection.
    #[serde(skip)]
    pub raw: Vec<u8>,
    /// How they are sent.
    pub mode: Mode,
    /// The acceptable statuses of each expected response, in order.
    pub responses: Vec<&'static [u16]>,
    /// What must happen to the connection then.
    pub after: After,
    /// Whether the request is a HEAD (its responses carry no body).
    pub head: bool,
}

impl Attack {
    fn new(
        id: &'static str,
        group: Group,
        what: &'static str,
        raw: impl Into<Vec<u8>>,
        status: &'static [u16],
        after: After,
    ) -> Attack {
        Attack {
            id,
            group,
            what,
            raw: raw.into(),
            mode: Mode::Normal,
            responses: vec![status],
            after,
            head: false,
        }
    }

    /// The expected statuses as text, e.g. `400`, `403|404`, `200×1000`.
    pub fn expected_text(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        let mut i = 0;
        while i < self.responses.len() {
            let s = self.responses[i];
            let run = self.responses[i..].iter().take_while(|r| **r == s).count();
            let alts: Vec<String> = s.iter().map(u16::to_string).collect();
            let one = alts.join("|");
            parts.push(if run > 1 {
                format!("{one}×{run}")
            } else {
                one
            });
            i += run;
        }
        if parts.is_empty() {
            "none".into()
        } else {
            parts.join(", ")
        }
    }
}

/// A `GET` of `target` with a Host header.
fn get(target: &str) -> Vec<u8> {
    format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").into_bytes()
}

fn get_raw(target: &[u8]) -> Vec<u8> {
    let mut v = b"GET ".to_vec();
    v.extend_from_slice(target);
    v.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\n\r\n");
    v
}

/// A GET of `/` with extra header lines.
fn with_headers(extra: &str) -> Vec<u8> {
    format!("GET / HTTP/1.1\r\nHost: t\r\n{extra}\r\n").into_bytes()
}

/// How many requests the pipelining flood sends in one go.
pub const FLOOD: usize = 2000;

/// Every attack, in report order.
pub fn corpus() -> Vec<Attack> {
    use After::{Close, KeepAlive};
    use Group::*;
    // Outside the root: refused (403) or absent (404); never the secret.
    const OUT: &[u16] = &[403, 404];
    const BAD: &[u16] = &[400];
    let mut v = Vec::new();
    // A 403 or 404 keeps the connection; a malformed target (400) closes it.
    let mut t = |id, what, target: &str, st: &'static [u16]| {
        let after = if st == BAD { Close } else { KeepAlive };
        v.push(Attack::new(id, Traversal, what, get(target), st, after));
    };
    t("dotdot", "plain ../", "/../secret.txt", &[403]);
    t(
        "dotdot-deep",
        "../ after a real directory",
        "/docs/../../secret.txt",
        &[403],
    );
    t(
        "dotdot-pct",
        "%2e%2e (percent-encoded dots)",
        "/%2e%2e/secret.txt",
        &[403],
    );
    t(
        "dotdot-pct-upper",
        "%2E%2E%2F (upper-case, encoded slash)",
        "/%2E%2E%2Fsecret.txt",
        &[403],
    );
    t(
        "dotdot-mixed",
        ".%2e (half encoded)",
        "/.%2e/secret.txt",
        &[403],
    );
    t(
        "dotdot-slash-pct",
        "..%2f (encoded slash after the dots)",
        "/..%2fsecret.txt",
        &[403],
    );
    t(
        "double-encoded",
        "%252e%252e: decoded once it is the literal name %2e%2e",
        "/%252e%252e/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-dot",
        "%c0%ae: overlong UTF-8 for '.', not a dot",
        "/%c0%ae%c0%ae/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-dot-3",
        "%e0%80%ae: three-byte overlong '.'",
        "/%e0%80%ae%e0%80%ae/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-slash",
        "..%c0%af: overlong UTF-8 for '/'",
        "/..%c0%afsecret.txt",
        &[404],
    );
    t(
        "iis-u-encoding",
        "%u002e: IIS-style encoding is not HTTP",
        "/%u002e%u002e/secret.txt",
        BAD,
    );
    t(
        "backslash-raw",
        "..\\ (Windows separator, raw)",
        "/..\\secret.txt",
        &[403],
    );
    t(
        "backslash-pct",
        "..%5c (Windows separator, encoded)",
        "/..%5csecret.txt",
        &[403],
    );
    t(
        "nul-pct",
        "%00 truncation (secret.txt%00.html)",
        "/secret.txt%00.html",
        BAD,
    );
    t(
        "absolute-form",
        "absolute URI whose path climbs",
        "http://evil/../secret.txt",
        &[403],
    );
    t(
        "dot-segments",
        "/./.././ mixture",
        "/./.././secret.txt",
        &[403],
    );
    t(
        "double-slash",
        "//../ (empty segment first)",
        "//../secret.txt",
        &[403],
    );
    t(
        "three-dots",
        "... is a name, not a step up",
        "/.../secret.txt",
        &[404],
    );
    t(
        "symlink-absolute",
        "symlink to an absolute path outside",
        "/abs-link.txt",
        OUT,
    );
    t(
        "symlink-relative",
        "symlink to ../secret.txt",
        "/rel-link.txt",
        OUT,
    );
    t(
        "symlink-dir-up",
        "through a symlink to ..",
        "/up/secret.txt",
        OUT,
    );
    t(
        "symlink-inside",
        "a symlink that stays inside is served",
        "/inside-link.txt",
        &[200],
    );
    t(
        "query-dots",
        "../ in the query string is not a path",
        "/index.html?../../secret.txt",
        &[200],
    );
    t(
        "dir-no-slash",
        "directory without trailing slash",
        "/docs",
        &[200, 301],
    );
    v.push(Attack::new(
        "nul-raw",
        Traversal,
        "a raw NUL byte in the target",
        get_raw(b"/secret.txt\0.html"),
        BAD,
        Close,
    ));

    // Limits.
    v.push(Attack::new(
        "long-request-line",
        Limits,
        "request line of 9,000 bytes (beyond the 8 KiB head limit)",
        get(&format!("/{}", "a".repeat(9000))),
        &[414],
        Close,
    ));
    v.push(Attack::new(
        "long-target",
        Limits,
        "target of 5,000 bytes, head within the limit",
        get(&format!("/{}", "b".repeat(5000))),
        &[414],
        Close,
    ));
    v.push(Attack::new(
        "long-header",
        Limits,
        "one header of 9,000 bytes",
        with_headers(&format!("X-Big: {}\r\n", "c".repeat(9000))),
        &[431],
        Close,
    ));
    v.push(Attack::new(
        "many-headers",
        Limits,
        "60 header lines (more than 48)",
        with_headers(&(0..60).map(|i| format!("X-{i}: y\r\n")).collect::<String>()),
        &[431],
        Close,
    ));
    v.push(Attack::new(
        "endless-method",
        Limits,
        "a 10,000-byte method with no end of line",
        "G".repeat(10_000),
        &[400, 414, 501],
        Close,
    ));
    v.push(Attack::new(
        "endless-headers",
        Limits,
        "headers that never end, 200 small lines, past the head limit",
        format!(
            "GET / HTTP/1.1\r\nHost: t\r\n{}",
            (0..200)
                .map(|i| format!("X-Pad-{i:03}: {}\r\n", "p".repeat(40)))
                .collect::<String>()
        ),
        &[431],
        Close,
    ));

    // Bodies and smuggling shapes.
    let mut s = |id, what, extra: &str, st: &'static [u16]| {
        v.push(Attack::new(
            id,
            Smuggling,
            what,
            with_headers(extra),
            st,
            Close,
        ));
    };
    s(
        "cl-te",
        "Content-Length and Transfer-Encoding together",
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n",
        BAD,
    );
    s(
        "te-cl",
        "Transfer-Encoding then Content-Length",
        "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n",
        BAD,
    );
    s(
        "cl-cl-same",
        "Content-Length twice, same value",
        "Content-Length: 0\r\nContent-Length: 0\r\n",
        BAD,
    );
    s(
        "cl-cl-differ",
        "Content-Length twice, different values",
        "Content-Length: 0\r\ncontent-length: 7\r\n",
        BAD,
    );
    s(
        "cl-list",
        "Content-Length: 0, 5 (a list)",
        "Content-Length: 0, 5\r\n",
        BAD,
    );
    s(
        "cl-negative",
        "Content-Length: -1",
        "Content-Length: -1\r\n",
        BAD,
    );
    s(
        "cl-plus",
        "Content-Length: +0 (sign)",
        "Content-Length: +0\r\n",
        BAD,
    );
    s(
        "cl-hex",
        "Content-Length: 0x10",
        "Content-Length: 0x10\r\n",
        BAD,
    );
    s(
        "cl-huge",
        "Content-Length beyond 64 bits",
        "Content-Length: 99999999999999999999999\r\n",
        BAD,
    );
    s(
        "cl-big",
        "Content-Length of 10^18 (a body never sent)",
        "Content-Length: 1000000000000000000\r\n",
        &[413],
    );
    s(
        "te-chunked",
        "Transfer-Encoding: chunked alone (a body on a GET)",
        "Transfer-Encoding: chunked\r\n",
        &[413],
    );
    s(
        "te-obfuscated",
        "Transfer-Encoding: xchunked",
        "Transfer-Encoding: xchunked\r\n",
        &[413, 501],
    );
    s(
        "te-space-before-colon",
        "Transfer-Encoding : chunked (space before the colon)",
        "Transfer-Encoding : chunked\r\n",
        BAD,
    );
    v.push(Attack::new(
        "cl-body",
        Smuggling,
        "GET with Content-Length: 5 and a body",
        "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
        &[413],
        Close,
    ));
    v.push(Attack::new(
        "smuggled-after-refusal",
        Smuggling,
        "CL+TE request followed by a second request: only the 400 comes back",
        "GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\nGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
        Close,
    ));

    // Pipelining.
    let mut flood = Vec::new();
    for _ in 0..FLOOD {
        flood.extend_from_slice(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    let mut a = Attack::new(
        "pipeline-flood",
        Pipelining,
        "2,000 requests in one write, answered in order",
        flood,
        &[200],
        KeepAlive,
    );
    a.responses = vec![&[200]; FLOOD];
    v.push(a);
    let mut mixed = Vec::new();
    for _ in 0..20 {
        mixed.extend_from_slice(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    mixed.extend_from_slice(
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",
    );
    mixed.extend_from_slice(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut a = Attack::new(
        "pipeline-then-bad",
        Pipelining,
        "20 good requests, a smuggling shape, then one more: 20×200, 400, close",
        mixed,
        &[200],
        Close,
    );
    a.responses = vec![&[200]; 20];
    a.responses.push(BAD);
    v.push(a);
    let mut never = Vec::new();
    for _ in 0..50_000 {
        never.extend_from_slice(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    }
    v.push(Attack {
        id: "pipeline-never-read",
        group: Pipelining,
        what: "50,000 requests for 6 KiB, responses never read: dropped at the idle timeout",
        raw: never,
        mode: Mode::NoRead,
        responses: Vec::new(),
        after: Close,
        head: false,
    });
    let mut a = Attack::new(
        "half-close",
        Pipelining,
        "one request then the client's FIN: answered, then closed",
        get("/index.html"),
        &[200],
        Close,
    );
    a.mode = Mode::HalfClose;
    v.push(a);
    let mut a = Attack::new(
        "half-close-partial",
        Pipelining,
        "half a request then the client's FIN",
        "GET /index.html HTTP/1.1\r\nHo",
        &[],
        Close,
    );
    a.mode = Mode::HalfClose;
    a.responses = Vec::new();
    v.push(a);

    // Encoding.
    v.push(Attack::new(
        "utf8-invalid-raw",
        Encoding,
        "raw bytes 0xff 0xfe in the target (not URI characters)",
        get_raw(b"/\xff\xfe.html"),
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "utf8-invalid-pct",
        Encoding,
        "%ff%fe in the target",
        get("/%ff%fe.html"),
        &[404],
        KeepAlive,
    ));
    v.push(Attack::new(
        "utf8-valid-pct",
        Encoding,
        "valid UTF-8, encoded (a missing file)",
        get("/%e2%82%ac.html"),
        &[404],
        KeepAlive,
    ));
    v.push(Attack::new(
        "bad-pct",
        Encoding,
        "a truncated escape %4",
        get("/index.html%4"),
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "nul-header",
        Encoding,
        "a NUL byte in a header value",
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "nul-first",
        Encoding,
        "a NUL byte before the method",
        "\0GET / HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "ctl-header-name",
        Encoding,
        "a control character in a header name",
        "GET / HTTP/1.1\r\nHost: t\r\nX\x01A: b\r\n\r\n",
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "utf8-header-value",
        Encoding,
        "invalid UTF-8 in a header value (opaque bytes: allowed)",
        b"GET / HTTP/1.1\r\nHost: t\r\nX-A: \xc3\x28\xff\r\n\r\n".to_vec(),
        &[200],
        KeepAlive,
    ));
    v.push(Attack::new(
        "bare-lf",
        Encoding,
        "lines ended by LF alone",
        "GET / HTTP/1.1\nHost: t\n\n",
        &[200, 400],
        KeepAlive,
    ));
    v.push(Attack::new(
        "obs-fold",
        Encoding,
        "a folded header line (obs-fold, refused as RFC 9112 allows)",
        "GET / HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n",
        BAD,
        Close,
    ));
    v.push(Attack::new(
        "header-no-colon",
        Encoding,
        "a header line without a colon",
        "GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n",
        BAD,
        Close,
    ));

    // Protocol.
    let mut p = |id, what, raw: &str, st: &'static [u16], after| {
        v.push(Attack::new(id, Protocol, what, raw, st, after));
    };
    p(
        "post",
        "POST is not served",
        "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        &[405],
        Close,
    );
    p(
        "unknown-method",
        "an unknown method",
        "BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n",
        &[501],
        Close,
    );
    p(
        "lowercase-method",
        "get in lower case (methods are case-sensitive)",
        "get / HTTP/1.1\r\nHost: t\r\n\r\n",
        &[400, 501],
        Close,
    );
    p(
        "http2-version",
        "HTTP/2.0 on the request line",
        "GET / HTTP/2.0\r\nHost: t\r\n\r\n",
        &[505],
        Close,
    );
    p(
        "http09",
        "an HTTP/0.9 request (no version)",
        "GET /\r\n\r\n",
        &[400],
        Close,
    );
    p(
        "bad-version",
        "a version that is not HTTP",
        "GET / FOO/1.1\r\nHost: t\r\n\r\n",
        BAD,
        Close,
    );
    p(
        "no-host",
        "HTTP/1.1 without Host",
        "GET / HTTP/1.1\r\n\r\n",
        BAD,
        Close,
    );
    p(
        "two-hosts",
        "two Host headers",
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        BAD,
        Close,
    );
    p(
        "extra-spaces",
        "two spaces between method and target (refused as RFC 9112 allows)",
        "GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
        Close,
    );
    p(
        "asterisk",
        "GET * (asterisk-form)",
        "GET * HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
        Close,
    );
    p(
        "leading-crlf",
        "empty lines before the request line",
        "\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
        &[200, 400],
        KeepAlive,
    );
    p(
        "http10-close",
        "HTTP/1.0 without keep-alive: answered, then closed",
        "GET / HTTP/1.0\r\n\r\n",
        &[200],
        Close,
    );
    p(
        "connection-close",
        "Connection: close is honoured",
        "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        &[200],
        Close,
    );
    p(
        "ims-garbage",
        "an unparsable If-Modified-Since",
        "GET / HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: yesterday-ish\r\n\r\n",
        &[200],
        KeepAlive,
    );
    p(
        "expect-continue",
        "Expect: 100-continue on a GET",
        "GET / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n",
        &[200, 417],
        KeepAlive,
    );
    v.push(Attack::new(
        "tls-hello",
        Protocol,
        "a TLS ClientHello on the plain port",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(),
        BAD,
        Close,
    ));
    let mut a = Attack::new(
        "head",
        Protocol,
        "HEAD: headers only",
        "HEAD /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        &[200],
        KeepAlive,
    );
    a.head = true;
    v.push(a);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_expectations_complete() {
        let c = corpus();
        for a in &c {
            assert_eq!(c.iter().filter(|b| b.id == a.id).count(), 1, "{}", a.id);
            assert!(!a.raw.is_empty(), "{}", a.id);
            if a.mode == Mode::Normal {
                assert!(!a.responses.is_empty(), "{}: no response expected", a.id);
            }
        }
        assert!(c.len() >= 60, "{} attacks", c.len());
        for g in [
            Group::Traversal,
            Group::Limits,
            Group::Smuggling,
            Group::Pipelining,
            Group::Encoding,
            Group::Protocol,
        ] {
            assert!(c.iter().any(|a| a.group == g), "{g:?} has no attack");
        }
    }

    #[test]
    fn expected_text() {
        let c = corpus();
        let flood = c.iter().find(|a| a.id == "pipeline-flood").unwrap();
        assert_eq!(flood.expected_text(), format!("200×{FLOOD}"));
        let mixed = c.iter().find(|a| a.id == "pipeline-then-bad").unwrap();
        assert_eq!(mixed.expected_text(), "200×20, 400");
        let sym = c.iter().find(|a| a.id == "symlink-relative").unwrap();
        assert_eq!(sym.expected_text(), "403|404");
    }
}
