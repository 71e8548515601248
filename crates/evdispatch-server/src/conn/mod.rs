//! The connection layer: what every model does with a connection,
//! whatever its mechanism. The lifecycle's decisions and constants, the
//! deadlines in a timer wheel, the counters and the stats document, and the
//! exchange: a connection's input bytes in, every complete request in them
//! answered into one output batch. The transport a connection's bytes
//! travel over belongs to this layer as well.
//!
//! * [`lifecycle`]: accept errors and pauses, timer expiry, lingering
//!   close, graceful stop.
//! * [`timer`]: the hashed timer wheel the event loops arm.
//! * [`stats`]: the counters and the `--stats-json` document.
//! * [`exchange`]: the one request loop of every model.
//!
//! May import: [`content`](crate::content), [`semantics`](crate::semantics)
//! and `sys`; never the models.

pub mod exchange;
pub mod lifecycle;
pub mod stats;
pub mod timer;
