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
//!   end, a zero-length suffix, any range of an empty file): 416 with
//!   `Content-Range: bytes */LEN`.
//! * The satisfiable ranges are coalesced (§14.2 allows a server to coalesce
//!   ranges that overlap or touch). If one range remains, 206 with that
//!   range. If several disjoint ranges remain, the whole representation is
//!   sent with 200: §14.2 allows a server to ignore Range, and §15.3.7.3
//!   lists the multipart answer as what a server sends *if* it answers with
//!   several ranges, not an obligation. Browsers and download tools ask for
//!   one range at a time; a multipart answer would need a boundary per part
//!   and, for files sent with `sendfile`, one descriptor per part. nginx
//!   answers multipart here: a deliberate difference (see the differential
//!   test).

/// Most ranges one `Range` header may name; more and the header is ignored.
pub const MAX_RANGES: usize = 16;

/// What to send for a `Range` header.
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
    /// 416: nothing satisfiable.
    Unsatisfiable,
}

/// Evaluate the value of a `Range` header against a representation of `len`
/// bytes.
pub fn evaluate_range(header: &[u8], len: u64) -> RangeAnswer {
    let Some(set) = strip_unit(header) else {
        return RangeAnswer::Full;
    };
    let mut found = [(0u64, 0u64); MAX_RANGES];
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
        if let Some(r) = resolve(r, len) {
            found[satisfiable] = r;
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
    found.sort_unstable();
    let (start, mut end) = found[0];
    for &(s, e) in &found[1..] {
        if s > end {
            return RangeAnswer::Full; // two disjoint ranges: see the module docs
        }
        end = end.max(e);
    }
    RangeAnswer::Single { start, end }
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
        assert_eq!(r("bytes=-5", 0), Unsatisfiable);
        assert_eq!(r("bytes=20-30,40-", 10), Unsatisfiable);
        assert_eq!(r("bytes=99999999999999999999999-", 10), Unsatisfiable);
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
        // Disjoint ranges: the whole representation.
        assert_eq!(r("bytes=0-1,5-6", 10), Full);
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
        crate::each_word(&pieces, 4, |h| {
            for len in [0u64, 1, 2, 9, 10, 100] {
                match evaluate_range(h.as_bytes(), len) {
                    Single { start, end } => {
                        assert!(start < end && end <= len, "{h} {len}: {start}..{end}")
                    }
                    Unsatisfiable | Full => {}
                }
            }
        });
    }
}
