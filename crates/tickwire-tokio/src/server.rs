//! The async server side: an accepted tokio `TcpStream` to an open [`WebSocket`], TLS
//! included.
//!
//! A driver only, as the blocking server: it bounds the handshake with its deadline (and runs
//! the TLS handshake for `accept_tls`), feeds [`ServerOpening`] what the socket returns, asks
//! the caller's hook to decide, and writes what it wrote. Every protocol decision is the
//! codec's and tickwire-core's.

use tokio::net::TcpStream;
use tokio::time::Instant;

use tickwire_codec::handshake::{Request, Response};
use tickwire_codec::ws::Role;
#[cfg(feature = "tls")]
use tickwire_core::ws::AcceptTls;
use tickwire_core::ws::{Accept, AcceptOver, ServerOpening, ServerOptions};
#[cfg(feature = "tls")]
use tickwire_tls::ServerTlsConfig;

#[cfg(feature = "tls")]
use crate::MaybeTlsStream;
use crate::client::{Handshaking, Tokio};
use crate::core::now;
use crate::{Error, Transport, WebSocket};

/// Performs the server handshake on an accepted stream with the default [`ServerBuilder`],
/// accepting any valid upgrade request.
pub async fn accept(stream: TcpStream) -> Result<WebSocket<TcpStream>, Error> {
    ServerBuilder::new().accept(stream).await
}

/// Options for the server side, then `accept(stream).await` for each accepted stream: the
/// builder every transport shares, on this crate's [`Tokio`] transport. Defaults: those of
/// [`ServerOptions`].
pub type ServerBuilder = tickwire_core::ws::ServerBuilder<Tokio>;

impl<F: FnOnce(&Request) -> Response + Send> Accept<TcpStream, F> for Tokio {
    type Output<'a>
        = Handshaking<'a, TcpStream>
    where
        F: 'a;

    fn accept_with<'a>(options: &'a ServerOptions, stream: TcpStream, decide: F) -> Self::Output<'a>
    where
        F: 'a,
    {
        Box::pin(async move {
            stream.set_nodelay(options.nodelay)?;
            let deadline = Instant::now() + options.handshake_timeout;
            upgrade(options, stream, deadline, decide).await
        })
    }
}

impl<S: Transport + Send, F: FnOnce(&Request) -> Response + Send> AcceptOver<S, F> for Tokio {
    type Output<'a>
        = Handshaking<'a, S>
    where
        S: 'a,
        F: 'a;

    fn handshake<'a>(options: &'a ServerOptions, stream: S, decide: F) -> Self::Output<'a>
    where
        S: 'a,
        F: 'a,
    {
        Box::pin(async move {
            let deadline = Instant::now() + options.handshake_timeout;
            upgrade(options, stream, deadline, decide).await
        })
    }
}

#[cfg(feature = "tls")]
impl<F: FnOnce(&Request) -> Response + Send> AcceptTls<TcpStream, F> for Tokio {
    type Output<'a>
        = Handshaking<'a, MaybeTlsStream>
    where
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
        Box::pin(async move {
            stream.set_nodelay(options.nodelay)?;
            let deadline = Instant::now() + options.handshake_timeout;
            let stream = crate::net::tls_accept(stream, tls, deadline).await?;
            upgrade(options, MaybeTlsStream(stream), deadline, decide).await
        })
    }
}

async fn upgrade<S: Transport>(
    options: &ServerOptions,
    mut stream: S,
    deadline: Instant,
    decide: impl FnOnce(&Request) -> Response,
) -> Result<WebSocket<S>, Error> {
    let mut opening = ServerOpening::new(&options.handshake);
    let exchange = async {
        let request = loop {
            match opening.read_request() {
                Ok(Some(request)) => break request,
                Ok(None) => crate::handshake::read_some(&mut stream, opening.received()).await?,
                Err(error) => {
                    // Best effort: the client may already be gone.
                    let _ = crate::handshake::write_all(&mut stream, opening.answer()).await;
                    return Err(error);
                }
            }
        };
        let responded = opening.respond(decide(&request), now());
        let written = crate::handshake::write_all(&mut stream, opening.answer()).await;
        Ok((responded, written))
    };
    let (responded, written) = tokio::time::timeout_at(deadline, exchange)
        .await
        .map_err(|_| Error::HandshakeTimeout)??;
    let opened = opening.conclude(responded, written.map_err(Error::from))?;
    WebSocket::opened(
        stream,
        Some(opened),
        Role::Server,
        (options.read_timeout, options.write_timeout),
    )
}
