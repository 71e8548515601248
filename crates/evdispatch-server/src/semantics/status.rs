//! The response statuses the server sends, with their reason phrases and the
//! small bodies of the error pages.

/// One table, one row per status: the enum, [`Status::ALL`], the code, the
/// status line and the error page's body are all generated from it.
macro_rules! statuses {
    ($($(#[$doc:meta])* $name:ident = $code:literal $reason:literal $body:literal;)*) => {
        /// Every status the server can answer with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Status {
            $($(#[$doc])* $name,)*
        }

        impl Status {
            /// Every status, in code order (the order of the stats counters).
            pub const ALL: [Status; [$($code),*].len()] = [$(Status::$name),*];

            /// The numeric code.
            pub const fn code(self) -> u16 {
                match self {
                    $(Status::$name => $code,)*
                }
            }

            /// The status line, up to and including its CRLF.
            pub const fn line(self) -> &'static [u8] {
                match self {
                    $(Status::$name => {
                        concat!("HTTP/1.1 ", $code, " ", $reason, "\r\n").as_bytes()
                    })*
                }
            }

            /// The body of the error page (empty for 200, 206 and 304).
            pub const fn body(self) -> &'static [u8] {
                match self {
                    $(Status::$name => $body.as_bytes(),)*
                }
            }
        }
    };
}

statuses! {
    /// 200: the file follows.
    Ok = 200 "OK" "";
    /// 206: one range of the file follows.
    PartialContent = 206 "Partial Content" "";
    /// 301: a directory named without its trailing slash.
    MovedPermanently = 301 "Moved Permanently" "301 moved permanently\n";
    /// 304: the client's copy is current.
    NotModified = 304 "Not Modified" "";
    /// 400: the request is malformed or ambiguous.
    BadRequest = 400 "Bad Request" "400 bad request\n";
    /// 403: the path is refused (outside the root, not a regular file).
    Forbidden = 403 "Forbidden" "403 forbidden\n";
    /// 404: no such file.
    NotFound = 404 "Not Found" "404 not found\n";
    /// 405: a method RFC 9110 defines other than GET, HEAD and OPTIONS
    /// (sent with `Allow`).
    MethodNotAllowed = 405 "Method Not Allowed" "405 only GET, HEAD and OPTIONS are served\n";
    /// 408: the request (its head, or a body waited for) did not arrive
    /// in time.
    RequestTimeout = 408 "Request Timeout" "408 request not received in time\n";
    /// 412: `If-Match` or `If-Unmodified-Since` does not hold.
    PreconditionFailed = 412 "Precondition Failed" "412 precondition failed\n";
    /// 413: the request announces a body larger than `MAX_BODY`.
    PayloadTooLarge = 413 "Content Too Large" "413 request body too large\n";
    /// 414: the request target is too long.
    UriTooLong = 414 "URI Too Long" "414 request target too long\n";
    /// 416: no range of the request lies within the file.
    RangeNotSatisfiable = 416 "Range Not Satisfiable" "416 range not satisfiable\n";
    /// 431: the request headers are too large.
    HeaderFieldsTooLarge = 431 "Request Header Fields Too Large" "431 request headers too large\n";
    /// 500: the file could not be read.
    InternalError = 500 "Internal Server Error" "500 the file could not be read\n";
    /// 501: an unknown method (or one longer than the head limit).
    NotImplemented = 501 "Not Implemented" "501 method not implemented\n";
    /// 505: not HTTP/1.0 or HTTP/1.1.
    VersionNotSupported = 505 "HTTP Version Not Supported"
        "505 only HTTP/1.0 and HTTP/1.1 are served\n";
}

impl Status {
    /// The position in [`Status::ALL`].
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Whether the connection must be closed after this response (the
    /// request stream can no longer be trusted). 405 and 501 refuse a
    /// method, not the framing: the request's end is known and the next
    /// one can follow (when its framing is not known, the parser refuses
    /// the request outright, and the connection closes whatever the status).
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
                | Status::MethodNotAllowed
                | Status::NotImplemented
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
