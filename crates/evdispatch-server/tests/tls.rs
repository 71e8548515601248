//! HTTPS end to end on loopback: certificates made here with rcgen (a CA
//! and a server certificate it signed), rustls clients, the readiness model
//! on several mechanisms (level- and edge-triggered, select, an RT-signal
//! one) and the thread pool; the handshake counters; hostile handshakes.

mod common;

use std::io::{self, BufRead, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{site, start, Client, Site};
use evdispatch_server::cmdline::ServeCommand;
use evdispatch_server::{
    CertPair, Counters, Listen, LogFormat, Model, Server, ServerConfig, TlsConfig,
};
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
    issuer: CertifiedIssuer<'static, KeyPair>,
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
            issuer: ca,
        }
    }

    /// Another certificate the CA signs, for `names`, written as
    /// `NAME.pem` and `NAME.key` (over any earlier ones); its DER.
    fn leaf(&self, file: &str, names: &[&str]) -> CertificateDer<'static> {
        let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        // A subject of its own: the same as the CA's would make OpenSSL take
        // the certificate for a self-signed one.
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, names[0]);
        let leaf = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(self.path(&format!("{file}.pem")), leaf.pem()).unwrap();
        std::fs::write(self.path(&format!("{file}.key")), key.serialize_pem()).unwrap();
        leaf.der().clone()
    }

    fn path(&self, file: &str) -> PathBuf {
        self.dir.path().join(file)
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
    https_to(addr, cfg, "localhost").expect("the handshake")
}

/// An HTTPS connection to `addr` for `name` (a DNS name is sent as SNI,
/// an IP address is not), handshake done; the handshake's error.
fn https_to(addr: SocketAddr, cfg: &Arc<ClientConfig>, name: &str) -> io::Result<Client<Tls>> {
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let name = ServerName::try_from(name.to_string()).unwrap();
    let conn = ClientConnection::new(cfg.clone(), name).unwrap();
    let mut s = StreamOwned::new(conn, sock);
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock)?;
    }
    Ok(Client::over(s))
}

/// The certificate the server presented on `c`.
fn served_cert(c: &Client<Tls>) -> CertificateDer<'static> {
    c.s.conn.peer_certificates().unwrap()[0]
        .clone()
        .into_owned()
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

/// One server, HTTPS on one address and plain HTTP on another, on every
/// model (readiness on every mechanism): the same files on both; HSTS only over TLS; the access log's TLS
/// fields. Then `--redirect-https`: the plain address answers 301 to the
/// HTTPS one, the path and query kept.
#[test]
fn https_and_plain_http_side_by_side_with_hsts_and_redirect() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let client = pki.client13();
    let any = "127.0.0.1:0".parse().unwrap();
    let both = vec![
        Listen {
            addr: any,
            tls: true,
        },
        Listen::plain(any),
    ];
    std::thread::scope(|scope| {
        for model in Model::all().into_iter().map(Model::name) {
            let (site, pki, client, both) = (&site, &pki, &client, &both);
            scope.spawn(move || {
                let log = site.dir.path().join(format!("{model}.log"));
                let Some(server) = start_tls(model, site, pki, |cfg| {
                    cfg.listen = both.clone();
                    cfg.hsts = Some(600);
                    cfg.access_log = Some(log.clone());
                    cfg.access_log_format = LogFormat::CombinedTls;
                }) else {
                    return;
                };
                let l = server.listening().to_vec();
                assert!(l[0].tls && !l[1].tls, "{model}: {l:?}");
                assert_eq!(server.local_addr(), l[0].addr);
                let mut s = https(l[0].addr, client);
                let r = s.get("/six.txt");
                assert_eq!((r.status, &r.body), (200, &site.small), "{model}");
                assert_eq!(
                    r.header("strict-transport-security"),
                    Some("max-age=600"),
                    "{model}"
                );
                let mut p = Client::connect(l[1].addr);
                let r = p.get("/six.txt");
                assert_eq!((r.status, &r.body), (200, &site.small), "{model}");
                assert_eq!(r.header("strict-transport-security"), None, "{model}");
                drop((s, p));
                stop(server);
                let text = std::fs::read_to_string(&log).unwrap();
                let mut lines: Vec<&str> = text.lines().collect();
                lines.sort_by_key(|l| l.ends_with(" - -"));
                assert_eq!(lines.len(), 2, "{model}: {text}");
                // The client (rustls) lists AES-256-GCM first; the server's
                // order decides: AES-128-GCM where AES is in hardware.
                let suite = if evdispatch_server::aes_in_hardware() {
                    "TLS_AES_128_GCM_SHA256"
                } else {
                    "TLS_CHACHA20_POLY1305_SHA256"
                };
                assert!(
                    lines[0].ends_with(&format!(" TLSv1.3 {suite}")),
                    "{model}: {text}"
                );
                assert!(lines[1].ends_with("\" - -"), "{model}: {text}");

                // --redirect-https.
                let Some(server) = start_tls(model, site, pki, |cfg| {
                    cfg.listen = both.clone();
                    cfg.redirect_https = true;
                    cfg.hsts = Some(600);
                }) else {
                    return;
                };
                let l = server.listening().to_vec();
                let port = l[0].addr.port();
                let mut p = Client::connect(l[1].addr);
                p.send(b"GET /six.txt?a=1&b=2 HTTP/1.1\r\nHost: site.test:8080\r\n\r\n");
                let r = p.response(false).unwrap();
                assert_eq!(r.status, 301, "{model}");
                let want = format!("https://site.test:{port}/six.txt?a=1&b=2");
                assert_eq!(r.header("location"), Some(want.as_str()), "{model}");
                assert_eq!(r.header("strict-transport-security"), None, "{model}");
                // Kept alive; a HEAD too; an IPv6 literal's port goes.
                p.send(b"HEAD /dir/ HTTP/1.1\r\nHost: [::1]:80\r\n\r\n");
                let r = p.response(true).unwrap();
                assert_eq!(r.status, 301, "{model}");
                let want = format!("https://[::1]:{port}/dir/");
                assert_eq!(r.header("location"), Some(want.as_str()), "{model}");
                // The HTTPS address serves.
                let r = https(l[0].addr, client).get("/six.txt");
                assert_eq!(r.status, 200, "{model}");
                stop(server);
            });
        }
    });
}

/// Several certificates: each handshake gets the one whose names match its
/// SNI name, exactly or by wildcard; without SNI, the first.
#[test]
fn sni_chooses_among_several_certificates() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let default = pki.leaf("default", &["localhost", "127.0.0.1"]);
    let wild = pki.leaf("wild", &["*.wild.test"]);
    let exact = pki.leaf("exact", &["exact.wild.test"]);
    let pair = |f: &str| CertPair {
        cert: pki.path(&format!("{f}.pem")),
        key: pki.path(&format!("{f}.key")),
    };
    let tls = TlsConfig::load_pairs(&[pair("default"), pair("wild"), pair("exact")], &[]).unwrap();
    // A client of its own for each connection: none resumes a session.
    let client = || pki.client13();
    for model in ["epoll", "threads", "uring-completion"] {
        let Some(server) = start(model.parse().unwrap(), &site.root, |cfg| {
            cfg.tls = Some(tls.clone());
        }) else {
            continue;
        };
        let a = server.local_addr();
        for (name, want) in [
            ("exact.wild.test", &exact),
            ("any.wild.test", &wild),
            ("localhost", &default),
            ("127.0.0.1", &default),
        ] {
            let mut c = https_to(a, &client(), name).unwrap();
            assert!(served_cert(&c) == *want, "{model}: {name}");
            assert_eq!(c.get("/six.txt").status, 200, "{model}: {name}");
        }
        // No certificate names it: the default is served, which the client
        // refuses for that name.
        let e = https_to(a, &client(), "other.test").err().unwrap();
        let e = e.to_string();
        assert!(
            e.contains("not valid for name \"other.test\"") && e.contains("\"localhost\""),
            "{model}: {e}"
        );
        stop(server);
    }
}

/// `evdispatch-serve` over HTTPS as a child process, its stderr lines sent
/// to a channel; its address.
fn spawn_https(args: &[std::ffi::OsString]) -> (std::process::Child, SocketAddr, Receiver<String>) {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in io::BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut line = String::new();
    io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on https://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    (child, addr, rx)
}

/// The first line from `rx` containing `what` (within 10 s).
fn stderr_line(rx: &Receiver<String>, what: &str) -> String {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(10) {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(100)) {
            if l.contains(what) {
                return l;
            }
        }
    }
    panic!("no stderr line with {what:?}");
}

fn kill(child: &std::process::Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig}");
}

/// SIGHUP reloads the certificate: new connections get the new one, an
/// open connection goes on; a broken new file keeps the old one serving,
/// with the reason on stderr.
#[test]
fn sighup_reloads_certificates_and_keeps_the_old_one_when_broken() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    // A client of its own for each connection: none resumes a session
    // (whose certificate would be the one of its first handshake).
    let fresh = |addr| https(addr, &pki.client13());
    for mechanism in ["epoll", "rtsig", "threads"] {
        let first = pki.leaf("live", &["localhost"]);
        let cmd = ServeCommand {
            tls_cert: Some(pki.path("live.pem")),
            tls_key: Some(pki.path("live.key")),
            ..ServeCommand::loopback(&site.root, mechanism)
        };
        let (mut child, addr, err) = spawn_https(&cmd.args());
        let mut open = fresh(addr);
        assert!(served_cert(&open) == first, "{mechanism}");
        let second = pki.leaf("live", &["localhost"]);
        kill(&child, "-HUP");
        stderr_line(&err, "reloaded");
        let c = fresh(addr);
        assert!(served_cert(&c) == second, "{mechanism}: not the new one");
        assert_eq!(open.get("/six.txt").status, 200, "{mechanism}");
        assert!(served_cert(&open) == first, "{mechanism}");

        // A key that does not match, then a file that is not PEM.
        std::fs::write(
            pki.path("live.key"),
            KeyPair::generate().unwrap().serialize_pem(),
        )
        .unwrap();
        kill(&child, "-HUP");
        let l = stderr_line(&err, "not reloaded");
        assert!(l.contains("does not match"), "{l}");
        assert!(served_cert(&fresh(addr)) == second, "{mechanism}");
        std::fs::write(pki.path("live.pem"), "garbage").unwrap();
        kill(&child, "-HUP");
        stderr_line(&err, "not reloaded");
        let mut c = fresh(addr);
        assert!(served_cert(&c) == second, "{mechanism}");
        assert_eq!(c.get("/six.txt").status, 200, "{mechanism}");
        kill(&child, "-TERM");
        assert!(child.wait().unwrap().success(), "{mechanism}");
    }
}

/// Start-up: a `--server-name` no certificate names is warned about (and
/// served); `ADDR,tls` without a certificate, and unpaired files, fail.
#[test]
fn start_up_checks_of_the_https_front() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let run = |extra: &[&str]| {
        let mut cmd = ServeCommand::loopback(&site.root, "epoll");
        cmd.extra = extra.iter().map(|a| a.into()).collect();
        cmd
    };
    let cert = pki.cert().display().to_string();
    let key = pki.key().display().to_string();
    let cmd = run(&[
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--server-name",
        "www.example.test",
    ]);
    let (mut child, addr, err) = spawn_https(&cmd.args());
    let l = stderr_line(&err, "www.example.test");
    assert!(
        l.contains("warning") && l.contains("no --tls-cert names it"),
        "{l}"
    );
    assert_eq!(https(addr, &pki.client13()).get("/").status, 200);
    kill(&child, "-TERM");
    assert!(child.wait().unwrap().success());

    for (extra, why) in [
        (vec!["--listen", "127.0.0.1:0,tls"], "needs --tls-cert"),
        (
            vec!["--tls-cert", &cert, "--tls-cert", &cert, "--tls-key", &key],
            "they go in pairs",
        ),
        (vec!["--listen", "127.0.0.1:0,ssl"], "unknown option"),
    ] {
        let mut cmd = run(&extra);
        cmd.listen = None;
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
            .args(cmd.args())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{extra:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.contains(why), "{extra:?}: {e}");
    }
}

/// `program` can be run here (`program version_arg` succeeds); else the
/// reason a test skips is printed.
fn have(program: &str, version_arg: &str) -> bool {
    let ok = std::process::Command::new(program)
        .arg(version_arg)
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipping: {program} is not installed");
    }
    ok
}

/// curl follows the plain address's 301 to the HTTPS one, sending the
/// host's name as SNI and getting that host's certificate (the CA's PEM
/// trusted), and sees HSTS there; `openssl s_client` gets the wildcard
/// certificate for a name under it, and the default without SNI.
#[test]
fn curl_follows_the_redirect_and_openssl_sees_the_sni_certificates() {
    if !have("curl", "--version") {
        return;
    }
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    pki.leaf("site", &["site.test"]);
    pki.leaf("wild", &["*.wild.test"]);
    std::fs::write(pki.path("ca.pem"), pki.issuer.pem()).unwrap();
    let pair = |f: &str| CertPair {
        cert: pki.path(&format!("{f}.pem")),
        key: pki.path(&format!("{f}.key")),
    };
    let tls = TlsConfig::load_pairs(&[pair("wild"), pair("site")], &[]).unwrap();
    let any = "127.0.0.1:0".parse().unwrap();
    let server = start(
        Model::Readiness(evdispatch::Mechanism::Epoll),
        &site.root,
        |cfg| {
            cfg.tls = Some(tls);
            cfg.listen = vec![
                Listen::plain(any),
                Listen {
                    addr: any,
                    tls: true,
                },
            ];
            cfg.redirect_https = true;
            cfg.hsts = Some(31_536_000);
        },
    )
    .unwrap();
    let (plain, secure) = (server.listening()[0].addr, server.listening()[1].addr);
    let port = secure.port();
    let out = std::process::Command::new("curl")
        .args(["-sS", "-L", "-D", "-", "--max-time", "10", "--cacert"])
        .arg(pki.path("ca.pem"))
        .arg("--resolve")
        .arg(format!("site.test:{port}:127.0.0.1"))
        .arg("--resolve")
        .arg(format!("site.test:{}:127.0.0.1", plain.port()))
        .arg(format!("http://site.test:{}/six.txt?x=1", plain.port()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let heads: Vec<&str> = text.split("\r\n\r\n").collect();
    assert!(heads[0].starts_with("HTTP/1.1 301"), "{text}");
    assert!(
        heads[0].contains(&format!("Location: https://site.test:{port}/six.txt?x=1")),
        "{text}"
    );
    assert!(!heads[0].contains("Strict-Transport-Security"), "{text}");
    assert!(heads[1].starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        heads[1].contains("Strict-Transport-Security: max-age=31536000"),
        "{text}"
    );
    assert!(
        text.ends_with(std::str::from_utf8(&site.small).unwrap()),
        "{text}"
    );

    if have("openssl", "version") {
        let subject_alt = |sni: Option<&str>| {
            let mut cmd = std::process::Command::new("openssl");
            cmd.args(["s_client", "-connect", &secure.to_string(), "-showcerts"]);
            match sni {
                Some(n) => cmd.args(["-servername", n]),
                None => cmd.arg("-noservername"),
            };
            let out = cmd.stdin(std::process::Stdio::null()).output().unwrap();
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let leaf_pem = |f: &str| std::fs::read_to_string(pki.path(&format!("{f}.pem"))).unwrap();
        let body = |pem: &str| {
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>()
        };
        let served = |sni| body(&subject_alt(sni));
        assert!(served(Some("a.wild.test")).contains(&body(&leaf_pem("wild"))));
        assert!(served(Some("site.test")).contains(&body(&leaf_pem("site"))));
        assert!(
            served(None).contains(&body(&leaf_pem("wild"))),
            "no SNI: the first pair"
        );
    }
    stop(server);
}

/// The SHA-256 of the public key of `key` (a PEM private key), base64: the
/// form Chromium's `--ignore-certificate-errors-spki-list` takes. `None`
/// without openssl.
fn spki_sha256_base64(key: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            "openssl pkey -in \"$1\" -pubout -outform der | openssl dgst -sha256 -binary \
             | openssl base64 -A",
        )
        .arg("sh")
        .arg(key)
        .output()
        .ok()?;
    let hash = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && hash.len() == 44).then_some(hash)
}

/// Headless Chromium loads a page over HTTPS (HTTP/1.1 by ALPN, TLS 1.3),
/// trusting the server's key and nothing else, resolving no name but
/// localhost; wrk (OpenSSL) runs keep-alive requests over HTTPS without an
/// error. The access log has Chromium's request with the TLS version, and
/// each of wrk's.
#[test]
fn chromium_and_wrk_over_https() {
    let site = site();
    let pki = Pki::new(&rcgen::PKCS_ECDSA_P256_SHA256);
    let log = site.dir.path().join("access.log");
    let Some(server) = start_tls("epoll", &site, &pki, |cfg| {
        cfg.access_log = Some(log.clone());
        cfg.access_log_format = LogFormat::CombinedTls;
    }) else {
        return;
    };
    let port = server.local_addr().port();
    let chromium = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|c| which(c));
    let mut browsed = false;
    match (chromium, spki_sha256_base64(&pki.key())) {
        (Some(chromium), Some(spki)) => {
            let profile = tempfile::tempdir().unwrap();
            // `timeout` bounds a browser that would hang.
            let out = std::process::Command::new("timeout")
                .args([
                    "60",
                    chromium,
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                ])
                .args([
                    "--no-first-run",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--disable-sync",
                    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE localhost",
                ])
                .arg(format!("--user-data-dir={}", profile.path().display()))
                .arg(format!("--ignore-certificate-errors-spki-list={spki}"))
                .arg("--dump-dom")
                .arg(format!("https://localhost:{port}/"))
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let dom = String::from_utf8_lossy(&out.stdout);
            assert!(
                dom.contains("<h1>home</h1>"),
                "chromium did not load the page: {dom}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            browsed = true;
        }
        _ => eprintln!("skipping the browser: chromium or openssl is not installed"),
    }
    let mut wrk_done = None;
    if which("wrk") {
        let out = std::process::Command::new("wrk")
            .args(["-t1", "-c4", "-d1s"])
            .arg(format!("https://127.0.0.1:{port}/six.txt"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(!text.contains("Socket errors"), "{text}");
        assert!(!text.contains("Non-2xx"), "{text}");
        let done: u64 = text
            .lines()
            .find_map(|l| l.trim().split_once(" requests in "))
            .and_then(|(n, _)| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no request count: {text}"));
        assert!(done > 100, "{text}");
        wrk_done = Some(done);
    } else {
        eprintln!("skipping wrk: not installed");
    }
    stop(server);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    if browsed {
        assert!(
            text.lines().any(|l| l.contains("\"GET / HTTP/1.1\" 200 ")
                && l.contains("HeadlessChrome")
                && l.contains(" TLSv1.3 TLS_")),
            "{text}"
        );
    }
    if let Some(done) = wrk_done {
        let logged = text
            .lines()
            .filter(|l| l.contains("\"GET /six.txt HTTP/1.1\" 200 6144 ") && l.contains(" TLSv1."))
            .count() as u64;
        // wrk counts what finished in its window; the log also has the
        // replies in flight when it stopped (at most one per connection).
        assert!(
            (done..=done + 4).contains(&logged),
            "wrk {done}, log {logged}"
        );
    }
}

/// Whether `program` is on PATH.
fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
}
