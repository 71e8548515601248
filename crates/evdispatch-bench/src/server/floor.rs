//! The floor of `bench server`: two minimal servers that answer every
//! request with one canned keep-alive response held in memory, one on
//! `epoll` (readiness) and one on `io_uring` (completion).
//!
//! They parse nothing beyond finding the end of each request (the blank
//! line `\r\n\r\n`, so pipelined requests are each answered), open no file,
//! keep no timer and never close a connection first. Whatever CPU a real
//! server spends per request above theirs is the price of being a server
//! (parsing, files, headers, timers, statistics); `bench server` prints each
//! server's CPU per request as a multiple of the lower of the two.
//!
//! They run as child processes of the bench (`evdispatch bench
//! floor-server`, hidden), started, pinned, measured and stopped exactly as
//! the other rows, and announce themselves with the line `listening on
//! http://IP:PORT` that the harness waits for. SIGTERM ends them.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};

use anyhow::Context;

/// Which floor server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Floor {
    /// Readiness: level-triggered `epoll`, `read`/`write` until `EAGAIN`.
    Epoll,
    /// Completion: `io_uring` accept, recv and send.
    Uring,
}

impl Floor {
    /// Both, in the order they are listed.
    pub const ALL: [Floor; 2] = [Floor::Epoll, Floor::Uring];

    /// Its row name in `bench server` (`--servers floor-epoll`).
    pub fn name(self) -> &'static str {
        match self {
            Floor::Epoll => "floor-epoll",
            Floor::Uring => "floor-uring",
        }
    }

    /// The value of `floor-server --mechanism`.
    pub fn mechanism(self) -> &'static str {
        match self {
            Floor::Epoll => "epoll",
            Floor::Uring => "uring",
        }
    }

    /// Parse a row name (`floor-epoll`, `floor-uring`).
    pub fn from_name(s: &str) -> Option<Floor> {
        Floor::ALL.into_iter().find(|f| f.name() == s)
    }
}

/// Arguments of the hidden `evdispatch bench floor-server`.
#[derive(Debug, Clone, clap::Args)]
pub struct FloorArgs {
    /// The mechanism.
    #[arg(long, value_enum)]
    pub mechanism: Floor,
    /// Address to listen on (port 0: any free one, announced on stdout).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    /// Bytes of the body of the canned response.
    #[arg(long, default_value_t = 6144)]
    pub body_size: usize,
}

/// The canned response: the headers a static server sends for a file of
/// `body_size` bytes, and the body (the same bytes the bench's document
/// root holds).
pub fn response(body_size: usize) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: floor\r\nContent-Type: text/html\r\nContent-Length: {body_size}\r\n\r\n"
    )
    .into_bytes();
    r.extend((0..body_size).map(|i| b'a' + (i % 26) as u8));
    r
}

/// Counts the ends of requests (`\r\n\r\n`) in a byte stream read in
/// pieces: a terminator split across two reads still counts once.
#[derive(Debug, Default)]
pub struct RequestEnds {
    /// How many bytes of `\r\n\r\n` the previous piece ended with.
    matched: usize,
}

impl RequestEnds {
    /// Feed the next piece; returns the requests it completed.
    pub fn feed(&mut self, piece: &[u8]) -> usize {
        const END: &[u8; 4] = b"\r\n\r\n";
        let mut ends = 0;
        for &b in piece {
            self.matched = if b == END[self.matched] {
                self.matched + 1
            } else if b == b'\r' {
                1
            } else {
                0
            };
            if self.matched == END.len() {
                ends += 1;
                self.matched = 0;
            }
        }
        ends
    }
}

/// Run `evdispatch bench floor-server` until killed.
pub fn main(args: FloorArgs) -> anyhow::Result<()> {
    let listener = TcpListener::bind(args.listen)
        .with_context(|| format!("floor-server: cannot listen on {}", args.listen))?;
    listener.set_nonblocking(true)?;
    let resp = response(args.body_size);
    let addr = listener.local_addr()?;
    // Prepared before the announcement, so a failure is reported instead.
    let run: Box<dyn FnOnce() -> anyhow::Result<()>> = match args.mechanism {
        Floor::Epoll => {
            let ep = nix::sys::epoll::Epoll::new(nix::sys::epoll::EpollCreateFlags::EPOLL_CLOEXEC)
                .context("floor-server: epoll_create1")?;
            Box::new(move || epoll_loop(ep, listener, &resp))
        }
        Floor::Uring => {
            let ring = io_uring::IoUring::new(1024).context(
                "floor-server: io_uring_setup failed (io_uring disabled or kernel too old)",
            )?;
            Box::new(move || uring_loop(ring, listener, &resp))
        }
    };
    println!("listening on http://{addr}/ ({})", args.mechanism.name());
    io::stdout().flush()?;
    run()
}

/// One connection of the epoll floor.
struct Conn {
    stream: TcpStream,
    ends: RequestEnds,
    /// Responses owed, and how far into the first of them was written.
    owed: usize,
    written: usize,
    /// Watching for writability too.
    out: bool,
}

const LISTENER: u64 = u64::MAX;

fn epoll_loop(
    ep: nix::sys::epoll::Epoll,
    listener: TcpListener,
    resp: &[u8],
) -> anyhow::Result<()> {
    use nix::sys::epoll::{EpollEvent, EpollFlags, EpollTimeout};
    ep.add(&listener, EpollEvent::new(EpollFlags::EPOLLIN, LISTENER))?;
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut events = vec![EpollEvent::empty(); 256];
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match ep.wait(&mut events, EpollTimeout::NONE) {
            Ok(n) => n,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e).context("epoll_wait"),
        };
        for ev in &events[..n] {
            if ev.data() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((s, _)) => {
                            s.set_nonblocking(true)?;
                            s.set_nodelay(true)?;
                            let fd = s.as_raw_fd() as usize;
                            ep.add(&s, EpollEvent::new(EpollFlags::EPOLLIN, fd as u64))?;
                            if conns.len() <= fd {
                                conns.resize_with(fd + 1, || None);
                            }
                            conns[fd] = Some(Conn {
                                stream: s,
                                ends: RequestEnds::default(),
                                owed: 0,
                                written: 0,
                                out: false,
                            });
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        // EMFILE, ECONNABORTED…: the floor holds few
                        // connections; try again on the next event.
                        Err(_) => break,
                    }
                }
                continue;
            }
            let fd = ev.data() as usize;
            let Some(c) = conns.get_mut(fd).and_then(Option::as_mut) else {
                continue;
            };
            if !serve_epoll(c, &mut buf, resp) {
                let _ = ep.delete(&c.stream);
                conns[fd] = None;
                continue;
            }
            let want_out = c.owed > 0;
            if want_out != c.out {
                c.out = want_out;
                let flags = if want_out {
                    EpollFlags::EPOLLIN | EpollFlags::EPOLLOUT
                } else {
                    EpollFlags::EPOLLIN
                };
                ep.modify(&c.stream, &mut EpollEvent::new(flags, fd as u64))?;
            }
        }
    }
}

/// Read until `EAGAIN`, answer every complete request; false when the
/// connection is over (EOF or an error).
fn serve_epoll(c: &mut Conn, buf: &mut [u8], resp: &[u8]) -> bool {
    loop {
        if !write_owed(c, resp) {
            return false;
        }
        if c.owed > 0 {
            // The socket is full: wait for EPOLLOUT before reading more.
            return true;
        }
        match c.stream.read(buf) {
            Ok(0) => return false,
            Ok(n) => c.owed += c.ends.feed(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
}

/// Write the responses owed until done or `EAGAIN`; false on an error.
fn write_owed(c: &mut Conn, resp: &[u8]) -> bool {
    while c.owed > 0 {
        match c.stream.write(&resp[c.written..]) {
            Ok(n) => {
                c.written += n;
                if c.written == resp.len() {
                    c.written = 0;
                    c.owed -= 1;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}

/// One connection of the io_uring floor: at most one operation in flight,
/// so its buffer lives (in the slot) until that operation completes.
struct UConn {
    fd: OwnedFd,
    buf: Box<[u8]>,
    ends: RequestEnds,
    owed: usize,
    written: usize,
}

const OP_ACCEPT: u64 = 0;
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;

fn ud(op: u64, slot: usize) -> u64 {
    ((slot as u64) << 2) | op
}

fn uring_loop(
    mut ring: io_uring::IoUring,
    listener: TcpListener,
    resp: &[u8],
) -> anyhow::Result<()> {
    use io_uring::{opcode, squeue, types};
    let lfd = types::Fd(listener.as_fd().as_raw_fd());
    let accept = || opcode::Accept::new(lfd, std::ptr::null_mut(), std::ptr::null_mut()).build();
    let mut conns: Vec<Option<UConn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut pending: Vec<squeue::Entry> = vec![accept().user_data(ud(OP_ACCEPT, 0))];
    loop {
        {
            let mut sq = ring.submission();
            while let Some(e) = pending.last() {
                // SAFETY: every entry points into a buffer owned by a slot of
                // `conns` (or the canned response, alive for the whole loop)
                // and the slot is neither freed nor reused until the entry's
                // completion is reaped below: one operation per connection.
                if unsafe { sq.push(e) }.is_err() {
                    break; // full: the rest goes after this submit
                }
                pending.pop();
            }
        }
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
            Err(e) => return Err(e).context("io_uring_enter"),
        }
        let done: Vec<(u64, i32)> = ring
            .completion()
            .map(|c| (c.user_data(), c.result()))
            .collect();
        for (data, res) in done {
            let (op, slot) = (data & 3, (data >> 2) as usize);
            if op == OP_ACCEPT {
                pending.push(accept().user_data(ud(OP_ACCEPT, 0)));
                if res < 0 {
                    continue;
                }
                // SAFETY: a successful accept returns a new descriptor that
                // nothing else owns.
                let fd = unsafe { OwnedFd::from_raw_fd(res) };
                let _ =
                    nix::sys::socket::setsockopt(&fd, nix::sys::socket::sockopt::TcpNoDelay, &true);
                let slot = free.pop().unwrap_or_else(|| {
                    conns.push(None);
                    conns.len() - 1
                });
                let c = conns[slot].insert(UConn {
                    fd,
                    buf: vec![0u8; 16 * 1024].into_boxed_slice(),
                    ends: RequestEnds::default(),
                    owed: 0,
                    written: 0,
                });
                pending.push(recv(c, slot));
                continue;
            }
            let Some(c) = conns.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            if res <= 0 && !(res == -libc::EINTR || res == -libc::EAGAIN) {
                conns[slot] = None; // EOF or an error: closes the socket
                free.push(slot);
                continue;
            }
            let res = res.max(0) as usize;
            if op == OP_RECV {
                c.owed += c.ends.feed(&c.buf[..res]);
            } else {
                c.written += res;
                if c.written == resp.len() {
                    c.written = 0;
                    c.owed -= 1;
                }
            }
            pending.push(if c.owed > 0 {
                let rest = &resp[c.written..];
                opcode::Send::new(
                    types::Fd(c.fd.as_raw_fd()),
                    rest.as_ptr(),
                    rest.len() as u32,
                )
                .build()
                .user_data(ud(OP_SEND, slot))
            } else {
                recv(c, slot)
            });
        }
    }
}

fn recv(c: &mut UConn, slot: usize) -> io_uring::squeue::Entry {
    io_uring::opcode::Recv::new(
        io_uring::types::Fd(c.fd.as_raw_fd()),
        c.buf.as_mut_ptr(),
        c.buf.len() as u32,
    )
    .build()
    .user_data(ud(OP_RECV, slot))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ends_across_pieces() {
        let mut r = RequestEnds::default();
        assert_eq!(r.feed(b"GET / HTTP/1.1\r\nHost: a\r\n\r"), 0);
        assert_eq!(r.feed(b"\n"), 1);
        assert_eq!(r.feed(b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"), 2);
        // A stray CR inside the terminator restarts the match at it.
        assert_eq!(r.feed(b"a\r\n\r\r\n\r\n"), 1);
        assert_eq!(r.feed(b"\r\n"), 0);
        assert_eq!(r.feed(b"x\n\r\n"), 0);
    }

    /// Both floors answer two pipelined requests, then a third on the same
    /// connection, with the canned response each time.
    #[test]
    fn floors_answer_keep_alive_requests() {
        for floor in Floor::ALL {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            listener.set_nonblocking(true).unwrap();
            let addr = listener.local_addr().unwrap();
            let resp = response(100);
            let r2 = resp.clone();
            match floor {
                Floor::Epoll => {
                    let ep = nix::sys::epoll::Epoll::new(
                        nix::sys::epoll::EpollCreateFlags::EPOLL_CLOEXEC,
                    )
                    .unwrap();
                    std::thread::spawn(move || epoll_loop(ep, listener, &r2));
                }
                Floor::Uring => {
                    let Ok(ring) = io_uring::IoUring::new(64) else {
                        eprintln!("io_uring unavailable here: the uring floor is not tested");
                        continue;
                    };
                    std::thread::spawn(move || uring_loop(ring, listener, &r2));
                }
            }
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
                .unwrap();
            s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut got = vec![0u8; resp.len() * 2];
            s.read_exact(&mut got).unwrap();
            assert_eq!(got, [resp.clone(), resp.clone()].concat(), "{floor:?}");
            s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
            let mut one = vec![0u8; resp.len()];
            s.read_exact(&mut one).unwrap();
            assert_eq!(one, resp, "{floor:?}");
        }
    }
}
