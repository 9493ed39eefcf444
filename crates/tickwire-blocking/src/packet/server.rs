//! The accept side: [`PacketServer`] (options, TLS, a thread per connection) and
//! [`PacketConnection`], one accepted connection whose requests are counted against a
//! [`mux::Server`]'s caps and answered in any order.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::mux::{self, RequestId};
use tickwire_codec::packet::{Control, Header, PacketWriter};

#[cfg(feature = "tls")]
use tickwire_tls::TlsCodec;

use super::link::{Incoming, Link};
use super::{Error, PacketServerOptions, lock};
use crate::{MaybeTlsStream, Stream};

/// Options for the accept side. Defaults: [`PacketConfig::server`] (1 MiB packets),
/// [`ServerConfig::new`] (256 requests in flight per connection, 1 MiB requests),
/// TCP_NODELAY on, a 10 s TLS handshake timeout, no read timeout (an idle client that
/// keeps its connection open is served), no write timeout, no keepalive pings of its own
/// (clients' pings are answered), plain TCP.
///
/// [`PacketConfig::server`]: tickwire_codec::packet::PacketConfig::server
/// [`ServerConfig::new`]: tickwire_codec::mux::ServerConfig::new
#[derive(Debug, Clone, Default)]
pub struct PacketServer {
    /// What the tokio server builder has too, with its defaults.
    options: PacketServerOptions,
    write_timeout: Option<Duration>,
}

impl PacketServer {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    tickwire_core::__packet_server_builder_options!();
    super::write_timeout_setter!();

    /// Sets up an accepted connection: socket options, then the TLS handshake when
    /// configured (bounded by the handshake timeout).
    pub fn accept(&self, tcp: TcpStream) -> Result<PacketConnection, Error> {
        tcp.set_nodelay(self.options.nodelay)?;
        #[cfg(feature = "tls")]
        let stream = match &self.options.tls {
            Some(tls) => {
                let mut stream = crate::TlsStream::new(tcp, TlsCodec::server(tls)?);
                stream.handshake(std::time::Instant::now() + self.options.handshake_timeout)?;
                MaybeTlsStream::Tls(Box::new(stream))
            }
            None => MaybeTlsStream::Plain(tcp),
        };
        #[cfg(not(feature = "tls"))]
        let stream = MaybeTlsStream::Plain(tcp);
        self.connection_over(stream)
    }

    /// A connection over an already set-up stream (the write timeout is set here).
    pub fn connection_over<S: Stream>(&self, mut stream: S) -> Result<PacketConnection<S>, Error> {
        stream.set_write_timeout(self.write_timeout)?;
        let options = &self.options;
        Ok(PacketConnection {
            link: Link::new(
                stream,
                options.packet.clone(),
                options.keepalive,
                options.read_timeout,
                self.write_timeout,
            ),
            mux: mux::Server::new(options.mux),
            last: None,
            scratch: Vec::new(),
        })
    }

    /// Accepts connections on `listener` on a thread of its own and serves each on a thread
    /// of its own with a clone of `handler` ([`PacketConnection::serve`]). Returns at once;
    /// [`ServerHandle::shutdown`] stops accepting and closes every connection.
    pub fn spawn<H>(&self, listener: TcpListener, handler: H) -> Result<ServerHandle, Error>
    where
        H: FnMut(RequestId, &[u8], &mut Responder<'_>) + Clone + Send + 'static,
    {
        let addr = listener.local_addr()?;
        let stopping = Arc::new(AtomicBool::new(false));
        let sockets = Arc::new(Mutex::new(HashMap::new()));
        let server = self.clone();
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
    mux: mux::Server,
    last: Option<Header>,
    /// Where typed answers are serialized, reused and lent to each [`Responder`].
    scratch: Vec<u8>,
}

impl<S: Stream> PacketConnection<S> {
    /// Waits for the next request and returns its id and payload (borrowed until the next
    /// call). Writes queued answers before it blocks. A request past the in-flight cap is
    /// answered "busy" at once (a control packet, docs/PACKET.md "Transports") and not
    /// returned. [`Error::Closed`] when the client closed the connection.
    pub fn recv_request(&mut self) -> Result<(RequestId, &[u8]), Error> {
        let header = self.next_request()?;
        self.last = Some(header);
        Ok((RequestId(header.request_id), self.link.payload(&header)))
    }

    /// Queues `payload` as the answer to request `id`, which must be in flight
    /// ([`Error::Mux`] with [`mux::Error::NotInFlight`] otherwise, nothing queued). Written
    /// by [`flush`](Self::flush) or before the next wait for a request.
    pub fn respond(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        if !self.mux.is_in_flight(id) {
            return Err(Error::Mux(mux::Error::NotInFlight { id }));
        }
        self.link.queue(id, payload)?;
        self.mux.respond(id).map_err(Error::Mux)
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

    /// The stream underneath.
    pub fn stream(&self) -> &S {
        self.link.stream()
    }

    /// The next request the multiplexer accepts; busy refusals are queued on the way.
    fn next_request(&mut self) -> Result<Header, Error> {
        loop {
            let header = match self.link.next(None) {
                Ok(Incoming::Packet(header)) => header,
                Ok(Incoming::Deadline | Incoming::Pong) => continue,
                Ok(Incoming::Busy(_)) => return Err(self.close(Error::MalformedControl)),
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
                Err(error) => return Err(self.close(Error::Mux(error))),
            }
        }
    }

    fn close(&mut self, error: Error) -> Error {
        self.mux.reset();
        self.link.fail(error)
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
