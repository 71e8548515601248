//! The bench's system calls and foreign functions: every `unsafe` block of
//! this crate lives here (but the io_uring submissions of the floor server,
//! `server/floor.rs`, which are sound only beside the loop that owns their
//! buffers), each with the reason it is sound.
//!
//! The raw rows (`raw-epoll`, `raw-poll`) and Poller_bench's handler
//! (`read1`, `write1`) call libc directly, on purpose: they are the floor
//! every other row is compared with. `FdBlock` too: `bench fdalloc` measures
//! which number `open`/`dup` hand back and what `close` costs. The rest goes
//! through `nix` where it has a wrapper.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `read(fd, buf, 1)`, Poller_bench's event handler. True when a byte was
/// read; false for `EAGAIN`, EOF or an error (a spurious event).
#[inline]
pub fn read1(fd: RawFd) -> bool {
    let mut b = [0u8; 1];
    // SAFETY: `b` is a writable buffer of one byte for the whole call.
    unsafe { libc::read(fd, b.as_mut_ptr().cast(), 1) == 1 }
}

/// `write(fd, "x", 1)`: true when the byte was written.
#[inline]
pub fn write1(fd: RawFd) -> bool {
    // SAFETY: the pointer is a static byte, readable for the one byte passed.
    unsafe { libc::write(fd, b"x".as_ptr().cast(), 1) == 1 }
}

/// Adopt descriptors received with `SCM_RIGHTS`.
pub fn adopt(fds: &[RawFd]) -> Vec<OwnedFd> {
    fds.iter()
        // SAFETY: the kernel installed these descriptors in this process for
        // this message alone; nothing else owns them.
        .map(|&fd| unsafe { OwnedFd::from_raw_fd(fd) })
        .collect()
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Move the calling thread into a new network namespace with its loopback
/// interface up (`unshare(CLONE_NEWNET)`, then `SIOCSIFFLAGS` on `lo`).
/// Processes it starts afterwards live there too; the previous namespace,
/// with its `TIME_WAIT` sockets, goes away once nothing uses it. Needs
/// `CAP_SYS_ADMIN` (`EPERM` otherwise).
pub fn fresh_netns() -> io::Result<()> {
    use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};
    nix::sched::unshare(nix::sched::CloneFlags::CLONE_NEWNET)?;
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // nix has no SIOCGIFFLAGS/SIOCSIFFLAGS wrapper: the two ioctls stay raw.
    // SAFETY: ifreq is plain data; zeroed is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(b"lo\0") {
        *d = *s as libc::c_char;
    }
    // SAFETY: `req` is a valid ifreq naming an interface; the kernel fills
    // in its flags.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) })?;
    // SAFETY: the union's flags member is the one SIOCGIFFLAGS just set.
    unsafe {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    // SAFETY: as above; the kernel reads the flags.
    cvt(unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req) })?;
    Ok(())
}

/// `epoll(7)` with nothing in between: the `raw-epoll` row.
pub struct RawEpoll {
    ep: OwnedFd,
    buf: Vec<libc::epoll_event>,
}

impl RawEpoll {
    /// `epoll_create1` and a result buffer of `capacity` entries.
    pub fn new(capacity: usize) -> io::Result<RawEpoll> {
        // SAFETY: no pointers; the flag is valid.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(RawEpoll {
            // SAFETY: epoll_create1 succeeded; the descriptor is ours alone.
            ep: unsafe { OwnedFd::from_raw_fd(fd) },
            buf: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    /// `EPOLL_CTL_ADD` for reading (level-triggered), `data` = `key`.
    pub fn add(&mut self, fd: RawFd, key: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: key,
        };
        // SAFETY: `ev` is a valid epoll_event for the duration of the call.
        cvt(unsafe { libc::epoll_ctl(self.ep.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })
            .map(|_| ())
    }

    /// `epoll_wait` without timeout: the keys of the ready entries.
    #[inline]
    pub fn wait(&mut self) -> io::Result<&[libc::epoll_event]> {
        let max = self.buf.len() as libc::c_int;
        // SAFETY: the kernel writes at most `max` entries into `buf`.
        let n = unsafe { libc::epoll_wait(self.ep.as_raw_fd(), self.buf.as_mut_ptr(), max, -1) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(&self.buf[..n as usize])
    }
}

/// `poll(2)` with nothing in between: the `raw-poll` row. Returns how many
/// entries have `revents` set.
#[inline]
pub fn poll(fds: &mut [libc::pollfd]) -> io::Result<usize> {
    // SAFETY: `fds` is valid for its length, which is what is passed.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
    cvt(n).map(|n| n as usize)
}

/// Register `fd` with the `polling` crate, level-triggered, under `key`.
pub fn polling_add_level(poller: &polling::Poller, fd: RawFd, key: usize) -> io::Result<()> {
    // SAFETY: polling requires the source to be deleted before it is closed;
    // the row deletes every descriptor at teardown, and the harness closes
    // the read ends only after every row's teardown.
    unsafe { poller.add_with_mode(fd, polling::Event::readable(key), polling::PollMode::Level) }
}

/// Remove `fd` from a `polling` poller.
pub fn polling_delete(poller: &polling::Poller, fd: RawFd) -> io::Result<()> {
    // SAFETY: `fd` is open for the duration of this call (the harness owns it).
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    poller.delete(fd)
}

/// A dense block of descriptors for `bench fdalloc`, closed on drop. Raw
/// numbers, because the experiment is about which number the kernel hands
/// back.
pub struct FdBlock {
    fds: Vec<RawFd>,
    via_open: bool,
    source: OwnedFd,
}

impl FdBlock {
    /// Open `n` descriptors, by `dup` of /dev/null or by `open("/dev/null")`.
    pub fn open(n: usize, via_open: bool) -> io::Result<FdBlock> {
        let source: OwnedFd = std::fs::File::open("/dev/null")?.into();
        let mut block = FdBlock {
            fds: Vec::with_capacity(n),
            via_open,
            source,
        };
        for _ in 0..n {
            let fd = block.alloc()?;
            block.fds.push(fd);
        }
        Ok(block)
    }

    /// The descriptor numbers, in the order they were opened.
    pub fn fds(&self) -> &[RawFd] {
        &self.fds
    }

    /// `close(fd)` of one of ours; it must be reopened with [`FdBlock::alloc`].
    #[inline]
    pub fn close(&mut self, fd: RawFd) -> io::Result<()> {
        debug_assert!(self.fds.contains(&fd));
        // SAFETY: `fd` is one of this block's descriptors; the caller
        // reopens the number (the kernel gives back the lowest free one)
        // before the block is dropped, which `alloc`'s caller checks.
        cvt(unsafe { libc::close(fd) }).map(|_| ())
    }

    /// Allocate one descriptor (the lowest free number, as POSIX requires).
    #[inline]
    pub fn alloc(&mut self) -> io::Result<RawFd> {
        let fd = if self.via_open {
            // SAFETY: the path is a NUL-terminated static string.
            unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) }
        } else {
            // SAFETY: no pointers; `source` is open for the block's lifetime.
            unsafe { libc::fcntl(self.source.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 0) }
        };
        cvt(fd)
    }
}

impl Drop for FdBlock {
    fn drop(&mut self) {
        for &fd in &self.fds {
            // SAFETY: each number in `fds` is open and owned by this block
            // (close/alloc pairs keep that true); closed once, here.
            unsafe { libc::close(fd) };
        }
    }
}

/// The C peers compiled by build.rs: four functions per library.
#[cfg(any(evd_libevent, evd_libev))]
pub mod c_peers {
    use std::ffi::{c_char, c_int, c_long, c_void, CStr};
    use std::io;
    use std::os::fd::RawFd;
    use std::ptr::NonNull;

    type NewFn = unsafe extern "C" fn(*const c_int, usize) -> *mut c_void;
    type IterateFn = unsafe extern "C" fn(*mut c_void, usize, *mut c_long) -> c_int;
    type BackendFn = unsafe extern "C" fn(*const c_void) -> *const c_char;
    type FreeFn = unsafe extern "C" fn(*mut c_void);

    /// One C harness: csrc/<name>_row.c.
    pub struct Api {
        new: NewFn,
        iterate: IterateFn,
        backend: BackendFn,
        free: FreeFn,
    }

    #[cfg(evd_libevent)]
    extern "C" {
        fn evd_libevent_new(fds: *const c_int, n: usize) -> *mut c_void;
        fn evd_libevent_iterate(row: *mut c_void, active: usize, out: *mut c_long) -> c_int;
        fn evd_libevent_backend(row: *const c_void) -> *const c_char;
        fn evd_libevent_free(row: *mut c_void);
    }

    #[cfg(evd_libev)]
    extern "C" {
        fn evd_libev_new(fds: *const c_int, n: usize) -> *mut c_void;
        fn evd_libev_iterate(row: *mut c_void, active: usize, out: *mut c_long) -> c_int;
        fn evd_libev_backend(row: *const c_void) -> *const c_char;
        fn evd_libev_free(row: *mut c_void);
    }

    /// csrc/libevent_row.c.
    #[cfg(evd_libevent)]
    pub static LIBEVENT: Api = Api {
        new: evd_libevent_new,
        iterate: evd_libevent_iterate,
        backend: evd_libevent_backend,
        free: evd_libevent_free,
    };

    /// csrc/libev_row.c.
    #[cfg(evd_libev)]
    pub static LIBEV: Api = Api {
        new: evd_libev_new,
        iterate: evd_libev_iterate,
        backend: evd_libev_backend,
        free: evd_libev_free,
    };

    /// A C event loop watching a set of descriptors; freed on drop.
    pub struct Loop {
        api: &'static Api,
        row: NonNull<c_void>,
    }

    impl Loop {
        /// Watch `fds` for reading.
        pub fn new(api: &'static Api, fds: &[RawFd]) -> io::Result<Loop> {
            // SAFETY: the pointer and length describe `fds`, which the C side
            // only reads during the call (it copies the numbers).
            let row = unsafe { (api.new)(fds.as_ptr(), fds.len()) };
            NonNull::new(row)
                .map(|row| Loop { api, row })
                .ok_or_else(|| io::Error::other("the C harness could not set up its event loop"))
        }

        /// Run the loop until `active` bytes were read:
        /// `[bytes, spurious callbacks, loop calls]`.
        #[inline]
        pub fn iterate(&mut self, active: usize) -> io::Result<[c_long; 3]> {
            let mut out: [c_long; 3] = [0; 3];
            // SAFETY: `row` is live (freed only on drop); `out` has the three
            // entries the C side writes.
            let rc = unsafe { (self.api.iterate)(self.row.as_ptr(), active, out.as_mut_ptr()) };
            if rc != 0 {
                return Err(io::Error::other("the C event loop returned an error"));
            }
            Ok(out)
        }

        /// The kernel interface the library chose ("epoll", …).
        pub fn backend(&self) -> String {
            // SAFETY: `row` is live; the C side returns a static string.
            let s = unsafe { (self.api.backend)(self.row.as_ptr()) };
            if s.is_null() {
                return "unknown".into();
            }
            // SAFETY: non-null, NUL-terminated, static (library-owned).
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    }

    impl Drop for Loop {
        fn drop(&mut self) {
            // SAFETY: `row` came from `new` and is freed once, here.
            unsafe { (self.api.free)(self.row.as_ptr()) }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};

    #[test]
    fn a_fresh_namespace_has_its_loopback_up() {
        // On a thread of its own: the namespace is the calling thread's.
        std::thread::spawn(|| {
            if let Err(e) = super::fresh_netns() {
                eprintln!("skipping: no new network namespace here ({e}; needs CAP_SYS_ADMIN)");
                return;
            }
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let mut client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut server, _) = listener.accept().unwrap();
            client.write_all(b"up").unwrap();
            let mut buf = [0u8; 2];
            server.read_exact(&mut buf).unwrap();
            assert_eq!(&buf, b"up");
        })
        .join()
        .unwrap();
    }
}
