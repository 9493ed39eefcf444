//! What both feed drivers (blocking and tokio) share about their WebSocket connections:
//! how a failed connect, a failed connection or a peer's close is reported to the sans-IO
//! [`FeedSession`](tickwire_codec::feed::FeedSession), and the options each reconnect opens
//! with. The decisions themselves are the session's.

use std::io;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwire_codec::feed::{Disconnect, RecvStamp};
use tickwire_codec::handshake::HandshakeError;
use tickwire_codec::ws::{CloseFrame, Fault};

use crate::Error;
use crate::ws::ClientOptions;

/// How a connect attempt that failed before the connection opened is reported: the HTTP
/// status of a refused handshake (429, 503, ...), a timeout, or a failed connect.
pub fn connect_failure(error: &Error) -> Disconnect {
    match error {
        Error::Handshake(HandshakeError::UnexpectedStatus { status, .. }) => {
            Disconnect::HandshakeStatus(*status)
        }
        Error::Rejected(status) => Disconnect::HandshakeStatus(*status),
        Error::HandshakeTimeout => Disconnect::TimedOut,
        Error::Io(e) if is_timeout(e) => Disconnect::TimedOut,
        _ => Disconnect::ConnectFailed,
    }
}

/// How an open connection's failure is reported: a FIN without a close frame, a reset or
/// I/O error, a WebSocket timer (the keepalive pong), or a protocol error with its code.
pub fn connection_failure(error: &Error) -> Disconnect {
    match error {
        Error::UnexpectedEof => Disconnect::Eof,
        Error::Protocol(e) if e.fault() == Fault::Timeout => Disconnect::TimedOut,
        Error::Protocol(e) => Disconnect::Protocol(e.close_code().map_or(1002, |code| code.0)),
        Error::Io(e) if is_timeout(e) => Disconnect::TimedOut,
        _ => Disconnect::Reset,
    }
}

/// How a peer's close (the end of the close handshake) is reported.
pub fn peer_closed(frame: Option<CloseFrame<'_>>) -> Disconnect {
    Disconnect::Closed(frame.map(|frame| frame.code.0))
}

fn is_timeout(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

impl ClientOptions {
    /// A copy for one more connection of a feed, its connect and handshake timeouts capped
    /// at `connect_timeout` (the feed's). The masking-key source is not copied (a custom one
    /// cannot be): each connection gets the default CSPRNG-seeded one.
    pub fn for_feed_connection(&self, connect_timeout: std::time::Duration) -> Self {
        Self {
            handshake: self.handshake.clone(),
            nodelay: self.nodelay,
            connect_timeout: Some(
                self.connect_timeout
                    .map_or(connect_timeout, |own| own.min(connect_timeout)),
            ),
            handshake_timeout: self.handshake_timeout.min(connect_timeout),
            read_timeout: None,
            write_timeout: self.write_timeout,
            mask: None,
            #[cfg(feature = "tls")]
            tls: self.tls.clone(),
        }
    }
}

/// The receive stamp of a connection's last read, written by the stream wrapper that does
/// the reads and read by the driver with the message: atomics, so the feed stays `Send`.
#[derive(Debug, Default)]
pub struct StampCell {
    recv_ns: AtomicU64,
    wall_ns: AtomicU64,
}

impl StampCell {
    /// Records a read that returned bytes now; `epoch` is the origin of `recv_ns`.
    #[inline]
    pub fn record(&self, epoch: Instant) {
        let recv_ns = Instant::now().saturating_duration_since(epoch).as_nanos() as u64;
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        self.recv_ns.store(recv_ns, Ordering::Relaxed);
        self.wall_ns.store(wall_ns, Ordering::Relaxed);
    }

    /// The stamp of the last read recorded.
    #[inline]
    pub fn get(&self) -> RecvStamp {
        RecvStamp {
            recv_ns: self.recv_ns.load(Ordering::Relaxed),
            wall_ns: self.wall_ns.load(Ordering::Relaxed),
            kernel_ns: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tickwire_codec::ws::CloseCode;

    #[test]
    fn a_refused_handshake_reports_its_status_and_failures_their_kind() {
        let refused = Error::Handshake(HandshakeError::UnexpectedStatus {
            status: 429,
            body: Vec::new(),
        });
        assert_eq!(connect_failure(&refused), Disconnect::HandshakeStatus(429));
        assert_eq!(
            connect_failure(&Error::HandshakeTimeout),
            Disconnect::TimedOut
        );
        let refused_tcp = Error::Io(io::ErrorKind::ConnectionRefused.into());
        assert_eq!(connect_failure(&refused_tcp), Disconnect::ConnectFailed);
        assert_eq!(connection_failure(&Error::UnexpectedEof), Disconnect::Eof);
        let reset = Error::Io(io::ErrorKind::ConnectionReset.into());
        assert_eq!(connection_failure(&reset), Disconnect::Reset);
        let pong = Error::Protocol(tickwire_codec::ws::Error::PongTimeout);
        assert_eq!(connection_failure(&pong), Disconnect::TimedOut);
        let utf8 = Error::Protocol(tickwire_codec::ws::Error::InvalidUtf8);
        assert_eq!(connection_failure(&utf8), Disconnect::Protocol(1007));
        let frame = CloseFrame {
            code: CloseCode(4001),
            reason: "",
        };
        assert_eq!(peer_closed(Some(frame)), Disconnect::Closed(Some(4001)));
        assert_eq!(peer_closed(None), Disconnect::Closed(None));
    }

    #[test]
    fn a_feed_connection_copies_the_options_under_the_feed_connect_timeout() {
        let mut options = ClientOptions::default();
        options.handshake.headers.push(("X-Key".into(), "k".into()));
        options.read_timeout = Some(Duration::from_secs(1));
        let copy = options.for_feed_connection(Duration::from_secs(2));
        assert_eq!(copy.connect_timeout, Some(Duration::from_secs(2)));
        assert_eq!(copy.handshake_timeout, Duration::from_secs(2));
        assert_eq!(copy.read_timeout, None);
        assert_eq!(copy.handshake.headers, options.handshake.headers);
    }

    #[test]
    fn a_recorded_read_gives_its_monotonic_and_wall_time() {
        let epoch = Instant::now();
        let before = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let cell = StampCell::default();
        assert_eq!(cell.get(), RecvStamp::default());
        std::thread::sleep(Duration::from_millis(2));
        cell.record(epoch);
        let stamp = cell.get();
        assert!(stamp.recv_ns >= 2_000_000, "{stamp:?}");
        assert!(stamp.wall_ns >= before + 2_000_000, "{stamp:?}");
        assert_eq!(stamp.kernel_ns, None);
    }
}
