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
//! arrivals, each with its own slot as intended start, or in closed loop a
//! new request per free stream. Each reply is recorded as an HTTP/1.1
//! reply is, into the same histograms. After a GOAWAY no stream opens; the
//! connection ends when its last processed stream is answered, and a new
//! one carries the retries. A connection error (a frame breaking the
//! protocol) sends GOAWAY, is warned about once naming the frame, and
//! counts one error per request outstanding. A stream unanswered within
//! `--timeout` (or SETTINGS not received within it) ends its connection,
//! each request in flight on it a `timeout` error, and a new connection
//! takes its place.

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
        let settings = self.spec.config.h2_settings();
        let c = &mut self.slab[slot];
        c.h2 = Some(Box::new(H2Conn {
            codec: http2::Connection::new(settings),
            streams: HashMap::new(),
            counted: Default::default(),
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
    /// arrivals (persistent), or new requests (closed loop).
    pub(super) fn h2_fill(&mut self, slot: usize, now: Instant) {
        let limit = self.spec.config.max_streams;
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
            } else if c.role == Role::Closed && self.may_start(now) {
                (now, self.in_window(now), self.pick_request(), true)
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
            self.after_loss(slot, now, false);
        }
    }

    /// A frame broke the protocol: the GOAWAY the codec queued goes out,
    /// the connection closes, and each request on it is an error.
    fn h2_conn_error(&mut self, slot: usize, e: &ConnError, now: Instant) {
        self.rec.h2.connection_errors += 1;
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
        } else {
            self.server_closed_quietly(slot, now);
        }
    }

    /// Requests in flight on `slot`'s HTTP/2 connection.
    pub(super) fn h2_outstanding(&self, slot: usize) -> usize {
        self.slab[slot].h2.as_ref().map_or(0, |h| h.streams.len())
    }
}
