//! The command line of `evdispatch serve` (and of the `evdispatch-serve`
//! binary): [`ServeArgs`], the defaults of [`ServerConfig::new`], the
//! descriptor budget, and [`run`], which starts a [`Server`], prints its
//! address, waits for the stop signal and writes the stats document.

use std::io::{self, Write};
use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use evdispatch::Mechanism;

use crate::config::{AcceptMode, Listen, ListenerMode, Model, ServerConfig};
use crate::content::access_log::LogFormat;
use crate::content::files::CacheLimits;
use crate::content::paths::{Dotfiles, SiteOptions};
use crate::server::Server;
use crate::sys;
use crate::tls::{CertPair, TlsConfig};

/// Command-line arguments of `evdispatch serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Document root.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Address to listen on (port 0: any free port; the real one is
    /// printed). Repeatable: one process serves every address given.
    /// `ADDR,tls` serves HTTPS there (nginx's `listen ADDR ssl`); with
    /// --tls-cert and no `,tls` address, every address serves HTTPS.
    #[arg(long, value_name = "ADDR[,tls]", default_value = "127.0.0.1:8080")]
    pub listen: Vec<String>,
    /// A library mechanism (`evdispatch mechanisms`), or the models `threads`
    /// and `uring-completion`.
    #[arg(long, default_value = "epoll")]
    pub mechanism: String,
    /// Event loops (one per core), readiness and uring-completion models.
    #[arg(long, default_value_t = 1)]
    pub workers: usize,
    /// Accept one connection per listener report, or all until EAGAIN.
    #[arg(long, value_enum, default_value = "all")]
    pub accept: AcceptMode,
    /// One SO_REUSEPORT listener per worker, or one shared by all.
    #[arg(long, value_enum, default_value = "reuseport")]
    pub listener: ListenerMode,
    /// With a shared listener, do not ask for wake-one (shows the herd).
    #[arg(long)]
    pub no_exclusive: bool,
    /// Close a keep-alive connection idle this long (also: a client not reading).
    #[arg(long, default_value = "60s", value_parser = evdispatch_host::parse_duration)]
    pub idle_timeout: Duration,
    /// Close a connection whose request headers take longer than this.
    #[arg(long, default_value = "10s", value_parser = evdispatch_host::parse_duration)]
    pub header_timeout: Duration,
    /// CPUs to pin workers to, e.g. `0`, `0,1`, `0-3`.
    #[arg(long)]
    pub cpu: Option<String>,
    /// Write the final statistics here as JSON when stopped (`-`: stdout).
    #[arg(long)]
    pub stats_json: Option<PathBuf>,
    /// A poller tunable, `key=value` (repeatable; see evdispatch::Config::KEYS).
    #[arg(long = "poller-opt")]
    pub poller_opt: Vec<String>,
    /// Set this process's descriptor limit (RLIMIT_NOFILE) first.
    #[arg(long)]
    pub rlimit_nofile: Option<u64>,
    /// Set this process's queued-signal limit (RLIMIT_SIGPENDING) first.
    #[arg(long)]
    pub rlimit_sigpending: Option<u64>,
    /// Most connections open at once; accepting pauses at the limit.
    /// Never more than the descriptor limit allows with a reserve kept for
    /// files and the workers' own descriptors (`--fd-reserve`).
    #[arg(long)]
    pub max_connections: Option<usize>,
    /// Descriptors kept free for the files being sent when capping the
    /// connections by the descriptor limit (default: 16 + 1/64 of the
    /// limit; 0: no cap, accept until EMFILE).
    #[arg(long)]
    pub fd_reserve: Option<usize>,
    /// Pool size of the `threads` model.
    #[arg(long, default_value_t = 256)]
    pub threads: usize,
    /// Bytes of file content cached in memory (over all workers).
    #[arg(long, default_value_t = 64 << 20)]
    pub cache_bytes: usize,
    /// Largest file cached; larger files are sent with sendfile.
    #[arg(long, default_value_t = 256 << 10)]
    pub cache_max_file: usize,
    /// Largest request head accepted, bytes (larger: 431, or 414 when the
    /// request line alone is longer, 501 when even its method is); also
    /// the read buffer. Fixed limits besides: a request target of at most
    /// 8192 bytes (414), at most 100 header lines (431), a Content-Length
    /// of at most 1 MiB (413); a GET
    /// body is waited for (and discarded) only while it fits in this many
    /// bytes with its head, else answered without and the connection closed.
    #[arg(long, default_value_t = 8192)]
    pub max_header: usize,
    /// Listen backlog.
    #[arg(long, default_value_t = 4096)]
    pub backlog: i32,
    /// Readiness model: always wait for the mechanism's first report on a
    /// new connection instead of trying to read it at once.
    #[arg(long)]
    pub no_eager_read: bool,
    /// TCP_DEFER_ACCEPT on the listener: accept a connection only once its
    /// request has begun to arrive, or after about this long for a silent
    /// client (whole seconds; 0: off, accept at the handshake).
    #[arg(long, default_value = "1s", value_parser = evdispatch_host::parse_duration)]
    pub defer_accept: Duration,
    // The HTTP semantics flags: keep these together.
    /// Files and directories whose name starts with `.`: `deny` answers 404
    /// (`.well-known` at the root excepted), `allow` serves them.
    #[arg(long, value_enum, default_value = "deny")]
    pub dotfiles: Dotfiles,
    /// An HTML listing for a directory without index.html (else 403).
    #[arg(long)]
    pub listing: bool,
    /// Log every response to FILE in the Combined Log Format (nginx's
    /// `combined`), `-` for standard output; SIGHUP reopens FILE (for
    /// logrotate). Written by a thread of its own, at least once a second.
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// The fields of an --access-log line: `combined` (nginx's), or
    /// `combined-tls`, which adds the TLS version and cipher (nginx's
    /// `$ssl_protocol $ssl_cipher`; `- -` on plain HTTP).
    #[arg(long, value_enum, default_value = "combined")]
    pub access_log_format: LogFormat,
    /// Serve HTTPS with this PEM certificate chain (the server's
    /// certificate first); needs --tls-key. Repeatable, in pairs with
    /// --tls-key: each handshake gets the certificate whose names match
    /// its SNI name (exactly or by a `*.` wildcard), the first when none
    /// does. SIGHUP reloads every pair (a broken one keeps the old).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Vec<PathBuf>,
    /// The PEM private key of the --tls-cert of the same rank (ECDSA, RSA
    /// or Ed25519).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Vec<PathBuf>,
    /// A name the site is served as (repeatable): a warning at start-up
    /// when no --tls-cert names it; the host of a --redirect-https answer
    /// to a request without `Host`.
    #[arg(long, value_name = "NAME")]
    pub server_name: Vec<String>,
    /// Plain-HTTP listeners answer every request with a 301 to the same
    /// URL over HTTPS (the request's host, the first TLS listener's port
    /// unless 443), as nginx's `return 301 https://$host$request_uri`.
    #[arg(long, requires = "tls_cert")]
    pub redirect_https: bool,
    /// Send `Strict-Transport-Security: max-age=SECONDS` on every HTTPS
    /// response (never over plain HTTP, RFC 6797 §7.2).
    #[arg(long, value_name = "SECONDS", requires = "tls_cert")]
    pub hsts: Option<u64>,
}

/// `ADDR` or `ADDR,tls`, the form of `--listen`.
fn parse_listen(text: &str) -> anyhow::Result<Listen> {
    let (addr, tls) = match text.rsplit_once(',') {
        Some((a, "tls")) => (a, true),
        Some((_, other)) => anyhow::bail!("--listen {text}: unknown option '{other}' (only 'tls')"),
        None => (text, false),
    };
    let addr = addr
        .to_socket_addrs()
        .with_context(|| format!("--listen {text}: not an address"))?
        .next()
        .with_context(|| format!("--listen {text}: resolves to nothing"))?;
    Ok(Listen { addr, tls })
}

impl ServeArgs {
    /// The server configuration these arguments describe.
    pub fn config(&self) -> anyhow::Result<ServerConfig> {
        let model: Model = self.mechanism.parse().map_err(anyhow::Error::msg)?;
        let listen = self
            .listen
            .iter()
            .map(|l| parse_listen(l))
            .collect::<anyhow::Result<Vec<_>>>()?;
        if self.tls_cert.len() != self.tls_key.len() {
            anyhow::bail!(
                "--tls-cert given {} times and --tls-key {}: they go in pairs",
                self.tls_cert.len(),
                self.tls_key.len()
            );
        }
        if self.tls_cert.is_empty() && listen.iter().any(|l| l.tls) {
            anyhow::bail!("--listen ADDR,tls needs --tls-cert and --tls-key");
        }
        if self.redirect_https && listen.iter().all(|l| l.tls) {
            anyhow::bail!("--redirect-https needs a plain --listen address beside the HTTPS one");
        }
        let mut poller = evdispatch::Config::new(match model {
            Model::Readiness(m) => m,
            _ => Mechanism::Epoll,
        });
        poller
            .apply(self.poller_opt.iter().map(String::as_str))
            .map_err(anyhow::Error::msg)?;
        let cpus = self.cpu.as_deref().map(evdispatch_host::parse_cpu_list);
        Ok(ServerConfig {
            root: self.root.clone(),
            listen,
            model,
            poller,
            poller_opts: self.poller_opt.clone(),
            workers: self.workers,
            accept: self.accept,
            listener: self.listener,
            exclusive: !self.no_exclusive,
            idle_timeout: self.idle_timeout,
            header_timeout: self.header_timeout,
            cpus: cpus.transpose().map_err(anyhow::Error::msg)?,
            max_connections: self.max_connections.unwrap_or(usize::MAX),
            threads: self.threads,
            cache: CacheLimits {
                max_bytes: self.cache_bytes,
                max_file: self.cache_max_file,
            },
            max_header: self.max_header,
            backlog: self.backlog,
            eager_read: !self.no_eager_read,
            defer_accept_s: self.defer_accept.as_secs_f64().ceil() as u32,
            site: SiteOptions {
                dotfiles: self.dotfiles,
                listing: self.listing,
            },
            access_log: self.access_log.clone(),
            access_log_format: self.access_log_format,
            tls: if self.tls_cert.is_empty() {
                None
            } else {
                let pairs: Vec<CertPair> = (self.tls_cert.iter().zip(&self.tls_key))
                    .map(|(c, k)| CertPair {
                        cert: c.clone(),
                        key: k.clone(),
                    })
                    .collect();
                Some(TlsConfig::load_pairs(&pairs, &self.server_name)?)
            },
            redirect_https: self.redirect_https,
            hsts: self.hsts,
            server_names: self.server_name.clone(),
        })
    }
}

impl ServerConfig {
    /// Defaults for serving `root` with `model` on 127.0.0.1, port 0: those
    /// of the command line ([`ServeArgs`]), so they are written once.
    pub fn new(root: impl Into<PathBuf>, model: Model) -> ServerConfig {
        #[derive(clap::Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeArgs,
        }
        let mut args = <Serve as clap::Parser>::parse_from(["serve"]).args;
        args.root = root.into();
        args.listen = vec!["127.0.0.1:0".into()];
        args.mechanism = model.name().into();
        args.config().expect("the default command line is valid")
    }
}

/// How many connections a server may hold with `nofile` descriptors
/// allowed, `open_now` open before it starts and `workers` workers: what is
/// left after 8 descriptors per worker (listener, poller, waker, timers)
/// and `reserve` for the files being sent (`None`: 16 plus 1/64 of the
/// limit). `Some(0)`: no cap (accept until `EMFILE`).
pub fn connection_budget(
    nofile: u64,
    open_now: usize,
    workers: usize,
    reserve: Option<usize>,
) -> Option<usize> {
    let nofile = usize::try_from(nofile).unwrap_or(usize::MAX);
    let reserve = match reserve {
        Some(0) => return None,
        Some(r) => r,
        None => 16 + nofile / 64,
    };
    Some(
        nofile
            .saturating_sub(open_now + reserve + 8 * workers.max(1))
            .max(1),
    )
}

/// Run `evdispatch serve` until SIGINT or SIGTERM.
///
/// # Command-line contract
///
/// Once every worker listens, the server prints one line per `--listen`,
/// in the order given, `listening on http://IP:PORT` (`https://` for an
/// HTTPS listener), to standard output (with `--listen …:0`, the port the
/// kernel chose), and flushes; with one `--listen`, exactly one line.
/// SIGINT or SIGTERM stops it
/// gracefully (no new connections; idle ones closed; busy ones get up to 3 s
/// to finish) and then `--stats-json FILE` is written (`-`: standard output).
/// SIGHUP never stops it: it reopens the `--access-log` file (logrotate's
/// `postrotate`) and reloads every `--tls-cert`/`--tls-key` pair
/// ([`TlsConfig::reload`]: a pair that fails keeps the old one, and
/// standard error says why). Start-up fails with "address
/// already in use" and a non-zero exit when another process listens on the
/// address, also with `--listener reuseport` (see the listeners' probe in
/// `server.rs`), and with a clear message when a `--tls-cert` or `--tls-key`
/// cannot be read, is not PEM, or the key does not match the certificate
/// ([`TlsConfig::load_pairs`]).
pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    use evdispatch_host::{set_rlimit, Resource};
    if let Some(n) = args.rlimit_nofile {
        set_rlimit(Resource::Nofile, Some(n)).context("--rlimit-nofile")?;
    }
    if let Some(n) = args.rlimit_sigpending {
        set_rlimit(Resource::Sigpending, Some(n)).context("--rlimit-sigpending")?;
    }
    let mut cfg = args.config()?;
    // Stop accepting before the descriptor table is full, so that a request
    // arriving on an accepted connection can still open its file (at the
    // very limit it would get a 500).
    let nofile = evdispatch_host::get_rlimit(Resource::Nofile)
        .context("cannot read RLIMIT_NOFILE")?
        .0;
    let open_now = evdispatch_host::open_fds(std::process::id())
        .context("cannot count this process's descriptors")?;
    if let Some(budget) = connection_budget(nofile, open_now, cfg.workers, args.fd_reserve) {
        cfg.max_connections = cfg.max_connections.min(budget);
    }
    // Block the stop signals before any thread exists, so every thread
    // inherits the mask and only the sigwait below receives them.
    // SIGHUP too: it reopens the access log and never stops the server.
    let signals = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];
    sys::block_signals(&signals)?;
    // The RT-signal mechanisms direct their signals (and SIGIO on queue
    // overflow) at their own thread, where they are blocked; blocking them in
    // every thread as well means a stray process-directed one can never take
    // its default action (terminate) in a thread that does not expect it.
    let rt: Vec<libc::c_int> = std::iter::once(libc::SIGIO)
        .chain(libc::SIGRTMIN()..=libc::SIGRTMAX())
        .collect();
    sys::block_signals(&rt)?;
    let model = cfg.model;
    let server = Server::start(cfg).with_context(|| format!("cannot start the {model} server"))?;
    {
        let mut out = io::stdout().lock();
        for l in server.listening() {
            let scheme = if l.tls { "https" } else { "http" };
            writeln!(out, "listening on {scheme}://{}", l.addr)?;
        }
        out.flush()?;
    }
    while sys::wait_signal(&signals)? == libc::SIGHUP {
        server.reopen_access_log();
        if let Some(tls) = &server.config().tls {
            for line in tls.reload() {
                eprintln!("evdispatch serve: SIGHUP: {line}");
            }
        }
    }
    let report = server.stop()?;
    let doc = serde_json::to_string_pretty(&report.to_json())?;
    match &args.stats_json {
        Some(p) if p.as_os_str() == "-" => println!("{doc}"),
        Some(p) => std::fs::write(p, doc + "\n")
            .with_context(|| format!("--stats-json {}", p.display()))?,
        None => {}
    }
    let t = report.totals();
    eprintln!(
        "evdispatch serve: stopped after {:.1}s: {} requests, {} connections",
        report.elapsed_s,
        t.total_requests(),
        t.accepted
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_the_one_grammar() {
        use clap::Parser;
        #[derive(Parser)]
        struct Serve {
            #[command(flatten)]
            args: ServeArgs,
        }
        let a = Serve::try_parse_from([
            "serve",
            "--idle-timeout",
            "1min",
            "--header-timeout",
            "500us",
        ])
        .unwrap()
        .args;
        assert_eq!(a.idle_timeout, Duration::from_secs(60));
        assert_eq!(a.header_timeout, Duration::from_micros(500));
        assert!(Serve::try_parse_from(["serve", "--idle-timeout", "5q"]).is_err());
    }

    #[test]
    fn connection_budget_keeps_a_reserve() {
        // 20,000 descriptors, 10 open, 2 workers: 16 + 312 + 16 reserved.
        assert_eq!(
            connection_budget(20_000, 10, 2, None),
            Some(20_000 - 10 - 344)
        );
        // A tiny limit still leaves room for files, and never zero.
        assert_eq!(connection_budget(96, 10, 1, None), Some(96 - 10 - 25));
        assert_eq!(connection_budget(16, 10, 1, None), Some(1));
        assert_eq!(connection_budget(1000, 10, 1, Some(100)), Some(882));
        assert_eq!(connection_budget(1000, 10, 1, Some(0)), None);
    }
}
