//! The writer: the process that holds the write ends of the socketpairs and
//! writes the bytes before each iteration.
//!
//! One process may hold 20,000 descriptors here, and 19,000 socketpairs are
//! 38,000: so the bench creates each pair, passes its write end over a
//! control socket (`SCM_RIGHTS`) to a helper process and closes it locally.
//! The helper is this same binary re-executed with a hidden subcommand
//! (`evdispatch bench poller-writer`); its standard input is the control
//! socket (`SOCK_SEQPACKET`, one message per command).
//!
//! Every command is five little-endian `u64`s: an opcode and four
//! arguments. Replies have the same shape.

use std::io::{IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use evdispatch_harness::ChildGroup;
use nix::sys::socket::{
    recv, recvmsg, send, sendmsg, socketpair, AddressFamily, ControlMessage, ControlMessageOwned,
    MsgFlags, SockFlag, SockType,
};

use crate::sys;

/// The arguments that start the helper, after the binary's path. The CLI
/// mounts this crate's commands under `bench`.
pub const HELPER_ARGS: &[&str] = &["bench", "poller-writer"];

/// Descriptors passed before the parent waits for an acknowledgement (fds
/// in flight count against the sender's limit).
const SYNC_EVERY: usize = 128;

const OP_SYNC: u64 = 1;
const OP_WRITE: u64 = 2;
const OP_CLOSE_ALL: u64 = 3;
const OP_FD: u64 = 4;

type Msg = [u64; 5];

fn encode(m: Msg) -> [u8; 40] {
    let mut b = [0u8; 40];
    for (i, v) in m.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b
}

fn decode(b: &[u8]) -> Option<Msg> {
    if b.len() != 40 {
        return None;
    }
    let mut m = [0u64; 5];
    for (i, v) in m.iter_mut().enumerate() {
        *v = u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().ok()?);
    }
    Some(m)
}

/// Which write ends one iteration touches: `count` of them, `spacing`
/// apart, starting at `offset`, modulo `n`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// First index.
    pub offset: usize,
    /// Distance between two touched indices.
    pub spacing: usize,
    /// How many.
    pub count: usize,
    /// Number of pairs.
    pub n: usize,
}

impl Touch {
    /// The touched indices.
    pub fn indices(self) -> impl Iterator<Item = usize> {
        (0..self.count).map(move |k| (self.offset + k * self.spacing) % self.n)
    }
}

/// Who writes the bytes: the helper process (any N), or the bench itself
/// (Kegel's way; N up to half the descriptor limit, since both ends of
/// every pair are then open here).
pub enum Writer {
    /// The helper process, over the control socket.
    Helper(Helper),
    /// This process, right before the timed part.
    Local(Vec<OwnedFd>),
}

impl Writer {
    /// Start the helper process (pinned to `cpu` when given).
    pub fn helper(cpu: Option<usize>) -> anyhow::Result<Writer> {
        Helper::spawn(cpu).map(Writer::Helper)
    }

    /// Write from this process.
    pub fn local() -> Writer {
        Writer::Local(Vec::new())
    }

    /// Take a write end (it becomes the next index).
    pub fn give(&mut self, fd: OwnedFd) -> anyhow::Result<()> {
        match self {
            Writer::Helper(h) => h.give(fd),
            Writer::Local(fds) => {
                fds.push(fd);
                Ok(())
            }
        }
    }

    /// How many write ends are held, once every one given has arrived.
    pub fn sync(&mut self) -> anyhow::Result<usize> {
        match self {
            Writer::Helper(h) => h.sync(),
            Writer::Local(fds) => Ok(fds.len()),
        }
    }

    /// Write one byte to each touched write end; returns the time the
    /// writes took (measured by whoever wrote).
    pub fn write(&mut self, t: Touch) -> anyhow::Result<Duration> {
        let (took, ok) = match self {
            Writer::Helper(h) => h.write(t)?,
            Writer::Local(fds) => write_touched(fds, t)?,
        };
        if ok != t.count {
            bail!(
                "wrote {ok} of {} bytes (a socket buffer full: a row left bytes unread?)",
                t.count
            );
        }
        Ok(took)
    }

    /// Close every write end; returns the time the closes took.
    pub fn close_all(&mut self) -> anyhow::Result<Duration> {
        match self {
            Writer::Helper(h) => h.close_all(),
            Writer::Local(fds) => {
                let t0 = Instant::now();
                fds.clear();
                Ok(t0.elapsed())
            }
        }
    }
}

/// The writer's loop, the same in both places: one byte to each touched
/// write end, timed. Returns the time and the number of bytes written.
fn write_touched(fds: &[OwnedFd], t: Touch) -> anyhow::Result<(Duration, usize)> {
    if t.n != fds.len() {
        bail!("asked to write among {} pairs, holding {}", t.n, fds.len());
    }
    let t0 = Instant::now();
    let mut ok = 0usize;
    for i in t.indices() {
        ok += sys::write1(fds[i].as_raw_fd()) as usize;
    }
    Ok((t0.elapsed(), ok))
}

/// The parent's handle on the helper process.
pub struct Helper {
    control: Option<OwnedFd>,
    child: ChildGroup,
    held: usize,
}

impl Helper {
    /// Start the helper (pinned to `cpu` when given).
    fn spawn(cpu: Option<usize>) -> anyhow::Result<Helper> {
        let (ours, theirs) = socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .context("creating the control socket for the writer helper")?;
        let exe =
            std::env::current_exe().context("finding this program to start the writer helper")?;
        let mut cmd = Command::new(&exe);
        cmd.args(HELPER_ARGS);
        if let Some(c) = cpu {
            cmd.arg("--cpu").arg(c.to_string());
        }
        cmd.stdin(Stdio::from(theirs)).stdout(Stdio::null());
        let child = ChildGroup::spawn(cmd, &format!("the writer helper {}", exe.display()))?;
        let mut w = Helper {
            control: Some(ours),
            child,
            held: 0,
        };
        w.call([OP_SYNC, 0, 0, 0, 0]).context(
            "the writer helper did not answer; is this binary the `evdispatch` CLI \
             (it re-executes itself as `evdispatch bench poller-writer`)?",
        )?;
        Ok(w)
    }

    fn fd(&self) -> RawFd {
        self.control.as_ref().expect("open until drop").as_raw_fd()
    }

    fn call(&mut self, m: Msg) -> anyhow::Result<Msg> {
        send(self.fd(), &encode(m), MsgFlags::empty())?;
        let mut b = [0u8; 64];
        // Spin (yielding) rather than sleep: a bench that sleeps in recv is
        // woken by a context switch right before the timed part, and the
        // switch (its cache, TLB and branch-predictor flushes) would be
        // charged to the row. With the helper on another CPU, the yield
        // finds nothing else to run and returns at once.
        let n = loop {
            match recv(self.fd(), &mut b, MsgFlags::MSG_DONTWAIT) {
                Ok(n) => break n,
                Err(nix::errno::Errno::EAGAIN) => {
                    let _ = nix::sched::sched_yield();
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(e.into()),
            }
        };
        if n == 0 {
            let status = self
                .child
                .child_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            bail!("the writer helper exited ({status:?})");
        }
        decode(&b[..n]).context("malformed reply from the writer helper")
    }

    /// Hand over a write end: the helper keeps it (as the next index), and
    /// the local copy is closed.
    fn give(&mut self, fd: OwnedFd) -> anyhow::Result<()> {
        let fds = [fd.as_raw_fd()];
        let msg = encode([OP_FD, 0, 0, 0, 0]);
        sendmsg::<()>(
            self.fd(),
            &[IoSlice::new(&msg)],
            &[ControlMessage::ScmRights(&fds)],
            MsgFlags::empty(),
            None,
        )
        .context("passing a descriptor to the writer helper")?;
        drop(fd);
        self.held += 1;
        if self.held.is_multiple_of(SYNC_EVERY) {
            self.sync()?;
        }
        Ok(())
    }

    /// Wait until the helper has taken every descriptor sent; returns how
    /// many it holds.
    fn sync(&mut self) -> anyhow::Result<usize> {
        let r = self.call([OP_SYNC, 0, 0, 0, 0])?;
        if r[1] as usize != self.held {
            bail!(
                "the writer helper holds {} write ends, {} were sent",
                r[1],
                self.held
            );
        }
        Ok(self.held)
    }

    /// Have the helper write: its time for the writes, and the bytes written.
    fn write(&mut self, t: Touch) -> anyhow::Result<(Duration, usize)> {
        let r = self.call([
            OP_WRITE,
            t.offset as u64,
            t.spacing as u64,
            t.count as u64,
            t.n as u64,
        ])?;
        Ok((Duration::from_nanos(r[1]), r[2] as usize))
    }

    /// Close every write end; returns the helper's time for the closes.
    fn close_all(&mut self) -> anyhow::Result<Duration> {
        let r = self.call([OP_CLOSE_ALL, 0, 0, 0, 0])?;
        self.held = 0;
        Ok(Duration::from_nanos(r[1]))
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        // Closing the control socket ends the helper; reap it (dropping
        // the group then finds nothing left to kill).
        self.control = None;
        if let Some(c) = self.child.child_mut() {
            let _ = c.wait();
        }
    }
}

/// The helper's main loop: serve commands on standard input until it closes.
pub fn helper_main(cpu: Option<usize>) -> anyhow::Result<()> {
    if let Some(c) = cpu {
        crate::machine::pin_to(c)?;
    }
    evdispatch_harness::nofile_limit();
    let control: RawFd = 0;
    let mut fds: Vec<OwnedFd> = Vec::new();
    let mut cmsg = nix::cmsg_space!([RawFd; 4]);
    loop {
        let mut b = [0u8; 64];
        let (n, received) = {
            let mut iov = [IoSliceMut::new(&mut b)];
            let msg = recvmsg::<()>(
                control,
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .context("reading the control socket")?;
            let mut received = Vec::new();
            for c in msg.cmsgs()? {
                if let ControlMessageOwned::ScmRights(r) = c {
                    received.extend(sys::adopt(&r));
                }
            }
            (msg.bytes, received)
        };
        if n == 0 {
            return Ok(()); // the bench is done (or died)
        }
        let Some(m) = decode(&b[..n]) else {
            bail!("malformed command on the control socket");
        };
        let reply = match m[0] {
            OP_FD => {
                fds.extend(received);
                continue;
            }
            OP_SYNC => [OP_SYNC, fds.len() as u64, 0, 0, 0],
            OP_WRITE => {
                let t = Touch {
                    offset: m[1] as usize,
                    spacing: m[2] as usize,
                    count: m[3] as usize,
                    n: m[4] as usize,
                };
                let (took, ok) = write_touched(&fds, t)?;
                [OP_WRITE, took.as_nanos() as u64, ok as u64, 0, 0]
            }
            OP_CLOSE_ALL => {
                let t0 = Instant::now();
                fds.clear();
                [OP_CLOSE_ALL, t0.elapsed().as_nanos() as u64, 0, 0, 0]
            }
            op => bail!("unknown command {op} on the control socket"),
        };
        send(control, &encode(reply), MsgFlags::empty()).context("answering the bench")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let m = [OP_WRITE, 1, u64::MAX, 3, 19_000];
        assert_eq!(decode(&encode(m)), Some(m));
        assert_eq!(decode(&[0u8; 39]), None);
    }

    #[test]
    fn touched_indices_are_spaced_and_wrap() {
        let t = Touch {
            offset: 7,
            spacing: 25,
            count: 4,
            n: 100,
        };
        assert_eq!(t.indices().collect::<Vec<_>>(), vec![7, 32, 57, 82]);
        let t = Touch {
            offset: 99,
            spacing: 50,
            count: 2,
            n: 100,
        };
        assert_eq!(t.indices().collect::<Vec<_>>(), vec![99, 49]);
    }
}
