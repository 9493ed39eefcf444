//! The feed both drivers (blocking and tokio) are: [`Feed`], over a transport's
//! [`FeedIo`] (its sockets and how it waits). What is decided about the connections is
//! written here once: how the session's actions become socket calls, what each receive
//! outcome means (a message, nothing, a peer's close, a failure, the control frames sent
//! that a quota counts), how a failed connect is reported, and the options each reconnect
//! opens with. The feed's own decisions are the sans-IO [`FeedSession`]'s.

use std::io;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tickwire_codec::feed::{
    Action, ConfigError, ConnId, Disconnect, Disposition, Event, FeedConfig, FeedError,
    FeedSession, MAX_CONNECTIONS, RecvStamp, SendError,
};
use tickwire_codec::handshake::HandshakeError;
use tickwire_codec::ws::{Buffers, CloseFrame, Fault, Message};

use crate::ws::{ClientBuilder, ClientOptions};
use crate::{Error, Recv};

pub use tickwire_codec::feed::Timestamps;

#[cfg(target_os = "linux")]
pub mod kernel;

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

impl<T> From<ClientBuilder<T>> for ClientOptions {
    /// A builder's options, for a feed's connections.
    fn from(builder: ClientBuilder<T>) -> Self {
        builder.into_options()
    }
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
            connect: self.connect.clone(),
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
/// with [`Timestamps::Kernel`], on Linux (over TLS too: the socket reads under TLS are the
/// `recvmsg` calls); the option is turned on on `socket` then.
#[cfg(target_os = "linux")]
pub fn kernel_reads(timestamps: Timestamps, socket: &impl std::os::fd::AsFd) -> io::Result<bool> {
    if timestamps != Timestamps::Kernel {
        return Ok(false);
    }
    kernel::enable(socket)?;
    Ok(true)
}

/// Whether a feed connection's reads take kernel timestamps: never off Linux.
#[cfg(not(target_os = "linux"))]
pub fn kernel_reads<S>(timestamps: Timestamps, socket: &S) -> io::Result<bool> {
    let _ = (timestamps, socket);
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

/// A feed: a [`FeedSession`] driven over WebSocket connections by a transport's
/// [`FeedIo`]. Use the transport's alias (`tickwire_blocking::feed::Feed`,
/// `tickwire_tokio::feed::Feed`); it derefs to its [`FeedControl`] for what a user changes
/// and reads while it runs (`feed.subscribe("ETH")`, `feed.session().counters(now)`).
pub struct Feed<X> {
    control: FeedControl,
    io: X,
}

/// A transport's side of a [`Feed`]: its connections' sockets, in [`Slots`], and how it
/// waits for them. Everything it reports goes to the [`FeedControl`] it is handed, through
/// its driver calls ([`FeedControl::run_actions`], [`FeedControl::on_recv`], ...).
pub trait FeedIo: Sized {
    /// What [`Feed::next_event`] returns: the event (or `None` at the end), or a future of
    /// it.
    type Next<'a>
    where
        Self: 'a;
    /// A connect in progress (a future, or nothing where a thread runs it).
    type Connecting;
    /// An open connection.
    type Socket: FeedSocket;

    /// The transport's side of a new feed, no connection open (tokio: called within a
    /// runtime).
    fn new() -> Self;

    /// Waits for the next event: runs the session's actions and timers and reads the
    /// connections until the session has an event to hand out, or ended.
    fn next_event<'a>(control: &'a mut FeedControl, io: &'a mut Self) -> Self::Next<'a>;

    /// Does what can be done now without waiting; `true` when an event is ready.
    fn pump_now(control: &mut FeedControl, io: &mut Self) -> io::Result<bool>;

    /// Starts connecting `conn` to `url` with `options`, its reads to be stamped as
    /// `stamping` says; the outcome goes to [`FeedControl::connected`].
    fn connect(
        &mut self,
        conn: ConnId,
        url: &str,
        options: ClientOptions,
        stamping: Stamping,
    ) -> Self::Connecting;

    /// The connections.
    fn slots(&mut self) -> &mut Slots<Self::Connecting, Self::Socket>;
}

/// An open feed connection, as the feed uses it.
pub trait FeedSocket {
    /// Queues `text`.
    fn send_text(&mut self, text: &str) -> Result<(), Error>;

    /// Queues a close frame with `code` and writes what it can now, without waiting for
    /// the reply (the connection is dropped after).
    fn close_now(&mut self, code: u16);

    /// Where its reads are stamped.
    fn stamps(&self) -> &Arc<StampCell>;
}

/// One connection slot of a feed: nothing, a connect in progress, or the open connection
/// and the cell its reads are stamped into.
#[derive(Default)]
pub enum Slot<C, S> {
    /// No connection.
    #[default]
    Empty,
    /// A connect in progress.
    Connecting(C),
    /// The open connection, and where its reads are stamped.
    Open(S, Arc<StampCell>),
}

/// A feed's connection slots, one per [`ConnId`].
pub type Slots<C, S> = [Slot<C, S>; MAX_CONNECTIONS];

impl<X> Deref for Feed<X> {
    type Target = FeedControl;

    fn deref(&self) -> &FeedControl {
        &self.control
    }
}

impl<X> DerefMut for Feed<X> {
    fn deref_mut(&mut self) -> &mut FeedControl {
        &mut self.control
    }
}

impl<X: FeedIo> Feed<X> {
    /// A feed that connects as `config` says (its receive timestamps included), each
    /// connection opened with `client`'s options (a `ClientBuilder`'s: TLS, deflate,
    /// headers, keepalive); the feed's `connect_timeout` caps their connect and handshake
    /// timeouts. On tokio, call from within a runtime (with time).
    pub fn new(config: FeedConfig, client: impl Into<ClientOptions>) -> Result<Self, ConfigError> {
        Ok(Self {
            control: FeedControl::new(config, client.into())?,
            io: X::new(),
        })
    }

    /// The next event (the session's timers run meanwhile); `None` once the session ended
    /// and its last event ([`Event::Ended`]) was handed out. Blocking: waits, `Err` only
    /// when waiting itself failed (`poll(2)`). Tokio: a future, cancel safe (what a wait
    /// gathered is given to the session before it returns; a connect in progress stays in
    /// the feed). Connection failures are the session's events, not errors.
    pub fn next_event(&mut self) -> X::Next<'_> {
        X::next_event(&mut self.control, &mut self.io)
    }

    /// The next event without waiting: `None` when there is none now (or the session ended:
    /// see [`ended`](FeedControl::ended)).
    pub fn try_next_event(&mut self) -> io::Result<Option<Event<'_>>> {
        if X::pump_now(&mut self.control, &mut self.io)? {
            return Ok(self.control.poll_event());
        }
        Ok(None)
    }

    /// The control and the transport's side, apart (for a session on top).
    pub(crate) fn parts(&mut self) -> (&mut FeedControl, &mut X) {
        (&mut self.control, &mut self.io)
    }

    /// Sends `text` on `conn` if its send quota allows `weight` now (queued, written by the
    /// next `next_event`); else the quota's answer, and nothing is sent.
    pub fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError> {
        if !matches!(self.io.slots()[conn.index()], Slot::Open(..)) {
            return Err(SendError::NotOpen);
        }
        self.control
            .session
            .try_send(conn, weight, Instant::now())?;
        self.control.send(&mut self.io, conn, text);
        Ok(())
    }
}

/// What a receive on a feed connection came to, for its driver (the session was told).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Received {
    /// A data message went to the session: stop reading this connection if it has an event.
    Data,
    /// A ping or pong (a ping answered by the connection): read on.
    Control,
    /// Nothing now (the socket would block, a read timeout): read another, or wait.
    Nothing,
    /// The connection ended (the peer's close, a failure): drop it.
    Ended,
}

/// A feed connection's read stamping: the cell its reads are stamped into, and whether they
/// take the kernel's time (`recvmsg` in place of `read`).
#[derive(Debug, Clone)]
pub struct ReadStamps {
    cell: Arc<StampCell>,
    kernel: bool,
}

/// A feed connection's stream and how its reads are stamped: what each transport's
/// `Stamped` stream wraps (its reads call [`ReadStamps::record`]).
#[derive(Debug)]
pub struct StampedStream<S> {
    /// The stream read.
    pub inner: S,
    /// Where and how its reads are stamped.
    pub stamps: ReadStamps,
}

/// The kernel receive time of a TLS stream's socket reads, for a feed: off until
/// [`enable`](Self::enable)d, then the time of the last socket read that returned bytes
/// (that of the read that completed the records the next plaintext comes from).
#[derive(Debug, Default, Clone, Copy)]
pub struct SocketStamp {
    on: bool,
    last: Option<u64>,
}

impl SocketStamp {
    /// From now on the socket reads are `recvmsg` calls that report their kernel time.
    pub fn enable(&mut self) {
        self.on = true;
    }

    /// Whether the socket reads report their kernel time.
    #[inline]
    pub fn is_on(&self) -> bool {
        self.on
    }

    /// The kernel time of the last socket read that returned bytes.
    #[inline]
    pub fn last(&self) -> Option<u64> {
        self.last
    }

    /// Notes a socket read of `n` bytes at kernel time `at`.
    #[inline]
    pub fn note(&mut self, n: usize, at: Option<u64>) {
        if n > 0 {
            self.last = at;
        }
    }
}

/// How a new feed connection will stamp its reads, before its stream exists:
/// [`arm`](Self::arm) it on the stream once open.
#[derive(Debug)]
pub struct Stamping {
    cell: Arc<StampCell>,
    timestamps: Timestamps,
}

impl Stamping {
    /// The stamping of a stream over `socket` (TLS or not): the kernel's time too when
    /// [`kernel_reads`] says so, which turns it on.
    #[cfg(target_os = "linux")]
    pub fn arm(self, socket: &impl std::os::fd::AsFd) -> io::Result<ReadStamps> {
        let kernel = kernel_reads(self.timestamps, socket)?;
        Ok(ReadStamps {
            cell: self.cell,
            kernel,
        })
    }

    /// The stamping of a stream: user timestamps only (no kernel timestamps off Linux).
    #[cfg(not(target_os = "linux"))]
    pub fn arm<S>(self, socket: &S) -> io::Result<ReadStamps> {
        let kernel = kernel_reads(self.timestamps, socket)?;
        Ok(ReadStamps {
            cell: self.cell,
            kernel,
        })
    }
}

impl ReadStamps {
    /// Whether reads take the kernel's time (`recvmsg`).
    #[inline]
    pub fn kernel(&self) -> bool {
        self.kernel
    }

    /// Where the reads are stamped.
    pub fn cell(&self) -> &Arc<StampCell> {
        &self.cell
    }

    /// Records a read of `n` bytes (none recorded for 0), with the kernel's time if taken.
    #[inline]
    pub fn record(&self, n: usize, kernel_ns: Option<u64>) {
        if n > 0 {
            self.cell.record(kernel_ns);
        }
    }
}

/// What a feed's user changes and reads while it runs, the same for the blocking and the
/// tokio feed (each derefs to it: `feed.subscribe("ETH")`): the subscription set, rotation,
/// the end, the session's figures. It also keeps, for the driver, the payload of the message
/// whose events are being handed out (its buffer reused: no allocation per message).
pub struct FeedControl {
    session: FeedSession,
    current: Vec<u8>,
    epoch: Instant,
    options: ClientOptions,
    /// Per connection, the control frames its buffers had queued when last looked at.
    control_seen: [u32; MAX_CONNECTIONS],
    /// A wake-up asked for by a session on top (`rpc`): `next_event` returns (with no
    /// event) once it passes.
    wake_at: Option<Instant>,
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

    fn new(config: FeedConfig, options: ClientOptions) -> Result<Self, ConfigError> {
        let epoch = Instant::now();
        let timestamps = config.timestamps;
        Ok(Self {
            session: FeedSession::new(config, jitter_seed(), epoch)?,
            current: Vec::with_capacity(4 << 10),
            epoch,
            options,
            control_seen: [0; MAX_CONNECTIONS],
            wake_at: None,
            #[cfg(target_os = "linux")]
            _keeper: match timestamps {
                // Without it a connection's first messages may come unstamped: best effort.
                Timestamps::Kernel => kernel::Keeper::new().ok(),
                _ => None,
            },
        })
    }

    /// A driver's: how many slots the session uses (its connections and the rotation's
    /// spare, `connections + 1`); those above are never filled.
    #[doc(hidden)]
    #[inline]
    pub fn slots_used(&self) -> usize {
        self.session.config().connections + 1
    }

    /// A driver's: the session, to drive (its timers).
    #[doc(hidden)]
    pub fn session_mut(&mut self) -> &mut FeedSession {
        &mut self.session
    }

    /// A driver's: whether the session has an event to hand out, or ended (`Some(false)`:
    /// ended and drained; `None`: neither, keep going).
    #[doc(hidden)]
    pub fn ready(&self) -> Option<bool> {
        if self.session.has_event() {
            return Some(true);
        }
        if self.session.ended().is_some() {
            return Some(false);
        }
        // Only a session on top sets it: a plain feed reads no clock here.
        self.wake_at
            .is_some_and(|at| at <= Instant::now())
            .then_some(true)
    }

    /// A driver's: when to wake next, for the session's timers or the wake-up asked with
    /// [`set_wake`](Self::set_wake).
    #[doc(hidden)]
    pub fn timer(&self) -> Option<Instant> {
        match (self.session.poll_timeout(), self.wake_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A session on top's: `next_event` also returns, without an event (`None` while the
    /// session has not ended), once `at` passes.
    #[doc(hidden)]
    pub fn set_wake(&mut self, at: Option<Instant>) {
        self.wake_at = at;
    }

    /// A session on top's: the payload of the message whose event was handed out last.
    #[doc(hidden)]
    pub fn current_payload(&self) -> &[u8] {
        &self.current
    }

    /// The instant of a receive stamp's `recv_ns` (the feed's clock).
    pub fn instant_of(&self, stamp: RecvStamp) -> Instant {
        self.epoch + Duration::from_nanos(stamp.recv_ns)
    }

    /// A driver's: turns the session's actions into `io`'s socket calls (a connect is
    /// started; its outcome is reported later); `true` when there was any (output may be
    /// queued).
    #[doc(hidden)]
    pub fn run_actions<X: FeedIo>(&mut self, io: &mut X) -> bool {
        let mut any = false;
        while self.session.wants_poll()
            && let Some(action) = self.session.poll_action(Instant::now())
        {
            any = true;
            match action {
                Action::Connect { conn, endpoint, .. } => {
                    let options = self
                        .options
                        .for_feed_connection(self.session.config().connect_timeout);
                    let stamping = Stamping {
                        cell: Arc::new(StampCell::new(self.epoch)),
                        timestamps: self.session.config().timestamps,
                    };
                    let url = &self.session.config().endpoints[endpoint];
                    self.control_seen[conn.index()] = 0;
                    let connecting = io.connect(conn, url, options, stamping);
                    io.slots()[conn.index()] = Slot::Connecting(connecting);
                }
                Action::Send { conn, text } => {
                    self.send(io, conn, &text);
                }
                Action::Close { conn, code } => {
                    let slot = core::mem::take(&mut io.slots()[conn.index()]);
                    if let (Slot::Open(mut socket, _), Some(code)) = (slot, code) {
                        // Best effort, without waiting for the reply: the session counts
                        // the connection as gone already.
                        socket.close_now(code);
                    }
                }
                _ => {}
            }
        }
        any
    }

    /// Queues `text` on `conn` if it is open; a failed send drops the connection and is
    /// reported. `true` when it was queued.
    pub(crate) fn send<X: FeedIo>(&mut self, io: &mut X, conn: ConnId, text: &str) -> bool {
        let slot = &mut io.slots()[conn.index()];
        let Slot::Open(socket, _) = slot else {
            return false;
        };
        if let Err(error) = socket.send_text(text) {
            *slot = Slot::Empty;
            self.lost(conn, &error);
            return false;
        }
        true
    }

    /// A driver's: `conn`'s connect completed with `opened`, which goes into its `slot`
    /// (unless the slot was closed meanwhile: then it is dropped); a failure is reported to
    /// the session (with the refusal's status, a timeout, ...).
    #[doc(hidden)]
    pub fn connected<C, S: FeedSocket>(
        &mut self,
        conn: ConnId,
        opened: Result<S, Error>,
        slot: &mut Slot<C, S>,
    ) {
        if !matches!(slot, Slot::Connecting(_)) {
            return;
        }
        let now = Instant::now();
        *slot = match opened {
            Ok(socket) => {
                self.session.on_open(conn, now);
                let cell = Arc::clone(socket.stamps());
                Slot::Open(socket, cell)
            }
            Err(error) => {
                self.session
                    .on_connect_failed(conn, connect_failure(&error), now);
                Slot::Empty
            }
        };
    }

    /// A driver's: an open connection failed (a write, a flush): reported to the session.
    /// The driver drops the connection.
    #[doc(hidden)]
    pub fn lost(&mut self, conn: ConnId, error: &Error) {
        self.session
            .on_closed(conn, connection_failure(error), Instant::now());
    }

    /// A driver's: what a receive on `conn` returned, its reads stamped into `stamps`.
    /// Called only once every event was handed out; a data message's payload is kept when
    /// the session delivers it. Then call [`sent_control`](Self::sent_control).
    #[doc(hidden)]
    #[inline]
    pub fn on_recv(
        &mut self,
        conn: ConnId,
        received: Result<Recv<'_>, Error>,
        stamps: &StampCell,
    ) -> Received {
        let payload = match received {
            Ok(Recv::Message(Message::Text(text))) => text.as_bytes(),
            Ok(Recv::Message(Message::Binary(bytes))) => bytes,
            // Pings are answered by the connection; pongs and closes are its own.
            Ok(Recv::Message(_)) => return Received::Control,
            Ok(Recv::Closed(frame)) => {
                self.session
                    .on_closed(conn, peer_closed(frame), Instant::now());
                return Received::Ended;
            }
            Ok(_) => return Received::Nothing,
            Err(error) if error.is_timeout() => return Received::Nothing,
            Err(error) => {
                self.lost(conn, &error);
                return Received::Ended;
            }
        };
        // The read's time is the message's "now": no second clock read per message.
        let stamp = stamps.get();
        let now = self.epoch + Duration::from_nanos(stamp.recv_ns);
        let disposition = self.session.on_message(conn, payload, stamp, now);
        if disposition == Ok(Disposition::Deliver) {
            self.current.clear();
            self.current.extend_from_slice(payload);
        }
        Received::Data
    }

    /// A driver's: after each receive and flush on `conn`, its buffers: the control frames
    /// its connection queued since (its keepalive pings, its pongs) are charged to its send
    /// quota, where the quota counts them.
    #[doc(hidden)]
    #[inline]
    pub fn sent_control(&mut self, conn: ConnId, bufs: &Buffers) {
        let queued = bufs.control_frames_queued();
        let seen = &mut self.control_seen[conn.index()];
        if queued == *seen {
            return;
        }
        let now = Instant::now();
        for _ in 0..queued.wrapping_sub(*seen).min(64) {
            self.session.on_control_sent(conn, now);
        }
        *seen = queued;
    }

    /// A driver's: the next event to hand out.
    #[doc(hidden)]
    pub fn poll_event(&mut self) -> Option<Event<'_>> {
        self.session.poll_event(&self.current)
    }
}

#[cfg(test)]
mod tests;
