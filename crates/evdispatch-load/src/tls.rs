//! HTTPS: the rustls client configuration every worker builds from
//! [`TlsSettings`], the blocking handshake of the pre-flight check, and the
//! words a TLS failure is reported with.
//!
//! The engine drives [`rustls::ClientConnection`] itself on its
//! non-blocking sockets (`read_tls`, `process_new_packets`, `write_tls`):
//! no thread and no blocking call per connection. TLS 1.2 and 1.3 are
//! offered (ring provider), ALPN `http/1.1`, SNI from the URL's host (none
//! for an IP literal, as rustls does), certificates checked against the
//! system's roots or `--cacert`, or not at all with `--insecure`. A
//! reconnect resumes the session (rustls' in-memory session cache, shared by
//! a worker's connections), as wrk's and oha's do.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    ClientConfig, ClientConnection, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use serde::{Deserialize, Serialize};

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
    pub fn new(s: &TlsSettings) -> anyhow::Result<TlsClient> {
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
            builder
                .with_root_certificates(roots(s)?)
                .with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
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
    /// protocol version.
    pub fn check(&self, addr: SocketAddr, timeout: Duration) -> anyhow::Result<String> {
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
        Ok(conn
            .protocol_version()
            .map(|v| format!("{v:?}"))
            .unwrap_or_default())
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
        E::InvalidCertificate(_) => format!("certificate rejected ({e}); --insecure accepts it"),
        E::AlertReceived(A::ProtocolVersion) | E::PeerIncompatible(_) => format!(
            "protocol version: the server and this generator share no TLS version or cipher \
             suite (it offers TLS 1.2 and 1.3) ({e})"
        ),
        E::AlertReceived(A::HandshakeFailure) => format!(
            "handshake failure alert from the server: no common protocol version, cipher suite \
             or ALPN protocol ({e})"
        ),
        E::InvalidMessage(_) => {
            format!("the server's answer is not TLS ({e}) — is it plain http:// on this port?")
        }
        _ => format!("{e}"),
    }
}

fn roots(s: &TlsSettings) -> anyhow::Result<RootCertStore> {
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
        let (good, bad) = store.add_parsable_certificates(certs);
        if good == 0 {
            bail!("--cacert {p}: none of its {bad} certificates could be used");
        }
        return Ok(store);
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
    Ok(store)
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
        let client = TlsClient::new(&TlsSettings {
            server_name: "127.0.0.1".into(),
            insecure: true,
            cacert: None,
        })
        .unwrap();
        let e = client
            .check(addr, Duration::from_millis(200))
            .unwrap_err()
            .to_string();
        assert!(e.contains("did not finish within 200ms"), "{e}");
        drop(held.join());
    }
}
