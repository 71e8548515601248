//! The one certificate a comparison over HTTPS gives every server: a
//! self-signed ECDSA P-256 certificate for `localhost` and `127.0.0.1`
//! (rcgen), written as PEM files to a temporary directory.

use std::path::PathBuf;

use anyhow::Context;

use crate::PeerTls;

/// A self-signed ECDSA P-256 certificate and its key, as PEM files that
/// live as long as this value.
#[derive(Debug)]
pub struct SelfSigned {
    _dir: tempfile::TempDir,
    /// The certificate (PEM); a client trusts the server by trusting it
    /// (`evdispatch load --cacert`).
    pub cert: PathBuf,
    /// Its private key (PEM, PKCS#8).
    pub key: PathBuf,
}

impl SelfSigned {
    /// Make one, valid for `localhost` and `127.0.0.1`.
    pub fn create() -> anyhow::Result<SelfSigned> {
        let dir = tempfile::Builder::new()
            .prefix("evd-cert-")
            .tempdir()
            .context("cannot create a directory for the certificate")?;
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
        let names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
        let cert = rcgen::CertificateParams::new(names)?.self_signed(&key)?;
        let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        std::fs::write(&cert_path, cert.pem())?;
        std::fs::write(&key_path, key.serialize_pem())?;
        Ok(SelfSigned {
            _dir: dir,
            cert: cert_path,
            key: key_path,
        })
    }

    /// nginx's HTTPS with this certificate and `ssl_protocols protocols`
    /// (for example `"TLSv1.2 TLSv1.3"`).
    pub fn peer_tls(&self, protocols: &str) -> PeerTls {
        PeerTls {
            cert: self.cert.clone(),
            key: self.key.clone(),
            protocols: protocols.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ecdsa_certificate_and_its_key_as_pem() {
        let c = SelfSigned::create().unwrap();
        let cert = std::fs::read_to_string(&c.cert).unwrap();
        let key = std::fs::read_to_string(&c.key).unwrap();
        assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "{key}");
        let t = c.peer_tls("TLSv1.3");
        assert_eq!((t.cert, t.protocols.as_str()), (c.cert.clone(), "TLSv1.3"));
        // The server side reads them as a matching pair.
        let tls = evdispatch_server::TlsConfig::load(&c.cert, &c.key).unwrap();
        drop(tls);
    }
}
