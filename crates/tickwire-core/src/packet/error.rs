//! [`Error`], what every packet transport call fails with: the codec's and the multiplexer's
//! typed errors, the socket's and TLS's, and the transport's own timeouts and control
//! answers. [`Error::is_fatal`] says whether the connection is finished.

use std::time::Instant;
use std::{fmt, io};

use tickwire_codec::mux::{self, RequestId, Verdict};
use tickwire_codec::packet::{
    ClientFailure, EncodeError, InFlight, PacketError, ReplyError, ServerFailure, SessionError,
};

use crate::TransportError;

/// Everything a packet client, server connection or pool call can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket failed (a write timeout is kind `WouldBlock` or `TimedOut`). Fatal.
    Io(io::Error),
    /// TLS failed: an untrusted certificate, a missing client certificate, an alert, a
    /// truncated record. Fatal.
    #[cfg(feature = "tls")]
    Tls(tickwire_tls::TlsError),
    /// The peer sent a malformed packet or one over the configured payload limit
    /// ([`PacketError::fault`] says whose fault). The connection was closed: the format has
    /// no error message and the stream cannot be resynchronised (docs/PACKET.md).
    Protocol(PacketError),
    /// The multiplexer refused: a peer violation or a receive limit (fatal, the connection
    /// was closed), or local back-pressure or misuse ([`mux::Error::must_close`] false: the
    /// connection carries on).
    Mux(mux::Error),
    /// A payload to send is over the configured packet limit. Nothing was sent; the
    /// connection carries on.
    Encode(EncodeError),
    /// The TCP connect or the TLS handshake did not finish within its timeout. Fatal.
    ConnectTimeout,
    /// Request `0` got no response within its per-request timeout. It is finished (a late
    /// answer is dropped); the connection carries on.
    TimedOut(RequestId),
    /// The server refused request `0` with a "busy" control packet: its cap on requests in
    /// flight was reached. Nothing was done for it; the connection carries on.
    Busy(RequestId),
    /// The peer sent a control packet (request id 0) that is not a ping, pong or busy of
    /// the documented layout (docs/PACKET.md, "Transports"). Peer violation; fatal.
    MalformedControl,
    /// No pong arrived within the keepalive timeout after a ping. The connection was closed.
    KeepaliveTimeout,
    /// The connection's read timeout passed with nothing received while a caller waited.
    /// The connection carries on.
    ReadTimeout,
    /// The peer closed the connection (end of stream), or it was closed by an earlier fatal
    /// error. Requests in flight on it failed.
    Closed,
    /// Local misuse: `PacketClient::recv_response` with no request in flight. Nothing
    /// changed.
    NothingInFlight,
    /// Local misuse: `PacketClient::request` while pipelined requests are in flight.
    RequestsInFlight,
    /// A typed request or answer could not be serialized (`request_json`,
    /// `request_bincode` and friends, features `serde-json` and `bincode`). Nothing was
    /// sent; the connection carries on.
    Serialize(Box<dyn std::error::Error + Send + Sync>),
    /// A typed answer or request could not be deserialized into the type asked for. The
    /// request is finished; the connection carries on.
    Deserialize(Box<dyn std::error::Error + Send + Sync>),
    /// The pool's circuit breaker is open: the request was not sent. Retry at `retry_at`.
    CircuitOpen {
        /// When the breaker lets a probe through.
        retry_at: Instant,
    },
    /// The pool connection picked is waiting to reconnect after failed attempts (backoff).
    /// The request was not sent.
    Reconnecting {
        /// When the next connection attempt is made.
        retry_at: Instant,
    },
}

impl Error {
    /// A failed TCP connect as the transports report it: one that timed out (the socket's
    /// `TimedOut`, or `WouldBlock` from a connect bounded by a timeout) is
    /// [`ConnectTimeout`](Self::ConnectTimeout), any other is [`Io`](Self::Io).
    pub fn connect_failed(error: io::Error) -> Self {
        match error.kind() {
            io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock => Self::ConnectTimeout,
            _ => Self::Io(error),
        }
    }

    /// A link error as the connection's `core` takes it: a fatal one ends every request in
    /// flight there ([`InFlight::connection_lost`]). Returns the error.
    pub fn lost_on(self, core: &mut impl InFlight) -> Self {
        if self.is_fatal() {
            core.connection_lost();
        }
        self
    }

    /// How a connection's serve loop ends on this error: the client closing
    /// ([`Closed`](Self::Closed)) is its normal end, `Ok`; any other error is the loop's.
    pub fn end_of_serve(self) -> Result<(), Self> {
        match self {
            Self::Closed => Ok(()),
            error => Err(error),
        }
    }

    /// True when the connection is finished: every later call on it returns
    /// [`Error::Closed`]. False for per-request outcomes and local refusals.
    pub fn is_fatal(&self) -> bool {
        match self {
            Self::Mux(error) => error.must_close(),
            Self::Encode(_)
            | Self::TimedOut(_)
            | Self::Busy(_)
            | Self::ReadTimeout
            | Self::Serialize(_)
            | Self::Deserialize(_)
            | Self::NothingInFlight
            | Self::RequestsInFlight
            | Self::CircuitOpen { .. }
            | Self::Reconnecting { .. } => false,
            _ => true,
        }
    }

    /// The request a per-request error is about ([`TimedOut`](Self::TimedOut),
    /// [`Busy`](Self::Busy)).
    pub fn request_id(&self) -> Option<RequestId> {
        match self {
            Self::TimedOut(id) | Self::Busy(id) => Some(*id),
            _ => None,
        }
    }

    /// What this failure of a pool request tells the pool's circuit breaker: the peer or
    /// the link failed ([`Verdict::PeerFailure`]: fatal errors, [`TimedOut`](Self::TimedOut),
    /// [`Busy`](Self::Busy), [`ReadTimeout`](Self::ReadTimeout),
    /// [`Reconnecting`](Self::Reconnecting), a failed connect), or the local caller
    /// ([`Verdict::Neutral`]: an oversized payload, back-pressure, serialization).
    pub fn verdict(&self) -> Verdict {
        let peer = self.is_fatal()
            || matches!(
                self,
                Self::TimedOut(_) | Self::Busy(_) | Self::ReadTimeout | Self::Reconnecting { .. }
            );
        if peer {
            Verdict::PeerFailure
        } else {
            Verdict::Neutral
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "I/O error: {e}"),
            #[cfg(feature = "tls")]
            Self::Tls(e) => write!(f, "TLS: {e}"),
            Self::Protocol(e) => write!(f, "packet protocol: {e}"),
            Self::Mux(e) => write!(f, "multiplexer: {e}"),
            Self::Encode(e) => write!(f, "cannot send: {e}"),
            Self::ConnectTimeout => f.write_str("connect or TLS handshake timed out"),
            Self::TimedOut(id) => write!(f, "{id} timed out"),
            Self::Busy(id) => write!(f, "server busy: {id} refused"),
            Self::MalformedControl => f.write_str("malformed control packet on request id 0"),
            Self::KeepaliveTimeout => f.write_str("no pong within the keepalive timeout"),
            Self::ReadTimeout => f.write_str("read timed out"),
            Self::Closed => f.write_str("connection closed"),
            Self::NothingInFlight => f.write_str("no request in flight to wait for"),
            Self::RequestsInFlight => f.write_str("pipelined requests are in flight"),
            Self::Serialize(e) => write!(f, "cannot serialize: {e}"),
            Self::Deserialize(e) => write!(f, "cannot deserialize: {e}"),
            Self::CircuitOpen { .. } => f.write_str("circuit breaker open"),
            Self::Reconnecting { .. } => f.write_str("connection backing off before reconnect"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            #[cfg(feature = "tls")]
            Self::Tls(e) => Some(e),
            Self::Protocol(e) => Some(e),
            Self::Mux(e) => Some(e),
            Self::Encode(e) => Some(e),
            Self::Serialize(e) | Self::Deserialize(e) => Some(&**e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Io(e) => Self::Io(e),
            #[cfg(feature = "tls")]
            TransportError::Tls(e) => Self::Tls(e),
            TransportError::HandshakeTimeout => Self::ConnectTimeout,
            TransportError::UnexpectedEof => Self::Closed,
        }
    }
}

/// The session's errors: each has its variant here; [`SessionError::Failed`] (a session
/// that failed earlier) is [`Error::Closed`].
impl From<SessionError> for Error {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::Protocol(e) => Self::Protocol(e),
            SessionError::Encode(e) => Self::Encode(e),
            SessionError::MalformedControl => Self::MalformedControl,
            SessionError::KeepaliveTimeout => Self::KeepaliveTimeout,
            _ => Self::Closed,
        }
    }
}

#[cfg(feature = "tls")]
impl From<tickwire_tls::TlsError> for Error {
    fn from(e: tickwire_tls::TlsError) -> Self {
        Self::Tls(e)
    }
}

/// A client core's outcome: a request's own ([`Error::TimedOut`], [`Error::Busy`]) or a
/// peer violation ([`Error::Mux`], fatal).
impl From<ClientFailure> for Error {
    fn from(e: ClientFailure) -> Self {
        match e {
            ClientFailure::TimedOut(id) => Self::TimedOut(id),
            ClientFailure::Busy(id) => Self::Busy(id),
            ClientFailure::Close(e) => Self::Mux(e),
            _ => Self::Closed,
        }
    }
}

/// A server core's peer violation, fatal.
impl From<ServerFailure> for Error {
    fn from(e: ServerFailure) -> Self {
        match e {
            ServerFailure::MalformedControl => Self::MalformedControl,
            ServerFailure::Mux(e) => Self::Mux(e),
            _ => Self::Closed,
        }
    }
}

/// A refused answer: a second one ([`Error::Mux`]) or one over the packet limit
/// ([`Error::Encode`]); neither is fatal.
impl From<ReplyError> for Error {
    fn from(e: ReplyError) -> Self {
        match e {
            ReplyError::Answered(e) => Self::Mux(e),
            ReplyError::Encode(e) => Self::Encode(e),
            _ => Self::Closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts the connection losses it was told of.
    #[derive(Default)]
    struct Core {
        lost: u32,
    }

    impl InFlight for Core {
        fn connection_lost(&mut self) {
            self.lost += 1;
        }
    }

    #[test]
    fn only_a_fatal_error_ends_the_requests_in_flight() {
        let mut core = Core::default();
        let timed_out = Error::TimedOut(RequestId(3)).lost_on(&mut core);
        assert!(matches!(timed_out, Error::TimedOut(RequestId(3))));
        let _ = Error::ReadTimeout.lost_on(&mut core);
        assert_eq!(
            core.lost, 0,
            "per-request outcomes leave the others in flight"
        );
        let closed = Error::Closed.lost_on(&mut core);
        assert!(matches!(closed, Error::Closed));
        let _ = Error::from(io::Error::from(io::ErrorKind::ConnectionReset)).lost_on(&mut core);
        assert_eq!(core.lost, 2);
    }

    #[test]
    fn a_serve_loop_ends_well_only_when_the_client_closed() {
        assert!(Error::Closed.end_of_serve().is_ok());
        let reset = Error::from(io::Error::from(io::ErrorKind::ConnectionReset));
        assert!(matches!(reset.end_of_serve(), Err(Error::Io(_))));
        assert!(matches!(
            Error::ReadTimeout.end_of_serve(),
            Err(Error::ReadTimeout)
        ));
    }

    #[test]
    fn a_connect_that_timed_out_is_a_connect_timeout_and_others_stay_io() {
        for kind in [io::ErrorKind::TimedOut, io::ErrorKind::WouldBlock] {
            let error = Error::connect_failed(kind.into());
            assert!(
                matches!(error, Error::ConnectTimeout),
                "{kind:?}: {error:?}"
            );
            assert!(error.is_fatal());
        }
        let refused = Error::connect_failed(io::ErrorKind::ConnectionRefused.into());
        assert!(
            matches!(&refused, Error::Io(e) if e.kind() == io::ErrorKind::ConnectionRefused),
            "{refused:?}"
        );
        assert_eq!(refused.verdict(), Verdict::PeerFailure);
    }
}
