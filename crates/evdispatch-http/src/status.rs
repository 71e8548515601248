//! The response statuses the server sends, with their reason phrases and the
//! small bodies of the error pages.

/// Every status the server can answer with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    /// 200: the file follows.
    Ok,
    /// 206: one range of the file follows.
    PartialContent,
    /// 301: a directory named without its trailing slash.
    MovedPermanently,
    /// 304: the client's copy is current.
    NotModified,
    /// 400: the request is malformed or ambiguous.
    BadRequest,
    /// 403: the path is refused (outside the root, not a regular file).
    Forbidden,
    /// 404: no such file.
    NotFound,
    /// 405: a method other than GET and HEAD.
    MethodNotAllowed,
    /// 408: the request headers did not arrive in time.
    RequestTimeout,
    /// 412: `If-Match` or `If-Unmodified-Since` does not hold.
    PreconditionFailed,
    /// 413: the request carries a body.
    PayloadTooLarge,
    /// 414: the request target is too long.
    UriTooLong,
    /// 416: no range of the request lies within the file.
    RangeNotSatisfiable,
    /// 431: the request headers are too large.
    HeaderFieldsTooLarge,
    /// 500: the file could not be read.
    InternalError,
    /// 501: an unknown method.
    NotImplemented,
    /// 505: not HTTP/1.0 or HTTP/1.1.
    VersionNotSupported,
}

impl Status {
    /// Every status, in code order (the order of the stats counters).
    pub const ALL: [Status; 17] = [
        Status::Ok,
        Status::PartialContent,
        Status::MovedPermanently,
        Status::NotModified,
        Status::BadRequest,
        Status::Forbidden,
        Status::NotFound,
        Status::MethodNotAllowed,
        Status::RequestTimeout,
        Status::PreconditionFailed,
        Status::PayloadTooLarge,
        Status::UriTooLong,
        Status::RangeNotSatisfiable,
        Status::HeaderFieldsTooLarge,
        Status::InternalError,
        Status::NotImplemented,
        Status::VersionNotSupported,
    ];

    /// The numeric code.
    pub const fn code(self) -> u16 {
        match self {
            Status::Ok => 200,
            Status::PartialContent => 206,
            Status::MovedPermanently => 301,
            Status::NotModified => 304,
            Status::BadRequest => 400,
            Status::Forbidden => 403,
            Status::NotFound => 404,
            Status::MethodNotAllowed => 405,
            Status::RequestTimeout => 408,
            Status::PreconditionFailed => 412,
            Status::PayloadTooLarge => 413,
            Status::UriTooLong => 414,
            Status::RangeNotSatisfiable => 416,
            Status::HeaderFieldsTooLarge => 431,
            Status::InternalError => 500,
            Status::NotImplemented => 501,
            Status::VersionNotSupported => 505,
        }
    }

    /// The position in [`Status::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The status line, up to and including its CRLF.
    pub const fn line(self) -> &'static [u8] {
        match self {
            Status::Ok => b"HTTP/1.1 200 OK\r\n",
            Status::PartialContent => b"HTTP/1.1 206 Partial Content\r\n",
            Status::MovedPermanently => b"HTTP/1.1 301 Moved Permanently\r\n",
            Status::NotModified => b"HTTP/1.1 304 Not Modified\r\n",
            Status::BadRequest => b"HTTP/1.1 400 Bad Request\r\n",
            Status::Forbidden => b"HTTP/1.1 403 Forbidden\r\n",
            Status::NotFound => b"HTTP/1.1 404 Not Found\r\n",
            Status::MethodNotAllowed => b"HTTP/1.1 405 Method Not Allowed\r\n",
            Status::RequestTimeout => b"HTTP/1.1 408 Request Timeout\r\n",
            Status::PreconditionFailed => b"HTTP/1.1 412 Precondition Failed\r\n",
            Status::PayloadTooLarge => b"HTTP/1.1 413 Content Too Large\r\n",
            Status::UriTooLong => b"HTTP/1.1 414 URI Too Long\r\n",
            Status::RangeNotSatisfiable => b"HTTP/1.1 416 Range Not Satisfiable\r\n",
            Status::HeaderFieldsTooLarge => b"HTTP/1.1 431 Request Header Fields Too Large\r\n",
            Status::InternalError => b"HTTP/1.1 500 Internal Server Error\r\n",
            Status::NotImplemented => b"HTTP/1.1 501 Not Implemented\r\n",
            Status::VersionNotSupported => b"HTTP/1.1 505 HTTP Version Not Supported\r\n",
        }
    }

    /// The body of the error page (empty for 200 and 304).
    pub const fn body(self) -> &'static [u8] {
        match self {
            Status::Ok | Status::PartialContent | Status::NotModified => b"",
            Status::MovedPermanently => b"301 moved permanently\n",
            Status::BadRequest => b"400 bad request\n",
            Status::Forbidden => b"403 forbidden\n",
            Status::NotFound => b"404 not found\n",
            Status::MethodNotAllowed => b"405 only GET and HEAD are served\n",
            Status::RequestTimeout => b"408 request headers not received in time\n",
            Status::PreconditionFailed => b"412 precondition failed\n",
            Status::PayloadTooLarge => b"413 request bodies are not accepted\n",
            Status::UriTooLong => b"414 request target too long\n",
            Status::RangeNotSatisfiable => b"416 range not satisfiable\n",
            Status::HeaderFieldsTooLarge => b"431 request headers too large\n",
            Status::InternalError => b"500 the file could not be read\n",
            Status::NotImplemented => b"501 method not implemented\n",
            Status::VersionNotSupported => b"505 only HTTP/1.0 and HTTP/1.1 are served\n",
        }
    }

    /// Whether the connection must be closed after this response (the
    /// request stream can no longer be trusted).
    pub const fn closes(self) -> bool {
        !matches!(
            self,
            Status::Ok
                | Status::PartialContent
                | Status::MovedPermanently
                | Status::NotModified
                | Status::RangeNotSatisfiable
                | Status::PreconditionFailed
                | Status::NotFound
                | Status::Forbidden
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_is_in_declaration_and_code_order() {
        for (i, st) in Status::ALL.iter().enumerate() {
            assert_eq!(st.index(), i, "{st:?}");
            assert!(st
                .line()
                .starts_with(format!("HTTP/1.1 {} ", st.code()).as_bytes()));
        }
        assert!(Status::ALL.windows(2).all(|w| w[0].code() < w[1].code()));
    }
}
