//! The models: thin loops that move bytes between sockets and the
//! connection layer. Each accepts, reads into the
//! [`exchange`](crate::conn::exchange), sends what it put in the batch and
//! arms the deadlines [`lifecycle`](crate::conn::lifecycle) decides; none
//! knows HTTP.
//!
//! * [`readiness`]: one event loop per worker over any
//!   [`evdispatch::Poller`].
//! * [`completion`]: io_uring completions (`uring-completion`).
//! * [`threads`]: a master and a pool of blocking threads.
//!
//! May import: the configuration ([`ServerConfig`](crate::ServerConfig)),
//! [`conn`](crate::conn), [`content`](crate::content),
//! [`semantics`](crate::semantics) and `sys`. Only the
//! [`Server`](crate::Server) start-up imports the models.

pub mod completion;
pub mod readiness;
pub mod threads;
