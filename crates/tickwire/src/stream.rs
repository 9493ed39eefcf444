//! What a transport stream must offer beyond `Read + Write`.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// A byte stream a [`WebSocket`](crate::WebSocket) runs over.
///
/// Implemented for `TcpStream`; a TLS stream implements it too. The default methods suit a
/// stream with no timeouts or half-close (an in-memory pipe in a test).
pub trait Stream: Read + Write {
    /// Sets the read timeout (`None` blocks forever). Used for the connection's timers.
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let _ = timeout;
        Ok(())
    }

    /// Sets the write timeout (`None` blocks forever). Used to bound the final close write
    /// when a connection is dropped.
    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let _ = timeout;
        Ok(())
    }

    /// Closes the write direction after the close handshake (the server closes TCP first,
    /// RFC 6455 §7.1.1).
    fn shutdown_write(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Stream for TcpStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_write_timeout(self, timeout)
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}

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
}
