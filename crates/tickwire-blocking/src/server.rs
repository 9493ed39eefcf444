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
use tickwire_core::ws::{Accept, AcceptOver, ServerOpening, Upgrade};
#[cfg(feature = "tls")]
use tickwire_core::ws::{AcceptTls, TlsUpgrade};

#[cfg(feature = "tls")]
use tickwire_tls::TlsCodec;

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
/// [`ServerOptions`](crate::ServerOptions).
pub type ServerBuilder = tickwire_core::ws::ServerBuilder<Blocking>;

impl<'a, F: FnOnce(&Request) -> Response + 'a> Accept<'a, TcpStream, F> for Blocking {
    type Output = Result<WebSocket<TcpStream>, Error>;

    fn accept(up: Upgrade<'a, TcpStream, F>) -> Self::Output {
        up.stream.set_nodelay(up.options.nodelay)?;
        let deadline = Instant::now() + up.options.handshake_timeout;
        upgrade(up, deadline)
    }
}

impl<'a, S: Transport, F: FnOnce(&Request) -> Response + 'a> AcceptOver<'a, S, F> for Blocking {
    type Output = Result<WebSocket<S>, Error>;

    fn handshake(up: Upgrade<'a, S, F>) -> Self::Output {
        let deadline = Instant::now() + up.options.handshake_timeout;
        upgrade(up, deadline)
    }
}

#[cfg(feature = "tls")]
impl<'a, F: FnOnce(&Request) -> Response + 'a> AcceptTls<'a, TcpStream, F> for Blocking {
    type Output = Result<WebSocket<TlsStream<TcpStream>>, Error>;

    fn accept_tls(tls_up: TlsUpgrade<'a, TcpStream, F>) -> Self::Output {
        let (tcp, up) = tls_up.upgrade.take_stream();
        tcp.set_nodelay(up.options.nodelay)?;
        let deadline = Instant::now() + up.options.handshake_timeout;
        let mut stream = TlsStream::new(tcp, TlsCodec::server(tls_up.tls)?);
        stream.handshake(deadline)?;
        upgrade(up.over(stream), deadline)
    }
}

/// The upgrade over any stream whose transport handshake (if any) is done.
fn upgrade<S: Transport>(
    up: Upgrade<'_, S, impl FnOnce(&Request) -> Response>,
    deadline: Instant,
) -> Result<WebSocket<S>, Error> {
    let (options, mut stream) = (up.options, up.stream);
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
    let responded = opening.respond((up.decide)(&request), Instant::now());
    let written = crate::stream::write_before(&mut stream, opening.answer(), deadline);
    let opened = opening.conclude(responded, written.map_err(Error::from))?;
    stream.set_write_timeout(options.write_timeout)?;
    stream.set_read_timeout(None)?;
    WebSocket::opened(stream, Some(opened), Role::Server, options.read_timeout)
}
