//! [`PacketClient`]: requests over one packet connection on tokio, one at a time
//! ([`request`](PacketClient::request)) or many in flight
//! ([`send_request`](PacketClient::send_request) /
//! [`recv_response`](PacketClient::recv_response)): the async socket work around the codec's
//! [`ClientCore`], which decides what each arrival means for which request. The same shape
//! as the blocking `tickwire_blocking::packet::PacketClient`.

use std::time::Duration;

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{ClientCore, ClientFailure};
use tickwire_core::packet::PacketClientOptions;

use super::link::Link;
use super::{Error, Tokio};
use crate::core::now;
use crate::stream::MaybeTls;
use crate::{MaybeTlsStream, Transport};

/// Options for a [`PacketClient`]: the shared builder on the tokio transport. Defaults as
/// the blocking builder's: [`PacketConfig::client`] (16 MiB packets, no compression),
/// [`ClientConfig::new`] (1 024 requests in flight), TCP_NODELAY on, a 10 s connect timeout
/// (TCP and TLS together), no read or write timeout, a 30 s request timeout, keepalive pings
/// every 30 s with a 10 s pong deadline, buffers kept while idle
/// ([`release_idle_buffers`](tickwire_core::packet::PacketClientBuilder::release_idle_buffers)
/// off).
///
/// [`PacketConfig::client`]: tickwire_codec::packet::PacketConfig::client
/// [`ClientConfig::new`]: tickwire_codec::mux::ClientConfig::new
pub type PacketClientBuilder = tickwire_core::packet::PacketClientBuilder<Tokio>;

/// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
/// Cancel safe: a dropped connect closes the half-open socket.
pub(super) async fn connect(
    options: &PacketClientOptions,
    host: &str,
    port: u16,
) -> Result<PacketClient, Error> {
    let deadline = tokio::time::Instant::now() + options.connect_timeout;
    let tcp = crate::net::tcp_connect(
        host,
        port,
        Some(options.connect_timeout),
        options.link.nodelay,
    )
    .await
    .map_err(Error::connect_failed)?;
    #[cfg(feature = "tls")]
    let stream = match &options.tls {
        Some(tls) => crate::net::tls_connect(tcp, host, Some(tls), deadline).await?,
        None => MaybeTls::Plain(tcp),
    };
    #[cfg(not(feature = "tls"))]
    let stream = {
        let _ = deadline;
        MaybeTls::Plain(tcp)
    };
    Ok(client_over(options, MaybeTlsStream(stream)))
}

/// A client over an already connected stream (socket options are the caller's).
pub(super) fn client_over<S: Transport>(
    options: &PacketClientOptions,
    stream: S,
) -> PacketClient<S> {
    PacketClient {
        link: Link::new(stream, &options.link),
        core: ClientCore::new(options.mux, options.request_timeout),
        pending_request: None,
        scratch: Vec::new(),
    }
}

/// A packet connection's client side on tokio: requests out, responses matched to them by
/// id. Cancel safety of each method: the module docs.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
#[derive(Debug)]
pub struct PacketClient<S = MaybeTlsStream> {
    link: Link<S>,
    /// What the client decides: which arrival answers which request, deadlines.
    core: ClientCore,
    /// The request of a [`request`](PacketClient::request) whose future was dropped: the
    /// next call cancels it.
    pending_request: Option<RequestId>,
    /// Where typed requests are serialized, reused (features `serde-json`, `bincode`).
    #[cfg_attr(
        not(any(feature = "serde-json", feature = "bincode")),
        expect(dead_code, reason = "only the typed requests use it")
    )]
    pub(super) scratch: Vec<u8>,
}

impl PacketClient {
    /// Connects to `host:port` over plain TCP with the default [`PacketClientBuilder`].
    /// Cancel safe: a dropped connect closes the half-open socket.
    pub async fn connect(host: &str, port: u16) -> Result<Self, Error> {
        PacketClientBuilder::new().connect(host, port).await
    }
}

impl<S: Transport> PacketClient<S> {
    /// Sends `payload` as the only request in flight and waits for its answer, borrowed
    /// until the next call. [`Error::RequestsInFlight`] when pipelined requests are in
    /// flight. Cancel safe: a dropped call's request is cancelled by the next call (its
    /// answer, if it comes, is dropped).
    pub async fn request(&mut self, payload: &[u8]) -> Result<&[u8], Error> {
        self.cancel_abandoned();
        if self.core.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let id = self.send_request(payload)?;
        self.pending_request = Some(id);
        let result = self.recv_response().await.map(|(answered, _)| answered);
        self.pending_request = None;
        let answered = result?;
        debug_assert_eq!(answered, id, "one request in flight");
        Ok(self.core.last_response(self.link.session()).1)
    }

    /// Queues `payload` as a request and returns its id; nothing is written until
    /// [`flush`](Self::flush) or [`recv_response`](Self::recv_response). Refused with
    /// nothing queued: past the in-flight cap or the request size ([`Error::Mux`], not
    /// fatal), or past the packet limit ([`Error::Encode`]). Not async.
    pub fn send_request(&mut self, payload: &[u8]) -> Result<RequestId, Error> {
        if self.link.session().is_failed() {
            return Err(Error::Closed);
        }
        let id = self.core.begin(now(), payload.len()).map_err(Error::Mux)?;
        if let Err(error) = self.link.queue(id, payload) {
            let _ = self.core.cancel(id);
            return Err(error);
        }
        Ok(id)
    }

    /// Writes every queued request. Cancel safe: what the socket took is recorded; the rest
    /// (a packet partly written first in line) goes out on the next flush or wait.
    pub async fn flush(&mut self) -> Result<(), Error> {
        let result = self.link.flush().await;
        result.map_err(|e| e.lost_on(&mut self.core))
    }

    /// Waits for the next response to a request in flight, in whatever order the server
    /// answers, and returns its id and payload (borrowed until the next call). Writes the
    /// queued requests first. Responses to cancelled or timed-out requests are dropped.
    /// [`Error::TimedOut`] and [`Error::Busy`] name their request and leave the connection
    /// open; [`Error::NothingInFlight`] when no request is in flight.
    ///
    /// Cancel safe: bytes read stay in the connection's buffer, a response is taken only in
    /// the poll that returns it, and the requests stay in flight for the next call.
    pub async fn recv_response(&mut self) -> Result<(RequestId, &[u8]), Error> {
        loop {
            if self.link.session().is_failed() {
                return Err(Error::Closed);
            }
            if self.core.in_flight() == 0 {
                return Err(Error::NothingInFlight);
            }
            // An answer already received wins over its deadline: the link reads what
            // arrived before it reports the deadline.
            let incoming = self.link.next(self.core.poll_timeout()).await;
            let incoming = incoming.map_err(|e| e.lost_on(&mut self.core))?;
            match self.core.handle(incoming, now()) {
                Ok(Some(_)) => return Ok(self.core.last_response(self.link.session())),
                Ok(None) => {}
                Err(failure) => return Err(self.failed(failure).await),
            }
        }
    }

    /// Cancels a request in flight: its response, if one comes, is dropped.
    /// [`Error::Mux`] ([`mux::Error::NotInFlight`]) when it is not in flight. Not async.
    pub fn cancel(&mut self, id: RequestId) -> Result<(), Error> {
        self.core.cancel(id).map_err(Error::Mux)
    }

    /// Sends a ping and waits for its pong (call it with nothing in flight). Returns the
    /// round trip. A pong that does not come within the keepalive timeout (10 s without
    /// keepalive) is [`Error::KeepaliveTimeout`], fatal. The request of a dropped
    /// [`request`](Self::request) future is cancelled first. Cancel safe: the ping stays
    /// sent and its deadline armed; a later pong is taken by the next wait.
    pub async fn ping(&mut self) -> Result<Duration, Error> {
        self.cancel_abandoned();
        if self.core.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let start = now();
        self.link.ping().map_err(|e| e.lost_on(&mut self.core))?;
        while self.link.session().awaits_pong() {
            let incoming = self.link.next(None).await;
            let incoming = incoming.map_err(|e| e.lost_on(&mut self.core))?;
            if let Err(failure) = self.core.handle_while_pinging(incoming) {
                return Err(self.failed(failure).await);
            }
        }
        Ok(now().saturating_duration_since(start))
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

    /// Whether the connection's buffers are lent out while it idles (rule 11 of docs/ARCHITECTURE.md).
    pub fn buffers_released(&self) -> bool {
        self.link.buffers_released()
    }

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// Cancels the request of a dropped [`request`](Self::request) future, if any.
    fn cancel_abandoned(&mut self) {
        if let Some(id) = self.pending_request.take() {
            let _ = self.core.cancel(id);
        }
    }

    /// An outcome the core decided: a peer violation closes the connection. Completes in
    /// one poll (no cancellation point).
    async fn failed(&mut self, failure: ClientFailure) -> Error {
        let error = Error::from(failure);
        match failure {
            ClientFailure::Close(_) => {
                let error = self.link.fail(error);
                self.link.start_shutdown().await;
                error
            }
            _ => error,
        }
    }
}
