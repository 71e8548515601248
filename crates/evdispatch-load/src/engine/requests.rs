//! Requests and replies: writing a request (slowly, for the slow clients),
//! reading and parsing replies, plain or over TLS, and what a completed
//! reply leads to.

use super::*;

impl Engine<'_> {
    pub(super) fn start_request(
        &mut self,
        slot: usize,
        intended: Instant,
        measured: bool,
        now: Instant,
    ) {
        let c = &mut self.slab[slot];
        c.intended = intended;
        c.measured = measured;
        c.sent = now;
        c.woff = 0;
        c.deadline = Some(now + self.timeout);
        c.st = St::Sending;
        if c.script.is_none() {
            if let Some((w, rng)) = &mut self.pick {
                c.req = w.sample(rng);
            }
        }
        c.parser.expect_no_body(self.requests[c.req].head);
        if measured {
            self.rec.counts.requests += 1;
            // In the interval it leaves in (the last, if after the window).
            let i = self.interval_index(now);
            *crate::results::record::at(&mut self.iv_requests, i) += 1;
        }
        self.write_request(slot);
    }

    /// Write what remains of the request (the partial one for inactive
    /// connections).
    pub(super) fn write_request(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        let req = &self.requests[c.req];
        let end = match (c.role, self.spec.config.inactive_send) {
            // An inactive connection sends everything but the final CRLF.
            (Role::Inactive, InactiveSend::Partial) => req.head_len - 2,
            (Role::Inactive, InactiveSend::None) => 0,
            _ => req.bytes.len(),
        };
        if c.ring {
            c.st = St::Sending;
            return self.ring_send(slot);
        }
        let sock = c.sock.as_ref().expect("a sending connection has a socket");
        if let Some(tls) = c.tls.as_deref_mut() {
            loop {
                if c.woff < end {
                    match tls.writer().write(&req.bytes[c.woff..end]) {
                        Ok(n) => c.woff += n,
                        Err(e) => return self.io_failed(slot, &e, Instant::now()),
                    }
                }
                match tls_flush(tls, sock, &mut self.rec.counts.bytes_sent) {
                    Ok(true) if c.woff >= end => break,
                    Ok(true) => {}
                    Ok(false) => {
                        self.set_interest(slot, Interest::BOTH);
                        return;
                    }
                    Err(e) => return self.io_failed(slot, &e, Instant::now()),
                }
            }
        } else {
            while c.woff < end {
                let mut sock = sock;
                match sock.write(&req.bytes[c.woff..end]) {
                    Ok(n) => {
                        c.woff += n;
                        self.rec.counts.bytes_sent += n as u64;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        self.set_interest(slot, Interest::BOTH);
                        return;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return self.io_failed(slot, &e, Instant::now()),
                }
            }
        }
        if c.role == Role::Inactive {
            c.st = St::Holding;
            c.deadline = None;
            return self.set_interest(slot, Interest::READABLE);
        }
        self.set_interest(slot, Interest::READABLE);
        self.request_out(slot);
    }

    /// The whole request is on the wire: its reply is awaited, or, when it
    /// came first (`St::Finishing`), what follows it happens now.
    pub(super) fn request_out(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        if c.st == St::Finishing {
            return self.after_reply(slot, None, Instant::now());
        }
        c.st = St::Receiving;
    }

    pub(super) fn slow_step(&mut self, slot: usize, now: Instant) {
        let step = self.spec.config.slow_bytes;
        let c = &mut self.slab[slot];
        let bytes = &self.requests[c.req].bytes;
        let end = (c.woff + step).min(bytes.len());
        let mut sock = c.sock.as_ref().expect("a slow client has a socket");
        let mut flushed = true;
        if let Some(tls) = c.tls.as_deref_mut() {
            // One TLS record per step, as a slow client over TLS sends.
            let res = tls.writer().write(&bytes[c.woff..end]).and_then(|n| {
                c.woff += n;
                tls_flush(tls, sock, &mut self.rec.counts.bytes_sent)
            });
            match res {
                Ok(all) => flushed = all,
                Err(e) => return self.fail(slot, Cause::of(&e), now),
            }
        } else {
            match sock.write(&bytes[c.woff..end]) {
                Ok(n) => {
                    c.woff += n;
                    self.rec.counts.bytes_sent += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return self.fail(slot, Cause::of(&e), now),
            }
        }
        if c.woff >= bytes.len() {
            c.sent = now;
            c.deadline = Some(now + self.timeout);
            if flushed {
                c.st = St::Receiving;
                self.set_interest(slot, Interest::READABLE);
            } else {
                // The last records wait for the socket: finish as a request.
                c.st = St::Sending;
                self.set_interest(slot, Interest::BOTH);
            }
        } else {
            let at = now + Duration::from_secs_f64(self.spec.config.slow_interval_s);
            self.set_timer(at, Timer::SlowStep, slot);
            self.set_interest(slot, Interest::READABLE);
        }
    }

    pub(super) fn on_readable(&mut self, slot: usize) {
        if self.slab[slot].tls.is_some() {
            return self.on_readable_tls(slot);
        }
        let mut buf = std::mem::take(&mut self.buf);
        let gen = self.slab[slot].gen;
        loop {
            let c = &self.slab[slot];
            if c.gen != gen || c.sock.is_none() {
                break;
            }
            let res = c.sock.as_ref().unwrap().read(&mut buf);
            match res {
                Ok(0) => {
                    self.on_eof(slot, Instant::now());
                    break;
                }
                Ok(n) => {
                    self.rec.counts.bytes_received += n as u64;
                    self.on_data(slot, &buf[..n]);
                    if n < buf.len() && !self.edge {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io_failed(slot, &e, Instant::now());
                    break;
                }
            }
        }
        self.buf = buf;
    }

    /// Read TLS records, decrypt, hand the plaintext to the parser; drive
    /// the handshake and send what rustls wants to send (handshake
    /// messages, alerts).
    pub(super) fn on_readable_tls(&mut self, slot: usize) {
        let mut buf = std::mem::take(&mut self.buf);
        let gen = self.slab[slot].gen;
        loop {
            let c = &mut self.slab[slot];
            let (Some(sock), Some(tls), true) =
                (c.sock.as_ref(), c.tls.as_deref_mut(), c.gen == gen)
            else {
                break;
            };
            let mut eof = false;
            let mut drained = false;
            let mut r: &Socket = sock;
            match tls.read_tls(&mut r) {
                Ok(0) => eof = true,
                Ok(n) => {
                    self.rec.counts.bytes_received += n as u64;
                    // rustls reads up to 4 KiB at a time: a shorter read
                    // emptied the socket, and a level-triggered poller
                    // reports it again if more comes (saves the read that
                    // would say EAGAIN, as the plain path does).
                    drained = n < TLS_READ && !self.edge;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.io_failed(slot, &e, Instant::now());
                    break;
                }
            }
            if let Err(e) = tls.process_new_packets() {
                // Send the alert rustls queued, then give up.
                let _ = tls_flush(tls, sock, &mut self.rec.counts.bytes_sent);
                self.tls_failed(slot, &e, Instant::now());
                break;
            }
            // The plaintext, to the parser.
            loop {
                let c = &mut self.slab[slot];
                let Some(tls) = c.tls.as_deref_mut().filter(|_| c.gen == gen) else {
                    break;
                };
                match tls.reader().read(&mut buf) {
                    Ok(0) => {
                        eof = true; // close_notify
                        break;
                    }
                    Ok(n) => self.on_data(slot, &buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(_) => {
                        eof = true; // closed without close_notify
                        break;
                    }
                }
            }
            let c = &mut self.slab[slot];
            let (Some(sock), Some(tls), true) =
                (c.sock.as_ref(), c.tls.as_deref_mut(), c.gen == gen)
            else {
                break;
            };
            let handshaking = c.st == St::Handshaking;
            let now = Instant::now();
            match tls_flush(tls, sock, &mut self.rec.counts.bytes_sent) {
                Err(e) => {
                    self.io_failed(slot, &e, now);
                    break;
                }
                Ok(all) if handshaking => {
                    if !tls.is_handshaking() && all {
                        self.handshake_done(slot, now);
                        if self.slab[slot].gen != gen {
                            break;
                        }
                    } else {
                        let want = if all {
                            Interest::READABLE
                        } else {
                            Interest::BOTH
                        };
                        self.set_interest(slot, want);
                    }
                }
                Ok(_) => {}
            }
            if eof {
                self.on_eof(slot, Instant::now());
                break;
            }
            if drained {
                break;
            }
        }
        self.buf = buf;
    }

    pub(super) fn on_data(&mut self, slot: usize, data: &[u8]) {
        if self.slab[slot].h2.is_some() {
            return self.h2_on_data(slot, data);
        }
        let c = &mut self.slab[slot];
        match c.st {
            St::Receiving | St::Sending | St::Dribbling => {}
            // Bytes nobody asked for on a silent connection (a 408 before the
            // server closes it): ignore them, the EOF follows.
            _ => return,
        }
        match c.parser.feed(data) {
            Ok(Feed::More) => {}
            Ok(Feed::Done {
                status,
                close,
                used,
            }) => {
                let now = Instant::now();
                if used < data.len() {
                    return self.fail(slot, Cause::Malformed, now);
                }
                self.complete(slot, status, close, now);
            }
            Err(_) => self.fail(slot, Cause::Malformed, Instant::now()),
        }
    }

    pub(super) fn on_eof(&mut self, slot: usize, now: Instant) {
        if self.slab[slot].h2.is_some() {
            return self.h2_lost(slot, Cause::ServerClosed, now);
        }
        let c = &mut self.slab[slot];
        match c.st {
            St::Receiving | St::Sending | St::Dribbling => match c.parser.eof() {
                Ok(Some(status)) => {
                    self.complete(slot, status, true, now);
                }
                _ => self.fail(slot, Cause::ServerClosed, now),
            },
            // The reply is in; the server closed while the rest of the
            // request went out.
            St::Finishing => self.after_reply(slot, Some(true), now),
            St::Handshaking => {
                if !self.tls_warned {
                    self.tls_warned = true;
                    self.warnings.push(format!(
                        "TLS failure with {}: the server closed the connection during the \
                         handshake — is it speaking TLS on this port?",
                        self.spec.config.target
                    ));
                }
                self.fail(slot, Cause::Tls, now)
            }
            _ => self.server_closed_quietly(slot, now),
        }
    }

    /// A read or a write failed: a reset of a connection with nothing
    /// outstanding (or whose reply is in) is the server closing it.
    pub(super) fn io_failed(&mut self, slot: usize, e: &io::Error, now: Instant) {
        if self.slab[slot].h2.is_some() {
            return self.h2_lost(slot, Cause::of(e), now);
        }
        match self.slab[slot].st {
            St::Holding | St::Waiting => self.server_closed_quietly(slot, now),
            St::Finishing => self.after_reply(slot, Some(true), now),
            _ => self.fail(slot, Cause::of(e), now),
        }
    }

    /// The server closed a connection with nothing outstanding: reopen it
    /// (inactive, idle: a reopen; persistent: a reconnect; a session in its
    /// think time: a reconnect when the think time is over).
    pub(super) fn server_closed_quietly(&mut self, slot: usize, now: Instant) {
        self.rec.counts.conn_closed_by_server += 1;
        let role = self.slab[slot].role;
        if role == Role::Session && self.slab[slot].st == St::Waiting {
            // A keep-alive timeout shorter than the think time: its timer,
            // still armed, opens the next connection.
            self.rec.counts.reconnects += 1;
            self.close(slot, now);
            self.slab[slot].st = St::Waiting;
            return;
        }
        match role {
            Role::Inactive | Role::Idle => {
                self.rec.counts.reopens += 1;
                if self.phase == Phase::Run && self.in_window(now) {
                    self.rec.counts.reopens_in_window += 1;
                }
            }
            Role::Persistent | Role::Closed => self.rec.counts.reconnects += 1,
            _ => {}
        }
        self.close(slot, now);
        self.after_loss(slot, now, false);
    }

    pub(super) fn complete(&mut self, slot: usize, status: u16, close: bool, now: Instant) {
        let c = &self.slab[slot];
        self.record_reply(c.role, c.intended, c.sent, c.measured, status, now);
        let c = &mut self.slab[slot];
        c.measured = false;
        // The user's `Connection: close` (RFC 9112 §9.6): no further
        // request on this connection; this side closes it after the reply.
        let closing = match (close, self.requests[c.req].close) {
            (true, _) => Some(true),
            (false, true) => Some(false),
            (false, false) => None,
        };
        if closing.is_none() && c.st == St::Sending {
            // Early (a 401 or 413 before the upload is read): the rest of
            // the request goes out first, then the next one (as wrk and curl
            // on a kept connection; stopping the body would oblige the
            // generator to close it, RFC 9112 §9.5).
            c.st = St::Finishing;
            c.deadline = Some(now + self.timeout);
            return;
        }
        self.after_reply(slot, closing, now);
    }

    /// Count a reply of a request of `role` meant to start at `intended`
    /// and sent at `sent`: its status, and its latencies when `measured`.
    pub(super) fn record_reply(
        &mut self,
        role: Role,
        intended: Instant,
        sent: Instant,
        measured: bool,
        status: u16,
        now: Instant,
    ) {
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let idx = self.interval_index(now);
        self.rec.status(status);
        if measured {
            self.rec.counts.replies += 1;
            let corrected = elapsed_us(intended, now).clamp(1, crate::results::record::MAX_US);
            let uncorrected = elapsed_us(sent, now).clamp(1, crate::results::record::MAX_US);
            let _ = self.rec.histograms.latency.record(corrected);
            let _ = self.rec.histograms.latency_uncorrected.record(uncorrected);
            if in_window {
                let _ = self.iv_latency.record(corrected);
                let _ = self.iv_latency_uncorrected.record(uncorrected);
            }
        } else if role == Role::Slow {
            self.rec.counts.slow_replies += 1;
        } else {
            self.rec.counts.unmeasured_replies += 1;
        }
        if in_window && role != Role::Slow {
            self.rec.counts.replies_in_window += 1;
            *crate::results::record::at(&mut self.rec.interval_replies, idx) += 1;
        }
    }

    /// What follows a reply: the next request, a think time, the end of a
    /// session, or, when the connection closes (`closing`: `Some(true)` when
    /// the server closes it, as its reply said or while the request was
    /// being finished; `Some(false)` when the generator does, as the request
    /// said it would or because the rest of the request did not go out
    /// within `--timeout` after an early reply), a new connection.
    pub(super) fn after_reply(&mut self, slot: usize, closing: Option<bool>, now: Instant) {
        let c = &mut self.slab[slot];
        c.deadline = None;
        let role = c.role;
        if let Some(by_server) = closing {
            if by_server {
                self.rec.counts.conn_closed_by_server += 1;
            } else {
                self.rec.counts.conn_closed_by_client += 1;
            }
            match role {
                Role::Persistent | Role::Closed => self.rec.counts.reconnects += 1,
                Role::Idle => {
                    self.idle_settled(slot);
                    self.rec.counts.reopens += 1;
                }
                _ => {}
            }
            if role == Role::Session {
                // As httperf: a server may close between the calls of a
                // session; the rest go out over a new connection.
                let next = self.session_next(slot);
                self.close(slot, now);
                return self.session_resume(slot, next, now);
            }
            self.close(slot, now);
            return self.after_loss(slot, now, false);
        }
        match role {
            Role::Session => match self.session_next(slot) {
                // The window is over (--duration): no further call; still
                // open at the end, the session is counted unfinished.
                Some(_) if !self.may_start(now) => self.slab[slot].st = St::Waiting,
                Some(Some(think)) if !think.is_zero() => {
                    self.think(slot, now + think);
                    self.set_interest(slot, Interest::READABLE);
                }
                Some(_) => {
                    let m = self.in_window(now);
                    self.start_request(slot, now, m, now);
                }
                None => {
                    self.rec.counts.conn_closed_by_client += 1;
                    self.close(slot, now);
                    self.session_over(slot, now);
                }
            },
            Role::Persistent => {
                if let Some((t, m)) = c.queue.pop_front() {
                    self.start_request(slot, t, m, now);
                } else {
                    c.st = St::Waiting;
                }
            }
            Role::Closed => {
                if self.may_start(now) {
                    let m = self.in_window(now);
                    self.start_request(slot, now, m, now);
                } else {
                    self.slab[slot].st = St::Waiting;
                }
            }
            Role::Idle => {
                c.st = St::Holding;
                self.idle_settled(slot);
            }
            Role::Slow => {
                self.rec.counts.conn_closed_by_client += 1;
                self.close(slot, now);
                self.connect(slot, now);
            }
            Role::Inactive => {}
        }
    }

    pub(super) fn idle_settled(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        if !c.established || c.calls_left == u32::MAX {
            return;
        }
        // calls_left marks "first reply seen" for idle connections.
        c.calls_left = u32::MAX;
        self.idle_first_pending = self.idle_first_pending.saturating_sub(1);
    }
}
