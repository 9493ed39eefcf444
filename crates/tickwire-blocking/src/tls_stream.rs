//! The TLS transport: [`TlsStream`] drives a sans-IO [`TlsCodec`] over a blocking stream.
//!
//! Plaintext is decrypted in rustls's record buffer and copied once, straight into the
//! caller's buffer: for a WebSocket, the spare space of the frame reader's buffer.

use std::io::{self, ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use tickwire_core::feed::SocketStamp;
use tickwire_tls::{Owed, Plaintext, TlsCodec, TlsError};

use crate::{Readiness, Transport, TransportError};

/// A TLS connection over a blocking stream. Reads return plaintext; writes encrypt and write
/// through at once (one record batch per `write` call, no implicit buffering).
#[derive(Debug)]
pub struct TlsStream<S> {
    sock: S,
    codec: TlsCodec,
    /// close_notify was sent ([`Transport::shutdown_write`]): the connection is over for us.
    closed_for_writing: bool,
    /// A feed's: the kernel receive time of the socket reads, when taken.
    pub(crate) kernel: SocketStamp,
}

impl<S: Transport> TlsStream<S> {
    /// Wraps a connected stream; call [`handshake`](Self::handshake) before use (reads and
    /// writes would otherwise drive the handshake with no deadline).
    pub fn new(sock: S, codec: TlsCodec) -> Self {
        Self {
            sock,
            codec,
            closed_for_writing: false,
            kernel: SocketStamp::default(),
        }
    }

    /// One socket read into the codec: a [`Transport::recv_stamped`] when a feed takes the
    /// kernel's time.
    fn read_tls(&mut self) -> io::Result<usize> {
        if !self.kernel.is_on() {
            return self.codec.read_tls_from(&mut self.sock);
        }
        let mut stamped = StampedRead {
            sock: &mut self.sock,
            at: &mut self.kernel,
        };
        self.codec.read_tls_from(&mut stamped)
    }

    /// Runs the TLS handshake to completion or until `deadline` (then
    /// [`TransportError::HandshakeTimeout`]). A TLS failure is [`TransportError::Tls`]; the fatal alert owed to
    /// the peer is written first (best effort), and a server answers a plaintext client with
    /// an HTTP 400 instead.
    pub fn handshake(&mut self, deadline: Instant) -> Result<(), TransportError> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TransportError::HandshakeTimeout);
            }
            if self.codec.wants_write() {
                self.sock.set_write_timeout(Some(left))?;
                match self.write_queued() {
                    Ok(()) => {}
                    Err(e) if is_timeout(&e) => return Err(TransportError::HandshakeTimeout),
                    Err(e) => return Err(crate::stream::io_error(self, e)),
                }
            }
            if !self.codec.is_handshaking() {
                self.sock.set_write_timeout(None)?;
                return Ok(());
            }
            self.sock.set_read_timeout(Some(left))?;
            match self.codec.read_tls_from(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => return Err(TransportError::HandshakeTimeout),
                Err(e) => return Err(self.failed(e)),
            }
        }
    }

    /// A read failed: write what the peer is owed and return the typed error.
    fn failed(&mut self, error: io::Error) -> TransportError {
        self.owe_peer();
        crate::stream::io_error(self, error)
    }

    /// After a TLS failure, writes what the peer is owed ([`TlsCodec::owed_to_peer`] decides),
    /// best effort and bounded.
    fn owe_peer(&mut self) {
        let _ = self.sock.set_write_timeout(Some(Duration::from_secs(1)));
        match self.codec.owed_to_peer() {
            Owed::Nothing => {}
            Owed::Alert => {
                let _ = self.write_queued();
            }
            Owed::Plaintext(bytes) => {
                let _ = self.sock.write_all(bytes);
            }
        }
    }

    /// Writes every queued ciphertext byte.
    fn write_queued(&mut self) -> io::Result<()> {
        while self.codec.wants_write() {
            match self.codec.write_tls_to(&mut self.sock) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Writes the queued ciphertext the socket takes now ([`Transport::try_write`]); the rest
    /// stays queued, first in line. Returns the bytes written.
    fn push_queued(&mut self) -> io::Result<usize> {
        let mut written = 0;
        while self.codec.wants_write() {
            match self.codec.write_tls_to(&mut TryWriter(&mut self.sock)) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => return Err(e),
            }
        }
        Ok(written)
    }

    /// The TLS state (negotiated version, cipher suite, ALPN, peer certificates).
    pub fn codec(&self) -> &TlsCodec {
        &self.codec
    }

    /// The codec, to drive by hand: encrypt ahead of time with
    /// [`TlsCodec::write_plaintext`] and [`TlsCodec::write_tls`], change the buffer limit,
    /// queue a close_notify. Ciphertext left queued in it goes out first on this stream's next
    /// write or flush; ciphertext taken out with `write_tls` is the caller's to put on the
    /// wire, in order, before anything else.
    pub fn codec_mut(&mut self) -> &mut TlsCodec {
        &mut self.codec
    }

    /// The underlying stream.
    pub fn get_ref(&self) -> &S {
        &self.sock
    }

    /// The underlying stream, mutably (socket options).
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.sock
    }
}

/// The socket's [`Transport::try_write`] as a `Write`, for rustls to write ciphertext through.
struct TryWriter<'a, S>(&'a mut S);

impl<S: Transport> Write for TryWriter<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A socket read through [`Transport::recv_stamped`], keeping the kernel's time of what it
/// read.
struct StampedRead<'a, S> {
    sock: &'a mut S,
    at: &'a mut SocketStamp,
}

impl<S: Transport> Read for StampedRead<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, at) = self.sock.recv_stamped(buf)?;
        self.at.note(n, at);
        Ok(n)
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

impl<S: Transport> Read for TlsStream<S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        if self.closed_for_writing {
            return self.discard_until_eof();
        }
        loop {
            match self.codec.read_plaintext(buf).map_err(TlsError::into_io)? {
                Plaintext::Data(n) => return Ok(n),
                Plaintext::CloseNotify | Plaintext::Eof => return Ok(0),
                Plaintext::NeedMore => {}
            }
            // A key update or a ticket may owe the peer a reply: written if the socket takes
            // it now, else it stays queued for the next write (a read never blocks on a write:
            // the peer may be waiting for us to read before it reads).
            self.push_queued()?;
            match self.read_tls() {
                Ok(_) => {}
                Err(e) if self.codec.error().is_some() => {
                    self.owe_peer();
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl<S: Transport> TlsStream<S> {
    /// After our close_notify, what the peer still sends is read and dropped until it closes
    /// (the transport's drain before close). It is not decrypted: rustls 0.23 debug builds
    /// assert on a corrupt record after a sent alert (rustls issue #959), and nothing after a
    /// completed close handshake is data anyone reads.
    fn discard_until_eof(&mut self) -> io::Result<usize> {
        let mut sink = [0u8; 4096];
        loop {
            match self.sock.read(&mut sink) {
                Ok(0) => return Ok(0),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

impl<S: Transport> Write for TlsStream<S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut n = self.codec.write_plaintext(buf).map_err(TlsError::into_io)?;
        self.write_queued()?;
        if n == 0 && !buf.is_empty() {
            n = self.codec.write_plaintext(buf).map_err(TlsError::into_io)?;
            self.write_queued()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_queued()?;
        self.sock.flush()
    }
}

impl<S: Transport> Transport for TlsStream<S> {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.sock.set_write_timeout(timeout)
    }

    /// Sends close_notify, then closes the write direction. Later reads drop what arrives
    /// until the peer closes, then return 0.
    fn shutdown_write(&mut self) -> io::Result<()> {
        self.closed_for_writing = true;
        self.codec.send_close_notify();
        self.write_queued()?;
        self.sock.shutdown_write()
    }

    /// The codec's recorded [`TlsError`], once TLS failed (else the stream underneath's:
    /// TLS to a proxy, under the server's). Asking the codec keeps the typed error out of
    /// `io::Error` (no downcast), and it stays the answer for every later call, as the
    /// connection is finished.
    fn failure(&self) -> Option<TransportError> {
        match self.codec.error() {
            Some(error) => Some(TransportError::Tls(error.clone())),
            None => self.sock.failure(),
        }
    }

    /// Pushes queued ciphertext first; new plaintext is taken (encrypted, queued, pushed)
    /// only once none is left, so at most one write's records wait in the codec. A partial
    /// record is finished before anything else goes out. `Ok(0)`: queued ciphertext went
    /// out, but some is left, so none of `buf` was taken.
    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let pushed = self.push_queued()?;
        if self.codec.wants_write() {
            return if pushed > 0 {
                Ok(0)
            } else {
                Err(ErrorKind::WouldBlock.into())
            };
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let n = self.codec.write_plaintext(buf).map_err(TlsError::into_io)?;
        self.push_queued()?;
        if n == 0 {
            return Err(ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    /// Its own records, or the stream underneath's (TLS to a proxy).
    fn has_pending_write(&self) -> bool {
        self.codec.wants_write() || self.sock.has_pending_write()
    }

    /// One socket read at most, so a wait never blocks on the rest of a record while this
    /// end's own records wait to be written (the peer may be stuck the same way).
    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() || self.closed_for_writing {
            return self.read(buf);
        }
        for socket_read in [true, false] {
            match self.codec.read_plaintext(buf).map_err(TlsError::into_io)? {
                Plaintext::Data(n) => return Ok(n),
                Plaintext::CloseNotify | Plaintext::Eof => return Ok(0),
                Plaintext::NeedMore if !socket_read => break,
                Plaintext::NeedMore => {}
            }
            self.push_queued()?;
            match self.read_tls() {
                Ok(_) => {}
                Err(e) if self.codec.error().is_some() => {
                    self.owe_peer();
                    return Err(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(ErrorKind::WouldBlock.into())
    }

    /// Readable at once, without a syscall, while decrypted data waits in the codec.
    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        if self.codec.has_plaintext() {
            return Ok(Readiness {
                readable: true,
                writable: false,
            });
        }
        self.sock.wait_duplex(write, timeout)
    }
}
