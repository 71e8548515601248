//! The protocols the client speaks, one codec each: [`http1`] (HTTP/1.1
//! requests built once, an incremental reply parser) and [`http2`] (frames,
//! flow control and HPACK of a client connection, without I/O).

pub mod http1;
pub mod http2;

/// The HTTP version a run speaks (`--http`, `--http2`, `--http1.1`).
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
pub enum HttpVersion {
    /// HTTP/1.1.
    #[default]
    #[value(name = "1.1")]
    #[serde(rename = "1.1")]
    Http1,
    /// HTTP/2 (h2 by ALPN over https://, h2c by prior knowledge over http://).
    #[value(name = "2")]
    #[serde(rename = "2")]
    Http2,
    /// Whatever ALPN gives over https:// (h2 first); HTTP/1.1 over http://.
    /// Resolved to one of the others by the pre-flight check.
    #[value(name = "auto")]
    #[serde(rename = "auto")]
    Auto,
}
