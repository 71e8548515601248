//! The public io_uring building blocks (`evdispatch::uring`) that the
//! server's and the load generator's completion loops are written on:
//! set-up, a push that makes room, the wait, and the provided-buffer pool.
//! Skipped, with the reason, only where the kernel lacks io_uring or the
//! feature under test; any other error fails.

use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use evdispatch::uring::io_uring::{cqueue, opcode, squeue, types, IoUring};
use evdispatch::uring::{self, BufRing, Issuer, Taskrun, Wait};

/// Errors that mean "not here": no io_uring (ENOSYS), disabled (EPERM,
/// EACCES), or a kernel too old for what is asked (EINVAL).
fn unavailable(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOSYS | libc::EPERM | libc::EACCES | libc::EINVAL)
    )
}

/// A ring with the wait timeout argument (Linux 5.11), or the skip reason.
fn ring_or_skip(issuer: Issuer) -> Option<(IoUring, Taskrun)> {
    match uring::setup(8, 32, issuer) {
        Ok((ring, _)) if !ring.params().is_feature_ext_arg() => {
            eprintln!("skipped: this kernel's io_uring takes no wait timeout (Linux 5.11)");
            None
        }
        Ok(r) => Some(r),
        Err(e) if unavailable(&e) => {
            eprintln!("skipped: io_uring unavailable here ({e})");
            None
        }
        Err(e) => panic!("io_uring setup failed: {e}"),
    }
}

/// Wait up to 5 s for completions and return them (user data, result,
/// flags).
fn reap(ring: &mut IoUring) -> Vec<(u64, i32, u32)> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match uring::enter(ring, 1, Wait::Upto(Duration::from_millis(100))) {
            Ok(_) => {}
            Err(e) if uring::ends_wait(&e) => {}
            Err(e) => panic!("{e}"),
        }
        let got: Vec<_> = ring
            .completion()
            .map(|c| (c.user_data(), c.result(), c.flags()))
            .collect();
        if !got.is_empty() {
            return got;
        }
        assert!(Instant::now() < deadline, "no completion within 5 s");
    }
}

#[test]
fn setup_push_and_wait() {
    let Some((mut ring, mode)) = ring_or_skip(Issuer::Any) else {
        return;
    };
    assert_ne!(
        mode,
        Taskrun::Deferred,
        "a ring any thread may use is not single-issuer"
    );
    // Nothing queued: a wait with a timeout ends with ETIME, a normal end,
    // and not before its time (a signal may end a wait early: wait again).
    let t = Instant::now();
    loop {
        let e = uring::enter(&ring, 1, Wait::Upto(Duration::from_millis(20))).unwrap_err();
        assert!(uring::ends_wait(&e), "{e}");
        if e.raw_os_error() == Some(libc::ETIME) {
            break;
        }
    }
    assert!(
        t.elapsed() >= Duration::from_millis(19),
        "{:?}",
        t.elapsed()
    );
    // More entries than the submission queue holds: push makes room.
    let sq = u64::from(ring.params().sq_entries());
    let n = 2 * sq + 3;
    let mut made_room = 0;
    for i in 0..n {
        let nop = opcode::Nop::new().build().user_data(i);
        // SAFETY: a no-op names no memory.
        made_room += unsafe { uring::push(&mut ring, &nop) }.unwrap();
    }
    assert_eq!(
        made_room as u64,
        2 * sq,
        "two full queues went out to make room"
    );
    let mut seen = Vec::new();
    while (seen.len() as u64) < n {
        seen.extend(reap(&mut ring).into_iter().map(|c| c.0));
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..n).collect::<Vec<_>>());
}

/// A receive with `BUFFER_SELECT` on `sock`, drawing from `pool`.
fn recv_entry(sock: &UnixStream, pool: &BufRing, user_data: u64) -> squeue::Entry {
    opcode::Recv::new(types::Fd(sock.as_raw_fd()), std::ptr::null_mut(), 16)
        .buf_group(pool.group())
        .build()
        .flags(squeue::Flags::BUFFER_SELECT)
        .user_data(user_data)
}

#[test]
fn provided_buffers_receive_give_back_and_release() {
    let Some((mut ring, _)) = ring_or_skip(Issuer::Single) else {
        return;
    };
    let mut pool = match BufRing::register(&ring, 2, 16, 3) {
        Ok(p) => p,
        Err(e) if unavailable(&e) => {
            eprintln!("skipped: no provided-buffer rings here ({e})");
            return;
        }
        Err(e) => panic!("registering the pool failed: {e}"),
    };
    assert_eq!((pool.group(), pool.size()), (3, 16));
    let (a, mut b) = UnixStream::pair().unwrap();
    // Three messages, two buffers: two receives take both buffers, the
    // third finds the pool dry (ENOBUFS) until one is given back.
    let mut bids = Vec::new();
    for (i, msg) in [&b"first"[..], b"second"].into_iter().enumerate() {
        b.write_all(msg).unwrap();
        // SAFETY: the receive writes into the pool only, which outlives it.
        unsafe { uring::push(&mut ring, &recv_entry(&a, &pool, i as u64)) }.unwrap();
        let got = reap(&mut ring);
        assert_eq!(got.len(), 1, "{got:?}");
        let (ud, res, flags) = got[0];
        assert_eq!((ud, res), (i as u64, msg.len() as i32));
        let bid = cqueue::buffer_select(flags).expect("the bytes are in a pool buffer");
        // SAFETY: this completion handed `bid` over; not given back yet.
        assert_eq!(unsafe { pool.buf(bid, msg.len()) }, msg);
        bids.push(bid);
    }
    assert_ne!(bids[0], bids[1]);
    b.write_all(b"third").unwrap();
    // SAFETY: as above.
    unsafe { uring::push(&mut ring, &recv_entry(&a, &pool, 2)) }.unwrap();
    let got = reap(&mut ring);
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        (got[0].0, got[0].1),
        (2, -libc::ENOBUFS),
        "no buffer left in the pool"
    );
    // SAFETY: handed over by the first receive; no slice of it is alive.
    unsafe { pool.give_back(bids[0]) };
    // SAFETY: as above.
    unsafe { uring::push(&mut ring, &recv_entry(&a, &pool, 3)) }.unwrap();
    let got = reap(&mut ring);
    assert_eq!((got[0].0, got[0].1), (3, 5), "{got:?}");
    assert_eq!(
        cqueue::buffer_select(got[0].2),
        Some(bids[0]),
        "the buffer given back is the one taken"
    );
    // SAFETY: handed over by the receive above.
    assert_eq!(unsafe { pool.buf(bids[0], 5) }, b"third");
    // SAFETY: the pool was registered with this ring.
    assert!(
        unsafe { pool.release(&ring) },
        "the kernel let go of the pool"
    );
    // Not a power of two: refused before the kernel is asked.
    let e = BufRing::register(&ring, 3, 16, 4).err().expect("refused");
    assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
}
