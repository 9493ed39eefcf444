//! [`MaybeTls`]: a connection's byte stream, plain TCP or TLS over TCP, as one tokio
//! `AsyncRead + AsyncWrite` type. It sits above the TLS stream, so the protocols above it
//! (the WebSocket, the HTTP client) name one stream type and never match on TLS themselves.
//!
//! The small API the rest of the crate uses: build it with [`crate::net::tcp_connect`] then
//! `MaybeTls::Plain(tcp)`, or [`crate::net::tls_connect`] / [`crate::net::tls_accept`]; read
//! and write it through `AsyncRead` / `AsyncWrite` (`poll_flush` writes TLS records still
//! queued; `poll_shutdown` sends close_notify, then FIN); ask [`MaybeTls::failure`] for the
//! typed TLS error when an `io::Error` came back.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use tickwire_core::TransportError;

/// Plain TCP (`ws://`, `http://`, a plain server) or TLS over TCP (`wss://`, `https://`, a
/// TLS server).
#[derive(Debug)]
pub(crate) enum MaybeTls {
    /// No TLS.
    Plain(TcpStream),
    /// TLS through [`tickwire_tls::TlsCodec`], handshake complete.
    #[cfg(feature = "tls")]
    Tls(Box<crate::tls::TlsStream>),
}

impl MaybeTls {
    /// The TCP stream underneath (socket options, addresses).
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            #[cfg(feature = "tls")]
            Self::Tls(tls) => tls.tcp(),
        }
    }

    /// The TLS state (version, cipher suite, ALPN, peer certificates), when TLS is on.
    #[cfg(feature = "tls")]
    pub(crate) fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match self {
            Self::Plain(_) => None,
            Self::Tls(tls) => Some(tls.codec()),
        }
    }

    /// Why the stream failed, when it knows more than the `io::Error` it returned: the TLS
    /// codec's recorded [`TlsError`](tickwire_tls::TlsError) as [`TransportError::Tls`]. The
    /// protocols report this instead of the `io::Error`; they never unpack it.
    pub(crate) fn failure(&self) -> Option<TransportError> {
        match self {
            Self::Plain(_) => None,
            #[cfg(feature = "tls")]
            Self::Tls(tls) => tls.failure(),
        }
    }
}

impl MaybeTls {
    /// A feed's: socket reads under TLS take the kernel's receive time.
    pub(crate) fn stamp_kernel(&mut self) {
        #[cfg(feature = "tls")]
        if let Self::Tls(tls) = self {
            tls.kernel.enable();
        }
    }

    /// Under TLS with [`stamp_kernel`](Self::stamp_kernel) on, the kernel's time of the last
    /// socket read that returned bytes.
    pub(crate) fn kernel_ns(&self) -> Option<u64> {
        match self {
            Self::Plain(_) => None,
            #[cfg(feature = "tls")]
            Self::Tls(tls) => tls.kernel.last(),
        }
    }
}

impl AsyncRead for MaybeTls {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => Pin::new(&mut **tls).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for MaybeTls {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => Pin::new(&mut **tls).poll_write(cx, buf),
        }
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_write_vectored(cx, bufs),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => Pin::new(&mut **tls).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(tcp) => tcp.is_write_vectored(),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => Pin::new(&mut **tls).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            #[cfg(feature = "tls")]
            Self::Tls(tls) => Pin::new(&mut **tls).poll_shutdown(cx),
        }
    }
}
