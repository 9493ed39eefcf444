//! What a transport stream must offer beyond `Read + Write`: the [`Stream`] trait and its
//! implementation for `TcpStream`. The bottom layer of the transports: the TLS stream, the
//! WebSocket and the HTTP session are built on it, and it names none of them.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use tickwire_codec::buf::ReadBuf;

use crate::TransportError;

/// Bytes asked of the socket per read during an opening handshake.
const HANDSHAKE_READ: usize = 4 << 10;

/// A byte stream a WebSocket or an HTTP session runs over.
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

    /// Why the stream failed, when it knows more than the `io::Error` its `Read` / `Write`
    /// returned: a TLS stream's [`TlsError`](crate::TlsError) (an untrusted certificate, an
    /// alert, a truncated record) as [`TransportError::Tls`]. The transports report this
    /// instead of [`TransportError::Io`] (as their own error's `Tls` variant: the
    /// WebSocket's [`Error`](crate::Error), the [`HttpClientError`](crate::HttpClientError));
    /// they never unpack the `io::Error`. Default: `None`.
    fn failure(&self) -> Option<TransportError> {
        None
    }
}

/// An I/O error from `stream`, typed: the stream's own [`failure`](Stream::failure) when it has
/// one, else [`TransportError::Io`].
pub(crate) fn io_error<S: Stream + ?Sized>(stream: &S, error: io::Error) -> TransportError {
    stream.failure().unwrap_or(TransportError::Io(error))
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

/// Reads once into `buf` before `deadline` (the opening handshake's bytes): the socket's read
/// timeout is set to the time left. The codec bounds how far `buf` grows (head limits);
/// this only reserves room for one read. An end of stream is
/// [`TransportError::UnexpectedEof`], an expired deadline [`TransportError::HandshakeTimeout`].
pub(crate) fn read_before<S: Stream>(
    stream: &mut S,
    buf: &mut ReadBuf,
    deadline: Instant,
) -> Result<(), TransportError> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(TransportError::HandshakeTimeout);
        }
        stream.set_read_timeout(Some(left))?;
        if buf.spare().is_empty() {
            buf.reserve(HANDSHAKE_READ);
        }
        match stream.read(buf.spare()) {
            Ok(0) => return Err(TransportError::UnexpectedEof),
            Ok(n) => {
                buf.filled(n);
                return Ok(());
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(TransportError::HandshakeTimeout);
            }
            Err(e) => return Err(io_error(stream, e)),
        }
    }
}

/// Writes all of `bytes` before `deadline` (the socket's write timeout is set to the time
/// left); an expired deadline is [`TransportError::HandshakeTimeout`].
pub(crate) fn write_before<S: Stream>(
    stream: &mut S,
    bytes: &[u8],
    deadline: Instant,
) -> Result<(), TransportError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(TransportError::HandshakeTimeout);
    }
    stream.set_write_timeout(Some(left))?;
    stream.write_all(bytes).map_err(|e| io_error(stream, e))
}
