//! The blocking server side: an accepted `TcpStream` to an open [`WebSocket`].
//!
//! A driver only: it bounds the handshake with its deadline (and runs the TLS handshake for
//! `accept_tls`), feeds [`ServerHandshake`] what the socket returns, asks the caller's hook
//! to decide, and writes what the codec wrote. Every protocol decision (validation, statuses,
//! subprotocol and extension negotiation, the 101) is the codec's.

use std::net::TcpStream;
use std::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{Outcome, Parsed, Request, Response, ServerHandshake};
use tickwire_codec::ws::{Buffers, Role};
#[cfg(feature = "tls")]
use tickwire_core::ws::AcceptTls;
use tickwire_core::ws::{Accept, AcceptOver, ServerOptions};

#[cfg(feature = "tls")]
use tickwire_tls::{ServerTlsConfig, TlsCodec};

#[cfg(feature = "tls")]
use crate::TlsStream;
use crate::{Blocking, Error, Transport, WebSocket};

/// Performs the server handshake on an accepted stream with the default [`ServerBuilder`],
/// accepting any valid upgrade request.
pub fn accept(stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
    ServerBuilder::new().accept(stream)
}

/// Options for the server side, then `accept` for each accepted stream: the builder every
/// transport shares, on this crate's [`Blocking`] transport. Defaults: those of
/// [`ServerOptions`].
pub type ServerBuilder = tickwire_core::ws::ServerBuilder<Blocking>;

impl<F: FnOnce(&Request) -> Response> Accept<TcpStream, F> for Blocking {
    type Output<'a>
        = Result<WebSocket<TcpStream>, Error>
    where
        Self: 'a,
        F: 'a;

    fn accept_with<'a>(options: &'a ServerOptions, stream: TcpStream, decide: F) -> Self::Output<'a>
    where
        F: 'a,
    {
        stream.set_nodelay(options.nodelay)?;
        let deadline = Instant::now() + options.handshake_timeout;
        upgrade(options, stream, deadline, decide)
    }
}

impl<S: Transport, F: FnOnce(&Request) -> Response> AcceptOver<S, F> for Blocking {
    type Output<'a>
        = Result<WebSocket<S>, Error>
    where
        Self: 'a,
        S: 'a,
        F: 'a;

    fn handshake<'a>(options: &'a ServerOptions, stream: S, decide: F) -> Self::Output<'a>
    where
        S: 'a,
        F: 'a,
    {
        let deadline = Instant::now() + options.handshake_timeout;
        upgrade(options, stream, deadline, decide)
    }
}

#[cfg(feature = "tls")]
impl<F: FnOnce(&Request) -> Response> AcceptTls<TcpStream, F> for Blocking {
    type Output<'a>
        = Result<WebSocket<TlsStream<TcpStream>>, Error>
    where
        Self: 'a,
        F: 'a;

    fn accept_tls_with<'a>(
        options: &'a ServerOptions,
        stream: TcpStream,
        tls: &'a ServerTlsConfig,
        decide: F,
    ) -> Self::Output<'a>
    where
        F: 'a,
    {
        stream.set_nodelay(options.nodelay)?;
        let deadline = Instant::now() + options.handshake_timeout;
        let mut stream = TlsStream::new(stream, TlsCodec::server(tls)?);
        stream.handshake(deadline)?;
        upgrade(options, stream, deadline, decide)
    }
}

/// The upgrade over any stream whose transport handshake (if any) is done.
fn upgrade<S: Transport>(
    options: &ServerOptions,
    mut stream: S,
    deadline: Instant,
    decide: impl FnOnce(&Request) -> Response,
) -> Result<WebSocket<S>, Error> {
    let mut handshake = ServerHandshake::new(&options.handshake);
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
    stream.set_write_timeout(options.write_timeout)?;
    stream.set_read_timeout(None)?;
    // The 101 is out: only now do the bytes that followed the request become frames.
    let conn = upgraded.connection;
    let bufs = Buffers::with_read(received, conn.config());
    let ws = WebSocket::from_parts(stream, conn, bufs, Role::Server, options.read_timeout)
        .with_subprotocol(upgraded.subprotocol);
    #[cfg(feature = "deflate")]
    let ws = ws.with_deflate(upgraded.deflate);
    Ok(ws)
}
