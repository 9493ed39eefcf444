//! The blocking driver of a [`FeedSession`](tickwire_codec::feed::FeedSession): [`Feed`] owns one WebSocket connection per
//! [`ConnId`], turns the session's actions into socket calls and the sockets' messages
//! into the session's events. Every decision (when to connect, what to send, what to
//! deliver) is the session's; this module has sockets, waiting and the clock.
//!
//! The connections' sockets are non-blocking once open, and one `poll(2)` over all of them
//! waits for the first readable one or the earliest timer (the session's, or a
//! connection's keepalive). A connect blocks the loop for at most the feed's
//! `connect_timeout`.

use std::io;
use std::time::{Duration, Instant};

use std::sync::Arc;
use tickwire_codec::feed::{
    Action, ConfigError, ConnId, Event, FeedConfig, MAX_CONNECTIONS, SendError,
};

use tickwire_codec::ws::{CloseCode, Message};
use tickwire_core::feed::{StampCell, connect_failure, connection_failure, peer_closed};
use tickwire_core::ws::ClientOptions;

use crate::stamp::Stamped;
use crate::{ClientBuilder, Error, Recv, WebSocket};

pub use tickwire_core::feed::{FeedControl, Timestamps};

type Socket = WebSocket<Stamped>;

/// A feed over blocking sockets: see [`FeedSession`](tickwire_codec::feed::FeedSession) for what it decides.
///
/// ```no_run
/// use tickwire_blocking::ClientBuilder;
/// use tickwire_blocking::codec::feed::{Event, FeedConfig};
/// use tickwire_blocking::feed::Feed;
///
/// let config = FeedConfig::new("wss://stream.example/ws").with_subscription("BTC");
/// let mut feed = Feed::new(config, ClientBuilder::new())?;
/// while let Some(event) = feed.next_event()? {
///     if let Event::Message(message) = event {
///         println!("{} ns: {:?}", message.stamp.recv_ns, message.payload);
///     }
/// }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Feed {
    control: FeedControl,
    options: ClientOptions,
    conns: [Option<Conn>; MAX_CONNECTIONS],
    /// Where the next round of reads starts, so every connection gets its turn.
    next_read: usize,
}

tickwire_core::feed_control_deref!(Feed);

impl Feed {
    /// A feed that connects as `config` says, each connection opened with `client`'s
    /// options (TLS, deflate, headers, keepalive; the feed's `connect_timeout` caps its
    /// connect and handshake timeouts).
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
            conns: Default::default(),
            next_read: 0,
        })
    }

    /// Blocks until the next event (the session's timers run meanwhile). `None` once the
    /// session has ended and its last event ([`Event::Ended`]) was handed out. `Err` only
    /// when waiting itself failed (`poll(2)`); connection failures are the session's events.
    pub fn next_event(&mut self) -> io::Result<Option<Event<'_>>> {
        if !self.pump(true)? {
            return Ok(None);
        }
        Ok(self.control.poll_event())
    }

    /// The next event without waiting: `None` when there is none now (or the session ended:
    /// see [`ended`](FeedControl::ended)).
    pub fn try_next_event(&mut self) -> io::Result<Option<Event<'_>>> {
        if !self.pump(false)? {
            return Ok(None);
        }
        Ok(self.control.poll_event())
    }

    /// Sends `text` on `conn` if its send quota allows `weight` now (queued, written by the
    /// next `next_event`); else the quota's answer, and nothing is sent.
    pub fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError> {
        let Some(Conn { socket, .. }) = self.conns.get_mut(conn.index()).and_then(Option::as_mut)
        else {
            return Err(SendError::NotOpen);
        };
        self.control
            .session_mut()
            .try_send(conn, weight, Instant::now())?;
        socket.send_text(text).map_err(|_| SendError::NotOpen)
    }

    /// Runs the session until it has an event to give (`true`) or, not `blocking`, until
    /// nothing more can be done now; `false` also once the session ended and was drained.
    fn pump(&mut self, blocking: bool) -> io::Result<bool> {
        loop {
            self.run_actions();
            if self.control.session_mut().has_event() {
                return Ok(true);
            }
            if self.control.ended().is_some() {
                return Ok(false);
            }
            if self.read_round() {
                self.run_actions();
                if self.control.session_mut().has_event() {
                    return Ok(true);
                }
                continue;
            }
            let now = Instant::now();
            let timer = self.control.session_mut().poll_timeout();
            if timer.is_some_and(|at| at <= now) {
                self.control.session_mut().handle_timeout(now);
                continue;
            }
            if !blocking {
                return Ok(false);
            }
            self.wait(timer, now)?;
        }
    }

    /// Turns the session's actions into socket calls, reporting what came of them.
    fn run_actions(&mut self) {
        while let Some(action) = self.control.session_mut().poll_action(Instant::now()) {
            match action {
                Action::Connect { conn, endpoint, .. } => self.connect(conn, endpoint),
                Action::Send { conn, text } => {
                    if let Some(Conn { socket, .. }) = self.conns[conn.index()].as_mut()
                        && let Err(error) = socket.send_text(&text)
                    {
                        self.lost(conn, &error);
                    }
                }
                Action::Close { conn, code } => {
                    if let Some(Conn { mut socket, .. }) = self.conns[conn.index()].take()
                        && let Some(code) = code
                    {
                        // Best effort, without waiting for the reply: the session counts
                        // the connection as gone already.
                        let _ = socket.close(CloseCode(code), "");
                    }
                }
                _ => {}
            }
        }
        for index in 0..MAX_CONNECTIONS {
            if let Some(Conn { socket, .. }) = self.conns[index].as_mut()
                && socket.connection().wants_write(socket.buffers())
                && let Err(error) = socket.flush()
                && !error.is_timeout()
            {
                self.lost(ConnId(index as u8), &error);
            }
        }
    }

    fn connect(&mut self, conn: ConnId, endpoint: usize) {
        let mut options = self
            .options
            .for_feed_connection(self.control.session().config().connect_timeout);
        let url = &self.control.session().config().endpoints[endpoint];
        let stamp = Arc::new(StampCell::new(self.control.epoch()));
        let timestamps = self.control.timestamps();
        let opened =
            crate::client::open_stream(&options, url).and_then(|(stream, url, deadline)| {
                let stream = Stamped::new(stream, Arc::clone(&stamp), timestamps)?;
                let socket =
                    crate::client::upgrade(options.opening(&url)?, options, stream, deadline)?;
                socket.stream().tcp().set_nonblocking(true)?;
                Ok(socket)
            });
        let now = Instant::now();
        match opened {
            Ok(socket) => {
                self.conns[conn.index()] = Some(Conn { socket, stamp });
                self.control.session_mut().on_open(conn, now);
            }
            Err(error) => {
                self.control
                    .session_mut()
                    .on_connect_failed(conn, connect_failure(&error), now)
            }
        }
    }

    /// An open connection failed: dropped and reported.
    fn lost(&mut self, conn: ConnId, error: &Error) {
        self.conns[conn.index()] = None;
        self.control
            .session_mut()
            .on_closed(conn, connection_failure(error), Instant::now());
    }

    /// Reads every open connection, from `next_read` on, until one gives a data message or
    /// closes; `true` when the session has something new.
    fn read_round(&mut self) -> bool {
        for turn in 0..MAX_CONNECTIONS {
            let index = (self.next_read + turn) % MAX_CONNECTIONS;
            let Some(Conn { socket, stamp }) = self.conns[index].as_mut() else {
                continue;
            };
            let conn = ConnId(index as u8);
            let received = loop {
                match socket.try_recv() {
                    Ok(Recv::Message(Message::Text(text))) => break Ok(text.as_bytes()),
                    Ok(Recv::Message(Message::Binary(bytes))) => break Ok(bytes),
                    // Pings are answered by the connection; pongs and closes are its own.
                    Ok(Recv::Message(_)) => {}
                    Ok(Recv::Closed(frame)) => break Err(Some(peer_closed(frame))),
                    Ok(_) => break Err(None),
                    Err(error) if error.is_timeout() => break Err(None),
                    Err(error) => break Err(Some(connection_failure(&error))),
                }
            };
            match received {
                Ok(payload) => self.control.received(conn, payload, stamp.get()),
                Err(Some(why)) => {
                    self.conns[index] = None;
                    self.control
                        .session_mut()
                        .on_closed(conn, why, Instant::now());
                }
                Err(None) => continue,
            }
            self.next_read = index + 1;
            return true;
        }
        false
    }

    /// Waits for a readable (or, with output queued, writable) connection or the earliest
    /// timer: the session's `timer`, or a connection's keepalive.
    fn wait(&mut self, timer: Option<Instant>, now: Instant) -> io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut earliest = timer;
        let mut first = None;
        for conn in self.conns.iter().flatten() {
            first.get_or_insert(conn.socket.stream().tcp());
            if let Some(at) = conn.socket.connection().poll_timeout() {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
        let timeout = earliest.map(|at| {
            at.saturating_duration_since(now)
                .max(Duration::from_micros(50))
        });
        let Some(first) = first else {
            if let Some(timeout) = timeout {
                std::thread::sleep(timeout);
            }
            return Ok(());
        };
        // Unused entries only fill the array: the slice polled ends before them.
        let mut fds: [PollFd<'_>; MAX_CONNECTIONS] =
            core::array::from_fn(|_| PollFd::new(first, PollFlags::empty()));
        let mut used = 0;
        for conn in self.conns.iter().flatten() {
            let mut interest = PollFlags::IN;
            if conn.socket.connection().wants_write(conn.socket.buffers()) {
                interest |= PollFlags::OUT;
            }
            fds[used] = PollFd::new(conn.socket.stream().tcp(), interest);
            used += 1;
        }
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        match poll(&mut fds[..used], timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// One open connection and the cell its reads are stamped into.
struct Conn {
    socket: Socket,
    stamp: Arc<StampCell>,
}
