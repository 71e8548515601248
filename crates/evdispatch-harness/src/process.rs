//! The one process layer of the workspace: every child the harness, the
//! bench, the study or the torture suite starts leads its own process
//! group, recorded in one registry ([`ChildGroup`]). The
//! whole group is killed when its handle is dropped (also on panic), and on
//! Ctrl-C, SIGTERM or SIGHUP one handler kills every live group before the
//! program exits with status 130 ([`on_interrupt`] says what was kept). A
//! program killed outright still takes its direct children with it
//! (`PR_SET_PDEATHSIG`). Timing measurements run under the machine-wide
//! [`BenchLock`].

use std::collections::BTreeSet;
use std::fs;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};

use crate::sys;

/// Process groups alive, by group id (= the leader's pid).
static GROUPS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
/// Whether the signal handler is installed (or why it could not be).
static HANDLER: OnceLock<Result<(), String>> = OnceLock::new();
/// What the handler says after killing the groups (default: servers stopped).
type Message = Box<dyn Fn() + Send>;
static MESSAGE: Mutex<Option<Message>> = Mutex::new(None);

fn groups() -> std::sync::MutexGuard<'static, BTreeSet<u32>> {
    GROUPS.lock().unwrap_or_else(|e| e.into_inner())
}

fn install_handler() -> Result<(), String> {
    HANDLER
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                if INTERRUPTED.swap(true, Ordering::SeqCst) {
                    return;
                }
                for &g in groups().iter() {
                    let _ = sys::kill_group(g, libc::SIGKILL);
                }
                crate::cgroup::remove_all();
                match MESSAGE.lock().as_deref() {
                    Ok(Some(say)) => say(),
                    _ => eprintln!("evdispatch-harness: interrupted; servers stopped"),
                }
                std::process::exit(130);
            })
            .map_err(|e| e.to_string())
        })
        .clone()
}

/// Install the handler now (it is otherwise installed with the first child)
/// and have it call `message` after killing every child group on SIGINT,
/// SIGTERM or SIGHUP, before the program exits with status 130: to say what
/// was kept. Fails when another Ctrl-C handler was installed first.
pub fn on_interrupt(message: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    *MESSAGE.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(message));
    install_handler().map_err(|e| anyhow!("cannot install the Ctrl-C handler: {e}"))
}

/// A child process leading its own process group, registered for the Ctrl-C
/// handler; the whole group (the program and anything it forked: nginx's
/// workers, the load generator's worker processes) is killed when this is
/// dropped.
#[derive(Debug)]
pub struct ChildGroup {
    /// `None` once `wait_output` has taken it.
    child: Option<Child>,
    pgid: u32,
}

impl ChildGroup {
    /// Spawn `cmd` as the leader of a new process group and register the
    /// group; refused once the program was interrupted. `what` names it in
    /// the error message.
    pub fn spawn(mut cmd: Command, what: &str) -> io::Result<ChildGroup> {
        cmd.process_group(0);
        // Another handler may be installed (then it is responsible, and
        // drop still cleans up on the normal paths).
        let _ = install_handler();
        // Hold the registry across the spawn: a handler running meanwhile
        // either sees this group or runs before it exists.
        let mut live = groups();
        if INTERRUPTED.load(Ordering::SeqCst) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {what}: {e}")))?;
        live.insert(child.id());
        Ok(ChildGroup {
            pgid: child.id(),
            child: Some(child),
        })
    }

    /// The leader's pid (and the group id).
    pub fn pid(&self) -> u32 {
        self.pgid
    }

    /// The underlying child (for its pipes); `None` after `wait_output`.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Wait for the leader without limit (the program bounds its own run),
    /// collecting its stdout and stderr; then kill what is left of the group.
    pub fn wait_output(mut self) -> io::Result<Output> {
        let out = match self.child.take() {
            Some(child) => child.wait_with_output(),
            None => Err(io::Error::other("the child was already waited for")),
        };
        self.kill();
        out
    }

    /// True while the leader runs.
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.as_mut().map(|c| c.try_wait()), Some(Ok(None)))
    }

    /// Ask the group to stop (SIGTERM), give the leader `grace` to exit,
    /// then kill what is left (workers of a killed master too) and wait,
    /// at most 2 s, until the group is empty.
    pub fn stop(&mut self, grace: Duration) {
        let _ = sys::kill_group(self.pgid, libc::SIGTERM);
        let t0 = Instant::now();
        while self.is_running() && t0.elapsed() < grace {
            thread::sleep(Duration::from_millis(10));
        }
        self.kill();
        // Members take a moment to die and be reaped.
        while sys::kill_group(self.pgid, 0).is_ok() && t0.elapsed() < grace + Duration::from_secs(2)
        {
            thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kill the whole group (SIGKILL), reap the leader and unregister it.
    pub fn kill(&mut self) {
        let _ = sys::kill_group(self.pgid, libc::SIGKILL);
        if let Some(c) = self.child.as_mut() {
            let _ = c.wait();
        }
        groups().remove(&self.pgid);
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A running server: nginx, lighttpd, h2o, ours, or anything started by
/// the harness. Dropping it kills its whole process group.
#[derive(Debug)]
pub struct ServerProcess {
    pub(crate) group: Option<ChildGroup>,
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) addr: SocketAddr,
    /// It serves HTTPS.
    pub(crate) https: bool,
    pub(crate) dir: Option<tempfile::TempDir>,
    pub(crate) log: Option<PathBuf>,
    pub(crate) stats_json: Option<PathBuf>,
    /// The cgroup holding its CPU budget, removed (when dropped) after the
    /// processes are stopped: declared after `group`.
    pub(crate) cgroup: Option<crate::cgroup::BudgetGroup>,
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
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.addr, path)
    }

    /// Process id of the process started (the master, for nginx).
    pub fn pid(&self) -> u32 {
        self.group.as_ref().map_or(0, ChildGroup::pid)
    }

    /// The started process and its children (nginx's workers): what
    /// `evdispatch load --server-pid` should sample.
    pub fn pids(&self) -> Vec<u32> {
        evdispatch_host::with_children(&[self.pid()])
    }

    /// The directory holding the generated configuration and logs.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// The last lines of the server's log (for error messages).
    pub fn log_tail(&self) -> String {
        log_tail(self.log.as_deref(), 10)
    }

    /// True while the process runs.
    pub fn is_running(&mut self) -> bool {
        self.group.as_mut().is_some_and(ChildGroup::is_running)
    }

    /// The cgroup holding its CPU budget, if it runs under one.
    pub fn budget_group(&self) -> Option<&crate::cgroup::BudgetGroup> {
        self.cgroup.as_ref()
    }

    /// Stop it: SIGTERM to the group, wait up to 10 s (then SIGKILL), and
    /// return the `--stats-json` file it wrote, if it was asked to.
    pub fn stop(mut self) -> anyhow::Result<Option<serde_json::Value>> {
        if let Some(mut group) = self.group.take() {
            group.stop(Duration::from_secs(10));
        }
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
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Some(mut group) = self.group.take() {
            group.stop(Duration::from_secs(2));
        }
    }
}

/// A helper program running beside a measurement (an `evdispatch load`
/// holding idle connections, say): in its own process group, which is
/// killed when the handle is stopped or dropped, and on Ctrl-C.
#[derive(Debug)]
pub struct Background {
    pub(crate) group: ChildGroup,
    pub(crate) name: String,
    pub(crate) dir: tempfile::TempDir,
}

impl Background {
    /// Process id (and process group id).
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// True while it runs.
    pub fn is_running(&mut self) -> bool {
        self.group.is_running()
    }

    /// The last lines it wrote to standard error.
    pub fn log_tail(&self) -> String {
        format!(
            "{}: {}",
            self.name,
            log_tail(Some(&self.dir.path().join("stderr.log")), 10)
        )
    }

    /// Kill its process group and reap it.
    pub fn stop(self) {
        // Dropping the group kills it.
    }
}

/// The last `lines` lines of the log file at `path`, or why there are none.
pub fn log_tail(path: Option<&Path>, lines: usize) -> String {
    let Some(p) = path else {
        return "(no log)".into();
    };
    match fs::read_to_string(p) {
        Ok(t) => {
            let all: Vec<&str> = t.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
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

/// Wait until `addr` accepts connections, `group` being the server: fails
/// at once if it exits, and after `timeout` otherwise.
pub(crate) fn wait_listening(
    group: &mut ChildGroup,
    addr: SocketAddr,
    timeout: Duration,
    name: &str,
    log: Option<&Path>,
) -> anyhow::Result<()> {
    let t0 = Instant::now();
    loop {
        if let Some(Ok(Some(status))) = group.child_mut().map(|c| c.try_wait()) {
            bail!(
                "{name} exited ({status}) before listening on {addr}; log:\n{}",
                log_tail(log, 10)
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return Ok(());
        }
        if t0.elapsed() > timeout {
            return Err(anyhow!(
                "{name} is not listening on {addr} after {:.0} s; log:\n{}",
                timeout.as_secs_f64(),
                log_tail(log, 10)
            ));
        }
        thread::sleep(Duration::from_millis(20));
    }
}

/// The machine-wide benchmark lock (`/tmp/evd-bench.lock`, the file
/// `flock /tmp/evd-bench.lock COMMAND` takes; `$EVD_BENCH_LOCK` names
/// another, tests use a private one), held until dropped.
///
/// When the program itself runs under `flock /tmp/evd-bench.lock …`, the
/// lock is already held through a descriptor it inherited: taking it again
/// through a new open file would wait for ever on our own parent, so the
/// inherited lock stands for it.
#[derive(Debug)]
pub struct BenchLock {
    file: Option<fs::File>,
    inherited: bool,
}

/// The lock file: `$EVD_BENCH_LOCK` or `/tmp/evd-bench.lock`.
fn lock_path() -> String {
    std::env::var("EVD_BENCH_LOCK").unwrap_or_else(|_| "/tmp/evd-bench.lock".into())
}

/// Whether a descriptor this process inherited (from `flock FILE CMD`)
/// holds the exclusive lock on `path`. Checked once: the answer does not
/// change while the program runs.
fn inherited_lock_held(path: &str) -> bool {
    static HELD: OnceLock<bool> = OnceLock::new();
    *HELD.get_or_init(|| {
        let (Ok(want), Ok(dir)) = (fs::canonicalize(path), fs::read_dir("/proc/self/fd")) else {
            return false;
        };
        dir.flatten().any(|e| {
            let fd: Option<std::os::fd::RawFd> =
                e.file_name().to_str().and_then(|n| n.parse().ok());
            // flock(2) on a descriptor whose open file already holds the
            // lock succeeds at once; on one that does not, it fails
            // (EWOULDBLOCK) while another process holds it. The descriptor
            // is borrowed: nothing closes or unlocks it.
            matches!((fd, fs::read_link(e.path())), (Some(fd), Ok(target))
                if target == want && matches!(sys::try_flock(fd), Ok(true)))
        })
    })
}

impl BenchLock {
    /// Take the lock, waiting at most `patience`; after that (or when the
    /// lock file cannot be used), go on without it (returning a lock that
    /// holds nothing) and say so on standard error, so that a test is never
    /// stuck behind a long benchmark.
    pub fn acquire(patience: Duration) -> BenchLock {
        Self::wait(Some(patience), || {}).unwrap_or_else(|e| {
            eprintln!("note: {e:#}; measuring without it");
            BenchLock {
                file: None,
                inherited: false,
            }
        })
    }

    /// Take the lock, waiting as long as it takes (a figure is never
    /// measured beside another benchmark), calling `waiting` once if
    /// someone else holds it.
    pub fn take(waiting: impl FnOnce()) -> anyhow::Result<BenchLock> {
        Self::wait(None, waiting)
    }

    fn wait(patience: Option<Duration>, waiting: impl FnOnce()) -> anyhow::Result<BenchLock> {
        let path = lock_path();
        if inherited_lock_held(&path) {
            return Ok(BenchLock {
                file: None,
                inherited: true,
            });
        }
        Self::wait_on(&path, patience, waiting)
    }

    fn wait_on(
        path: &str,
        patience: Option<Duration>,
        waiting: impl FnOnce(),
    ) -> anyhow::Result<BenchLock> {
        use std::os::fd::AsRawFd;
        let file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .with_context(|| format!("cannot open {path}"))?;
        let (t0, mut waiting) = (Instant::now(), Some(waiting));
        while !sys::try_flock(file.as_raw_fd()).with_context(|| format!("cannot lock {path}"))? {
            if let Some(say) = waiting.take() {
                say();
            }
            if let Some(p) = patience.filter(|p| t0.elapsed() >= *p) {
                bail!(
                    "{path} still held by another benchmark after {:.0} s",
                    p.as_secs_f64()
                );
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(BenchLock {
            file: Some(file),
            inherited: false,
        })
    }

    /// True when the lock is really held (by this handle or through an
    /// inherited descriptor).
    pub fn held(&self) -> bool {
        self.file.is_some() || self.inherited
    }
}

/// The limit of open files of this process, its soft limit raised to the
/// hard one (servers are configured within it); the soft limit as it is if
/// that fails.
pub fn nofile_limit() -> u64 {
    use evdispatch_host::{get_rlimit, set_rlimit, Resource};
    set_rlimit(Resource::Nofile, None)
        .or_else(|_| get_rlimit(Resource::Nofile).map(|(soft, _)| soft))
        .unwrap_or(1024)
}

/// `BINARY COMMAND ARGS`, standard input closed, pinned to `cpus` if given.
pub(crate) fn evdispatch(
    binary: &Path,
    command: &str,
    args: Vec<std::ffi::OsString>,
    cpus: &[usize],
) -> anyhow::Result<Command> {
    if !binary.is_file() {
        bail!(
            "{} does not exist: build it with `cargo build --release -p evdispatch-cli`",
            binary.display()
        );
    }
    let mut cmd = Command::new(binary);
    cmd.arg(command).args(args).stdin(Stdio::null());
    sys::prepare(&mut cmd, cpus)?;
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    /// Whether process `pid` exists (and is not a zombie).
    fn alive(pid: u32) -> bool {
        fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
    }

    #[test]
    fn drop_kills_the_whole_group() {
        // A leader that forks a grandchild and prints its pid.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped());
        let mut p = ChildGroup::spawn(cmd, "test shell").unwrap();
        let mut line = String::new();
        let out = p.child_mut().and_then(|c| c.stdout.take()).unwrap();
        BufReader::new(out).read_line(&mut line).unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let leader = p.pid();
        assert!(alive(grandchild) && alive(leader));
        assert!(groups().contains(&leader));
        drop(p);
        let t0 = Instant::now();
        while alive(grandchild) && t0.elapsed() < Duration::from_secs(5) {
            thread::sleep(Duration::from_millis(10));
        }
        assert!(
            !alive(grandchild),
            "grandchild {grandchild} survived the drop"
        );
        assert!(!alive(leader), "leader {leader} survived the drop");
        assert!(!groups().contains(&leader));
    }

    #[test]
    fn wait_output_collects_and_unregisters() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hello"]).stdout(Stdio::piped());
        let p = ChildGroup::spawn(cmd, "echo").unwrap();
        let pid = p.pid();
        let out = p.wait_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
        assert!(!groups().contains(&pid));
    }

    #[test]
    fn the_lock_excludes_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let path = path.to_str().unwrap();
        let first = BenchLock::wait_on(path, None, || panic!("free lock")).unwrap();
        assert!(first.held());
        let mut told = 0;
        let err =
            BenchLock::wait_on(path, Some(Duration::from_millis(100)), || told += 1).unwrap_err();
        assert_eq!(told, 1, "`waiting` is called once");
        assert!(format!("{err}").contains("still held"), "{err}");
        drop(first);
        assert!(BenchLock::wait_on(path, Some(Duration::ZERO), || {})
            .unwrap()
            .held());
    }
}
