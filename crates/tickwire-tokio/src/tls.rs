//! [`TlsStream`]: the sans-IO [`TlsCodec`] driven over a tokio `TcpStream`, as
//! `AsyncRead + AsyncWrite`. No tokio-rustls: the codec owns TLS; this file only moves
//! ciphertext between it and the socket.
//!
//! Ciphertext is read with `try_read` straight into rustls's record buffer (after
//! `poll_read_ready`), decrypted in place, and copied once into the caller's buffer: for a
//! WebSocket, the spare space of the connection's read buffer. Writes encrypt into records
//! and push them out at once; what the socket does not take stays queued in the codec and goes
//! out first on the next write or flush, so a record is never split by another.

use std::io::{self, ErrorKind, Read, Write};
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use tickwire_core::TransportError;
use tickwire_core::feed::SocketStamp;
use tickwire_tls::{Owed, Plaintext, TlsCodec, TlsError};

/// How long a failed handshake may take to write what the peer is owed (an alert, a 400).
const OWED_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// A TLS connection over a tokio `TcpStream`: reads return plaintext, writes encrypt.
#[derive(Debug)]
pub(crate) struct TlsStream {
    tcp: TcpStream,
    codec: TlsCodec,
    /// close_notify was queued (`poll_shutdown`): later reads drop what arrives until EOF.
    closed_for_writing: bool,
    /// A feed's: the kernel receive time of the socket reads, when taken.
    pub(crate) kernel: SocketStamp,
}

impl TlsStream {
    /// Wraps a connected socket; run [`handshake`](Self::handshake) before use.
    pub(crate) fn new(tcp: TcpStream, codec: TlsCodec) -> Self {
        Self {
            tcp,
            codec,
            closed_for_writing: false,
            kernel: SocketStamp::default(),
        }
    }

    /// Runs the TLS handshake to completion before `deadline` (else
    /// [`TransportError::HandshakeTimeout`]). On a TLS failure the peer is first sent what it
    /// is owed (the fatal alert, or an HTTP 400 to a plaintext client of a server), best
    /// effort and bounded.
    pub(crate) async fn handshake(&mut self, deadline: Instant) -> Result<(), TransportError> {
        match tokio::time::timeout_at(deadline, self.drive_handshake()).await {
            Ok(result) => result,
            Err(_) => Err(TransportError::HandshakeTimeout),
        }
    }

    async fn drive_handshake(&mut self) -> Result<(), TransportError> {
        loop {
            if let Err(e) = std::future::poll_fn(|cx| self.poll_write_queued(cx)).await {
                return Err(self.typed(e));
            }
            if !self.codec.is_handshaking() {
                return Ok(());
            }
            // The same reader as the traffic's: waits for the socket, then one read.
            let read = std::future::poll_fn(|cx| {
                let (codec, tcp) = (&mut self.codec, &mut self.tcp);
                let kernel = None;
                match codec.read_tls_from(&mut PollRead { tcp, cx, kernel }) {
                    Err(e) if e.kind() == ErrorKind::WouldBlock => Poll::Pending,
                    other => Poll::Ready(other),
                }
            })
            .await;
            match read {
                Ok(_) => {}
                Err(e) => {
                    self.owe_peer().await;
                    return Err(self.typed(e));
                }
            }
        }
    }

    /// After a TLS failure in the handshake, writes what the peer is owed
    /// ([`TlsCodec::owed_to_peer`] decides), best effort and bounded.
    async fn owe_peer(&mut self) {
        let owed = async {
            match self.codec.owed_to_peer() {
                Owed::Nothing => {}
                Owed::Alert => {
                    let _ = std::future::poll_fn(|cx| self.poll_write_queued(cx)).await;
                }
                Owed::Plaintext(bytes) => {
                    use tokio::io::AsyncWriteExt;
                    let _ = self.tcp.write_all(bytes).await;
                }
            }
        };
        let _ = tokio::time::timeout(OWED_WRITE_TIMEOUT, owed).await;
    }

    /// The TLS state (version, cipher suite, ALPN, peer certificates).
    pub(crate) fn codec(&self) -> &TlsCodec {
        &self.codec
    }

    /// The socket underneath.
    pub(crate) fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// The codec's recorded failure, typed; `None` while TLS is healthy.
    pub(crate) fn failure(&self) -> Option<TransportError> {
        self.codec.error().cloned().map(TransportError::Tls)
    }

    fn typed(&self, error: io::Error) -> TransportError {
        self.failure().unwrap_or(TransportError::Io(error))
    }

    /// Writes every queued ciphertext byte, or registers for write readiness.
    fn poll_write_queued(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.codec.wants_write() {
            ready!(self.tcp.poll_write_ready(cx))?;
            match self.codec.write_tls_to(&mut TryIo(&self.tcp)) {
                Ok(0) => return Poll::Ready(Err(ErrorKind::WriteZero.into())),
                Ok(_) => {}
                // Readiness was stale: `poll_write_ready` registers on the next turn.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Queued ciphertext, without registering a waker: the read side answers a key update
    /// if the socket takes it now, and leaves it to the next write or flush otherwise (the
    /// writer's waker must not be replaced by the reader's).
    fn try_write_queued(&mut self) -> io::Result<()> {
        while self.codec.wants_write() {
            match self.codec.write_tls_to(&mut TryIo(&self.tcp)) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// After our close_notify, what the peer still sends is read and dropped until it
    /// closes: it is not decrypted (rustls issue #959, see the blocking `TlsStream`).
    fn poll_discard_until_eof(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut sink = [0u8; 4096];
        loop {
            ready!(self.tcp.poll_read_ready(cx))?;
            match self.tcp.try_read(&mut sink) {
                Ok(0) => return Poll::Ready(Ok(())),
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncRead for TlsStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.closed_for_writing {
            return this.poll_discard_until_eof(cx);
        }
        if buf.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            match this
                .codec
                .read_plaintext(buf.initialize_unfilled())
                .map_err(TlsError::into_io)?
            {
                Plaintext::Data(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Plaintext::CloseNotify | Plaintext::Eof => return Poll::Ready(Ok(())),
                Plaintext::NeedMore => {}
            }
            // A key update owes the peer a reply.
            this.try_write_queued()?;
            // Through tokio's `poll_read`, not `try_read`: a read shorter than rustls asked
            // for says the socket is drained and clears its readiness, so the next receive
            // waits for the wake-up instead of first trying a `recv` that finds nothing.
            let kernel = this.kernel.is_on().then_some(&mut this.kernel);
            match this.codec.read_tls_from(&mut PollRead {
                tcp: &mut this.tcp,
                cx,
                kernel,
            }) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    if this.codec.error().is_some() {
                        // The fatal alert, if the socket takes it now.
                        let _ = this.try_write_queued();
                    }
                    return Poll::Ready(Err(e));
                }
            }
        }
    }
}

impl AsyncWrite for TlsStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        // Earlier records first: the codec's queue stays bounded by one write's worth.
        ready!(this.poll_write_queued(cx))?;
        let n = this.codec.write_plaintext(buf).map_err(TlsError::into_io)?;
        // Push the new records now. Whatever the socket does not take stays queued (the
        // bytes are accepted: they are encrypted) and goes first on the next write or flush.
        if let Poll::Ready(Err(e)) = this.poll_write_queued(cx)
            && n == 0
        {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().poll_write_queued(cx)
    }

    /// Sends close_notify, then closes the write direction. Later reads drop what arrives
    /// until the peer closes, then return end of stream.
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.closed_for_writing {
            this.closed_for_writing = true;
            this.codec.send_close_notify();
        }
        ready!(this.poll_write_queued(cx))?;
        Pin::new(&mut this.tcp).poll_shutdown(cx)
    }
}

/// The socket as a `Read` inside a poll: `Pending` is `WouldBlock`, with the waker
/// registered.
struct PollRead<'a, 'b> {
    tcp: &'a mut TcpStream,
    cx: &'a mut Context<'b>,
    /// With kernel timestamps: where the time of a read goes.
    kernel: Option<&'a mut SocketStamp>,
}

impl Read for PollRead<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(at) = &mut self.kernel {
            return match crate::stamp::poll_recv_stamped(self.tcp, self.cx, buf) {
                Poll::Ready(Ok((n, kernel))) => {
                    at.note(n, kernel);
                    Ok(n)
                }
                Poll::Ready(Err(e)) => Err(e),
                Poll::Pending => Err(ErrorKind::WouldBlock.into()),
            };
        }
        let mut read = ReadBuf::new(buf);
        match Pin::new(&mut *self.tcp).poll_read(self.cx, &mut read) {
            Poll::Ready(Ok(())) => Ok(read.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(ErrorKind::WouldBlock.into()),
        }
    }
}

/// The socket as a `std::io` writer that never waits: `try_write`, `WouldBlock` when not
/// ready. The codec writes its records through it in place (reads go through [`PollRead`]).
struct TryIo<'a>(&'a TcpStream);

impl Write for TryIo<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
