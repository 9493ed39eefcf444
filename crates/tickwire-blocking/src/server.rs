//! The blocking server side: an accepted `TcpStream` to an open [`WebSocket`].
//!
//! A driver only: it bounds the handshake with its deadline (and runs the TLS handshake for
//! `accept_tls`), feeds [`ServerHandshake`] what the socket returns, asks the caller's hook
//! to decide, and writes what the codec wrote. Every protocol decision (validation, statuses,
//! subprotocol and extension negotiation, the 101) is the codec's.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{
    Outcome, Parsed, Request, Response, ServerHandshake, ServerOptions,
};
use tickwire_codec::ws::{Buffers, Role};

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

/// Options for the server side. Defaults: [`Config::server`](tickwire_codec::ws::Config::server) (1 MiB frames and messages),
/// 8 KiB request head and 32 headers at most, TCP_NODELAY on, a 10 s handshake timeout, no
/// read or write timeout.
#[derive(Debug, Clone)]
pub struct ServerBuilder {
    options: ServerOptions,
    nodelay: bool,
    handshake_timeout: Duration,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
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
            options: ServerOptions::default(),
            nodelay: true,
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            write_timeout: None,
        }
    }

    tickwire_core::__server_builder_options!();

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
        let mut handshake = ServerHandshake::new(&self.options);
        let mut received = ReadBuf::with_capacity(4 << 10);
        let mut answer = WriteBuf::new(512, 0);
        let request = loop {
            match handshake.read_request(&mut received, &mut answer) {
                Ok(Parsed::Complete(request)) => break request,
                Ok(Parsed::NeedMore) => {
                    crate::stream::read_before(&mut stream, &mut received, deadline)?;
                }
                Err(error) => {
                    // Best effort: the client may already be gone.
                    let _ = crate::stream::write_before(&mut stream, answer.as_slice(), deadline);
                    return Err(Error::Handshake(error));
                }
            }
        };
        let outcome = handshake.respond(decide(&request), &mut answer, Instant::now());
        let written = crate::stream::write_before(&mut stream, answer.as_slice(), deadline);
        let upgraded = match outcome {
            Ok(Outcome::Upgraded(upgraded)) => upgraded,
            Ok(Outcome::Rejected(status)) => {
                written?;
                return Err(Error::Rejected(status));
            }
            Err(error) => return Err(Error::Handshake(error)),
        };
        written?;
        stream.set_write_timeout(self.write_timeout)?;
        stream.set_read_timeout(None)?;
        // The 101 is out: only now do the bytes that followed the request become frames.
        let conn = upgraded.connection;
        let bufs = Buffers::with_read(received, conn.config());
        let ws = WebSocket::from_parts(stream, conn, bufs, Role::Server, self.read_timeout)
            .with_subprotocol(upgraded.subprotocol);
        #[cfg(feature = "deflate")]
        let ws = ws.with_deflate(upgraded.deflate);
        Ok(ws)
    }
}
