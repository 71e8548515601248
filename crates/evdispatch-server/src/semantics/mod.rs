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

pub(crate) mod conditional;
pub(crate) mod encoding;
pub(crate) mod range;
pub(crate) mod request;
pub(crate) mod status;
pub(crate) mod target;

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
