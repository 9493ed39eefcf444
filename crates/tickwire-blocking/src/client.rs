//! The blocking client: URL to an open [`WebSocket`] over TCP.
//!
//! A driver only: it connects (TCP, TLS for `wss://`), bounds the handshake with its
//! deadline, writes what [`ClientOpening`] wrote and feeds it what the socket returns.
//! Every protocol decision (the URL, the request, the checks on the answer, negotiation) is
//! tickwire-core's and the codec's.

use std::time::Instant;

use tickwire_codec::ws::Role;
use tickwire_core::ws::{ClientOpening, ClientOptions, Connect, HandshakeOver};

use crate::{Error, MaybeTlsStream, Transport, WebSocket};

/// Connects to `url` (`ws://` or `wss://host[:port]/path?query`) with the default
/// [`ClientBuilder`].
pub fn connect(url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
    ClientBuilder::new().connect(url)
}

/// Options for a client connection, then [`connect`](tickwire_core::ws::ClientBuilder::connect):
/// the builder every transport shares, on this crate's [`Blocking`] transport. Defaults:
/// those of [`ClientOptions`].
pub type ClientBuilder = tickwire_core::ws::ClientBuilder<Blocking>;

/// The blocking transport's marker: what makes [`ClientBuilder`] and
/// [`ServerBuilder`](crate::ServerBuilder), the HTTP client builder and the packet builders
/// connect and accept over `std::net`, with blocking sockets and threads.
#[derive(Debug, Clone, Copy, Default)]
pub struct Blocking;

impl Connect for Blocking {
    type Output = Result<WebSocket<MaybeTlsStream>, Error>;

    fn connect(mut options: ClientOptions, url: &str) -> Self::Output {
        let (stream, parsed, deadline) = open_stream(&options, url)?;
        upgrade(options.opening(&parsed)?, options, stream, deadline)
    }
}

/// TCP (and TLS for `wss://`) to `url`'s host: the stream, the parsed URL and the
/// handshake's deadline, for [`upgrade`] (the feed driver wraps the stream first).
pub(crate) fn open_stream(
    options: &ClientOptions,
    url: &str,
) -> Result<(MaybeTlsStream, url::Url, Instant), Error> {
    let parsed = tickwire_core::ws::parse_url(url)?;
    let route = options.route(&parsed)?;
    let stream = crate::net::open(&route)?;
    let deadline = Instant::now() + options.handshake_timeout;
    let stream = if route.secure {
        #[cfg(feature = "tls")]
        {
            crate::net::tls_connect(stream, route.host, options.tls.as_ref(), deadline)?
        }
        #[cfg(not(feature = "tls"))]
        return Err(tickwire_core::ws::tls_not_built());
    } else {
        stream
    };
    Ok((stream, parsed, deadline))
}

impl<S: Transport> HandshakeOver<S> for Blocking {
    type Output = Result<WebSocket<S>, Error>;

    fn handshake(mut options: ClientOptions, stream: S, url: &url::Url) -> Self::Output {
        let deadline = Instant::now() + options.handshake_timeout;
        upgrade(options.opening(url)?, options, stream, deadline)
    }
}

pub(crate) fn upgrade<S: Transport>(
    mut opening: ClientOpening,
    options: ClientOptions,
    mut stream: S,
    deadline: Instant,
) -> Result<WebSocket<S>, Error> {
    crate::stream::write_before(&mut stream, opening.request(), deadline)?;
    while !opening.read_response(Instant::now())? {
        crate::stream::read_before(&mut stream, opening.received(), deadline)?;
    }
    stream.set_write_timeout(options.write_timeout)?;
    stream.set_read_timeout(None)?;
    WebSocket::opened(
        stream,
        opening.into_opened(),
        Role::Client,
        options.read_timeout,
    )
}
