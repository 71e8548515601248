//! Building responses, shared by every model: a request goes in, header bytes
//! and body parts come out in an [`OutBatch`], which the model then writes
//! with one gathered send (and `sendfile` for large files).
//!
//! The fast path allocates nothing: header bytes go into the batch's reused
//! buffer, a cached body is an `Arc` clone, and the `Date` line is formatted
//! once a second.

use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::time::SystemTime;

use crate::files::{entity_headers, epoch_secs, CachedFile, FileStore, Found};
use crate::request::{Method, Request, Version};
use crate::status::Status;
use crate::sys;
use crate::target::normalize_target;

const SERVER: &[u8] = b"Server: evdispatch\r\n";

/// The `Date` header line, formatted once per second.
#[derive(Debug)]
pub struct DateCache {
    sec: u64,
    line: Vec<u8>,
}

impl Default for DateCache {
    fn default() -> Self {
        let mut d = DateCache {
            sec: u64::MAX,
            line: Vec::with_capacity(40),
        };
        d.update(SystemTime::now());
        d
    }
}

impl DateCache {
    /// Bring the line up to `now`; returns the epoch second.
    pub fn update(&mut self, now: SystemTime) -> u64 {
        let sec = epoch_secs(now);
        if sec != self.sec {
            use std::io::Write;
            self.sec = sec;
            self.line.clear();
            let _ = write!(self.line, "Date: {}\r\n", httpdate::HttpDate::from(now));
        }
        sec
    }

    /// `Date: …\r\n`.
    pub fn line(&self) -> &[u8] {
        &self.line
    }
}

/// One piece of output.
#[derive(Debug)]
pub enum Part {
    /// A range of the batch's header buffer.
    Head {
        /// Start offset in `OutBatch::head`.
        start: usize,
        /// End offset.
        end: usize,
    },
    /// A constant (error-page body).
    Static(&'static [u8]),
    /// A cached file's body.
    Cached(Arc<CachedFile>),
    /// A large file's bytes `offset..end`, sent with `sendfile`.
    File {
        /// The open file.
        file: File,
        /// Next byte to send.
        offset: u64,
        /// End of the range.
        end: u64,
    },
}

/// The output of one or more (pipelined) responses, written in order.
#[derive(Debug, Default)]
pub struct OutBatch {
    /// Header bytes of the responses.
    pub head: Vec<u8>,
    parts: Vec<Part>,
    first: usize,
    offset: usize,
    responses: usize,
    /// Bytes written by [`OutBatch::send`] since the owner last took them.
    pub written: u64,
    /// The connection is closed (or half-closed) right after this batch:
    /// see [`OutBatch::set_last`].
    last: bool,
}

impl OutBatch {
    /// An empty batch with room for typical pipelines.
    pub fn new() -> OutBatch {
        OutBatch {
            head: Vec::with_capacity(4096),
            parts: Vec::with_capacity(16),
            ..Default::default()
        }
    }

    /// An empty batch that allocates only as responses are added: for
    /// batches that live as long as a send is in flight, where many exist
    /// at once (the completion model's).
    pub fn unallocated() -> OutBatch {
        OutBatch::default()
    }

    /// True when everything has been written.
    pub fn is_empty(&self) -> bool {
        self.first == self.parts.len()
    }

    /// Responses in the batch.
    pub fn responses(&self) -> usize {
        self.responses
    }

    /// True when the batch holds a file part (the batch should be written
    /// before more responses are added, so that it stays small).
    pub fn has_file(&self) -> bool {
        self.parts[self.first..]
            .iter()
            .any(|p| matches!(p, Part::File { .. }))
    }

    /// Forget everything (keeps the allocations; `written` is the owner's).
    pub fn clear(&mut self) {
        self.head.clear();
        self.parts.clear();
        self.first = 0;
        self.offset = 0;
        self.responses = 0;
        self.last = false;
    }

    /// Say that the connection is closed or half-closed (`close`,
    /// `shutdown(SHUT_WR)`) as soon as this batch is written. Its memory
    /// parts are then sent with `MSG_MORE`: the kernel keeps the final
    /// segment back, and the close that follows attaches its FIN to that
    /// segment and sends both at once (`tcp_send_fin`), one segment (and
    /// one trip through the peer's receive path) fewer per connection. Only
    /// for a batch that is certainly followed by the close: a held segment
    /// otherwise waits for the cork timer (200 ms). Cleared by
    /// [`OutBatch::clear`].
    pub fn set_last(&mut self, last: bool) {
        self.last = last;
    }

    /// Bytes of header buffer in use (a bound on batch growth).
    pub fn head_len(&self) -> usize {
        self.head.len()
    }

    fn push_head(&mut self, start: usize) {
        let end = self.head.len();
        let live = self.first < self.parts.len();
        if let Some(Part::Head { end: e, .. }) = self.parts.last_mut() {
            if *e == start && live {
                *e = end;
                return;
            }
        }
        self.parts.push(Part::Head { start, end });
    }

    /// The unwritten bytes as slices, up to `iov.len()` of them and up to
    /// the first file part. Returns how many slices were filled and whether
    /// a file part follows them.
    pub fn gather<'a>(&'a self, iov: &mut [IoSlice<'a>]) -> (usize, bool) {
        let mut n = 0;
        for (i, part) in self.parts[self.first..].iter().enumerate() {
            if n == iov.len() {
                return (n, false);
            }
            let skip = if i == 0 { self.offset } else { 0 };
            let bytes: &[u8] = match part {
                Part::Head { start, end } => &self.head[*start..*end],
                Part::Static(s) => s,
                Part::Cached(c) => &c.body,
                Part::File { .. } => return (n, true),
            };
            if bytes.len() > skip {
                iov[n] = IoSlice::new(&bytes[skip..]);
                n += 1;
            }
        }
        (n, false)
    }

    /// Mark `n` bytes of memory parts as written.
    pub fn advance(&mut self, mut n: usize) {
        while n > 0 && self.first < self.parts.len() {
            let len = match &self.parts[self.first] {
                Part::Head { start, end } => end - start,
                Part::Static(s) => s.len(),
                Part::Cached(c) => c.body.len(),
                Part::File { .. } => return,
            };
            let left = len - self.offset;
            if n >= left {
                n -= left;
                self.first += 1;
                self.offset = 0;
            } else {
                self.offset += n;
                n = 0;
            }
        }
        self.skip_empty();
    }

    fn skip_empty(&mut self) {
        while self.first < self.parts.len() {
            let empty = match &self.parts[self.first] {
                Part::Head { start, end } => end - start == self.offset,
                Part::Static(s) => s.len() == self.offset,
                Part::Cached(c) => c.body.len() == self.offset,
                Part::File { offset, end, .. } => offset == end,
            };
            if !empty {
                break;
            }
            self.first += 1;
            self.offset = 0;
        }
        if self.is_empty() {
            self.clear();
        }
    }

    /// The file part at the front, if the next bytes come from a file.
    pub fn front_file(&mut self) -> Option<(&File, &mut u64, u64)> {
        match self.parts.get_mut(self.first) {
            Some(Part::File { file, offset, end }) => Some((file, offset, *end)),
            _ => None,
        }
    }

    /// Note that the front file part advanced (drops it when finished).
    pub fn file_progressed(&mut self) {
        self.skip_empty();
    }

    /// Write as much as the socket takes now: gathered `sendmsg` for memory
    /// parts, `sendfile` for file parts. `Ok(true)`: all written;
    /// `Ok(false)`: the socket is full (wait for writability).
    pub fn send(&mut self, fd: RawFd) -> io::Result<bool> {
        loop {
            if self.is_empty() {
                return Ok(true);
            }
            if let Some((file, offset, end)) = self.front_file() {
                let count = (end - *offset).min(1 << 21) as usize;
                match sys::sendfile(fd, file.as_raw_fd(), offset, count) {
                    Ok(0) => {
                        return Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "file shrank while being sent",
                        ))
                    }
                    Ok(n) => {
                        self.written += n as u64;
                        self.file_progressed()
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
                continue;
            }
            let mut iov = [IoSlice::new(&[]); 64];
            let (n, file_next) = self.gather(&mut iov);
            let want: usize = iov[..n].iter().map(|s| s.len()).sum();
            match sys::send_vectored(fd, &iov[..n], file_next || self.last) {
                Ok(written) => {
                    self.written += written as u64;
                    self.advance(written);
                    if written < want {
                        // A short write on a stream socket: its buffer is full.
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Turns requests into responses: the document root, the date line and a
/// scratch path buffer.
#[derive(Debug)]
pub struct Responder {
    /// The document root and its cache.
    pub store: FileStore,
    date: DateCache,
    now_sec: u64,
    path: Vec<u8>,
}

impl Responder {
    /// A responder over `store`.
    pub fn new(store: FileStore) -> Responder {
        let date = DateCache::default();
        Responder {
            store,
            now_sec: date.sec,
            date,
            path: Vec::with_capacity(256),
        }
    }

    /// Tell the responder the time (once per loop iteration).
    pub fn set_time(&mut self, now: SystemTime) {
        self.now_sec = self.date.update(now);
    }

    fn start(&mut self, out: &mut OutBatch, status: Status) -> usize {
        let start = out.head.len();
        out.head.extend_from_slice(status.line());
        out.head.extend_from_slice(SERVER);
        out.head.extend_from_slice(self.date.line());
        start
    }

    fn finish(out: &mut OutBatch, start: usize, keep_alive: bool, version: Version) {
        if !keep_alive {
            out.head.extend_from_slice(b"Connection: close\r\n");
        } else if version == Version::Http10 {
            out.head.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.head.extend_from_slice(b"\r\n");
        out.push_head(start);
        out.responses += 1;
    }

    /// Answer `req` into `out`. `closing`: the server is stopping, so the
    /// connection will close. Returns the status and whether the connection
    /// stays open.
    pub fn respond(
        &mut self,
        req: &Request<'_>,
        out: &mut OutBatch,
        closing: bool,
    ) -> (Status, bool) {
        let keep = req.keep_alive && !closing;
        let dir = normalize_target(req.target, &mut self.path);
        let found = match dir {
            Ok(_) => self.store.lookup(&self.path, self.now_sec),
            Err(st) => Err(st),
        };
        let head_only = req.method == Method::Head;
        match found {
            Err(st) => {
                let keep = keep && !st.closes();
                self.error(st, out, keep, req.version, head_only);
                (st, keep)
            }
            Ok(found) => {
                let mtime = match &found {
                    Found::Cached(c) => c.mtime,
                    Found::Large(l) => l.mtime,
                };
                if let Some(ims) = req.if_modified_since.and_then(parse_date) {
                    if mtime <= ims {
                        let start = self.start(out, Status::NotModified);
                        Self::finish(out, start, keep, req.version);
                        return (Status::NotModified, keep);
                    }
                }
                let start = self.start(out, Status::Ok);
                match found {
                    Found::Cached(c) => {
                        out.head.extend_from_slice(&c.headers);
                        Self::finish(out, start, keep, req.version);
                        if !head_only && !c.body.is_empty() {
                            out.parts.push(Part::Cached(c));
                        }
                    }
                    Found::Large(l) => {
                        entity_headers(&mut out.head, l.content_type, l.size, l.mtime);
                        Self::finish(out, start, keep, req.version);
                        if !head_only && l.size > 0 {
                            out.parts.push(Part::File {
                                file: l.file,
                                offset: 0,
                                end: l.size,
                            });
                        }
                    }
                }
                (Status::Ok, keep)
            }
        }
    }

    /// An error page for a request that could not be parsed; the connection
    /// closes after it.
    pub fn reject(&mut self, status: Status, out: &mut OutBatch) {
        self.error(status, out, false, Version::Http11, false);
    }

    fn error(
        &mut self,
        st: Status,
        out: &mut OutBatch,
        keep: bool,
        version: Version,
        head_only: bool,
    ) {
        use std::io::Write;
        let start = self.start(out, st);
        let body = st.body();
        out.head
            .extend_from_slice(b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: ");
        let _ = write!(out.head, "{}\r\n", body.len());
        if st == Status::MethodNotAllowed {
            out.head.extend_from_slice(b"Allow: GET, HEAD\r\n");
        }
        Self::finish(out, start, keep, version);
        if !head_only {
            out.parts.push(Part::Static(body));
        }
    }
}

/// What [`Responder::answer`] did with a buffer of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    /// Bytes of input consumed (complete requests; all of it after a refusal).
    pub consumed: usize,
    /// Requests answered (a refusal included).
    pub answered: usize,
    /// The connection closes after this output.
    pub close: bool,
    /// The close follows a refused request (the client may still be
    /// sending: drain before closing).
    pub refused: bool,
}

/// Most pipelined responses gathered into one batch.
pub const MAX_BATCH: usize = 64;

impl Responder {
    /// Answer the complete requests at the start of `input` into `out`, in
    /// order, counting each status in `counters`; stop at a partial request,
    /// at a response that closes the connection, or when the batch is full
    /// (it is then written before more are answered). The one request loop
    /// of every model.
    pub fn answer(
        &mut self,
        input: &[u8],
        max_header: usize,
        out: &mut OutBatch,
        closing: bool,
        counters: &mut crate::stats::Counters,
    ) -> Answered {
        let mut a = Answered {
            consumed: 0,
            answered: 0,
            close: false,
            refused: false,
        };
        while a.consumed < input.len() {
            match crate::request::parse_request(&input[a.consumed..], max_header) {
                crate::request::Parsed::Complete(req) => {
                    let (st, keep) = self.respond(&req, out, closing);
                    counters.response(st);
                    a.consumed += req.len;
                    a.answered += 1;
                    if !keep {
                        a.close = true;
                        break;
                    }
                    if out.responses() >= MAX_BATCH || out.has_file() || out.head_len() > 16 * 1024
                    {
                        break;
                    }
                }
                crate::request::Parsed::Partial => break,
                crate::request::Parsed::Reject(st) => {
                    self.reject(st, out);
                    counters.response(st);
                    a.consumed = input.len();
                    a.answered += 1;
                    a.close = true;
                    a.refused = true;
                    break;
                }
            }
        }
        a
    }
}

/// An HTTP date as whole seconds since the epoch.
fn parse_date(raw: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(raw).ok()?;
    let t = httpdate::parse_http_date(s).ok()?;
    Some(epoch_secs(t) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_advances_across_parts() {
        let mut b = OutBatch::new();
        b.head.extend_from_slice(b"abc");
        b.push_head(0);
        b.parts.push(Part::Static(b"defg"));
        b.head.extend_from_slice(b"hi");
        b.push_head(3);
        {
            let mut iov = [IoSlice::new(&[]); 8];
            let (n, file) = b.gather(&mut iov);
            assert_eq!((n, file), (3, false));
        }
        b.advance(5);
        let mut iov = [IoSlice::new(&[]); 8];
        let (n, _) = b.gather(&mut iov);
        let rest: Vec<u8> = iov[..n].iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(rest, b"fghi");
        b.advance(4);
        assert!(b.is_empty());
    }

    #[test]
    fn date_line_shape() {
        let mut d = DateCache::default();
        d.update(std::time::UNIX_EPOCH + std::time::Duration::from_secs(784111777));
        assert_eq!(d.line(), b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    }
}
