//! The blocking server side: an accepted `TcpStream` to an open [`WebSocket`].
//!
//! A driver only: it bounds the handshake with its deadline (and runs the TLS handshake for
//! `accept_tls`), feeds [`ServerOpening`] what the socket returns, asks the caller's hook
//! to decide, and writes what it wrote. Every protocol decision (validation, statuses,
//! subprotocol and extension negotiation, the 101, what each outcome means) is the codec's
//! and tickwire-core's.

use std::net::TcpStream;
use std::time::Instant;

use tickwire_codec::handshake::{Request, Response};
use tickwire_codec::ws::Role;
#[cfg(feature = "tls")]
use tickwire_core::ws::AcceptTls;
use tickwire_core::ws::{Accept, AcceptOver, ServerOpening, ServerOptions};

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
    let mut opening = ServerOpening::new(&options.handshake);
    let request = loop {
        match opening.read_request() {
            Ok(Some(request)) => break request,
            Ok(None) => crate::stream::read_before(&mut stream, opening.received(), deadline)?,
            Err(error) => {
                // Best effort: the client may already be gone.
                let _ = crate::stream::write_before(&mut stream, opening.answer(), deadline);
                return Err(error);
            }
        }
    };
    let responded = opening.respond(decide(&request), Instant::now());
    let written = crate::stream::write_before(&mut stream, opening.answer(), deadline);
    let opened = opening.conclude(responded, written.map_err(Error::from))?;
    stream.set_write_timeout(options.write_timeout)?;
    stream.set_read_timeout(None)?;
    WebSocket::opened(stream, Some(opened), Role::Server, options.read_timeout)
}
