//! io_uring building blocks for completion-model event loops, where the
//! kernel does the I/O and reports it done (the server's `uring-completion`
//! workers and the load generator's `uring` engine are written on them);
//! the `uring` mechanism of [`Poller`](crate::Poller) uses all but the
//! pool.
//!
//! * [`setup`]: a ring in the best mode the kernel has, falling back on
//!   older kernels ([`Taskrun`]);
//! * [`push`]: queue an entry, making room in a full submission queue;
//! * [`enter`]: submit and wait, [`Wait`]ing not at all, up to a timeout,
//!   or until a completion ([`ends_wait`] tells a wait's normal ends from
//!   failures);
//! * [`BufRing`]: a pool of provided buffers for receives, so an idle
//!   connection holds no buffer.
//!
//! The ring and its entries are the `io-uring` crate's, re-exported as
//! [`io_uring`] so that a user builds entries with the version these
//! functions take.
//!
//! ```no_run
//! use evdispatch::uring::{self, io_uring::opcode, io_uring::types, Issuer, Wait};
//!
//! let (mut ring, mode) = uring::setup(64, 256, Issuer::Single)?;
//! let nop = opcode::Nop::new().build().user_data(7);
//! // SAFETY: a no-op names no memory.
//! unsafe { uring::push(&mut ring, &nop)? };
//! uring::enter(&ring, 1, Wait::Completion)?;
//! let done: Vec<u64> = ring.completion().map(|c| c.user_data()).collect();
//! assert_eq!(done, [7]);
//! # let _ = (mode, types::Fd(0));
//! # Ok::<(), std::io::Error>(())
//! ```

pub use io_uring;

pub use crate::sys::uring::{ends_wait, enter, push, setup, BufRing, Issuer, Taskrun, Wait};
