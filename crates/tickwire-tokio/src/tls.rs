//! [`TlsStream`]: the sans-IO [`TlsCodec`] driven over a tokio `TcpStream` (or, for the
//! server's TLS through an `https://` proxy, over the TLS stream to the proxy), as
//! `AsyncRead + AsyncWrite`. No tokio-rustls: the codec owns TLS; this file only moves
//! ciphertext between it and the [`Carrier`] underneath.
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

/// A TLS connection over a tokio `TcpStream` (or another [`Carrier`]): reads return
/// plaintext, writes encrypt.
#[derive(Debug)]
pub(crate) struct TlsStream<S = TcpStream> {
    tcp: S,
    codec: TlsCodec,
    /// close_notify was queued (`poll_shutdown`): later reads drop what arrives until EOF.
    closed_for_writing: bool,
    /// A feed's: the kernel receive time of the socket reads, when taken.
    pub(crate) kernel: SocketStamp,
}

impl<S: Carrier> TlsStream<S> {
    /// Wraps a connected socket; run [`handshake`](Self::handshake) before use.
    pub(crate) fn new(tcp: S, codec: TlsCodec) -> Self {
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
        self.tcp.tcp()
    }

    /// The stream underneath (TLS to a proxy, under the server's).
    pub(crate) fn carrier(&self) -> &S {
        &self.tcp
    }

    /// The stream underneath, mutably.
    pub(crate) fn carrier_mut(&mut self) -> &mut S {
        &mut self.tcp
    }

    /// The codec's recorded failure, typed (else the stream underneath's: TLS to a proxy);
    /// `None` while TLS is healthy.
    pub(crate) fn failure(&self) -> Option<TransportError> {
        match self.codec.error() {
            Some(error) => Some(TransportError::Tls(error.clone())),
            None => self.tcp.failure(),
        }
    }

    fn typed(&self, error: io::Error) -> TransportError {
        self.failure().unwrap_or(TransportError::Io(error))
    }

    /// Writes every queued ciphertext byte, or registers for write readiness.
    fn poll_write_queued(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.codec.wants_write() {
            match self.codec.write_tls_to(&mut PollWrite {
                tcp: &mut self.tcp,
                cx,
            }) {
                Ok(0) => return Poll::Ready(Err(ErrorKind::WriteZero.into())),
                Ok(_) => {}
                // The carrier registered the waker.
                Err(e) if e.kind() == ErrorKind::WouldBlock => return Poll::Pending,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
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
            match self.codec.write_tls_to(&mut TryIo(&mut self.tcp)) {
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
            match ready!(self.tcp.poll_recv(cx, &mut sink, None)) {
                Ok(0) => return Poll::Ready(Ok(())),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl<S: Carrier> AsyncRead for TlsStream<S> {
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

impl<S: Carrier> AsyncWrite for TlsStream<S> {
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

/// What a [`TlsStream`] runs over: the socket, or (for the server's TLS through an
/// `https://` proxy) the TLS stream to the proxy. Reads and writes in the shape the codec
/// wants them; `Pending` registers the waker, as `poll_*` do.
pub(crate) trait Carrier: AsyncRead + AsyncWrite + Unpin {
    /// The socket at the bottom.
    fn tcp(&self) -> &TcpStream;

    /// One read into `buf`, with the kernel's receive time noted in `kernel` where the
    /// carrier is the socket.
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        kernel: Option<&mut SocketStamp>,
    ) -> Poll<io::Result<usize>>;

    /// One write of what `bufs` holds (some of it).
    fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>>;

    /// What the carrier takes now, registering nothing: `WouldBlock` when it takes nothing.
    fn try_send(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize>;

    /// Why the carrier failed, when it knows more than its `io::Error`.
    fn failure(&self) -> Option<TransportError> {
        None
    }
}

impl Carrier for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }

    #[inline]
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        kernel: Option<&mut SocketStamp>,
    ) -> Poll<io::Result<usize>> {
        if let Some(at) = kernel {
            let (n, stamp) = ready!(crate::stamp::poll_recv_stamped(self, cx, buf))?;
            at.note(n, stamp);
            return Poll::Ready(Ok(n));
        }
        // Through tokio's `poll_read`, not `try_read`: a read shorter than asked for says
        // the socket is drained and clears its readiness, so the next receive waits for the
        // wake-up instead of first trying a `recv` that finds nothing.
        let mut read = ReadBuf::new(buf);
        ready!(Pin::new(self).poll_read(cx, &mut read))?;
        Poll::Ready(Ok(read.filled().len()))
    }

    #[inline]
    fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.poll_write_ready(cx))?;
            match self.try_write_vectored(bufs) {
                // Readiness was stale: `poll_write_ready` registers on the next turn.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                other => return Poll::Ready(other),
            }
        }
    }

    #[inline]
    fn try_send(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.try_write_vectored(bufs)
    }
}

/// TLS to an `https://` proxy, carrying the server's TLS.
impl Carrier for TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        &self.tcp
    }

    /// The kernel's time, when a feed takes it, is this stream's own (its socket reads).
    fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
        _kernel: Option<&mut SocketStamp>,
    ) -> Poll<io::Result<usize>> {
        let mut read = ReadBuf::new(buf);
        ready!(Pin::new(self).poll_read(cx, &mut read))?;
        Poll::Ready(Ok(read.filled().len()))
    }

    fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
        Pin::new(self).poll_write(cx, first)
    }

    /// Encrypts only once the earlier records are out, so at most one write's records wait.
    fn try_send(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.try_write_queued()?;
        if self.codec.wants_write() {
            return Err(ErrorKind::WouldBlock.into());
        }
        let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
        let n = self
            .codec
            .write_plaintext(first)
            .map_err(TlsError::into_io)?;
        // Taken is taken: what the socket refuses now goes first on the next write.
        let _ = self.try_write_queued();
        if n == 0 && !first.is_empty() {
            return Err(ErrorKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn failure(&self) -> Option<TransportError> {
        TlsStream::failure(self)
    }
}

/// The carrier as a `Read` inside a poll: `Pending` is `WouldBlock`, with the waker
/// registered.
struct PollRead<'a, 'b, S> {
    tcp: &'a mut S,
    cx: &'a mut Context<'b>,
    /// With kernel timestamps: where the time of a read goes.
    kernel: Option<&'a mut SocketStamp>,
}

impl<S: Carrier> Read for PollRead<'_, '_, S> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let kernel = self.kernel.as_deref_mut();
        match self.tcp.poll_recv(self.cx, buf, kernel) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(ErrorKind::WouldBlock.into()),
        }
    }
}

/// The carrier as a `Write` inside a poll: `Pending` is `WouldBlock`, with the waker
/// registered. The codec writes its records through it in place.
struct PollWrite<'a, 'b, S> {
    tcp: &'a mut S,
    cx: &'a mut Context<'b>,
}

impl<S: Carrier> Write for PollWrite<'_, '_, S> {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[io::IoSlice::new(buf)])
    }

    #[inline]
    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self.tcp.poll_send(self.cx, bufs) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(ErrorKind::WouldBlock.into()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The carrier as a `std::io` writer that never waits: `WouldBlock` when not ready, no
/// waker registered.
struct TryIo<'a, S>(&'a mut S);

impl<S: Carrier> Write for TryIo<'_, S> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_send(&[io::IoSlice::new(buf)])
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.try_send(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
