//! The blocking client: URL to an open [`WebSocket`] over TCP.
//!
//! A driver only: it connects (TCP, TLS for `wss://`), bounds the handshake with its
//! deadline, writes what [`ClientHandshake`] wrote and feeds it what the socket returns.
//! Every protocol decision (the request, the checks on the answer, negotiation) is the
//! codec's.

use std::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{ClientHandshake, Endpoint, HandshakeError, Parsed};
use tickwire_codec::ws::{Buffers, Role};
use tickwire_core::ws::{ClientOptions, Connect, HandshakeOver};

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

    fn connect(options: ClientOptions, url: &str) -> Self::Output {
        let parsed = url::Url::parse(url).map_err(|e| Error::InvalidUrl(e.to_string()))?;
        let Endpoint { secure, host, port } = Endpoint::of(&parsed).map_err(|e| match e {
            HandshakeError::InvalidUrl(why) => Error::InvalidUrl(why),
            other => Error::Handshake(other),
        })?;
        let tcp = crate::net::tcp_connect(host, port, options.connect_timeout)?;
        tcp.set_nodelay(options.nodelay)?;
        let deadline = Instant::now() + options.handshake_timeout;
        let stream = if secure {
            #[cfg(feature = "tls")]
            {
                crate::net::tls_connect(tcp, host, options.tls.as_ref(), deadline)?
            }
            #[cfg(not(feature = "tls"))]
            {
                let _ = tcp;
                return Err(Error::UnsupportedScheme(
                    "a TLS scheme (build with the `tls` feature)".into(),
                ));
            }
        } else {
            MaybeTlsStream::plain(tcp)
        };
        upgrade(options, stream, &parsed, deadline)
    }
}

impl<S: Transport> HandshakeOver<S> for Blocking {
    type Output = Result<WebSocket<S>, Error>;

    fn handshake(options: ClientOptions, stream: S, url: &url::Url) -> Self::Output {
        let deadline = Instant::now() + options.handshake_timeout;
        upgrade(options, stream, url, deadline)
    }
}

fn upgrade<S: Transport>(
    options: ClientOptions,
    mut stream: S,
    url: &url::Url,
    deadline: Instant,
) -> Result<WebSocket<S>, Error> {
    let mask = options.mask.unwrap_or_default();
    let mut handshake = ClientHandshake::new(url, options.handshake, mask)?;
    let mut request = WriteBuf::new(512, 0);
    handshake.write_request(&mut request)?;
    crate::stream::write_before(&mut stream, request.as_slice(), deadline)?;
    let mut received = ReadBuf::with_capacity(4 << 10);
    let accepted = loop {
        match handshake.read_response(&mut received, Instant::now())? {
            Parsed::Complete(accepted) => break accepted,
            Parsed::NeedMore => crate::stream::read_before(&mut stream, &mut received, deadline)?,
        }
    };
    stream.set_write_timeout(options.write_timeout)?;
    stream.set_read_timeout(None)?;
    let conn = accepted.connection;
    let bufs = Buffers::with_read(received, conn.config());
    let ws = WebSocket::from_parts(stream, conn, bufs, Role::Client, options.read_timeout)
        .with_subprotocol(accepted.subprotocol);
    #[cfg(feature = "deflate")]
    let ws = ws.with_deflate(accepted.deflate);
    Ok(ws)
}
