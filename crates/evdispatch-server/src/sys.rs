//! The ground floor, under every layer: the system calls of the server,
//! through `nix` and `socket2`, and a lock that survives a panic. Every
//! `unsafe` block of the crate is here, each with the reason it is sound,
//! except the io_uring ones in `models/completion.rs` (sound only beside
//! the loop that owns their buffers; the ring itself is `evdispatch::uring`'s). By
//! hand still: `TCP_DEFER_ACCEPT` (neither crate has the option) and the
//! adoption of descriptors io_uring returns.

use std::ffi::CStr;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::signal::SigSet;
use nix::sys::socket::{MsgFlags, SockFlag, SockaddrStorage};
use nix::sys::stat::Mode;
use socket2::{Domain, SockRef, Socket, Type};

/// `fd` as a borrowed descriptor, for the crates' calls.
#[inline]
fn borrowed<'a>(fd: RawFd) -> io::Result<BorrowedFd<'a>> {
    if fd < 0 {
        return Err(io::Error::from_raw_os_error(libc::EBADF));
    }
    // SAFETY: `fd` is not -1 (checked above); every descriptor this module
    // is handed belongs to a live connection, listener, file or ring of the
    // caller, which stays open for the duration of the call the borrow is
    // made for (it is never kept).
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// The flags every file the server opens gets: `O_NONBLOCK` so that a FIFO in
/// the tree cannot block the server (the caller refuses non-regular files).
const OPEN_FLAGS: OFlag = OFlag::O_RDONLY
    .union(OFlag::O_NONBLOCK)
    .union(OFlag::O_CLOEXEC)
    .union(OFlag::O_NOCTTY);

/// `openat2(dir, path, O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY,
/// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)`: open `path` only if it resolves
/// beneath `dir` (symlinks included).
pub fn open_beneath(dir: RawFd, path: &CStr) -> io::Result<OwnedFd> {
    let how = OpenHow::new()
        .flags(OPEN_FLAGS)
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS);
    Ok(nix::fcntl::openat2(borrowed(dir)?, path, how)?)
}

/// `open(path, O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY)` without confinement:
/// for the root itself and the fallback that checks the canonical path.
pub fn open_plain(path: &CStr) -> io::Result<OwnedFd> {
    Ok(nix::fcntl::open(path, OPEN_FLAGS, Mode::empty())?)
}

/// What the server needs from `fstat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    /// True for a regular file.
    pub regular: bool,
    /// True for a directory.
    pub dir: bool,
    /// Size in bytes.
    pub size: u64,
    /// Modification time, seconds since the epoch.
    pub mtime: i64,
    /// Nanoseconds part of the modification time.
    pub mtime_nsec: i64,
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
}

/// `fstat(fd)`.
pub fn fstat(fd: RawFd) -> io::Result<Meta> {
    let st = nix::sys::stat::fstat(borrowed(fd)?)?;
    let fmt = st.st_mode & libc::S_IFMT;
    Ok(Meta {
        regular: fmt == libc::S_IFREG,
        dir: fmt == libc::S_IFDIR,
        size: st.st_size as u64,
        mtime: st.st_mtime,
        mtime_nsec: st.st_mtime_nsec,
        ino: st.st_ino,
        dev: st.st_dev,
    })
}

/// `recv(fd, buf, 0)`: a socket's `read` without the VFS layer (no file
/// position lock, no permission or notification hooks).
#[inline]
pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    Ok(nix::sys::socket::recv(fd, buf, MsgFlags::empty())?)
}

/// `pread(2)` at `offset`.
pub fn pread(fd: RawFd, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    Ok(nix::sys::uio::pread(
        borrowed(fd)?,
        buf,
        offset as libc::off_t,
    )?)
}

/// `sendmsg(fd, iov, MSG_NOSIGNAL | more?MSG_MORE)`: a gathered write that
/// never raises `SIGPIPE` (through socket2: nix's `MsgFlags` has no `MSG_MORE`).
#[inline]
pub fn send_vectored(fd: RawFd, iov: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    SockRef::from(&borrowed(fd)?).send_vectored_with_flags(iov, flags)
}

/// `sendfile(out, file, &offset, count)`; advances `offset`.
pub fn sendfile(out: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = *offset as libc::off64_t;
    let n = nix::sys::sendfile::sendfile64(borrowed(out)?, borrowed(file)?, Some(&mut off), count)?;
    *offset = off as u64;
    Ok(n)
}

/// `accept4(listener, SOCK_NONBLOCK | SOCK_CLOEXEC)` (`blocking`: without
/// `SOCK_NONBLOCK`).
#[inline]
pub fn accept(listener: RawFd, blocking: bool) -> io::Result<OwnedFd> {
    let mut flags = SockFlag::SOCK_CLOEXEC;
    if !blocking {
        flags |= SockFlag::SOCK_NONBLOCK;
    }
    Ok(owned_fd(nix::sys::socket::accept4(listener, flags)?))
}

/// The IP address of the peer of socket `fd` (`getpeername`), if it has
/// one (the access log's `$remote_addr`).
pub fn peer_ip(fd: RawFd) -> Option<std::net::IpAddr> {
    ip_of(nix::sys::socket::getpeername::<SockaddrStorage>(fd).ok()?)
}

/// The local IP address of the connected socket `fd` (`getsockname`).
pub fn local_ip(fd: RawFd) -> Option<std::net::IpAddr> {
    ip_of(nix::sys::socket::getsockname::<SockaddrStorage>(fd).ok()?)
}

fn ip_of(a: SockaddrStorage) -> Option<std::net::IpAddr> {
    if let Some(v4) = a.as_sockaddr_in() {
        Some(v4.ip().into())
    } else {
        a.as_sockaddr_in6().map(|v6| v6.ip().into())
    }
}

/// `shutdown(fd, how)`; errors (not connected…) are of no interest.
pub fn shutdown(fd: RawFd, how: libc::c_int) {
    use nix::sys::socket::Shutdown;
    let how = match how {
        libc::SHUT_RD => Shutdown::Read,
        libc::SHUT_WR => Shutdown::Write,
        _ => Shutdown::Both,
    };
    let _ = nix::sys::socket::shutdown(fd, how);
}

/// A listening TCP socket on `addr` (non-blocking unless `blocking`), with
/// `SO_REUSEADDR`, `SO_REUSEPORT` when `reuseport`, and `TCP_NODELAY` (which
/// accepted sockets inherit, so no per-connection `setsockopt` is needed).
/// `defer_accept_s` > 0 sets `TCP_DEFER_ACCEPT`: a connection is queued for
/// `accept` only once its first bytes have arrived (or, for a silent client,
/// after about that many seconds), so the first read of an accepted socket
/// finds the request instead of `EAGAIN`.
pub fn listen(
    addr: SocketAddr,
    backlog: i32,
    reuseport: bool,
    blocking: bool,
    defer_accept_s: u32,
) -> io::Result<OwnedFd> {
    let sock = bound(addr, reuseport, blocking, defer_accept_s)?;
    sock.listen(backlog)?;
    Ok(sock.into())
}

/// Bind `addr` without `SO_REUSEPORT` (but with `SO_REUSEADDR`, as the
/// listeners) and close it again: fails with "address already in use"
/// when anyone listens there. Returns the address bound (the port the
/// kernel chose, for port 0).
pub fn probe_bind(addr: SocketAddr) -> io::Result<SocketAddr> {
    let sock = bound(addr, false, false, 0)?;
    std::net::TcpListener::from(sock).local_addr()
}

/// A TCP socket with the options of [`listen`], bound to `addr`.
fn bound(
    addr: SocketAddr,
    reuseport: bool,
    blocking: bool,
    defer_accept_s: u32,
) -> io::Result<Socket> {
    let ty = if blocking {
        Type::STREAM
    } else {
        Type::STREAM.nonblocking()
    };
    let sock = Socket::new(Domain::for_address(addr), ty.cloexec(), None)?;
    sock.set_reuse_address(true)?;
    if reuseport {
        sock.set_reuse_port(true)?;
    }
    sock.set_tcp_nodelay(true)?;
    if defer_accept_s > 0 {
        let secs = defer_accept_s.min(i32::MAX as u32) as libc::c_int;
        // SAFETY: the pointer and length describe `secs`, a live c_int.
        let r = unsafe {
            libc::setsockopt(
                sock.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_DEFER_ACCEPT,
                (&secs as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    sock.bind(&addr.into()).map_err(|e| {
        if e.raw_os_error() == Some(libc::EADDRINUSE) {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot bind {addr}: address already in use (another process listens \
                     there: stop it or choose another --listen)"
                ),
            )
        } else {
            io::Error::new(e.kind(), format!("cannot bind {addr}: {e}"))
        }
    })?;
    Ok(sock)
}

/// The signal set of `signals`, real-time signals included (nix's `Signal`
/// names only the classic ones, so the set is filled through libc).
fn sigset(signals: &[libc::c_int]) -> SigSet {
    // SAFETY: `sigemptyset` initialises the set; `sigaddset` only writes
    // inside it (and refuses numbers that are not signals).
    unsafe {
        let mut raw = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
        libc::sigemptyset(raw.as_mut_ptr());
        for &s in signals {
            libc::sigaddset(raw.as_mut_ptr(), s);
        }
        SigSet::from_sigset_t_unchecked(raw.assume_init())
    }
}

/// Block `signals` in the calling thread (threads it spawns inherit the mask).
pub fn block_signals(signals: &[libc::c_int]) -> io::Result<()> {
    Ok(sigset(signals).thread_block()?)
}

/// Wait for one of `signals` (which must be blocked) and return its number.
pub fn wait_signal(signals: &[libc::c_int]) -> io::Result<libc::c_int> {
    Ok(sigset(signals).wait()? as libc::c_int)
}

/// A non-blocking `eventfd` (the completion model's waker).
pub fn eventfd() -> io::Result<OwnedFd> {
    use nix::sys::eventfd::{EfdFlags, EventFd};
    let fd = EventFd::from_flags(EfdFlags::EFD_NONBLOCK | EfdFlags::EFD_CLOEXEC)?;
    Ok(fd.into())
}

/// Add one to an eventfd (wakes whoever reads it); errors are of no interest.
pub fn eventfd_signal(fd: RawFd) {
    if let Ok(fd) = borrowed(fd) {
        let _ = nix::unistd::write(fd, &1u64.to_ne_bytes());
    }
}

/// Own a descriptor the kernel just returned (an `accept4`, or an io_uring
/// completion).
pub fn owned_fd(fd: i32) -> OwnedFd {
    assert!(fd >= 0);
    // SAFETY: a non-negative accept result is a new descriptor that nothing
    // else in the process refers to; it is owned exactly once here.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A `msghdr` with no name, no data and no control.
pub fn empty_msghdr() -> libc::msghdr {
    // SAFETY: msghdr is plain data; all-zero means null pointers and zero lengths.
    unsafe { std::mem::zeroed() }
}

/// The symbolic name of an errno value (`EMFILE`), or `E<n>` for a number
/// the C library does not name.
pub fn errno_name(errno: i32) -> String {
    match nix::errno::Errno::from_raw(errno) {
        nix::errno::Errno::UnknownErrno => format!("E{errno}"),
        e => format!("{e:?}"),
    }
}

/// Lock `m`, also when a thread panicked while holding it (nothing guarded
/// here is left half-changed by a panic that matters).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The thread's blocked mask, from `/proc/thread-self/status`.
    fn blocked_mask() -> u64 {
        let status = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("SigBlk:")).unwrap();
        u64::from_str_radix(line["SigBlk:".len()..].trim(), 16).unwrap()
    }

    #[test]
    fn block_signals_blocks_real_time_signals_too() {
        // In a thread of its own: the mask is the thread's.
        std::thread::spawn(|| {
            let rt: Vec<libc::c_int> = (libc::SIGRTMIN()..=libc::SIGRTMAX()).collect();
            let bit = |s: libc::c_int| 1u64 << (s - 1);
            assert_eq!(blocked_mask() & bit(libc::SIGRTMIN() + 1), 0);
            block_signals(&[libc::SIGIO]).unwrap();
            block_signals(&rt).unwrap();
            let m = blocked_mask();
            assert_ne!(m & bit(libc::SIGIO), 0, "SIGIO blocked");
            for s in rt {
                assert_ne!(m & bit(s), 0, "signal {s} blocked (mask {m:x})");
            }
        })
        .join()
        .unwrap();
    }
}
