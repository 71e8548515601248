//! Sending one attack on a raw socket and observing what comes back: the
//! statuses of the responses, whether the connection was closed or kept,
//! and whether the secret beside the root ever appeared.

use std::io::ErrorKind::{Interrupted, TimedOut, WouldBlock};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::corpus::{runs_text, After, Attack, Mode};
use crate::site::SECRET;

/// What happened to the connection after the expected responses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "detail")]
pub enum Outcome {
    /// The server closed it (EOF or reset) and sent nothing more.
    Closed,
    /// A follow-up request on it was answered 200.
    KeptAlive,
    /// A follow-up request was answered with another status.
    FollowUp(u16),
    /// Still open, with nothing more sent, when it should have been closed.
    Open,
    /// More came than expected: the status of the first extra response.
    Extra(u16),
    /// Fewer responses than expected arrived before the server closed or
    /// the wait ran out.
    Missing,
}

impl Outcome {
    /// Short text for tables.
    pub fn text(&self) -> String {
        match self {
            Outcome::Closed => "closed".into(),
            Outcome::KeptAlive => "kept alive".into(),
            Outcome::FollowUp(s) => format!("follow-up got {s}"),
            Outcome::Open => "left open".into(),
            Outcome::Extra(s) => format!("extra response {s}"),
            Outcome::Missing => "responses missing".into(),
        }
    }
}

/// What one attack got from one server.
#[derive(Debug, Clone, Serialize)]
pub struct Observed {
    /// Status of each response in order (0: bytes that are not an HTTP
    /// response, e.g. an HTTP/0.9 answer).
    pub statuses: Vec<u16>,
    /// What the connection did next.
    pub outcome: Outcome,
    /// The secret appeared in what the server sent.
    pub leaked: bool,
    /// Wall-clock time of the exchange, seconds.
    pub seconds: f64,
}

impl Observed {
    /// The statuses as text, runs collapsed: `200×2000, 400`.
    pub fn statuses_text(&self) -> String {
        runs_text(&self.statuses, |&s| match s {
            0 => "non-HTTP".into(),
            s => s.to_string(),
        })
    }
}

/// Timing limits of a probe.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest wait for any one read.
    pub read: Duration,
    /// How long a connection that should close may stay open.
    pub close_wait: Duration,
    /// How long a never-reading client keeps writing before it concludes
    /// the server will not drop it.
    pub no_read: Duration,
}

impl Limits {
    /// Limits suited to a server whose idle timeout is `idle`.
    pub fn for_idle_timeout(idle: Duration) -> Limits {
        Limits {
            read: Duration::from_secs(10),
            close_wait: Duration::from_secs(3),
            no_read: idle + Duration::from_secs(6),
        }
    }
}

/// Judge an observation against the attack's expectation: `Err` says what
/// was wrong.
pub fn judge(a: &Attack, o: &Observed) -> Result<(), String> {
    if o.leaked {
        return Err("the secret outside the root was served".into());
    }
    if o.statuses.len() != a.responses.len()
        || o.statuses
            .iter()
            .zip(&a.responses)
            .any(|(s, ok)| !ok.contains(s))
    {
        return Err(format!(
            "answered {} where {} was expected",
            o.statuses_text(),
            a.expected_text()
        ));
    }
    let want = match a.after {
        After::Close => Outcome::Closed,
        After::KeepAlive => Outcome::KeptAlive,
    };
    if o.outcome != want {
        return Err(format!(
            "connection {} where {} was expected",
            o.outcome.text(),
            want.text()
        ));
    }
    Ok(())
}

/// Send `a` to `addr` on a fresh connection and observe.
pub fn send(addr: SocketAddr, a: &Attack, limits: Limits) -> std::io::Result<Observed> {
    let t0 = Instant::now();
    let s = TcpStream::connect(addr)?;
    s.set_nodelay(true)?;
    if a.mode == Mode::NoRead {
        return Ok(no_read(s, a, limits, t0));
    }
    s.set_read_timeout(Some(limits.read))?;
    let mut reader = Reader::new(s.try_clone()?);
    let writer = {
        let mut w = s.try_clone()?;
        let raw = a.raw.clone();
        let half = a.mode == Mode::HalfClose;
        std::thread::spawn(move || {
            // The server may close early (a refused request): errors here
            // are part of the observation, read from the other side.
            let _ = w.write_all(&raw);
            if half {
                let _ = w.shutdown(Shutdown::Write);
            }
        })
    };
    let statuses: Vec<u16> = std::iter::from_fn(|| reader.response(a.head))
        .take(a.responses.len())
        .collect();
    let _ = writer.join();
    let outcome = if statuses.len() < a.responses.len() {
        Outcome::Missing
    } else {
        match a.after {
            After::Close => {
                let _ = s.set_read_timeout(Some(limits.close_wait));
                match reader.response(false) {
                    Some(st) => Outcome::Extra(st),
                    None if reader.timed_out => Outcome::Open,
                    None => Outcome::Closed,
                }
            }
            After::KeepAlive => {
                let mut w = &s;
                if w.write_all(b"GET /index.html HTTP/1.1\r\nHost: t\r\n\r\n")
                    .is_err()
                {
                    Outcome::Closed
                } else {
                    match reader.response(false) {
                        Some(200) => Outcome::KeptAlive,
                        Some(st) => Outcome::FollowUp(st),
                        None => Outcome::Closed,
                    }
                }
            }
        }
    };
    Ok(Observed {
        statuses,
        outcome,
        leaked: reader.leaked(),
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Write without ever reading until the server drops the connection (a
/// write fails) or `limits.no_read` passes.
fn no_read(mut s: TcpStream, a: &Attack, limits: Limits, t0: Instant) -> Observed {
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    let mut off = 0;
    let outcome = loop {
        if t0.elapsed() > limits.no_read {
            break Outcome::Open;
        }
        // Once everything is written, keep poking with one byte so a close
        // by the server shows up as a failed write.
        let chunk: &[u8] = if off < a.raw.len() {
            &a.raw[off..(off + 65536).min(a.raw.len())]
        } else {
            std::thread::sleep(Duration::from_millis(100));
            b"\r\n"
        };
        match s.write(chunk) {
            Ok(n) => off = (off + n).min(a.raw.len()),
            Err(e) if matches!(e.kind(), WouldBlock | TimedOut | Interrupted) => {}
            Err(_) => break Outcome::Closed,
        }
    };
    Observed {
        statuses: Vec::new(),
        outcome,
        leaked: false,
        seconds: t0.elapsed().as_secs_f64(),
    }
}

/// Reads responses one at a time, keeping what follows.
struct Reader {
    s: TcpStream,
    buf: Vec<u8>,
    /// Everything received, for the leak check (capped).
    seen_secret: bool,
    eof: bool,
    timed_out: bool,
}

impl Reader {
    fn new(s: TcpStream) -> Reader {
        Reader {
            s,
            buf: Vec::new(),
            seen_secret: false,
            eof: false,
            timed_out: false,
        }
    }

    fn leaked(&self) -> bool {
        self.seen_secret || contains(&self.buf, SECRET.as_bytes())
    }

    /// Read more; false at EOF, reset or timeout.
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let mut tmp = [0u8; 65536];
        loop {
            match self.s.read(&mut tmp) {
                Ok(0) => {
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    // Keep the secret check exact across reads: check the
                    // tail of the old buffer with the new bytes.
                    let keep = self.buf.len().min(SECRET.len());
                    let mut window = self.buf[self.buf.len() - keep..].to_vec();
                    window.extend_from_slice(&tmp[..n]);
                    self.seen_secret |= contains(&window, SECRET.as_bytes());
                    self.buf.extend_from_slice(&tmp[..n]);
                    return true;
                }
                Err(e) if e.kind() == Interrupted => continue,
                Err(e) if matches!(e.kind(), WouldBlock | TimedOut) => {
                    self.timed_out = true;
                    return false;
                }
                Err(_) => {
                    self.eof = true;
                    return false;
                }
            }
        }
    }

    /// Read and drop everything until the connection ends.
    fn drain_to_close(&mut self) {
        while self.fill() {}
        self.buf.clear();
    }

    /// The status of the next response (its body consumed), or `None` when
    /// the connection ended (or the wait ran out) before a whole one.
    fn response(&mut self, head: bool) -> Option<u16> {
        self.timed_out = false;
        loop {
            if !self.buf.is_empty() {
                let mut hs = [httparse::EMPTY_HEADER; 64];
                let mut r = httparse::Response::new(&mut hs);
                match r.parse(&self.buf) {
                    Ok(httparse::Status::Complete(n)) => {
                        let status = r.code.unwrap_or(0);
                        let mut len = None;
                        let mut chunked = false;
                        for h in r.headers.iter() {
                            if h.name.eq_ignore_ascii_case("content-length") {
                                len = std::str::from_utf8(h.value)
                                    .ok()
                                    .and_then(|v| v.trim().parse::<usize>().ok());
                            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                                chunked = true;
                            }
                        }
                        if head || status == 304 || status < 200 {
                            self.buf.drain(..n);
                        } else if chunked {
                            // Only error pages would be chunked: consume to
                            // the last chunk.
                            while !contains(&self.buf[n..], b"\r\n0\r\n\r\n")
                                && !self.buf[n..].starts_with(b"0\r\n\r\n")
                                && self.fill()
                            {}
                            let end = find(&self.buf[n..], b"0\r\n\r\n")
                                .map_or(self.buf.len(), |p| n + p + 5);
                            self.buf.drain(..end);
                        } else if let Some(len) = len {
                            // All of it, or what came before the close.
                            while self.buf.len() < n + len && self.fill() {}
                            self.buf.drain(..(n + len).min(self.buf.len()));
                        } else {
                            self.drain_to_close(); // delimited by the close
                        }
                        return Some(status);
                    }
                    Ok(httparse::Status::Partial) => {}
                    Err(_) => {
                        // Not an HTTP response (an HTTP/0.9 body, garbage):
                        // it runs to the close.
                        self.drain_to_close();
                        return Some(0);
                    }
                }
            }
            if !self.fill() {
                if !self.buf.is_empty() && !self.timed_out {
                    // Bytes that never became a response, then the close.
                    self.buf.clear();
                    return Some(0);
                }
                return None;
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    find(hay, needle).is_some()
}
