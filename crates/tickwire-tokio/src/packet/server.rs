//! The accept side on tokio: [`PacketServer`] (options, TLS, a task per connection) and
//! [`PacketConnection`], one accepted connection whose requests are counted against a
//! [`mux::Server`]'s caps and answered in any order. The same shape as the blocking
//! `tickwire_blocking::packet` server.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{Control, Header, PacketWriter};

use super::Error;
use super::link::{Incoming, Link};
use crate::stream::MaybeTls;
use crate::{MaybeTlsStream, Transport};

/// Options for the accept side. Defaults as the blocking server's: [`PacketConfig::server`]
/// (1 MiB packets), [`ServerConfig::new`] (256 requests in flight per connection, 1 MiB
/// requests), TCP_NODELAY on, a 10 s TLS handshake timeout, no read or write timeout, no
/// keepalive pings of its own (clients' pings are answered), plain TCP, buffers lent out while idle
/// ([`release_idle_buffers`](Self::release_idle_buffers) on: a server holds many mostly idle
/// connections).
///
/// [`PacketConfig::server`]: tickwire_codec::packet::PacketConfig::server
/// [`ServerConfig::new`]: tickwire_codec::mux::ServerConfig::new
#[derive(Debug, Clone)]
pub struct PacketServer {
    /// What the blocking server builder has too, with its defaults.
    options: tickwire_core::packet::PacketServerOptions,
    release_idle_buffers: bool,
    write_timeout: Option<std::time::Duration>,
}

impl Default for PacketServer {
    fn default() -> Self {
        Self::new()
    }
}

impl PacketServer {
    /// The defaults above.
    pub fn new() -> Self {
        Self {
            options: tickwire_core::packet::PacketServerOptions::default(),
            // On, unlike a client's: a server holds many mostly idle connections.
            release_idle_buffers: true,
            write_timeout: None,
        }
    }

    tickwire_core::__packet_server_builder_options!();
    super::release_idle_buffers_setter!();
    super::write_timeout_setter!();

    /// Sets up an accepted connection: socket options, then the TLS handshake when
    /// configured (bounded by the handshake timeout). Cancel safe: a dropped accept closes
    /// the socket.
    pub async fn accept(&self, tcp: TcpStream) -> Result<PacketConnection, Error> {
        tcp.set_nodelay(self.options.nodelay)?;
        #[cfg(feature = "tls")]
        let stream = match &self.options.tls {
            Some(tls) => {
                let deadline = tokio::time::Instant::now() + self.options.handshake_timeout;
                crate::net::tls_accept(tcp, tls, deadline).await?
            }
            None => MaybeTls::Plain(tcp),
        };
        #[cfg(not(feature = "tls"))]
        let stream = MaybeTls::Plain(tcp);
        Ok(self.connection_over(MaybeTlsStream(stream)))
    }

    /// A connection over an already set-up stream.
    pub fn connection_over<S: Transport>(&self, stream: S) -> PacketConnection<S> {
        let options = &self.options;
        PacketConnection {
            link: Link::new(
                stream,
                options.packet.clone(),
                options.keepalive,
                (options.read_timeout, self.write_timeout),
                self.release_idle_buffers,
            ),
            mux: mux::Server::new(options.mux),
            last: None,
            scratch: Vec::new(),
        }
    }

    /// Accepts connections on `listener` in a task of its own and serves each in a task of
    /// its own with a clone of `handler` ([`PacketConnection::serve`]). Returns at once;
    /// [`ServerHandle::shutdown`] (or dropping the handle) stops accepting and closes every
    /// connection. Needs a tokio runtime.
    pub fn spawn<H>(&self, listener: TcpListener, handler: H) -> Result<ServerHandle, Error>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static,
    {
        let addr = listener.local_addr()?;
        let server = self.clone();
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
    mux: mux::Server,
    last: Option<Header>,
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
        self.last = Some(header);
        Ok((RequestId(header.request_id), self.link.payload(&header)))
    }

    /// Queues `payload` as the answer to request `id`, which must be in flight
    /// ([`Error::Mux`] with [`mux::Error::NotInFlight`] otherwise, nothing queued). Written
    /// by [`flush`](Self::flush) or before the next wait for a request. Not async.
    pub fn respond(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        if !self.mux.is_in_flight(id) {
            return Err(Error::Mux(mux::Error::NotInFlight { id }));
        }
        self.link.queue(id, payload)?;
        self.mux.respond(id).map_err(Error::Mux)
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
                Err(Error::Closed) => return Ok(()),
                Err(error) => return Err(error),
            };
            let id = RequestId(header.request_id);
            let (payload, writer, queued) = self.link.payload_and_writer(&header);
            let mut responder = Responder {
                id,
                writer,
                queued,
                scratch: &mut self.scratch,
                answered: false,
            };
            handler(id, payload, &mut responder);
            if !responder.answered {
                responder.respond(&[])?;
            }
            self.mux.respond(id).map_err(Error::Mux)?;
        }
    }

    /// Requests received and not answered.
    pub fn in_flight(&self) -> usize {
        self.mux.in_flight()
    }

    /// The multiplexer's counters (answered, busy).
    pub fn stats(&self) -> mux::ServerStats {
        self.mux.stats()
    }

    /// Whether the connection's buffers are lent out while it idles (DESIGN rule 11).
    pub fn buffers_released(&self) -> bool {
        self.link.buffers_released()
    }

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// The next request the multiplexer accepts; busy refusals are queued on the way.
    async fn next_request(&mut self) -> Result<Header, Error> {
        loop {
            let header = match self.link.next(None).await {
                Ok(Incoming::Packet(header)) => header,
                Ok(Incoming::Deadline | Incoming::Pong) => continue,
                Ok(Incoming::Busy(_)) => return Err(self.close(Error::MalformedControl).await),
                Err(error) => {
                    if error.is_fatal() {
                        self.mux.reset();
                    }
                    return Err(error);
                }
            };
            let id = RequestId(header.request_id);
            match self.mux.on_request(id, header.payload_len as usize) {
                Ok(()) => return Ok(header),
                Err(mux::Error::Busy { .. }) => self.link.queue_control(Control::Busy(id.0))?,
                Err(error) => return Err(self.close(Error::Mux(error)).await),
            }
        }
    }

    /// A peer violation: close (completes in one poll, no cancellation point).
    async fn close(&mut self, error: Error) -> Error {
        self.mux.reset();
        let error = self.link.fail(error);
        self.link.start_shutdown().await;
        error
    }
}

/// Answers one request inside [`PacketConnection::serve`].
#[derive(Debug)]
pub struct Responder<'a> {
    id: RequestId,
    writer: &'a mut PacketWriter,
    queued: &'a mut WriteBuf,
    /// The connection's buffer for typed answers (features `serde-json`, `bincode`).
    #[cfg_attr(
        not(any(feature = "serde-json", feature = "bincode")),
        expect(dead_code, reason = "only the typed answers use it")
    )]
    pub(super) scratch: &'a mut Vec<u8>,
    answered: bool,
}

impl Responder<'_> {
    /// The request being answered.
    pub fn request_id(&self) -> RequestId {
        self.id
    }

    /// Queues `payload` as the answer (compressed as the packet configuration says). A
    /// second answer is [`Error::Mux`] ([`mux::Error::NotInFlight`]); a payload over the
    /// packet limit is [`Error::Encode`] and leaves the request unanswered.
    pub fn respond(&mut self, payload: &[u8]) -> Result<(), Error> {
        if self.answered {
            return Err(Error::Mux(mux::Error::NotInFlight { id: self.id }));
        }
        self.writer
            .encode(self.queued, self.id.0, payload)
            .map_err(Error::Encode)?;
        self.answered = true;
        Ok(())
    }
}
