//! Request bodies on both engines: large bodies arrive whole, a reply
//! that comes before its body is written waits for the body, a send cut
//! by the server's close is counted as far as it went, and a body that
//! cannot go out ends its connection without an error.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{accept_on, early_server, read_head, run_on, small_buffer_listener, Recorder};

mod common;

/// `len` bytes of a pattern that repeats every 251 (a prime, so a body cut
/// or shifted anywhere does not match itself).
fn patterned(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A request body larger than the most a socket buffers (4 MiB here), in
/// a file of the directory returned: a send is still going when a reply
/// comes early.
fn upload_larger_than_the_buffers() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![7u8; 12_000_000]).unwrap();
    (dir, body)
}

#[test]
fn large_request_bodies_arrive_whole_on_both_engines() {
    // 300 kB bodies: more than a socket takes at once, and above the size
    // the uring engine sends quietly, so its sends complete with counts.
    let (dir, bytes) = (tempfile::tempdir().unwrap(), patterned(300_000));
    let body = dir.path().join("body");
    std::fs::write(&body, &bytes).unwrap();
    for engine in ["uring", "readiness"] {
        let server = Recorder::start("127.0.0.1:0", None);
        let args = format!(
            "--rate max --connections 2 --duration 0.3 --method POST --body {}",
            body.display()
        );
        let Some(s) = run_on(engine, &server.http("/up"), &args) else {
            continue;
        };
        assert!(
            s.replies > 2 && s.errors_total == 0,
            "{engine}: {} {:?}",
            s.replies,
            s.errors
        );
        let got = server.requests();
        assert!(got.len() as u64 >= s.replies, "{engine}");
        assert!(
            got.iter().all(|(_, b)| *b == bytes),
            "{engine}: a body arrived damaged"
        );
        assert!(
            s.bytes_sent >= s.replies * 300_000,
            "{engine}: {}",
            s.bytes_sent
        );
    }
}

#[test]
fn a_reply_before_the_body_is_sent_waits_for_the_body_on_both_engines() {
    // A body far larger than the socket buffers: the reply comes while
    // most of it is still to be written. The next request must follow the
    // whole body, not start in its middle.
    let (dir, bytes) = (tempfile::tempdir().unwrap(), patterned(4_000_000));
    let body = dir.path().join("body");
    std::fs::write(&body, &bytes).unwrap();
    for engine in ["uring", "readiness"] {
        let (addr, seen) = early_server();
        let args = format!(
            "--rate max --connections 2 --duration 0.4 --method POST --body {}",
            body.display()
        );
        let Some(s) = run_on(engine, &format!("http://{addr}/early"), &args) else {
            continue;
        };
        let got = seen.requests.lock().unwrap().clone();
        assert!(s.replies >= 4, "{engine}: {} replies", s.replies);
        for (head, b) in &got {
            assert!(
                head.starts_with("POST /early HTTP/1.1\r\n"),
                "{engine}: the server read a request line out of step: {:?}",
                &head[..head.len().min(60)]
            );
            assert!(
                b.len() < bytes.len() || *b == bytes,
                "{engine}: a body arrived damaged"
            );
        }
        assert_eq!(s.errors_total, 0, "{engine}: {:?}", s.errors);
        assert_eq!(
            s.status["2xx"],
            s.replies + s.unmeasured_replies,
            "{engine}"
        );
        // Every request's body went out whole before the next request.
        let whole = got.iter().filter(|(_, b)| *b == bytes).count() as u64;
        assert!(
            whole + 2 >= s.replies + s.unmeasured_replies,
            "{engine}: {whole} whole bodies"
        );
        assert!(s.bytes_sent >= whole * bytes.len() as u64, "{engine}");
    }
}

#[test]
fn bytes_sent_count_a_send_cut_by_the_close_on_both_engines() {
    // The server refuses the upload after its head (413, Connection:
    // close), waits, then reads whatever still comes until the end: the
    // generator closes with its send in flight. What the server received
    // was sent.
    let (_dir, body) = upload_larger_than_the_buffers();
    for engine in ["uring", "readiness"] {
        let received = Arc::new(AtomicU64::new(0));
        let got = received.clone();
        let (addr, _) = accept_on(small_buffer_listener(), move |sock, _| {
            let mut r = BufReader::new(sock);
            let Some(head) = read_head(&mut r) else {
                return;
            };
            let reply = b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            if r.get_mut().write_all(reply).is_err() {
                return;
            }
            // Not read meanwhile: the generator's send is stuck when the
            // reply makes it close.
            std::thread::sleep(Duration::from_millis(20));
            let mut n = head.len() as u64 + r.buffer().len() as u64;
            r.consume(r.buffer().len());
            let mut buf = vec![0; 64 * 1024];
            while let Ok(k) = r.get_mut().read(&mut buf) {
                if k == 0 {
                    break;
                }
                n += k as u64;
            }
            got.fetch_add(n, Ordering::Relaxed);
        });
        let args = format!(
            "--rate max --connections 1 --duration 0.3 --method POST --body {}",
            body.display()
        );
        let Some(s) = run_on(engine, &format!("http://{addr}/up"), &args) else {
            continue;
        };
        // The server's threads finish reading after the run's last close.
        std::thread::sleep(Duration::from_millis(200));
        let received = received.load(Ordering::Relaxed);
        assert!(s.replies >= 3, "{engine}: {} replies", s.replies);
        assert!(
            s.bytes_sent >= received && received > 0,
            "{engine}: bytes_sent {} but the server received {received}",
            s.bytes_sent
        );
    }
}

#[test]
fn an_early_reply_whose_body_cannot_go_out_ends_the_connection_not_in_an_error() {
    // The server refuses the upload after its head (413, keep-alive), then
    // reads nothing more: the rest of the body never goes out. The reply
    // is counted; after --timeout the generator closes the connection and
    // goes on over a new one, without a timeout error on top of the reply.
    let (_dir, body) = upload_larger_than_the_buffers();
    for engine in ["uring", "readiness"] {
        let (addr, _) = accept_on(small_buffer_listener(), |sock, _| {
            let mut r = BufReader::new(sock);
            if read_head(&mut r).is_none() {
                return;
            }
            let reply = b"HTTP/1.1 413 Too Large\r\nContent-Length: 0\r\n\r\n";
            if r.get_mut().write_all(reply).is_ok() {
                std::thread::sleep(Duration::from_secs(3));
            }
        });
        let args = format!(
            "--rate max --connections 1 --duration 1 --timeout 0.2 --method POST --body {}",
            body.display()
        );
        let Some(s) = run_on(engine, &format!("http://{addr}/up"), &args) else {
            continue;
        };
        assert_eq!(s.errors_total, 0, "{engine}: {:?}", s.errors);
        assert!(s.replies >= 2, "{engine}: {} replies", s.replies);
        assert_eq!(
            s.status["4xx"],
            s.replies + s.unmeasured_replies,
            "{engine}"
        );
        // Each ended connection is the generator's close, and a reconnect.
        let k = &s.connections;
        assert!(k.closed_by_client >= 1 && k.accounted, "{engine}: {k:?}");
        assert_eq!(k.closed_by_server, 0, "{engine}: {k:?}");
        assert_eq!(s.reconnects, k.closed_by_client, "{engine}: {k:?}");
    }
}
