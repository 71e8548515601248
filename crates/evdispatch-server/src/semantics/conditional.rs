//! Validators and preconditions (RFC 9110 §8.8, §13): the entity tag of a
//! file, `If-Match`, `If-Unmodified-Since`, `If-None-Match`,
//! `If-Modified-Since` and `If-Range`. Pure
//! functions over the raw header values; nothing allocates.
//!
//! The entity tag is strong and built as nginx builds its own, from the
//! modification time and the size in hex, `"mtime-size"`, with `-gz` or `-br`
//! appended for a precompressed variant (so the encoded representation never
//! shares the identity one's tag, §8.8.3). It comes from the metadata the file
//! cache already holds: no `stat` per request.
//!
//! The order is §13.2.2's: first `If-Match` when present (strong
//! comparison: a weak tag never matches; `*` matches any file; garbage
//! matches nothing), else `If-Unmodified-Since` (an invalid date is
//! ignored, §13.1.4); either false gives 412. Then `If-None-Match` when
//! present (weak comparison,
//! `*` matches any file; a list element that is not an entity tag is
//! skipped, so a garbage header matches nothing), else `If-Modified-Since`
//! (an unparsable date is ignored); a match gives 304 for GET and HEAD.
//! Then `If-Range` decides whether `Range` applies: an entity tag must match
//! strongly (a weak tag never does, §13.1.5), a date must equal
//! `Last-Modified` exactly; anything else means the whole file with 200.
//!
//! # As the server applies them
//!
//! * **Validators.** Every file answer (200, 206, 304) carries
//!   `Last-Modified` and a strong `ETag` built as nginx builds it,
//!   `"mtime-size"` in hex (`-gz`/`-br` appended for a precompressed
//!   variant), from the metadata the cache holds: no `stat` per request. A
//!   modification time in the future is sent as the second the file was
//!   looked up, never later than `Date` (§8.8.2.1), and the date
//!   preconditions compare that same value.
//! * **Preconditions** in §13.2.2 order: `If-Match` (a list or `*`, strong
//!   comparison: a weak tag never matches, §13.1.1) and, only when it is
//!   absent, `If-Unmodified-Since` (holds when the file is not newer than
//!   the date; an invalid date is ignored, §13.1.4): either false answers
//!   412 (with `Vary` when the file has variants; GET and HEAD alike, as
//!   nginx). Then `If-None-Match` (a list, `*`, weak comparison; elements
//!   that are not entity tags are skipped) and, only when it is absent,
//!   `If-Modified-Since` (not modified when the file is not newer than the
//!   date, §13.1.3; an unparsable date is ignored). A match answers 304 with
//!   `ETag`, `Last-Modified`, `Vary` when the file has variants, and no body.
//!   A `--listing` page, which has neither tag nor date, is evaluated the
//!   same way: `If-Match: *` holds and any tag fails (412),
//!   `If-None-Match: *` answers 304 and any tag does not, the dates are
//!   ignored (as nginx).

use std::time::{SystemTime, UNIX_EPOCH};

use crate::semantics::request::FieldLines;

/// Which representation of a file: the file itself or a precompressed
/// variant beside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// The file as it is.
    Identity,
    /// `f.br` sent for `f` with `Content-Encoding: br`.
    Br,
    /// `f.gz` sent for `f` with `Content-Encoding: gzip`.
    Gzip,
}

impl Coding {
    /// The suffix of the variant's file name (empty for identity).
    pub fn suffix(self) -> &'static [u8] {
        match self {
            Coding::Identity => b"",
            Coding::Br => b".br",
            Coding::Gzip => b".gz",
        }
    }

    /// The `Content-Encoding` token (empty for identity).
    pub fn token(self) -> &'static [u8] {
        match self {
            Coding::Identity => b"",
            Coding::Br => b"br",
            Coding::Gzip => b"gzip",
        }
    }

    /// This coding's bit in a set of available variants.
    pub fn bit(self) -> u8 {
        match self {
            Coding::Identity => 0,
            Coding::Br => 1,
            Coding::Gzip => 2,
        }
    }
}

/// A strong entity tag, quotes included, formatted on the stack.
#[derive(Clone, Copy)]
pub struct ETag {
    buf: [u8; 40],
    len: u8,
}

impl std::fmt::Debug for ETag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

impl ETag {
    /// The tag of a file modified at `mtime` (seconds) holding `size` bytes,
    /// as representation `coding`.
    pub fn new(mtime: i64, size: u64, coding: Coding) -> ETag {
        let mut t = ETag {
            buf: [0; 40],
            len: 0,
        };
        t.push(b"\"");
        t.hex(mtime.max(0) as u64);
        t.push(b"-");
        t.hex(size);
        if coding != Coding::Identity {
            t.push(b"-");
            t.push(&coding.suffix()[1..]);
        }
        t.push(b"\"");
        t
    }

    fn push(&mut self, s: &[u8]) {
        let at = self.len as usize;
        self.buf[at..at + s.len()].copy_from_slice(s);
        self.len += s.len() as u8;
    }

    fn hex(&mut self, v: u64) {
        let digits = (64 - v.leading_zeros()).div_ceil(4).max(1) as usize;
        let at = self.len as usize;
        for i in 0..digits {
            let d = ((v >> (4 * (digits - 1 - i))) & 0xf) as u8;
            self.buf[at + i] = if d < 10 { b'0' + d } else { b'a' + d - 10 };
        }
        self.len += digits as u8;
    }

    /// The tag as sent, `"…"`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }
}

/// What the preconditions of a GET or HEAD decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precondition {
    /// Answer 412: `If-Match` or `If-Unmodified-Since` does not hold.
    Failed,
    /// Answer 304.
    NotModified,
    /// Answer normally.
    Proceed,
}

/// The raw values of a request's precondition headers (RFC 9110 §13.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conditions<'a> {
    /// `If-Match`.
    pub if_match: FieldLines<'a>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<&'a [u8]>,
    /// `If-None-Match`.
    pub if_none_match: FieldLines<'a>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<&'a [u8]>,
}

impl<'a> Conditions<'a> {
    /// The precondition headers of `req`.
    pub fn of(req: &crate::semantics::request::Request<'a>) -> Self {
        Conditions {
            if_match: req.if_match,
            if_unmodified_since: req.if_unmodified_since,
            if_none_match: req.if_none_match,
            if_modified_since: req.if_modified_since,
        }
    }

    /// True when the request has none of them.
    pub fn is_empty(&self) -> bool {
        *self == Conditions::default()
    }
}

/// Evaluate the preconditions of a GET or HEAD in RFC 9110 §13.2.2 order:
/// `If-Match` (strong comparison, `*` matches any representation), else
/// `If-Unmodified-Since` (true when the file is not newer than the date; an
/// invalid date is ignored, §13.1.4), either false: 412; then
/// `If-None-Match`, else `If-Modified-Since`, either false: 304.
/// `validators`: the representation's entity tag and modification time;
/// `None` for one that has neither (a listing): no tag can match it, but
/// `*` does, and the dates are ignored (§13.1.3, §13.1.4).
pub fn evaluate(c: &Conditions<'_>, validators: Option<(&ETag, i64)>) -> Precondition {
    let (etag, mtime) = (validators.map(|v| v.0), validators.map(|v| v.1));
    let holds = match (c.if_match.is_absent(), c.if_unmodified_since) {
        (false, _) => lists_tag(&c.if_match, etag, false),
        (true, Some(ius)) => match (parse_date(ius), mtime) {
            (Some(until), Some(mtime)) => mtime <= until,
            _ => true,
        },
        (true, None) => true,
    };
    if !holds {
        return Precondition::Failed;
    }
    let not_modified = match (c.if_none_match.is_absent(), c.if_modified_since) {
        (false, _) => lists_tag(&c.if_none_match, etag, true),
        (true, Some(ims)) => match (parse_date(ims), mtime) {
            (Some(since), Some(mtime)) => mtime <= since,
            _ => false,
        },
        (true, None) => false,
    };
    if not_modified {
        Precondition::NotModified
    } else {
        Precondition::Proceed
    }
}

/// True when a line of the field names `etag` (one list split over lines
/// means the same as on one line: RFC 9110 §5.3).
fn lists_tag(field: &FieldLines<'_>, etag: Option<&ETag>, weak: bool) -> bool {
    field.lines().any(|line| line_lists_tag(line, etag, weak))
}

/// True when the list of entity tags `value` (or `*`) names `etag`: with
/// the weak comparison (§8.8.3.2) if `weak`, else the strong one (a weak tag
/// never matches). Elements that are not entity tags are skipped, so a
/// garbage value names nothing, and nothing but `*` names a representation
/// without a tag (`None`).
fn line_lists_tag(value: &[u8], etag: Option<&ETag>, weak: bool) -> bool {
    let value = crate::semantics::range::trim_ows(value);
    if value == b"*" {
        return true;
    }
    let Some(etag) = etag else {
        return false;
    };
    let ours = opaque(etag.as_bytes());
    let mut rest = value;
    loop {
        // Skip separators and whitespace between elements.
        let start = rest
            .iter()
            .position(|&b| !matches!(b, b',' | b' ' | b'\t'))
            .unwrap_or(rest.len());
        rest = &rest[start..];
        if rest.is_empty() {
            return false;
        }
        let (tag, is_weak) = match rest.strip_prefix(b"W/") {
            Some(t) => (t, true),
            None => (rest, false),
        };
        if tag.first() == Some(&b'"') {
            if let Some(close) = tag[1..].iter().position(|&b| b == b'"') {
                if &tag[1..1 + close] == ours && (weak || !is_weak) {
                    return true;
                }
                rest = &tag[close + 2..];
                continue;
            }
        }
        // Not an entity tag: skip to the next element.
        match rest.iter().position(|&b| b == b',') {
            Some(c) => rest = &rest[c + 1..],
            None => return false,
        }
    }
}

/// True when `If-Range: value` holds, so the `Range` header applies.
pub fn if_range_holds(value: &[u8], etag: &ETag, mtime: i64) -> bool {
    let value = crate::semantics::range::trim_ows(value);
    match value.first() {
        Some(b'"') => value == etag.as_bytes(),
        Some(b'W') if value.starts_with(b"W/") => false,
        Some(_) => parse_date(value) == Some(mtime),
        None => false,
    }
}

/// The tag without its quotes.
fn opaque(tag: &[u8]) -> &[u8] {
    &tag[1..tag.len() - 1]
}

/// An HTTP date as whole seconds since the epoch.
pub fn parse_date(raw: &[u8]) -> Option<i64> {
    let s = std::str::from_utf8(raw).ok()?;
    let t = httpdate::parse_http_date(s).ok()?;
    Some(epoch_secs(t) as i64)
}

/// Whole seconds since the epoch of `t`.
pub fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LM: &str = "Sun, 06 Nov 1994 08:49:37 GMT";
    const MT: i64 = 784111777;

    fn tag() -> ETag {
        ETag::new(MT, 6144, Coding::Identity)
    }

    #[test]
    fn etag_shape() {
        assert_eq!(tag().as_bytes(), b"\"2ebc98a1-1800\"");
        assert_eq!(
            ETag::new(MT, 6144, Coding::Gzip).as_bytes(),
            b"\"2ebc98a1-1800-gz\""
        );
        assert_eq!(ETag::new(0, 0, Coding::Br).as_bytes(), b"\"0-0-br\"");
        let big = ETag::new(i64::MAX, u64::MAX, Coding::Gzip);
        assert_eq!(big.as_bytes().len(), 2 + 16 + 1 + 16 + 3);
    }

    #[test]
    fn if_none_match_lists_weak_and_garbage() {
        let t = tag();
        for yes in [
            "\"2ebc98a1-1800\"",
            "*",
            " * ",
            "W/\"2ebc98a1-1800\"",
            "\"x\", \"2ebc98a1-1800\"",
            "junk, W/\"2ebc98a1-1800\"",
            ",,\"a\",\t\"2ebc98a1-1800\"",
        ] {
            assert!(
                lists_tag(&FieldLines::one(Some(yes.as_bytes())), Some(&t), true),
                "{yes}"
            );
        }
        for no in [
            "\"2ebc98a1-1801\"",
            "2ebc98a1-1800",
            "\"2ebc98a1-1800",
            "W/",
            "",
            "**",
            "\"\"",
            "\"2ebc98a1-1800-gz\"",
            "garbage \"",
        ] {
            assert!(
                !lists_tag(&FieldLines::one(Some(no.as_bytes())), Some(&t), true),
                "{no}"
            );
        }
    }

    #[test]
    fn precondition_order() {
        let t = tag();
        const TAG: &[u8] = b"\"2ebc98a1-1800\"";
        assert_eq!(t.as_bytes(), TAG);
        let nm = Precondition::NotModified;
        let go = Precondition::Proceed;
        let no = Precondition::Failed;
        let inm_ims = |inm: Option<&'static [u8]>, ims: Option<&'static [u8]>| Conditions {
            if_none_match: FieldLines::one(inm),
            if_modified_since: ims,
            ..Conditions::default()
        };
        let e = |c: Conditions<'_>, mtime| evaluate(&c, Some((&t, mtime)));
        let lm = Some(LM.as_bytes());
        assert_eq!(e(inm_ims(None, lm), MT), nm);
        assert_eq!(e(inm_ims(None, lm), MT + 1), go);
        assert_eq!(e(inm_ims(None, Some(b"garbage")), MT), go);
        // If-None-Match present: If-Modified-Since is not looked at.
        assert_eq!(e(inm_ims(Some(b"\"nope\""), lm), MT), go);
        assert_eq!(e(inm_ims(Some(b"garbage"), lm), MT), go);
        let old = Some(&b"Sun, 06 Nov 1980 08:49:37 GMT"[..]);
        assert_eq!(e(inm_ims(Some(TAG), old), MT), nm);
        assert_eq!(e(Conditions::default(), MT), go);
        assert!(Conditions::default().is_empty());
        assert!(!inm_ims(None, lm).is_empty());

        // If-Match, else If-Unmodified-Since, before the others.
        let im_ius = |im: Option<&'static [u8]>, ius: Option<&'static [u8]>| Conditions {
            if_match: FieldLines::one(im),
            if_unmodified_since: ius,
            ..Conditions::default()
        };
        assert_eq!(e(im_ius(Some(TAG), None), MT), go);
        assert_eq!(e(im_ius(Some(b"*"), None), MT), go);
        assert_eq!(e(im_ius(Some(b"\"x\", \"2ebc98a1-1800\""), None), MT), go);
        assert_eq!(e(im_ius(Some(b"W/\"2ebc98a1-1800\""), None), MT), no);
        assert_eq!(e(im_ius(Some(b"\"x\""), None), MT), no);
        assert_eq!(e(im_ius(Some(b"garbage"), None), MT), no);
        assert_eq!(e(im_ius(None, lm), MT), go);
        assert_eq!(e(im_ius(None, lm), MT - 1), go);
        assert_eq!(e(im_ius(None, lm), MT + 1), no);
        assert_eq!(e(im_ius(None, Some(b"garbage")), MT + 1), go);
        // If-Match present: If-Unmodified-Since is not looked at.
        assert_eq!(e(im_ius(Some(TAG), lm), MT + 1), go);
        assert_eq!(e(im_ius(Some(b"\"x\""), lm), MT), no);
        // 412 comes before 304.
        let both = Conditions {
            if_match: FieldLines::one(Some(b"\"x\"")),
            if_none_match: FieldLines::one(Some(TAG)),
            ..Conditions::default()
        };
        assert_eq!(e(both, MT), no);
        let both = Conditions {
            if_match: FieldLines::one(Some(TAG)),
            if_none_match: FieldLines::one(Some(TAG)),
            ..Conditions::default()
        };
        assert_eq!(e(both, MT), nm);
    }

    #[test]
    fn a_representation_without_validators() {
        // A listing: `*` is true of it, no tag names it, dates say nothing.
        let e = |c: Conditions<'_>| evaluate(&c, None);
        let one = |v: &'static str| FieldLines::one(Some(v.as_bytes()));
        let im = |v| Conditions {
            if_match: one(v),
            ..Conditions::default()
        };
        let inm = |v| Conditions {
            if_none_match: one(v),
            ..Conditions::default()
        };
        assert_eq!(e(im("*")), Precondition::Proceed);
        assert_eq!(e(im("\"x\"")), Precondition::Failed);
        assert_eq!(e(im("W/\"x\", \"y\"")), Precondition::Failed);
        assert_eq!(e(inm("*")), Precondition::NotModified);
        assert_eq!(e(inm("\"x\"")), Precondition::Proceed);
        let dates = Conditions {
            if_unmodified_since: Some(b"Sun, 06 Nov 1994 08:49:37 GMT"),
            if_modified_since: Some(b"Fri, 01 Jan 2100 00:00:00 GMT"),
            ..Conditions::default()
        };
        assert_eq!(e(dates), Precondition::Proceed);
        assert_eq!(e(Conditions::default()), Precondition::Proceed);
    }

    #[test]
    fn if_range_is_strong_or_an_exact_date() {
        let t = tag();
        assert!(if_range_holds(t.as_bytes(), &t, MT));
        assert!(!if_range_holds(b"W/\"2ebc98a1-1800\"", &t, MT));
        assert!(!if_range_holds(b"\"other\"", &t, MT));
        assert!(if_range_holds(LM.as_bytes(), &t, MT));
        assert!(!if_range_holds(LM.as_bytes(), &t, MT + 1));
        assert!(!if_range_holds(LM.as_bytes(), &t, MT - 1));
        assert!(!if_range_holds(b"garbage", &t, MT));
        assert!(!if_range_holds(b"", &t, MT));
    }

    #[test]
    fn junk_never_matches_by_accident() {
        // Without the tag's own bytes (or `*`), nothing matches.
        let t = tag();
        let pieces = ["\"", "W/", ",", " ", "2ebc98a1", "-", "1800", "x", "*x"];
        crate::semantics::each_word(&pieces, 5, |h| {
            let whole = h.contains("\"2ebc98a1-1800\"");
            assert!(
                !line_lists_tag(h.as_bytes(), Some(&t), true) || whole,
                "{h}"
            );
            assert!(
                !line_lists_tag(h.as_bytes(), Some(&t), false) || whole,
                "{h}"
            );
            assert!(
                !if_range_holds(h.as_bytes(), &t, MT) || h.trim() == "\"2ebc98a1-1800\"",
                "{h}"
            );
        });
    }
}
