//! Paths as users of nginx and darkhttpd expect them: hidden dotfiles, the
//! redirect of a directory named without its slash, and the options that
//! govern them.
//!
//! * **Dotfiles** (`--dotfiles deny`, the default): a path with any segment
//!   starting with `.` (after percent-decoding, so `/%2eenv` is `/.env`)
//!   answers 404, as if absent (nginx's common `location ~ /\. { deny all; }`
//!   answers 403, which tells a scanner the file exists; darkhttpd answers
//!   404 for what it does not serve). `.well-known` as the first segment is
//!   the exception: RFC 8615 reserves it for metadata meant to be public
//!   (ACME challenges, `security.txt`); dot-segments inside it stay hidden.
//!   `--dotfiles allow` serves them all.
//! * **A directory without its slash** answers 301 with `Location:` the path
//!   as the client sent it (percent-encoding kept) plus `/`, and the query
//!   kept; a relative reference (RFC 9110 §10.2.2), so it never names a host.
//!   Leading slashes are collapsed to one so that `//host` can never become
//!   a reference to another host.
//!
//! # As the server applies them
//!
//! * **Paths.** A directory named without its slash answers 301 with
//!   `Location:` the path as sent (percent-encoding kept, leading slashes
//!   collapsed to one) plus `/`, query kept. A backslash is an ordinary
//!   byte of a name (Linux has no other separator than `/`), served when
//!   such a file exists, as nginx does. `--dotfiles deny` (default):
//!   any path segment starting with `.` answers 404, except `.well-known` at
//!   the root (RFC 8615); `--dotfiles allow` serves them. A directory without
//!   `index.html` answers 403 (as nginx with `autoindex off`), or with
//!   `--listing` an HTML listing (sorted, names escaped and percent-encoded
//!   in links, sizes, dates, directories with a trailing `/`, dotfiles
//!   hidden unless allowed). Media types from `mime_guess` (but `.mjs` is
//!   `text/javascript` as `.js` is, RFC 9239), with
//!   `; charset=utf-8` for `text/*`, JavaScript, JSON and XML.

/// `--dotfiles`: whether paths with a segment starting with `.` are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Dotfiles {
    /// 404 for them (`.well-known` at the root excepted).
    #[default]
    Deny,
    /// Serve them like any file.
    Allow,
}

/// What the server shows beyond plain files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SiteOptions {
    /// Dotfile policy.
    pub dotfiles: Dotfiles,
    /// An HTML listing for a directory without `index.html` (else 403).
    pub listing: bool,
}

/// True when the normalised relative path `rel` (as from
/// [`normalize_target`](crate::normalize_target)) is hidden under
/// [`Dotfiles::Deny`].
pub fn hidden(rel: &[u8]) -> bool {
    let mut segments = rel.split(|&b| b == b'/');
    let first = segments.next().unwrap_or(b"");
    (first.starts_with(b".") && first != b".well-known") || segments.any(|s| s.starts_with(b"."))
}

/// The `Location` of the redirect for a directory named without its slash:
/// into `out`, the target's path as sent with `/` appended and its query.
pub fn directory_location(target: &[u8], out: &mut Vec<u8>) {
    // Absolute form: keep only the path and query.
    let mut path = target;
    for scheme in [&b"http://"[..], b"https://"] {
        if target.len() >= scheme.len() && target[..scheme.len()].eq_ignore_ascii_case(scheme) {
            let rest = &target[scheme.len()..];
            path = rest
                .iter()
                .position(|&b| b == b'/' || b == b'?')
                .map_or(&b"/"[..], |p| &rest[p..]);
        }
    }
    let end = path
        .iter()
        .position(|&b| b == b'?' || b == b'#')
        .unwrap_or(path.len());
    let (p, rest) = path.split_at(end);
    let p = &p[p.iter().position(|&b| b != b'/').unwrap_or(p.len())..];
    out.push(b'/');
    if !p.is_empty() {
        out.extend_from_slice(p);
        out.push(b'/');
    }
    if let Some(q) = rest.strip_prefix(b"?") {
        let q = &q[..q.iter().position(|&b| b == b'#').unwrap_or(q.len())];
        out.push(b'?');
        out.extend_from_slice(q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotfiles() {
        for h in [
            ".env",
            "a/.git/config",
            ".well-known/.x",
            "a/.well-known/x",
            "..a",
        ] {
            assert!(hidden(h.as_bytes()), "{h}");
        }
        for v in [
            "",
            "a/b.c",
            ".well-known/acme-challenge/t",
            "a./b",
            ".well-known",
        ] {
            assert!(!hidden(v.as_bytes()), "{v}");
        }
    }

    #[test]
    fn locations() {
        let loc = |t: &str| {
            let mut v = Vec::new();
            directory_location(t.as_bytes(), &mut v);
            String::from_utf8(v).unwrap()
        };
        assert_eq!(loc("/docs"), "/docs/");
        assert_eq!(loc("/a%20b/c?x=1&y"), "/a%20b/c/?x=1&y");
        assert_eq!(loc("//evil.example/x"), "/evil.example/x/");
        assert_eq!(loc("/d?"), "/d/?");
        assert_eq!(loc("/d#f"), "/d/");
        assert_eq!(loc("http://h.example/d?q"), "/d/?q");
        assert_eq!(loc("http://h.example?q"), "/?q");
        assert_eq!(loc("///"), "/");
    }
}
