//! `--access-log FILE` (or `-`, standard output): one line per response in
//! the Combined Log Format (nginx's `combined`):
//!
//! ```text
//! $remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent"
//! ```
//!
//! `--access-log-format combined-tls` ends each line with the connection's
//! TLS version and cipher suite, nginx's `$ssl_protocol $ssl_cipher`
//! (`TLSv1.3 TLS_AES_128_GCM_SHA256`; IANA suite names, where nginx shows
//! OpenSSL's for TLS 1.2), `- -` for a plain-HTTP connection.
//!
//! `$remote_user` is always `-` (no authentication), `$time_local` is in
//! UTC (`+0000`) and the time the response was made (nginx logs the time
//! the request ended, later for a long transfer), `$body_bytes_sent` is
//! what was sent of the response's body, as in nginx (all of it, unless the
//! connection closed first; 0 for HEAD and 304): a line is completed when
//! the output batch holding its response is written or given up
//! (`Pending`), `$request` is the request line as received
//! (`-` when there was none, e.g. a 408 before a request line ended; the
//! `Referer` and `User-Agent` of a 408 are those whose lines had ended).
//! Quotes, backslashes and bytes outside printable ASCII are escaped as
//! `\xHH`, as nginx does, so a line can always be split on its quotes.
//!
//! No event loop ever waits on the disk: each worker (each pool thread, for
//! `threads`, through the shared responder) appends its lines to a buffer
//! of its own in memory, and one writer thread takes every buffer (swapping
//! in an empty one, under a lock held for the swap only) once a second, when
//! a buffer passes [`FLUSH_BYTES`], when the file is to be reopened and at
//! the stop, and writes them to the file. [`AccessLog::reopen`] (SIGHUP)
//! makes the writer close and reopen the file by its name, as logrotate's
//! `postrotate` expects: lines written before go to the renamed file, the
//! next ones to a new file of the old name. With no `--access-log` none of
//! this exists and a response costs one branch more.
//!
//! An abandoned download shows in its line: `$body_bytes_sent` counts what
//! was sent before the connection closed. Unlike nginx, `$time_local` is
//! when the response was made, not when its last byte went.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// A worker's buffer is handed to the writer once it holds this many bytes.
pub const FLUSH_BYTES: usize = 64 << 10;
/// The writer takes every buffer at least this often.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

#[derive(Default)]
struct Flags {
    /// A buffer is full enough to write.
    full: bool,
    /// Reopen the file (SIGHUP).
    reopen: bool,
    /// Write everything and end.
    stop: bool,
}

struct Shared {
    buffers: Mutex<Vec<Arc<Mutex<Vec<u8>>>>>,
    flags: Mutex<Flags>,
    wake: Condvar,
}

impl Shared {
    fn signal(&self, set: impl FnOnce(&mut Flags)) {
        let mut f = crate::sys::lock(&self.flags);
        set(&mut f);
        self.wake.notify_one();
    }
}

/// Where the lines go.
enum Sink {
    Stdout,
    File(PathBuf, File),
}

impl Sink {
    fn open(path: &Path) -> io::Result<Sink> {
        if path.as_os_str() == "-" {
            return Ok(Sink::Stdout);
        }
        let f = append(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "--access-log {}: cannot open it for appending: {e}",
                    path.display()
                ),
            )
        })?;
        Ok(Sink::File(path.to_path_buf(), f))
    }

    fn write(&mut self, bytes: &[u8]) {
        let r = match self {
            Sink::Stdout => io::stdout().lock().write_all(bytes),
            Sink::File(_, f) => f.write_all(bytes),
        };
        if let Err(e) = r {
            // Nothing to return it to: say so once per failed write.
            eprintln!("evdispatch serve: writing the access log failed: {e}");
        }
    }

    fn reopen(&mut self) {
        if let Sink::File(path, f) = self {
            match append(path) {
                Ok(new) => *f = new,
                Err(e) => eprintln!(
                    "evdispatch serve: reopening the access log {} failed ({e}); still writing to the old file",
                    path.display()
                ),
            }
        }
    }
}

/// `path` opened for appending (created if need be).
fn append(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The access log of a running server: its writer thread.
pub struct AccessLog {
    shared: Arc<Shared>,
    writer: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for AccessLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessLog").finish_non_exhaustive()
    }
}

impl AccessLog {
    /// Open `path` (`-`: standard output) for appending and start the
    /// writer thread.
    pub fn open(path: &Path) -> io::Result<AccessLog> {
        let sink = Sink::open(path)?;
        let shared = Arc::new(Shared {
            buffers: Mutex::new(Vec::new()),
            flags: Mutex::new(Flags::default()),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        let writer = thread::Builder::new()
            .name("evd-access-log".into())
            .spawn(move || writer(&s, sink))?;
        Ok(AccessLog {
            shared,
            writer: Some(writer),
        })
    }

    /// A new buffer for one worker's lines.
    pub fn buffer(&self) -> LogBuffer {
        let buf = Arc::new(Mutex::new(Vec::with_capacity(FLUSH_BYTES)));
        crate::sys::lock(&self.shared.buffers).push(buf.clone());
        LogBuffer {
            buf,
            shared: self.shared.clone(),
        }
    }

    /// Close and reopen the file by its name (after logrotate renamed it),
    /// once the lines buffered so far are written to the old one.
    pub fn reopen(&self) {
        self.shared.signal(|f| f.reopen = true);
    }

    /// Write every buffered line and stop the writer (call after the
    /// workers have stopped).
    pub fn finish(mut self) {
        self.stop_writer();
    }

    fn stop_writer(&mut self) {
        self.shared.signal(|f| f.stop = true);
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

impl Drop for AccessLog {
    fn drop(&mut self) {
        self.stop_writer();
    }
}

fn writer(shared: &Shared, mut sink: Sink) {
    let mut taken: Vec<u8> = Vec::with_capacity(FLUSH_BYTES);
    loop {
        let (reopen, stop) = {
            let f = crate::sys::lock(&shared.flags);
            let (mut f, _) = shared
                .wake
                .wait_timeout_while(f, FLUSH_EVERY, |f| !(f.full || f.reopen || f.stop))
                .unwrap_or_else(|e| e.into_inner());
            let r = (f.reopen, f.stop);
            *f = Flags::default();
            r
        };
        let buffers: Vec<_> = crate::sys::lock(&shared.buffers).clone();
        for b in &buffers {
            {
                let mut b = crate::sys::lock(b);
                std::mem::swap(&mut *b, &mut taken);
            }
            if !taken.is_empty() {
                sink.write(&taken);
                taken.clear();
            }
        }
        if reopen {
            sink.reopen();
        }
        if stop {
            return;
        }
    }
}

/// One worker's log buffer (a handle to it: the batches of its responses
/// hold clones), which the writer takes.
#[derive(Clone)]
pub struct LogBuffer {
    buf: Arc<Mutex<Vec<u8>>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LogBuffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBuffer").finish_non_exhaustive()
    }
}

/// A connection's TLS session, as the access log names it (nginx's
/// `$ssl_protocol` and `$ssl_cipher`): `TLSv1.3`,
/// `TLS_AES_128_GCM_SHA256` (IANA names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsInfo {
    /// The protocol version.
    pub protocol: &'static str,
    /// The cipher suite.
    pub cipher: &'static str,
}

/// `--access-log-format`: the fields of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    /// nginx's `combined`.
    #[default]
    Combined,
    /// `combined`, then the TLS version and cipher (nginx's
    /// `$ssl_protocol $ssl_cipher`; `- -` on plain HTTP).
    CombinedTls,
}

/// What one access-log line says about a response, but the body bytes
/// sent, known only once its output is written.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// The client's address (`-` when unknown).
    pub remote: Option<IpAddr>,
    /// `[$time_local]`'s content, e.g. `24/Nov/2026:07:05:00 +0000`.
    pub time: &'a [u8],
    /// The request line, as received; `None`: `-`.
    pub request: Option<&'a [u8]>,
    /// The status code.
    pub status: u16,
    /// The `Referer` header.
    pub referer: Option<&'a [u8]>,
    /// The `User-Agent` header.
    pub user_agent: Option<&'a [u8]>,
    /// With [`LogFormat::CombinedTls`], the connection's TLS session
    /// (`Some(None)`: plain HTTP); `None`: not logged.
    pub tls: Option<Option<TlsInfo>>,
}

/// The lines of the responses of one output batch, formatted in two
/// halves around `$body_bytes_sent`, which is filled in when the batch is
/// done with ([`Pending::complete`]): written in full, or given up when
/// the connection closed. `$body_bytes_sent` is then, as in nginx, what
/// was sent of the body: the part of the response's body span (in the
/// batch's bytes) that lies before the bytes written.
#[derive(Debug)]
pub(crate) struct Pending {
    sink: LogBuffer,
    /// The halves, back to back.
    text: Vec<u8>,
    lines: Vec<PendingLine>,
}

#[derive(Debug)]
struct PendingLine {
    /// Where the first half ends (and the second begins) in `text`, and
    /// where the second ends.
    mid: usize,
    end: usize,
    /// The body's bytes in the batch's output.
    body: std::ops::Range<u64>,
}

impl Pending {
    /// Lines that go to `sink`.
    pub(crate) fn new(sink: LogBuffer) -> Pending {
        Pending {
            sink,
            text: Vec::with_capacity(512),
            lines: Vec::new(),
        }
    }

    /// The line of `e`, whose body is the bytes `body` of the batch.
    pub(crate) fn push(&mut self, e: &Entry<'_>, body: std::ops::Range<u64>) {
        let l = &mut self.text;
        match e.remote {
            Some(ip) => {
                let _ = write!(l, "{ip}");
            }
            None => l.push(b'-'),
        }
        l.extend_from_slice(b" - - [");
        l.extend_from_slice(e.time);
        l.extend_from_slice(b"] \"");
        quoted(l, e.request);
        let _ = write!(l, "\" {} ", e.status);
        let mid = l.len();
        l.extend_from_slice(b" \"");
        quoted(l, e.referer);
        l.extend_from_slice(b"\" \"");
        quoted(l, e.user_agent);
        l.push(b'"');
        match e.tls {
            Some(Some(t)) => {
                let _ = write!(l, " {} {}", t.protocol, t.cipher);
            }
            Some(None) => l.extend_from_slice(b" - -"),
            None => {}
        }
        l.push(b'\n');
        let end = l.len();
        self.lines.push(PendingLine { mid, end, body });
    }

    /// Complete every line, `sent` bytes of the batch having been written,
    /// into the buffer (under one lock), and forget them.
    pub(crate) fn complete(&mut self, sent: u64) {
        if self.lines.is_empty() {
            return;
        }
        let full = {
            let mut b = crate::sys::lock(&self.sink.buf);
            let mut start = 0;
            for line in &self.lines {
                let body = sent.clamp(line.body.start, line.body.end.max(line.body.start));
                b.extend_from_slice(&self.text[start..line.mid]);
                let _ = write!(b, "{}", body - line.body.start);
                b.extend_from_slice(&self.text[line.mid..line.end]);
                start = line.end;
            }
            b.len() >= FLUSH_BYTES
        };
        self.text.clear();
        self.lines.clear();
        if full {
            self.sink.shared.signal(|f| f.full = true);
        }
    }
}

/// `v` escaped as nginx escapes log variables (`-` when absent).
fn quoted(l: &mut Vec<u8>, v: Option<&[u8]>) {
    let Some(v) = v else {
        l.push(b'-');
        return;
    };
    for &b in v {
        if b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b) {
            let _ = write!(l, "\\x{b:02X}");
        } else {
            l.push(b);
        }
    }
}

/// `[$time_local]`'s content for an HTTP date (`Tue, 24 Nov 2026 07:05:00
/// GMT` → `24/Nov/2026:07:05:00 +0000`).
pub(crate) fn clf_time(http_date: &str) -> String {
    let f: Vec<&str> = http_date.split_whitespace().collect();
    match f.as_slice() {
        [_, day, month, year, time, _] => format!("{day}/{month}/{year}:{time} +0000"),
        _ => "-".into(),
    }
}

/// A request head without the empty lines a client may send before it
/// (RFC 9112 §2.2: ignored, so not part of the request).
fn skip_empty_lines(head: &[u8]) -> &[u8] {
    let at = head.iter().position(|&b| b != b'\r' && b != b'\n');
    &head[at.unwrap_or(head.len())..]
}

/// The request line at the start of a request head (without its line
/// end), once it has ended (a head cut short, as at a 408, may have none).
pub(crate) fn request_line(head: &[u8]) -> Option<&[u8]> {
    let head = skip_empty_lines(head);
    let end = head.iter().position(|&b| b == b'\r' || b == b'\n')?;
    (end > 0).then(|| &head[..end])
}

/// The value of header `name` (lower case) in a request head, if present
/// on a line that has ended.
pub(crate) fn header<'a>(head: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let head = skip_empty_lines(head);
    for line in head.split_inclusive(|&b| b == b'\n').skip(1) {
        let Some(line) = line.strip_suffix(b"\n") else {
            break; // not ended yet
        };
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        if line[..colon].eq_ignore_ascii_case(name) {
            return Some(line[colon + 1..].trim_ascii());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clf_fields() {
        assert_eq!(
            clf_time("Tue, 24 Nov 2026 07:05:00 GMT"),
            "24/Nov/2026:07:05:00 +0000"
        );
        let head = b"GET /a?b HTTP/1.1\r\nHost: x\r\nUser-Agent:  curl/8 \r\nreferer: http://r/\r\n\r\nX-After: 1\r\n";
        assert_eq!(request_line(head), Some(&b"GET /a?b HTTP/1.1"[..]));
        assert_eq!(header(head, b"user-agent"), Some(&b"curl/8"[..]));
        assert_eq!(header(head, b"referer"), Some(&b"http://r/"[..]));
        assert_eq!(header(head, b"x-after"), None, "past the head");
        assert_eq!(request_line(b"\r\n"), None);
        // Empty lines before the request are no part of it (RFC 9112 §2.2).
        let late = b"\r\n\nGET /x HTTP/1.1\r\nUser-Agent: u\r\n\r\n";
        assert_eq!(request_line(late), Some(&b"GET /x HTTP/1.1"[..]));
        assert_eq!(header(late, b"user-agent"), Some(&b"u"[..]));
        // A head cut short (a 408): what has ended.
        let cut = b"GET /y HTTP/1.1\r\nReferer: r\r\nUser-Agent: cu";
        assert_eq!(request_line(cut), Some(&b"GET /y HTTP/1.1"[..]));
        assert_eq!(header(cut, b"referer"), Some(&b"r"[..]));
        assert_eq!(header(cut, b"user-agent"), None);
        assert_eq!(request_line(b"GET /y HTT"), None);
    }

    #[test]
    fn lines_are_written_escaped_and_reopened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("access.log");
        let log = AccessLog::open(&path).unwrap();
        let mut b = Pending::new(log.buffer());
        let time = clf_time("Tue, 24 Nov 2026 07:05:00 GMT");
        let e = Entry {
            remote: Some("127.0.0.1".parse().unwrap()),
            time: time.as_bytes(),
            request: Some(b"GET /\"q\" HTTP/1.1"),
            status: 200,
            referer: None,
            user_agent: Some(b"t\x01"),
            tls: None,
        };
        // All of its body sent (a response head of 100 bytes before it).
        b.push(&e, 100..6244);
        b.complete(7000);
        log.reopen();
        // The reopen writes what was buffered to the old file first.
        let t0 = std::time::Instant::now();
        while std::fs::metadata(&path).unwrap().len() == 0 {
            assert!(t0.elapsed() < Duration::from_secs(10), "never written");
            thread::sleep(Duration::from_millis(10));
        }
        let rotated = dir.path().join("access.log.1");
        std::fs::rename(&path, &rotated).unwrap();
        log.reopen();
        while !path.exists() {
            assert!(t0.elapsed() < Duration::from_secs(10), "never reopened");
            thread::sleep(Duration::from_millis(10));
        }
        // Of two responses, the first sent in part, the second not at all.
        b.push(
            &Entry {
                status: 404,
                request: None,
                remote: None,
                ..e
            },
            50..150,
        );
        b.push(&Entry { status: 200, ..e }, 300..400);
        b.complete(120);
        log.finish();
        assert_eq!(
            std::fs::read_to_string(&rotated).unwrap(),
            "127.0.0.1 - - [24/Nov/2026:07:05:00 +0000] \"GET /\\x22q\\x22 HTTP/1.1\" 200 6144 \"-\" \"t\\x01\"\n"
        );
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "- - - [24/Nov/2026:07:05:00 +0000] \"-\" 404 70 \"-\" \"t\\x01\"\n\
             127.0.0.1 - - [24/Nov/2026:07:05:00 +0000] \"GET /\\x22q\\x22 HTTP/1.1\" 200 0 \"-\" \"t\\x01\"\n"
        );
    }

    #[test]
    fn tls_fields_end_the_line_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tls.log");
        let log = AccessLog::open(&path).unwrap();
        let mut b = Pending::new(log.buffer());
        let e = Entry {
            remote: None,
            time: b"24/Nov/2026:07:05:00 +0000",
            request: Some(b"GET / HTTP/1.1"),
            status: 200,
            referer: None,
            user_agent: None,
            tls: Some(Some(TlsInfo {
                protocol: "TLSv1.3",
                cipher: "TLS_AES_128_GCM_SHA256",
            })),
        };
        b.push(&e, 0..5);
        b.push(
            &Entry {
                tls: Some(None),
                ..e
            },
            5..10,
        );
        b.complete(10);
        log.finish();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].ends_with("\"-\" \"-\" TLSv1.3 TLS_AES_128_GCM_SHA256"),
            "{text}"
        );
        assert!(lines[1].ends_with("\"-\" \"-\" - -"), "{text}");
    }
}
