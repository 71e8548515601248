//! HTTPS settings: the certificate chains and keys of `--tls-cert` and
//! `--tls-key`, read and checked at start-up and again on SIGHUP, and the
//! rustls configuration every connection shares.
//!
//! * PEM files: a certificate file holds the server's certificate first,
//!   then its chain (as nginx's `ssl_certificate`); the key file one
//!   private key, PKCS#8, PKCS#1 (RSA) or SEC1 (EC): ECDSA (P-256, P-384),
//!   RSA and Ed25519 keys, signed with the `ring` provider.
//! * Several certificates: `--tls-cert`/`--tls-key` given several times
//!   are pairs, in order. A handshake gets the certificate whose
//!   subjectAltName DNS names match the client's SNI name, exactly or by a
//!   `*.` wildcard standing for one label (`*.example.com` matches
//!   `a.example.com`, not `example.com` nor `a.b.example.com`); an exact
//!   name wins over a wildcard, an earlier pair over a later one. Without
//!   SNI, or when no name matches, the first pair is served (nginx's
//!   default server).
//! * TLS 1.3 and 1.2, the provider's cipher suites in the server's order
//!   of preference, not the client's ([`preferred_order`]): with AES in
//!   the CPU (x86-64 AES-NI and PCLMULQDQ, AArch64 AES and PMULL),
//!   AES-128-GCM, then AES-256-GCM, then ChaCha20-Poly1305; without,
//!   ChaCha20-Poly1305 first. This is the order Go's TLS (and so Caddy)
//!   uses: AES-128 is as strong as TLS needs and 14 rounds of AES become
//!   10. ALPN
//!   `http/1.1` (the server speaks no other; a client that offers only
//!   protocols the server does not speak fails its handshake).
//! * Resumption: TLS 1.3 and 1.2 session tickets under a key that rotates
//!   (rustls' ticketer: a new key every 6 hours, the previous one still
//!   accepted), and a server session cache of [`SESSION_CACHE`] entries
//!   shared by every worker for TLS 1.2 clients that resume by session ID.
//! * Reload ([`TlsConfig::reload`], SIGHUP): every pair is read again and
//!   checked as at start-up; new handshakes get the new certificates, open
//!   connections keep theirs. A pair whose files fail to load keeps its
//!   old certificate and key in service, and why is said on standard error.
//!
//! Start-up fails with a message naming the file for an unreadable or
//! malformed PEM file, a file without a certificate or a key, or a key that
//! does not match the certificate. Warnings go to standard error for an
//! expired certificate, or one not yet valid (a test server's certificate
//! may well be so, and nginx serves it too), and for a `--server-name`
//! that no certificate names.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

use anyhow::{bail, Context};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;

/// Sessions the server's session cache keeps (for TLS 1.2 resumption by
/// session ID), about 200 bytes each.
pub const SESSION_CACHE: usize = 8192;

/// One `--tls-cert`/`--tls-key` pair, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertPair {
    /// The certificate chain file (`--tls-cert`).
    pub cert: PathBuf,
    /// The private key file (`--tls-key`).
    pub key: PathBuf,
}

/// The HTTPS settings of a server: where its certificates and keys came
/// from and the rustls configuration built from them.
#[derive(Clone)]
pub struct TlsConfig {
    /// The pairs, the default first.
    pub pairs: Vec<CertPair>,
    /// The configuration every connection is made with; its certificate
    /// resolver is `certs`.
    pub server: Arc<rustls::ServerConfig>,
    certs: Arc<Certificates>,
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("pairs", &self.pairs)
            .finish()
    }
}

/// A loaded pair: the certificate and key rustls serves, and the DNS
/// names the certificate is for (lower case).
#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    names: Vec<String>,
}

/// The certificates in service, chosen by SNI ([`ResolvesServerCert`]);
/// replaced whole by a reload.
#[derive(Debug)]
struct Certificates {
    provider: Arc<CryptoProvider>,
    loaded: RwLock<Arc<Vec<Loaded>>>,
}

impl Certificates {
    fn current(&self) -> Arc<Vec<Loaded>> {
        self.loaded
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl ResolvesServerCert for Certificates {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let loaded = self.current();
        let i = hello
            .server_name()
            .and_then(|n| choose(loaded.iter().map(|l| l.names.as_slice()), n))
            .unwrap_or(0);
        loaded.get(i).map(|l| l.key.clone())
    }
}

/// Which of the name lists `names` (one per pair, in order) serves
/// `sni`: the first with the exact name, else the first with a `*.`
/// wildcard matching it; `None`: no match.
fn choose<'a>(names: impl Iterator<Item = &'a [String]> + Clone, sni: &str) -> Option<usize> {
    let sni = sni.trim_end_matches('.').to_ascii_lowercase();
    let exact = names.clone().position(|ns| ns.contains(&sni));
    exact.or_else(|| {
        let (_, parent) = sni.split_once('.')?;
        names.clone().position(|ns| {
            ns.iter()
                .any(|n| n.strip_prefix("*.").is_some_and(|p| p == parent))
        })
    })
}

/// `name` is among the certificate's `names` (exactly or by wildcard).
fn covers(names: &[String], name: &str) -> bool {
    choose(std::iter::once(names), name).is_some()
}

impl TlsConfig {
    /// One certificate chain `cert` and its key `key` (see
    /// [`TlsConfig::load_pairs`]).
    pub fn load(cert: &Path, key: &Path) -> anyhow::Result<TlsConfig> {
        TlsConfig::load_pairs(
            &[CertPair {
                cert: cert.to_path_buf(),
                key: key.to_path_buf(),
            }],
            &[],
        )
    }

    /// Read every pair (PEM chain, PEM private key; the first is the
    /// default) and build the server's TLS configuration. Warnings (an
    /// expired certificate, a name of `server_names` that no certificate
    /// has) go to standard error.
    pub fn load_pairs(pairs: &[CertPair], server_names: &[String]) -> anyhow::Result<TlsConfig> {
        if pairs.is_empty() {
            bail!("HTTPS needs at least one --tls-cert and --tls-key");
        }
        let mut provider = rustls::crypto::ring::default_provider();
        preferred_order(&mut provider.cipher_suites, aes_in_hardware());
        let provider = Arc::new(provider);
        let mut loaded = Vec::new();
        for p in pairs {
            let (l, warnings) = load_pair(p, &provider)?;
            warn(&warnings);
            loaded.push(l);
        }
        for name in server_names {
            if !loaded.iter().any(|l| covers(&l.names, name)) {
                warn(&[format!(
                    "--server-name {name}: no --tls-cert names it (the first, {}, is served for it)",
                    pairs[0].cert.display()
                )]);
            }
        }
        let certs = Arc::new(Certificates {
            provider: provider.clone(),
            loaded: RwLock::new(Arc::new(loaded)),
        });
        let mut server = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13, &rustls::version::TLS12])
            .context("TLS 1.3 and 1.2 with the ring provider")?
            .with_no_client_auth()
            .with_cert_resolver(certs.clone());
        server.ignore_client_order = true;
        server.alpn_protocols = vec![b"http/1.1".to_vec()];
        server.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_CACHE);
        server.ticketer =
            rustls::crypto::ring::Ticketer::new().context("cannot make a session ticketer")?;
        Ok(TlsConfig {
            pairs: pairs.to_vec(),
            server: Arc::new(server),
            certs,
        })
    }

    /// Read every pair again (SIGHUP): new handshakes get what loaded,
    /// open connections keep what they have. A pair that fails keeps its
    /// old certificate and key. Returns what to tell the operator (one
    /// line per pair: reloaded, or kept and why, and the warnings).
    pub fn reload(&self) -> Vec<String> {
        let old = self.certs.current();
        let mut report = Vec::new();
        let mut next = Vec::with_capacity(self.pairs.len());
        for (p, was) in self.pairs.iter().zip(old.iter()) {
            match load_pair(p, &self.certs.provider) {
                Ok((l, warnings)) => {
                    report.push(format!("--tls-cert {}: reloaded", p.cert.display()));
                    report.extend(warnings);
                    next.push(l);
                }
                Err(e) => {
                    report.push(format!(
                        "--tls-cert {}: not reloaded, the previous certificate stays in service: {e:#}",
                        p.cert.display()
                    ));
                    next.push(Loaded {
                        key: was.key.clone(),
                        names: was.names.clone(),
                    });
                }
            }
        }
        *self.certs.loaded.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(next);
        report
    }
}

/// Whether the CPU encrypts AES-GCM in hardware (AES rounds and carry-less
/// multiplication), where AES-GCM outruns ChaCha20-Poly1305.
pub fn aes_in_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("aes")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("aes")
            && std::arch::is_aarch64_feature_detected!("pmull")
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

/// Sort `suites` into the server's preference (stable, so each version's
/// suites keep the provider's relative order otherwise): AES-128-GCM, then
/// AES-256-GCM, then ChaCha20-Poly1305 when `aes_hw`; ChaCha20-Poly1305
/// first when not.
pub fn preferred_order(suites: &mut [rustls::SupportedCipherSuite], aes_hw: bool) {
    use rustls::CipherSuite as C;
    let rank = |s: &rustls::SupportedCipherSuite| {
        let cipher = match s.suite() {
            C::TLS13_AES_128_GCM_SHA256
            | C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
            | C::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => 0,
            C::TLS13_AES_256_GCM_SHA384
            | C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
            | C::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => 1,
            C::TLS13_CHACHA20_POLY1305_SHA256
            | C::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
            | C::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => 2,
            _ => 3,
        };
        match (aes_hw, cipher) {
            (false, 2) => 0,
            (false, c) if c < 2 => c + 1,
            (_, c) => c,
        }
    };
    suites.sort_by_key(rank);
}

/// Warnings, to standard error.
fn warn(lines: &[String]) {
    for w in lines {
        eprintln!("evdispatch serve: warning: {w}");
    }
}

/// Read and check one pair: its certificate and key for rustls, its names,
/// and the warnings about it.
fn load_pair(p: &CertPair, provider: &CryptoProvider) -> anyhow::Result<(Loaded, Vec<String>)> {
    let (cert, key) = (&p.cert, &p.key);
    let chain = read_chain(cert)?;
    let warnings = validity_warnings(&chain[0], SystemTime::now())
        .into_iter()
        .map(|w| format!("--tls-cert {}: {w}", cert.display()))
        .collect();
    let names = dns_names(&chain[0]);
    let key_der = read_key(key)?;
    let certified = CertifiedKey::from_der(chain, key_der, provider).map_err(|e| match e {
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
    Ok((
        Loaded {
            key: Arc::new(certified),
            names,
        },
        warnings,
    ))
}

/// The DNS names of a certificate's subjectAltName, lower case (none when
/// it has no such extension).
fn dns_names(cert: &CertificateDer<'_>) -> Vec<String> {
    let Ok((_, x509)) = x509_parser::parse_x509_certificate(cert) else {
        return Vec::new();
    };
    let Ok(Some(san)) = x509.subject_alternative_name() else {
        return Vec::new();
    };
    san.value
        .general_names
        .iter()
        .filter_map(|g| match g {
            x509_parser::extensions::GeneralName::DNSName(n) => Some(n.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
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
    /// The server's order: AES-128-GCM first where AES is in hardware,
    /// ChaCha20-Poly1305 first where not; every suite of the provider kept
    /// (a version's suites are chosen among its own, so TLS 1.2's and 1.3's
    /// may interleave).
    #[test]
    fn suites_in_the_servers_order() {
        use rustls::CipherSuite as C;
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        let names = |hw| {
            let mut s = all.clone();
            preferred_order(&mut s, hw);
            s.iter().map(|s| s.suite()).collect::<Vec<_>>()
        };
        let (hw, soft) = (names(true), names(false));
        assert_eq!(hw.len(), all.len());
        assert_eq!(hw[0], C::TLS13_AES_128_GCM_SHA256, "{hw:?}");
        let pos = |v: &[C], c| v.iter().position(|x| *x == c).unwrap();
        assert!(
            pos(&hw, C::TLS13_AES_256_GCM_SHA384) < pos(&hw, C::TLS13_CHACHA20_POLY1305_SHA256)
        );
        assert_eq!(soft[0], C::TLS13_CHACHA20_POLY1305_SHA256, "{soft:?}");
        assert!(pos(&soft, C::TLS13_AES_128_GCM_SHA256) < pos(&soft, C::TLS13_AES_256_GCM_SHA384));
        assert!(
            pos(&hw, C::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)
                < pos(&hw, C::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)
        );
    }

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

    #[test]
    fn sni_names_choose_exact_then_wildcard() {
        let lists: Vec<Vec<String>> = [
            vec!["a.example"],
            vec!["*.example.com", "example.com"],
            vec!["b.example.com"],
        ]
        .iter()
        .map(|l| l.iter().map(|n| n.to_string()).collect())
        .collect();
        let pick = |sni: &str| choose(lists.iter().map(Vec::as_slice), sni);
        assert_eq!(pick("b.example.com"), Some(2));
        assert_eq!(pick("B.Example.COM."), Some(2));
        assert_eq!(pick("x.example.com"), Some(1));
        assert_eq!(pick("example.com"), Some(1));
        assert_eq!(pick("a.example"), Some(0));
        assert_eq!(pick("a.b.example.com"), None);
        assert_eq!(pick("example.org"), None);
    }

    fn named(name: &str) -> (String, String) {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let params = rcgen::CertificateParams::new(vec![name.into()]).unwrap();
        (params.self_signed(&key).unwrap().pem(), key.serialize_pem())
    }

    #[test]
    fn reload_takes_new_pairs_and_keeps_the_old_one_of_a_broken_file() {
        let dir = tempfile::tempdir().unwrap();
        let (c, k) = named("one.test");
        let pair = CertPair {
            cert: write(dir.path(), "c.pem", &c),
            key: write(dir.path(), "k.pem", &k),
        };
        let t = TlsConfig::load_pairs(std::slice::from_ref(&pair), &[]).unwrap();
        let names = |t: &TlsConfig| t.certs.current()[0].names.clone();
        assert_eq!(names(&t), ["one.test"]);

        let (c2, k2) = named("two.test");
        write(dir.path(), "c.pem", &c2);
        write(dir.path(), "k.pem", &k2);
        let r = t.reload();
        assert!(r[0].ends_with("reloaded"), "{r:?}");
        assert_eq!(names(&t), ["two.test"]);

        // A certificate whose key is not the one beside it: refused, the
        // previous pair served on.
        let (c3, _) = named("three.test");
        write(dir.path(), "c.pem", &c3);
        let r = t.reload();
        assert!(
            r[0].contains("not reloaded") && r[0].contains("does not match"),
            "{r:?}"
        );
        assert_eq!(names(&t), ["two.test"]);
        write(dir.path(), "c.pem", "garbage");
        let r = t.reload();
        assert!(r[0].contains("no certificate"), "{r:?}");
        assert_eq!(names(&t), ["two.test"]);
    }
}
