//! [`MaybeTlsStream`]: a client's stream, plain TCP or TLS over TCP. It sits above both
//! [`Transport`] and the TLS stream (which is itself built on [`Transport`]), so neither of those
//! needs to know about the other's users.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::Transport;

/// A connection's stream: plain TCP (`ws://`, `http://`) or TLS over TCP (`wss://`,
/// `https://`). Opaque, as tickwire-tokio's: [`tcp`](Self::tcp) and [`tls`](Self::tls) say
/// what is underneath.
#[derive(Debug)]
pub struct MaybeTlsStream(Inner);

#[derive(Debug)]
enum Inner {
    Plain(TcpStream),
    #[cfg(feature = "tls")]
    Tls(Box<crate::TlsStream<TcpStream>>),
}

impl MaybeTlsStream {
    /// Plain TCP.
    pub(crate) fn plain(tcp: TcpStream) -> Self {
        Self(Inner::Plain(tcp))
    }

    /// TLS over TCP, handshake done.
    #[cfg(feature = "tls")]
    pub(crate) fn tls_over(stream: crate::TlsStream<TcpStream>) -> Self {
        Self(Inner::Tls(Box::new(stream)))
    }

    /// Whether this is TLS.
    pub fn is_tls(&self) -> bool {
        !matches!(self.0, Inner::Plain(_))
    }

    /// The TCP stream underneath.
    pub fn tcp(&self) -> &TcpStream {
        match &self.0 {
            Inner::Plain(s) => s,
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.get_ref(),
        }
    }

    /// A feed's: socket reads under TLS take the kernel's receive time (plain TCP reads are
    /// stamped by the feed's stream itself).
    pub(crate) fn stamp_kernel(&mut self) {
        #[cfg(feature = "tls")]
        if let Inner::Tls(s) = &mut self.0 {
            s.kernel.enable();
        }
    }

    /// Under TLS with [`stamp_kernel`](Self::stamp_kernel) on, the kernel's time of the last
    /// socket read that returned bytes.
    pub(crate) fn kernel_ns(&self) -> Option<u64> {
        match &self.0 {
            Inner::Plain(_) => None,
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.kernel.last(),
        }
    }

    /// The TLS state, for `wss://`.
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match &self.0 {
            Inner::Plain(_) => None,
            #[cfg(feature = "tls")]
            Inner::Tls(s) => Some(s.codec()),
        }
    }
}

impl Read for MaybeTlsStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            Inner::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.read(buf),
        }
    }
}

impl Write for MaybeTlsStream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Inner::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Inner::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.flush(),
        }
    }
}

impl Transport for MaybeTlsStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::set_read_timeout(s, timeout),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.set_read_timeout(timeout),
        }
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::set_write_timeout(s, timeout),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.set_write_timeout(timeout),
        }
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::shutdown_write(s),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.shutdown_write(),
        }
    }

    fn failure(&self) -> Option<crate::TransportError> {
        match &self.0 {
            Inner::Plain(_) => None,
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.failure(),
        }
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::try_write(s, buf),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.try_write(buf),
        }
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::read_ready(s, buf),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.read_ready(buf),
        }
    }

    fn has_pending_write(&self) -> bool {
        match &self.0 {
            Inner::Plain(s) => Transport::has_pending_write(s),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.has_pending_write(),
        }
    }

    fn wait_duplex(
        &mut self,
        write: bool,
        timeout: Option<Duration>,
    ) -> io::Result<crate::Readiness> {
        match &mut self.0 {
            Inner::Plain(s) => Transport::wait_duplex(s, write, timeout),
            #[cfg(feature = "tls")]
            Inner::Tls(s) => s.wait_duplex(write, timeout),
        }
    }
}
