//! Arrivals and sessions: when a request or a session starts, and what a
//! session does next (its next call, a think time, a new connection).

use super::*;

impl Engine<'_> {
    pub(super) fn arrivals(&mut self, now: Instant) {
        while let Some(t) = self.next_session.filter(|&t| t <= now) {
            if t >= self.t_me || !self.take_session() {
                self.next_session = None;
                break;
            }
            if self.in_window(t) && missed(true, t, now, self.tolerance) {
                self.rec.counts.missed_slots += 1;
            }
            self.start_session(t, now);
            self.next_session = self.session_arrivals.as_mut().map(|a| a.next_instant());
        }
        while let Some(t) = self.next_persistent.filter(|&t| t <= now) {
            if t >= self.t_me {
                self.next_persistent = None;
                break;
            }
            let slot = self.persistent_slots[self.persistent_rr.deal(self.persistent_slots.len())];
            let measured = self.in_window(t);
            if self.slab[slot].h2.is_some() {
                // A stream of its own: late only when none is free.
                let ready = self.h2_can_open(slot);
                if measured && missed(ready, t, now, self.tolerance) {
                    self.rec.counts.missed_slots += 1;
                }
                self.slab[slot].queue.push_back((t, measured));
                self.h2_fill(slot, now);
                self.h2_flush(slot);
                self.next_persistent = self.persistent_arrivals.as_mut().map(|a| a.next_instant());
                continue;
            }
            let c = &mut self.slab[slot];
            let ready = c.st == St::Waiting && c.queue.is_empty();
            if measured && missed(ready, t, now, self.tolerance) {
                self.rec.counts.missed_slots += 1;
            }
            if ready {
                self.start_request(slot, t, measured, now);
            } else {
                c.queue.push_back((t, measured));
            }
            self.next_persistent = self.persistent_arrivals.as_mut().map(|a| a.next_instant());
        }
    }

    /// Count one more session against `--sessions`: false when they have
    /// all started.
    pub(super) fn take_session(&mut self) -> bool {
        match &mut self.sessions_left {
            Some(0) => false,
            Some(n) => {
                *n -= 1;
                true
            }
            None => true,
        }
    }

    /// No session to start and none under way.
    pub(super) fn sessions_done(&self) -> bool {
        self.sessions_left == Some(0) && self.sessions_active == 0
    }

    pub(super) fn start_session(&mut self, intended: Instant, now: Instant) {
        self.sessions_active += 1;
        let slot = self.alloc(Role::Session, now);
        let c = &mut self.slab[slot];
        c.intended = intended;
        c.measured = intended >= self.t_ms && intended < self.t_me;
        c.calls_left = self.spec.config.calls;
        c.script = None;
        if !self.scripts.is_empty() {
            let session = self.next_script % self.scripts.len();
            self.next_script += 1;
            c.script = Some(ScriptPos {
                session,
                burst: 0,
                pos: 0,
            });
            c.req = self.scripts[session][0].0[0];
        }
        if self.spec.config.http == HttpVersion::Http2 {
            let measured = self.slab[slot].measured;
            self.h2_load_burst(slot, intended, measured);
        }
        self.connect(slot, now);
    }

    /// Move a session to its next call (`--calls`, or its session log's next
    /// request): `Some(None)` to send it now, `Some(Some(think))` after a
    /// think time, `None` when the session is over.
    pub(super) fn session_next(&mut self, slot: usize) -> Option<Option<Duration>> {
        let c = &mut self.slab[slot];
        if c.script.is_some() {
            return self.script_advance(slot);
        }
        c.calls_left = c.calls_left.saturating_sub(1);
        (c.calls_left > 0).then_some(None)
    }

    /// The server closed a session's connection after a reply (`next` is
    /// what [`Engine::session_next`] said comes after it): the session goes
    /// on over a new connection, after its think time if one is due, as
    /// httperf's sessions do. After the run, or after its last call, it is
    /// over.
    pub(super) fn session_resume(
        &mut self,
        slot: usize,
        next: Option<Option<Duration>>,
        now: Instant,
    ) {
        match next {
            Some(think) if self.may_start(now) => {
                self.rec.counts.reconnects += 1;
                match think {
                    // No connection while it thinks: the timer reconnects.
                    Some(t) if !t.is_zero() => self.think(slot, now + t),
                    _ => self.session_reconnect(slot, now),
                }
            }
            _ => {
                // Calls were left: the window ended first.
                self.rec.counts.sessions_unfinished += u64::from(next.is_some());
                self.session_over(slot, now)
            }
        }
    }

    /// A session waits for its next request until `until` (its think time).
    pub(super) fn think(&mut self, slot: usize, until: Instant) {
        self.slab[slot].st = St::Waiting;
        self.set_timer(until, Timer::Think, slot);
    }

    /// Open a new connection for a session whose server closed the last
    /// one; its next request is due now.
    pub(super) fn session_reconnect(&mut self, slot: usize, now: Instant) {
        let measured = self.in_window(now);
        let c = &mut self.slab[slot];
        // A new connection: events of the old one (still being read) are
        // not its own.
        c.gen = c.gen.wrapping_add(1);
        c.intended = now;
        c.measured = measured;
        self.connect(slot, now);
    }

    /// Move a session log's session to its next request: `Some(None)` to
    /// send it now, `Some(Some(think))` after a think time, `None` when
    /// the session is over.
    pub(super) fn script_advance(&mut self, slot: usize) -> Option<Option<Duration>> {
        let c = &mut self.slab[slot];
        let p = c.script.as_mut()?;
        let script = &self.scripts[p.session];
        if p.pos + 1 < script[p.burst].0.len() {
            p.pos += 1;
            c.req = script[p.burst].0[p.pos];
            return Some(None);
        }
        if p.burst + 1 < script.len() {
            let think = script[p.burst].1;
            p.burst += 1;
            p.pos = 0;
            c.req = script[p.burst].0[0];
            return Some(Some(Duration::from_secs_f64(think)));
        }
        None
    }

    /// The session of `slot` is over (its connection closed): free the
    /// slot and, in closed loop, start the next session.
    pub(super) fn session_over(&mut self, slot: usize, now: Instant) {
        self.free.push(slot);
        self.sessions_active -= 1;
        if self.closed_sessions > 0 && self.may_start(now) && self.take_session() {
            self.start_session(now, now);
        }
    }
}
