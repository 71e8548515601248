//! What is loaded and how it is reached: the command-line options of the
//! target ([`NetArgs`]), the URL resolved by the system resolver, the
//! pre-flight connect that picks the address, and the request mix
//! (`--method`, `--body`, `--urls`, `--wsesslog`).
//!
//! ## Addresses
//!
//! The URL's host is resolved once with the system resolver
//! (`getaddrinfo`, so `/etc/hosts`, DNS, IPv4 and IPv6, in the order the
//! resolver ranks them). Before the run a pre-flight connect tries each
//! address in that order and the run uses the first that accepts
//! (`config.target`); `config.addresses` lists them all. With `https://`
//! the pre-flight also completes one TLS handshake, so a certificate or
//! protocol problem is one clear error before the run.
//!
//! ## `--urls FILE`
//!
//! One request target per line: `URL [WEIGHT]`, where URL is a path (`/a?b=1`,
//! on the command line's server) or a whole URL on the same scheme, host and
//! port as the command line's (one run loads one server); WEIGHT is a
//! positive number, 1 when absent; blank lines and lines starting with `#`
//! are skipped. Each request picks its URL at random in proportion to the
//! weights, from the seeded generator (`--seed`), so a run is repeatable.

use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::proto::HttpVersion;
use crate::tls::{TlsClient, TlsSettings};

/// The options of `evdispatch load` that say what is requested and how the
/// server is reached (flattened into `evdispatch load`'s arguments).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct NetArgs {
    /// Trust the certificates of this PEM bundle instead of the system's
    /// roots (https:// URLs); a server presenting exactly one of them (a
    /// self-signed certificate) is trusted too, as curl does.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Accept any server certificate and name (https:// URLs); the output
    /// says so.
    #[arg(long)]
    pub insecure: bool,
    /// Every connection makes a full TLS handshake: no session is kept to
    /// resume (by default a reconnect resumes, as wrk's and oha's do).
    #[arg(long)]
    pub no_tls_resume: bool,
    /// Request method (any token: GET, HEAD, POST, PUT, …).
    #[arg(long, default_value = "GET", value_name = "M")]
    pub method: String,
    /// Send this file as the request body, with its Content-Length (`-`:
    /// standard input); not with a `-H Transfer-Encoding`, which is refused.
    #[arg(long, value_name = "FILE")]
    pub body: Option<String>,
    /// Request the URLs of this file, one per line `URL [WEIGHT]`, picked
    /// by weight (see the crate docs).
    #[arg(long, value_name = "FILE")]
    pub urls: Option<PathBuf>,
    /// httperf's session log: N sessions (at --rate per second) cycling
    /// through FILE's sessions, X the default think time in seconds.
    #[arg(long, value_name = "N,X,FILE")]
    pub wsesslog: Option<String>,
}

/// One entry of `--urls`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightedUrl {
    /// Path and query requested.
    pub path: String,
    /// Relative weight.
    pub weight: f64,
}

/// The URL's host resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// Every address of the host, in the resolver's order.
    pub addresses: Vec<SocketAddr>,
    /// `Host` header value (with the port when the URL gives one).
    pub host_header: String,
    /// Path and query, exactly as given.
    pub path: String,
    /// TLS settings for `https://`.
    pub tls: Option<TlsSettings>,
}

/// The user information of a URL (`http://user:pass@host/`), taken as
/// curl takes it: `Some` value of an `Authorization: Basic` header
/// (`user:pass`, percent-decoded, in base64; RFC 7617), and the URL as
/// written with its password shown as `***`, for everything that prints it;
/// a user without a password (`https://TOKEN@host/`, a token given as the
/// user) is shown as `***` itself.
pub fn userinfo(text: &str) -> (String, Option<String>) {
    use base64::Engine as _;
    let Some((scheme, rest)) = text.split_once("://") else {
        return (text.to_string(), None);
    };
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let Some(at) = authority.rfind('@') else {
        return (text.to_string(), None);
    };
    let info = &authority[..at];
    let decode = |s: &str| percent_encoding::percent_decode_str(s).collect::<Vec<u8>>();
    let (user, password) = info.split_once(':').unwrap_or((info, ""));
    let mut plain = decode(user);
    plain.push(b':');
    plain.extend(decode(password));
    let value = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(plain)
    );
    let shown = match info.split_once(':') {
        Some((user, p)) if !p.is_empty() => format!("{scheme}://{user}:***{}", &rest[at..]),
        _ if info.is_empty() => text.to_string(),
        _ => format!("{scheme}://***{}", &rest[at..]),
    };
    (shown, Some(value))
}

/// Resolve `url` (http:// or https://, `text` as the user wrote it) with
/// the system resolver.
pub fn resolve(text: &str, url: &url::Url, net: &NetArgs) -> anyhow::Result<Resolved> {
    let https = match url.scheme() {
        "http" => false,
        "https" => true,
        other => {
            bail!("URL '{url}': only http:// and https:// are supported (scheme '{other}' given)")
        }
    };
    if !https && (net.insecure || net.cacert.is_some() || net.no_tls_resume) {
        bail!("--insecure, --cacert and --no-tls-resume are for https:// URLs; '{url}' is plain http://");
    }
    let host = url
        .host_str()
        .ok_or_else(|| anyhow!("URL '{url}' has no host"))?;
    let port = url
        .port_or_known_default()
        .unwrap_or(if https { 443 } else { 80 });
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let addresses: Vec<SocketAddr> = (bare, port)
        .to_socket_addrs()
        .map_err(|e| {
            anyhow!("cannot resolve host '{bare}' of URL '{url}': {e} — check the name, or give an IP address")
        })?
        .collect();
    if addresses.is_empty() {
        bail!("host '{bare}' of URL '{url}' resolves to no address");
    }
    let host_header = match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    };
    Ok(Resolved {
        addresses,
        host_header,
        path: raw_path(text)?,
        tls: https.then(|| TlsSettings {
            server_name: bare.to_string(),
            insecure: net.insecure,
            cacert: net.cacert.clone(),
            resume: !net.no_tls_resume,
        }),
    })
}

/// Path and query of a URL exactly as written (no dot-segment removal, no
/// re-encoding, as wrk sends them), without the fragment; `/` when empty.
pub fn raw_path(text: &str) -> anyhow::Result<String> {
    let after_scheme = text.split_once("://").map_or(text, |(_, rest)| rest);
    let rest = match after_scheme.find(['/', '?', '#']) {
        Some(i) => &after_scheme[i..],
        None => "",
    };
    let rest = rest.split('#').next().unwrap_or("");
    if let Some(b) = rest.bytes().find(|b| *b <= b' ' || *b == 0x7f) {
        bail!(
            "URL '{text}': its path holds the byte {b:#04x}, which a request line cannot carry; \
             percent-encode it (a space is %20)"
        );
    }
    Ok(match rest {
        "" => "/".to_string(),
        r if r.starts_with('?') => format!("/{r}"),
        r => r.to_string(),
    })
}

/// Try each address in order; return the first that accepts (and, for
/// https, completes a TLS handshake), with the protocol ALPN chose. The error names every address tried
/// and why it failed.
pub fn first_reachable(
    addresses: &[SocketAddr],
    tls: Option<&TlsSettings>,
    http: HttpVersion,
    url: &str,
    timeout: Duration,
) -> anyhow::Result<(SocketAddr, Option<Vec<u8>>)> {
    let client = tls.map(|t| TlsClient::new(t, http)).transpose()?;
    let mut why = Vec::new();
    for &addr in addresses {
        match std::net::TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => drop(s),
            Err(e) => {
                why.push(format!("{addr}: {e}"));
                continue;
            }
        }
        if let Some(c) = &client {
            // A TLS failure is the server's answer, not an unreachable
            // address: report it rather than trying the next one.
            return Ok((addr, c.check(addr, timeout)?.1));
        }
        return Ok((addr, None));
    }
    bail!(
        "cannot connect to {url}: {} — is the server running and listening there?",
        why.join("; ")
    )
}

/// h2c by prior knowledge at `addr`: send the preface and an empty
/// SETTINGS, and expect the server's SETTINGS first, within `timeout`; an
/// error that says what came instead (an HTTP/1.1 server answers the
/// preface with a 400, or closes).
pub fn check_h2c(addr: SocketAddr, url: &str, timeout: Duration) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| anyhow!("cannot connect to {addr}: {e}"))?;
    s.set_read_timeout(Some(timeout))?;
    s.set_write_timeout(Some(timeout))?;
    let mut hello = crate::proto::http2::PREFACE.to_vec();
    hello.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
    s.write_all(&hello)?;
    let mut head = [0u8; 9];
    let mut got = 0;
    while got < head.len() {
        match s.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) => bail!(
                "--http2 over http://: {url} did not answer the HTTP/2 preface within \
                 {timeout:?} ({e}); does it speak h2c by prior knowledge on this port? (use \
                 --http1.1)"
            ),
        }
    }
    if got == head.len() && head[3] == 4 && head[4] & 1 == 0 {
        return Ok(());
    }
    bail!(
        "--http2 over http://: {url} does not speak h2c by prior knowledge: it answered the \
         HTTP/2 preface with {}; use --http1.1 (or https:// for h2 by ALPN)",
        if got == 0 {
            "nothing (it closed the connection)".to_string()
        } else {
            format!("'{}'", String::from_utf8_lossy(&head[..got]).escape_debug())
        }
    )
}

/// Read `--urls FILE` against the command line's URL `base`.
pub fn read_urls(file: &Path, base: &url::Url) -> anyhow::Result<Vec<WeightedUrl>> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| anyhow!("--urls: cannot read '{}': {e}", file.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{}:{}", file.display(), i + 1);
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let target = words.next().unwrap_or_default();
        let weight = match words.next() {
            None => 1.0,
            Some(w) => w
                .parse::<f64>()
                .ok()
                .filter(|w| w.is_finite() && *w > 0.0)
                .ok_or_else(|| {
                    anyhow!("{at}: expected URL [WEIGHT] with a positive weight, found '{w}'")
                })?,
        };
        if let Some(extra) = words.next() {
            bail!("{at}: expected URL [WEIGHT], found more: '{extra}'");
        }
        let path = if target.starts_with('/') {
            target.to_string()
        } else {
            let u = url::Url::parse(target).map_err(|e| {
                anyhow!("{at}: expected a path (/a?b) or a URL, found '{target}' ({e})")
            })?;
            if (u.scheme(), u.host_str(), u.port_or_known_default())
                != (base.scheme(), base.host_str(), base.port_or_known_default())
            {
                bail!("{at}: expected a URL on {}://{} as the command line's (one run loads one server), found '{target}'", base.scheme(), base.host_str().unwrap_or(""));
            }
            raw_path(target)?
        };
        out.push(WeightedUrl { path, weight });
    }
    if out.is_empty() {
        bail!(
            "{}: expected at least one line URL [WEIGHT]",
            file.display()
        );
    }
    Ok(out)
}

/// Read `--body FILE` (`-`: standard input).
pub fn read_body(name: &str) -> anyhow::Result<Vec<u8>> {
    if name == "-" {
        let mut b = Vec::new();
        std::io::stdin()
            .read_to_end(&mut b)
            .map_err(|e| anyhow!("--body -: cannot read standard input: {e}"))?;
        return Ok(b);
    }
    std::fs::read(name).map_err(|e| anyhow!("--body: cannot read '{name}': {e}"))
}

/// Check `--method`: an HTTP token.
pub fn check_method(m: &str) -> anyhow::Result<()> {
    if !crate::proto::http1::is_token(m) {
        bail!("--method '{m}' is not an HTTP method token (e.g. GET, POST, HEAD)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_become_basic_auth_and_the_password_is_hidden() {
        // RFC 7617's example pair, percent-encoded in the URL as a browser would.
        let (shown, auth) = userinfo("http://Aladdin:open%20sesame@h:8/p?q@x");
        assert_eq!(shown, "http://Aladdin:***@h:8/p?q@x");
        assert_eq!(auth.as_deref(), Some("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="));
        // A user alone (or with an empty password) is the secret: a token
        // given as the user, as many APIs and Git hosts take one.
        let (shown, auth) = userinfo("https://bob@h/");
        assert_eq!(shown, "https://***@h/");
        assert_eq!(auth.as_deref(), Some("Basic Ym9iOg=="));
        let (shown, auth) = userinfo("https://ghp_T0k3n:@h/x");
        assert_eq!(shown, "https://***@h/x");
        assert_eq!(auth.as_deref(), Some("Basic Z2hwX1QwazNuOg=="));
        // An @ after the authority is not user information.
        assert_eq!(userinfo("http://h/a@b"), ("http://h/a@b".to_string(), None));
    }

    #[test]
    fn url_lists() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("u.txt");
        let base = url::Url::parse("http://127.0.0.1:8080/").unwrap();
        std::fs::write(
            &f,
            "# comment\n/a 3\n\nhttp://127.0.0.1:8080/b?x=1\n  /c  0.5 \n",
        )
        .unwrap();
        let u = read_urls(&f, &base).unwrap();
        let got: Vec<_> = u.iter().map(|w| (w.path.as_str(), w.weight)).collect();
        assert_eq!(got, [("/a", 3.0), ("/b?x=1", 1.0), ("/c", 0.5)]);
        std::fs::write(&f, "/a\nhttp://127.0.0.2:8080/b\n").unwrap();
        let e = read_urls(&f, &base).unwrap_err().to_string();
        assert!(
            e.contains("u.txt:2: expected a URL on http://127.0.0.1"),
            "{e}"
        );
        std::fs::write(&f, "/a -1\n").unwrap();
        let e = read_urls(&f, &base).unwrap_err().to_string();
        assert!(e.contains("u.txt:1: expected URL [WEIGHT]"), "{e}");
    }

    #[test]
    fn paths_are_sent_as_written() {
        let p = |t: &str| raw_path(t).unwrap();
        assert_eq!(p("http://h:1/a/../b?x=%zz&y=/#frag"), "/a/../b?x=%zz&y=/");
        assert_eq!(p("https://[::1]:8443"), "/");
        assert_eq!(p("http://h?q=1"), "/?q=1");
        assert_eq!(p("http://user@h/%7Euser/"), "/%7Euser/");
        assert!(raw_path("http://h/a b").is_err());
    }

    #[test]
    fn methods_are_tokens() {
        assert!(check_method("PROPFIND").is_ok());
        assert!(check_method("GET /").is_err());
        assert!(check_method("").is_err());
    }
}
