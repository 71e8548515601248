//! Regressions found by `evdispatch torture`, one test each, on every
//! model.

mod common;

use std::io::Write;
use std::time::Duration;

use common::*;
use evdispatch_server::Model;

/// 1,000 requests in one write. The server answers at most a batch of
/// responses per pass; a pass that ends with the socket drained must still
/// answer the rest of the buffered requests, not leave them until the
/// header timeout fires (a 408 after some 1,800 of 2,000 responses).
#[test]
fn a_pipelined_flood_is_answered_in_full() {
    let site = site();
    const N: usize = 1000;
    let mut flood = Vec::new();
    for i in 0..N {
        let path = if i % 3 == 0 { "/six.txt" } else { "/" };
        flood.extend_from_slice(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
    }
    std::thread::scope(|scope| {
        for model in Model::all() {
            let (site, flood) = (&site, &flood);
            scope.spawn(move || {
                let Some(server) = start(model, &site.root, |c| {
                    c.header_timeout = Duration::from_secs(2);
                }) else {
                    return;
                };
                let mut c = Client::connect(server.local_addr());
                let mut w = c.s.try_clone().unwrap();
                let writer = std::thread::spawn({
                    let flood = flood.clone();
                    move || w.write_all(&flood).unwrap()
                });
                for i in 0..N {
                    let r = c.response(false).unwrap_or_else(|| {
                        panic!("{model}: closed after {i} of {N} pipelined responses")
                    });
                    assert_eq!(r.status, 200, "{model}: response #{i} of {N}");
                    let want = if i % 3 == 0 {
                        6144
                    } else {
                        site.root.join("index.html").metadata().unwrap().len() as usize
                    };
                    assert_eq!(r.body.len(), want, "{model}: response #{i}");
                }
                writer.join().unwrap();
                // Still usable afterwards.
                assert_eq!(c.get("/").status, 200, "{model}");
                let t = server.stop().unwrap().totals();
                assert_eq!(t.header_timed_out, 0, "{model}: {t:?}");
            });
        }
    });
}

/// A request that arrives in pieces, with pauses long enough for the server
/// to drain the socket in between: a short partial request moves to a small
/// buffer while it waits (slowloris costs a kilobyte a connection, not
/// `--max-header`), and the buffer must grow back when more comes, up to the
/// header limit and no further.
#[test]
fn requests_in_pieces_grow_their_buffer_back() {
    let site = site();
    let pause = || std::thread::sleep(Duration::from_millis(40));
    for model in Model::all() {
        let Some(server) = start(model, &site.root, |_| {}) else {
            continue;
        };
        let addr = server.local_addr();
        let mut c = Client::connect(addr);
        // A few bytes, then a header far longer than the small buffer, then
        // the end; twice on the same connection.
        for round in 0..2 {
            c.send(b"GET /six.txt HTTP/1.1\r\nHo");
            pause();
            c.send(b"st: t\r\nX-Pad: ");
            pause();
            c.send("p".repeat(3000).as_bytes());
            pause();
            c.send(b"\r\n\r\n");
            let r = c
                .response(false)
                .unwrap_or_else(|| panic!("{model}: round {round}: no answer"));
            assert_eq!(r.status, 200, "{model}: round {round}");
            assert_eq!(r.body.len(), 6144, "{model}: round {round}");
        }
        // Byte by byte for a while, then one piece.
        for b in b"GET / HTTP/1.1\r\nHost: t\r\n" {
            c.send(&[*b]);
        }
        pause();
        c.send(b"\r\n");
        assert_eq!(c.response(false).unwrap().status, 200, "{model}");
        // Past the header limit in pieces: still refused.
        let mut c = Client::connect(addr);
        c.send(b"GET / HTTP/1.1\r\nHost: t\r\nX-Big: ");
        pause();
        c.send("b".repeat(4000).as_bytes());
        pause();
        c.send("b".repeat(5000).as_bytes());
        let r = c
            .response(false)
            .unwrap_or_else(|| panic!("{model}: no 431"));
        assert_eq!(r.status, 431, "{model}");
        assert!(c.closed(), "{model}: still open after 431");
        server.stop().unwrap();
    }
}
