//! The accept side: [`PacketServer`] (the shared builder; here TLS and a thread per
//! connection) and [`PacketConnection`], one accepted connection answered in any order. The
//! blocking socket work around the codec's [`ServerCore`], which decides which arrival is a
//! request, which is refused busy and which closes the connection; answers go through the
//! shared [`Responder`].

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;
use tickwire_core::packet::Handler;

use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{Header, ServerCore, ServerStep};
use tickwire_core::packet::{PacketLink, PacketServe, Responder, ServerIo, Spawn, answer_with};

#[cfg(feature = "tls")]
use tickwire_tls::TlsCodec;

use super::link::Link;
use super::{Blocking, Error, PacketServerOptions, lock};
use crate::{MaybeTlsStream, Transport};

/// Options for the accept side, and what accepts and serves connections: the shared
/// builder on the blocking transport. Defaults: [`PacketConfig::server`] (1 MiB packets),
/// [`ServerConfig::new`] (256 requests in flight per connection, 1 MiB requests),
/// TCP_NODELAY on, a 10 s TLS handshake timeout, no read timeout (an idle client that
/// keeps its connection open is served), no write timeout, no keepalive pings of its own
/// (clients' pings are answered), plain TCP.
///
/// [`PacketConfig::server`]: tickwire_codec::packet::PacketConfig::server
/// [`ServerConfig::new`]: tickwire_codec::mux::ServerConfig::new
pub type PacketServer = tickwire_core::packet::PacketServer<Blocking>;

/// The blocking server side: an accepted `std` socket set up on the calling thread, a
/// listener served on threads.
impl PacketServe for Blocking {
    type Socket = TcpStream;
    type Accept<'a> = Result<PacketConnection, Error>;
    type Listener = TcpListener;
    type Handle = ServerHandle;

    /// Sets up an accepted connection: socket options, then the TLS handshake when
    /// configured (bounded by the handshake timeout).
    fn accept(server: &PacketServer, tcp: TcpStream) -> Self::Accept<'_> {
        let options = server.options();
        tcp.set_nodelay(options.link.nodelay)?;
        #[cfg(feature = "tls")]
        let stream = match &options.tls {
            Some(tls) => {
                let mut stream = crate::TlsStream::new(tcp, TlsCodec::server(tls)?);
                stream.handshake(std::time::Instant::now() + options.handshake_timeout)?;
                MaybeTlsStream::tls_over(stream)
            }
            None => MaybeTlsStream::plain(tcp),
        };
        #[cfg(not(feature = "tls"))]
        let stream = MaybeTlsStream::plain(tcp);
        connection_over(options, stream)
    }

    /// [`PacketServer::spawn`] on threads: one accepting, one per connection; shutdown wakes
    /// the accept with a connection of its own and shuts each open socket down.
    fn spawn<H: Handler>(spawn: Spawn<Self, H>) -> Result<ServerHandle, Error> {
        let addr = spawn.listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let sockets = Arc::new(Mutex::new(HashMap::new()));
        let (stop, open) = (Arc::clone(&stopping), Arc::clone(&sockets));
        let thread = thread::spawn(move || {
            let Spawn {
                server,
                listener,
                handler,
                ..
            } = spawn;
            for (key, tcp) in (0u64..).zip(listener.incoming()) {
                if stop.load(Ordering::Acquire) {
                    break;
                }
                let Ok(tcp) = tcp else { continue };
                // A second handle on the socket, for shutdown: removed (and closed) when
                // the connection ends, so a finished connection holds no descriptor.
                if let Ok(clone) = tcp.try_clone() {
                    lock(&open).insert(key, clone);
                }
                let (server, mut handler, open) =
                    (server.clone(), handler.clone(), Arc::clone(&open));
                thread::spawn(move || {
                    if let Ok(mut connection) = server.accept(tcp) {
                        let _ = connection.serve(&mut handler);
                    }
                    lock(&open).remove(&key);
                });
            }
        });
        Ok(ServerHandle {
            addr,
            stopping,
            sockets,
            thread: Some(thread),
        })
    }
}

/// A connection over an already set-up stream (the write timeout is set here).
pub(super) fn connection_over<S: Transport>(
    options: &PacketServerOptions,
    stream: S,
) -> Result<PacketConnection<S>, Error> {
    Ok(PacketConnection::from_parts(
        Link::new(stream, &options.link)?,
        ServerCore::new(options.mux),
    ))
}

/// A server started by [`PacketServer::spawn`].
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    /// The open connections' sockets, by accept order.
    sockets: Arc<Mutex<HashMap<u64, TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, closes the listener and shuts every connection down (their
    /// clients see the connection end; requests in flight there are never answered).
    /// Returns once the listener is closed, so the port can be bound again.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        self.stopping.store(true, Ordering::Release);
        // Wake the blocking accept; it sees the flag and drops the listener.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = thread.join();
        let sockets = std::mem::take(&mut *lock(&self.sockets));
        for socket in sockets.into_values() {
            let _ = socket.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One accepted packet connection: requests in, answers out in any order.
/// tickwire-core's connection over this transport's [`Link`]; its methods are documented
/// there.
pub type PacketConnection<S = MaybeTlsStream> = tickwire_core::packet::PacketConnection<Link<S>>;

impl<S: Transport> ServerIo for Link<S> {
    type Request<'c>
        = Result<(RequestId, &'c [u8]), Error>
    where
        S: 'c;
    type Flush<'c>
        = Result<(), Error>
    where
        S: 'c;
    type Serve<'c, H>
        = Result<(), Error>
    where
        S: 'c,
        H: 'c;

    /// Writes queued answers before it blocks.
    fn recv_request<'c>(
        &'c mut self,
        core: &'c mut ServerCore,
    ) -> Result<(RequestId, &'c [u8]), Error> {
        let header = self.next_request(core)?;
        let link: &'c Self = self;
        Ok((
            RequestId(header.request_id),
            link.session().payload(&header),
        ))
    }

    /// Blocking (bounded by the write timeout) and reading nothing meanwhile; waiting for
    /// the next request writes what is queued while it reads.
    fn flush_answers(&mut self) -> Result<(), Error> {
        Link::flush(self)
    }

    fn serve<'c, H>(
        &'c mut self,
        core: &'c mut ServerCore,
        scratch: &'c mut Vec<u8>,
        mut handler: H,
    ) -> Result<(), Error>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + 'c,
    {
        loop {
            let header = match self.next_request(core) {
                Ok(header) => header,
                Err(error) => return error.end_of_serve(),
            };
            let (id, parts) = (
                RequestId(header.request_id),
                self.payload_and_writer(&header),
            );
            answer_with(core, id, parts, scratch, &mut handler)?;
        }
    }
}

impl<S: Transport> Link<S> {
    /// The next request `core` accepts; busy refusals are queued on the way.
    fn next_request(&mut self, core: &mut ServerCore) -> Result<Header, Error> {
        loop {
            let incoming = (self.next(None)).map_err(|e| e.lost_on(core))?;
            match core.handle(incoming) {
                Ok(ServerStep::Request(header)) => return Ok(header),
                Ok(ServerStep::Reply(control)) => self.queue_control(control)?,
                Ok(ServerStep::Wait) => {}
                Err(failure) => return Err(self.fail(failure.into())),
            }
        }
    }
}
