//! HTTP/2 connections, on either engine: each closed-loop or persistent
//! connection carries up to `--max-streams` requests at once (at most the
//! server's SETTINGS_MAX_CONCURRENT_STREAMS), each stream timed on its own
//! from its own intended start. The bytes come from the codec
//! ([`crate::proto::http2`]) and go out here through the socket (or
//! rustls) on the readiness engine, or through the ring for an h2c
//! connection on the `uring` engine (`ring_io`), whose receives feed
//! [`Engine::h2_on_data`] as the readiness engine's reads do.
//!
//! A connection opens with the codec's preface and waits for the server's
//! SETTINGS; then it fills its streams: requests to retry first (those a
//! GOAWAY left unprocessed), then the persistent connection's queued
//! arrivals, each with its own slot as intended start, in closed loop a
//! new request per free stream, a session's current burst (its calls at
//! once, the next burst when they are all answered, after the think
//! time), or the one request of an idle connection or a slow reader. An
//! inactive connection opens none. Each reply is recorded as an HTTP/1.1
//! reply is, into the same histograms. After a GOAWAY no stream opens; the
//! connection ends when its last processed stream is answered, and a new
//! one carries the retries (and the rest of a session). A connection error
//! (a frame breaking the protocol) sends GOAWAY, is warned about once
//! naming the frame, and counts one error per request outstanding. A
//! stream unanswered within `--timeout` (or SETTINGS not received within
//! it) ends its connection, each request in flight on it a `timeout`
//! error, and a new connection takes its place. The time streams hold
//! body bytes that flow control keeps back is summed as it passes.

use std::collections::HashMap;

use super::*;
use crate::proto::http2::{self, ConnError, Event, REFUSED_STREAM};

/// The engine's side of an HTTP/2 connection.
pub(super) struct H2Conn {
    pub(super) codec: http2::Connection,
    /// The requests in flight, by stream id.
    streams: HashMap<u32, StreamMeta>,
    /// The codec's header-byte and flow-control counts already added to
    /// the recorder.
    counted: (http2::HeaderBytes, u64),
    /// Streams held back by flow control, and since when (their time is
    /// added to the recorder as it passes).
    blocked: (usize, Instant),
}

/// One stream's request: when it was meant to start and when it did.
#[derive(Debug, Clone, Copy)]
struct StreamMeta {
    intended: Instant,
    sent: Instant,
    measured: bool,
    req: usize,
}

/// A request to send again on a new connection: intended start, measured,
/// request index.
pub(super) type Retry = (Instant, bool, usize);

impl Engine<'_> {
    /// The connection is established (and its TLS handshake done): send
    /// the preface and settings, and wait for the server's.
    pub(super) fn h2_ready(&mut self, slot: usize) {
        let c = &self.spec.config;
        let settings = if self.slab[slot].role == Role::Slow {
            // A slow reader: its stream's window is `--slow-bytes`, given
            // back `--slow-bytes` every `--slow-interval`.
            http2::Settings {
                stream_window: c.slow_bytes.clamp(1, http2::WINDOW_MAX as usize) as u32,
                slow_read: true,
                ..c.h2_settings()
            }
        } else {
            c.h2_settings()
        };
        let c = &mut self.slab[slot];
        c.h2 = Some(Box::new(H2Conn {
            codec: http2::Connection::new(settings),
            streams: HashMap::new(),
            counted: Default::default(),
            blocked: (0, Instant::now()),
        }));
        c.st = St::Waiting;
        // The server's SETTINGS are awaited within `--timeout`.
        c.deadline = Some(Instant::now() + self.timeout);
        self.h2_flush(slot);
    }

    /// Write what the codec queued (through the ring for a connection on
    /// it): `false` when the connection failed.
    pub(super) fn h2_flush(&mut self, slot: usize) -> bool {
        if self.slab[slot].ring {
            return self.ring_h2_send(slot);
        }
        let c = &mut self.slab[slot];
        let (Some(h), Some(sock)) = (c.h2.as_deref_mut(), c.sock.as_ref()) else {
            return false;
        };
        let mut blocked = false;
        if let Some(tls) = c.tls.as_deref_mut() {
            let out = h.codec.pending();
            if !out.is_empty() {
                match tls.writer().write(out) {
                    Ok(n) => h.codec.consume(n),
                    Err(e) => {
                        self.io_failed(slot, &e, Instant::now());
                        return false;
                    }
                }
            }
            match tls_flush(tls, sock, &mut self.rec.counts.bytes_sent) {
                Ok(all) => blocked = !all || !h.codec.pending().is_empty(),
                Err(e) => {
                    self.io_failed(slot, &e, Instant::now());
                    return false;
                }
            }
        } else {
            while !h.codec.pending().is_empty() {
                let mut w: &Socket = sock;
                match w.write(h.codec.pending()) {
                    Ok(n) => {
                        h.codec.consume(n);
                        self.rec.counts.bytes_sent += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        blocked = true;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        self.io_failed(slot, &e, Instant::now());
                        return false;
                    }
                }
            }
        }
        let want = if blocked {
            Interest::BOTH
        } else {
            Interest::READABLE
        };
        self.set_interest(slot, want);
        true
    }

    /// Bytes read from an HTTP/2 connection.
    pub(super) fn h2_on_data(&mut self, slot: usize, data: &[u8]) {
        let now = Instant::now();
        let gen = self.slab[slot].gen;
        let mut events = std::mem::take(&mut self.h2_events);
        let res = match self.slab[slot].h2.as_deref_mut() {
            Some(h) => h.codec.feed(data, &mut events),
            None => Ok(()),
        };
        for ev in events.drain(..) {
            if self.slab[slot].gen != gen {
                break;
            }
            self.h2_event(slot, ev, now);
        }
        self.h2_events = events;
        if self.slab[slot].gen != gen || self.slab[slot].h2.is_none() {
            return;
        }
        if let Err(e) = res {
            return self.h2_conn_error(slot, &e, now);
        }
        self.h2_fill(slot, now);
        if self.slab[slot].gen == gen && self.h2_flush(slot) {
            self.h2_settle(slot, now);
        }
    }

    fn h2_event(&mut self, slot: usize, ev: Event, now: Instant) {
        let role = self.slab[slot].role;
        match ev {
            Event::Ready => {}
            Event::Response { id, status } => {
                let Some(m) = self.h2_take(slot, id) else {
                    return;
                };
                self.record_reply(role, m.intended, m.sent, m.measured, status, now);
                self.h2_stream_over(slot, now);
            }
            Event::Reset { id, code } => {
                if self.h2_take(slot, id).is_none() {
                    return;
                }
                let h = &mut self.rec.h2;
                if code == REFUSED_STREAM {
                    h.streams_refused += 1;
                }
                *h.resets
                    .entry(http2::error_name(code).into_owned())
                    .or_default() += 1;
                self.rec.error(role, Cause::StreamReset);
                self.h2_stream_over(slot, now);
            }
            Event::GoAway { unprocessed, .. } => {
                self.rec.h2.goaways += 1;
                for id in unprocessed {
                    if let Some(m) = self.h2_take(slot, id) {
                        self.rec.h2.retried_after_goaway += 1;
                        self.slab[slot]
                            .h2_retry
                            .push_back((m.intended, m.measured, m.req));
                    }
                }
            }
        }
    }

    fn h2_take(&mut self, slot: usize, id: u32) -> Option<StreamMeta> {
        self.slab[slot].h2.as_deref_mut()?.streams.remove(&id)
    }

    /// Open streams while the connection may: retries first, then queued
    /// arrivals (persistent), new requests (closed loop), the session's
    /// burst, or an idle connection's one request.
    pub(super) fn h2_fill(&mut self, slot: usize, now: Instant) {
        let limit = self.spec.config.max_streams;
        let may_start = self.may_start(now);
        loop {
            let c = &mut self.slab[slot];
            let Some(h) = c.h2.as_deref_mut() else {
                return;
            };
            if !h.codec.can_open(limit) {
                break;
            }
            let (intended, measured, req, fresh) = if let Some((t, m, r)) = c.h2_retry.pop_front() {
                (t, m, r, false)
            } else if c.role == Role::Persistent {
                match c.queue.pop_front() {
                    Some((t, m)) => (t, m, self.pick_request(), true),
                    None => break,
                }
            } else if c.role == Role::Closed && may_start {
                (now, self.in_window(now), self.pick_request(), true)
            } else if c.role == Role::Session && may_start {
                match c.h2_burst.pop_front() {
                    Some((t, m, r)) => (t, m, r, true),
                    None => break,
                }
            } else if matches!(c.role, Role::Idle | Role::Slow) && h.codec.streams_opened() == 0 {
                // An idle connection's or a slow reader's one request,
                // unmeasured.
                (now, false, self.pick_request(), true)
            } else {
                break;
            };
            let c = &mut self.slab[slot];
            let h = c.h2.as_deref_mut().expect("checked above");
            let id = h.codec.open(&self.h2_requests[req]);
            h.streams.insert(
                id,
                StreamMeta {
                    intended,
                    sent: now,
                    measured,
                    req,
                },
            );
            if fresh && measured {
                self.rec.counts.requests += 1;
                let i = self.interval_index(now);
                *crate::results::record::at(&mut self.iv_requests, i) += 1;
            }
        }
        self.h2_settle(slot, now);
    }

    /// The request of a new stream (`--urls` weights).
    fn pick_request(&mut self) -> usize {
        match &mut self.pick {
            Some((w, rng)) => w.sample(rng),
            None => 0,
        }
    }

    /// State, deadline and counters after the streams changed; a connection
    /// told to go away ends once its last stream is answered (a new one
    /// carries the retries).
    fn h2_settle(&mut self, slot: usize, now: Instant) {
        let timeout = self.timeout;
        let c = &mut self.slab[slot];
        let Some(h) = c.h2.as_deref_mut() else {
            return;
        };
        let hb = h.codec.header_bytes;
        let (was, waits) = h.counted;
        let r = &mut self.rec.h2;
        r.header_bytes_sent += hb.sent_plain - was.sent_plain;
        r.header_bytes_sent_hpack += hb.sent_hpack - was.sent_hpack;
        r.header_bytes_received += hb.received_plain - was.received_plain;
        r.header_bytes_received_hpack += hb.received_hpack - was.received_hpack;
        r.flow_control_waits += h.codec.flow_blocked - waits;
        h.counted = (hb, h.codec.flow_blocked);
        let (n, since) = h.blocked;
        let dt = elapsed_us(since, now);
        r.flow_control_blocked_stream_us += n as u64 * dt;
        if n > 0 {
            r.flow_control_blocked_connection_us += dt;
        }
        h.blocked = (h.codec.blocked_streams(), now);
        let oldest = h.streams.values().map(|m| m.sent).min();
        c.deadline = oldest.map(|t| t + timeout);
        c.st = if oldest.is_some() {
            St::Receiving
        } else {
            St::Waiting
        };
        if oldest.is_none() && h.codec.goaway().is_some() {
            // Gone away and nothing left on it: a new connection.
            self.rec.counts.conn_closed_by_client += 1;
            self.rec.counts.reconnects += 1;
            self.close(slot, now);
            if self.slab[slot].role == Role::Session {
                return self.h2_session_reconnect(slot, now);
            }
            self.after_loss(slot, now, false);
        }
    }

    /// A stream of `slot` ended (answered or reset): an idle connection
    /// holds from its first reply on; a session whose burst is over goes
    /// on to its next burst.
    fn h2_stream_over(&mut self, slot: usize, now: Instant) {
        let c = &self.slab[slot];
        match c.role {
            Role::Idle => self.idle_settled(slot),
            Role::Slow => {
                // Its reply read: it starts over on a new connection.
                self.rec.counts.conn_closed_by_client += 1;
                self.close(slot, now);
                self.after_loss(slot, now, false);
            }
            Role::Session
                if c.h2_burst.is_empty()
                    && c.h2_retry.is_empty()
                    && self.h2_outstanding(slot) == 0 =>
            {
                self.h2_session_next(slot, now)
            }
            _ => {}
        }
    }

    /// Put the requests of the session's current burst (one call without
    /// a session log) on its list to open, meant to start at `intended`;
    /// the session's place moves to the burst's last request.
    pub(super) fn h2_load_burst(&mut self, slot: usize, intended: Instant, measured: bool) {
        let pick = if self.slab[slot].script.is_none() {
            Some(self.pick_request())
        } else {
            None
        };
        let c = &mut self.slab[slot];
        let burst: &[usize] = match (&mut c.script, &pick) {
            (Some(p), _) => {
                let b = &self.scripts[p.session][p.burst].0;
                p.pos = b.len() - 1;
                b
            }
            (None, Some(r)) => std::slice::from_ref(r),
            (None, None) => &[],
        };
        c.h2_burst
            .extend(burst.iter().map(|&r| (intended, measured, r)));
    }

    /// A session's burst is answered: its next burst now or after its
    /// think time, or its end (the connection closes).
    fn h2_session_next(&mut self, slot: usize, now: Instant) {
        match self.session_next(slot) {
            None => {
                self.rec.counts.conn_closed_by_client += 1;
                self.close(slot, now);
                self.session_over(slot, now);
            }
            // The window is over: no further call; still open at the end,
            // the session is counted unfinished.
            Some(_) if !self.may_start(now) => {}
            Some(Some(think)) if !think.is_zero() => self.think(slot, now + think),
            Some(_) => {
                let m = self.in_window(now);
                self.h2_load_burst(slot, now, m);
            }
        }
    }

    /// A slow reader's step: `--slow-bytes` more of its stream's window
    /// given back, and the next step armed.
    pub(super) fn h2_slow_step(&mut self, slot: usize, now: Instant) {
        let step = self.spec.config.slow_bytes.min(u32::MAX as usize) as u32;
        if let Some(h) = self.slab[slot].h2.as_deref_mut() {
            h.codec.release(step);
        }
        if self.h2_flush(slot) {
            let at = now + Duration::from_secs_f64(self.spec.config.slow_interval_s);
            self.set_timer(at, Timer::SlowStep, slot);
        }
    }

    /// A session's think time is over: its next burst, on its connection
    /// or, when the server closed that one meanwhile, on a new one.
    pub(super) fn h2_next_burst(&mut self, slot: usize, now: Instant) {
        let m = self.in_window(now);
        self.h2_load_burst(slot, now, m);
        if self.slab[slot].sock.is_none() {
            return self.session_reconnect(slot, now);
        }
        self.h2_fill(slot, now);
        self.h2_flush(slot);
    }

    /// A session's connection closed with nothing in flight: requests left
    /// to send go out on a new connection now (those a GOAWAY left
    /// unprocessed always, as for the other connections in the drain; the
    /// rest of its burst while calls may start); otherwise the session
    /// waits on its connectionless think time (its timer reconnects) or for
    /// the end of the run.
    fn h2_session_reconnect(&mut self, slot: usize, now: Instant) {
        let c = &self.slab[slot];
        if !c.h2_retry.is_empty() || (!c.h2_burst.is_empty() && self.may_start(now)) {
            self.session_reconnect(slot, now);
        } else {
            self.slab[slot].st = St::Waiting;
        }
    }

    /// A frame broke the protocol: the GOAWAY the codec queued goes out,
    /// the connection closes, and each request on it is an error.
    fn h2_conn_error(&mut self, slot: usize, e: &ConnError, now: Instant) {
        self.rec.h2.connection_errors += 1;
        *self
            .rec
            .h2
            .connection_errors_by_frame
            .entry(e.frame.clone().into_owned())
            .or_default() += 1;
        if !self.h2_warned {
            self.h2_warned = true;
            self.warnings
                .push(format!("{} (from {})", e, self.spec.config.target));
        }
        let gen = self.slab[slot].gen;
        self.h2_flush(slot);
        if self.slab[slot].gen == gen {
            self.fail(slot, Cause::Malformed, now);
        }
    }

    /// May `slot`'s HTTP/2 connection open a stream now (nothing queued
    /// before it)?
    pub(super) fn h2_can_open(&self, slot: usize) -> bool {
        let c = &self.slab[slot];
        c.queue.is_empty()
            && c.h2_retry.is_empty()
            && c.h2
                .as_ref()
                .is_some_and(|h| h.codec.can_open(self.spec.config.max_streams))
    }

    /// The connection is lost (closed or reset by the server): with
    /// requests in flight, each is an error; without, the server closed an
    /// idle connection.
    pub(super) fn h2_lost(&mut self, slot: usize, cause: Cause, now: Instant) {
        if self.h2_outstanding(slot) > 0 {
            self.fail(slot, cause, now);
        } else if self.slab[slot].role == Role::Session {
            self.rec.counts.conn_closed_by_server += 1;
            self.rec.counts.reconnects += 1;
            self.close(slot, now);
            self.h2_session_reconnect(slot, now);
        } else {
            self.server_closed_quietly(slot, now);
        }
    }

    /// Requests in flight on `slot`'s HTTP/2 connection.
    pub(super) fn h2_outstanding(&self, slot: usize) -> usize {
        self.slab[slot].h2.as_ref().map_or(0, |h| h.streams.len())
    }
}
