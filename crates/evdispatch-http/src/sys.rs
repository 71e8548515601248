//! The system calls of the server. Every `unsafe` block of the crate is here,
//! each with the reason it is sound.

use std::ffi::CStr;
use std::io::{self, IoSlice};
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{MsgFlags, SockFlag, SockaddrStorage};

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn cvt_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// `openat2(dir, path, O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY,
/// RESOLVE_BENEATH|RESOLVE_NO_MAGICLINKS)`: open `path` only if it resolves
/// beneath `dir` (symlinks included). `O_NONBLOCK` so that a FIFO in the tree
/// cannot block the server; the caller refuses non-regular files.
pub fn open_beneath(dir: RawFd, path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: open_how is plain data; all-zero is a valid value.
    let mut how: libc::open_how = unsafe { std::mem::zeroed() };
    how.flags = (libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY) as u64;
    how.resolve = libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS;
    // SAFETY: `path` is NUL-terminated, `how` is a valid open_how whose size
    // is passed; the kernel only reads both.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            dir,
            path.as_ptr(),
            &how as *const libc::open_how,
            std::mem::size_of::<libc::open_how>(),
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the call succeeded, so `fd` is a new descriptor we alone own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// `openat(dir, path, O_RDONLY|O_NONBLOCK|O_CLOEXEC|O_NOCTTY)` without
/// confinement: only for the fallback that checks the canonical path itself.
pub fn open_plain(dir: RawFd, path: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `path` is NUL-terminated; no other pointer is passed.
    let fd = cvt(unsafe {
        libc::openat(
            dir,
            path.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY,
        )
    })?;
    // SAFETY: the call succeeded, so `fd` is a new descriptor we alone own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
    // SAFETY: `stat` is plain data; zeroed is a valid value for the kernel to overwrite.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `st` is a valid, writable stat buffer.
    cvt(unsafe { libc::fstat(fd, &mut st) })?;
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
    // SAFETY: the pointer and length describe `buf`, writable for its whole length.
    cvt_size(unsafe {
        libc::pread(
            fd,
            buf.as_mut_ptr().cast(),
            buf.len(),
            offset as libc::off_t,
        )
    })
}

/// `sendmsg(fd, iov, MSG_NOSIGNAL | more?MSG_MORE)`: a gathered write that
/// never raises `SIGPIPE`.
#[inline]
pub fn send_vectored(fd: RawFd, iov: &[IoSlice<'_>], more: bool) -> io::Result<usize> {
    // Not through nix: its `MsgFlags` has no `MSG_MORE`.
    // SAFETY: msghdr is plain data; zeroed means no name and no control data.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    // IoSlice is guaranteed ABI-compatible with struct iovec on Unix.
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len() as _;
    let flags = libc::MSG_NOSIGNAL | if more { libc::MSG_MORE } else { 0 };
    // SAFETY: `msg` points at `iov`, which stays borrowed (and so valid) for the call.
    cvt_size(unsafe { libc::sendmsg(fd, &msg, flags) })
}

/// `sendfile(out, file, &offset, count)`; advances `offset`.
pub fn sendfile(out: RawFd, file: RawFd, offset: &mut u64, count: usize) -> io::Result<usize> {
    let mut off = *offset as libc::off_t;
    // SAFETY: `off` is a valid off_t the kernel updates; descriptors are plain ints.
    let n = cvt_size(unsafe { libc::sendfile(out, file, &mut off, count) })?;
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
    let fd = nix::sys::socket::accept4(listener, flags)?;
    // SAFETY: the call succeeded, so `fd` is a new descriptor we alone own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The IP address of the peer of socket `fd` (`getpeername`), if it has
/// one (the access log's `$remote_addr`).
pub fn peer_ip(fd: RawFd) -> Option<std::net::IpAddr> {
    let a = nix::sys::socket::getpeername::<SockaddrStorage>(fd).ok()?;
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

fn set_int_opt(
    fd: RawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: the pointer and length describe `value`, a live c_int.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })
    .map(|_| ())
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
    // SAFETY: no pointers.
    cvt(unsafe { libc::listen(sock.as_raw_fd(), backlog) })?;
    Ok(sock)
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
) -> io::Result<OwnedFd> {
    let family = match addr {
        SocketAddr::V4(_) => libc::AF_INET,
        SocketAddr::V6(_) => libc::AF_INET6,
    };
    let nb = if blocking { 0 } else { libc::SOCK_NONBLOCK };
    // SAFETY: no pointers.
    let fd = cvt(unsafe { libc::socket(family, libc::SOCK_STREAM | libc::SOCK_CLOEXEC | nb, 0) })?;
    // SAFETY: the call succeeded, so `fd` is a new descriptor we alone own.
    let sock = unsafe { OwnedFd::from_raw_fd(fd) };
    set_int_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, 1)?;
    if reuseport {
        set_int_opt(fd, libc::SOL_SOCKET, libc::SO_REUSEPORT, 1)?;
    }
    set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY, 1)?;
    if defer_accept_s > 0 {
        let secs = defer_accept_s.min(i32::MAX as u32) as libc::c_int;
        set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_DEFER_ACCEPT, secs)?;
    }
    // SAFETY: sockaddr_storage is plain data; zeroed is valid.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    // SAFETY: `storage` holds a valid sockaddr of `len` bytes.
    cvt(unsafe {
        libc::bind(
            sock.as_raw_fd(),
            (&storage as *const libc::sockaddr_storage).cast(),
            len as libc::socklen_t,
        )
    })
    .map_err(|e| {
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

/// Block `signals` in the calling thread (threads it spawns inherit the mask).
pub fn block_signals(signals: &[libc::c_int]) -> io::Result<()> {
    // SAFETY: sigset_t is plain data; sigemptyset initialises it.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &s in signals {
        // SAFETY: `set` is a valid, initialised sigset_t.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    // SAFETY: `set` is initialised; the old mask is not wanted (null).
    let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(())
}

/// Wait for one of `signals` (which must be blocked) and return its number.
pub fn wait_signal(signals: &[libc::c_int]) -> io::Result<libc::c_int> {
    // SAFETY: as in `block_signals`.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &s in signals {
        // SAFETY: `set` is a valid, initialised sigset_t.
        unsafe { libc::sigaddset(&mut set, s) };
    }
    let mut sig: libc::c_int = 0;
    // SAFETY: both pointers are valid for the call.
    let r = unsafe { libc::sigwait(&set, &mut sig) };
    if r != 0 {
        return Err(io::Error::from_raw_os_error(r));
    }
    Ok(sig)
}

/// A non-blocking `eventfd` (the completion model's waker).
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: no pointers.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
    // SAFETY: the call succeeded, so `fd` is a new descriptor we alone own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Add one to an eventfd (wakes whoever reads it); errors are of no interest.
pub fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: the pointer and length describe `one`, a live u64.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
}

/// Own a descriptor the kernel just returned in an io_uring completion.
pub fn owned_fd(fd: i32) -> OwnedFd {
    assert!(fd >= 0);
    // SAFETY: a non-negative accept completion is a new descriptor that
    // nothing else in the process refers to; it is owned exactly once here.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

/// A `msghdr` with no name, no data and no control.
pub fn empty_msghdr() -> libc::msghdr {
    // SAFETY: msghdr is plain data; all-zero means null pointers and zero lengths.
    unsafe { std::mem::zeroed() }
}

/// The symbolic name of an errno value (`EMFILE`), or `E<n>`.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ENOBUFS => "ENOBUFS",
        libc::ENOMEM => "ENOMEM",
        libc::ECONNABORTED => "ECONNABORTED",
        libc::EPERM => "EPERM",
        libc::EPROTO => "EPROTO",
        libc::EINTR => "EINTR",
        libc::EINVAL => "EINVAL",
        libc::EBADF => "EBADF",
        libc::ENOTSOCK => "ENOTSOCK",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        libc::ECONNRESET => "ECONNRESET",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EHOSTUNREACH => "EHOSTUNREACH",
        libc::ENETUNREACH => "ENETUNREACH",
        libc::EAGAIN => "EAGAIN",
        _ => return format!("E{errno}"),
    };
    name.to_string()
}

pub mod uring {
    //! The `unsafe` parts of the io_uring completion model: pushing entries
    //! whose buffers the caller keeps alive, and the provided-buffer ring.

    use io_uring::{squeue, types::BufRingEntry, IoUring};
    use std::io;
    use std::sync::atomic::{AtomicU16, Ordering};

    /// Push `entry`; on a full submission queue, submit and retry.
    ///
    /// # Safety
    /// Every buffer `entry` points to must stay valid and unmoved until its
    /// completion is reaped (the caller keeps them in boxed per-connection
    /// state that outlives the operation).
    pub unsafe fn push(ring: &mut IoUring, entry: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: forwarded to the caller's contract above.
            if unsafe { ring.submission().push(entry) }.is_ok() {
                return Ok(());
            }
            ring.submit()?;
        }
    }

    /// A ring of provided buffers (`IORING_REGISTER_PBUF_RING`): the kernel
    /// picks a buffer only when data arrives, so an idle connection holds
    /// none.
    pub struct BufRing {
        ring: *mut BufRingEntry,
        ring_bytes: usize,
        bufs: Vec<u8>,
        entries: u16,
        buf_size: usize,
        tail: u16,
        /// The buffer group id given to `RecvMulti`.
        pub bgid: u16,
    }

    // SAFETY: the raw pointer is owned by this value (an mmap'd region) and
    // only touched through &mut self.
    unsafe impl Send for BufRing {}

    impl BufRing {
        /// Register `entries` (a power of two) buffers of `buf_size` bytes as group `bgid`.
        pub fn new(
            ring: &IoUring,
            entries: u16,
            buf_size: usize,
            bgid: u16,
        ) -> io::Result<BufRing> {
            assert!(entries.is_power_of_two());
            let ring_bytes = entries as usize * std::mem::size_of::<BufRingEntry>();
            // SAFETY: an anonymous private mapping; no pointer is passed in.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    ring_bytes,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_ANONYMOUS | libc::MAP_PRIVATE,
                    -1,
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            let mut br = BufRing {
                ring: ptr.cast(),
                ring_bytes,
                bufs: vec![0u8; entries as usize * buf_size],
                entries,
                buf_size,
                tail: 0,
                bgid,
            };
            // SAFETY: the mapping is page-aligned, `entries` long, and lives
            // until `drop`, after the ring unregisters it (the ring is
            // dropped first by the owner).
            unsafe {
                ring.submitter()
                    .register_buf_ring_with_flags(ptr as u64, entries, bgid, 0)?
            };
            for bid in 0..entries {
                br.push(bid);
            }
            br.publish();
            Ok(br)
        }

        /// The bytes of buffer `bid`.
        pub fn buf(&self, bid: u16, len: usize) -> &[u8] {
            let start = bid as usize * self.buf_size;
            &self.bufs[start..start + len.min(self.buf_size)]
        }

        fn push(&mut self, bid: u16) {
            let mask = self.entries - 1;
            let slot = (self.tail & mask) as usize;
            // SAFETY: `slot` < entries, inside the mapping.
            let e = unsafe { &mut *self.ring.add(slot) };
            let addr = self.bufs.as_ptr() as u64 + bid as u64 * self.buf_size as u64;
            e.set_addr(addr);
            e.set_len(self.buf_size as u32);
            e.set_bid(bid);
            self.tail = self.tail.wrapping_add(1);
        }

        fn publish(&mut self) {
            // SAFETY: the ring base is the first entry; its `resv` field is
            // the shared tail, which the kernel reads atomically.
            let tail = unsafe { BufRingEntry::tail(self.ring) } as *const AtomicU16;
            // SAFETY: `tail` points into our mapping, aligned for u16.
            unsafe { &*tail }.store(self.tail, Ordering::Release);
        }

        /// Give buffer `bid` back to the kernel.
        pub fn recycle(&mut self, bid: u16) {
            self.push(bid);
            self.publish();
        }
    }

    impl Drop for BufRing {
        fn drop(&mut self) {
            // SAFETY: the mapping was made in `new` with this length.
            unsafe { libc::munmap(self.ring.cast(), self.ring_bytes) };
        }
    }
}
