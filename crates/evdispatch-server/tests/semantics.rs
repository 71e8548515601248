//! HTTP semantics on every model: ranges, validators and
//! preconditions, precompressed variants, dotfiles, directory redirects and
//! listings. Bodies are checked byte for byte, so a range sent from the wrong
//! offset (cache slice, sendfile, or the completion model's chunks) fails.

mod common;

use common::*;
use evdispatch_server::{Dotfiles, Model, ServerConfig, MAX_RANGES};

/// One request on `c` with extra header lines; HEAD reads no body.
fn ask(c: &mut Client, method: &str, path: &str, headers: &[(&str, &str)]) -> Resp {
    let mut raw = format!("{method} {path} HTTP/1.1\r\nHost: t\r\n");
    for (k, v) in headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    c.send(raw.as_bytes());
    c.response(method == "HEAD").expect("a response")
}

/// Run `test` with a client of a server on each model this machine has,
/// serving `site` configured with `tweak`.
fn each_model(site: &Site, tweak: impl Fn(&mut ServerConfig), test: impl Fn(Model, &mut Client)) {
    for model in Model::all() {
        let Some(server) = start(model, &site.root, &tweak) else {
            continue;
        };
        let mut c = Client::connect(server.local_addr());
        test(model, &mut c);
        drop(c);
        server.stop().unwrap();
    }
}

/// The extra files: precompressed variants (small and large, and of two
/// directory indexes), dotfiles, a
/// `.well-known` file and a directory without an index.
fn extend(site: &Site) {
    let r = &site.root;
    std::fs::write(r.join("app.js"), "console.log('identity');\n").unwrap();
    std::fs::write(r.join("app.js.gz"), b"GZ-BYTES-OF-app.js").unwrap();
    std::fs::write(r.join("app.js.br"), b"BR-BYTES").unwrap();
    std::fs::write(r.join("only-gz.css"), "body{}\n").unwrap();
    std::fs::write(r.join("only-gz.css.gz"), b"GZ-CSS").unwrap();
    std::fs::write(r.join("large.bin.gz"), &site.large[..300_000]).unwrap();
    std::fs::write(r.join(".env"), "SECRET=1\n").unwrap();
    std::fs::create_dir_all(r.join(".git")).unwrap();
    std::fs::write(r.join(".git/config"), "[core]\n").unwrap();
    std::fs::create_dir_all(r.join(".well-known")).unwrap();
    std::fs::write(r.join(".well-known/security.txt"), "Contact: x\n").unwrap();
    std::fs::write(r.join("empty/a <b>.txt"), "12345").unwrap();
    std::fs::write(r.join("empty/.hidden"), "h").unwrap();
    std::fs::write(r.join("docs/index.html.gz"), b"GZ-DOCS-INDEX").unwrap();
    std::fs::write(r.join("index.html.br"), b"BR-HOME").unwrap();
}

#[test]
fn ranges_of_cached_and_large_files() {
    let site = site();
    std::fs::write(site.root.join("zero.txt"), "").unwrap();
    each_model(
        &site,
        |_| {},
        |model, c| {
            for (path, body) in [("/six.txt", &site.small), ("/large.bin", &site.large)] {
                let len = body.len();
                let r = ask(c, "GET", path, &[]);
                assert_eq!(r.header("accept-ranges"), Some("bytes"), "{model} {path}");
                for (range, from, to) in [
                    ("bytes=0-4", 0, 5),
                    ("bytes=100-", 100, len),
                    ("bytes=-300", len - 300, len),
                    ("bytes=5000-99999999", 5000, len),
                    ("bytes=10-20,15-30", 10, 31),
                    ("bytes=-1", len - 1, len),
                ] {
                    let r = ask(c, "GET", path, &[("Range", range)]);
                    let what = format!("{model} {path} {range}");
                    assert_eq!(r.status, 206, "{what}");
                    assert_eq!(
                        r.header("content-range"),
                        Some(format!("bytes {from}-{}/{len}", to - 1).as_str()),
                        "{what}"
                    );
                    assert!(r.body == body[from..to], "{what}: wrong bytes");
                    // HEAD: the same headers, no body.
                    let h = ask(c, "HEAD", path, &[("Range", range)]);
                    assert_eq!(h.status, 206, "{what}");
                    assert_eq!(h.header("content-length"), r.header("content-length"));
                    assert_eq!(h.header("content-range"), r.header("content-range"));
                }
                for range in ["bytes=99999999-", "bytes=-0", &format!("bytes={len}-")] {
                    let r = ask(c, "GET", path, &[("Range", range)]);
                    assert_eq!(r.status, 416, "{model} {path} {range}");
                    assert_eq!(
                        r.header("content-range"),
                        Some(format!("bytes */{len}").as_str())
                    );
                    let h = ask(c, "HEAD", path, &[("Range", range)]);
                    assert_eq!(h.status, 416, "{model} {path} HEAD {range}");
                }
                let many: Vec<String> = (0..=MAX_RANGES)
                    .map(|i| format!("{}-{}", i * 10, i * 10))
                    .collect();
                let c_type = |p: &str| match p {
                    "/six.txt" => "text/plain; charset=utf-8",
                    _ => "application/octet-stream",
                };
                // Several disjoint ranges: multipart/byteranges, the parts in
                // the order asked for (overlapping ones coalesced), the exact
                // Content-Length; HEAD the same head.
                let at = |n: usize| n.min(len - 1);
                let (a, b2) = (at(5000), at(200_000));
                for (range, spans) in [
                    ("bytes=0-1,10-20".to_string(), vec![(0, 2), (10, 21)]),
                    ("bytes=-3,0-0".to_string(), vec![(len - 3, len), (0, 1)]),
                    (
                        format!("bytes={b2}-,100-199,{a}-{a},150-300,99999999-"),
                        vec![(b2, len), (100, 301), (a, a + 1)],
                    ),
                    (
                        format!("bytes={}", many[..MAX_RANGES].join(",")),
                        (0..MAX_RANGES).map(|i| (i * 10, i * 10 + 1)).collect(),
                    ),
                ] {
                    let what = format!("{model} {path} {range}");
                    let r = ask(c, "GET", path, &[("Range", &range)]);
                    assert_eq!(r.status, 206, "{what}");
                    assert_eq!(r.header("content-range"), None, "{what}");
                    assert!(r.header("etag").is_some(), "{what}");
                    assert_eq!(
                        r.header("content-length"),
                        Some(r.body.len().to_string().as_str()),
                        "{what}"
                    );
                    let parts = byte_parts(&r);
                    let want: Vec<BytePart> = spans
                        .iter()
                        .map(|&(f, t)| BytePart {
                            content_type: c_type(path).into(),
                            content_range: format!("bytes {f}-{}/{len}", t - 1),
                            bytes: body[f..t].to_vec(),
                        })
                        .collect();
                    assert!(parts == want, "{what}: wrong parts");
                    let h = ask(c, "HEAD", path, &[("Range", &range)]);
                    assert_eq!(h.status, 206, "{what}");
                    assert_eq!(h.header("content-length"), r.header("content-length"));
                    assert!(boundary(&h).is_some(), "{what}");
                }
                // Malformed or too many ranges: the whole file.
                for range in [
                    "bytes=5-1",
                    "bytes=x-y",
                    "items=0-1",
                    &format!("bytes={}", many.join(",")),
                ] {
                    let r = ask(c, "GET", path, &[("Range", range)]);
                    assert_eq!(r.status, 200, "{model} {path} {range}");
                    assert!(r.body == *body, "{model} {path} {range}");
                }
            }
            // An empty file: a suffix range is satisfiable but selects
            // nothing (RFC 9110 §14.1.2), so the whole empty file with 200;
            // any other range is 416.
            for (range, status) in [("bytes=-1", 200), ("bytes=-0", 416), ("bytes=0-", 416)] {
                for method in ["GET", "HEAD"] {
                    let r = ask(c, method, "/zero.txt", &[("Range", range)]);
                    assert_eq!(r.status, status, "{model} {method} {range}");
                    if status == 200 {
                        assert_eq!(r.header("content-length"), Some("0"), "{model}");
                        assert_eq!(r.header("content-range"), None, "{model}");
                    } else {
                        assert_eq!(r.header("content-range"), Some("bytes */0"), "{model}");
                    }
                }
            }
            // The connection stayed usable through all of it.
            assert_eq!(c.get("/six.txt").status, 200, "{model}");
        },
    );
}

#[test]
fn validators_and_preconditions() {
    let site = site();
    each_model(
        &site,
        |_| {},
        |model, c| {
            for path in ["/six.txt", "/large.bin"] {
                let r = ask(c, "GET", path, &[]);
                let etag = r.header("etag").expect("ETag").to_string();
                let lm = r.header("last-modified").unwrap().to_string();
                assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
                // The tag is stable.
                assert_eq!(ask(c, "GET", path, &[]).header("etag"), Some(&etag[..]));
                let weak = format!("W/{etag}");
                let list = format!("\"nope\", {etag}");
                for inm in [&etag[..], "*", &weak, &list] {
                    for method in ["GET", "HEAD"] {
                        let r = ask(c, method, path, &[("If-None-Match", inm)]);
                        assert_eq!(r.status, 304, "{model} {path} {method} {inm}");
                        assert_eq!(r.header("etag"), Some(&etag[..]));
                        assert_eq!(r.header("last-modified"), Some(&lm[..]));
                        assert!(r.body.is_empty() && r.header("content-length").is_none());
                    }
                }
                // A list split over several lines means the same (RFC 9110 §5.3).
                for (headers, status) in [
                    (
                        vec![("If-None-Match", "\"nope\""), ("If-None-Match", &etag[..])],
                        304,
                    ),
                    (vec![("If-Match", "\"nope\""), ("If-Match", &etag[..])], 200),
                    (vec![("If-Match", "\"nope\""), ("If-Match", "\"x\"")], 412),
                ] {
                    let r = ask(c, "GET", path, &headers);
                    assert_eq!(r.status, status, "{model} {path} {headers:?}");
                }
                // If-None-Match takes precedence over If-Modified-Since.
                for inm in ["\"nope\"", "garbage, ,", "W/"] {
                    let r = ask(
                        c,
                        "GET",
                        path,
                        &[("If-None-Match", inm), ("If-Modified-Since", &lm)],
                    );
                    assert_eq!(r.status, 200, "{model} {path} {inm}");
                }
                // Conditionals before ranges: a 304 carries no range.
                let r = ask(
                    c,
                    "GET",
                    path,
                    &[("If-None-Match", &etag), ("Range", "bytes=0-1")],
                );
                assert_eq!(r.status, 304, "{model} {path}");
                assert!(r.header("content-range").is_none());
                // If-Match (strong), else If-Unmodified-Since: 412 when false,
                // before If-None-Match and Range; the connection stays open.
                let old = "Sun, 06 Nov 1994 08:49:37 GMT";
                let later = "Fri, 01 Jan 2100 00:00:00 GMT";
                for (headers, status) in [
                    (vec![("If-Match", &etag[..])], 200),
                    (vec![("If-Match", "*")], 200),
                    (vec![("If-Match", &list[..])], 200),
                    (vec![("If-Match", &weak[..])], 412),
                    (vec![("If-Match", "\"nope\"")], 412),
                    (vec![("If-Match", "garbage")], 412),
                    (vec![("If-Unmodified-Since", &lm[..])], 200),
                    (vec![("If-Unmodified-Since", later)], 200),
                    (vec![("If-Unmodified-Since", old)], 412),
                    (vec![("If-Unmodified-Since", "garbage")], 200),
                    (
                        vec![("If-Match", &etag[..]), ("If-Unmodified-Since", old)],
                        200,
                    ),
                    (
                        vec![("If-Match", "\"nope\""), ("If-None-Match", &etag[..])],
                        412,
                    ),
                    (
                        vec![("If-Match", &etag[..]), ("If-None-Match", &etag[..])],
                        304,
                    ),
                    (
                        vec![("If-Unmodified-Since", old), ("Range", "bytes=0-1")],
                        412,
                    ),
                    (vec![("If-Match", &etag[..]), ("Range", "bytes=0-1")], 206),
                ] {
                    for method in ["GET", "HEAD"] {
                        let r = ask(c, method, path, &headers);
                        assert_eq!(r.status, status, "{model} {path} {method} {headers:?}");
                        if status == 412 {
                            assert!(r.header("content-range").is_none());
                            let len = if method == "GET" { r.body.len() } else { 24 };
                            assert_eq!(
                                r.header("content-length"),
                                Some(len.to_string().as_str()),
                                "{model} {path} {method} {headers:?}"
                            );
                        }
                    }
                }
                // If-Range: a strong match or the exact date applies the range.
                for (if_range, status) in [
                    (&etag[..], 206),
                    (&lm[..], 206),
                    (&weak[..], 200),
                    ("\"other\"", 200),
                    ("Sun, 06 Nov 1994 08:49:37 GMT", 200),
                    ("garbage", 200),
                ] {
                    let r = ask(
                        c,
                        "GET",
                        path,
                        &[("Range", "bytes=1-2"), ("If-Range", if_range)],
                    );
                    assert_eq!(r.status, status, "{model} {path} If-Range {if_range}");
                }
            }
        },
    );
}

#[test]
fn last_modified_is_never_later_than_date() {
    // RFC 9110 §8.8.2.1: a modification time in the future is sent as the
    // message's date, for a cached and a large file alike.
    let site = site();
    let future = std::time::SystemTime::now() + std::time::Duration::from_secs(86_400);
    for name in ["six.txt", "large.bin"] {
        let f = std::fs::File::options()
            .write(true)
            .open(site.root.join(name))
            .unwrap();
        f.set_modified(future).unwrap();
    }
    each_model(
        &site,
        |_| {},
        |model, c| {
            for path in ["/six.txt", "/large.bin"] {
                let r = ask(c, "GET", path, &[]);
                let date = |h: &str| httpdate::parse_http_date(r.header(h).expect(h)).unwrap();
                assert!(
                    date("last-modified") <= date("date"),
                    "{model} {path}: {:?} after {:?}",
                    r.header("last-modified"),
                    r.header("date")
                );
                // The date sent is the one the preconditions compare. (A
                // large file is looked up at each request, so its date moves
                // with the clock until it reaches the file's: only the
                // cached file's stays put from one request to the next.)
                if path != "/six.txt" {
                    continue;
                }
                let lm = r.header("last-modified").unwrap().to_string();
                for (headers, status) in [
                    (vec![("If-Modified-Since", &lm[..])], 304),
                    (vec![("If-Unmodified-Since", &lm[..])], 200),
                    (vec![("Range", "bytes=0-1"), ("If-Range", &lm[..])], 206),
                ] {
                    let r = ask(c, "GET", path, &headers);
                    assert_eq!(r.status, status, "{model} {path} {headers:?}");
                }
            }
        },
    );
}

#[test]
fn precompressed_variants() {
    let site = site();
    extend(&site);
    each_model(
        &site,
        |_| {},
        |model, c| {
            let plain = ask(c, "GET", "/app.js", &[]);
            assert_eq!(plain.body, b"console.log('identity');\n", "{model}");
            assert_eq!(plain.header("vary"), Some("Accept-Encoding"), "{model}");
            assert!(plain.header("content-encoding").is_none());
            let ctype = plain.header("content-type").unwrap().to_string();
            let identity_tag = plain.header("etag").unwrap().to_string();
            for (ae, enc, body) in [
                ("gzip", Some("gzip"), &b"GZ-BYTES-OF-app.js"[..]),
                ("gzip, deflate, br", Some("br"), b"BR-BYTES"),
                ("br;q=0.5, gzip", Some("gzip"), b"GZ-BYTES-OF-app.js"),
                ("br;q=0, gzip;q=0", None, b"console.log('identity');\n"),
                ("gzip;q=junk", None, b"console.log('identity');\n"),
                ("*", Some("br"), b"BR-BYTES"),
                ("deflate", None, b"console.log('identity');\n"),
            ] {
                let r = ask(c, "GET", "/app.js", &[("Accept-Encoding", ae)]);
                assert_eq!(r.status, 200, "{model} {ae}");
                assert_eq!(r.header("content-encoding"), enc, "{model} {ae}");
                assert_eq!(r.body, body, "{model} {ae}");
                assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{model} {ae}");
                assert_eq!(r.header("content-type"), Some(&ctype[..]), "{model} {ae}");
                let tag = r.header("etag").unwrap();
                assert_eq!(tag == identity_tag, enc.is_none(), "{model} {ae}: {tag}");
            }
            // The variant's own validator gives 304, with Vary.
            let gz = ask(c, "GET", "/app.js", &[("Accept-Encoding", "gzip")]);
            let gz_tag = gz.header("etag").unwrap().to_string();
            let r = ask(
                c,
                "GET",
                "/app.js",
                &[("Accept-Encoding", "gzip"), ("If-None-Match", &gz_tag)],
            );
            assert_eq!(r.status, 304, "{model}");
            assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{model}");
            // Ranges apply to the encoded body.
            let r = ask(
                c,
                "GET",
                "/app.js",
                &[("Accept-Encoding", "gzip"), ("Range", "bytes=3-7")],
            );
            assert_eq!(r.status, 206, "{model}");
            assert_eq!(r.body, b"BYTES", "{model}");
            assert_eq!(r.header("content-range"), Some("bytes 3-7/18"), "{model}");
            // Accept-Encoding over two lines is one list.
            let r = ask(
                c,
                "GET",
                "/app.js",
                &[
                    ("Accept-Encoding", "identity;q=0.5"),
                    ("Accept-Encoding", "gzip"),
                ],
            );
            assert_eq!(r.header("content-encoding"), Some("gzip"), "{model}");
            // Only a .gz beside it; br asked first still gets gzip.
            let r = ask(c, "GET", "/only-gz.css", &[("Accept-Encoding", "br, gzip")]);
            assert_eq!(
                (r.header("content-encoding"), &r.body[..]),
                (Some("gzip"), &b"GZ-CSS"[..]),
                "{model}"
            );
            // A large file's variant goes through the large path, ranges too.
            let r = ask(
                c,
                "GET",
                "/large.bin",
                &[("Accept-Encoding", "gzip"), ("Range", "bytes=-1000")],
            );
            assert_eq!(r.status, 206, "{model}");
            assert_eq!(r.header("content-encoding"), Some("gzip"));
            assert!(r.body == site.large[299_000..300_000], "{model}");
            // A directory answers as its index.html, variants included.
            for (dir, index, ae, enc, body) in [
                (
                    "/docs/",
                    "/docs/index.html",
                    "gzip",
                    "gzip",
                    &b"GZ-DOCS-INDEX"[..],
                ),
                ("/", "/index.html", "br, gzip", "br", b"BR-HOME"),
            ] {
                let direct = ask(c, "GET", index, &[("Accept-Encoding", ae)]);
                for method in ["GET", "HEAD"] {
                    let r = ask(c, method, dir, &[("Accept-Encoding", ae)]);
                    let what = format!("{model} {method} {dir} {ae}");
                    assert_eq!(r.status, 200, "{what}");
                    assert_eq!(r.header("content-encoding"), Some(enc), "{what}");
                    assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{what}");
                    assert_eq!(r.header("etag"), direct.header("etag"), "{what}");
                    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
                    assert_eq!(
                        r.header("content-length"),
                        Some(body.len().to_string().as_str())
                    );
                    if method == "GET" {
                        assert_eq!(r.body, body, "{what}");
                    }
                }
                // Without the coding: the identity index, with Vary.
                let r = ask(c, "GET", dir, &[]);
                assert!(r.header("content-encoding").is_none(), "{model} {dir}");
                assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{model} {dir}");
                assert!(r.body.starts_with(b"<"), "{model} {dir}");
            }
            // A file without variants has no Vary.
            assert!(ask(c, "GET", "/six.txt", &[("Accept-Encoding", "gzip")])
                .header("vary")
                .is_none());
        },
    );
}

#[test]
fn dotfiles_redirects_and_listings() {
    let site = site();
    extend(&site);
    each_model(
        &site,
        |_| {},
        |model, c| {
            for p in [
                "/.env",
                "/%2eenv",
                "/.git/config",
                "/.git/",
                "/empty/.hidden",
                "/.well-known/../.env",
            ] {
                let st = c.get(p).status;
                assert!(
                    st == 404 || (st == 403 && p.contains("..")),
                    "{model} {p}: {st}"
                );
            }
            assert_eq!(c.get("/.well-known/security.txt").status, 200, "{model}");
            for (target, location) in [
                ("/docs", "/docs/"),
                ("/docs?x=1&y=%20", "/docs/?x=1&y=%20"),
                ("/%64ocs", "/%64ocs/"),
                ("//docs", "/docs/"),
            ] {
                let r = c.get(target);
                assert_eq!(
                    (r.status, r.header("location")),
                    (301, Some(location)),
                    "{model} {target}"
                );
            }
            assert_eq!(
                c.get("/empty/").status,
                403,
                "{model}: no listing by default"
            );
        },
    );
    each_model(
        &site,
        |cfg| {
            cfg.site.listing = true;
            cfg.site.dotfiles = Dotfiles::Allow;
        },
        |model, c| {
            assert_eq!(c.get("/.env").body, b"SECRET=1\n", "{model}");
            let r = c.get("/empty/");
            assert_eq!(r.status, 200, "{model}");
            assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
            let page = String::from_utf8(r.body).unwrap();
            assert!(
                page.contains("href=\"a%20%3Cb%3E.txt\">a &lt;b&gt;.txt</a>"),
                "{page}"
            );
            assert!(
                page.contains(".hidden"),
                "{model}: dotfiles shown when allowed"
            );
            assert!(page.contains("<title>Index of /empty/</title>"), "{page}");
            // The listing has no validators: no tag matches it, `*` does
            // (RFC 9110 §13.1.1, §13.1.2); dates are ignored.
            for (headers, status) in [
                (vec![("If-Match", "\"nope\"")], 412),
                (vec![("If-Match", "*")], 200),
                (vec![("If-None-Match", "*")], 304),
                (vec![("If-None-Match", "\"nope\"")], 200),
                (vec![("If-Match", "\"nope\""), ("If-None-Match", "*")], 412),
                (
                    vec![("If-Unmodified-Since", "Sun, 06 Nov 1994 08:49:37 GMT")],
                    200,
                ),
                (
                    vec![("If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")],
                    200,
                ),
            ] {
                for method in ["GET", "HEAD"] {
                    let r = ask(c, method, "/empty/", &headers);
                    assert_eq!(r.status, status, "{model} {method} {headers:?}");
                }
            }
            // A directory with an index is still served by it.
            assert_eq!(c.get("/docs/").body, b"<p>docs</p>\n", "{model}");
            // Nothing outside the root, listing or not.
            for p in ["/up/", "/up/secret.txt", "/abs-link.txt", "/rel-link.txt"] {
                let r = c.get(p);
                assert!(matches!(r.status, 403 | 404), "{model} {p}: {}", r.status);
                assert!(!String::from_utf8_lossy(&r.body).contains("secret"));
            }
        },
    );
}

#[test]
fn a_backslash_is_a_byte_of_a_name() {
    // On Linux `\` is no separator: a file may have it in its name, and
    // the listing's link to it (`%5C`) must lead to it (as in nginx).
    let site = site();
    std::fs::create_dir_all(site.root.join("bs")).unwrap();
    std::fs::write(site.root.join("bs/x\\y.txt"), "back\n").unwrap();
    each_model(
        &site,
        |cfg| cfg.site.listing = true,
        |model, c| {
            let page = String::from_utf8(c.get("/bs/").body).unwrap();
            assert!(page.contains("href=\"x%5Cy.txt\""), "{model}: {page}");
            for target in ["/bs/x%5Cy.txt", "/bs/x%5cy.txt"] {
                let r = c.get(target);
                assert_eq!(
                    (r.status, &r.body[..]),
                    (200, &b"back\n"[..]),
                    "{model} {target}"
                );
            }
            for target in ["/bs/..%5Cx", "/a%5cb"] {
                assert_eq!(c.get(target).status, 404, "{model} {target}");
            }
            // Raw, it is not a character of a URI (RFC 3986 §2): 400.
            for target in ["/bs/x\\y.txt", "/..\\six.txt"] {
                let mut fresh = Client::connect(c.s.peer_addr().unwrap());
                assert_eq!(fresh.get(target).status, 400, "{model} {target}");
                assert!(fresh.closed(), "{model} {target}");
            }
        },
    );
}

#[test]
fn head_answers_exactly_the_headers_of_get() {
    let site = site();
    extend(&site);
    each_model(
        &site,
        |cfg| cfg.site.listing = true,
        |model, c| {
            let etag = c.get("/six.txt").header("etag").unwrap().to_string();
            let without_date = |r: &Resp| -> Vec<(String, String)> {
                let mut h: Vec<_> = r
                    .headers
                    .iter()
                    .filter(|(n, _)| !n.eq_ignore_ascii_case("date"))
                    .cloned()
                    .collect();
                h.sort();
                h
            };
            for (path, headers) in [
                ("/six.txt", vec![]),
                ("/large.bin", vec![]),
                ("/six.txt", vec![("Range", "bytes=10-19")]),
                ("/large.bin", vec![("Range", "bytes=-5")]),
                ("/six.txt", vec![("Range", "bytes=9999-")]),
                ("/six.txt", vec![("If-None-Match", etag.as_str())]),
                ("/app.js", vec![("Accept-Encoding", "br")]),
                ("/app.js", vec![]),
                ("/docs?q", vec![]),
                ("/empty/", vec![]),
                ("/.env", vec![]),
                ("/nope", vec![]),
            ] {
                let get = ask(c, "GET", path, &headers);
                let head = ask(c, "HEAD", path, &headers);
                assert_eq!(get.status, head.status, "{model} {path} {headers:?}");
                assert_eq!(
                    without_date(&get),
                    without_date(&head),
                    "{model} {path} {headers:?}"
                );
                assert!(head.body.is_empty());
            }
        },
    );
}

#[test]
fn slow_and_stalled_readers_of_large_files() {
    let site = site();
    // Larger than loopback's socket buffers at both ends can hold (up to
    // 6 MiB received and 4 MiB sent by default), so the sender must wait.
    let huge: Vec<u8> = (0..24u32 << 20).map(|i| (i % 253) as u8).collect();
    std::fs::write(site.root.join("huge.bin"), &huge).unwrap();
    // The models run in parallel: most of the time is the waiting.
    std::thread::scope(|scope| {
        for model in Model::all() {
            let (site, huge) = (&site, &huge);
            scope.spawn(move || slow_readers_on(model, site, huge));
        }
    });
}

/// A reader slower than the server (the socket fills: sendfile stops short
/// and the send resumes on writability) gets every byte of pipelined whole
/// and ranged large files in order; one that stops reading is closed by the
/// idle (write) timeout, and the server still stops cleanly.
fn slow_readers_on(model: Model, site: &Site, huge: &[u8]) {
    use std::io::Read;
    use std::time::Duration;
    let Some(server) = start(model, &site.root, |_| {}) else {
        return;
    };
    let mut c = Client::connect(server.local_addr());
    c.send(
        b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n\
          GET /huge.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=123456-20654320\r\n\r\n\
          GET /six.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=-10\r\n\r\n",
    );
    // Let the socket buffers fill before reading anything.
    std::thread::sleep(Duration::from_millis(50));
    let r = c.response(false).unwrap();
    assert!(r.status == 200 && r.body == huge, "{model}: whole file");
    let r = c.response(false).unwrap();
    assert_eq!(r.status, 206, "{model}");
    assert!(r.body == huge[123_456..20_654_321], "{model}: range bytes");
    let r = c.response(false).unwrap();
    assert_eq!(r.body, &site.small[6134..], "{model}: after the large ones");

    drop(c);
    server.stop().unwrap();

    // A client that asks for the large file and never reads.
    let Some(server) = start(model, &site.root, |c| {
        c.idle_timeout = Duration::from_millis(400);
    }) else {
        return;
    };
    let addr = server.local_addr();
    let mut stalled = std::net::TcpStream::connect(addr).unwrap();
    // A small receive buffer (no autotuning: loopback's may grow to 32 MiB
    // here and take the whole file).
    {
        use std::os::fd::AsRawFd;
        let size: libc::c_int = 16 << 10;
        // SAFETY: a valid socket and a c_int option value of the given size.
        let rc = unsafe {
            libc::setsockopt(
                stalled.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "SO_RCVBUF");
    }
    use std::io::Write;
    stalled
        .write_all(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    // Closed by now: what was sent drains, then the end (or a reset).
    stalled
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut got = 0usize;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match stalled.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("{model}: the stalled connection was not closed: {e}"),
        }
    }
    assert!(got < huge.len(), "{model}: a stalled reader got it all");
    let t = server.stop().unwrap().totals();
    assert!(t.write_timed_out + t.idle_timed_out >= 1, "{model}: {t:?}");
}
