//! [`MaybeTls`]: a connection's byte stream, plain TCP or TLS over TCP (and through an
//! `https://` proxy, TLS to the proxy carrying either), as one tokio `AsyncRead +
//! AsyncWrite` type. It sits above the TLS stream, so the protocols above it (the
//! WebSocket, the HTTP client) name one stream type and never match on TLS themselves.
//!
//! The small API the rest of the crate uses: build it with [`crate::net::open`] (then
//! [`crate::net::tls_connect`] for the server's TLS) or `MaybeTls::Plain(tcp)`, or
//! [`crate::net::tls_accept`]; read and write it through `AsyncRead` / `AsyncWrite`
//! (`poll_flush` writes TLS records still queued; `poll_shutdown` sends close_notify, then
//! FIN); ask [`MaybeTls::failure`] for the typed TLS error when an `io::Error` came back.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

use tickwire_core::TransportError;

#[cfg(feature = "tls")]
type Tls = crate::tls::TlsStream<TcpStream>;

/// Plain TCP (`ws://`, `http://`, a plain server) or TLS over TCP (`wss://`, `https://`, a
/// TLS server); through an `https://` proxy, TLS to the proxy with either inside.
#[derive(Debug)]
pub(crate) enum MaybeTls {
    /// No TLS.
    Plain(TcpStream),
    /// TLS to the peer through [`tickwire_tls::TlsCodec`], handshake complete.
    #[cfg(feature = "tls")]
    Tls(Box<Tls>),
    /// TLS to an `https://` proxy whose tunnel is open; plain bytes to the server inside.
    #[cfg(feature = "tls")]
    ProxyTls(Box<Tls>),
    /// The server's TLS inside TLS to an `https://` proxy.
    #[cfg(feature = "tls")]
    TlsInTls(Box<crate::tls::TlsStream<Tls>>),
}

/// `$body` with `$s` pinned to the stream under each variant.
macro_rules! each_pin {
    ($inner:expr, $s:ident => $body:expr) => {
        match $inner {
            MaybeTls::Plain(tcp) => {
                let $s = Pin::new(tcp);
                $body
            }
            #[cfg(feature = "tls")]
            MaybeTls::Tls(tls) | MaybeTls::ProxyTls(tls) => {
                let $s = Pin::new(&mut **tls);
                $body
            }
            #[cfg(feature = "tls")]
            MaybeTls::TlsInTls(tls) => {
                let $s = Pin::new(&mut **tls);
                $body
            }
        }
    };
}

impl MaybeTls {
    /// The TCP stream underneath (socket options, addresses).
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            #[cfg(feature = "tls")]
            Self::Tls(tls) | Self::ProxyTls(tls) => tls.tcp(),
            #[cfg(feature = "tls")]
            Self::TlsInTls(tls) => tls.tcp(),
        }
    }

    /// Whether the socket's bytes are TLS: to the peer, to an `https://` proxy, or both.
    pub(crate) fn is_tls(&self) -> bool {
        !matches!(self, Self::Plain(_))
    }

    /// The peer's TLS state (version, cipher suite, ALPN, peer certificates), when TLS to
    /// the peer is on.
    #[cfg(feature = "tls")]
    pub(crate) fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match self {
            Self::Plain(_) | Self::ProxyTls(_) => None,
            Self::Tls(tls) => Some(tls.codec()),
            Self::TlsInTls(tls) => Some(tls.codec()),
        }
    }

    /// The TLS state of the connection to an `https://` proxy, when there is one.
    #[cfg(feature = "tls")]
    pub(crate) fn proxy_tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match self {
            Self::Plain(_) | Self::Tls(_) => None,
            Self::ProxyTls(tls) => Some(tls.codec()),
            Self::TlsInTls(tls) => Some(tls.carrier().codec()),
        }
    }

    /// Why the stream failed, when it knows more than the `io::Error` it returned: the TLS
    /// codec's recorded [`TlsError`](tickwire_tls::TlsError) as [`TransportError::Tls`]
    /// (the peer's TLS first, then the proxy's). The protocols report this instead of the
    /// `io::Error`; they never unpack it.
    pub(crate) fn failure(&self) -> Option<TransportError> {
        match self {
            Self::Plain(_) => None,
            #[cfg(feature = "tls")]
            Self::Tls(tls) | Self::ProxyTls(tls) => tls.failure(),
            #[cfg(feature = "tls")]
            Self::TlsInTls(tls) => tls.failure(),
        }
    }

    /// The TLS stream whose reads are the socket's: the peer's, or the proxy's.
    #[cfg(feature = "tls")]
    fn socket_tls(&self) -> Option<&Tls> {
        match self {
            Self::Plain(_) => None,
            Self::Tls(tls) | Self::ProxyTls(tls) => Some(tls),
            Self::TlsInTls(tls) => Some(tls.carrier()),
        }
    }
}

impl MaybeTls {
    /// A feed's: socket reads under TLS take the kernel's receive time.
    pub(crate) fn stamp_kernel(&mut self) {
        #[cfg(feature = "tls")]
        match self {
            Self::Plain(_) => {}
            Self::Tls(tls) | Self::ProxyTls(tls) => tls.kernel.enable(),
            Self::TlsInTls(tls) => tls.carrier_mut().kernel.enable(),
        }
    }

    /// Under TLS with [`stamp_kernel`](Self::stamp_kernel) on, the kernel's time of the last
    /// socket read that returned bytes.
    pub(crate) fn kernel_ns(&self) -> Option<u64> {
        #[cfg(feature = "tls")]
        return self.socket_tls().and_then(|tls| tls.kernel.last());
        #[cfg(not(feature = "tls"))]
        None
    }
}

impl AsyncRead for MaybeTls {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        each_pin!(self.get_mut(), s => s.poll_read(cx, buf))
    }
}

impl AsyncWrite for MaybeTls {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        each_pin!(self.get_mut(), s => s.poll_write(cx, buf))
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        each_pin!(self.get_mut(), s => s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(tcp) => tcp.is_write_vectored(),
            #[cfg(feature = "tls")]
            Self::Tls(tls) | Self::ProxyTls(tls) => tls.is_write_vectored(),
            #[cfg(feature = "tls")]
            Self::TlsInTls(tls) => tls.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each_pin!(self.get_mut(), s => s.poll_flush(cx))
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        each_pin!(self.get_mut(), s => s.poll_shutdown(cx))
    }
}
