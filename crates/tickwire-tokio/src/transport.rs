//! [`Transport`]: what a WebSocket runs over (tokio `AsyncRead + AsyncWrite` and a typed
//! failure), and [`MaybeTlsStream`], the public face of the crate's plain-or-TLS stream.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use crate::stream::MaybeTls;
use tickwire_core::TransportError;

/// A byte stream a [`WebSocket`](crate::WebSocket) runs over: implemented for tokio's
/// `TcpStream`, for [`MaybeTlsStream`] and for `tokio::io::DuplexStream` (tests); implement it
/// for your own stream with the default method.
pub trait Transport: AsyncRead + AsyncWrite + Unpin {
    /// Why the stream failed when it knows more than the `io::Error` it returned (a TLS
    /// stream's [`TlsError`](tickwire_core::TlsError)): the WebSocket reports this instead of
    /// [`Error::Io`](tickwire_core::Error::Io). Default: `None`.
    fn failure(&self) -> Option<TransportError> {
        None
    }

    /// Readiness without a read buffer, for a connection that lends its buffers out while it
    /// idles (rule 11 of docs/ARCHITECTURE.md; the packet transport does): `Some` when the stream can wait
    /// for "bytes may be readable" without reading (`Ready` may be spurious: the read that
    /// follows may find nothing). Only called when
    /// [`can_signal_read_ready`](Self::can_signal_read_ready) is true. Default `None`.
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        let _ = cx;
        None
    }

    /// Whether [`poll_read_ready`](Self::poll_read_ready) gives readiness now: a read that
    /// found nothing then leaves nothing buffered inside the stream. Default false: the
    /// connection keeps its buffers while it waits.
    fn can_signal_read_ready(&self) -> bool {
        false
    }

    /// One non-blocking read that does not consult tokio's cached readiness: `Some` with its
    /// result (`WouldBlock` when nothing is there) where the stream is a socket, `None`
    /// elsewhere (default). tokio clears a socket's readiness after a read that did not
    /// fill the buffer, so its next `poll_read` waits for the reactor even when more bytes
    /// have arrived since; a pipelined link tries this first and skips that turn.
    fn read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        let _ = buf;
        None
    }
}

impl Transport for TcpStream {
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        Some(TcpStream::poll_read_ready(self, cx))
    }

    fn can_signal_read_ready(&self) -> bool {
        true
    }

    fn read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        use std::io::Read;
        Some((&*socket2::SockRef::from(&*self)).read(buf))
    }
}

impl Transport for tokio::io::DuplexStream {}

/// A connection's stream: plain TCP (`ws://`, [`accept`](crate::accept)) or TLS over TCP
/// (`wss://`, [`ServerBuilder::accept_tls`](crate::ServerBuilder::accept_tls)), TLS being
/// [`tickwire_tls::TlsCodec`] driven by this crate; through an `https://` proxy, TLS to the
/// proxy with either inside.
#[derive(Debug)]
pub struct MaybeTlsStream(pub(crate) MaybeTls);

impl MaybeTlsStream {
    /// Whether the socket's bytes are TLS: to the peer (`wss://`, `https://`), to an
    /// `https://` proxy, or both.
    pub fn is_tls(&self) -> bool {
        self.0.is_tls()
    }

    /// The TCP stream underneath (addresses, socket options).
    pub fn tcp(&self) -> &TcpStream {
        self.0.tcp()
    }

    /// The peer's TLS state (version, cipher suite, ALPN, peer certificates), for TLS to
    /// the peer (also through a proxy).
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        self.0.tls()
    }

    /// The TLS state of the connection to an `https://` proxy, when there is one.
    #[cfg(feature = "tls")]
    pub fn proxy_tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        self.0.proxy_tls()
    }
}

impl Transport for MaybeTlsStream {
    fn failure(&self) -> Option<TransportError> {
        self.0.failure()
    }

    /// Plain TCP only: a TLS stream may hold decrypted bytes that no socket readiness
    /// announces (and rustls keeps its own record buffers per connection anyway).
    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        match &self.0 {
            MaybeTls::Plain(tcp) => Some(tcp.poll_read_ready(cx)),
            #[cfg(feature = "tls")]
            _ => None,
        }
    }

    fn can_signal_read_ready(&self) -> bool {
        matches!(self.0, MaybeTls::Plain(_))
    }
}

impl AsyncRead for MaybeTlsStream {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl AsyncWrite for MaybeTlsStream {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}
