//! HTTPS end to end on loopback: certificates made here with rcgen (a CA
//! and a server certificate it signed), rustls clients, the readiness model
//! on several mechanisms (level- and edge-triggered, select, an RT-signal
//! one) and the thread pool; the handshake counters; hostile handshakes.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{site, start, Client, Site};
use evdispatch_server::cmdline::ServeCommand;
use evdispatch_server::{Counters, Model, Server, ServerConfig, TlsConfig};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, StreamOwned};

/// The models HTTPS is tested on: epoll (level-triggered), epoll-et
/// (edge-triggered), select, an RT-signal mechanism, the thread pool and
/// io_uring completions.
const MODELS: [&str; 6] = [
    "epoll",
    "epoll-et",
    "select",
    "rtsig",
    "threads",
    "uring-completion",
];

/// A CA, a server certificate it signed for `localhost` and 127.0.0.1
/// (written as the PEM chain and key the server reads), and clients that
/// trust the CA.
struct Pki {
    dir: tempfile::TempDir,
    ca: CertificateDer<'static>,
}

impl Pki {
    fn new(alg: &'static rcgen::SignatureAlgorithm) -> Pki {
        Pki::with_key(KeyPair::generate_for(alg).unwrap())
    }

    /// The server certificate for `key`.
    fn with_key(key: KeyPair) -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        // The full chain: the server's certificate, then the CA's.
        let chain = format!("{}{}", leaf.pem(), ca.pem());
        std::fs::write(dir.path().join("cert.pem"), chain).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Pki {
            dir,
            ca: ca.der().clone(),
        }
    }

    fn cert(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.dir.path().join("key.pem")
    }

    fn config(&self) -> TlsConfig {
        TlsConfig::load(&self.cert(), &self.key()).unwrap()
    }

    /// A client configuration trusting the CA, with the given versions,
    /// offering ALPN `http/1.1`.
    fn client(&self, versions: &[&'static rustls::SupportedProtocolVersion]) -> Arc<ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.clone()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut c = ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        c.alpn_protocols = vec![b"http/1.1".to_vec()];
        Arc::new(c)
    }

    fn client13(&self) -> Arc<ClientConfig> {
        self.client(&[&rustls::version::TLS13])
    }
}

type Tls = StreamOwned<ClientConnection, TcpStream>;

/// An HTTPS connection to `addr` for `localhost`, handshake done.
fn https(addr: SocketAddr, cfg: &Arc<ClientConfig>) -> Client<Tls> {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = ClientConnection::new(cfg.clone(), name).unwrap();
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).expect("the handshake");
    }
    Client::over(s)
}

fn start_tls(
    model: &str,
    site: &Site,
    pki: &Pki,
    tweak: impl FnOnce(&mut ServerConfig),
) -> Option<Server> {
    let model: Model = model.parse().unwrap();
    start(model, &site.root, |cfg| {
        cfg.tls = Some(pki.config());
        cfg.defer_accept_s = 0;
        tweak(cfg);
    })
}

fn stop(server: Server) -> Counters {
    server.stop().unwrap().totals()
}

#[test]
fn get_head_range_and_conditional_over_https() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let client = pki.client13();
    std::thread::scope(|scope| {
        for model in MODELS {
            let (site, pki, client) = (&site, &pki, &client);
            scope.spawn(move || {
                let Some(server) = start_tls(model, site, pki, |_| {}) else {
                    return;
                };
                let mut c = https(server.local_addr(), client);
                assert_eq!(c.s.conn.alpn_protocol(), Some(&b"http/1.1"[..]), "{model}");
                let r = c.get("/six.txt");
                assert_eq!(r.status, 200, "{model}");
                assert_eq!(r.body, site.small, "{model}");
                let etag = r.header("etag").unwrap().to_string();

                c.send(b"HEAD /six.txt HTTP/1.1\r\nHost: t\r\n\r\n");
                let r = c.response(true).unwrap();
                assert_eq!(r.status, 200, "{model}");
                assert_eq!(r.header("content-length"), Some("6144"), "{model}");

                c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=10-19\r\n\r\n");
                let r = c.response(false).unwrap();
                assert_eq!(r.status, 206, "{model}");
                assert_eq!(r.body, &site.small[10..20], "{model}");

                let cond =
                    format!("GET /six.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n");
                c.send(cond.as_bytes());
                assert_eq!(c.response(false).unwrap().status, 304, "{model}");

                // A large file (sent from the page cache in chunks), a
                // range of it, and a missing file, on the same connection.
                let r = c.get("/large.bin");
                assert_eq!(r.status, 200, "{model}");
                assert!(r.body == site.large, "{model}: the large file differs");
                c.send(b"GET /large.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=300000-\r\n\r\n");
                let r = c.response(false).unwrap();
                assert_eq!(r.status, 206, "{model}");
                assert!(
                    r.body == site.large[300_000..],
                    "{model}: the range differs"
                );
                assert_eq!(c.get("/nothing-here").status, 404, "{model}");

                // A close after the answer: close_notify, then EOF.
                c.send(b"GET /six.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
                assert_eq!(c.response(false).unwrap().status, 200, "{model}");
                // The end: close_notify (a clean EOF), not a bare FIN.
                let mut b = [0u8; 1];
                match c.s.read(&mut b) {
                    Ok(0) => {}
                    other => panic!("{model}: no close_notify: {other:?}"),
                }

                let t = stop(server);
                assert_eq!((t.tls.full, t.tls.resumed), (1, 0), "{model}: {:?}", t.tls);
                assert_eq!(t.total_requests(), 8, "{model}");
            });
        }
    });
}

/// Many pipelined requests in one TLS record, more than the server's read
/// buffer holds: what rustls keeps decrypted after the socket is drained
/// must still be answered (on edge-triggered mechanisms no event would
/// come for it).
#[test]
fn pipelined_requests_beyond_the_read_buffer_are_all_answered() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let client = pki.client13();
    for model in MODELS {
        let Some(server) = start_tls(model, &site, &pki, |cfg| cfg.max_header = 1024) else {
            continue;
        };
        let mut c = https(server.local_addr(), &client);
        let req = b"GET /index.html HTTP/1.1\r\nHost: t\r\nUser-Agent: a pipelining test\r\n\r\n";
        let n = 40_000 / req.len();
        c.send(&req.repeat(n));
        c.s.flush().unwrap();
        for i in 0..n {
            let r = c
                .response(false)
                .unwrap_or_else(|| panic!("{model}: closed at {i}"));
            assert_eq!(r.status, 200, "{model}: response {i}");
        }
        let t = stop(server);
        assert_eq!(t.total_requests(), n as u64, "{model}");
    }
}

/// A client that connects and never sends a ClientHello is closed at the
/// handshake deadline (the header timeout) and counted as a timeout before
/// the hello.
#[test]
fn a_silent_client_is_closed_at_the_handshake_deadline() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    std::thread::scope(|scope| {
        for model in MODELS {
            let (site, pki) = (&site, &pki);
            scope.spawn(move || {
                let timeout = Duration::from_millis(300);
                let Some(server) = start_tls(model, site, pki, |cfg| cfg.header_timeout = timeout)
                else {
                    return;
                };
                let mut s = TcpStream::connect(server.local_addr()).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let t0 = Instant::now();
                let mut b = [0u8; 64];
                let n = s.read(&mut b).unwrap_or(0);
                let waited = t0.elapsed();
                assert_eq!(n, 0, "{model}: the server sent something");
                assert!(
                    waited >= timeout - Duration::from_millis(20)
                        && waited < Duration::from_secs(3),
                    "{model}: closed after {waited:?}"
                );
                let t = stop(server);
                assert_eq!(t.tls.failed_silent, 1, "{model}: {:?}", t.tls);
                assert_eq!(t.tls.failed_timeout, 0, "{model}: {:?}", t.tls);
                assert_eq!(t.header_timed_out, 0, "{model}");
                assert_eq!(t.tls.full, 0, "{model}");
            });
        }
    });
}

/// The bytes of a ClientHello `cfg` would send.
fn client_hello(cfg: &Arc<ClientConfig>) -> Vec<u8> {
    let name = ServerName::try_from("localhost").unwrap();
    let mut conn = ClientConnection::new(cfg.clone(), name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    hello
}

/// A ClientHello sent a byte at a time, slower than the deadline allows:
/// the connection is closed at the deadline however the bytes trickle in,
/// on every model (the thread pool reads on inside one TLS read: it too
/// must look at the clock).
#[test]
fn a_handshake_sent_a_byte_at_a_time_is_closed_at_the_deadline() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let hello = client_hello(&pki.client13());
    std::thread::scope(|scope| {
        for model in MODELS {
            let (site, pki, hello) = (&site, &pki, &hello);
            scope.spawn(move || {
                let timeout = Duration::from_millis(500);
                let Some(server) = start_tls(model, site, pki, |cfg| cfg.header_timeout = timeout)
                else {
                    return;
                };
                let mut s = TcpStream::connect(server.local_addr()).unwrap();
                s.set_nodelay(true).unwrap();
                let t0 = Instant::now();
                let mut closed_at = None;
                for &b in hello.iter() {
                    if s.write_all(&[b]).is_err() {
                        closed_at = Some(t0.elapsed());
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                    if t0.elapsed() > Duration::from_secs(4) {
                        break;
                    }
                }
                // The server closed: the writes fail (a reset answers the
                // first one after the close), or the read sees the end.
                let waited = closed_at.unwrap_or_else(|| {
                    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let _ = s.read(&mut [0u8; 16]);
                    t0.elapsed()
                });
                assert!(
                    waited >= timeout && waited < Duration::from_secs(2),
                    "{model}: closed after {waited:?} ({} bytes of hello)",
                    hello.len()
                );
                let t = stop(server);
                assert_eq!(t.tls.failed_timeout, 1, "{model}: {:?}", t.tls);
                assert_eq!(t.tls.failed_silent, 0, "{model}: {:?}", t.tls);
            });
        }
    });
}

/// A flood of handshakes that stop after their ClientHello (the server
/// does its part of each, then waits): a client already connected is served
/// throughout, and every stalled handshake is closed at the deadline and
/// counted. The event-loop models (the thread pool holds a thread per
/// connection by design).
#[test]
fn a_flood_of_stalled_handshakes_does_not_hold_up_a_served_client() {
    const FLOOD: usize = 300;
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let hello = client_hello(&pki.client13());
    for model in ["epoll", "uring-completion"] {
        let timeout = Duration::from_secs(1);
        let Some(server) = start_tls(model, &site, &pki, |cfg| cfg.header_timeout = timeout) else {
            continue;
        };
        let mut c = https(server.local_addr(), &pki.client13());
        let mut flood = Vec::new();
        for i in 0..FLOOD {
            let mut s = TcpStream::connect(server.local_addr()).unwrap();
            s.write_all(&hello).unwrap();
            flood.push(s);
            if i % 30 == 0 {
                let r = c.get("/six.txt");
                assert_eq!((r.status, r.body.len()), (200, 6144), "{model}: at {i}");
            }
        }
        // Every stalled one is closed at its deadline (after the server's
        // flight, which is read and dropped here).
        for (i, s) in flood.iter_mut().enumerate() {
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut b = [0u8; 4096];
            loop {
                match s.read(&mut b) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
                    Err(e) => panic!("{model}: stalled handshake {i} not closed: {e}"),
                }
            }
        }
        assert_eq!(c.get("/six.txt").status, 200, "{model}");
        drop(c);
        let t = stop(server);
        assert_eq!(t.tls.failed_timeout, FLOOD as u64, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.full, 1, "{model}");
    }
}

/// A handshake record that holds no ClientHello is answered with an alert
/// and counted as malformed.
#[test]
fn a_malformed_client_hello_gets_an_alert_and_is_counted() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let mut garbage = client_hello(&pki.client13());
    // Keep the record and handshake headers, spoil what follows.
    for b in &mut garbage[9..] {
        *b = 0xee;
    }
    for model in MODELS {
        let Some(server) = start_tls(model, &site, &pki, |_| {}) else {
            continue;
        };
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(&garbage).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        assert_eq!(
            got.first(),
            Some(&0x15),
            "{model}: no alert record: {got:?}"
        );
        let t = stop(server);
        assert_eq!(t.tls.failed_malformed, 1, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.failed(), 1, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.full, 0, "{model}");
    }
}

/// Plaintext HTTP to the HTTPS port gets nginx's 400 in plaintext, and is
/// counted.
#[test]
fn plaintext_http_to_the_https_port_is_answered_400_and_counted() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    for model in MODELS {
        let Some(server) = start_tls(model, &site, &pki, |_| {}) else {
            continue;
        };
        let mut s = TcpStream::connect(server.local_addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        assert!(
            text.starts_with("HTTP/1.1 400 Bad Request\r\n"),
            "{model}: {text}"
        );
        assert!(
            text.contains("The plain HTTP request was sent to HTTPS port"),
            "{model}"
        );
        let t = stop(server);
        assert_eq!(t.tls.failed_plaintext_http, 1, "{model}: {:?}", t.tls);
        assert_eq!(t.total_requests(), 1, "{model}: the 400 is counted");
    }
}

/// A second connection resumes the first one's session (TLS 1.3 ticket;
/// TLS 1.2 ticket or session ID), and the stats say so.
#[test]
fn resumed_handshakes_are_counted() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    for model in ["epoll", "threads", "uring-completion"] {
        for versions in [
            &[&rustls::version::TLS13][..],
            &[&rustls::version::TLS12][..],
        ] {
            let Some(server) = start_tls(model, &site, &pki, |_| {}) else {
                continue;
            };
            let client = pki.client(versions);
            for _ in 0..3 {
                let mut c = https(server.local_addr(), &client);
                // Reading the answer reads the tickets sent before it.
                assert_eq!(c.get("/six.txt").status, 200);
            }
            let c = https(server.local_addr(), &client);
            assert_eq!(
                c.s.conn.handshake_kind(),
                Some(rustls::HandshakeKind::Resumed),
                "{model} {versions:?}"
            );
            drop(c);
            let report = server.stop().unwrap();
            let t = report.totals();
            assert_eq!(t.tls.full, 1, "{model} {versions:?}: {:?}", t.tls);
            assert_eq!(t.tls.resumed, 3, "{model} {versions:?}: {:?}", t.tls);
            // The stats document says so.
            let doc = report.to_json();
            assert_eq!(doc["tls"]["handshakes_full"], 1, "{model}");
            assert_eq!(doc["tls"]["handshakes_resumed"], 3, "{model}");
            let failures = doc["tls"]["handshake_failures"].as_object().unwrap();
            assert_eq!(failures.len(), 7, "{model}: {failures:?}");
            assert!(failures.values().all(|v| v == 0), "{model}: {failures:?}");
        }
    }
}

/// A client that does not trust the certificate aborts with an alert: a
/// failure of its own kind; the server goes on serving.
#[test]
fn an_untrusting_client_is_counted_as_an_alert() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let other = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    for model in ["epoll", "threads", "uring-completion"] {
        let Some(server) = start_tls(model, &site, &pki, |_| {}) else {
            continue;
        };
        let sock = TcpStream::connect(server.local_addr()).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let conn = ClientConnection::new(other.client13(), name).unwrap();
        let mut s = StreamOwned::new(conn, sock);
        let mut failed = false;
        while s.conn.is_handshaking() {
            if s.conn.complete_io(&mut s.sock).is_err() {
                failed = true;
                break;
            }
        }
        assert!(failed, "{model}: the client trusted a stranger");
        drop(s);
        // Served as ever.
        let mut c = https(server.local_addr(), &pki.client13());
        assert_eq!(c.get("/six.txt").status, 200);
        drop(c);
        // The thread pool reads the alert on a thread of its own: give it
        // a moment.
        std::thread::sleep(Duration::from_millis(100));
        let t = stop(server);
        assert_eq!(t.tls.failed_alert, 1, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.full, 1, "{model}");
    }
}

/// A client that ends an established connection with a fatal alert (here
/// `bad_record_mac`: the client was handed one of the server's records
/// with a byte flipped) is counted as an alert after the handshake and a
/// client error; the server goes on serving.
#[test]
fn a_fatal_alert_after_the_handshake_is_counted() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    for model in ["epoll", "threads", "uring-completion"] {
        let Some(server) = start_tls(model, &site, &pki, |_| {}) else {
            continue;
        };
        let mut c = https(server.local_addr(), &pki.client13());
        c.s.conn
            .writer()
            .write_all(b"GET /six.txt HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        c.s.conn.write_tls(&mut c.s.sock).unwrap();
        // The answer's records, raw; one byte of the first one flipped.
        let mut raw = vec![0u8; 64 * 1024];
        let n = c.s.sock.read(&mut raw).unwrap();
        assert!(n > 10, "{model}: {n} bytes");
        raw[10] ^= 0x55;
        c.s.conn.read_tls(&mut &raw[..n]).unwrap();
        assert!(c.s.conn.process_new_packets().is_err(), "{model}");
        // The client's alert, encrypted, to the server.
        c.s.conn.write_tls(&mut c.s.sock).unwrap();
        let mut rest = Vec::new();
        let _ = c.s.sock.read_to_end(&mut rest);
        drop(c);
        let mut c = https(server.local_addr(), &pki.client13());
        assert_eq!(c.get("/six.txt").status, 200, "{model}");
        drop(c);
        std::thread::sleep(Duration::from_millis(100));
        let t = stop(server);
        assert_eq!(t.tls.alerts_after_handshake, 1, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.failed(), 0, "{model}: {:?}", t.tls);
        assert_eq!(t.tls.full, 2, "{model}");
    }
}

/// An RSA key made by `openssl` (ring signs with RSA keys but cannot make
/// them), if it is installed.
fn rsa_key() -> Option<KeyPair> {
    let out = std::process::Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => {
            let pem = String::from_utf8(o.stdout).unwrap();
            Some(KeyPair::from_pem_and_sign_algo(&pem, &rcgen::PKCS_RSA_SHA256).unwrap())
        }
        _ => {
            eprintln!("skipping RSA: openssl cannot make a key here");
            None
        }
    }
}

/// RSA, Ed25519 and P-384 certificates, over TLS 1.3 and 1.2.
#[test]
fn other_key_types_and_tls12() {
    let site = site();
    let mut pkis = vec![
        Pki::new(&rcgen::PKCS_ED25519),
        Pki::new(&rcgen::PKCS_ECDSA_P384_SHA384),
    ];
    pkis.extend(rsa_key().map(Pki::with_key));
    for (alg, pki) in pkis.iter().enumerate() {
        let Some(server) = start_tls("epoll", &site, pki, |_| {}) else {
            return;
        };
        for versions in [
            &[&rustls::version::TLS13][..],
            &[&rustls::version::TLS12][..],
        ] {
            let mut c = https(server.local_addr(), &pki.client(versions));
            let r = c.get("/six.txt");
            assert_eq!((r.status, &r.body), (200, &site.small));
            assert_eq!(
                c.s.conn.protocol_version(),
                Some(versions[0].version),
                "{alg:?}"
            );
        }
        let t = stop(server);
        assert_eq!(t.tls.full, 2);
    }
}

fn vm_rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// A client reading a large file slowly: the server (a child process, so
/// its memory is its own) holds a bounded amount, not the file; the file
/// then arrives whole.
#[test]
fn a_slow_reader_of_a_large_file_holds_bounded_memory() {
    const SIZE: usize = 96 << 20;
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let byte = |i: usize| (i % 251) as u8;
    {
        let mut f = std::fs::File::create(site.root.join("huge.bin")).unwrap();
        let block: Vec<u8> = (0..SIZE / 16).map(byte).collect();
        for _ in 0..16 {
            f.write_all(&block).unwrap();
        }
    }
    for model in ["epoll", "threads", "uring-completion"] {
        let cmd = ServeCommand {
            tls_cert: Some(pki.cert()),
            tls_key: Some(pki.key()),
            ..ServeCommand::loopback(&site.root, model)
        };
        let served = common::spawn(&cmd);
        let pid = served.child.id();
        let client = pki.client13();
        // Warm up: a handshake and a request, so what follows measures the
        // large answer only.
        let mut c = https(served.addr, &client);
        assert_eq!(c.get("/six.txt").status, 200);
        let before = vm_rss_kib(pid);
        c.send(b"GET /huge.bin HTTP/1.1\r\nHost: t\r\n\r\n");
        c.s.flush().unwrap();
        let mut first = vec![0u8; 1 << 20];
        c.s.read_exact(&mut first).unwrap();
        // The client stops reading; the server fills the socket buffers
        // and must then wait, holding what it has encrypted.
        std::thread::sleep(Duration::from_millis(700));
        let during = vm_rss_kib(pid);
        assert!(
            during < before + 16 * 1024,
            "{model}: the server grew from {before} KiB to {during} KiB for a slow reader"
        );
        // The rest arrives whole: the head, then every byte in order.
        let head_end = first.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let head = String::from_utf8_lossy(&first[..head_end]).to_string();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains(&format!("Content-Length: {SIZE}")), "{head}");
        let mut at = 0usize;
        let check = |bytes: &[u8], at: &mut usize| {
            for &b in bytes {
                assert_eq!(b, byte(*at % (SIZE / 16)), "{model}: byte {at}");
                *at += 1;
            }
        };
        check(&first[head_end..], &mut at);
        let mut buf = vec![0u8; 1 << 16];
        while at < SIZE {
            let n = c.s.read(&mut buf).unwrap();
            assert!(n > 0, "{model}: closed at {at}");
            check(&buf[..n], &mut at);
        }
        assert_eq!(at, SIZE);
    }
}

/// Start-up refuses a key that does not match the certificate, with the
/// reason and a non-zero exit.
#[test]
fn a_mismatched_key_fails_start_up() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let other = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let cmd = ServeCommand {
        tls_cert: Some(pki.cert()),
        tls_key: Some(other.key()),
        ..ServeCommand::loopback(&site.root, "epoll")
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
        .args(cmd.args())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match the certificate"), "{err}");
    assert!(out.stdout.is_empty(), "it listened: {:?}", out.stdout);
}
