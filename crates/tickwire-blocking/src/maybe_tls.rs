//! [`MaybeTlsStream`]: a client's stream, plain TCP or TLS over TCP. It sits above both
//! [`Stream`] and the TLS stream (which is itself built on [`Stream`]), so neither of those
//! needs to know about the other's users.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::Stream;

/// A client's stream: plain TCP for `ws://`, TLS over TCP for `wss://`.
#[derive(Debug)]
pub enum MaybeTlsStream {
    /// `ws://`.
    Plain(TcpStream),
    /// `wss://`.
    #[cfg(feature = "tls")]
    Tls(Box<crate::TlsStream<TcpStream>>),
}

impl MaybeTlsStream {
    /// The TCP stream underneath.
    pub fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(s) => s,
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.get_ref(),
        }
    }

    /// The TLS state, for `wss://`.
    #[cfg(feature = "tls")]
    pub fn tls(&self) -> Option<&tickwire_tls::TlsCodec> {
        match self {
            Self::Plain(_) => None,
            #[cfg(feature = "tls")]
            Self::Tls(s) => Some(s.codec()),
        }
    }
}

impl Read for MaybeTlsStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.read(buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.read(buf),
        }
    }
}

impl Write for MaybeTlsStream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => s.write(buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(s) => s.flush(),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.flush(),
        }
    }
}

impl Stream for MaybeTlsStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Plain(s) => Stream::set_read_timeout(s, timeout),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.set_read_timeout(timeout),
        }
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        match self {
            Self::Plain(s) => Stream::set_write_timeout(s, timeout),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.set_write_timeout(timeout),
        }
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        match self {
            Self::Plain(s) => Stream::shutdown_write(s),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.shutdown_write(),
        }
    }

    fn failure(&self) -> Option<crate::TransportError> {
        match self {
            Self::Plain(_) => None,
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.failure(),
        }
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => Stream::try_write(s, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.try_write(buf),
        }
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Self::Plain(s) => Stream::read_ready(s, buf),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.read_ready(buf),
        }
    }

    fn has_pending_write(&self) -> bool {
        match self {
            Self::Plain(s) => Stream::has_pending_write(s),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.has_pending_write(),
        }
    }

    fn wait_duplex(
        &mut self,
        write: bool,
        timeout: Option<Duration>,
    ) -> io::Result<crate::Readiness> {
        match self {
            Self::Plain(s) => Stream::wait_duplex(s, write, timeout),
            #[cfg(feature = "tls")]
            Self::Tls(s) => s.wait_duplex(write, timeout),
        }
    }
}
