//! The exchange: a connection's input in, every complete request at its
//! start answered, in order, into one output batch. [`Responder::answer`]
//! is the one request loop of every model: it parses each request
//! ([`parse_request`]), skips its body, has the
//! [`Responder`] build the response, counts its status and logs it; it
//! stops at a partial request, at a body still arriving, at a response that
//! closes the connection, or when the batch is full. A request that cannot
//! be framed is refused and the connection closed with a lingering close;
//! one that timed out part-way is answered 408 ([`Responder::timed_out`]).

use std::os::fd::RawFd;

use crate::conn::lifecycle::Expiry;
use crate::conn::stats::Counters;
use crate::content::response::{OutBatch, Responder, Via};
use crate::semantics::request::{as_http11, parse_request, Parsed, RequestEnd, Version};
use crate::semantics::status::Status;

/// What [`Responder::answer`] did with a buffer of requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    /// Bytes of input consumed (complete requests, bodies included; all of
    /// it when the connection closes).
    pub consumed: usize,
    /// Requests answered (a refusal included).
    pub answered: usize,
    /// The connection closes after this output.
    pub close: bool,
    /// Close with a lingering close: the client may still be sending (a
    /// refused request, a body not read).
    pub linger: bool,
}

/// Most pipelined responses gathered into one batch.
pub const MAX_BATCH: usize = 64;

impl Responder {
    /// Answer a request that timed out part-way with 408 (and log it, with
    /// its request line if that much of `partial`, the bytes received, had
    /// arrived).
    pub fn timed_out(&mut self, out: &mut OutBatch, via: Via, partial: &[u8]) {
        self.set_via(via);
        let st = Expiry::STATUS;
        let from = self.log_from(out);
        self.error(st, out, false, Version::Http11, false);
        self.log(via.fd, partial, st, out, from);
    }

    /// Answer the complete requests at the start of `input` into `out`, in
    /// order, counting each status in `counters`; stop at a partial request
    /// (or a body still arriving), at a response that closes the
    /// connection, or when the batch is full (it is then written before
    /// more are answered). A request's body is skipped (read and
    /// discarded: [`Request::end`](crate::Request::end)). The one request
    /// loop of every model. `via`, the connection, names the client in the
    /// access log, and says whether it is TLS (HSTS, the log's TLS fields)
    /// or plain (a 301 to HTTPS with `--redirect-https`).
    pub fn answer(
        &mut self,
        input: &[u8],
        max_header: usize,
        out: &mut OutBatch,
        closing: bool,
        counters: &mut Counters,
        via: Via,
    ) -> Answered {
        self.set_via(via);
        let fd = via.fd;
        let mut a = Answered {
            consumed: 0,
            answered: 0,
            close: false,
            linger: false,
        };
        while a.consumed < input.len() {
            let rest = &input[a.consumed..];
            let as_11;
            let mut parsed = parse_request(rest, max_header);
            if parsed == Parsed::Reject(Status::VersionNotSupported) {
                // HTTP/1.2 … 1.9: answered as 1.1 (RFC 9110 §2.5).
                if let Some(copy) = as_http11(rest, max_header) {
                    as_11 = copy;
                    parsed = parse_request(&as_11, max_header);
                }
            }
            let (req, end) = match parsed {
                Parsed::Complete(req) => (req, req.end(rest, max_header)),
                Parsed::Partial => break,
                Parsed::Reject(st) => {
                    self.refuse(st, rest, out, counters, fd, &mut a);
                    break;
                }
            };
            let (len, unread) = match end {
                RequestEnd::At(len) => (len, false),
                RequestEnd::Wait => break,
                RequestEnd::Unread => (rest.len(), true),
                RequestEnd::Malformed => {
                    self.refuse(Status::BadRequest, rest, out, counters, fd, &mut a);
                    break;
                }
            };
            let from = self.log_from(out);
            let (st, keep) = if self.redirects_to_https() {
                let keep = req.keep_alive && !closing && !unread;
                (
                    self.redirect_to_https(&req, &rest[..req.len], fd, out, keep),
                    keep,
                )
            } else {
                self.respond(&req, out, closing || unread)
            };
            counters.response(st);
            if self.logging() {
                self.log(fd, &rest[..req.len], st, out, from);
            }
            a.consumed += len;
            a.answered += 1;
            if !keep {
                a.close = true;
                a.linger = unread;
                break;
            }
            if out.responses >= MAX_BATCH || out.has_file() || out.head.len() > 16 * 1024 {
                break;
            }
        }
        a
    }

    /// Refuse the request at the start of `rest` with `st` and close: its
    /// end is not known, so nothing after it is read (all of `rest` is
    /// consumed) and the close lingers.
    fn refuse(
        &mut self,
        st: Status,
        rest: &[u8],
        out: &mut OutBatch,
        counters: &mut Counters,
        fd: RawFd,
        a: &mut Answered,
    ) {
        let from = self.log_from(out);
        // A refused HEAD gets the head of the error page only (RFC 9110
        // §9.3.2).
        let head_only = rest.starts_with(b"HEAD ");
        self.error(st, out, false, Version::Http11, head_only);
        counters.response(st);
        self.log(fd, rest, st, out, from);
        a.consumed += rest.len();
        a.answered += 1;
        a.close = true;
        a.linger = true;
    }
}
