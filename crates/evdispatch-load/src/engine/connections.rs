//! Connections: opening them (at most `connect_burst` at once), TLS
//! handshakes, readiness events, and their end (a failure, a close, a
//! long-lived connection reopened).

use super::*;

impl Engine<'_> {
    pub(super) fn alloc(&mut self, role: Role, now: Instant) -> usize {
        match self.free.pop() {
            Some(i) => {
                let c = &mut self.slab[i];
                c.role = role;
                c.gen = c.gen.wrapping_add(1);
                c.queue.clear();
                c.h2_retry.clear();
                c.h2_burst.clear();
                c.calls_left = 0;
                i
            }
            None => {
                self.slab.push(Conn::new(role, now));
                self.slab.len() - 1
            }
        }
    }

    /// When the next slow client may open, if the ramp holds it back.
    pub(super) fn slow_open_due(&self) -> Option<Instant> {
        let ramp = self.spec.config.slow_ramp_s;
        match self.to_open.front() {
            Some((Role::Slow, _)) if ramp > 0.0 && self.spec.slow > 0 => {
                let share = self.slow_opened as f64 / self.spec.slow as f64;
                Some(self.t_begin + Duration::from_secs_f64(ramp * share))
            }
            _ => None,
        }
    }

    pub(super) fn pump_opens(&mut self, now: Instant) {
        while self.connecting < self.spec.config.connect_burst {
            if self.slow_open_due().is_some_and(|due| due > now) {
                return;
            }
            let Some((role, n)) = self.to_open.front_mut() else {
                return;
            };
            let role = *role;
            if role == Role::Slow {
                self.slow_opened += 1;
            }
            *n -= 1;
            if *n == 0 {
                self.to_open.pop_front();
            }
            let slot = self.alloc(role, now);
            if matches!(role, Role::Persistent | Role::Closed) {
                self.persistent_slots.push(slot);
            }
            if role == Role::Idle {
                self.idle_first_pending += 1;
            }
            self.connect(slot, now);
        }
    }

    pub(super) fn note_open(&mut self, now: Instant, delta: i64) {
        self.open = (self.open as i64 + delta) as u64;
        if delta > 0 {
            self.rec.counts.conn_peak = self.rec.counts.conn_peak.max(self.open);
            self.note_peak(now);
        }
    }

    pub(super) fn new_socket(&mut self) -> io::Result<Socket> {
        let s = Socket::new(
            self.domain,
            Type::STREAM.nonblocking().cloexec(),
            Some(Protocol::TCP),
        )?;
        s.set_tcp_nodelay(true)?;
        let srcs = &self.spec.config.source_addrs;
        if !srcs.is_empty() {
            let src = srcs[self.src_rr % srcs.len()];
            self.src_rr = self.src_rr.wrapping_add(1);
            nix::sys::socket::setsockopt(
                &s,
                nix::sys::socket::sockopt::IpBindAddressNoPort,
                &true,
            )?;
            s.bind(&SockAddr::from(SocketAddr::new(src, 0)))?;
        }
        Ok(s)
    }

    /// Open (or re-open) the connection of `slot`.
    pub(super) fn connect(&mut self, slot: usize, now: Instant) {
        self.rec.counts.conn_attempted += 1;
        let sock = match self.new_socket() {
            Ok(s) => s,
            Err(e) => return self.connect_failed(slot, Cause::of(&e), now),
        };
        let res = sock.connect(&self.target);
        let in_progress = match &res {
            Ok(()) => false,
            Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => true,
            Err(e) => {
                let cause = Cause::of(e);
                drop(sock);
                return self.connect_failed(slot, cause, now);
            }
        };
        self.poller_dirty = true;
        if let Err(e) = self
            .poller
            .register(sock.as_raw_fd(), Token(slot), Interest::BOTH)
        {
            drop(sock);
            return self.connect_failed(slot, Cause::of(&e), now);
        }
        let c = &mut self.slab[slot];
        c.sock = Some(sock);
        c.interest = Some(Interest::BOTH);
        c.st = St::Connecting;
        c.t_connect = now;
        c.deadline = Some(now + self.timeout);
        c.established = false;
        c.tls = None;
        c.parser.reset();
        self.connecting += 1;
        self.note_open(now, 1);
        if !in_progress {
            self.on_connected(slot);
        }
    }

    pub(super) fn connect_failed(&mut self, slot: usize, cause: Cause, now: Instant) {
        self.rec.counts.conn_failed += 1;
        let role = self.slab[slot].role;
        self.rec.error(role, cause);
        self.after_loss(slot, now, true);
    }

    pub(super) fn on_connected(&mut self, slot: usize) {
        let now = Instant::now();
        let err = match self.slab[slot].sock.as_ref().map(|s| s.take_error()) {
            Some(Ok(None)) => None,
            Some(Ok(Some(e))) | Some(Err(e)) => Some(e),
            None => Some(io::Error::other("no socket")),
        };
        self.connecting -= 1;
        if let Some(e) = err {
            self.close(slot, now);
            return self.connect_failed(slot, Cause::of(&e), now);
        }
        self.rec.counts.conn_established += 1;
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let c = &mut self.slab[slot];
        c.established = true;
        c.deadline = None;
        if in_window {
            let _ = self
                .rec
                .histograms
                .connect
                .record(elapsed_us(c.t_connect, now).max(1));
        }
        if let Some(client) = &self.tls {
            // The handshake counts as part of connecting (the connect burst
            // and the setup wait for it).
            self.connecting += 1;
            c.st = St::Handshaking;
            c.t_tcp = now;
            c.deadline = Some(now + self.timeout);
            match client.connection() {
                Ok(t) => c.tls = Some(Box::new(t)),
                Err(e) => return self.tls_failed(slot, &e, now),
            }
            return self.on_readable(slot);
        }
        self.ready(slot, now);
    }

    /// The TLS handshake of `slot` is complete.
    pub(super) fn handshake_done(&mut self, slot: usize, now: Instant) {
        self.connecting -= 1;
        let in_window = self.phase == Phase::Run && self.in_window(now);
        let c = &mut self.slab[slot];
        c.deadline = None;
        self.rec.counts.tls_handshakes += 1;
        let resumed = c.tls.as_ref().and_then(|t| t.handshake_kind());
        if resumed == Some(rustls::HandshakeKind::Resumed) {
            self.rec.counts.tls_resumed += 1;
        }
        if in_window {
            let _ = self
                .rec
                .histograms
                .tls_handshake
                .record(elapsed_us(c.t_tcp, now).max(1));
        }
        self.ready(slot, now);
    }

    /// A TLS failure: counted as `tls`, explained once in the warnings.
    pub(super) fn tls_failed(&mut self, slot: usize, e: &rustls::Error, now: Instant) {
        if !self.tls_warned {
            self.tls_warned = true;
            self.warnings.push(format!(
                "TLS failure with {}: {}",
                self.spec.config.target,
                crate::tls::explain(e)
            ));
        }
        self.fail(slot, Cause::Tls, now);
    }

    /// The connection (with its TLS handshake, if any) is ready: start what
    /// its role does.
    pub(super) fn ready(&mut self, slot: usize, now: Instant) {
        if matches!(self.slab[slot].role, Role::Persistent | Role::Closed) && !self.adopt(slot, now)
        {
            return; // failed, and already handled
        }
        if self.spec.config.http == HttpVersion::Http2 {
            self.h2_ready(slot);
            if self.slab[slot].role == Role::Slow {
                self.slow_first_step(slot, now);
            }
            return;
        }
        let c = &mut self.slab[slot];
        match c.role {
            Role::Session => {
                let (intended, measured) = (c.intended, c.measured);
                self.start_request(slot, intended, measured, now);
            }
            Role::Persistent | Role::Closed => {
                if let Some((t, m)) = c.queue.pop_front() {
                    self.start_request(slot, t, m, now);
                } else if c.role == Role::Closed && self.may_start(now) {
                    let m = self.in_window(now);
                    self.start_request(slot, now, m, now);
                } else {
                    self.slab[slot].st = St::Waiting;
                    self.set_interest(slot, Interest::READABLE);
                }
            }
            Role::Inactive => {
                c.st = St::Sending;
                c.woff = 0;
                if let Some((w, rng)) = &mut self.pick {
                    c.req = w.sample(rng);
                }
                self.write_request(slot);
            }
            Role::Idle => {
                self.start_request(slot, now, false, now);
            }
            Role::Slow => {
                c.st = St::Dribbling;
                c.woff = 0;
                if let Some((w, rng)) = &mut self.pick {
                    c.req = w.sample(rng);
                }
                c.parser.expect_no_body(self.requests[c.req].head);
                c.sent = now;
                c.intended = now;
                self.slow_first_step(slot, now);
                self.set_interest(slot, Interest::READABLE);
            }
        }
    }

    /// Arm a slow client's first step. Each slow client steps at its own
    /// phase of the interval, as independent clients would: started
    /// together, thousands of them would otherwise step in one burst per
    /// interval, an artefact of one generator driving them all.
    pub(super) fn slow_first_step(&mut self, slot: usize, now: Instant) {
        let phase = (slot as f64 * 0.618_033_988_749_895).fract();
        let at = now + Duration::from_secs_f64(phase * self.spec.config.slow_interval_s);
        self.set_timer(at, Timer::SlowStep, slot);
    }

    pub(super) fn set_interest(&mut self, slot: usize, want: Interest) {
        let c = &mut self.slab[slot];
        if c.interest == Some(want) || c.ring {
            return;
        }
        let fd = c.fd();
        self.poller_dirty = true;
        if self.poller.modify(fd, Token(slot), want).is_ok() {
            c.interest = Some(want);
        }
    }

    /// An error on an established connection or request: count it, close,
    /// and carry on as the role wants.
    pub(super) fn fail(&mut self, slot: usize, cause: Cause, now: Instant) {
        let c = &self.slab[slot];
        let role = c.role;
        if c.st == St::Connecting {
            self.connecting -= 1;
            self.close(slot, now);
            return self.connect_failed(slot, cause, now);
        }
        if c.st == St::Handshaking {
            // Established, then the handshake failed: closed by the
            // generator, and retried after a pause like a failed connect.
            self.connecting -= 1;
            self.rec.error(role, cause);
            self.rec.counts.conn_closed_by_client += 1;
            self.close(slot, now);
            return self.after_loss(slot, now, true);
        }
        self.rec.error(role, cause);
        // Every request in flight on an HTTP/2 connection is lost with it.
        let more = self.h2_outstanding(slot).saturating_sub(1) as u64;
        self.rec.errors[role as usize][cause as usize] += more;
        if matches!(cause, Cause::Reset | Cause::ServerClosed) {
            self.rec.counts.conn_closed_by_server += 1;
            if matches!(role, Role::Persistent | Role::Closed) {
                // Re-established below, as after a close between requests.
                self.rec.counts.reconnects += 1;
            }
        } else {
            self.rec.counts.conn_closed_by_client += 1;
        }
        self.close(slot, now);
        self.after_loss(slot, now, false);
    }

    pub(super) fn close(&mut self, slot: usize, now: Instant) {
        let c = &mut self.slab[slot];
        let had = c.sock.take();
        c.h2 = None;
        c.interest = None;
        c.deadline = None;
        c.st = St::Free;
        c.parser.reset();
        if let (Some(mut tls), Some(sock)) = (c.tls.take(), had.as_ref()) {
            if !tls.is_handshaking() {
                tls.send_close_notify();
                let mut sent = 0;
                let _ = tls_flush(&mut tls, sock, &mut sent);
                self.rec.counts.bytes_sent += sent;
            }
        }
        if let Some(sock) = had {
            if std::mem::take(&mut c.ring) {
                // A receive in flight holds the socket open past `close`:
                // shutting it down completes that receive (with 0).
                let _ = sock.shutdown(std::net::Shutdown::Both);
                if let Some(r) = self.ring.as_mut() {
                    // Requests queued this turn for this connection go out
                    // now, while its entry and descriptor still name it
                    // (the slot may reconnect before the turn submits).
                    let _ = r.flush();
                    if let Target::Fixed(i) = c.target {
                        // The table holds the socket open too.
                        r.unregister(i);
                    }
                }
                c.target = Target::Fd(-1);
            } else {
                self.poller_dirty = true;
                let _ = self.poller.deregister(sock.as_raw_fd());
            }
            drop(sock);
            self.note_open(now, -1);
        }
    }

    /// After a connection is gone: sessions end, long-lived connections come
    /// back (after a pause when the connect itself failed).
    pub(super) fn after_loss(&mut self, slot: usize, now: Instant, connect_failed: bool) {
        let c = &mut self.slab[slot];
        c.deadline = None;
        match c.role {
            Role::Session => {
                c.st = St::Free;
                self.session_over(slot, now);
            }
            _ => {
                // An idle connection lost before its first reply stays
                // pending; its reopen settles it.
                c.gen = c.gen.wrapping_add(1);
                // In the drain, a connection comes back at once only to
                // carry HTTP/2 requests a GOAWAY left unprocessed.
                if connect_failed || (self.phase == Phase::Drain && c.h2_retry.is_empty()) {
                    c.st = St::Backoff;
                    self.set_timer(now + RETRY, Timer::Retry, slot);
                } else {
                    self.connect(slot, now);
                }
            }
        }
    }
}
