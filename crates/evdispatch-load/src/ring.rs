//! The io_uring side of the `uring` engine: one ring per worker through
//! which the plain-HTTP keep-alive connections (closed loop and persistent,
//! HTTP/1.1 and h2c) send their requests and receive their replies as completions, while the
//! worker's [`Poller`](evdispatch::Poller) keeps everything else (connects,
//! TLS, slow, inactive and idle clients, sessions, the timerfd, standard
//! input) and is itself watched by a multishot poll on the ring.
//!
//! What it saves against the readiness engine: the `write` and `read` of
//! every request and the `epoll_wait` of every turn become one
//! `io_uring_enter` per turn of the loop, which submits the sends and
//! receives queued while the turn handled its completions and waits for the
//! next. A send is queued when its reply's completion is handled and goes
//! out at the end of that turn, as wrk's does (it re-arms for writability
//! and sends on the next turn): no request waits for a timer or a batch.
//!
//! The ring is made with `DEFER_TASKRUN` where the kernel has it (6.1): the
//! thread is woken only when the completions it waits for are there, not
//! once per socket event; older kernels get cooperative task running, then
//! a plain ring.
//!
//! The sockets on the ring are registered files where the kernel allows (a
//! table of `files` entries, one per connection slot): a send or receive on
//! one then skips the kernel's descriptor lookup and reference count
//! (`fget`/`fput`) of every operation. A known cost on older kernels (before
//! the resource-node rework of about 6.13, as we read the kernel's history;
//! not seen on the 6.18 this was measured on): there, a socket emptied from
//! the table is released only once every request issued before it ended,
//! and the other connections' multishot receives live for the whole run, so
//! a run whose connections reconnect often keeps their closed sockets'
//! memory until it ends.
//!
//! Where the kernel has multishot receives with a ring of provided buffers
//! (6.0; used from 6.1, with `DEFER_TASKRUN`), each connection's receive
//! is posted once and stays armed: every segment of a reply completes it
//! into a buffer of the ring's pool, handed back as soon as the engine has
//! parsed it. That saves the submission, and the poll armed, of a receive
//! per completion; and the pool, shared, is far smaller than a buffer per
//! connection. Older kernels get one receive per reply into the
//! connection's own buffer.
//!
//! HTTP/2 connections (h2c) on the ring send what their codec queued, one
//! reported send at a time per connection, from a buffer the connection's
//! slot keeps until the send completes; their receives are those above.
//!
//! This module holds the `unsafe` of the engine's ring: entries that name
//! memory the kernel writes (receive buffers) or reads (request bytes).

use std::io;
use std::os::fd::RawFd;

use evdispatch::uring::{self, BufRing, Issuer, Taskrun};
use io_uring::{cqueue, opcode, squeue, types, IoUring};

pub use evdispatch::uring::Wait;

/// What a completion is for (the value tags its entry's user data).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The multishot poll on the worker's poller descriptor.
    Poller = 1,
    /// A `send` of a connection's request.
    Send = 2,
    /// A quiet send (see [`Ring::send`]) that failed or fell short.
    QuietSend = 4,
    /// A `recv` into a connection's buffer.
    Recv = 3,
}

/// One completion, copied out of the ring.
#[derive(Debug, Clone, Copy)]
pub struct Completion {
    /// What it completes.
    pub kind: Kind,
    /// The connection's slot (0 for [`Kind::Poller`]).
    pub slot: usize,
    /// The connection's ring identity when the request was queued.
    pub id: u32,
    /// Bytes moved, a poll mask, or `-errno`.
    pub result: i32,
    /// A multishot request stays armed.
    pub more: bool,
    /// The pool's buffer holding a multishot receive's bytes: the engine
    /// reads them through [`Ring::lend`] and gives it back with
    /// [`Ring::recycle`] (every such buffer, even a stale connection's).
    pub buf: Option<u16>,
}

/// The buffer group of the pool.
const POOL_GROUP: u16 = 0;

/// A pool buffer the kernel filled, lent to the engine until
/// [`Ring::recycle`] takes it back.
pub struct Lent {
    ptr: *const u8,
    len: usize,
    bid: u16,
}

impl std::ops::Deref for Lent {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the kernel handed this buffer back with its completion and
        // takes it again only once `recycle` consumes this `Lent` (which
        // ends every borrow of it); the pool outlives it (`Ring::lend`).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

/// A socket as a ring entry names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// By its descriptor.
    Fd(RawFd),
    /// By its index in the ring's table of registered files.
    Fixed(u32),
}

/// The entry `$build` makes with `$f` bound to the socket `$t` names.
macro_rules! on_target {
    ($t:expr, $f:ident => $build:expr) => {
        match $t {
            Target::Fd(fd) => {
                let $f = types::Fd(fd);
                $build
            }
            Target::Fixed(i) => {
                let $f = types::Fixed(i);
                $build
            }
        }
    };
}

const ID_MASK: u64 = 0x0fff_ffff;
/// `IORING_RECVSEND_POLL_FIRST` (uapi, Linux 5.19): a receive waits for
/// data before trying, instead of trying once in vain first (a receive is
/// posted right after its request is sent, before the reply can be there).
const RECVSEND_POLL_FIRST: u16 = 1;
/// Sends up to this long are quiet where the kernel allows: far below any
/// socket's send buffer, so with one request outstanding per connection
/// such a send cannot be left half done when the next one is queued.
const QUIET_MAX: usize = 4096;

fn user_data(kind: Kind, id: u32, slot: usize) -> u64 {
    ((kind as u64) << 60) | ((id as u64 & ID_MASK) << 32) | (slot as u64 & 0xffff_ffff)
}

fn parts(u: u64) -> Option<(Kind, u32, usize)> {
    let kind = match u >> 60 {
        1 => Kind::Poller,
        2 => Kind::Send,
        3 => Kind::Recv,
        4 => Kind::QuietSend,
        _ => return None,
    };
    Some((
        kind,
        ((u >> 32) & ID_MASK) as u32,
        (u & 0xffff_ffff) as usize,
    ))
}

/// The identities a connection's requests carry wrap at 28 bits.
pub fn next_id(id: u32) -> u32 {
    (id.wrapping_add(1)) & ID_MASK as u32
}

/// A worker's ring. Made with a single issuer where the kernel allows: it
/// is used from the thread that made it (moved elsewhere, its submissions
/// would fail with `EEXIST`).
pub struct Ring {
    ring: IoUring,
    poller_fd: RawFd,
    /// Sends post no completion when they succeed (see [`Ring::quiet_sends`]).
    quiet_sends: bool,
    /// Receives wait for data before their first try (Linux 5.19).
    poll_first: bool,
    /// Entries of the table of registered files (0: none).
    files: u32,
    /// Provided buffers for multishot receives (None: one receive per
    /// reply into the connection's buffer).
    pool: Option<BufRing>,
}

impl Ring {
    /// A ring of `entries` submission slots that watches `poller_fd` (the
    /// worker's poller) for readability, with a table of `files` registered
    /// files where the kernel allows it (5.19; [`Ring::register`] falls
    /// back to plain descriptors otherwise). Fails where io_uring is
    /// missing, disabled (`kernel.io_uring_disabled`, seccomp) or older
    /// than 5.11 (no timeout argument to `io_uring_enter`).
    ///
    /// `pool` is the number of buffers (a power of two, at most 32,768) and
    /// their size for multishot receives; (0, _): none.
    pub fn new(entries: u32, poller_fd: RawFd, files: u32, pool: (u16, usize)) -> io::Result<Ring> {
        let cq = entries.saturating_mul(4);
        let (ring, mode) = uring::setup(entries, cq, Issuer::Single)?;
        // Receives that wait for data first came in 5.19; a ring with
        // DEFER_TASKRUN (6.1) has them.
        let poll_first = mode == Taskrun::Deferred;
        if !ring.params().is_feature_ext_arg() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel's io_uring takes no wait timeout (Linux 5.11 needed)",
            ));
        }
        let quiet_sends = ring.params().is_feature_skip_cqe_on_success();
        // A sparse table (its entries empty until `register`) needs 5.19;
        // without it every socket is named by its descriptor.
        let files = if files > 0 && ring.submitter().register_files_sparse(files).is_ok() {
            files
        } else {
            0
        };
        // Multishot receives came in 6.0: a ring with DEFER_TASKRUN (6.1)
        // has them.
        let pool = if poll_first && pool.0 > 0 {
            BufRing::register(&ring, pool.0, pool.1, POOL_GROUP).ok()
        } else {
            None
        };
        let mut r = Ring {
            ring,
            poller_fd,
            quiet_sends,
            poll_first,
            files,
            pool,
        };
        r.watch_poller()?;
        Ok(r)
    }

    /// Put socket `fd` in entry `index` of the table of registered files
    /// and return how entries should name it: by that index, or by its
    /// descriptor where the table is missing, too small or the update
    /// failed. The table holds the socket open until [`Ring::unregister`].
    pub fn register(&mut self, index: usize, fd: RawFd) -> Target {
        match u32::try_from(index) {
            Ok(i) if i < self.files => {
                match self.ring.submitter().register_files_update(i, &[fd]) {
                    Ok(1) => Target::Fixed(i),
                    _ => Target::Fd(fd),
                }
            }
            _ => Target::Fd(fd),
        }
    }

    /// Hand the kernel what is queued, without waiting. A queued request
    /// names its socket by table entry or descriptor and is bound to a
    /// socket only when submitted: before a connection's entry is emptied
    /// or its descriptor closed (both may name the next connection of the
    /// slot within the same turn), its queued requests must go out against
    /// the socket they were meant for.
    pub fn flush(&mut self) -> io::Result<()> {
        if !self.ring.submission().is_empty() {
            self.ring.submit()?;
        }
        Ok(())
    }

    /// Empty entry `index` of the table (the socket closes when its
    /// descriptor and the operations still in flight let it go). Call
    /// [`Ring::flush`] first.
    pub fn unregister(&mut self, index: u32) {
        let _ = self.ring.submitter().register_files_update(index, &[-1]);
    }

    /// (Re-)arm the multishot poll on the poller's descriptor.
    pub fn watch_poller(&mut self) -> io::Result<()> {
        let e = opcode::PollAdd::new(types::Fd(self.poller_fd), libc::POLLIN as u32)
            .multi(true)
            .build()
            .user_data(user_data(Kind::Poller, 0, 0));
        // SAFETY: a poll names a descriptor and integers, no memory of ours.
        unsafe { self.push(&e) }
    }

    /// Queue a `send` of `bytes` on `sock` for connection `slot`, `id`.
    /// Returns true when the send is *quiet*: up to [`QUIET_MAX`] bytes on a
    /// kernel with `IOSQE_CQE_SKIP_SUCCESS` (5.17), it posts no completion
    /// when it succeeds; it is sent whole (`MSG_WAITALL`: the ring retries
    /// short sends) or completes as [`Kind::QuietSend`] with the error, or
    /// the bytes sent before it, as short. Otherwise the send completes as
    /// [`Kind::Send`] with its byte count (a completion that ends, at once,
    /// the wait of the turn that submitted it: a second system call).
    ///
    /// # Safety
    /// `bytes` must stay valid and unchanged until the completion of this
    /// send has been reaped.
    pub unsafe fn send(
        &mut self,
        sock: Target,
        bytes: &[u8],
        slot: usize,
        id: u32,
    ) -> io::Result<bool> {
        let quiet = self.quiet_sends && bytes.len() <= QUIET_MAX;
        // SAFETY: forwarded from the caller.
        unsafe { self.send_as(sock, bytes, slot, id, quiet) }
    }

    /// Queue a `send` of `bytes` that always completes, as [`Kind::Send`]
    /// with its byte count or error: for bytes whose buffer is reused once
    /// the kernel is done with it, and for a connection whose sends must
    /// go out one after another (a quiet send's end is never known).
    ///
    /// # Safety
    /// `bytes` must stay valid and unchanged until the completion of this
    /// send has been reaped.
    pub unsafe fn send_reported(
        &mut self,
        sock: Target,
        bytes: &[u8],
        slot: usize,
        id: u32,
    ) -> io::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.send_as(sock, bytes, slot, id, false) }.map(|_| ())
    }

    /// [`Ring::send`], quiet or not as told.
    ///
    /// # Safety
    /// As [`Ring::send`].
    unsafe fn send_as(
        &mut self,
        sock: Target,
        bytes: &[u8],
        slot: usize,
        id: u32,
        quiet: bool,
    ) -> io::Result<bool> {
        let len = bytes.len().min(u32::MAX as usize) as u32;
        let kind = if quiet { Kind::QuietSend } else { Kind::Send };
        let mut e = on_target!(sock, f => opcode::Send::new(f, bytes.as_ptr(), len)
            .flags(libc::MSG_NOSIGNAL | libc::MSG_WAITALL)
            .build())
        .user_data(user_data(kind, id, slot));
        if quiet {
            e = e.flags(squeue::Flags::SKIP_SUCCESS);
        }
        // SAFETY: the caller keeps `bytes` alive until the completion.
        unsafe { self.push(&e) }?;
        Ok(quiet)
    }

    /// Queue a `recv` into `buf` on `sock` for connection `slot`, `id`.
    ///
    /// # Safety
    /// `buf` must stay valid, and be neither read nor written by anyone
    /// else, until the completion of this receive has been reaped.
    pub unsafe fn recv(
        &mut self,
        sock: Target,
        buf: &mut [u8],
        slot: usize,
        id: u32,
    ) -> io::Result<()> {
        let len = buf.len().min(u32::MAX as usize) as u32;
        let prio = if self.poll_first {
            RECVSEND_POLL_FIRST
        } else {
            0
        };
        let e = on_target!(sock, f => opcode::Recv::new(f, buf.as_mut_ptr(), len)
            .ioprio(prio)
            .build())
        .user_data(user_data(Kind::Recv, id, slot));
        // SAFETY: the caller keeps `buf` alive and untouched until the completion.
        unsafe { self.push(&e) }
    }

    /// Receives are multishot into the pool ([`Ring::recv_multi`]).
    pub fn multishot(&self) -> bool {
        self.pool.is_some()
    }

    /// Queue a multishot `recv` on `sock` for connection `slot`, `id`: it
    /// completes with each batch of bytes, in a pool buffer, while `more`
    /// says it stays armed; it ends (without `more`) at end of stream, on an
    /// error, or when the pool ran dry (`-ENOBUFS`: post it again).
    pub fn recv_multi(&mut self, sock: Target, slot: usize, id: u32) -> io::Result<()> {
        let e = on_target!(sock, f => opcode::RecvMulti::new(f, POOL_GROUP).build())
            .user_data(user_data(Kind::Recv, id, slot));
        // SAFETY: the receive writes only into the pool, which the ring frees
        // only after unregistering it (no buffer is taken after that).
        unsafe { self.push(&e) }
    }

    /// The `len` bytes the kernel put in pool buffer `bid`.
    ///
    /// # Safety
    /// `bid` and `len` come from one completion of a multishot receive
    /// (its buffer id and result), and that buffer is lent once. The `Lent`
    /// must not outlive this ring (whose drop frees the pool): give it back
    /// with [`Ring::recycle`] or drop it first.
    pub unsafe fn lend(&self, bid: u16, len: usize) -> Lent {
        let pool = self
            .pool
            .as_ref()
            .expect("a pool buffer comes from the pool");
        // SAFETY: the completion handed `bid` over; the `Lent` is given
        // back (or dropped) before the pool goes (the caller's contract).
        let bytes = unsafe { pool.buf(bid, len) };
        Lent {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
            bid,
        }
    }

    /// Give a lent buffer back to the kernel (also a stale connection's:
    /// every buffer a completion hands over).
    pub fn recycle(&mut self, lent: Lent) {
        if let Some(pool) = self.pool.as_mut() {
            // SAFETY: a `Lent` stands for a buffer a completion handed over
            // (`lend`'s contract), lent once; consumed here, so no slice of
            // it is left and it goes back once.
            unsafe { pool.give_back(lent.bid) };
        }
    }

    /// Queue `e`, submitting what is queued first when the queue is full.
    ///
    /// # Safety
    /// The memory `e` names must outlive its completion.
    unsafe fn push(&mut self, e: &squeue::Entry) -> io::Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { uring::push(&mut self.ring, e) }.map(|_| ())
    }

    /// One `io_uring_enter`: submit what is queued, then wait as `wait`
    /// says for a completion (not at all when one is already there).
    /// Returns the completions, in order, into `out`.
    pub fn turn(&mut self, wait: Wait, out: &mut Vec<Completion>) -> io::Result<()> {
        let wait = if self.ring.completion().is_empty() {
            wait
        } else {
            Wait::No
        };
        // Wait::No: DEFER_TASKRUN runs completions only inside a wait; with
        // TASKRUN_FLAG the kernel flags pending work, and the enter then
        // reaps it (GETEVENTS).
        if let Err(e) = uring::enter(&self.ring, 1, wait) {
            if !uring::ends_wait(&e) {
                return Err(e);
            }
        }
        out.clear();
        for c in self.ring.completion() {
            if let Some((kind, id, slot)) = parts(c.user_data()) {
                out.push(Completion {
                    kind,
                    slot,
                    id,
                    result: c.result(),
                    more: cqueue::more(c.flags()),
                    buf: cqueue::buffer_select(c.flags()),
                });
            }
        }
        Ok(())
    }
}

impl Ring {
    /// Unregister the pool, then free it (see [`BufRing::release`]): the
    /// kernel fills a buffer only inside this thread's `io_uring_enter`
    /// (receives on sockets run as task work of the submitter, with
    /// `DEFER_TASKRUN`), never during this call. True when a pool was freed.
    fn release_pool(&mut self) -> bool {
        // SAFETY: the pool was registered with this ring (`Ring::new`).
        self.pool
            .take()
            .is_some_and(|p| unsafe { p.release(&self.ring) })
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.release_pool();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::time::Duration;

    #[test]
    fn user_data_round_trips() {
        for (k, id, slot) in [
            (Kind::Poller, 0, 0),
            (Kind::Send, 0x0fff_ffff, 7),
            (Kind::Recv, 12, 0xffff_ffff),
        ] {
            assert_eq!(parts(user_data(k, id, slot)), Some((k, id, slot)));
        }
        assert_eq!(next_id(0x0fff_ffff), 0);
        assert_eq!(parts(0), None);
    }

    /// A send and a receive on a loopback pair, the socket named through
    /// the table of registered files, complete with the bytes, and the poll
    /// on a descriptor reports it readable to a wait without a timeout.
    #[test]
    fn send_recv_and_poller_completions() {
        let (pr, mut pw) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut ring = match Ring::new(8, pr.as_raw_fd(), 4, (0, 0)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: io_uring unavailable here ({e})");
                return;
            }
        };
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let target = ring.register(3, client.as_raw_fd());
        if ring.files > 0 {
            assert_eq!(target, Target::Fixed(3));
        } else {
            eprintln!("no table of registered files here: sockets named by descriptor");
            assert_eq!(target, Target::Fd(client.as_raw_fd()));
        }
        // Past the table's end: named by descriptor.
        assert_eq!(
            ring.register(4, client.as_raw_fd()),
            Target::Fd(client.as_raw_fd())
        );
        let req = b"ping".to_vec();
        let quiet;
        let mut buf = vec![0u8; 64];
        // SAFETY (test): `req` and `buf` outlive the completions reaped below.
        unsafe {
            quiet = ring.send(target, &req, 3, 9).unwrap();
            ring.recv(target, &mut buf, 3, 9).unwrap();
        }
        let mut out = Vec::new();
        let mut got = [0u8; 4];
        let mut seen = Vec::new();
        ring.turn(Wait::Upto(Duration::from_millis(100)), &mut out)
            .unwrap();
        seen.extend(out.iter().map(|c| (c.kind, c.result)));
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        server.write_all(b"pong!").unwrap();
        pw.write_all(b"x").unwrap();
        let want = |seen: &[(Kind, i32)]| {
            seen.contains(&(Kind::Recv, 5)) && seen.iter().any(|&(k, r)| k == Kind::Poller && r > 0)
        };
        while !want(&seen) {
            // Both completions are certain (the bytes were written): a wait
            // without a timeout returns with one of them.
            ring.turn(Wait::Completion, &mut out).unwrap();
            assert!(
                !out.is_empty(),
                "a wait for a completion returned none: {seen:?}"
            );
            for c in &out {
                assert_eq!(c.slot, if c.kind == Kind::Poller { 0 } else { 3 });
                seen.push((c.kind, c.result));
            }
        }
        // A quiet send succeeded without a completion (the server read it);
        // otherwise its completion carries the byte count.
        let sends: Vec<_> = seen
            .iter()
            .filter(|(k, _)| matches!(k, Kind::Send | Kind::QuietSend))
            .collect();
        if quiet {
            assert!(sends.is_empty(), "{seen:?}");
        } else {
            assert_eq!(sends, [&(Kind::Send, 4)], "{seen:?}");
        }
        assert_eq!(&buf[..5], b"pong!");
        // Emptied, the entry lets the socket go: the server sees it close.
        ring.unregister(3);
        drop(client);
        let mut rest = Vec::new();
        server
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        server
            .read_to_end(&mut rest)
            .expect("the socket closes once its entry is emptied");
        assert!(rest.is_empty());
    }

    /// A multishot receive into a pool of two 8-byte buffers takes 20
    /// bytes in order: each completion lends a buffer, given back once
    /// read; when the pool runs dry the receive ends (`ENOBUFS`, no `more`)
    /// and, posted again, takes the rest; end of stream ends it with 0.
    #[test]
    fn multishot_receives_through_a_small_pool() {
        let (pr, _pw) = std::os::unix::net::UnixStream::pair().unwrap();
        let mut ring = match Ring::new(8, pr.as_raw_fd(), 0, (2, 8)) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: io_uring unavailable here ({e})");
                return;
            }
        };
        if !ring.multishot() {
            eprintln!("skipped: no multishot receives with provided buffers here");
            return;
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut server, _) = l.accept().unwrap();
        let want: Vec<u8> = (0..20u8).collect();
        server.write_all(&want).unwrap();
        let target = Target::Fd(client.as_raw_fd());
        ring.recv_multi(target, 5, 1).unwrap();
        let (mut got, mut out, mut posts, mut ended) = (Vec::new(), Vec::new(), 1, false);
        while !ended {
            ring.turn(Wait::Upto(Duration::from_secs(5)), &mut out)
                .unwrap();
            assert!(!out.is_empty(), "no completion within 5 s; got {got:?}");
            for c in out.clone() {
                if c.kind != Kind::Recv {
                    continue;
                }
                assert_eq!((c.slot, c.id), (5, 1));
                if let Some(bid) = c.buf {
                    // SAFETY (test): recycled below, before the ring goes.
                    let lent = unsafe { ring.lend(bid, c.result as usize) };
                    assert!(lent.len() <= 8);
                    got.extend_from_slice(&lent);
                    ring.recycle(lent);
                } else if c.result == 0 {
                    ended = true;
                } else {
                    assert_eq!(c.result, -libc::ENOBUFS, "{c:?}");
                }
                if got.len() == want.len() && !ended {
                    // All in: the end of stream ends the receive.
                    server.shutdown(std::net::Shutdown::Write).unwrap();
                }
                if !c.more && !ended {
                    ring.recv_multi(target, 5, 1).unwrap();
                    posts += 1;
                }
            }
        }
        assert_eq!(got, want);
        assert!(
            posts >= 2,
            "20 bytes cannot fit two 8-byte buffers in one go"
        );
        assert!(ring.release_pool(), "the kernel let go of the pool");
    }
}
