//! The blocking server side: an accepted `TcpStream` to an open [`WebSocket`].

use std::net::TcpStream;
use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateConfig;
#[cfg(feature = "deflate")]
use tickwire_codec::handshake::HandshakeError;
use tickwire_codec::handshake::{Request, Response, ServerLimits};
use tickwire_codec::ws::{Config, Connection, Limits, MaskSource, Role};

#[cfg(feature = "tls")]
use tickwire_tls::{ServerTlsConfig, TlsCodec};

#[cfg(feature = "tls")]
use crate::TlsStream;
use crate::{Error, Stream, WebSocket};

/// Performs the server handshake on an accepted stream with the default [`ServerBuilder`],
/// accepting any valid upgrade request.
pub fn accept(stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
    ServerBuilder::new().accept(stream)
}

/// Options for the server side. Defaults: [`Config::server`] (1 MiB frames and messages),
/// 8 KiB request head and 32 headers at most, TCP_NODELAY on, a 10 s handshake timeout, no
/// read or write timeout.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    config: Config,
    head_limits: ServerLimits,
    nodelay: bool,
    handshake_timeout: Duration,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    #[cfg(feature = "deflate")]
    deflate: Option<DeflateConfig>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerBuilder {
    /// The defaults above.
    pub fn new() -> Self {
        Self {
            config: Config::server(),
            head_limits: ServerLimits::default(),
            nodelay: true,
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            write_timeout: None,
            #[cfg(feature = "deflate")]
            deflate: None,
        }
    }

    /// Replaces the whole connection configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// Sets the receive limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.config.limits = limits;
        self
    }

    /// Limits on the upgrade request head.
    pub fn head_limits(mut self, limits: ServerLimits) -> Self {
        self.head_limits = limits;
        self
    }

    /// Sets the initial read and write buffer sizes.
    pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
        self.config.read_buffer_size = read;
        self.config.write_buffer_size = write;
        self
    }

    /// Fails connections that send nothing for `timeout`.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.idle_timeout = timeout;
        self
    }

    /// TCP_NODELAY (default on).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.nodelay = nodelay;
        self
    }

    /// Timeout for reading the upgrade request and writing the response.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Read timeout after the handshake (see [`crate::ClientBuilder::read_timeout`]).
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Write timeout for the socket.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Accepts permessage-deflate (RFC 7692) with `config`: the first valid offer is
    /// answered; invalid offers (duplicate, unknown or out-of-range parameters) are declined,
    /// and a request whose every permessage-deflate offer is invalid gets 400. The message
    /// size limit applies to inflated bytes. Needs the `deflate` feature; without it an offer
    /// is ignored (the 101 names no extension, as RFC 7692 §5 allows).
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, config: DeflateConfig) -> Self {
        self.deflate = Some(config);
        self
    }

    /// Accepts any valid upgrade request.
    pub fn accept(&self, stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
        self.accept_with(stream, Response::accept)
    }

    /// Reads and validates the upgrade request, then asks `decide` for the response: return
    /// `Response::accept(request)` (optionally with `.subprotocol(..)` and headers) to
    /// upgrade, or `Response::reject(status)` to refuse with that status. A malformed request is
    /// answered with its 4xx status without calling `decide`.
    ///
    /// Bytes the client sent after the request head are kept and parsed as frames only after
    /// the 101 has been written.
    pub fn accept_with(
        &self,
        stream: TcpStream,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<TcpStream>, Error> {
        stream.set_nodelay(self.nodelay)?;
        let deadline = Instant::now() + self.handshake_timeout;
        self.upgrade(stream, deadline, decide)
    }

    /// Performs the TLS handshake with `tls`, then accepts any valid upgrade request. The
    /// handshake timeout bounds both handshakes. A client that fails the TLS handshake gets
    /// the alert rustls chose; a client that sent plaintext gets an HTTP 400.
    #[cfg(feature = "tls")]
    pub fn accept_tls(
        &self,
        stream: TcpStream,
        tls: &ServerTlsConfig,
    ) -> Result<WebSocket<TlsStream<TcpStream>>, Error> {
        self.accept_tls_with(stream, tls, Response::accept)
    }

    /// [`accept_tls`](Self::accept_tls) with an accept hook, as in
    /// [`accept_with`](Self::accept_with).
    #[cfg(feature = "tls")]
    pub fn accept_tls_with(
        &self,
        stream: TcpStream,
        tls: &ServerTlsConfig,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<TlsStream<TcpStream>>, Error> {
        stream.set_nodelay(self.nodelay)?;
        let deadline = Instant::now() + self.handshake_timeout;
        let mut stream = TlsStream::new(stream, TlsCodec::server(tls)?);
        stream.handshake(deadline)?;
        self.upgrade(stream, deadline, decide)
    }

    /// The upgrade over any stream whose transport handshake (if any) is done.
    fn upgrade<S: Stream>(
        &self,
        mut stream: S,
        deadline: Instant,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<S>, Error> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::HandshakeTimeout);
        }
        stream.set_write_timeout(Some(left))?;
        let (request, consumed, received) =
            match crate::head::read_head(&mut stream, deadline, |bytes| {
                Request::parse(bytes, &self.head_limits)
            }) {
                Ok(parsed) => parsed,
                Err(Error::Handshake(error)) => {
                    if let Some(response) = error.response() {
                        let _ = stream.write_all(&response);
                    }
                    return Err(Error::Handshake(error));
                }
                Err(other) => return Err(other),
            };
        #[cfg(feature = "deflate")]
        let negotiated = match &self.deflate {
            Some(config) => match config.accept(request.extensions()) {
                Ok(negotiated) => negotiated,
                Err(error) => {
                    let error = HandshakeError::BadExtensionOffer(error.to_string());
                    if let Some(response) = error.response() {
                        let _ = stream.write_all(&response);
                    }
                    return Err(Error::Handshake(error));
                }
            },
            None => None,
        };
        let response = decide(&request);
        let accepted = response.status() == 101;
        #[cfg(feature = "deflate")]
        let response = match (accepted, &negotiated) {
            (true, Some((_, answer))) => response.extensions(answer),
            _ => response,
        };
        let mut head = Vec::with_capacity(256);
        if let Err(error) = response.write_to(&mut head) {
            let internal = Response::reject(500);
            head.clear();
            let _ = internal.write_to(&mut head);
            let _ = stream.write_all(&head);
            return Err(Error::Handshake(error));
        }
        stream.write_all(&head)?;
        if !accepted {
            return Err(Error::Rejected(response.status()));
        }
        stream.set_write_timeout(self.write_timeout)?;
        stream.set_read_timeout(None)?;
        let now = Instant::now();
        // Servers never mask; the source is never asked for a key.
        let mut conn = Connection::new(
            Role::Server,
            self.config.clone(),
            MaskSource::seeded(0),
            now,
        );
        conn.feed(&received[consumed..], now);
        let subprotocol = response.selected_subprotocol().map(str::to_owned);
        let ws = WebSocket::from_parts(stream, conn, Role::Server, self.read_timeout)
            .with_subprotocol(subprotocol);
        #[cfg(feature = "deflate")]
        let ws = {
            let deflate = negotiated.zip(self.deflate.as_ref());
            ws.with_deflate(deflate.map(|((params, _), config)| (params, config)))
        };
        Ok(ws)
    }
}
