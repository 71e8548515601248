//! Helpers shared by the server's tests: a document root, servers on every
//! model, and a small HTTP client that reads exactly one response at a time
//! (so pipelined responses can be checked one by one).

#![allow(dead_code)]

use std::io::{BufRead, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use evdispatch_server::cmdline::ServeCommand;
use evdispatch_server::{Model, Server, ServerConfig};

/// Serialises the tests that open thousands of descriptors (20,000 per process).
pub static FD_HEAVY: Mutex<()> = Mutex::new(());

pub const SECRET: &str = "top secret: never served";

/// A document root inside a temporary directory, with a secret file beside
/// it (outside the root) and symlinks pointing in and out.
pub struct Site {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
    pub small: Vec<u8>,
    pub large: Vec<u8>,
}

pub fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    std::fs::write(dir.path().join("secret.txt"), SECRET).unwrap();
    std::fs::write(root.join("index.html"), "<h1>home</h1>\n").unwrap();
    std::fs::write(root.join("docs/index.html"), "<p>docs</p>\n").unwrap();
    let small: Vec<u8> = (0..6144u32).map(|i| b'a' + (i % 26) as u8).collect();
    std::fs::write(root.join("six.txt"), &small).unwrap();
    let large: Vec<u8> = (0..700_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(root.join("large.bin"), &large).unwrap();
    std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("abs-link.txt")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", root.join("rel-link.txt")).unwrap();
    std::os::unix::fs::symlink("six.txt", root.join("inside-link.txt")).unwrap();
    std::os::unix::fs::symlink("..", root.join("up")).unwrap();
    Site {
        dir,
        root,
        small,
        large,
    }
}

/// Start `model` on `root` with `tweak` applied; `None` (reason printed) when
/// the model is not available on this machine.
pub fn start(model: Model, root: &Path, tweak: impl FnOnce(&mut ServerConfig)) -> Option<Server> {
    let mut cfg = ServerConfig::new(root, model);
    cfg.threads = 32;
    tweak(&mut cfg);
    match Server::start(cfg) {
        Ok(s) => Some(s),
        Err(e) if e.kind() == ErrorKind::Unsupported => {
            eprintln!("skipping {model}: not available here: {e}");
            None
        }
        Err(e) => panic!("{model}: cannot start: {e}"),
    }
}

/// A parsed response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A client connection that keeps unread bytes between responses.
pub struct Client {
    pub s: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client { s, buf: Vec::new() }
    }

    pub fn send(&mut self, raw: &[u8]) {
        self.s.write_all(raw).unwrap();
    }

    pub fn get(&mut self, path: &str) -> Resp {
        self.send(format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes());
        self.response(false).expect("a response")
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 65536];
        match self.s.read(&mut tmp) {
            Ok(0) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => false,
            Err(e) => panic!("reading a response: {e}"),
        }
    }

    /// The next response (`head`: a HEAD request, no body follows), or
    /// `None` if the server closed first.
    pub fn response(&mut self, head: bool) -> Option<Resp> {
        loop {
            let mut hs = [httparse::EMPTY_HEADER; 32];
            let mut r = httparse::Response::new(&mut hs);
            if let httparse::Status::Complete(n) = r.parse(&self.buf).expect("a valid response") {
                let status = r.code.unwrap();
                let headers: Vec<(String, String)> = r
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_string(),
                            String::from_utf8_lossy(h.value).into_owned(),
                        )
                    })
                    .collect();
                let len: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .map(|(_, v)| v.parse().unwrap())
                    .unwrap_or(0);
                let len = if head || status == 304 { 0 } else { len };
                while self.buf.len() < n + len {
                    assert!(self.fill(), "connection closed inside a body");
                }
                let body = self.buf[n..n + len].to_vec();
                self.buf.drain(..n + len);
                return Some(Resp {
                    status,
                    headers,
                    body,
                });
            }
            if !self.fill() {
                assert!(self.buf.is_empty(), "closed inside a response head");
                return None;
            }
        }
    }

    /// True when the server has closed (EOF or reset) with nothing more sent.
    pub fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill()
    }
}

/// Send `raw` on a fresh connection, return the first response.
pub fn once(addr: SocketAddr, raw: &[u8]) -> Resp {
    let mut c = Client::connect(addr);
    c.send(raw);
    c.response(raw.starts_with(b"HEAD")).expect("a response")
}

/// `evdispatch-serve` running as a child process (killed when dropped)
/// and the address it announced.
pub struct Served {
    pub child: std::process::Child,
    pub addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Start `evdispatch-serve` with `cmd`'s arguments and wait for its
/// `listening on` line.
pub fn spawn(cmd: &ServeCommand) -> Served {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_evdispatch-serve"))
        .args(cmd.args())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn evdispatch-serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("listening on http://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .parse()
        .unwrap();
    Served { child, addr }
}

/// Run `test` on every model at once, each in its own thread over one
/// site (the waiting is the test); a model this machine lacks is skipped
/// by [`start`].
pub fn on_every_model(test: impl Fn(Model, &Site) + Sync) {
    let site = site();
    std::thread::scope(|scope| {
        for model in Model::all() {
            let (site, test) = (&site, &test);
            scope.spawn(move || test(model, site));
        }
    });
}

/// One part of a `multipart/byteranges` body.
#[derive(Debug, PartialEq, Eq)]
pub struct BytePart {
    pub content_type: String,
    pub content_range: String,
    pub bytes: Vec<u8>,
}

/// The boundary of a `multipart/byteranges` answer, if it is one.
pub fn boundary(r: &Resp) -> Option<&str> {
    r.header("content-type")?
        .strip_prefix("multipart/byteranges; boundary=")
}

/// The parts of a `multipart/byteranges` answer, checked strictly against
/// RFC 9110 §14.6 / RFC 2046 §5.1.1 as the server frames them (CRLF, the
/// delimiter, the part's header lines, an empty line, the bytes; the close
/// delimiter last, nothing after it). Panics on anything else.
pub fn byte_parts(r: &Resp) -> Vec<BytePart> {
    let b = boundary(r).expect("a multipart/byteranges answer");
    let delim = format!("\r\n--{b}");
    let body = &r.body[..];
    let find = |from: usize| {
        body[from..]
            .windows(delim.len())
            .position(|w| w == delim.as_bytes())
            .map(|p| from + p)
    };
    let mut parts = Vec::new();
    let mut at = find(0).expect("a first delimiter");
    assert_eq!(at, 0, "no preamble");
    loop {
        at += delim.len();
        if body[at..] == *b"--\r\n" {
            return parts;
        }
        assert_eq!(&body[at..at + 2], b"\r\n", "delimiter line");
        at += 2;
        let end_head = at
            + body[at..]
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .expect("end of a part header")
            + 2;
        let head = std::str::from_utf8(&body[at..end_head]).unwrap();
        let mut ct = None;
        let mut cr = None;
        for line in head.split("\r\n").filter(|l| !l.is_empty()) {
            let (n, v) = line.split_once(": ").expect("a header line");
            match n.to_ascii_lowercase().as_str() {
                "content-type" => ct = Some(v.to_string()),
                "content-range" => cr = Some(v.to_string()),
                other => panic!("unexpected part header {other}"),
            }
        }
        let data_from = end_head + 2;
        let next = find(data_from).expect("a delimiter after each part");
        parts.push(BytePart {
            content_type: ct.expect("Content-Type in every part"),
            content_range: cr.expect("Content-Range in every part"),
            bytes: body[data_from..next].to_vec(),
        });
        at = next;
    }
}
