//! The HTTP/1.1 the generator speaks: requests built once, and an
//! incremental response parser (headers by `httparse`, bodies delimited by
//! `Content-Length`, chunked encoding or the end of the connection).

use std::fmt::{self, Write as _};

/// Largest response head accepted; a longer one is a malformed response.
const MAX_HEAD: usize = 64 * 1024;

/// The headers every request carries unless the user's own (`--header`)
/// replace them: `Host` (the URL's) and `User-Agent`.
pub const DEFAULT_HEADERS: [&str; 2] = ["Host", "User-Agent"];

/// One request, built once and sent as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The bytes on the wire: head, then the body if any.
    pub bytes: Vec<u8>,
    /// Length of the head (through its final blank line).
    pub head_len: usize,
    /// `HEAD`: the reply has no body whatever its `Content-Length` says.
    pub head: bool,
    /// The user's headers say `Connection: close`: no further request may
    /// go on the connection (RFC 9112 §9.6).
    pub close: bool,
}

/// Build `METHOD path HTTP/1.1` with `Host` and `User-Agent`, the user's
/// headers (one whose name matches a default, case-insensitively, replaces
/// it in place; one with an empty value removes it, as curl's `-H 'Name:'`
/// does), and `Content-Length` with the body when there is one, or `0` for
/// POST, PUT and PATCH without one (unless the user gave their own
/// `Content-Length` or `Transfer-Encoding`; the configuration refuses the
/// latter with a body, which is never chunk-encoded here).
pub fn build_request(
    method: &str,
    host: &str,
    path: &str,
    headers: &[(String, String)],
    body: Option<&[u8]>,
) -> Request {
    let mut list: Vec<(&str, &str)> = vec![("Host", host), ("User-Agent", "evdispatch-load")];
    for (name, value) in headers {
        match list
            .iter()
            .position(|(n, _)| n.eq_ignore_ascii_case(name))
            .filter(|&i| i < DEFAULT_HEADERS.len())
        {
            Some(i) => list[i] = (name, value),
            None => list.push((name, value)),
        }
    }
    let mut r = format!("{method} {path} HTTP/1.1\r\n");
    for (name, value) in list.iter().filter(|(_, v)| !v.is_empty()) {
        let _ = write!(r, "{name}: {value}\r\n");
    }
    // A method that defines a meaning for content says how long it is,
    // even without a body (RFC 9110 §8.6; some servers answer 411).
    let framed = list.iter().any(|(n, _)| {
        n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("transfer-encoding")
    });
    if !framed && (body.is_some() || matches!(method, "POST" | "PUT" | "PATCH")) {
        let _ = write!(r, "Content-Length: {}\r\n", body.map_or(0, <[u8]>::len));
    }
    r.push_str("\r\n");
    let head_len = r.len();
    let mut bytes = r.into_bytes();
    if let Some(b) = body {
        bytes.extend_from_slice(b);
    }
    Request {
        bytes,
        head_len,
        // Methods are case-sensitive (RFC 9110 §9.1): `head` is another one.
        head: method == "HEAD",
        close: list.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("connection")
                && v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close"))
        }),
    }
}

/// True when `s` is an HTTP token (a method name, a header name).
pub fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Why a response could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed response: {}", self.0)
    }
}

/// What a [`ResponseParser::feed`] call found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feed {
    /// The response is not complete yet: feed more bytes.
    More,
    /// One response is complete after `used` bytes of the input.
    Done {
        /// Status code.
        status: u16,
        /// The server will close the connection (`Connection: close`, or
        /// HTTP/1.0 without keep-alive).
        close: bool,
        /// Bytes of the input that belonged to this response.
        used: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum State {
    #[default]
    Head,
    Body(u64),
    ChunkSize,
    ChunkData(u64),
    ChunkEnd,
    Trailer,
    UntilClose,
}

/// Incremental parser for one response at a time (reset by completing one).
#[derive(Debug, Clone, Default)]
pub struct ResponseParser {
    state: State,
    /// Bytes of a head or chunk line split across reads.
    pending: Vec<u8>,
    status: u16,
    close: bool,
    /// The request was `HEAD`: the reply has no body.
    no_body: bool,
}

struct Head {
    len: usize,
    status: u16,
    close: bool,
    body: State,
}

/// True when the header name `name` (an HTTP token, as httparse checked)
/// is `lower` (lowercase letters and `-`), in any case. Setting bit 0x20
/// lowercases a letter and leaves `-` as it is; the only other byte it maps
/// onto one of those is CR, which a token cannot hold. Branch-free, so the
/// compiler compares whole words: the byte-wise `eq_ignore_ascii_case` cost
/// about 300 instructions per reply.
fn name_is(name: &str, lower: &[u8]) -> bool {
    name.len() == lower.len()
        && name
            .bytes()
            .zip(lower)
            .fold(0u8, |diff, (a, &b)| diff | ((a | 0x20) ^ b))
            == 0
}

/// The most header lines a reply may carry.
const MAX_REPLY_HEADERS: usize = 256;

fn parse_head(buf: &[u8], no_body: bool) -> Result<Option<Head>, Malformed> {
    // Left uninitialised: httparse writes the headers it finds, and only
    // those are read back (zeroing them per reply cost more than parsing
    // some), so room for many costs nothing: wrk's parser has no limit, and
    // a reply with more lines than this is refused as malformed.
    let mut headers =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_REPLY_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let parsed = httparse::ParserConfig::default().parse_response_with_uninit_headers(
        &mut resp,
        buf,
        &mut headers,
    );
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() > MAX_HEAD {
                return Err(Malformed(format!("head longer than {MAX_HEAD} bytes")));
            }
            return Ok(None);
        }
        Err(e) => return Err(Malformed(e.to_string())),
    };
    let status = resp.code.unwrap_or(0);
    let version = resp.version.unwrap_or(1);
    let mut close = version == 0;
    let mut length: Result<Option<u64>, Malformed> = Ok(None);
    // Some(chunked is the final coding) when Transfer-Encoding is present:
    // its lines combine into one list (RFC 9110 §5.3).
    let mut chunked: Option<bool> = None;
    for h in resp.headers.iter() {
        if name_is(h.name, b"content-length") {
            if let Ok(earlier) = length {
                length = content_length(h.value, earlier).map(Some);
            }
        } else if name_is(h.name, b"transfer-encoding") {
            let mut codings = h.value.split(|&b| b == b',').map(<[u8]>::trim_ascii);
            if let Some(last) = codings.rfind(|v| !v.is_empty()) {
                chunked = Some(last.eq_ignore_ascii_case(b"chunked"));
            }
        } else if name_is(h.name, b"connection") {
            for token in h.value.split(|&b| b == b',') {
                let t = token.trim_ascii();
                if t.eq_ignore_ascii_case(b"close") {
                    close = true;
                } else if t.eq_ignore_ascii_case(b"keep-alive") && version == 0 {
                    close = false;
                }
            }
        }
    }
    // RFC 9112 §6.3: no body (rules 1, 2); Transfer-Encoding overrides
    // Content-Length, not even read then (a malformed one does not matter),
    // and a body whose final coding is not chunked runs to the close (rules
    // 3, 4); then Content-Length, valid (rule 5); else the close (rule 8).
    let body = if no_body || status < 200 || status == 204 || status == 304 {
        State::Body(0)
    } else if let Some(chunked) = chunked {
        if chunked {
            State::ChunkSize
        } else {
            close = true;
            State::UntilClose
        }
    } else if let Some(n) = length? {
        State::Body(n)
    } else {
        close = true;
        State::UntilClose
    };
    Ok(Some(Head {
        len,
        status,
        close,
        body,
    }))
}

/// The value of a `Content-Length` line: one length, or a list of equal
/// ones (`3, 3`), equal to `earlier` (the lines before it) if given. Any
/// other value is malformed: RFC 9112 §6.3 item 5 (RFC 9110 §8.6) makes
/// differing lengths an unrecoverable error, the connection closed.
fn content_length(value: &[u8], earlier: Option<u64>) -> Result<u64, Malformed> {
    let mut n = earlier;
    for v in value.split(|&b| b == b',').map(<[u8]>::trim_ascii) {
        let this = std::str::from_utf8(v)
            .ok()
            .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok());
        match (this, n) {
            (Some(a), Some(b)) if a != b => {
                return Err(Malformed(format!(
                    "two different Content-Length values ({b} and {a})"
                )))
            }
            (Some(a), _) => n = Some(a),
            (None, _) => {
                return Err(Malformed(format!(
                    "bad Content-Length '{}'",
                    String::from_utf8_lossy(value).escape_debug()
                )))
            }
        }
    }
    n.ok_or_else(|| Malformed("empty Content-Length".into()))
}

impl ResponseParser {
    /// Say whether the next response answers a `HEAD` request (no body).
    #[inline]
    pub fn expect_no_body(&mut self, head: bool) {
        self.no_body = head;
    }

    /// Forget any partial response.
    pub fn reset(&mut self) {
        self.state = State::Head;
        self.pending.clear();
    }

    /// The connection ended: complete a close-delimited response, or say
    /// that the response was cut short (`Ok(None)` when nothing had begun).
    pub fn eof(&mut self) -> Result<Option<u16>, Malformed> {
        match self.state {
            State::UntilClose => {
                self.reset();
                Ok(Some(self.status))
            }
            State::Head if self.pending.is_empty() => Ok(None),
            _ => Err(Malformed(
                "connection closed in the middle of a response".into(),
            )),
        }
    }

    fn done(&mut self, used: usize) -> Feed {
        self.state = State::Head;
        self.pending.clear();
        Feed::Done {
            status: self.status,
            close: self.close,
            used,
        }
    }

    /// Take the next bytes of the connection. Returns when the response is
    /// complete (with how many bytes it used) or the input is exhausted.
    pub fn feed(&mut self, data: &[u8]) -> Result<Feed, Malformed> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Head => {
                    let head = if self.pending.is_empty() {
                        match parse_head(&data[pos..], self.no_body)? {
                            Some(h) => {
                                pos += h.len;
                                h
                            }
                            None => {
                                self.pending.extend_from_slice(&data[pos..]);
                                return Ok(Feed::More);
                            }
                        }
                    } else {
                        let before = self.pending.len();
                        self.pending.extend_from_slice(&data[pos..]);
                        match parse_head(&self.pending, self.no_body)? {
                            Some(h) => {
                                pos += h.len - before;
                                self.pending.clear();
                                h
                            }
                            None => return Ok(Feed::More),
                        }
                    };
                    if (100..200).contains(&head.status) && head.status != 101 {
                        // An interim response (100 Continue): the real one follows.
                        continue;
                    }
                    self.status = head.status;
                    self.close = head.close;
                    self.state = head.body;
                }
                State::Body(left) => {
                    let take = (left.min((data.len() - pos) as u64)) as usize;
                    pos += take;
                    if take as u64 == left {
                        return Ok(self.done(pos));
                    }
                    self.state = State::Body(left - take as u64);
                    return Ok(Feed::More);
                }
                State::UntilClose => return Ok(Feed::More),
                State::ChunkData(left) => {
                    let take = (left.min((data.len() - pos) as u64)) as usize;
                    pos += take;
                    if take as u64 == left {
                        self.state = State::ChunkEnd;
                    } else {
                        self.state = State::ChunkData(left - take as u64);
                        return Ok(Feed::More);
                    }
                }
                State::ChunkSize | State::ChunkEnd | State::Trailer => {
                    // Line-oriented states: gather one CRLF-terminated line.
                    let Some(nl) = data[pos..].iter().position(|&b| b == b'\n') else {
                        self.pending.extend_from_slice(&data[pos..]);
                        if self.pending.len() > MAX_HEAD {
                            return Err(Malformed("chunk line too long".into()));
                        }
                        return Ok(Feed::More);
                    };
                    self.pending.extend_from_slice(&data[pos..pos + nl + 1]);
                    pos += nl + 1;
                    let line = std::mem::take(&mut self.pending);
                    match self.state {
                        State::ChunkEnd => {
                            if line != b"\r\n" {
                                return Err(Malformed("chunk not followed by CRLF".into()));
                            }
                            self.state = State::ChunkSize;
                        }
                        State::ChunkSize => match httparse::parse_chunk_size(&line) {
                            Ok(httparse::Status::Complete((_, 0))) => self.state = State::Trailer,
                            Ok(httparse::Status::Complete((_, n))) => {
                                self.state = State::ChunkData(n)
                            }
                            _ => {
                                return Err(Malformed(format!(
                                    "bad chunk size line '{}'",
                                    String::from_utf8_lossy(&line).escape_debug()
                                )))
                            }
                        },
                        _ => {
                            if line == b"\r\n" || line == b"\n" {
                                return Ok(self.done(pos));
                            }
                        }
                    }
                }
            }
            if pos == data.len() && !matches!(self.state, State::Body(0)) {
                return Ok(Feed::More);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn header_names_match_in_any_case_and_nothing_else() {
        assert!(super::name_is("Content-Length", b"content-length"));
        assert!(super::name_is("CONTENT-LENGTH", b"content-length"));
        assert!(super::name_is("connection", b"connection"));
        assert!(!super::name_is("Content-Lengt", b"content-length"));
        assert!(!super::name_is("Content_Length", b"content-length"));
        assert!(!super::name_is("Content-Type", b"content-length"));
        assert!(!super::name_is("Connectiom", b"connection"));
    }

    use super::*;

    fn feed_all(p: &mut ResponseParser, pieces: &[&[u8]]) -> Vec<Feed> {
        pieces.iter().map(|d| p.feed(d).unwrap()).collect()
    }

    #[test]
    fn a_reply_with_many_header_lines_parses() {
        // 200 lines (some servers and CDNs send dozens): wrk reads them all.
        let mut r = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..200 {
            r.extend_from_slice(format!("X-H{i}: v\r\n").as_bytes());
        }
        r.extend_from_slice(b"Content-Length: 2\r\n\r\nok");
        let mut p = ResponseParser::default();
        assert_eq!(
            p.feed(&r).unwrap(),
            Feed::Done {
                status: 200,
                close: false,
                used: r.len()
            }
        );
    }

    #[test]
    fn content_length_in_one_piece_and_split() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let mut p = ResponseParser::default();
        assert_eq!(
            p.feed(r).unwrap(),
            Feed::Done {
                status: 200,
                close: false,
                used: r.len()
            }
        );
        for split in 1..r.len() {
            let mut p = ResponseParser::default();
            let out = feed_all(&mut p, &[&r[..split], &r[split..]]);
            assert_eq!(out[0], Feed::More, "split at {split}");
            assert!(
                matches!(out[1], Feed::Done { status: 200, used, .. } if used == r.len() - split),
                "split at {split}: {out:?}"
            );
        }
    }

    #[test]
    fn empty_body_and_extra_bytes() {
        let r = b"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1";
        let mut p = ResponseParser::default();
        assert!(matches!(
            p.feed(r).unwrap(),
            Feed::Done {
                status: 204,
                used: 27,
                ..
            }
        ));
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
        assert!(matches!(
            ResponseParser::default().feed(r).unwrap(),
            Feed::Done { close: true, .. }
        ));
    }

    #[test]
    fn chunked_bodies() {
        let r = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n";
        for split in 1..r.len() {
            let mut p = ResponseParser::default();
            let a = p.feed(&r[..split]).unwrap();
            let b = if a == Feed::More {
                p.feed(&r[split..]).unwrap()
            } else {
                a
            };
            assert!(matches!(b, Feed::Done { status: 200, .. }), "split {split}");
        }
    }

    #[test]
    fn close_delimited_and_cut_short() {
        let mut p = ResponseParser::default();
        assert_eq!(p.feed(b"HTTP/1.0 200 OK\r\n\r\nabc").unwrap(), Feed::More);
        assert_eq!(p.eof().unwrap(), Some(200));
        let mut p = ResponseParser::default();
        assert_eq!(
            p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc")
                .unwrap(),
            Feed::More
        );
        assert!(p.eof().is_err());
        assert_eq!(ResponseParser::default().eof().unwrap(), None);
    }

    #[test]
    fn garbage_is_malformed() {
        let mut p = ResponseParser::default();
        assert!(p.feed(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        let mut p = ResponseParser::default();
        assert!(p
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n")
            .is_err());
    }

    #[test]
    fn differing_content_lengths_are_malformed_and_equal_ones_accepted() {
        let feed = |head: &str| {
            let r = format!("HTTP/1.1 200 OK\r\n{head}\r\nabc");
            ResponseParser::default().feed(r.as_bytes())
        };
        for same in [
            "Content-Length: 3\r\n",
            "Content-Length: 3, 3\r\n",
            "Content-Length: 3\r\ncontent-length: 3\r\n",
        ] {
            assert!(
                matches!(feed(same), Ok(Feed::Done { status: 200, .. })),
                "{same:?}"
            );
        }
        for bad in [
            "Content-Length: 3\r\nContent-Length: 5\r\n",
            "Content-Length: 3, 5\r\n",
            "Content-Length: +3\r\n",
            "Content-Length: 3,\r\n",
        ] {
            assert!(feed(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn transfer_encoding_framing_follows_rfc_9112() {
        let feed = |head: &str, body: &str| {
            let r = format!("HTTP/1.1 200 OK\r\n{head}\r\n{body}");
            let mut p = ResponseParser::default();
            (p.feed(r.as_bytes()).unwrap(), p)
        };
        // Chunked not the final coding: the body runs to the close.
        let (f, mut p) = feed("Transfer-Encoding: chunked, gzip\r\n", "0\r\n\r\nmore");
        assert_eq!(f, Feed::More);
        assert_eq!(p.eof().unwrap(), Some(200));
        // Transfer-Encoding overrides Content-Length, which is not even
        // read: a malformed one does not make the reply malformed.
        for cl in ["3", "x", "3, 5"] {
            let head = format!("Transfer-Encoding: gzip\r\nContent-Length: {cl}\r\n");
            let (f, mut p) = feed(&head, "abcdef");
            assert_eq!(f, Feed::More, "{cl}");
            assert_eq!(p.eof().unwrap(), Some(200), "{cl}");
        }
        let (f, _) = feed(
            "Content-Length: x\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\n",
        );
        assert!(matches!(f, Feed::Done { .. }), "{f:?}");
        let (f, _) = feed(
            "Content-Length: 30\r\nTransfer-Encoding: chunked\r\n",
            "1\r\na\r\n0\r\n\r\n",
        );
        assert!(matches!(f, Feed::Done { close: false, .. }), "{f:?}");
        // Several lines make one list: its last coding decides.
        let (f, _) = feed(
            "Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
            "0\r\n\r\n",
        );
        assert!(matches!(f, Feed::Done { .. }), "{f:?}");
        let (f, _) = feed(
            "Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n",
            "0\r\n\r\n",
        );
        assert_eq!(f, Feed::More);
    }

    #[test]
    fn request_has_host_and_headers() {
        let r = build_request("GET", "h:1", "/a?b", &[("X-A".into(), "1".into())], None);
        let s = String::from_utf8(r.bytes).unwrap();
        assert!(s.starts_with("GET /a?b HTTP/1.1\r\nHost: h:1\r\n"));
        assert!(s.ends_with("X-A: 1\r\n\r\n"));
        assert_eq!((r.head_len, r.head), (s.len(), false));
    }

    #[test]
    fn user_headers_replace_the_defaults_and_bodies_have_a_length() {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        let r = build_request(
            "POST",
            "h",
            "/",
            &[
                h("host", "example.org"),
                h("User-Agent", ""),
                h("Accept", "*/*"),
            ],
            Some(b"abc"),
        );
        let s = String::from_utf8(r.bytes).unwrap();
        assert_eq!(
            s,
            "POST / HTTP/1.1\r\nhost: example.org\r\nAccept: */*\r\nContent-Length: 3\r\n\r\nabc"
        );
        assert_eq!(r.head_len, s.len() - 3);
        assert!(build_request("HEAD", "h", "/", &[], None).head);
    }

    #[test]
    fn a_method_is_sent_as_typed_and_only_head_is_head() {
        let r = build_request("head", "h", "/", &[], None);
        assert!(!r.head);
        assert!(r.bytes.starts_with(b"head / HTTP/1.1\r\n"));
        assert!(build_request("HEAD", "h", "/", &[], None).head);
    }

    #[test]
    fn a_user_connection_close_is_noted() {
        let h = |v: &str| [("connection".to_string(), v.to_string())];
        assert!(build_request("GET", "h", "/", &h("Close"), None).close);
        assert!(build_request("GET", "h", "/", &h("TE, close"), None).close);
        assert!(!build_request("GET", "h", "/", &h("keep-alive"), None).close);
        assert!(!build_request("GET", "h", "/", &[], None).close);
    }

    #[test]
    fn methods_with_content_say_its_length_without_a_body() {
        let text = |m: &str, h: &[(String, String)]| {
            String::from_utf8(build_request(m, "h", "/", h, None).bytes).unwrap()
        };
        for m in ["POST", "PUT", "PATCH"] {
            assert!(text(m, &[]).ends_with("Content-Length: 0\r\n\r\n"), "{m}");
        }
        assert!(!text("GET", &[]).contains("Content-Length"));
        let own = [("content-length".to_string(), "0".to_string())];
        assert_eq!(text("POST", &own).matches("ontent-").count(), 1);
    }

    #[test]
    fn head_replies_have_no_body() {
        let r = b"HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
        let mut p = ResponseParser::default();
        p.expect_no_body(true);
        assert!(matches!(p.feed(r).unwrap(), Feed::Done { used, .. } if used == r.len()));
        p.expect_no_body(false);
        assert_eq!(p.feed(r).unwrap(), Feed::More);
    }
}
