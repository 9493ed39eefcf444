//! The async server side: an accepted tokio `TcpStream` to an open [`WebSocket`], TLS
//! included.
//!
//! A driver only, as the blocking server: it bounds the handshake with its deadline (and runs
//! the TLS handshake for `accept_tls`), feeds [`ServerHandshake`] what the socket returns, asks
//! the caller's hook to decide, and writes what the codec wrote. Every protocol decision is
//! the codec's.

use std::time::Duration;

use tokio::net::TcpStream;
use tokio::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{
    Outcome, Parsed, Request, Response, ServerHandshake, ServerOptions,
};
use tickwire_codec::ws::{Buffers, Role};
#[cfg(feature = "tls")]
use tickwire_tls::ServerTlsConfig;

#[cfg(feature = "tls")]
use crate::MaybeTlsStream;
use crate::core::now;
use crate::{Error, Transport, WebSocket};

/// Performs the server handshake on an accepted stream with the default [`ServerBuilder`],
/// accepting any valid upgrade request.
pub async fn accept(stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
    ServerBuilder::new().accept(stream).await
}

/// Options for the server side, those of the blocking `tickwire_blocking::ServerBuilder`. Defaults:
/// [`Config::server`](tickwire_codec::ws::Config::server) (1 MiB frames and messages), 8 KiB request head and 32 headers at most,
/// TCP_NODELAY on, a 10 s handshake timeout, no read or write timeout.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    pub async fn accept(&self, stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
        self.accept_with(stream, Response::accept).await
    }

    /// Reads and validates the upgrade request, then asks `decide` for the response
    /// (`Response::accept(request)` or `Response::reject(status)`). A malformed request is
    /// answered with its 4xx status without calling `decide`. Bytes after the request head
    /// become frames only after the 101 is written.
    pub async fn accept_with(
        &self,
        stream: TcpStream,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<TcpStream>, Error> {
        stream.set_nodelay(self.nodelay)?;
        self.handshake(stream, decide).await
    }

    /// Performs the TLS handshake with `tls` (through [`tickwire_tls::TlsCodec`]), then
    /// accepts any valid upgrade request; the handshake timeout bounds both. A plaintext
    /// client gets an HTTP 400.
    #[cfg(feature = "tls")]
    pub async fn accept_tls(
        &self,
        stream: TcpStream,
        tls: &ServerTlsConfig,
    ) -> Result<WebSocket<MaybeTlsStream>, Error> {
        self.accept_tls_with(stream, tls, Response::accept).await
    }

    /// [`accept_tls`](Self::accept_tls) with an accept hook, as in
    /// [`accept_with`](Self::accept_with).
    #[cfg(feature = "tls")]
    pub async fn accept_tls_with(
        &self,
        stream: TcpStream,
        tls: &ServerTlsConfig,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<MaybeTlsStream>, Error> {
        stream.set_nodelay(self.nodelay)?;
        let deadline = Instant::now() + self.handshake_timeout;
        let stream = crate::net::tls_accept(stream, tls, deadline).await?;
        self.upgrade(MaybeTlsStream(stream), deadline, decide).await
    }

    /// The upgrade over any stream whose transport handshake (if any) is done, within the
    /// handshake timeout. Socket options are the caller's.
    pub async fn handshake<S: Transport>(
        &self,
        stream: S,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<S>, Error> {
        let deadline = Instant::now() + self.handshake_timeout;
        self.upgrade(stream, deadline, decide).await
    }

    async fn upgrade<S: Transport>(
        &self,
        mut stream: S,
        deadline: Instant,
        decide: impl FnOnce(&Request) -> Response,
    ) -> Result<WebSocket<S>, Error> {
        let mut handshake = ServerHandshake::new(&self.options);
        let mut received = ReadBuf::with_capacity(4 << 10);
        let mut answer = WriteBuf::new(512, 0);
        let exchange = async {
            let request = loop {
                match handshake.read_request(&mut received, &mut answer) {
                    Ok(Parsed::Complete(request)) => break request,
                    Ok(Parsed::NeedMore) => {
                        crate::handshake::read_some(&mut stream, &mut received).await?;
                    }
                    Err(error) => {
                        // Best effort: the client may already be gone.
                        let _ = crate::handshake::write_all(&mut stream, answer.as_slice()).await;
                        return Err(Error::Handshake(error));
                    }
                }
            };
            let outcome = handshake.respond(decide(&request), &mut answer, now());
            let written = crate::handshake::write_all(&mut stream, answer.as_slice()).await;
            let upgraded = match outcome {
                Ok(Outcome::Upgraded(upgraded)) => upgraded,
                Ok(Outcome::Rejected(status)) => {
                    written?;
                    return Err(Error::Rejected(status));
                }
                Err(error) => return Err(Error::Handshake(error)),
            };
            written?;
            Ok(upgraded)
        };
        let upgraded = tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| Error::HandshakeTimeout)??;
        // The 101 is out: only now do the bytes that followed the request become frames.
        let conn = upgraded.connection;
        let bufs = Buffers::with_read(received, conn.config());
        let ws = WebSocket::from_parts(stream, conn, bufs, Role::Server).with_handshake(
            upgraded.subprotocol,
            self.read_timeout,
            self.write_timeout,
        );
        #[cfg(feature = "deflate")]
        let ws = ws.with_deflate(upgraded.deflate);
        Ok(ws)
    }
}
