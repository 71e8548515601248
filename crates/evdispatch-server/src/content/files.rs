//! The document root: files opened only beneath it, and a bounded in-memory
//! cache of the small ones, revalidated by modification time.
//!
//! Confinement is the kernel's: every open is `openat2(root, path,
//! RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so `..`, absolute symlinks and
//! relative symlinks that climb out all fail (`EXDEV`) whatever the path
//! looked like. On a kernel without `openat2` (before 5.6) the fallback opens
//! the canonical path and checks that it lies under the canonical root.

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use crate::semantics::conditional::{Coding, ETag};
use crate::semantics::status::Status;
use crate::sys;

/// A small file held in memory, with the headers of its 200 prebuilt.
#[derive(Debug)]
pub struct CachedFile {
    /// The content.
    pub body: Box<[u8]>,
    /// The entity header lines of a 200 for the whole file, in the order of
    /// [`entity_headers`] (no `Vary`: see [`CachedFile::variants`]).
    pub headers: Box<[u8]>,
    /// Modification time, whole seconds (what the `ETag` is made of).
    pub mtime: i64,
    /// What `Last-Modified` says and the date preconditions compare: the
    /// modification time, or the second the file was looked up when that is
    /// earlier (a time in the future is never sent: RFC 9110 §8.8.2.1 wants
    /// it no later than `Date`).
    pub modified: i64,
    /// Its content type.
    pub content_type: ContentType,
    /// What identifies this version of the file.
    stamp: sys::Meta,
    checked_sec: AtomicU64,
    variants: AtomicU8,
}

impl CachedFile {
    /// The precompressed variants beside the file (bits of
    /// [`Coding::bit`]), as last seen on revalidation.
    pub fn variants(&self) -> u8 {
        self.variants.load(Ordering::Relaxed)
    }
}

/// An open file too large for the cache: sent with `sendfile`.
#[derive(Debug)]
pub struct LargeFile {
    /// The open file.
    pub file: File,
    /// Its size.
    pub size: u64,
    /// Modification time, whole seconds (what the `ETag` is made of).
    pub mtime: i64,
    /// As [`CachedFile::modified`].
    pub modified: i64,
    /// Its content type.
    pub content_type: ContentType,
    /// The precompressed variants beside it (bits of [`Coding::bit`]).
    pub variants: u8,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// A cached small file.
    Cached(Arc<CachedFile>),
    /// A large file, opened.
    Large(LargeFile),
    /// A directory named without its trailing slash (answer: 301).
    Redirect,
    /// A directory (named with its slash) without `index.html`, opened
    /// (answer: a listing, or 403).
    Directory(OwnedFd),
}

/// A `Content-Type`: a media type from `mime_guess`, and whether
/// `; charset=utf-8` follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentType {
    /// The media type, e.g. `text/html`.
    pub mime: &'static str,
    /// Text: `; charset=utf-8` is appended.
    pub utf8: bool,
}

impl ContentType {
    /// The `Content-Type: …\r\n` line into `out`.
    pub fn write_line(self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"Content-Type: ");
        out.extend_from_slice(self.mime.as_bytes());
        if self.utf8 {
            out.extend_from_slice(b"; charset=utf-8");
        }
        out.extend_from_slice(b"\r\n");
    }
}

impl std::fmt::Display for ContentType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.mime)?;
        if self.utf8 {
            f.write_str("; charset=utf-8")?;
        }
        Ok(())
    }
}

/// Cache and lookup counters.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct CacheStats {
    /// Lookups answered from memory.
    pub hits: u64,
    /// Lookups that opened the file.
    pub misses: u64,
    /// Cached entries checked against the file system (at most once a second each).
    pub revalidations: u64,
    /// Entries reloaded because the file changed.
    pub reloads: u64,
    /// Entries dropped to stay within the size bound.
    pub evictions: u64,
    /// Bytes held now.
    pub bytes: u64,
    /// Entries held now.
    pub entries: u64,
}

/// Limits of the cache.
#[derive(Debug, Clone, Copy)]
pub struct CacheLimits {
    /// Total bytes of file content held (per store).
    pub max_bytes: usize,
    /// Largest file cached; larger ones go through `sendfile`.
    pub max_file: usize,
}

/// The document root with its cache. One per worker (no locks on the hot
/// path); the thread-per-connection model shares one behind a mutex.
pub struct FileStore {
    root: OwnedFd,
    root_canonical: PathBuf,
    beneath: bool,
    cache: HashMap<Box<[u8]>, Arc<CachedFile>>,
    limits: CacheLimits,
    stats: CacheStats,
    cpath: Vec<u8>,
    /// The entry the last hit found, and its path: a client asking for the
    /// same file again (the keep-alive case) is answered without hashing
    /// the path. Forgotten whenever an entry leaves the cache.
    recent: Option<Arc<CachedFile>>,
    recent_path: Vec<u8>,
    /// Variants of the large (uncached) files: bits and the second they
    /// were probed, so a large file costs no extra open per request.
    large_variants: HashMap<Box<[u8]>, (u8, u64)>,
}

/// Most large files whose variants are remembered (the memo is emptied
/// when it would grow past this).
const LARGE_VARIANTS_MAX: usize = 4096;

impl std::fmt::Debug for FileStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStore")
            .field("root", &self.root_canonical)
            .field("stats", &self.stats)
            .finish()
    }
}

impl FileStore {
    /// Open the root directory.
    pub fn open(root: &Path, limits: CacheLimits) -> io::Result<FileStore> {
        let canonical = root.canonicalize().map_err(|e| {
            io::Error::new(e.kind(), format!("document root {}: {e}", root.display()))
        })?;
        let c = CString::new(canonical.as_os_str().as_bytes()).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "document root contains a NUL byte",
            )
        })?;
        let fd = sys::open_plain(&c)?;
        if !sys::fstat(fd.as_raw_fd())?.dir {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("document root {} is not a directory", canonical.display()),
            ));
        }
        // Probe openat2 once: ENOSYS means a kernel before 5.6.
        let beneath = match sys::open_beneath(fd.as_raw_fd(), c".") {
            Ok(_) => true,
            Err(e) if e.raw_os_error() == Some(libc::ENOSYS) => false,
            Err(e) => return Err(e),
        };
        Ok(FileStore {
            root: fd,
            root_canonical: canonical,
            beneath,
            cache: HashMap::new(),
            limits,
            stats: CacheStats::default(),
            cpath: Vec::with_capacity(256),
            recent: None,
            recent_path: Vec::with_capacity(256),
            large_variants: HashMap::new(),
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        let mut s = self.stats;
        s.entries = self.cache.len() as u64;
        s
    }

    /// Find the file for the normalised relative path `rel` (see
    /// [`normalize_target`](crate::normalize_target)), with a trailing `/`
    /// when the request named a directory: a directory is then served by its
    /// `index.html` (or found as `Found::Directory` without one), and
    /// without the slash it is `Found::Redirect`. `now_sec` is the current
    /// wall-clock second: a cached entry is checked against the file system
    /// when it was last checked in an earlier second.
    pub fn lookup(&mut self, rel: &[u8], now_sec: u64) -> Result<Found, Status> {
        if let Some(entry) = &self.recent {
            if self.recent_path == rel && entry.checked_sec.load(Ordering::Relaxed) >= now_sec {
                self.stats.hits += 1;
                return Ok(Found::Cached(entry.clone()));
            }
        }
        if let Some(entry) = self.cache.get(rel) {
            if entry.checked_sec.load(Ordering::Relaxed) >= now_sec {
                self.stats.hits += 1;
                let entry = entry.clone();
                self.recent = Some(entry.clone());
                self.recent_path.clear();
                self.recent_path.extend_from_slice(rel);
                return Ok(Found::Cached(entry));
            }
            return self.revalidate(rel, now_sec);
        }
        self.stats.misses += 1;
        let (fd, meta, ctype) = match self.open_file(rel)? {
            Opened::File(fd, meta, ctype) => (fd, meta, ctype),
            Opened::Other(found) => return Ok(found),
        };
        self.admit(rel, fd, meta, ctype, now_sec)
    }

    fn revalidate(&mut self, rel: &[u8], now_sec: u64) -> Result<Found, Status> {
        self.stats.revalidations += 1;
        let opened = self.open_file(rel);
        let (fd, meta, ctype) = match opened {
            Ok(Opened::File(fd, meta, ctype)) => (fd, meta, ctype),
            Ok(Opened::Other(found)) => {
                self.remove(rel);
                return Ok(found);
            }
            Err(Status::InternalError) => {
                // Out of descriptors (or another transient failure): the
                // cached copy is the best answer there is; check again later.
                self.stats.hits += 1;
                return Ok(Found::Cached(self.cache[rel].clone()));
            }
            Err(st) => {
                self.remove(rel);
                return Err(st);
            }
        };
        let same = self.cache.get(rel).is_some_and(|e| e.stamp == meta);
        if same {
            let variants = self.probe_variants(rel);
            let entry = &self.cache[rel];
            entry.variants.store(variants, Ordering::Relaxed);
            entry.checked_sec.store(now_sec, Ordering::Relaxed);
            self.stats.hits += 1;
            return Ok(Found::Cached(entry.clone()));
        }
        self.stats.reloads += 1;
        self.remove(rel);
        self.admit(rel, fd, meta, ctype, now_sec)
    }

    fn remove(&mut self, rel: &[u8]) {
        self.recent = None;
        if let Some(e) = self.cache.remove(rel) {
            self.stats.bytes -= e.body.len() as u64;
        }
    }

    /// Cache `fd` under `rel` if small enough, else hand it back as large.
    fn admit(
        &mut self,
        rel: &[u8],
        fd: OwnedFd,
        meta: sys::Meta,
        ctype: ContentType,
        now_sec: u64,
    ) -> Result<Found, Status> {
        let size = meta.size as usize;
        let modified = meta.mtime.min(now_sec as i64);
        if size > self.limits.max_file || size > self.limits.max_bytes {
            let variants = self.large_variants(rel, now_sec);
            return Ok(Found::Large(LargeFile {
                file: File::from(fd),
                size: meta.size,
                mtime: meta.mtime,
                modified,
                content_type: ctype,
                variants,
            }));
        }
        let mut body = vec![0u8; size];
        let mut got = 0;
        while got < size {
            match sys::pread(fd.as_raw_fd(), &mut body[got..], got as u64) {
                Ok(0) => break, // shrank meanwhile: serve what is there
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => return Err(Status::InternalError),
            }
        }
        body.truncate(got);
        let mut headers = Vec::with_capacity(192);
        let etag = ETag::new(meta.mtime, got as u64, Coding::Identity);
        entity_headers(&mut headers, ctype, got as u64, modified, &etag, None);
        let variants = self.probe_variants(rel);
        let entry = Arc::new(CachedFile {
            body: body.into_boxed_slice(),
            headers: headers.into_boxed_slice(),
            mtime: meta.mtime,
            modified,
            content_type: ctype,
            stamp: meta,
            checked_sec: AtomicU64::new(now_sec),
            variants: AtomicU8::new(variants),
        });
        // Make room: drop arbitrary entries (the map's order) until it fits.
        while self.stats.bytes as usize + got > self.limits.max_bytes {
            let Some(key) = self.cache.keys().next().cloned() else {
                break;
            };
            self.remove(&key);
            self.stats.evictions += 1;
        }
        self.stats.bytes += got as u64;
        self.cache.insert(rel.into(), entry.clone());
        Ok(Found::Cached(entry))
    }

    /// The variants of a large file, probed at most once a second.
    fn large_variants(&mut self, rel: &[u8], now_sec: u64) -> u8 {
        if let Some(&(bits, checked)) = self.large_variants.get(rel) {
            if checked >= now_sec {
                return bits;
            }
        }
        let bits = self.probe_variants(rel);
        if let Some(memo) = self.large_variants.get_mut(rel) {
            *memo = (bits, now_sec);
            return bits;
        }
        if self.large_variants.len() >= LARGE_VARIANTS_MAX {
            self.large_variants.clear();
        }
        self.large_variants.insert(rel.into(), (bits, now_sec));
        bits
    }

    /// Which precompressed variants (`rel.br`, `rel.gz`, regular files
    /// beneath the root) sit beside `rel` (for a directory, beside its
    /// `index.html`: see [`push_variant_name`]). None for a file that is
    /// itself a variant.
    fn probe_variants(&mut self, rel: &[u8]) -> u8 {
        if rel.ends_with(b".gz") || rel.ends_with(b".br") {
            return 0;
        }
        let mut bits = 0;
        let mut name = Vec::with_capacity(rel.len() + 13);
        for coding in [Coding::Br, Coding::Gzip] {
            name.clear();
            name.extend_from_slice(rel);
            push_variant_name(&mut name, coding);
            if let Ok(fd) = self.open_rel(self.root.as_raw_fd(), &name) {
                if sys::fstat(fd.as_raw_fd()).is_ok_and(|m| m.regular) {
                    bits |= coding.bit();
                }
            }
        }
        bits
    }

    /// Open `rel` beneath the root; a directory named with its slash gives
    /// its `index.html`. A regular file comes back with its metadata and
    /// content type.
    fn open_file(&mut self, rel: &[u8]) -> Result<Opened, Status> {
        let mut fd = self.open_rel(
            self.root.as_raw_fd(),
            if rel.is_empty() { b"." } else { rel },
        )?;
        let mut meta = sys::fstat(fd.as_raw_fd()).map_err(|_| Status::InternalError)?;
        let mut name = rel;
        if meta.dir {
            if !rel.is_empty() && !rel.ends_with(b"/") {
                return Ok(Opened::Other(Found::Redirect));
            }
            fd = match self.open_rel(fd.as_raw_fd(), b"index.html") {
                Ok(index) => index,
                Err(Status::NotFound) => return Ok(Opened::Other(Found::Directory(fd))),
                Err(st) => return Err(st),
            };
            meta = sys::fstat(fd.as_raw_fd()).map_err(|_| Status::InternalError)?;
            name = b"index.html";
        }
        if !meta.regular {
            return Err(Status::Forbidden);
        }
        Ok(Opened::File(fd, meta, content_type(name)))
    }

    fn open_rel(&mut self, dir: i32, rel: &[u8]) -> Result<OwnedFd, Status> {
        self.cpath.clear();
        self.cpath.extend_from_slice(rel);
        self.cpath.push(0);
        let c = std::ffi::CStr::from_bytes_with_nul(&self.cpath).map_err(|_| Status::Forbidden)?;
        let r = if self.beneath {
            sys::open_beneath(dir, c)
        } else {
            self.open_checked(dir, rel)
        };
        r.map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::ENOTDIR) | Some(libc::ENAMETOOLONG) => Status::NotFound,
            Some(libc::EXDEV) | Some(libc::ELOOP) | Some(libc::EACCES) | Some(libc::EPERM) => {
                Status::Forbidden
            }
            _ => Status::InternalError,
        })
    }

    /// The pre-5.6 path: resolve fully, then check the result is under the root.
    fn open_checked(&self, dir: i32, rel: &[u8]) -> io::Result<OwnedFd> {
        let base = std::fs::read_link(format!("/proc/self/fd/{dir}"))?;
        let full = base.join(std::ffi::OsStr::from_bytes(rel)).canonicalize()?;
        if !full.starts_with(&self.root_canonical) {
            return Err(io::Error::from_raw_os_error(libc::EXDEV));
        }
        let c = CString::new(full.as_os_str().as_bytes())
            .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        sys::open_plain(&c)
    }
}

/// Turn `path`, a path [`FileStore::lookup`] takes, into the path of its
/// precompressed variant `coding`: the suffix appended, after `index.html`
/// for a directory (empty, or ending in `/`), whose answer is its index's
/// (as nginx's `gzip_static` applies to the index it redirects to).
pub(crate) fn push_variant_name(path: &mut Vec<u8>, coding: Coding) {
    if path.is_empty() || path.ends_with(b"/") {
        path.extend_from_slice(b"index.html");
    }
    path.extend_from_slice(coding.suffix());
}

/// What opening a path gave.
enum Opened {
    /// A regular file to serve (or cache).
    File(OwnedFd, sys::Meta, ContentType),
    /// A directory to redirect or list.
    Other(Found),
}

/// The entity header lines of a file of `size` bytes: `Content-Type`, then
/// for a 206 of the bytes `range` (`start..end`) its `Content-Range`, then
/// `Content-Length` (of the range, or the whole file), [`validator_headers`]
/// and `Accept-Ranges: bytes`.
pub fn entity_headers(
    out: &mut Vec<u8>,
    ctype: ContentType,
    size: u64,
    modified: i64,
    etag: &ETag,
    range: Option<(u64, u64)>,
) {
    use std::io::Write;
    ctype.write_line(out);
    let len = match range {
        Some((start, end)) => {
            let _ = write!(out, "Content-Range: bytes {start}-{}/{size}\r\n", end - 1);
            end - start
        }
        None => size,
    };
    let _ = write!(out, "Content-Length: {len}\r\n");
    validator_headers(out, modified, etag);
    out.extend_from_slice(b"Accept-Ranges: bytes\r\n");
}

/// `Last-Modified` and `ETag` lines into `out` (what a 304 carries too);
/// `modified` is the file's [`CachedFile::modified`], never later than the
/// response's `Date`.
pub fn validator_headers(out: &mut Vec<u8>, modified: i64, etag: &ETag) {
    use std::io::Write;
    out.extend_from_slice(b"Last-Modified: ");
    let t = UNIX_EPOCH + Duration::from_secs(modified.max(0) as u64);
    let _ = write!(out, "{}", httpdate::HttpDate::from(t));
    out.extend_from_slice(b"\r\nETag: ");
    out.extend_from_slice(etag.as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// The `Content-Type` for a path, from its extension (`mime_guess`'s
/// table, but `.mjs` is `text/javascript` as `.js` is, RFC 9239;
/// `application/octet-stream` when unknown). Text types, and the
/// JavaScript, JSON and XML ones, say `charset=utf-8`.
pub fn content_type(path: &[u8]) -> ContentType {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let ext = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) => &name[dot + 1..],
        None => b"",
    };
    let mime = std::str::from_utf8(ext)
        .ok()
        .filter(|e| !e.is_empty())
        .and_then(|e| {
            // RFC 9239: JavaScript modules are `text/javascript` as `.js`
            // is (mime_guess says `application/javascript`).
            if e.eq_ignore_ascii_case("mjs") {
                Some("text/javascript")
            } else {
                mime_guess::from_ext(e).first_raw()
            }
        })
        .unwrap_or("application/octet-stream");
    let utf8 = mime.starts_with("text/")
        || matches!(
            mime,
            "application/javascript" | "application/json" | "application/xml"
        )
        || (mime.starts_with("application/")
            && (mime.ends_with("+json") || mime.ends_with("+xml")));
    ContentType { mime, utf8 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let ct = |p: &[u8]| content_type(p).to_string();
        assert_eq!(ct(b"a/b.HTML"), "text/html; charset=utf-8");
        assert_eq!(ct(b"x.png"), "image/png");
        assert_eq!(ct(b"x.css"), "text/css; charset=utf-8");
        assert_eq!(ct(b"x.json"), "application/json; charset=utf-8");
        assert_eq!(ct(b"x.js"), "text/javascript; charset=utf-8");
        assert_eq!(ct(b"x.mjs"), "text/javascript; charset=utf-8");
        assert_eq!(ct(b"x.MJS"), "text/javascript; charset=utf-8");
        assert_eq!(ct(b"x.woff2"), "font/woff2");
        assert_eq!(ct(b"x.gz"), "application/gzip");
        assert_eq!(ct(b"noext"), "application/octet-stream");
        assert_eq!(ct(b"dir.d/noext"), "application/octet-stream");
        assert_eq!(ct(b"x.verylongextension"), "application/octet-stream");
        assert_eq!(ct(b"x.\xff"), "application/octet-stream");
    }

    fn cached_body(found: Result<Found, Status>) -> Vec<u8> {
        match found {
            Ok(Found::Cached(c)) => c.body.to_vec(),
            other => panic!("not cached: {other:?}"),
        }
    }

    /// The file the last lookup found is answered again without the map,
    /// but never past its second: a change on disk is seen at the next
    /// revalidation, and another path never gets its entry.
    #[test]
    fn the_recent_entry_is_revalidated_and_kept_per_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"first").unwrap();
        std::fs::write(dir.path().join("b"), b"other").unwrap();
        let limits = CacheLimits {
            max_bytes: 1 << 20,
            max_file: 1 << 16,
        };
        let mut store = FileStore::open(dir.path(), limits).unwrap();
        assert_eq!(cached_body(store.lookup(b"a", 100)), b"first");
        assert_eq!(cached_body(store.lookup(b"a", 100)), b"first");
        assert_eq!(cached_body(store.lookup(b"b", 100)), b"other");
        assert_eq!(cached_body(store.lookup(b"a", 100)), b"first");
        assert_eq!(store.stats().hits, 2);
        std::fs::write(dir.path().join("a"), b"second version").unwrap();
        assert_eq!(cached_body(store.lookup(b"a", 101)), b"second version");
        assert_eq!(cached_body(store.lookup(b"a", 101)), b"second version");
        std::fs::remove_file(dir.path().join("a")).unwrap();
        assert_eq!(store.lookup(b"a", 102).unwrap_err(), Status::NotFound);
        assert_eq!(store.lookup(b"a", 102).unwrap_err(), Status::NotFound);
    }

    #[test]
    fn entity_header_format() {
        let mut v = Vec::new();
        let ct = ContentType {
            mime: "text/plain",
            utf8: false,
        };
        let tag = ETag::new(784111777, 12, Coding::Identity);
        entity_headers(&mut v, ct, 12, 784111777, &tag, None);
        assert_eq!(
            std::str::from_utf8(&v).unwrap(),
            "Content-Type: text/plain\r\nContent-Length: 12\r\nLast-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\nETag: \"2ebc98a1-c\"\r\nAccept-Ranges: bytes\r\n"
        );
    }
}
