//! The io_uring engine's connections: a plain connection adopted by the
//! ring keeps a receive posted, and its requests go out as ring sends; an
//! HTTP/2 connection's bytes go out as the codec queues them, one send at
//! a time.

use super::*;

impl Engine<'_> {
    /// Move the plain connection of `slot` from the poller to the ring,
    /// where a receive stays posted for as long as it is open (a reply, or
    /// the server closing it, completes it). False when that failed (the
    /// failure is handled: the slot is reconnecting or backing off).
    pub(super) fn adopt(&mut self, slot: usize, now: Instant) -> bool {
        let c = &mut self.slab[slot];
        let Some(sock) = c.sock.as_ref() else {
            return true;
        };
        if self.ring.is_none() || c.tls.is_some() || c.ring {
            return true;
        }
        // The ring waits for the socket itself: a blocking socket makes it
        // poll instead of answering EAGAIN. Then the poller forgets it.
        let fd = sock.as_raw_fd();
        if let Err(e) = sock.set_nonblocking(false) {
            self.fail(slot, Cause::of(&e), now);
            return false;
        }
        self.poller_dirty = true;
        if let Err(e) = self.poller.deregister(fd) {
            self.fail(slot, Cause::of(&e), now);
            return false;
        }
        let c = &mut self.slab[slot];
        c.interest = None;
        c.ring = true;
        c.target = match self.ring.as_mut() {
            Some(r) => r.register(slot, fd),
            None => Target::Fd(fd),
        };
        c.ring_id = ring::next_id(c.ring_id);
        c.send_inflight = false;
        let multishot = self.ring.as_ref().is_some_and(|r| r.multishot());
        if c.rbuf.is_none() && !multishot {
            c.rbuf = Some(vec![0u8; ring_buf_size(&self.spec)].into_boxed_slice());
        }
        let id = c.ring_id;
        self.ring_post_recv(slot, now);
        let c = &self.slab[slot];
        c.ring && c.ring_id == id
    }

    /// Post the receive of `slot`, unless one is still in flight for the
    /// slot (an earlier connection's, not yet completed, that may still
    /// write the slot's buffer: its completion posts this one). A multishot
    /// receive (into the ring's pool) stays posted until it ends.
    #[allow(unsafe_code)]
    pub(super) fn ring_post_recv(&mut self, slot: usize, now: Instant) {
        let c = &mut self.slab[slot];
        let (Some(ring), Some(_)) = (self.ring.as_mut(), c.sock.as_ref()) else {
            return;
        };
        if !c.ring || c.recv_inflight {
            return;
        }
        let posted = if ring.multishot() {
            ring.recv_multi(c.target, slot, c.ring_id)
        } else {
            let Some(buf) = c.rbuf.as_deref_mut() else {
                return;
            };
            // SAFETY: the buffer is the slot's, which keeps it (never frees
            // or touches it) while `recv_inflight`, cleared only by the
            // completion.
            unsafe { ring.recv(c.target, buf, slot, c.ring_id) }
        };
        match posted {
            Ok(()) => c.recv_inflight = true,
            Err(e) => self.fail(slot, Cause::of(&e), now),
        }
    }

    /// Queue the send of what remains of the request of `slot`.
    #[allow(unsafe_code)]
    pub(super) fn ring_send(&mut self, slot: usize) {
        let c = &mut self.slab[slot];
        // One send at a time: the next request waits for the whole of this
        // one (`St::Finishing`).
        debug_assert!(!c.send_inflight);
        let (Some(ring), Some(_)) = (self.ring.as_mut(), c.sock.as_ref()) else {
            return;
        };
        let bytes = &self.requests[c.req].bytes[c.woff..];
        // SAFETY: `requests` is built once in `new` and never changed or
        // dropped before the engine, whose `finish` reaps every completion
        // (or leaks what the kernel could still touch).
        match unsafe { ring.send(c.target, bytes, slot, c.ring_id) } {
            Ok(true) => {
                // Sent whole, or its completion says it failed.
                self.rec.counts.bytes_sent += bytes.len() as u64;
                c.woff += bytes.len();
                self.request_out(slot);
            }
            Ok(false) => c.send_inflight = true,
            Err(e) => self.io_failed(slot, &e, Instant::now()),
        }
    }

    /// Send what the HTTP/2 codec of `slot` queued: the rest of the send
    /// cut short, or all it queued since, from the slot's buffer. One send
    /// at a time per slot (its completion sends what came meanwhile), also
    /// across connections: a new connection of the slot waits for the
    /// completion of its predecessor's send, which may still read the
    /// buffer. `false` when the connection failed.
    #[allow(unsafe_code)]
    pub(super) fn ring_h2_send(&mut self, slot: usize) -> bool {
        let c = &mut self.slab[slot];
        let (Some(ring), Some(_), Some(h)) =
            (self.ring.as_mut(), c.sock.as_ref(), c.h2.as_deref_mut())
        else {
            return false;
        };
        if c.wbuf_inflight {
            return true;
        }
        if c.wbuf_id != c.ring_id {
            // An earlier connection's bytes: never this one's to send.
            c.wbuf.clear();
            c.wbuf_off = 0;
            c.wbuf_id = c.ring_id;
        }
        if c.wbuf_off >= c.wbuf.len() {
            h.codec.take_pending(&mut c.wbuf);
            c.wbuf_off = 0;
            if c.wbuf.is_empty() {
                return true;
            }
        }
        let bytes = &c.wbuf[c.wbuf_off..];
        // SAFETY: the buffer is the slot's, which neither changes nor frees
        // it while `wbuf_inflight`, cleared only by the send's completion
        // (`Drop for Conn` leaks it otherwise).
        match unsafe { ring.send_reported(c.target, bytes, slot, c.ring_id) } {
            Ok(()) => {
                c.wbuf_inflight = true;
                true
            }
            Err(e) => {
                self.io_failed(slot, &e, Instant::now());
                false
            }
        }
    }

    /// A send of an HTTP/2 connection of `slot` completed: the next one
    /// goes out (the rest of this one, what the codec queued meanwhile, or
    /// the first bytes of a newer connection of the slot).
    fn ring_h2_sent(&mut self, slot: usize, id: u32, res: i32) {
        if res > 0 {
            self.rec.counts.bytes_sent += res as u64;
        }
        let Some(c) = self.slab.get_mut(slot) else {
            return;
        };
        c.wbuf_inflight = false;
        if !c.ring || c.sock.is_none() || c.h2.is_none() {
            return;
        }
        if c.ring_id == id {
            if res <= 0 {
                // A send of a non-empty buffer that moved nothing failed.
                let errno = if res < 0 { -res } else { libc::EPIPE };
                let e = io::Error::from_raw_os_error(errno);
                if !matches!(
                    e.kind(),
                    io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                ) {
                    return self.io_failed(slot, &e, Instant::now());
                }
            } else {
                c.wbuf_off += res as usize;
            }
        }
        self.ring_h2_send(slot);
    }

    /// A send of `slot` completed.
    pub(super) fn ring_sent(&mut self, slot: usize, id: u32, res: i32, quiet: bool) {
        if self.spec.config.http == HttpVersion::Http2 {
            return self.ring_h2_sent(slot, id, res);
        }
        // Bytes out are bytes out, also those of a connection closed while
        // its send was in flight (a quiet send counted them when queued).
        if res > 0 && !quiet {
            self.rec.counts.bytes_sent += res as u64;
        }
        let Some(c) = self.slab.get_mut(slot) else {
            return;
        };
        if !c.ring || c.ring_id != id || c.sock.is_none() {
            return; // an earlier connection's (adopt cleared the flag)
        }
        c.send_inflight = false;
        if quiet {
            // Quiet sends complete only when they fail or fall short (the
            // socket broke midway): either way the request is lost.
            let e = io::Error::from_raw_os_error(if res < 0 { -res } else { libc::EPIPE });
            return self.io_failed(slot, &e, Instant::now());
        }
        if res < 0 {
            let e = io::Error::from_raw_os_error(-res);
            if e.kind() == io::ErrorKind::Interrupted || e.kind() == io::ErrorKind::WouldBlock {
                return self.ring_send(slot);
            }
            return self.io_failed(slot, &e, Instant::now());
        }
        c.woff += res as usize;
        if matches!(c.st, St::Sending | St::Finishing) {
            if c.woff < self.requests[c.req].bytes.len() {
                self.ring_send(slot);
            } else {
                self.request_out(slot);
            }
        }
    }

    /// A receive of `slot` completed: the reply's bytes, or the end.
    #[allow(unsafe_code)]
    pub(super) fn ring_received(&mut self, done: &Completion) {
        let (slot, res) = (done.slot, done.result);
        let now = Instant::now();
        // A multishot receive's bytes are in a pool buffer, lent until parsed.
        let lent = match (done.buf, self.ring.as_ref()) {
            // SAFETY: given back below, before this returns; nothing here
            // drops the ring.
            (Some(bid), Some(r)) => Some(unsafe { r.lend(bid, res.max(0) as usize) }),
            _ => None,
        };
        let Some(c) = self.slab.get_mut(slot) else {
            if let (Some(l), Some(r)) = (lent, self.ring.as_mut()) {
                r.recycle(l);
            }
            return;
        };
        if !done.more {
            c.recv_inflight = false;
        }
        if c.ring && c.ring_id == done.id && c.sock.is_some() {
            match res {
                0 => self.on_eof(slot, now),
                n if n > 0 => {
                    let n = n as usize;
                    self.rec.counts.bytes_received += n as u64;
                    if let Some(l) = &lent {
                        self.on_data(slot, l);
                    } else {
                        let buf = c.rbuf.take().expect("a posted receive has its buffer");
                        self.on_data(slot, &buf[..n]);
                        // A connection that replaced this one in `on_data`
                        // (the reply closed it, the reconnect was immediate)
                        // has its own buffer, maybe lent to the kernel
                        // already: keep it, and let this one, no longer the
                        // kernel's, go.
                        let c = &mut self.slab[slot];
                        if c.rbuf.is_none() {
                            c.rbuf = Some(buf);
                        }
                    }
                }
                // The pool ran dry: the bytes wait in the socket for the
                // receive posted again below.
                n if n == -libc::ENOBUFS && lent.is_none() && !done.more => {}
                _ => {
                    let e = io::Error::from_raw_os_error(-res);
                    if !matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) {
                        self.io_failed(slot, &e, now);
                    }
                }
            }
        }
        if let (Some(l), Some(r)) = (lent, self.ring.as_mut()) {
            r.recycle(l);
        }
        // The connection of the slot now (this one, or a newer one that
        // waited for the buffer) gets its next receive.
        self.ring_post_recv(slot, now);
    }

    /// Reap the completions of the receives and reported sends still in flight
    /// after every connection was closed, for at most a second (the
    /// shutdowns complete them at once); a buffer still the kernel's after
    /// that is leaked rather than freed (see `Drop for Conn`).
    pub(super) fn ring_drain(&mut self) -> anyhow::Result<()> {
        let until = Instant::now() + Duration::from_secs(1);
        let mut done = std::mem::take(&mut self.completions);
        while let Some(ring) = self.ring.as_mut() {
            let now = Instant::now();
            if now >= until || !self.slab.iter().any(|c| c.recv_inflight || c.wbuf_inflight) {
                break;
            }
            ring.turn(Wait::Upto(until - now), &mut done)
                .context("io_uring_enter failed")?;
            for c in &done {
                match c.kind {
                    Kind::Send => self.ring_sent(c.slot, c.id, c.result, false),
                    Kind::QuietSend => self.ring_sent(c.slot, c.id, c.result, true),
                    Kind::Recv => self.ring_received(c),
                    Kind::Poller => {}
                }
            }
        }
        self.completions = done;
        Ok(())
    }
}
