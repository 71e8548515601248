//! io_uring, through the `io-uring` crate: ring setup, the poll SQEs the
//! `uring` mechanism uses, submission (batched, and flushed when the
//! submission queue is full) and completion reaping in place.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, IoUring};

/// `IORING_POLL_ADD_MULTI` (uapi `io_uring.h`): keep the poll armed after each
/// completion.
const POLL_ADD_MULTI: u32 = 1;
/// `IORING_POLL_UPDATE_EVENTS`: a poll-remove SQE that replaces the events of
/// a running poll instead of removing it.
const POLL_UPDATE_EVENTS: u32 = 2;

/// One completion, copied out of the ring.
#[derive(Debug, Clone, Copy)]
pub struct Cqe {
    /// The `user_data` of the request.
    pub user_data: u64,
    /// The result: a poll mask, or `-errno`.
    pub result: i32,
    /// `IORING_CQE_F_MORE`: the (multishot) request stays armed.
    pub more: bool,
}

/// What the kernel's ring supports, as far as this crate cares.
#[derive(Debug, Clone, Copy)]
pub struct Features {
    /// `IORING_FEAT_EXT_ARG` (5.11): a timeout can be passed to `io_uring_enter`.
    pub ext_arg: bool,
    /// `IORING_FEAT_RSRC_TAGS` (5.13): the kernel has multishot poll and poll update.
    pub multishot_poll: bool,
}

/// A ring with `entries` submission slots and `cq_entries` completion slots.
pub struct Ring {
    ring: IoUring,
    skip_success: bool,
}

impl Ring {
    /// The ring's descriptor: readable when completions are waiting.
    pub fn as_fd(&self) -> BorrowedFd<'_> {
        self.ring.as_fd()
    }

    /// Set up the ring (`io_uring_setup`). Asks for `SUBMIT_ALL` (a failing
    /// SQE does not stop the batch) and cooperative task running (a
    /// completion does not interrupt the thread with an IPI; it runs at its
    /// next system call or wait), and retries without them on kernels that
    /// predate them (5.18, 5.19).
    pub fn new(entries: u32, cq_entries: u32) -> io::Result<Ring> {
        let modern = IoUring::builder()
            .setup_clamp()
            .setup_cqsize(cq_entries)
            .setup_submit_all()
            .setup_coop_taskrun()
            .setup_taskrun_flag()
            .build(entries);
        let ring = match modern {
            Ok(r) => r,
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => IoUring::builder()
                .setup_clamp()
                .setup_cqsize(cq_entries)
                .build(entries)?,
            Err(e) => return Err(e),
        };
        Ok(Ring {
            skip_success: ring.params().is_feature_skip_cqe_on_success(),
            ring,
        })
    }

    /// The features of the kernel's io_uring.
    pub fn features(&self) -> Features {
        let p = self.ring.params();
        Features {
            ext_arg: p.is_feature_ext_arg(),
            multishot_poll: p.is_feature_resource_tagging(),
        }
    }

    /// SQEs queued and not yet submitted.
    #[inline]
    pub fn sq_pending(&mut self) -> usize {
        self.ring.submission().len()
    }

    /// CQEs waiting in the completion ring.
    #[inline]
    pub fn cq_ready(&mut self) -> usize {
        self.ring.completion().len()
    }

    /// True when the kernel wants an `io_uring_enter` even though the
    /// completion ring is not empty: completions overflowed into its backlog
    /// (`IORING_SQ_CQ_OVERFLOW`) or deferred task work is pending
    /// (`IORING_SQ_TASKRUN`).
    #[inline]
    pub fn needs_enter(&mut self) -> bool {
        let sq = self.ring.submission();
        sq.cq_overflow() || sq.taskrun()
    }

    /// Queue a multishot `IORING_OP_POLL_ADD` for `fd` and `events`.
    /// Returns the SQEs submitted to make room (0 unless the queue was full).
    pub fn poll_add(&mut self, fd: RawFd, events: u32, user_data: u64) -> io::Result<usize> {
        push(&mut self.ring, &poll_add_entry(fd, events, user_data))
    }

    /// Queue a poll update: the running poll `target` now waits for `events`
    /// (a poll-remove SQE with `IORING_POLL_UPDATE_EVENTS`, which the crate
    /// has no builder for). The CQE, under `user_data`, is skipped on
    /// success where the kernel can.
    pub fn poll_update(&mut self, target: u64, events: u32, user_data: u64) -> io::Result<usize> {
        let e = with_skip(
            self.skip_success,
            poll_update_entry(target, events, user_data),
        );
        push(&mut self.ring, &e)
    }

    /// Queue the removal of the poll `target` (its CQE, under `user_data`, is
    /// skipped on success where the kernel can).
    pub fn poll_remove(&mut self, target: u64, user_data: u64) -> io::Result<usize> {
        let e = with_skip(self.skip_success, poll_remove_entry(target, user_data));
        push(&mut self.ring, &e)
    }

    /// One `io_uring_enter`: submit what is queued and wait until `want`
    /// completions are in the ring or `timeout` passes (the timeout goes in
    /// the extended argument, so no timeout SQE and no extra CQE). Returns
    /// the number of SQEs submitted; `ETIME`, `EINTR` and `EBUSY` come back
    /// as errors for the caller to decide.
    #[inline]
    pub fn enter(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        let sub = self.ring.submitter();
        match timeout {
            None => sub.submit_and_wait(want),
            Some(d) => {
                // Far beyond any real wait, and within the kernel's time_t.
                let ts = types::Timespec::from(d.min(Duration::from_secs(1 << 40)));
                let args = types::SubmitArgs::new().timespec(&ts);
                sub.submit_with_args(want, &args)
            }
        }
    }

    /// Hand every CQE in the ring to `f`, in place, then release them to the
    /// kernel. `f` may queue SQEs (a re-arm) through the [`Sq`] it is given.
    /// Returns the SQEs submitted to make room while doing so.
    #[inline]
    pub fn reap(&mut self, mut f: impl FnMut(Cqe, &mut Sq<'_, '_>)) -> io::Result<usize> {
        let skip_success = self.skip_success;
        let (submitter, mut sq, mut cq) = self.ring.split();
        let mut handle = Sq {
            submitter: &submitter,
            sq: &mut sq,
            skip_success,
            submitted: 0,
            error: None,
        };
        for cqe in &mut cq {
            f(
                Cqe {
                    user_data: cqe.user_data(),
                    result: cqe.result(),
                    more: cqueue::more(cqe.flags()),
                },
                &mut handle,
            );
        }
        match handle.error {
            Some(e) => Err(e),
            None => Ok(handle.submitted),
        }
    }
}

/// The submission side, lent to the closure of [`Ring::reap`].
pub struct Sq<'a, 'r> {
    submitter: &'a io_uring::Submitter<'r>,
    sq: &'a mut squeue::SubmissionQueue<'r>,
    skip_success: bool,
    submitted: usize,
    error: Option<io::Error>,
}

impl Sq<'_, '_> {
    /// Queue a multishot poll (see [`Ring::poll_add`]).
    pub fn poll_add(&mut self, fd: RawFd, events: u32, user_data: u64) {
        self.push(poll_add_entry(fd, events, user_data));
    }

    /// Queue a poll update (see [`Ring::poll_update`]).
    pub fn poll_update(&mut self, target: u64, events: u32, user_data: u64) {
        self.push(with_skip(
            self.skip_success,
            poll_update_entry(target, events, user_data),
        ));
    }

    /// Queue a poll removal (see [`Ring::poll_remove`]).
    pub fn poll_remove(&mut self, target: u64, user_data: u64) {
        self.push(with_skip(
            self.skip_success,
            poll_remove_entry(target, user_data),
        ));
    }

    /// Queue `e`, submitting first if the queue is full. A failure to make
    /// room is kept and reported by [`Ring::reap`] when it returns.
    fn push(&mut self, e: squeue::Entry) {
        loop {
            // SAFETY: a poll SQE refers to no memory of ours (only a
            // descriptor number and integers), so nothing has to outlive it.
            if unsafe { self.sq.push(&e) }.is_ok() {
                return;
            }
            self.sq.sync();
            match self.submitter.submit() {
                Ok(n) if n > 0 => self.submitted += n,
                Ok(_) => {
                    self.error = Some(full_error());
                    return;
                }
                Err(err) => {
                    self.error = Some(err);
                    return;
                }
            }
            self.sq.sync();
        }
    }
}

fn full_error() -> io::Error {
    io::Error::other("io_uring submission queue full and the kernel took none of it; try again")
}

fn poll_add_entry(fd: RawFd, events: u32, user_data: u64) -> squeue::Entry {
    opcode::PollAdd::new(types::Fd(fd), events)
        .multi(true)
        .build()
        .user_data(user_data)
}

fn poll_remove_entry(target: u64, user_data: u64) -> squeue::Entry {
    opcode::PollRemove::new(target).build().user_data(user_data)
}

fn with_skip(skip: bool, e: squeue::Entry) -> squeue::Entry {
    if skip {
        e.flags(squeue::Flags::SKIP_SUCCESS)
    } else {
        e
    }
}

// Field offsets in `struct io_uring_sqe` (uapi, stable ABI).
const SQE_OFF: usize = 8; // union { off, addr2 }: the new user_data of an update
const SQE_LEN: usize = 24; // len: the poll-update flags
const SQE_OP_FLAGS: usize = 28; // union { poll32_events, ... }
const _: () = assert!(std::mem::size_of::<squeue::Entry>() == 64);
#[cfg(not(target_endian = "little"))]
compile_error!("the poll-update SQE below writes poll32_events in little-endian order");

/// A poll-remove SQE turned into a poll update: `len` carries
/// `IORING_POLL_UPDATE_EVENTS | IORING_POLL_ADD_MULTI` (the latter so the
/// poll stays multishot), `poll32_events` the new mask, `off` (a new
/// user_data, unused) stays 0.
fn poll_update_entry(target: u64, events: u32, user_data: u64) -> squeue::Entry {
    let e = opcode::PollRemove::new(target).build().user_data(user_data);
    // SAFETY: `squeue::Entry` is a repr(C) wrapper of `io_uring_sqe`, a
    // 64-byte plain-data struct (size checked above) for which every byte
    // pattern is valid, so it may be viewed as bytes and back.
    let mut raw: [u8; 64] = unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(e) };
    raw[SQE_OFF..SQE_OFF + 8].copy_from_slice(&0u64.to_le_bytes());
    raw[SQE_LEN..SQE_LEN + 4].copy_from_slice(&(POLL_UPDATE_EVENTS | POLL_ADD_MULTI).to_le_bytes());
    raw[SQE_OP_FLAGS..SQE_OP_FLAGS + 4].copy_from_slice(&events.to_le_bytes());
    // SAFETY: as above; the bytes are a valid io_uring_sqe.
    unsafe { std::mem::transmute::<[u8; 64], squeue::Entry>(raw) }
}

/// Queue `e`, submitting what is queued first if the submission queue is
/// full (the only time SQEs leave before the next wait).
fn push(ring: &mut IoUring, e: &squeue::Entry) -> io::Result<usize> {
    let mut submitted = 0;
    loop {
        // SAFETY: the SQEs built here (poll add, update, remove) refer to no
        // memory of ours, only descriptor numbers and integers.
        if unsafe { ring.submission().push(e) }.is_ok() {
            return Ok(submitted);
        }
        match ring.submit()? {
            0 => return Err(full_error()),
            n => submitted += n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_update_entry_layout() {
        let e = poll_update_entry(0xabcd, 0x41, 7);
        assert_eq!(e.get_user_data(), 7);
        assert_eq!(e.get_opcode(), u32::from(opcode::PollRemove::CODE));
        // SAFETY (test): same reasoning as in `poll_update_entry`.
        let raw: [u8; 64] = unsafe { std::mem::transmute::<squeue::Entry, [u8; 64]>(e) };
        let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap());
        assert_eq!(u32_at(SQE_LEN), 3);
        assert_eq!(u32_at(SQE_OP_FLAGS), 0x41);
        assert_eq!(
            u64::from_le_bytes(raw[16..24].try_into().unwrap()),
            0xabcd,
            "addr = target"
        );
    }
}
