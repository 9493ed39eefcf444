//! A [`Connection`] cut in two ([`Connection::split`]): a [`ReadHalf`] and a [`WriteHalf`]
//! that two tasks or threads can hold, so that a received message lent by the read half
//! never keeps the write half from sending.
//!
//! The read half owns the frame reader and the receive buffer: a message borrows from it
//! alone. The write half owns the sending state and the output, and with them what the
//! close handshake and the timers decide (the [`ConnectionState`]). The read half needs the
//! write half only for what a received frame or a timer owes the peer: a pong, the close
//! reply, a keepalive ping, the close of a failed connection. It asks for it through a
//! function that returns the write half (a lock guard, or `&mut WriteHalf`), called only
//! then: a data message is parsed and lent without it. Neither half waits on the other
//! beyond that one step, and the order RFC 6455 needs (a pong ahead of data not yet
//! started, the close reply after the data queued before it) is the write half's output
//! order, as for a whole connection.

use std::ops::DerefMut;

use super::*;

/// The receiving half of a split [`Connection`]: parses, lends messages, runs the timers.
#[derive(Debug)]
pub struct ReadHalf {
    pub(super) reader: FrameReader<Arc<Config>>,
    pub(super) receipt: Receipt,
    pub(super) read: ReadBuf,
    /// The write half's state says frames are still read (mirrored: every change to it is
    /// made through a call of this half).
    pub(super) reading: bool,
}

/// The sending half of a split [`Connection`]: queues messages, holds the output and the
/// connection's state.
#[derive(Debug)]
pub struct WriteHalf {
    pub(super) link: Link,
    pub(super) out: Output,
}

impl ReadHalf {
    /// The configuration in force.
    pub fn config(&self) -> &Arc<Config> {
        self.reader.config()
    }

    /// Writable space for the next socket read (see [`Connection::spare`]).
    #[inline]
    pub fn spare(&mut self) -> &mut [u8] {
        self.reader.spare(&mut self.read)
    }

    /// Records `n` bytes read into [`spare`](Self::spare), reading `clock` only when a timer
    /// counts from the last bytes received (see [`Connection::filled_with`]).
    #[inline]
    pub fn filled_with(&mut self, n: usize, clock: impl FnOnce() -> Instant) {
        self.receipt
            .filled_with(self.reader.config(), &mut self.read, n, clock);
    }

    /// [`Connection::advance`]: parses up to the next message. `write` is called (once at
    /// most) only when something is owed to the peer or the reading ends: a control frame,
    /// a protocol error, or a call after the end. A data message is made ready without it.
    #[inline]
    pub fn advance<W: DerefMut<Target = WriteHalf>>(
        &mut self,
        write: impl FnOnce() -> W,
    ) -> Result<Progress, Error> {
        if self.reading && self.reader.is_starved(&self.read) {
            self.reader.release_starved(&mut self.read);
            return Ok(Progress::NeedMore);
        }
        self.advance_buffered(write)
    }

    fn advance_buffered<W: DerefMut<Target = WriteHalf>>(
        &mut self,
        write: impl FnOnce() -> W,
    ) -> Result<Progress, Error> {
        if !self.reading {
            return write().link.ended();
        }
        let ready = self.reader.advance(&mut self.read);
        if ready.as_ref().is_ok_and(|&ready| !ready) {
            return Ok(Progress::NeedMore);
        }
        let is_data = !self.reader.ready_opcode().is_some_and(OpCode::is_control);
        if ready.is_ok() && is_data {
            return Ok(Progress::Ready);
        }
        let mut write = write();
        let WriteHalf { link, out } = &mut *write;
        let progress = match ready {
            Err(error) => Err(link.fail(out, error)),
            Ok(_) => link.on_control(out, self.reader.message(&self.read)),
        };
        self.reading = link.is_reading();
        progress
    }

    /// The message [`advance`](Self::advance) made ready, lent from this half (text is
    /// validated here). `write` is called only when it fails to validate: the connection
    /// fails, and the close it owes is queued on the write half.
    #[inline]
    pub fn message<W: DerefMut<Target = WriteHalf>>(
        &mut self,
        write: impl FnOnce() -> W,
    ) -> Result<Message<'_>, Error> {
        let Self {
            reader,
            read,
            reading,
            ..
        } = self;
        reader.message(read).map_err(|error| {
            let mut write = write();
            let WriteHalf { link, out } = &mut *write;
            let error = link.fail_message(out, error);
            *reading = link.is_reading();
            error
        })
    }

    /// What the peer's close frame said (see [`Connection::peer_close`]): read from this
    /// half's receive buffer, where the frame stays once the reading has ended.
    pub fn peer_close(&self) -> Option<CloseFrame<'_>> {
        if self.reading {
            return None;
        }
        self.reader.held_close(&self.read)
    }

    /// True until the peer's close arrives or the connection fails.
    pub fn is_reading(&self) -> bool {
        self.reading
    }

    /// [`Connection::poll_timeout`], with the write half's state.
    #[inline]
    pub fn poll_timeout(&self, write: &WriteHalf) -> Option<Instant> {
        write
            .link
            .poll_timeout(self.reader.config(), self.receipt.last_received)
    }

    /// [`Connection::handle_timeout`]: a keepalive ping or the close a failure owes is
    /// queued on `write`.
    pub fn handle_timeout(&mut self, write: &mut WriteHalf, now: Instant) -> Result<(), Error> {
        let result = write.link.handle_timeout(
            &mut write.out,
            self.reader.config(),
            self.receipt.last_received,
            now,
        );
        self.reading = write.link.is_reading();
        result
    }

    /// Puts the halves back together: the connection and its buffers.
    pub fn unsplit(self, write: WriteHalf) -> (Connection, Buffers) {
        let conn = Connection {
            reader: self.reader,
            receipt: self.receipt,
            link: write.link,
        };
        let bufs = Buffers {
            read: self.read,
            out: write.out,
        };
        (conn, bufs)
    }
}

impl WriteHalf {
    /// The current state (the close handshake's, for both halves).
    pub fn state(&self) -> ConnectionState {
        self.link.state
    }

    /// The sending half, to queue messages.
    #[inline]
    pub fn sender(&mut self) -> Sender<'_> {
        self.link.sender(&mut self.out)
    }

    /// [`Connection::close`].
    pub fn close(&mut self, code: CloseCode, reason: &str, now: Instant) -> Result<(), Error> {
        self.link.close(&mut self.out, code, reason, now)
    }

    /// True when there are bytes to write.
    #[inline]
    pub fn wants_write(&self) -> bool {
        self.link.wants_write(&self.out)
    }

    /// [`Connection::output`].
    #[inline]
    pub fn output(&self) -> &[u8] {
        self.out.first(!self.link.send.close_written)
    }

    /// [`Connection::output_vectored`].
    #[inline]
    pub fn output_vectored<'b>(&'b self, slices: &mut [IoSlice<'b>]) -> usize {
        self.out.vectored(!self.link.send.close_written, slices)
    }

    /// [`Connection::data_run`].
    #[inline]
    pub fn data_run(&self) -> Option<&[u8]> {
        if self.link.send.close_queued {
            return None;
        }
        self.out.own_run()
    }

    /// Records that `n` bytes of the last output were written.
    #[inline]
    pub fn advance_output(&mut self, n: usize) {
        self.sender().advance_output(n);
    }

    /// [`Connection::should_close_transport`].
    pub fn should_close_transport(&self) -> bool {
        self.link.should_close_transport(&self.out)
    }

    /// Bytes of output queued, shared frames included.
    pub fn queued(&self) -> usize {
        self.out.len()
    }
}
