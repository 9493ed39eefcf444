//! Wire vocabulary shared by the HTTP readers and writers: methods, status codes, versions.

use core::fmt;

/// A request method (RFC 9110 §9). The standard methods are variants; a request with any other
/// token is still read, and its method is available as
/// [`Request::method_token`](super::Request::method_token).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// GET (§9.3.1), safe and idempotent.
    Get,
    /// HEAD (§9.3.2): the response has no body whatever its headers say (RFC 9112 §6.3).
    Head,
    /// POST (§9.3.3), neither safe nor idempotent: never retried automatically.
    Post,
    /// PUT (§9.3.4), idempotent.
    Put,
    /// DELETE (§9.3.5), idempotent.
    Delete,
    /// PATCH (RFC 5789), not idempotent.
    Patch,
    /// OPTIONS (§9.3.7), safe and idempotent.
    Options,
    /// CONNECT (§9.3.6): a 2xx answer has no body; the connection becomes a tunnel.
    Connect,
    /// TRACE (§9.3.8), safe and idempotent.
    Trace,
}

impl Method {
    /// The method token as written on the request line.
    #[inline]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Head => "HEAD",
            Self::Post => "POST",
            Self::Put => "PUT",
            Self::Delete => "DELETE",
            Self::Patch => "PATCH",
            Self::Options => "OPTIONS",
            Self::Connect => "CONNECT",
            Self::Trace => "TRACE",
        }
    }

    /// Parses a standard method token (case-sensitive, RFC 9110 §9.1); `None` for any other.
    pub fn from_token(token: &[u8]) -> Option<Self> {
        Some(match token {
            b"GET" => Self::Get,
            b"HEAD" => Self::Head,
            b"POST" => Self::Post,
            b"PUT" => Self::Put,
            b"DELETE" => Self::Delete,
            b"PATCH" => Self::Patch,
            b"OPTIONS" => Self::Options,
            b"CONNECT" => Self::Connect,
            b"TRACE" => Self::Trace,
            _ => return None,
        })
    }

    /// Idempotent per RFC 9110 §9.2.2: a request that may be resent on a fresh connection
    /// when a reused one turns out to be closed.
    #[inline]
    pub const fn is_idempotent(self) -> bool {
        !matches!(self, Self::Post | Self::Patch | Self::Connect)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An HTTP status code (RFC 9110 §15): an open newtype, any three-digit value is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StatusCode(pub u16);

impl StatusCode {
    /// 100 Continue.
    pub const CONTINUE: Self = Self(100);
    /// 101 Switching Protocols.
    pub const SWITCHING_PROTOCOLS: Self = Self(101);
    /// 200 OK.
    pub const OK: Self = Self(200);
    /// 201 Created.
    pub const CREATED: Self = Self(201);
    /// 204 No Content: never has a body (RFC 9112 §6.3 item 1).
    pub const NO_CONTENT: Self = Self(204);
    /// 301 Moved Permanently.
    pub const MOVED_PERMANENTLY: Self = Self(301);
    /// 302 Found.
    pub const FOUND: Self = Self(302);
    /// 304 Not Modified: never has a body (RFC 9112 §6.3 item 1).
    pub const NOT_MODIFIED: Self = Self(304);
    /// 400 Bad Request.
    pub const BAD_REQUEST: Self = Self(400);
    /// 404 Not Found.
    pub const NOT_FOUND: Self = Self(404);
    /// 408 Request Timeout.
    pub const REQUEST_TIMEOUT: Self = Self(408);
    /// 411 Length Required.
    pub const LENGTH_REQUIRED: Self = Self(411);
    /// 413 Content Too Large.
    pub const CONTENT_TOO_LARGE: Self = Self(413);
    /// 414 URI Too Long.
    pub const URI_TOO_LONG: Self = Self(414);
    /// 431 Request Header Fields Too Large (RFC 6585 §5).
    pub const REQUEST_HEADER_FIELDS_TOO_LARGE: Self = Self(431);
    /// 500 Internal Server Error.
    pub const INTERNAL_SERVER_ERROR: Self = Self(500);
    /// 501 Not Implemented.
    pub const NOT_IMPLEMENTED: Self = Self(501);
    /// 505 HTTP Version Not Supported.
    pub const HTTP_VERSION_NOT_SUPPORTED: Self = Self(505);

    /// The numeric code.
    #[inline]
    pub const fn as_u16(self) -> u16 {
        self.0
    }

    /// 1xx.
    #[inline]
    pub const fn is_informational(self) -> bool {
        self.0 >= 100 && self.0 < 200
    }

    /// 2xx.
    #[inline]
    pub const fn is_success(self) -> bool {
        self.0 >= 200 && self.0 < 300
    }

    /// 3xx.
    #[inline]
    pub const fn is_redirection(self) -> bool {
        self.0 >= 300 && self.0 < 400
    }

    /// 4xx.
    #[inline]
    pub const fn is_client_error(self) -> bool {
        self.0 >= 400 && self.0 < 500
    }

    /// 5xx.
    #[inline]
    pub const fn is_server_error(self) -> bool {
        self.0 >= 500 && self.0 < 600
    }

    /// The standard reason phrase, or `""` for a code without one here.
    pub const fn canonical_reason(self) -> &'static str {
        match self.0 {
            100 => "Continue",
            101 => "Switching Protocols",
            200 => "OK",
            201 => "Created",
            202 => "Accepted",
            204 => "No Content",
            206 => "Partial Content",
            301 => "Moved Permanently",
            302 => "Found",
            303 => "See Other",
            304 => "Not Modified",
            307 => "Temporary Redirect",
            308 => "Permanent Redirect",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            409 => "Conflict",
            411 => "Length Required",
            413 => "Content Too Large",
            414 => "URI Too Long",
            415 => "Unsupported Media Type",
            422 => "Unprocessable Content",
            426 => "Upgrade Required",
            429 => "Too Many Requests",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            503 => "Service Unavailable",
            504 => "Gateway Timeout",
            505 => "HTTP Version Not Supported",
            _ => "",
        }
    }
}

impl fmt::Display for StatusCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The protocol version of a message head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.0: no persistent connection unless `Connection: keep-alive`; no chunked
    /// request bodies.
    Http10,
    /// HTTP/1.1.
    Http11,
}

impl Version {
    /// The version as written on the start line.
    #[inline]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Http10 => "HTTP/1.0",
            Self::Http11 => "HTTP/1.1",
        }
    }
}
