//! The async driver of a [`FeedSession`](tickwire_codec::feed::FeedSession): [`Feed`] over
//! [`Connections`], one WebSocket connection (or its connect in progress) per [`ConnId`].
//! What the session's actions and the sockets' outcomes mean is written once in
//! [`tickwire_core::feed`]; this module has sockets, waiting and the clock.
//!
//! [`Feed::next_event`](tickwire_core::feed::Feed::next_event) polls every connection (and
//! connect in progress) and the session's timer in one future, [`NextEvent`]: whichever is
//! ready first is taken.

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tickwire_codec::feed::{ConnId, Event};
use tickwire_codec::ws::CloseCode;
use tickwire_core::feed::{
    FeedControl, FeedIo, FeedSocket, Received, Slot, Slots, StampCell, StampedStream, Stamping,
};
use tickwire_core::ws::ClientOptions;

pub use crate::stamp::Stamped;
use crate::{Error, WebSocket};

pub use tickwire_core::feed::Timestamps;

type Socket = WebSocket<Stamped>;
type Connecting = Pin<Box<dyn Future<Output = Result<Socket, Error>> + Send>>;

/// A feed on tokio: see [`FeedSession`](tickwire_codec::feed::FeedSession) for what it
/// decides, and [`tickwire_core::feed::Feed`] for its calls.
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
pub type Feed = tickwire_core::feed::Feed<Connections>;

/// The tokio feed's connections: the `X` of [`Feed`], made by `Feed::new` (within a
/// runtime).
pub struct Connections {
    slots: Slots<Connecting, Socket>,
    /// Where the next round of reads starts, so every connection gets its turn.
    next_read: usize,
    /// The session's timer, allocated once.
    timer: Pin<Box<tokio::time::Sleep>>,
}

/// The future of [`Feed::next_event`](tickwire_core::feed::Feed::next_event) on tokio: the
/// next event, `None` once the session ended and its last event was handed out.
///
/// Cancel safe: everything a poll gathered (a message, a connect completed, a close) is
/// given to the session before the poll returns, and a connect in progress is kept in the
/// feed, so a dropped future loses nothing.
#[must_use = "futures do nothing unless polled"]
pub struct NextEvent<'a> {
    parts: Option<(&'a mut FeedControl, &'a mut Connections)>,
}

impl<'a> Future for NextEvent<'a> {
    type Output = Option<Event<'a>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let (control, io) = this
            .parts
            .as_mut()
            .expect("NextEvent polled after completion");
        loop {
            control.run_actions(&mut **io);
            match control.ready() {
                Some(true) => break,
                Some(false) => return Poll::Ready(None),
                None => std::task::ready!(io.poll_io(control, cx)),
            }
        }
        let (control, _) = this.parts.take().expect("taken once");
        Poll::Ready(control.poll_event())
    }
}

impl FeedIo for Connections {
    type Next<'a> = NextEvent<'a>;
    type Connecting = Connecting;
    type Socket = Socket;

    fn new() -> Self {
        Self {
            slots: Default::default(),
            next_read: 0,
            timer: Box::pin(tokio::time::sleep_until(tokio::time::Instant::now())),
        }
    }

    fn next_event<'a>(control: &'a mut FeedControl, io: &'a mut Self) -> NextEvent<'a> {
        NextEvent {
            parts: Some((control, io)),
        }
    }

    fn pump_now(control: &mut FeedControl, io: &mut Self) -> std::io::Result<bool> {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        loop {
            control.run_actions(io);
            if let Some(ready) = control.ready() {
                return Ok(ready);
            }
            if io.poll_io(control, &mut cx).is_pending() {
                return Ok(false);
            }
        }
    }

    fn connect(
        &mut self,
        _: ConnId,
        url: &str,
        options: ClientOptions,
        stamping: Stamping,
    ) -> Connecting {
        let url = url.to_owned();
        Box::pin(async move {
            let (mut options, mut stream, url, deadline) =
                crate::client::open_stream(options, &url).await?;
            let stamps = stamping.arm(stream.tcp())?;
            if stamps.kernel() {
                stream.0.stamp_kernel();
            }
            let stream = Stamped(StampedStream {
                inner: stream,
                stamps,
            });
            crate::client::upgrade(options.opening(&url)?, options, stream, deadline).await
        })
    }

    fn slots(&mut self) -> &mut Slots<Connecting, Socket> {
        &mut self.slots
    }
}

impl FeedSocket for Socket {
    fn send_text(&mut self, text: &str) -> Result<(), Error> {
        (**self).send_text(text)
    }

    /// The flush that cannot complete now is dropped with the socket.
    fn close_now(&mut self, code: u16) {
        if self.sender().close(CloseCode(code), "").is_ok() {
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let _ = pin!(self.flush()).poll(&mut cx);
        }
    }

    fn stamps(&self) -> &Arc<StampCell> {
        self.stream().stamps().cell()
    }
}

impl Connections {
    /// One poll of every connection and the session's timer: `Ready` once anything was
    /// given to the session.
    fn poll_io(&mut self, control: &mut FeedControl, cx: &mut Context<'_>) -> Poll<()> {
        let used = control.slots_used();
        for turn in 0..used {
            // `next_read` is at most `used`: one subtraction wraps it (no division).
            let mut index = self.next_read + turn;
            if index >= used {
                index -= used;
            }
            let conn = ConnId(index as u8);
            let progressed = match &mut self.slots[index] {
                Slot::Empty => false,
                Slot::Connecting(connecting) => match connecting.as_mut().poll(cx) {
                    Poll::Ready(opened) => {
                        control.connected(conn, opened, &mut self.slots[index]);
                        true
                    }
                    Poll::Pending => false,
                },
                Slot::Open(socket, cell) => {
                    let ended = poll_socket(socket, cell, conn, control, cx);
                    if ended {
                        self.slots[index] = Slot::Empty;
                    }
                    ended || control.ready().is_some()
                }
            };
            if progressed {
                self.next_read = index + 1;
                return Poll::Ready(());
            }
        }
        if let Some(at) = control.timer() {
            if at > Instant::now() {
                self.timer
                    .as_mut()
                    .reset(tokio::time::Instant::from_std(at));
                if self.timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
            }
            control.session_mut().handle_timeout(Instant::now());
            return Poll::Ready(());
        }
        Poll::Pending
    }
}

/// Flushes `socket` and reads it until a data message (given to the session) or nothing
/// more now; `true` when the connection ended (the session was told).
fn poll_socket(
    socket: &mut Socket,
    cell: &StampCell,
    conn: ConnId,
    control: &mut FeedControl,
    cx: &mut Context<'_>,
) -> bool {
    if socket.connection().wants_write(socket.buffers())
        && let Poll::Ready(Err(error)) = pin!(socket.flush()).poll(cx)
        && !error.is_timeout()
    {
        control.lost(conn, &error);
        return true;
    }
    loop {
        let outcome = match pin!(socket.recv()).poll(cx) {
            Poll::Pending => Received::Nothing,
            Poll::Ready(received) => control.on_recv(conn, received, cell),
        };
        control.sent_control(conn, socket.buffers());
        match outcome {
            Received::Control => {}
            Received::Data if control.ready().is_none() => {}
            Received::Ended => return true,
            _ => return false,
        }
    }
}
