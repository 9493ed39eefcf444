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

use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{Header, ServerCore, ServerStep};
use tickwire_core::packet::{PacketLink, Responder, answer_with};

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

/// Sets up an accepted connection: socket options, then the TLS handshake when
/// configured (bounded by the handshake timeout).
pub(super) fn accept(server: &PacketServer, tcp: TcpStream) -> Result<PacketConnection, Error> {
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

/// A connection over an already set-up stream (the write timeout is set here).
pub(super) fn connection_over<S: Transport>(
    options: &PacketServerOptions,
    stream: S,
) -> Result<PacketConnection<S>, Error> {
    Ok(PacketConnection {
        link: Link::new(stream, &options.link)?,
        core: ServerCore::new(options.mux),
        scratch: Vec::new(),
    })
}

/// [`PacketServer::spawn`] on threads: one accepting, one per connection; shutdown wakes
/// the accept with a connection of its own and shuts each open socket down.
pub(super) fn spawn<H>(
    server: &PacketServer,
    listener: TcpListener,
    handler: H,
) -> Result<ServerHandle, Error>
where
    H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static,
{
    let addr = listener.local_addr()?;
    let stopping = Arc::new(AtomicBool::new(false));
    let sockets = Arc::new(Mutex::new(HashMap::new()));
    let server = server.clone();
    let (stop, open) = (Arc::clone(&stopping), Arc::clone(&sockets));
    let thread = thread::spawn(move || {
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
            let (server, mut handler, open) = (server.clone(), handler.clone(), Arc::clone(&open));
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
    /// call). Writes queued answers before it blocks. A request past the in-flight cap is
    /// answered "busy" at once (a control packet, docs/PACKET.md "Transports") and not
    /// returned. [`Error::Closed`] when the client closed the connection.
    pub fn recv_request(&mut self) -> Result<(RequestId, &[u8]), Error> {
        let header = self.next_request()?;
        Ok((
            RequestId(header.request_id),
            self.link.session().payload(&header),
        ))
    }

    /// Queues `payload` as the answer to request `id`, which must be in flight
    /// ([`Error::Mux`] with [`mux::Error::NotInFlight`] otherwise, nothing queued). Written
    /// by [`flush`](Self::flush) or before the next wait for a request.
    pub fn respond(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.core.check_answer(id).map_err(Error::Mux)?;
        self.link.queue(id, payload)?;
        self.core.answered(id).map_err(Error::Mux)
    }

    /// Writes every queued answer, blocking (bounded by the write timeout) and reading
    /// nothing meanwhile; waiting for the next request writes what is queued while it reads.
    pub fn flush(&mut self) -> Result<(), Error> {
        self.link.flush()
    }

    /// Answers every request with `handler` until the client closes (then `Ok`) or the
    /// connection fails. The handler answers through the [`Responder`]; a request it did
    /// not answer gets an empty payload, so none stays in flight. Answers are written when
    /// the connection next waits for a request, so requests that arrived together are
    /// answered in one write.
    pub fn serve<H>(&mut self, mut handler: H) -> Result<(), Error>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>),
    {
        loop {
            let header = match self.next_request() {
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

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// The next request the core accepts; busy refusals are queued on the way.
    fn next_request(&mut self) -> Result<Header, Error> {
        loop {
            let incoming = (self.link.next(None)).map_err(|e| e.lost_on(&mut self.core))?;
            match self.core.handle(incoming) {
                Ok(ServerStep::Request(header)) => return Ok(header),
                Ok(ServerStep::Reply(control)) => self.link.queue_control(control)?,
                Ok(ServerStep::Wait) => {}
                Err(failure) => return Err(self.link.fail(failure.into())),
            }
        }
    }
}
