//! `--listing`: an HTML index of a directory without `index.html`, as
//! nginx's `autoindex` and darkhttpd's listing: entries sorted by name (bytewise),
//! directories marked with a trailing `/`, sizes in bytes and
//! modification dates (UTC), names HTML-escaped in the text and
//! percent-encoded in the links; dotfiles left out unless they are served.
//! Built per request (directories change; listings are not a hot path).

use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::time::UNIX_EPOCH;

/// The listing page of the open directory `dir`, shown as `shown` (the
/// decoded path relative to the root with its trailing `/`, empty for the
/// root).
pub fn render(dir: &OwnedFd, shown: &[u8], with_hidden: bool) -> io::Result<Vec<u8>> {
    // The descriptor was opened beneath the root; its /proc link names that
    // very directory, whatever happened to the path since.
    let mut entries: Vec<(Vec<u8>, bool, u64, u64)> = Vec::new();
    for e in std::fs::read_dir(format!("/proc/self/fd/{}", dir.as_raw_fd()))? {
        let e = e?;
        let name = e.file_name().as_bytes().to_vec();
        if name.starts_with(b".") && !with_hidden {
            continue;
        }
        // The entry itself (a symlink is not followed: nothing about what
        // it points to, possibly outside the root, is shown).
        let Ok(meta) = e.metadata() else { continue };
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        entries.push((name, meta.is_dir(), meta.len(), mtime));
    }
    entries.sort();
    let mut out = Vec::with_capacity(512 + entries.len() * 160);
    out.extend_from_slice(
        b"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Index of /",
    );
    escape_html(&mut out, shown);
    out.extend_from_slice(b"</title></head>\n<body><h1>Index of /");
    escape_html(&mut out, shown);
    out.extend_from_slice(b"</h1>\n<table>\n");
    if !shown.is_empty() {
        out.extend_from_slice(b"<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for (name, is_dir, size, mtime) in &entries {
        let slash: &[u8] = if *is_dir { b"/" } else { b"" };
        out.extend_from_slice(b"<tr><td><a href=\"");
        encode_href(&mut out, name);
        out.extend_from_slice(slash);
        out.extend_from_slice(b"\">");
        escape_html(&mut out, name);
        out.extend_from_slice(slash);
        out.extend_from_slice(b"</a></td><td>");
        if *is_dir {
            out.extend_from_slice(b"-");
        } else {
            let _ = write!(out, "{size}");
        }
        let date = httpdate::HttpDate::from(UNIX_EPOCH + std::time::Duration::from_secs(*mtime));
        let _ = writeln!(out, "</td><td>{date}</td></tr>");
    }
    out.extend_from_slice(b"</table>\n</body></html>\n");
    Ok(out)
}

/// HTML text: `& < > " '` escaped; bytes that are not UTF-8 replaced.
fn escape_html(out: &mut Vec<u8>, s: &[u8]) {
    for c in String::from_utf8_lossy(s).chars() {
        match c {
            '&' => out.extend_from_slice(b"&amp;"),
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '"' => out.extend_from_slice(b"&quot;"),
            '\'' => out.extend_from_slice(b"&#39;"),
            c => {
                let mut b = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
            }
        }
    }
}

/// A path segment for an `href`: every byte but the unreserved ones
/// (RFC 3986 §2.3) percent-encoded, so `?`, `#`, `%`, `:` and quotes in a
/// name stay part of it.
fn encode_href(out: &mut Vec<u8>, name: &[u8]) {
    for &b in name {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        let mut v = Vec::new();
        escape_html(&mut v, b"<a href='x'>&\"");
        assert_eq!(v, b"&lt;a href=&#39;x&#39;&gt;&amp;&quot;");
        v.clear();
        encode_href(&mut v, b"a b?#%:\"x.txt");
        assert_eq!(v, b"a%20b%3F%23%25%3A%22x.txt");
    }

    #[test]
    fn a_listing_sorted_escaped_and_without_dotfiles() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("b <&>.txt"), "12345").unwrap();
        std::fs::write(d.path().join("a.txt"), "1").unwrap();
        std::fs::write(d.path().join(".env"), "secret").unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        let fd = OwnedFd::from(std::fs::File::open(d.path()).unwrap());
        let page = String::from_utf8(render(&fd, b"x<y", false).unwrap()).unwrap();
        assert!(page.contains("Index of /x&lt;y"), "{page}");
        let a = page.find("href=\"a.txt\"").unwrap();
        let b = page
            .find("href=\"b%20%3C%26%3E.txt\">b &lt;&amp;&gt;.txt</a></td><td>5<")
            .unwrap();
        let s = page.find("href=\"sub/\">sub/</a>").unwrap();
        assert!(a < b && b < s, "{page}");
        assert!(!page.contains(".env"), "{page}");
        let page = String::from_utf8(render(&fd, b"", true).unwrap()).unwrap();
        assert!(page.contains("href=\".env\""), "{page}");
        assert!(!page.contains("../"), "{page}");
    }
}
