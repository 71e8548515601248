//! One connection lifecycle for every model: what an accept error means,
//! pausing and resuming accepts (descriptor exhaustion, the connection cap),
//! what an expired timer does to a connection, lingering close, and the
//! graceful stop. The readiness loop, the io_uring completion loop and the
//! thread pool each keep only what their mechanism makes different (how a
//! listener is watched, how a read is issued); the decisions and their
//! constants are here, once. Each loop arms the deadlines itself, when its
//! connection changes phase (`models/readiness.rs` and
//! `models/completion.rs` in the timer wheel, `models/threads.rs` as socket
//! timeouts), with the durations and the verdicts taken from here.
//!
//! The constants:
//!
//! * [`ACCEPT_RETRY`] (100 ms): how long accepting stays paused after
//!   `EMFILE`/`ENFILE`/`ENOBUFS`/`ENOMEM` or at the connection cap before it
//!   is tried again (a closing connection resumes it sooner).
//! * [`LINGER`] (2 s): how long a connection closed with input possibly
//!   unread keeps reading (and dropping) what the client still sends after
//!   the server's half-close, so that its last response is not destroyed by
//!   a reset. Two seconds for every model, Apache httpd's lingering close
//!   (`SECONDS_TO_LINGER`), as one deadline over the whole linger: a
//!   shorter wait per read would cut off a client a little slower than
//!   that, and a wait per read with no overall bound would let one that
//!   trickles bytes hold a pool thread without end. A lingering connection
//!   costs an event loop nothing while it waits, and a pool thread is
//!   released as soon as the client closes.
//! * [`LINGER_MAX_BYTES`] (1 MiB): the most a lingering close reads.
//! * [`STOP_GRACE`] (3 s): how long a stopping server lets busy connections
//!   finish; idle ones are closed at once.
//!
//! # Timeouts
//!
//! `--header-timeout` runs from accept for the first request (over TLS,
//! for the handshake and the first request's head together; a handshake
//! not complete by then is counted as a TLS handshake timeout) and
//! from its first byte for later ones (for one whose bytes came while the
//! answers before it were being sent, from the end of those answers, in
//! every model); `--idle-timeout` between requests on a
//! keep-alive connection, and while a client does not read its response. In
//! the readiness and io_uring models a timer wheel holds them and a wait
//! sleeps until the next deadline; the `threads` model sets them as the
//! sockets' read and write timeouts (the header timeout as what is left of
//! it at each read: a deadline there too, however the bytes trickle in; a
//! read timeout up to 50 ms shorter than that is kept, and a read woken
//! early waits again, so a head in several pieces costs one `setsockopt`).

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::conn::stats::Counters;
use crate::semantics::status::Status;

/// Accepting stays paused this long after descriptor exhaustion or at the
/// connection cap before a retry.
pub const ACCEPT_RETRY: Duration = Duration::from_millis(100);
/// How long a lingering close reads what the client still sends.
pub const LINGER: Duration = Duration::from_secs(2);
/// The most a lingering close reads before giving up on the client: as
/// much as the largest body a request may announce, so that a body the
/// server did not read is drained whole.
pub const LINGER_MAX_BYTES: usize = crate::semantics::request::MAX_BODY as usize;
/// How long a stopping server lets busy connections finish.
pub const STOP_GRACE: Duration = Duration::from_secs(3);

/// What an `accept` that failed with an errno asks of the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AcceptFailure {
    /// `EAGAIN`: the queue is empty.
    Empty,
    /// `EINTR`: call again.
    Again,
    /// The connection died in the queue (`ECONNABORTED`, `EPROTO`, `EPERM`):
    /// take the next one.
    Next,
    /// Out of descriptors or memory: pause accepting for [`ACCEPT_RETRY`].
    Pause,
    /// Anything else: stop accepting for this turn.
    GiveUp,
}

/// Classify an accept errno, counting it (but `EAGAIN`, `EINTR` and
/// `ECANCELED`, which are no errors) in `counters`.
pub(crate) fn accept_failure(errno: i32, counters: &mut Counters) -> AcceptFailure {
    match errno {
        libc::EAGAIN => AcceptFailure::Empty,
        libc::EINTR | libc::ECANCELED => AcceptFailure::Again,
        _ => {
            counters.accept_error(errno);
            match errno {
                libc::ECONNABORTED | libc::EPROTO | libc::EPERM => AcceptFailure::Next,
                libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM => AcceptFailure::Pause,
                _ => AcceptFailure::GiveUp,
            }
        }
    }
}

/// A worker's accept pause and stop: when accepting resumes, and when a
/// stopping worker gives up on its busy connections.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    resume_at: Option<Instant>,
    stopping: Option<Instant>,
}

impl Gate {
    /// Pause accepting until [`ACCEPT_RETRY`] from `now` (or a close);
    /// a new pause is counted in `counters`.
    pub(crate) fn pause(&mut self, now: Instant, counters: &mut Counters) {
        if self.resume_at.is_none() {
            counters.accept_pauses += 1;
        }
        self.resume_at = Some(now + ACCEPT_RETRY);
    }

    /// Accepting is paused.
    pub(crate) fn paused(&self) -> bool {
        self.resume_at.is_some()
    }

    /// The pause is over by the clock (and the worker is not stopping).
    pub(crate) fn resume_due(&self, now: Instant) -> bool {
        self.stopping.is_none() && self.resume_at.is_some_and(|t| now >= t)
    }

    /// Accepting resumed.
    pub(crate) fn resumed(&mut self) {
        self.resume_at = None;
    }

    /// Still unable to accept: look again [`ACCEPT_RETRY`] from `now`
    /// rather than at every wait (a deadline left in the past would make
    /// every wait return at once).
    pub(crate) fn retry_later(&mut self, now: Instant) {
        self.resume_at = Some(now + ACCEPT_RETRY);
    }

    /// Begin the graceful stop at `now`: no more accepting; returns the
    /// deadline of the busy connections.
    pub(crate) fn begin_stop(&mut self, now: Instant) -> Instant {
        let deadline = now + STOP_GRACE;
        self.stopping = Some(deadline);
        self.resume_at = None;
        deadline
    }

    /// The worker is stopping.
    pub(crate) fn stopping(&self) -> bool {
        self.stopping.is_some()
    }

    /// A stopping worker is done: nothing open, or the grace is over.
    pub(crate) fn finished(&self, open: usize, now: Instant) -> bool {
        self.stopping.is_some_and(|d| open == 0 || now >= d)
    }

    /// How long the next wait may sleep: until the timer wheel's next
    /// deadline (`wheel`), the end of an accept pause, or the stop deadline.
    pub(crate) fn wait_timeout(&self, wheel: Option<Duration>, now: Instant) -> Option<Duration> {
        let mut t = wheel;
        for d in [self.resume_at, self.stopping].into_iter().flatten() {
            let d = d.saturating_duration_since(now);
            t = Some(t.map_or(d, |x| x.min(d)));
        }
        t
    }

    /// How long a connection may sit idle after a response: the idle
    /// timeout, or nothing once stopping (it is closed at the next turn).
    pub(crate) fn keepalive(&self, idle_timeout: Duration) -> Duration {
        if self.stopping.is_some() {
            Duration::ZERO
        } else {
            idle_timeout
        }
    }
}

/// Where a connection stood when its timer expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// In the TLS handshake (its deadline is the first request's header
    /// deadline: `--header-timeout` from the accept); `hello`: the client
    /// has sent something (a ClientHello began).
    Handshake {
        /// The client has sent at least a byte.
        hello: bool,
    },
    /// Lingering after the half-close.
    Lingering,
    /// A response being written that the client does not read.
    Sending,
    /// Receiving a request's head; `some_input`: part of it has arrived.
    Request {
        /// Part of a request has arrived.
        some_input: bool,
    },
    /// Idle between requests.
    Idle,
}

/// What to do with a connection whose timer expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expiry {
    /// Close it.
    Close,
    /// Answer 408 (already counted), then close it with a lingering close:
    /// part of a request arrived, so say why we hang up.
    RequestTimeout,
}

impl Expiry {
    /// The status of the answer [`Expiry::RequestTimeout`] sends.
    pub(crate) const STATUS: Status = Status::RequestTimeout;
}

/// The expiry of a connection's timer in `phase`, counted in `counters`
/// (timeouts met while stopping are the stop's doing, not counted as such).
pub(crate) fn expire(phase: Phase, stopping: bool, counters: &mut Counters) -> Expiry {
    match phase {
        Phase::Handshake { hello } => {
            match (stopping, hello) {
                (true, _) => {}
                (false, true) => counters.tls.failed_timeout += 1,
                (false, false) => counters.tls.failed_silent += 1,
            }
            Expiry::Close
        }
        Phase::Lingering => Expiry::Close,
        Phase::Sending => {
            counters.write_timed_out += 1;
            Expiry::Close
        }
        Phase::Request { some_input } => {
            if !stopping {
                counters.header_timed_out += 1;
            }
            if some_input {
                counters.response(Expiry::STATUS);
                Expiry::RequestTimeout
            } else {
                Expiry::Close
            }
        }
        Phase::Idle => {
            if !stopping {
                counters.idle_timed_out += 1;
            }
            Expiry::Close
        }
    }
}

/// A connection about to close after its last response lingers when the
/// close follows an error (`after_error`) or input may still be unread
/// (`unread`): closing a socket with unread input sends a reset that can
/// destroy the response in flight.
pub(crate) fn must_linger(after_error: bool, unread: bool) -> bool {
    after_error || unread
}

/// How much a lingering close has read, and until when it may go on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Linger {
    deadline: Instant,
    read: usize,
}

impl Linger {
    /// A lingering close beginning at `now`.
    pub(crate) fn begin(now: Instant) -> Linger {
        Linger {
            deadline: now + LINGER,
            read: 0,
        }
    }

    /// The deadline of the lingering close (the event loops set their timer
    /// wheel to it).
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// `n` more bytes were read and dropped; false once enough patience has
    /// been spent on this client ([`LINGER_MAX_BYTES`]).
    pub(crate) fn more(&mut self, n: usize) -> bool {
        self.read += n;
        self.read <= LINGER_MAX_BYTES
    }
}

/// The blocking lingering close (thread pool): half-close, then read and
/// drop what the client still sends until it closes, [`LINGER`] passes or
/// [`LINGER_MAX_BYTES`] are read.
pub(crate) fn linger_blocking(mut stream: &TcpStream, buf: &mut [u8]) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut l = Linger::begin(Instant::now());
    loop {
        let left = l.deadline().saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return;
        }
        match stream.read(buf) {
            Ok(0) => return,
            Ok(n) if l.more(n) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            _ => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_errors_are_classified_and_counted() {
        let mut c = Counters::default();
        assert_eq!(accept_failure(libc::EAGAIN, &mut c), AcceptFailure::Empty);
        assert_eq!(accept_failure(libc::EINTR, &mut c), AcceptFailure::Again);
        assert_eq!(
            accept_failure(libc::ECONNABORTED, &mut c),
            AcceptFailure::Next
        );
        assert_eq!(accept_failure(libc::EMFILE, &mut c), AcceptFailure::Pause);
        assert_eq!(accept_failure(libc::ENFILE, &mut c), AcceptFailure::Pause);
        assert_eq!(accept_failure(libc::EBADF, &mut c), AcceptFailure::GiveUp);
        let counted: u64 = c.accept_errors.iter().map(|&(_, n)| n).sum();
        assert_eq!(counted, 4, "{:?}", c.accept_errors);
        assert!(c.accept_errors.iter().all(|&(e, _)| e != libc::EAGAIN));
    }

    #[test]
    fn gate_pauses_resumes_and_stops() {
        let mut g = Gate::default();
        let mut c = Counters::default();
        let t0 = Instant::now();
        assert_eq!(g.wait_timeout(None, t0), None);
        g.pause(t0, &mut c);
        g.pause(t0, &mut c);
        assert_eq!(c.accept_pauses, 1, "one pause, however often asked");
        assert!(g.paused() && !g.resume_due(t0));
        assert_eq!(g.wait_timeout(None, t0), Some(ACCEPT_RETRY));
        assert_eq!(
            g.wait_timeout(Some(Duration::from_millis(5)), t0),
            Some(Duration::from_millis(5))
        );
        assert!(g.resume_due(t0 + ACCEPT_RETRY));
        g.resumed();
        assert!(!g.paused());
        assert_eq!(
            g.keepalive(Duration::from_secs(60)),
            Duration::from_secs(60)
        );
        g.pause(t0, &mut c);
        let d = g.begin_stop(t0);
        assert_eq!(d, t0 + STOP_GRACE);
        assert!(!g.paused(), "stopping ends the pause: no more accepting");
        assert!(!g.resume_due(t0 + STOP_GRACE));
        assert_eq!(g.keepalive(Duration::from_secs(60)), Duration::ZERO);
        assert!(!g.finished(1, t0));
        assert!(g.finished(0, t0));
        assert!(g.finished(1, d));
    }

    #[test]
    fn expiries_count_what_they_close() {
        let mut c = Counters::default();
        assert_eq!(expire(Phase::Lingering, false, &mut c), Expiry::Close);
        assert_eq!(expire(Phase::Sending, false, &mut c), Expiry::Close);
        assert_eq!(c.write_timed_out, 1);
        let partial = Phase::Request { some_input: true };
        assert_eq!(expire(partial, false, &mut c), Expiry::RequestTimeout);
        assert_eq!(c.header_timed_out, 1);
        assert_eq!(c.total_requests(), 1, "the 408 is counted");
        let silent = Phase::Request { some_input: false };
        assert_eq!(expire(silent, true, &mut c), Expiry::Close);
        assert_eq!(c.header_timed_out, 1, "stopping: not a timeout");
        assert_eq!(expire(Phase::Idle, false, &mut c), Expiry::Close);
        assert_eq!(expire(Phase::Idle, true, &mut c), Expiry::Close);
        assert_eq!(c.idle_timed_out, 1);
        let silent = Phase::Handshake { hello: false };
        let begun = Phase::Handshake { hello: true };
        assert_eq!(expire(silent, false, &mut c), Expiry::Close);
        assert_eq!(expire(begun, false, &mut c), Expiry::Close);
        assert_eq!(expire(begun, false, &mut c), Expiry::Close);
        assert_eq!(expire(begun, true, &mut c), Expiry::Close);
        assert_eq!(c.tls.failed_silent, 1);
        assert_eq!(c.tls.failed_timeout, 2);
        assert_eq!(c.header_timed_out, 1, "a handshake is not a header");
    }

    #[test]
    fn linger_reads_a_bounded_amount() {
        let mut l = Linger::begin(Instant::now());
        assert!(l.more(LINGER_MAX_BYTES));
        assert!(!l.more(1));
        assert!(must_linger(true, false) && must_linger(false, true));
        assert!(!must_linger(false, false));
    }

    /// The blocking linger returns as soon as the client closes, having
    /// read what it sent after the half-close.
    #[test]
    fn blocking_linger_ends_at_the_clients_close() {
        use std::io::Write;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (server, _) = l.accept().unwrap();
        client.write_all(b"more input").unwrap();
        let t = std::thread::spawn(move || {
            let mut buf = [0u8; 4];
            linger_blocking(&server, &mut buf);
        });
        // The server's half-close reaches the client as EOF.
        let mut rest = Vec::new();
        client.read_to_end(&mut rest).unwrap();
        assert!(rest.is_empty());
        drop(client);
        t.join().unwrap();
    }
}
