//! Tokens, interests and the events a wait returns.

use std::fmt;
use std::ops::BitOr;

/// The caller's name for a registration, handed back in every [`Event`] for it.
///
/// Tokens are opaque to the poller; a server typically uses an index into its
/// connection slab. Two registrations may share a token (the poller does not
/// care), but then the caller cannot tell their events apart. The one token
/// a registration may not take is the [`Waker`](crate::Waker)'s.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Token(pub usize);

/// What a registration wants to hear about: readability, writability or both.
///
/// An interest is never empty. `EXCLUSIVE` is a modifier for listening sockets
/// shared by several pollers: where the mechanism supports it
/// ([`MechanismInfo::exclusive`](crate::MechanismInfo::exclusive), `EPOLLEXCLUSIVE`
/// on epoll) only one of the waiting pollers is woken per readiness change;
/// elsewhere it is ignored. It can only be given at `register`, not `modify`.
/// The signal mechanisms cannot share a descriptor among pollers at all:
/// its signal goes to one owner thread, the last to register it (see
/// [`Mechanism::RtSig`](crate::Mechanism::RtSig)).
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Interest(u8);

const R: u8 = 0b001;
const W: u8 = 0b010;
const X: u8 = 0b100;

impl Interest {
    /// Readable: data, a pending connection, EOF or an error can be read.
    pub const READABLE: Interest = Interest(R);
    /// Writable: a write would not block (or would fail at once).
    pub const WRITABLE: Interest = Interest(W);
    /// Both readable and writable.
    pub const BOTH: Interest = Interest(R | W);

    /// The same interest with the `EXCLUSIVE` wake-one modifier set.
    pub const fn exclusive(self) -> Interest {
        Interest(self.0 | X)
    }

    /// True when readability is wanted.
    pub const fn is_readable(self) -> bool {
        self.0 & R != 0
    }

    /// True when writability is wanted.
    pub const fn is_writable(self) -> bool {
        self.0 & W != 0
    }

    /// True when the wake-one modifier is set.
    pub const fn is_exclusive(self) -> bool {
        self.0 & X != 0
    }

    /// The same interest without the modifier.
    pub const fn without_exclusive(self) -> Interest {
        Interest(self.0 & !X)
    }

    /// The interest as the `poll(2)` event bits it asks for.
    pub const fn as_poll_events(self) -> libc::c_short {
        let mut bits = 0;
        if self.is_readable() {
            bits |= libc::POLLIN | libc::POLLRDHUP;
        }
        if self.is_writable() {
            bits |= libc::POLLOUT;
        }
        bits
    }
}

impl BitOr for Interest {
    type Output = Interest;
    fn bitor(self, rhs: Interest) -> Interest {
        Interest(self.0 | rhs.0)
    }
}

impl fmt::Debug for Interest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if self.is_readable() {
            parts.push("READABLE");
        }
        if self.is_writable() {
            parts.push("WRITABLE");
        }
        if self.is_exclusive() {
            parts.push("EXCLUSIVE");
        }
        f.write_str(&parts.join(" | "))
    }
}

/// Readiness bits carried by an [`Event`].
///
/// Mechanisms translate their native flags (`POLLIN`, `EPOLLRDHUP`, an RT
/// signal's `si_band`, an io_uring poll result) into these bits. They are
/// public so that code outside the crate (benchmarks, tests of a custom
/// source) can build events too.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Default)]
pub struct Ready(u8);

impl Ready {
    /// A read would not block: data, a connection to accept, EOF or an error.
    pub const READABLE: Ready = Ready(1);
    /// A write would not block.
    pub const WRITABLE: Ready = Ready(2);
    /// The peer has shut down its writing side (EOF follows any data).
    pub const READ_CLOSED: Ready = Ready(4);
    /// Writing is no longer possible (the connection is down).
    pub const WRITE_CLOSED: Ready = Ready(8);
    /// An error is pending on the descriptor (`SO_ERROR`).
    pub const ERROR: Ready = Ready(16);
    /// Urgent (priority) data is available.
    pub const PRIORITY: Ready = Ready(32);
    /// No bits.
    pub const EMPTY: Ready = Ready(0);

    /// True when every bit of `other` is set.
    pub const fn contains(self, other: Ready) -> bool {
        self.0 & other.0 == other.0
    }

    /// True when no bit is set.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The union of two sets of bits.
    pub const fn union(self, other: Ready) -> Ready {
        Ready(self.0 | other.0)
    }

    /// Only the bits a registration with `interest` should see: readable-side
    /// bits need read interest, writable-side bits need write interest, and
    /// errors are always kept.
    pub const fn filter(self, interest: Interest) -> Ready {
        let mut keep = Ready::ERROR.0;
        if interest.is_readable() {
            keep |= Ready::READABLE.0 | Ready::READ_CLOSED.0 | Ready::PRIORITY.0;
        }
        if interest.is_writable() {
            keep |= Ready::WRITABLE.0 | Ready::WRITE_CLOSED.0;
        }
        Ready(self.0 & keep)
    }

    /// Translate `poll(2)`/`epoll(7)`-style bits (the values agree for the
    /// bits used here: `POLLIN == EPOLLIN`, and so on).
    ///
    /// A hang-up or error makes the descriptor both readable and writable, as
    /// a read or write would then return at once (with EOF or the error).
    pub const fn from_poll_bits(bits: u32) -> Ready {
        let inb = libc::POLLIN as u32;
        let pri = libc::POLLPRI as u32;
        let out = libc::POLLOUT as u32;
        let err = libc::POLLERR as u32;
        let hup = libc::POLLHUP as u32;
        let rdhup = libc::POLLRDHUP as u32;
        // One set-if-any per output bit (compiles to branch-free code).
        Ready(
            set_if(bits, inb | pri | err | hup | rdhup, Ready::READABLE)
                | set_if(bits, out | err | hup, Ready::WRITABLE)
                | set_if(bits, hup | rdhup, Ready::READ_CLOSED)
                | set_if(bits, hup, Ready::WRITE_CLOSED)
                | set_if(bits, err, Ready::ERROR)
                | set_if(bits, pri, Ready::PRIORITY),
        )
    }
}

/// `out`'s bits when any bit of `mask` is in `bits`, else none.
#[inline(always)]
const fn set_if(bits: u32, mask: u32, out: Ready) -> u8 {
    ((bits & mask != 0) as u8) * out.0
}

impl BitOr for Ready {
    type Output = Ready;
    fn bitor(self, rhs: Ready) -> Ready {
        self.union(rhs)
    }
}

impl fmt::Debug for Ready {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(Ready, &str); 6] = [
            (Ready::READABLE, "READABLE"),
            (Ready::WRITABLE, "WRITABLE"),
            (Ready::READ_CLOSED, "READ_CLOSED"),
            (Ready::WRITE_CLOSED, "WRITE_CLOSED"),
            (Ready::ERROR, "ERROR"),
            (Ready::PRIORITY, "PRIORITY"),
        ];
        let parts: Vec<&str> = NAMES
            .iter()
            .filter(|(bit, _)| self.contains(*bit))
            .map(|(_, name)| *name)
            .collect();
        if parts.is_empty() {
            f.write_str("EMPTY")
        } else {
            f.write_str(&parts.join(" | "))
        }
    }
}

/// One readiness report: which registration, and what it may now do.
///
/// Events are hints (see the crate docs): act until `EAGAIN`, and expect the
/// occasional event that finds nothing to do.
///
/// Which bits come is the mechanism's: epoll passes the kernel's on
/// unfiltered (a registration for reading alone may see `WRITABLE` and
/// `WRITE_CLOSED` on a hang-up); poll, io_uring and the signal mechanisms
/// keep those of the interest, with closes and errors; select knows only
/// readable and writable, never `READ_CLOSED` or `ERROR` (the `read` that
/// returns 0 or fails tells). The signal mechanisms see a hang-up (a peer's
/// close of a Unix socket, a FIN after our own shutdown) as `READ_CLOSED`,
/// but a TCP peer's FIN alone, and a pipe's writer closing, only as
/// `READABLE`: the kernel signals those as incoming data. Portable code acts on
/// [`is_readable`](Event::is_readable) and [`is_writable`](Event::is_writable)
/// and takes the other bits as hints.
#[derive(Copy, Clone, PartialEq, Eq, Hash)]
pub struct Event {
    token: Token,
    ready: Ready,
}

impl Event {
    /// An event for `token` with readiness `ready`.
    pub const fn new(token: Token, ready: Ready) -> Event {
        Event { token, ready }
    }

    /// The token given at registration.
    pub const fn token(&self) -> Token {
        self.token
    }

    /// The readiness bits.
    pub const fn ready(&self) -> Ready {
        self.ready
    }

    /// A read would not block (data, EOF, a connection or an error).
    pub const fn is_readable(&self) -> bool {
        self.ready.contains(Ready::READABLE)
    }

    /// A write would not block.
    pub const fn is_writable(&self) -> bool {
        self.ready.contains(Ready::WRITABLE)
    }

    /// The peer closed its writing side (or the connection hung up).
    pub const fn is_read_closed(&self) -> bool {
        self.ready.contains(Ready::READ_CLOSED)
    }

    /// Writing is no longer possible.
    pub const fn is_write_closed(&self) -> bool {
        self.ready.contains(Ready::WRITE_CLOSED)
    }

    /// An error is pending.
    pub const fn is_error(&self) -> bool {
        self.ready.contains(Ready::ERROR)
    }

    /// Urgent data is pending.
    pub const fn is_priority(&self) -> bool {
        self.ready.contains(Ready::PRIORITY)
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Event({:?}, {:?})", self.token, self.ready)
    }
}

/// The events of one wait, reused from wait to wait.
///
/// The capacity is a starting size, not a bound: the buffer grows when it
/// fills. One wait may still report only some of the ready registrations
/// (epoll returns at most its buffer's worth, then takes a larger buffer
/// for the next wait); the others come with the next wait, as with
/// `epoll_wait`'s `maxevents`.
#[derive(Debug, Default, Clone)]
pub struct Events {
    list: Vec<Event>,
}

impl Events {
    /// An empty buffer with room for `capacity` events before it grows.
    pub fn with_capacity(capacity: usize) -> Events {
        Events {
            list: Vec::with_capacity(capacity),
        }
    }

    /// Number of events from the last wait.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// True when the last wait returned nothing.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Current capacity.
    pub fn capacity(&self) -> usize {
        self.list.capacity()
    }

    /// The events as a slice.
    pub fn as_slice(&self) -> &[Event] {
        &self.list
    }

    /// Iterate over the events.
    pub fn iter(&self) -> std::slice::Iter<'_, Event> {
        self.list.iter()
    }

    /// Forget every event (the poller does this at the start of each wait).
    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// Append an event. Mechanisms call this; user code may too, e.g. to
    /// inject synthetic events in a test.
    #[inline]
    pub fn push(&mut self, event: Event) {
        self.list.push(event);
    }

    /// Append many events at once (one capacity check, no per-event branch).
    #[inline]
    pub fn extend(&mut self, events: impl ExactSizeIterator<Item = Event>) {
        self.list.extend(events);
    }

    /// Reserve room for `additional` more events.
    pub fn reserve(&mut self, additional: usize) {
        self.list.reserve(additional);
    }

    pub(crate) fn retain(&mut self, f: impl FnMut(&Event) -> bool) {
        self.list.retain(f);
    }
}

impl<'a> IntoIterator for &'a Events {
    type Item = &'a Event;
    type IntoIter = std::slice::Iter<'a, Event>;
    fn into_iter(self) -> Self::IntoIter {
        self.list.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hangup_is_readable_and_closed() {
        let r = Ready::from_poll_bits(libc::POLLHUP as u32);
        assert!(r.contains(Ready::READABLE | Ready::READ_CLOSED | Ready::WRITE_CLOSED));
        assert!(!r.contains(Ready::ERROR));
    }

    #[test]
    fn filter_keeps_only_the_interest_side() {
        let r = Ready::READABLE | Ready::WRITABLE | Ready::ERROR;
        assert_eq!(r.filter(Interest::READABLE), Ready::READABLE | Ready::ERROR);
        assert_eq!(r.filter(Interest::WRITABLE), Ready::WRITABLE | Ready::ERROR);
        assert_eq!(r.filter(Interest::BOTH), r);
    }

    #[test]
    fn interest_modifier_round_trips() {
        let i = Interest::READABLE.exclusive();
        assert!(i.is_exclusive() && i.is_readable() && !i.is_writable());
        assert_eq!(i.without_exclusive(), Interest::READABLE);
        assert_eq!(format!("{:?}", i), "READABLE | EXCLUSIVE");
    }
}
