//! The transport a connection's bytes travel over: the bare socket, or TLS
//! on it ([`Tls`], a rustls server connection). The models read with
//! [`recv`] and write an [`OutBatch`] with [`send`]; both take the
//! connection's `Option<Box<Tls>>` and test it once per call, so a plain
//! connection pays one branch and the HTTP code above never knows which it
//! is.
//!
//! # Reading
//!
//! [`Tls::recv`] behaves as `recv(2)` on a socket: decrypted bytes, `0` at
//! the end (a `close_notify` or the TCP EOF), `WouldBlock` only once the
//! socket is drained *and* no decrypted byte is left in rustls. rustls can
//! hold plaintext after the socket is drained (several records read at
//! once, more than the caller's buffer had room for), so a caller must not
//! take a short read over TLS for a drained socket: it reads on until
//! `WouldBlock` (the readiness model does), or a request would wait for an
//! event that never comes. The handshake runs inside these reads: its
//! replies (and the session tickets after it) are written as it goes, and
//! whatever the socket does not take now stays queued in rustls until the
//! next [`send`] ([`Tls::wants_write`] tells).
//!
//! The io_uring completion model receives through the ring instead: it
//! hands the ciphertext it got to [`Tls::feed`].
//!
//! # Writing
//!
//! [`Tls::send`] encrypts the batch's memory parts straight from where
//! they are and its file parts from the page cache, a chunk at a time
//! (`pread` into the caller's chunk buffer, [`TLS_CHUNK`]); `sendfile`
//! cannot be used, the bytes must pass through the cipher. At most
//! [`TLS_BUFFER`] bytes of records wait in rustls for the socket, so a
//! client that reads a large file slowly holds that much and no more: the
//! rest stays in the file.
//!
//! # Failures
//!
//! A handshake that fails is counted by kind ([`TlsCounters`]) and answered
//! as nginx does: plaintext HTTP sent to the HTTPS port gets a `400` in
//! plaintext; anything else the alert rustls chose. The read then returns
//! an [`io::ErrorKind::InvalidData`] error, and the caller closes the
//! connection with a lingering close so that the answer is not destroyed
//! by a reset.
//!
//! [`TlsCounters`]: crate::conn::stats::TlsCounters

use std::io::{self, IoSlice, Read, Write};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rustls::server::ServerConnection;

use crate::conn::stats::Counters;
use crate::content::access_log::TlsInfo;
use crate::content::out::OutBatch;
use crate::content::response::Via;
use crate::semantics::status::Status;
use crate::sys;

/// The most encrypted bytes a connection holds waiting for its socket
/// (rustls' outgoing buffer limit).
pub const TLS_BUFFER: usize = 64 * 1024;

/// The size of the chunks a file is encrypted in: one TLS record's
/// plaintext at most.
pub const TLS_CHUNK: usize = 16 * 1024;

/// A TLS connection's state: rustls' server connection and what the
/// server needs to know about it.
pub struct Tls {
    conn: ServerConnection,
    /// The first byte the client sent (a plaintext HTTP request begins
    /// with a method's capital letter, a TLS record never does).
    first: Option<u8>,
    /// The handshake completed and was counted.
    established: bool,
    /// The connection failed (an alert was sent or received): nothing more
    /// is written in TLS.
    failed: bool,
    /// On a blocking socket, when a read gives up (see
    /// [`Tls::set_deadline`]).
    deadline: Option<Instant>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("handshaking", &self.conn.is_handshaking())
            .field("established", &self.established)
            .field("failed", &self.failed)
            .finish()
    }
}

/// Read `buf` from the socket `fd` (`recv(2)`), noting the first byte of
/// the connection.
struct SockRead<'a> {
    fd: RawFd,
    first: &'a mut Option<u8>,
}

impl Read for SockRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = sys::recv(self.fd, buf)?;
        if self.first.is_none() && n > 0 {
            *self.first = Some(buf[0]);
        }
        Ok(n)
    }
}

/// Write to the socket `fd` (`sendmsg`, never `SIGPIPE`).
struct SockWrite(RawFd);

impl Write for SockWrite {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        sys::send_vectored(self.0, &[IoSlice::new(buf)], false)
    }
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        sys::send_vectored(self.0, bufs, false)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Read from a connection: `recv(2)`, or [`Tls::recv`] over TLS.
#[inline]
pub fn recv(
    tls: &mut Option<Box<Tls>>,
    fd: RawFd,
    buf: &mut [u8],
    counters: &mut Counters,
) -> io::Result<usize> {
    match tls {
        None => sys::recv(fd, buf),
        Some(t) => t.recv(fd, buf, counters),
    }
}

/// Write as much of `out` as the socket takes now: [`OutBatch::send`], or
/// [`Tls::send`] over TLS (`chunk`: its file buffer). `Ok(true)`: all
/// written; `Ok(false)`: the socket is full.
#[inline]
pub fn send(
    tls: &mut Option<Box<Tls>>,
    out: &mut OutBatch,
    fd: RawFd,
    chunk: &mut [u8],
) -> io::Result<bool> {
    match tls {
        None => out.send(fd),
        Some(t) => t.send(out, fd, chunk),
    }
}

/// How a request on the connection `fd` came: plain, or over the TLS
/// session of `tls` (its version and cipher suite, once negotiated).
#[inline]
pub fn via(tls: &Option<Box<Tls>>, fd: RawFd) -> Via {
    Via {
        fd,
        tls: tls.as_ref().map(|t| t.info()),
    }
}

/// The connection is still in its TLS handshake.
#[inline]
pub fn handshaking(tls: &Option<Box<Tls>>) -> bool {
    tls.as_ref().is_some_and(|t| t.conn.is_handshaking())
}

/// The client of a TLS connection has sent at least a byte (a ClientHello
/// began); false for a plain connection.
#[inline]
pub fn hello_received(tls: &Option<Box<Tls>>) -> bool {
    tls.as_ref().is_some_and(|t| t.received_any())
}

/// Before closing: a TLS connection that was established says
/// `close_notify` (one try, whatever the socket takes).
pub fn close_notify(tls: &mut Option<Box<Tls>>, fd: RawFd) {
    if let Some(t) = tls {
        if t.established && !t.failed {
            t.conn.send_close_notify();
            let _ = t.conn.write_tls(&mut SockWrite(fd));
        }
    }
}

impl Tls {
    /// A new server connection with `config`.
    pub fn new(config: &Arc<rustls::ServerConfig>) -> io::Result<Box<Tls>> {
        let mut conn = ServerConnection::new(config.clone()).map_err(io::Error::other)?;
        conn.set_buffer_limit(Some(TLS_BUFFER));
        Ok(Box::new(Tls {
            conn,
            first: None,
            established: false,
            failed: false,
            deadline: None,
        }))
    }

    /// The transport of a connection just accepted: TLS with `config`
    /// (HTTPS), or none.
    pub fn accept(config: Option<&Arc<rustls::ServerConfig>>) -> io::Result<Option<Box<Tls>>> {
        config.map(Tls::new).transpose()
    }

    /// On a blocking socket: [`Tls::recv`] fails with `TimedOut` once
    /// `deadline` has passed, even while bytes keep arriving (a handshake
    /// or a record sent a byte at a time reads on inside one call, where
    /// the caller's deadline would not be looked at).
    pub fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }

    /// The session's version and cipher suite as the access log shows them
    /// (`-` before they are negotiated).
    pub fn info(&self) -> TlsInfo {
        use rustls::{CipherSuite as C, ProtocolVersion as V};
        let protocol = match self.conn.protocol_version() {
            Some(V::TLSv1_3) => "TLSv1.3",
            Some(V::TLSv1_2) => "TLSv1.2",
            _ => "-",
        };
        let cipher = match self.conn.negotiated_cipher_suite().map(|s| s.suite()) {
            // rustls' names of the TLS 1.3 suites, as IANA spells them.
            Some(C::TLS13_AES_128_GCM_SHA256) => "TLS_AES_128_GCM_SHA256",
            Some(C::TLS13_AES_256_GCM_SHA384) => "TLS_AES_256_GCM_SHA384",
            Some(C::TLS13_CHACHA20_POLY1305_SHA256) => "TLS_CHACHA20_POLY1305_SHA256",
            Some(s) => s.as_str().unwrap_or("-"),
            None => "-",
        };
        TlsInfo { protocol, cipher }
    }

    /// The client has sent something (a ClientHello, at least its start).
    pub fn received_any(&self) -> bool {
        self.first.is_some()
    }

    /// Encrypted bytes wait for the socket.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Decrypted bytes into `dst`, as `recv(2)` on the socket would give
    /// them (see the module's documentation): `Ok(0)` at the end,
    /// `WouldBlock` when the socket is drained and nothing decrypted is
    /// left, `InvalidData` when the connection failed (counted and
    /// answered).
    pub fn recv(
        &mut self,
        fd: RawFd,
        dst: &mut [u8],
        counters: &mut Counters,
    ) -> io::Result<usize> {
        loop {
            match self.conn.reader().read(dst) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(self.eof(counters)),
                Err(e) => return Err(e),
            }
            let mut rd = SockRead {
                fd,
                first: &mut self.first,
            };
            match self.conn.read_tls(&mut rd) {
                Ok(0) => return Ok(self.eof(counters)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    if e.kind() != io::ErrorKind::WouldBlock && self.conn.is_handshaking() {
                        counters.tls.failed_closed += 1;
                    }
                    return Err(e);
                }
            }
            if let Err(err) = self.conn.process_new_packets() {
                return Err(self.fail(err, fd, counters));
            }
            self.note_established(counters);
            self.write_pending(fd)?;
            if self.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
    }

    /// Ciphertext the kernel has already received (`data`, the
    /// io_uring completion model's receive) into the connection, the
    /// decrypted bytes appended to `plain`. The records this calls for
    /// (handshake replies, tickets) stay queued for the next
    /// [`Tls::send`] ([`Tls::wants_write`]). `InvalidData`: the connection
    /// failed (counted and answered).
    pub fn feed(
        &mut self,
        mut data: &[u8],
        fd: RawFd,
        plain: &mut Vec<u8>,
        counters: &mut Counters,
    ) -> io::Result<()> {
        if self.first.is_none() {
            self.first = data.first().copied();
        }
        while !data.is_empty() {
            if self.conn.read_tls(&mut data)? == 0 {
                break;
            }
            if let Err(err) = self.conn.process_new_packets() {
                return Err(self.fail(err, fd, counters));
            }
            self.note_established(counters);
            // All of it (the input grows as needed): nothing decrypted is
            // left behind in rustls. WouldBlock ends it; what was read is
            // appended whatever the error.
            let _ = self.conn.reader().read_to_end(plain);
        }
        Ok(())
    }

    /// Count the handshake once it has completed, full or resumed.
    fn note_established(&mut self, counters: &mut Counters) {
        if !self.established && !self.conn.is_handshaking() {
            self.established = true;
            match self.conn.handshake_kind() {
                Some(rustls::HandshakeKind::Resumed) => counters.tls.resumed += 1,
                _ => counters.tls.full += 1,
            }
        }
    }

    /// The end of the client's input; counted as a failed handshake when
    /// the handshake was not complete. Returns 0.
    pub fn eof(&mut self, counters: &mut Counters) -> usize {
        if self.conn.is_handshaking() {
            counters.tls.failed_closed += 1;
        }
        0
    }

    /// The connection failed with `err`: count it (a handshake failure by
    /// kind; after the handshake, as a client error), answer it, and return
    /// the `InvalidData` error that tells the caller to close.
    fn fail(&mut self, err: rustls::Error, fd: RawFd, counters: &mut Counters) -> io::Error {
        self.failed = true;
        let plaintext_http = !self.established
            && err == rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType)
            && self.first.is_some_and(|b| b.is_ascii_uppercase());
        if plaintext_http {
            counters.tls.failed_plaintext_http += 1;
            counters.response(Status::BadRequest);
            let answer = plaintext_http_answer(SystemTime::now());
            let _ = sys::send_vectored(fd, &[IoSlice::new(&answer)], false);
        } else {
            match (self.established, &err) {
                (true, rustls::Error::AlertReceived(_)) => {
                    counters.tls.alerts_after_handshake += 1;
                    counters.client_errors += 1;
                }
                (true, _) => counters.client_errors += 1,
                (false, rustls::Error::AlertReceived(_)) => counters.tls.failed_alert += 1,
                (false, e) if malformed(e) => counters.tls.failed_malformed += 1,
                (false, _) => counters.tls.failed_refused += 1,
            }
            // The alert rustls queued, if the socket takes it.
            let _ = self.conn.write_tls(&mut SockWrite(fd));
        }
        io::Error::new(io::ErrorKind::InvalidData, err)
    }

    /// Write the records rustls holds (handshake messages, tickets) until
    /// they are all out or the socket is full.
    fn write_pending(&mut self, fd: RawFd) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut SockWrite(fd)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Encrypt and write as much of `out` as the socket takes now (see the
    /// module's documentation); `chunk` holds a file's bytes on their way
    /// to the cipher. `Ok(true)`: all written, nothing left in rustls;
    /// `Ok(false)`: the socket is full.
    pub fn send(&mut self, out: &mut OutBatch, fd: RawFd, chunk: &mut [u8]) -> io::Result<bool> {
        loop {
            while self.conn.wants_write() {
                match self.conn.write_tls(&mut SockWrite(fd)) {
                    Ok(_) => {}
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            if out.is_empty() {
                return Ok(true);
            }
            // Fill most of the outgoing buffer (a chunk and the records'
            // overhead below its limit, so that a file chunk read is taken
            // whole), then write it all at once.
            let mut queued = 0;
            while queued + TLS_CHUNK < TLS_BUFFER && !out.is_empty() {
                let took = if out.front_file().is_some() {
                    let n = out.read_front_file(chunk)?;
                    let m = self.conn.writer().write(&chunk[..n])?;
                    out.advance_file(m);
                    m
                } else {
                    let mut iov = [IoSlice::new(&[]); 64];
                    let (n, _) = out.gather(&mut iov);
                    let m = self.conn.writer().write_vectored(&iov[..n])?;
                    out.advance(m);
                    m
                };
                if took == 0 {
                    break;
                }
                out.written += took as u64;
                queued += took;
            }
            if !self.conn.wants_write() {
                return Err(io::Error::other("TLS: nothing could be encrypted"));
            }
        }
    }
}

/// `err` says the peer's bytes do not decode as TLS records or messages,
/// or came where nothing of their kind may.
fn malformed(err: &rustls::Error) -> bool {
    matches!(
        err,
        rustls::Error::InvalidMessage(_)
            | rustls::Error::InappropriateMessage { .. }
            | rustls::Error::InappropriateHandshakeMessage { .. }
            | rustls::Error::DecryptError
    )
}

/// nginx's answer to plaintext HTTP sent to an HTTPS port, dated `now`.
fn plaintext_http_answer(now: SystemTime) -> Vec<u8> {
    const BODY: &str = "<html>\r\n<head><title>400 The plain HTTP request was sent to HTTPS port</title></head>\r\n<body>\r\n<center><h1>400 Bad Request</h1></center>\r\n<center>The plain HTTP request was sent to HTTPS port</center>\r\n</body>\r\n</html>\r\n";
    format!(
        "HTTP/1.1 400 Bad Request\r\nDate: {}\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{BODY}",
        httpdate::fmt_http_date(now),
        BODY.len()
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plaintext_answer_is_a_complete_400() {
        let a = plaintext_http_answer(SystemTime::UNIX_EPOCH);
        let text = String::from_utf8(a).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 400 Bad Request\r\n"));
        assert!(head.contains("Date: Thu, 01 Jan 1970 00:00:00 GMT"));
        assert!(
            head.contains(&format!("Content-Length: {}", body.len())),
            "{head}"
        );
        assert!(body.contains("plain HTTP request was sent to HTTPS port"));
    }
}
