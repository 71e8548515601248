//! io_uring, through the `io-uring` crate: ring setup (with fallbacks for
//! older kernels), submission (batched, and flushed when the submission
//! queue is full), the wait, the ring of provided buffers, and the poll
//! SQEs the `uring` mechanism uses with completion reaping in place. The
//! first four are public as [`crate::uring`], for the completion-model
//! loops of the server and the load generator.

use std::alloc::Layout;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use io_uring::{cqueue, opcode, squeue, types, types::BufRingEntry, IoUring};

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
    /// Poll entries (a descriptor and integers, no memory of ours) that
    /// found the submission queue full while completions were read and
    /// that the kernel did not take afterwards either: tried again at the
    /// end of every [`Ring::reap`], in order, so a re-arm is late, never lost.
    backlog: Vec<squeue::Entry>,
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
        // A Poller may move between threads: no single issuer.
        let (ring, _) = setup(entries, cq_entries, Issuer::Any)?;
        Ok(Ring {
            skip_success: ring.params().is_feature_skip_cqe_on_success(),
            ring,
            backlog: Vec::new(),
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
        // SAFETY: a poll SQE names a descriptor and integers, no memory.
        unsafe { push(&mut self.ring, &poll_add_entry(fd, events, user_data)) }
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
        // SAFETY: a poll update names integers only.
        unsafe { push(&mut self.ring, &e) }
    }

    /// Queue the removal of the poll `target` (its CQE, under `user_data`, is
    /// skipped on success where the kernel can).
    pub fn poll_remove(&mut self, target: u64, user_data: u64) -> io::Result<usize> {
        let e = with_skip(self.skip_success, poll_remove_entry(target, user_data));
        // SAFETY: a poll removal names integers only.
        unsafe { push(&mut self.ring, &e) }
    }

    /// One `io_uring_enter`: submit what is queued and wait until `want`
    /// completions are in the ring or `timeout` passes (the timeout goes in
    /// the extended argument, so no timeout SQE and no extra CQE). Returns
    /// the number of SQEs submitted; `ETIME`, `EINTR` and `EBUSY` come back
    /// as errors for the caller to decide.
    #[inline]
    pub fn enter(&mut self, want: usize, timeout: Option<Duration>) -> io::Result<usize> {
        enter(
            &self.ring,
            want,
            timeout.map_or(Wait::Completion, Wait::Upto),
        )
    }

    /// Hand every CQE in the ring to `f`, in place, then release them to the
    /// kernel. `f` may queue SQEs (a re-arm) through the [`Sq`] it is given.
    /// Returns the SQEs submitted to make room for them.
    ///
    /// Nothing is submitted while completions are being read: the kernel
    /// would still see them in the ring, and with the ring full and its
    /// backlog in use a submit can fail (`EBUSY`). Entries that find the
    /// queue full wait until the completions are released and go in then;
    /// any the kernel still does not take stay queued here, in order, and
    /// are tried again at the end of the next reap: a re-arm may be late,
    /// but its descriptor is never silenced.
    #[inline]
    pub fn reap(&mut self, mut f: impl FnMut(Cqe, &mut Sq<'_, '_>)) -> io::Result<usize> {
        let skip_success = self.skip_success;
        let (_, mut sq, mut cq) = self.ring.split();
        let mut handle = Sq {
            sq: &mut sq,
            skip_success,
            deferred: Vec::new(),
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
        let deferred = handle.deferred;
        // Publish what was queued and release the completions read.
        drop(sq);
        drop(cq);
        if deferred.is_empty() && self.backlog.is_empty() {
            return Ok(0);
        }
        self.backlog.extend(deferred);
        Ok(self.push_backlog())
    }

    /// Queue the backlog's entries in order, submitting to make room; stop
    /// at the first the kernel will not take (it and the rest stay).
    /// Returns the SQEs submitted.
    fn push_backlog(&mut self) -> usize {
        let mut submitted = 0;
        let mut rest = std::mem::take(&mut self.backlog).into_iter();
        for e in rest.by_ref() {
            // SAFETY: the backlog holds poll entries only, which name a
            // descriptor and integers, no memory that has to outlive them.
            match unsafe { push(&mut self.ring, &e) } {
                Ok(n) => submitted += n,
                Err(_) => {
                    self.backlog.push(e);
                    break;
                }
            }
        }
        self.backlog.extend(rest);
        submitted
    }
}

/// The submission side, lent to the closure of [`Ring::reap`].
pub struct Sq<'a, 'r> {
    sq: &'a mut squeue::SubmissionQueue<'r>,
    skip_success: bool,
    /// Entries that found the queue full, queued once the completions are
    /// released.
    deferred: Vec<squeue::Entry>,
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

    /// Queue `e`, or keep it for [`Ring::reap`] to queue once the
    /// completions are released when the queue is full.
    fn push(&mut self, e: squeue::Entry) {
        // SAFETY: a poll SQE refers to no memory of ours (only a descriptor
        // number and integers), so nothing has to outlive it.
        if unsafe { self.sq.push(&e) }.is_err() {
            self.deferred.push(e);
        }
    }
}

/// Try `try_push` on `q` until it succeeds, calling `submit` to make room
/// each time it fails. Returns the entries submitted meanwhile, and an
/// error when a submit failed or the kernel took none of a full queue.
fn making_room<Q>(
    q: &mut Q,
    mut try_push: impl FnMut(&mut Q) -> bool,
    mut submit: impl FnMut(&mut Q) -> io::Result<usize>,
) -> (usize, io::Result<()>) {
    let mut submitted = 0;
    while !try_push(q) {
        match submit(q) {
            Ok(0) => return (submitted, Err(full_error())),
            Ok(n) => submitted += n,
            Err(e) => return (submitted, Err(e)),
        }
    }
    (submitted, Ok(()))
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

/// Who submits to a ring: decides the modes [`setup`] tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Issuer {
    /// One thread, the one that made the ring, submits and reaps: deferred
    /// task running ([`Taskrun::Deferred`]) is tried first.
    Single,
    /// The ring may be used from another thread than its maker's (a
    /// [`Poller`](crate::Poller) is `Send`).
    Any,
}

/// How a ring set up by [`setup`] runs the kernel's completion work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taskrun {
    /// `SINGLE_ISSUER | DEFER_TASKRUN` (Linux 6.1): the work runs only when
    /// the ring's thread waits for completions, so the thread is woken once
    /// the completions it waits for are there, not once per socket event.
    Deferred,
    /// `COOP_TASKRUN` (5.19): a completion does not interrupt the thread
    /// with an inter-processor interrupt; its work runs at the thread's
    /// next system call or wait.
    Cooperative,
    /// An older kernel's plain ring.
    Plain,
}

/// Set up a ring of `entries` submission and `cq_entries` completion slots
/// (clamped to the kernel's maxima), trying the modes from the best down:
/// [`Taskrun::Deferred`] (with [`Issuer::Single`] only), then
/// [`Taskrun::Cooperative`], then [`Taskrun::Plain`]. The first two ask for
/// `SUBMIT_ALL` (a failing entry does not stop the batch) and
/// `TASKRUN_FLAG` (the kernel flags pending completion work in the
/// submission ring). A kernel that lacks a flag refuses it with `EINVAL`
/// and the next mode is tried; any other error (`ENOSYS` without io_uring,
/// `EPERM` where it is disabled, `ENOMEM`) is returned as it is.
pub fn setup(entries: u32, cq_entries: u32, issuer: Issuer) -> io::Result<(IoUring, Taskrun)> {
    let modes: &[Taskrun] = match issuer {
        Issuer::Single => &[Taskrun::Deferred, Taskrun::Cooperative, Taskrun::Plain],
        Issuer::Any => &[Taskrun::Cooperative, Taskrun::Plain],
    };
    let mut refused = None;
    for &mode in modes {
        let mut b = IoUring::builder();
        b.setup_clamp().setup_cqsize(cq_entries);
        match mode {
            Taskrun::Deferred => {
                b.setup_submit_all()
                    .setup_single_issuer()
                    .setup_defer_taskrun()
                    .setup_taskrun_flag();
            }
            Taskrun::Cooperative => {
                b.setup_submit_all()
                    .setup_coop_taskrun()
                    .setup_taskrun_flag();
            }
            Taskrun::Plain => {}
        }
        match b.build(entries) {
            Ok(ring) => return Ok((ring, mode)),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => refused = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(refused.unwrap_or_else(|| io::Error::other("io_uring setup failed")))
}

/// Queue `entry` on `ring`, submitting what is queued first while the
/// submission queue is full (the only time entries leave before the next
/// wait). Returns the entries submitted to make room (0 unless the queue
/// was full); an error when the kernel took none of a full queue.
///
/// # Safety
/// Every buffer `entry` names must stay valid until its last completion
/// (a multishot request's last is the one without `more`) has been
/// reaped, and a buffer the kernel writes must be neither read nor written
/// by anyone else until then. An entry that draws from a buffer group
/// names that group's pool ([`BufRing`]), which must outlive it likewise.
#[inline]
pub unsafe fn push(ring: &mut IoUring, entry: &squeue::Entry) -> io::Result<usize> {
    let (submitted, done) = making_room(
        ring,
        // SAFETY: forwarded to the caller's contract above.
        |ring| unsafe { ring.submission().push(entry) }.is_ok(),
        |ring| ring.submit(),
    );
    done.map(|()| submitted)
}

/// How long [`enter`] waits for completions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Not at all: submit, and run the completion work already pending (a
    /// ring with deferred task running runs it only inside a wait).
    No,
    /// Until the completions are there or this long has passed (the
    /// timeout goes in the extended argument, Linux 5.11: no timeout entry
    /// and no extra completion).
    Upto(Duration),
    /// Until the completions are there, however long: the kernel neither
    /// reads the clock nor arms a timer for the wait (the caller has
    /// something that completes on time).
    Completion,
}

/// The longest wait [`Wait::Upto`] passes on: far beyond any real wait,
/// and within the kernel's `time_t`.
const MAX_WAIT: Duration = Duration::from_secs(1 << 30);

/// One `io_uring_enter`: submit what is queued and wait as `wait` says for
/// `want` completions (ignored with [`Wait::No`]). Returns the entries
/// submitted. The ends of a wait
/// that are not failures (the timeout passed, a signal, completions backed
/// up behind a full ring) come back as errors that [`ends_wait`] tells
/// apart.
#[inline]
pub fn enter(ring: &IoUring, want: usize, wait: Wait) -> io::Result<usize> {
    let sub = ring.submitter();
    match wait {
        Wait::No => sub.submit_and_wait(0),
        Wait::Completion => sub.submit_and_wait(want),
        Wait::Upto(d) => {
            let ts = types::Timespec::from(d.min(MAX_WAIT));
            let args = types::SubmitArgs::new().timespec(&ts);
            sub.submit_with_args(want, &args)
        }
    }
}

/// Whether an error of [`enter`] only ended its wait: `ETIME` (the timeout
/// passed), `EINTR` (a signal) or `EBUSY` (completions backed up behind a
/// full completion ring: reaping makes room).
pub fn ends_wait(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ETIME | libc::EINTR | libc::EBUSY)
    )
}

/// A ring of provided buffers (`IORING_REGISTER_PBUF_RING`, Linux 5.19):
/// a pool of buffers the kernel picks from only when data arrives, for
/// receives posted with its group (a multishot receive, or a receive with
/// `BUFFER_SELECT`). A receive posted on an idle connection then holds no
/// buffer, not even in the kernel, and the pool is shared by every
/// connection of the ring.
///
/// The kernel may write any buffer it holds at any time, so a buffer is
/// read only between the completion that hands it over and
/// [`BufRing::give_back`]. The memory is freed only by
/// [`BufRing::release`], once the kernel has let go of it: a `BufRing`
/// dropped while registered is leaked, never freed under the kernel.
pub struct BufRing {
    /// The ring of buffer descriptors the kernel takes from (page-aligned,
    /// `entries` of them; its first entry's reserved field is the tail).
    ring: *mut BufRingEntry,
    /// The buffers, `entries` × `size` bytes.
    bufs: *mut u8,
    layouts: (Layout, Layout),
    entries: u16,
    size: usize,
    /// The tail published to the kernel.
    tail: u16,
    group: u16,
    /// The descriptor of the ring it was registered with.
    ring_fd: RawFd,
    /// The kernel may still use the memory.
    registered: bool,
}

// SAFETY: a `BufRing` owns its memory alone, and touches it only through
// `&self` (reads of buffers the kernel handed over) and `&mut self`.
unsafe impl Send for BufRing {}

impl BufRing {
    /// Register with `ring`, as buffer group `group`, a pool of `entries`
    /// buffers (a power of two, at most 32,768) of `size` bytes, every one
    /// given to the kernel. Fails where the kernel has no provided-buffer
    /// rings (before 5.19) or the memory cannot be had.
    pub fn register(ring: &IoUring, entries: u16, size: usize, group: u16) -> io::Result<BufRing> {
        let total = (entries as usize).checked_mul(size);
        if !entries.is_power_of_two()
            || entries > 1 << 15
            || size == 0
            || size > u32::MAX as usize
            || total.is_none()
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a provided-buffer ring takes a power of two up to 32768 buffers \
                     of 1 byte to 4 GiB - 1, not {entries} of {size}"
                ),
            ));
        }
        // The kernel maps the ring's entries by pages: page-aligned, of
        // whatever size pages are here (4 KiB, or 16/64 KiB on arm64).
        // SAFETY: sysconf reads a constant of the system; no memory passed.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .unwrap_or(4096)
            .max(4096);
        let too_big = |_: std::alloc::LayoutError| {
            io::Error::new(io::ErrorKind::OutOfMemory, "provided-buffer ring too large")
        };
        let ring_layout =
            Layout::from_size_align(entries as usize * std::mem::size_of::<BufRingEntry>(), page)
                .map_err(too_big)?;
        let bufs_layout = Layout::from_size_align(total.unwrap_or(0), 64).map_err(too_big)?;
        // SAFETY: both layouts have a non-zero size (checked above). Zeroed,
        // so that every byte of a buffer is initialised whatever the kernel
        // wrote.
        let (ring_mem, bufs) = unsafe {
            (
                std::alloc::alloc_zeroed(ring_layout) as *mut BufRingEntry,
                std::alloc::alloc_zeroed(bufs_layout),
            )
        };
        let mut pool = BufRing {
            ring: ring_mem,
            bufs,
            layouts: (ring_layout, bufs_layout),
            entries,
            size,
            tail: 0,
            group,
            ring_fd: ring.as_raw_fd(),
            registered: false,
        };
        if ring_mem.is_null() || bufs.is_null() {
            return Err(io::Error::new(
                io::ErrorKind::OutOfMemory,
                "no memory for the provided-buffer ring",
            ));
        }
        // SAFETY: the ring memory is page-aligned and zeroed (tail 0), and
        // freed only once the registration has ended (`release`), or never.
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(ring_mem as u64, entries, group, 0)?;
        }
        pool.registered = true;
        for bid in 0..entries {
            pool.put(bid);
        }
        pool.publish();
        Ok(pool)
    }

    /// The buffer group id a receive names (with `BUFFER_SELECT`, or a
    /// multishot receive) to draw from this pool.
    pub fn group(&self) -> u16 {
        self.group
    }

    /// The size of each buffer.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The first `len` bytes of buffer `bid` (as a completion gives it),
    /// at most the buffer's size.
    ///
    /// # Safety
    /// The buffer must be the caller's: handed over by a completion of this
    /// pool's group and not given back since. The slice must be gone before
    /// [`BufRing::give_back`] gives it back.
    #[inline]
    pub unsafe fn buf(&self, bid: u16, len: usize) -> &[u8] {
        let bid = bid & (self.entries - 1);
        // SAFETY: `bid` is masked below `entries`, so the buffer lies within
        // the pool; the kernel wrote these bytes and does not touch them
        // until the caller gives the buffer back (the caller's contract).
        unsafe {
            std::slice::from_raw_parts(self.bufs.add(bid as usize * self.size), len.min(self.size))
        }
    }

    /// Give buffer `bid` back to the kernel.
    ///
    /// # Safety
    /// The buffer must be the caller's (handed over by a completion of this
    /// pool's group and not given back since), and no slice of it from
    /// [`BufRing::buf`] may be alive: given back twice, one buffer could be
    /// handed to two receives at once.
    #[inline]
    pub unsafe fn give_back(&mut self, bid: u16) {
        self.put(bid);
        self.publish();
    }

    /// Put buffer `bid` at the tail of the ring (not yet published).
    fn put(&mut self, bid: u16) {
        let mask = self.entries - 1;
        let bid = bid & mask;
        // SAFETY: the index is masked into the ring; the entry at the tail
        // is not the kernel's (it takes only up to the published tail).
        unsafe {
            let e = &mut *self.ring.add((self.tail & mask) as usize);
            e.set_addr(self.bufs.add(bid as usize * self.size) as u64);
            e.set_len(self.size as u32);
            e.set_bid(bid);
        }
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publish the tail, with release ordering after the entries written.
    fn publish(&mut self) {
        // SAFETY: the tail is the reserved field of the ring's first entry,
        // inside our memory and aligned for a u16, which the kernel reads
        // atomically.
        unsafe {
            let tail = BufRingEntry::tail(self.ring) as *const AtomicU16;
            (*tail).store(self.tail, Ordering::Release);
        }
    }

    /// Unregister the pool from `ring`, then free its memory: the kernel
    /// takes no buffer from an unregistered group, and a socket receive
    /// issued inline or from the submitter's task work picks and fills its
    /// buffer under the ring's lock, which unregistering takes too, so none
    /// is being filled once this returns. (A receive the kernel hands to
    /// its worker threads, io-wq, fills its buffer outside that lock;
    /// sockets go there only when forced, which these loops never ask.)
    /// Where the kernel refuses, or `ring` is not the ring the pool was
    /// registered with, the memory is leaked rather than freed under the
    /// kernel. True when it was freed.
    ///
    /// # Safety
    /// `ring` must be the ring the pool was registered with (a different
    /// ring that reuses its descriptor number and group id would lose its
    /// own group instead), and no receive from this group may have gone to
    /// io-wq (`IOSQE_ASYNC`, or a file the kernel cannot poll): such a
    /// receive may still fill a buffer after this returns.
    pub unsafe fn release(mut self, ring: &IoUring) -> bool {
        if ring.as_raw_fd() == self.ring_fd
            && ring.submitter().unregister_buf_ring(self.group).is_ok()
        {
            self.registered = false;
        }
        !self.registered
        // Dropped here: freed unless still registered.
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        if self.registered {
            // The kernel may still use it (never released): leaked.
            return;
        }
        // SAFETY: allocated in `register` with these layouts (null where an
        // allocation failed); the kernel never had them, or let go of them.
        unsafe {
            if !self.ring.is_null() {
                std::alloc::dealloc(self.ring as *mut u8, self.layouts.0);
            }
            if !self.bufs.is_null() {
                std::alloc::dealloc(self.bufs, self.layouts.1);
            }
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
