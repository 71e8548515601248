//! The output of a batch of responses: header bytes in one reused buffer
//! and the body parts after them (slices of cached files, ranges of large
//! files), sent with one gathered `writev`, and `sendfile` for large files.
//! The models fill an [`OutBatch`] through the [`Responder`] and send it
//! here, however many responses it holds.
//!
//! [`Responder`]: crate::content::response::Responder

use std::fs::File;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use crate::content::access_log::Pending;
use crate::content::files::CachedFile;
use crate::sys;

/// One piece of output.
#[derive(Debug)]
pub enum Part {
    /// A range of the batch's header buffer.
    Head {
        /// Start offset in `OutBatch::head`.
        start: usize,
        /// End offset.
        end: usize,
    },
    /// A constant (error-page body).
    Static(&'static [u8]),
    /// A cached file's body, bytes `start..end` (a slice, never a copy).
    Cached {
        /// The cached file.
        file: Arc<CachedFile>,
        /// First byte.
        start: usize,
        /// One past the last byte.
        end: usize,
    },
    /// A large file's bytes `offset..end`, sent with `sendfile`.
    File {
        /// The open file.
        file: FileRef,
        /// Next byte to send.
        offset: u64,
        /// End of the range.
        end: u64,
    },
}

impl Part {
    /// Its length: for a file part, what is left of it to send.
    fn len(&self) -> u64 {
        match self {
            Part::Head { start, end } => (end - start) as u64,
            Part::Static(b) => b.len() as u64,
            Part::Cached { start, end, .. } => (end - start) as u64,
            Part::File { offset, end, .. } => end.saturating_sub(*offset),
        }
    }
}

/// The open file of a [`Part::File`]: owned by the one part of a plain or
/// single-range answer (no allocation), shared by the parts of a
/// `multipart/byteranges` answer.
#[derive(Debug)]
pub enum FileRef {
    /// The only part sending from this file.
    Owned(File),
    /// One of several parts sending from this file.
    Shared(Arc<File>),
}

impl AsRawFd for FileRef {
    fn as_raw_fd(&self) -> RawFd {
        match self {
            FileRef::Owned(f) => f.as_raw_fd(),
            FileRef::Shared(f) => f.as_raw_fd(),
        }
    }
}

/// The output of one or more (pipelined) responses, written in order.
///
/// With an access log, it also carries the log lines of its responses,
/// complete but for the body bytes sent: they are completed from what was
/// written when the batch is cleared (all written, or given up) or dropped
/// (its connection closed), wherever that happens, in every model.
#[derive(Debug, Default)]
pub struct OutBatch {
    /// Header bytes of the responses.
    pub head: Vec<u8>,
    /// Added only through [`OutBatch::push`] and [`OutBatch::push_head`],
    /// which keep `stream_len`.
    parts: Vec<Part>,
    /// The bytes of every part as added since the batch was cleared.
    stream_len: u64,
    first: usize,
    offset: usize,
    pub(crate) responses: usize,
    /// Bytes written by [`OutBatch::send`] since the owner last took them.
    pub written: u64,
    /// The connection is closed (or half-closed) right after this batch:
    /// see [`OutBatch::set_last`].
    last: bool,
    /// Bytes of this batch written since it was cleared (all parts).
    sent: u64,
    /// The length of the head of the last response finished.
    pub(crate) last_head: usize,
    /// The access-log lines of the responses (`None` without a log).
    pub(crate) log: Option<Box<Pending>>,
}

impl Drop for OutBatch {
    fn drop(&mut self) {
        self.complete_log();
    }
}

impl OutBatch {
    /// An empty batch with room for typical pipelines.
    pub fn new() -> OutBatch {
        let mut b = OutBatch::default();
        b.head.reserve(4096);
        b.parts.reserve(16);
        b
    }

    /// Complete the pending access-log lines with the bytes written.
    fn complete_log(&mut self) {
        if let Some(log) = self.log.as_deref_mut() {
            log.complete(self.sent);
        }
    }

    /// The bytes of every part, written or not: where the next response
    /// would begin (for the access log), kept as parts are added.
    pub(crate) fn stream_len(&self) -> u64 {
        self.stream_len
    }

    /// Add a body part after what the batch holds.
    pub(crate) fn push(&mut self, part: Part) {
        self.stream_len += part.len();
        self.parts.push(part);
    }

    /// True when everything has been written.
    pub fn is_empty(&self) -> bool {
        self.first == self.parts.len()
    }

    /// True when the batch holds a file part (the batch should be written
    /// before more responses are added, so that it stays small).
    pub fn has_file(&self) -> bool {
        self.parts[self.first..]
            .iter()
            .any(|p| matches!(p, Part::File { .. }))
    }

    /// Forget everything (keeps the allocations; `written` is the owner's),
    /// completing the access-log lines with what was written.
    pub fn clear(&mut self) {
        self.complete_log();
        self.sent = 0;
        self.stream_len = 0;
        self.head.clear();
        self.parts.clear();
        self.first = 0;
        self.offset = 0;
        self.responses = 0;
        self.last = false;
    }

    /// Say that the connection is closed or half-closed (`close`,
    /// `shutdown(SHUT_WR)`) as soon as this batch is written. Its memory
    /// parts are then sent with `MSG_MORE`: the kernel keeps the final
    /// segment back, and the close that follows attaches its FIN to that
    /// segment and sends both at once (`tcp_send_fin`), one segment (and
    /// one trip through the peer's receive path) fewer per connection. Only
    /// for a batch that is certainly followed by the close: a held segment
    /// otherwise waits for the cork timer (200 ms). Cleared by
    /// [`OutBatch::clear`].
    pub fn set_last(&mut self, last: bool) {
        self.last = last;
    }

    pub(crate) fn push_head(&mut self, start: usize) {
        let end = self.head.len();
        self.stream_len += (end - start) as u64;
        let live = self.first < self.parts.len();
        if let Some(Part::Head { end: e, .. }) = self.parts.last_mut() {
            if *e == start && live {
                *e = end;
                return;
            }
        }
        self.parts.push(Part::Head { start, end });
    }

    /// The unwritten bytes as slices, up to `iov.len()` of them and up to
    /// the first file part. Returns how many slices were filled and whether
    /// a file part follows them.
    pub fn gather<'a>(&'a self, iov: &mut [IoSlice<'a>]) -> (usize, bool) {
        let mut n = 0;
        for (i, part) in self.parts[self.first..].iter().enumerate() {
            if n == iov.len() {
                return (n, false);
            }
            let skip = if i == 0 { self.offset } else { 0 };
            let bytes: &[u8] = match part {
                Part::Head { start, end } => &self.head[*start..*end],
                Part::Static(s) => s,
                Part::Cached { file, start, end } => &file.body[*start..*end],
                Part::File { .. } => return (n, true),
            };
            if bytes.len() > skip {
                iov[n] = IoSlice::new(&bytes[skip..]);
                n += 1;
            }
        }
        (n, false)
    }

    /// Mark `n` bytes of memory parts as written.
    pub fn advance(&mut self, mut n: usize) {
        self.sent += n as u64;
        while n > 0 && self.first < self.parts.len() {
            let part = &self.parts[self.first];
            if matches!(part, Part::File { .. }) {
                return;
            }
            let left = part.len() as usize - self.offset;
            if n >= left {
                n -= left;
                self.first += 1;
                self.offset = 0;
            } else {
                self.offset += n;
                n = 0;
            }
        }
        self.skip_empty();
    }

    fn skip_empty(&mut self) {
        while self.first < self.parts.len() {
            // (`offset` is 0 at a file part, which counts its own.)
            if self.parts[self.first].len() != self.offset as u64 {
                break;
            }
            self.first += 1;
            self.offset = 0;
        }
        if self.is_empty() {
            self.clear();
        }
    }

    /// The file part at the front, if the next bytes come from a file.
    pub fn front_file(&mut self) -> Option<(RawFd, &mut u64, u64)> {
        match self.parts.get_mut(self.first) {
            Some(Part::File { file, offset, end }) => Some((file.as_raw_fd(), offset, *end)),
            _ => None,
        }
    }

    /// Read the next bytes of the file part at the front into `buf` (as
    /// many as fit, from its offset: `pread`, the page cache's copy)
    /// without marking them sent ([`OutBatch::advance_file`] does); how
    /// many. `Ok(0)`: the front is not a file part.
    pub fn read_front_file(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some((file, offset, end)) = self.front_file() else {
            return Ok(0);
        };
        let want = (end - *offset).min(buf.len() as u64) as usize;
        let offset = *offset;
        loop {
            match sys::pread(file, &mut buf[..want], offset) {
                Ok(0) if want > 0 => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file shrank while being sent",
                    ))
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Mark `n` bytes of the file part at the front as sent (read with
    /// [`OutBatch::read_front_file`] and written elsewhere).
    pub fn advance_file(&mut self, n: usize) {
        if let Some((_, offset, _)) = self.front_file() {
            *offset += n as u64;
            self.sent += n as u64;
            self.skip_empty();
        }
    }

    /// Send the file part at the front with `sendfile` (from its offset: a
    /// range starts where it should; the bytes go from the page cache to the
    /// socket without a copy through user space) until it is all sent
    /// (`Ok(true)`, also when the front is not a file) or the non-blocking
    /// socket is full (`Ok(false)`).
    pub fn send_front_file(&mut self, fd: RawFd) -> io::Result<bool> {
        while let Some((file, offset, end)) = self.front_file() {
            let count = (end - *offset).min(1 << 21) as usize;
            match sys::sendfile(fd, file, offset, count) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "file shrank while being sent",
                    ))
                }
                Ok(n) => {
                    self.written += n as u64;
                    self.sent += n as u64;
                    self.skip_empty()
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Write as much as the socket takes now: gathered `sendmsg` for memory
    /// parts, `sendfile` for file parts. `Ok(true)`: all written;
    /// `Ok(false)`: the socket is full (wait for writability).
    pub fn send(&mut self, fd: RawFd) -> io::Result<bool> {
        loop {
            if self.is_empty() {
                return Ok(true);
            }
            if self.front_file().is_some() {
                if !self.send_front_file(fd)? {
                    return Ok(false);
                }
                continue;
            }
            if !self.send_gathered(fd)? {
                return Ok(false);
            }
        }
    }

    /// `write` given the unwritten memory bytes as slices (up to 64 of
    /// them, up to the first file part, as [`OutBatch::gather`]) and
    /// whether a file part follows them. A response or two (a head and a
    /// body each) need few slices: a small array, not 64 of them to fill,
    /// for the usual batch.
    pub fn with_gathered<R>(&self, write: impl FnOnce(&[IoSlice<'_>], bool) -> R) -> R {
        fn gathered<const N: usize, R>(
            batch: &OutBatch,
            write: impl FnOnce(&[IoSlice<'_>], bool) -> R,
        ) -> R {
            let mut iov = [IoSlice::new(&[]); N];
            let (n, file_next) = batch.gather(&mut iov);
            write(&iov[..n], file_next)
        }
        if self.parts.len() - self.first <= 4 {
            gathered::<4, R>(self, write)
        } else {
            gathered::<64, R>(self, write)
        }
    }

    /// One gathered `sendmsg` of memory parts from the front. False when
    /// the socket is full (it took less than offered, or `EAGAIN`); true
    /// when it took all (or the call was interrupted).
    fn send_gathered(&mut self, fd: RawFd) -> io::Result<bool> {
        let last = self.last;
        let (sent, want) = self.with_gathered(|iov, file_next| {
            let want: usize = iov.iter().map(|s| s.len()).sum();
            (sys::send_vectored(fd, iov, file_next || last), want)
        });
        match sent {
            Ok(written) => {
                self.written += written as u64;
                self.advance(written);
                // A short write on a stream socket: its buffer is full.
                Ok(written == want)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(true),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_advances_across_parts() {
        let mut b = OutBatch::new();
        b.head.extend_from_slice(b"abc");
        b.push_head(0);
        b.push(Part::Static(b"defg"));
        b.head.extend_from_slice(b"hi");
        b.push_head(3);
        {
            let mut iov = [IoSlice::new(&[]); 8];
            let (n, file) = b.gather(&mut iov);
            assert_eq!((n, file), (3, false));
        }
        b.advance(5);
        let mut iov = [IoSlice::new(&[]); 8];
        let (n, _) = b.gather(&mut iov);
        let rest: Vec<u8> = iov[..n].iter().flat_map(|s| s.iter().copied()).collect();
        assert_eq!(rest, b"fghi");
        b.advance(4);
        assert!(b.is_empty());
        assert_eq!(b.stream_len(), 0, "cleared");
    }

    #[test]
    fn stream_len_is_where_the_next_response_begins() {
        let mut b = OutBatch::new();
        b.head.extend_from_slice(b"abc");
        b.push_head(0);
        b.head.extend_from_slice(b"de");
        b.push_head(3); // merged into the first head part
        b.push(Part::Static(b"fgh"));
        let file = File::open("/proc/self/exe").unwrap();
        b.push(Part::File {
            file: FileRef::Owned(file),
            offset: 100,
            end: 150,
        });
        assert_eq!(b.stream_len(), 5 + 3 + 50);
        // Written bytes still count (the parts' lengths shrink only for a
        // file part, as it is sent: the position does not move back).
        b.advance(8);
        *b.front_file().unwrap().1 += 20;
        assert_eq!(b.stream_len(), 58);
        b.clear();
        assert_eq!(b.stream_len(), 0);
    }
}
