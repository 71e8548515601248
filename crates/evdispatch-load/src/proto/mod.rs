//! The protocols the client speaks, one codec each: [`http1`] (HTTP/1.1
//! requests built once, an incremental reply parser) and [`http2`] (frames,
//! flow control and HPACK of a client connection, without I/O).

pub mod http1;
pub mod http2;
