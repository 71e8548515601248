//! A running server: the listeners (one per worker with `SO_REUSEPORT`, or
//! one shared), one thread per worker running its model (or the thread
//! pool's master), how each is woken to stop, and the collection of their
//! reports into a [`ServerReport`].

use std::fmt;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::{self, JoinHandle};
use std::time::Instant;

use evdispatch::Waker;

use crate::config::{Bound, Listen, ListenerMode, Model, ServerConfig};
use crate::conn::stats::{ServerReport, WorkerReport};
use crate::content::access_log::AccessLog;
use crate::content::files::CacheLimits;
use crate::models;
use crate::sys;

/// A running server.
pub struct Server {
    listening: Vec<Listen>,
    cfg: Arc<ServerConfig>,
    stop: Arc<AtomicBool>,
    wakers: Vec<Wakeup>,
    joins: Vec<JoinHandle<io::Result<WorkerReport>>>,
    started: Instant,
    access_log: Option<AccessLog>,
}

impl fmt::Debug for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Server")
            .field("listening", &self.listening)
            .field("model", &self.cfg.model)
            .finish()
    }
}

impl Server {
    /// Start serving; returns once every worker listens. A mechanism that is
    /// not available here fails with `ErrorKind::Unsupported`.
    pub fn start(cfg: ServerConfig) -> io::Result<Server> {
        if cfg.workers == 0 || cfg.threads == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--workers and --threads must be at least 1",
            ));
        }
        if cfg.max_header < 256 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "--max-header must be at least 256 bytes",
            ));
        }
        let cfg = Arc::new(cfg);
        let stop = Arc::new(AtomicBool::new(false));
        let per_worker_cache = CacheLimits {
            max_bytes: cfg.cache.max_bytes / cfg.workers.max(1),
            max_file: cfg.cache.max_file,
        };
        let started = Instant::now();
        let access_log = cfg.access_log.as_deref().map(AccessLog::open).transpose()?;
        let log_buffer = || access_log.as_ref().map(AccessLog::buffer);
        // Each worker (the pool's master) sends how to wake it, or its
        // start-up error.
        let (tx, rx) = mpsc::channel();
        let (listening, joins) = match cfg.model {
            Model::Threads => {
                let mut bound = Vec::new();
                for l in cfg.listeners() {
                    let fd = sys::listen(l.addr, cfg.backlog, false, true, cfg.defer_accept_s)?;
                    bound.push(Bound {
                        listener: Arc::new(TcpListener::from(fd)),
                        tls: l.tls,
                    });
                }
                let listening = bound_addrs(&bound)?;
                if let Some(cpus) = &cfg.cpus {
                    evdispatch_host::pin_current_thread(cpus)?;
                }
                let responder = cfg.responder(cfg.cache, log_buffer(), &listening)?;
                let wake = bound.iter().map(|b| b.listener.clone()).collect();
                let master = models::threads::start(cfg.clone(), bound, responder, stop.clone())?;
                let _ = tx.send(Ok(Wakeup::Master(wake)));
                (listening, vec![master])
            }
            Model::Readiness(_) | Model::UringCompletion => {
                let per_listen = cfg
                    .listeners()
                    .iter()
                    .map(|l| make_listeners(&cfg, *l))
                    .collect::<io::Result<Vec<_>>>()?;
                let firsts: Vec<Bound> = per_listen.iter().map(|v| v[0].clone()).collect();
                let listening = bound_addrs(&firsts)?;
                let mut joins = Vec::new();
                for i in 0..cfg.workers {
                    let bound: Vec<Bound> = per_listen
                        .iter()
                        .map(|v| v[i.min(v.len() - 1)].clone())
                        .collect();
                    let shared = cfg.listener == ListenerMode::Shared;
                    let (cfg, stop, tx) = (cfg.clone(), stop.clone(), tx.clone());
                    let log = log_buffer();
                    let listening = listening.clone();
                    let h = thread::Builder::new()
                        .name(format!("evd-worker-{i}"))
                        .spawn(move || -> io::Result<WorkerReport> {
                            let cpu = cfg.cpu_for(i);
                            let fail = |e: io::Error| {
                                let _ = tx.send(Err(io::Error::new(e.kind(), e.to_string())));
                                e
                            };
                            if let Some(c) = cpu {
                                evdispatch_host::pin_current_thread(&[c]).map_err(fail)?;
                            }
                            let responder = cfg
                                .responder(per_worker_cache, log, &listening)
                                .map_err(fail)?;
                            let c = cfg.clone();
                            if cfg.model == Model::UringCompletion {
                                let (w, wake) = models::completion::Worker::new(
                                    i, cpu, c, bound, responder, stop,
                                )
                                .map_err(fail)?;
                                let _ = tx.send(Ok(Wakeup::Completion(wake)));
                                drop(tx);
                                return w.run();
                            }
                            let (w, waker) = models::readiness::Worker::new(
                                i, cpu, c, bound, shared, responder, stop,
                            )
                            .map_err(fail)?;
                            let _ = tx.send(Ok(Wakeup::Poller(waker)));
                            drop(tx);
                            w.run()
                        })?;
                    joins.push(h);
                }
                (listening, joins)
            }
        };
        drop(tx);
        let mut server = Server {
            listening,
            cfg,
            stop,
            wakers: Vec::new(),
            joins,
            started,
            access_log,
        };
        let mut first_error = None;
        for _ in 0..server.joins.len() {
            let exited = || Err(io::Error::other("a worker exited during start-up"));
            match rx.recv().unwrap_or_else(|_| exited()) {
                Ok(w) => server.wakers.push(w),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            let _ = server.stop();
            return Err(e);
        }
        Ok(server)
    }

    /// The address the server listens on, its first `--listen` (the real
    /// port when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.listening[0].addr
    }

    /// Every address the server listens on, in the order of `--listen`
    /// (the real ports), each with whether it serves HTTPS.
    pub fn listening(&self) -> &[Listen] {
        &self.listening
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Reopen the access log file by its name (SIGHUP, after logrotate
    /// renamed it); nothing without one.
    pub fn reopen_access_log(&self) {
        if let Some(l) = &self.access_log {
            l.reopen();
        }
    }

    /// Stop gracefully and collect every worker's report.
    pub fn stop(mut self) -> io::Result<ServerReport> {
        self.stop.store(true, Ordering::Release);
        for w in &self.wakers {
            w.wake();
        }
        let panicked = match self.cfg.model {
            Model::Threads => "the master thread panicked",
            _ => "a worker thread panicked",
        };
        let mut workers = Vec::new();
        let mut first_error = None;
        for h in self.joins.drain(..) {
            match h.join().unwrap_or_else(|_| Err(io::Error::other(panicked))) {
                Ok(r) => workers.push(r),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Every line of the stopped workers, written.
        if let Some(log) = self.access_log.take() {
            log.finish();
        }
        if workers.is_empty() {
            if let Some(e) = first_error {
                return Err(e);
            }
        }
        workers.sort_by_key(|w| w.worker);
        Ok(ServerReport {
            model: self.cfg.model.kind(),
            mechanism: self.cfg.model.name().to_string(),
            config: self.cfg.to_json(),
            address: self.listening[0].addr.to_string(),
            elapsed_s: self.started.elapsed().as_secs_f64(),
            workers,
        })
    }
}

/// How [`Server::stop`] wakes a worker out of its wait.
enum Wakeup {
    Poller(Waker),
    /// A completion worker, through the eventfd its ring reads.
    Completion(Arc<OwnedFd>),
    /// The thread pool's master and acceptors, out of their blocking
    /// `accept`s.
    Master(Vec<Arc<TcpListener>>),
}

impl Wakeup {
    fn wake(&self) {
        match self {
            Wakeup::Poller(w) => {
                let _ = w.wake();
            }
            Wakeup::Completion(fd) => sys::eventfd_signal(fd.as_raw_fd()),
            Wakeup::Master(ls) => {
                for l in ls {
                    sys::shutdown(l.as_raw_fd(), libc::SHUT_RD);
                }
            }
        }
    }
}

/// The listening sockets of the address `at`: one per worker (reuseport;
/// the first binds the requested port, possibly 0, the others the port it
/// got) or one shared.
///
/// With `SO_REUSEPORT`, a bind succeeds wherever another socket of the same
/// user holds the port with it too: a second server would silently take
/// half the connections. So the address is first bound without it (a probe,
/// closed at once, never listening), which fails with `EADDRINUSE` whenever
/// anyone listens there; only this server's own workers then share the
/// port. (A server starting in the instant between the probe and the bind
/// could still join.)
fn make_listeners(cfg: &ServerConfig, at: Listen) -> io::Result<Vec<Bound>> {
    let reuse = cfg.listener == ListenerMode::Reuseport;
    let listen = |addr| {
        let l = sys::listen(addr, cfg.backlog, reuse, false, cfg.defer_accept_s)?;
        io::Result::Ok(Bound {
            listener: Arc::new(TcpListener::from(l)),
            tls: at.tls,
        })
    };
    let first = listen(if reuse {
        sys::probe_bind(at.addr)?
    } else {
        at.addr
    })?;
    let addr = first.listener.local_addr()?;
    let mut v = vec![first];
    if reuse {
        for _ in 1..cfg.workers {
            v.push(listen(addr)?);
        }
    }
    Ok(v)
}

/// The addresses the listeners `bound` got.
fn bound_addrs(bound: &[Bound]) -> io::Result<Vec<Listen>> {
    bound
        .iter()
        .map(|b| {
            Ok(Listen {
                addr: b.listener.local_addr()?,
                tls: b.tls,
            })
        })
        .collect()
}
