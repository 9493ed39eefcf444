//! What a transport stream must offer beyond `Read + Write`: the [`Transport`] trait and its
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
pub trait Transport: Read + Write {
    /// One read, with the kernel's receive time of what it read where the stream takes it
    /// (a TCP socket with `SO_TIMESTAMPING` on, on Linux: one `recvmsg(2)`). By default a
    /// plain `read` and no time.
    #[doc(hidden)]
    fn recv_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        self.read(buf).map(|n| (n, None))
    }

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

    /// Writes what the stream takes now without blocking; `WouldBlock` when it takes
    /// nothing. Bytes it took are the stream's to deliver, in order, before anything written
    /// later (a TLS stream keeps the ciphertext the socket did not take and sends it first,
    /// see [`has_pending_write`](Self::has_pending_write)); an empty `buf` only pushes those.
    /// `Ok(0)` for a non-empty `buf` (or `Ok` for an empty one) means those earlier bytes
    /// moved on.
    /// Used by a transport waiting for bytes while it still has bytes to send. Default: a
    /// blocking `write`.
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        self.write(buf)
    }

    /// Whether bytes an earlier write took still wait for the socket (a TLS stream's queued
    /// ciphertext). `flush` and [`try_write`](Self::try_write) push them. Default: `false`.
    fn has_pending_write(&self) -> bool {
        false
    }

    /// Reads what is ready after [`wait_duplex`](Self::wait_duplex) reported the stream
    /// readable, reading the socket at most once: `WouldBlock` when that was not enough for
    /// any bytes (a TLS stream holding part of a record). Default: `read`.
    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.read(buf)
    }

    /// Blocks until a read would not block, or (with `write`) until the stream would take
    /// bytes, or until `timeout` passes (`None`: no bound); returns which. A readiness may be
    /// spurious: the read or write that follows must still handle a timeout. Default: no
    /// wait, writable when `write` is asked, else readable (a stream that cannot wait for
    /// both writes all it has before it reads).
    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        let _ = timeout;
        Ok(Readiness {
            readable: !write,
            writable: write,
        })
    }
}

/// What [`Transport::wait_duplex`] found ready.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Readiness {
    /// A read would return bytes (or the end of the stream, or an error) without blocking.
    pub readable: bool,
    /// A write would take some bytes without blocking.
    pub writable: bool,
}

/// An I/O error from `stream`, typed: the stream's own [`failure`](Transport::failure) when it has
/// one, else [`TransportError::Io`].
pub(crate) fn io_error<S: Transport + ?Sized>(stream: &S, error: io::Error) -> TransportError {
    stream.failure().unwrap_or(TransportError::Io(error))
}

impl Transport for TcpStream {
    #[cfg(target_os = "linux")]
    fn recv_stamped(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        tickwire_core::feed::kernel::recv(self, buf)
    }

    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_write_timeout(self, timeout)
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }

    /// One `send` with `MSG_DONTWAIT`: the same single syscall a blocking write makes when
    /// the socket has room.
    #[cfg(unix)]
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        socket2::SockRef::from(&*self).send_with_flags(buf, SEND_NOW)
    }

    /// `poll(2)` on the socket.
    #[cfg(unix)]
    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut interest = PollFlags::IN;
        if write {
            interest |= PollFlags::OUT;
        }
        // A bound too far to represent is no bound.
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        let mut fds = [PollFd::new(&*self, interest)];
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => return Ok(Readiness::default()),
            Err(e) => return Err(e.into()),
        }
        let ready = fds[0].revents();
        // An error or a hang-up is reported by the read (or the write) that follows.
        let failed = ready.intersects(PollFlags::ERR | PollFlags::HUP);
        Ok(Readiness {
            readable: failed || ready.contains(PollFlags::IN),
            writable: write && (failed || ready.contains(PollFlags::OUT)),
        })
    }
}

/// Flags of [`Transport::try_write`] on a socket: do not block, and no SIGPIPE where the flag
/// exists (elsewhere the Rust runtime ignores SIGPIPE).
#[cfg(any(target_os = "linux", target_os = "android"))]
const SEND_NOW: libc::c_int = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
#[cfg(all(unix, not(any(target_os = "linux", target_os = "android"))))]
const SEND_NOW: libc::c_int = libc::MSG_DONTWAIT;

/// Reads once into `buf` before `deadline` (the opening handshake's bytes): the socket's read
/// timeout is set to the time left. The codec bounds how far `buf` grows (head limits);
/// this only reserves room for one read. An end of stream is
/// [`TransportError::UnexpectedEof`], an expired deadline [`TransportError::HandshakeTimeout`].
pub(crate) fn read_before<S: Transport>(
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
pub(crate) fn write_before<S: Transport>(
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
