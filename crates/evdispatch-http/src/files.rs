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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::status::Status;
use crate::sys;

/// A small file held in memory, with its entity headers prebuilt.
#[derive(Debug)]
pub struct CachedFile {
    /// The content.
    pub body: Box<[u8]>,
    /// `Content-Type`, `Content-Length` and `Last-Modified` header lines.
    pub headers: Box<[u8]>,
    /// Modification time, whole seconds (what `If-Modified-Since` compares).
    pub mtime: i64,
    stamp: Stamp,
    checked_sec: AtomicU64,
}

/// What identifies a version of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    mtime: i64,
    mtime_nsec: i64,
    size: u64,
    ino: u64,
    dev: u64,
}

impl From<sys::Meta> for Stamp {
    fn from(m: sys::Meta) -> Stamp {
        Stamp {
            mtime: m.mtime,
            mtime_nsec: m.mtime_nsec,
            size: m.size,
            ino: m.ino,
            dev: m.dev,
        }
    }
}

/// An open file too large for the cache: sent with `sendfile`.
#[derive(Debug)]
pub struct LargeFile {
    /// The open file.
    pub file: File,
    /// Its size.
    pub size: u64,
    /// Modification time, whole seconds.
    pub mtime: i64,
    /// Its content type.
    pub content_type: &'static str,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Found {
    /// A cached small file.
    Cached(Arc<CachedFile>),
    /// A large file, opened.
    Large(LargeFile),
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
}

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
        let fd = sys::open_plain(libc::AT_FDCWD, &c)?;
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
        })
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        let mut s = self.stats;
        s.entries = self.cache.len() as u64;
        s
    }

    /// Find the file for the normalised relative path `rel` (see
    /// [`normalize_target`](crate::normalize_target)); a directory is served
    /// by its `index.html`. `now_sec` is the current wall-clock second: a
    /// cached entry is checked against the file system when it was last
    /// checked in an earlier second.
    pub fn lookup(&mut self, rel: &[u8], now_sec: u64) -> Result<Found, Status> {
        if let Some(entry) = self.cache.get(rel) {
            if entry.checked_sec.load(Ordering::Relaxed) >= now_sec {
                self.stats.hits += 1;
                return Ok(Found::Cached(entry.clone()));
            }
            return self.revalidate(rel, now_sec);
        }
        self.stats.misses += 1;
        let (fd, meta, ctype) = self.open_file(rel)?;
        self.admit(rel, fd, meta, ctype, now_sec)
    }

    fn revalidate(&mut self, rel: &[u8], now_sec: u64) -> Result<Found, Status> {
        self.stats.revalidations += 1;
        let opened = self.open_file(rel);
        let (fd, meta, ctype) = match opened {
            Ok(x) => x,
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
        let same = self
            .cache
            .get(rel)
            .is_some_and(|e| e.stamp == Stamp::from(meta));
        if same {
            let entry = &self.cache[rel];
            entry.checked_sec.store(now_sec, Ordering::Relaxed);
            self.stats.hits += 1;
            return Ok(Found::Cached(entry.clone()));
        }
        self.stats.reloads += 1;
        self.remove(rel);
        self.admit(rel, fd, meta, ctype, now_sec)
    }

    fn remove(&mut self, rel: &[u8]) {
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
        ctype: &'static str,
        now_sec: u64,
    ) -> Result<Found, Status> {
        let size = meta.size as usize;
        if size > self.limits.max_file || size > self.limits.max_bytes {
            return Ok(Found::Large(LargeFile {
                file: File::from(fd),
                size: meta.size,
                mtime: meta.mtime,
                content_type: ctype,
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
        let mut headers = Vec::with_capacity(128);
        entity_headers(&mut headers, ctype, got as u64, meta.mtime);
        let entry = Arc::new(CachedFile {
            body: body.into_boxed_slice(),
            headers: headers.into_boxed_slice(),
            mtime: meta.mtime,
            stamp: Stamp::from(meta),
            checked_sec: AtomicU64::new(now_sec),
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

    /// Open `rel` beneath the root; a directory gives its `index.html`.
    /// Returns the file, its metadata and its content type.
    fn open_file(&mut self, rel: &[u8]) -> Result<(OwnedFd, sys::Meta, &'static str), Status> {
        let fd = self.open_rel(
            self.root.as_raw_fd(),
            if rel.is_empty() { b"." } else { rel },
        )?;
        let meta = sys::fstat(fd.as_raw_fd()).map_err(|_| Status::InternalError)?;
        if meta.dir {
            let index = self.open_rel(fd.as_raw_fd(), b"index.html")?;
            let meta = sys::fstat(index.as_raw_fd()).map_err(|_| Status::InternalError)?;
            if !meta.regular {
                return Err(Status::Forbidden);
            }
            return Ok((index, meta, content_type(b"index.html")));
        }
        if !meta.regular {
            return Err(Status::Forbidden);
        }
        Ok((fd, meta, content_type(rel)))
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
        sys::open_plain(libc::AT_FDCWD, &c)
    }
}

/// `Content-Type`, `Content-Length`, `Last-Modified` lines into `out`.
pub fn entity_headers(out: &mut Vec<u8>, ctype: &str, len: u64, mtime: i64) {
    use std::io::Write;
    out.extend_from_slice(b"Content-Type: ");
    out.extend_from_slice(ctype.as_bytes());
    out.extend_from_slice(b"\r\nContent-Length: ");
    let _ = write!(out, "{len}");
    out.extend_from_slice(b"\r\nLast-Modified: ");
    let t = UNIX_EPOCH + Duration::from_secs(mtime.max(0) as u64);
    let _ = write!(out, "{}", httpdate::HttpDate::from(t));
    out.extend_from_slice(b"\r\n");
}

/// Whole seconds since the epoch of `t`.
pub fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The `Content-Type` for a path, from its extension.
pub fn content_type(path: &[u8]) -> &'static str {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let ext = match name.iter().rposition(|&b| b == b'.') {
        Some(dot) => &name[dot + 1..],
        None => b"",
    };
    let mut lower = [0u8; 8];
    if ext.len() > lower.len() {
        return "application/octet-stream";
    }
    for (d, s) in lower.iter_mut().zip(ext) {
        *d = s.to_ascii_lowercase();
    }
    match &lower[..ext.len()] {
        b"html" | b"htm" => "text/html; charset=utf-8",
        b"txt" => "text/plain; charset=utf-8",
        b"css" => "text/css",
        b"js" | b"mjs" => "text/javascript",
        b"json" => "application/json",
        b"xml" => "application/xml",
        b"svg" => "image/svg+xml",
        b"png" => "image/png",
        b"jpg" | b"jpeg" => "image/jpeg",
        b"gif" => "image/gif",
        b"webp" => "image/webp",
        b"ico" => "image/x-icon",
        b"avif" => "image/avif",
        b"woff" => "font/woff",
        b"woff2" => "font/woff2",
        b"ttf" => "font/ttf",
        b"pdf" => "application/pdf",
        b"wasm" => "application/wasm",
        b"mp4" => "video/mp4",
        b"webm" => "video/webm",
        b"mp3" => "audio/mpeg",
        b"ogg" => "audio/ogg",
        b"zip" => "application/zip",
        b"gz" => "application/gzip",
        b"tar" => "application/x-tar",
        b"md" => "text/markdown; charset=utf-8",
        b"csv" => "text/csv; charset=utf-8",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        assert_eq!(content_type(b"a/b.HTML"), "text/html; charset=utf-8");
        assert_eq!(content_type(b"x.png"), "image/png");
        assert_eq!(content_type(b"noext"), "application/octet-stream");
        assert_eq!(content_type(b"dir.d/noext"), "application/octet-stream");
        assert_eq!(
            content_type(b"x.verylongextension"),
            "application/octet-stream"
        );
    }

    #[test]
    fn entity_header_format() {
        let mut v = Vec::new();
        entity_headers(&mut v, "text/plain", 12, 784111777);
        assert_eq!(
            std::str::from_utf8(&v).unwrap(),
            "Content-Type: text/plain\r\nContent-Length: 12\r\nLast-Modified: Sun, 06 Nov 1994 08:49:37 GMT\r\n"
        );
    }
}
