//! What both feed drivers (blocking and tokio) share about their WebSocket connections:
//! how a failed connect, a failed connection or a peer's close is reported to the sans-IO
//! [`FeedSession`], and the options each reconnect opens
//! with. The decisions themselves are the session's.

use std::io;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use tickwire_codec::feed::{
    ConfigError, ConnId, Disconnect, Disposition, Event, FeedConfig, FeedError, FeedSession,
    RecvStamp,
};
use tickwire_codec::handshake::HandshakeError;
use tickwire_codec::ws::{CloseFrame, Fault};

use crate::Error;
use crate::ws::ClientOptions;

#[cfg(target_os = "linux")]
pub mod kernel;

/// Which receive timestamps a feed takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Timestamps {
    /// The monotonic and the wall clock, read right after the read that completed the
    /// message (before it is parsed): `recv_ns` and `wall_ns`.
    #[default]
    User,
    /// Also the kernel's software receive time of the segment that completed the message
    /// (`kernel_ns`): `SO_TIMESTAMPNS` on the socket, and one `recvmsg(2)` in place of each
    /// `read(2)`. Linux, `ws://` connections; over TLS (and elsewhere) `kernel_ns` stays
    /// `None`.
    Kernel,
}

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
#[derive(Debug)]
pub struct StampCell {
    /// The origin of `recv_ns`.
    epoch: Instant,
    recv_ns: AtomicU64,
    wall_ns: AtomicU64,
    /// The kernel's time, 0 for none.
    kernel_ns: AtomicU64,
}

impl StampCell {
    /// A cell whose `recv_ns` counts from `epoch`, nothing recorded yet.
    pub fn new(epoch: Instant) -> Self {
        Self {
            epoch,
            recv_ns: AtomicU64::new(0),
            wall_ns: AtomicU64::new(0),
            kernel_ns: AtomicU64::new(0),
        }
    }

    /// Records a read that returned bytes now, with the kernel's time of it if taken.
    #[inline]
    pub fn record(&self, kernel_ns: Option<u64>) {
        let recv_ns = Instant::now()
            .saturating_duration_since(self.epoch)
            .as_nanos() as u64;
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as u64);
        self.recv_ns.store(recv_ns, Ordering::Relaxed);
        self.wall_ns.store(wall_ns, Ordering::Relaxed);
        self.kernel_ns
            .store(kernel_ns.unwrap_or(0), Ordering::Relaxed);
    }

    /// The stamp of the last read recorded.
    #[inline]
    pub fn get(&self) -> RecvStamp {
        RecvStamp {
            recv_ns: self.recv_ns.load(Ordering::Relaxed),
            wall_ns: self.wall_ns.load(Ordering::Relaxed),
            kernel_ns: match self.kernel_ns.load(Ordering::Relaxed) {
                0 => None,
                ns => Some(ns),
            },
        }
    }
}

/// Whether a feed connection's reads take kernel timestamps (`recvmsg` in place of `read`):
/// with [`Timestamps::Kernel`], on a plain TCP stream (`tls` false), on Linux; the option is
/// turned on on `socket` then.
#[cfg(target_os = "linux")]
pub fn kernel_reads(
    timestamps: Timestamps,
    tls: bool,
    socket: &impl std::os::fd::AsFd,
) -> io::Result<bool> {
    if timestamps != Timestamps::Kernel || tls {
        return Ok(false);
    }
    kernel::enable(socket)?;
    Ok(true)
}

/// Whether a feed connection's reads take kernel timestamps: never off Linux.
#[cfg(not(target_os = "linux"))]
pub fn kernel_reads<S>(timestamps: Timestamps, tls: bool, socket: &S) -> io::Result<bool> {
    let _ = (timestamps, tls, socket);
    Ok(false)
}

/// A seed for a feed session's back-off jitter: from the process's randomised hash keys
/// (the OS's randomness) and the clock, different for every session.
pub fn jitter_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    hasher.finish()
}

/// What a feed's user changes and reads while it runs, the same for the blocking and the
/// tokio feed (each derefs to it: `feed.subscribe("ETH")`): the subscription set, rotation,
/// the end, the session's figures. It also keeps, for the driver, the payload of the message
/// whose events are being handed out (its buffer reused: no allocation per message).
pub struct FeedControl {
    session: FeedSession,
    current: Vec<u8>,
    epoch: Instant,
    timestamps: Timestamps,
    /// With kernel timestamps, keeps the kernel's timestamping on (see its docs).
    #[cfg(target_os = "linux")]
    _keeper: Option<kernel::Keeper>,
}

impl FeedControl {
    /// Adds `topic` to the subscription set; every open connection subscribes to it.
    pub fn subscribe(&mut self, topic: impl Into<String>) {
        self.session.subscribe(topic, Instant::now());
    }

    /// Removes `topic` from the subscription set (`false` if it was not in it); the
    /// unsubscribe messages, if configured, go out on every open connection.
    pub fn unsubscribe(&mut self, topic: &str) -> bool {
        self.session.unsubscribe(topic)
    }

    /// Starts a make-before-break rotation of `conn` (see [`FeedSession::rotate`]).
    pub fn rotate(&mut self, conn: ConnId) -> bool {
        self.session.rotate(conn, Instant::now())
    }

    /// Ends the session: every connection is closed with 1000; the events up to
    /// [`Event::Ended`] follow from the feed's `next_event`.
    pub fn close(&mut self) {
        self.session.close();
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<FeedError> {
        self.session.ended()
    }

    /// The session (counters, key bytes, the live subscription set).
    pub fn session(&self) -> &FeedSession {
        &self.session
    }

    /// A driver's: the control of a new session (jitter seeded per session) taking
    /// `timestamps`.
    #[doc(hidden)]
    pub fn new(config: FeedConfig, timestamps: Timestamps) -> Result<Self, ConfigError> {
        let epoch = Instant::now();
        Ok(Self {
            session: FeedSession::new(config, jitter_seed(), epoch)?,
            current: Vec::with_capacity(4 << 10),
            epoch,
            timestamps,
            #[cfg(target_os = "linux")]
            _keeper: match timestamps {
                // Without it a connection's first messages may come unstamped: best effort.
                Timestamps::Kernel => kernel::Keeper::new().ok(),
                Timestamps::User => None,
            },
        })
    }

    /// A driver's: the timestamps asked for.
    #[doc(hidden)]
    pub fn timestamps(&self) -> Timestamps {
        self.timestamps
    }

    /// A driver's: the session, to drive.
    #[doc(hidden)]
    pub fn session_mut(&mut self) -> &mut FeedSession {
        &mut self.session
    }

    /// A driver's: the origin of `RecvStamp::recv_ns`.
    #[doc(hidden)]
    pub fn epoch(&self) -> Instant {
        self.epoch
    }

    /// A driver's: a data message received on `conn`, read at `stamp`. Called only once
    /// every event was handed out (so never `Undrained`); the payload is kept when the
    /// session delivers it.
    #[doc(hidden)]
    pub fn received(&mut self, conn: ConnId, payload: &[u8], stamp: RecvStamp) {
        let disposition = self
            .session
            .on_message(conn, payload, stamp, Instant::now());
        if disposition == Ok(Disposition::Deliver) {
            self.current.clear();
            self.current.extend_from_slice(payload);
        }
    }

    /// A driver's: the next event to hand out.
    #[doc(hidden)]
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.session.poll_event(&self.current)
    }
}

/// A driver's: `Deref` and `DerefMut` of a feed type (with a `control: FeedControl` field)
/// to its [`FeedControl`], so both feeds offer the same user calls.
#[doc(hidden)]
#[macro_export]
macro_rules! feed_control_deref {
    ($feed:ty) => {
        impl ::core::ops::Deref for $feed {
            type Target = $crate::feed::FeedControl;

            fn deref(&self) -> &$crate::feed::FeedControl {
                &self.control
            }
        }

        impl ::core::ops::DerefMut for $feed {
            fn deref_mut(&mut self) -> &mut $crate::feed::FeedControl {
                &mut self.control
            }
        }
    };
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
        let cell = StampCell::new(epoch);
        assert_eq!(cell.get(), RecvStamp::default());
        std::thread::sleep(Duration::from_millis(2));
        cell.record(None);
        let stamp = cell.get();
        assert!(stamp.recv_ns >= 2_000_000, "{stamp:?}");
        assert!(stamp.wall_ns >= before + 2_000_000, "{stamp:?}");
        assert_eq!(stamp.kernel_ns, None);
        cell.record(Some(7));
        assert_eq!(cell.get().kernel_ns, Some(7));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn kernel_reads_only_when_asked_and_not_over_tls() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let socket = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(!kernel_reads(Timestamps::User, false, &socket).unwrap());
        assert!(!kernel_reads(Timestamps::Kernel, true, &socket).unwrap());
        assert!(kernel_reads(Timestamps::Kernel, false, &socket).unwrap());
    }

    #[test]
    fn every_session_gets_its_own_seed() {
        assert_ne!(jitter_seed(), jitter_seed());
    }
}
