//! HTTP/2 client codec (RFC 9113), without I/O: the engine feeds it the
//! bytes read from a connection and writes out the bytes it queues.
//!
//! HPACK (RFC 7541) is two crates without a runtime: requests are encoded
//! by `loona-hpack` (a maintained fork of the `hpack` crate), replies
//! decoded by `httlib-hpack`, whose Huffman decoder walks a static table a
//! few bits at a time (`loona-hpack` builds a hash map of the Huffman code
//! for every string it decodes, which cost a load generator most of its CPU
//! per reply). The framing
//! is written here by hand: the `h2` crate drives its connections from a
//! tokio runtime and owns their I/O, which the engine's single-threaded
//! event loop (readiness or io_uring, rustls driven by hand) cannot lend
//! it; the frames a load generator needs are few.
//!
//! What the codec does: the connection preface and SETTINGS (ENABLE_PUSH 0,
//! the initial stream window asked for, ACKs of the server's settings);
//! requests as HEADERS (with CONTINUATION past the server's
//! MAX_FRAME_SIZE) and DATA within the send windows (connection and
//! stream; a body waits for WINDOW_UPDATE when they are spent); replies as
//! HEADERS (+CONTINUATION) and DATA, each DATA frame's bytes given back by
//! WINDOW_UPDATE once half a window is consumed; PING answered; RST_STREAM
//! and GOAWAY reported as [`Event`]s (after a GOAWAY no stream is opened,
//! and those above its last stream id are reported as unprocessed, to be
//! retried elsewhere, RFC 9113 §6.8). A frame that breaks the protocol is a
//! [`ConnError`] naming the frame; a GOAWAY with its code is queued.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// The client connection preface.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Frame types.
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const PRIORITY: u8 = 2;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const PUSH_PROMISE: u8 = 5;
const PING: u8 = 6;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const CONTINUATION: u8 = 9;

/// Flags.
const END_STREAM: u8 = 0x1;
const ACK: u8 = 0x1;
const END_HEADERS: u8 = 0x4;
const PADDED: u8 = 0x8;
const PRIORITY_FLAG: u8 = 0x20;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0;
/// PROTOCOL_ERROR.
pub const PROTOCOL_ERROR: u32 = 1;
/// FLOW_CONTROL_ERROR.
pub const FLOW_CONTROL_ERROR: u32 = 3;
/// FRAME_SIZE_ERROR.
pub const FRAME_SIZE_ERROR: u32 = 6;
/// REFUSED_STREAM.
pub const REFUSED_STREAM: u32 = 7;
/// COMPRESSION_ERROR.
pub const COMPRESSION_ERROR: u32 = 9;

/// The names of the error codes 0 to 13, as RFC 9113 §7 spells them
/// (lower case: keys of the results).
pub const ERROR_NAMES: [&str; 14] = [
    "no_error",
    "protocol_error",
    "internal_error",
    "flow_control_error",
    "settings_timeout",
    "stream_closed",
    "frame_size_error",
    "refused_stream",
    "cancel",
    "compression_error",
    "connect_error",
    "enhance_your_calm",
    "inadequate_security",
    "http_1_1_required",
];

/// The name of an error code (`unknown_0x..` past the known ones).
pub fn error_name(code: u32) -> Cow<'static, str> {
    named(&ERROR_NAMES, code as usize, "unknown")
}

/// `names[i]`, or `{unknown}_0x..` past them.
fn named(names: &'static [&'static str], i: usize, unknown: &str) -> Cow<'static, str> {
    match names.get(i) {
        Some(n) => Cow::Borrowed(n),
        None => Cow::Owned(format!("{unknown}_{i:#x}")),
    }
}

/// The smallest MAX_FRAME_SIZE, and the one this client advertises.
const FRAME_MIN: usize = 16_384;
/// Largest window (2^31 - 1).
pub const WINDOW_MAX: i64 = (1 << 31) - 1;
/// The default initial window of a stream and of the connection.
const WINDOW_DEFAULT: i64 = 65_535;
/// HPACK's default dynamic table size.
const TABLE_DEFAULT: usize = 4096;
/// Largest header block accepted (HEADERS and its CONTINUATIONs).
const HEADER_BLOCK_MAX: usize = 1 << 20;

/// What the client asks of a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// Initial window of each stream the server sends on (`-w`), bytes.
    pub stream_window: u32,
    /// Window of the whole connection (`-W`), bytes.
    pub connection_window: u32,
    /// A slow reader: a stream's window is given back only by
    /// [`Connection::release`], not as its bytes arrive.
    pub slow_read: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        // h2load's defaults: 2^30 - 1 each.
        Settings {
            stream_window: (1 << 30) - 1,
            connection_window: (1 << 30) - 1,
            slow_read: false,
        }
    }
}

/// A request as HTTP/2 sends it: the pseudo-headers, then the fields
/// (lower-case names, none of the connection-specific ones), then the body.
#[derive(Debug, Clone)]
pub struct Request {
    /// Header fields, pseudo-headers first.
    pub fields: Vec<(Vec<u8>, Vec<u8>)>,
    /// The body (None: END_STREAM on the HEADERS frame).
    pub body: Option<Arc<[u8]>>,
}

/// Fields HTTP/2 forbids (RFC 9113 §8.2.2); `Host` becomes `:authority`.
const CONNECTION_SPECIFIC: [&str; 6] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "upgrade",
    "host",
];

impl Request {
    /// `method` on `scheme://authority path`, with the user's headers (a
    /// `Host` replaces the authority; an empty value removes a default, as
    /// for HTTP/1.1), `user-agent` and, with a body or for POST, PUT and
    /// PATCH, `content-length`.
    pub fn new(
        method: &str,
        scheme: &str,
        authority: &str,
        path: &str,
        headers: &[(String, String)],
        body: Option<&[u8]>,
    ) -> Request {
        let user = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        };
        let authority = user("host").unwrap_or(authority);
        let mut fields: Vec<(Vec<u8>, Vec<u8>)> = vec![
            (b":method".to_vec(), method.as_bytes().to_vec()),
            (b":scheme".to_vec(), scheme.as_bytes().to_vec()),
            (b":authority".to_vec(), authority.as_bytes().to_vec()),
            (b":path".to_vec(), path.as_bytes().to_vec()),
        ];
        if user("user-agent").is_none() {
            fields.push((b"user-agent".to_vec(), b"evdispatch-load".to_vec()));
        }
        for (n, v) in headers {
            let n = n.to_ascii_lowercase();
            if v.is_empty() || CONNECTION_SPECIFIC.contains(&n.as_str()) {
                continue;
            }
            if n == "te" && !v.eq_ignore_ascii_case("trailers") {
                continue;
            }
            fields.push((n.into_bytes(), v.as_bytes().to_vec()));
        }
        let framed = fields.iter().any(|(n, _)| n == b"content-length");
        if !framed && (body.is_some() || matches!(method, "POST" | "PUT" | "PATCH")) {
            let len = body.map_or(0, <[u8]>::len).to_string();
            fields.push((b"content-length".to_vec(), len.into_bytes()));
        }
        Request {
            fields,
            body: body.filter(|b| !b.is_empty()).map(Arc::from),
        }
    }
}

/// What the server said, one item per frame that matters to the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server's first SETTINGS arrived: streams may open (up to
    /// [`Connection::max_streams`]).
    Ready,
    /// A stream's reply is complete (END_STREAM), with its final status.
    Response {
        /// Stream id.
        id: u32,
        /// `:status`.
        status: u16,
    },
    /// The server reset a stream.
    Reset {
        /// Stream id.
        id: u32,
        /// Error code.
        code: u32,
    },
    /// The server is going away: no new streams; those above `last_id`
    /// were not processed.
    GoAway {
        /// Last stream id the server may have processed.
        last_id: u32,
        /// Error code.
        code: u32,
        /// The client's streams above `last_id`, safe to retry.
        unprocessed: Vec<u32>,
    },
}

/// A connection error: the code sent in the GOAWAY, and the frame that
/// caused it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnError {
    /// Error code.
    pub code: u32,
    /// The type of the frame that caused it ([`frame_name`]).
    pub frame: Cow<'static, str>,
    /// What was wrong, naming the frame.
    pub what: String,
}

impl fmt::Display for ConnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "HTTP/2 {} caused by a {} frame: {}",
            error_name(self.code),
            self.frame,
            self.what
        )
    }
}

/// The names of the frame types 0 to 9, as RFC 9113 §6 spells them.
pub const FRAME_NAMES: [&str; 10] = [
    "DATA",
    "HEADERS",
    "PRIORITY",
    "RST_STREAM",
    "SETTINGS",
    "PUSH_PROMISE",
    "PING",
    "GOAWAY",
    "WINDOW_UPDATE",
    "CONTINUATION",
];

/// The name of a frame type (`type_0x..` past the known ones).
pub fn frame_name(kind: u8) -> Cow<'static, str> {
    named(&FRAME_NAMES, kind as usize, "type")
}

/// Header bytes of the connection's requests and replies: the fields'
/// names and values, and their HPACK blocks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HeaderBytes {
    /// Names and values of the fields sent.
    pub sent_plain: u64,
    /// HPACK blocks sent.
    pub sent_hpack: u64,
    /// Names and values of the fields received.
    pub received_plain: u64,
    /// HPACK blocks received.
    pub received_hpack: u64,
}

#[derive(Debug)]
struct Stream {
    status: Option<u16>,
    send_window: i64,
    /// Received bytes not yet given back to the server's window.
    unacked: u32,
    /// The body still to send, and how much of it went.
    body: Option<(Arc<[u8]>, usize)>,
}

/// The header block being received (HEADERS, then CONTINUATIONs).
#[derive(Debug)]
struct Partial {
    id: u32,
    end_stream: bool,
    block: Vec<u8>,
}

/// One HTTP/2 connection, client side.
pub struct Connection {
    out: Vec<u8>,
    inbuf: Vec<u8>,
    enc: loona_hpack::Encoder<'static>,
    dec: httlib_hpack::Decoder<'static>,
    /// A table-size update owed at the start of the next header block.
    table_update: Option<usize>,
    local: Settings,
    next_id: u32,
    peer_max_streams: u32,
    peer_initial_window: i64,
    peer_max_frame: usize,
    send_window: i64,
    recv_unacked: u32,
    streams: HashMap<u32, Stream>,
    ready: bool,
    goaway: Option<u32>,
    partial: Option<Partial>,
    /// The fields of the last header block decoded (kept for its allocation).
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
    /// Header bytes so far.
    pub header_bytes: HeaderBytes,
    /// Sends that waited for a window (a body's DATA held back).
    pub flow_blocked: u64,
}

impl Connection {
    /// A connection with the preface, SETTINGS and the connection window's
    /// WINDOW_UPDATE queued.
    pub fn new(local: Settings) -> Connection {
        let mut c = Connection {
            out: Vec::with_capacity(4096),
            inbuf: Vec::new(),
            enc: loona_hpack::Encoder::new(),
            dec: httlib_hpack::Decoder::with_dynamic_size(TABLE_DEFAULT as u32),
            table_update: None,
            local,
            next_id: 1,
            peer_max_streams: u32::MAX,
            peer_initial_window: WINDOW_DEFAULT,
            peer_max_frame: FRAME_MIN,
            send_window: WINDOW_DEFAULT,
            recv_unacked: 0,
            streams: HashMap::new(),
            ready: false,
            goaway: None,
            partial: None,
            fields: Vec::new(),
            header_bytes: HeaderBytes::default(),
            flow_blocked: 0,
        };
        c.out.extend_from_slice(PREFACE);
        let mut s = Vec::with_capacity(12);
        for (id, v) in [
            (2u16, 0u32),
            (4, local.stream_window.min(WINDOW_MAX as u32)),
        ] {
            s.extend_from_slice(&id.to_be_bytes());
            s.extend_from_slice(&v.to_be_bytes());
        }
        c.frame(SETTINGS, 0, 0, &s);
        let extra = (local.connection_window as i64).min(WINDOW_MAX) - WINDOW_DEFAULT;
        if extra > 0 {
            c.frame(WINDOW_UPDATE, 0, 0, &(extra as u32).to_be_bytes());
        }
        c
    }

    /// Bytes to write.
    pub fn pending(&self) -> &[u8] {
        &self.out
    }

    /// `n` bytes of [`Connection::pending`] were written.
    pub fn consume(&mut self, n: usize) {
        self.out.drain(..n);
    }

    /// Move every byte to write into `buf` (emptied first); the codec
    /// queues what follows into `buf`'s former allocation. For an engine
    /// that hands a whole buffer to the kernel and must not see it change
    /// until the send completes (io_uring).
    pub fn take_pending(&mut self, buf: &mut Vec<u8>) {
        buf.clear();
        std::mem::swap(&mut self.out, buf);
    }

    /// The server's settings arrived.
    pub fn is_ready(&self) -> bool {
        self.ready
    }

    /// The server sent a GOAWAY (its last stream id).
    pub fn goaway(&self) -> Option<u32> {
        self.goaway
    }

    /// Streams open now.
    pub fn active(&self) -> usize {
        self.streams.len()
    }

    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited until said).
    pub fn max_streams(&self) -> u32 {
        self.peer_max_streams
    }

    /// A slow reader gives back up to `max` bytes of its streams' windows
    /// (WINDOW_UPDATE for each stream with bytes received and not given
    /// back); returns how many.
    pub fn release(&mut self, max: u32) -> u32 {
        let mut left = max;
        let mut ids: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| s.unacked > 0)
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let s = self.streams.get_mut(&id).expect("listed above");
            let n = s.unacked.min(left);
            if n == 0 {
                break;
            }
            s.unacked -= n;
            left -= n;
            self.frame(WINDOW_UPDATE, 0, id, &n.to_be_bytes());
        }
        max - left
    }

    /// Streams opened on the connection so far.
    pub fn streams_opened(&self) -> u32 {
        (self.next_id - 1) / 2
    }

    /// Streams whose body has bytes left that the windows hold back (all
    /// the windows allow is queued as soon as they allow it).
    pub fn blocked_streams(&self) -> usize {
        self.streams.values().filter(|s| s.body.is_some()).count()
    }

    /// Can a stream open now, under `limit` streams at once (the user's)?
    pub fn can_open(&self, limit: u32) -> bool {
        self.ready
            && self.goaway.is_none()
            && self.next_id < (1 << 31)
            && (self.streams.len() as u32) < limit.min(self.peer_max_streams)
    }

    fn frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        self.out.extend_from_slice(&len.to_be_bytes()[1..]);
        self.out.push(kind);
        self.out.push(flags);
        self.out
            .extend_from_slice(&(id & 0x7fff_ffff).to_be_bytes());
        self.out.extend_from_slice(payload);
    }

    /// Open a stream for `req`: HEADERS (and CONTINUATIONs), then as much of
    /// the body as the windows allow. Returns the stream id.
    pub fn open(&mut self, req: &Request) -> u32 {
        let id = self.next_id;
        self.next_id += 2;
        let mut block = Vec::with_capacity(128);
        if let Some(size) = self.table_update.take() {
            // A dynamic table size update (RFC 7541 §6.3): 001xxxxx.
            let _ = loona_hpack::encoder::encode_integer_into(size, 5, 0x20, &mut block);
        }
        let fields = req.fields.iter().map(|(n, v)| (&n[..], &v[..]));
        let _ = self.enc.encode_into(fields, &mut block);
        self.header_bytes.sent_plain += req
            .fields
            .iter()
            .map(|(n, v)| (n.len() + v.len()) as u64)
            .sum::<u64>();
        self.header_bytes.sent_hpack += block.len() as u64;
        let end = if req.body.is_none() { END_STREAM } else { 0 };
        let max = self.peer_max_frame;
        let mut chunks = block.chunks(max).peekable();
        let first = chunks.next().unwrap_or(&[]);
        let last = chunks.peek().is_none();
        self.frame(HEADERS, end | if last { END_HEADERS } else { 0 }, id, first);
        while let Some(c) = chunks.next() {
            let last = chunks.peek().is_none();
            self.frame(CONTINUATION, if last { END_HEADERS } else { 0 }, id, c);
        }
        self.streams.insert(
            id,
            Stream {
                status: None,
                send_window: self.peer_initial_window,
                unacked: 0,
                body: req.body.clone().map(|b| (b, 0)),
            },
        );
        self.send_data(id);
        id
    }

    /// Send what the windows allow of stream `id`'s body.
    fn send_data(&mut self, id: u32) {
        let max = self.peer_max_frame;
        loop {
            let Some(s) = self.streams.get_mut(&id) else {
                return;
            };
            let Some((body, off)) = s.body.as_mut() else {
                return;
            };
            let left = body.len() - *off;
            let n = (left as i64)
                .min(s.send_window)
                .min(self.send_window)
                .min(max as i64)
                .max(0) as usize;
            if n == 0 && left > 0 {
                self.flow_blocked += 1;
                return;
            }
            let chunk: Arc<[u8]> = body.clone();
            let start = *off;
            *off += n;
            let done = *off == chunk.len();
            s.send_window -= n as i64;
            if done {
                s.body = None;
            }
            self.send_window -= n as i64;
            self.frame(
                DATA,
                if done { END_STREAM } else { 0 },
                id,
                &chunk[start..start + n],
            );
            if done {
                return;
            }
        }
    }

    fn send_all_data(&mut self) {
        let ids: Vec<u32> = self
            .streams
            .iter()
            .filter(|(_, s)| s.body.is_some())
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            self.send_data(id);
        }
    }

    /// Take `data` read from the connection; what it completes is pushed
    /// on `events`. On an error, a GOAWAY is queued and the connection must
    /// close once it is written.
    pub fn feed(&mut self, data: &[u8], events: &mut Vec<Event>) -> Result<(), ConnError> {
        self.inbuf.extend_from_slice(data);
        let mut at = 0;
        let res = loop {
            let rest = &self.inbuf[at..];
            if rest.len() < 9 {
                break Ok(());
            }
            let len = u32::from_be_bytes([0, rest[0], rest[1], rest[2]]) as usize;
            if len > FRAME_MIN {
                break Err(ConnError {
                    frame: frame_name(rest[3]),
                    ..err(
                        FRAME_SIZE_ERROR,
                        format!(
                            "a {} frame on stream {} is {len} bytes, over the {FRAME_MIN} this \
                             client allows",
                            frame_name(rest[3]),
                            stream_id(&rest[5..9])
                        ),
                    )
                });
            }
            if rest.len() < 9 + len {
                break Ok(());
            }
            let (kind, flags, id) = (rest[3], rest[4], stream_id(&rest[5..9]));
            let payload = rest[9..9 + len].to_vec();
            at += 9 + len;
            if let Err(e) = self.on_frame(kind, flags, id, &payload, events) {
                break Err(ConnError {
                    frame: frame_name(kind),
                    ..e
                });
            }
        };
        self.inbuf.drain(..at);
        if let Err(e) = &res {
            let last = 0u32;
            let mut p = last.to_be_bytes().to_vec();
            p.extend_from_slice(&e.code.to_be_bytes());
            self.frame(GOAWAY, 0, 0, &p);
        }
        res
    }

    fn on_frame(
        &mut self,
        kind: u8,
        flags: u8,
        id: u32,
        p: &[u8],
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        if let Some(part) = &self.partial {
            if kind != CONTINUATION || id != part.id {
                return Err(err(
                    PROTOCOL_ERROR,
                    format!(
                        "a {} frame on stream {id} came inside the header block of stream {} \
                         (CONTINUATION expected)",
                        frame_name(kind),
                        part.id
                    ),
                ));
            }
        }
        match kind {
            DATA => {
                if id == 0 {
                    return Err(err(PROTOCOL_ERROR, "DATA on stream 0".into()));
                }
                // Padding counts against the windows too (RFC 9113 §6.1).
                unpad(flags, p, "DATA", id)?;
                let len = p.len() as u32;
                self.recv_unacked += len;
                if self.recv_unacked as i64 > self.local.connection_window as i64 {
                    return Err(err(
                        FLOW_CONTROL_ERROR,
                        format!("DATA on stream {id} overran the connection window"),
                    ));
                }
                if self.recv_unacked >= self.local.connection_window / 2 {
                    let n = std::mem::take(&mut self.recv_unacked);
                    self.frame(WINDOW_UPDATE, 0, 0, &n.to_be_bytes());
                }
                let window = self.local.stream_window;
                let Some(s) = self.streams.get_mut(&id) else {
                    // A stream reset or finished: the connection window
                    // still counts it (done above).
                    return Ok(());
                };
                s.unacked += len;
                if s.unacked > window {
                    return Err(err(
                        FLOW_CONTROL_ERROR,
                        format!("DATA on stream {id} overran its window"),
                    ));
                }
                if flags & END_STREAM != 0 {
                    return self.end_stream(id, events, "DATA");
                }
                if s.unacked >= window / 2 && !self.local.slow_read {
                    let n = std::mem::take(&mut s.unacked);
                    self.frame(WINDOW_UPDATE, 0, id, &n.to_be_bytes());
                }
            }
            HEADERS => {
                if id == 0 {
                    return Err(err(PROTOCOL_ERROR, "HEADERS on stream 0".into()));
                }
                let mut b = unpad(flags, p, "HEADERS", id)?;
                if flags & PRIORITY_FLAG != 0 {
                    if b.len() < 5 {
                        return Err(err(
                            FRAME_SIZE_ERROR,
                            format!("HEADERS on stream {id}: too short for its priority"),
                        ));
                    }
                    b = &b[5..];
                }
                let part = Partial {
                    id,
                    end_stream: flags & END_STREAM != 0,
                    block: b.to_vec(),
                };
                if flags & END_HEADERS != 0 {
                    return self.header_block(part, events);
                }
                self.partial = Some(part);
            }
            CONTINUATION => {
                let Some(mut part) = self.partial.take() else {
                    return Err(err(
                        PROTOCOL_ERROR,
                        format!("CONTINUATION on stream {id} with no header block open"),
                    ));
                };
                part.block.extend_from_slice(p);
                if part.block.len() > HEADER_BLOCK_MAX {
                    return Err(err(
                        PROTOCOL_ERROR,
                        format!("the header block of stream {id} is over {HEADER_BLOCK_MAX} bytes"),
                    ));
                }
                if flags & END_HEADERS != 0 {
                    return self.header_block(part, events);
                }
                self.partial = Some(part);
            }
            PRIORITY if p.len() != 5 => {
                return Err(err(
                    FRAME_SIZE_ERROR,
                    format!("PRIORITY on stream {id} is {} bytes, not 5", p.len()),
                ));
            }
            RST_STREAM => {
                if id == 0 || p.len() != 4 {
                    return Err(err(
                        if id == 0 {
                            PROTOCOL_ERROR
                        } else {
                            FRAME_SIZE_ERROR
                        },
                        format!("RST_STREAM on stream {id} of {} bytes", p.len()),
                    ));
                }
                let code = u32::from_be_bytes([p[0], p[1], p[2], p[3]]);
                if self.streams.remove(&id).is_some() {
                    events.push(Event::Reset { id, code });
                }
            }
            SETTINGS => {
                if id != 0 {
                    return Err(err(PROTOCOL_ERROR, format!("SETTINGS on stream {id}")));
                }
                if flags & ACK != 0 {
                    if !p.is_empty() {
                        return Err(err(FRAME_SIZE_ERROR, "SETTINGS ACK with a payload".into()));
                    }
                    return Ok(());
                }
                if !p.len().is_multiple_of(6) {
                    return Err(err(
                        FRAME_SIZE_ERROR,
                        format!("SETTINGS of {} bytes (not a multiple of 6)", p.len()),
                    ));
                }
                for s in p.chunks(6) {
                    let key = u16::from_be_bytes([s[0], s[1]]);
                    let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
                    self.setting(key, v)?;
                }
                self.frame(SETTINGS, ACK, 0, &[]);
                self.send_all_data();
                if !self.ready {
                    self.ready = true;
                    events.push(Event::Ready);
                }
            }
            PUSH_PROMISE => {
                return Err(err(
                    PROTOCOL_ERROR,
                    format!("PUSH_PROMISE on stream {id}, with push disabled"),
                ))
            }
            PING => {
                if id != 0 || p.len() != 8 {
                    return Err(err(
                        if id != 0 {
                            PROTOCOL_ERROR
                        } else {
                            FRAME_SIZE_ERROR
                        },
                        format!("PING on stream {id} of {} bytes", p.len()),
                    ));
                }
                if flags & ACK == 0 {
                    self.frame(PING, ACK, 0, p);
                }
            }
            GOAWAY => {
                if id != 0 || p.len() < 8 {
                    return Err(err(
                        PROTOCOL_ERROR,
                        format!("GOAWAY on stream {id} of {} bytes", p.len()),
                    ));
                }
                let last_id = stream_id(&p[0..4]);
                let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
                let mut unprocessed: Vec<u32> = self
                    .streams
                    .keys()
                    .copied()
                    .filter(|&s| s > last_id)
                    .collect();
                unprocessed.sort_unstable();
                for s in &unprocessed {
                    self.streams.remove(s);
                }
                self.goaway = Some(self.goaway.map_or(last_id, |g| g.min(last_id)));
                events.push(Event::GoAway {
                    last_id,
                    code,
                    unprocessed,
                });
            }
            WINDOW_UPDATE => {
                if p.len() != 4 {
                    return Err(err(
                        FRAME_SIZE_ERROR,
                        format!("WINDOW_UPDATE on stream {id} of {} bytes", p.len()),
                    ));
                }
                let inc = (u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff) as i64;
                if inc == 0 {
                    return Err(err(
                        PROTOCOL_ERROR,
                        format!("WINDOW_UPDATE of 0 on stream {id}"),
                    ));
                }
                if id == 0 {
                    self.send_window += inc;
                    if self.send_window > WINDOW_MAX {
                        return Err(err(
                            FLOW_CONTROL_ERROR,
                            "WINDOW_UPDATE on stream 0 took the window past 2^31-1".into(),
                        ));
                    }
                    self.send_all_data();
                } else if let Some(s) = self.streams.get_mut(&id) {
                    s.send_window += inc;
                    if s.send_window > WINDOW_MAX {
                        return Err(err(
                            FLOW_CONTROL_ERROR,
                            format!("WINDOW_UPDATE on stream {id} took its window past 2^31-1"),
                        ));
                    }
                    self.send_data(id);
                }
            }
            _ => {} // Unknown frame types are ignored (RFC 9113 §4.1).
        }
        Ok(())
    }

    fn setting(&mut self, key: u16, v: u32) -> Result<(), ConnError> {
        match key {
            1 => {
                // HEADER_TABLE_SIZE: the encoder's table may not exceed it.
                let size = (v as usize).min(TABLE_DEFAULT);
                self.enc.set_max_table_size(size);
                self.table_update = Some(size);
            }
            3 => self.peer_max_streams = v,
            4 => {
                if v as i64 > WINDOW_MAX {
                    return Err(err(
                        FLOW_CONTROL_ERROR,
                        format!("SETTINGS_INITIAL_WINDOW_SIZE {v} is past 2^31-1"),
                    ));
                }
                let delta = v as i64 - self.peer_initial_window;
                self.peer_initial_window = v as i64;
                for s in self.streams.values_mut() {
                    s.send_window += delta;
                }
            }
            5 => {
                if !(FRAME_MIN as u32..=(1 << 24) - 1).contains(&v) {
                    return Err(err(
                        PROTOCOL_ERROR,
                        format!("SETTINGS_MAX_FRAME_SIZE {v} is out of range"),
                    ));
                }
                self.peer_max_frame = v as usize;
            }
            _ => {}
        }
        Ok(())
    }

    fn header_block(
        &mut self,
        mut part: Partial,
        events: &mut Vec<Event>,
    ) -> Result<(), ConnError> {
        self.header_bytes.received_hpack += part.block.len() as u64;
        let mut fields = std::mem::take(&mut self.fields);
        fields.clear();
        let decoded = self.dec.decode(&mut part.block, &mut fields);
        let mut status = None;
        let mut plain = 0u64;
        for (n, v, _) in &fields {
            plain += (n.len() + v.len()) as u64;
            if n == b":status" {
                status = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<u16>().ok());
            }
        }
        self.fields = fields;
        decoded.map_err(|e| {
            err(
                COMPRESSION_ERROR,
                format!(
                    "the header block of stream {} does not decode: {e}",
                    part.id
                ),
            )
        })?;
        self.header_bytes.received_plain += plain;
        let Some(s) = self.streams.get_mut(&part.id) else {
            return Ok(()); // a stream reset or finished: decoded for the table
        };
        match status {
            // Informational (1xx): the final reply follows.
            Some(st) if st >= 200 => s.status = Some(st),
            Some(_) => {}
            None if s.status.is_none() => {
                return Err(err(
                    PROTOCOL_ERROR,
                    format!("HEADERS on stream {} without :status", part.id),
                ))
            }
            None => {} // trailers
        }
        if part.end_stream {
            return self.end_stream(part.id, events, "HEADERS");
        }
        Ok(())
    }

    fn end_stream(
        &mut self,
        id: u32,
        events: &mut Vec<Event>,
        what: &str,
    ) -> Result<(), ConnError> {
        let Some(s) = self.streams.remove(&id) else {
            return Ok(());
        };
        match s.status {
            Some(status) => {
                events.push(Event::Response { id, status });
                Ok(())
            }
            None => Err(err(
                PROTOCOL_ERROR,
                format!("{what} ended stream {id} before a final :status"),
            )),
        }
    }
}

/// A connection error; [`Connection::feed`] names its frame.
fn err(code: u32, what: String) -> ConnError {
    ConnError {
        code,
        frame: Cow::Borrowed(""),
        what,
    }
}

fn stream_id(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) & 0x7fff_ffff
}

/// The payload of a DATA or HEADERS frame without its padding.
fn unpad<'a>(flags: u8, p: &'a [u8], what: &str, id: u32) -> Result<&'a [u8], ConnError> {
    if flags & PADDED == 0 {
        return Ok(p);
    }
    let pad = *p.first().ok_or_else(|| {
        err(
            FRAME_SIZE_ERROR,
            format!("{what} on stream {id}: padded and empty"),
        )
    })? as usize;
    if pad + 1 > p.len() {
        return Err(err(
            PROTOCOL_ERROR,
            format!("{what} on stream {id}: padding longer than the frame"),
        ));
    }
    Ok(&p[1..p.len() - pad])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame as a server would send it.
    fn frame(kind: u8, flags: u8, id: u32, p: &[u8]) -> Vec<u8> {
        let mut f = (p.len() as u32).to_be_bytes()[1..].to_vec();
        f.extend_from_slice(&[kind, flags]);
        f.extend_from_slice(&id.to_be_bytes());
        f.extend_from_slice(p);
        f
    }

    fn settings(pairs: &[(u16, u32)]) -> Vec<u8> {
        let mut p = Vec::new();
        for (k, v) in pairs {
            p.extend_from_slice(&k.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        frame(SETTINGS, 0, 0, &p)
    }

    /// The frames of `bytes` as (type, flags, stream, payload).
    fn frames(mut bytes: &[u8]) -> Vec<(u8, u8, u32, Vec<u8>)> {
        let mut v = Vec::new();
        while bytes.len() >= 9 {
            let len = u32::from_be_bytes([0, bytes[0], bytes[1], bytes[2]]) as usize;
            v.push((
                bytes[3],
                bytes[4],
                stream_id(&bytes[5..9]),
                bytes[9..9 + len].to_vec(),
            ));
            bytes = &bytes[9 + len..];
        }
        assert!(bytes.is_empty(), "a partial frame");
        v
    }

    /// A connection past its preface, with the server's settings in.
    fn ready(server: &[(u16, u32)], local: Settings) -> Connection {
        let mut c = Connection::new(local);
        let mut ev = Vec::new();
        c.feed(&settings(server), &mut ev).unwrap();
        assert_eq!(ev, vec![Event::Ready]);
        let n = c.pending().len();
        c.consume(n);
        c
    }

    /// A connection with one stream open whose reply's HEADERS came, and
    /// the server's encoder.
    fn replying(local: Settings) -> (Connection, u32, loona_hpack::Encoder<'static>) {
        let mut c = ready(&[], local);
        let id = c.open(&get("/"));
        c.consume(c.pending().len());
        let mut enc = loona_hpack::Encoder::new();
        c.feed(
            &frame(HEADERS, END_HEADERS, id, &status(&mut enc, "200")),
            &mut Vec::new(),
        )
        .unwrap();
        (c, id, enc)
    }

    fn get(path: &str) -> Request {
        Request::new("GET", "http", "127.0.0.1:8080", path, &[], None)
    }

    fn status(enc: &mut loona_hpack::Encoder<'static>, code: &str) -> Vec<u8> {
        enc.encode([(&b":status"[..], code.as_bytes())])
    }

    #[test]
    fn the_preface_settings_and_window_open_the_connection() {
        let c = Connection::new(Settings {
            stream_window: 1 << 20,
            connection_window: 1 << 24,
            slow_read: false,
        });
        let out = c.pending();
        assert!(out.starts_with(PREFACE));
        let f = frames(&out[PREFACE.len()..]);
        assert_eq!(f[0].0, SETTINGS);
        // ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 2^20.
        assert_eq!(f[0].3, [0, 2, 0, 0, 0, 0, 0, 4, 0, 0x10, 0, 0]);
        assert_eq!((f[1].0, f[1].2), (WINDOW_UPDATE, 0));
        assert_eq!(f[1].3, ((1u32 << 24) - 65_535).to_be_bytes());
        assert!(!c.is_ready());
    }

    #[test]
    fn a_request_and_its_reply_in_any_split() {
        let mut c = ready(&[(3, 100)], Settings::default());
        // The server's SETTINGS were acknowledged.
        let req = get("/a");
        let id = c.open(&req);
        assert_eq!(id, 1);
        let f = frames(c.pending());
        assert_eq!(
            (f[0].0, f[0].1, f[0].2),
            (HEADERS, END_HEADERS | END_STREAM, 1)
        );
        let mut fields = Vec::new();
        loona_hpack::Decoder::new()
            .decode_with_cb(&f[0].3, |n, v| fields.push((n.to_vec(), v.to_vec())))
            .unwrap();
        assert_eq!(fields[0], (b":method".to_vec(), b"GET".to_vec()));
        assert_eq!(fields[3], (b":path".to_vec(), b"/a".to_vec()));
        assert!(c.header_bytes.sent_plain > 0 && c.header_bytes.sent_hpack > 0);
        let mut enc = loona_hpack::Encoder::new();
        let mut wire = frame(HEADERS, END_HEADERS, 1, &status(&mut enc, "200"));
        wire.extend(frame(DATA, END_STREAM, 1, b"hello"));
        // Byte by byte: nothing before the last byte, the reply at it.
        let mut ev = Vec::new();
        for (i, b) in wire.iter().enumerate() {
            c.feed(std::slice::from_ref(b), &mut ev).unwrap();
            assert_eq!(ev.is_empty(), i + 1 < wire.len());
        }
        assert_eq!(ev, vec![Event::Response { id: 1, status: 200 }]);
        assert_eq!(c.active(), 0);
    }

    /// Replies whose header blocks are Huffman-coded and index the dynamic
    /// table: RFC 7541's C.6 examples (302, then 307 naming three fields
    /// of the first by index), each counted in plain and HPACK bytes.
    #[test]
    fn huffman_coded_replies_and_the_dynamic_table() {
        let hex = |s: &str| -> Vec<u8> {
            let s: String = s.split_whitespace().collect();
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect()
        };
        let first = hex(
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
        );
        let second = hex("4883 640e ff c1 c0 bf");
        let mut c = ready(&[], Settings::default());
        let (a, b) = (c.open(&get("/")), c.open(&get("/")));
        let mut ev = Vec::new();
        c.feed(
            &frame(HEADERS, END_HEADERS | END_STREAM, a, &first),
            &mut ev,
        )
        .unwrap();
        c.feed(
            &frame(HEADERS, END_HEADERS | END_STREAM, b, &second),
            &mut ev,
        )
        .unwrap();
        assert_eq!(
            ev,
            vec![
                Event::Response { id: a, status: 302 },
                Event::Response { id: b, status: 307 }
            ]
        );
        // :status 302, cache-control private, date (29 octets), location
        // https://www.example.com; then the same with 307.
        let plain = (7 + 3) + (13 + 7) + (4 + 29) + (8 + 23);
        assert_eq!(c.header_bytes.received_plain, 2 * plain);
        assert_eq!(
            c.header_bytes.received_hpack,
            (first.len() + second.len()) as u64
        );
    }

    #[test]
    fn continuation_frames_carry_a_header_block_on_receive_and_send() {
        let mut c = ready(&[], Settings::default());
        let id = c.open(&get("/"));
        let mut enc = loona_hpack::Encoder::new();
        let long = "x".repeat(300);
        let block = enc.encode([
            (&b":status"[..], &b"404"[..]),
            (&b"x-long"[..], long.as_bytes()),
        ]);
        let (a, b) = block.split_at(10);
        let mut wire = frame(HEADERS, END_STREAM, id, a);
        wire.extend(frame(CONTINUATION, END_HEADERS, id, b));
        let mut ev = Vec::new();
        c.feed(&wire, &mut ev).unwrap();
        assert_eq!(ev, vec![Event::Response { id, status: 404 }]);
        // A frame of another stream inside the block breaks the connection.
        let id = c.open(&get("/"));
        let mut wire = frame(HEADERS, 0, id, &status(&mut enc, "200")[..1]);
        wire.extend(frame(PING, 0, 0, &[0; 8]));
        let e = c.feed(&wire, &mut Vec::new()).unwrap_err();
        assert_eq!(e.code, PROTOCOL_ERROR);
        assert!(e.what.contains("CONTINUATION expected"), "{e}");
        assert_eq!(e.frame, "PING");
        assert!(e.to_string().contains("caused by a PING frame"), "{e}");
        let f = frames(c.pending());
        assert_eq!(f.last().unwrap().0, GOAWAY);
        // Send side: a header block past the server's MAX_FRAME_SIZE.
        let mut c = ready(&[], Settings::default());
        let big = "v".repeat(40_000);
        let req = Request::new("GET", "http", "h", "/", &[("x-big".into(), big)], None);
        c.open(&req);
        let f = frames(c.pending());
        let kinds: Vec<(u8, u8)> = f.iter().map(|x| (x.0, x.1)).collect();
        assert_eq!(
            kinds,
            [
                (HEADERS, END_STREAM),
                (CONTINUATION, 0),
                (CONTINUATION, END_HEADERS)
            ]
        );
        assert!(f.iter().all(|x| x.3.len() <= FRAME_MIN));
    }

    #[test]
    fn received_data_is_given_back_by_window_updates() {
        let local = Settings {
            stream_window: 1000,
            connection_window: 100_000,
            slow_read: false,
        };
        let (mut c, id, mut enc) = replying(local);
        let mut ev = Vec::new();
        // 499 bytes: under half the stream window, nothing given back.
        c.feed(&frame(DATA, 0, id, &[0; 499]), &mut ev).unwrap();
        assert!(c.pending().is_empty());
        // 1 more: the stream's 500 go back.
        c.feed(&frame(DATA, 0, id, &[0; 1]), &mut ev).unwrap();
        let f = frames(c.pending());
        assert_eq!(
            f,
            vec![(WINDOW_UPDATE, 0, id, 500u32.to_be_bytes().to_vec())]
        );
        c.consume(c.pending().len());
        // Past the stream window: a flow-control error.
        let e = c
            .feed(&frame(DATA, 0, id, &[0; 1001]), &mut ev)
            .unwrap_err();
        assert_eq!(e.code, FLOW_CONTROL_ERROR);
        // The connection's window is replenished across streams.
        let mut c = ready(&[], local);
        let mut sent = 0u32;
        let mut updates = 0u32;
        for _ in 0..200 {
            let id = c.open(&get("/"));
            let mut wire = frame(HEADERS, END_HEADERS, id, &status(&mut enc, "200"));
            wire.extend(frame(DATA, END_STREAM, id, &[0; 900]));
            sent += 900;
            c.feed(&wire, &mut ev).unwrap();
            for f in frames(c.pending()) {
                if f.0 == WINDOW_UPDATE && f.2 == 0 {
                    updates += u32::from_be_bytes(f.3[..4].try_into().unwrap());
                }
            }
            c.consume(c.pending().len());
        }
        assert!(
            updates <= sent && sent - updates < 50_000,
            "{updates} of {sent}"
        );
    }

    #[test]
    fn a_slow_reader_gives_its_window_back_only_when_told() {
        let local = Settings {
            stream_window: 100,
            slow_read: true,
            ..Settings::default()
        };
        let (mut c, id, _) = replying(local);
        let mut ev = Vec::new();
        c.feed(&frame(DATA, 0, id, &[0; 100]), &mut ev).unwrap();
        // The whole window spent, nothing given back.
        assert!(c.pending().is_empty());
        assert_eq!(c.release(30), 30);
        assert_eq!(
            frames(c.pending()),
            vec![(WINDOW_UPDATE, 0, id, 30u32.to_be_bytes().to_vec())]
        );
        c.consume(c.pending().len());
        // 30 more may come, not 31.
        c.feed(&frame(DATA, 0, id, &[0; 30]), &mut ev).unwrap();
        assert_eq!(c.release(1000), 100);
        c.consume(c.pending().len());
        assert_eq!(c.release(1000), 0);
        assert!(c.pending().is_empty());
        let e = c.feed(&frame(DATA, 0, id, &[0; 101]), &mut ev).unwrap_err();
        assert_eq!(e.code, FLOW_CONTROL_ERROR);
    }

    #[test]
    fn a_body_waits_for_the_servers_window() {
        // The server's streams start with 10 bytes of window.
        let mut c = ready(&[(4, 10)], Settings::default());
        let req = Request::new("POST", "http", "h", "/", &[], Some(&[7u8; 25]));
        assert!(req
            .fields
            .contains(&(b"content-length".to_vec(), b"25".to_vec())));
        let id = c.open(&req);
        let data = |c: &Connection| -> Vec<usize> {
            frames(c.pending())
                .into_iter()
                .filter(|f| f.0 == DATA)
                .map(|f| f.3.len())
                .collect()
        };
        assert_eq!(data(&c), [10]);
        assert_eq!((c.flow_blocked, c.blocked_streams()), (1, 1));
        c.consume(c.pending().len());
        let mut ev = Vec::new();
        c.feed(&frame(WINDOW_UPDATE, 0, id, &8u32.to_be_bytes()), &mut ev)
            .unwrap();
        assert_eq!(data(&c), [8]);
        c.consume(c.pending().len());
        // A larger initial window from new settings applies to open streams.
        c.feed(&settings(&[(4, 100)]), &mut ev).unwrap();
        let f = frames(c.pending());
        assert_eq!(f.last().unwrap().0, DATA);
        assert_eq!(
            (f.last().unwrap().1, f.last().unwrap().3.len()),
            (END_STREAM, 7)
        );
        assert_eq!(c.blocked_streams(), 0);
    }

    #[test]
    fn ping_is_answered_and_settings_acknowledged() {
        let mut c = Connection::new(Settings::default());
        c.consume(c.pending().len());
        let mut ev = Vec::new();
        c.feed(&frame(PING, 0, 0, b"12345678"), &mut ev).unwrap();
        c.feed(&settings(&[(3, 2), (5, 20_000)]), &mut ev).unwrap();
        let f = frames(c.pending());
        assert_eq!(f[0], (PING, ACK, 0, b"12345678".to_vec()));
        assert_eq!((f[1].0, f[1].1), (SETTINGS, ACK));
        assert_eq!(c.max_streams(), 2);
        // Streams are clamped to the server's limit.
        assert!(c.can_open(100));
        c.open(&get("/"));
        c.open(&get("/"));
        assert!(!c.can_open(100));
        // A MAX_FRAME_SIZE out of range is an error.
        let e = c.feed(&settings(&[(5, 100)]), &mut ev).unwrap_err();
        assert_eq!(e.code, PROTOCOL_ERROR);
    }

    #[test]
    fn goaway_stops_new_streams_and_names_the_unprocessed() {
        let mut c = ready(&[], Settings::default());
        let ids: Vec<u32> = (0..4).map(|_| c.open(&get("/"))).collect();
        assert_eq!(ids, [1, 3, 5, 7]);
        let mut p = 3u32.to_be_bytes().to_vec();
        p.extend_from_slice(&NO_ERROR.to_be_bytes());
        let mut ev = Vec::new();
        c.feed(&frame(GOAWAY, 0, 0, &p), &mut ev).unwrap();
        assert_eq!(
            ev,
            vec![Event::GoAway {
                last_id: 3,
                code: NO_ERROR,
                unprocessed: vec![5, 7]
            }]
        );
        assert_eq!(c.active(), 2);
        assert!(!c.can_open(100));
        // A reset and an oversized frame.
        ev.clear();
        c.feed(
            &frame(RST_STREAM, 0, 1, &REFUSED_STREAM.to_be_bytes()),
            &mut ev,
        )
        .unwrap();
        assert_eq!(
            ev,
            vec![Event::Reset {
                id: 1,
                code: REFUSED_STREAM
            }]
        );
        let e = c
            .feed(&frame(DATA, 0, 3, &[0; FRAME_MIN + 1]), &mut ev)
            .unwrap_err();
        assert_eq!((e.code, &*e.frame), (FRAME_SIZE_ERROR, "DATA"));
        assert_eq!(error_name(e.code), "frame_size_error");
        assert_eq!(frame_name(0xfa), "type_0xfa");
    }

    #[test]
    fn connection_specific_fields_are_left_out() {
        let h = |n: &str, v: &str| (n.to_string(), v.to_string());
        let r = Request::new(
            "GET",
            "https",
            "a:1",
            "/p",
            &[
                h("Host", "b"),
                h("Connection", "close"),
                h("X-Y", "z"),
                h("User-Agent", ""),
            ],
            None,
        );
        let names: Vec<&[u8]> = r.fields.iter().map(|f| &f.0[..]).collect();
        assert_eq!(
            names,
            [&b":method"[..], b":scheme", b":authority", b":path", b"x-y"]
        );
        assert_eq!(r.fields[2].1, b"b");
    }
}
