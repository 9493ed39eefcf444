//! Errors of the request multiplexer: whose fault each one is and what the transport does next.

use core::fmt;

use super::RequestId;

/// Whose fault an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The peer broke the multiplexing rules (an id it was never given, a second answer, a
    /// reused id). The transport closes the connection.
    Peer,
    /// Something legal exceeds a configured size limit.
    Limit,
    /// The local caller used the API wrongly; nothing went wrong on the wire.
    Local,
    /// Back-pressure: a cap on requests in flight is reached. Nothing is wrong; the request can
    /// go again once one in flight finishes (or to another connection).
    Busy,
}

/// A multiplexer error. Every variant says whose fault it is ([`fault`](Self::fault)) and
/// whether the connection can carry on ([`must_close`](Self::must_close)).
///
/// When a variant says "close", the transport closes the connection and then calls
/// [`Client::fail_all`](super::Client::fail_all) (or [`Server::reset`](super::Server::reset)),
/// which finishes every request still in flight exactly once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// Client: [`ClientConfig::max_in_flight`](super::ClientConfig::max_in_flight) requests
    /// are already in flight. Nothing was sent and nothing changed; the connection carries on.
    /// Local back-pressure, not a protocol error.
    TooManyInFlight {
        /// The configured cap.
        limit: usize,
    },
    /// Client: the request payload is longer than
    /// [`ClientConfig::max_request_size`](super::ClientConfig::max_request_size). Nothing was
    /// sent; the connection carries on.
    RequestTooLarge {
        /// Payload length asked for.
        len: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Client: a response header announces a payload longer than
    /// [`ClientConfig::max_response_size`](super::ClientConfig::max_response_size). The
    /// payload is not read, so the stream cannot be trusted past it: close. The request stays
    /// in flight and is finished by [`Client::fail_all`](super::Client::fail_all).
    ResponseTooLarge {
        /// The response's request id.
        id: RequestId,
        /// Announced payload length.
        len: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Client: a response to an id this client never issued on this connection. Peer protocol
    /// violation: close.
    UnknownId {
        /// The id the peer sent.
        id: RequestId,
    },
    /// Client: a second response to a request that was already answered. Peer protocol
    /// violation: close.
    DuplicateResponse {
        /// The id the peer sent.
        id: RequestId,
    },
    /// Server: a request with the reserved id 0. Peer protocol violation: close.
    ReservedId,
    /// Server: a request whose id is already in flight on this connection. Peer protocol
    /// violation: close (answering both would deliver one response to the wrong request).
    DuplicateRequest {
        /// The id the peer sent.
        id: RequestId,
    },
    /// Server: [`ServerConfig::max_in_flight`](super::ServerConfig::max_in_flight) requests
    /// are already in flight on this connection. The request is not tracked. The transport
    /// answers it at once with a "busy" response for `id` (sent without
    /// [`Server::respond`](super::Server::respond)), which keeps the connection and the other
    /// requests alive; a transport that cannot say "busy" closes instead.
    Busy {
        /// The id of the refused request.
        id: RequestId,
        /// The configured cap.
        limit: usize,
    },
    /// Server: a request header announces a payload longer than
    /// [`ServerConfig::max_request_size`](super::ServerConfig::max_request_size). The request
    /// is not tracked and its payload is not read: close.
    IncomingRequestTooLarge {
        /// The request's id.
        id: RequestId,
        /// Announced payload length.
        len: usize,
        /// The configured limit.
        limit: usize,
    },
    /// Local misuse: the id is not in flight (never issued or received, already answered,
    /// cancelled or timed out). Nothing changed; the connection carries on.
    NotInFlight {
        /// The id given.
        id: RequestId,
    },
}

impl Error {
    /// Whose fault the error is.
    pub const fn fault(&self) -> Fault {
        match self {
            Self::TooManyInFlight { .. } | Self::Busy { .. } => Fault::Busy,
            Self::RequestTooLarge { .. }
            | Self::ResponseTooLarge { .. }
            | Self::IncomingRequestTooLarge { .. } => Fault::Limit,
            Self::UnknownId { .. }
            | Self::DuplicateResponse { .. }
            | Self::ReservedId
            | Self::DuplicateRequest { .. } => Fault::Peer,
            Self::NotInFlight { .. } => Fault::Local,
        }
    }

    /// True when the transport must close the connection: every peer violation, and a payload
    /// over a receive limit (its bytes are not read, so nothing after it can be framed).
    /// [`Busy`](Self::Busy) is false: the transport may answer "busy" and carry on.
    pub const fn must_close(&self) -> bool {
        matches!(
            self,
            Self::ResponseTooLarge { .. }
                | Self::UnknownId { .. }
                | Self::DuplicateResponse { .. }
                | Self::ReservedId
                | Self::DuplicateRequest { .. }
                | Self::IncomingRequestTooLarge { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooManyInFlight { limit } => {
                write!(f, "{limit} requests already in flight (the configured cap)")
            }
            Self::RequestTooLarge { len, limit } => {
                write!(f, "request of {len} bytes exceeds the limit of {limit}")
            }
            Self::ResponseTooLarge { id, len, limit } => {
                write!(
                    f,
                    "response to {id} of {len} bytes exceeds the limit of {limit}"
                )
            }
            Self::UnknownId { id } => write!(f, "response to {id}, which was never issued"),
            Self::DuplicateResponse { id } => {
                write!(f, "second response to {id}, which was already answered")
            }
            Self::ReservedId => f.write_str("request with the reserved id 0"),
            Self::DuplicateRequest { id } => write!(f, "request {id} is already in flight"),
            Self::Busy { id, limit } => {
                write!(
                    f,
                    "request {id} refused: {limit} requests already in flight"
                )
            }
            Self::IncomingRequestTooLarge { id, len, limit } => {
                write!(
                    f,
                    "request {id} of {len} bytes exceeds the limit of {limit}"
                )
            }
            Self::NotInFlight { id } => write!(f, "{id} is not in flight"),
        }
    }
}

impl std::error::Error for Error {}

/// Why [`Client::fail_all`](super::Client::fail_all) finished the requests in flight: given by
/// the transport, handed back with each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disconnect {
    /// The connection ended underneath: end of stream, an I/O error, a failed TLS record.
    ConnectionLost,
    /// The transport closed the connection because of an [`Error`] whose
    /// [`must_close`](Error::must_close) is true.
    Closed(Error),
    /// The local side shut the connection down (a pool draining it, the application exiting).
    Shutdown,
}

impl fmt::Display for Disconnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ConnectionLost => f.write_str("connection lost"),
            Self::Closed(error) => write!(f, "connection closed: {error}"),
            Self::Shutdown => f.write_str("connection shut down locally"),
        }
    }
}
