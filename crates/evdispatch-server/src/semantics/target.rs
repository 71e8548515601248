//! From a request target to a path relative to the document root: a pure
//! function (fuzz targets will be built on it).
//!
//! The target is decoded once (`%XX`), then split into segments; empty and
//! `.` segments are dropped, and a `..` segment removes the segment before it
//! (RFC 3986 §5.2.4, as nginx and darkhttpd resolve `/a/../b` to `/b`). A
//! `..` with nothing left to remove would climb out of the root: that
//! refuses the request (403); a NUL byte, which no file name can hold, makes
//! it malformed (400, as nginx). A backslash is an ordinary byte of a Linux
//! file name (`/..%5Cx` names the file `..\x`, as in nginx; the request
//! parser refuses a raw `\`, which is not a character of a URI, before the
//! target gets here, and so every byte outside RFC 3986's set: this
//! function takes any bytes). The asterisk-form `*` is no path (400 here:
//! only `OPTIONS *` is answered, before this). Decoding happens
//! exactly once, so a double-encoded `%252e%252e` becomes the literal name
//! `%2e%2e`, never `..`. The result never starts with `/` and never climbs:
//! the file layer then opens it beneath the root with
//! `openat2(RESOLVE_BENEATH)`, which also stops symlinks that lead out.

use crate::semantics::status::Status;

/// Decode and normalise `target` into `out` (cleared first) as a relative
/// path such as `docs/index.html` (empty for the root). Returns whether the
/// target named a directory (ended with `/`).
pub fn normalize_target(target: &[u8], out: &mut Vec<u8>) -> Result<bool, Status> {
    out.clear();
    let path = origin_path(target)?;
    if let Some(dir) = plain_path(path, out) {
        return Ok(dir);
    }
    // Query and fragment are not part of the path.
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    let path = &path[..end];
    if path.first() != Some(&b'/') {
        return Err(Status::BadRequest);
    }
    normalize_path(path, out)
}

/// The common case in one pass: a path starting with `/` (up to a `?` or
/// `#`) with nothing to decode (no `%`), no NUL, no empty segment (`//`)
/// and no segment that starts with a dot (no `/.`), so no `.` or `..`
/// either. It is then already normal: `out` is the path without its first
/// and last slash, and `Some(dir)` says whether it named a directory.
/// `None` (and `out` left empty): take the general way.
fn plain_path(path: &[u8], out: &mut Vec<u8>) -> Option<bool> {
    if path.first() != Some(&b'/') {
        return None;
    }
    let mut prev = 0u8;
    let mut end = path.len();
    for (i, &b) in path.iter().enumerate() {
        if b == b'?' || b == b'#' {
            end = i;
            break;
        }
        if b == b'%' || b == 0 || (prev == b'/' && (b == b'/' || b == b'.')) {
            return None;
        }
        prev = b;
    }
    let path = &path[..end];
    let dir = prev == b'/';
    let rel = &path[1..path.len() - usize::from(dir && path.len() > 1)];
    out.extend_from_slice(rel);
    Some(dir || rel.is_empty())
}

/// [`normalize_target`] of a path (starting with `/`) in general: decode,
/// split, drop empty and dot segments, resolve `..`.
fn normalize_path(path: &[u8], out: &mut Vec<u8>) -> Result<bool, Status> {
    let mut segment_start = 0;
    let mut i = 0;
    let mut trailing_slash = false;
    while i < path.len() {
        let b = match path[i] {
            b'%' => {
                let hi = path.get(i + 1).and_then(|&h| hex(h));
                let lo = path.get(i + 2).and_then(|&l| hex(l));
                match (hi, lo) {
                    (Some(hi), Some(lo)) => {
                        i += 3;
                        (hi << 4) | lo
                    }
                    _ => return Err(Status::BadRequest),
                }
            }
            b => {
                i += 1;
                b
            }
        };
        match b {
            0 => return Err(Status::BadRequest),
            b'/' => {
                close_segment(out, segment_start)?;
                segment_start = out.len();
                trailing_slash = true;
            }
            _ => {
                if out.len() == segment_start && !out.is_empty() {
                    // A new segment after an earlier one: separate them.
                    out.push(b'/');
                    segment_start = out.len();
                }
                out.push(b);
                trailing_slash = false;
            }
        }
    }
    let last_was_dot = close_segment(out, segment_start)?;
    Ok(trailing_slash || last_was_dot || out.is_empty())
}

/// Drop the segment just written if it is `.`, and with it the one before
/// if it is `..` (returning true: the path now names a directory); refuse a
/// `..` with no segment before it to remove.
fn close_segment(out: &mut Vec<u8>, start: usize) -> Result<bool, Status> {
    let seg = &out[start..];
    let up = match seg {
        b"." => false,
        b".." => true,
        _ => return Ok(false),
    };
    out.truncate(start);
    // Also drop the separator written before it, if any.
    if out.last() == Some(&b'/') {
        out.pop();
    }
    if up {
        if out.is_empty() {
            return Err(Status::Forbidden);
        }
        let parent = out.iter().rposition(|&b| b == b'/').map_or(0, |p| p + 1);
        out.truncate(parent);
        if out.last() == Some(&b'/') {
            out.pop();
        }
    }
    Ok(true)
}

/// The path part of an origin-form (`/p`) or absolute-form
/// (`http://host/p`) target.
fn origin_path(target: &[u8]) -> Result<&[u8], Status> {
    if target.first() == Some(&b'/') {
        return Ok(target);
    }
    for scheme in [&b"http://"[..], b"https://"] {
        if target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &target[scheme.len()..];
            // The authority ends at the first `/`, `?` or `#` (RFC 3986
            // §3.2); with no `/` there the path is empty, that is `/`.
            return Ok(
                match rest.iter().position(|&b| matches!(b, b'/' | b'?' | b'#')) {
                    Some(p) if rest[p] == b'/' => &rest[p..],
                    _ => b"/",
                },
            );
        }
    }
    Ok(target)
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(t: &str) -> Result<(String, bool), Status> {
        let mut out = Vec::new();
        normalize_target(t.as_bytes(), &mut out)
            .map(|dir| (String::from_utf8_lossy(&out).into_owned(), dir))
    }

    #[test]
    fn ordinary_paths() {
        assert_eq!(norm("/").unwrap(), ("".into(), true));
        assert_eq!(norm("/a.html").unwrap(), ("a.html".into(), false));
        assert_eq!(norm("/a/b/").unwrap(), ("a/b".into(), true));
        assert_eq!(norm("//a///b").unwrap(), ("a/b".into(), false));
        assert_eq!(norm("/./a/./b/.").unwrap(), ("a/b".into(), true));
        assert_eq!(norm("/a%20b?x=../..#y").unwrap(), ("a b".into(), false));
        assert_eq!(norm("http://h.example/x/y").unwrap(), ("x/y".into(), false));
        assert_eq!(norm("HTTP://h").unwrap(), ("".into(), true));
        assert_eq!(
            norm("/.well-known/x").unwrap(),
            (".well-known/x".into(), false)
        );
        assert_eq!(norm("/..a/b..").unwrap(), ("..a/b..".into(), false));
        // A backslash is a byte of a name on Linux, not a separator.
        assert_eq!(norm("/a\\b").unwrap(), ("a\\b".into(), false));
        assert_eq!(norm("/..\\etc").unwrap(), ("..\\etc".into(), false));
        assert_eq!(norm("/a%5c..%5Cb/").unwrap(), ("a\\..\\b".into(), true));
        assert_eq!(norm("/a%5c/../..").unwrap_err(), Status::Forbidden);
    }

    /// The one-pass way agrees with the general one wherever it answers,
    /// and leaves every path with something to resolve to it.
    #[test]
    fn the_plain_path_way_agrees_with_the_general_one() {
        for p in [
            "/",
            "/a",
            "/a/",
            "/index.html",
            "/a/b/c.txt",
            "/a/b/",
            "/a.b/c..d",
            "/a..",
            "/x-y_z~/",
            "/a\\b",
            "/a?b",
            "/a/?x=%2F..",
            "/a#f/../..",
            "/?",
            "/d/#",
        ] {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            let dir = plain_path(p.as_bytes(), &mut fast);
            let path = p.split(['?', '#']).next().unwrap();
            let general = normalize_path(path.as_bytes(), &mut slow).unwrap();
            assert_eq!(dir, Some(general), "{p}");
            assert_eq!(fast, slow, "{p}");
        }
        for p in [
            "//a", "/a//b", "/.", "/./a", "/a/..", "/a/.b", "/%41", "/a\0b", "/a/./", "a", "",
            "/./?x", "/a%2e?",
        ] {
            let mut out = Vec::new();
            assert_eq!(plain_path(p.as_bytes(), &mut out), None, "{p}");
            assert!(out.is_empty(), "{p}");
        }
    }

    #[test]
    fn traversal_shapes_are_refused() {
        for t in [
            "/..",
            "/../etc/passwd",
            "/a/../../etc/passwd",
            "/a/b/../../../x",
            "/a/./../..",
            "/%2e%2e/etc/passwd",
            "/%2E%2E/etc/passwd",
            "/.%2e/x",
            "/%2e./x",
            "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "/..%2fetc",
            "/a%2f..%2f..%2fx",
            "/a/%2e%2e/%2e%2e/x",
            "http://h/../x",
        ] {
            assert_eq!(norm(t), Err(Status::Forbidden), "{t}");
        }
        for t in ["/x%00.html", "/x\0", "/a/%00/../b"] {
            assert_eq!(norm(t), Err(Status::BadRequest), "{t}");
        }
    }

    #[test]
    fn dot_dot_inside_the_root_is_resolved() {
        // RFC 3986 §5.2.4's remove_dot_segments, as nginx and darkhttpd do.
        assert_eq!(norm("/a/../b.html").unwrap(), ("b.html".into(), false));
        assert_eq!(norm("/a/b/../c").unwrap(), ("a/c".into(), false));
        assert_eq!(norm("/a/b/..").unwrap(), ("a".into(), true));
        assert_eq!(norm("/a/..").unwrap(), ("".into(), true));
        assert_eq!(norm("/a/../").unwrap(), ("".into(), true));
        assert_eq!(norm("/a//b/./../c/").unwrap(), ("a/c".into(), true));
        assert_eq!(norm("/a/%2e%2e/b").unwrap(), ("b".into(), false));
        assert_eq!(norm("/a/%2e%2e%2fb").unwrap(), ("b".into(), false));
        assert_eq!(norm("/ab/../..a").unwrap(), ("..a".into(), false));
        assert_eq!(norm("http://h/a/../b").unwrap(), ("b".into(), false));
    }

    #[test]
    fn absolute_form_authority_ends_at_query() {
        assert_eq!(norm("http://h?x=/secret").unwrap(), ("".into(), true));
        assert_eq!(norm("http://h#/secret").unwrap(), ("".into(), true));
        assert_eq!(norm("http://h:80/a?b=/c").unwrap(), ("a".into(), false));
    }

    #[test]
    fn double_encoding_stays_literal() {
        assert_eq!(norm("/%252e%252e/x").unwrap().0, "%2e%2e/x");
        // Overlong UTF-8 for '.' is not '.'.
        assert_eq!(
            norm("/%c0%ae%c0%ae/x").unwrap().0,
            "\u{fffd}\u{fffd}\u{fffd}\u{fffd}/x"
        );
    }

    #[test]
    fn bad_shapes_are_400() {
        for t in ["a/b", "*", "/%", "/%4", "/%zz", ""] {
            assert_eq!(norm(t), Err(Status::BadRequest), "{t}");
        }
    }

    #[test]
    fn output_never_climbs_or_starts_with_slash() {
        // A small exhaustive check over an alphabet of troublesome pieces.
        let pieces = ["/", ".", "..", "%2e", "%2f", "a", "%25", "?"];
        let mut out = Vec::new();
        crate::semantics::each_word(&pieces, 5, |word| {
            let t = format!("/{word}");
            if normalize_target(t.as_bytes(), &mut out).is_ok() {
                assert!(!out.starts_with(b"/"), "{t}");
                assert!(
                    !out.split(|&b| b == b'/')
                        .any(|s| s == b".." || s == b"." || s.is_empty())
                        || out.is_empty(),
                    "{t} -> {:?}",
                    String::from_utf8_lossy(&out)
                );
            }
        });
    }
}
