//! [`PacketClient`]: requests over one packet connection, one at a time ([`request`]) or
//! pipelined ([`send_request`] / [`recv_response`]): the blocking socket work around the
//! codec's [`ClientCore`], which decides what each arrival means for which request.
//!
//! [`request`]: PacketClient::request
//! [`send_request`]: PacketClient::send_request
//! [`recv_response`]: PacketClient::recv_response

use std::time::{Duration, Instant};

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{ClientCore, ClientFailure};

use super::link::Link;
use super::{Blocking, Error, PacketClientOptions};
use crate::{MaybeTlsStream, Transport};

/// Options for a [`PacketClient`]: the shared builder on the blocking transport. Defaults:
/// [`PacketConfig::client`] (16 MiB packets, no compression), [`ClientConfig::new`] (1 024
/// requests in flight), TCP_NODELAY on, a 10 s connect timeout (TCP and TLS together), no
/// read or write timeout, a 30 s request timeout, keepalive pings every 30 s with a 10 s
/// pong deadline. The write timeout is set on the socket too (bounding each write).
///
/// [`PacketConfig::client`]: tickwire_codec::packet::PacketConfig::client
/// [`ClientConfig::new`]: tickwire_codec::mux::ClientConfig::new
pub type PacketClientBuilder = tickwire_core::packet::PacketClientBuilder<Blocking>;

/// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
pub(super) fn connect(
    options: &PacketClientOptions,
    host: &str,
    port: u16,
) -> Result<PacketClient, Error> {
    let deadline = Instant::now() + options.connect_timeout;
    let tcp = crate::net::tcp_connect(host, port, Some(options.connect_timeout))
        .map_err(Error::connect_failed)?;
    tcp.set_nodelay(options.link.nodelay)?;
    #[cfg(feature = "tls")]
    let stream = match &options.tls {
        Some(tls) => crate::net::tls_connect(tcp, host, Some(tls), deadline)?,
        None => MaybeTlsStream::plain(tcp),
    };
    #[cfg(not(feature = "tls"))]
    let stream = {
        let _ = deadline;
        MaybeTlsStream::plain(tcp)
    };
    client_over(options, stream)
}

/// A client over an already connected stream (socket options are the caller's, except
/// the write timeout, which this sets).
pub(super) fn client_over<S: Transport>(
    options: &PacketClientOptions,
    stream: S,
) -> Result<PacketClient<S>, Error> {
    Ok(PacketClient {
        link: Link::new(stream, &options.link)?,
        core: ClientCore::new(options.mux, options.request_timeout),
        scratch: Vec::new(),
    })
}

/// A packet connection's client side: requests out, responses matched to them by id.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
#[derive(Debug)]
pub struct PacketClient<S = MaybeTlsStream> {
    link: Link<S>,
    /// What the client decides: which arrival answers which request, deadlines.
    core: ClientCore,
    /// Where typed requests are serialized, reused (features `serde-json`, `bincode`).
    #[cfg_attr(
        not(any(feature = "serde-json", feature = "bincode")),
        expect(dead_code, reason = "only the typed requests use it")
    )]
    pub(super) scratch: Vec<u8>,
}

impl PacketClient {
    /// Connects to `host:port` over plain TCP with the default [`PacketClientBuilder`].
    pub fn connect(host: &str, port: u16) -> Result<Self, Error> {
        PacketClientBuilder::new().connect(host, port)
    }
}

impl<S: Transport> PacketClient<S> {
    /// Sends `payload` as the only request in flight and waits for its answer, borrowed
    /// until the next call. Queued bytes are written at once. [`Error::RequestsInFlight`]
    /// when pipelined requests are in flight (take their responses first).
    pub fn request(&mut self, payload: &[u8]) -> Result<&[u8], Error> {
        if self.core.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let id = self.send_request(payload)?;
        self.link.flush().map_err(|e| e.lost_on(&mut self.core))?;
        let (answered, _) = self.recv_response()?;
        debug_assert_eq!(answered, id, "one request in flight");
        Ok(self.core.last_response(self.link.session()).1)
    }

    /// Queues `payload` as a request and returns its id; nothing is written until
    /// [`flush`](Self::flush) or [`recv_response`](Self::recv_response). Refused with
    /// nothing queued: past the in-flight cap or the request size
    /// ([`Error::Mux`], not fatal), or past the packet limit ([`Error::Encode`]).
    pub fn send_request(&mut self, payload: &[u8]) -> Result<RequestId, Error> {
        if self.link.session().is_failed() {
            return Err(Error::Closed);
        }
        let id = self
            .core
            .begin(Instant::now(), payload.len())
            .map_err(Error::Mux)?;
        if let Err(error) = self.link.queue(id, payload) {
            let _ = self.core.cancel(id);
            return Err(error);
        }
        Ok(id)
    }

    /// Writes every queued request, blocking (bounded by the write timeout) and reading
    /// nothing meanwhile; [`recv_response`](Self::recv_response) writes what is queued while
    /// it reads, which a batch larger than the socket buffers needs.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.link.flush().map_err(|e| e.lost_on(&mut self.core))
    }

    /// Waits for the next response to a request in flight, in whatever order the server
    /// answers, and returns its id and payload (borrowed until the next call). Writes the
    /// queued requests first. Responses to cancelled or timed-out requests are dropped.
    ///
    /// Per-request outcomes are errors that leave the connection open:
    /// [`Error::TimedOut`] and [`Error::Busy`] name their request ([`Error::request_id`]).
    /// [`Error::NothingInFlight`] when no request is in flight.
    pub fn recv_response(&mut self) -> Result<(RequestId, &[u8]), Error> {
        loop {
            if self.link.session().is_failed() {
                return Err(Error::Closed);
            }
            if self.core.in_flight() == 0 {
                return Err(Error::NothingInFlight);
            }
            // An answer already received wins over its deadline: the link reads what
            // arrived before it reports the deadline.
            let incoming = self.link.next(self.core.poll_timeout());
            let incoming = incoming.map_err(|e| e.lost_on(&mut self.core))?;
            match self.core.handle(incoming, Instant::now()) {
                Ok(Some(_)) => return Ok(self.core.last_response(self.link.session())),
                Ok(None) => {}
                Err(failure) => return Err(self.failed(failure)),
            }
        }
    }

    /// Cancels a request in flight: its response, if one comes, is dropped.
    /// [`Error::Mux`] ([`mux::Error::NotInFlight`]) when it is not in flight.
    pub fn cancel(&mut self, id: RequestId) -> Result<(), Error> {
        self.core.cancel(id).map_err(Error::Mux)
    }

    /// Sends a ping and waits for its pong (answering requests that arrive meanwhile is
    /// not possible: call it with nothing in flight). Returns the round trip. A pong that
    /// does not come within the keepalive timeout (10 s without keepalive) is
    /// [`Error::KeepaliveTimeout`], fatal.
    pub fn ping(&mut self) -> Result<Duration, Error> {
        if self.core.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let start = Instant::now();
        self.link
            .ping(start)
            .map_err(|e| e.lost_on(&mut self.core))?;
        while self.link.session().awaits_pong() {
            let incoming = self
                .link
                .next(None)
                .map_err(|e| e.lost_on(&mut self.core))?;
            if let Err(failure) = self.core.handle_while_pinging(incoming) {
                return Err(self.failed(failure));
            }
        }
        Ok(start.elapsed())
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

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// An outcome the core decided: a peer violation closes the connection.
    fn failed(&mut self, failure: ClientFailure) -> Error {
        let error = Error::from(failure);
        match failure {
            ClientFailure::Close(_) => self.link.fail(error),
            _ => error,
        }
    }
}
