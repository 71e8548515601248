//! What a server is started with: the dispatch [`Model`], the accept and
//! listener modes, and [`ServerConfig`] (its JSON form is the stats
//! document's `config`). The models read it; its defaults are the command
//! line's (`ServerConfig::new`, in `cli.rs`).

use std::fmt;
use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use evdispatch::Mechanism;
use serde_json::json;

use crate::content::access_log::{LogBuffer, LogFormat};
use crate::content::files::{CacheLimits, FileStore};
use crate::content::paths::SiteOptions;
use crate::content::response::{Https, Responder};

/// How connections are dispatched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Model {
    /// Event loops over a readiness mechanism of the library.
    Readiness(Mechanism),
    /// A pre-spawned pool of blocking threads, one per connection.
    Threads,
    /// io_uring completions (accept, receive and send as completions).
    UringCompletion,
}

impl Model {
    /// Every model: each library mechanism, then `threads` and
    /// `uring-completion`. Tests and the study iterate this.
    pub fn all() -> Vec<Model> {
        Mechanism::all()
            .map(Model::Readiness)
            .chain([Model::Threads, Model::UringCompletion])
            .collect()
    }

    /// The `--mechanism` name.
    pub fn name(self) -> &'static str {
        match self {
            Model::Readiness(m) => m.name(),
            Model::Threads => "threads",
            Model::UringCompletion => "uring-completion",
        }
    }

    /// `readiness`, `threads` or `uring-completion`.
    pub fn kind(self) -> &'static str {
        match self {
            Model::Readiness(_) => "readiness",
            other => other.name(),
        }
    }
}

impl fmt::Display for Model {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Model {
    type Err = String;
    fn from_str(s: &str) -> Result<Model, String> {
        match s {
            "threads" => Ok(Model::Threads),
            "uring-completion" => Ok(Model::UringCompletion),
            _ => s.parse::<Mechanism>().map(Model::Readiness).map_err(|_| {
                format!(
                    "unknown mechanism '{s}'; choose one of: {}, threads, uring-completion",
                    Mechanism::names()
                )
            }),
        }
    }
}

/// `--accept`: how many connections to accept per listener report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AcceptMode {
    /// One `accept` per report (the classic select server).
    One,
    /// `accept` until `EAGAIN` (multi-accept).
    All,
}

/// `--listener`: one socket per worker, or one shared by all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ListenerMode {
    /// One `SO_REUSEPORT` listener per worker (the kernel spreads connections).
    Reuseport,
    /// One listener registered in every worker's poller.
    Shared,
}

/// Everything a server needs to start.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Document root.
    pub root: PathBuf,
    /// Addresses to listen on (port 0: the kernel picks), the first the
    /// main one; at least one.
    pub listen: Vec<Listen>,
    /// Dispatch model.
    pub model: Model,
    /// Poller configuration (its mechanism is the model's, when readiness;
    /// `uring_entries` also sizes the completion model's ring).
    pub poller: evdispatch::Config,
    /// The `--poller-opt` pairs as given (for the report).
    pub poller_opts: Vec<String>,
    /// Event loops (readiness and uring-completion).
    pub workers: usize,
    /// Accept strategy.
    pub accept: AcceptMode,
    /// Listener arrangement.
    pub listener: ListenerMode,
    /// Use the wake-one modifier on a shared listener where supported.
    pub exclusive: bool,
    /// Keep-alive idle limit (and the limit on a client not reading).
    pub idle_timeout: Duration,
    /// Limit for receiving a request's headers.
    pub header_timeout: Duration,
    /// CPUs to pin workers to (worker i on `cpus[i % len]`).
    pub cpus: Option<Vec<usize>>,
    /// Most connections open at once, over all workers (each worker takes
    /// an equal share, rounded up); accepting pauses at the limit.
    pub max_connections: usize,
    /// Pool size of the `threads` model.
    pub threads: usize,
    /// File cache limits (over all workers).
    pub cache: CacheLimits,
    /// Largest request head accepted (bytes); also the read buffer size.
    pub max_header: usize,
    /// Listen backlog.
    pub backlog: i32,
    /// Readiness model: read a new connection at once, before registering
    /// it (adaptive: tried only now and then while it keeps finding nothing).
    pub eager_read: bool,
    /// `TCP_DEFER_ACCEPT` on the listeners, seconds (0: off): the kernel
    /// hands over a connection once its request has begun to arrive (a
    /// silent client after about this long), so the first read of a new
    /// connection finds data. h2o sets 1 s; nginx has it as `deferred`.
    pub defer_accept_s: u32,
    /// Dotfiles and directory listings (`--dotfiles`, `--listing`).
    pub site: SiteOptions,
    /// `--access-log`: the Combined Log Format file (`-`: standard output);
    /// `None`: no access log.
    pub access_log: Option<PathBuf>,
    /// `--access-log-format`: the fields of its lines.
    pub access_log_format: LogFormat,
    /// The certificates and keys of HTTPS (`--tls-cert`, `--tls-key`);
    /// `None`: plain HTTP only.
    pub tls: Option<crate::tls::TlsConfig>,
    /// `--redirect-https`: every plain-HTTP listener answers each request
    /// with a 301 to the same URL over HTTPS.
    pub redirect_https: bool,
    /// `--hsts SECONDS`: `Strict-Transport-Security: max-age=N` on every
    /// response over TLS (never over plain HTTP).
    pub hsts: Option<u64>,
    /// `--server-name`: the names the site is served as (checked against
    /// the certificates; the host of a redirect whose request had no
    /// `Host`).
    pub server_names: Vec<String>,
}

/// A listening socket of a worker, and whether it speaks TLS.
#[derive(Debug, Clone)]
pub(crate) struct Bound {
    pub(crate) listener: std::sync::Arc<std::net::TcpListener>,
    pub(crate) tls: bool,
}

/// One `--listen`: an address and whether it speaks TLS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listen {
    /// The address (port 0: the kernel picks).
    pub addr: SocketAddr,
    /// HTTPS on this address (`ADDR,tls`).
    pub tls: bool,
}

impl Listen {
    /// A plain-HTTP listener on `addr`.
    pub fn plain(addr: SocketAddr) -> Listen {
        Listen { addr, tls: false }
    }
}

impl ServerConfig {
    /// The configuration as JSON (the report's `config`).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "root": self.root.display().to_string(),
            // The first address as before; every one (`,tls` on HTTPS) in `listeners`.
            "listen": self.listeners().first().map(|l| l.addr.to_string()),
            "listeners": self.listeners().iter().map(|l| format!("{}{}", l.addr, if l.tls { ",tls" } else { "" })).collect::<Vec<_>>(),
            "model": self.model.kind(),
            "mechanism": self.model.name(),
            "workers": self.workers,
            "accept": format!("{:?}", self.accept).to_lowercase(),
            "listener": format!("{:?}", self.listener).to_lowercase(),
            "exclusive": self.exclusive,
            "idle_timeout_ms": self.idle_timeout.as_millis() as u64,
            "header_timeout_ms": self.header_timeout.as_millis() as u64,
            "cpus": self.cpus,
            "max_connections": if self.max_connections == usize::MAX { None } else { Some(self.max_connections) },
            "threads": self.threads,
            "cache_bytes": self.cache.max_bytes,
            "cache_max_file": self.cache.max_file,
            "max_header": self.max_header,
            "backlog": self.backlog,
            "eager_read": self.eager_read,
            "defer_accept_s": self.defer_accept_s,
            "access_log": self.access_log.as_ref().map(|p| p.display().to_string()),
            "access_log_format": format!("{:?}", self.access_log_format).to_lowercase(),
            // The default pair as before; every pair in `tls_pairs`.
            "tls_cert": self.tls.as_ref().and_then(|t| t.pairs.first()).map(|p| p.cert.display().to_string()),
            "tls_key": self.tls.as_ref().and_then(|t| t.pairs.first()).map(|p| p.key.display().to_string()),
            "tls_pairs": self.tls.as_ref().map(|t| t.pairs.iter().map(|p| json!({"cert": p.cert.display().to_string(), "key": p.key.display().to_string()})).collect::<Vec<_>>()),
            "redirect_https": self.redirect_https,
            "hsts": self.hsts,
            "server_names": self.server_names,
            "dotfiles": format!("{:?}", self.site.dotfiles).to_lowercase(),
            "listing": self.site.listing,
            "poller_opts": self.poller_opts,
            "initial_events": self.poller.initial_events,
            "uring_entries": self.poller.uring_entries,
        })
    }

    /// The listeners as served: those of `listen`, where, with
    /// certificates and no listener marked `tls`, every one serves HTTPS
    /// (the one-address form, `--listen ADDR --tls-cert …`); without
    /// certificates none does.
    pub fn listeners(&self) -> Vec<Listen> {
        let any_tls = self.listen.iter().any(|l| l.tls);
        self.listen
            .iter()
            .map(|l| Listen {
                addr: l.addr,
                tls: self.tls.is_some() && (l.tls || !any_tls),
            })
            .collect()
    }

    /// Each worker's share of `max_connections` (rounded up).
    pub(crate) fn max_open_per_worker(&self) -> usize {
        if self.max_connections == usize::MAX {
            usize::MAX
        } else {
            self.max_connections.div_ceil(self.workers.max(1))
        }
    }

    /// Slots each worker reserves for its connection table up front: its
    /// share of the cap (none when uncapped). Reserved, not touched: a page
    /// becomes resident when connections first use it, so a new peak of
    /// connections costs its own pages, never a copy of the whole table (a
    /// doubling table moves every entry, stalls the loop meanwhile and,
    /// past the allocator's mmap threshold, shows as a step of RSS).
    pub(crate) fn table_reserve(&self) -> usize {
        match self.max_open_per_worker() {
            usize::MAX => 0,
            n => n.min(1 << 20),
        }
    }

    /// A responder over the document root with a cache of `limits`,
    /// logging into `log` when there is an access log, for a server
    /// listening on `listening` (where `--redirect-https` sends to).
    pub(crate) fn responder(
        &self,
        limits: CacheLimits,
        log: Option<LogBuffer>,
        listening: &[Listen],
    ) -> io::Result<Responder> {
        let mut r = Responder::new(FileStore::open(&self.root, limits)?, self.site);
        if let Some(log) = log {
            r.set_access_log(log, self.access_log_format);
        }
        r.set_https(Https {
            redirect_port: listening
                .iter()
                .find(|l| l.tls)
                .filter(|_| self.redirect_https)
                .map(|l| l.addr.port()),
            default_host: self.server_names.first().cloned(),
            hsts: self.hsts,
        });
        Ok(r)
    }

    pub(crate) fn cpu_for(&self, worker: usize) -> Option<usize> {
        self.cpus.as_ref().map(|c| c[worker % c.len()])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names() {
        for m in Model::all() {
            assert_eq!(m.name().parse::<Model>().unwrap(), m);
        }
        let e = "kqueue".parse::<Model>().unwrap_err();
        assert!(e.contains("threads") && e.contains("epoll"), "{e}");
    }
}
