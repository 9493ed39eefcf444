//! [`ServerCore`] and [`Reply`]: what a packet server decides, for every transport: the
//! glue between the connection's [`Session`](super::Session) and its [`mux::Server`], and
//! the rules of answering one request.
//!
//! It owns which arriving packet is a request to serve, which is refused "busy" (past the
//! in-flight cap: the transport queues the [`Control::Busy`] it is given, and carries on),
//! which is a violation that closes the connection, and that every request served gets
//! exactly one answer ([`Reply`]: a second answer is refused, none at all becomes an empty
//! one). It owns no socket and no waiting: a transport turns the session's events into
//! [`Incoming`] and hands them to [`handle`](ServerCore::handle).

use super::{Control, EncodeError, Header, InFlight, Incoming, PacketWriter};
use crate::buf::WriteBuf;
use crate::mux::{self, RequestId, ServerConfig};

/// What [`ServerCore::handle`] decided on an arrival.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServerStep {
    /// A request to serve, counted in flight.
    Request(Header),
    /// Queue this control packet (a busy refusal) and keep waiting.
    Reply(Control),
    /// Nothing for the caller (a pong, a passed timer): keep waiting.
    Wait,
}

/// A peer violation [`ServerCore::handle`] found: the requests in flight are dropped and
/// the transport must close the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerFailure {
    /// A busy refusal sent to a server (only servers send them).
    MalformedControl,
    /// A multiplexing violation (a reserved or duplicate id, a request over the size cap).
    Mux(mux::Error),
}

/// A packet server connection's decisions. See the module docs.
#[derive(Debug)]
pub struct ServerCore {
    mux: mux::Server,
}

impl ServerCore {
    /// A connection with these multiplexer caps.
    pub fn new(config: ServerConfig) -> Self {
        Self {
            mux: mux::Server::new(config),
        }
    }

    /// Decides what `incoming`, found while waiting for a request, means.
    pub fn handle(&mut self, incoming: Incoming) -> Result<ServerStep, ServerFailure> {
        let header = match incoming {
            Incoming::Packet(header) => header,
            Incoming::Deadline | Incoming::Pong => return Ok(ServerStep::Wait),
            Incoming::Busy(_) => return Err(self.close(ServerFailure::MalformedControl)),
        };
        let id = RequestId(header.request_id);
        match self.mux.on_request(id, header.payload_len as usize) {
            Ok(()) => Ok(ServerStep::Request(header)),
            Err(mux::Error::Busy { .. }) => Ok(ServerStep::Reply(Control::Busy(id.0))),
            Err(error) => Err(self.close(ServerFailure::Mux(error))),
        }
    }

    /// Whether an answer to `id` may be queued now: [`mux::Error::NotInFlight`] when it is
    /// not in flight (nothing changes either way).
    pub fn check_answer(&self, id: RequestId) -> Result<(), mux::Error> {
        if self.mux.is_in_flight(id) {
            Ok(())
        } else {
            Err(mux::Error::NotInFlight { id })
        }
    }

    /// The answer to `id` was queued: it is no longer in flight.
    pub fn answered(&mut self, id: RequestId) -> Result<(), mux::Error> {
        self.mux.respond(id)
    }

    /// The connection failed or closed: the requests in flight are dropped (never answered).
    pub fn connection_lost(&mut self) {
        self.mux.reset();
    }

    /// Requests received and not answered.
    pub fn in_flight(&self) -> usize {
        self.mux.in_flight()
    }

    /// The multiplexer's counters (answered, busy).
    pub fn stats(&self) -> mux::ServerStats {
        self.mux.stats()
    }

    fn close(&mut self, failure: ServerFailure) -> ServerFailure {
        self.mux.reset();
        failure
    }
}

impl InFlight for ServerCore {
    fn connection_lost(&mut self) {
        ServerCore::connection_lost(self);
    }
}

/// Why [`Reply::respond`] queued nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplyError {
    /// The request was answered already ([`mux::Error::NotInFlight`] for it).
    Answered(mux::Error),
    /// The payload is over the packet limit; the request stays unanswered.
    Encode(EncodeError),
}

/// The answer to one request being served: encoded straight into the connection's queue
/// while the request's payload is still borrowed. At most one answer;
/// [`finish`](Self::finish) gives an unanswered request an empty one.
#[derive(Debug)]
pub struct Reply<'a> {
    id: RequestId,
    writer: &'a mut PacketWriter,
    queued: &'a mut WriteBuf,
    answered: bool,
}

impl<'a> Reply<'a> {
    /// The answer to `id`, to be encoded by `writer` into `queued` (the session's, from
    /// [`Session::payload_and_writer`](super::Session::payload_and_writer)).
    pub fn new(id: RequestId, writer: &'a mut PacketWriter, queued: &'a mut WriteBuf) -> Self {
        Self {
            id,
            writer,
            queued,
            answered: false,
        }
    }

    /// The request being answered.
    pub fn request_id(&self) -> RequestId {
        self.id
    }

    /// Queues `payload` as the answer (compressed as the packet configuration says). A
    /// second answer is [`ReplyError::Answered`]; a payload over the packet limit is
    /// [`ReplyError::Encode`] and leaves the request unanswered.
    pub fn respond(&mut self, payload: &[u8]) -> Result<(), ReplyError> {
        if self.answered {
            return Err(ReplyError::Answered(mux::Error::NotInFlight {
                id: self.id,
            }));
        }
        self.writer
            .encode(self.queued, self.id.0, payload)
            .map_err(ReplyError::Encode)?;
        self.answered = true;
        Ok(())
    }

    /// Ends the answering: an empty answer when none was queued, so no request stays in
    /// flight. Returns the request's id, for [`ServerCore::answered`].
    pub fn finish(mut self) -> Result<RequestId, ReplyError> {
        if !self.answered {
            self.respond(&[])?;
        }
        Ok(self.id)
    }
}
