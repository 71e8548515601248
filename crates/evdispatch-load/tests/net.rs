//! Targets, HTTPS and request mixes against a recording server made here
//! (plain or rustls, certificate made at run time with rcgen), and HTTPS
//! against nginx when it is installed. Loopback only.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evdispatch_harness::{docroot, skip_reason, start_peer, Peer, PeerConfig, PeerTls, Tool};
use evdispatch_load::{execute, Config, RunOptions, Summary};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A CA and a server certificate it signed, written as PEM files.
struct Certs {
    dir: tempfile::TempDir,
}

impl Certs {
    fn new(names: &[&str]) -> Certs {
        let dir = tempfile::tempdir().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let leaf = CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Certs { dir }
    }
    fn path(&self, f: &str) -> PathBuf {
        self.dir.path().join(f)
    }
    fn ca(&self) -> String {
        self.path("ca.pem").display().to_string()
    }
}

/// What the recording server saw.
#[derive(Default)]
struct Seen {
    connections: AtomicU64,
    handshakes: AtomicU64,
    /// Handshakes that resumed an earlier session.
    resumed: AtomicU64,
    /// Complete requests: head text and body.
    requests: Mutex<Vec<(String, Vec<u8>)>>,
}

/// A thread-per-connection HTTP/1.1 server that records every request and
/// answers `ok` (keep-alive), over TLS when given a configuration.
struct Recorder {
    addr: SocketAddr,
    seen: Arc<Seen>,
}

impl Recorder {
    fn start(bind: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Recorder {
        let (addr, seen) = accept_each(bind, move |sock, s| {
            let _ = sock.set_read_timeout(Some(Duration::from_secs(20)));
            match tls.clone() {
                None => serve(sock, s),
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    let mut stream = rustls::StreamOwned::new(conn, sock);
                    while stream.conn.is_handshaking() {
                        if stream.conn.complete_io(&mut stream.sock).is_err() {
                            return;
                        }
                    }
                    s.handshakes.fetch_add(1, Ordering::Relaxed);
                    if stream.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed) {
                        s.resumed.fetch_add(1, Ordering::Relaxed);
                    }
                    serve(stream, s)
                }
            }
        });
        Recorder { addr, seen }
    }
    fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
    fn http(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    fn requests(&self) -> Vec<(String, Vec<u8>)> {
        self.seen.requests.lock().unwrap().clone()
    }
}

/// Listen on `bind` and run `handle` on a thread for each connection,
/// counted in the returned [`Seen`].
fn accept_each(
    bind: &str,
    handle: impl Fn(TcpStream, &Seen) + Clone + Send + 'static,
) -> (SocketAddr, Arc<Seen>) {
    accept_on(TcpListener::bind(bind).unwrap(), handle)
}

/// [`accept_each`] on a listener made by the caller.
fn accept_on(
    l: TcpListener,
    handle: impl Fn(TcpStream, &Seen) + Clone + Send + 'static,
) -> (SocketAddr, Arc<Seen>) {
    let addr = l.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let s = seen.clone();
    std::thread::spawn(move || {
        for sock in l.incoming() {
            let Ok(sock) = sock else { return };
            let (s, handle) = (s.clone(), handle.clone());
            s.connections.fetch_add(1, Ordering::Relaxed);
            std::thread::spawn(move || handle(sock, &s));
        }
    });
    (addr, seen)
}

/// A request head up to its blank line; `None` at the end of the stream.
fn read_head(r: &mut impl BufRead) -> Option<String> {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        head.push_str(&line);
        if line == "\r\n" {
            return Some(head);
        }
    }
}

fn serve<S: Read + Write>(stream: S, seen: &Seen) {
    let mut r = BufReader::new(stream);
    while let Some(head) = read_head(&mut r) {
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0; len];
        if r.read_exact(&mut body).is_err() {
            return;
        }
        let is_head = head.starts_with("HEAD ");
        seen.requests.lock().unwrap().push((head, body));
        let reply: &[u8] = if is_head {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        };
        if r.get_mut()
            .write_all(reply)
            .and_then(|_| r.get_mut().flush())
            .is_err()
        {
            return;
        }
    }
}

fn server_config(
    certs: &Certs,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ServerConfig> {
    let chain = CertificateDer::pem_file_iter(certs.path("cert.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = PrivateKeyDer::from_pem_file(certs.path("key.pem")).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut c = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(versions)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    c.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(c)
}

fn config(url: &str, args: &str) -> Config {
    Config::from_command_line(std::iter::once(url).chain(args.split_whitespace()))
        .expect("valid configuration")
}

fn run(url: &str, args: &str) -> anyhow::Result<Summary> {
    execute(&config(url, args), &RunOptions::default())
}

/// [`run`] on `--engine engine`; `None` (said) where io_uring is not
/// available.
fn run_on(engine: &str, url: &str, args: &str) -> Option<Summary> {
    match run(url, &format!("{args} --engine {engine}")) {
        Ok(s) => Some(s),
        Err(e) if format!("{e:#}").contains("cannot set up an io_uring") => {
            eprintln!("skipped on {engine}: {e:#}");
            None
        }
        Err(e) => panic!("{engine}: {e:#}"),
    }
}

/// `len` bytes of a pattern that repeats every 251 (a prime, so a body cut
/// or shifted anywhere does not match itself).
fn patterned(len: u32) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

fn all_versions() -> Vec<&'static rustls::SupportedProtocolVersion> {
    vec![&rustls::version::TLS13, &rustls::version::TLS12]
}

#[test]
fn every_workload_runs_over_tls() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let ca = certs.ca();
    let s = run(
        &server.url("/x"),
        &format!(
            "--sessions 20 --calls 2 --persistent 2 --rate 40 --idle 2 --inactive 2 --slow 2 \
             --slow-interval 5ms --duration 0.5 --cacert {ca}"
        ),
    )
    .unwrap();
    eprintln!("{:?} {:?}", s.errors, s.tls_handshake_us);
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    assert!(
        s.requests >= 18 && s.replies == s.requests,
        "{} {}",
        s.requests,
        s.replies
    );
    assert!(s.slow_replies > 0, "slow clients complete over TLS");
    assert!(s.tls_handshake_us.count > 0 && s.connect_us.count > 0);
    // Every connection was a handshake: 20 sessions, 2 persistent, 2 idle,
    // 2 inactive, the slow ones once per request, and the pre-flight.
    let hs = server.seen.handshakes.load(Ordering::Relaxed);
    let want = 20 + 2 + 2 + 2 + 2 + 1;
    assert!(hs >= want, "{hs} handshakes, want {want}");
    // Reconnects resume their session (the sessions' connections at least).
    let resumed = server.seen.resumed.load(Ordering::Relaxed);
    assert!(resumed >= 10, "{resumed} of {hs} handshakes resumed");
    // The inactive connections' partial requests never complete, so the
    // server saw the replies of every other kind, and at most one more
    // request per slow client (finished as the run ended, its reply never
    // read: the run does not wait for slow clients).
    let complete = server.requests().len() as u64;
    let replies = s.replies + s.slow_replies + s.unmeasured_replies;
    assert!(
        (replies..=replies + 2).contains(&complete),
        "{complete} requests completed by the server, {replies} replies"
    );
    assert!(server
        .requests()
        .iter()
        .all(|(h, _)| h.starts_with("GET /x HTTP/1.1\r\n")));

    // Closed loop too, on a level- and an edge-triggered poller.
    for mechanism in ["epoll", "epoll-et", "poll"] {
        let s = run(
            &format!("https://localhost:{}/", server.addr.port()),
            &format!(
                "--rate max --connections 2 --duration 0.3 --cacert {ca} --mechanism {mechanism}"
            ),
        )
        .unwrap();
        assert!(
            s.replies > 10 && s.errors_total == 0,
            "{mechanism}: {} {:?}",
            s.replies,
            s.errors
        );
    }
}

#[test]
fn tls_failures_are_named() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &all_versions())));
    let err = |url: &str, args: &str| format!("{:#}", run(url, args).unwrap_err());
    let e = err(&server.url("/"), "--idle 1");
    assert!(
        e.contains("unknown issuer") && e.contains("--cacert"),
        "{e}"
    );
    // A certificate issued for other names.
    let other = Certs::new(&["other.example"]);
    let wrong = Recorder::start("127.0.0.1:0", Some(server_config(&other, &all_versions())));
    let e = err(
        &wrong.url("/"),
        &format!("--idle 1 --cacert {}", other.ca()),
    );
    assert!(e.contains("name mismatch"), "{e}");
    // --insecure accepts it, and says so.
    let s = run(
        &wrong.url("/"),
        "--persistent 1 --rate 20 --duration 0.3 --insecure",
    )
    .unwrap();
    assert!(s.replies > 0 && s.errors_total == 0);
    assert!(
        s.warnings.iter().any(|w| w.contains("--insecure")),
        "{:?}",
        s.warnings
    );
    // Plain HTTP on the port: not TLS.
    let plain = Recorder::start("127.0.0.1:0", None);
    let e = err(&plain.url("/"), "--idle 1 --insecure");
    assert!(e.contains("TLS handshake"), "{e}");
    // A bad --cacert.
    let e = err(&server.url("/"), "--idle 1 --cacert /nonexistent/ca.pem");
    assert!(e.contains("--cacert"), "{e}");
}

#[test]
fn tls_1_2_only_and_1_3_only_servers() {
    let certs = Certs::new(&["127.0.0.1"]);
    for v in [&rustls::version::TLS12, &rustls::version::TLS13] {
        let server = Recorder::start("127.0.0.1:0", Some(server_config(&certs, &[v])));
        let s = run(
            &server.url("/"),
            &format!("--sessions 5 --rate 50 --cacert {}", certs.ca()),
        )
        .unwrap();
        assert_eq!(
            (s.replies, s.errors_total),
            (5, 0),
            "{v:?}: {:?}",
            s.warnings
        );
    }
}

#[test]
fn localhost_and_ipv6_and_the_first_address_refusing() {
    let three = |url: String| {
        let s = run(&url, "--sessions 3 --rate 50").unwrap();
        assert_eq!(s.replies, 3, "{url}");
        s
    };
    let v4 = Recorder::start("127.0.0.1:0", None);
    let s = three(format!("http://localhost:{}/", v4.addr.port()));
    assert!(s.config.addresses.iter().any(|a| a.ip().is_loopback()));
    if let Ok(l) = TcpListener::bind("[::1]:0") {
        drop(l);
        let v6 = Recorder::start("[::1]:0", None);
        three(format!("http://[::1]:{}/", v6.addr.port()));
        assert!(v6.requests()[0]
            .0
            .contains(&format!("Host: [::1]:{}", v6.addr.port())));
    } else {
        eprintln!("IPv6 part skipped: no ::1 on this machine");
    }
    // Two addresses, the first refusing: the run uses the second.
    let dead: SocketAddr = format!("127.0.0.1:{}", evdispatch_harness::free_port().unwrap())
        .parse()
        .unwrap();
    let mut cfg = config(&v4.http("/"), "--sessions 2 --rate 50");
    cfg.addresses = vec![dead, v4.addr];
    cfg.target = dead;
    let s = execute(&cfg, &RunOptions::default()).unwrap();
    assert_eq!((s.config.target, s.replies), (v4.addr, 2));
    assert_eq!(s.config.addresses, vec![dead, v4.addr]);
    // All refusing: one error naming them.
    cfg.addresses = vec![dead];
    let e = format!("{:#}", execute(&cfg, &RunOptions::default()).unwrap_err());
    assert!(
        e.contains("cannot connect") && e.contains(&dead.to_string()),
        "{e}"
    );
}

#[test]
fn method_body_and_headers_that_replace_the_defaults() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    std::fs::write(&body, b"hello\r\nworld").unwrap();
    let cfg = Config::from_command_line([
        server.http("/p?q=1").as_str(),
        "--sessions",
        "4",
        "--rate",
        "100",
        "--method",
        "PUT",
        "--body",
        body.to_str().unwrap(),
        "-H",
        "host: example.org",
        "--header",
        "X-Test: 1",
    ])
    .unwrap();
    let s = execute(&cfg, &RunOptions::default()).unwrap();
    assert_eq!(s.replies, 4);
    for (head, got) in server.requests() {
        assert!(head.starts_with("PUT /p?q=1 HTTP/1.1\r\n"), "{head}");
        let hosts: Vec<_> = head
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with("host:"))
            .collect();
        assert_eq!(hosts, ["host: example.org"], "{head}");
        assert!(head.contains("Content-Length: 12\r\n") && head.contains("X-Test: 1\r\n"));
        assert_eq!(got, b"hello\r\nworld");
    }
    // HEAD replies have no body: the parser must not wait for one.
    let s = run(
        &server.http("/"),
        "--persistent 1 --rate 50 --duration 0.3 --method HEAD --timeout 1",
    )
    .unwrap();
    assert!(s.replies > 0 && s.errors_total == 0, "{:?}", s.errors);
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
fn url_weights_are_respected() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("urls");
    std::fs::write(&f, format!("# two paths\n/a 3\n{} 1\n", server.http("/b"))).unwrap();
    let s = run(
        &server.http("/"),
        &format!(
            "--rate max --connections 1 --sessions 400 --duration 2 --urls {}",
            f.display()
        ),
    )
    .unwrap();
    let reqs = server.requests();
    let a = reqs
        .iter()
        .filter(|(h, _)| h.starts_with("GET /a "))
        .count();
    let b = reqs
        .iter()
        .filter(|(h, _)| h.starts_with("GET /b "))
        .count();
    assert_eq!(a + b, reqs.len());
    assert!(s.replies >= 100, "{}", s.replies);
    let share = a as f64 / (a + b) as f64;
    assert!(
        (0.65..0.85).contains(&share),
        "/a share {share} of {} (weight 3:1)",
        a + b
    );
}

#[test]
fn a_session_log_plays_bursts_in_order() {
    let server = Recorder::start("127.0.0.1:0", None);
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(
        &f,
        "# session 1\n/foo.html think=0.05\n\t/pict1.gif\n\t/pict2.gif\n/foo2.html method=POST contents='Post data'\n\n# session 2\n/foo3.html method=HEAD\n",
    )
    .unwrap();
    let s = run(
        &server.http("/"),
        &format!("--rate 20 --wsesslog 2,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (5, 0), "{:?}", s.errors);
    let heads: Vec<String> = server
        .requests()
        .iter()
        .map(|(h, b)| {
            format!(
                "{} {}",
                h.lines().next().unwrap(),
                String::from_utf8_lossy(b)
            )
        })
        .collect();
    let first: Vec<&str> = heads
        .iter()
        .filter(|h| !h.contains("foo3"))
        .map(|s| s.as_str())
        .collect();
    assert_eq!(
        first,
        [
            "GET /foo.html HTTP/1.1 ",
            "GET /pict1.gif HTTP/1.1 ",
            "GET /pict2.gif HTTP/1.1 ",
            "POST /foo2.html HTTP/1.1 Post data"
        ]
    );
    assert!(heads.iter().any(|h| h.starts_with("HEAD /foo3.html")));
    // A malformed log: FILE:LINE.
    std::fs::write(&f, "/a\n/b think=x\n").unwrap();
    let e = Config::from_command_line([
        server.http("/").as_str(),
        "--rate",
        "1",
        "--wsesslog",
        &format!("1,0,{}", f.display()),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(&format!("{}:2: expected think=", f.display())),
        "{e}"
    );
}

/// A server that ends every connection after its first reply: with
/// `Connection: close` on the reply (`announce`), or silently `idle` later,
/// as a keep-alive timeout does. Counts connections and requests by path.
fn closing_server(announce: bool, idle: Duration) -> (SocketAddr, Arc<Seen>) {
    accept_each("127.0.0.1:0", move |sock, s| {
        let mut r = BufReader::new(sock);
        let Some(head) = read_head(&mut r) else {
            return;
        };
        s.requests.lock().unwrap().push((head, Vec::new()));
        let reply: &[u8] = if announce {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        };
        let _ = r.get_mut().write_all(reply);
        if !announce {
            std::thread::sleep(idle);
        }
        // Dropping the socket closes the connection.
    })
}

#[test]
fn sessions_go_on_over_a_new_connection_when_the_server_closes() {
    // As httperf: a server may close between the calls of a session; the
    // rest of the session goes out over a new connection, not lost.
    let (addr, seen) = closing_server(true, Duration::ZERO);
    let s = run(
        &format!("http://{addr}/x"),
        "--rate 20 --sessions 4 --calls 3 --duration 1",
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (12, 0), "{:?}", s.errors);
    // One connection per call (and the generator's reachability check).
    assert_eq!(seen.requests.lock().unwrap().len(), 12);
    assert!(seen.connections.load(Ordering::Relaxed) >= 12);
    // Closed during a think time (a keep-alive timeout of 100 ms against a
    // think time of 300 ms): the next burst reconnects when it is due.
    let (addr, seen) = closing_server(false, Duration::from_millis(100));
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(&f, "/a think=0.3\n/b\n").unwrap();
    let s = run(
        &format!("http://{addr}/"),
        &format!("--rate 20 --duration 1 --wsesslog 2,0,{}", f.display()),
    )
    .unwrap();
    assert_eq!((s.replies, s.errors_total), (4, 0), "{:?}", s.errors);
    let b = seen
        .requests
        .lock()
        .unwrap()
        .iter()
        .filter(|(h, _)| h.starts_with("GET /b "))
        .count();
    assert_eq!(b, 2, "each session's second burst was sent");
}

// ---- nginx -------------------------------------------------------------

fn nginx_tls(
    certs: &Certs,
    protocols: &str,
) -> Option<(tempfile::TempDir, evdispatch_harness::ServerProcess)> {
    if let Some(why) = skip_reason(Tool::Nginx) {
        eprintln!("{why}");
        return None;
    }
    // Larger than a TLS record: replies span records and reads.
    let root = docroot(70_000, &[]).unwrap();
    let mut cfg = PeerConfig::new(root.path());
    cfg.keepalive_timeout_s = 1;
    cfg.request_timeout_s = 1;
    cfg.tls = Some(PeerTls {
        cert: certs.path("cert.pem"),
        key: certs.path("key.pem"),
        protocols: protocols.into(),
    });
    let server = start_peer(Peer::Nginx, &cfg).unwrap();
    Some((root, server))
}

fn nginx_url(server: &evdispatch_harness::ServerProcess, host: &str) -> String {
    format!("https://{host}:{}/index.html", server.addr().port())
}

#[test]
fn nginx_over_tls() {
    let certs = Certs::new(&["localhost", "127.0.0.1"]);
    let Some((_root, server)) = nginx_tls(&certs, "TLSv1.2 TLSv1.3") else {
        return;
    };
    let ca = certs.ca();
    let url = nginx_url(&server, "localhost");
    let s = run(
        &url,
        &format!("--sessions 10 --calls 2 --persistent 2 --rate 40 --slow 1 --slow-bytes 20 --slow-interval 5ms --duration 1 --cacert {ca}"),
    )
    .unwrap();
    assert_eq!(s.errors_total, 0, "{:?} {:?}", s.errors, s.warnings);
    // 60 requests offered (10 sessions of 2 calls, 40 persistent at 40/s over
    // 1 s): at least 28 must be answered, under half, a margin for a loaded
    // machine.
    assert!(
        s.replies == s.requests && s.replies >= 28 && s.slow_replies > 0,
        "replies {} of {} requests, slow {}",
        s.replies,
        s.requests,
        s.slow_replies
    );
    assert_eq!(
        s.status.get("2xx").copied().unwrap_or(0),
        s.replies + s.slow_replies + s.unmeasured_replies
    );
    // nginx closes idle and inactive connections after 1 s: reopened over TLS.
    let s = run(
        &url,
        &format!("--idle 2 --inactive 2 --duration 2.5 --cacert {ca}"),
    )
    .unwrap();
    assert!(s.reopens >= 4, "reopens {}: {:?}", s.reopens, s.errors);
    // Without --cacert: unknown issuer, a non-zero exit for the CLI.
    let e = format!("{:#}", run(&url, "--idle 1").unwrap_err());
    assert!(e.contains("unknown issuer"), "{e}");
    let e = format!(
        "{:#}",
        run(
            &nginx_url(&server, "127.0.0.2"),
            &format!("--idle 1 --cacert {ca}")
        )
        .unwrap_err()
    );
    assert!(
        e.contains("name mismatch") || e.contains("cannot connect"),
        "{e}"
    );
    let s = run(&url, "--rate max --connections 2 --duration 0.3 --insecure").unwrap();
    assert!(s.replies > 0 && s.errors_total == 0);
}

#[test]
fn nginx_tls_1_2_only_1_3_only_and_too_old() {
    let certs = Certs::new(&["127.0.0.1"]);
    for p in ["TLSv1.2", "TLSv1.3"] {
        let Some((_root, server)) = nginx_tls(&certs, p) else {
            return;
        };
        let s = run(
            &nginx_url(&server, "127.0.0.1"),
            &format!("--sessions 5 --rate 50 --cacert {}", certs.ca()),
        )
        .unwrap();
        assert_eq!((s.replies, s.errors_total), (5, 0), "{p}: {:?}", s.warnings);
    }
    // A server that only speaks versions older than 1.2.
    let Some((_root, server)) = nginx_tls(&certs, "TLSv1 TLSv1.1") else {
        return;
    };
    let url = nginx_url(&server, "127.0.0.1");
    let e = format!(
        "{:#}",
        run(&url, &format!("--idle 1 --cacert {}", certs.ca())).unwrap_err()
    );
    assert!(e.contains("protocol version"), "{e}");
}

/// Reads a request's head, answers at once (keep-alive), then, a moment
/// later, reads its body: a server that replies before the upload is read
/// (a 401 or 413 does), recording each request as it read it.
fn early_server() -> (SocketAddr, Arc<Seen>) {
    accept_on(small_buffer_listener(), |sock, s| {
        let _ = sock.set_read_timeout(Some(Duration::from_secs(20)));
        let mut r = BufReader::new(sock);
        while let Some(head) = read_head(&mut r) {
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("Content-Length: ")?.parse().ok())
                .unwrap_or(0);
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if r.get_mut().write_all(reply).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
            let mut body = vec![0; len];
            let complete = r.read_exact(&mut body).is_ok();
            s.requests.lock().unwrap().push((head, body));
            if !complete {
                return;
            }
        }
    })
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

/// A listener on 127.0.0.1 whose connections have a small receive buffer
/// (inherited by the accepted sockets, and not grown by the kernel): a
/// client cannot have a large body out before a reply comes.
fn small_buffer_listener() -> TcpListener {
    let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.set_recv_buffer_size(16 * 1024).unwrap();
    l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    l.listen(64).unwrap();
    l.into()
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

#[test]
fn closed_loop_sessions_run_exactly_n_and_end_with_the_last() {
    let server = Recorder::start("127.0.0.1:0", None);
    for (n, c) in [(1, 2), (3, 2), (7, 3)] {
        let before = server.requests().len();
        let t = std::time::Instant::now();
        let s = run(
            &server.http("/cl"),
            &format!("--rate max -c {c} --sessions {n}"),
        )
        .unwrap();
        let took = t.elapsed();
        assert_eq!(server.requests().len() - before, n, "-c {c} --sessions {n}");
        assert_eq!((s.requests, s.replies), (n as u64, n as u64));
        assert!(s.config.run_to_end);
        // Not the default 10 s: the window is the sessions' time.
        assert!(took < Duration::from_secs(3), "{took:?}");
        assert!(s.duration_s < 1.0 && s.duration_s == s.config.duration_s);
        assert!(s.reply_rate > n as f64, "{}", s.reply_rate);
    }
}

/// A keep-alive server that answers each request after `delay`, counting
/// requests (heads only).
fn delay_server(delay: Duration) -> (SocketAddr, Arc<Seen>) {
    accept_each("127.0.0.1:0", move |sock, s| {
        let mut r = BufReader::new(sock);
        while let Some(head) = read_head(&mut r) {
            s.requests.lock().unwrap().push((head, Vec::new()));
            std::thread::sleep(delay);
            let reply = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
            if r.get_mut().write_all(reply).is_err() {
                return;
            }
        }
    })
}

#[test]
fn sessions_run_to_their_end_or_are_counted_unfinished() {
    let (addr, seen) = delay_server(Duration::from_millis(200));
    let url = format!("http://{addr}/delay");
    let sent = |seen: &Seen| seen.requests.lock().unwrap().len() as u64;
    // Without --duration (httperf): every call of every session, measured.
    let s = run(&url, "--sessions 3 --calls 3 --rate 10").unwrap();
    assert_eq!((s.requests, s.replies, sent(&seen)), (9, 9, 9));
    assert_eq!((s.status["2xx"], s.sessions_unfinished), (9, 0));
    assert!(s.duration_s > 0.6 && s.duration_s < 2.0, "{}", s.duration_s);
    // A session log's think times fire for as long as sessions run.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.log");
    std::fs::write(&f, "/a\n\n/b think=0.2\n/c\n").unwrap();
    let s = run(&url, &format!("--rate 10 --wsesslog 2,0.1,{}", f.display())).unwrap();
    assert_eq!((s.requests, s.replies, s.sessions_unfinished), (3, 3, 0));
    // With --duration: the calls after the window are not made, and the
    // sessions cut short are counted; what was sent was measured. Sessions
    // begin at 0, 0.1 and 0.2 s and their replies come 0.2 s apart, so no
    // reply is due within 50 ms of the end at 0.35 s; and every session has
    // its third call (0.4 s after its start at the earliest) cut, whenever
    // a loaded machine handles what.
    let before = sent(&seen);
    let s = run(&url, "--sessions 3 --calls 3 --rate 10 --duration 0.35").unwrap();
    assert_eq!(
        sent(&seen) - before,
        s.requests,
        "a call went out after the window"
    );
    assert_eq!(s.replies, s.requests);
    assert_eq!(s.status["2xx"], s.replies + s.unmeasured_replies);
    assert_eq!(s.sessions_unfinished, 3);
    let text = s.human();
    assert!(text.contains("Sessions: 3 unfinished"), "{text}");
    assert!(
        text.contains(&format!(
            "(all {} replies: {} measured",
            s.replies, s.replies
        )),
        "{text}"
    );
}

#[test]
fn interval_requests_add_up_to_the_run() {
    let server = Recorder::start("127.0.0.1:0", None);
    let (tx, rx) = std::sync::mpsc::channel();
    let opts = RunOptions {
        intervals: Some(tx),
        ..RunOptions::default()
    };
    let cfg = config(&server.http("/"), "-R 200 -c 2 -d 1 --interval 0.25");
    let s = execute(&cfg, &opts).unwrap();
    drop(opts);
    let ivs: Vec<_> = rx.iter().collect();
    let per: Vec<u64> = ivs.iter().map(|i| i.requests).collect();
    assert_eq!(ivs.len(), 4);
    // The 200 slots of the window: each sent once, or still queued.
    assert_eq!(s.requests + s.unsent_at_end, 200, "{per:?}");
    // A request counts in the interval it leaves in. Only a missed slot
    // (queued behind a busy connection, or the generator late past
    // --slot-tolerance-ms, as on a loaded machine) may leave after the
    // window, when no interval is left to count it; every other request
    // is in exactly one interval.
    let sum: u64 = per.iter().sum();
    let missed = s.missed_slots;
    assert!(
        sum <= s.requests && sum + missed >= s.requests,
        "intervals {per:?}, requests {}, missed {missed}",
        s.requests
    );
    // 50 slots in each quarter; a slot on a boundary belongs to the next.
    // Leaving late moves a request to a later interval: a missed slot by
    // any number, another (within the 5 ms tolerance, slots 5 ms apart) by
    // one boundary at most.
    for iv in &ivs {
        assert!(
            iv.requests.abs_diff(50) <= missed + 1,
            "interval {}: {} (missed slots {missed})",
            iv.index,
            iv.requests
        );
    }
}

#[test]
fn a_close_with_a_request_outstanding_is_an_error_and_a_reconnect() {
    // Answers one request per connection, then closes without a word on
    // the next one.
    let (addr, _) = accept_each("127.0.0.1:0", |sock, _| {
        let mut r = BufReader::new(sock);
        if read_head(&mut r).is_some() {
            let _ = r
                .get_mut()
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        }
        let _ = read_head(&mut r);
    });
    let s = run(&format!("http://{addr}/"), "--rate max -c 1 --duration 0.3").unwrap();
    let closed = s.errors["server_closed"] + s.errors["reset"];
    assert!(closed >= 3, "{:?}", s.errors);
    assert_eq!(s.reconnects, closed, "{:?}", s.errors);
}

#[test]
fn a_users_connection_close_is_one_request_per_connection() {
    // The server would keep the connection; the request says close.
    let server = Recorder::start("127.0.0.1:0", None);
    let s = run(
        &server.http("/"),
        "--rate max -c 1 --duration 0.3 -H Connection:close",
    )
    .unwrap();
    let conns = server.seen.connections.load(Ordering::Relaxed);
    let replies = s.replies + s.unmeasured_replies;
    assert!(replies >= 5, "{replies}");
    assert_eq!(s.errors_total, 0, "{:?}", s.errors);
    // One connection per request (and the pre-flight's).
    assert!(
        conns >= replies,
        "{conns} connections for {replies} replies"
    );
    assert!(s.reconnects + 1 >= replies, "{} reconnects", s.reconnects);
    assert!(s.connections.accounted, "{:?}", s.connections);
}
