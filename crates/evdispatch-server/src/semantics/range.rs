//! `Range: bytes=…` (RFC 9110 §14): a pure function from the header and the
//! representation's length to what to send.
//!
//! * A header that is not a valid byte-range set (another unit, a range
//!   whose last position is before its first, junk) is ignored and the whole
//!   representation sent with 200: an origin server ignores a range unit it
//!   does not understand and may ignore Range altogether (RFC 9110 §14.2);
//!   an invalid `ranges-specifier` (§14.1.1) makes no range request. Ranges
//!   on a method other than GET never get here (HEAD answers GET's headers).
//! * A header naming more than [`MAX_RANGES`] ranges is ignored too, as
//!   nginx's `max_ranges` does: a cheap bound on the work one request can ask
//!   for.
//! * When no range is satisfiable (§14.1.1: a first position at or past the
//!   end, a zero-length suffix): 416 with `Content-Range: bytes */LEN`. Of
//!   an empty file only a suffix range of non-zero length is satisfiable
//!   (§14.1.2); no 206 can describe an empty range, so such a set is
//!   ignored and the (empty) file sent with 200, as nginx does; `bytes=0-`
//!   of an empty file is 416.
//! * The satisfiable ranges are coalesced when they overlap or touch
//!   (§14.2 allows a server to coalesce them; §15.3.7.2 too, "regardless of
//!   the order" they were asked in). If one range remains, 206 with that
//!   range. If several disjoint ranges remain, 206 with a
//!   `multipart/byteranges` body (§14.6, §15.3.7.2), as nginx answers: one
//!   part per range, in the order the client asked for them (§15.3.7.2:
//!   SHOULD; a coalesced range takes the place of its first member).
//! * Many small ranges (§14.2 lets a server ignore or refuse "many small
//!   ranges"): the cap of [`MAX_RANGES`] is the answer. At most 16 parts
//!   cost at most 16 part headers (about 100 bytes each) on top of at most
//!   the file's own length (coalesced ranges are disjoint, so their bytes
//!   add up to no more than the file: nginx's own test, ranges adding up to
//!   more than the file, can never trip here), so no further refusal or
//!   gap-coalescing is needed; the answer stays the one nginx gives.
//!
//! # As the server applies them
//!
//! * **Ranges.** `Accept-Ranges: bytes` on every 200 of a file. One range
//!   (`a-b`, `a-`, `-n`) answers 206 with `Content-Range: bytes a-b/LEN`;
//!   none satisfiable 416 with `Content-Range: bytes */LEN` (but `-n` of an
//!   empty file, satisfiable and empty, §14.1.2: 200, as nginx); overlapping or
//!   touching ranges are coalesced (§14.2 allows it). Several disjoint ranges
//!   answer 206 `multipart/byteranges` (§14.6) as nginx does: a random
//!   20-digit boundary, each part with `Content-Type` and `Content-Range`,
//!   in the order asked for, `Content-Length` computed ahead (HEAD: the same
//!   head). A set of more than [`MAX_RANGES`] (16, as nginx's `max_ranges`)
//!   gets the whole file with 200, the answer to "many small ranges" §14.2
//!   allows (at most 16 part headers of overhead otherwise), as does any
//!   invalid header (another unit, `5-1`, junk; §14.2 lets a server ignore
//!   it). `If-Range` applies the range only
//!   when its entity tag matches strongly or its date equals
//!   `Last-Modified` exactly (§13.1.5). HEAD answers GET's headers, 206 and
//!   416 included. A range of a cached file is a slice of the cached bytes;
//!   of a large file, `sendfile` from the range's offset (a multipart
//!   answer: part header, `sendfile` segment, next part header…) on every model
//!   (uring-completion included: it waits for writability with a one-shot
//!   poll when the socket is full), never a copy through user space.

/// Most ranges one `Range` header may name; more and the header is ignored.
pub const MAX_RANGES: usize = 16;

/// What to send for a `Range` header.
// `Multi` holds its ranges inline (about 260 bytes): the answer lives on the
// stack for one request, where a box would be an allocation per request.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeAnswer {
    /// The header is ignored: send everything with 200.
    Full,
    /// 206 with the bytes `start..end` (end exclusive, never empty).
    Single {
        /// First byte sent.
        start: u64,
        /// One past the last byte sent.
        end: u64,
    },
    /// 206 `multipart/byteranges`: two or more disjoint ranges, in the
    /// order the client named them.
    Multi(Ranges),
    /// 416: nothing satisfiable.
    Unsatisfiable,
}

/// Two to [`MAX_RANGES`] disjoint, non-adjacent, non-empty ranges
/// `start..end` of a representation, in the order they were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranges {
    spans: [(u64, u64); MAX_RANGES],
    len: usize,
}

impl Ranges {
    /// The ranges as `(start, end)` pairs (end exclusive).
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.spans[..self.len]
    }
}

/// Evaluate the value of a `Range` header against a representation of `len`
/// bytes.
pub fn evaluate_range(header: &[u8], len: u64) -> RangeAnswer {
    let Some(set) = strip_unit(header) else {
        return RangeAnswer::Full;
    };
    // (start, end, the position of the first spec it came from)
    let mut found = [(0u64, 0u64, 0usize); MAX_RANGES];
    let mut satisfiable = 0;
    let mut specs = 0;
    for spec in set.split(|&b| b == b',') {
        let spec = trim_ows(spec);
        if spec.is_empty() {
            continue; // RFC 9110 §5.6.1: empty list elements are ignored.
        }
        specs += 1;
        if specs > MAX_RANGES {
            return RangeAnswer::Full;
        }
        let Some(r) = parse_spec(spec) else {
            return RangeAnswer::Full;
        };
        if len == 0 && matches!(r, Spec::Suffix(n) if n > 0) {
            // Satisfiable (§14.1.2), but selects nothing: the whole, empty,
            // representation.
            return RangeAnswer::Full;
        }
        if let Some((start, end)) = resolve(r, len) {
            found[satisfiable] = (start, end, specs);
            satisfiable += 1;
        }
    }
    if specs == 0 {
        return RangeAnswer::Full;
    }
    let found = &mut found[..satisfiable];
    if found.is_empty() {
        return RangeAnswer::Unsatisfiable;
    }
    // Coalesce what overlaps or touches, in place.
    found.sort_unstable();
    let mut kept = 0;
    for i in 1..found.len() {
        let (s, e, at) = found[i];
        let last = &mut found[kept];
        if s <= last.1 {
            last.1 = last.1.max(e);
            last.2 = last.2.min(at);
        } else {
            kept += 1;
            found[kept] = (s, e, at);
        }
    }
    let found = &mut found[..=kept];
    if let [(start, end, _)] = *found {
        return RangeAnswer::Single { start, end };
    }
    found.sort_unstable_by_key(|r| r.2);
    let mut ranges = Ranges {
        spans: [(0, 0); MAX_RANGES],
        len: found.len(),
    };
    for (span, &(s, e, _)) in ranges.spans.iter_mut().zip(found.iter()) {
        *span = (s, e);
    }
    RangeAnswer::Multi(ranges)
}

/// `bytes=` (the unit is case-insensitive, §14.1) stripped; `None` for
/// another unit or no `=`.
fn strip_unit(h: &[u8]) -> Option<&[u8]> {
    let (unit, rest) = h.split_at_checked(6)?;
    unit.eq_ignore_ascii_case(b"bytes=").then_some(rest)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spec {
    /// `first-` or `first-last` (`last` saturates at `u64::MAX`).
    From(u64, Option<u64>),
    /// `-n`.
    Suffix(u64),
}

fn parse_spec(spec: &[u8]) -> Option<Spec> {
    let dash = spec.iter().position(|&b| b == b'-')?;
    let (a, b) = (&spec[..dash], &spec[dash + 1..]);
    if a.is_empty() {
        return Some(Spec::Suffix(digits(b)?));
    }
    let first = digits(a)?;
    if b.is_empty() {
        return Some(Spec::From(first, None));
    }
    let last = digits(b)?;
    // §14.1.1: a last position below the first makes the set invalid.
    (last >= first).then_some(Spec::From(first, Some(last)))
}

/// One or more ASCII digits as a number, saturating (a position past any
/// file is still a valid position).
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// The bytes `start..end` a spec selects of `len`, if satisfiable.
fn resolve(spec: Spec, len: u64) -> Option<(u64, u64)> {
    match spec {
        Spec::From(first, last) if first < len => {
            let end = last.map_or(len, |l| l.saturating_add(1).min(len));
            Some((first, end))
        }
        Spec::From(..) => None,
        Spec::Suffix(n) if n > 0 && len > 0 => Some((len - n.min(len), len)),
        Spec::Suffix(_) => None,
    }
}

/// Strip optional whitespace (spaces and tabs) at both ends.
pub(crate) fn trim_ows(s: &[u8]) -> &[u8] {
    let is_ows = |b: &u8| *b == b' ' || *b == b'\t';
    let start = s.iter().position(|b| !is_ows(b)).unwrap_or(s.len());
    let end = s.iter().rposition(|b| !is_ows(b)).map_or(start, |e| e + 1);
    &s[start..end]
}

#[cfg(test)]
mod tests {
    use super::RangeAnswer::*;
    use super::*;

    fn r(h: &str, len: u64) -> RangeAnswer {
        evaluate_range(h.as_bytes(), len)
    }

    #[test]
    fn single_ranges() {
        assert_eq!(r("bytes=0-4", 10), Single { start: 0, end: 5 });
        assert_eq!(r("bytes=5-", 10), Single { start: 5, end: 10 });
        assert_eq!(r("bytes=-3", 10), Single { start: 7, end: 10 });
        assert_eq!(r("bytes=-30", 10), Single { start: 0, end: 10 });
        assert_eq!(r("bytes=8-100", 10), Single { start: 8, end: 10 });
        assert_eq!(r("BYTES=9-9", 10), Single { start: 9, end: 10 });
        assert_eq!(r("bytes= 1-2 ,", 10), Single { start: 1, end: 3 });
        assert_eq!(
            r("bytes=0-99999999999999999999999", 10),
            Single { start: 0, end: 10 }
        );
    }

    #[test]
    fn unsatisfiable() {
        assert_eq!(r("bytes=10-", 10), Unsatisfiable);
        assert_eq!(r("bytes=10-20", 10), Unsatisfiable);
        assert_eq!(r("bytes=-0", 10), Unsatisfiable);
        assert_eq!(r("bytes=0-0", 0), Unsatisfiable);
        assert_eq!(r("bytes=0-", 0), Unsatisfiable);
        assert_eq!(r("bytes=-0", 0), Unsatisfiable);
        assert_eq!(r("bytes=20-30,40-", 10), Unsatisfiable);
        assert_eq!(r("bytes=99999999999999999999999-", 10), Unsatisfiable);
    }

    #[test]
    fn a_suffix_of_an_empty_file_is_the_whole_empty_file() {
        // RFC 9110 §14.1.2: the only satisfiable range of an empty
        // representation; no 206 can carry it.
        assert_eq!(r("bytes=-5", 0), Full);
        assert_eq!(r("bytes=-1", 0), Full);
        assert_eq!(r("bytes=0-0,-1", 0), Full);
    }

    #[test]
    fn malformed_is_ignored() {
        for h in [
            "bytes=",
            "bytes=,",
            "bytes=5-1",
            "bytes=a-b",
            "bytes=1-2-3",
            "bytes=--1",
            "bytes 0-1",
            "items=0-1",
            "bytes=0-1,x",
            "bytes=+1-2",
            "bytes=0x1-2",
            "",
        ] {
            assert_eq!(r(h, 10), Full, "{h}");
        }
    }

    #[test]
    fn coalescing_and_limits() {
        // Overlapping and adjacent ranges become one.
        assert_eq!(r("bytes=0-5,3-8", 10), Single { start: 0, end: 9 });
        assert_eq!(r("bytes=4-5,0-3", 10), Single { start: 0, end: 6 });
        assert_eq!(r("bytes=0-1,-9", 10), Single { start: 0, end: 10 });
        // An unsatisfiable one among satisfiable ones is left out.
        assert_eq!(r("bytes=0-1,50-60", 10), Single { start: 0, end: 2 });
        // Disjoint ranges: multipart, in the order asked for; a coalesced
        // range takes the place of its first member.
        let multi = |h: &str, len| match r(h, len) {
            Multi(m) => m.as_slice().to_vec(),
            other => panic!("{h}: {other:?}"),
        };
        assert_eq!(multi("bytes=0-1,5-6", 10), [(0, 2), (5, 7)]);
        assert_eq!(multi("bytes=5-6,0-1", 10), [(5, 7), (0, 2)]);
        assert_eq!(multi("bytes=8-,0-0,1-1,50-", 10), [(8, 10), (0, 2)]);
        assert_eq!(multi("bytes=-2,0-0,4-5,5-6", 10), [(8, 10), (0, 1), (4, 7)]);
        // At the limit still evaluated; past it ignored.
        let at: Vec<String> = (0..MAX_RANGES).map(|i| format!("{i}-{i}")).collect();
        assert_eq!(
            r(&format!("bytes={}", at.join(",")), 100),
            Single {
                start: 0,
                end: MAX_RANGES as u64
            }
        );
        let past: Vec<String> = (0..=MAX_RANGES).map(|i| format!("{i}-{i}")).collect();
        assert_eq!(r(&format!("bytes={}", past.join(",")), 100), Full);
    }

    #[test]
    fn every_answer_lies_within_the_file() {
        // Every header of up to four pieces from a troublesome alphabet,
        // against lengths around the numbers used: never out of bounds,
        // never empty, never a panic.
        let pieces = [
            "bytes=",
            "0",
            "1",
            "9",
            "-",
            ",",
            " ",
            "x",
            "18446744073709551616",
        ];
        crate::semantics::each_word(&pieces, 4, |h| {
            for len in [0u64, 1, 2, 9, 10, 100] {
                match evaluate_range(h.as_bytes(), len) {
                    Single { start, end } => {
                        assert!(start < end && end <= len, "{h} {len}: {start}..{end}")
                    }
                    Multi(m) => {
                        let mut spans = m.as_slice().to_vec();
                        assert!(spans.len() >= 2, "{h} {len}: {spans:?}");
                        spans.sort_unstable();
                        for w in spans.windows(2) {
                            assert!(w[0].1 < w[1].0, "{h} {len}: touching {spans:?}");
                        }
                        for (start, end) in spans {
                            assert!(start < end && end <= len, "{h} {len}: {start}..{end}")
                        }
                    }
                    Unsatisfiable | Full => {}
                }
            }
        });
    }
}
