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
use tickwire_core::ws::{Accept, AcceptOver, ServerOpening, Upgrade};
#[cfg(feature = "tls")]
use tickwire_core::ws::{AcceptTls, TlsUpgrade};

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
/// [`ServerOptions`](crate::ServerOptions).
pub type ServerBuilder = tickwire_core::ws::ServerBuilder<Tokio>;

impl<'a, F: FnOnce(&Request) -> Response + Send + 'a> Accept<'a, TcpStream, F> for Tokio {
    type Output = Handshaking<'a, TcpStream>;

    fn accept(up: Upgrade<'a, TcpStream, F>) -> Self::Output {
        Box::pin(async move {
            up.stream.set_nodelay(up.options.nodelay)?;
            upgrade(up).await
        })
    }
}

impl<'a, S, F> AcceptOver<'a, S, F> for Tokio
where
    S: Transport + Send + 'a,
    F: FnOnce(&Request) -> Response + Send + 'a,
{
    type Output = Handshaking<'a, S>;

    fn handshake(up: Upgrade<'a, S, F>) -> Self::Output {
        Box::pin(upgrade(up))
    }
}

#[cfg(feature = "tls")]
impl<'a, F: FnOnce(&Request) -> Response + Send + 'a> AcceptTls<'a, TcpStream, F> for Tokio {
    type Output = Handshaking<'a, MaybeTlsStream>;

    fn accept_tls(tls_up: TlsUpgrade<'a, TcpStream, F>) -> Self::Output {
        Box::pin(async move {
            let (tcp, up) = tls_up.upgrade.take_stream();
            tcp.set_nodelay(up.options.nodelay)?;
            // One deadline bounds both handshakes.
            let deadline = Instant::now() + up.options.handshake_timeout;
            let stream = crate::net::tls_accept(tcp, tls_up.tls, deadline).await?;
            upgrade_before(up.over(MaybeTlsStream(stream)), deadline).await
        })
    }
}

/// The upgrade within the handshake timeout from now.
async fn upgrade<S: Transport>(
    up: Upgrade<'_, S, impl FnOnce(&Request) -> Response>,
) -> Result<WebSocket<S>, Error> {
    let deadline = Instant::now() + up.options.handshake_timeout;
    upgrade_before(up, deadline).await
}

async fn upgrade_before<S: Transport>(
    up: Upgrade<'_, S, impl FnOnce(&Request) -> Response>,
    deadline: Instant,
) -> Result<WebSocket<S>, Error> {
    let Upgrade {
        options,
        mut stream,
        decide,
        ..
    } = up;
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
