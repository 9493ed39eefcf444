//! The accept side on tokio: [`PacketServer`] (the shared builder; here TLS and a task per
//! connection) and [`PacketConnection`], one accepted connection answered in any order. The
//! async socket work around the codec's [`ServerCore`], which decides which arrival is a
//! request, which is refused busy and which closes the connection; answers go through the
//! shared [`Responder`]. The same shape as the blocking `tickwire_blocking::packet` server.

use std::net::SocketAddr;
use std::time::Duration;
use tickwire_core::packet::Handler;

use tokio::net::{TcpListener, TcpStream};
use tokio::task::{JoinHandle, JoinSet};

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{Header, ServerCore, ServerStep};
use tickwire_core::packet::{
    PacketLink, PacketServe, PacketServerOptions, Responder, ServerIo, Spawn, answer_with,
};

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
async fn accept(options: &PacketServerOptions, tcp: TcpStream) -> Result<PacketConnection, Error> {
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
    PacketConnection::from_parts(
        Link::new(stream, &options.link),
        ServerCore::new(options.mux),
    )
}

/// The tokio server side: an accepted socket set up by a future, a listener served on tasks.
impl PacketServe for Tokio {
    type Socket = TcpStream;
    type Accept<'a> = super::Connecting<'a, PacketConnection>;
    type Listener = TcpListener;
    type Handle = ServerHandle;

    fn accept(server: &PacketServer, tcp: TcpStream) -> Self::Accept<'_> {
        Box::pin(accept(server.options(), tcp))
    }

    /// [`PacketServer::spawn`] on tasks (needs a tokio runtime): one accepting, one per
    /// connection, in a set that aborting the accept task (shutdown, or dropping the handle)
    /// aborts with it.
    fn spawn<H: Handler>(spawn: Spawn<Self, H>) -> Result<ServerHandle, Error> {
        let addr = spawn.listener.local_addr()?;
        let Spawn {
            server,
            listener,
            handler,
            ..
        } = spawn;
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
                let (server, mut handler) = (server.clone(), handler.clone());
                connections.spawn(async move {
                    if let Ok(mut connection) = server.accept(tcp).await {
                        // Served by reference: `&mut H` is `Unpin` whatever `H` is.
                        let _ = connection.serve(&mut handler).await;
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
/// tickwire-core's connection over this transport's [`Link`]; its methods are documented
/// there, their cancel safety in the module docs. Its waits are named futures
/// ([`RecvRequestFuture`], [`AnswersFlushFuture`], [`ServeFuture`]), `Send` when the stream
/// (and the handler) are.
pub type PacketConnection<S = MaybeTlsStream> = tickwire_core::packet::PacketConnection<Link<S>>;

impl<S: Transport> ServerIo for Link<S> {
    type Request<'c>
        = RecvRequestFuture<'c, S>
    where
        S: 'c;
    type Flush<'c>
        = AnswersFlushFuture<'c, S>
    where
        S: 'c;
    type Serve<'c, H>
        = ServeFuture<'c, S, H>
    where
        S: 'c,
        H: 'c;

    fn recv_request<'c>(&'c mut self, core: &'c mut ServerCore) -> RecvRequestFuture<'c, S> {
        RecvRequestFuture {
            wait: Some(ServerWait::new(self, core)),
        }
    }

    fn flush_answers(&mut self) -> AnswersFlushFuture<'_, S> {
        AnswersFlushFuture { link: self }
    }

    fn serve<'c, H>(
        &'c mut self,
        core: &'c mut ServerCore,
        scratch: &'c mut Vec<u8>,
        handler: H,
    ) -> ServeFuture<'c, S, H>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + 'c,
    {
        ServeFuture {
            wait: ServerWait::new(self, core),
            scratch,
            handler,
        }
    }
}

/// A wait for requests on a connection's link: the link, the core, and whether a wait for
/// the next packet is under way (its read timeout started).
#[derive(Debug)]
struct ServerWait<'c, S> {
    link: &'c mut Link<S>,
    core: &'c mut ServerCore,
    waiting: bool,
}

impl<'c, S: Transport> ServerWait<'c, S> {
    fn new(link: &'c mut Link<S>, core: &'c mut ServerCore) -> Self {
        Self {
            link,
            core,
            waiting: false,
        }
    }

    /// The next request the core accepts; busy refusals are queued on the way. A peer
    /// violation closes the connection (its write side shut in this poll).
    fn poll_request(&mut self, cx: &mut Context<'_>) -> Poll<Result<Header, Error>> {
        loop {
            if !self.waiting {
                self.link.wait_started();
                self.waiting = true;
            }
            let incoming = std::task::ready!(self.link.poll_incoming(cx, None));
            self.waiting = false;
            let incoming = match incoming {
                Ok(incoming) => incoming,
                Err(error) => return Poll::Ready(Err(error.lost_on(self.core))),
            };
            match self.core.handle(incoming) {
                Ok(ServerStep::Request(header)) => return Poll::Ready(Ok(header)),
                Ok(ServerStep::Reply(control)) => {
                    if let Err(error) = self.link.queue_control(control) {
                        return Poll::Ready(Err(error));
                    }
                }
                Ok(ServerStep::Wait) => {}
                Err(failure) => {
                    return Poll::Ready(Err(self.link.fail_and_shut(cx, failure.into())));
                }
            }
        }
    }
}

/// The future of [`PacketConnection::recv_request`]: the next request's id and payload.
#[must_use = "a request is awaited only when its future is"]
#[derive(Debug)]
pub struct RecvRequestFuture<'c, S> {
    /// `None` once completed.
    wait: Option<ServerWait<'c, S>>,
}

impl<'c, S: Transport> Future for RecvRequestFuture<'c, S> {
    type Output = Result<(RequestId, &'c [u8]), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(mut wait) = self.wait.take() else {
            return Poll::Ready(Err(Error::Closed));
        };
        match wait.poll_request(cx) {
            Poll::Pending => {
                self.wait = Some(wait);
                Poll::Pending
            }
            Poll::Ready(result) => Poll::Ready(result.map(|header| {
                let link: &'c Link<S> = wait.link;
                (
                    RequestId(header.request_id),
                    link.session().payload(&header),
                )
            })),
        }
    }
}

/// The future of [`PacketConnection::flush`].
#[must_use = "queued answers are written only when the future is awaited"]
#[derive(Debug)]
pub struct AnswersFlushFuture<'c, S> {
    link: &'c mut Link<S>,
}

impl<S: Transport> Future for AnswersFlushFuture<'_, S> {
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.link.poll_flush_timed(cx)
    }
}

/// The future of [`PacketConnection::serve`]: `Ok` when the client closed. An answer is
/// queued in the poll that took its request. A future only when the handler is `Unpin`
/// (every closure that holds no pinned value; serve a `!Unpin` handler by `&mut`).
#[must_use = "requests are served only when the future is awaited"]
pub struct ServeFuture<'c, S, H> {
    wait: ServerWait<'c, S>,
    scratch: &'c mut Vec<u8>,
    handler: H,
}

impl<S: std::fmt::Debug, H> std::fmt::Debug for ServeFuture<'_, S, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServeFuture")
            .field("wait", &self.wait)
            .finish_non_exhaustive()
    }
}

impl<S: Transport, H> Future for ServeFuture<'_, S, H>
where
    H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Unpin,
{
    type Output = Result<(), Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            let header = match std::task::ready!(this.wait.poll_request(cx)) {
                Ok(header) => header,
                Err(error) => return Poll::Ready(error.end_of_serve()),
            };
            let (id, parts) = (
                RequestId(header.request_id),
                this.wait.link.payload_and_writer(&header),
            );
            let answered = answer_with(this.wait.core, id, parts, this.scratch, &mut this.handler);
            if let Err(error) = answered {
                return Poll::Ready(Err(error));
            }
        }
    }
}
