//! The bodies of the fuzz targets (`fuzz/fuzz_targets/*.rs` call these),
//! and a seeded mutator over the attack corpus that runs the same bodies
//! deterministically in the test suite, so the invariants are exercised
//! without a nightly toolchain.
//!
//! Invariants of [`evdispatch_server::parse_request`]:
//! * it never panics, and gives the same verdict twice;
//! * `Partial` only while the buffer is shorter than the head limit;
//! * a refusal is one of 400, 405, 413, 414, 431, 501, 505;
//! * a complete request is `GET`, `HEAD` or `OPTIONS` as the bytes begin
//!   (another method: refused with 405 or 501), ends with a
//!   blank line, lies within the buffer and the head limit, its target is a
//!   piece of it no longer than the target limit made only of the
//!   characters of a URI (RFC 3986 §2), its body framing is what
//!   its one `Transfer-Encoding` line (naming `chunked` alone, and no
//!   `Content-Length`) or
//!   its one `Content-Length` (at most the body limit) says, it carries no
//!   `Transfer-Encoding` if it is HTTP/1.0, and, for HTTP/1.1, it has
//!   exactly one `Host`; a `Host` it has is not empty;
//! * where a request ends, its body included, lies within the buffer
//!   after its head and within the head limit (whatever the buffer holds:
//!   the same verdict in every model); it is waited for only below the
//!   head limit; a chunked body taken has chunk-size lines that an
//!   independent matcher of RFC 9112 §7.1.1's `chunk-ext` accepts;
//! * verdicts are stable: bytes appended after a complete or refused head,
//!   or after a whole or broken body, change nothing (where a request ends
//!   never depends on what follows).
//!
//! Invariants of [`evdispatch_server::normalize_target`]:
//! * it never panics; a refusal is 400 or 403;
//! * a result is relative, made of plain names only (no empty, `.` or `..`
//!   segment, no NUL; a backslash is a byte of a name), so joined to any
//!   root it stays there;
//! * it agrees with an independent reference (decode once, split, let each
//!   `..` remove the segment before it and refuse one that would climb out
//!   of the root), and re-encoding the result and normalising again gives
//!   it back.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path};

use evdispatch_server::{
    normalize_target, parse_request, Framing, Method, Parsed, RequestEnd, Status, Version, MAX_BODY,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// The head limit the request target is fuzzed with (the server's default).
pub const MAX_HEADER: usize = 8192;

/// Statuses a refusal may carry.
const REFUSALS: [u16; 7] = [400, 405, 413, 414, 431, 501, 505];

/// Check every invariant of `parse_request` on `data`; panics (with the
/// input) on a violation, which is what a fuzz target reports.
pub fn check_request(data: &[u8]) {
    // A small head limit as well, so the limit paths are reached by short
    // inputs too.
    for max in [MAX_HEADER, 256] {
        check_request_with(data, max);
    }
}

fn check_request_with(data: &[u8], max: usize) {
    let v = parse_request(data, max);
    assert_eq!(v, parse_request(data, max), "not deterministic");
    match v {
        Parsed::Partial => assert!(
            data.len() < max,
            "Partial for {} bytes with a limit of {max}",
            data.len()
        ),
        Parsed::Reject(st) => {
            assert!(
                REFUSALS.contains(&st.code()),
                "refused with {} ({st:?})",
                st.code()
            );
            // Appending bytes changes nothing.
            let mut more = data.to_vec();
            more.extend_from_slice(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n");
            assert_eq!(
                parse_request(&more, max),
                Parsed::Reject(st),
                "refusal changed when bytes were appended"
            );
        }
        Parsed::Complete(r) => {
            assert!(r.len <= data.len() && r.len <= max, "len {}", r.len);
            let head = &data[..r.len];
            // The last line is empty: LF, optionally CR LF, after a LF.
            let body = head.strip_suffix(b"\n").unwrap_or(b"x");
            let body = body.strip_suffix(b"\r").unwrap_or(body);
            assert!(
                body.ends_with(b"\n"),
                "a complete head must end with a blank line"
            );
            // Empty lines before the request line are skipped (RFC 9112 §2.2).
            let line = &head[head
                .iter()
                .position(|&b| b != b'\r' && b != b'\n')
                .unwrap_or(head.len())..];
            let served = |m: &[u8]| line.starts_with(m);
            match r.method {
                Method::Get => assert!(served(b"GET "), "method does not match the bytes"),
                Method::Head => assert!(served(b"HEAD "), "method does not match the bytes"),
                Method::Options => {
                    assert!(served(b"OPTIONS "), "method does not match the bytes")
                }
                Method::Refused(st) => {
                    assert!(matches!(st.code(), 405 | 501), "method refused with {st:?}");
                    assert!(
                        !served(b"GET ") && !served(b"HEAD ") && !served(b"OPTIONS "),
                        "a method served refused"
                    );
                }
            }
            let t = r.target.as_ptr() as usize - data.as_ptr() as usize;
            assert!(
                t + r.target.len() <= r.len,
                "the target is not inside the head"
            );
            assert!(
                r.target.iter().all(|b| {
                    b.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=%".contains(b)
                }),
                "a byte no URI has taken in the target"
            );
            assert!(r.target.len() <= evdispatch_server::MAX_TARGET);
            let h = Headers::scan(head);
            assert!(
                h.transfer_encoding <= 1,
                "Transfer-Encoding repeated, accepted"
            );
            assert!(h.content_length <= 1, "Content-Length repeated, accepted");
            assert!(
                h.transfer_encoding == 0 || r.version == Version::Http11,
                "Transfer-Encoding on HTTP/1.0 accepted"
            );
            let framing = match (h.transfer_encoding, h.cl_value) {
                (1, _) => {
                    assert_eq!(h.content_length, 0, "Transfer-Encoding with Content-Length");
                    assert!(h.te_chunked, "a coding other than chunked alone accepted");
                    Framing::Chunked
                }
                (_, None | Some(0)) => Framing::None,
                (_, Some(n)) => {
                    assert!(n <= MAX_BODY, "a body past the limit accepted");
                    Framing::Length(n)
                }
            };
            assert_eq!(r.body, framing, "the framing is not what the head says");
            check_end(&r, data, max);
            if r.version == Version::Http11 {
                assert_eq!(h.host, 1, "HTTP/1.1 needs exactly one Host");
            } else {
                assert!(h.host <= 1, "two Host headers accepted");
            }
            assert!(!h.host_empty, "an empty Host accepted");
            let mut more = data.to_vec();
            more.extend_from_slice(b"\r\nX");
            match parse_request(&more, max) {
                Parsed::Complete(m) => assert!(
                    (m.method, m.version, m.keep_alive) == (r.method, r.version, r.keep_alive)
                        && (m.len, m.target, m.if_modified_since)
                            == (r.len, r.target, r.if_modified_since),
                    "a complete request changed when bytes were appended"
                ),
                other => panic!("a complete request became {other:?} when bytes were appended"),
            }
        }
    }
}

/// Where the request of `data` (complete, `r`) ends: within the input and
/// the head limit, after the head; waited for only below the head limit;
/// the same with bytes appended once it is known.
fn check_end(r: &evdispatch_server::Request<'_>, data: &[u8], max: usize) {
    let end = r.end(data, max);
    assert_eq!(end, r.end(data, max), "end not deterministic");
    let mut more = data.to_vec();
    more.extend_from_slice(b"0\r\n\r\nGET / HTTP/1.1\r\n\r\n");
    match end {
        RequestEnd::At(n) => {
            assert!(
                r.len <= n && n <= data.len() && n <= max,
                "ends at {n} of {} (limit {max})",
                data.len()
            );
            if r.body == Framing::Chunked {
                check_chunk_lines(&data[r.len..n]);
            }
            assert_eq!(
                r.end(&more, max),
                end,
                "the end moved when bytes were appended"
            );
        }
        RequestEnd::Wait => assert!(data.len() < max, "waits with {} bytes", data.len()),
        RequestEnd::Malformed => {
            assert_eq!(
                r.end(&more, max),
                end,
                "broken framing mended by appended bytes"
            )
        }
        RequestEnd::Unread => {}
    }
}

/// Every chunk-size line of the whole chunked body `body` (the sizes read
/// to skip the data) has, after its hex digits, what RFC 9112 §7.1.1's
/// `chunk-ext` allows, checked by a matcher written apart from the
/// server's: a small state machine over the bytes.
fn check_chunk_lines(body: &[u8]) {
    let mut at = 0;
    loop {
        let line_end = body[at..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .expect("a chunk-size line ends with CRLF")
            + at;
        let line = &body[at..line_end];
        let digits = line.iter().take_while(|c| c.is_ascii_hexdigit()).count();
        assert!(digits > 0, "a chunk without a size taken");
        assert!(
            chunk_ext_matches(&line[digits..]),
            "chunk-size line {:?} taken",
            String::from_utf8_lossy(line)
        );
        let size = u64::from_str_radix(std::str::from_utf8(&line[..digits]).unwrap(), 16)
            .expect("a size that fits");
        at = line_end + 2;
        if size == 0 {
            return;
        }
        at += size as usize + 2;
    }
}

/// `*( BWS ";" BWS token [ BWS "=" BWS ( token / quoted-string ) ] )`.
fn chunk_ext_matches(ext: &[u8]) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        /// Before a `;` (or at the end).
        Start,
        /// After `;`, before the name.
        Semi,
        /// In the name.
        Name,
        /// Whitespace after the name.
        AfterName,
        /// After `=`, before the value.
        Eq,
        /// In a token value.
        Token,
        /// In a quoted value; after a backslash in it.
        Quoted,
        Escape,
    }
    let tchar = |c: u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&c);
    let ws = |c: u8| c == b' ' || c == b'\t';
    let text = |c: u8| ws(c) || (0x21..=0x7e).contains(&c) || c >= 0x80;
    let mut s = S::Start;
    for &c in ext {
        s = match (s, c) {
            (S::Start | S::AfterName, b';') | (S::Name | S::Token, b';') => S::Semi,
            (S::Start, c) if ws(c) => S::Start,
            (S::Semi, c) if ws(c) => S::Semi,
            (S::Semi | S::Name, c) if tchar(c) => S::Name,
            (S::Name | S::AfterName, c) if ws(c) => S::AfterName,
            (S::Name | S::AfterName, b'=') => S::Eq,
            (S::Eq, c) if ws(c) => S::Eq,
            (S::Eq, b'"') => S::Quoted,
            (S::Eq | S::Token, c) if tchar(c) => S::Token,
            (S::Token, c) if ws(c) => S::Start,
            (S::Quoted, b'"') => S::Start,
            (S::Quoted, b'\\') => S::Escape,
            (S::Quoted | S::Escape, c) if text(c) => S::Quoted,
            _ => return false,
        };
    }
    // The line may end only after a name or a whole value (or be empty),
    // never in whitespace: `S::Start` after a closing quote or nothing.
    match s {
        S::Name | S::Token => true,
        S::Start => ext.last().is_none_or(|&c| c == b'"'),
        _ => false,
    }
}

/// Header counts found by a plain line scan of a complete head.
#[derive(Default)]
struct Headers {
    transfer_encoding: usize,
    /// The (last) `Transfer-Encoding` line lists `chunked` and nothing
    /// else (empty list elements aside: RFC 9110 §5.6.1).
    te_chunked: bool,
    content_length: usize,
    /// The value of the (last) `Content-Length`, if a number.
    cl_value: Option<u64>,
    host: usize,
    /// A `Host` line has an empty value.
    host_empty: bool,
}

impl Headers {
    fn scan(head: &[u8]) -> Headers {
        let mut h = Headers::default();
        for line in head.split(|&b| b == b'\n').skip(1) {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = (&line[..colon], &line[colon + 1..]);
            if name.eq_ignore_ascii_case(b"transfer-encoding") {
                h.transfer_encoding += 1;
                let mut codings = value
                    .split(|&b| b == b',')
                    .map(<[u8]>::trim_ascii)
                    .filter(|c| !c.is_empty());
                h.te_chunked = codings
                    .next()
                    .is_some_and(|c| c.eq_ignore_ascii_case(b"chunked"))
                    && codings.next().is_none();
            } else if name.eq_ignore_ascii_case(b"content-length") {
                h.content_length += 1;
                h.cl_value = std::str::from_utf8(value.trim_ascii())
                    .ok()
                    .and_then(|v| v.parse().ok());
            } else if name.eq_ignore_ascii_case(b"host") {
                h.host += 1;
                h.host_empty |= value.trim_ascii().is_empty();
            }
        }
        h
    }
}

/// Check every invariant of `normalize_target` on `data`.
pub fn check_target(data: &[u8]) {
    let mut out = Vec::new();
    let got = normalize_target(data, &mut out);
    let reference = reference_normalize(data);
    match (&got, &reference) {
        (Ok(dir), Ok((want, want_dir))) => {
            assert_eq!(
                &out,
                want,
                "result differs from the reference for {:?}",
                String::from_utf8_lossy(data)
            );
            assert_eq!(dir, want_dir, "directory flag differs from the reference");
        }
        (Err(st), Err(why)) => {
            let want = match why {
                RefError::Malformed => Status::BadRequest,
                // A climb out of the root is always 403.
                Traversal => Status::Forbidden,
            };
            assert_eq!(
                *st,
                want,
                "{:?}: refused with {st:?}, the reference says {why:?}",
                String::from_utf8_lossy(data)
            );
        }
        (g, r) => panic!(
            "{:?}: normalize_target gave {g:?}, the reference {r:?}",
            String::from_utf8_lossy(data)
        ),
    }
    if got.is_ok() {
        assert!(!out.starts_with(b"/"), "absolute result");
        assert!(!out.contains(&0));
        if !out.is_empty() {
            for seg in out.split(|&b| b == b'/') {
                assert!(
                    !seg.is_empty() && seg != b"." && seg != b"..",
                    "segment {:?} in {:?}",
                    String::from_utf8_lossy(seg),
                    String::from_utf8_lossy(&out)
                );
            }
            let p = Path::new(OsStr::from_bytes(&out));
            assert!(
                p.components().all(|c| matches!(c, Component::Normal(_))),
                "resolves outside the root: {p:?}"
            );
            assert!(Path::new("/srv/root").join(p).starts_with("/srv/root"));
        }
        // Encoding the result again gives it back.
        let mut again = b"/".to_vec();
        for &b in &out {
            if b.is_ascii_alphanumeric() || b == b'/' || b == b'-' || b == b'_' {
                again.push(b);
            } else {
                again.extend_from_slice(format!("%{b:02X}").as_bytes());
            }
        }
        let mut out2 = Vec::new();
        assert!(
            normalize_target(&again, &mut out2).is_ok(),
            "re-encoded result refused"
        );
        assert_eq!(out2, out, "re-encoded result normalises differently");
    }
}

/// Why the reference refuses.
#[derive(Debug, PartialEq, Eq)]
enum RefError {
    /// Not a path, a broken escape or a NUL (400).
    Malformed,
    /// A `..` segment with nothing left to remove: a climb out of the root
    /// (403).
    Traversal,
}
use RefError::Traversal;

/// An independent normalisation, written the obvious way (decode the whole
/// path, then split): the fuzz oracle for `normalize_target`.
fn reference_normalize(target: &[u8]) -> Result<(Vec<u8>, bool), RefError> {
    let scheme = [&b"http://"[..], b"https://"].into_iter().find(|s| {
        target
            .get(..s.len())
            .is_some_and(|p| p.eq_ignore_ascii_case(s))
    });
    let path = match scheme {
        Some(s) => {
            let rest = &target[s.len()..];
            match rest
                .iter()
                .position(|&b| b == b'/' || b == b'?' || b == b'#')
            {
                Some(p) if rest[p] == b'/' => &rest[p..],
                _ => &b"/"[..],
            }
        }
        None => target,
    };
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    let path = &path[..end];
    if path.first() != Some(&b'/') {
        return Err(RefError::Malformed);
    }
    // Decode everything first. The streaming implementation stops at the
    // first problem it meets; order the reference's checks the same way by
    // decoding up to the first bad escape and judging what came before.
    let mut decoded = Vec::new();
    let mut i = 0;
    let mut bad_escape = false;
    while i < path.len() {
        if path[i] == b'%' {
            let h = path.get(i + 1).and_then(|&c| (c as char).to_digit(16));
            let l = path.get(i + 2).and_then(|&c| (c as char).to_digit(16));
            match (h, l) {
                (Some(h), Some(l)) => {
                    decoded.push((h * 16 + l) as u8);
                    i += 3;
                }
                _ => {
                    bad_escape = true;
                    break;
                }
            }
        } else {
            decoded.push(path[i]);
            i += 1;
        }
    }
    // A NUL (400) stops the streaming implementation where it stands, as a
    // bad escape does (400): the segments closed before it are judged
    // first. A backslash is a byte like any other.
    let stop = decoded.iter().position(|&b| b == 0);
    let stop_error = match stop {
        Some(_) => Some(RefError::Malformed),
        None if bad_escape => Some(RefError::Malformed),
        None => None,
    };
    if let Some(p) = stop {
        decoded.truncate(p);
    }
    let segs: Vec<&[u8]> = decoded.split(|&b| b == b'/').collect();
    let closed = if stop_error.is_some() {
        &segs[..segs.len() - 1]
    } else {
        &segs[..]
    };
    // RFC 3986 §5.2.4: `..` removes the segment before it; one with none
    // left climbs out.
    let mut kept: Vec<&[u8]> = Vec::new();
    for &s in closed {
        match s {
            b"" | b"." => {}
            b".." => {
                if kept.pop().is_none() {
                    return Err(Traversal);
                }
            }
            _ => kept.push(s),
        }
    }
    if let Some(e) = stop_error {
        return Err(e);
    }
    let last = segs.last().copied().unwrap_or(b"");
    let dir = matches!(last, b"" | b"." | b"..") || kept.is_empty();
    Ok((kept.join(&b'/'), dir))
}

/// Pieces the mutator splices in: the shapes attacks are made of.
const PIECES: &[&[u8]] = &[
    b"..",
    b".",
    b"/",
    b"%2e",
    b"%2E",
    b"%2f",
    b"%5c",
    b"\\",
    b"%00",
    b"\0",
    b"%25",
    b"%",
    b"%c0%ae",
    b"?",
    b"#",
    b"\r\n",
    b"\n",
    b"\r\n\r\n",
    b" ",
    b"\t",
    b":",
    b"Host: t\r\n",
    b"Content-Length: 0\r\n",
    b"Content-Length: -1\r\n",
    b"Transfer-Encoding: chunked\r\n",
    b"Content-Length: 5\r\n",
    b"0\r\n\r\n",
    b"5\r\nhello\r\n",
    b";ext=\"v\"",
    b" ; e = v",
    b";",
    b"OPTIONS ",
    b"*",
    b"|",
    b"Host:\r\n",
    b"Expect: 100-continue\r\n",
    b"Connection: close\r\n",
    b"HTTP/1.1",
    b"HTTP/1.0",
    b"HTTP/2.0",
    b"GET ",
    b"HEAD ",
    b"POST ",
    b"http://h",
    b"\xff",
    b"\xc3\x28",
    b"If-Modified-Since: x\r\n",
];

/// The corpus's requests and targets, the seeds of the mutator.
pub fn seeds() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = crate::corpus::corpus()
        .into_iter()
        .filter(|a| a.raw.len() <= 16 * 1024)
        .map(|a| a.raw)
        .collect();
    v.push(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n".to_vec());
    v.push(b"HEAD / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".to_vec());
    v
}

/// The request target of a seed (between the first two spaces), or the
/// seed itself.
pub fn target_of(seed: &[u8]) -> &[u8] {
    let mut it = seed.splitn(3, |&b| b == b' ');
    match (it.next(), it.next(), it.next()) {
        (Some(_), Some(t), Some(_)) => t,
        _ => seed,
    }
}

/// A deterministic mutator: byte flips, insertions, deletions, splices of
/// `PIECES`, truncations and duplications, from a seed.
#[derive(Debug)]
pub struct Mutator {
    rng: SmallRng,
}

impl Mutator {
    /// A mutator whose sequence is fixed by `seed`.
    pub fn new(seed: u64) -> Mutator {
        Mutator {
            rng: SmallRng::seed_from_u64(seed),
        }
    }

    /// Apply one to four mutations to `input`.
    pub fn mutate(&mut self, input: &[u8]) -> Vec<u8> {
        let mut v = input.to_vec();
        let n = self.rng.random_range(1..=4);
        for _ in 0..n {
            let at = if v.is_empty() {
                0
            } else {
                self.rng.random_range(0..=v.len())
            };
            match self.rng.random_range(0..7) {
                0 if !v.is_empty() => {
                    let i = at.min(v.len() - 1);
                    v[i] ^= 1 << self.rng.random_range(0..8);
                }
                1 => v.insert(at, self.rng.random()),
                2 if at < v.len() => {
                    let len = self.rng.random_range(1..=8).min(v.len() - at);
                    v.drain(at..at + len);
                }
                3 | 4 => {
                    let p = PIECES[self.rng.random_range(0..PIECES.len())];
                    v.splice(at..at, p.iter().copied());
                }
                5 => v.truncate(at),
                _ if !v.is_empty() && v.len() < 20_000 => {
                    let from = self.rng.random_range(0..v.len());
                    let len = self.rng.random_range(1..=64).min(v.len() - from);
                    let piece = v[from..from + len].to_vec();
                    v.splice(at..at, piece);
                }
                _ => {}
            }
        }
        v
    }
}

/// Run `check` on `count` inputs: every seed as is, then mutations of
/// seeds (and of earlier mutants) drawn by a [`Mutator`] seeded with
/// `seed`. Returns the number of inputs checked.
pub fn run_mutations(seeds: &[Vec<u8>], seed: u64, count: usize, check: fn(&[u8])) -> usize {
    let mut m = Mutator::new(seed);
    let mut pool: Vec<Vec<u8>> = seeds.to_vec();
    seeds.iter().for_each(|s| check(s));
    let mut done = seeds.len();
    while done < count {
        let i = m.rng.random_range(0..pool.len());
        let child = m.mutate(&pool[i]);
        check(&child);
        done += 1;
        // Keep some mutants as parents, bounded.
        if pool.len() < 4096 && m.rng.random_range(0..8) == 0 {
            pool.push(child);
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_agrees_on_known_shapes() {
        assert_eq!(reference_normalize(b"/a/./b/"), Ok((b"a/b".to_vec(), true)));
        assert_eq!(reference_normalize(b"/%2e%2e/x"), Err(Traversal));
        assert_eq!(
            reference_normalize(b"/a%5cb"),
            Ok((b"a\\b".to_vec(), false))
        );
        assert_eq!(reference_normalize(b"*"), Err(RefError::Malformed));
        assert_eq!(reference_normalize(b"/..%zz"), Err(RefError::Malformed));
        assert_eq!(reference_normalize(b"/../%zz"), Err(Traversal));
        assert_eq!(reference_normalize(b"/a%zz"), Err(RefError::Malformed));
        // A NUL stops where it stands, as the code does.
        assert_eq!(reference_normalize(b"/../%00"), Err(Traversal));
        assert_eq!(
            reference_normalize(b"/a%00/../.."),
            Err(RefError::Malformed)
        );
        assert_eq!(
            reference_normalize(b"/..\\x"),
            Ok((b"..\\x".to_vec(), false))
        );
        assert_eq!(reference_normalize(b"/a%5c/../.."), Err(Traversal));
        check_target(b"/a%5c..%5cb");
        check_target(b"/../%00");
        check_target(b"/a%00/../..");
    }

    #[test]
    fn the_checks_catch_a_violation() {
        // A check that cannot fail is no check: a climbing result and a
        // wrong refusal must both be caught by the helpers used above.
        let r = std::panic::catch_unwind(|| {
            let out = b"a/../b".to_vec();
            for seg in out.split(|&b| b == b'/') {
                assert!(seg != b"..");
            }
        });
        assert!(r.is_err());
        let h = Headers::scan(
            b"GET / HTTP/1.1\r\nTransfer-Encoding: x\r\nhost: a\r\nContent-Length: 01\r\n\r\n",
        );
        assert_eq!((h.transfer_encoding, h.host, h.cl_value), (1, 1, Some(1)));
        assert!(Headers::scan(b"GET / HTTP/1.0\r\nHost: \r\n\r\n").host_empty);
        for ok in ["", ";a", " ;a=b", ";a = \"x\\\"\" ; b", ";a=\"\""] {
            assert!(chunk_ext_matches(ok.as_bytes()), "{ok:?}");
        }
        for bad in [
            " ",
            ";",
            ";a ",
            ";a=b ",
            ";a=",
            ";=b",
            ";a=\"x",
            ";a=\"x\" ",
            "x",
        ] {
            assert!(!chunk_ext_matches(bad.as_bytes()), "{bad:?}");
        }
    }

    #[test]
    fn mutator_is_deterministic() {
        let a: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50)
                .map(|_| m.mutate(b"GET / HTTP/1.1\r\n\r\n"))
                .collect()
        };
        let b: Vec<Vec<u8>> = {
            let mut m = Mutator::new(7);
            (0..50)
                .map(|_| m.mutate(b"GET / HTTP/1.1\r\n\r\n"))
                .collect()
        };
        assert_eq!(a, b);
        assert!(a.iter().any(|x| x != b"GET / HTTP/1.1\r\n\r\n"));
    }
}
