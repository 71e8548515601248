//! The differential test against nginx: the same tree served
//! by nginx (started by the harness with an equivalent configuration) and by
//! our server, a corpus of requests sent to both over loopback, and the
//! answers compared on what matters: the status, `Content-Range`,
//! `Content-Length` of file bodies, `Content-Encoding`, `Vary`, the path of
//! `Location`, `ETag` (equal for identity answers: both build it as
//! `"mtime-size"` in hex; present for encoded ones), `Last-Modified`,
//! `Accept-Ranges`, and the bytes of every file body (whole, range or
//! variant).
//!
//! Each deliberate difference is listed in [`DELIBERATE`] with the RFC clause
//! that allows it; a difference not listed fails the test, and so does a
//! listed one that no longer happens (the list stays true). Skips, saying
//! why, when nginx is not installed.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use common::*;
use evdispatch_harness::{start_peer, Peer, PeerConfig};
use evdispatch_server::{Model, Server, ServerConfig};

/// nginx directives that make it behave as our defaults plus `--listing`:
/// precompressed `.gz` beside files (`gzip_static`, with `Vary`), strong
/// ETags, `If-Modified-Since` as RFC 9110 §13.1.3 reads it (`before`; nginx's
/// default is an exact match), at most 16 ranges (our `MAX_RANGES`),
/// `charset=utf-8` on text types (so that multipart part headers match),
/// listings, dotfiles hidden with 404 except `.well-known`, and the media
/// types of the corpus' files.
const NGINX_EXTRA: &str = r#"
        gzip_static on;
        gzip_vary on;
        etag on;
        charset utf-8;
        if_modified_since before;
        max_ranges 16;
        autoindex on;
        types { text/html html; text/plain txt; application/javascript js; text/css css; }
        location ~ /\.(?!well-known/) { return 404; }
"#;

/// `(request name, field, why)`: the differences we keep on purpose. When
/// the statuses differ only the status is compared (the other fields follow
/// from it).
const DELIBERATE: &[(&str, &str, &str)] = &[
    (
        "range-overlapping",
        "content-range",
        "RFC 9110 §14.2: a server MAY coalesce overlapping ranges; we answer one \
         range where nginx sends multipart/byteranges",
    ),
    (
        "range-overlapping",
        "content-length",
        "the same request: one coalesced range against nginx's multipart body",
    ),
    (
        "range-overlapping",
        "body",
        "the same request: the bytes of one coalesced range against nginx's multipart body",
    ),
    (
        "range-malformed-junk",
        "status",
        "RFC 9110 §14.2: a server MAY ignore or reject an invalid ranges-specifier; \
         we ignore it (200, as for any header we cannot use), nginx rejects it (416)",
    ),
    (
        "range-from-empty-file",
        "status",
        "RFC 9110 §14.1.1, §15.5.17: bytes=0- of an empty file starts at or past \
         its end, unsatisfiable: 416 here; nginx ignores every range of an empty \
         file (200)",
    ),
    (
        "te-not-chunked",
        "status",
        "RFC 9112 §6.3 item 4: a Transfer-Encoding whose final coding is not chunked \
         MUST be answered 400 (and closed); nginx answers 501 (§6.1's SHOULD for a \
         coding not understood)",
    ),
    (
        "ius-junk",
        "status",
        "RFC 9110 §13.1.4: a recipient MUST ignore an If-Unmodified-Since that is \
         not a valid HTTP-date; we do (200), nginx fails the condition (412)",
    ),
    (
        "im-match-ius-older",
        "status",
        "RFC 9110 §13.2.2 step 2: If-Unmodified-Since is evaluated only when \
         If-Match is absent; the tag matches, so 200 here, nginx tests both (412)",
    ),
    (
        "gz-range",
        "status",
        "RFC 9110 §14.1, §8.4: ranges apply to the selected representation, the \
         encoded one here; nginx's gzip_static serves no ranges of it (200)",
    ),
    (
        "gz-accepted",
        "accept-ranges",
        "RFC 9110 §14.3: we take ranges of the encoded representation and say so; \
         nginx's gzip_static does not",
    ),
    (
        "gz-list",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3)",
    ),
    (
        "gz-q-half",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3)",
    ),
    (
        "gz-head",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3)",
    ),
    (
        "dir-index-gz",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3): the directory's index.html.gz",
    ),
    (
        "dir-index-gz-head",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3)",
    ),
    (
        "dir-index-gz-direct",
        "accept-ranges",
        "as gz-accepted (RFC 9110 §14.3)",
    ),
    (
        "dir-encoded-no-slash",
        "location",
        "RFC 3986 §6.2.2.2: %64 and d are the same URI; we keep the client's \
         spelling, nginx sends its decoded path",
    ),
    (
        "traversal-encoded",
        "status",
        "RFC 9110 §15.5.4/§15.5.1: both refuse a path climbing out of the root; \
         we answer 403 (refused), nginx 400 (malformed)",
    ),
    (
        "options-file",
        "status",
        "RFC 9110 §9.3.7: OPTIONS of a file is answered 200 with Allow here; \
         nginx's static module answers 405",
    ),
    (
        "chunk-size-space",
        "status",
        "RFC 9112 §7.1.1: no whitespace between a chunk's size and its CRLF \
         without an extension (400 and close here); nginx skips to the line's end",
    ),
    (
        "target-raw-utf8",
        "status",
        "RFC 3986 §2, RFC 9112 §3.2: a raw non-ASCII byte is not a character of \
         a URI, an invalid request line (400 here); nginx takes it (404)",
    ),
];

struct Case {
    name: &'static str,
    method: &'static str,
    target: &'static str,
    headers: Vec<(&'static str, String)>,
    /// Sent after the head (framed by `headers`).
    body: &'static [u8],
}

fn case(
    name: &'static str,
    method: &'static str,
    target: &'static str,
    headers: &[(&'static str, &str)],
) -> Case {
    Case {
        name,
        method,
        target,
        headers: headers.iter().map(|(k, v)| (*k, v.to_string())).collect(),
        body: b"",
    }
}

/// The corpus; `etag` and `lm` are the validators of `/six.txt`.
fn corpus(etag: &str, lm: &str) -> Vec<Case> {
    let weak = format!("W/{etag}");
    let list = format!("\"x\", {etag}");
    vec![
        case("plain", "GET", "/six.txt", &[]),
        case("head", "HEAD", "/six.txt", &[]),
        case("large", "GET", "/large.bin", &[]),
        case("index", "GET", "/", &[]),
        case("range-first", "GET", "/six.txt", &[("Range", "bytes=0-4")]),
        case("range-open", "GET", "/six.txt", &[("Range", "bytes=6000-")]),
        case(
            "range-suffix",
            "GET",
            "/six.txt",
            &[("Range", "bytes=-100")],
        ),
        case(
            "range-past-end",
            "GET",
            "/six.txt",
            &[("Range", "bytes=100-99999")],
        ),
        case(
            "range-large",
            "GET",
            "/large.bin",
            &[("Range", "bytes=65536-131071")],
        ),
        case(
            "range-head",
            "HEAD",
            "/large.bin",
            &[("Range", "bytes=-10")],
        ),
        case(
            "range-two-disjoint",
            "GET",
            "/six.txt",
            &[("Range", "bytes=0-1,10-20")],
        ),
        case(
            "range-two-disjoint-head",
            "HEAD",
            "/six.txt",
            &[("Range", "bytes=0-1,10-20")],
        ),
        case(
            "range-reordered",
            "GET",
            "/six.txt",
            &[("Range", "bytes=100-199,-10,0-0")],
        ),
        case(
            "range-large-multipart",
            "GET",
            "/large.bin",
            &[("Range", "bytes=65536-131071,0-99,-1000")],
        ),
        case(
            "range-sixteen",
            "GET",
            "/six.txt",
            &[("Range", &many_ranges(16))],
        ),
        case(
            "range-overlapping",
            "GET",
            "/six.txt",
            &[("Range", "bytes=0-5,3-8")],
        ),
        case(
            "range-unsatisfiable",
            "GET",
            "/six.txt",
            &[("Range", "bytes=7000-8000")],
        ),
        case(
            "range-unsatisfiable-head",
            "HEAD",
            "/six.txt",
            &[("Range", "bytes=7000-")],
        ),
        case(
            "range-malformed-unit",
            "GET",
            "/six.txt",
            &[("Range", "items=0-4")],
        ),
        case(
            "range-malformed-junk",
            "GET",
            "/six.txt",
            &[("Range", "bytes=a-b")],
        ),
        case(
            "range-many",
            "GET",
            "/six.txt",
            &[("Range", &many_ranges(17))],
        ),
        case("range-dir", "GET", "/docs/", &[("Range", "bytes=0-1")]),
        case(
            "range-suffix-empty-file",
            "GET",
            "/zero.txt",
            &[("Range", "bytes=-1")],
        ),
        case(
            "range-from-empty-file",
            "GET",
            "/zero.txt",
            &[("Range", "bytes=0-")],
        ),
        case("inm-match", "GET", "/six.txt", &[("If-None-Match", etag)]),
        case(
            "inm-nomatch",
            "GET",
            "/six.txt",
            &[("If-None-Match", "\"nope\"")],
        ),
        case("inm-list", "GET", "/six.txt", &[("If-None-Match", &list)]),
        case("inm-star", "GET", "/six.txt", &[("If-None-Match", "*")]),
        case("inm-weak", "GET", "/six.txt", &[("If-None-Match", &weak)]),
        case(
            "inm-garbage",
            "GET",
            "/six.txt",
            &[("If-None-Match", "garbage,,")],
        ),
        case("inm-head", "HEAD", "/six.txt", &[("If-None-Match", etag)]),
        case("ims-equal", "GET", "/six.txt", &[("If-Modified-Since", lm)]),
        case(
            "ims-old",
            "GET",
            "/six.txt",
            &[("If-Modified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")],
        ),
        case(
            "inm-before-ims",
            "GET",
            "/six.txt",
            &[("If-None-Match", "\"nope\""), ("If-Modified-Since", lm)],
        ),
        case(
            "inm-with-range",
            "GET",
            "/six.txt",
            &[("If-None-Match", etag), ("Range", "bytes=0-1")],
        ),
        case(
            "if-range-etag",
            "GET",
            "/six.txt",
            &[("If-Range", etag), ("Range", "bytes=0-1")],
        ),
        case(
            "if-range-etag-other",
            "GET",
            "/six.txt",
            &[("If-Range", "\"other\""), ("Range", "bytes=0-1")],
        ),
        case(
            "if-range-weak",
            "GET",
            "/six.txt",
            &[("If-Range", &weak), ("Range", "bytes=0-1")],
        ),
        case(
            "if-range-date",
            "GET",
            "/six.txt",
            &[("If-Range", lm), ("Range", "bytes=0-1")],
        ),
        case(
            "if-range-date-other",
            "GET",
            "/six.txt",
            &[
                ("If-Range", "Sun, 06 Nov 1994 08:49:37 GMT"),
                ("Range", "bytes=0-1"),
            ],
        ),
        case("im-match", "GET", "/six.txt", &[("If-Match", etag)]),
        case("im-star", "GET", "/six.txt", &[("If-Match", "*")]),
        case("im-list", "GET", "/six.txt", &[("If-Match", &list)]),
        case("im-weak", "GET", "/six.txt", &[("If-Match", &weak)]),
        case("im-nope", "GET", "/six.txt", &[("If-Match", "\"nope\"")]),
        case("im-head", "HEAD", "/six.txt", &[("If-Match", "\"nope\"")]),
        case(
            "im-before-inm",
            "GET",
            "/six.txt",
            &[("If-Match", "\"nope\""), ("If-None-Match", etag)],
        ),
        case(
            "im-range",
            "GET",
            "/six.txt",
            &[("If-Match", etag), ("Range", "bytes=0-1")],
        ),
        case(
            "im-variant",
            "GET",
            "/app.js",
            &[("If-Match", etag), ("Accept-Encoding", "gzip")],
        ),
        case(
            "ius-equal",
            "GET",
            "/six.txt",
            &[("If-Unmodified-Since", lm)],
        ),
        case(
            "ius-older",
            "GET",
            "/six.txt",
            &[("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")],
        ),
        case(
            "ius-older-head",
            "HEAD",
            "/six.txt",
            &[("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")],
        ),
        case(
            "ius-junk",
            "GET",
            "/six.txt",
            &[("If-Unmodified-Since", "garbage")],
        ),
        case(
            "im-match-ius-older",
            "GET",
            "/six.txt",
            &[
                ("If-Match", etag),
                ("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT"),
            ],
        ),
        case("gz-none", "GET", "/app.js", &[]),
        case(
            "gz-accepted",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "gzip")],
        ),
        case(
            "gz-list",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "deflate, gzip")],
        ),
        case(
            "gz-q0",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "gzip;q=0")],
        ),
        case(
            "gz-q-half",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "gzip;q=0.5")],
        ),
        case(
            "gz-q-junk",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "gzip;q=junk")],
        ),
        case(
            "gz-other",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "deflate")],
        ),
        case(
            "gz-range",
            "GET",
            "/app.js",
            &[("Accept-Encoding", "gzip"), ("Range", "bytes=2-5")],
        ),
        case("gz-head", "HEAD", "/app.js", &[("Accept-Encoding", "gzip")]),
        case(
            "gz-no-variant",
            "GET",
            "/six.txt",
            &[("Accept-Encoding", "gzip")],
        ),
        case("dotfile", "GET", "/.env", &[]),
        case("dotfile-encoded", "GET", "/%2eenv", &[]),
        case("dotdir", "GET", "/.git/config", &[]),
        case("well-known", "GET", "/.well-known/security.txt", &[]),
        case("traversal-encoded", "GET", "/%2e%2e/secret.txt", &[]),
        case("dotdot-inside", "GET", "/docs/../six.txt", &[]),
        case("dotdot-inside-encoded", "GET", "/docs/%2e%2e/six.txt", &[]),
        case("double-slash", "GET", "//six.txt", &[]),
        case("dir-no-slash", "GET", "/docs", &[]),
        case("dir-no-slash-query", "GET", "/docs?a=1&b=%20", &[]),
        case("dir-encoded-no-slash", "GET", "/%64ocs", &[]),
        case("dir-head-no-slash", "HEAD", "/docs", &[]),
        case("dir-index", "GET", "/docs/", &[]),
        case("dir-listing", "GET", "/list/", &[]),
        case(
            "dir-listing-if-match",
            "GET",
            "/list/",
            &[("If-Match", "\"nope\"")],
        ),
        case(
            "dir-listing-if-match-star",
            "GET",
            "/list/",
            &[("If-Match", "*")],
        ),
        case(
            "dir-listing-inm-star",
            "GET",
            "/list/",
            &[("If-None-Match", "*")],
        ),
        case(
            "dir-listing-inm",
            "GET",
            "/list/",
            &[("If-None-Match", "\"nope\"")],
        ),
        case(
            "dir-index-gz",
            "GET",
            "/docs/",
            &[("Accept-Encoding", "gzip")],
        ),
        case(
            "dir-index-gz-head",
            "HEAD",
            "/docs/",
            &[("Accept-Encoding", "gzip")],
        ),
        case(
            "dir-index-gz-direct",
            "GET",
            "/docs/index.html",
            &[("Accept-Encoding", "gzip")],
        ),
        case(
            "dir-index-gz-refused",
            "GET",
            "/docs/",
            &[("Accept-Encoding", "gzip;q=0")],
        ),
        case("missing", "GET", "/nope.txt", &[]),
        case("backslash-name", "GET", "/list/b%5Cs.txt", &[]),
        case("backslash-missing", "GET", "/a%5cb", &[]),
        case("file-as-dir", "GET", "/six.txt/", &[]),
        Case {
            body: b"abc",
            ..case("body-length", "GET", "/six.txt", &[("Content-Length", "3")])
        },
        Case {
            body: b"3;e=1\r\nabc\r\n0\r\nT: t\r\n\r\n",
            ..case(
                "body-chunked",
                "GET",
                "/six.txt",
                &[("Transfer-Encoding", "chunked")],
            )
        },
        Case {
            body: b"abc",
            ..case("body-head", "HEAD", "/six.txt", &[("Content-Length", "3")])
        },
        case(
            "te-not-chunked",
            "GET",
            "/six.txt",
            &[("Transfer-Encoding", "gzip, chunked, identity")],
        ),
        Case {
            body: b"3 \r\nabc\r\n0\r\n\r\n",
            ..case(
                "chunk-size-space",
                "GET",
                "/six.txt",
                &[("Transfer-Encoding", "chunked")],
            )
        },
        case("options-file", "OPTIONS", "/six.txt", &[]),
        case("target-raw-utf8", "GET", "/caf\u{e9}.txt", &[]),
    ]
}

fn many_ranges(n: usize) -> String {
    let r: Vec<String> = (0..n).map(|i| format!("{}-{}", i * 10, i * 10)).collect();
    format!("bytes={}", r.join(","))
}

/// The fields compared, from one answer.
fn fields(r: &Resp, method: &str) -> BTreeMap<&'static str, String> {
    let mut f = BTreeMap::new();
    let h = |n: &str| r.header(n).map(str::to_string);
    let file_body = matches!(r.status, 200 | 206) && r.header("etag").is_some();
    f.insert("status", r.status.to_string());
    let some = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    f.insert("content-range", some(h("content-range")));
    if file_body || method == "HEAD" && r.status == 206 {
        f.insert("content-length", some(h("content-length")));
    }
    f.insert("content-encoding", some(h("content-encoding")));
    f.insert("vary", some(h("vary")));
    // The path (and query) of Location: nginx sends an absolute URI.
    let loc = h("location").map(|l| match l.split_once("://") {
        Some((_, rest)) => rest[rest.find('/').unwrap_or(rest.len())..].to_string(),
        None => l,
    });
    f.insert("location", some(loc));
    let etag = h("etag");
    let encoded = r.header("content-encoding").is_some();
    f.insert(
        "etag",
        match etag {
            Some(_) if encoded => "present".into(),
            e => some(e),
        },
    );
    f.insert(
        "last-modified",
        some(h("last-modified").map(|_| "present".into())),
    );
    if r.status == 200 && file_body {
        f.insert("accept-ranges", some(h("accept-ranges")));
    }
    if file_body && method == "GET" {
        // The bytes themselves (FNV-1a of the body): the same range of the
        // same file. A multipart body with its boundary (random on both
        // sides, of the same length) spelled as dashes.
        let mut body = r.body.clone();
        if let Some(b) = boundary(r) {
            let b = b.as_bytes();
            for at in 0..body.len().saturating_sub(b.len() - 1) {
                if body[at..at + b.len()] == *b {
                    body[at..at + b.len()].fill(b'-');
                }
            }
        }
        let digest = body.iter().fold(0xcbf29ce484222325u64, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
        });
        f.insert("body", format!("{} bytes, fnv {digest:016x}", body.len()));
    }
    f
}

fn send(addr: SocketAddr, c: &Case) -> Resp {
    let mut raw = format!("{} {} HTTP/1.1\r\nHost: localhost\r\n", c.method, c.target);
    for (k, v) in &c.headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str("Connection: close\r\n\r\n");
    once(addr, &[raw.as_bytes(), c.body].concat())
}

#[test]
fn agrees_with_nginx_where_it_matters() {
    let site = site();
    let r = &site.root;
    std::fs::write(r.join("app.js"), "console.log('identity');\n").unwrap();
    std::fs::write(r.join("app.js.gz"), b"\x1f\x8bGZ-BYTES-OF-app.js").unwrap();
    std::fs::write(r.join(".env"), "SECRET=1\n").unwrap();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::write(r.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(r.join(".well-known")).unwrap();
    std::fs::write(r.join(".well-known/security.txt"), "Contact: x\n").unwrap();
    std::fs::write(
        r.join("docs/index.html.gz"),
        b"\x1f\x8bGZ-BYTES-OF-docs-index",
    )
    .unwrap();
    std::fs::create_dir_all(r.join("list")).unwrap();
    std::fs::write(r.join("list/a.txt"), "a").unwrap();
    std::fs::write(r.join("zero.txt"), "").unwrap();
    std::fs::write(r.join("list/b\\s.txt"), "backslash").unwrap();

    let mut peer = PeerConfig::new(&site.root);
    peer.nginx_server_extra = NGINX_EXTRA.into();
    let nginx = match start_peer(Peer::Nginx, &peer) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("skipping the differential test: {e:#}");
            return;
        }
    };
    let mut cfg = ServerConfig::new(&site.root, Model::Readiness(evdispatch::Mechanism::Epoll));
    cfg.site.listing = true;
    let ours = Server::start(cfg).expect("our server starts");

    let first = send(ours.local_addr(), &case("probe", "GET", "/six.txt", &[]));
    let etag = first.header("etag").expect("an ETag").to_string();
    let lm = first.header("last-modified").unwrap().to_string();
    let mut unexpected = Vec::new();
    let mut seen = Vec::new();
    for c in corpus(&etag, &lm) {
        let a = fields(&send(ours.local_addr(), &c), c.method);
        let b = fields(&send(nginx.addr(), &c), c.method);
        let only_status = a["status"] != b["status"];
        for (field, ours_v) in &a {
            let Some(theirs) = b.get(field) else {
                continue; // compared for one status only
            };
            if ours_v == theirs || (only_status && *field != "status") {
                continue;
            }
            let line = format!(
                "{} ({} {}): {field}: ours {ours_v:?}, nginx {theirs:?}",
                c.name, c.method, c.target
            );
            if DELIBERATE
                .iter()
                .any(|(n, f, _)| *n == c.name && f == field)
            {
                eprintln!("deliberate: {line}");
                seen.push((c.name, *field));
            } else {
                unexpected.push(line);
            }
        }
    }
    let stale: Vec<String> = DELIBERATE
        .iter()
        .filter(|(n, f, _)| !seen.contains(&(n, f)))
        .map(|(n, f, why)| format!("{n}: {f} listed as different ({why}) but agrees now"))
        .collect();
    ours.stop().unwrap();
    let _ = nginx.stop();
    assert!(
        unexpected.is_empty() && stale.is_empty(),
        "differences from nginx not listed:\n{}\nlisted differences that no longer happen:\n{}",
        unexpected.join("\n"),
        stale.join("\n")
    );
}
