//! [`PacketClient`]: requests over one packet connection, one at a time ([`request`]) or
//! pipelined ([`send_request`] / [`recv_response`]), tickwire-core's client over this
//! transport's [`Link`]: the blocking socket work around the codec's [`ClientCore`], which
//! decides what each arrival means for which request. The waits are the link's
//! [`ClientIo`] impl, whose results are plain `Result`s.
//!
//! [`request`]: tickwire_core::packet::PacketClient::request
//! [`send_request`]: tickwire_core::packet::PacketClient::send_request
//! [`recv_response`]: tickwire_core::packet::PacketClient::recv_response

use std::time::{Duration, Instant};

use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{ClientCore, ClientFailure};
use tickwire_core::packet::{AnswerWait, ClientIo, ConnectDefault, Dial, PacketLink};

use super::link::Link;
use super::{Blocking, Error, PacketClientOptions};
use crate::{MaybeTlsStream, Transport, TransportError};

/// Options for a [`PacketClient`]: the shared builder on the blocking transport. Defaults:
/// [`PacketConfig::client`] (16 MiB packets, no compression), [`ClientConfig::new`] (1 024
/// requests in flight), TCP_NODELAY on, a 10 s connect timeout (TCP and TLS together), no
/// read or write timeout, a 30 s request timeout, keepalive pings every 30 s with a 10 s
/// pong deadline. The write timeout is set on the socket too (bounding each write).
///
/// [`PacketConfig::client`]: tickwire_codec::packet::PacketConfig::client
/// [`ClientConfig::new`]: tickwire_codec::mux::ClientConfig::new
pub type PacketClientBuilder = tickwire_core::packet::PacketClientBuilder<Blocking>;

/// The blocking client side: a connect runs on the calling thread; a pool's slots are
/// `std` mutexes.
impl tickwire_core::packet::PacketTransport for Blocking {
    type Pool = super::PacketPool;
    type PoolSlot = std::sync::Mutex<tickwire_core::packet::Slot<PacketClient>>;
    type Connect<'a> = Result<PacketClient, Error>;

    /// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
    fn connect(dial: Dial<'_>) -> Self::Connect<'_> {
        let Dial {
            options,
            host,
            port,
            ..
        } = dial;
        let deadline = Instant::now() + options.connect_timeout;
        let stream = crate::net::open(&options.route(host, port)).map_err(|e| match e {
            TransportError::Io(io) => Error::connect_failed(io),
            other => other.into(),
        })?;
        #[cfg(feature = "tls")]
        let stream = match &options.tls {
            Some(tls) => crate::net::tls_connect(stream, host, Some(tls), deadline)?,
            None => stream,
        };
        #[cfg(not(feature = "tls"))]
        let _ = deadline;
        client_over(options, stream)
    }
}

/// A client over an already connected stream (socket options are the caller's, except
/// the write timeout, which this sets).
pub(super) fn client_over<S: Transport>(
    options: &PacketClientOptions,
    stream: S,
) -> Result<PacketClient<S>, Error> {
    Ok(PacketClient::from_parts(
        Link::new(stream, &options.link)?,
        ClientCore::new(options.mux, options.request_timeout),
    ))
}

/// A packet connection's client side: requests out, responses matched to them by id.
/// tickwire-core's client over this transport's [`Link`]; its methods and their errors are
/// documented there.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
pub type PacketClient<S = MaybeTlsStream> = tickwire_core::packet::PacketClient<Link<S>>;

impl ConnectDefault for Link<MaybeTlsStream> {
    type Connect<'a> = Result<PacketClient, Error>;

    fn connect(host: &str, port: u16) -> Self::Connect<'_> {
        PacketClientBuilder::new().connect(host, port)
    }
}

impl<S: Transport> ClientIo for Link<S> {
    type Request<'c, T>
        = Result<T, Error>
    where
        S: 'c,
        T: 'c;
    type Response<'c>
        = Result<(RequestId, &'c [u8]), Error>
    where
        S: 'c;
    type Flush<'c>
        = Result<(), Error>
    where
        S: 'c;
    type Ping<'c>
        = Result<Duration, Error>
    where
        S: 'c;

    /// The wait ends before this returns: nothing is left pending.
    fn request<'c, T: 'c>(&'c mut self, wait: AnswerWait<'c, T>) -> Result<T, Error> {
        let AnswerWait {
            core, sent, decode, ..
        } = wait;
        let id = sent?;
        Link::flush(self).map_err(|e| e.lost_on(core))?;
        let (answered, payload) = self.recv_response(core)?;
        debug_assert_eq!(answered, id, "one request in flight");
        decode(payload)
    }

    fn recv_response<'c>(
        &'c mut self,
        core: &'c mut ClientCore,
    ) -> Result<(RequestId, &'c [u8]), Error> {
        loop {
            if self.session().is_failed() {
                return Err(Error::Closed);
            }
            if core.in_flight() == 0 {
                return Err(Error::NothingInFlight);
            }
            // An answer already received wins over its deadline: the link reads what
            // arrived before it reports the deadline.
            let incoming = self.next(core.poll_timeout());
            let incoming = incoming.map_err(|e| e.lost_on(core))?;
            match core.handle(incoming, Instant::now()) {
                Ok(Some(_)) => return Ok(core.last_response(PacketLink::session(self))),
                Ok(None) => {}
                Err(failure) => return Err(self.client_failed(failure)),
            }
        }
    }

    /// Blocking (bounded by the write timeout) and reading nothing meanwhile;
    /// `recv_response` writes what is queued while it reads, which a batch larger than the
    /// socket buffers needs.
    fn flush<'c>(&'c mut self, core: &'c mut ClientCore) -> Result<(), Error> {
        Link::flush(self).map_err(|e| e.lost_on(core))
    }

    /// Answering requests that arrive meanwhile is not possible.
    fn ping<'c>(
        &'c mut self,
        core: &'c mut ClientCore,
        allowed: Result<Instant, Error>,
    ) -> Result<Duration, Error> {
        let start = allowed?;
        Link::ping(self, start).map_err(|e| e.lost_on(core))?;
        while PacketLink::session(self).awaits_pong() {
            let incoming = self.next(None).map_err(|e| e.lost_on(core))?;
            if let Err(failure) = core.handle_while_pinging(incoming) {
                return Err(self.client_failed(failure));
            }
        }
        Ok(start.elapsed())
    }
}

impl<S: Transport> Link<S> {
    /// An outcome the client's core decided: a peer violation closes the connection.
    fn client_failed(&mut self, failure: ClientFailure) -> Error {
        let error = Error::from(failure);
        match failure {
            ClientFailure::Close(_) => self.fail(error),
            _ => error,
        }
    }
}
