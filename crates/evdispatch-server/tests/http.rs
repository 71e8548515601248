//! Protocol behaviour, checked on every model: each library mechanism (the
//! table is iterated, so new mechanisms join by themselves) plus `threads`
//! and `uring-completion`. Servers run in-process on port 0.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::*;
use evdispatch_server::{Model, Status};

#[test]
fn get_head_dirs_and_conditional() {
    let site = site();
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        let mut c = Client::connect(addr);

        let r = c.get("/six.txt");
        assert_eq!(r.status, 200, "{model}");
        assert_eq!(r.body, site.small, "{model}");
        assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
        assert_eq!(r.header("content-length"), Some("6144"));
        assert!(
            r.header("date").is_some_and(|d| d.ends_with(" GMT")),
            "{model}"
        );
        let lm = r
            .header("last-modified")
            .expect("Last-Modified")
            .to_string();

        let r = c.get("/");
        assert_eq!(
            (r.status, &r.body[..]),
            (200, &b"<h1>home</h1>\n"[..]),
            "{model}"
        );
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        let r = c.get("/docs/");
        assert_eq!(r.body, b"<p>docs</p>\n", "{model}");
        let r = c.get("/docs");
        assert_eq!(
            (r.status, r.header("location")),
            (301, Some("/docs/")),
            "{model}: a directory without its slash"
        );
        assert_eq!(
            c.get("/empty/").status,
            403,
            "{model}: a directory without index.html (nginx: 403)"
        );
        assert_eq!(c.get("/nope.html").status, 404, "{model}");
        assert_eq!(c.get("/six.txt/x").status, 404, "{model}");
        let r = c.get("/inside-link.txt");
        assert_eq!(
            (r.status, r.body.len()),
            (200, 6144),
            "{model}: a symlink inside the root"
        );

        // Large file: sendfile (or chunks on the completion model).
        let r = c.get("/large.bin");
        assert_eq!(r.status, 200, "{model}");
        assert!(r.body == site.large, "{model}: large body differs");

        // HEAD: the headers of GET, no body; the connection stays usable.
        c.send(b"HEAD /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        let r = c.response(true).unwrap();
        assert_eq!(
            (r.status, r.header("content-length")),
            (200, Some("6144")),
            "{model}"
        );
        assert_eq!(c.get("/six.txt").body.len(), 6144, "{model}: after HEAD");

        // If-Modified-Since: 304 when not newer, 200 when older.
        c.send(
            format!("GET /six.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: {lm}\r\n\r\n")
                .as_bytes(),
        );
        let r = c.response(false).unwrap();
        assert_eq!((r.status, r.body.len()), (304, 0), "{model}");
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 200, "{model}");
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nIf-Modified-Since: garbage\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 200, "{model}");
        drop(c);

        let report = server.stop().unwrap();
        let t = report.totals();
        assert_eq!(t.requests[Status::NotModified.index()], 1, "{model}");
        assert!(t.requests[Status::Ok.index()] >= 8, "{model}");
        assert_eq!(t.accepted, 1, "{model}");
        let json = report.to_json();
        assert_eq!(json["mechanism"], model.name());
        assert_eq!(json["requests"]["by_status"]["304"], 1);
    }
}

#[test]
fn keep_alive_pipelining_and_connection_header() {
    let site = site();
    // Readiness models run twice: with the eager first read and without.
    let runs = Model::all().into_iter().flat_map(|m| {
        let both = matches!(m, Model::Readiness(_));
        [(m, true)].into_iter().chain(both.then_some((m, false)))
    });
    for (model, eager) in runs {
        let Some(server) = start(model, &site.root, |c| c.eager_read = eager) else {
            continue;
        };
        let addr = server.local_addr();

        // Twenty pipelined requests in one write, one of them a HEAD and one
        // a 404, answered in order.
        let mut c = Client::connect(addr);
        let mut raw = Vec::new();
        for i in 0..20 {
            let path = match i {
                7 => "/missing",
                _ if i % 2 == 0 => "/six.txt",
                _ => "/",
            };
            let method = if i == 11 { "HEAD" } else { "GET" };
            raw.extend_from_slice(
                format!("{method} {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            );
        }
        c.send(&raw);
        for i in 0..20 {
            let r = c.response(i == 11).unwrap();
            match i {
                7 => assert_eq!(r.status, 404, "{model} #{i}"),
                _ if i % 2 == 0 => assert_eq!(r.body, site.small, "{model} #{i}"),
                11 => assert_eq!((r.status, r.body.len()), (200, 0), "{model} #{i}"),
                _ => assert_eq!(r.body, b"<h1>home</h1>\n", "{model} #{i}"),
            }
        }
        // Still open after the pipeline.
        assert_eq!(c.get("/").status, 200, "{model}");

        // A request split across many writes.
        let mut c2 = Client::connect(addr);
        for piece in [
            "GE",
            "T /six",
            ".txt HTT",
            "P/1.1\r\nHo",
            "st: t\r\n",
            "\r\n",
        ] {
            c2.send(piece.as_bytes());
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(c2.response(false).unwrap().body.len(), 6144, "{model}");

        // Connection: close is honoured.
        let mut c3 = Client::connect(addr);
        c3.send(b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        let r = c3.response(false).unwrap();
        assert_eq!(r.header("connection"), Some("close"), "{model}");
        assert!(c3.closed(), "{model}: not closed after Connection: close");

        // HTTP/1.0: closes by default, stays with keep-alive.
        let mut c4 = Client::connect(addr);
        c4.send(b"GET / HTTP/1.0\r\n\r\n");
        assert_eq!(c4.response(false).unwrap().status, 200);
        assert!(
            c4.closed(),
            "{model}: HTTP/1.0 without keep-alive stays open"
        );
        let mut c5 = Client::connect(addr);
        c5.send(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        let r = c5.response(false).unwrap();
        assert_eq!(r.header("connection"), Some("keep-alive"), "{model}");
        c5.send(b"GET /six.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        assert_eq!(c5.response(false).unwrap().body.len(), 6144, "{model}");

        // A client that half-closes after its request still gets the answer.
        let mut c6 = Client::connect(addr);
        c6.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n");
        c6.s.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(c6.response(false).unwrap().body.len(), 6144, "{model}");
        assert_eq!(c6.response(false).unwrap().status, 200, "{model}");
        assert!(c6.closed(), "{model}");

        drop((c, c2, c3, c4, c5, c6));
        let t = server.stop().unwrap().totals();
        assert_eq!(t.requests[Status::NotFound.index()], 1, "{model}");
        assert_eq!(t.accepted, 6, "{model}");
    }
}

/// Read one whole response (head and `Content-Length` body) from `s`, then
/// return what a non-blocking read finds right after it.
fn read_response_then_peek(s: &mut std::net::TcpStream) -> (Vec<u8>, std::io::Result<usize>) {
    use std::io::Read;
    let mut got = Vec::new();
    let mut tmp = [0u8; 65536];
    loop {
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut hs);
        if let httparse::Status::Complete(n) = r.parse(&got).expect("a valid response") {
            let len: usize = r
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .map_or(0, |h| {
                    std::str::from_utf8(h.value).unwrap().parse().unwrap()
                });
            if got.len() >= n + len {
                break;
            }
        }
        let k = s.read(&mut tmp).expect("reading the response");
        assert!(k > 0, "closed inside the response");
        got.extend_from_slice(&tmp[..k]);
    }
    s.set_nonblocking(true).unwrap();
    let after = s.read(&mut tmp);
    (got, after)
}

/// A connection closed after its response sends its FIN in the response's
/// last segment (`MSG_MORE`, then the close attaches the FIN): the client
/// finds EOF the moment it has read the last byte, never `EAGAIN` first.
/// Checked for a `Connection: close` request and for a refused one (400,
/// which half-closes and lingers).
#[test]
fn fin_rides_on_the_last_response() {
    let site = site();
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        for (raw, status) in [
            (
                &b"GET /six.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"[..],
                &b"HTTP/1.1 200"[..],
            ),
            (&b"GET / HTTP/1.0\r\n\r\n"[..], &b"HTTP/1.1 200"[..]),
            (&b"BLAH\r\n\r\n"[..], &b"HTTP/1.1 400"[..]),
        ] {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            s.write_all(raw).unwrap();
            let (got, after) = read_response_then_peek(&mut s);
            assert!(
                got.starts_with(status),
                "{model}: {:?}",
                String::from_utf8_lossy(&got[..40])
            );
            match after {
                Ok(0) => {}
                other => panic!(
                    "{model}: {}: after the last byte of the response, {other:?} instead of EOF: \
                     the FIN came in a segment of its own",
                    String::from_utf8_lossy(&raw[..raw.len().min(16)])
                ),
            }
        }
    }
}

#[test]
fn traversal_shapes_never_escape_the_root() {
    let site = site();
    let shapes = [
        "/../secret.txt",
        "/..%2fsecret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/.%2e/secret.txt",
        "/docs/../../secret.txt",
        "/docs/%2e%2e/%2e%2e/secret.txt",
        "/%252e%252e/secret.txt",
        "/%c0%ae%c0%ae/secret.txt",
        "/..%5csecret.txt",
        "/..\\secret.txt",
        "/secret.txt%00.html",
        "/abs-link.txt",
        "/rel-link.txt",
        "/up/secret.txt",
        "/up/www/six.txt",
        "http://evil/../secret.txt",
        "/./.././secret.txt",
        "//../secret.txt",
    ];
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        for shape in shapes {
            let r = once(
                addr,
                format!("GET {shape} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            );
            assert!(
                matches!(r.status, 400 | 403 | 404),
                "{model}: {shape} answered {}",
                r.status
            );
            assert!(
                !String::from_utf8_lossy(&r.body).contains("secret"),
                "{model}: {shape} leaked the secret"
            );
        }
        // Raw bytes httparse refuses on its own (a NUL in the target).
        let r = once(addr, b"GET /secret.txt\0 HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.status, 400, "{model}");
        server.stop().unwrap();
    }
}

#[test]
fn dot_segments_inside_the_root_are_resolved() {
    // RFC 3986 §5.2.4 (remove_dot_segments), as nginx and darkhttpd do: a
    // `..` that stays inside the root names the file it leads to.
    let site = site();
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        for (target, body) in [
            ("/docs/../six.txt", &site.small[..]),
            ("/docs/%2e%2e/six.txt", &site.small[..]),
            ("/docs/nowhere/../index.html", &b"<p>docs</p>\n"[..]),
            ("/docs/x/..", &b"<p>docs</p>\n"[..]),
            ("http://t/docs/../index.html", &b"<h1>home</h1>\n"[..]),
        ] {
            let r = once(
                addr,
                format!("GET {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes(),
            );
            assert_eq!((r.status, &r.body[..]), (200, body), "{model}: {target}");
        }
        // The authority of an absolute-form target ends at `?` (RFC 3986
        // §3.2): this names `/`, not `/six.txt`.
        let r = once(addr, b"GET http://t?x=/six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            (r.status, &r.body[..]),
            (200, &b"<h1>home</h1>\n"[..]),
            "{model}"
        );
        server.stop().unwrap();
    }
}

#[test]
fn later_http1_minor_versions_are_served_as_1_1() {
    // RFC 9110 §2.5 (and nginx): HTTP/1.2 is answered as 1.1; HTTP/2.0 in
    // an HTTP/1 request line is a version this server does not speak.
    let site = site();
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(
            b"GET /six.txt HTTP/1.2\r\nHost: t\r\n\r\nGET /index.html HTTP/1.1\r\nHost: t\r\n\r\n",
        );
        let r = c.response(false).expect("a response");
        assert_eq!((r.status, &r.body[..]), (200, &site.small[..]), "{model}");
        let r = c.response(false).expect("the pipelined response");
        assert_eq!(r.status, 200, "{model}: keep-alive as 1.1");
        let r = once(server.local_addr(), b"GET / HTTP/2.0\r\nHost: t\r\n\r\n");
        assert_eq!(r.status, 505, "{model}");
        server.stop().unwrap();
    }
}

#[test]
fn refused_head_requests_get_no_body() {
    // RFC 9110 §9.3.2: no content in a response to HEAD, errors included.
    let site = site();
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        for (raw, status) in [
            (&b"HEAD / HTTP/1.1\r\n\r\n"[..], 400),
            (&b"HEAD /../secret.txt HTTP/1.1\r\nHost: t\r\n\r\n"[..], 403),
            (
                &b"HEAD / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\n"[..],
                413,
            ),
        ] {
            let mut c = Client::connect(server.local_addr());
            c.send(raw);
            let r = c.response(true).expect("a response");
            assert_eq!(r.status, status, "{model}");
            assert!(r.header("content-length").is_some(), "{model}");
            if status != 403 {
                // Refused by the parser: the connection closes after the head.
                assert!(
                    c.closed(),
                    "{model}: bytes after the head of a {status} to HEAD"
                );
            }
        }
        server.stop().unwrap();
    }
}

#[test]
fn protocol_errors() {
    let site = site();
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"GET / HTTP/2.0\r\nHost: t\r\n\r\n".to_vec(), 505),
        (b"GET / HTTP/1.1\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nContent-Length: 5\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n".to_vec(), 400),
        // A final coding other than chunked: 400 (RFC 9112 §6.3 item 4).
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked, identity\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 1048577\r\n\r\nhello".to_vec(), 413),
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n".to_vec(), 400),
        (format!("GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "b".repeat(9000)).into_bytes(), 431),
        (format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "u".repeat(9000)).into_bytes(), 414),
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03".to_vec(), 400),
        // An empty Host, on either version (RFC 9110 §4.2.1, §7.2).
        (b"GET / HTTP/1.1\r\nHost:\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.0\r\nHost: \r\n\r\n".to_vec(), 400),
        // Bytes that are not a URI's, raw in the target (RFC 3986 §2).
        ("GET /caf\u{e9}.html HTTP/1.1\r\nHost: t\r\n\r\n".into(), 400),
        (b"GET /a|b HTTP/1.1\r\nHost: t\r\n\r\n".to_vec(), 400),
        // Chunk-size lines the grammar does not have (RFC 9112 §7.1.1).
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;\r\nabc\r\n0\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;a@b\r\nabc\r\n0\r\n\r\n".to_vec(), 400),
        (b"GET / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;a=b \r\nabc\r\n0\r\n\r\n".to_vec(), 400),
        // A method longer than the head: one not implemented, not a URI.
        (format!("{} / HTTP/1.1\r\nHost: t\r\n\r\n", "M".repeat(9000)).into_bytes(), 501),
    ];
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        for (raw, want) in &cases {
            let mut c = Client::connect(addr);
            c.send(raw);
            let r = c
                .response(false)
                .unwrap_or_else(|| panic!("{model}: no answer to {want}"));
            assert_eq!(
                r.status,
                *want,
                "{model}: {:?}",
                String::from_utf8_lossy(&raw[..raw.len().min(60)])
            );
            assert_eq!(r.header("connection"), Some("close"), "{model}: {want}");
            assert!(c.closed(), "{model}: still open after {want}");
        }
        // A valid request smuggled after a refused one is never answered.
        let mut c = Client::connect(addr);
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nTransfer-Encoding: chunked\r\n\r\nGET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 400);
        assert!(c.closed(), "{model}: answered a smuggled request");
        server.stop().unwrap();
    }
}

#[test]
fn bodies_of_get_and_head_are_read_and_discarded() {
    // As nginx: a body on GET or HEAD is skipped and the connection goes
    // on (RFC 9112 §6: it is framed, so its end is known).
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |_| {}) else {
            return;
        };
        let addr = server.local_addr();
        let index = std::fs::read(site.root.join("index.html")).unwrap();
        let mut c = Client::connect(addr);
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc\
                 GET /index.html HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n\
                 3;x=y\r\nabc\r\n0\r\nTrailer: t\r\n\r\n\
                 HEAD /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi\
                 GET /index.html HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx");
        let r = c.response(false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, 6144), "{model}");
        assert_eq!(
            (c.response(false).unwrap().body),
            index,
            "{model}: after a chunked body"
        );
        let r = c.response(true).unwrap();
        assert_eq!(
            (r.status, r.header("content-length")),
            (200, Some("6144")),
            "{model}"
        );
        assert_eq!(c.response(false).unwrap().body, index, "{model}");
        // A body that comes in pieces is waited for.
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 6\r\n\r\nab");
        std::thread::sleep(Duration::from_millis(50));
        c.send(b"cd");
        std::thread::sleep(Duration::from_millis(50));
        c.send(b"efGET / HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).unwrap().body.len(), 6144, "{model}");
        assert_eq!(c.response(false).unwrap().body, index, "{model}");
        assert_eq!(c.get("/six.txt").status, 200, "{model}: kept open");

        // The client waits for 100 Continue (curl -H 'Expect: 100-continue'
        // --data-binary @file -X GET): the final answer at once, then the
        // close, since the body will not be read.
        let mut c = Client::connect(addr);
        let t0 = Instant::now();
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5000\r\n\r\n");
        let r = c.response(false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, 6144), "{model}");
        assert_eq!(r.header("connection"), Some("close"), "{model}");
        assert!(
            t0.elapsed() < Duration::from_millis(500),
            "{model}: {:?}",
            t0.elapsed()
        );
        assert!(c.closed(), "{model}");

        // Larger than the read buffer: answered, closed, the body drained.
        let mut c = Client::connect(addr);
        let mut raw =
            b"GET /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n".to_vec();
        raw.resize(raw.len() + 100_000, b'b');
        c.send(&raw);
        let r = c.response(false).unwrap();
        assert_eq!((r.status, r.body.len()), (200, 6144), "{model}");
        assert_eq!(r.header("connection"), Some("close"), "{model}");
        assert!(c.closed(), "{model}");
        server.stop().unwrap();
    });
}

#[test]
fn a_whole_body_past_the_head_limit_is_not_read_on_any_model() {
    // Head and body past --max-header, all sent at once: the io_uring
    // model's input grows and held it all, and skipped it where the others
    // could not; now every model answers without reading it, and closes.
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |c| c.max_header = 256) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        let mut raw = b"GET /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 300\r\n\r\n".to_vec();
        raw.resize(raw.len() + 300, b'b');
        raw.extend_from_slice(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        c.send(&raw);
        let r = c.response(false).unwrap();
        assert_eq!(r.status, 200, "{model}");
        assert_eq!(r.header("connection"), Some("close"), "{model}");
        assert!(c.closed(), "{model}");
        server.stop().unwrap();
    });
}

#[test]
fn refused_methods_keep_the_connection() {
    // 405 and 501 refuse the method, not the framing: as nginx, the
    // connection goes on, a body of the refused request skipped; when the
    // framing is unknown, it closes.
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |_| {}) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(
            b"POST /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 8\r\n\r\nGET /x\r\n\
              PUT * HTTP/1.1\r\nHost: t\r\n\r\n\
              DELETE /six.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n\
              BREW /pot HTTP/1.1\r\nHost: t\r\n\r\n",
        );
        for want in [405, 405, 405, 501] {
            let r = c.response(false).unwrap();
            assert_eq!(r.status, want, "{model}");
            assert_eq!(r.header("connection"), None, "{model}: {want}");
            let allow = (want == 405).then_some("GET, HEAD, OPTIONS");
            assert_eq!(r.header("allow"), allow, "{model}: {want}");
        }
        assert_eq!(c.get("/six.txt").body.len(), 6144, "{model}");
        // HTTP/1.0 closes as it would after a 200.
        let mut c = Client::connect(server.local_addr());
        c.send(b"PUT / HTTP/1.0\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 405, "{model}");
        assert!(c.closed(), "{model}");
        // The framing unknown: closed.
        let mut c = Client::connect(server.local_addr());
        c.send(b"POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 400, "{model}");
        assert!(c.closed(), "{model}");
        server.stop().unwrap();
    });
}

#[test]
fn options_answers_the_methods_allowed() {
    // RFC 9110 §9.3.7: 200, Allow, Content-Length: 0, for the server
    // (`*`) and for a path a GET would find; a missing path is 404. The
    // connection goes on; HEAD and GET of `*` are not served (400).
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |_| {}) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        for (target, want) in [
            ("*", 200),
            ("/six.txt", 200),
            ("/docs/", 200),
            ("/docs", 200),
            ("/", 200),
            ("/six.txt?x=1", 200),
            ("/nope.txt", 404),
            ("/../secret.txt", 403),
        ] {
            c.send(format!("OPTIONS {target} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
            let r = c.response(false).unwrap();
            assert_eq!(r.status, want, "{model} {target}");
            assert_eq!(r.header("connection"), None, "{model} {target}");
            if want == 200 {
                assert_eq!(r.header("allow"), Some("GET, HEAD, OPTIONS"), "{model}");
                assert_eq!(r.header("content-length"), Some("0"), "{model}");
                assert!(r.body.is_empty(), "{model}");
            }
        }
        // A directory without an index, not listed: refused as a GET is.
        c.send(b"OPTIONS /empty/ HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 403, "{model}");
        assert_eq!(c.get("/six.txt").body.len(), 6144, "{model}");
        // HTTP/1.0: answered, then closed.
        let mut c = Client::connect(server.local_addr());
        c.send(b"OPTIONS * HTTP/1.0\r\n\r\n");
        let r = c.response(false).unwrap();
        assert_eq!(
            (r.status, r.header("allow")),
            (200, Some("GET, HEAD, OPTIONS")),
            "{model}"
        );
        assert!(c.closed(), "{model}");
        let mut c = Client::connect(server.local_addr());
        c.send(b"GET * HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(c.response(false).unwrap().status, 400, "{model}");
        assert!(c.closed(), "{model}");
        server.stop().unwrap();
    });
}

#[test]
fn fixed_limits_of_the_head() {
    // The target and the header count have limits of their own, beyond
    // --max-header's: MAX_TARGET bytes and MAX_HEADERS lines are served.
    use evdispatch_server::{MAX_HEADERS, MAX_TARGET};
    let site = site();
    let lines = |n: usize| -> Vec<u8> {
        let extra: String = (1..n).map(|i| format!("X-Trace-{i}: {i}\r\n")).collect();
        format!("GET /six.txt HTTP/1.1\r\nHost: t\r\n{extra}\r\n").into_bytes()
    };
    let target = |n: usize| format!("GET /{} HTTP/1.1\r\nHost: t\r\n\r\n", "t".repeat(n - 1));
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |c| c.max_header = 16384) else {
            continue;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(&lines(MAX_HEADERS));
        assert_eq!(c.response(false).unwrap().status, 200, "{model}");
        c.send(target(MAX_TARGET).as_bytes());
        assert_eq!(c.response(false).unwrap().status, 404, "{model}");
        for (raw, want) in [
            (lines(MAX_HEADERS + 1), 431),
            (target(MAX_TARGET + 1).into_bytes(), 414),
        ] {
            let mut c = Client::connect(server.local_addr());
            c.send(&raw);
            assert_eq!(c.response(false).unwrap().status, want, "{model}");
            assert!(c.closed(), "{model}: open after {want}");
        }
        server.stop().unwrap();
    }
}

#[test]
fn header_and_idle_timeouts() {
    let site = site();
    let header = Duration::from_millis(300);
    let idle = Duration::from_millis(500);
    // The models wait in parallel: the waiting is the test.
    std::thread::scope(|scope| {
        for model in Model::all() {
            let site = &site;
            scope.spawn(move || timeouts_on(model, site, header, idle));
        }
    });
}

fn timeouts_on(model: Model, site: &Site, header: Duration, idle: Duration) {
    {
        let Some(server) = start(model, &site.root, |c| {
            c.header_timeout = header;
            c.idle_timeout = idle;
        }) else {
            return;
        };
        let addr = server.local_addr();
        let t0 = Instant::now();
        // Part of a request, then silence: 408 and close.
        let mut slow = Client::connect(addr);
        slow.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n");
        // Nothing at all: closed.
        let mut silent = Client::connect(addr);
        // A finished request, then idle: closed after the idle timeout.
        let mut idler = Client::connect(addr);
        assert_eq!(idler.get("/").status, 200);
        let t_idle = Instant::now();
        // Trickle: a byte every 100 ms never completes the head in time.
        let mut trickle = Client::connect(addr);

        let mut trickle_closed = None;
        for b in b"GET / HTTP/1.1\r\nHost: t\r\nX: 0123456789\r\n\r\n" {
            if trickle.s.write_all(&[*b]).is_err() {
                trickle_closed = Some(t0.elapsed());
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }

        let r = slow.response(false).expect("a 408 before the close");
        assert_eq!(r.status, 408, "{model}");
        assert!(slow.closed(), "{model}");
        assert!(t0.elapsed() >= header, "{model}: header timeout early");
        assert!(silent.closed(), "{model}: silent connection never closed");
        assert!(t0.elapsed() >= header);
        assert!(idler.closed(), "{model}: idle connection never closed");
        assert!(t_idle.elapsed() >= idle, "{model}: idle timeout early");
        assert!(
            trickle_closed.is_some() || trickle.response(false).is_some_and(|r| r.status == 408),
            "{model}: a trickled request outlived the header timeout"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(8),
            "{model}: timeouts far too late"
        );
        let t = server.stop().unwrap().totals();
        assert!(t.header_timed_out >= 3, "{model}: {t:?}");
        assert!(t.idle_timed_out >= 1, "{model}: {t:?}");
    }
}

#[test]
fn the_header_timeout_is_a_deadline_and_the_408_is_dated_now() {
    // A client that sends a byte now and then does not restart the header
    // timeout (threads re-armed it at every read: up to twice as long),
    // and the 408 says when it was sent (threads dated it at the last
    // read). Long enough that a stale Date shows at whole seconds.
    let header = Duration::from_millis(2500);
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |c| c.header_timeout = header) else {
            return;
        };
        let t0 = Instant::now();
        let mut trickle = Client::connect(server.local_addr());
        trickle.send(b"GET /six.txt HTTP/1.1\r\n");
        let mut silent = Client::connect(server.local_addr());
        silent.send(b"GET /six.txt HTTP/1.1\r\n");
        // A whole head, its body waited for under the same timeout.
        let mut body = Client::connect(server.local_addr());
        body.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nab");
        std::thread::sleep(Duration::from_millis(2000));
        trickle.send(b"H");
        let r = silent.response(false).expect("a 408");
        let now = std::time::SystemTime::now();
        assert_eq!(r.status, 408, "{model}");
        let date = httpdate::parse_http_date(r.header("date").unwrap()).unwrap();
        let lag = now.duration_since(date).unwrap_or_default();
        assert!(
            lag < Duration::from_secs(2),
            "{model}: a 408 dated {lag:?} ago"
        );
        // The page does not blame the headers: they had all come.
        let r = body.response(false).expect("a 408");
        assert_eq!(
            (r.status, String::from_utf8_lossy(&r.body).as_ref()),
            (408, "408 request not received in time\n"),
            "{model}"
        );
        let r = trickle.response(false).expect("a 408");
        assert_eq!(r.status, 408, "{model}");
        let took = t0.elapsed();
        assert!(
            took < header + Duration::from_millis(700),
            "{model}: 408 after {took:?}"
        );
        server.stop().unwrap();
    });
}

#[test]
fn a_pipelined_head_is_timed_from_the_end_of_the_answer_before_it() {
    // The first bytes of a second request arrive with the first; the
    // answer to the first takes longer than --header-timeout to send (a
    // client that does not read for a while, a small receive buffer, a
    // file larger than the socket buffers). The rest of the second head,
    // sent once the answer is read, is answered: its header clock starts
    // when the answer before it is written (threads counted it from the
    // first request's first byte: a 408 at once).
    let site = site();
    let big: Vec<u8> = (0..16u32 << 20).map(|i| (i % 253) as u8).collect();
    std::fs::write(site.root.join("big.bin"), &big).unwrap();
    let header = Duration::from_secs(1);
    let models = Model::all()
        .into_iter()
        .filter(|m| matches!(m, Model::Threads | Model::UringCompletion) || m.name() == "epoll");
    std::thread::scope(|scope| {
        for model in models {
            let (site, big) = (&site, &big);
            scope.spawn(move || {
                let Some(server) = start(model, &site.root, |c| {
                    c.header_timeout = header;
                    c.idle_timeout = Duration::from_secs(10);
                }) else {
                    return;
                };
                let mut c = Client::connect(server.local_addr());
                socket2::SockRef::from(&c.s)
                    .set_recv_buffer_size(16 << 10)
                    .unwrap();
                c.send(b"GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /six.txt HTTP/1.1\r\n");
                // Not reading: the answer is still being sent after more
                // than the header timeout.
                std::thread::sleep(header * 5 / 2);
                let r = c.response(false).unwrap();
                assert!(r.status == 200 && r.body == *big, "{model}: the large file");
                c.send(b"Host: t\r\n\r\n");
                let r = c.response(false).unwrap();
                assert_eq!(
                    (r.status, r.body == site.small),
                    (200, true),
                    "{model}: the pipelined request"
                );
                server.stop().unwrap();
            });
        }
    });
}

#[test]
fn cache_revalidates_by_mtime() {
    let site = site();
    std::thread::scope(|scope| {
        for model in Model::all() {
            let site = &site;
            scope.spawn(move || revalidation_on(model, site));
        }
    });
}

fn revalidation_on(model: Model, site: &Site) {
    let name = format!("changing-{}.txt", model.name());
    let url = format!("/{name}");
    let path = site.root.join(&name);
    {
        std::fs::write(&path, "version one\n").unwrap();
        let Some(server) = start(model, &site.root, |_| {}) else {
            return;
        };
        let addr = server.local_addr();
        let mut c = Client::connect(addr);
        assert_eq!(c.get(&url).body, b"version one\n");
        assert_eq!(c.get(&url).body, b"version one\n");
        // A new version with a later mtime (seconds resolution is enough:
        // the stamp includes nanoseconds and size).
        std::fs::write(&path, "version two, longer\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let body = c.get(&url).body;
            if body == b"version two, longer\n" {
                break;
            }
            assert_eq!(body, b"version one\n", "{model}: neither version");
            assert!(Instant::now() < deadline, "{model}: change never seen");
            std::thread::sleep(Duration::from_millis(100));
        }
        std::fs::remove_file(&path).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while c.get(&url).status != 404 {
            assert!(Instant::now() < deadline, "{model}: removal never seen");
            std::thread::sleep(Duration::from_millis(100));
        }
        let json = server.stop().unwrap().to_json();
        assert!(
            json["cache"]["hits"].as_u64().unwrap() >= 1,
            "{model}: {}",
            json["cache"]
        );
    }
}
