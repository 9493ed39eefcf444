//! The packet client both transports share, written once: [`PacketClient`], generic over the
//! transport's side of a connection, a [`ClientIo`].
//!
//! This module owns what a call decides before it touches the socket (a request refused
//! while others are in flight, a closed connection, the request id from the codec's
//! [`ClientCore`], the typed payload's serialization) and the accessors. Waiting is the
//! transport's: [`ClientIo::request`], [`recv_response`](ClientIo::recv_response),
//! [`flush`](ClientIo::flush) and [`ping`](ClientIo::ping) give the transport's own result
//! (a `Result` on the blocking transport, a named future on tokio), so `client.request(p)?`
//! and `client.request(p).await?` both work with no trait imported and no allocation.

use std::time::Instant;

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{ClientCore, Session};

use super::{Error, PooledConnection};

/// What both roles of a transport's packet connection give the connection types: the
/// session, the stream, queueing a packet and the transport's clock. Implemented by the
/// transports' links; a user never calls it.
pub trait PacketLink {
    /// The stream underneath.
    type Stream;

    /// The transport's clock (tokio's, paused in tests, on tokio).
    fn now(&self) -> Instant;

    /// The connection's session: whether it failed, the payload of the last packet.
    fn session(&self) -> &Session;

    /// The stream underneath.
    fn stream(&self) -> &Self::Stream;

    /// Queues one packet on request `id`; nothing is written yet.
    fn queue(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error>;
}

/// What a [`ClientIo::request`] waits for: the only request in flight (or why it was not
/// sent), where its id is kept until the wait ends, and how its answer is decoded.
#[derive(Debug)]
pub struct AnswerWait<'c, T> {
    /// The client's core.
    pub core: &'c mut ClientCore,
    /// The request's id while its wait is under way: a wait dropped part-way leaves it for
    /// the next call to cancel.
    pub pending: &'c mut Option<RequestId>,
    /// The request queued, or why it was not.
    pub sent: Result<RequestId, Error>,
    /// Maps the answer's payload.
    pub decode: fn(&'c [u8]) -> Result<T, Error>,
}

/// A transport's side of a packet client: the waits over its link. Implemented by the
/// transports; a user never calls it.
pub trait ClientIo: PacketLink {
    /// What [`PacketClient::request`] gives, its answer mapped by a decoder to `T`: the
    /// result on a blocking transport, a future of it on an async one.
    type Request<'c, T>
    where
        Self: 'c,
        T: 'c;

    /// What [`PacketClient::recv_response`] gives.
    type Response<'c>
    where
        Self: 'c;

    /// What [`PacketClient::flush`] gives.
    type Flush<'c>
    where
        Self: 'c;

    /// What [`PacketClient::ping`] gives.
    type Ping<'c>
    where
        Self: 'c;

    /// Writes what is queued and waits for the answer `wait` describes.
    fn request<'c, T: 'c>(&'c mut self, wait: AnswerWait<'c, T>) -> Self::Request<'c, T>;

    /// Waits for the next response to a request in flight in `core`.
    fn recv_response<'c>(&'c mut self, core: &'c mut ClientCore) -> Self::Response<'c>;

    /// Writes everything queued.
    fn flush<'c>(&'c mut self, core: &'c mut ClientCore) -> Self::Flush<'c>;

    /// Sends a ping and waits for its pong, started at the instant `allowed` holds; or gives
    /// the error it holds.
    fn ping<'c>(
        &'c mut self,
        core: &'c mut ClientCore,
        allowed: Result<Instant, Error>,
    ) -> Self::Ping<'c>;
}

/// A [`ClientIo`] that connects to an address with the default builder (over the
/// transport's default stream).
pub trait ConnectDefault {
    /// What [`PacketClient::connect`] gives (tokio: a future of it).
    type Connect<'a>;

    /// Connects to `host:port` over plain TCP with the default builder.
    fn connect(host: &str, port: u16) -> Self::Connect<'_>;
}

/// A packet connection's client side, on the transport whose side of it is `L` (each
/// transport names it `PacketClient`): requests out, responses matched to them by id.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
#[derive(Debug)]
pub struct PacketClient<L> {
    link: L,
    /// What the client decides: which arrival answers which request, deadlines.
    core: ClientCore,
    /// The request of a `request` whose wait did not end (an async one dropped part-way):
    /// the next call cancels it.
    pending_request: Option<RequestId>,
    /// Where typed requests are serialized, reused (features `serde-json`, `bincode`).
    #[cfg_attr(
        not(any(feature = "serde-json", feature = "bincode")),
        expect(dead_code, reason = "only the typed requests use it")
    )]
    scratch: Vec<u8>,
}

impl<L: ClientIo + ConnectDefault> PacketClient<L> {
    /// Connects to `host:port` over plain TCP with the default builder (tokio: a future,
    /// cancel safe: a dropped connect closes the half-open socket).
    pub fn connect(host: &str, port: u16) -> L::Connect<'_> {
        L::connect(host, port)
    }
}

impl<L: ClientIo> PooledConnection for PacketClient<L> {
    fn is_closed(&self) -> bool {
        PacketClient::is_closed(self)
    }
}

impl<L: ClientIo> PacketClient<L> {
    /// A client over `link` whose requests `core` tracks (for a transport's connect).
    pub fn from_parts(link: L, core: ClientCore) -> Self {
        Self {
            link,
            core,
            pending_request: None,
            scratch: Vec::new(),
        }
    }

    /// Sends `payload` as the only request in flight and waits for its answer, borrowed
    /// until the next call: the answer on a blocking client, a future of it on an async one.
    /// Queued bytes are written at once. [`Error::RequestsInFlight`] when pipelined requests
    /// are in flight (take their responses first). A request whose wait was dropped is
    /// cancelled by the next call (its answer, if it comes, is dropped).
    pub fn request<'c>(&'c mut self, payload: &[u8]) -> L::Request<'c, &'c [u8]> {
        let sent = self.begin_request(payload);
        self.wait_answer(sent, Ok)
    }

    /// Queues `payload` as a request and returns its id; nothing is written until
    /// [`flush`](Self::flush) or [`recv_response`](Self::recv_response). Refused with
    /// nothing queued: past the in-flight cap or the request size ([`Error::Mux`], not
    /// fatal), or past the packet limit ([`Error::Encode`]). Never waits.
    pub fn send_request(&mut self, payload: &[u8]) -> Result<RequestId, Error> {
        if self.link.session().is_failed() {
            return Err(Error::Closed);
        }
        let now = self.link.now();
        let id = self.core.begin(now, payload.len()).map_err(Error::Mux)?;
        if let Err(error) = self.link.queue(id, payload) {
            let _ = self.core.cancel(id);
            return Err(error);
        }
        Ok(id)
    }

    /// Writes every queued request (what the socket took is recorded; the rest goes out on
    /// the next flush or wait).
    pub fn flush(&mut self) -> L::Flush<'_> {
        self.link.flush(&mut self.core)
    }

    /// Waits for the next response to a request in flight, in whatever order the server
    /// answers, and returns its id and payload (borrowed until the next call). Writes the
    /// queued requests first. Responses to cancelled or timed-out requests are dropped.
    ///
    /// Per-request outcomes are errors that leave the connection open:
    /// [`Error::TimedOut`] and [`Error::Busy`] name their request ([`Error::request_id`]).
    /// [`Error::NothingInFlight`] when no request is in flight.
    pub fn recv_response(&mut self) -> L::Response<'_> {
        self.link.recv_response(&mut self.core)
    }

    /// Cancels a request in flight: its response, if one comes, is dropped.
    /// [`Error::Mux`] ([`mux::Error::NotInFlight`]) when it is not in flight. Never waits.
    pub fn cancel(&mut self, id: RequestId) -> Result<(), Error> {
        self.core.cancel(id).map_err(Error::Mux)
    }

    /// Sends a ping and waits for its pong (call it with nothing in flight). Returns the
    /// round trip. A pong that does not come within the keepalive timeout (10 s without
    /// keepalive) is [`Error::KeepaliveTimeout`], fatal.
    pub fn ping(&mut self) -> L::Ping<'_> {
        self.cancel_abandoned();
        let allowed = if self.core.in_flight() > 0 {
            Err(Error::RequestsInFlight)
        } else {
            Ok(self.link.now())
        };
        self.link.ping(&mut self.core, allowed)
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// The multiplexer's counters.
    pub fn stats(&self) -> mux::ClientStats {
        self.core.stats()
    }

    /// Whether the connection is finished (after a fatal error).
    pub fn is_closed(&self) -> bool {
        self.link.session().is_failed()
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

    /// Cancels what a dropped wait left in flight, then queues `payload` as the only
    /// request.
    fn begin_request(&mut self, payload: &[u8]) -> Result<RequestId, Error> {
        self.cancel_abandoned();
        if self.core.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        self.send_request(payload)
    }

    fn wait_answer<'c, T: 'c>(
        &'c mut self,
        sent: Result<RequestId, Error>,
        decode: fn(&'c [u8]) -> Result<T, Error>,
    ) -> L::Request<'c, T> {
        let Self {
            link,
            core,
            pending_request,
            ..
        } = self;
        link.request(AnswerWait {
            core,
            pending: pending_request,
            sent,
            decode,
        })
    }

    /// Cancels the request of a dropped `request` wait, if any.
    fn cancel_abandoned(&mut self) {
        if let Some(id) = self.pending_request.take() {
            let _ = self.core.cancel(id);
        }
    }
}

#[cfg(any(feature = "serde-json", feature = "bincode"))]
mod typed {
    //! Typed requests through serde. A value is serialized into a buffer the client keeps and
    //! reuses (no allocation per request once it has grown), queued (which copies it into
    //! the packet writer, which needs the finished payload to choose and apply compression
    //! and to write the lengths), and the answer deserialized from the borrowed payload.

    use serde::Serialize;
    use serde::de::DeserializeOwned;

    #[cfg(feature = "bincode")]
    use super::super::Bincode;
    use super::super::Format;
    #[cfg(feature = "serde-json")]
    use super::super::Json;
    use super::{ClientIo, Error, PacketClient, RequestId};

    impl<L: ClientIo> PacketClient<L> {
        /// Serializes `value` as `F` into the reused buffer and queues it as a request.
        fn queue_typed<F: Format, T: Serialize + ?Sized>(
            &mut self,
            value: &T,
            only: bool,
        ) -> Result<RequestId, Error> {
            let mut scratch = std::mem::take(&mut self.scratch);
            scratch.clear();
            let id = F::encode(value, &mut scratch).and_then(|()| match only {
                true => self.begin_request(&scratch),
                false => self.send_request(&scratch),
            });
            self.scratch = scratch;
            id
        }

        fn typed_request<'c, F: Format, T: Serialize + ?Sized, R: DeserializeOwned + 'c>(
            &'c mut self,
            value: &T,
        ) -> L::Request<'c, R> {
            let sent = self.queue_typed::<F, T>(value, true);
            self.wait_answer(sent, F::decode)
        }

        /// [`request`](Self::request) with `value` as JSON, the answer parsed as `R`.
        #[cfg(feature = "serde-json")]
        pub fn request_json<'c, T: Serialize + ?Sized, R: DeserializeOwned + 'c>(
            &'c mut self,
            value: &T,
        ) -> L::Request<'c, R> {
            self.typed_request::<Json, T, R>(value)
        }

        /// [`send_request`](Self::send_request) with `value` as JSON; parse the answer with
        /// [`decode_json`](super::super::decode_json). Never waits.
        #[cfg(feature = "serde-json")]
        pub fn send_json<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<RequestId, Error> {
            self.queue_typed::<Json, T>(value, false)
        }

        /// [`request`](Self::request) with `value` in bincode 2, the answer decoded as `R`.
        #[cfg(feature = "bincode")]
        pub fn request_bincode<'c, T: Serialize + ?Sized, R: DeserializeOwned + 'c>(
            &'c mut self,
            value: &T,
        ) -> L::Request<'c, R> {
            self.typed_request::<Bincode, T, R>(value)
        }

        /// [`send_request`](Self::send_request) with `value` in bincode 2; decode the answer
        /// with [`decode_bincode`](super::super::decode_bincode). Never waits.
        #[cfg(feature = "bincode")]
        pub fn send_bincode<T: Serialize + ?Sized>(
            &mut self,
            value: &T,
        ) -> Result<RequestId, Error> {
            self.queue_typed::<Bincode, T>(value, false)
        }
    }
}
