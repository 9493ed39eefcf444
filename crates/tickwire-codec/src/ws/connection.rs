//! Connection-level rules on top of the frame reader and writer, sans-IO.
//!
//! Owns the close handshake (either side first, with a close timeout), automatic pongs,
//! client keepalive pings with a pong deadline, and the idle timeout. Time comes in through
//! [`Connection::filled`] and [`Connection::handle_timeout`]; the next deadline goes out
//! through [`Connection::poll_timeout`].
//!
//! The read path never writes: replies it owes (a pong, the close reply) are queued for the
//! [`Sender`] and reported by [`Connection::wants_write`]; the transport writes
//! [`Connection::output`].
//!
//! A connection holds only state. Its bytes live in [`Buffers`] that the transport lends to
//! each call: a blocking transport keeps one set per connection; a reactor may give them back
//! to a pool whenever [`Connection::is_idle`] says nothing is in them, so an idle connection
//! holds no buffer. The [`Config`] is shared (an `Arc`), not copied per connection. Pongs go ahead of queued data frames that have not started going
//! out: only the one frame already partly written finishes first, never split. A close goes
//! after all queued data. Under a ping flood from a peer that never reads, queued pongs are
//! bounded and the most recent ping is still answered (RFC 6455 §5.5.3).
//!
//! It does not own the opening handshake or any socket.

use std::io::IoSlice;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use super::PreparedMessage;
use super::output::Output;
use super::{
    CloseCode, CloseFrame, Compression, Error, Extension, Fault, FrameReader, FrameWriter, Limits,
    LimitsSource, MaskSource, Message, OpCode, Role,
};
use super::{DroppedShared, SharedFrame, SharedLabel};
use crate::buf::{ReadBuf, WriteBuf};

mod link;
mod sender;
mod split;

use link::{Link, Receipt};
use sender::SendState;
pub use sender::Sender;
pub use split::{ReadHalf, WriteHalf};

/// Queued control bytes beyond which further automatic pongs are dropped (RFC 6455 §5.5.3
/// allows answering only the most recent ping); bounds memory against a ping flood from a
/// peer that never reads.
const MAX_QUEUED_CONTROL: usize = 16 << 10;

/// Connection configuration. [`Config::client`] and [`Config::server`] give the documented
/// defaults; every field may be changed. Connections share one (`Arc<Config>`).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// Receive limits.
    pub limits: Limits,
    /// Answer pings with pongs automatically (default true).
    pub auto_pong: bool,
    /// Send a ping when nothing has been received for this long (default: none).
    pub ping_interval: Option<Duration>,
    /// How long to wait for a pong after a keepalive ping before failing (default 10 s).
    pub pong_timeout: Duration,
    /// Fail when nothing at all has been received for this long (default: none).
    pub idle_timeout: Option<Duration>,
    /// How long to wait for the peer's close reply after sending a close (default 5 s).
    pub close_timeout: Duration,
    /// Fragment outgoing data messages longer than this (default: never).
    pub fragment_size: Option<usize>,
    /// Initial receive buffer size (default 64 KiB client, 16 KiB server).
    pub read_buffer_size: usize,
    /// The receive buffer doubles, up to this size, whenever a read fills it to the end: the
    /// peer is sending faster than it is read, and larger reads take fewer system calls
    /// (default 128 KiB client: beyond the L2 cache, what the kernel copied in is cold again
    /// when it is parsed; 16 KiB server, where transports lend and reclaim buffers).
    pub max_read_buffer_size: usize,
    /// Initial send buffer size (default 64 KiB client, 16 KiB server).
    pub write_buffer_size: usize,
}

impl Config {
    /// Client defaults: [`Limits::client`], 64 KiB buffers, the receive buffer growing to
    /// 128 KiB under a backlog.
    pub fn client() -> Self {
        Self {
            limits: Limits::client(),
            auto_pong: true,
            ping_interval: None,
            pong_timeout: Duration::from_secs(10),
            idle_timeout: None,
            close_timeout: Duration::from_secs(5),
            fragment_size: None,
            read_buffer_size: 64 << 10,
            max_read_buffer_size: 128 << 10,
            write_buffer_size: 64 << 10,
        }
    }

    /// Server defaults: [`Limits::server`], 16 KiB buffers that do not grow.
    pub fn server() -> Self {
        Self {
            limits: Limits::server(),
            read_buffer_size: 16 << 10,
            max_read_buffer_size: 16 << 10,
            write_buffer_size: 16 << 10,
            ..Self::client()
        }
    }

    with_methods! {
        set with_limits => limits: Limits,
        set with_auto_pong => auto_pong: bool,
        set with_ping_interval => ping_interval: Option<Duration>,
        set with_pong_timeout => pong_timeout: Duration,
        set with_idle_timeout => idle_timeout: Option<Duration>,
        set with_close_timeout => close_timeout: Duration,
        set with_fragment_size => fragment_size: Option<usize>,
        set with_read_buffer_size => read_buffer_size: usize,
        set with_max_read_buffer_size => max_read_buffer_size: usize,
        set with_write_buffer_size => write_buffer_size: usize,
    }
}

/// Where the connection is in its life (RFC 6455 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Messages flow both ways.
    Open,
    /// We sent a close and wait for the peer's.
    CloseSent,
    /// Both closes are exchanged (or queued): flush, then close the transport.
    Closed,
    /// A protocol error, limit or timeout ended the connection; a close frame may be queued.
    Failed,
}

/// What [`Connection::poll`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A message, ping or pong (pings were already answered if auto-pong is on). Never a
    /// close: the peer's close is answered and reported as [`Event::Closed`].
    Message(Message<'a>),
    /// No complete message is buffered: read more.
    NeedMore,
    /// The close handshake is complete (the peer's close arrived, and was answered, or the
    /// close timer ran out): no message will follow. [`Connection::peer_close`] says what
    /// the peer's close carried.
    Closed,
}

/// What [`Connection::advance`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A message is ready: take it with [`Connection::message`].
    Ready,
    /// No complete message is buffered: read more.
    NeedMore,
    /// The close handshake is complete, as [`Event::Closed`]; every later call returns it
    /// again.
    Closed,
}

impl LimitsSource for Arc<Config> {
    #[inline(always)]
    fn limits(&self) -> &Limits {
        &self.limits
    }
}

/// The bytes of one connection: received bytes not yet parsed, and queued output. Lent to
/// every [`Connection`] call that reads or writes them; any set may be lent to any connection
/// while [`Connection::is_idle`] holds for it (a pool), else it must be the same set, or one
/// whose [`read`](Self::read) holds the same unparsed bytes.
#[derive(Debug, Clone)]
pub struct Buffers {
    /// Received bytes: the transport reads into [`Connection::spare`] or
    /// [`FrameReader::spare`] and calls [`Connection::filled`].
    pub read: ReadBuf,
    /// Queued frames: data, control and shared.
    out: Output,
}

impl Buffers {
    /// Buffers of the sizes `config` asks for.
    pub fn new(config: &Config) -> Self {
        Self::with_read(ReadBuf::with_capacity(config.read_buffer_size), config)
    }

    /// Buffers whose receive side is `read`, for example the handshake's buffer with the
    /// bytes that followed the head still in it: they are parsed first, without a copy.
    pub fn with_read(mut read: ReadBuf, config: &Config) -> Self {
        read.reserve(config.read_buffer_size.saturating_sub(read.capacity()));
        Self {
            read,
            out: Output::new(
                WriteBuf::new(config.write_buffer_size, super::MAX_HEADER_LEN),
                WriteBuf::new(256, 0),
            ),
        }
    }

    /// True when no received byte and no output is buffered.
    pub fn is_empty(&self) -> bool {
        self.read.is_empty() && self.out.is_empty()
    }

    /// Bytes of output queued, shared frames included (what a transport compares with its
    /// backpressure limit).
    pub fn queued(&self) -> usize {
        self.out.len()
    }

    /// Pings and pongs queued since these buffers were made, a wrapping count: what a driver
    /// reads before and after a call to learn how many control frames it sent (an exchange
    /// that counts them against a message quota; a pong that replaced one not yet written is
    /// not counted twice).
    pub fn control_frames_queued(&self) -> u32 {
        self.out.control_frames
    }

    /// Bytes of data output queued (own data frames, the close and shared frames). Pings and
    /// pongs are left out; they are few and never dropped.
    pub fn queued_data(&self) -> usize {
        self.out.len() - self.out.control.len()
    }

    /// What the queued data output costs in memory: [`queued_data`](Self::queued_data) plus
    /// [`SHARED_ENTRY_BYTES`](Self::SHARED_ENTRY_BYTES) for each shared frame waiting (its
    /// bytes are shared, its queue entry is not). What a send budget should count: for small
    /// shared messages the entries, not the bytes, are most of it.
    pub fn queued_cost(&self) -> usize {
        self.queued_data() + self.out.shared_frames() * Self::SHARED_ENTRY_BYTES
    }

    /// The memory one queued shared frame takes in a connection's queue.
    pub const SHARED_ENTRY_BYTES: usize = super::output::SHARED_ENTRY_BYTES;

    /// Removes labelled shared frames ([`Sender::shared_labeled`]) that have not started
    /// going out and for which `drop` (given the label and the frame's wire length) returns
    /// `Some(true)`, scanning oldest first (`None`
    /// stops the scan): how a fan-out server sheds a slow subscriber's backlog. A frame
    /// partly written always finishes (frames are never cut), and everything unlabelled
    /// stays, so the stream stays well formed.
    pub fn drop_shared(
        &mut self,
        drop: impl FnMut(&SharedLabel, usize) -> Option<bool>,
    ) -> DroppedShared {
        self.out.drop_shared(drop)
    }

    /// Drops every received and queued byte, for a set going back to a pool after its
    /// connection ended (a pool lends only empty sets).
    pub fn clear(&mut self) {
        self.read.clear();
        self.out.clear();
    }

    /// Bytes of storage the set holds (receive buffer and both output buffers): a pool
    /// drops a set that grew past what it lends rather than keeping the memory.
    pub fn capacity(&self) -> usize {
        self.read.capacity() + self.out.data.capacity() + self.out.control.capacity()
    }
}

/// A WebSocket connection after the opening handshake, sans-IO.
#[derive(Debug)]
pub struct Connection {
    /// The reader holds the shared configuration (for its limits; the connection reads its
    /// timers from the same `Arc`).
    reader: FrameReader<Arc<Config>>,
    receipt: Receipt,
    link: Link,
}

impl Connection {
    /// A connection in the open state, `now` being when the handshake completed. `config`
    /// may be shared by many connections (pass an `Arc<Config>`) or owned (a `Config`).
    pub fn new(role: Role, config: impl Into<Arc<Config>>, mask: MaskSource, now: Instant) -> Self {
        let config = config.into();
        let mut writer = FrameWriter::new(role, mask);
        writer.set_fragment_size(config.fragment_size);
        let auto_pong = config.auto_pong;
        Self {
            reader: FrameReader::new(role, config),
            receipt: Receipt::new(now),
            link: Link::new(writer, auto_pong),
        }
    }

    /// The current state.
    pub fn state(&self) -> ConnectionState {
        self.link.state
    }

    /// Once the connection has [failed](ConnectionState::Failed): whose fault the error was.
    pub fn failure(&self) -> Option<Fault> {
        self.link.failed_by
    }

    /// Whether a transport ending the connection reads until the peer closes TCP before it
    /// closes its socket (so that unread input does not make the kernel reset the
    /// connection over the close frame still in the peer's receive queue): yes, unless the
    /// connection failed on a pong or idle timeout, where the peer stopped answering and
    /// the wait would last the whole close timeout for nothing.
    pub fn drains_before_close(&self) -> bool {
        self.failure() != Some(Fault::Timeout)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Arc<Config> {
        self.reader.config()
    }

    /// The frame reader.
    pub fn reader_mut(&mut self) -> &mut FrameReader<Arc<Config>> {
        &mut self.reader
    }

    /// Installs a negotiated extension: `decoder` on the reader, `encoder` on the writer
    /// (for permessage-deflate, the decoder and encoder halves the deflate extension
    /// provides). Call once, right after the handshake and before the first poll or send.
    pub fn set_extension(&mut self, decoder: Box<dyn Extension>, encoder: Box<dyn Extension>) {
        self.reader.set_extension(decoder);
        self.link.send.writer.set_extension(encoder);
        self.link.extension = true;
    }

    /// True when an extension was installed with [`set_extension`](Self::set_extension).
    pub fn has_extension(&self) -> bool {
        self.link.extension
    }

    /// The sending half, writing into `bufs`.
    #[inline]
    pub fn sender<'b>(&'b mut self, bufs: &'b mut Buffers) -> Sender<'b> {
        self.link.sender(&mut bufs.out)
    }

    /// What the peer's close frame said: `Some` once the close handshake ended with a close
    /// from the peer that carried a status code ([`Progress::Closed`]); `None` before, when
    /// its close had no body, or when the connection ended without one (the peer closed TCP
    /// after our close, the close timeout).
    ///
    /// Nothing is parsed after the peer's close, so the frame (its code and at most 123
    /// bytes of reason) stays where it arrived, in `bufs`' receive buffer, and is read from
    /// there: no copy and no allocation. [`release`](Self::release) drops it (then `None`).
    pub fn peer_close<'b>(&self, bufs: &'b Buffers) -> Option<CloseFrame<'b>> {
        if self.link.state != ConnectionState::Closed {
            return None;
        }
        self.reader.held_close(&bufs.read)
    }

    /// [`peer_close`](Self::peer_close) and the [`Sender`] together.
    pub fn peer_close_with_sender<'b>(
        &'b mut self,
        bufs: &'b mut Buffers,
    ) -> (Option<CloseFrame<'b>>, Sender<'b>) {
        let Buffers { read, out } = bufs;
        let closed = self.link.state == ConnectionState::Closed;
        let frame = closed.then(|| self.reader.held_close(read)).flatten();
        (frame, self.link.sender(out))
    }

    /// Writable space in `bufs` for the next socket read (see [`FrameReader::spare`]).
    #[inline]
    pub fn spare<'b>(&mut self, bufs: &'b mut Buffers) -> &'b mut [u8] {
        self.reader.spare(&mut bufs.read)
    }

    /// Records `n` bytes read into [`spare`](Self::spare) at `now`.
    #[inline]
    pub fn filled(&mut self, bufs: &mut Buffers, n: usize, now: Instant) {
        self.filled_with(bufs, n, || now);
    }

    /// [`filled`](Self::filled) with the instant read from `clock` only when a timer counts
    /// from the last bytes received ([`Config::idle_timeout`], [`Config::ping_interval`]):
    /// with neither set, a read costs no clock read. The config is fixed for the
    /// connection's life, so no timer can later count from an instant that was skipped.
    /// A read that fills the receive buffer to its end doubles it, up to
    /// [`Config::max_read_buffer_size`].
    #[inline]
    pub fn filled_with(&mut self, bufs: &mut Buffers, n: usize, clock: impl FnOnce() -> Instant) {
        self.receipt
            .filled_with(self.reader.config(), &mut bufs.read, n, clock);
    }

    /// Copies received bytes in (for transports that do not read into `spare`).
    pub fn feed(&mut self, bufs: &mut Buffers, bytes: &[u8], now: Instant) {
        self.reader.feed(&mut bufs.read, bytes);
        if !bytes.is_empty() {
            self.receipt.last_received = now;
        }
    }

    /// True when `bufs` may be given back (to a pool) and another set lent on the next call:
    /// no received byte is waiting, no frame or message is partly received, nothing returned
    /// is still borrowed and no output is queued. Call [`release`](Self::release) first.
    pub fn is_idle(&self, bufs: &Buffers) -> bool {
        self.reader.is_between_messages() && bufs.is_empty()
    }

    /// Releases the message last returned, so that `bufs` holds only what is still owed:
    /// unparsed bytes and queued output (see [`is_idle`](Self::is_idle)).
    pub fn release(&mut self, bufs: &mut Buffers) {
        self.reader.release(&mut bufs.read);
    }

    /// Frees memory the connection keeps between messages (the reassembly buffer of the
    /// last fragmented message), for a connection about to sit idle.
    pub fn trim(&mut self) {
        self.reader.trim();
    }

    /// The next event: [`advance`](Self::advance), then [`message`](Self::message) when one is
    /// ready. Replies owed for it are queued before it is returned.
    ///
    /// An error fails the connection: the close frame with its code is queued (unless one was
    /// already sent), the state becomes [`ConnectionState::Failed`], and later calls return
    /// [`Error::Failed`].
    #[inline]
    pub fn poll<'b>(&'b mut self, bufs: &'b mut Buffers) -> Result<Event<'b>, Error> {
        match self.advance(bufs)? {
            Progress::Ready => self.message(bufs).map(Event::Message),
            Progress::NeedMore => Ok(Event::NeedMore),
            Progress::Closed => Ok(Event::Closed),
        }
    }

    /// Like [`poll`](Self::poll), and also lends the [`Sender`], so a reply can be queued while
    /// the received message is still borrowed (no copy of the message).
    pub fn poll_with_sender<'b>(
        &'b mut self,
        bufs: &'b mut Buffers,
    ) -> Result<(Event<'b>, Sender<'b>), Error> {
        match self.advance(bufs)? {
            Progress::Ready => self
                .message_with_sender(bufs)
                .map(|(m, s)| (Event::Message(m), s)),
            Progress::NeedMore => Ok((Event::NeedMore, self.sender(bufs))),
            Progress::Closed => Ok((Event::Closed, self.sender(bufs))),
        }
    }

    /// Parses buffered bytes up to the next message without borrowing it out, and queues
    /// the replies it owes (pong, close reply). Releases the previous message.
    ///
    /// The peer's close frame is never a message: it is answered and ends the reading with
    /// [`Progress::Closed`], which every later call returns again
    /// ([`peer_close`](Self::peer_close) says what it carried).
    #[inline]
    pub fn advance(&mut self, bufs: &mut Buffers) -> Result<Progress, Error> {
        // The buffer test first: with bytes buffered past the lent message (every message of
        // a stream) it is the only one made here.
        if self.reader.is_starved(&bufs.read) && self.link.is_reading() {
            // Nothing buffered beyond the previous message and nothing held: the answer
            // without the parser's call.
            self.reader.release_starved(&mut bufs.read);
            return Ok(Progress::NeedMore);
        }
        self.advance_buffered(bufs)
    }

    /// [`advance`](Self::advance) with bytes buffered or something held.
    fn advance_buffered(&mut self, bufs: &mut Buffers) -> Result<Progress, Error> {
        if !self.link.is_reading() {
            return self.link.ended();
        }
        match self.reader.advance(&mut bufs.read) {
            Ok(true) => {}
            Ok(false) => return Ok(Progress::NeedMore),
            Err(error) => return Err(self.link.fail(&mut bufs.out, error)),
        }
        if self.reader.ready_opcode().is_some_and(OpCode::is_control) {
            let message = self.reader.message(&bufs.read);
            return self.link.on_control(&mut bufs.out, message);
        }
        Ok(Progress::Ready)
    }

    /// The message [`advance`](Self::advance) made ready (text is validated here, once).
    #[inline]
    pub fn message<'b>(&'b mut self, bufs: &'b mut Buffers) -> Result<Message<'b>, Error> {
        self.message_with_sender(bufs).map(|(message, _)| message)
    }

    /// The ready message and the [`Sender`] together.
    #[inline(always)]
    pub fn message_with_sender<'b>(
        &'b mut self,
        bufs: &'b mut Buffers,
    ) -> Result<(Message<'b>, Sender<'b>), Error> {
        let Buffers { read, out } = bufs;
        match self.reader.message(read) {
            Ok(message) => Ok((message, self.link.sender(out))),
            Err(error) => Err(self.link.fail_message(out, error)),
        }
    }

    /// Starts the close handshake: queues a close after any queued data. Further sends fail;
    /// received messages are still delivered until the peer's close arrives or the close
    /// timeout expires.
    pub fn close(
        &mut self,
        bufs: &mut Buffers,
        code: CloseCode,
        reason: &str,
        now: Instant,
    ) -> Result<(), Error> {
        self.link.close(&mut bufs.out, code, reason, now)
    }

    /// True when there are bytes to write.
    #[inline]
    pub fn wants_write(&self, bufs: &Buffers) -> bool {
        self.link.wants_write(&bufs.out)
    }

    /// The bytes to write next. Call [`advance_output`](Self::advance_output) with how many
    /// were written, then ask again: queued control frames and data come out in turn.
    #[inline]
    pub fn output<'b>(&self, bufs: &'b Buffers) -> &'b [u8] {
        bufs.out.first(!self.link.send.close_written)
    }

    /// Fills `slices` with the bytes to write next, in order, for one vectored write
    /// (`Write::write_vectored`), and returns how many it filled. Shared frames
    /// ([`Sender::shared`]) come out as they are, between the connection's own frames. Then
    /// call [`advance_output`](Self::advance_output) with how many bytes were written.
    #[inline]
    pub fn output_vectored<'b>(&self, bufs: &'b Buffers, slices: &mut [IoSlice<'b>]) -> usize {
        bufs.out.vectored(!self.link.send.close_written, slices)
    }

    /// Records that `n` bytes of the last [`output`](Self::output) (or
    /// [`output_vectored`](Self::output_vectored)) were written.
    #[inline]
    pub fn advance_output(&mut self, bufs: &mut Buffers, n: usize) {
        self.sender(bufs).advance_output(n);
    }

    /// Everything queued, when it is one run of this connection's own data frames from a
    /// frame boundary (no ping, pong, shared frame or close among them, nothing partly
    /// written). For a transport that copies the run out to write it later (many
    /// connections' runs in one system call): it records the run written with
    /// [`advance_output`](Self::advance_output), and if the write then takes less, gives
    /// back the rest with [`put_back_output`](Self::put_back_output). A transport that
    /// writes it directly records what the write took with `advance_output`, as for
    /// [`output`](Self::output).
    #[inline]
    pub fn data_run<'b>(&self, bufs: &'b Buffers) -> Option<&'b [u8]> {
        if self.link.send.close_queued {
            return None;
        }
        bufs.out.own_run()
    }

    /// Queues again the part of `run` (a run [`data_run`](Self::data_run) gave and
    /// [`advance_output`](Self::advance_output) recorded written) that a write did not take:
    /// the bytes after its first `written`, ahead of anything queued later, the frame the
    /// write stopped in first. `bufs` need not be the set the run was taken from, but must
    /// have nothing queued (nothing was queued on the connection since), and no close may
    /// have been queued since; otherwise nothing is queued and it returns false (the bytes
    /// cannot go out in order: fail the connection).
    pub fn put_back_output(&mut self, bufs: &mut Buffers, run: &[u8], written: usize) -> bool {
        if written >= run.len() {
            return true;
        }
        if !bufs.out.is_empty() || self.link.send.close_queued {
            return false;
        }
        bufs.out.put_back(run, written);
        true
    }

    /// True when the transport should be closed: the handshake is over (or failed) and every
    /// queued byte is written.
    pub fn should_close_transport(&self, bufs: &Buffers) -> bool {
        self.link.should_close_transport(&bufs.out)
    }

    /// The next instant at which [`handle_timeout`](Self::handle_timeout) must be called, if
    /// any timer is armed.
    #[inline]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.link
            .poll_timeout(self.reader.config(), self.receipt.last_received)
    }

    /// Runs the timers due at `now`: queues a keepalive ping in `bufs`, or fails the
    /// connection with [`Error::PongTimeout`], [`Error::IdleTimeout`] or
    /// [`Error::CloseTimeout`].
    pub fn handle_timeout(&mut self, bufs: &mut Buffers, now: Instant) -> Result<(), Error> {
        self.link.handle_timeout(
            &mut bufs.out,
            self.reader.config(),
            self.receipt.last_received,
            now,
        )
    }

    /// Cuts the connection in two for two tasks or threads: a [`ReadHalf`] that owns the
    /// frame reader and `bufs`' receive side, and a [`WriteHalf`] that owns the sending
    /// state and the output. See [`ReadHalf`] for how they share the close handshake.
    pub fn split(self, bufs: Buffers) -> (ReadHalf, WriteHalf) {
        let Buffers { read, out } = bufs;
        let reading = self.link.is_reading();
        (
            ReadHalf {
                reader: self.reader,
                receipt: self.receipt,
                read,
                reading,
            },
            WriteHalf {
                link: self.link,
                out,
            },
        )
    }
}
