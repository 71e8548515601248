//! Server processes started by the harness: each in its own process group,
//! the whole group killed when the handle is dropped (also on panic), and
//! on Ctrl-C or SIGTERM of the program (a handler kills every live group
//! before exiting). A program killed outright still takes its direct
//! children with it (`PR_SET_PDEATHSIG`).

use std::fs;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::{Mutex, Once};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

use crate::sys;

static LIVE: Mutex<Vec<u32>> = Mutex::new(Vec::new());
static HANDLER: Once = Once::new();

/// Remember a process group so the Ctrl-C handler can kill it.
pub(crate) fn track(pgid: u32) {
    HANDLER.call_once(|| {
        // Another part of the program may have its own handler; then it is
        // responsible, and drop still cleans up on the normal paths.
        let _ = ctrlc::set_handler(|| {
            if let Ok(live) = LIVE.lock() {
                for &g in live.iter() {
                    let _ = sys::kill_group(g, libc::SIGKILL);
                }
            }
            eprintln!("evdispatch-harness: interrupted; servers stopped");
            std::process::exit(130);
        });
    });
    if let Ok(mut live) = LIVE.lock() {
        live.push(pgid);
    }
}

pub(crate) fn untrack(pgid: u32) {
    if let Ok(mut live) = LIVE.lock() {
        live.retain(|&g| g != pgid);
    }
}

/// A running server: nginx, lighttpd, h2o, ours, or anything started by
/// the harness. Dropping it kills its whole process group.
#[derive(Debug)]
pub struct ServerProcess {
    pub(crate) child: Option<Child>,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) addr: SocketAddr,
    pub(crate) dir: Option<tempfile::TempDir>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) stats_json: Option<PathBuf>,
}

impl ServerProcess {
    /// Which server ("nginx", "lighttpd", "h2o", "evdispatch").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its version, as the program reports it.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR{path}`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Process id of the process started (the master, for nginx).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// The started process and its children (nginx's workers): what
    /// `evdispatch load --server-pid` should sample.
    pub fn pids(&self) -> Vec<u32> {
        evdispatch_proc::with_children(&[self.pid()])
    }

    /// The directory holding the generated configuration and logs.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// The last lines of the server's log (for error messages).
    pub fn log_tail(&self) -> String {
        log_tail(self.log.as_deref())
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Stop it: SIGTERM to the group, wait up to 10 s (then SIGKILL), and
    /// return the `--stats-json` file it wrote, if it was asked to.
    pub fn stop(mut self) -> anyhow::Result<Option<serde_json::Value>> {
        self.terminate(Duration::from_secs(10));
        let Some(path) = self.stats_json.take() else {
            return Ok(None);
        };
        let text = fs::read_to_string(&path).with_context(|| {
            format!(
                "{} wrote no statistics to {} on SIGTERM; log: {}",
                self.name,
                path.display(),
                self.log_tail()
            )
        })?;
        let v = serde_json::from_str(&text)
            .with_context(|| format!("{}: statistics file is not JSON", path.display()))?;
        Ok(Some(v))
    }

    fn terminate(&mut self, grace: Duration) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id();
        let _ = sys::kill_group(pgid, libc::SIGTERM);
        let t0 = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(_)) => break,
                Ok(None) if t0.elapsed() < grace => thread::sleep(Duration::from_millis(10)),
                _ => {
                    let _ = sys::kill_group(pgid, libc::SIGKILL);
                    let _ = child.wait();
                    break;
                }
            }
        }
        // Whatever is left in the group (workers of a killed master) goes too.
        let _ = sys::kill_group(pgid, libc::SIGKILL);
        // Until the group is empty (members take a moment to die and be reaped).
        let t1 = Instant::now();
        while sys::kill_group(pgid, 0).is_ok() && t1.elapsed() < Duration::from_secs(2) {
            thread::sleep(Duration::from_millis(5));
        }
        untrack(pgid);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(2));
    }
}

/// A helper program running beside a measurement (an `evdispatch load`
/// holding idle connections, say): in its own process group, which is
/// killed when the handle is stopped or dropped, and on Ctrl-C.
#[derive(Debug)]
pub struct Background {
    pub(crate) child: Option<Child>,
    pub(crate) name: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Background {
    /// Process id (and process group id).
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// True while it runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// The last lines it wrote to standard error.
    pub fn log_tail(&self) -> String {
        format!(
            "{}: {}",
            self.name,
            log_tail(Some(&self.dir.path().join("stderr.log")))
        )
    }

    /// Kill its process group and reap it.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let pgid = child.id();
        let _ = sys::kill_group(pgid, libc::SIGKILL);
        let _ = child.wait();
        untrack(pgid);
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill();
    }
}

pub(crate) fn log_tail(path: Option<&Path>) -> String {
    let Some(p) = path else {
        return "(no log)".into();
    };
    match fs::read_to_string(p) {
        Ok(t) => {
            let lines: Vec<&str> = t.lines().collect();
            let start = lines.len().saturating_sub(10);
            lines[start..].join("\n")
        }
        Err(_) => format!("(no log at {})", p.display()),
    }
}

/// A free TCP port on 127.0.0.1 (bound and released; another program may
/// take it in between, which callers handle by retrying).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?.port())
}

/// Wait until `addr` accepts connections, `child` being the server: fails
/// at once if it exits, and after `timeout` otherwise.
pub(crate) fn wait_listening(
    child: &mut Child,
    addr: SocketAddr,
    timeout: Duration,
    name: &str,
    log: Option<&Path>,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            bail!(
                "{name} exited ({status}) before listening on {addr}; log:\n{}",
                log_tail(log)
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(anyhow!(
                "{name} is not listening on {addr} after {:.0} s; log:\n{}",
                timeout.as_secs_f64(),
                log_tail(log)
            ));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// Wait until `addr` accepts connections (any server).
pub fn wait_until_listening(addr: SocketAddr, timeout: Duration) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_err() {
        if t0.elapsed() > timeout {
            bail!(
                "nothing listens on {addr} after {:.1} s",
                timeout.as_secs_f64()
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The machine-wide benchmark lock (`/tmp/evd-bench.lock`, the file
/// `flock /tmp/evd-bench.lock COMMAND` takes), held until dropped.
#[derive(Debug)]
pub struct BenchLock {
    _file: Option<fs::File>,
}

impl BenchLock {
    /// Take the lock, waiting at most `patience`; after that, go on without
    /// it (returning a lock that holds nothing) and say so on standard
    /// error, so that a test is never stuck behind a long benchmark.
    pub fn acquire(patience: Duration) -> BenchLock {
        use std::os::fd::AsRawFd;
        let path = "/tmp/evd-bench.lock";
        let Ok(file) = fs::OpenOptions::new().create(true).append(true).open(path) else {
            return BenchLock { _file: None };
        };
        let t0 = Instant::now();
        loop {
            match sys::try_flock(file.as_raw_fd()) {
                Ok(true) => return BenchLock { _file: Some(file) },
                Ok(false) if t0.elapsed() < patience => thread::sleep(Duration::from_millis(50)),
                _ => {
                    eprintln!(
                        "note: {path} still held by another benchmark after {:.0} s; measuring without it",
                        patience.as_secs_f64()
                    );
                    return BenchLock { _file: None };
                }
            }
        }
    }

    /// True when the lock is really held.
    pub fn held(&self) -> bool {
        self._file.is_some()
    }
}
