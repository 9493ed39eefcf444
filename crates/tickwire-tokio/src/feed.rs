//! The async driver of a [`FeedSession`](tickwire_codec::feed::FeedSession): [`Feed`] owns one WebSocket connection per
//! [`ConnId`] (or its connect in progress), turns the session's actions into socket calls
//! and the sockets' messages into the session's events. Every decision (when to connect,
//! what to send, what to deliver) is the session's; this module has sockets, waiting and
//! the clock.
//!
//! [`Feed::next_event`] polls every connection (and connect in progress) and the session's
//! timer in one future: whichever is ready first is taken.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tickwire_codec::feed::{
    Action, ConfigError, ConnId, Disconnect, Event, FeedConfig, MAX_CONNECTIONS, SendError,
};
use tickwire_codec::ws::{CloseCode, Message};
use tickwire_core::feed::{StampCell, connect_failure, connection_failure, peer_closed};
use tickwire_core::ws::ClientOptions;

use crate::stamp::Stamped;
use crate::{ClientBuilder, Error, Recv, WebSocket};

pub use tickwire_core::feed::{FeedControl, Timestamps};

type Socket = WebSocket<Stamped>;
type Connecting = Pin<Box<dyn Future<Output = Result<Socket, Error>> + Send>>;

/// A feed on tokio: see [`FeedSession`](tickwire_codec::feed::FeedSession) for what it decides.
///
/// ```no_run
/// use tickwire_tokio::ClientBuilder;
/// use tickwire_tokio::codec::feed::{Event, FeedConfig};
/// use tickwire_tokio::feed::Feed;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = FeedConfig::new("wss://stream.example/ws").with_subscription("BTC");
/// let mut feed = Feed::new(config, ClientBuilder::new())?;
/// while let Some(event) = feed.next_event().await {
///     if let Event::Message(message) = event {
///         println!("{} ns: {:?}", message.stamp.recv_ns, message.payload);
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub struct Feed {
    control: FeedControl,
    options: ClientOptions,
    slots: [Slot; MAX_CONNECTIONS],
    /// Where the next round of reads starts, so every connection gets its turn.
    next_read: usize,
    /// The session's timer, allocated once.
    timer: Pin<Box<tokio::time::Sleep>>,
}

#[derive(Default)]
#[expect(
    clippy::large_enum_variant,
    reason = "a fixed array of slots, made once: boxing the open connection would add a pointer chase to every read"
)]
enum Slot {
    #[default]
    Empty,
    Connecting(Connecting),
    Open(Socket),
}

tickwire_core::feed_control_deref!(Feed);

impl Feed {
    /// A feed that connects as `config` says, each connection opened with `client`'s
    /// options (TLS, deflate, headers, keepalive; the feed's `connect_timeout` caps its
    /// connect and handshake timeouts). Call from within a tokio runtime (with time).
    pub fn new(config: FeedConfig, client: ClientBuilder) -> Result<Self, ConfigError> {
        Self::with_timestamps(config, client, Timestamps::User)
    }

    /// [`new`](Self::new), with the receive timestamps asked for ([`Timestamps::Kernel`]:
    /// the kernel's too, on `ws://` connections on Linux).
    pub fn with_timestamps(
        config: FeedConfig,
        client: ClientBuilder,
        timestamps: Timestamps,
    ) -> Result<Self, ConfigError> {
        Ok(Self {
            control: FeedControl::new(config, timestamps)?,
            options: client.into_options(),
            slots: Default::default(),
            next_read: 0,
            timer: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
        })
    }

    /// The next event (the session's timers run meanwhile). `None` once the session has
    /// ended and its last event ([`Event::Ended`]) was handed out.
    ///
    /// Cancel safe: everything a wait gathered (a message, a connect completed, a close) is
    /// given to the session before the wait returns, and a connect in progress is kept in
    /// the feed, so a dropped future loses nothing.
    pub async fn next_event(&mut self) -> Option<Event<'_>> {
        loop {
            self.run_actions();
            if self.control.session_mut().has_event() {
                break;
            }
            if self.control.ended().is_some() {
                return None;
            }
            poll_fn(|cx| self.poll_io(cx)).await;
        }
        self.control.poll_event()
    }

    /// Sends `text` on `conn` if its send quota allows `weight` now (queued, written by the
    /// next `next_event`); else the quota's answer, and nothing is sent.
    pub fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError> {
        let Some(Slot::Open(socket)) = self.slots.get_mut(conn.index()) else {
            return Err(SendError::NotOpen);
        };
        self.control
            .session_mut()
            .try_send(conn, weight, Instant::now())?;
        socket.send_text(text).map_err(|_| SendError::NotOpen)
    }

    /// Turns the session's actions into socket calls (a connect starts here and completes
    /// in [`poll_io`](Self::poll_io)).
    fn run_actions(&mut self) {
        while let Some(action) = self.control.session_mut().poll_action(Instant::now()) {
            match action {
                Action::Connect { conn, endpoint, .. } => {
                    let connecting = self.connect(endpoint);
                    self.slots[conn.index()] = Slot::Connecting(connecting);
                }
                Action::Send { conn, text } => {
                    if let Slot::Open(socket) = &mut self.slots[conn.index()]
                        && let Err(error) = socket.send_text(&text)
                    {
                        self.slots[conn.index()] = Slot::Empty;
                        let why = connection_failure(&error);
                        self.control
                            .session_mut()
                            .on_closed(conn, why, Instant::now());
                    }
                }
                Action::Close { conn, code } => {
                    let slot = core::mem::take(&mut self.slots[conn.index()]);
                    if let (Slot::Open(mut socket), Some(code)) = (slot, code) {
                        // Best effort, without waiting for the reply: the session counts
                        // the connection as gone already. A flush that cannot complete now
                        // is dropped with the socket.
                        if socket.sender().close(CloseCode(code), "").is_ok() {
                            let waker = std::task::Waker::noop();
                            let mut cx = Context::from_waker(waker);
                            let _ = pin!(socket.flush()).poll(&mut cx);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn connect(&self, endpoint: usize) -> Connecting {
        let options = self
            .options
            .for_feed_connection(self.control.session().config().connect_timeout);
        let url = self.control.session().config().endpoints[endpoint].clone();
        let (epoch, timestamps) = (self.control.epoch(), self.control.timestamps());
        Box::pin(async move {
            let (mut options, stream, url, deadline) =
                crate::client::open_stream(options, &url).await?;
            let cell = Arc::new(StampCell::new(epoch));
            let stream = Stamped::new(stream, cell, timestamps)?;
            crate::client::upgrade(options.opening(&url)?, options, stream, deadline).await
        })
    }

    /// One poll of every connection and the session's timer: `Ready` once anything was
    /// given to the session.
    fn poll_io(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let mut progressed = false;
        for turn in 0..MAX_CONNECTIONS {
            let index = (self.next_read + turn) % MAX_CONNECTIONS;
            let conn = ConnId(index as u8);
            match &mut self.slots[index] {
                Slot::Empty => {}
                Slot::Connecting(connecting) => {
                    if let Poll::Ready(opened) = connecting.as_mut().poll(cx) {
                        let now = Instant::now();
                        match opened {
                            Ok(socket) => {
                                self.slots[index] = Slot::Open(socket);
                                self.control.session_mut().on_open(conn, now);
                            }
                            Err(error) => {
                                self.slots[index] = Slot::Empty;
                                self.control.session_mut().on_connect_failed(
                                    conn,
                                    connect_failure(&error),
                                    now,
                                );
                            }
                        }
                        progressed = true;
                    }
                }
                Slot::Open(socket) => {
                    let outcome = poll_socket(socket, conn, &mut self.control, cx);
                    if let Some(why) = outcome {
                        self.slots[index] = Slot::Empty;
                        self.control
                            .session_mut()
                            .on_closed(conn, why, Instant::now());
                        progressed = true;
                    } else if self.control.session_mut().has_event() {
                        progressed = true;
                    }
                }
            }
            if progressed {
                self.next_read = index + 1;
                return Poll::Ready(());
            }
        }
        if let Some(at) = self.control.session_mut().poll_timeout() {
            let now = Instant::now();
            if at > now {
                self.timer
                    .as_mut()
                    .reset(tokio::time::Instant::from_std(at));
                if self.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            self.control.session_mut().handle_timeout(Instant::now());
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// Flushes `socket` and reads it until a data message (given to `session`) or nothing
/// more now; `Some` when the connection ended, with how.
fn poll_socket(
    socket: &mut Socket,
    conn: ConnId,
    control: &mut FeedControl,
    cx: &mut Context<'_>,
) -> Option<Disconnect> {
    if socket.connection().wants_write(socket.buffers())
        && let Poll::Ready(Err(error)) = pin!(socket.flush()).poll(cx)
        && !error.is_timeout()
    {
        return Some(connection_failure(&error));
    }
    let stamp = Arc::clone(socket.stream().cell());
    loop {
        let received = pin!(socket.recv()).poll(cx);
        let payload = match received {
            Poll::Pending => return None,
            Poll::Ready(Ok(Recv::Message(Message::Text(text)))) => text.as_bytes(),
            Poll::Ready(Ok(Recv::Message(Message::Binary(bytes)))) => bytes,
            // Pings are answered by the connection; pongs and closes are its own.
            Poll::Ready(Ok(Recv::Message(_))) => continue,
            Poll::Ready(Ok(Recv::Closed(frame))) => return Some(peer_closed(frame)),
            Poll::Ready(Ok(_)) => return None,
            Poll::Ready(Err(error)) => return Some(connection_failure(&error)),
        };
        control.received(conn, payload, stamp.get());
        if control.session().has_event() {
            return None;
        }
    }
}
