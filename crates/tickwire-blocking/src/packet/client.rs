//! [`PacketClient`]: requests over one packet connection, one at a time ([`request`]) or
//! pipelined ([`send_request`] / [`recv_response`]), matched by a [`mux::Client`].
//!
//! [`request`]: PacketClient::request
//! [`send_request`]: PacketClient::send_request
//! [`recv_response`]: PacketClient::recv_response

use std::time::{Duration, Instant};

use tickwire_codec::mux::{self, Disconnect, RequestId, Response};
use tickwire_codec::packet::Header;

use super::link::{Incoming, Link};
use super::{Error, PacketClientOptions};
use crate::{MaybeTlsStream, Stream};

/// Options for a [`PacketClient`]. Defaults: [`PacketConfig::client`] (16 MiB packets, no
/// compression), [`ClientConfig::new`] (1 024 requests in flight), TCP_NODELAY on, a 10 s
/// connect timeout (TCP and TLS together), no read or write timeout, a 30 s request
/// timeout, keepalive pings every 30 s with a 10 s pong deadline.
///
/// [`PacketConfig::client`]: tickwire_codec::packet::PacketConfig::client
/// [`ClientConfig::new`]: tickwire_codec::mux::ClientConfig::new
#[derive(Debug, Clone, Default)]
pub struct PacketClientBuilder {
    /// What the tokio client builder has too, with its defaults.
    options: PacketClientOptions,
    write_timeout: Option<Duration>,
}

impl PacketClientBuilder {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    tickwire_core::__packet_client_builder_options!();
    super::write_timeout_setter!();

    /// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
    pub fn connect(&self, host: &str, port: u16) -> Result<PacketClient, Error> {
        let options = &self.options;
        let deadline = Instant::now() + options.connect_timeout;
        let tcp = crate::net::tcp_connect(host, port, Some(options.connect_timeout))
            .map_err(connect_error)?;
        tcp.set_nodelay(options.nodelay)?;
        #[cfg(feature = "tls")]
        let stream = match &options.tls {
            Some(tls) => crate::net::tls_connect(tcp, host, Some(tls), deadline)?,
            None => MaybeTlsStream::Plain(tcp),
        };
        #[cfg(not(feature = "tls"))]
        let stream = {
            let _ = deadline;
            MaybeTlsStream::Plain(tcp)
        };
        self.client_over(stream)
    }

    /// A client over an already connected stream (socket options are the caller's, except
    /// the write timeout, which this sets).
    pub fn client_over<S: Stream>(&self, mut stream: S) -> Result<PacketClient<S>, Error> {
        stream.set_write_timeout(self.write_timeout)?;
        let options = &self.options;
        Ok(PacketClient {
            link: Link::new(
                stream,
                options.packet.clone(),
                options.keepalive,
                options.read_timeout,
                self.write_timeout,
            ),
            mux: mux::Client::new(options.mux),
            request_timeout: options.request_timeout,
            last: None,
            scratch: Vec::new(),
        })
    }
}

/// A TCP connect that timed out is [`Error::ConnectTimeout`].
fn connect_error(error: std::io::Error) -> Error {
    match error.kind() {
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => Error::ConnectTimeout,
        _ => Error::Io(error),
    }
}

/// A packet connection's client side: requests out, responses matched to them by id.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
#[derive(Debug)]
pub struct PacketClient<S = MaybeTlsStream> {
    link: Link<S>,
    mux: mux::Client<()>,
    request_timeout: Option<Duration>,
    /// The header of the response last returned, whose payload the link still holds.
    last: Option<Header>,
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

impl<S: Stream> PacketClient<S> {
    /// Sends `payload` as the only request in flight and waits for its answer, borrowed
    /// until the next call. Queued bytes are written at once. [`Error::RequestsInFlight`]
    /// when pipelined requests are in flight (take their responses first).
    pub fn request(&mut self, payload: &[u8]) -> Result<&[u8], Error> {
        if self.mux.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let id = self.send_request(payload)?;
        self.link.flush().map_err(|e| self.lost(e))?;
        let (answered, _) = self.recv_response()?;
        debug_assert_eq!(answered, id, "one request in flight");
        Ok(self.last_payload().1)
    }

    /// Queues `payload` as a request and returns its id; nothing is written until
    /// [`flush`](Self::flush) or [`recv_response`](Self::recv_response). Refused with
    /// nothing queued: past the in-flight cap or the request size
    /// ([`Error::Mux`], not fatal), or past the packet limit ([`Error::Encode`]).
    pub fn send_request(&mut self, payload: &[u8]) -> Result<RequestId, Error> {
        if self.link.is_failed() {
            return Err(Error::Closed);
        }
        let id = self
            .mux
            .begin(Instant::now(), payload.len(), self.request_timeout, ())
            .map_err(|refused| Error::Mux(refused.error))?;
        if let Err(error) = self.link.queue(id, payload) {
            let _ = self.mux.cancel(id);
            return Err(error);
        }
        Ok(id)
    }

    /// Writes every queued request, blocking (bounded by the write timeout) and reading
    /// nothing meanwhile; [`recv_response`](Self::recv_response) writes what is queued while
    /// it reads, which a batch larger than the socket buffers needs.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.link.flush().map_err(|e| self.lost(e))
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
            if self.link.is_failed() {
                return Err(Error::Closed);
            }
            if self.mux.in_flight() == 0 {
                return Err(Error::NothingInFlight);
            }
            // An answer already received wins over its deadline: the link reads what
            // arrived before it reports the deadline.
            let incoming = self.link.next(self.mux.poll_timeout());
            let now = Instant::now();
            match incoming.map_err(|e| self.lost(e))? {
                Incoming::Deadline => {
                    if let Some(expired) = self.mux.handle_timeout(now).next() {
                        return Err(Error::TimedOut(expired.id));
                    }
                }
                Incoming::Pong => {}
                Incoming::Busy(id) => match self.mux.on_response(id, 0, now) {
                    Ok(Response::Completed(_)) => return Err(Error::Busy(id)),
                    Ok(_) => {}
                    Err(error) => return Err(self.closed(error)),
                },
                Incoming::Packet(header) => {
                    let id = RequestId(header.request_id);
                    let len = header.payload_len as usize;
                    match self.mux.on_response(id, len, Instant::now()) {
                        Ok(Response::Completed(_)) => {
                            self.last = Some(header);
                            return Ok(self.last_payload());
                        }
                        Ok(_) => {}
                        Err(error) => return Err(self.closed(error)),
                    }
                }
            }
        }
    }

    /// Cancels a request in flight: its response, if one comes, is dropped.
    /// [`Error::Mux`] ([`mux::Error::NotInFlight`]) when it is not in flight.
    pub fn cancel(&mut self, id: RequestId) -> Result<(), Error> {
        self.mux.cancel(id).map_err(Error::Mux)
    }

    /// Sends a ping and waits for its pong (answering requests that arrive meanwhile is
    /// not possible: call it with nothing in flight). Returns the round trip. A pong that
    /// does not come within the keepalive timeout (10 s without keepalive) is
    /// [`Error::KeepaliveTimeout`], fatal.
    pub fn ping(&mut self) -> Result<Duration, Error> {
        if self.mux.in_flight() > 0 {
            return Err(Error::RequestsInFlight);
        }
        let start = Instant::now();
        self.link.ping(start).map_err(|e| self.lost(e))?;
        while self.link.awaits_pong() {
            // Nothing is in flight: any answer is to an id this client never issued.
            let id = match self.link.next(None).map_err(|e| self.lost(e))? {
                Incoming::Deadline | Incoming::Pong => continue,
                Incoming::Busy(id) => id,
                Incoming::Packet(header) => RequestId(header.request_id),
            };
            return Err(self.closed(mux::Error::UnknownId { id }));
        }
        Ok(start.elapsed())
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.mux.in_flight()
    }

    /// The multiplexer's counters.
    pub fn stats(&self) -> mux::ClientStats {
        self.mux.stats()
    }

    /// Whether the connection is finished (after a fatal error).
    pub fn is_closed(&self) -> bool {
        self.link.is_failed()
    }

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// The id and payload of the response last returned.
    fn last_payload(&self) -> (RequestId, &[u8]) {
        match &self.last {
            Some(header) => (RequestId(header.request_id), self.link.payload(header)),
            None => (RequestId::RESERVED, &[]),
        }
    }

    /// A fatal link error: every request in flight fails.
    fn lost(&mut self, error: Error) -> Error {
        if error.is_fatal() {
            for _ in self.mux.fail_all(Disconnect::ConnectionLost) {}
        }
        error
    }

    /// A multiplexer violation by the peer: close, fail every request in flight.
    fn closed(&mut self, error: mux::Error) -> Error {
        for _ in self.mux.fail_all(Disconnect::Closed(error)) {}
        self.link.fail(Error::Mux(error))
    }
}
