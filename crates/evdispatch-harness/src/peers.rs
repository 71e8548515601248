//! The peer servers (nginx, lighttpd, h2o) and ours, started with a
//! generated configuration:
//! one worker by default, the given port and document root, keep-alive on,
//! access log off, pinned to the given CPUs.

use std::fs;
use std::io::{BufRead, BufReader};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use evdispatch_server::cmdline::ServeCommand;

use crate::cgroup::{BudgetGroup, CpuBudget};
use crate::installed::{find, Program, Tool};
use crate::process::{
    evdispatch, free_port, nofile_limit, wait_listening, ChildGroup, ServerProcess,
};
use crate::sys;

/// lighttpd's `server.event-handler`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LighttpdEvents {
    /// `linux-sysepoll` (epoll).
    LinuxSysepoll,
    /// `poll`.
    Poll,
}

impl LighttpdEvents {
    /// The configuration value.
    pub fn name(self) -> &'static str {
        match self {
            LighttpdEvents::LinuxSysepoll => "linux-sysepoll",
            LighttpdEvents::Poll => "poll",
        }
    }
}

/// How to run a peer server.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    /// Directory served.
    pub docroot: PathBuf,
    /// Address the server listens on (default 127.0.0.1; `0.0.0.0` for
    /// every interface, e.g. when the load comes from another host).
    pub bind: IpAddr,
    /// Port on [`bind`](Self::bind) (0: a free one is picked).
    pub port: u16,
    /// Worker processes (nginx) or threads (h2o); lighttpd always runs one.
    pub workers: u32,
    /// CPUs the server is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Connections one worker accepts at most.
    pub max_connections: u32,
    /// Seconds an idle keep-alive connection is kept.
    pub keepalive_timeout_s: u32,
    /// Seconds a client may take to send its request head (nginx's
    /// `client_header_timeout`, lighttpd's `max-read-idle`, h2o's
    /// `http1-request-timeout`).
    pub request_timeout_s: u32,
    /// lighttpd's event handler.
    pub lighttpd_events: LighttpdEvents,
    /// `TCP_DEFER_ACCEPT` on the listener, seconds (0: as packaged): a
    /// connection is accepted once its request has begun to arrive. nginx:
    /// `listen … deferred` (its own timeout); lighttpd:
    /// `server.defer-accept`; h2o sets 1 s itself and cannot turn it off.
    pub defer_accept_s: u32,
    /// An access log in the Combined Log Format to this file (nginx
    /// `access_log FILE combined`, lighttpd `mod_accesslog`, h2o
    /// `access-log`); `None`: off.
    pub access_log: Option<PathBuf>,
    /// nginx only: directives added at the end of its `server` block (e.g.
    /// `gzip_static on;`), for tests that compare HTTP semantics with ours.
    /// Empty for measurements.
    pub nginx_server_extra: String,
    /// Serve HTTPS (nginx only; `None`: plain HTTP).
    pub tls: Option<PeerTls>,
    /// Run the server (master and workers) in a cgroup of its own with this
    /// CPU budget (`None`: as much CPU as the host gives).
    pub cpu_budget: Option<CpuBudget>,
    /// nginx only: `listen … http2`: HTTP/2 by ALPN over HTTPS, and over
    /// plain HTTP h2c by prior knowledge only (nginx 1.22 then refuses
    /// HTTP/1.1 on that port).
    pub http2: bool,
}

/// HTTPS for a peer (nginx's `listen … ssl`).
#[derive(Debug, Clone)]
pub struct PeerTls {
    /// PEM certificate chain.
    pub cert: PathBuf,
    /// PEM private key.
    pub key: PathBuf,
    /// nginx's `ssl_protocols`, e.g. `"TLSv1.2 TLSv1.3"`.
    pub protocols: String,
}

impl PeerConfig {
    /// Defaults: one worker, a free port, not pinned, 4096 connections,
    /// keep-alive 65 s, request timeout 60 s, lighttpd on epoll, no deferred
    /// accept (except h2o's own).
    pub fn new(docroot: impl Into<PathBuf>) -> PeerConfig {
        PeerConfig {
            docroot: docroot.into(),
            bind: IpAddr::from([127, 0, 0, 1]),
            port: 0,
            workers: 1,
            cpus: Vec::new(),
            max_connections: 4096,
            keepalive_timeout_s: 65,
            request_timeout_s: 60,
            lighttpd_events: LighttpdEvents::LinuxSysepoll,
            defer_accept_s: 0,
            access_log: None,
            nginx_server_extra: String::new(),
            tls: None,
            cpu_budget: None,
            http2: false,
        }
    }

    /// Connections `peer` really takes at once with this configuration
    /// (lighttpd's `max-connections` is bounded by half its descriptors,
    /// which the process limit bounds in turn).
    pub fn effective_max_connections(&self, peer: Peer) -> u32 {
        match peer {
            Peer::Lighttpd => lighttpd_limits(self).1,
            Peer::Nginx => nginx_usable_connections(self),
            Peer::H2o => self.max_connections,
        }
    }
}

/// lighttpd's `(server.max-fds, server.max-connections)`.
fn lighttpd_limits(c: &PeerConfig) -> (u64, u32) {
    let fds = (c.max_connections as u64 * 2 + 64).min(nofile_limit());
    (fds, c.max_connections.min(fds as u32 / 2))
}

/// A peer server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    /// nginx.
    Nginx,
    /// lighttpd.
    Lighttpd,
    /// h2o.
    H2o,
}

impl Peer {
    /// Its program.
    pub fn tool(self) -> Tool {
        match self {
            Peer::Nginx => Tool::Nginx,
            Peer::Lighttpd => Tool::Lighttpd,
            Peer::H2o => Tool::H2o,
        }
    }
}

/// nginx's `worker_connections` for `max_connections` usable ones. nginx
/// keeps a sixteenth of its connections free: below that it closes idle
/// keep-alive connections to reuse them ("worker_connections are not
/// enough, reusing connections"), so a configuration of exactly
/// `max_connections` held only 15/16 of them (9,760 of 10,000 idle ones).
/// Also a margin for the listener and the connections in passing.
fn nginx_worker_connections(c: &PeerConfig) -> u32 {
    let wanted = (c.max_connections as u64 + 16) * 16;
    (wanted.div_ceil(15) + 16).min(u32::MAX as u64) as u32
}

/// nginx's `worker_rlimit_nofile`.
fn nginx_nofile(c: &PeerConfig) -> u64 {
    (nginx_worker_connections(c) as u64 + 64).min(nofile_limit())
}

/// Connections nginx holds without reclaiming idle ones: 15/16 of its
/// `worker_connections` or of its descriptors, whichever is fewer, less the
/// margin; at most `max_connections`.
fn nginx_usable_connections(c: &PeerConfig) -> u32 {
    let slots = (nginx_worker_connections(c) as u64).min(nginx_nofile(c).saturating_sub(64));
    let usable = (slots * 15 / 16).saturating_sub(16);
    c.max_connections.min(usable.min(u32::MAX as u64) as u32)
}

fn nginx_conf(c: &PeerConfig, dir: &Path, port: u16) -> String {
    let listen = SocketAddr::new(c.bind, port);
    let user = if sys::is_root() { "user root;\n" } else { "" };
    let d = dir.display();
    let reuseport = if c.workers > 1 { " reuseport" } else { "" };
    let deferred = if c.defer_accept_s > 0 {
        " deferred"
    } else {
        ""
    };
    let access_log = match &c.access_log {
        Some(p) => format!("{} combined", p.display()),
        None => "off".into(),
    };
    // The cipher suites in our server's order of preference (its own
    // choice, not the client's), so that both servers negotiate the same
    // suite with the same client: (TLS 1.3 suites, TLS 1.2 ciphers).
    let suites = if evdispatch_server::aes_in_hardware() {
        (
            "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256",
            "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305",
        )
    } else {
        (
            "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384",
            "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384",
        )
    };
    let (ssl, ssl_conf) = match &c.tls {
        Some(t) => (
            " ssl",
            format!(
                "ssl_certificate {};\n        ssl_certificate_key {};\n        ssl_protocols {};\n        ssl_session_cache shared:SSL:1m;\n        ssl_prefer_server_ciphers on;\n        ssl_conf_command Ciphersuites {};\n        ssl_ciphers {};",
                t.cert.display(),
                t.key.display(),
                t.protocols,
                suites.0,
                suites.1
            ),
        ),
        None => ("", String::new()),
    };
    format!(
        "{user}daemon off;
master_process on;
worker_processes {workers};
worker_rlimit_nofile {nofile};
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{
    worker_connections {conns};
    use epoll;
    accept_mutex off;
    multi_accept on;
}}
http {{
    access_log {access_log};
    sendfile on;
    tcp_nodelay on;
    keepalive_timeout {ka}s;
    keepalive_requests 100000000;
    client_header_timeout {rt}s;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    types {{ text/html html; text/plain txt; }}
    default_type application/octet-stream;
    server {{
        listen {listen}{ssl}{http2} backlog=4096{reuseport}{deferred};
        {ssl_conf}
        root {root};
        index index.html;
{extra}
    }}
}}
",
        workers = c.workers.max(1),
        nofile = nginx_nofile(c),
        conns = nginx_worker_connections(c),
        ka = c.keepalive_timeout_s,
        rt = c.request_timeout_s,
        root = c.docroot.display(),
        extra = c.nginx_server_extra,
        http2 = if c.http2 { " http2" } else { "" },
    )
}

fn lighttpd_conf(c: &PeerConfig, dir: &Path, port: u16) -> String {
    // lighttpd refuses server.username = root and, without one, keeps the
    // user it was started as: nothing to set.
    let (fds, conns) = lighttpd_limits(c);
    let bind = c.bind;
    format!(
        "server.document-root = \"{root}\"
server.bind = \"{bind}\"
server.port = {port}
server.event-handler = \"{ev}\"
server.max-connections = {conns}
server.max-fds = {fds}
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = {ka}
server.max-read-idle = {rt}
server.defer-accept = {defer}
server.errorlog = \"{d}/error.log\"
server.modules = ({modules})
{accesslog}index-file.names = (\"index.html\")
mimetype.assign = (\".html\" => \"text/html\", \".txt\" => \"text/plain\", \"\" => \"application/octet-stream\")
",
        root = c.docroot.display(),
        ev = c.lighttpd_events.name(),
        ka = c.keepalive_timeout_s,
        rt = c.request_timeout_s,
        defer = c.defer_accept_s,
        d = dir.display(),
        modules = if c.access_log.is_some() {
            "\"mod_accesslog\""
        } else {
            ""
        },
        accesslog = match &c.access_log {
            Some(p) => format!(
                "accesslog.filename = \"{}\"\naccesslog.format = \"%h %l %u %t \\\"%r\\\" %>s %b \\\"%{{Referer}}i\\\" \\\"%{{User-Agent}}i\\\"\"\n",
                p.display()
            ),
            None => String::new(),
        },
    )
}

fn h2o_conf(c: &PeerConfig, dir: &Path, port: u16) -> String {
    let bind = c.bind;
    let user = if sys::is_root() { "user: root\n" } else { "" };
    format!(
        "listen:
  host: {bind}
  port: {port}
{ssl}num-threads: {threads}
max-connections: {conns}
http1-request-timeout: {rt}
http2-idle-timeout: {ka}
error-log: {d}/error.log
{access_log}pid-file: {d}/h2o.pid
{user}hosts:
  default:
    paths:
      /:
        file.dir: {root}
",
        threads = c.workers.max(1),
        conns = c.max_connections,
        rt = c.request_timeout_s,
        ka = c.keepalive_timeout_s,
        d = dir.display(),
        root = c.docroot.display(),
        access_log = match &c.access_log {
            Some(p) => format!("access-log: {}\n", p.display()),
            None => String::new(),
        },
        // HTTPS with HTTP/2 by ALPN; a plain listener takes h2c by prior
        // knowledge as well as HTTP/1.1.
        ssl = match &c.tls {
            Some(t) => format!(
                "  ssl:\n    certificate-file: {}\n    key-file: {}\n",
                t.cert.display(),
                t.key.display()
            ),
            None => String::new(),
        },
    )
}

/// Start `peer` with a configuration generated in a temporary directory,
/// and wait until it listens. Fails with [`NotInstalled`](crate::NotInstalled)'s message when the
/// program is absent.
pub fn start_peer(peer: Peer, cfg: &PeerConfig) -> anyhow::Result<ServerProcess> {
    let program = find(peer.tool())?;
    if !cfg.docroot.is_dir() {
        bail!("document root {} is not a directory", cfg.docroot.display());
    }
    let mut last_err = None;
    // A picked port may be taken by someone else before the server binds it.
    for _ in 0..3 {
        let port = if cfg.port == 0 {
            free_port()?
        } else {
            cfg.port
        };
        match start_once(peer, &program, cfg, port) {
            Ok(s) => return Ok(s),
            Err(e) if cfg.port == 0 && format!("{e:#}").contains("in use") => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow!("cannot start {}", program.tool.command())))
}

fn start_once(
    peer: Peer,
    program: &Program,
    cfg: &PeerConfig,
    port: u16,
) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("evd-{}-", program.tool.command()))
        .tempdir()
        .context("cannot create a temporary directory")?;
    let d = dir.path();
    let log = d.join("error.log");
    let mut cmd = Command::new(&program.path);
    match peer {
        Peer::Nginx => {
            let conf = d.join("nginx.conf");
            fs::write(&conf, nginx_conf(cfg, d, port))?;
            cmd.arg("-p")
                .arg(d)
                .arg("-c")
                .arg(&conf)
                .arg("-e")
                .arg(&log);
        }
        Peer::Lighttpd => {
            let conf = d.join("lighttpd.conf");
            fs::write(&conf, lighttpd_conf(cfg, d, port))?;
            cmd.arg("-D").arg("-f").arg(&conf);
        }
        Peer::H2o => {
            let conf = d.join("h2o.conf");
            fs::write(&conf, h2o_conf(cfg, d, port))?;
            cmd.arg("-c").arg(&conf);
        }
    }
    let out = fs::File::create(d.join("stdout.log"))?;
    let err = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)?;
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    sys::prepare(&mut cmd, &cfg.cpus)?;
    let cgroup = budget_group(&mut cmd, cfg.cpu_budget)?;
    let mut group = ChildGroup::spawn(cmd, &program.path.display().to_string())?;
    let addr = SocketAddr::new(cfg.bind, port);
    let name = program.tool.command();
    let waited = wait_listening(&mut group, addr, Duration::from_secs(10), name, Some(&log));
    let server = ServerProcess {
        group: Some(group),
        name: name.to_string(),
        version: program.version.clone(),
        addr,
        https: cfg.tls.is_some(),
        dir: Some(dir),
        log: Some(log),
        stats_json: None,
        cgroup,
    };
    waited?;
    Ok(server)
}

/// How to run our own server (`evdispatch serve …`).
#[derive(Debug, Clone)]
pub struct OursConfig {
    /// The `evdispatch` binary.
    pub binary: PathBuf,
    /// The command line after `serve` (mechanism, document root, port 0,
    /// …); its `stats_json` is replaced as `stats_json` below says.
    pub serve: ServeCommand,
    /// CPUs it is pinned to (empty: not pinned).
    pub cpus: Vec<usize>,
    /// Ask for `--stats-json FILE`, returned by [`ServerProcess::stop`].
    pub stats_json: bool,
    /// Run at the lowest priority (`SCHED_IDLE`, every thread): a stand-in
    /// for another machine, that must not take CPU from what is measured.
    pub idle: bool,
    /// Run it in a cgroup of its own with this CPU budget (`None`: as much
    /// CPU as the host gives).
    pub cpu_budget: Option<CpuBudget>,
}

/// A group with `budget` that `cmd`'s child joins before it starts, or
/// none without a budget.
fn budget_group(
    cmd: &mut Command,
    budget: Option<CpuBudget>,
) -> anyhow::Result<Option<BudgetGroup>> {
    let Some(b) = budget else {
        return Ok(None);
    };
    let group = BudgetGroup::create(b)?;
    group.attach(cmd)?;
    Ok(Some(group))
}

/// Start `evdispatch serve ARGS`, wait for its `listening on http(s)://IP:PORT`
/// line, and return it running. The server must handle SIGTERM (write its
/// `--stats-json` file and exit) from the moment it prints that line.
pub fn start_ours(cfg: &OursConfig) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::Builder::new().prefix("evd-serve-").tempdir()?;
    let stats = cfg.stats_json.then(|| dir.path().join("stats.json"));
    let serve = ServeCommand {
        stats_json: stats.clone(),
        ..cfg.serve.clone()
    };
    start_announced(
        &cfg.binary,
        "serve",
        serve.args(),
        &cfg.cpus,
        dir,
        stats,
        |cmd| {
            if cfg.idle {
                sys::idle_priority(cmd);
            }
            budget_group(cmd, cfg.cpu_budget)
        },
    )
}

/// Start `BINARY COMMAND ARGS` (any program of ours that prints `listening on
/// http://IP:PORT` once it listens, e.g. `evdispatch bench floor-server`),
/// pinned to `cpus`, and return it running once that address accepts
/// connections. It is stopped like every [`ServerProcess`].
pub fn start_listening_program(
    binary: &Path,
    command: &str,
    args: Vec<std::ffi::OsString>,
    cpus: &[usize],
) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::Builder::new().prefix("evd-serve-").tempdir()?;
    start_announced(binary, command, args, cpus, dir, None, |_| Ok(None))
}

/// Start `BINARY COMMAND ARGS` with `confine` applied to its command (a
/// priority, a CPU budget: the group it returns lives with the server).
fn start_announced(
    binary: &Path,
    command: &str,
    args: Vec<std::ffi::OsString>,
    cpus: &[usize],
    dir: tempfile::TempDir,
    stats: Option<PathBuf>,
    confine: impl FnOnce(&mut Command) -> anyhow::Result<Option<BudgetGroup>>,
) -> anyhow::Result<ServerProcess> {
    let what = format!("evdispatch {command}");
    let log = dir.path().join("stderr.log");
    let mut cmd = evdispatch(binary, command, args, cpus)?;
    cmd.stdout(Stdio::piped()).stderr(fs::File::create(&log)?);
    let cgroup = confine(&mut cmd)?;
    let mut group = ChildGroup::spawn(cmd, &binary.display().to_string())?;
    let stdout = group.child_mut().and_then(|c| c.stdout.take());
    let stdout = stdout.expect("piped stdout");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if !sent {
                let https = line.contains("listening on https://");
                let rest = line
                    .split_once("listening on http://")
                    .or_else(|| line.split_once("listening on https://"))
                    .map(|(_, rest)| rest);
                if let Some(rest) = rest {
                    let addr = rest.split(['/', ' ']).next().unwrap_or("").to_string();
                    sent = tx.send((addr, https)).is_ok();
                }
            }
            // Keep reading so the server never blocks on a full pipe.
        }
    });
    let mut server = ServerProcess {
        group: Some(group),
        name: "evdispatch".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        addr: ([127, 0, 0, 1], 0).into(),
        https: false,
        dir: Some(dir),
        log: Some(log),
        stats_json: stats,
        cgroup,
    };
    let (addr_text, https) = rx.recv_timeout(Duration::from_secs(10)).map_err(|_| {
        anyhow!(
            "{what} printed no 'listening on http(s)://IP:PORT' within 10 s; stderr:\n{}",
            server.log_tail()
        )
    })?;
    server.https = https;
    server.addr = addr_text
        .parse()
        .with_context(|| format!("{what} announced an unreadable address '{addr_text}'"))?;
    if let Some(group) = server.group.as_mut() {
        let log = server.log.as_deref();
        wait_listening(
            group,
            server.addr,
            Duration::from_secs(5),
            "evdispatch",
            log,
        )?;
    }
    if !server.is_running() {
        bail!("{what} exited; stderr:\n{}", server.log_tail());
    }
    Ok(server)
}

/// A temporary document root holding `index.html` of `size` bytes and any
/// further `(name, size)` files.
pub fn docroot(size: usize, extra: &[(&str, usize)]) -> anyhow::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new().prefix("evd-docroot-").tempdir()?;
    let fill = |n: usize| -> Vec<u8> { (0..n).map(|i| b'a' + (i % 26) as u8).collect() };
    fs::write(dir.path().join("index.html"), fill(size))?;
    for (name, n) in extra {
        fs::write(dir.path().join(name), fill(*n))?;
    }
    // Servers that drop privileges must still read it.
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configs_carry_the_settings() {
        let mut c = PeerConfig::new("/srv/x");
        c.workers = 2;
        c.lighttpd_events = LighttpdEvents::Poll;
        let d = Path::new("/tmp/d");
        let n = nginx_conf(&c, d, 8081);
        assert!(
            n.contains("worker_processes 2;")
                && n.contains("listen 127.0.0.1:8081 backlog=4096 reuseport;")
        );
        assert!(n.contains("access_log off;") && n.contains("root /srv/x;"));
        let l = lighttpd_conf(&c, d, 8082);
        assert!(l.contains("server.event-handler = \"poll\"") && l.contains("server.port = 8082"));
        assert!(l.contains("server.defer-accept = 0") && !n.contains("deferred"));
        c.defer_accept_s = 1;
        assert!(nginx_conf(&c, d, 8081).contains("backlog=4096 reuseport deferred;"));
        assert!(lighttpd_conf(&c, d, 8082).contains("server.defer-accept = 1"));
        c.max_connections = 1 << 20;
        let most = c.effective_max_connections(Peer::Lighttpd);
        assert!(most as u64 <= nofile_limit() / 2, "{most}");
        let nginx_most = c.effective_max_connections(Peer::Nginx);
        assert!(nginx_most as u64 <= nofile_limit(), "{nginx_most}");
        // Within the descriptor limit, nginx holds all it was asked for
        // (its worker_connections leave it the sixteenth it keeps free).
        c.max_connections = 10_406;
        if nofile_limit() >= 12_000 {
            assert_eq!(c.effective_max_connections(Peer::Nginx), 10_406);
        }
        let n = nginx_conf(&c, d, 8081);
        let wc: u32 = n
            .lines()
            .find_map(|l| l.trim().strip_prefix("worker_connections "))
            .and_then(|v| v.trim_end_matches(';').parse().ok())
            .expect("worker_connections");
        assert!(wc as u64 * 15 / 16 >= 10_406 + 16, "{wc}");
        let h = h2o_conf(&c, d, 8083);
        assert!(h.contains("port: 8083") && h.contains("file.dir: /srv/x"));
    }
}
