//! The accepted packet connection both transports share, written once: [`PacketConnection`],
//! generic over the transport's side of a connection, a [`ServerIo`].
//!
//! This module owns what is decided without waiting (an answer checked against the requests
//! in flight, queued, counted) and the accessors; waiting for a request, writing and serving
//! are the transport's ([`ServerIo::recv_request`], [`flush_answers`](ServerIo::flush_answers),
//! [`serve`](ServerIo::serve)), whose results are the transport's own (a `Result` on the
//! blocking transport, a named future on tokio): `conn.serve(h)?` and `conn.serve(h).await?`
//! both work with no trait imported.

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::ServerCore;

use super::{Error, PacketLink, Responder};

/// A transport's side of an accepted packet connection: its link and the waits over it.
/// Implemented by the transports; a user never calls it.
pub trait ServerIo: PacketLink {
    /// What [`PacketConnection::recv_request`] gives.
    type Request<'c>
    where
        Self: 'c;

    /// What [`PacketConnection::flush`] gives.
    type Flush<'c>
    where
        Self: 'c;

    /// What [`PacketConnection::serve`] gives.
    type Serve<'c, H>
    where
        Self: 'c,
        H: 'c;

    /// Waits for the next request `core` accepts.
    fn recv_request<'c>(&'c mut self, core: &'c mut ServerCore) -> Self::Request<'c>;

    /// Writes every queued answer.
    fn flush_answers(&mut self) -> Self::Flush<'_>;

    /// Answers every request with `handler` (typed answers serialized in `scratch`) until
    /// the client closes or the connection fails.
    fn serve<'c, H>(
        &'c mut self,
        core: &'c mut ServerCore,
        scratch: &'c mut Vec<u8>,
        handler: H,
    ) -> Self::Serve<'c, H>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + 'c;
}

/// One accepted packet connection, on the transport whose side of it is `L` (each transport
/// names it `PacketConnection`): requests in, answers out in any order.
#[derive(Debug)]
pub struct PacketConnection<L> {
    link: L,
    /// What the connection decides: which arrival is a request, busy, or a violation.
    core: ServerCore,
    /// Where typed answers are serialized, reused and lent to each [`Responder`].
    scratch: Vec<u8>,
}

impl<L: ServerIo> PacketConnection<L> {
    /// A connection over `link` whose requests `core` tracks (for a transport's accept).
    pub fn from_parts(link: L, core: ServerCore) -> Self {
        Self {
            link,
            core,
            scratch: Vec::new(),
        }
    }

    /// Waits for the next request and returns its id and payload (borrowed until the next
    /// call). Writes queued answers before it waits. A request past the in-flight cap is
    /// answered "busy" at once (a control packet, docs/PACKET.md "Transports") and not
    /// returned. [`Error::Closed`] when the client closed the connection.
    pub fn recv_request(&mut self) -> L::Request<'_> {
        self.link.recv_request(&mut self.core)
    }

    /// Queues `payload` as the answer to request `id`, which must be in flight
    /// ([`Error::Mux`] with [`mux::Error::NotInFlight`] otherwise, nothing queued). Written
    /// by [`flush`](Self::flush) or before the next wait for a request. Never waits.
    pub fn respond(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.core.check_answer(id).map_err(Error::Mux)?;
        self.link.queue(id, payload)?;
        self.core.answered(id).map_err(Error::Mux)
    }

    /// Writes every queued answer (what the socket took is recorded, the rest stays queued).
    pub fn flush(&mut self) -> L::Flush<'_> {
        self.link.flush_answers()
    }

    /// Answers every request with `handler` until the client closes (then `Ok`) or the
    /// connection fails. The handler answers through the [`Responder`]; a request it did
    /// not answer gets an empty payload, so none stays in flight. Answers are written when
    /// the connection next waits for a request, so requests that arrived together are
    /// answered in one write.
    pub fn serve<'c, H>(&'c mut self, handler: H) -> L::Serve<'c, H>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + 'c,
    {
        self.link.serve(&mut self.core, &mut self.scratch, handler)
    }

    /// Requests received and not answered.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// The multiplexer's counters (answered, busy).
    pub fn stats(&self) -> mux::ServerStats {
        self.core.stats()
    }

    /// Whether the connection's buffers are lent out while it idles (rule 11 of
    /// docs/ARCHITECTURE.md; only tokio connections lend them).
    pub fn buffers_released(&self) -> bool {
        self.link.session().buffers_released()
    }

    /// The stream underneath.
    pub fn stream(&self) -> &<L as PacketLink>::Stream {
        self.link.stream()
    }
}
