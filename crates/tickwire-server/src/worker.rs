//! One worker: a poll, a listener, a slab of connections, a scratch buffer set lent to the
//! connection being served, a pool of sets for connections that owe bytes, and a timer wheel.
//!
//! This module owns the [`Worker`] and its bookkeeping: the slab (taking and freeing a
//! slot), lending an open connection to a callback, ending a connection, the pool of buffer
//! sets, and sending the wake-up's batch of replies. It does not own a connection's phases
//! (`peer`, driven from `phases`), the topic rounds (`rounds`) or the loop (`event_loop`):
//! those are `impl Worker` blocks in child modules that use this one, never the reverse.
//!
//! The modules depend one way (`a <- b`: `b` uses `a`):
//!
//! - `batch_send, marks, socket_io, spin, topics, replies`: use no other module of the worker.
//!   `batch_send` is the one module allowed `unsafe` (docs/UNSAFE.md); it sends `(bytes,
//!   descriptor)` pairs and knows nothing of topics or connections.
//! - `marks, replies, socket_io <- serving <- peer`: a connection ([`peer::Peer`]) and the
//!   serving of an open one, over buffers lent to them.
//! - `batch_send, peer, replies, topics <- worker` (this module) `<- phases <- rounds <-
//!   event_loop`: each `impl Worker` block calls only the ones before it.

#[cfg_attr(
    target_os = "linux",
    expect(
        unsafe_code,
        reason = "the io_uring submission and send(2) of batched sends (docs/UNSAFE.md)"
    )
)]
mod batch_send;
mod event_loop;
mod marks;
mod peer;
mod phases;
mod replies;
mod rounds;
mod serving;
mod socket_io;
pub(crate) mod spin;
mod topics;

use batch_send::Sent;
use marks::{End, Marks};
use peer::{Peer, Phase};
use replies::MAX_REPLIES;
use serving::Open;
use spin::BusyPoll;

use std::io;
use std::os::fd::RawFd;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use mio::net::TcpListener;

use mio::{Events, Interest, Poll, Token};
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::handshake::ServerOptions;
use tickwire_codec::ws::{Buffers, Config};

use crate::handle::{Command, ConnId, GENERATION_MASK};
use crate::handler::{Conn, Disconnect, Handler};
use crate::transport::Transport;
use crate::wheel::{Entry, UNARMED, Wheel};

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
        })
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

    /// Sends the batch if the connection in `index` has a run in it: before the connection
    /// is served, lent or ended, so that its bytes keep their order.
    fn reply_before_more(&mut self, index: u32) {
        if self
            .slots
            .get(index as usize)
            .is_some_and(|slot| slot.marks.flags.batched())
        {
            self.send_replies();
        }
    }

    /// Sends every run in the batch in one submission and settles each connection as a
    /// write of what its socket took would have.
    fn send_replies(&mut self) {
        if self.replies.is_empty() {
            return;
        }
        let mut pairs: [(&[u8], RawFd); MAX_REPLIES] = [(&[], 0); MAX_REPLIES];
        let mut count = 0;
        for reply in self.replies.iter() {
            let slot = &self.slots[reply.slot as usize];
            if slot.generation != reply.generation || !slot.marks.flags.batched() {
                continue;
            }
            let Some(stream) = slot.stream.as_ref() else {
                continue;
            };
            pairs[count] = (self.replies.run(reply), stream.fd());
            count += 1;
        }
        let mut results = [Sent::All; MAX_REPLIES];
        results[..count].copy_from_slice(self.sender.send(pairs[..count].iter().copied()));
        let replies = self.replies.take_list();
        let mut sent = 0;
        for reply in &replies {
            let slot = &mut self.slots[reply.slot as usize];
            if slot.generation != reply.generation || !slot.marks.flags.batched() {
                continue;
            }
            if slot.stream.is_none() {
                continue;
            }
            slot.marks.flags.set_batched(false);
            let result = results[sent];
            sent += 1;
            let taken = match result {
                Sent::All => continue,
                Sent::Short(n) => n,
                result if result.would_block() => 0,
                Sent::Failed(_) => {
                    // What a failed write ends the connection with.
                    self.finish(reply.slot, End::ABNORMAL);
                    continue;
                }
            };
            if !self.put_back(reply, taken) {
                self.finish(reply.slot, End::ABNORMAL);
            }
        }
        self.replies.done(replies);
    }

    /// Queues again what the socket did not take of `reply`'s run, in the connection's own
    /// set (one from the pool if it has none), and waits for the socket to drain.
    fn put_back(&mut self, reply: &replies::Reply, taken: usize) -> bool {
        let slot = &mut self.slots[reply.slot as usize];
        let Phase::Open(open) = &mut slot.phase else {
            return false;
        };
        let bufs = slot.bufs.get_or_insert_with(|| {
            self.pool
                .pop()
                .unwrap_or_else(|| Box::new(Buffers::new(&self.config)))
        });
        if !open
            .conn
            .put_back_output(bufs, self.replies.run(reply), taken)
        {
            return false;
        }
        // As after a short send(2): the rest goes when the socket drains.
        slot.marks.flags.set_write_waiting(true);
        true
    }

    /// A set back from a connection: pooled if the pool has room and it did not grow.
    fn give_back(&mut self, bufs: Box<Buffers>) {
        if self.pool.len() < self.settings.pool_size && bufs.capacity() <= self.set_capacity {
            self.pool.push(bufs);
        }
    }
}
