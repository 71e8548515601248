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

/// An HTTP/2 frame as a server sends it.
pub fn h2_frame(kind: u8, flags: u8, id: u32, p: &[u8]) -> Vec<u8> {
    let mut f = (p.len() as u32).to_be_bytes()[1..].to_vec();
    f.extend_from_slice(&[kind, flags]);
    f.extend_from_slice(&id.to_be_bytes());
    f.extend_from_slice(p);
    f
}

/// `:status 200` and END_STREAM on stream `id` (0x88: HPACK's static
/// table entry).
pub fn h2_ok(id: u32) -> Vec<u8> {
    h2_frame(1, 0x5, id, &[0x88])
}

/// A fake h2c server's side of a connection, shared with the threads that
/// answer late.
pub type H2Writer = Arc<Mutex<TcpStream>>;

/// Write `bytes` to the connection: false when it is gone.
pub fn h2_send(w: &H2Writer, bytes: &[u8]) -> bool {
    w.lock().unwrap().write_all(bytes).is_ok()
}

/// A frame the fake h2c server received: type, flags, stream, payload.
pub struct H2In {
    pub kind: u8,
    pub flags: u8,
    pub id: u32,
    pub payload: Vec<u8>,
    /// A HEADERS frame's `:path` (decoded with the connection's table).
    pub path: String,
    /// The connection's number, from 0 in the order they were accepted.
    pub conn: u64,
}

/// A minimal h2c server: reads the preface, sends its SETTINGS (`settings`
/// as key-value pairs), ACKs the client's, and hands every other frame to
/// `on_frame` (false from it closes the connection).
pub fn fake_h2c_server(
    settings: &'static [(u16, u32)],
    on_frame: impl Fn(&H2In, &H2Writer) -> bool + Clone + Send + 'static,
) -> (SocketAddr, Arc<Seen>) {
    let accepted = Arc::new(AtomicU64::new(0));
    accept_each("127.0.0.1:0", move |mut sock, _| {
        let conn = accepted.fetch_add(1, Ordering::Relaxed);
        // Frames go out as written, not held back by Nagle's algorithm.
        let _ = sock.set_nodelay(true);
        let mut preface = [0u8; 24];
        if sock.read_exact(&mut preface).is_err() {
            return;
        }
        let mut p = Vec::new();
        for (k, v) in settings {
            p.extend_from_slice(&k.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        let w: H2Writer = Arc::new(Mutex::new(sock.try_clone().unwrap()));
        if !h2_send(&w, &h2_frame(4, 0, 0, &p)) {
            return;
        }
        let mut hpack = loona_hpack::Decoder::new();
        let mut head = [0u8; 9];
        while sock.read_exact(&mut head).is_ok() {
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let mut payload = vec![0u8; len];
            if sock.read_exact(&mut payload).is_err() {
                return;
            }
            let mut path = String::new();
            if head[3] == 1 {
                hpack
                    .decode_with_cb(&payload, |n, v| {
                        if &n[..] == b":path" {
                            path = String::from_utf8_lossy(&v).into_owned();
                        }
                    })
                    .unwrap();
            }
            let f = H2In {
                kind: head[3],
                flags: head[4],
                id: u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff,
                payload,
                path,
                conn,
            };
            let go_on = if f.kind == 4 && f.flags & 1 == 0 {
                h2_send(&w, &h2_frame(4, 1, 0, &[]))
            } else {
                on_frame(&f, &w)
            };
            if !go_on {
                let _ = sock.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
    })
}
