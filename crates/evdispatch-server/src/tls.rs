//! HTTPS settings: the certificate chain and key of `--tls-cert` and
//! `--tls-key`, read and checked at start-up, and the rustls configuration
//! every connection shares.
//!
//! * PEM files: the certificate file holds the server's certificate first,
//!   then its chain (as nginx's `ssl_certificate`); the key file one
//!   private key, PKCS#8, PKCS#1 (RSA) or SEC1 (EC): ECDSA (P-256, P-384),
//!   RSA and Ed25519 keys, signed with the `ring` provider.
//! * TLS 1.3 and 1.2, the provider's default cipher suites; ALPN
//!   `http/1.1` (the server speaks no other; a client that offers only
//!   protocols the server does not speak fails its handshake).
//! * Resumption: TLS 1.3 and 1.2 session tickets under a key that rotates
//!   (rustls' ticketer: a new key every 6 hours, the previous one still
//!   accepted), and a server session cache of [`SESSION_CACHE`] entries
//!   shared by every worker for TLS 1.2 clients that resume by session ID.
//!
//! Start-up fails with a message naming the file for an unreadable or
//! malformed PEM file, a file without a certificate or a key, or a key that
//! does not match the certificate. An expired certificate, or one not yet
//! valid, is served with a warning on standard error (a test server's
//! certificate may well be so, and nginx serves it too).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{bail, Context};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Sessions the server's session cache keeps (for TLS 1.2 resumption by
/// session ID), about 200 bytes each.
pub const SESSION_CACHE: usize = 8192;

/// The HTTPS settings of a server: where its certificate and key came from
/// and the rustls configuration built from them.
#[derive(Clone)]
pub struct TlsConfig {
    /// The certificate chain file (`--tls-cert`).
    pub cert: PathBuf,
    /// The private key file (`--tls-key`).
    pub key: PathBuf,
    /// The configuration every connection is made with.
    pub server: Arc<rustls::ServerConfig>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("cert", &self.cert)
            .field("key", &self.key)
            .finish()
    }
}

impl TlsConfig {
    /// Read `cert` (PEM chain) and `key` (PEM private key) and build the
    /// server's TLS configuration; warnings (an expired certificate) go to
    /// standard error.
    pub fn load(cert: &Path, key: &Path) -> anyhow::Result<TlsConfig> {
        let chain = read_chain(cert)?;
        for w in validity_warnings(&chain[0], SystemTime::now()) {
            eprintln!(
                "evdispatch serve: warning: --tls-cert {}: {w}",
                cert.display()
            );
        }
        let key_der = read_key(key)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .context("TLS 1.3 and 1.2 with the ring provider")?
            .with_no_client_auth()
            .with_single_cert(chain, key_der)
            .map_err(|e| match e {
                rustls::Error::InconsistentKeys(_) => anyhow::anyhow!(
                    "--tls-key {} does not match the certificate in --tls-cert {}",
                    key.display(),
                    cert.display()
                ),
                e => anyhow::anyhow!(
                    "--tls-key {} with --tls-cert {}: {e}",
                    key.display(),
                    cert.display()
                ),
            })?;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        server.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        server.ticketer =
            rustls::crypto::ring::Ticketer::new().context("cannot make a session ticketer")?;
        Ok(TlsConfig {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            server: Arc::new(server),
        })
    }
}

/// The certificates of a PEM file, in order; at least one.
fn read_chain(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("--tls-cert {}: cannot read", path.display()))?;
    let chain = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("--tls-cert {}: malformed PEM: {e}", path.display()))?;
    if chain.is_empty() {
        bail!(
            "--tls-cert {}: no certificate (no '-----BEGIN CERTIFICATE-----' block)",
            path.display()
        );
    }
    if let Err(e) = x509_parser::parse_x509_certificate(&chain[0]) {
        bail!(
            "--tls-cert {}: the first certificate is not valid X.509: {e}",
            path.display()
        );
    }
    Ok(chain)
}

/// The one private key of a PEM file.
fn read_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("--tls-key {}: cannot read", path.display()))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => anyhow::anyhow!(
            "--tls-key {}: no private key (PKCS#8, PKCS#1 or SEC1 PEM block)",
            path.display()
        ),
        e => anyhow::anyhow!("--tls-key {}: malformed PEM: {e}", path.display()),
    })
}

/// What is wrong with the validity period of `cert` at `now`: expired, or
/// not yet valid.
fn validity_warnings(cert: &CertificateDer<'_>, now: SystemTime) -> Vec<String> {
    let Ok((_, x509)) = x509_parser::parse_x509_certificate(cert) else {
        return Vec::new();
    };
    let now = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let v = x509.validity();
    let mut w = Vec::new();
    if v.not_after.timestamp() < now {
        w.push(format!("the certificate expired on {}", v.not_after));
    }
    if v.not_before.timestamp() > now {
        w.push(format!(
            "the certificate is not valid before {}",
            v.not_before
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    fn self_signed(alg: &'static rcgen::SignatureAlgorithm) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(alg).unwrap();
        let params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        let cert = params.self_signed(&key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    #[test]
    fn ecdsa_and_ed25519_keys_load() {
        let dir = tempfile::tempdir().unwrap();
        for alg in [
            &rcgen::PKCS_ECDSA_P256_SHA256,
            &rcgen::PKCS_ECDSA_P384_SHA384,
            &rcgen::PKCS_ED25519,
        ] {
            let (c, k) = self_signed(alg);
            let cert = write(dir.path(), "c.pem", &c);
            let key = write(dir.path(), "k.pem", &k);
            let t = TlsConfig::load(&cert, &key).unwrap();
            assert_eq!(t.server.alpn_protocols, vec![b"http/1.1".to_vec()]);
        }
    }

    #[test]
    fn start_up_errors_name_the_file_and_the_fault() {
        let dir = tempfile::tempdir().unwrap();
        let (c1, k1) = self_signed(&rcgen::PKCS_ECDSA_P256_SHA256);
        let (_, k2) = self_signed(&rcgen::PKCS_ECDSA_P256_SHA256);
        let cert = write(dir.path(), "c.pem", &c1);
        let key = write(dir.path(), "k.pem", &k1);
        let other_key = write(dir.path(), "k2.pem", &k2);
        let err = |c: &Path, k: &Path| format!("{:#}", TlsConfig::load(c, k).unwrap_err());

        let e = err(&cert, &other_key);
        assert!(e.contains("does not match"), "{e}");
        let e = err(&dir.path().join("absent.pem"), &key);
        assert!(e.contains("absent.pem") && e.contains("cannot read"), "{e}");
        let garbage = write(dir.path(), "g.pem", "not a PEM file\n");
        let e = err(&garbage, &key);
        assert!(e.contains("no certificate"), "{e}");
        let e = err(&cert, &garbage);
        assert!(e.contains("no private key"), "{e}");
        let cut = &c1[..c1.len() / 2];
        let broken = write(dir.path(), "b.pem", cut);
        let e = err(&broken, &key);
        assert!(e.contains("b.pem") && e.contains("malformed"), "{e}");
        // A key file given as the certificate, and the other way round.
        let e = err(&key, &cert);
        assert!(e.contains("no certificate"), "{e}");
    }

    #[test]
    fn an_expired_certificate_is_warned_about() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
        params.not_before = rcgen::date_time_ymd(2001, 1, 1);
        params.not_after = rcgen::date_time_ymd(2002, 1, 1);
        let cert = params.self_signed(&key).unwrap();
        let der = cert.der().clone();
        let w = validity_warnings(&der, SystemTime::now());
        assert!(w.len() == 1 && w[0].contains("expired"), "{w:?}");
        let in_2001 =
            SystemTime::UNIX_EPOCH + Duration::from_secs(31 * 365 * 86_400 + 200 * 86_400);
        assert!(validity_warnings(&der, in_2001).is_empty());
        let in_1999 = SystemTime::UNIX_EPOCH + Duration::from_secs(29 * 365 * 86_400);
        let w = validity_warnings(&der, in_1999);
        assert!(w.len() == 1 && w[0].contains("not valid before"), "{w:?}");
    }
}
