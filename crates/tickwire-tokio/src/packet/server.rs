//! The accept side on tokio: [`PacketServer`] (the shared builder; here TLS and a task per
//! connection) and [`PacketConnection`], one accepted connection answered in any order. The
//! async socket work around the codec's [`ServerCore`], which decides which arrival is a
//! request, which is refused busy and which closes the connection; answers go through the
//! shared [`Responder`]. The same shape as the blocking `tickwire_blocking::packet` server.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{Header, ServerCore, ServerStep};
use tickwire_core::packet::{PacketLink, PacketServerOptions, Responder, answer_with};

use super::link::Link;
use super::{Error, Tokio};
use crate::stream::MaybeTls;
use crate::{MaybeTlsStream, Transport};

/// Options for the accept side, and what accepts and serves connections: the shared
/// builder on the tokio transport. Defaults as the blocking server's:
/// [`PacketConfig::server`] (1 MiB packets), [`ServerConfig::new`] (256 requests in flight
/// per connection, 1 MiB requests), TCP_NODELAY on, a 10 s TLS handshake timeout, no read or
/// write timeout, no keepalive pings of its own (clients' pings are answered), plain TCP,
/// buffers lent out while idle
/// ([`release_idle_buffers`](tickwire_core::packet::PacketServer::release_idle_buffers) on:
/// a server holds many mostly idle connections).
///
/// [`PacketConfig::server`]: tickwire_codec::packet::PacketConfig::server
/// [`ServerConfig::new`]: tickwire_codec::mux::ServerConfig::new
pub type PacketServer = tickwire_core::packet::PacketServer<Tokio>;

/// Sets up an accepted connection: socket options, then the TLS handshake when
/// configured (bounded by the handshake timeout). Cancel safe: a dropped accept closes
/// the socket.
pub(super) async fn accept(
    options: &PacketServerOptions,
    tcp: TcpStream,
) -> Result<PacketConnection, Error> {
    tcp.set_nodelay(options.link.nodelay)?;
    #[cfg(feature = "tls")]
    let stream = match &options.tls {
        Some(tls) => {
            let deadline = tokio::time::Instant::now() + options.handshake_timeout;
            crate::net::tls_accept(tcp, tls, deadline).await?
        }
        None => MaybeTls::Plain(tcp),
    };
    #[cfg(not(feature = "tls"))]
    let stream = MaybeTls::Plain(tcp);
    Ok(connection_over(options, MaybeTlsStream(stream)))
}

/// A connection over an already set-up stream.
pub(super) fn connection_over<S: Transport>(
    options: &PacketServerOptions,
    stream: S,
) -> PacketConnection<S> {
    PacketConnection {
        link: Link::new(stream, &options.link),
        core: ServerCore::new(options.mux),
        scratch: Vec::new(),
    }
}

/// [`PacketServer::spawn`] on tasks (needs a tokio runtime): one accepting, one per
/// connection, in a set that aborting the accept task (shutdown, or dropping the handle)
/// aborts with it.
pub(super) fn spawn<H>(
    server: &PacketServer,
    listener: TcpListener,
    handler: H,
) -> Result<ServerHandle, Error>
where
    H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static,
{
    let addr = listener.local_addr()?;
    let server = server.clone();
    let task = tokio::spawn(async move {
        // Dropping the set (when this task is aborted) aborts every connection's task.
        let mut connections = JoinSet::new();
        loop {
            while connections.try_join_next().is_some() {}
            let Ok((tcp, _)) = listener.accept().await else {
                // Out of descriptors and the like: try again shortly.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let (server, handler) = (server.clone(), handler.clone());
            connections.spawn(async move {
                if let Ok(mut connection) = server.accept(tcp).await {
                    let _ = connection.serve(handler).await;
                }
            });
        }
    });
    Ok(ServerHandle {
        addr,
        task: Some(task),
    })
}

/// A server started by [`PacketServer::spawn`]. Dropping it stops the server too (without
/// waiting for the listener to close).
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    task: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes the listener and every connection (their clients see the
    /// connection end; requests in flight there are never answered). Returns once the
    /// listener is closed, so the port can be bound again. Cancel safe: the server is
    /// stopped either way.
    pub async fn shutdown(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// One accepted packet connection on tokio: requests in, answers out in any order.
#[derive(Debug)]
pub struct PacketConnection<S = MaybeTlsStream> {
    link: Link<S>,
    /// What the connection decides: which arrival is a request, busy, or a violation.
    core: ServerCore,
    /// Where typed answers are serialized, reused and lent to each [`Responder`].
    scratch: Vec<u8>,
}

impl<S: Transport> PacketConnection<S> {
    /// Waits for the next request and returns its id and payload (borrowed until the next
    /// call). Writes queued answers before it waits. A request past the in-flight cap is
    /// answered "busy" at once and not returned. [`Error::Closed`] when the client closed
    /// the connection. Cancel safe: bytes read stay buffered, a request is taken only in the
    /// poll that returns it.
    pub async fn recv_request(&mut self) -> Result<(RequestId, &[u8]), Error> {
        let header = self.next_request().await?;
        Ok((
            RequestId(header.request_id),
            self.link.session().payload(&header),
        ))
    }

    /// Queues `payload` as the answer to request `id`, which must be in flight
    /// ([`Error::Mux`] with [`mux::Error::NotInFlight`] otherwise, nothing queued). Written
    /// by [`flush`](Self::flush) or before the next wait for a request. Not async.
    pub fn respond(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.core.check_answer(id).map_err(Error::Mux)?;
        self.link.queue(id, payload)?;
        self.core.answered(id).map_err(Error::Mux)
    }

    /// Writes every queued answer. Cancel safe: what the socket took is recorded, the rest
    /// stays queued.
    pub async fn flush(&mut self) -> Result<(), Error> {
        self.link.flush().await
    }

    /// Answers every request with `handler` until the client closes (then `Ok`) or the
    /// connection fails. The handler answers through the [`Responder`]; a request it did
    /// not answer gets an empty payload. Answers are written when the connection next waits
    /// for a request. Cancel safe: an answer is queued before the next `.await`, so a
    /// dropped `serve` leaves no request half-handled (answers queued and not yet written
    /// go out on the next flush, if the connection is used again).
    pub async fn serve<H>(&mut self, mut handler: H) -> Result<(), Error>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>),
    {
        loop {
            let header = match self.next_request().await {
                Ok(header) => header,
                Err(error) => return error.end_of_serve(),
            };
            let (id, parts) = (
                RequestId(header.request_id),
                self.link.payload_and_writer(&header),
            );
            answer_with(&mut self.core, id, parts, &mut self.scratch, &mut handler)?;
        }
    }

    /// Requests received and not answered.
    pub fn in_flight(&self) -> usize {
        self.core.in_flight()
    }

    /// The multiplexer's counters (answered, busy).
    pub fn stats(&self) -> mux::ServerStats {
        self.core.stats()
    }

    /// Whether the connection's buffers are lent out while it idles (rule 11 of docs/ARCHITECTURE.md).
    pub fn buffers_released(&self) -> bool {
        self.link.session().buffers_released()
    }

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// The next request the core accepts; busy refusals are queued on the way.
    async fn next_request(&mut self) -> Result<Header, Error> {
        loop {
            let incoming = (self.link.next(None).await).map_err(|e| e.lost_on(&mut self.core))?;
            match self.core.handle(incoming) {
                Ok(ServerStep::Request(header)) => return Ok(header),
                Ok(ServerStep::Reply(control)) => self.link.queue_control(control)?,
                Ok(ServerStep::Wait) => {}
                Err(failure) => {
                    // A peer violation: close (completes in one poll, no cancellation point).
                    let error = self.link.fail(failure.into());
                    self.link.start_shutdown().await;
                    return Err(error);
                }
            }
        }
    }
}
