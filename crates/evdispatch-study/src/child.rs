//! Child processes that never outlive the study.
//!
//! Every server and load generator the study starts runs in its own process
//! group, recorded in a registry. Dropping a [`Proc`] kills its whole group
//! (the program and anything it forked: nginx's workers, the load
//! generator's worker processes); on SIGINT/SIGTERM/SIGHUP the handler kills
//! every registered group before the study exits, so Ctrl-C leaves nothing
//! behind.

use std::collections::BTreeSet;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

/// Process groups currently alive, by group id (= the leader's pid).
static GROUPS: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C (or SIGTERM/SIGHUP) was received.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Kill every registered process group now (SIGKILL). Used by the signal
/// handler; safe to call more than once.
pub fn kill_all() {
    let groups: Vec<i32> = GROUPS
        .lock()
        .map(|g| g.iter().copied().collect())
        .unwrap_or_default();
    for g in groups {
        let _ = killpg(Pid::from_raw(g), Signal::SIGKILL);
    }
}

/// Install the handler that kills every child group and exits with status
/// 130 on SIGINT, SIGTERM or SIGHUP. `on_interrupt` runs first (to say what
/// was kept). Call once, early.
pub fn install_interrupt_handler(on_interrupt: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    ctrlc::set_handler(move || {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            return;
        }
        kill_all();
        on_interrupt();
        std::process::exit(130);
    })
    .map_err(|e| anyhow::anyhow!("cannot install the Ctrl-C handler: {e}"))
}

/// A process group started elsewhere (a server the harness started), killed
/// by the interrupt handler while this guard lives.
#[derive(Debug)]
pub struct Adopted(i32);

/// Register the process group `pgid` (its leader's pid) so that Ctrl-C
/// kills it too; the owner still stops it normally, and dropping the guard
/// forgets it.
pub fn adopt(pgid: u32) -> Adopted {
    let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    groups.insert(pgid as i32);
    Adopted(pgid as i32)
}

impl Drop for Adopted {
    fn drop(&mut self) {
        if let Ok(mut g) = GROUPS.lock() {
            g.remove(&self.0);
        }
    }
}

/// A child process leading its own process group; the group is killed when
/// this is dropped.
#[derive(Debug)]
pub struct Proc {
    /// `None` once `wait_output` has taken it.
    child: Option<Child>,
    pgid: i32,
    what: String,
}

impl Proc {
    /// Spawn `cmd` as the leader of a new process group. `what` names it in
    /// error messages.
    pub fn spawn(mut cmd: Command, what: impl Into<String>) -> io::Result<Proc> {
        let what = what.into();
        cmd.process_group(0);
        // Hold the registry lock across the spawn so that a signal handler
        // running meanwhile either sees this group or runs before it exists
        // (and then the exit below kills nothing we own).
        let mut groups = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
        if interrupted() {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "interrupted"));
        }
        let child = cmd
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {what}: {e}")))?;
        let pgid = child.id() as i32;
        groups.insert(pgid);
        Ok(Proc {
            child: Some(child),
            pgid,
            what,
        })
    }

    /// The leader's pid.
    pub fn pid(&self) -> u32 {
        self.pgid as u32
    }

    /// The underlying child (for its pipes).
    pub fn child_mut(&mut self) -> &mut Child {
        self.child
            .as_mut()
            .expect("the child is held until wait_output")
    }

    /// Send `signal` to the leader only (SIGTERM asks our server to write its
    /// stats and stop).
    pub fn signal(&self, signal: Signal) -> io::Result<()> {
        nix::sys::signal::kill(Pid::from_raw(self.pgid), signal).map_err(io::Error::from)
    }

    /// Wait for the leader to exit, at most `limit`; `None` if it did not.
    pub fn wait_timeout(&mut self, limit: Duration) -> io::Result<Option<ExitStatus>> {
        let t0 = Instant::now();
        loop {
            if let Some(st) = self.child_mut().try_wait()? {
                return Ok(Some(st));
            }
            if t0.elapsed() >= limit {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for the leader without limit (the program bounds its own run),
    /// collecting its stdout and stderr.
    pub fn wait_output(mut self) -> io::Result<std::process::Output> {
        let child = self
            .child
            .take()
            .expect("the child is held until wait_output");
        let out = child.wait_with_output();
        self.kill_group();
        out
    }

    /// Kill the whole group (SIGKILL) and reap the leader.
    pub fn kill_group(&mut self) {
        let _ = killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
        if let Some(c) = self.child.as_mut() {
            let _ = c.wait();
        }
        if let Ok(mut g) = GROUPS.lock() {
            g.remove(&self.pgid);
        }
    }

    /// The name given at spawn.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill_group();
    }
}

/// Whether process `pid` exists (and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .map(|(_, rest)| rest.trim_start().starts_with('Z'))
            .unwrap_or(false),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    #[test]
    fn drop_kills_the_whole_group() {
        // A leader that forks a grandchild and prints its pid.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "sleep 30 & echo $!; wait"])
            .stdout(Stdio::piped());
        let mut p = Proc::spawn(cmd, "test shell").unwrap();
        let mut line = String::new();
        BufReader::new(p.child_mut().stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let grandchild: u32 = line.trim().parse().unwrap();
        let leader = p.pid();
        assert!(alive(grandchild) && alive(leader));
        drop(p);
        let t0 = Instant::now();
        while alive(grandchild) && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            !alive(grandchild),
            "grandchild {grandchild} survived the drop"
        );
        assert!(!alive(leader), "leader {leader} survived the drop");
        assert!(!GROUPS.lock().unwrap().contains(&(leader as i32)));
    }

    #[test]
    fn wait_output_collects_and_unregisters() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo hello"]).stdout(Stdio::piped());
        let p = Proc::spawn(cmd, "echo").unwrap();
        let pid = p.pid() as i32;
        let out = p.wait_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
        assert!(!GROUPS.lock().unwrap().contains(&pid));
    }
}
