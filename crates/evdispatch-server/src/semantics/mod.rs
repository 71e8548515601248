//! HTTP semantics (RFC 9110, RFC 9112), once, as pure functions: bytes and
//! header values in, verdicts out. No I/O, no files, no connections, so
//! the fuzz targets and the exhaustive checks run on them directly.
//!
//! * [`request`]: parsing a request head and framing its body.
//! * [`target`]: from a request target to a path beneath the root.
//! * [`range`]: `Range` against a representation's length.
//! * [`conditional`]: validators (entity tags, dates) and preconditions.
//! * [`encoding`]: `Accept-Encoding` against the variants a file has.
//! * [`status`]: the statuses sent, their reasons and error pages.
//!
//! May import: the standard library and outside crates only; nothing
//! else of this crate (not even `sys`). Every other layer imports this one.
//!
//! # Deliberate differences from nginx
//!
//! `tests/nginx_diff.rs` serves one tree with nginx and with this server and
//! compares the answers to a corpus of requests (multipart bodies byte for
//! byte, boundaries aside). Deliberate differences, each allowed by the
//! clause named: overlapping ranges (one coalesced range here, where nginx
//! sends them as separate parts; §14.2, §15.3.7.2); an invalid range such as `bytes=a-b` (ignored here, 416
//! there; §14.2); `bytes=0-` of an empty file (416 here, ignored there:
//! §14.1.1 makes it unsatisfiable); an invalid `If-Unmodified-Since` date (ignored here, 412
//! there; §13.1.4 says ignore); `If-Unmodified-Since` beside a matching
//! `If-Match` (not evaluated here, 412 there; §13.2.2); ranges of a
//! precompressed variant (served here with
//! `Accept-Ranges`, not by `gzip_static`; §14.1, §14.3); the `Location` of a
//! percent-encoded directory name (kept as sent here, decoded there;
//! RFC 3986 §6.2.2.2); a `Transfer-Encoding` whose final coding is not
//! `chunked` (400 here, as RFC 9112 §6.3 requires; 501 there, §6.1); a
//! body that does not fit the read buffer with its head, or one held back
//! for `Expect: 100-continue` (answered without it and the connection
//! closed here; read and discarded there, after a `100 Continue`; RFC 9110
//! §9.3.1, §10.1.1, RFC 9112 §9.5); `/%2e%2e/…` (403 here, 400 there;
//! both refuse it); `OPTIONS` of a file (200 with `Allow` here, 405
//! there; RFC 9110 §9.3.7); a chunk-size line with whitespace after the
//! size, a bare `;` or a name that is not a token (400 here, where nginx
//! skips to the end of the line; RFC 9112 §7.1.1); and a raw byte that is
//! not a URI's in the target, such as UTF-8 or `|` (400 here, taken
//! there; RFC 9112 §3.2, RFC 3986 §2). Not in that corpus: a method
//! longer than the head limit (501 here, 414 there: the method is not a
//! URI; RFC 9110 §9.1). Where the RFCs are strict, so is
//! [`request`]: an empty `Host` (400, as nginx), chunk extensions exactly
//! as their grammar has them, the target's bytes those of a URI.

pub mod conditional;
pub mod encoding;
pub mod range;
pub mod request;
pub mod status;
pub mod target;

/// Every word of exactly `len` pieces (with repetition): the exhaustive
/// checks of the pure parsers run over these.
#[cfg(test)]
pub(crate) fn each_word(pieces: &[&str], len: usize, mut f: impl FnMut(String)) {
    let mut idx = vec![0usize; len];
    loop {
        f(idx.iter().map(|&i| pieces[i]).collect());
        let mut k = 0;
        loop {
            if k == idx.len() {
                return;
            }
            idx[k] += 1;
            if idx[k] < pieces.len() {
                break;
            }
            idx[k] = 0;
            k += 1;
        }
    }
}
