//! From a request target to a path relative to the document root: a pure
//! function (fuzz targets will be built on it).
//!
//! The target is decoded once (`%XX`), then split into segments; empty and
//! `.` segments are dropped, and a `..` segment, a NUL byte or a backslash
//! anywhere refuses the request (403). Decoding happens exactly once, so a
//! double-encoded `%252e%252e` becomes the literal name `%2e%2e`, never `..`.
//! The result never starts with `/` and never climbs: the file layer then
//! opens it beneath the root with `openat2(RESOLVE_BENEATH)`, which also stops
//! symlinks that lead out.

use crate::status::Status;

/// Decode and normalise `target` into `out` (cleared first) as a relative
/// path such as `docs/index.html` (empty for the root). Returns whether the
/// target named a directory (ended with `/`).
pub fn normalize_target(target: &[u8], out: &mut Vec<u8>) -> Result<bool, Status> {
    out.clear();
    let path = origin_path(target)?;
    // Query and fragment are not part of the path.
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    let path = &path[..end];
    if path.first() != Some(&b'/') {
        return Err(Status::BadRequest);
    }

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
            0 | b'\\' => return Err(Status::Forbidden),
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

/// Drop the segment just written if it is `.` (returning true); refuse `..`.
fn close_segment(out: &mut Vec<u8>, start: usize) -> Result<bool, Status> {
    let seg = &out[start..];
    if seg == b".." {
        return Err(Status::Forbidden);
    }
    if seg == b"." {
        out.truncate(start);
        // Also drop the separator written before it, if any.
        if out.last() == Some(&b'/') {
            out.pop();
        }
        return Ok(true);
    }
    Ok(false)
}

/// The path part of an origin-form (`/p`) or absolute-form
/// (`http://host/p`) target.
fn origin_path(target: &[u8]) -> Result<&[u8], Status> {
    for scheme in [&b"http://"[..], b"https://"] {
        if target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &target[scheme.len()..];
            return Ok(match rest.iter().position(|&b| b == b'/') {
                Some(p) => &rest[p..],
                None => b"/",
            });
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
    }

    #[test]
    fn traversal_shapes_are_refused() {
        for t in [
            "/..",
            "/../etc/passwd",
            "/a/../../etc/passwd",
            "/a/..",
            "/%2e%2e/etc/passwd",
            "/%2E%2E/etc/passwd",
            "/.%2e/x",
            "/%2e./x",
            "/a/%2e%2e%2fb",
            "/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "/..%2fetc",
            "/a%2f..%2f..%2fx",
            "/..\\etc",
            "/a%5c..%5cb",
            "/a\\b",
            "/x%00.html",
            "/x\0",
            "http://h/../x",
        ] {
            assert_eq!(norm(t), Err(Status::Forbidden), "{t}");
        }
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
        crate::each_word(&pieces, 5, |word| {
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
