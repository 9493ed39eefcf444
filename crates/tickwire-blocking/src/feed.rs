//! The blocking driver of a [`FeedSession`](tickwire_codec::feed::FeedSession): [`Feed`]
//! over [`Connections`], one WebSocket connection per [`ConnId`]. What the session's
//! actions and the sockets' outcomes mean is written once in
//! [`tickwire_core::feed`]; this module has sockets, waiting and the clock.
//!
//! The connections' sockets are non-blocking once open, and one `poll(2)` over all of them
//! waits for the first readable one, the earliest timer (the session's, or a connection's
//! keepalive), or a connect finishing. A connect runs on a thread of its own, so one slow
//! connect (a black-holed endpoint, a TLS handshake) never holds up the messages of the
//! connections already open.

use std::io::{self, Read};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, TryRecvError, channel};
use std::time::{Duration, Instant};

use tickwire_codec::feed::{ConnId, Event, MAX_CONNECTIONS};
use tickwire_codec::ws::CloseCode;
use tickwire_core::feed::{
    FeedControl, FeedIo, FeedSocket, Received, Slot, Slots, StampCell, StampedStream, Stamping,
};
use tickwire_core::ws::ClientOptions;

pub use crate::stamp::Stamped;
use crate::{Error, WebSocket};

pub use tickwire_core::feed::Timestamps;

type Socket = WebSocket<Stamped>;
/// A connect's outcome, sent back by its thread: the slot and the connect's number.
type Connected = (ConnId, u64, Result<Socket, Error>);

/// A feed over blocking sockets: see [`FeedSession`](tickwire_codec::feed::FeedSession) for
/// what it decides, and [`tickwire_core::feed::Feed`] for its calls.
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
pub type Feed = tickwire_core::feed::Feed<Connections>;

/// The blocking feed's connections: the `X` of [`Feed`], made by `Feed::new`.
pub struct Connections {
    slots: Slots<u64, Socket>,
    /// Where the next round of reads starts, so every connection gets its turn.
    next_read: usize,
    /// Connects finished on their threads, and the socket they wake `poll(2)` through.
    done: Receiver<Connected>,
    done_tx: Sender<Connected>,
    wake: UnixStream,
    wake_tx: UnixStream,
    /// Connects running on their threads (none: nothing to look for in `done`).
    connecting: usize,
    /// The number of the next connect: a slot closed and reconnected while an older
    /// connect still ran takes only its own connect's outcome.
    attempts: u64,
}

impl FeedIo for Connections {
    type Next<'a> = io::Result<Option<Event<'a>>>;
    /// The connect runs on a thread of its own; the slot keeps its number.
    type Connecting = u64;
    type Socket = Socket;

    fn new() -> Self {
        let (done_tx, done) = channel();
        let (wake, wake_tx) = UnixStream::pair().expect("a socket pair for the feed's waker");
        let _ = wake.set_nonblocking(true);
        Self {
            slots: Default::default(),
            next_read: 0,
            done,
            done_tx,
            wake,
            wake_tx,
            connecting: 0,
            attempts: 0,
        }
    }

    fn next_event<'a>(control: &'a mut FeedControl, io: &'a mut Self) -> Self::Next<'a> {
        if !io.pump(control, true)? {
            return Ok(None);
        }
        Ok(control.poll_event())
    }

    fn pump_now(control: &mut FeedControl, io: &mut Self) -> io::Result<bool> {
        io.pump(control, false)
    }

    fn connect(
        &mut self,
        conn: ConnId,
        url: &str,
        options: ClientOptions,
        stamping: Stamping,
    ) -> u64 {
        self.connecting += 1;
        self.attempts += 1;
        let attempt = self.attempts;
        let (url, done, wake) = (
            url.to_owned(),
            self.done_tx.clone(),
            self.wake_tx.try_clone(),
        );
        std::thread::spawn(move || {
            let opened = open(&url, options, stamping);
            let _ = done.send((conn, attempt, opened));
            if let Ok(mut wake) = wake {
                let _ = io::Write::write(&mut wake, &[1]);
            }
        });
        attempt
    }

    fn slots(&mut self) -> &mut Slots<u64, Socket> {
        &mut self.slots
    }
}

impl FeedSocket for Socket {
    fn send_text(&mut self, text: &str) -> Result<(), Error> {
        (**self).send_text(text)
    }

    fn close_now(&mut self, code: u16) {
        let _ = self.close(CloseCode(code), "");
    }

    fn stamps(&self) -> &Arc<StampCell> {
        self.stream().stamps().cell()
    }
}

/// Writes what `socket` has queued, as far as it takes it now; `true` when the write failed
/// (reported: the caller drops the connection).
#[inline]
fn flush_or_lose(socket: &mut Socket, conn: ConnId, control: &mut FeedControl) -> bool {
    if socket.connection().wants_write(socket.buffers())
        && let Err(error) = socket.flush()
        && !error.is_timeout()
    {
        control.lost(conn, &error);
        return true;
    }
    false
}

/// Opens a feed connection (on a connect's thread): TCP, TLS, the upgrade, its reads
/// stamped, then non-blocking.
fn open(url: &str, options: ClientOptions, stamping: Stamping) -> Result<Socket, Error> {
    let (mut stream, url, deadline) = crate::client::open_stream(&options, url)?;
    let stamps = stamping.arm(stream.tcp())?;
    if stamps.kernel() {
        stream.stamp_kernel();
    }
    let stream = Stamped(StampedStream {
        inner: stream,
        stamps,
    });
    let mut options = options;
    let socket = crate::client::upgrade(options.opening(&url)?, options, stream, deadline)?;
    socket.stream().tcp().set_nonblocking(true)?;
    Ok(socket)
}

impl Connections {
    /// Runs the session until it has an event to give (`true`) or, not `blocking`, until
    /// nothing more can be done now; `false` also once the session ended and was drained.
    fn pump(&mut self, control: &mut FeedControl, blocking: bool) -> io::Result<bool> {
        // What the user queued between calls (`send`) goes out with the read round, which
        // flushes each connection it visits; everything after actions or a wait.
        let mut flush = false;
        loop {
            if control.run_actions(self) || flush {
                self.flush_all(control);
                flush = false;
            }
            if let Some(ready) = control.ready() {
                return Ok(ready);
            }
            if self.take_connects(control) || self.read_round(control) {
                continue;
            }
            let now = Instant::now();
            let timer = control.timer();
            if timer.is_some_and(|at| at <= now) {
                control.session_mut().handle_timeout(now);
                continue;
            }
            if !blocking {
                return Ok(false);
            }
            self.wait(timer, now)?;
            flush = true;
        }
    }

    /// Hands the connects that finished to the session; `true` if any did.
    fn take_connects(&mut self, control: &mut FeedControl) -> bool {
        if self.connecting == 0 {
            return false;
        }
        let mut any = false;
        loop {
            let (conn, attempt, opened) = match self.done.try_recv() {
                Ok(done) => done,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            };
            self.connecting -= 1;
            // A connect of a slot closed since: what it opened is dropped.
            let slot = &mut self.slots[conn.index()];
            if matches!(slot, Slot::Connecting(current) if *current == attempt) {
                control.connected(conn, opened, slot);
            }
            any = true;
        }
        if any {
            let mut drained = [0u8; 64];
            while matches!((&self.wake).read(&mut drained), Ok(n) if n > 0) {}
        }
        any
    }

    /// Writes what each open connection has queued; a connection whose write failed is
    /// dropped and reported.
    fn flush_all(&mut self, control: &mut FeedControl) {
        for index in 0..MAX_CONNECTIONS {
            let Slot::Open(socket, _) = &mut self.slots[index] else {
                continue;
            };
            let conn = ConnId(index as u8);
            if flush_or_lose(socket, conn, control) {
                self.slots[index] = Slot::Empty;
                continue;
            }
            control.sent_control(conn, socket.buffers());
        }
    }

    /// Reads every open connection, from `next_read` on, until one gives a data message or
    /// ends; `true` when the session has something new.
    fn read_round(&mut self, control: &mut FeedControl) -> bool {
        let used = control.slots_used();
        for turn in 0..used {
            // `next_read` is at most `used`: one subtraction wraps it (no division).
            let mut index = self.next_read + turn;
            if index >= used {
                index -= used;
            }
            let Slot::Open(socket, cell) = &mut self.slots[index] else {
                continue;
            };
            let conn = ConnId(index as u8);
            if flush_or_lose(socket, conn, control) {
                self.slots[index] = Slot::Empty;
                return true;
            }
            let mut outcome = loop {
                let outcome = control.on_recv(conn, socket.try_recv(), cell);
                control.sent_control(conn, socket.buffers());
                if outcome != Received::Control {
                    break outcome;
                }
            };
            // A pong or keepalive ping the reads queued goes out now.
            if outcome != Received::Ended && flush_or_lose(socket, conn, control) {
                outcome = Received::Ended;
            }
            match outcome {
                Received::Data => {}
                Received::Ended => self.slots[index] = Slot::Empty,
                _ => continue,
            }
            self.next_read = index + 1;
            return true;
        }
        false
    }

    /// Waits for a readable (or, with output queued, writable) connection, a connect
    /// finishing, or the earliest timer: the session's `timer`, or a connection's keepalive.
    /// Out of line: the read path's frame stays small.
    #[inline(never)]
    fn wait(&mut self, timer: Option<Instant>, now: Instant) -> io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut earliest = timer;
        for slot in &self.slots {
            if let Slot::Open(socket, _) = slot
                && let Some(at) = socket.connection().poll_timeout()
            {
                earliest = Some(earliest.map_or(at, |e| e.min(at)));
            }
        }
        let timeout = earliest.map(|at| {
            at.saturating_duration_since(now)
                .max(Duration::from_micros(50))
        });
        // The waker first; unused entries only fill the array: the slice polled ends
        // before them.
        let mut fds: [PollFd<'_>; MAX_CONNECTIONS + 1] =
            core::array::from_fn(|_| PollFd::new(&self.wake, PollFlags::IN));
        let mut used = 1;
        for slot in &self.slots {
            if let Slot::Open(socket, _) = slot {
                let mut interest = PollFlags::IN;
                if socket.connection().wants_write(socket.buffers()) {
                    interest |= PollFlags::OUT;
                }
                fds[used] = PollFd::new(socket.stream().tcp(), interest);
                used += 1;
            }
        }
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        match poll(&mut fds[..used], timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}
