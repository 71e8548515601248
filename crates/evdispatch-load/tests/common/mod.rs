//! What the load generator's network tests share: fake servers on
//! loopback that record what they are sent (plain or over rustls), close
//! connections, answer early or late; and running the generator
//! in-process on a command line.
//!
//! Each test file uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use evdispatch_load::{execute, Config, RunOptions, Summary};
use rustls::pki_types::pem::PemObject;

/// What the recording server saw.
#[derive(Default)]
pub struct Seen {
    pub connections: AtomicU64,
    pub handshakes: AtomicU64,
    /// Handshakes that resumed an earlier session.
    pub resumed: AtomicU64,
    /// Complete requests: head text and body.
    pub requests: Mutex<Vec<(String, Vec<u8>)>>,
}

/// A thread-per-connection HTTP/1.1 server that records every request and
/// answers `ok` (keep-alive), over TLS when given a configuration.
pub struct Recorder {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

impl Recorder {
    pub fn start(bind: &str, tls: Option<Arc<rustls::ServerConfig>>) -> Recorder {
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
    pub fn url(&self, path: &str) -> String {
        format!("https://{}{path}", self.addr)
    }
    pub fn http(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
    pub fn requests(&self) -> Vec<(String, Vec<u8>)> {
        self.seen.requests.lock().unwrap().clone()
    }
}

/// Listen on `bind` and run `handle` on a thread for each connection,
/// counted in the returned [`Seen`].
pub fn accept_each(
    bind: &str,
    handle: impl Fn(TcpStream, &Seen) + Clone + Send + 'static,
) -> (SocketAddr, Arc<Seen>) {
    accept_on(TcpListener::bind(bind).unwrap(), handle)
}

/// [`accept_each`] on a listener made by the caller.
pub fn accept_on(
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
pub fn read_head(r: &mut impl BufRead) -> Option<String> {
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

/// A server that ends every connection after its first reply: with
/// `Connection: close` on the reply (`announce`), or silently `idle` later,
/// as a keep-alive timeout does. Counts connections and requests by path.
pub fn closing_server(announce: bool, idle: Duration) -> (SocketAddr, Arc<Seen>) {
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

/// Reads a request's head, answers at once (keep-alive), then, a moment
/// later, reads its body: a server that replies before the upload is read
/// (a 401 or 413 does), recording each request as it read it.
pub fn early_server() -> (SocketAddr, Arc<Seen>) {
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

/// A listener on 127.0.0.1 whose connections have a small receive buffer
/// (inherited by the accepted sockets, and not grown by the kernel): a
/// client cannot have a large body out before a reply comes.
pub fn small_buffer_listener() -> TcpListener {
    let l = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    l.set_recv_buffer_size(16 * 1024).unwrap();
    l.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    l.listen(64).unwrap();
    l.into()
}

/// A keep-alive server that answers each request after `delay`, counting
/// requests (heads only).
pub fn delay_server(delay: Duration) -> (SocketAddr, Arc<Seen>) {
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

pub fn config(url: &str, args: &str) -> Config {
    Config::from_command_line(std::iter::once(url).chain(args.split_whitespace()))
        .expect("valid configuration")
}

pub fn run(url: &str, args: &str) -> anyhow::Result<Summary> {
    execute(&config(url, args), &RunOptions::default())
}

/// [`run`] on `--engine engine`; `None` (said) where io_uring is not
/// available.
pub fn run_on(engine: &str, url: &str, args: &str) -> Option<Summary> {
    match run(url, &format!("{args} --engine {engine}")) {
        Ok(s) => Some(s),
        Err(e) if format!("{e:#}").contains("cannot set up an io_uring") => {
            eprintln!("skipped on {engine}: {e:#}");
            None
        }
        Err(e) => panic!("{engine}: {e:#}"),
    }
}

/// A CA and a leaf certificate for `names`, signed by it, in a temporary
/// directory: `ca.pem`, `cert.pem`, `key.pem`.
pub struct Certs {
    pub dir: tempfile::TempDir,
}

impl Certs {
    pub fn new(names: &[&str]) -> Certs {
        let dir = tempfile::tempdir().unwrap();
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca =
            rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let names: Vec<String> = names.iter().map(|s| s.to_string()).collect();
        let leaf = rcgen::CertificateParams::new(names)
            .unwrap()
            .signed_by(&key, &ca)
            .unwrap();
        std::fs::write(dir.path().join("ca.pem"), ca.pem()).unwrap();
        std::fs::write(dir.path().join("cert.pem"), leaf.pem()).unwrap();
        std::fs::write(dir.path().join("key.pem"), key.serialize_pem()).unwrap();
        Certs { dir }
    }
    pub fn path(&self, f: &str) -> std::path::PathBuf {
        self.dir.path().join(f)
    }
    pub fn ca(&self) -> String {
        self.path("ca.pem").display().to_string()
    }
}

/// A rustls server for `certs`' leaf, TLS `versions`, ALPN `http/1.1`.
pub fn server_config(
    certs: &Certs,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> Arc<rustls::ServerConfig> {
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(certs.path("cert.pem"))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(certs.path("key.pem")).unwrap();
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

pub fn all_versions() -> Vec<&'static rustls::SupportedProtocolVersion> {
    vec![&rustls::version::TLS13, &rustls::version::TLS12]
}
