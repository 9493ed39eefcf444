//! [`Link`]: the state of a [`Connection`](super::Connection) apart from its frame reader —
//! where the close handshake is, the sending state, the timers' instants — and the rules
//! that move it. Both the whole connection and the write half of a split one
//! ([`WriteHalf`](super::WriteHalf)) hold one; the read side calls into it only when a
//! control frame arrives, a frame fails, or a timer runs, so a received data message never
//! needs it.

use super::*;

/// Connection state apart from the frame reader.
#[derive(Debug)]
pub(super) struct Link {
    pub(super) send: SendState,
    pub(super) state: ConnectionState,
    /// The close code of the error that failed the connection.
    pub(super) failure: CloseCode,
    /// Whose fault that error was (`None` until the connection fails).
    pub(super) failed_by: Option<Fault>,
    pub(super) extension: bool,
    pub(super) ping_sent_at: Option<Instant>,
    pub(super) close_started_at: Option<Instant>,
    /// Keepalive pings sent; the next one's payload is the count as 8 big-endian bytes.
    pub(super) pings_sent: u32,
}

/// The read side's own state: when bytes last arrived.
#[derive(Debug)]
pub(super) struct Receipt {
    /// When bytes last arrived; kept only while a timer counts from it (see
    /// [`Connection::filled_with`]), else the connection's start.
    pub(super) last_received: Instant,
}

impl Receipt {
    pub(super) fn new(now: Instant) -> Self {
        Self { last_received: now }
    }

    /// Records `n` bytes read: the instant when a timer counts from it, and the receive
    /// buffer's growth.
    #[inline]
    pub(super) fn filled_with(
        &mut self,
        config: &Config,
        read: &mut ReadBuf,
        n: usize,
        clock: impl FnOnce() -> Instant,
    ) {
        read.filled(n);
        if n > 0 {
            if config.idle_timeout.is_some() || config.ping_interval.is_some() {
                self.last_received = clock();
            }
            if read.ends_at_capacity() {
                grow_read(config, read);
            }
        }
    }
}

/// A read filled the receive buffer to its end: doubles it, up to
/// [`Config::max_read_buffer_size`].
#[cold]
#[inline(never)]
fn grow_read(config: &Config, read: &mut ReadBuf) {
    let capacity = read.capacity();
    let target = capacity.saturating_mul(2).min(config.max_read_buffer_size);
    if target > capacity {
        read.grow_to(target);
    }
}

impl Link {
    pub(super) fn new(writer: FrameWriter, auto_pong: bool) -> Self {
        Self {
            send: SendState {
                writer,
                close_queued: false,
                close_written: false,
                auto_pong,
            },
            state: ConnectionState::Open,
            failure: CloseCode::ABNORMAL,
            failed_by: None,
            extension: false,
            ping_sent_at: None,
            close_started_at: None,
            pings_sent: 0,
        }
    }

    #[inline]
    pub(super) fn sender<'b>(&'b mut self, out: &'b mut Output) -> Sender<'b> {
        Sender {
            state: &mut self.send,
            out,
        }
    }

    /// True while frames are still read: the peer's close has not arrived and nothing
    /// failed.
    #[inline]
    pub(super) fn is_reading(&self) -> bool {
        matches!(
            self.state,
            ConnectionState::Open | ConnectionState::CloseSent
        )
    }

    /// What a read past the end says: `Closed`, or the failure again.
    pub(super) fn ended(&self) -> Result<Progress, Error> {
        match self.state {
            ConnectionState::Failed => Err(Error::Failed(self.failure)),
            _ => Ok(Progress::Closed),
        }
    }

    /// A control frame the reader made ready (`message`): queues what it owes. A ping is
    /// answered (auto-pong), a pong ends the keepalive wait, and a close is answered with
    /// its status code echoed (§5.5.1) and ends the reading: it is `Progress::Closed`,
    /// never a message. The reader keeps holding the close frame (nothing is parsed after
    /// it), which is where the connection's `peer_close` reads it from.
    pub(super) fn on_control(
        &mut self,
        out: &mut Output,
        message: Result<Message<'_>, Error>,
    ) -> Result<Progress, Error> {
        let mut sender = Sender {
            state: &mut self.send,
            out,
        };
        match message {
            Ok(Message::Ping(payload)) => {
                if sender.state.auto_pong && !sender.state.close_queued {
                    sender.queue_auto_pong(payload);
                }
            }
            Ok(Message::Pong(_)) => self.ping_sent_at = None,
            Ok(Message::Close(frame)) => {
                sender.queue_close(frame.map(|f| f.code));
                self.state = ConnectionState::Closed;
                return Ok(Progress::Closed);
            }
            Ok(_) => {}
            Err(error) => return Err(self.fail(out, error)),
        }
        Ok(Progress::Ready)
    }

    /// Fails the connection: queues a close with the error's code unless one was queued,
    /// and records it.
    pub(super) fn fail(&mut self, out: &mut Output, error: Error) -> Error {
        let code = error.close_code().unwrap_or(CloseCode::PROTOCOL_ERROR);
        self.fail_with(out, code, error.fault());
        error
    }

    fn fail_with(&mut self, out: &mut Output, code: CloseCode, fault: Fault) {
        self.sender(out).queue_close(Some(code));
        self.failure = code;
        self.failed_by = Some(fault);
        self.state = ConnectionState::Failed;
    }

    /// A ready message failed to validate (`error`, not `NotReady`): the connection fails.
    pub(super) fn fail_message(&mut self, out: &mut Output, error: Error) -> Error {
        if error != Error::NotReady {
            return self.fail(out, error);
        }
        error
    }

    pub(super) fn close(
        &mut self,
        out: &mut Output,
        code: CloseCode,
        reason: &str,
        now: Instant,
    ) -> Result<(), Error> {
        self.sender(out).close(code, reason)?;
        self.note_close_started(now);
        Ok(())
    }

    #[inline]
    pub(super) fn wants_write(&self, out: &Output) -> bool {
        out.has_output(!self.send.close_written)
    }

    pub(super) fn should_close_transport(&self, out: &Output) -> bool {
        matches!(
            self.state,
            ConnectionState::Closed | ConnectionState::Failed
        ) && !self.wants_write(out)
    }

    #[inline]
    pub(super) fn poll_timeout(&self, config: &Config, last_received: Instant) -> Option<Instant> {
        if !self.send.close_queued
            && config.idle_timeout.is_none()
            && config.ping_interval.is_none()
        {
            // No timer configured and no close under way: none can be armed.
            return None;
        }
        self.armed_timeout(config, last_received)
    }

    /// [`poll_timeout`](Self::poll_timeout) when a timer may be armed.
    fn armed_timeout(&self, config: &Config, last_received: Instant) -> Option<Instant> {
        if !self.is_reading() {
            return None;
        }
        let mut deadline: Option<Instant> = None;
        let mut consider = |at: Instant| deadline = Some(deadline.map_or(at, |d| d.min(at)));
        if self.send.close_queued {
            // A close queued through the Sender arms its timer at the next call: an instant
            // already past says "call now".
            consider(
                self.close_started_at
                    .map_or(last_received, |t| t + config.close_timeout),
            );
        }
        if let Some(idle) = config.idle_timeout {
            consider(last_received + idle);
        }
        if let Some(interval) = config.ping_interval {
            match self.ping_sent_at {
                Some(sent) => consider(sent + config.pong_timeout),
                // No keepalive ping goes out once a close is queued, so its deadline would
                // be one `handle_timeout` never acts on (a transport would spin on it).
                None if !self.send.close_queued => consider(last_received + interval),
                None => {}
            }
        }
        deadline
    }

    pub(super) fn handle_timeout(
        &mut self,
        out: &mut Output,
        config: &Config,
        last_received: Instant,
        now: Instant,
    ) -> Result<(), Error> {
        if !self.is_reading() {
            return Ok(());
        }
        if self.send.close_queued {
            self.note_close_started(now);
            if let Some(started) = self.close_started_at
                && now >= started + config.close_timeout
            {
                self.state = ConnectionState::Closed;
                return Err(Error::CloseTimeout);
            }
        }
        if let Some(idle) = config.idle_timeout
            && now >= last_received + idle
        {
            self.fail_with(out, CloseCode::GOING_AWAY, Fault::Timeout);
            return Err(Error::IdleTimeout);
        }
        if let Some(interval) = config.ping_interval {
            match self.ping_sent_at {
                Some(sent) if now >= sent + config.pong_timeout => {
                    self.fail_with(out, CloseCode::GOING_AWAY, Fault::Timeout);
                    return Err(Error::PongTimeout);
                }
                None if now >= last_received + interval && !self.send.close_queued => {
                    self.pings_sent = self.pings_sent.wrapping_add(1);
                    let payload = u64::from(self.pings_sent).to_be_bytes();
                    let queued = self.send.writer.ping(&mut out.control, &payload);
                    out.counted_control(queued)?;
                    self.ping_sent_at = Some(now);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn note_close_started(&mut self, now: Instant) {
        if self.close_started_at.is_none() {
            self.close_started_at = Some(now);
            if self.state == ConnectionState::Open {
                self.state = ConnectionState::CloseSent;
            }
        }
    }
}
