//! The async client: URL to an open [`WebSocket`] over TCP, TLS for `wss://`.
//!
//! A driver only, as the blocking client: it connects, bounds the handshake with its deadline,
//! writes what [`ClientOpening`] wrote and feeds it what the socket returns. Every protocol
//! decision (the URL, the request, the checks on the answer, negotiation) is tickwire-core's
//! and the codec's.

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;

use tickwire_codec::ws::Role;
use tickwire_core::ws::{ClientOpening, ClientOptions, Connect, HandshakeOver};

use crate::core::now;
use crate::{Error, MaybeTlsStream, Transport, WebSocket};

/// Connects to `url` (`ws://` or `wss://host[:port]/path?query`) with the default
/// [`ClientBuilder`].
pub async fn connect(url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
    ClientBuilder::new().connect(url).await
}

/// Options for a client connection, then `connect(url).await`: the builder every transport
/// shares, on this crate's [`Tokio`] transport. Defaults: those of [`ClientOptions`].
pub type ClientBuilder = tickwire_core::ws::ClientBuilder<Tokio>;

/// The tokio transport's marker: what makes [`ClientBuilder`] and
/// [`ServerBuilder`](crate::ServerBuilder), the HTTP client builder and the packet builders
/// connect and accept on tokio. Connecting and accepting return boxed `Send` futures (once
/// per connection, never per message or request).
#[derive(Debug, Clone, Copy, Default)]
pub struct Tokio;

/// The future of an opening handshake: `connect`, `accept` and their variants return it. It is
/// boxed (one allocation per connection, none per message) so that one builder serves both
/// transports.
pub type Handshaking<'a, S> =
    Pin<Box<dyn Future<Output = Result<WebSocket<S>, Error>> + Send + 'a>>;

impl Connect for Tokio {
    type Output = Handshaking<'static, MaybeTlsStream>;

    fn connect(options: ClientOptions, url: &str) -> Self::Output {
        let url = url.to_owned();
        Box::pin(async move { connect_to(options, &url).await })
    }
}

impl<S: Transport + Send + 'static> HandshakeOver<S> for Tokio {
    type Output = Handshaking<'static, S>;

    fn handshake(mut options: ClientOptions, stream: S, url: &url::Url) -> Self::Output {
        let url = url.clone();
        Box::pin(async move {
            let deadline = Instant::now() + options.handshake_timeout;
            upgrade(options.opening(&url)?, options, stream, deadline).await
        })
    }
}

async fn connect_to(options: ClientOptions, url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
    let (mut options, stream, parsed, deadline) = open_stream(options, url).await?;
    upgrade(options.opening(&parsed)?, options, stream, deadline).await
}

/// TCP (and TLS for `wss://`) to `url`'s host: the stream, the parsed URL and the
/// handshake's deadline, for [`upgrade`] (the feed driver wraps the stream first). The
/// options are owned across the awaits (a `&ClientOptions` would not be `Send`: the masking
/// source is not `Sync`) and handed back.
pub(crate) async fn open_stream(
    options: ClientOptions,
    url: &str,
) -> Result<(ClientOptions, MaybeTlsStream, url::Url, Instant), Error> {
    let parsed = tickwire_core::ws::parse_url(url)?;
    let route = options.route(&parsed)?;
    let stream = crate::net::open(&route).await?;
    let deadline = Instant::now() + options.handshake_timeout;
    let stream = if route.secure {
        #[cfg(feature = "tls")]
        {
            crate::net::tls_connect(stream, route.host, options.tls.as_ref(), deadline).await?
        }
        #[cfg(not(feature = "tls"))]
        return Err(tickwire_core::ws::tls_not_built());
    } else {
        stream
    };
    Ok((options, MaybeTlsStream(stream), parsed, deadline))
}

pub(crate) async fn upgrade<S: Transport>(
    mut opening: ClientOpening,
    options: ClientOptions,
    mut stream: S,
    deadline: Instant,
) -> Result<WebSocket<S>, Error> {
    let exchange = async {
        crate::handshake::write_all(&mut stream, opening.request()).await?;
        while !opening.read_response(now())? {
            crate::handshake::read_some(&mut stream, opening.received()).await?;
        }
        Ok::<_, Error>(())
    };
    tokio::time::timeout_at(deadline, exchange)
        .await
        .map_err(|_| Error::HandshakeTimeout)??;
    WebSocket::opened(
        stream,
        opening.into_opened(),
        Role::Client,
        (options.read_timeout, options.write_timeout),
    )
}
