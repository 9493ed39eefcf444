//! [`MaybeTlsStream`]: a client's stream, plain TCP or TLS over TCP, and through an
//! `https://` proxy TLS to the proxy with the server's TLS (if any) inside it. It sits above
//! both [`Transport`] and the TLS stream (which is itself built on [`Transport`]), so neither
//! of those needs to know about the other's users.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::Transport;

/// A connection's stream: plain TCP (`ws://`, `http://`) or TLS over TCP (`wss://`,
/// `https://`); through an `https://` proxy, TLS to the proxy carrying either. Opaque, as
/// tickwire-tokio's: [`tcp`](Self::tcp), [`tls`](Self::tls) and
/// [`proxy_tls`](Self::proxy_tls) say what is underneath.
#[derive(Debug)]
pub struct MaybeTlsStream(Inner);

#[cfg(feature = "tls")]
type Tls = crate::TlsStream<TcpStream>;

#[derive(Debug)]
enum Inner {
    Plain(TcpStream),
    /// TLS to the server.
    #[cfg(feature = "tls")]
    Tls(Box<Tls>),
    /// TLS to an `https://` proxy, plain bytes to the server inside it.
    #[cfg(feature = "tls")]
    ProxyTls(Box<Tls>),
    /// TLS to the server inside TLS to an `https://` proxy.
    #[cfg(feature = "tls")]
    TlsInTls(Box<crate::TlsStream<Tls>>),
}

/// `$body` with `$s` bound to the stream under each variant, mutably.
macro_rules! each_mut {
    ($inner:expr, $s:ident => $body:expr) => {
        match $inner {
            Inner::Plain($s) => $body,
            #[cfg(feature = "tls")]
            Inner::Tls(boxed) | Inner::ProxyTls(boxed) => {
                let $s = &mut **boxed;
                $body
            }
            #[cfg(feature = "tls")]
            Inner::TlsInTls(boxed) => {
                let $s = &mut **boxed;
                $body
            }
        }
    };
}

/// `$body` with `$s` bound to the stream under each variant.
macro_rules! each_ref {
    ($inner:expr, $s:ident => $body:expr) => {
        match $inner {
            Inner::Plain($s) => $body,
            #[cfg(feature = "tls")]
            Inner::Tls(boxed) | Inner::ProxyTls(boxed) => {
                let $s = &**boxed;
                $body
            }
            #[cfg(feature = "tls")]
            Inner::TlsInTls(boxed) => {
                let $s = &**boxed;
                $body
            }
        }
    };
}

impl MaybeTlsStream {
    /// Plain TCP.
    pub(crate) fn plain(tcp: TcpStream) -> Self {
        Self(Inner::Plain(tcp))
    }

    /// TLS over TCP, handshake done.
    #[cfg(feature = "tls")]
    pub(crate) fn tls_over(stream: Tls) -> Self {
        Self(Inner::Tls(Box::new(stream)))
    }

    /// TLS to an `https://` proxy whose tunnel is open: the server's bytes go inside it.
    #[cfg(feature = "tls")]
    pub(crate) fn through_proxy(stream: Tls) -> Self {
        Self(Inner::ProxyTls(Box::new(stream)))
    }

    /// The server's TLS (`codec`) on this stream (TCP, or TLS to a proxy), its handshake
    /// run before `deadline`.
    #[cfg(feature = "tls")]
    pub(crate) fn with_tls(
        self,
        codec: tickwire_tls::TlsCodec,
        deadline: std::time::Instant,
    ) -> Result<Self, crate::TransportError> {
        match self.0 {
            Inner::Plain(tcp) => {
                let mut stream = crate::TlsStream::new(tcp, codec);
                stream.handshake(deadline)?;
                Ok(Self::tls_over(stream))
            }
            Inner::ProxyTls(proxy) => {
                let mut stream = crate::TlsStream::new(*proxy, codec);
                stream.handshake(deadline)?;
                Ok(Self(Inner::TlsInTls(Box::new(stream))))
            }
            Inner::Tls(_) | Inner::TlsInTls(_) => Err(crate::TransportError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the stream already carries the server's TLS",
            ))),
        }
    }

    /// Whether the socket's bytes are TLS: to the server (`wss://`, `https://`), to an
    /// `https://` proxy, or both.
    pub fn is_tls(&self) -> bool {
        !matches!(self.0, Inner::Plain(_))
    }

    /// The TCP stream underneath.
    pub fn tcp(&self) -> &TcpStream {
        match &self.0 {
            Inner::Plain(s) => s,
            #[cfg(feature = "tls")]
            Inner::Tls(s) | Inner::ProxyTls(s) => s.get_ref(),
            #[cfg(feature = "tls")]
            Inner::TlsInTls(s) => s.get_ref().get_ref(),
        }
    }

    /// The TLS stream whose reads are the socket's: the server's, or the proxy's.
    #[cfg(feature = "tls")]
    fn socket_tls(&mut self) -> Option<&mut Tls> {
        match &mut self.0 {
            Inner::Plain(_) => None,
            Inner::Tls(s) | Inner::ProxyTls(s) => Some(s),
            Inner::TlsInTls(s) => Some(s.get_mut()),
        }
    }

    /// A feed's: socket reads under TLS take the kernel's receive time (plain TCP reads are
    /// stamped by the feed's stream itself).
    pub(crate) fn stamp_kernel(&mut self) {
        #[cfg(feature = "tls")]
        if let Some(s) = self.socket_tls() {
            s.kernel.enable();
        }
    }

    /// Under TLS with [`stamp_kernel`](Self::stamp_kernel) on, the kernel's time of the last
    /// socket read that returned bytes.
    pub(crate) fn kernel_ns(&self) -> Option<u64> {
        match &self.0 {
            Inner::Plain(_) => None,
            #[cfg(feature = "tls")]
            Inner::Tls(s) | Inner::ProxyTls(s) => s.kernel.last(),
            #[cfg(feature = "tls")]
            Inner::TlsInTls(s) => s.get_ref().kernel.last(),
        }
    }

    /// The server's TLS state, for `wss://` and `https://` (also through a proxy).
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match &self.0 {
            Inner::Plain(_) | Inner::ProxyTls(_) => None,
            Inner::Tls(s) => Some(s.codec()),
            Inner::TlsInTls(s) => Some(s.codec()),
        }
    }

    /// The TLS state of the connection to an `https://` proxy, when there is one.
    #[cfg(feature = "tls")]
    pub fn proxy_tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match &self.0 {
            Inner::Plain(_) | Inner::Tls(_) => None,
            Inner::ProxyTls(s) => Some(s.codec()),
            Inner::TlsInTls(s) => Some(s.get_ref().codec()),
        }
    }
}

impl Read for MaybeTlsStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        each_mut!(&mut self.0, s => s.read(buf))
    }
}

impl Write for MaybeTlsStream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        each_mut!(&mut self.0, s => s.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        each_mut!(&mut self.0, s => s.flush())
    }
}

impl Transport for MaybeTlsStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        each_mut!(&mut self.0, s => Transport::set_read_timeout(s, timeout))
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        each_mut!(&mut self.0, s => Transport::set_write_timeout(s, timeout))
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        each_mut!(&mut self.0, s => Transport::shutdown_write(s))
    }

    fn failure(&self) -> Option<crate::TransportError> {
        each_ref!(&self.0, s => Transport::failure(s))
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        each_mut!(&mut self.0, s => Transport::try_write(s, buf))
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        each_mut!(&mut self.0, s => Transport::read_ready(s, buf))
    }

    fn has_pending_write(&self) -> bool {
        each_ref!(&self.0, s => Transport::has_pending_write(s))
    }

    fn wait_duplex(
        &mut self,
        write: bool,
        timeout: Option<Duration>,
    ) -> io::Result<crate::Readiness> {
        each_mut!(&mut self.0, s => Transport::wait_duplex(s, write, timeout))
    }
}
