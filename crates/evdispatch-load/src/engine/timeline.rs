//! The worker's clock: timers, the periodic tick, progress lines, the
//! reporting intervals, the end of the window and the final report.

use super::*;

impl Engine<'_> {
    pub(super) fn interval_index(&self, now: Instant) -> usize {
        let i =
            (now.duration_since(self.t_ms).as_secs_f64() / self.interval.as_secs_f64()) as usize;
        i.min(self.n_intervals - 1)
    }

    /// Arm a timer for the connection of `slot` as it is now.
    pub(super) fn set_timer(&mut self, at: Instant, what: Timer, slot: usize) {
        let gen = self.slab[slot].gen;
        self.timers.push(Reverse((at, what, slot, gen)));
    }

    /// Count the connections open now in the peak of the interval of `now`.
    pub(super) fn note_peak(&mut self, now: Instant) {
        if self.phase == Phase::Run && now >= self.t_ms && now < self.t_me {
            let i = self.interval_index(now);
            let p = crate::results::record::at(&mut self.rec.interval_peak_conns, i);
            *p = (*p).max(self.open);
        }
    }

    pub(super) fn fire_timers(&mut self, now: Instant) {
        while let Some(Reverse((at, what, slot, gen))) = self.timers.peek().copied() {
            if at > now {
                break;
            }
            self.timers.pop();
            let c = &self.slab[slot];
            if c.gen != gen {
                continue;
            }
            match what {
                Timer::SlowStep if c.h2.is_some() => self.h2_slow_step(slot, now),
                Timer::SlowStep if c.st == St::Dribbling => self.slow_step(slot, now),
                Timer::Think if c.st == St::Waiting && self.may_start(now) => {
                    if self.spec.config.http == HttpVersion::Http2 {
                        self.h2_next_burst(slot, now);
                    } else if c.sock.is_none() {
                        // The server closed it during the think time.
                        self.session_reconnect(slot, now);
                    } else {
                        let m = self.in_window(now);
                        self.start_request(slot, now, m, now);
                    }
                }
                Timer::Retry if c.st == St::Backoff && self.phase != Phase::Drain => {
                    self.connect(slot, now)
                }
                _ => {}
            }
        }
    }

    pub(super) fn tick(&mut self, now: Instant) {
        self.next_tick = now + TICK;
        for slot in 0..self.slab.len() {
            let c = &self.slab[slot];
            match c.deadline {
                // The reply is in and counted; the rest of its request did
                // not go out in time: the generator ends the connection
                // (and goes on over a new one), no request failed.
                Some(d) if d <= now && c.st == St::Finishing => {
                    self.after_reply(slot, Some(false), now)
                }
                Some(d) if d <= now => self.fail(slot, Cause::Timeout, now),
                _ => {}
            }
        }
        self.note_peak(now);
        if matches!(self.phase, Phase::Run | Phase::Drain) && now >= self.next_progress {
            let phase = match self.phase {
                Phase::Drain => "drain",
                _ if now < self.t_ms => "warmup",
                _ => "measure",
            };
            self.emit_progress(now, phase);
        }
    }

    pub(super) fn emit_progress(&mut self, now: Instant, phase: &str) {
        let since = if self.phase == Phase::Setup {
            self.t_begin
        } else {
            self.t0
        };
        self.next_progress = now + self.interval.max(Duration::from_millis(500));
        let r = &self.rec.counts;
        let p = Progress {
            index: self.spec.index,
            phase: phase.to_string(),
            t_s: now.duration_since(since).as_secs_f64(),
            replies: r.replies + r.unmeasured_replies + r.slow_replies,
            errors: self.rec.errors_total(),
            open: self.open,
            reopens: r.reopens,
        };
        self.hooks.progress(&p);
    }

    /// The end of sampling interval `i` (the last one runs to the end of the window).
    pub(super) fn interval_end(&self, i: u32) -> Instant {
        if i as usize + 1 >= self.n_intervals {
            self.t_me
        } else {
            (self.t_ms + self.interval * (i + 1)).min(self.t_me)
        }
    }

    /// Report the sampling intervals that are over at `now`.
    pub(super) fn flush_intervals(&mut self, now: Instant) -> anyhow::Result<()> {
        while (self.iv_index as usize) < self.n_intervals
            && self.t_ms + self.interval * self.iv_index < self.t_me
            && now >= self.interval_end(self.iv_index)
        {
            let i = self.iv_index;
            let errors = self.rec.errors_total();
            let r = IntervalReport {
                index: i,
                start_s: (self.interval * i).as_secs_f64(),
                end_s: self.interval_end(i).duration_since(self.t_ms).as_secs_f64(),
                requests: self.iv_requests.get(i as usize).copied().unwrap_or(0),
                replies: self.iv_latency.len(),
                errors: errors - self.iv_base.unwrap_or(errors),
                latency_hist: encode(&self.iv_latency)?,
                latency_uncorrected_hist: encode(&self.iv_latency_uncorrected)?,
            };
            self.iv_base = Some(errors);
            self.iv_latency.reset();
            self.iv_latency_uncorrected.reset();
            self.iv_index += 1;
            self.hooks.interval(&r);
        }
        Ok(())
    }

    pub(super) fn end_window(&mut self, now: Instant) -> anyhow::Result<()> {
        self.flush_intervals(now.max(self.t_me))?;
        if let Some(m) = self.cpu.take() {
            self.cpu_use = Some(m.read()?);
        } else if self.cpu_use.is_none() {
            self.cpu_use = Some(evdispatch_host::CpuMeter::start(0)?.read()?);
        }
        self.phase = Phase::Drain;
        self.next_session = None;
        self.next_persistent = None;
        self.drain_end = now + self.timeout + TICK * 2;
        // Closed-loop connections stop here; nothing else is started.
        Ok(())
    }

    pub(super) fn finish(mut self, now: Instant) -> anyhow::Result<WorkerReport> {
        for slot in 0..self.slab.len() {
            let c = &mut self.slab[slot];
            let unsent = c.queue.iter().filter(|(_, m)| *m).count() as u64;
            // HTTP/2 requests a GOAWAY left unprocessed and not yet sent
            // again: the server never saw them.
            let retries = c.h2_retry.iter().filter(|r| r.1).count() as u64;
            self.rec.counts.unsent_at_end += unsent + retries;
            self.rec.counts.requests = self.rec.counts.requests.saturating_sub(retries);
            c.queue.clear();
            c.h2_retry.clear();
            c.h2_burst.clear();
            // A session not over: the end came before its last call.
            if c.role == Role::Session && c.st != St::Free {
                self.rec.counts.sessions_unfinished += 1;
            }
            if matches!(c.st, St::Sending | St::Receiving) && c.measured && !self.interrupted {
                // Still outstanding after the drain: it timed out.
                let role = c.role;
                self.rec.error(role, Cause::Timeout);
            }
            if c.sock.is_some() {
                if c.established {
                    self.rec.counts.conn_open_at_end += 1;
                } else {
                    self.rec.counts.conn_failed += 1;
                    let role = c.role;
                    self.rec.error(role, Cause::Timeout);
                }
                self.close(slot, now);
            }
        }
        self.ring_drain()?;
        let (cpu_s, pct) = self
            .cpu_use
            .map_or((0.0, 0.0), |u| (u.cpu_s, u.pct_of_core));
        if pct > 85.0 {
            self.warnings.push(format!(
                "worker {} (pid {}) used {:.0}% of a core over the measured window: the results may show the generator's limit, not the server's — add --procs or free a core",
                self.spec.index,
                std::process::id(),
                pct
            ));
        }
        let window_s = self.t_me.saturating_duration_since(self.t_ms).as_secs_f64();
        // Only the intervals the window covered in full give a rate (as
        // httperf's reply-rate samples): not a shorter last one, nor those
        // after Ctrl-C.
        let full = ((window_s / self.interval.as_secs_f64()) + 1e-9).floor() as usize;
        self.rec.interval_replies.resize(full, 0);
        let mut report = WorkerReport::new(
            self.spec.index,
            &self.rec,
            cpu_s,
            pct,
            self.setup_s,
            std::mem::take(&mut self.warnings),
        )?;
        report.window_s = window_s;
        report.window_start_unix_s = self.window_start_unix_s;
        report.interrupted = self.interrupted;
        if self.interrupted {
            report.signal = crate::interrupt::which_name().map(String::from);
        }
        Ok(report)
    }
}
