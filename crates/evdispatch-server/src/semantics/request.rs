//! Request parsing: bytes in, a verdict out. A pure function (no I/O, no
//! allocation), so fuzz targets can be built on it.
//!
//! Only what a static server needs is accepted: `GET`, `HEAD` and
//! `OPTIONS`; a body they carry is framed here ([`Framing`],
//! [`Request::end`]) so that it can be skipped. Every shape a
//! request-smuggling attack relies on (`Content-Length` together with
//! `Transfer-Encoding`, a repeated or malformed `Content-Length`, a
//! `Transfer-Encoding` other than `chunked` alone or on HTTP/1.0, a
//! chunk-size line the grammar does not have) is refused with 400 and the
//! connection closed, so no two parsers on the path can disagree about
//! where this request ends. Where RFC 9110 and RFC 9112 say a request is
//! invalid, it is refused, even where nginx is lenient.
//!
//! # Methods and bodies (RFC 9110 §9, RFC 9112 §6)
//!
//! * **Methods.** `GET` and `HEAD` are served, and `OPTIONS` (§9.3.7) is
//!   answered 200 with `Allow: GET, HEAD, OPTIONS` and `Content-Length: 0`:
//!   `OPTIONS *` (the server as a whole: the asterisk-form, §7.1, taken
//!   with this method only; `GET *` is 400), and `OPTIONS /path` where a
//!   `GET` of the path would find something to send (a file, a directory
//!   listed or redirected to its slash); elsewhere it gets the status the
//!   `GET` would (404 for a path that does not exist, 403, 400), as a
//!   static server knows no more of a missing path than that it is
//!   missing. The other methods RFC 9110 defines answer 405, always with
//!   that `Allow`, any other token 501
//!   (§9.1: methods are case-sensitive, `get` is unknown); both keep the
//!   connection, as nginx does for 405, a body skipped as below (a request
//!   whose framing is not known closes it, whatever its method). A method
//!   longer than the head limit is still a method: 501 (400 once a byte
//!   that is not a `tchar` arrives), never 414.
//! * **Request target** (RFC 9112 §3.2, RFC 3986 §2). Only the characters
//!   of a URI: a raw byte outside them (non-ASCII, a control, `"`, `<`,
//!   `>`, `\`, `^`, `` ` ``, `{`, `|`, `}`) makes the request line
//!   invalid: 400 and close (§3.2 allows a 400 or a redirect; a raw
//!   non-ASCII name is never guessed at). Percent-encoded, every byte is
//!   taken.
//! * **Host** (RFC 9110 §7.2, RFC 9112 §3.2). HTTP/1.1 needs exactly one;
//!   HTTP/1.0 may have none, or one. Present, it must be a valid
//!   `uri-host [":" port]` on either version, which an empty value is not
//!   (an `http` URI's host is never empty, RFC 9110 §4.2.1): 400, as nginx
//!   answers an empty Host whatever the version.
//! * **Request bodies** (RFC 9112 §6). A `GET` or `HEAD` with a body
//!   (`Content-Length` or `Transfer-Encoding: chunked`, extensions and
//!   trailers included) is answered as without one, as nginx does: the
//!   body is read and discarded, and the next pipelined request follows it.
//!   A body still arriving is waited for (under the header timeout) while
//!   it fits with its head in `--max-header` bytes (the read buffer; the
//!   same bound in the io_uring model, whose input grows); a larger
//!   one, even one all received, or one the client holds back for `Expect: 100-continue` (on
//!   HTTP/1.1: ignored on 1.0, as §10.1.1 requires), is not
//!   read: the answer is sent at once and the connection closed, with the
//!   lingering close draining what still comes (RFC 9110 §9.3.1, §10.1.1;
//!   RFC 9112 §9.5; no `100 Continue` is ever sent). A `Content-Length`
//!   above [`MAX_BODY`] (1 MiB, nginx's `client_max_body_size`) is 413; a
//!   broken chunked coding, a `Transfer-Encoding` other than `chunked`
//!   alone on one line (§6.3: a MUST for a final coding other than
//!   chunked; also `gzip, chunked`, where §6.1 suggests 501; a second
//!   line, even an empty one, which a parser that takes the last line
//!   would read as no body), one beside a
//!   `Content-Length` (the smuggling shape), or one in an HTTP/1.0
//!   request (§6.1: 1.0 has no transfer codings, so its framing is
//!   faulty; nginx answers 400 too) is 400; all of these close.
//! * **Chunks** (RFC 9112 §7.1). A chunk-size line is hex digits, then
//!   extensions exactly as §7.1.1's grammar has them, then CRLF:
//!   `*( BWS ";" BWS name [ BWS "=" BWS value ] )`, a name a token, a
//!   value a token or a quoted string. Whitespace is taken only where the
//!   grammar has BWS (before and after `;`, around `=`), so `5 \r\n`,
//!   `5;\r\n`, `5;a \r\n`, `5;a=\r\n` and a name that is not a token
//!   are malformed: 400 and close, as is a bare CR or LF anywhere in the
//!   body's framing or a malformed trailer line (lenient chunk parsing is
//!   what request smuggling feeds on).
//!
//! # Lists over several lines
//!
//! `If-Match`, `If-None-Match` and
//! `Accept-Encoding` may be repeated; the lines are read as one list
//! ([`FieldLines`], §5.3).
//!
//! # Limits
//!
//! A request head of at most `--max-header` bytes (default 8 KiB;
//! more: 431, or 414 when the request line alone is longer, or 501 when
//! even its method is), and, whatever
//! that allows, a target of at most [`MAX_TARGET`] bytes (8 KiB, nginx's
//! default line size; more: 414) and at most [`MAX_HEADERS`] header lines
//! (100; more: 431); at most [`MAX_RANGES`](crate::MAX_RANGES) ranges
//! (16; more: the whole file); a `Content-Length` of at most [`MAX_BODY`] (1 MiB; more: 413),
//! a body read only when it fits in `--max-header` with its head
//! (larger: answered without it, then closed, in every model).

use crate::semantics::status::Status;

/// Most header lines a request may carry (more: 431), whatever
/// `--max-header` allows: proxies and CDNs add tracing headers, and 100
/// lines of 16 bytes each is a plausible head. The parser's array of them
/// lives on the stack, uninitialised until parsed into.
pub const MAX_HEADERS: usize = 100;
/// Largest `Content-Length` taken (larger: 413 and close), as nginx's
/// default `client_max_body_size`. Bodies are read only to be discarded
/// (GET, HEAD and OPTIONS take no body; other methods are refused); a body not
/// read at all is drained by the lingering close, which reads as much.
pub const MAX_BODY: u64 = 1 << 20;
/// Longest request target accepted (longer: 414), whatever `--max-header`
/// allows: 8 KiB, nginx's default `large_client_header_buffers` line.
pub const MAX_TARGET: usize = 8192;

/// A list-valued field (`If-None-Match`, `If-Match`, `Accept-Encoding`),
/// which RFC 9110 §5.3 lets a client split over several lines: it means the
/// lines' values joined in order with commas. Absent when no line has it.
/// Small (a field is almost always on one line): a repeated field is found
/// again in the rest of the head when it is read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldLines<'a> {
    /// The first line's value.
    first: Option<&'a [u8]>,
    /// When the field is repeated, the head after its first line, where
    /// the other lines are; else empty.
    more: &'a [u8],
    /// The field's name, in lower case.
    name: &'static [u8],
}

impl<'a> FieldLines<'a> {
    /// The field on one line (or absent).
    pub fn one(value: Option<&'a [u8]>) -> Self {
        FieldLines {
            first: value,
            ..FieldLines::default()
        }
    }

    /// True when the request does not carry the field.
    pub fn is_absent(&self) -> bool {
        self.first.is_none()
    }

    /// The values of its lines, in order, trimmed.
    pub fn lines(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        let more = self.more.split(|&b| b == b'\n').filter_map(|line| {
            let colon = line.iter().position(|&b| b == b':')?;
            line[..colon]
                .eq_ignore_ascii_case(self.name)
                .then(|| line[colon + 1..].trim_ascii())
        });
        self.first.into_iter().chain(more)
    }

    /// The list's elements across all lines (split at commas, trimmed,
    /// empty ones dropped: §5.6.1).
    pub fn elements(&self) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.lines()
            .flat_map(|line| line.split(|&b| b == b','))
            .map(<[u8]>::trim_ascii)
            .filter(|e| !e.is_empty())
    }
}

/// `GET`, `HEAD` or `OPTIONS`, or another method, which is refused; its
/// request is parsed all the same, so that its end is known and the
/// connection can go on after the refusal, as nginx does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: headers and body.
    Get,
    /// `HEAD`: the headers a `GET` would have had.
    Head,
    /// `OPTIONS`: the methods allowed, in `Allow` (RFC 9110 §9.3.7).
    Options,
    /// Any other method, answered with this status: 405 for the methods
    /// RFC 9110 defines, 501 for the rest (§9.1).
    Refused(Status),
}

/// The protocol version of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// HTTP/1.0: closes after the response unless `Connection: keep-alive`.
    Http10,
    /// HTTP/1.1: persistent unless `Connection: close`.
    Http11,
}

/// A complete, acceptable request, borrowing from the input buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// The raw request target (path and query, or an absolute URI).
    pub target: &'a [u8],
    /// The version.
    pub version: Version,
    /// Whether the client wants the connection kept open after the response.
    pub keep_alive: bool,
    /// The raw `If-Modified-Since` value, if any.
    pub if_modified_since: Option<&'a [u8]>,
    /// The `If-None-Match` lines.
    pub if_none_match: FieldLines<'a>,
    /// The `If-Match` lines.
    pub if_match: FieldLines<'a>,
    /// The raw `If-Unmodified-Since` value, if any.
    pub if_unmodified_since: Option<&'a [u8]>,
    /// The raw `Range` value; `None` when absent or repeated (two ranges
    /// headers are ambiguous, and a server may ignore Range: RFC 9110 §14.2).
    pub range: Option<&'a [u8]>,
    /// The raw `If-Range` value, if any.
    pub if_range: Option<&'a [u8]>,
    /// The `Accept-Encoding` lines.
    pub accept_encoding: FieldLines<'a>,
    /// Bytes of the input the request's head occupies (its body, if any,
    /// follows: [`Request::end`]).
    pub len: usize,
    /// How the body, if any, is framed.
    pub body: Framing,
    /// `Expect: 100-continue` on HTTP/1.1 (ignored on 1.0: RFC 9110
    /// §10.1.1): the client may wait for an interim answer before it sends
    /// the body.
    pub expect_continue: bool,
}

/// How the body of a request is framed (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// No body (no `Content-Length`, or 0).
    None,
    /// `Content-Length: n`, n > 0 (at most [`MAX_BODY`]).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
}

/// Where a request that [`parse_request`] found complete ends, its body
/// included: [`Request::end`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestEnd {
    /// Head and body take the first this many bytes of the input.
    At(usize),
    /// The body is still arriving and fits in the read buffer with its
    /// head: read on, as for a partial head.
    Wait,
    /// The body will not be read (larger than `max_header` with its head,
    /// or, while still arriving, held back by a client that waits for
    /// `100 Continue`): answer at once and close the
    /// connection, with the lingering close that drains what still comes.
    Unread,
    /// The chunked framing is broken: 400 and close.
    Malformed,
}

impl Request<'_> {
    /// Where the request that starts `input` (this request's head, then
    /// what followed it) ends, so that its body is discarded and the next
    /// request found: a body is read and thrown away as nginx does, when
    /// it has all arrived and fits with its head in `max_header` bytes.
    /// One that is still arriving is waited for while it may still fit,
    /// unless the client asked to be told to go on (`Expect:
    /// 100-continue`: RFC 9110 §10.1.1 lets the server answer the final
    /// status at once instead); otherwise it is not read (RFC 9110 §9.3.1,
    /// RFC 9112 §9.5: answer and close). The bound holds even when more
    /// than `max_header` bytes are at hand (the io_uring model's input
    /// grows; the others read into `max_header` bytes), so the verdict on
    /// the same bytes is the same in every model.
    pub fn end(&self, input: &[u8], max_header: usize) -> RequestEnd {
        if self.body == Framing::None {
            return RequestEnd::At(self.len);
        }
        let after = &input[self.len.min(input.len())..];
        let whole = match self.body {
            Framing::None => Some(0),
            Framing::Length(n) => match usize::try_from(n) {
                Ok(n) if n <= after.len() => Some(n),
                _ => None,
            },
            Framing::Chunked => match chunked_length(after) {
                Chunked::Whole(n) => Some(n),
                Chunked::Incomplete => None,
                Chunked::Malformed => return RequestEnd::Malformed,
            },
        };
        let fits = match self.body {
            Framing::Length(n) => (self.len as u64).saturating_add(n) <= max_header as u64,
            _ => input.len() < max_header,
        };
        match whole {
            Some(n) if self.len + n <= max_header => RequestEnd::At(self.len + n),
            Some(_) => RequestEnd::Unread,
            None if fits && !self.expect_continue => RequestEnd::Wait,
            None => RequestEnd::Unread,
        }
    }
}

/// What [`chunked_length`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// The chunked body takes this many bytes.
    Whole(usize),
    /// Not all there yet.
    Incomplete,
    /// Not the chunked coding of RFC 9112 §7.1 (whatever follows).
    Malformed,
}

/// The length of the chunked body at the start of `b` (RFC 9112 §7.1):
/// chunks of a hex size (at most 16 digits), extensions exactly as the
/// grammar has them ([`chunk_ext`]), the data and CRLF; the last chunk (size 0), trailer field lines and an empty
/// line. Strict: lines end with CRLF, no bare CR or LF, no control bytes,
/// so that no parser before this server can read another end into it. The
/// verdict never depends on how the bytes were split.
fn chunked_length(b: &[u8]) -> Chunked {
    let mut at = 0;
    loop {
        let digits = b[at..].iter().take_while(|c| c.is_ascii_hexdigit()).count();
        if digits > 16 {
            return Chunked::Malformed;
        }
        if at + digits == b.len() {
            return Chunked::Incomplete;
        }
        if digits == 0 {
            return Chunked::Malformed;
        }
        let size = b[at..at + digits].iter().fold(0u64, |n, &c| {
            let d = (c as char).to_digit(16).unwrap_or(0);
            (n << 4) | u64::from(d)
        });
        at += digits;
        let (ext, next) = match crlf_line(b, at) {
            Ok(Some(l)) => l,
            Ok(None) => return Chunked::Incomplete,
            Err(()) => return Chunked::Malformed,
        };
        if !chunk_ext(&b[at..ext]) {
            return Chunked::Malformed;
        }
        at = next;
        if size == 0 {
            break;
        }
        let left = (b.len() - at) as u64;
        if left < size.saturating_add(2) {
            return Chunked::Incomplete;
        }
        at += size as usize;
        if &b[at..at + 2] != b"\r\n" {
            return Chunked::Malformed;
        }
        at += 2;
    }
    // The trailer section: field lines, then an empty line.
    loop {
        let (end, next) = match crlf_line(b, at) {
            Ok(Some(l)) => l,
            Ok(None) => return Chunked::Incomplete,
            Err(()) => return Chunked::Malformed,
        };
        let line = &b[at..end];
        if line.is_empty() {
            return Chunked::Whole(next);
        }
        let name = line.split(|&c| c == b':').next().unwrap_or_default();
        if name.is_empty() || name.len() == line.len() || !name.iter().all(tchar) {
            return Chunked::Malformed;
        }
        at = next;
    }
}

/// Whether `ext`, what follows a chunk's size up to its CRLF, is a
/// `chunk-ext` of RFC 9112 §7.1.1, exactly:
/// `*( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )`, a name
/// a token, a value a token or a quoted string (RFC 9110 §5.6.4: `qdtext`
/// and `\`-pairs, obs-text included). So nothing (no extension) is valid;
/// whitespace (BWS: spaces and tabs) may stand before each `;`, after it
/// and around `=`, but not at the end of the line: `3 ` and `3;a ` are
/// malformed, as are a bare `3;`, an empty name, `;a=` without a value and
/// a name or value that is not a token.
fn chunk_ext(mut ext: &[u8]) -> bool {
    let bws = |s: &[u8]| -> usize { s.iter().take_while(|&&c| c == b' ' || c == b'\t').count() };
    let token = |s: &[u8]| -> usize { s.iter().take_while(|c| tchar(c)).count() };
    while !ext.is_empty() {
        let Some(rest) = ext[bws(ext)..].strip_prefix(b";") else {
            return false;
        };
        let rest = &rest[bws(rest)..];
        let name = token(rest);
        if name == 0 {
            return false;
        }
        ext = &rest[name..];
        let after = &ext[bws(ext)..];
        if let Some(value) = after.strip_prefix(b"=") {
            let value = &value[bws(value)..];
            let len = match value.first() {
                Some(b'"') => match quoted_string(value) {
                    Some(len) => len,
                    None => return false,
                },
                _ => token(value),
            };
            if len == 0 {
                return false;
            }
            ext = &value[len..];
        }
    }
    true
}

/// The length of the quoted string (RFC 9110 §5.6.4) at the start of `s`,
/// which starts with `"`; `None` when it does not close or holds a byte
/// it may not (a control other than tab, or a `\` before one).
fn quoted_string(s: &[u8]) -> Option<usize> {
    let text = |c: u8| c == b'\t' || c == b' ' || (0x21..=0x7e).contains(&c) || c >= 0x80;
    let mut i = 1;
    while let Some(&c) = s.get(i) {
        match c {
            b'"' => return Some(i + 1),
            b'\\' => {
                if !text(*s.get(i + 1)?) {
                    return None;
                }
                i += 2;
            }
            c if text(c) => i += 1,
            _ => return None,
        }
    }
    None
}

/// A `tchar` of RFC 9110 §5.6.2, a byte of a token.
fn tchar(c: &u8) -> bool {
    TCHAR[*c as usize]
}

/// A byte class as a table: the ASCII letters and digits and `extra`.
/// Looking a byte up costs one load where `extra.contains` would call
/// `memchr` for every byte that is not alphanumeric.
const fn alnum_and(extra: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    let mut i = 0;
    while i < extra.len() {
        t[extra[i] as usize] = true;
        i += 1;
    }
    t
}

const TCHAR: [bool; 256] = alnum_and(b"!#$%&'*+-.^_`|~");
const URI_CHAR: [bool; 256] = alnum_and(b"-._~:/?#[]@!$&'()*+,;=%");
const HOST_NAME_CHAR: [bool; 256] = alnum_and(b"-._~%!$&'()*+,;=");
const HOST_LITERAL_CHAR: [bool; 256] = alnum_and(b":.%-_~");

/// The line of `b` from `from`: where its content ends and the next line
/// begins (`Ok(None)`: no CRLF yet); `Err` for a bare CR or LF or another
/// control byte (tab aside).
fn crlf_line(b: &[u8], from: usize) -> Result<Option<(usize, usize)>, ()> {
    for i in from..b.len() {
        match b[i] {
            b'\r' => {
                return match b.get(i + 1) {
                    None => Ok(None),
                    Some(b'\n') => Ok(Some((i, i + 2))),
                    Some(_) => Err(()),
                }
            }
            b'\t' => {}
            c if c < 0x20 || c == 0x7f => return Err(()),
            _ => {}
        }
    }
    Ok(None)
}

/// The verdict on the start of a buffer.
// A `Request` is some 240 bytes of borrowed slices, parsed and answered at
// once, never stored: boxing it would cost an allocation a request for
// nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A whole request; `len` bytes of the buffer are consumed.
    Complete(Request<'a>),
    /// Not enough bytes yet; read more (the buffer is below the limit).
    Partial,
    /// A request that will not be served: answer with this status and close.
    Reject(Status),
}

/// Parse the request at the start of `buf`. `max_header` is the most bytes a
/// request head may take; a partial head that already fills it is refused
/// (414 when even the request line is not complete, 431 otherwise).
pub fn parse_request(buf: &[u8], max_header: usize) -> Parsed<'_> {
    // Only the first `max_header` bytes are ever looked at, so the verdict
    // never depends on bytes beyond the limit.
    let buf = &buf[..buf.len().min(max_header)];
    let mut headers = [const { std::mem::MaybeUninit::uninit() }; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut headers) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() < max_header {
                return Parsed::Partial;
            }
            return Parsed::Reject(limit_status(buf, max_header));
        }
        Err(httparse::Error::TooManyHeaders) => {
            return Parsed::Reject(Status::HeaderFieldsTooLarge)
        }
        Err(httparse::Error::Version) => {
            return version_error(buf, max_header);
        }
        Err(_) => return Parsed::Reject(Status::BadRequest),
    };
    if len > max_header {
        // The same verdict the partial head got when it filled the limit,
        // so the status never depends on how much had arrived.
        return Parsed::Reject(limit_status(buf, max_header));
    }
    let version = match req.version {
        Some(0) => Version::Http10,
        Some(1) => Version::Http11,
        _ => return Parsed::Reject(Status::VersionNotSupported),
    };
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        "OPTIONS" => Method::Options,
        "POST" | "PUT" | "DELETE" | "PATCH" | "TRACE" | "CONNECT" => {
            Method::Refused(Status::MethodNotAllowed)
        }
        _ => Method::Refused(Status::NotImplemented),
    };
    let target = req.path.unwrap_or("").as_bytes();
    if target.len() > MAX_TARGET {
        return Parsed::Reject(Status::UriTooLong);
    }
    if !target.iter().all(|&b| uri_char(b)) {
        return Parsed::Reject(Status::BadRequest);
    }

    let mut content_length: Option<&[u8]> = None;
    // Transfer-Encoding: how many lines carry it, how many codings they
    // list, and whether the last is chunked.
    let mut te_lines = 0;
    let mut codings = 0;
    let mut chunked_last = false;
    let mut hosts = 0;
    let mut close = false;
    let mut keep = false;
    let mut ims = None;
    let mut inm = FieldLines::default();
    let mut range = None;
    let mut ranges = 0;
    let mut if_range = None;
    let mut accept_encoding = FieldLines::default();
    let mut if_match = FieldLines::default();
    let mut ius = None;
    let mut expect_continue = false;
    let mut bad_host = false;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        if name.eq_ignore_ascii_case(b"content-length") {
            if content_length.is_some() {
                return Parsed::Reject(Status::BadRequest);
            }
            content_length = Some(h.value);
        } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
            te_lines += 1;
            for coding in h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
                if !coding.is_empty() {
                    codings += 1;
                    chunked_last = coding.eq_ignore_ascii_case(b"chunked");
                }
            }
        } else if name.eq_ignore_ascii_case(b"host") {
            hosts += 1;
            bad_host |= !valid_host(h.value.trim_ascii());
        } else if name.eq_ignore_ascii_case(b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = token.trim_ascii();
                if token.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if token.eq_ignore_ascii_case(b"keep-alive") {
                    keep = true;
                }
            }
        } else if name.eq_ignore_ascii_case(b"if-modified-since") {
            ims = Some(h.value.trim_ascii());
        } else if name.eq_ignore_ascii_case(b"range") {
            range = Some(h.value.trim_ascii());
            ranges += 1;
        } else if name.eq_ignore_ascii_case(b"if-range") {
            if_range = Some(h.value.trim_ascii());
        } else if let Some((lower, list)) = [
            (&b"if-none-match"[..], &mut inm),
            (b"accept-encoding", &mut accept_encoding),
            (b"if-match", &mut if_match),
        ]
        .into_iter()
        .find(|(n, _)| name.eq_ignore_ascii_case(n))
        {
            match list.first {
                None => list.first = Some(h.value.trim_ascii()),
                Some(first) if list.more.is_empty() => {
                    // A second line: keep the head after the first (the
                    // value is a slice of `buf`), to read them all later.
                    let after = (first.as_ptr() as usize)
                        .checked_sub(buf.as_ptr() as usize)
                        .map(|offset| offset + first.len());
                    // Should httparse ever hand back a value that is not a
                    // slice of `buf`, the whole head is read again (the
                    // first line then counts twice, which no list minds).
                    list.more = after.and_then(|a| buf.get(a..len)).unwrap_or(&buf[..len]);
                    list.name = lower;
                }
                Some(_) => {}
            }
        } else if name.eq_ignore_ascii_case(b"if-unmodified-since") {
            ius = Some(h.value.trim_ascii());
        } else if name.eq_ignore_ascii_case(b"expect") {
            // Ignored on HTTP/1.0 (RFC 9110 §10.1.1: a MUST).
            expect_continue = version == Version::Http11
                && h.value.trim_ascii().eq_ignore_ascii_case(b"100-continue");
        }
    }
    if ranges > 1 {
        range = None;
    }
    let transfer_encoding = te_lines > 0;
    if transfer_encoding {
        // With Content-Length: the classic smuggling shape (RFC 9112 §6.3
        // item 3 lets a server refuse it). Any coding but `chunked` alone
        // leaves the body's length unknown: a final coding other than
        // chunked MUST be 400 (item 4); `gzip, chunked` or `chunked,
        // chunked` get the same (§6.1 would have 501 for a coding not
        // understood; one answer for every framing we will not decode).
        // One line only: a second line, even one that names nothing, is
        // read differently by a parser that takes the last (or the first)
        // line (`chunked` then an empty line: no body there, a chunked
        // body here). HTTP/1.0 has no Transfer-Encoding: a 1.0
        // intermediary frames the message without it, so RFC 9112 §6.1
        // makes its framing faulty (400, as nginx answers). All close the
        // connection.
        if content_length.is_some()
            || te_lines > 1
            || codings != 1
            || !chunked_last
            || version == Version::Http10
        {
            return Parsed::Reject(Status::BadRequest);
        }
    }
    let body = match content_length.map(|v| parse_decimal(v.trim_ascii())) {
        _ if transfer_encoding => Framing::Chunked,
        None | Some(Some(0)) => Framing::None,
        Some(Some(n)) => Framing::Length(n),
        Some(None) => return Parsed::Reject(Status::BadRequest),
    };
    if hosts > 1 || bad_host || (version == Version::Http11 && hosts == 0) {
        return Parsed::Reject(Status::BadRequest);
    }
    if matches!(body, Framing::Length(n) if n > MAX_BODY) {
        return Parsed::Reject(Status::PayloadTooLarge);
    }
    let keep_alive = match version {
        Version::Http11 => !close,
        Version::Http10 => keep && !close,
    };
    Parsed::Complete(Request {
        method,
        target,
        version,
        keep_alive,
        if_modified_since: ims,
        if_none_match: inm,
        if_match,
        if_unmodified_since: ius,
        range,
        if_range,
        accept_encoding,
        len,
        body,
        expect_continue,
    })
}

/// A head beyond `max_header` bytes (`buf` holds at least that many): 431
/// when the request line ends within the limit (empty lines before it
/// skipped, RFC 9112 §2.2); when it does not, 501 if even the method does
/// not end there (a token longer than any method served: httparse has
/// already refused a method with a byte that is not a `tchar`, 400), else
/// 414 (the target is what is too long).
fn limit_status(buf: &[u8], max_header: usize) -> Status {
    let head = &buf[..max_header];
    let start = head.iter().position(|&b| b != b'\r' && b != b'\n');
    let line = &head[start.unwrap_or(head.len())..];
    if line.is_empty() || line.contains(&b'\n') {
        Status::HeaderFieldsTooLarge
    } else if !line.contains(&b' ') {
        Status::NotImplemented
    } else {
        Status::UriTooLong
    }
}

/// Whether `b` may appear in a request target: a character of a URI
/// (RFC 3986 §2: unreserved, reserved and `%`). httparse passes every
/// visible ASCII byte and every byte from 0x80 on; the rest are refused
/// here (400, as RFC 9112 §3.2 allows for an invalid request line): raw
/// non-ASCII bytes (UTF-8 must be percent-encoded), `"`, `<`, `>`, `\`,
/// `^`, `` ` ``, `{`, `|`, `}`. A fragment (`#…`) is cut off by
/// [`normalize_target`](crate::semantics::target::normalize_target).
fn uri_char(b: u8) -> bool {
    URI_CHAR[b as usize]
}

/// RFC 9110 §2.5: a request of a later minor version of HTTP/1
/// (`HTTP/1.2` … `HTTP/1.9`) is answered as the highest this server speaks,
/// 1.1, as nginx does; [`parse_request`] refuses it with 505 because
/// httparse reads only 1.0 and 1.1. When `buf` starts with such a request
/// line, this is a copy of its head (at most `max_header` bytes) with the
/// version rewritten to `HTTP/1.1`: the same length, so a request parsed
/// from it spans the same bytes of `buf`.
pub fn as_http11(buf: &[u8], max_header: usize) -> Option<Vec<u8>> {
    let buf = &buf[..buf.len().min(max_header)];
    let line_end = buf.iter().position(|&b| b == b'\n')?;
    let line = &buf[..line_end];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let version = line.rsplit(|&b| b == b' ').next()?;
    match version {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'2'..=b'9'] => {
            let mut copy = buf.to_vec();
            copy[line.len() - 1] = b'1';
            Some(copy)
        }
        _ => None,
    }
}

/// httparse says "version" both for `HTTP/2.0` (a version we do not speak:
/// 505) and for garbage where the version should be (400), which includes
/// anything but one digit on each side of the dot (`HTTP/01.1`, RFC 9112
/// §2.3: `HTTP-version = HTTP-name "/" DIGIT "." DIGIT`). The version is
/// the third element of the request line; until that line ends, a version
/// that may still become `HTTP/d.d` is not judged (so the status never
/// depends on how the bytes were split), within the head limit.
fn version_error(buf: &[u8], max_header: usize) -> Parsed<'_> {
    let line_end = buf.iter().position(|&b| b == b'\n');
    let line = &buf[..line_end.unwrap_or(buf.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let mut parts = line.splitn(3, |&b| b == b' ');
    let version = match (parts.next(), parts.next(), parts.next()) {
        (Some(_), Some(_), Some(v)) => v,
        _ => return Parsed::Reject(Status::BadRequest),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let shape = |v: &[u8], whole: bool| -> bool {
        if v.len() < 5 {
            return !whole && b"HTTP/".starts_with(v);
        }
        if &v[..5] != b"HTTP/" {
            return false;
        }
        let rest = &v[5..];
        let (major, minor) = match rest.iter().position(|&b| b == b'.') {
            Some(dot) => (&rest[..dot], Some(&rest[dot + 1..])),
            None => (rest, None),
        };
        // One digit each (`HTTP/01.1`, `HTTP/1.10` are not versions), the
        // dot included once the line has ended (`HTTP/1` is not one); a
        // part still arriving may be empty.
        let one_digit = |s: &[u8]| digits(s) && s.len() <= 1 && (s.len() == 1 || !whole);
        one_digit(major) && minor.map_or(!whole, one_digit)
    };
    match line_end {
        Some(_) if shape(version, true) => Parsed::Reject(Status::VersionNotSupported),
        Some(_) => Parsed::Reject(Status::BadRequest),
        None if shape(version, false) => {
            if buf.len() < max_header {
                Parsed::Partial
            } else {
                Parsed::Reject(limit_status(buf, max_header))
            }
        }
        None => Parsed::Reject(Status::BadRequest),
    }
}

/// A Host value as RFC 9112 §3.2 wants it: `uri-host [":" port]` (RFC 3986
/// §3.2.2), that is a name of unreserved and sub-delim characters and
/// %-escapes (an IPv4 address is one), or an IP literal in brackets, then
/// digits after a colon. A server must refuse anything else with 400
/// (RFC 9110 §7.2): spaces, `/`, `\`, `@`, controls (nginx does too), and
/// an empty value or an empty name (`:80`): RFC 9112 §3.2 has a client
/// send an empty Host only for a target URI without an authority, and an
/// `http` or `https` URI always has one, with a host that may not be empty
/// (RFC 9110 §4.2.1: a recipient MUST reject it).
fn valid_host(v: &[u8]) -> bool {
    let (host, port) = match v.first() {
        Some(b'[') => match v.iter().position(|&b| b == b']') {
            Some(end) => {
                let inside = &v[1..end];
                let literal = |b: &u8| HOST_LITERAL_CHAR[*b as usize];
                if inside.is_empty() || !inside.iter().all(literal) {
                    return false;
                }
                (&v[..0], &v[end + 1..])
            }
            None => return false,
        },
        _ => match v.iter().rposition(|&b| b == b':') {
            Some(colon) => (&v[..colon], &v[colon..]),
            None => (v, &v[v.len()..]),
        },
    };
    let name = |b: &u8| HOST_NAME_CHAR[*b as usize];
    let port_ok = match port.split_first() {
        None => true,
        Some((b':', digits)) => digits.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    (!host.is_empty() || v.first() == Some(&b'[')) && host.iter().all(name) && port_ok
}

/// A non-negative decimal without sign, spaces or overflow.
fn parse_decimal(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(b - b'0');
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Parsed<'_> {
        parse_request(s.as_bytes(), 8192)
    }

    fn status(s: &str) -> Status {
        match parse(s) {
            Parsed::Reject(st) => st,
            other => panic!("{s:?} was not rejected: {other:?}"),
        }
    }

    #[test]
    fn simple_get() {
        let text = "GET /a/b?x=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /next";
        let Parsed::Complete(r) = parse(text) else {
            panic!()
        };
        assert_eq!(r.method, Method::Get);
        assert_eq!(r.target, b"/a/b?x=1");
        assert_eq!(r.version, Version::Http11);
        assert!(r.keep_alive);
        assert_eq!(&text[r.len..], "GET /next");
    }

    #[test]
    fn connection_handling() {
        let ka = |s: &str| match parse(s) {
            Parsed::Complete(r) => r.keep_alive,
            p => panic!("{p:?}"),
        };
        assert!(!ka("GET / HTTP/1.0\r\n\r\n"));
        assert!(ka("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        assert!(!ka(
            "GET / HTTP/1.1\r\nHost: a\r\nConnection: foo, close\r\n\r\n"
        ));
        assert!(ka("HEAD / HTTP/1.1\r\nHost: a\r\n\r\n"));
    }

    #[test]
    fn partial_and_limits() {
        assert_eq!(parse("GET / HTTP/1.1\r\nHost: a\r\n"), Parsed::Partial);
        assert_eq!(parse(""), Parsed::Partial);
        let long_line = format!("GET /{} HTTP/1.1", "a".repeat(9000));
        assert_eq!(status(&long_line), Status::UriTooLong);
        let big_header = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(9000));
        assert_eq!(status(&big_header), Status::HeaderFieldsTooLarge);
        // MAX_HEADERS lines (Host among them) are taken, one more is 431.
        let lines = |n: usize| -> String {
            let many: String = (1..n).map(|i| format!("X{i}: y\r\n")).collect();
            format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\n")
        };
        assert!(matches!(parse(&lines(MAX_HEADERS)), Parsed::Complete(_)));
        assert_eq!(
            status(&lines(MAX_HEADERS + 1)),
            Status::HeaderFieldsTooLarge
        );
        // A target of MAX_TARGET bytes is taken when the head limit allows
        // it; one more is 414.
        let target = |n: usize| format!("GET /{} HTTP/1.1\r\nHost: a\r\n\r\n", "b".repeat(n - 1));
        let fits = target(MAX_TARGET);
        assert!(
            matches!(parse_request(fits.as_bytes(), 16384), Parsed::Complete(r) if r.target.len() == MAX_TARGET)
        );
        let over = target(MAX_TARGET + 1);
        assert_eq!(
            parse_request(over.as_bytes(), 16384),
            Parsed::Reject(Status::UriTooLong)
        );
    }

    #[test]
    fn limit_status_does_not_depend_on_what_arrived() {
        // A request line longer than the limit is 414 whether the head was
        // still partial or already complete when parsed (found by fuzzing).
        let line = format!("GET /{} HTTP/1.1\r\n", "a".repeat(400));
        assert_eq!(
            parse_request(line.as_bytes(), 256),
            Parsed::Reject(Status::UriTooLong)
        );
        let whole = format!("{line}Host: a\r\n\r\n");
        assert_eq!(
            parse_request(whole.as_bytes(), 256),
            Parsed::Reject(Status::UriTooLong)
        );
        let headers = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "b".repeat(400));
        assert_eq!(
            parse_request(headers.as_bytes(), 256),
            Parsed::Reject(Status::HeaderFieldsTooLarge)
        );
    }

    #[test]
    fn bytes_beyond_the_limit_do_not_change_the_verdict() {
        // Found by fuzzing: a head over the limit was 431, or 400 when a
        // syntax error followed beyond the limit.
        let mut big =
            format!("GET / HTTP/1.1\r\nHost: t\r\nX-Big: {}", "c".repeat(600)).into_bytes();
        assert_eq!(
            parse_request(&big, 256),
            Parsed::Reject(Status::HeaderFieldsTooLarge)
        );
        big.extend_from_slice(b"\r\nbad header\r\n\r\n");
        assert_eq!(
            parse_request(&big, 256),
            Parsed::Reject(Status::HeaderFieldsTooLarge)
        );
    }

    #[test]
    fn version_verdict_does_not_depend_on_the_split() {
        // Found by fuzzing: the verdict looked at the last space of the
        // line, which could lie in bytes that came later.
        let bad = b"GET / HTT\0P/1.";
        assert_eq!(parse_request(bad, 8192), Parsed::Reject(Status::BadRequest));
        let mut more = bad.to_vec();
        more.extend_from_slice(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            parse_request(&more, 8192),
            Parsed::Reject(Status::BadRequest)
        );
        // An unfinished version that may still be valid waits for its line.
        assert_eq!(parse_request(b"GET / HTTP/2", 8192), Parsed::Partial);
        assert_eq!(
            parse_request(b"GET / HTTP/2.0\r\n\r\n", 8192),
            Parsed::Reject(Status::VersionNotSupported)
        );
        assert_eq!(
            parse_request(b"GET / HTTP/2x\r\n\r\n", 8192),
            Parsed::Reject(Status::BadRequest)
        );
        // One digit each side of the dot (RFC 9112 §2.3), however split.
        for bad in [
            "HTTP/01.1",
            "HTTP/1.01",
            "HTTP/10.0",
            "HTTP/1.10",
            "HTTP/11",
            "HTTP/1",
            "HTTP/2",
        ] {
            let line = format!("GET / {bad}\r\nHost: t\r\n\r\n");
            for cut in 6..line.len() {
                let got = parse_request(&line.as_bytes()[..cut], 8192);
                assert!(
                    matches!(got, Parsed::Partial | Parsed::Reject(Status::BadRequest)),
                    "{bad} cut at {cut}: {got:?}"
                );
            }
            assert_eq!(
                parse_request(line.as_bytes(), 8192),
                Parsed::Reject(Status::BadRequest),
                "{bad}"
            );
        }
        assert_eq!(
            parse_request(b"GET / HTTP/0.9\r\n\r\n", 8192),
            Parsed::Reject(Status::VersionNotSupported)
        );
    }

    #[test]
    fn host_values_are_checked() {
        for ok in [
            "t",
            "example.com",
            "example.com.",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:443",
            "xn--bcher-kva.example",
            "a_b~c%41:",
        ] {
            assert!(valid_host(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            "a b",
            "a/b",
            "a\\b",
            "user@host",
            "host:80:80",
            "host:8o",
            "[::1",
            "[]",
            "[::1]x",
            "h\tx",
            "h\u{7f}",
            "h\u{e9}",
            "",
            ":80",
            ":",
        ] {
            assert!(!valid_host(bad.as_bytes()), "{bad:?}");
        }
        assert_eq!(
            status("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(
            status("GET / HTTP/1.0\r\nHost: a/b\r\n\r\n"),
            Status::BadRequest
        );
    }

    #[test]
    fn later_minor_versions_are_read_as_1_1() {
        let raw = b"GET /a HTTP/1.2\r\nHost: t\r\n\r\nGET /b";
        assert_eq!(
            parse_request(raw, 8192),
            Parsed::Reject(Status::VersionNotSupported)
        );
        let copy = as_http11(raw, 8192).unwrap();
        assert_eq!(&copy[..], &b"GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b"[..]);
        match parse_request(&copy, 8192) {
            Parsed::Complete(r) => {
                assert_eq!(
                    (r.version, r.target, r.len),
                    (Version::Http11, &b"/a"[..], 28)
                );
            }
            other => panic!("{other:?}"),
        }
        for other in [
            "GET / HTTP/2.0\r\n\r\n",
            "GET / HTTP/1.10\r\n\r\n",
            "GET / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.2",
            "GET / XTTP/1.2\r\n\r\n",
        ] {
            let other = other.as_bytes();
            assert_eq!(as_http11(other, 8192), None, "{other:?}");
        }
    }

    #[test]
    fn methods_and_versions() {
        // Other methods are parsed whole (their end is known), to be
        // refused.
        let method = |s: &str| match parse(s) {
            Parsed::Complete(r) => (r.method, r.body, r.keep_alive),
            other => panic!("{s:?}: {other:?}"),
        };
        assert_eq!(
            method("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"),
            (
                Method::Refused(Status::MethodNotAllowed),
                Framing::Length(3),
                true
            )
        );
        assert_eq!(
            method("BREW / HTTP/1.1\r\nHost: a\r\n\r\n"),
            (Method::Refused(Status::NotImplemented), Framing::None, true)
        );
        assert_eq!(
            method("get / HTTP/1.0\r\n\r\n").0,
            Method::Refused(Status::NotImplemented)
        );
        // A framing or Host error still closes.
        assert_eq!(
            status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"),
            Status::BadRequest
        );
        assert_eq!(status("PUT / HTTP/1.1\r\n\r\n"), Status::BadRequest);
        assert_eq!(
            status("GET / HTTP/2.0\r\n\r\n"),
            Status::VersionNotSupported
        );
        assert_eq!(
            status("GET / HTTP/1.2\r\n\r\n"),
            Status::VersionNotSupported
        );
        assert_eq!(status("GET / FOO\r\n\r\n"), Status::BadRequest);
        // Transfer-Encoding on HTTP/1.0 (RFC 9112 §6.1: faulty framing),
        // with or without keep-alive, whatever the method.
        for req in [
            "GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "GET / HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
        ] {
            assert_eq!(status(req), Status::BadRequest, "{req:?}");
        }
        assert_eq!(status("\u{1}GET / HTTP/1.1\r\n\r\n"), Status::BadRequest);
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), Status::BadRequest); // no Host
    }

    #[test]
    fn smuggling_shapes() {
        let h = "GET / HTTP/1.1\r\nHost: a\r\n";
        for extra in [
            "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n",
            "Content-Length: 0\r\nContent-Length: 0\r\n",
            "Content-Length: 0\r\ncontent-length: 7\r\n",
            "Content-Length: -1\r\n",
            "Content-Length: +0\r\n",
            "Content-Length: 1 2\r\n",
            "Content-Length: 0x10\r\n",
            "Content-Length: 99999999999999999999999\r\n",
            "Host: b\r\n",
        ] {
            assert_eq!(
                status(&format!("{h}{extra}\r\n")),
                Status::BadRequest,
                "{extra:?}"
            );
        }
        // A body is framed, not refused; a Content-Length past MAX_BODY is 413.
        let framing = |extra: &str| match parse(&format!("{h}{extra}\r\n")) {
            Parsed::Complete(r) => r.body,
            other => panic!("{extra:?}: {other:?}"),
        };
        assert_eq!(framing("Content-Length: 3\r\n"), Framing::Length(3));
        assert_eq!(framing("Content-Length: 0\r\n"), Framing::None);
        assert_eq!(framing("Transfer-Encoding: chunked\r\n"), Framing::Chunked);
        assert_eq!(framing("Transfer-Encoding: CHUNKED \r\n"), Framing::Chunked);
        assert_eq!(
            framing(&format!("Content-Length: {MAX_BODY}\r\n")),
            Framing::Length(MAX_BODY)
        );
        assert_eq!(
            status(&format!("{h}Content-Length: {}\r\n\r\n", MAX_BODY + 1)),
            Status::PayloadTooLarge
        );
        // A final coding other than chunked, or more than chunked: 400
        // (RFC 9112 §6.3 item 4), never 413.
        for te in [
            "gzip",
            "identity",
            "xchunked",
            "chunked, gzip",
            "gzip, chunked",
            "chunked, chunked",
            "",
            ",",
        ] {
            assert_eq!(
                status(&format!("{h}Transfer-Encoding: {te}\r\n\r\n")),
                Status::BadRequest,
                "{te:?}"
            );
        }
        // One Transfer-Encoding line only: a second one, even one that
        // names no coding, is 400 (a parser taking the last line would
        // see no body).
        for lines in [
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
            "Transfer-Encoding: chunked\r\nTransfer-Encoding:\r\n",
            "Transfer-Encoding: chunked\r\ntransfer-encoding: , \r\n",
            "Transfer-Encoding:\r\nTransfer-Encoding: chunked\r\n",
        ] {
            assert_eq!(
                status(&format!("{h}{lines}\r\n0\r\n\r\n")),
                Status::BadRequest,
                "{lines:?}"
            );
        }
        assert!(matches!(
            parse(&format!("{h}Content-Length: 0\r\n\r\n")),
            Parsed::Complete(_)
        ));
    }

    /// Where `text` (one request, then whatever followed) ends.
    fn end(text: &str, max_header: usize) -> RequestEnd {
        match parse_request(text.as_bytes(), max_header) {
            Parsed::Complete(r) => r.end(text.as_bytes(), max_header),
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn bodies_are_skipped_when_they_are_all_there() {
        let h = "GET / HTTP/1.1\r\nHost: a\r\n";
        let head = |extra: &str| format!("{h}{extra}\r\n");
        let at = |extra: &str, body: &str| RequestEnd::At(head(extra).len() + body.len());
        let cl = "Content-Length: 3\r\n";
        assert_eq!(end(&format!("{}abcGET /", head(cl)), 8192), at(cl, "abc"));
        assert_eq!(end(&head(""), 8192), at("", ""));
        // Still arriving: waited for while head and body fit the buffer.
        assert_eq!(end(&format!("{}ab", head(cl)), 8192), RequestEnd::Wait);
        assert_eq!(end(&head(cl), 8192), RequestEnd::Wait);
        let fits = head(cl).len() + 3;
        assert_eq!(end(&head(cl), fits), RequestEnd::Wait);
        assert_eq!(end(&head(cl), fits - 1), RequestEnd::Unread);
        // All there but past the limit (only the io_uring model's input
        // holds that much): not read either, as in the other models.
        let whole = format!("{}abc", head(cl));
        assert_eq!(end(&whole, fits), at(cl, "abc"));
        assert_eq!(end(&whole, fits - 1), RequestEnd::Unread);
        let te = "Transfer-Encoding: chunked\r\n";
        let chunked = format!("{}0\r\n\r\nGET / HTTP/1.1\r\n\r\n", head(te));
        let fits = head(te).len() + 5;
        assert_eq!(end(&chunked, fits), at(te, "0\r\n\r\n"));
        assert_eq!(end(&chunked, fits - 1), RequestEnd::Unread);
        let big = "Content-Length: 100000\r\n";
        assert_eq!(end(&head(big), 8192), RequestEnd::Unread);
        // The client waits for 100 Continue: answered at once instead.
        let expect = "Content-Length: 3\r\nExpect: 100-Continue\r\n";
        assert_eq!(end(&head(expect), 8192), RequestEnd::Unread);
        assert_eq!(
            end(&format!("{}abc", head(expect)), 8192),
            at(expect, "abc")
        );
        // Not on HTTP/1.0, where Expect is ignored (RFC 9110 §10.1.1): the
        // body is waited for.
        let ten = format!("GET / HTTP/1.0\r\n{expect}\r\n");
        assert_eq!(end(&ten, 8192), RequestEnd::Wait);
        assert_eq!(
            end(&format!("{ten}abc"), 8192),
            RequestEnd::At(ten.len() + 3)
        );

        let te = "Transfer-Encoding: chunked\r\n";
        for body in [
            "0\r\n\r\n",
            "3\r\nabc\r\n0\r\n\r\n",
            "3;name=val;x\r\nabc\r\nA \t;y=\"q\"\r\n0123456789\r\n000\r\nTrailer: t\r\nX-2:\r\n\r\n",
            "0000000000000001\r\nx\r\n0\r\n\r\n",
        ] {
            let whole = format!("{}{body}", head(te));
            assert_eq!(end(&whole, 8192), at(te, body), "{body:?}");
            assert_eq!(end(&format!("{whole}GET / HTTP/1.1\r\n"), 8192), at(te, body));
            // Every prefix is still arriving, never refused.
            for cut in head(te).len()..whole.len() {
                assert_eq!(end(&whole[..cut], 8192), RequestEnd::Wait, "{body:?} cut at {cut}");
                assert_eq!(end(&whole[..cut], cut), RequestEnd::Unread, "{body:?} cut at {cut}");
            }
        }
        for bad in [
            "x\r\n",
            "\r\n",
            "3\nabc\r\n0\r\n\r\n",
            "3\r\nabcd\r\n0\r\n\r\n",
            "3 x\r\nabc\r\n0\r\n\r\n",
            "-3\r\n",
            "0x3\r\n",
            "00000000000000001\r\n",
            "3\rabc",
            "0\r\nno-colon\r\n\r\n",
            "0\r\n: empty name\r\n\r\n",
            "0\r\nBad Name: x\r\n\r\n",
            "0\r\n\n",
            "0;a\x01\r\n\r\n",
        ] {
            assert_eq!(
                end(&format!("{}{bad}", head(te)), 8192),
                RequestEnd::Malformed,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn an_empty_host_is_refused_on_both_versions() {
        for req in [
            "GET / HTTP/1.1\r\nHost:\r\n\r\n",
            "GET / HTTP/1.1\r\nHost:  \r\n\r\n",
            "GET / HTTP/1.1\r\nHost: :80\r\n\r\n",
            "GET / HTTP/1.0\r\nHost:\r\n\r\n",
            "GET http://a/ HTTP/1.1\r\nHost:\r\n\r\n",
        ] {
            assert_eq!(status(req), Status::BadRequest, "{req:?}");
        }
        // HTTP/1.0 may go without Host; HTTP/1.1 may not.
        assert!(matches!(
            parse("GET / HTTP/1.0\r\n\r\n"),
            Parsed::Complete(_)
        ));
        assert!(matches!(
            parse("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"),
            Parsed::Complete(_)
        ));
    }

    #[test]
    fn target_bytes_are_those_of_a_uri() {
        let target = |t: &[u8]| {
            let raw = [&b"GET "[..], t, b" HTTP/1.1\r\nHost: a\r\n\r\n"].concat();
            match parse_request(&raw, 8192) {
                Parsed::Complete(r) => Ok(r.target.len()),
                Parsed::Reject(st) => Err(st),
                Parsed::Partial => panic!("{t:?}: partial"),
            }
        };
        let all = b"/AZaz09-._~:@!$&'()*+,;=%41/?q=/?#f[]";
        assert_eq!(target(all), Ok(all.len()));
        assert_eq!(target(b"*"), Ok(1));
        for bad in [
            &b"/\xc3\xa9.html"[..],
            b"/\x80",
            b"/\xff",
            b"/a\"b",
            b"/a<b",
            b"/a>b",
            b"/a\\b",
            b"/a^b",
            b"/a`b",
            b"/a{b",
            b"/a|b",
            b"/a}b",
            b"/a?q=\xe2\x82\xac",
            b"/a?q={}",
        ] {
            assert_eq!(target(bad), Err(Status::BadRequest), "{bad:?}");
        }
        // Every byte from 0x80 on, and every ASCII byte not a URI's.
        for b in 0x21..=0xffu8 {
            let t = [b'/', b];
            let want = b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(&b);
            assert_eq!(target(&t).is_ok(), want, "{b:#x}");
        }
    }

    #[test]
    fn options_is_a_method_served() {
        for (req, target) in [
            ("OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n", &b"*"[..]),
            ("OPTIONS /x HTTP/1.0\r\n\r\n", b"/x"),
        ] {
            match parse(req) {
                Parsed::Complete(r) => assert_eq!((r.method, r.target), (Method::Options, target)),
                other => panic!("{req:?}: {other:?}"),
            }
        }
        assert_eq!(
            parse("options * HTTP/1.1\r\nHost: a\r\n\r\n"),
            parse("options * HTTP/1.1\r\nHost: a\r\n\r\n")
        );
        assert!(matches!(
            parse("options * HTTP/1.1\r\nHost: a\r\n\r\n"),
            Parsed::Complete(Request {
                method: Method::Refused(Status::NotImplemented),
                ..
            })
        ));
    }

    #[test]
    fn a_long_method_is_not_a_long_target() {
        // A method that does not end within the head limit: a token, so
        // one not implemented (501), however split and whatever follows.
        let method = "M".repeat(300);
        for tail in ["", " / HTTP/1.1\r\nHost: a\r\n\r\n"] {
            let raw = format!("{method}{tail}");
            assert_eq!(
                parse_request(raw.as_bytes(), 256),
                Parsed::Reject(Status::NotImplemented)
            );
            let raw = format!("\r\n\r\n{raw}");
            assert_eq!(
                parse_request(raw.as_bytes(), 256),
                Parsed::Reject(Status::NotImplemented)
            );
        }
        for cut in 1..256 {
            assert_eq!(
                parse_request(&method.as_bytes()[..cut], 256),
                Parsed::Partial
            );
        }
        // Within the limit it is parsed whole, and refused as unknown.
        let raw = format!("{method} / HTTP/1.1\r\nHost: a\r\n\r\n");
        assert!(matches!(
            parse(&raw),
            Parsed::Complete(Request {
                method: Method::Refused(Status::NotImplemented),
                ..
            })
        ));
        // Not a token: 400 at the first byte that is not one.
        let raw = format!("{}\u{1}{}", &method[..100], &method[..300]);
        assert_eq!(
            parse_request(raw.as_bytes(), 256),
            Parsed::Reject(Status::BadRequest)
        );
        let raw = format!("{}@{}", &method[..100], &method[..300]);
        assert_eq!(
            parse_request(raw.as_bytes(), 256),
            Parsed::Reject(Status::BadRequest)
        );
        // The target too long: 414, as before; empty lines only: 431.
        let raw = format!("GET /{method}");
        assert_eq!(
            parse_request(raw.as_bytes(), 256),
            Parsed::Reject(Status::UriTooLong)
        );
        assert_eq!(
            parse_request("\r\n".repeat(200).as_bytes(), 256),
            Parsed::Reject(Status::HeaderFieldsTooLarge)
        );
    }

    #[test]
    fn chunk_extensions_follow_the_grammar() {
        let te = "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n";
        let framed = |line: &str| end(&format!("{te}{line}\r\nabc\r\n0\r\n\r\n"), 8192);
        for ok in [
            "3",
            "3;a",
            "3;a=b",
            "3 ;a",
            "3\t;\ta",
            "3 ; a = b ; c",
            "3;a=\"\"",
            "3;a=\"q \\\" \\\\ \t x\u{e9}\"",
            "3;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~",
            "3;a;b=c;d=\"e\"",
        ] {
            assert!(matches!(framed(ok), RequestEnd::At(_)), "{ok:?}");
        }
        for bad in [
            "3 ",
            "3\t",
            "3;",
            "3 ;",
            "3;a ",
            "3;a=b ",
            "3;a=",
            "3;a= ",
            "3;=b",
            "3;;a",
            "3;a;",
            "3;a b",
            "3;a=b c",
            "3;a@b",
            "3;a=b@c",
            "3;a=\"x",
            "3;a=\"x\"y",
            "3;a=\"x\\",
            "3;a=\"\u{1}\"",
            "3;\"a\"",
            "3 x",
        ] {
            assert_eq!(framed(bad), RequestEnd::Malformed, "{bad:?}");
        }
    }

    #[test]
    fn if_modified_since_is_trimmed() {
        let Parsed::Complete(r) =
            parse("GET / HTTP/1.1\r\nHost: a\r\nIf-Modified-Since:  Sun, 06 Nov 1994 08:49:37 GMT \r\n\r\n")
        else {
            panic!()
        };
        assert_eq!(
            r.if_modified_since,
            Some(&b"Sun, 06 Nov 1994 08:49:37 GMT"[..])
        );
    }

    #[test]
    fn list_fields_may_take_several_lines() {
        let Parsed::Complete(r) = parse(
            "GET / HTTP/1.1\r\nHost: a\r\nIf-None-Match: \"a\"\r\nAccept-Encoding: gzip;q=0.5,\r\n\
             if-none-match:  \"b\", \"c\" \r\nACCEPT-ENCODING: , br\r\n\r\n",
        ) else {
            panic!()
        };
        let lines: Vec<&[u8]> = r.if_none_match.lines().collect();
        assert_eq!(lines, [&b"\"a\""[..], b"\"b\", \"c\""]);
        let codings: Vec<&[u8]> = r.accept_encoding.elements().collect();
        assert_eq!(codings, [&b"gzip;q=0.5"[..], b"br"]);
        assert!(r.if_match.is_absent());
        // Every line is read; nothing after the head (a pipelined request).
        let many = "If-Match: \"x\"\r\n".repeat(40);
        let text =
            format!("GET / HTTP/1.1\r\nHost: a\r\n{many}\r\nGET / HTTP/1.1\r\nIf-Match: \"y\"\r\n");
        let Parsed::Complete(r) = parse(&text) else {
            panic!()
        };
        assert_eq!(r.if_match.lines().count(), 40);
        assert!(r.if_match.lines().all(|l| l == b"\"x\""));
    }

    #[test]
    fn never_panics_on_prefixes() {
        let text =
            b"GET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\nIf-Modified-Since: x\r\n\r\n";
        for i in 0..text.len() {
            let _ = parse_request(&text[..i], 8192);
            let _ = parse_request(&text[i..], 8192);
        }
    }
}
