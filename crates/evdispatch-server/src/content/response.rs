//! Building responses, shared by every model: a request goes in, header bytes
//! and body parts come out in an [`OutBatch`], which the model then writes
//! with one gathered send (and `sendfile` for large files).
//!
//! The fast path allocates nothing: header bytes go into the batch's reused
//! buffer, a cached body is an `Arc` clone, and the `Date` line is formatted
//! once a second.
//!
//! # Precompressed variants
//!
//! * **Precompressed variants** (nginx `gzip_static`, `brotli_static`): when
//!   `f.br` or `f.gz` sits beside `f` and `Accept-Encoding` takes it (q-values
//!   honoured, `q=0` refuses, `*` counts, an invalid q-value voids its
//!   element, br preferred to gzip at equal weight, identity least preferred
//!   unless weighted), the variant is sent with `Content-Encoding`, the
//!   `Content-Type` of `f` and an ETag of its own; ranges apply to the
//!   encoded bytes. Every answer for a file that has a variant (identity and
//!   304 included) carries `Vary: Accept-Encoding`. Variants are looked for
//!   when a file enters the cache and on its once-a-second revalidation (for
//!   large files, in a small per-path memo with the same period). A
//!   directory answers as its `index.html` does, variants included
//!   (`/dir/` with `index.html.gz` beside the index: `Content-Encoding`,
//!   `Vary`), as nginx's `gzip_static` does for the index it redirects to.

use std::fs::File;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::SystemTime;

use crate::content::access_log::{self, LogBuffer, LogFormat, TlsInfo};
use crate::content::files::{
    entity_headers, validator_headers, CachedFile, ContentType, FileStore, Found, LargeFile,
};
use crate::content::paths::{self, Dotfiles, SiteOptions};
use crate::semantics::conditional::{self, epoch_secs, Coding, ETag, Precondition};
use crate::semantics::range::{evaluate_range, RangeAnswer};
use crate::semantics::request::{Method, Request, Version};
use crate::semantics::status::Status;
use crate::semantics::target::normalize_target;

pub use crate::content::out::{FileRef, OutBatch, Part};

const SERVER: &[u8] = b"Server: evdispatch\r\n";
/// The methods served, on every 405 and every answer to `OPTIONS`.
const ALLOW: &[u8] = b"Allow: GET, HEAD, OPTIONS\r\n";

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

/// Turns requests into responses: the document root, the date line and a
/// scratch path buffer.
#[derive(Debug)]
pub struct Responder {
    /// The document root and its cache.
    pub store: FileStore,
    site: SiteOptions,
    date: DateCache,
    now_sec: u64,
    path: Vec<u8>,
    /// `--access-log`: this worker's buffer and its time field (boxed: one
    /// pointer when off).
    log: Option<Box<LogState>>,
    /// The last `multipart/byteranges` boundary, as a number (see
    /// [`Responder::next_boundary`]).
    boundary: u64,
    /// What HTTPS changes in the answers.
    https: Https,
    /// The `Strict-Transport-Security` line of `https.hsts` (empty: none).
    hsts_line: Vec<u8>,
    /// The TLS session of the connection being answered (`None`: plain).
    via_tls: Option<TlsInfo>,
}

/// What HTTPS changes in the answers (`--redirect-https`, `--hsts`,
/// `--server-name`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Https {
    /// Plain-HTTP connections get a 301 to `https://` with this port
    /// (left out when 443) for every request; `None`: served as they are.
    pub redirect_port: Option<u16>,
    /// The host of that 301 when the request has no `Host` (else the
    /// connection's local address).
    pub default_host: Option<String>,
    /// `Strict-Transport-Security: max-age=N` on every response over TLS.
    pub hsts: Option<u64>,
}

/// The connection requests come on: its socket (the client's address in
/// the access log) and its TLS session (`None`: plain HTTP).
#[derive(Debug, Clone, Copy)]
pub struct Via {
    /// The connection's socket.
    pub fd: RawFd,
    /// Its TLS session, once established.
    pub tls: Option<TlsInfo>,
}

impl Via {
    /// A plain-HTTP connection on `fd`.
    pub fn plain(fd: RawFd) -> Via {
        Via { fd, tls: None }
    }
}

/// A responder's access log: its buffer and `$time_local` for `sec`.
#[derive(Debug)]
struct LogState {
    buf: LogBuffer,
    sec: u64,
    time: String,
    /// The line ends with the TLS version and cipher.
    with_tls: bool,
}

/// What the head of a file answer says about the representation sent.
struct Entity<'a> {
    ctype: ContentType,
    size: u64,
    modified: i64,
    etag: &'a ETag,
    coding: Coding,
    vary: bool,
}

/// The body of a file response: cached bytes or an open file.
enum Body {
    Cached(Arc<CachedFile>),
    Large(LargeFile),
}

impl Body {
    fn from_found(found: Found) -> Option<Body> {
        match found {
            Found::Cached(c) => Some(Body::Cached(c)),
            Found::Large(l) => Some(Body::Large(l)),
            Found::Redirect | Found::Directory(_) => None,
        }
    }

    /// Size, modification time (the `ETag`'s) and what `Last-Modified`
    /// says ([`CachedFile::modified`]).
    fn meta(&self) -> (u64, i64, i64) {
        match self {
            Body::Cached(c) => (c.body.len() as u64, c.mtime, c.modified),
            Body::Large(l) => (l.size, l.mtime, l.modified),
        }
    }
}

impl Responder {
    /// A responder over `store`, showing the site as `site` says.
    pub fn new(store: FileStore, site: SiteOptions) -> Responder {
        let date = DateCache::default();
        Responder {
            store,
            site,
            now_sec: date.sec,
            date,
            path: Vec::with_capacity(256),
            log: None,
            boundary: {
                use std::hash::BuildHasher;
                // A per-process random start (std's hasher keys come from
                // the OS's random source): boundaries nobody can predict.
                std::collections::hash_map::RandomState::new().hash_one(0u64)
            },
            https: Https::default(),
            hsts_line: Vec::new(),
            via_tls: None,
        }
    }

    /// Answer as `https` says from now on.
    pub fn set_https(&mut self, https: Https) {
        self.hsts_line = match https.hsts {
            Some(n) => format!("Strict-Transport-Security: max-age={n}\r\n").into_bytes(),
            None => Vec::new(),
        };
        self.https = https;
    }

    /// The connection the next answers are for (its TLS session: HSTS,
    /// the access log's TLS fields, the redirect to HTTPS).
    pub(crate) fn set_via(&mut self, via: Via) {
        self.via_tls = via.tls;
    }

    /// Requests are answered with a 301 to HTTPS: they came over plain
    /// HTTP and `--redirect-https` is on.
    pub(crate) fn redirects_to_https(&self) -> bool {
        self.via_tls.is_none() && self.https.redirect_port.is_some()
    }

    /// The 301 to the same URL over HTTPS (nginx's `return 301
    /// https://$host$request_uri`): the `Host` of `head` without its port
    /// (else `--server-name`, else the connection's local address), the
    /// HTTPS listener's port unless 443, the path and query of `req`.
    pub(crate) fn redirect_to_https(
        &mut self,
        req: &Request<'_>,
        head: &[u8],
        fd: RawFd,
        out: &mut OutBatch,
        keep: bool,
    ) -> Status {
        let st = Status::MovedPermanently;
        let port = self.https.redirect_port.unwrap_or(443);
        let start = self.start(out, st);
        out.head.extend_from_slice(b"Location: https://");
        let host = access_log::header(head, b"host")
            .map(host_without_port)
            .filter(|h| !h.is_empty() && h.iter().all(|&b| b.is_ascii_graphic() && b != b'/'));
        match (host, &self.https.default_host) {
            (Some(h), _) => out.head.extend_from_slice(h),
            (None, Some(h)) => out.head.extend_from_slice(h.as_bytes()),
            (None, None) => match crate::sys::local_ip(fd) {
                Some(std::net::IpAddr::V6(ip)) => {
                    out.head.extend_from_slice(format!("[{ip}]").as_bytes())
                }
                Some(ip) => out.head.extend_from_slice(ip.to_string().as_bytes()),
                None => out.head.extend_from_slice(b"localhost"),
            },
        }
        if port != 443 {
            out.head.extend_from_slice(format!(":{port}").as_bytes());
        }
        out.head.extend_from_slice(request_uri(req.target));
        out.head.extend_from_slice(b"\r\n");
        let head_only = req.method == Method::Head;
        self.error_tail(st, out, start, keep, req.version, head_only);
        st
    }

    /// Log every response from now on into `buf` (`--access-log`), in
    /// `format`.
    pub fn set_access_log(&mut self, buf: LogBuffer, format: LogFormat) {
        self.log = Some(Box::new(LogState {
            buf,
            sec: u64::MAX,
            time: String::new(),
            with_tls: format == LogFormat::CombinedTls,
        }));
    }

    /// The access-log line of the response with `status` just added to
    /// `out` from its byte `from` on, to the request whose head starts
    /// `head` on the connection `fd`: pending in `out` until its bytes are
    /// written ([`OutBatch`]); nothing when there is no access log.
    pub(crate) fn log(
        &mut self,
        fd: RawFd,
        head: &[u8],
        status: Status,
        out: &mut OutBatch,
        from: u64,
    ) {
        let Some(l) = self.log.as_deref_mut() else {
            return;
        };
        if l.sec != self.now_sec {
            l.sec = self.now_sec;
            let line = String::from_utf8_lossy(self.date.line());
            let date = line.trim_start_matches("Date: ").trim_end();
            l.time = access_log::clf_time(date);
        }
        let entry = access_log::Entry {
            remote: crate::sys::peer_ip(fd),
            time: l.time.as_bytes(),
            request: access_log::request_line(head),
            status: status.code(),
            referer: access_log::header(head, b"referer"),
            user_agent: access_log::header(head, b"user-agent"),
            tls: l.with_tls.then_some(self.via_tls),
        };
        // The response's body: its bytes after its head.
        let body = from + out.last_head as u64..out.stream_len();
        out.log
            .get_or_insert_with(|| Box::new(access_log::Pending::new(l.buf.clone())))
            .push(&entry, body);
    }

    /// Where the next response begins in `out`, for the access log (0, not
    /// counted, without one).
    pub(crate) fn log_from(&self, out: &OutBatch) -> u64 {
        match self.log {
            Some(_) => out.stream_len(),
            None => 0,
        }
    }

    /// Whether responses are logged (there is an access log).
    pub(crate) fn logging(&self) -> bool {
        self.log.is_some()
    }

    /// A fresh `multipart/byteranges` boundary: 20 decimal digits (nginx's
    /// length, so that both answer the same Content-Length), a step of a
    /// Weyl sequence from a random start. RFC 2046 §5.1.1 asks that the
    /// boundary not occur in the parts: a client that wanted it to would
    /// have to guess 64 random bits.
    fn next_boundary(&mut self) -> [u8; 20] {
        self.boundary = self.boundary.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut b = [b'0'; 20];
        let mut n = self.boundary;
        for d in b.iter_mut().rev() {
            *d = b'0' + (n % 10) as u8;
            n /= 10;
        }
        b
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
        if self.via_tls.is_some() {
            out.head.extend_from_slice(&self.hsts_line);
        }
        start
    }

    fn finish(out: &mut OutBatch, start: usize, keep_alive: bool, version: Version) {
        if !keep_alive {
            out.head.extend_from_slice(b"Connection: close\r\n");
        } else if version == Version::Http10 {
            out.head.extend_from_slice(b"Connection: keep-alive\r\n");
        }
        out.head.extend_from_slice(b"\r\n");
        out.last_head = out.head.len() - start;
        out.push_head(start);
        out.responses += 1;
    }

    /// Answer `req` into `out` (`OPTIONS` with the methods allowed, a
    /// method not served with its refusal). `closing`: the connection closes after this answer (the
    /// server is stopping, or a body is left unread). Returns the status
    /// and whether the connection stays open.
    pub fn respond(
        &mut self,
        req: &Request<'_>,
        out: &mut OutBatch,
        closing: bool,
    ) -> (Status, bool) {
        let keep = req.keep_alive && !closing;
        if let Method::Refused(st) = req.method {
            let keep = keep && !st.closes();
            self.error(st, out, keep, req.version, false);
            return (st, keep);
        }
        let options = req.method == Method::Options;
        if options && req.target == b"*" {
            return (self.options(out, keep, req.version), keep);
        }
        let found = match normalize_target(req.target, &mut self.path) {
            Ok(_) if self.site.dotfiles == Dotfiles::Deny && paths::hidden(&self.path) => {
                Err(Status::NotFound)
            }
            Ok(dir) => {
                if dir && !self.path.is_empty() {
                    self.path.push(b'/');
                }
                self.store.lookup(&self.path, self.now_sec)
            }
            Err(st) => Err(st),
        };
        let head_only = req.method == Method::Head;
        let st = match found {
            Err(st) => {
                let keep = keep && !st.closes();
                self.error(st, out, keep, req.version, head_only);
                return (st, keep);
            }
            // What a GET would send exists: the methods it allows.
            Ok(Found::Directory(_)) if options && !self.site.listing => {
                self.error(Status::Forbidden, out, keep, req.version, false);
                Status::Forbidden
            }
            Ok(_) if options => self.options(out, keep, req.version),
            Ok(Found::Redirect) => self.redirect(req, out, keep, head_only),
            Ok(Found::Directory(dir)) if self.site.listing => {
                let with_hidden = self.site.dotfiles == Dotfiles::Allow;
                let conditions = conditional::Conditions::of(req);
                // No validators: only `*` preconditions can hold (§13.1).
                if let Some(st) = self.preconditions(&conditions, req, out, keep, None, false) {
                    return (st, keep);
                }
                match crate::content::listing::render(&dir, &self.path, with_hidden) {
                    Ok(page) => self.page(&page, out, keep, req.version, head_only),
                    Err(_) => {
                        self.error(Status::InternalError, out, false, req.version, head_only);
                        return (Status::InternalError, false);
                    }
                }
            }
            Ok(Found::Directory(_)) => {
                self.error(Status::Forbidden, out, keep, req.version, head_only);
                Status::Forbidden
            }
            Ok(Found::Cached(c)) => self.file(req, out, keep, head_only, Body::Cached(c)),
            Ok(Found::Large(l)) => self.file(req, out, keep, head_only, Body::Large(l)),
        };
        (st, keep)
    }

    /// A file (`body`, for the path in `self.path`): its precompressed
    /// variant if the client takes one, then preconditions, then Range.
    fn file(
        &mut self,
        req: &Request<'_>,
        out: &mut OutBatch,
        keep: bool,
        head_only: bool,
        body: Body,
    ) -> Status {
        let (variants, ctype) = match &body {
            Body::Cached(c) => (c.variants(), c.content_type),
            Body::Large(l) => (l.variants, l.content_type),
        };
        let conditions = conditional::Conditions::of(req);
        let plain = conditions.is_empty() && req.range.is_none();
        if let (Body::Cached(c), true, 0) = (&body, plain, variants) {
            // The keep-alive hot path: prebuilt headers and the cached bytes.
            let start = self.start(out, Status::Ok);
            out.head.extend_from_slice(&c.headers);
            Self::finish(out, start, keep, req.version);
            if !head_only && !c.body.is_empty() {
                let end = c.body.len();
                out.push(Part::Cached {
                    file: c.clone(),
                    start: 0,
                    end,
                });
            }
            return Status::Ok;
        }
        let mut coding = crate::semantics::encoding::negotiate(&req.accept_encoding, variants);
        let mut body = body;
        if coding != Coding::Identity {
            let len = self.path.len();
            crate::content::files::push_variant_name(&mut self.path, coding);
            match self
                .store
                .lookup(&self.path, self.now_sec)
                .map(Body::from_found)
            {
                Ok(Some(variant)) => body = variant,
                _ => coding = Coding::Identity, // gone meanwhile: the file itself
            }
            self.path.truncate(len);
        }
        let (size, mtime, modified) = body.meta();
        let etag = ETag::new(mtime, size, coding);
        let vary = variants != 0;
        let validators = Some((&etag, modified));
        if let Some(st) = self.preconditions(&conditions, req, out, keep, validators, vary) {
            return st;
        }
        let answer = match req.range {
            Some(r)
                if req
                    .if_range
                    .is_none_or(|v| conditional::if_range_holds(v, &etag, modified)) =>
            {
                evaluate_range(r, size)
            }
            _ => RangeAnswer::Full,
        };
        let (st, part) = match answer {
            RangeAnswer::Full => (Status::Ok, (0, size)),
            RangeAnswer::Multi(ranges) => {
                let entity = Entity {
                    ctype,
                    size,
                    modified,
                    etag: &etag,
                    coding,
                    vary,
                };
                self.multipart(req, out, keep, body, entity, &ranges);
                return Status::PartialContent;
            }
            RangeAnswer::Single { start, end } => (Status::PartialContent, (start, end)),
            RangeAnswer::Unsatisfiable => {
                use std::io::Write;
                let st = Status::RangeNotSatisfiable;
                let start = self.start(out, st);
                let _ = write!(out.head, "Content-Range: bytes */{size}\r\n");
                Self::variant_headers(out, Coding::Identity, vary);
                self.error_tail(st, out, start, keep, req.version, head_only);
                return st;
            }
        };
        let start = self.start(out, st);
        let range = (st == Status::PartialContent).then_some(part);
        entity_headers(&mut out.head, ctype, size, modified, &etag, range);
        Self::variant_headers(out, coding, vary);
        Self::finish(out, start, keep, req.version);
        let (from, to) = part;
        if !head_only && to > from {
            out.push(match body {
                Body::Cached(file) => Part::Cached {
                    file,
                    start: from as usize,
                    end: to as usize,
                },
                Body::Large(l) => Part::File {
                    file: FileRef::Owned(l.file),
                    offset: from,
                    end: to,
                },
            });
        }
        st
    }

    /// The answer `conditions` decide on, if any: 304 (with the validators
    /// and `Vary`) or 412; `None`: answer normally. `validators`: the
    /// representation's `ETag` and `Last-Modified`, `None` for one that
    /// has neither (a listing); `vary`: the file has variants.
    fn preconditions(
        &mut self,
        conditions: &conditional::Conditions<'_>,
        req: &Request<'_>,
        out: &mut OutBatch,
        keep: bool,
        validators: Option<(&ETag, i64)>,
        vary: bool,
    ) -> Option<Status> {
        let st = match conditional::evaluate(conditions, validators) {
            Precondition::Proceed => return None,
            Precondition::NotModified => Status::NotModified,
            Precondition::Failed => Status::PreconditionFailed,
        };
        let start = self.start(out, st);
        if st == Status::NotModified {
            if let Some((etag, modified)) = validators {
                validator_headers(&mut out.head, modified, etag);
            }
            Self::variant_headers(out, Coding::Identity, vary);
            Self::finish(out, start, keep, req.version);
        } else {
            Self::variant_headers(out, Coding::Identity, vary);
            let head_only = req.method == Method::Head;
            self.error_tail(st, out, start, keep, req.version, head_only);
        }
        Some(st)
    }

    /// 206 with a `multipart/byteranges` body (RFC 9110 §14.6): per range
    /// a part header (boundary, `Content-Type`, `Content-Range`) and the
    /// bytes (a slice of the cached file, or a `sendfile` segment of the
    /// open one: no copy), then the closing boundary. The part headers are
    /// written first, so that their lengths give the `Content-Length`; they
    /// sit in the header buffer before the response head, and the parts
    /// list says the order to send. HEAD sends the same head and no parts.
    fn multipart(
        &mut self,
        req: &Request<'_>,
        out: &mut OutBatch,
        keep: bool,
        body: Body,
        e: Entity<'_>,
        ranges: &crate::semantics::range::Ranges,
    ) {
        use std::io::Write;
        let boundary = self.next_boundary();
        let spans = ranges.as_slice();
        // Where each part's header lies in `out.head`; the last is the
        // closing boundary.
        let mut heads = [(0usize, 0usize); crate::semantics::range::MAX_RANGES + 1];
        let mut length = 0u64;
        for (i, &(a, b)) in spans.iter().enumerate() {
            let from = out.head.len();
            out.head.extend_from_slice(b"\r\n--");
            out.head.extend_from_slice(&boundary);
            out.head.extend_from_slice(b"\r\n");
            e.ctype.write_line(&mut out.head);
            let _ = write!(
                out.head,
                "Content-Range: bytes {a}-{}/{}\r\n\r\n",
                b - 1,
                e.size
            );
            heads[i] = (from, out.head.len());
            length += (out.head.len() - from) as u64 + (b - a);
        }
        let from = out.head.len();
        out.head.extend_from_slice(b"\r\n--");
        out.head.extend_from_slice(&boundary);
        out.head.extend_from_slice(b"--\r\n");
        heads[spans.len()] = (from, out.head.len());
        length += (out.head.len() - from) as u64;

        let start = self.start(out, Status::PartialContent);
        out.head
            .extend_from_slice(b"Content-Type: multipart/byteranges; boundary=");
        out.head.extend_from_slice(&boundary);
        let _ = write!(out.head, "\r\nContent-Length: {length}\r\n");
        validator_headers(&mut out.head, e.modified, e.etag);
        out.head.extend_from_slice(b"Accept-Ranges: bytes\r\n");
        Self::variant_headers(out, e.coding, e.vary);
        Self::finish(out, start, keep, req.version);
        if req.method == Method::Head {
            return;
        }
        enum Source {
            Memory(Arc<CachedFile>),
            Disk(Arc<File>),
        }
        let source = match body {
            Body::Cached(c) => Source::Memory(c),
            Body::Large(l) => Source::Disk(Arc::new(l.file)),
        };
        for (i, &(a, b)) in spans.iter().enumerate() {
            let (hs, he) = heads[i];
            out.push(Part::Head { start: hs, end: he });
            out.push(match &source {
                Source::Memory(file) => Part::Cached {
                    file: file.clone(),
                    start: a as usize,
                    end: b as usize,
                },
                Source::Disk(file) => Part::File {
                    file: FileRef::Shared(file.clone()),
                    offset: a,
                    end: b,
                },
            });
        }
        let (hs, he) = heads[spans.len()];
        out.push(Part::Head { start: hs, end: he });
    }

    /// `Content-Encoding` (for a variant) and `Vary` (for a file that has
    /// variants, whichever representation is sent).
    fn variant_headers(out: &mut OutBatch, coding: Coding, vary: bool) {
        if coding != Coding::Identity {
            out.head.extend_from_slice(b"Content-Encoding: ");
            out.head.extend_from_slice(coding.token());
            out.head.extend_from_slice(b"\r\n");
        }
        if vary {
            out.head.extend_from_slice(b"Vary: Accept-Encoding\r\n");
        }
    }

    /// 301 to the directory's path with its slash.
    fn redirect(
        &mut self,
        req: &Request<'_>,
        out: &mut OutBatch,
        keep: bool,
        head_only: bool,
    ) -> Status {
        let st = Status::MovedPermanently;
        let start = self.start(out, st);
        out.head.extend_from_slice(b"Location: ");
        paths::directory_location(req.target, &mut out.head);
        out.head.extend_from_slice(b"\r\n");
        self.error_tail(st, out, start, keep, req.version, head_only);
        st
    }

    /// A generated HTML page (a listing): 200, no validators.
    fn page(
        &mut self,
        page: &[u8],
        out: &mut OutBatch,
        keep: bool,
        version: Version,
        head_only: bool,
    ) -> Status {
        use std::io::Write;
        let start = self.start(out, Status::Ok);
        ContentType {
            mime: "text/html",
            utf8: true,
        }
        .write_line(&mut out.head);
        let _ = write!(out.head, "Content-Length: {}\r\n", page.len());
        Self::finish(out, start, keep, version);
        if !head_only {
            let from = out.head.len();
            out.head.extend_from_slice(page);
            out.push_head(from);
        }
        Status::Ok
    }

    /// 200 to `OPTIONS`: `Allow` and no content (RFC 9110 §9.3.7).
    fn options(&mut self, out: &mut OutBatch, keep: bool, version: Version) -> Status {
        let start = self.start(out, Status::Ok);
        out.head.extend_from_slice(ALLOW);
        out.head.extend_from_slice(b"Content-Length: 0\r\n");
        Self::finish(out, start, keep, version);
        Status::Ok
    }

    pub(crate) fn error(
        &mut self,
        st: Status,
        out: &mut OutBatch,
        keep: bool,
        version: Version,
        head_only: bool,
    ) {
        let start = self.start(out, st);
        if st == Status::MethodNotAllowed {
            out.head.extend_from_slice(ALLOW);
        }
        self.error_tail(st, out, start, keep, version, head_only);
    }

    /// The rest of an answer whose body is the status's short text page.
    fn error_tail(
        &mut self,
        st: Status,
        out: &mut OutBatch,
        start: usize,
        keep: bool,
        version: Version,
        head_only: bool,
    ) {
        use std::io::Write;
        let body = st.body();
        out.head
            .extend_from_slice(b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: ");
        let _ = write!(out.head, "{}\r\n", body.len());
        Self::finish(out, start, keep, version);
        if !head_only {
            out.push(Part::Static(body));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_line_shape() {
        let mut d = DateCache::default();
        d.update(std::time::UNIX_EPOCH + std::time::Duration::from_secs(784111777));
        assert_eq!(d.line(), b"Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n");
    }
}

/// A `Host` value without its port (`name:8080`, `[::1]:8080`).
fn host_without_port(host: &[u8]) -> &[u8] {
    if host.starts_with(b"[") {
        return match host.iter().position(|&b| b == b']') {
            Some(i) => &host[..=i],
            None => host,
        };
    }
    match host.iter().rposition(|&b| b == b':') {
        Some(i) => &host[..i],
        None => host,
    }
}

/// The path and query of a request target (`$request_uri`): the target
/// itself in origin form, what follows the authority in absolute form,
/// `/` for `*`.
fn request_uri(target: &[u8]) -> &[u8] {
    if target.starts_with(b"/") {
        return target;
    }
    let after_scheme = target
        .windows(3)
        .position(|w| w == b"://")
        .map(|i| &target[i + 3..]);
    match after_scheme.and_then(|rest| rest.iter().position(|&b| b == b'/').map(|i| &rest[i..])) {
        Some(path) => path,
        None => b"/",
    }
}

#[cfg(test)]
mod https_tests {
    use super::*;

    #[test]
    fn redirect_parts() {
        assert_eq!(host_without_port(b"example.com:8080"), b"example.com");
        assert_eq!(host_without_port(b"example.com"), b"example.com");
        assert_eq!(host_without_port(b"[::1]:8080"), b"[::1]");
        assert_eq!(host_without_port(b"[::1]"), b"[::1]");
        assert_eq!(request_uri(b"/a/b?x=1"), b"/a/b?x=1");
        assert_eq!(request_uri(b"http://h:80/p?q"), b"/p?q");
        assert_eq!(request_uri(b"http://h"), b"/");
        assert_eq!(request_uri(b"*"), b"/");
    }
}
