//! HTTPS: the rustls client configuration every worker builds from
//! [`TlsSettings`], the blocking handshake of the pre-flight check, and the
//! words a TLS failure is reported with.
//!
//! The engine drives [`rustls::ClientConnection`] itself on its
//! non-blocking sockets (`read_tls`, `process_new_packets`, `write_tls`):
//! no thread and no blocking call per connection. TLS 1.2 and 1.3 are
//! offered (ring provider), ALPN `http/1.1` (`h2` for `--http2`, both for
//! `--http auto`), SNI from the URL's host (none
//! for an IP literal, as rustls does), certificates checked against the
//! system's roots or `--cacert`, or not at all with `--insecure`. As with
//! curl (OpenSSL), a certificate given with `--cacert` is trusted as itself
//! too: a self-signed server certificate (`openssl req -x509`), which
//! webpki refuses as an end entity because it is a CA, is accepted when the
//! server presents exactly that certificate, for the name it was issued for
//! and within its validity period. A
//! reconnect resumes the session (rustls' in-memory session cache, shared by
//! a worker's connections), as wrk's and oha's do; `--no-tls-resume` makes
//! every handshake a full one.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};

use crate::proto::HttpVersion;

/// The TLS side of a run (`config.tls` in the JSON output; `null` for
/// `http://`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TlsSettings {
    /// The URL's host: sent as SNI (unless it is an IP address) and checked
    /// against the server's certificate.
    pub server_name: String,
    /// `--insecure`: any certificate is accepted.
    pub insecure: bool,
    /// `--cacert`: PEM bundle trusted instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// A reconnect resumes the session (tickets or a session ID kept in
    /// memory); `false` with `--no-tls-resume`: every handshake is full.
    #[serde(default = "resume_default")]
    pub resume: bool,
}

fn resume_default() -> bool {
    true
}

/// A worker's TLS context: the shared client configuration (its session
/// cache gives resumption on reconnect) and the server's name.
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
}

impl TlsClient {
    /// Build the client for `s`: reads `--cacert` or the system's roots.
    pub fn new(s: &TlsSettings, http: HttpVersion) -> anyhow::Result<TlsClient> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .context("cannot set up TLS 1.2 and 1.3 with the ring provider")?;
        let mut config = if s.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(provider)))
                .with_no_client_auth()
        } else {
            let (roots, pinned) = roots(s)?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .context("cannot build the certificate verifier")?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(TrustedOrPinned { webpki, pinned }))
                .with_no_client_auth()
        };
        config.resumption = if s.resume {
            rustls::client::Resumption::store(Arc::new(TicketStore::default()))
        } else {
            rustls::client::Resumption::disabled()
        };
        config.alpn_protocols = match http {
            HttpVersion::Http1 => vec![b"http/1.1".to_vec()],
            HttpVersion::Http2 => vec![b"h2".to_vec()],
            HttpVersion::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        };
        let name = ServerName::try_from(s.server_name.clone()).map_err(|e| {
            anyhow!(
                "'{}' is not a name TLS can check a certificate against: {e}",
                s.server_name
            )
        })?;
        Ok(TlsClient {
            config: Arc::new(config),
            name,
        })
    }

    /// A new client connection (handshake not started).
    pub fn connection(&self) -> Result<ClientConnection, rustls::Error> {
        ClientConnection::new(self.config.clone(), self.name.clone())
    }

    /// Connect to `addr` and complete one handshake, blocking, within
    /// `timeout`: the pre-flight check, so that a certificate or protocol
    /// problem is one clear error before the run. Returns the negotiated
    /// protocol version and the ALPN protocol the server chose.
    pub fn check(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> anyhow::Result<(String, Option<Vec<u8>>)> {
        let mut sock = TcpStream::connect_timeout(&addr, timeout)
            .with_context(|| format!("cannot connect to {addr}"))?;
        let end = Instant::now() + timeout;
        sock.set_read_timeout(Some(timeout))?;
        sock.set_write_timeout(Some(timeout))?;
        let mut conn = self.connection().map_err(|e| anyhow!("TLS: {e}"))?;
        while conn.is_handshaking() {
            if Instant::now() > end {
                bail!("TLS handshake with {addr} did not finish within {timeout:?}");
            }
            if let Err(e) = conn.complete_io(&mut sock) {
                // The rustls error inside the I/O error, if any.
                let tls = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
                return Err(match tls {
                    Some(t) => anyhow!("TLS handshake with {addr} failed: {}", explain(t)),
                    None if e.kind() == io::ErrorKind::UnexpectedEof
                        || e.raw_os_error() == Some(libc::ECONNRESET) =>
                    {
                        anyhow!(
                            "TLS handshake with {addr} failed: the server closed the connection \
                             — is it speaking TLS on this port (or plain http://)?"
                        )
                    }
                    // The socket's timeout: its read reports EAGAIN.
                    None if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                    {
                        anyhow!("TLS handshake with {addr} did not finish within {timeout:?}")
                    }
                    None => anyhow!("TLS handshake with {addr} failed: {e}"),
                });
            }
        }
        conn.send_close_notify();
        let _ = conn.complete_io(&mut sock);
        let version = conn
            .protocol_version()
            .map(|v| format!("{v:?}"))
            .unwrap_or_default();
        Ok((version, conn.alpn_protocol().map(<[u8]>::to_vec)))
    }
}

/// The client's session store: rustls' in-memory cache for everything but
/// TLS 1.3 tickets, which it keeps at most 8 of per server, and which are
/// single-use: a closed loop of many connections reconnecting at once
/// would find the 8 taken and make full handshakes. Here up to
/// [`TicketStore::TICKETS`] tickets wait, newest taken first.
#[derive(Debug)]
struct TicketStore {
    cache: rustls::client::ClientSessionMemoryCache,
    tickets: std::sync::Mutex<
        std::collections::VecDeque<(ServerName<'static>, rustls::client::Tls13ClientSessionValue)>,
    >,
}

impl TicketStore {
    /// The most TLS 1.3 tickets kept (all servers together; the oldest go).
    const TICKETS: usize = 4096;
}

impl Default for TicketStore {
    fn default() -> TicketStore {
        TicketStore {
            cache: rustls::client::ClientSessionMemoryCache::new(256),
            tickets: std::sync::Mutex::new(std::collections::VecDeque::new()),
        }
    }
}

impl rustls::client::ClientSessionStore for TicketStore {
    fn set_kx_hint(&self, name: ServerName<'static>, group: rustls::NamedGroup) {
        self.cache.set_kx_hint(name, group)
    }
    fn kx_hint(&self, name: &ServerName<'_>) -> Option<rustls::NamedGroup> {
        self.cache.kx_hint(name)
    }
    fn set_tls12_session(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls12ClientSessionValue,
    ) {
        self.cache.set_tls12_session(name, value)
    }
    fn tls12_session(
        &self,
        name: &ServerName<'_>,
    ) -> Option<rustls::client::Tls12ClientSessionValue> {
        self.cache.tls12_session(name)
    }
    fn remove_tls12_session(&self, name: &ServerName<'static>) {
        self.cache.remove_tls12_session(name)
    }
    fn insert_tls13_ticket(
        &self,
        name: ServerName<'static>,
        value: rustls::client::Tls13ClientSessionValue,
    ) {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        if t.len() == Self::TICKETS {
            t.pop_front();
        }
        t.push_back((name, value));
    }
    fn take_tls13_ticket(
        &self,
        name: &ServerName<'static>,
    ) -> Option<rustls::client::Tls13ClientSessionValue> {
        let mut t = self.tickets.lock().unwrap_or_else(|e| e.into_inner());
        let i = t.iter().rposition(|(n, _)| n == name)?;
        t.remove(i).map(|(_, v)| v)
    }
}

/// A TLS failure in a user's words: name mismatch, unknown issuer,
/// protocol version, with what to do.
pub fn explain(e: &rustls::Error) -> String {
    use rustls::{AlertDescription as A, CertificateError as C, Error as E};
    match e {
        E::InvalidCertificate(C::NotValidForName | C::NotValidForNameContext { .. }) => format!(
            "certificate name mismatch: the server's certificate is not valid for the URL's host \
             ({e}); use the name the certificate was issued for, or --insecure"
        ),
        E::InvalidCertificate(C::UnknownIssuer) => format!(
            "unknown issuer: the server's certificate does not chain to a trusted root ({e}); \
             give its CA with --cacert FILE, or --insecure"
        ),
        E::InvalidCertificate(C::BadSignature) => format!(
            "unknown issuer: the certificate's signature does not verify against the trusted \
             root of the name it gives as issuer ({e}); give its own CA with --cacert FILE, or \
             --insecure"
        ),
        E::InvalidCertificate(C::Expired | C::ExpiredContext { .. }) => {
            format!("certificate expired ({e}); --insecure accepts it anyway")
        }
        E::InvalidCertificate(C::Other(o)) if o.to_string().contains("CaUsedAsEndEntity") => {
            format!(
                "untrusted self-signed certificate: the server presents a CA certificate as its                  own, and it is not among the trusted ones ({e}); give exactly that certificate                  with --cacert FILE, or --insecure"
            )
        }
        E::InvalidCertificate(_) => format!("certificate rejected ({e}); --insecure accepts it"),
        E::AlertReceived(A::ProtocolVersion) | E::PeerIncompatible(_) => format!(
            "protocol version: the server and this generator share no TLS version or cipher \
             suite (it offers TLS 1.2 and 1.3) ({e})"
        ),
        E::AlertReceived(A::HandshakeFailure) => format!(
            "handshake failure alert from the server: no common protocol version, cipher suite \
             or ALPN protocol ({e})"
        ),
        E::AlertReceived(A::NoApplicationProtocol) => format!(
            "no common application protocol: the server does not offer the one asked for by \
             ALPN (h2 with --http2) ({e}); use --http1.1, or --http auto to take what it offers"
        ),
        E::InvalidMessage(_) => {
            format!("the server's answer is not TLS ({e}) — is it plain http:// on this port?")
        }
        _ => format!("{e}"),
    }
}

/// The roots a run trusts, and the `--cacert` certificates themselves (each
/// trusted when presented as the server's own certificate).
fn roots(s: &TlsSettings) -> anyhow::Result<(RootCertStore, Vec<CertificateDer<'static>>)> {
    let mut store = RootCertStore::empty();
    if let Some(path) = &s.cacert {
        let p = path.display();
        let certs = CertificateDer::pem_file_iter(path)
            .map_err(|e| anyhow!("cannot read --cacert {p}: {e}"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| anyhow!("--cacert {p}: not a PEM bundle: {e}"))?;
        if certs.is_empty() {
            bail!(
                "--cacert {p}: no certificate in it (expected PEM blocks \
                 '-----BEGIN CERTIFICATE-----')"
            );
        }
        let (good, bad) = store.add_parsable_certificates(certs.iter().cloned());
        if good == 0 {
            bail!("--cacert {p}: none of its {bad} certificates could be used");
        }
        return Ok((store, certs));
    }
    let found = rustls_native_certs::load_native_certs();
    store.add_parsable_certificates(found.certs);
    if store.is_empty() {
        let why = found
            .errors
            .first()
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        bail!(
            "no trusted root certificates found on this machine{why}: install the system's CA \
             bundle (ca-certificates), give one with --cacert FILE, or use --insecure"
        );
    }
    Ok((store, Vec::new()))
}

/// The verifier of a run without `--insecure`: webpki's chain check against
/// the roots, except for a server certificate that is byte for byte one of
/// the `--cacert` certificates, which is its own trust anchor (as in
/// OpenSSL): then only its name and validity period are checked.
#[derive(Debug)]
struct TrustedOrPinned {
    webpki: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
}

impl ServerCertVerifier for TrustedOrPinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if !self
            .pinned
            .iter()
            .any(|c| c.as_ref() == end_entity.as_ref())
        {
            return self.webpki.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            );
        }
        check_validity(end_entity, now)?;
        verify_server_name(&ParsedCertificate::try_from(end_entity)?, server_name)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// `now` within the certificate's notBefore..=notAfter, with webpki's errors.
fn check_validity(cert: &CertificateDer<'_>, now: UnixTime) -> Result<(), rustls::Error> {
    use rustls::CertificateError as C;
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| rustls::Error::InvalidCertificate(C::BadEncoding))?;
    let validity = parsed.validity();
    let now_s = now.as_secs() as i64;
    let (from, until) = (
        validity.not_before.timestamp(),
        validity.not_after.timestamp(),
    );
    let at = |t: i64| UnixTime::since_unix_epoch(Duration::from_secs(t.max(0) as u64));
    if now_s < from {
        return Err(rustls::Error::InvalidCertificate(C::NotValidYetContext {
            time: now,
            not_before: at(from),
        }));
    }
    if now_s > until {
        return Err(rustls::Error::InvalidCertificate(C::ExpiredContext {
            time: now,
            not_after: at(until),
        }));
    }
    Ok(())
}

/// `--insecure`: accepts any certificate and name, still checking that the
/// handshake signatures are made by the certificate's key.
#[derive(Debug)]
struct AcceptAnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        verify_tls12_signature(message, cert, dss, algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = &self.0.signature_verification_algorithms;
        verify_tls13_signature(message, cert, dss, algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handshake_never_answered_says_it_timed_out() {
        // Accepts, then says nothing (a plain server waiting for a request).
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let held = std::thread::spawn(move || l.accept().map(|(s, _)| s));
        let client = TlsClient::new(
            &TlsSettings {
                server_name: "127.0.0.1".into(),
                insecure: true,
                cacert: None,
                resume: true,
            },
            HttpVersion::Http1,
        )
        .unwrap();
        let e = client
            .check(addr, Duration::from_millis(200))
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not finish within 200ms"), "{e}");
        drop(held.join());
    }

    /// A self-signed certificate with the CA flag (what `openssl req -x509`
    /// makes) for `name`, valid from `from` to `until` (Unix seconds), as
    /// (PEM file, DER, key DER).
    fn self_signed(
        dir: &std::path::Path,
        file: &str,
        name: &str,
        from: i64,
        until: i64,
    ) -> (PathBuf, CertificateDer<'static>, Vec<u8>) {
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.not_before = time::OffsetDateTime::from_unix_timestamp(from).unwrap();
        params.not_after = time::OffsetDateTime::from_unix_timestamp(until).unwrap();
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let path = dir.join(file);
        std::fs::write(&path, cert.pem()).unwrap();
        (path, cert.der().clone(), key.serialize_der())
    }

    /// A TLS server on loopback presenting `cert`, answering one handshake.
    fn serve_once(cert: CertificateDer<'static>, key: Vec<u8>) -> SocketAddr {
        let key = rustls::pki_types::PrivateKeyDer::try_from(key).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        std::thread::spawn(move || {
            let (mut sock, _) = l.accept().unwrap();
            sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
            let mut conn = rustls::ServerConnection::new(Arc::new(config)).unwrap();
            while conn.is_handshaking() {
                if conn.complete_io(&mut sock).is_err() {
                    return;
                }
            }
            let _ = conn.complete_io(&mut sock);
        });
        addr
    }

    fn check_with(
        cacert: &std::path::Path,
        name: &str,
        addr: SocketAddr,
    ) -> anyhow::Result<String> {
        TlsClient::new(
            &TlsSettings {
                server_name: name.into(),
                insecure: false,
                cacert: Some(cacert.to_path_buf()),
                resume: true,
            },
            HttpVersion::Http1,
        )?
        .check(addr, Duration::from_secs(2))
        .map(|(version, _)| version)
    }

    #[test]
    fn a_self_signed_certificate_given_as_cacert_is_trusted_as_itself_as_curl_does() {
        let dir = tempfile::tempdir().unwrap();
        let now = UnixTime::now().as_secs() as i64;
        let day = 86_400;
        let (pem, der, key) =
            self_signed(dir.path(), "self.pem", "localhost", now - day, now + day);
        check_with(&pem, "localhost", serve_once(der.clone(), key.clone()))
            .expect("the exact certificate given with --cacert is trusted");

        // Its name is still checked.
        let e = check_with(&pem, "other.example", serve_once(der.clone(), key.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("name"), "{e}");

        // Another self-signed certificate is still of an unknown issuer.
        let (other, _, _) = self_signed(dir.path(), "other.pem", "localhost", now - day, now + day);
        let e = check_with(&other, "localhost", serve_once(der, key))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("untrusted self-signed certificate") && e.contains("--cacert"),
            "{e}"
        );

        // And so is its validity period.
        let (old, der, key) =
            self_signed(dir.path(), "old.pem", "localhost", now - 3 * day, now - day);
        let e = check_with(&old, "localhost", serve_once(der, key))
            .unwrap_err()
            .to_string();
        assert!(e.contains("expired"), "{e}");
    }
}
