//! One worker: a poll, a listener, a slab of connections, a scratch buffer set lent to the
//! connection being served, a pool of sets for connections that owe bytes, and a timer wheel.
//!
//! The per-connection I/O (handshake, reads, message delivery, writes) is in `conn`; this
//! module owns the loop, accepting, commands from other threads, timers and shutdown.

#[cfg_attr(
    target_os = "linux",
    expect(
        unsafe_code,
        reason = "the io_uring submission and send(2) of batched sends (docs/UNSAFE.md)"
    )
)]
mod batch_send;
mod fanout;
mod marks;
mod peer;
mod replies;
mod serving;
mod socket_io;
pub(crate) mod spin;
mod topics;

use marks::{End, Marks};
use peer::{HandshakeLent, Handshook, Peer, Phase, Release, Served};
use serving::{Open, Reading, ServeLent};
use spin::{BusyPoll, Spin};

use std::io::{self, Write};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};

use mio::{Events, Interest, Poll, Token};
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::handshake::ServerOptions;
use tickwire_codec::ws::{Buffers, CloseCode, Config, Connection};

use crate::handle::{Command, ConnId, GENERATION_MASK};
use crate::handler::{Conn, Disconnect, DisconnectKind, Handler, HandshakeFailure};
use crate::topic::Subscription;
use crate::transport::Transport;
use crate::wheel::{Entry, TICK, UNARMED, Wheel};

/// The poll token of the worker's waker.
pub(crate) const WAKER: usize = usize::MAX - 1;
/// The poll token of the worker's listener.
const LISTENER: usize = usize::MAX - 2;

/// The answer to a connection past the worker's cap.
const SERVICE_UNAVAILABLE: &[u8] =
    b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";

/// Settings of the transport itself (the codec's are in `ServerOptions`).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) handshake_timeout: Duration,
    pub(crate) backpressure_limit: usize,
    pub(crate) max_connections: usize,
    pub(crate) pool_size: usize,
    pub(crate) nodelay: bool,
    /// How long a worker polls without sleeping after a wake-up's work.
    pub(crate) busy_poll: BusyPoll,
    pub(crate) send_budget: usize,
    /// SO_SNDBUF of accepted sockets (`None`: the kernel's default and autotuning).
    pub(crate) socket_send_buffer: Option<usize>,
    /// A wake-up's replies, and a topic round to idle subscribers, go in one io_uring
    /// submission on a plain server, when the kernel allows it.
    pub(crate) batched_sends: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(10),
            backpressure_limit: 1 << 20,
            max_connections: 65_536,
            pool_size: 64,
            nodelay: true,
            busy_poll: BusyPoll::default(),
            send_budget: 256 << 10,
            socket_send_buffer: None,
            batched_sends: true,
        }
    }
}

/// What [`Worker::lend`] hands out: the disjoint parts a callback on one open connection
/// needs.
struct Lent<'w, H: Handler> {
    open: &'w mut Open<H::State>,
    bufs: &'w mut Buffers,
    marks: &'w mut Marks,
    handler: &'w mut H,
}

/// No free slot.
const NO_SLOT: u32 = u32::MAX;

pub(crate) struct Worker<H: Handler, T: Transport> {
    index: u8,
    poll: Poll,
    events: Events,
    listener: Option<TcpListener>,
    commands: mpsc::Receiver<Command>,
    handler: H,
    /// What a connection's transport is made with (the TLS configuration).
    setup: T::Setup,
    options: Arc<ServerOptions>,
    /// The connections' configuration, one `Arc` for all of them.
    config: Arc<Config>,
    settings: Settings,
    slots: Vec<Peer<H::State, T>>,
    free: u32,
    live: usize,
    /// The set lent to the connection being served when it has none of its own.
    scratch: Box<Buffers>,
    /// Boxed: a set moves between the pool, the scratch place and a slot by pointer.
    #[expect(
        clippy::vec_box,
        reason = "sets move between pool, scratch and slots by pointer"
    )]
    pool: Vec<Box<Buffers>>,
    /// The capacity of a set as made: larger ones are not pooled.
    set_capacity: usize,
    /// Handshake responses are written here, then to the socket.
    head_out: WriteBuf,
    /// Where the slices of one vectored write are gathered when they are short
    /// (`socket_io::STAGE`).
    stage: Vec<u8>,
    wheel: Wheel,
    due: Vec<Entry>,
    now: Instant,
    /// Accepting stopped on a descriptor or memory shortage; retried every tick.
    accept_blocked: bool,
    shutdown_at: Option<Instant>,
    topics: topics::Topics,
    /// Batched sends of topic rounds and replies (io_uring), when enabled and available.
    sender: batch_send::BatchSender,
    /// Reused: the topic round being sent in one batch.
    round_batch: fanout::RoundBatch,
    /// The wake-up's replies waiting for one batched send.
    replies: replies::Replies,
}

impl<H: Handler, T: Transport> Worker<H, T> {
    #[expect(
        clippy::too_many_arguments,
        reason = "the parts moved into the worker's thread, each used once"
    )]
    pub(crate) fn new(
        index: u8,
        poll: Poll,
        mut listener: TcpListener,
        commands: mpsc::Receiver<Command>,
        handler: H,
        setup: T::Setup,
        options: Arc<ServerOptions>,
        settings: Settings,
    ) -> io::Result<Self> {
        poll.registry()
            .register(&mut listener, Token(LISTENER), Interest::READABLE)?;
        let config = Arc::new(options.config.clone());
        let scratch = Box::new(Buffers::new(&config));
        let now = Instant::now();
        // A ring only where it is used: topic rounds and replies on a plain server.
        let sender = batch_send::BatchSender::new(settings.batched_sends && !T::TLS);
        Ok(Self {
            index,
            poll,
            events: Events::with_capacity(1024),
            listener: Some(listener),
            commands,
            handler,
            setup,
            set_capacity: scratch.capacity(),
            options,
            config,
            settings,
            slots: Vec::new(),
            free: NO_SLOT,
            live: 0,
            scratch,
            pool: Vec::new(),
            head_out: WriteBuf::new(1024, 0),
            stage: Vec::with_capacity(socket_io::STAGE),
            wheel: Wheel::new(now),
            due: Vec::new(),
            now,
            accept_blocked: false,
            shutdown_at: None,
            topics: topics::Topics::default(),
            replies: replies::Replies::new(sender.enabled()),
            sender,
            round_batch: fanout::RoundBatch::default(),
        })
    }

    pub(crate) fn run(mut self) -> io::Result<()> {
        let mut spin = Spin::new(self.settings.busy_poll);
        // Until then, an empty poll is retried at once instead of sleeping (busy polling).
        let mut spin_until = self.now;
        // When the last wake-up's work was done, while no event has come since.
        let mut idle_since = None;
        let mut worked = false;
        loop {
            // Replies made after the events (commands, topic rounds, timers) go out before
            // the worker sleeps.
            self.send_replies();
            if worked && spin.active() {
                let done = Instant::now();
                idle_since = Some(done);
                spin_until = done + spin.window();
            }
            let mut timeout = self.wheel.timeout(self.now);
            if self.accept_blocked {
                timeout = Some(timeout.map_or(TICK, |t| t.min(TICK)));
            }
            if let Some(at) = self.shutdown_at {
                if self.live == 0 {
                    return Ok(());
                }
                let left = at.saturating_duration_since(self.now);
                timeout = Some(timeout.map_or(left, |t| t.min(left)));
            }
            if self.topics.has_pending() || crate::handle::self_queued() {
                timeout = Some(Duration::ZERO);
            } else if self.now < spin_until {
                timeout = Some(Duration::ZERO);
                if !worked {
                    // Polling with nothing to do: let whatever else wants this core run
                    // first (the network's softirq thread, a kernel worker).
                    std::thread::yield_now();
                }
            }
            let mut events = std::mem::replace(&mut self.events, Events::with_capacity(0));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
            self.now = Instant::now();
            worked = !events.is_empty();
            if worked {
                if let Some(since) = idle_since.take() {
                    spin.observe(self.now.saturating_duration_since(since));
                }
            }
            for event in events.iter() {
                match event.token().0 {
                    LISTENER => self.accept(),
                    WAKER => self.drain_commands(),
                    index => {
                        let reading = if event.is_read_closed() || event.is_error() {
                            Reading::ToWouldBlock
                        } else if event.is_readable() {
                            Reading::Readable
                        } else {
                            Reading::No
                        };
                        let writable = event.is_writable() || event.is_write_closed();
                        self.on_event(index as u32, reading, writable);
                    }
                }
            }
            self.events = events;
            // The wake-up's replies go out before anything else touches the connections.
            self.send_replies();
            // Commands this thread queued for itself (a handler publishing) woke nothing.
            if crate::handle::take_self_queued() {
                self.drain_commands();
            }
            self.topics_round();
            if self.accept_blocked {
                self.accept_blocked = false;
                self.accept();
            }
            self.run_timers();
            if let Some(at) = self.shutdown_at {
                if self.now >= at {
                    self.end_all(DisconnectKind::Shutdown);
                    return Ok(());
                }
            }
        }
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(error) => match error.kind() {
                    io::ErrorKind::WouldBlock => return,
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted => {}
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the pending connections stay queued;
                    // try again on the next tick rather than spinning.
                    _ => {
                        self.accept_blocked = true;
                        return;
                    }
                },
            }
        }
    }

    fn admit(&mut self, mut socket: TcpStream, peer: std::net::SocketAddr) {
        if self.live >= self.settings.max_connections {
            // A plain client reads the refusal; a TLS client sees the connection end.
            if !T::TLS {
                let _ = socket.write(SERVICE_UNAVAILABLE);
            }
            let _ = socket.shutdown(std::net::Shutdown::Write);
            let handler = &mut self.handler;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.on_handshake_error(Some(peer), HandshakeFailure::OverCapacity);
            }));
            return;
        }
        if self.settings.nodelay {
            let _ = socket.set_nodelay(true);
        }
        if let Some(size) = self.settings.socket_send_buffer {
            let _ = socket2::SockRef::from(&socket).set_send_buffer_size(size);
        }
        let Ok(mut stream) = T::accept(socket, &self.setup) else {
            return;
        };
        let index = self.take_slot();
        if self
            .poll
            .registry()
            .register(
                stream.socket(),
                Token(index as usize),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            self.put_slot(index);
            return;
        }
        let tick = self
            .wheel
            .tick_of(self.now + self.settings.handshake_timeout);
        let slot = &mut self.slots[index as usize];
        slot.phase = Phase::Handshake(None);
        slot.stream = Some(stream);
        slot.armed = tick;
        self.wheel.insert(index, tick);
        self.live += 1;
    }

    fn take_slot(&mut self) -> u32 {
        if self.free != NO_SLOT {
            let index = self.free;
            if let Phase::Free { next } = self.slots[index as usize].phase {
                self.free = next;
            }
            return index;
        }
        let index = u32::try_from(self.slots.len()).expect("fewer than 2^32 connections");
        self.slots.push(Peer::empty());
        index
    }

    /// Returns an emptied slot to the free list, with a new generation.
    fn put_slot(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.phase = Phase::Free { next: self.free };
        slot.stream = None;
        slot.armed = UNARMED;
        slot.marks = Marks::default();
        slot.generation = slot.generation.wrapping_add(1) & GENERATION_MASK;
        self.free = index;
    }

    fn id(&self, index: u32) -> ConnId {
        ConnId::new(self.index, index, self.slots[index as usize].generation)
    }

    fn on_event(&mut self, index: u32, reading: Reading, writable: bool) {
        let Some(slot) = self.slots.get(index as usize) else {
            return;
        };
        match slot.phase {
            Phase::Free { .. } => {}
            Phase::Handshake(_) if slot.marks.flags.lingering() => {
                if reading != Reading::No {
                    self.linger(index);
                }
            }
            Phase::Handshake(_) => {
                if writable {
                    self.flush_handshake(index);
                }
                if reading != Reading::No {
                    self.handshake(index);
                }
            }
            Phase::Responding(_) => {
                if writable {
                    self.respond_rest(index);
                }
            }
            Phase::Open(_) => self.serve(index, reading),
        }
    }

    fn drain_commands(&mut self) {
        while let Ok(command) = self.commands.try_recv() {
            match command {
                Command::Shutdown(grace) => self.shutdown(grace),
                Command::Send(id, opcode, payload) => {
                    self.with_open(id, |conn, bufs, _| {
                        let _ = conn.sender(bufs).message(opcode, &payload);
                    });
                }
                Command::Shared(id, frame) => {
                    self.with_open(id, |conn, bufs, _| {
                        let _ = conn.sender(bufs).shared(&frame);
                    });
                }
                Command::Subscribe(id, topic) => {
                    self.change_subscription(Subscription {
                        id,
                        topic,
                        subscribe: true,
                    });
                }
                Command::Unsubscribe(id, topic) => {
                    self.change_subscription(Subscription {
                        id,
                        topic,
                        subscribe: false,
                    });
                }
                Command::Publish(publication) => self.topics.queue(publication),
                Command::Resume(id, topic, after, items) => {
                    self.resume(id, &topic, after, items);
                }
                Command::Close(id, code, reason) => {
                    self.with_open(id, |conn, bufs, now| {
                        let _ = conn.close(bufs, code, &reason, now);
                    });
                }
            }
        }
    }

    /// The open connection `id` (if it still exists) with its buffers, its marks and the
    /// handler, borrowed apart.
    fn lend(&mut self, id: ConnId) -> Option<Lent<'_, H>> {
        self.reply_before_more(id.slot());
        let slot = self.slots.get_mut(id.slot() as usize)?;
        if slot.generation != id.generation() {
            return None;
        }
        let Phase::Open(open) = &mut slot.phase else {
            return None;
        };
        let bufs = match slot.bufs.as_deref_mut() {
            Some(bufs) => bufs,
            None => &mut self.scratch,
        };
        Some(Lent {
            open,
            bufs,
            marks: &mut slot.marks,
            handler: &mut self.handler,
        })
    }

    /// Calls the handler through `f` with the open connection `id` (if it still exists and
    /// its handler has not panicked): a panic queues the close with 1011. Writes nothing.
    fn call(&mut self, id: ConnId, f: impl FnOnce(&mut H, &mut Conn<'_, H::State>)) {
        let Some(lent) = self.lend(id) else {
            return;
        };
        if lent.marks.flags.panicked() {
            return;
        }
        let mut conn = Conn {
            id,
            state: &mut lent.open.state,
            sender: lent.open.conn.sender(lent.bufs),
        };
        let handler = lent.handler;
        if !serving::guarded(|| f(handler, &mut conn)) {
            serving::panicked(lent.marks, &mut conn);
        }
    }

    /// Runs `f` on the open connection `id` (if it still exists) with its buffers, then
    /// serves it (writes what `f` queued).
    fn with_open(&mut self, id: ConnId, f: impl FnOnce(&mut Connection, &mut Buffers, Instant)) {
        let now = self.now;
        let Some(lent) = self.lend(id) else {
            return;
        };
        f(&mut lent.open.conn, lent.bufs, now);
        self.serve(id.slot(), Reading::No);
    }

    fn run_timers(&mut self) {
        let mut due = std::mem::take(&mut self.due);
        self.wheel.expire(self.now, &mut due);
        for entry in due.drain(..) {
            let slot = &mut self.slots[entry.slot as usize];
            if slot.armed != entry.tick {
                continue;
            }
            slot.armed = UNARMED;
            if slot.marks.flags.lingering() {
                self.finish(entry.slot, End::FAILED);
                continue;
            }
            match slot.phase {
                Phase::Free { .. } => {}
                // The opening handshake took too long (a trickled request included).
                Phase::Handshake(_) => self.drop_handshake(entry.slot, HandshakeFailure::Timeout),
                Phase::Responding(_) => self.finish(entry.slot, End::FAILED),
                Phase::Open(_) => self.serve(entry.slot, Reading::No),
            }
        }
        self.due = due;
    }

    fn shutdown(&mut self, grace: Duration) {
        if let Some(mut listener) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        self.accept_blocked = false;
        self.shutdown_at = Some(self.now + grace);
        for index in 0..self.slots.len() as u32 {
            match self.slots[index as usize].phase {
                Phase::Free { .. } => {}
                Phase::Handshake(_) | Phase::Responding(_) => self.finish(
                    index,
                    End {
                        kind: DisconnectKind::Shutdown,
                        code: None,
                    },
                ),
                Phase::Open(_) => {
                    let id = self.id(index);
                    self.with_open(id, |conn, bufs, now| {
                        let _ = conn.close(bufs, CloseCode::GOING_AWAY, "", now);
                    });
                }
            }
        }
    }

    /// Drops every remaining connection (the grace period is over).
    fn end_all(&mut self, kind: DisconnectKind) {
        for index in 0..self.slots.len() as u32 {
            if !matches!(self.slots[index as usize].phase, Phase::Free { .. }) {
                self.finish(
                    index,
                    End {
                        kind,
                        code: Some(CloseCode::GOING_AWAY),
                    },
                );
            }
        }
    }

    /// Closes the socket, frees the slot and its buffers, and tells the handler (for a
    /// connection that was opened).
    fn finish(&mut self, index: u32, end: End) {
        // A reply in the batch goes first, as a write before the close would have.
        self.reply_before_more(index);
        let id = self.id(index);
        let slot = &mut self.slots[index as usize];
        let phase = std::mem::replace(&mut slot.phase, Phase::Handshake(None));
        let end = slot.marks.end().unwrap_or(end);
        match slot.bufs.take() {
            Some(mut bufs) => {
                bufs.clear();
                self.give_back(bufs);
            }
            // The connection was being served from the scratch set: empty it for the next.
            None => self.scratch.clear(),
        }
        self.put_slot(index);
        self.topics.forget(index);
        self.live -= 1;
        let Some(state) = phase.into_state() else {
            return;
        };
        let disconnect = Disconnect {
            kind: end.kind,
            code: end.code,
        };
        let handler = &mut self.handler;
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            handler.on_close(id, state, disconnect);
        }));
    }

    /// Reads the upgrade request (see [`Peer::handshake`]); on a 101 the connection opens
    /// and is served at once (bytes that followed the request included).
    fn handshake(&mut self, index: u32) {
        let mut lent = HandshakeLent {
            handler: &mut self.handler,
            options: &self.options,
            config: &self.config,
            head_out: &mut self.head_out,
            now: self.now,
        };
        let slot = &mut self.slots[index as usize];
        match slot.handshake(&mut self.scratch, &mut lent) {
            Handshook::Gone
            | Handshook::Waiting {
                keep_scratch: false,
            } => {}
            Handshook::Waiting { keep_scratch: true } => self.keep_scratch(index),
            Handshook::Opened => self.opened(index),
            Handshook::Refused(failure) => self.refuse(index, failure),
            Handshook::Failed(failure) => self.drop_handshake(index, failure),
        }
    }

    /// The rest of a 101 the socket did not take at once.
    fn respond_rest(&mut self, index: u32) {
        match self.slots[index as usize].respond_rest() {
            Ok(true) => self.opened(index),
            Ok(false) => {}
            Err(_) => self.finish(index, End::RESET),
        }
    }

    /// The 101 is written: `on_open`, then serve (frames that came with the request first).
    fn opened(&mut self, index: u32) {
        let id = self.id(index);
        self.call(id, |handler, conn| handler.on_open(conn));
        // Read too: the request's read may have stopped at a full buffer, or bytes came
        // while the 101 waited for the socket, and their edge has passed.
        self.serve(index, Reading::ToWouldBlock);
    }

    /// Writes the refusal in `head_out`, tells the handler, and lingers until the client has
    /// stopped sending (see [`Peer::write_refusal`]), or drops the connection at once.
    fn refuse(&mut self, index: u32, failure: HandshakeFailure) {
        let slot = &mut self.slots[index as usize];
        if !slot.write_refusal(self.head_out.as_slice(), &mut self.scratch.read) {
            return self.drop_handshake(index, failure);
        }
        self.report_handshake_failure(index, failure);
        self.start_lingering(index);
    }

    /// Starts lingering on a connection whose last answer is written and whose write side is
    /// shut: the close timeout is armed, and its buffers go back (the scratch set is emptied
    /// for the next connection, as `finish` does).
    fn start_lingering(&mut self, index: u32) {
        let tick = self.wheel.tick_of(self.now + self.config.close_timeout);
        let slot = &mut self.slots[index as usize];
        let kept = slot.start_lingering();
        if slot.armed == UNARMED || tick < slot.armed {
            self.wheel.insert(index, tick);
            slot.armed = tick;
        }
        match kept {
            Some(mut owned) => {
                owned.clear();
                self.give_back(owned);
            }
            None => self.scratch.clear(),
        }
    }

    /// A lingering connection: drop what the peer still sends, close at its end.
    fn linger(&mut self, index: u32) {
        if self.slots[index as usize].linger(&mut self.scratch.read) {
            self.finish(index, End::FAILED);
        }
    }

    /// A TLS handshake whose messages the socket did not take at once: write the rest.
    fn flush_handshake(&mut self, index: u32) {
        if let Err(failure) = self.slots[index as usize].flush_handshake() {
            self.drop_handshake(index, failure);
        }
    }

    /// Tells the handler why a connection's opening handshake failed.
    fn report_handshake_failure(&mut self, index: u32, failure: HandshakeFailure) {
        let peer = self.slots[index as usize].peer_addr();
        let handler = &mut self.handler;
        let _ = serving::guarded(|| handler.on_handshake_error(peer, failure));
    }

    /// Drops a connection whose opening handshake failed, after telling the handler why.
    fn drop_handshake(&mut self, index: u32, failure: HandshakeFailure) {
        self.report_handshake_failure(index, failure);
        self.finish(index, End::RESET);
    }

    /// The connection being served keeps the scratch set (it owes bytes); the worker takes
    /// a set from its pool as its new scratch.
    fn keep_scratch(&mut self, index: u32) {
        let fresh = self
            .pool
            .pop()
            .unwrap_or_else(|| Box::new(Buffers::new(&self.config)));
        let owned = std::mem::replace(&mut self.scratch, fresh);
        self.slots[index as usize].bufs = Some(owned);
    }

    /// Serves an open connection (see [`Peer::serve`]), then closes it if it is over, or
    /// arms its next deadline and settles who keeps the buffer set.
    fn serve(&mut self, index: u32, reading: Reading) {
        self.reply_before_more(index);
        let id = self.id(index);
        let mut lent = ServeLent {
            handler: &mut self.handler,
            replies: &mut self.replies,
            stage: &mut self.stage,
            now: self.now,
            limit: self.settings.backpressure_limit,
        };
        let slot = &mut self.slots[index as usize];
        let (deadline, release) = match slot.serve(id, reading, &mut self.scratch, &mut lent) {
            Served::Untouched => return,
            Served::Over(end) => return self.finish(index, end),
            Served::Linger => return self.start_lingering(index),
            Served::Open { deadline, release } => (deadline, release),
        };
        // Arm the wheel for the connection's next deadline, if it is earlier than the entry
        // already armed (a later one is found when that entry fires).
        if let Some(at) = deadline {
            let tick = self.wheel.tick_of(at);
            if slot.armed == UNARMED || tick < slot.armed {
                self.wheel.insert(index, tick);
                slot.armed = tick;
            }
        }
        match release {
            Release::GiveBack(owned) => self.give_back(owned),
            Release::Keep => {}
            Release::ScratchIdle => {
                if self.scratch.capacity() > 4 * self.set_capacity {
                    // A large frame grew the scratch set: do not keep the memory.
                    *self.scratch = Buffers::new(&self.config);
                }
            }
            Release::KeepScratch => self.keep_scratch(index),
        }
        // Settled: the connection keeps its set or not, as if its reply had been written.
        if self.replies.full() {
            self.send_replies();
        }
    }

    /// A set back from a connection: pooled if the pool has room and it did not grow.
    fn give_back(&mut self, bufs: Box<Buffers>) {
        if self.pool.len() < self.settings.pool_size && bufs.capacity() <= self.set_capacity {
            self.pool.push(bufs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The slot is most of what an idle plain connection costs (DESIGN rule 11): keep it at
    /// the codec's connection state plus 24 bytes.
    #[test]
    fn an_idle_plain_slot_is_the_connection_plus_24_bytes() {
        // mio's socket carries a selector id in debug builds only.
        let debug =
            (size_of::<TcpStream>() - size_of::<std::os::fd::OwnedFd>()).next_multiple_of(8);
        let slot = size_of::<Peer<(), TcpStream>>();
        assert_eq!(slot, size_of::<Connection>() + 24 + debug, "{slot}");
    }
}
