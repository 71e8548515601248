//! A hashed timer wheel over slab indices: O(1) to arm, move or cancel a
//! deadline, and a wait's timeout comes from the next occupied slot, found in
//! a bitmap, so nothing ever scans the connections.
//!
//! Deadlines may be pushed later without touching the wheel (the common case:
//! every request extends its connection's deadline). An entry stays in the
//! slot of the deadline it was filed under; when that slot comes due, an
//! entry whose deadline has moved on is re-filed instead of fired.

use std::time::{Duration, Instant};

const SLOTS: usize = 4096;

/// Most expiries a server handles in one turn of its loop: a burst (thousands
/// of connections that arrived together time out together) is spread over
/// several turns with the ready connections served in between.
pub const EXPIRE_BATCH: usize = 16;
const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
struct Link {
    prev: u32,
    next: u32,
    /// The tick the entry is filed under (NIL as u64: not filed).
    filed: u64,
    /// The current deadline.
    deadline: u64,
}

const UNFILED: Link = Link {
    prev: NIL,
    next: NIL,
    filed: u64::MAX,
    deadline: u64::MAX,
};

/// The wheel. Indices are the caller's (connection slab indices).
#[derive(Debug)]
pub struct TimerWheel {
    start: Instant,
    tick: Duration,
    /// `tick` in nanoseconds (at least 1): deadlines are converted to ticks
    /// in 64-bit arithmetic (584 years of nanoseconds), never 128-bit.
    tick_ns: u64,
    /// The last instant [`TimerWheel::set`] converted and its tick: a turn
    /// of a loop arms many connections for the same instant (its `now`
    /// plus the same timeout), converted once.
    last_at: Option<(Instant, u64)>,
    /// Ticks up to and including this one have been processed.
    done: u64,
    heads: Vec<u32>,
    occupied: Vec<u64>,
    links: Vec<Link>,
    filed: usize,
}

impl TimerWheel {
    /// A wheel with `tick` granularity.
    pub fn new(tick: Duration) -> TimerWheel {
        TimerWheel::with_capacity(tick, 0)
    }

    /// A wheel with room reserved for indices below `indices` (reserved,
    /// not touched: see `ServerConfig::table_reserve`).
    pub fn with_capacity(tick: Duration, indices: usize) -> TimerWheel {
        TimerWheel {
            start: Instant::now(),
            tick,
            tick_ns: nanos(tick).max(1),
            last_at: None,
            done: 0,
            heads: vec![NIL; SLOTS],
            occupied: vec![0; SLOTS / 64],
            links: Vec::with_capacity(indices),
            filed: 0,
        }
    }

    /// The tick containing `t`.
    pub fn tick_of(&self, t: Instant) -> u64 {
        nanos(t.saturating_duration_since(self.start)) / self.tick_ns
    }

    /// The first tick at or after `t` (a deadline never fires early).
    fn tick_after(&self, t: Instant) -> u64 {
        nanos(t.saturating_duration_since(self.start)).div_ceil(self.tick_ns)
    }

    /// Number of entries armed.
    pub fn len(&self) -> usize {
        self.filed
    }

    /// True when nothing is armed.
    pub fn is_empty(&self) -> bool {
        self.filed == 0
    }

    /// Arm (or re-arm) `idx` to fire at `at`. Later than the current deadline:
    /// only the deadline is noted. Earlier: the entry moves slot.
    pub fn set(&mut self, idx: usize, at: Instant) {
        let tick = match self.last_at {
            Some((last, tick)) if last == at => tick,
            _ => {
                let tick = self.tick_after(at);
                self.last_at = Some((at, tick));
                tick
            }
        };
        let deadline = tick.max(self.done + 1);
        if idx >= self.links.len() {
            self.links.resize(idx + 1, UNFILED);
        }
        let link = &mut self.links[idx];
        link.deadline = deadline;
        if link.filed != u64::MAX {
            if link.filed <= deadline {
                return;
            }
            self.unlink(idx);
        }
        self.file(idx, deadline);
    }

    /// Disarm `idx`.
    pub fn cancel(&mut self, idx: usize) {
        if idx < self.links.len() && self.links[idx].filed != u64::MAX {
            self.unlink(idx);
        }
        if let Some(l) = self.links.get_mut(idx) {
            l.deadline = u64::MAX;
        }
    }

    fn file(&mut self, idx: usize, tick: u64) {
        let slot = (tick % SLOTS as u64) as usize;
        let head = self.heads[slot];
        self.links[idx] = Link {
            prev: NIL,
            next: head,
            filed: tick,
            deadline: self.links[idx].deadline,
        };
        if head != NIL {
            self.links[head as usize].prev = idx as u32;
        }
        self.heads[slot] = idx as u32;
        self.occupied[slot / 64] |= 1 << (slot % 64);
        self.filed += 1;
    }

    fn unlink(&mut self, idx: usize) {
        let Link {
            prev, next, filed, ..
        } = self.links[idx];
        let slot = (filed % SLOTS as u64) as usize;
        if prev == NIL {
            self.heads[slot] = next;
            if next == NIL {
                self.occupied[slot / 64] &= !(1 << (slot % 64));
            }
        } else {
            self.links[prev as usize].next = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
        }
        let l = &mut self.links[idx];
        l.prev = NIL;
        l.next = NIL;
        l.filed = u64::MAX;
        self.filed -= 1;
    }

    /// Fire every entry due at `now` into `fired` (appended), disarming them.
    pub fn expire(&mut self, now: Instant, fired: &mut Vec<usize>) {
        self.expire_at_most(now, fired, usize::MAX);
    }

    /// Fire at most `limit` of the entries due at `now` into `fired`
    /// (appended), disarming them; true when more are due (the wheel's
    /// timeout is then zero). A server that bounds the work of one turn
    /// serves the ready connections between batches of a burst of expiries.
    pub fn expire_at_most(&mut self, now: Instant, fired: &mut Vec<usize>, limit: usize) -> bool {
        let now_tick = self.tick_of(now);
        let mut count = 0;
        while self.done < now_tick {
            if self.filed == 0 {
                self.done = now_tick;
                break;
            }
            // Jump over empty slots using the bitmap.
            let next = self.next_occupied_tick().unwrap_or(now_tick);
            if next > now_tick {
                self.done = now_tick;
                break;
            }
            let tick = next.max(self.done + 1);
            self.done = tick;
            let slot = (tick % SLOTS as u64) as usize;
            let mut cur = self.heads[slot];
            let mut refile = Vec::new();
            let mut full = false;
            while cur != NIL {
                let idx = cur as usize;
                cur = self.links[idx].next;
                let deadline = self.links[idx].deadline;
                if self.links[idx].filed > tick {
                    continue; // a later round of this slot
                }
                if deadline <= tick && count == limit {
                    full = true;
                    break;
                }
                self.unlink(idx);
                if deadline <= tick {
                    self.links[idx].deadline = u64::MAX;
                    fired.push(idx);
                    count += 1;
                } else {
                    refile.push((idx, deadline));
                }
            }
            for (idx, deadline) in refile {
                self.file(idx, deadline);
            }
            if full {
                // This slot again next time: what is left in it is due.
                self.done = tick - 1;
                return true;
            }
        }
        false
    }

    /// The first tick after `done` whose slot holds an entry (which may be
    /// filed for a later round: then the wait is merely early, never late).
    fn next_occupied_tick(&self) -> Option<u64> {
        if self.filed == 0 {
            return None;
        }
        let base = self.done + 1;
        let start = (base % SLOTS as u64) as usize;
        let words = SLOTS / 64;
        let sw = start / 64;
        // The words from `start`'s on, round the wheel and back to its own
        // word, whose bits below `start` come last (almost a full turn).
        for k in 0..=words {
            let w = (sw + k) % words;
            let bits = match k {
                0 => self.occupied[w] & (!0u64 << (start % 64)),
                k if k == words => self.occupied[w] & ((1u64 << (start % 64)) - 1),
                _ => self.occupied[w],
            };
            if bits != 0 {
                let slot = w * 64 + bits.trailing_zeros() as usize;
                return Some(base + ((slot + SLOTS - start) % SLOTS) as u64);
            }
        }
        None
    }

    /// How long a wait may sleep before the next entry may be due (`None`:
    /// nothing armed).
    pub fn timeout(&self, now: Instant) -> Option<Duration> {
        let next = self.next_occupied_tick()?;
        let at = self.start + self.tick * next as u32;
        Some(at.saturating_duration_since(now))
    }
}

/// `d` in nanoseconds, saturating.
fn nanos(d: Duration) -> u64 {
    d.as_secs()
        .saturating_mul(1_000_000_000)
        .saturating_add(u64::from(d.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_in_order_never_early() {
        let mut w = TimerWheel::new(Duration::from_millis(10));
        let t0 = w.start;
        w.set(1, t0 + Duration::from_millis(50));
        w.set(2, t0 + Duration::from_millis(20));
        w.set(3, t0 + Duration::from_secs(100)); // beyond one turn
        let mut fired = Vec::new();
        w.expire(t0 + Duration::from_millis(19), &mut fired);
        assert!(fired.is_empty());
        w.expire(t0 + Duration::from_millis(20), &mut fired);
        assert_eq!(fired, vec![2]);
        w.expire(t0 + Duration::from_millis(60), &mut fired);
        assert_eq!(fired, vec![2, 1]);
        w.expire(t0 + Duration::from_secs(99), &mut fired);
        assert_eq!(fired, vec![2, 1]);
        assert_eq!(w.len(), 1);
        w.expire(t0 + Duration::from_secs(101), &mut fired);
        assert_eq!(fired, vec![2, 1, 3]);
        assert!(w.is_empty());
    }

    #[test]
    fn extend_shorten_cancel() {
        let mut w = TimerWheel::new(Duration::from_millis(10));
        let t0 = w.start;
        w.set(0, t0 + Duration::from_millis(30));
        w.set(0, t0 + Duration::from_millis(80)); // extended: lazily
        w.set(1, t0 + Duration::from_millis(80));
        w.set(1, t0 + Duration::from_millis(40)); // shortened: moved
        w.set(2, t0 + Duration::from_millis(40));
        w.cancel(2);
        let mut fired = Vec::new();
        w.expire(t0 + Duration::from_millis(50), &mut fired);
        assert_eq!(fired, vec![1]);
        assert_eq!(w.len(), 1);
        let left = w.timeout(t0 + Duration::from_millis(50)).unwrap();
        assert!(left <= Duration::from_millis(30), "{left:?}");
        w.expire(t0 + Duration::from_millis(90), &mut fired);
        assert_eq!(fired, vec![1, 0]);
        assert_eq!(w.timeout(t0), None);
    }

    #[test]
    fn many_entries_and_timeout_bound() {
        let mut w = TimerWheel::new(Duration::from_millis(1));
        let t0 = w.start;
        for i in 0..10_000 {
            w.set(i, t0 + Duration::from_millis(5 + (i as u64 * 7) % 9000));
        }
        let mut fired = Vec::new();
        let mut now = t0;
        while !w.is_empty() {
            let to = w.timeout(now).unwrap();
            now += to.max(Duration::from_millis(1));
            w.expire(now, &mut fired);
        }
        assert_eq!(fired.len(), 10_000);
        let mut sorted = fired.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 10_000);
    }

    #[test]
    fn a_burst_of_expiries_comes_in_batches() {
        let mut w = TimerWheel::new(Duration::from_millis(1));
        let t0 = w.start;
        // 1,000 due together, 10 later, one re-armed mid-burst.
        for i in 0..1000 {
            w.set(i, t0 + Duration::from_millis(10));
        }
        for i in 1000..1010 {
            w.set(i, t0 + Duration::from_millis(500));
        }
        let now = t0 + Duration::from_millis(20);
        let mut fired = Vec::new();
        assert!(w.expire_at_most(now, &mut fired, 256));
        assert_eq!(fired.len(), 256);
        assert_eq!(w.timeout(now), Some(Duration::ZERO), "more are due");
        // An entry not yet fired gets a new deadline: it is not fired now.
        let pending = (0..1000).find(|i| !fired.contains(i)).unwrap();
        w.set(pending, now + Duration::from_millis(100));
        let mut full_batches = 1;
        while w.expire_at_most(now, &mut fired, 256) {
            full_batches += 1;
        }
        assert_eq!(full_batches, 3, "256 + 256 + 256, then the last 231");
        assert_eq!(fired.len(), 999);
        assert!(!fired.contains(&pending));
        let mut sorted = fired.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 999, "each fired once");
        // The rest fire at their own time, not before.
        assert!(!w.expire_at_most(now + Duration::from_millis(50), &mut fired, 256));
        assert_eq!(fired.len(), 999);
        w.expire(t0 + Duration::from_millis(600), &mut fired);
        assert_eq!(fired.len(), 1010);
    }
}
