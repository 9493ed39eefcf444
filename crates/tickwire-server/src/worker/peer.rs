//! One connection of a worker, a [`Peer`]: its socket, its phase, its marks and the buffer set
//! it keeps while it owes bytes, and the changes of phase: the opening handshake, the rest of
//! a 101 the socket did not take, serving once open (`serving`), and lingering after a
//! failure until the peer closes.
//!
//! Buffers are lent: each method takes the worker's scratch set, and uses the connection's
//! own set instead when it keeps one. The peer does not own the slab, the pool of sets, the
//! timer wheel or the handler's `on_open` and `on_close`: each method returns what the
//! worker must do next (keep the scratch set, arm a deadline, end the connection), and the
//! worker does it.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{
    Outcome, Parsed, Request, Response, ServerHandshake, ServerOptions,
};
use tickwire_codec::ws::{Buffers, Config, ConnectionState};

use super::marks::{End, Marks};
use super::serving::{Open, Reading, ServeLent, Serving, Socket, guarded};
use super::socket_io::{discard, read_head, write_some};
use crate::handle::ConnId;
use crate::handler::{Decision, Handler, HandshakeFailure};
use crate::transport::Transport;

/// 272 bytes for a plain server with `State = ()`: the codec's `Connection` (248) and 24 of
/// bookkeeping.
#[derive(Debug)]
pub(super) struct Peer<S, T> {
    pub(super) phase: Phase<S>,
    /// The buffer set the connection keeps while it owes bytes; `None` when idle.
    pub(super) bufs: Option<Box<Buffers>>,
    pub(super) stream: Option<T>,
    pub(super) generation: u32,
    /// The tick of the connection's live wheel entry (`wheel::UNARMED`: none).
    pub(super) armed: u32,
    pub(super) marks: Marks,
}

#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "an open connection is the common case and lives in the slot itself: boxing it \
              would add an allocation and a pointer per connection"
)]
pub(super) enum Phase<S> {
    /// Unused; the next free slot.
    Free {
        next: u32,
    },
    /// Reading the upgrade request. A partial head is in `bufs`, and the handshake that has
    /// scanned it is kept (boxed: only while a request is partial), so that each read scans
    /// only the new bytes: a client trickling its request costs the server linear time.
    Handshake(Option<Box<ServerHandshake<'static>>>),
    /// The 101 did not fit in the socket at once: the rest of it, then open.
    Responding(Box<Responding<S>>),
    Open(Open<S>),
}

impl<S> Phase<S> {
    /// The handler's state of a connection that was opened (its 101 written or not).
    pub(super) fn into_state(self) -> Option<S> {
        match self {
            Phase::Open(open) => Some(open.state),
            Phase::Responding(responding) => Some(responding.open.state),
            Phase::Handshake(_) | Phase::Free { .. } => None,
        }
    }
}

#[derive(Debug)]
pub(super) struct Responding<S> {
    open: Open<S>,
    rest: Vec<u8>,
}

/// What the worker lends to a handshake besides the buffers.
pub(super) struct HandshakeLent<'w, H> {
    pub(super) handler: &'w mut H,
    pub(super) options: &'w Arc<ServerOptions>,
    pub(super) config: &'w Arc<Config>,
    /// The response is written here, then to the socket.
    pub(super) head_out: &'w mut WriteBuf,
    pub(super) now: Instant,
}

/// How a read of the upgrade request left the connection.
#[derive(Debug)]
pub(super) enum Handshook {
    /// No socket: nothing was done.
    Gone,
    /// It waits for the rest of the request or for the socket to take the rest of the 101;
    /// with `keep_scratch`, it owes bytes in the scratch set and must keep it.
    Waiting { keep_scratch: bool },
    /// The 101 is written: the connection is open.
    Opened,
    /// Its answer (a 4xx or a refusal) is in `head_out`, to write before it goes.
    Refused(HandshakeFailure),
    /// It failed with nothing to write.
    Failed(HandshakeFailure),
}

/// How serving left an open connection.
#[derive(Debug)]
pub(super) enum Served {
    /// Not open, or lingering with nothing to do: nothing more.
    Untouched,
    /// Over, ending as said.
    Over(End),
    /// Failed and its close frame is out: it is to linger (the write side is shut).
    Linger,
    /// Still open; its next deadline, and who keeps which buffer set.
    Open {
        deadline: Option<Instant>,
        release: Release,
    },
}

/// Who keeps which buffer set once an open connection has been served.
#[derive(Debug)]
pub(super) enum Release {
    /// The connection's own set, no longer needed: back to the pool.
    GiveBack(Box<Buffers>),
    /// The connection still owes bytes in its own set and keeps it.
    Keep,
    /// Served from the scratch set and idle: the scratch set stays the worker's.
    ScratchIdle,
    /// Served from the scratch set and owing bytes in it: the connection keeps it.
    KeepScratch,
}

impl<S, T: Transport> Peer<S, T> {
    /// A slot for the slab, not yet holding a connection.
    pub(super) fn empty() -> Self {
        Self {
            phase: Phase::Handshake(None),
            bufs: None,
            stream: None,
            generation: 0,
            armed: crate::wheel::UNARMED,
            marks: Marks::default(),
        }
    }

    /// Reads the upgrade request, asks the handler, writes the answer (a 101 that the
    /// socket took whole opens the connection).
    pub(super) fn handshake<H>(
        &mut self,
        scratch: &mut Buffers,
        lent: &mut HandshakeLent<'_, H>,
    ) -> Handshook
    where
        H: Handler<State = S>,
    {
        let Some(stream) = self.stream.as_mut() else {
            return Handshook::Gone;
        };
        let bufs = match self.bufs.as_deref_mut() {
            Some(bufs) => bufs,
            None => &mut *scratch,
        };
        let eof = match read_head(stream, &mut bufs.read) {
            Ok(eof) => eof,
            Err(error) => return Handshook::Failed(stream.failure(error)),
        };
        // The handshake kept from an earlier read, or a new one (on the stack: boxed only
        // if the request turns out partial).
        let mut kept = match &mut self.phase {
            Phase::Handshake(kept) => kept.take(),
            _ => None,
        };
        let mut fresh = None;
        let handshake = match kept.as_deref_mut() {
            Some(handshake) => handshake,
            None => fresh.insert(
                ServerHandshake::shared(Arc::clone(lent.options))
                    .with_shared_config(Arc::clone(lent.config)),
            ),
        };
        lent.head_out.clear();
        let request = match handshake.read_request(&mut bufs.read, lent.head_out) {
            Ok(Parsed::NeedMore) if eof => {
                let failure = HandshakeFailure::Io(io::ErrorKind::UnexpectedEof.into());
                return Handshook::Failed(failure);
            }
            Ok(Parsed::NeedMore) => {
                // A partial head: the connection keeps it, and the handshake that scanned it,
                // until the rest arrives.
                self.phase = Phase::Handshake(kept.or_else(|| fresh.map(Box::new)));
                let keep_scratch = self.bufs.is_none() && !scratch.read.is_empty();
                return Handshook::Waiting { keep_scratch };
            }
            Ok(Parsed::Complete(request)) => request,
            // Malformed: its 4xx is in `head_out`.
            Err(error) => return Handshook::Refused(HandshakeFailure::Request(error)),
        };
        let (response, state) = decide(lent.handler, &request, stream.socket().peer_addr());
        let outcome = handshake.respond(response, lent.head_out, lent.now);
        let (upgraded, state) = match (outcome, state) {
            (Ok(Outcome::Upgraded(upgraded)), Some(state)) => (upgraded, state),
            (Ok(Outcome::Rejected(status)), _) => {
                return Handshook::Refused(HandshakeFailure::Refused(status));
            }
            // A response the codec could not write: it wrote a 500 instead.
            _ => return Handshook::Refused(HandshakeFailure::Refused(500)),
        };
        let open = Open {
            conn: upgraded.connection,
            state,
        };
        self.send_upgrade(open, lent.head_out.as_slice())
    }

    /// Writes the 101 in `head`: open if the socket took it whole, responding otherwise.
    fn send_upgrade(&mut self, open: Open<S>, head: &[u8]) -> Handshook {
        let Some(stream) = self.stream.as_mut() else {
            return Handshook::Gone;
        };
        let written = match write_some(stream, head) {
            Ok(written) => written,
            Err(error) => return Handshook::Failed(stream.failure(error)),
        };
        if written < head.len() {
            let rest = head[written..].to_vec();
            self.phase = Phase::Responding(Box::new(Responding { open, rest }));
            return Handshook::Waiting {
                keep_scratch: self.bufs.is_none(),
            };
        }
        self.phase = Phase::Open(open);
        Handshook::Opened
    }

    /// Writes the rest of a 101 the socket did not take at once. `Ok(true)`: written, the
    /// connection is open; `Ok(false)`: the socket took part of it; `Err`: the write failed.
    pub(super) fn respond_rest(&mut self) -> io::Result<bool> {
        let (Some(stream), Phase::Responding(responding)) = (self.stream.as_mut(), &mut self.phase)
        else {
            return Ok(false);
        };
        let written = write_some(stream, &responding.rest)?;
        if written < responding.rest.len() {
            responding.rest.drain(..written);
            return Ok(false);
        }
        let Phase::Responding(responding) =
            std::mem::replace(&mut self.phase, Phase::Handshake(None))
        else {
            return Ok(false);
        };
        self.phase = Phase::Open(responding.open);
        Ok(true)
    }

    /// Writes the refusal in `head` (best effort: the socket is new and it is small) and
    /// ends the write side; true when the peer is still connected with nothing more to read
    /// yet, so the connection should linger rather than close: closing with its bytes unread
    /// would send a reset, which can destroy the refusal in the client's receive queue (a
    /// client still sending a head past the limit gets its 431).
    pub(super) fn write_refusal(&mut self, head: &[u8], scratch: &mut ReadBuf) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        let _ = write_some(stream, head);
        stream.close_write();
        let lingering = matches!(discard(stream, scratch), Ok(false));
        if lingering {
            self.phase = Phase::Handshake(None);
        }
        lingering
    }

    /// Marks the connection lingering (its last answer is written and its write side shut);
    /// the set it kept, if any, for the worker to take back.
    pub(super) fn start_lingering(&mut self) -> Option<Box<Buffers>> {
        self.marks.flags.set_lingering();
        self.bufs.take()
    }

    /// A lingering connection: drops what the peer still sends; true at its end (or on an
    /// error), when the connection is to close.
    pub(super) fn linger(&mut self, scratch: &mut ReadBuf) -> bool {
        let Some(stream) = self.stream.as_mut() else {
            return false;
        };
        !matches!(discard(stream, scratch), Ok(false))
    }

    /// A TLS handshake whose messages the socket did not take at once: writes the rest.
    pub(super) fn flush_handshake(&mut self) -> Result<(), HandshakeFailure> {
        if let Some(stream) = self.stream.as_mut()
            && let Err(error) = stream.flush_pending()
        {
            return Err(stream.failure(error));
        }
        Ok(())
    }

    /// The peer's address, if it can be read.
    pub(super) fn peer_addr(&mut self) -> Option<SocketAddr> {
        self.stream
            .as_mut()
            .and_then(|stream| stream.socket().peer_addr().ok())
    }

    /// Serves an open connection (see `serving`), then decides whether it is over, is to
    /// linger, or stays open and who keeps the buffer set.
    pub(super) fn serve<H>(
        &mut self,
        id: ConnId,
        reading: Reading,
        scratch: &mut Buffers,
        lent: &mut ServeLent<'_, H>,
    ) -> Served
    where
        H: Handler<State = S>,
    {
        let (Some(stream), Phase::Open(open)) = (self.stream.as_mut(), &mut self.phase) else {
            return Served::Untouched;
        };
        if self.marks.flags.lingering() {
            if self.linger(&mut scratch.read) {
                return Served::Over(End::FAILED);
            }
            return Served::Untouched;
        }
        let bufs = match self.bufs.as_deref_mut() {
            Some(bufs) => bufs,
            None => &mut *scratch,
        };
        let socket = Serving {
            id,
            stream: &mut *stream,
            open: &mut *open,
            bufs: &mut *bufs,
            marks: &mut self.marks,
            lent,
        }
        .run(reading);
        let state = open.conn.state();
        if socket == Socket::Open
            && state == ConnectionState::Failed
            && open.conn.should_close_transport(bufs)
        {
            // The close frame is out. Closing now with the peer's bytes unread would send a
            // reset, which can destroy that frame in the peer's receive queue: shut the write
            // side, drop what arrives, close at its end (or at the close timeout).
            stream.close_write();
            // Nothing more is parsed: the unread bytes go, and the whole buffer takes reads.
            bufs.clear();
            if matches!(discard(stream, &mut bufs.read), Ok(false)) {
                return Served::Linger;
            }
        }
        if socket != Socket::Open || open.conn.should_close_transport(bufs) {
            return Served::Over(socket.end(state));
        }
        let deadline = open.conn.poll_timeout();
        open.conn.release(bufs);
        let idle = open.conn.is_idle(bufs);
        if idle {
            open.conn.trim();
        }
        let release = match self.bufs.take() {
            Some(owned) if idle => Release::GiveBack(owned),
            Some(owned) => {
                self.bufs = Some(owned);
                Release::Keep
            }
            None if idle => Release::ScratchIdle,
            None => Release::KeepScratch,
        };
        Served::Open { deadline, release }
    }
}

/// Asks the handler about the upgrade `request`: the response to write and, for a 101, the
/// connection's state.
fn decide<H: Handler>(
    handler: &mut H,
    request: &Request,
    peer: io::Result<SocketAddr>,
) -> (Response, Option<H::State>) {
    let mut decision = None;
    if let Ok(peer) = peer {
        let _ = guarded(|| decision = Some(handler.upgrade(request, peer)));
    }
    match decision {
        Some(Decision::Accept(response, state)) if response.status() == 101 => {
            (response, Some(state))
        }
        Some(Decision::Accept(response, _)) => (response, None),
        Some(Decision::Reject(response)) if response.status() != 101 => (response, None),
        // A 101 without state, a panic, or a peer address that could not be read.
        Some(Decision::Reject(_)) | None => (Response::reject(500), None),
    }
}

#[cfg(test)]
mod tests {
    use mio::net::TcpStream;
    use tickwire_codec::ws::Connection;

    use super::Peer;

    /// The slot is most of what an idle plain connection costs (rule 11 of docs/ARCHITECTURE.md): keep it at
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
