//! The one connection lifecycle, on every model: a request that times out
//! part-way gets its 408 and then a lingering close (what the client still
//! sends is read and dropped, and the connection ends with a FIN, never a
//! reset); a graceful stop closes idle connections, counts no timeout, and
//! ends a request still under way after the grace.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::time::Duration;

use common::{on_every_model, start, Client};

#[test]
fn a_timed_out_request_lingers_after_its_408() {
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |c| {
            c.header_timeout = Duration::from_millis(300);
        }) else {
            return;
        };
        let mut c = Client::connect(server.local_addr());
        c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n");
        let r = c.response(false).expect("a 408 before the close");
        assert_eq!(r.status, 408, "{model}");
        // The client, not having read yet, goes on sending. A server that
        // closed at once answers these bytes with a reset; one that lingers
        // reads and drops them.
        c.s.write_all(b"X-Late: 1\r\nX-Later: 2\r\n").unwrap();
        std::thread::sleep(Duration::from_millis(200));
        let mut rest = Vec::new();
        let ended =
            c.s.shutdown(std::net::Shutdown::Write)
                .and_then(|()| c.s.read_to_end(&mut rest));
        match ended {
            Ok(_) => assert!(rest.is_empty(), "{model}: sent more after the 408"),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                panic!("{model}: reset after the 408: no lingering close")
            }
            Err(e) => panic!("{model}: {e}"),
        }
        let t = server.stop().unwrap().totals();
        assert_eq!(t.header_timed_out, 1, "{model}: {t:?}");
    });
}

#[test]
fn a_graceful_stop_closes_idle_connections_and_counts_no_timeout() {
    on_every_model(|model, site| {
        let Some(server) = start(model, &site.root, |c| {
            c.idle_timeout = Duration::from_secs(60);
            c.header_timeout = Duration::from_secs(60);
        }) else {
            return;
        };
        let addr = server.local_addr();
        let mut idle = Client::connect(addr);
        assert_eq!(idle.get("/six.txt").status, 200, "{model}");
        let mut silent = Client::connect(addr);
        silent.send(b"GET / HTTP/1.1\r\n");
        // Both are held by the server before it stops.
        assert_eq!(Client::connect(addr).get("/").status, 200, "{model}");
        let t = server.stop().unwrap().totals();
        assert!(idle.closed(), "{model}: idle connection left open");
        // A request under way is given the grace, then told why (408) or
        // simply closed (threads: its read ends at the stop).
        if let Some(r) = silent.response(false) {
            assert_eq!(r.status, 408, "{model}");
        }
        assert!(silent.closed(), "{model}: partial request left open");
        assert_eq!(
            (t.idle_timed_out, t.header_timed_out),
            (0, 0),
            "{model}: a stop is not a timeout: {t:?}"
        );
        assert_eq!(t.accepted, 3, "{model}: {t:?}");
    });
}
