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
//! A short read can still say "drained", as it does on a bare socket: when
//! the last `recv(2)` under it returned fewer bytes than rustls asked for
//! (the receive queue was emptied), every whole record it brought was
//! decrypted, and the caller got fewer bytes than it had room for (nothing
//! decrypted is left), nothing is waiting but what the poller will report
//! next. [`short_read_drains`] tells the caller when that holds, so that a
//! keep-alive request over TLS costs one `recv` as over plain HTTP, not a
//! second one to collect `EAGAIN`. It never holds while the peer's
//! `close_notify` was seen (its end is read next) or records wait for the
//! socket (they need a writability event).
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
    /// The last `recv(2)` returned fewer bytes than asked (it emptied the
    /// receive queue), every whole record it brought was processed, and
    /// the peer has not closed the session.
    socket_emptied: bool,
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
/// the connection and whether the read was short.
struct SockRead<'a> {
    fd: RawFd,
    first: &'a mut Option<u8>,
    short: bool,
}

impl Read for SockRead<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = sys::recv(self.fd, buf)?;
        if self.first.is_none() && n > 0 {
            *self.first = Some(buf[0]);
        }
        self.short = n < buf.len();
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

/// A read from [`recv`] that returned fewer bytes than the buffer had room
/// for emptied the connection's input: always on a bare socket, over TLS
/// when [`Tls::short_read_drains`] says so.
#[inline]
pub fn short_read_drains(tls: &Option<Box<Tls>>) -> bool {
    tls.as_ref().is_none_or(|t| t.short_read_drains())
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
            socket_emptied: false,
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

    /// A [`Tls::recv`] that returned fewer bytes than `dst` had room for
    /// emptied the connection's input (see the module's documentation): its
    /// last `recv(2)` was short, every whole record was decrypted and given
    /// out, the peer has not closed the session, and no record waits for
    /// the socket.
    pub fn short_read_drains(&self) -> bool {
        self.socket_emptied && !self.conn.wants_write()
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
                short: false,
            };
            self.socket_emptied = false;
            let read = self.conn.read_tls(&mut rd);
            let short = rd.short;
            match read {
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
            match self.conn.process_new_packets() {
                Ok(io) => self.socket_emptied = short && !io.peer_has_closed(),
                Err(err) => return Err(self.fail(err, fd, counters)),
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
                    let conn = &mut self.conn;
                    let m = out.with_gathered(|iov, _| conn.writer().write_vectored(iov))?;
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
    use std::os::fd::AsRawFd;
    use std::os::unix::net::UnixStream;

    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
    use rustls::ClientConnection;

    /// A server [`Tls`] on one end of a socket pair (non-blocking) and a
    /// rustls client on the other (blocking), handshake done.
    fn session() -> (Box<Tls>, UnixStream, ClientConnection, UnixStream) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
            )
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(cert.der().to_vec()))
            .unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let mut client =
            ClientConnection::new(Arc::new(client), "localhost".try_into().unwrap()).unwrap();
        let (mut csock, ssock) = UnixStream::pair().unwrap();
        ssock.set_nonblocking(true).unwrap();
        let mut tls = Tls::new(&Arc::new(server)).unwrap();
        let mut counters = Counters::default();
        let mut buf = [0u8; 64];
        while client.is_handshaking() || !tls.established {
            while client.wants_write() {
                client.write_tls(&mut csock).unwrap();
            }
            let got = tls.recv(ssock.as_raw_fd(), &mut buf, &mut counters);
            assert_eq!(got.unwrap_err().kind(), io::ErrorKind::WouldBlock);
            if client.is_handshaking() {
                client.read_tls(&mut csock).unwrap();
                client.process_new_packets().unwrap();
            }
        }
        (tls, ssock, client, csock)
    }

    /// Everything `tls` decrypts until `WouldBlock`, read into `size`-byte
    /// buffers.
    fn read_all(tls: &mut Tls, fd: RawFd, size: usize) -> usize {
        let mut buf = vec![0u8; size];
        let mut total = 0;
        loop {
            match tls.recv(fd, &mut buf, &mut Counters::default()) {
                Ok(n) => total += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return total,
                Err(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn a_short_read_over_tls_drains_only_when_the_socket_was_emptied() {
        let (mut tls, ssock, mut client, mut csock) = session();
        let fd = ssock.as_raw_fd();
        let mut buf = vec![0u8; 64 * 1024];

        // One small record: the read is short and nothing is left behind.
        let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
        client.writer().write_all(request).unwrap();
        client.write_tls(&mut csock).unwrap();
        let n = tls.recv(fd, &mut buf, &mut Counters::default()).unwrap();
        assert_eq!(&buf[..n], request);
        assert!(tls.short_read_drains());

        // Three full records at once: rustls reads the socket a few
        // kilobytes at a time, so the first record's plaintext comes out
        // of a short read of the caller's buffer while the socket still
        // holds the rest.
        client.writer().write_all(&[b'x'; 40_000]).unwrap();
        while client.wants_write() {
            client.write_tls(&mut csock).unwrap();
        }
        let n = tls.recv(fd, &mut buf, &mut Counters::default()).unwrap();
        assert!(n < buf.len() && n < 40_000, "{n}");
        assert!(!tls.short_read_drains());
        assert_eq!(n + read_all(&mut tls, fd, buf.len()), 40_000);

        // Data and the peer's close_notify together: the short read does
        // not end the reading, the end is read next.
        client.writer().write_all(request).unwrap();
        client.send_close_notify();
        while client.wants_write() {
            client.write_tls(&mut csock).unwrap();
        }
        let n = tls.recv(fd, &mut buf, &mut Counters::default()).unwrap();
        assert_eq!(n, request.len());
        assert!(!tls.short_read_drains());
        assert_eq!(tls.recv(fd, &mut buf, &mut Counters::default()).unwrap(), 0);
    }

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
