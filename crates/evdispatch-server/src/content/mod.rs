//! Content: what is served and how an answer is represented. The document
//! root and its cache, directory listings, the path rules, the
//! [`Responder`](response::Responder) that turns one parsed request into
//! header bytes and body parts, the [`OutBatch`](out::OutBatch) that holds
//! and sends them, and the access log their lines go to.
//!
//! * [`files`]: files opened beneath the root, the cache of small ones.
//! * [`listing`]: `--listing`, a directory's HTML index.
//! * [`paths`]: dotfiles, the redirect of a directory without its slash.
//! * [`response`]: one request in, its response's representation out.
//! * [`out`]: output batches (header bytes, cached slices, `sendfile`).
//! * [`access_log`]: `--access-log`, written by a thread of its own.
//!
//! May import: [`semantics`](crate::semantics) and
//! `sys`; never the connection layer or the models.

pub mod access_log;
pub mod files;
pub mod listing;
pub mod out;
pub mod paths;
pub mod response;
