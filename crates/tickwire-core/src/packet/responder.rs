//! [`Responder`]: how a handler given to either transport's `PacketConnection::serve`
//! answers one request. A thin typed face over the codec's [`Reply`], which owns the rules
//! (one answer at most, an empty one when the handler gave none); this adds the transports'
//! [`Error`] and the serialization buffer of typed answers. It owns no connection: the
//! transport lends it the session's writer and queue for one handler call, through
//! [`answer_with`].

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{PacketWriter, Reply, ServerCore};

use super::Error;

/// Answers one request inside `PacketConnection::serve` (either transport).
#[derive(Debug)]
pub struct Responder<'a> {
    reply: Reply<'a>,
    /// The connection's buffer for typed answers (features `serde-json`, `bincode`).
    #[cfg_attr(
        not(any(feature = "serde-json", feature = "bincode")),
        expect(dead_code, reason = "only the typed answers use it")
    )]
    scratch: &'a mut Vec<u8>,
}

impl Responder<'_> {
    /// The request being answered.
    pub fn request_id(&self) -> RequestId {
        self.reply.request_id()
    }

    /// Queues `payload` as the answer (compressed as the packet configuration says). A
    /// second answer is [`Error::Mux`] ([`NotInFlight`](tickwire_codec::mux::Error::NotInFlight));
    /// a payload over the packet limit is [`Error::Encode`] and leaves the request
    /// unanswered.
    pub fn respond(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.reply.respond(payload).map_err(Error::from)
    }

    /// [`respond`](Self::respond) with `value` serialized in format `F`, through the
    /// connection's reused buffer.
    #[cfg(any(feature = "serde-json", feature = "bincode"))]
    fn typed_respond<F: super::Format, T: serde::Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), Error> {
        let mut scratch = std::mem::take(self.scratch);
        scratch.clear();
        let answered = F::encode(value, &mut scratch).and_then(|()| self.respond(&scratch));
        *self.scratch = scratch;
        answered
    }

    /// [`respond`](Self::respond) with `value` as JSON.
    #[cfg(feature = "serde-json")]
    pub fn respond_json<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.typed_respond::<super::Json, T>(value)
    }

    /// [`respond`](Self::respond) with `value` in bincode 2.
    #[cfg(feature = "bincode")]
    pub fn respond_bincode<T: serde::Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<(), Error> {
        self.typed_respond::<super::Bincode, T>(value)
    }
}

/// A handler a packet server spawns with: called for each request with its id, payload
/// and the [`Responder`] its answer goes through; cloned for each connection, which runs on
/// a thread or task of its own. Every such closure is one.
pub trait Handler: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static {}

impl<H> Handler for H where H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static {}

/// Runs `handler` on request `id` (its `payload` borrowed from the session, with the
/// session's `writer` and `queued` output), then gives the request an empty answer if the
/// handler gave none, and tells `core` it was answered. For the transports' `serve` loops;
/// returns when the answer is queued.
#[doc(hidden)]
pub fn answer_with<H>(
    core: &mut ServerCore,
    id: RequestId,
    (payload, writer, queued): (&[u8], &mut PacketWriter, &mut WriteBuf),
    scratch: &mut Vec<u8>,
    handler: &mut H,
) -> Result<(), Error>
where
    H: FnMut(RequestId, &[u8], &mut Responder<'_>),
{
    let mut responder = Responder {
        reply: Reply::new(id, writer, queued),
        scratch,
    };
    handler(id, payload, &mut responder);
    responder.reply.finish()?;
    core.answered(id).map_err(Error::Mux)
}
