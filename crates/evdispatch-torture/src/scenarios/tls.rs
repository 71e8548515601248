//! TLS handshakes as a hostile surface, on our HTTPS server (every model,
//! judged) and nginx with the same certificate (shown beside ours): while
//! one client fetches `six.txt` over a kept-alive HTTPS connection
//! throughout, the server is sent
//!
//! - TCP connections that never send a ClientHello (closed at the
//!   handshake deadline, counted `timeout_before_hello`);
//! - ClientHellos a byte every 100 ms (closed at the deadline, counted
//!   `timeout_in_handshake`);
//! - malformed ClientHellos: spoiled past their headers, a handshake
//!   message a client never sends, a record longer than TLS allows,
//!   application data before any handshake (answered with an alert,
//!   counted `malformed`);
//! - plaintext HTTP (answered `400`, counted `plaintext_http`);
//! - a fatal alert from the client after the handshake (the connection
//!   closed, counted `alerts_after_handshake`);
//! - a flood of new (full) handshakes from two threads.
//!
//! It passes when the kept-alive client was served throughout (no failure,
//! no reply slower than [`SLOWEST_MS`]), every hostile connection was
//! closed as expected, every failure was counted in the server's stats,
//! the server's resident memory grew by at most [`MAX_GROWTH_MIB`] over
//! the attacks, and the server still runs.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use evdispatch_harness::SelfSigned;
use evdispatch_load::proto::HttpVersion;
use evdispatch_load::tls::{TlsClient, TlsSettings};
use evdispatch_server::cmdline::ServeCommand;
use rustls::{ClientConnection, StreamOwned};
use serde_json::{json, Value};

use super::measure::{start_target, stop, targets};
use super::report::{Run, ScenarioReport};
use crate::env::{Env, Profile};
use crate::site::{Site, SIX};

/// The handshake deadline (our `--header-timeout`, nginx's
/// `client_header_timeout`), seconds.
pub const HEADER_S: u64 = 2;
/// Keep-alive timeout, seconds.
pub const IDLE_S: u64 = 10;
/// The slowest reply the kept-alive client may see, ms.
pub const SLOWEST_MS: f64 = 1000.0;
/// The most the server's resident memory may grow over the attacks, MiB.
pub const MAX_GROWTH_MIB: f64 = 64.0;

/// How many of each attack.
#[derive(Debug, Clone, Copy)]
struct Sizes {
    silent: usize,
    dribble: usize,
    malformed_rounds: usize,
    plaintext: usize,
    alerts: usize,
    flood: usize,
    flood_s: f64,
}

impl Sizes {
    fn of(p: Profile) -> Sizes {
        Sizes {
            silent: p.pick(20, 200, 1000),
            dribble: p.pick(3, 20, 100),
            malformed_rounds: p.pick(1, 5, 20),
            plaintext: p.pick(2, 10, 50),
            alerts: p.pick(2, 10, 50),
            flood: p.pick(200, 2000, 10_000),
            flood_s: p.pick(3.0, 8.0, 20.0),
        }
    }
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// A completed handshake with `addr`.
fn handshake(addr: SocketAddr, client: &TlsClient) -> io::Result<Tls> {
    let sock = TcpStream::connect(addr)?;
    sock.set_read_timeout(Some(Duration::from_secs(5)))?;
    sock.set_nodelay(true)?;
    let conn = client.connection().map_err(io::Error::other)?;
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(s)
}

/// `GET path` on a kept-alive connection: the status and body length.
fn get(s: &mut Tls, path: &str) -> io::Result<(u16, usize)> {
    write!(s, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n")?;
    s.flush()?;
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 32];
        let mut r = httparse::Response::new(&mut headers);
        if let Ok(httparse::Status::Complete(head)) = r.parse(&buf) {
            let len = r
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| std::str::from_utf8(h.value).ok()?.trim().parse().ok())
                .unwrap_or(0usize);
            let status = r.code.unwrap_or(0);
            if buf.len() >= head + len {
                return Ok((status, len));
            }
        }
    }
}

/// What the kept-alive client saw, and the server's memory meanwhile.
#[derive(Debug, Default)]
struct Served {
    replies: u64,
    failures: u64,
    first_failure: String,
    slowest_ms: f64,
    rss_start: u64,
    rss_peak: u64,
}

/// The server's resident memory (all its processes), bytes.
fn rss(pids: &[u32]) -> u64 {
    evdispatch_host::resident_sum(pids).total_bytes
}

/// Fetch `six.txt` every 20 ms over one connection (a new one after a
/// failure) until `stop`, sampling the server's memory.
fn serve_meanwhile(
    addr: SocketAddr,
    pids: &[u32],
    client: &TlsClient,
    stop: &AtomicBool,
) -> Served {
    let mut out = Served {
        rss_start: rss(pids),
        ..Served::default()
    };
    let mut conn: Option<Tls> = None;
    while !stop.load(Ordering::Relaxed) {
        let t0 = Instant::now();
        let got = match conn.as_mut() {
            Some(c) => get(c, "/six.txt"),
            None => handshake(addr, client).and_then(|mut c| {
                let r = get(&mut c, "/six.txt");
                conn = Some(c);
                r
            }),
        };
        out.slowest_ms = out.slowest_ms.max(t0.elapsed().as_secs_f64() * 1e3);
        match got {
            Ok((200, n)) if n == SIX => out.replies += 1,
            other => {
                out.failures += 1;
                if out.first_failure.is_empty() {
                    out.first_failure = format!("{other:?}");
                }
                conn = None;
            }
        }
        out.rss_peak = out.rss_peak.max(rss(pids));
        std::thread::sleep(Duration::from_millis(20));
    }
    out
}

/// Connections that never send a byte: how many the server closed within
/// the deadline and 3 s.
fn silent(addr: SocketAddr, n: usize) -> usize {
    let conns: Vec<TcpStream> = (0..n)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    let end = Instant::now() + Duration::from_secs(HEADER_S + 3);
    conns.into_iter().filter(|s| closed_by(s, end)).count()
}

/// The server closed `s` (end of stream or reset) before `end`; what it
/// sent before is read and dropped.
fn closed_by(mut s: &TcpStream, end: Instant) -> bool {
    let mut b = [0u8; 4096];
    loop {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() || s.set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}

/// The bytes of a ClientHello `client` sends.
fn client_hello(client: &TlsClient) -> Vec<u8> {
    let mut conn = client.connection().expect("a client connection");
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).expect("a ClientHello");
    hello
}

/// ClientHellos sent a byte every 100 ms: how many the server closed
/// (a write fails) within the deadline and 3 s.
fn dribble(addr: SocketAddr, n: usize, hello: &[u8]) -> usize {
    let mut conns: Vec<(TcpStream, bool)> = (0..n)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .map(|s| (s, false))
        .collect();
    for s in &conns {
        let _ = s.0.set_nodelay(true);
    }
    let end = Instant::now() + Duration::from_secs(HEADER_S + 3);
    let mut i = 0;
    while Instant::now() < end && conns.iter().any(|c| !c.1) {
        for (s, closed) in conns.iter_mut().filter(|c| !c.1) {
            // The whole hello sent, the server waits for nothing more from
            // us: a byte again from its start keeps the trickle going.
            if s.write_all(&[hello[i % hello.len()]]).is_err() {
                *closed = true;
            }
        }
        i += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    conns.iter().filter(|c| c.1).count()
}

/// The malformed ClientHellos, each with its name.
fn malformed(hello: &[u8]) -> Vec<(&'static str, Vec<u8>)> {
    let mut spoiled = hello.to_vec();
    for b in &mut spoiled[9..] {
        *b = 0xee;
    }
    let mut server_hello = hello.to_vec();
    server_hello[5] = 2;
    let mut oversized = vec![0x16, 0x03, 0x01, 0xff, 0xff];
    oversized.extend_from_slice(&hello[5..]);
    let early_data = vec![0x17, 0x03, 0x03, 0x00, 0x05, 1, 2, 3, 4, 5];
    vec![
        ("ClientHello spoiled past its headers", spoiled),
        ("a ServerHello from the client", server_hello),
        ("a record of 65,535 bytes", oversized),
        ("application data before the handshake", early_data),
    ]
}

/// Send `bytes` on a new connection and read what comes back until the
/// server closes (at most 5 s).
fn answer_to(addr: SocketAddr, bytes: &[u8]) -> io::Result<Vec<u8>> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.write_all(bytes)?;
    let mut got = Vec::new();
    match s.read_to_end(&mut got) {
        Ok(_) => Ok(got),
        Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Ok(got),
        Err(e) => Err(e),
    }
}

/// A handshake, then a fatal alert (`bad_record_mac`: one of the server's
/// records handed to the client with a byte flipped): the server closed
/// the connection.
fn alert_after_handshake(addr: SocketAddr, client: &TlsClient) -> io::Result<bool> {
    let mut s = handshake(addr, client)?;
    write!(
        s.conn.writer(),
        "GET /six.txt HTTP/1.1\r\nHost: localhost\r\n\r\n"
    )?;
    s.conn.write_tls(&mut s.sock)?;
    let mut raw = vec![0u8; 64 * 1024];
    let n = s.sock.read(&mut raw)?;
    if n <= 10 {
        return Ok(false);
    }
    raw[10] ^= 0x55;
    s.conn.read_tls(&mut &raw[..n])?;
    if s.conn.process_new_packets().is_ok() {
        return Ok(false);
    }
    s.conn.write_tls(&mut s.sock)?;
    Ok(closed_by(&s.sock, Instant::now() + Duration::from_secs(5)))
}

/// New connections with full handshakes from two threads, `n` in all or
/// for `secs`: (completed, failed).
fn flood(addr: SocketAddr, client: &TlsClient, n: usize, secs: f64) -> (u64, u64) {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(move || {
                    let (mut done, mut failed) = (0u64, 0u64);
                    while ((done + failed) as usize) < n / 2 && Instant::now() < end {
                        match handshake(addr, client) {
                            Ok(mut s) => {
                                s.conn.send_close_notify();
                                let _ = s.conn.write_tls(&mut s.sock);
                                done += 1;
                            }
                            Err(_) => failed += 1,
                        }
                    }
                    (done, failed)
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().unwrap_or((0, 1)))
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    })
}

/// What one server did under the attacks.
#[derive(Debug, Default)]
struct Observed {
    served: Served,
    silent_closed: usize,
    dribble_closed: usize,
    malformed_sent: usize,
    malformed_alerted: usize,
    plaintext_400: usize,
    alerts_closed: usize,
    flood_done: u64,
    flood_failed: u64,
}

/// Every attack on `addr` while a client is served.
fn attack(addr: SocketAddr, pids: &[u32], client: &TlsClient, sizes: Sizes) -> Observed {
    let stop = AtomicBool::new(false);
    let hello = client_hello(client);
    std::thread::scope(|scope| {
        let served = scope.spawn(|| serve_meanwhile(addr, pids, client, &stop));
        // The served client's first reply before the attacks.
        std::thread::sleep(Duration::from_millis(100));
        let mut o = Observed {
            silent_closed: silent(addr, sizes.silent),
            dribble_closed: dribble(addr, sizes.dribble, &hello),
            ..Observed::default()
        };
        for _ in 0..sizes.malformed_rounds {
            for (_, bytes) in malformed(&hello) {
                o.malformed_sent += 1;
                let got = answer_to(addr, &bytes).unwrap_or_default();
                o.malformed_alerted += usize::from(got.first() == Some(&0x15));
            }
        }
        for _ in 0..sizes.plaintext {
            let got = answer_to(addr, b"GET /six.txt HTTP/1.1\r\nHost: localhost\r\n\r\n");
            let got = got.unwrap_or_default();
            o.plaintext_400 += usize::from(got.starts_with(b"HTTP/1.1 400 "));
        }
        for _ in 0..sizes.alerts {
            o.alerts_closed += usize::from(alert_after_handshake(addr, client).unwrap_or(false));
        }
        (o.flood_done, o.flood_failed) = flood(addr, client, sizes.flood, sizes.flood_s);
        std::thread::sleep(Duration::from_millis(200));
        stop.store(true, Ordering::Relaxed);
        o.served = served.join().unwrap_or_default();
        o
    })
}

/// The checks of one server's run (`stats`: our stats document, `Null`
/// for nginx, whose checks leave the counters out).
fn judge(run: &mut Run, o: &Observed, stats: &Value, sizes: Sizes, running: bool) {
    let s = &o.served;
    run.check(
        "served client: failed requests",
        s.failures,
        "0",
        s.failures == 0,
    );
    run.check(
        "served client: slowest reply, ms",
        (s.slowest_ms * 10.0).round() / 10.0,
        &format!("≤ {SLOWEST_MS}"),
        s.slowest_ms <= SLOWEST_MS,
    );
    let all = |name: &str, run: &mut Run, got: usize, want: usize| {
        run.check(name, format!("{got}/{want}"), "all", got == want);
    };
    all(
        "silent connections closed at the deadline",
        run,
        o.silent_closed,
        sizes.silent,
    );
    all(
        "byte-a-time hellos closed at the deadline",
        run,
        o.dribble_closed,
        sizes.dribble,
    );
    all(
        "malformed hellos answered with an alert",
        run,
        o.malformed_alerted,
        o.malformed_sent,
    );
    all(
        "plaintext HTTP answered 400",
        run,
        o.plaintext_400,
        sizes.plaintext,
    );
    all(
        "fatal alerts after the handshake: closed",
        run,
        o.alerts_closed,
        sizes.alerts,
    );
    let flooded = o.flood_done + o.flood_failed;
    run.check(
        "flood: handshakes failed",
        o.flood_failed,
        "0",
        o.flood_failed == 0,
    );
    let growth = s.rss_peak.saturating_sub(s.rss_start) as f64 / (1024.0 * 1024.0);
    run.check(
        "resident memory growth over the attacks, MiB",
        (growth * 10.0).round() / 10.0,
        &format!("≤ {MAX_GROWTH_MIB}"),
        growth <= MAX_GROWTH_MIB,
    );
    run.check("server still running at the end", running, "true", running);
    let tls = &stats["tls"];
    if !stats.is_null() {
        let failures = &tls["handshake_failures"];
        let counted = |run: &mut Run, name: &str, v: &Value, want: usize| {
            let got = v.as_u64().unwrap_or(0);
            run.check(name, got, &format!("= {want}"), got == want as u64);
        };
        counted(
            run,
            "counted timeout_before_hello",
            &failures["timeout_before_hello"],
            sizes.silent,
        );
        counted(
            run,
            "counted timeout_in_handshake",
            &failures["timeout_in_handshake"],
            sizes.dribble,
        );
        counted(
            run,
            "counted malformed",
            &failures["malformed"],
            o.malformed_sent,
        );
        counted(
            run,
            "counted plaintext_http",
            &failures["plaintext_http"],
            sizes.plaintext,
        );
        counted(
            run,
            "counted alerts_after_handshake",
            &tls["alerts_after_handshake"],
            sizes.alerts,
        );
        // The served client's connections, the alerting ones and the flood.
        let full = tls["handshakes_full"].as_u64().unwrap_or(0);
        let least = o.flood_done + sizes.alerts as u64 + 1;
        run.check(
            "counted full handshakes",
            full,
            &format!("≥ {least}"),
            full >= least,
        );
    }
    run.figures = json!({
        "served_replies": s.replies,
        "served_first_failure": s.first_failure,
        "slowest_ms": s.slowest_ms,
        "rss_start_bytes": s.rss_start,
        "rss_peak_bytes": s.rss_peak,
        "silent": sizes.silent,
        "dribble": sizes.dribble,
        "malformed": o.malformed_sent,
        "plaintext": sizes.plaintext,
        "alerts": sizes.alerts,
        "flood_handshakes": flooded,
        "flood_s": sizes.flood_s,
        "rss_growth_mib": growth,
        "server_tls": tls,
        "server_failures_counted": failures_counted(tls),
    });
}

/// The handshake failures a stats document's `tls` object counts, all
/// kinds, with the alerts after the handshake (`null` without one).
fn failures_counted(tls: &Value) -> Value {
    let Some(kinds) = tls["handshake_failures"].as_object() else {
        return Value::Null;
    };
    let after = tls["alerts_after_handshake"].as_u64().unwrap_or(0);
    json!(kinds.values().filter_map(Value::as_u64).sum::<u64>() + after)
}

/// An HTTP/1.1 client for `localhost` that trusts `cert` and never
/// resumes (every handshake a full one).
fn trusting(cert: &SelfSigned) -> anyhow::Result<TlsClient> {
    TlsClient::new(
        &TlsSettings {
            server_name: "localhost".into(),
            insecure: false,
            cacert: Some(cert.cert.clone()),
            resume: false,
        },
        HttpVersion::Http1,
    )
}

/// Run the TLS attacks on every model and nginx.
pub fn run(env: &Env) -> anyhow::Result<ScenarioReport> {
    let mut rep = ScenarioReport::new("tls", "TLS handshakes as a hostile surface");
    let site = Site::create()?;
    let cert = SelfSigned::create()?;
    let client = trusting(&cert)?;
    let ours = ServeCommand {
        header_timeout: Some(Duration::from_secs(HEADER_S)),
        idle_timeout: Some(Duration::from_secs(IDLE_S)),
        tls_cert: Some(cert.cert.clone()),
        tls_key: Some(cert.key.clone()),
        ..ServeCommand::default()
    };
    let sizes = Sizes::of(env.profile);
    for target in targets(env) {
        let Some((mut server, name, label)) =
            start_target(env, &site, &mut rep, &target, &ours, |c| {
                c.keepalive_timeout_s = IDLE_S as u32;
                c.request_timeout_s = HEADER_S as u32;
                c.tls = Some(cert.peer_tls("TLSv1.2 TLSv1.3"));
            })
        else {
            continue;
        };
        env.say(format!("tls: attacks on {name} {label}"));
        let observed = attack(server.addr(), &server.pids(), &client, sizes);
        let running = server.is_running();
        let stats = stop(server)?;
        let mut run = Run::new(name, &label);
        judge(&mut run, &observed, &stats, sizes, running);
        rep.add(env, run, format!("tls {name} {label}"));
    }
    Ok(rep.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_malformed_hellos_differ_from_the_hello_where_they_say() {
        let cert = SelfSigned::create().unwrap();
        let client = trusting(&cert).unwrap();
        let hello = client_hello(&client);
        assert_eq!(
            (hello[0], hello[5]),
            (0x16, 1),
            "a handshake record, a ClientHello"
        );
        let m = malformed(&hello);
        assert_eq!(m.len(), 4);
        assert!(m[0].1[9..].iter().all(|&b| b == 0xee) && m[0].1[..9] == hello[..9]);
        assert_eq!(m[1].1[5], 2);
        assert_eq!(&m[2].1[3..5], &[0xff, 0xff]);
        assert_eq!(m[3].1[0], 0x17);
    }

    #[test]
    fn the_failures_counted_add_up_every_kind() {
        let tls = json!({"handshake_failures": {"malformed": 4, "closed": 1},
                         "alerts_after_handshake": 2});
        assert_eq!(failures_counted(&tls), json!(7));
        assert_eq!(failures_counted(&Value::Null), Value::Null);
    }
}
