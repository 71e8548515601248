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
        raw: &[u8],
        responses: Vec<&'static [u16]>,
        after: After,
    ) -> Attack {
        let (raw, mode, head) = (raw.to_vec(), Mode::Normal, false);
        Attack {
            id,
            group,
            what,
            raw,
            mode,
            responses,
            after,
            head,
        }
    }

    /// The expected statuses as text, e.g. `400`, `403|404`, `200×1000`.
    pub fn expected_text(&self) -> String {
        runs_text(&self.responses, |s| {
            s.iter().map(u16::to_string).collect::<Vec<_>>().join("|")
        })
    }
}

/// `items` as text, each run of equal ones collapsed (`200×2000, 400`);
/// `none` when empty.
pub fn runs_text<T: PartialEq>(items: &[T], name: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return "none".into();
    }
    let runs = items.chunk_by(|a, b| a == b).map(|run| match run.len() {
        1 => name(&run[0]),
        n => format!("{}×{n}", name(&run[0])),
    });
    runs.collect::<Vec<_>>().join(", ")
}

/// A `GET` of `target` with a Host header.
fn get(target: &[u8]) -> Vec<u8> {
    [&b"GET "[..], target, b" HTTP/1.1\r\nHost: t\r\n\r\n"].concat()
}

/// A GET of `/` with extra header lines.
fn with_headers(extra: &[u8]) -> Vec<u8> {
    [&b"GET / HTTP/1.1\r\nHost: t\r\n"[..], extra, b"\r\n"].concat()
}

/// A 403, 404 or 200 keeps the connection; a malformed request (400)
/// closes it.
fn close_if_bad(st: &[u16]) -> After {
    if st == [400] {
        After::Close
    } else {
        After::KeepAlive
    }
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
    const OK: &[u16] = &[200];
    let mut v = Vec::new();
    let mut t = |id, what, target: &[u8], st: &'static [u16]| {
        let raw = get(target);
        let a = Attack::new(id, Traversal, what, &raw, vec![st], close_if_bad(st));
        v.push(a);
    };
    t("dotdot", "plain ../", b"/../secret.txt", &[403]);
    t(
        "dotdot-deep",
        "../ after a real directory",
        b"/docs/../../secret.txt",
        &[403],
    );
    t(
        "dotdot-pct",
        "%2e%2e (percent-encoded dots)",
        b"/%2e%2e/secret.txt",
        &[403],
    );
    t(
        "dotdot-pct-upper",
        "%2E%2E%2F (upper-case, encoded slash)",
        b"/%2E%2E%2Fsecret.txt",
        &[403],
    );
    t(
        "dotdot-mixed",
        ".%2e (half encoded)",
        b"/.%2e/secret.txt",
        &[403],
    );
    t(
        "dotdot-slash-pct",
        "..%2f (encoded slash after the dots)",
        b"/..%2fsecret.txt",
        &[403],
    );
    t(
        "double-encoded",
        "%252e%252e: decoded once it is the literal name %2e%2e",
        b"/%252e%252e/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-dot",
        "%c0%ae: overlong UTF-8 for '.', not a dot",
        b"/%c0%ae%c0%ae/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-dot-3",
        "%e0%80%ae: three-byte overlong '.'",
        b"/%e0%80%ae%e0%80%ae/secret.txt",
        &[404],
    );
    t(
        "overlong-utf8-slash",
        "..%c0%af: overlong UTF-8 for '/'",
        b"/..%c0%afsecret.txt",
        &[404],
    );
    t(
        "iis-u-encoding",
        "%u002e: IIS-style encoding is not HTTP",
        b"/%u002e%u002e/secret.txt",
        BAD,
    );
    t(
        "backslash-raw",
        "..\\ (a Windows separator, raw: not a character of a URI, RFC 3986 §2)",
        b"/..\\secret.txt",
        BAD,
    );
    t(
        "backslash-pct",
        "..%5c (a Windows separator, encoded: a byte of a name on Linux)",
        b"/..%5csecret.txt",
        &[404],
    );
    t(
        "nul-pct",
        "%00 truncation (secret.txt%00.html)",
        b"/secret.txt%00.html",
        BAD,
    );
    t(
        "absolute-form",
        "absolute URI whose path climbs",
        b"http://evil/../secret.txt",
        &[403],
    );
    t(
        "dot-segments",
        "/./.././ mixture",
        b"/./.././secret.txt",
        &[403],
    );
    t(
        "double-slash",
        "//../ (empty segment first)",
        b"//../secret.txt",
        &[403],
    );
    t(
        "three-dots",
        "... is a name, not a step up",
        b"/.../secret.txt",
        &[404],
    );
    t(
        "symlink-absolute",
        "symlink to an absolute path outside",
        b"/abs-link.txt",
        OUT,
    );
    t(
        "symlink-relative",
        "symlink to ../secret.txt",
        b"/rel-link.txt",
        OUT,
    );
    t(
        "symlink-dir-up",
        "through a symlink to ..",
        b"/up/secret.txt",
        OUT,
    );
    t(
        "symlink-inside",
        "a symlink that stays inside is served",
        b"/inside-link.txt",
        &[200],
    );
    t(
        "query-dots",
        "../ in the query string is not a path",
        b"/index.html?../../secret.txt",
        &[200],
    );
    t(
        "dir-no-slash",
        "directory without trailing slash",
        b"/docs",
        &[200, 301],
    );
    t(
        "nul-raw",
        "a raw NUL byte in the target",
        b"/secret.txt\0.html",
        BAD,
    );

    // Limits.
    let mut l = |id, what, raw: &[u8], st: &'static [u16]| {
        v.push(Attack::new(id, Limits, what, raw, vec![st], Close));
    };
    l(
        "long-request-line",
        "request line of 9,000 bytes (beyond the 8 KiB head limit)",
        &get(format!("/{}", "a".repeat(9000)).as_bytes()),
        &[414],
    );
    l(
        "long-header",
        "one header of 9,000 bytes",
        &with_headers(format!("X-Big: {}\r\n", "c".repeat(9000)).as_bytes()),
        &[431],
    );
    let many: String = (0..110).map(|i| format!("X-{i}: y\r\n")).collect();
    l(
        "many-headers",
        "111 header lines (more than 100)",
        &with_headers(many.as_bytes()),
        &[431],
    );
    l(
        "endless-method",
        "a 10,000-byte method with no end of line (a token: one not implemented, not a long URI)",
        &b"G".repeat(10_000),
        &[501],
    );
    l(
        "long-method",
        "a 10,000-byte method, then a target and a version",
        format!("{} / HTTP/1.1\r\nHost: t\r\n\r\n", "M".repeat(10_000)).as_bytes(),
        &[501],
    );
    let pads: String = (0..200)
        .map(|i| format!("X-Pad-{i:03}: {}\r\n", "p".repeat(40)))
        .collect();
    l(
        "endless-headers",
        "headers that never end, 200 small lines, past the head limit",
        format!("GET / HTTP/1.1\r\nHost: t\r\n{pads}").as_bytes(),
        &[431],
    );
    v.push(Attack::new(
        "long-target",
        Limits,
        "target of 8,000 bytes, head within the limit: a missing file",
        &get(format!("/{}", "b".repeat(8000)).as_bytes()),
        vec![&[404]],
        KeepAlive,
    ));

    // Bodies and smuggling shapes.
    let mut s = |id, what, raw: &[u8], st: &'static [u16]| {
        v.push(Attack::new(id, Smuggling, what, raw, vec![st], Close));
    };
    s(
        "cl-te",
        "Content-Length and Transfer-Encoding together",
        &with_headers(b"Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"),
        BAD,
    );
    s(
        "te-cl",
        "Transfer-Encoding then Content-Length",
        &with_headers(b"Transfer-Encoding: chunked\r\nContent-Length: 0\r\n"),
        BAD,
    );
    s(
        "cl-cl-same",
        "Content-Length twice, same value",
        &with_headers(b"Content-Length: 0\r\nContent-Length: 0\r\n"),
        BAD,
    );
    s(
        "cl-cl-differ",
        "Content-Length twice, different values",
        &with_headers(b"Content-Length: 0\r\ncontent-length: 7\r\n"),
        BAD,
    );
    s(
        "cl-list",
        "Content-Length: 0, 5 (a list)",
        &with_headers(b"Content-Length: 0, 5\r\n"),
        BAD,
    );
    s(
        "cl-negative",
        "Content-Length: -1",
        &with_headers(b"Content-Length: -1\r\n"),
        BAD,
    );
    s(
        "cl-plus",
        "Content-Length: +0 (sign)",
        &with_headers(b"Content-Length: +0\r\n"),
        BAD,
    );
    s(
        "cl-hex",
        "Content-Length: 0x10",
        &with_headers(b"Content-Length: 0x10\r\n"),
        BAD,
    );
    s(
        "cl-huge",
        "Content-Length beyond 64 bits",
        &with_headers(b"Content-Length: 99999999999999999999999\r\n"),
        BAD,
    );
    s(
        "cl-big",
        "Content-Length of 10^18 (a body never sent)",
        &with_headers(b"Content-Length: 1000000000000000000\r\n"),
        &[413],
    );
    s(
        "te-chunked-bare-lf",
        "a chunked body with a bare LF after the size (a smuggling shape)",
        b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
        BAD,
    );
    let chunked = |size_line: &str| {
        format!(
            "GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
             {size_line}\r\nhello\r\n0\r\n\r\nGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n"
        )
        .into_bytes()
    };
    s(
        "chunk-size-space",
        "whitespace after a chunk's size, no extension (RFC 9112 §7.1.1 has none there)",
        &chunked("5 "),
        BAD,
    );
    s(
        "chunk-ext-bare-semicolon",
        "a chunk extension that is a bare ';' (no name)",
        &chunked("5;"),
        BAD,
    );
    s(
        "chunk-ext-not-token",
        "a chunk extension name that is not a token (5;a@b)",
        &chunked("5;a@b"),
        BAD,
    );
    s(
        "chunk-ext-trailing-space",
        "whitespace after a chunk extension's value, before the CRLF",
        &chunked("5;a=b "),
        BAD,
    );
    s(
        "chunk-ext-no-value",
        "a chunk extension with '=' and no value",
        &chunked("5;a="),
        BAD,
    );
    s(
        "te-obfuscated",
        "Transfer-Encoding: xchunked (a final coding other than chunked)",
        &with_headers(b"Transfer-Encoding: xchunked\r\n"),
        BAD,
    );
    s(
        "te-gzip",
        "Transfer-Encoding: gzip (the body's length unknown)",
        &with_headers(b"Transfer-Encoding: gzip\r\n"),
        BAD,
    );
    s(
        "te-chunked-gzip",
        "Transfer-Encoding: chunked, gzip (chunked not last)",
        &with_headers(b"Transfer-Encoding: chunked, gzip\r\n"),
        BAD,
    );
    s(
        "te-space-before-colon",
        "Transfer-Encoding : chunked (space before the colon)",
        &with_headers(b"Transfer-Encoding : chunked\r\n"),
        BAD,
    );
    s(
        "te-te-empty",
        "Transfer-Encoding: chunked, then an empty Transfer-Encoding line (no body for a \
         parser that takes the last line)",
        &[
            &with_headers(b"Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n")[..],
            b"0\r\n\r\n",
        ]
        .concat(),
        BAD,
    );
    s(
        "te-http10",
        "HTTP/1.0 keep-alive with Transfer-Encoding: chunked, a request in the chunk, then another: \
         only the 400 comes back (RFC 9112 §6.1)",
        b"GET / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n\
          1f\r\nGET /six.txt HTTP/1.0\r\nX: y\r\n\r\n\r\n0\r\n\r\n\
          GET /six.txt HTTP/1.0\r\n\r\n",
        BAD,
    );
    s(
        "smuggled-after-refusal",
        "CL+TE request followed by a second request: only the 400 comes back",
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\nGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
    );

    let body = |id, what, raw: &[u8], st: &'static [u16]| {
        Attack::new(id, Smuggling, what, raw, vec![st; 2], KeepAlive)
    };
    v.push(body(
        "te-chunked",
        "a chunked body on a GET, then a request: read and discarded, both answered",
        b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5;e=1\r\nhello\r\n0\r\nX: y\r\n\r\nGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        OK,
    ));
    v.push(body(
        "chunk-ext-bws",
        "chunk extensions with whitespace where the grammar has BWS, a quoted value: \
         read and discarded, both answered",
        &chunked("5 ; a = \"q \\\" x\" ;b"),
        OK,
    ));
    v.push(body(
        "cl-body",
        "GET with Content-Length: 5 and a body, then a request: both answered",
        b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhelloGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        OK,
    ));
    let mut long = b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 300\r\n\r\n".to_vec();
    long.resize(long.len() + 300, b'b');
    long.extend_from_slice(&get(b"/six.txt"));
    v.push(body(
        "cl-body-300",
        "GET with a 300-byte body (beyond a small head limit), then a request: both answered",
        &long,
        OK,
    ));

    // Pipelining.
    let index = get(b"/index.html");
    let six = get(b"/six.txt");
    let mut pipe = |id, what, raw: &[u8], responses, after, mode| {
        let a = Attack::new(id, Pipelining, what, raw, responses, after);
        v.push(Attack { mode, ..a });
    };
    pipe(
        "pipeline-flood",
        "2,000 requests in one write, answered in order",
        &index.repeat(FLOOD),
        vec![OK; FLOOD],
        KeepAlive,
        Mode::Normal,
    );
    let bad = b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx";
    pipe(
        "pipeline-then-bad",
        "20 good requests, a smuggling shape, then one more: 20×200, 400, close",
        &[&six.repeat(20)[..], bad, &index].concat(),
        [vec![OK; 20], vec![BAD]].concat(),
        Close,
        Mode::Normal,
    );
    pipe(
        "pipeline-never-read",
        "50,000 requests for 6 KiB, responses never read: dropped at the idle timeout",
        &six.repeat(50_000),
        Vec::new(),
        Close,
        Mode::NoRead,
    );
    pipe(
        "half-close",
        "one request then the client's FIN: answered, then closed",
        &index,
        vec![OK],
        Close,
        Mode::HalfClose,
    );
    pipe(
        "half-close-partial",
        "half a request then the client's FIN",
        b"GET /index.html HTTP/1.1\r\nHo",
        Vec::new(),
        Close,
        Mode::HalfClose,
    );

    // Encoding.
    let mut e = |id, what, raw: &[u8], st: &'static [u16]| {
        let a = Attack::new(id, Encoding, what, raw, vec![st], close_if_bad(st));
        v.push(a);
    };
    e(
        "utf8-invalid-raw",
        "raw bytes 0xff 0xfe in the target (not URI characters)",
        &get(b"/\xff\xfe.html"),
        BAD,
    );
    e(
        "utf8-valid-raw",
        "valid UTF-8, raw in the target (must be percent-encoded: RFC 3986 §2)",
        &get("/caf\u{e9}.html".as_bytes()),
        BAD,
    );
    e(
        "utf8-raw-query",
        "raw non-ASCII bytes in the query",
        &get("/index.html?q=\u{20ac}".as_bytes()),
        BAD,
    );
    e(
        "uri-excluded-raw",
        "ASCII bytes no URI has (|, {, }, ^, `, <, >, \"), raw in the target",
        &get(b"/a|b{c}^`<>\".html"),
        BAD,
    );
    e(
        "utf8-invalid-pct",
        "%ff%fe in the target",
        &get(b"/%ff%fe.html"),
        &[404],
    );
    e(
        "utf8-valid-pct",
        "valid UTF-8, encoded (a missing file)",
        &get(b"/%e2%82%ac.html"),
        &[404],
    );
    e(
        "bad-pct",
        "a truncated escape %4",
        &get(b"/index.html%4"),
        BAD,
    );
    e(
        "nul-header",
        "a NUL byte in a header value",
        b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\0b\r\n\r\n",
        BAD,
    );
    e(
        "nul-first",
        "a NUL byte before the method",
        b"\0GET / HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
    );
    e(
        "ctl-header-name",
        "a control character in a header name",
        b"GET / HTTP/1.1\r\nHost: t\r\nX\x01A: b\r\n\r\n",
        BAD,
    );
    e(
        "utf8-header-value",
        "invalid UTF-8 in a header value (opaque bytes: allowed)",
        b"GET / HTTP/1.1\r\nHost: t\r\nX-A: \xc3\x28\xff\r\n\r\n",
        &[200],
    );
    e(
        "bare-lf",
        "lines ended by LF alone",
        b"GET / HTTP/1.1\nHost: t\n\n",
        &[200, 400],
    );
    e(
        "obs-fold",
        "a folded header line (obs-fold, refused as RFC 9112 allows)",
        b"GET / HTTP/1.1\r\nHost: t\r\nX-A: a\r\n b\r\n\r\n",
        BAD,
    );
    e(
        "header-no-colon",
        "a header line without a colon",
        b"GET / HTTP/1.1\r\nHost: t\r\nNoColonHere\r\n\r\n",
        BAD,
    );

    // Protocol.
    let close = |id, what, raw: &[u8], st| Attack::new(id, Protocol, what, raw, vec![st], Close);
    let keep = |id, what, raw: &[u8], st| Attack::new(id, Protocol, what, raw, vec![st], KeepAlive);
    v.push(keep(
        "post",
        "POST is not served (its end is known: the connection goes on)",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n",
        &[405],
    ));
    v.push(Attack::new(
        "post-body",
        Protocol,
        "POST with a body, then a GET: 405, the body skipped, 200",
        b"POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nGET GET / HTTP/1.1\r\nHost: t\r\n\r\n",
        vec![&[405], OK],
        KeepAlive,
    ));
    v.push(keep(
        "options-star",
        "OPTIONS * (the server's methods: 200 with Allow)",
        b"OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n",
        OK,
    ));
    v.push(keep(
        "options-path",
        "OPTIONS of a file (200 with Allow)",
        b"OPTIONS /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        OK,
    ));
    v.push(keep(
        "options-missing",
        "OPTIONS of a path that does not exist",
        b"OPTIONS /nope.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        &[404],
    ));
    v.push(keep(
        "unknown-method",
        "an unknown method",
        b"BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n",
        &[501],
    ));
    v.push(keep(
        "lowercase-method",
        "get in lower case (methods are case-sensitive: an unknown one)",
        b"get / HTTP/1.1\r\nHost: t\r\n\r\n",
        &[501],
    ));
    v.push(close(
        "http2-version",
        "HTTP/2.0 on the request line",
        b"GET / HTTP/2.0\r\nHost: t\r\n\r\n",
        &[505],
    ));
    v.push(close(
        "version-no-minor",
        "HTTP/1 on the request line (no dot and minor digit: not a version)",
        b"GET / HTTP/1\r\nHost: t\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "http09",
        "an HTTP/0.9 request (no version)",
        b"GET /\r\n\r\n",
        &[400],
    ));
    v.push(close(
        "bad-version",
        "a version that is not HTTP",
        b"GET / FOO/1.1\r\nHost: t\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "no-host",
        "HTTP/1.1 without Host",
        b"GET / HTTP/1.1\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "host-empty",
        "an empty Host value on HTTP/1.1 (RFC 9110 §4.2.1, §7.2)",
        b"GET / HTTP/1.1\r\nHost:\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "host-empty-http10",
        "an empty Host value on HTTP/1.0 (present, so it must be valid)",
        b"GET / HTTP/1.0\r\nHost: \r\nConnection: keep-alive\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "two-hosts",
        "two Host headers",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "extra-spaces",
        "two spaces between method and target (refused as RFC 9112 allows)",
        b"GET  / HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
    ));
    v.push(close(
        "asterisk",
        "GET * (asterisk-form)",
        b"GET * HTTP/1.1\r\nHost: t\r\n\r\n",
        BAD,
    ));
    v.push(keep(
        "leading-crlf",
        "empty lines before the request line",
        b"\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n",
        &[200, 400],
    ));
    v.push(close(
        "http10-close",
        "HTTP/1.0 without keep-alive: answered, then closed",
        b"GET / HTTP/1.0\r\n\r\n",
        &[200],
    ));
    v.push(close(
        "connection-close",
        "Connection: close is honoured",
        b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
        &[200],
    ));
    v.push(keep(
        "ims-garbage",
        "an unparsable If-Modified-Since",
        b"GET / HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: yesterday-ish\r\n\r\n",
        &[200],
    ));
    v.push(keep(
        "expect-continue",
        "Expect: 100-continue on a GET",
        b"GET / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\n\r\n",
        &[200, 417],
    ));
    v.push(close(
        "tls-hello",
        "a TLS ClientHello on the plain port",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
        BAD,
    ));
    let head = keep(
        "head",
        "HEAD: headers only",
        b"HEAD /six.txt HTTP/1.1\r\nHost: t\r\n\r\n",
        OK,
    );
    v.push(Attack { head: true, ..head });
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
