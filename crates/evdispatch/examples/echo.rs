//! A TCP echo server on one [`Poller`], its mechanism named on the command
//! line.
//!
//! ```text
//! cargo run -p evdispatch --example echo -- --mechanism epoll-et --listen 127.0.0.1:7000
//! ```
//!
//! Options: `--mechanism M` (default `epoll`; `--help` lists
//! them), `--listen ADDR` (default `127.0.0.1:0`, any free port), and
//! `--connections N` to exit after serving N connections (default: serve
//! until killed). It prints `listening on ADDR` once it is ready.
//!
//! The loop is written for every mechanism at once: it reads and writes until
//! `WouldBlock`, as the edge-triggered ones require, and tolerates events that
//! find nothing to do, as the contract allows. Each client holds at most
//! 64 KiB not yet echoed, and a client the mechanism cannot watch is turned
//! away alone.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::fd::AsRawFd;

use evdispatch::{Event, Events, Interest, Mechanism, Poller, Token};

const LISTENER: Token = Token(0);

/// One client: its socket, the bytes read but not yet echoed, whether it has
/// sent its last byte, and the interest it is registered with.
struct Client {
    stream: TcpStream,
    pending: Vec<u8>,
    read_closed: bool,
    interest: Interest,
}

enum Next {
    Keep,
    Close,
}

/// The most bytes held for one client. A client that sends without reading
/// is not buffered without bound: once this much waits, its input is left in
/// the socket (TCP then slows the sender) until some of it is echoed.
const MAX_PENDING: usize = 64 * 1024;

impl Client {
    /// Read and echo in turns until neither can go on: reading stops at
    /// `WouldBlock` or EOF, or while [`MAX_PENDING`] bytes wait; writing at
    /// `WouldBlock`. Every event is a hint, so the kind does not matter.
    fn on_event(&mut self, _event: &Event) -> io::Result<Next> {
        let mut buf = [0u8; 16 * 1024];
        loop {
            // Whether reading stopped with input left in the socket because
            // the buffer was full (not at `WouldBlock` or EOF).
            let mut input_left = false;
            while !self.read_closed {
                let room = MAX_PENDING - self.pending.len();
                if room == 0 {
                    input_left = true;
                    break;
                }
                let want = room.min(buf.len());
                match self.stream.read(&mut buf[..want]) {
                    Ok(0) => self.read_closed = true,
                    Ok(n) => self.pending.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            while !self.pending.is_empty() {
                match self.stream.write(&self.pending) {
                    Ok(n) => {
                        self.pending.drain(..n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            // Writing made room for input left unread: read on. Otherwise
            // the socket said `WouldBlock` (a later event resumes) or EOF.
            if !(input_left && self.pending.len() < MAX_PENDING) {
                break;
            }
        }
        Ok(if self.read_closed && self.pending.is_empty() {
            Next::Close
        } else {
            Next::Keep
        })
    }

    /// What to watch next: input until EOF or while the buffer is full,
    /// output while some is pending (a level-triggered mechanism would
    /// otherwise report unread input at every wait).
    fn wanted(&self) -> Interest {
        let full = self.pending.len() >= MAX_PENDING;
        match (self.read_closed || full, self.pending.is_empty()) {
            (false, true) => Interest::READABLE,
            (false, false) => Interest::BOTH,
            (true, _) => Interest::WRITABLE,
        }
    }
}

struct Options {
    mechanism: Mechanism,
    listen: String,
    connections: Option<u64>,
}

fn parse_options() -> Result<Options, String> {
    let mut o = Options {
        mechanism: Mechanism::Epoll,
        listen: "127.0.0.1:0".into(),
        connections: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        if flag == "-h" || flag == "--help" {
            println!("usage: echo [--mechanism M] [--listen ADDR] [--connections N]");
            println!("mechanisms: {}", Mechanism::names());
            std::process::exit(0);
        }
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value (see --help)"))?;
        match flag.as_str() {
            "--mechanism" => o.mechanism = value.parse().map_err(|e| format!("{e}"))?,
            "--listen" => o.listen = value,
            "--connections" => {
                let n = value
                    .parse()
                    .map_err(|_| format!("--connections: '{value}' is not a whole number"))?;
                o.connections = Some(n);
            }
            _ => return Err(format!("unknown option '{flag}' (see --help)")),
        }
    }
    Ok(o)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let o = parse_options()?;
    let listener = TcpListener::bind(&o.listen)?;
    listener.set_nonblocking(true)?;
    let mut poller = Poller::new(o.mechanism)?;
    poller.register(listener.as_raw_fd(), LISTENER, Interest::READABLE)?;
    println!("listening on {}", listener.local_addr()?);
    io::stdout().flush()?;

    let mut clients: HashMap<Token, Client> = HashMap::new();
    let mut next_token = 1;
    let mut served = 0u64;
    let mut events = Events::with_capacity(256);
    while o.connections != Some(served) {
        poller.wait(&mut events, None)?;
        for event in &events {
            if event.token() == LISTENER {
                // Accept until WouldBlock: an edge is reported once.
                loop {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            stream.set_nonblocking(true)?;
                            let token = Token(next_token);
                            next_token += 1;
                            // One client the mechanism cannot watch (select:
                            // fd 1024 and above) is turned away, not the server.
                            let fd = stream.as_raw_fd();
                            if let Err(e) = poller.register(fd, token, Interest::READABLE) {
                                eprintln!("{token:?}: {e}; closing");
                                continue;
                            }
                            let interest = Interest::READABLE;
                            let client = Client {
                                stream,
                                pending: Vec::new(),
                                read_closed: false,
                                interest,
                            };
                            clients.insert(token, client);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        // A client gone before we took it (ECONNABORTED): next.
                        Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                continue;
            }
            // An event for a client closed earlier in this batch: a hint, skip.
            let Some(client) = clients.get_mut(&event.token()) else {
                continue;
            };
            let next = client.on_event(event).unwrap_or_else(|e| {
                eprintln!("{:?}: {e}; closing", event.token());
                Next::Close
            });
            match next {
                Next::Close => {
                    let client = clients.remove(&event.token()).expect("looked up above");
                    poller.deregister(client.stream.as_raw_fd())?;
                    served += 1;
                }
                Next::Keep => {
                    let wanted = client.wanted();
                    if wanted != client.interest {
                        poller.modify(client.stream.as_raw_fd(), event.token(), wanted)?;
                        client.interest = wanted;
                    }
                }
            }
        }
    }
    println!("served {served} connections");
    Ok(())
}
