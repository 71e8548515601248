//! Accepting with `TCP_DEFER_ACCEPT` (the default, as in h2o): a connection
//! reaches the server with its request, so a one-request connection is
//! answered and closed without ever being registered with the poller; a
//! silent client is still handed over after the deferral and then meets the
//! header timeout.

mod common;

use std::time::{Duration, Instant};

use common::{site, start, Client};
use evdispatch_server::Model;

#[test]
fn one_request_connections_never_touch_the_poller() {
    let site = site();
    for model in Model::all() {
        let Model::Readiness(m) = model else {
            continue;
        };
        let Some(server) = start(model, &site.root, |c| c.defer_accept_s = 1) else {
            continue;
        };
        let addr = server.local_addr();
        let n = 30;
        for i in 0..n {
            let mut c = Client::connect(addr);
            c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
            let r = c.response(false).expect("a response");
            assert_eq!((r.status, r.body.len()), (200, 6144), "{m} #{i}");
            assert!(c.closed(), "{m} #{i}: not closed after Connection: close");
        }
        let report = server.stop().unwrap();
        let t = report.totals();
        assert_eq!((t.accepted, t.closed), (n, n), "{m}: {t:?}");
        // The listener and the waker, nothing else: each connection was
        // read at accept, answered and closed (edge-triggered mechanisms
        // included: a short read leaves nothing unread, so no lingering).
        let registrations: u64 = report
            .workers
            .iter()
            .map(|w| w.poller["registrations"].as_u64().unwrap())
            .sum();
        assert_eq!(
            registrations,
            2 * report.workers.len() as u64,
            "{m}: connections were registered: {:?}",
            report.workers[0].poller
        );
    }
}

#[test]
fn silent_clients_are_still_accepted_and_timed_out() {
    let site = site();
    std::thread::scope(|scope| {
        for model in Model::all() {
            let site = &site;
            scope.spawn(move || {
                let header = Duration::from_millis(200);
                let Some(server) = start(model, &site.root, |c| {
                    c.defer_accept_s = 1;
                    c.header_timeout = header;
                }) else {
                    return;
                };
                let t0 = Instant::now();
                let mut silent = Client::connect(server.local_addr());
                assert!(silent.closed(), "{model}: a silent client was never closed");
                assert!(
                    t0.elapsed() >= header,
                    "{model}: closed before the header timeout"
                );
                let t = server.stop().unwrap().totals();
                assert_eq!((t.accepted, t.header_timed_out), (1, 1), "{model}: {t:?}");
            });
        }
    });
}
