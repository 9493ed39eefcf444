//! [`PacketClient`]: requests over one packet connection on tokio, one at a time
//! (`request`) or many in flight (`send_request` / `recv_response`), tickwire-core's client
//! over this transport's [`Link`]: the async socket work around the codec's [`ClientCore`],
//! which decides what each arrival means for which request. The same type as the blocking
//! `tickwire_blocking::packet::PacketClient`, over another link; the waits are the link's
//! [`ClientIo`] impl, whose results are the named futures here ([`RequestFuture`],
//! [`ResponseFuture`], [`FlushFuture`], [`PingFuture`]): each does nothing until polled,
//! records what it did in the poll that did it (cancel safety: the module docs), and is
//! `Send` when the stream is.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{ClientCore, ClientFailure};
use tickwire_core::packet::{
    AnswerWait, ClientIo, ConnectDefault, Dial, PacketClientOptions, PacketLink,
};

use super::link::Link;
use super::{Error, Tokio};
use crate::core::now;
use crate::{MaybeTlsStream, Transport};
use tickwire_core::TransportError;

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

/// The tokio client side: a connect is a boxed future; a pool's slots are tokio mutexes.
impl tickwire_core::packet::PacketTransport for Tokio {
    type Connect<'a> = super::Connecting<'a, PacketClient>;
    type Pool = super::PacketPool;
    type PoolSlot = tokio::sync::Mutex<tickwire_core::packet::Slot<PacketClient>>;

    fn connect(dial: Dial<'_>) -> Self::Connect<'_> {
        Box::pin(connect(dial.options, dial.host, dial.port))
    }
}

/// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
/// Cancel safe: a dropped connect closes the half-open socket.
async fn connect(
    options: &PacketClientOptions,
    host: &str,
    port: u16,
) -> Result<PacketClient, Error> {
    let deadline = tokio::time::Instant::now() + options.connect_timeout;
    let stream = crate::net::open(&options.route(host, port))
        .await
        .map_err(|e| match e {
            TransportError::Io(io) => Error::connect_failed(io),
            other => other.into(),
        })?;
    #[cfg(feature = "tls")]
    let stream = match &options.tls {
        Some(tls) => crate::net::tls_connect(stream, host, Some(tls), deadline).await?,
        None => stream,
    };
    #[cfg(not(feature = "tls"))]
    let _ = deadline;
    Ok(client_over(options, MaybeTlsStream(stream)))
}

/// A client over an already connected stream (socket options are the caller's).
pub(super) fn client_over<S: Transport>(
    options: &PacketClientOptions,
    stream: S,
) -> PacketClient<S> {
    PacketClient::from_parts(
        Link::new(stream, &options.link),
        ClientCore::new(options.mux, options.request_timeout),
    )
}

/// A packet connection's client side on tokio: requests out, responses matched to them by
/// id. tickwire-core's client over this transport's [`Link`]; its methods and their errors
/// are documented there, their cancel safety in the module docs.
///
/// After a fatal error ([`Error::is_fatal`]) every request in flight is finished and every
/// later call returns [`Error::Closed`].
pub type PacketClient<S = MaybeTlsStream> = tickwire_core::packet::PacketClient<Link<S>>;

impl ConnectDefault for Link<MaybeTlsStream> {
    type Connect<'a> = super::Connecting<'a, PacketClient>;

    fn connect(host: &str, port: u16) -> Self::Connect<'_> {
        Box::pin(async move { PacketClientBuilder::new().connect(host, port).await })
    }
}

impl<S: Transport> ClientIo for Link<S> {
    type Request<'c, T>
        = RequestFuture<'c, S, T>
    where
        S: 'c,
        T: 'c;
    type Response<'c>
        = ResponseFuture<'c, S>
    where
        S: 'c;
    type Flush<'c>
        = FlushFuture<'c, S>
    where
        S: 'c;
    type Ping<'c>
        = PingFuture<'c, S>
    where
        S: 'c;

    fn request<'c, T: 'c>(&'c mut self, wait: AnswerWait<'c, T>) -> RequestFuture<'c, S, T> {
        let AnswerWait {
            core,
            pending,
            sent,
            decode,
        } = wait;
        let state = match sent {
            Ok(id) => {
                // Until the future completes: dropped part-way, the next call cancels it.
                *pending = Some(id);
                RequestState::Waiting(Wait::new(self, core), pending)
            }
            Err(error) => RequestState::Refused(error),
        };
        RequestFuture { state, decode }
    }

    fn recv_response<'c>(&'c mut self, core: &'c mut ClientCore) -> ResponseFuture<'c, S> {
        ResponseFuture {
            wait: Some(Wait::new(self, core)),
        }
    }

    fn flush<'c>(&'c mut self, core: &'c mut ClientCore) -> FlushFuture<'c, S> {
        FlushFuture { link: self, core }
    }

    fn ping<'c>(
        &'c mut self,
        core: &'c mut ClientCore,
        allowed: Result<Instant, Error>,
    ) -> PingFuture<'c, S> {
        PingFuture {
            wait: Wait::new(self, core),
            start: allowed.map_err(Some),
            sent: false,
        }
    }
}

/// A wait for packets on a client's link, shared by the futures: the link, the core, and
/// whether a wait for the next packet is under way (its read timeout started).
#[derive(Debug)]
struct Wait<'c, S> {
    link: &'c mut Link<S>,
    core: &'c mut ClientCore,
    waiting: bool,
}

impl<'c, S: Transport> Wait<'c, S> {
    fn new(link: &'c mut Link<S>, core: &'c mut ClientCore) -> Self {
        Self {
            link,
            core,
            waiting: false,
        }
    }

    /// The next packet from the link, the core told of a fatal error.
    fn poll_incoming(
        &mut self,
        cx: &mut Context<'_>,
        deadline: Option<Instant>,
    ) -> Poll<Result<tickwire_codec::packet::Incoming, Error>> {
        if !self.waiting {
            self.link.wait_started();
            self.waiting = true;
        }
        let incoming = std::task::ready!(self.link.poll_incoming(cx, deadline));
        self.waiting = false;
        Poll::Ready(incoming.map_err(|e| e.lost_on(self.core)))
    }

    /// Polls until a response to a request in flight is the core's last one. An answer
    /// already received wins over its deadline: the link reads what arrived before it
    /// reports the deadline.
    fn poll_response(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        loop {
            if self.link.session().is_failed() {
                return Poll::Ready(Err(Error::Closed));
            }
            if self.core.in_flight() == 0 {
                return Poll::Ready(Err(Error::NothingInFlight));
            }
            let deadline = self.core.poll_timeout();
            let incoming = match std::task::ready!(self.poll_incoming(cx, deadline)) {
                Ok(incoming) => incoming,
                Err(error) => return Poll::Ready(Err(error)),
            };
            match self.core.handle(incoming, now()) {
                Ok(Some(_)) => return Poll::Ready(Ok(())),
                Ok(None) => {}
                Err(failure) => return Poll::Ready(Err(self.failed(cx, failure))),
            }
        }
    }

    /// An outcome the core decided: a peer violation closes the connection (its write side
    /// shut in this poll).
    fn failed(&mut self, cx: &mut Context<'_>, failure: ClientFailure) -> Error {
        let error = Error::from(failure);
        match failure {
            ClientFailure::Close(_) => self.link.fail_and_shut(cx, error),
            _ => error,
        }
    }

    /// The core's last response, borrowed from the link for `'c`.
    fn last_response(self) -> (RequestId, &'c [u8]) {
        let link: &'c Link<S> = self.link;
        self.core.last_response(link.session())
    }
}

/// The future of [`PacketClient::request`] (and of the typed requests): the answer, decoded.
#[must_use = "a request's answer is awaited only when its future is"]
#[derive(Debug)]
pub struct RequestFuture<'c, S, T> {
    state: RequestState<'c, S>,
    decode: fn(&'c [u8]) -> Result<T, Error>,
}

#[derive(Debug)]
enum RequestState<'c, S> {
    Waiting(Wait<'c, S>, &'c mut Option<RequestId>),
    Refused(Error),
    Done,
}

impl<S: Transport, T> Future for RequestFuture<'_, S, T> {
    type Output = Result<T, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        match std::mem::replace(&mut this.state, RequestState::Done) {
            RequestState::Waiting(mut wait, pending) => match wait.poll_response(cx) {
                Poll::Pending => {
                    this.state = RequestState::Waiting(wait, pending);
                    Poll::Pending
                }
                Poll::Ready(result) => {
                    *pending = None;
                    Poll::Ready(result.and_then(|()| (this.decode)(wait.last_response().1)))
                }
            },
            RequestState::Refused(error) => Poll::Ready(Err(error)),
            RequestState::Done => Poll::Ready(Err(Error::Closed)),
        }
    }
}

/// The future of [`PacketClient::recv_response`]: the next response's id and payload.
#[must_use = "a response is awaited only when its future is"]
#[derive(Debug)]
pub struct ResponseFuture<'c, S> {
    /// `None` once completed.
    wait: Option<Wait<'c, S>>,
}

impl<'c, S: Transport> Future for ResponseFuture<'c, S> {
    type Output = Result<(RequestId, &'c [u8]), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(mut wait) = self.wait.take() else {
            return Poll::Ready(Err(Error::Closed));
        };
        match wait.poll_response(cx) {
            Poll::Pending => {
                self.wait = Some(wait);
                Poll::Pending
            }
            Poll::Ready(result) => Poll::Ready(result.map(|()| wait.last_response())),
        }
    }
}

/// The future of [`PacketClient::flush`].
#[must_use = "queued bytes are written only when the future is awaited"]
#[derive(Debug)]
pub struct FlushFuture<'c, S> {
    link: &'c mut Link<S>,
    core: &'c mut ClientCore,
}

impl<S: Transport> Future for FlushFuture<'_, S> {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let result = std::task::ready!(this.link.poll_flush_timed(cx));
        Poll::Ready(result.map_err(|e| e.lost_on(this.core)))
    }
}

/// The future of [`PacketClient::ping`]: the round trip.
#[must_use = "a ping is sent only when its future is awaited"]
#[derive(Debug)]
pub struct PingFuture<'c, S> {
    wait: Wait<'c, S>,
    /// When the ping was started, or why it was refused (taken when reported).
    start: Result<Instant, Option<Error>>,
    sent: bool,
}

impl<S: Transport> Future for PingFuture<'_, S> {
    type Output = Result<Duration, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let start = match &mut this.start {
            Ok(start) => *start,
            Err(refused) => return Poll::Ready(Err(refused.take().unwrap_or(Error::Closed))),
        };
        if !this.sent {
            this.sent = true;
            if let Err(error) = this.wait.link.ping() {
                return Poll::Ready(Err(error.lost_on(this.wait.core)));
            }
        }
        while this.wait.link.session().awaits_pong() {
            let incoming = match std::task::ready!(this.wait.poll_incoming(cx, None)) {
                Ok(incoming) => incoming,
                Err(error) => return Poll::Ready(Err(error)),
            };
            if let Err(failure) = this.wait.core.handle_while_pinging(incoming) {
                return Poll::Ready(Err(this.wait.failed(cx, failure)));
            }
        }
        Poll::Ready(Ok(now().saturating_duration_since(start)))
    }
}
