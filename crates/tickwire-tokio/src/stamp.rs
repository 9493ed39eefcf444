//! [`Stamped`]: a stream that stamps each read that returns bytes, for the feed driver's
//! receive timestamps. Only feed connections are wrapped: a plain `WebSocket` reads no
//! clock.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use tickwire_core::TransportError;
use tickwire_core::feed::{ReadStamps, StampedStream};

use crate::{MaybeTlsStream, Transport};

/// A tokio feed connection's stream: each poll that reads bytes is stamped as its
/// [`ReadStamps`] say (the kernel's time with `recvmsg` on the ready socket, where they
/// take it).
#[derive(Debug)]
pub struct Stamped(pub(crate) StampedStream<MaybeTlsStream>);

impl Stamped {
    /// How its reads are stamped.
    pub(crate) fn stamps(&self) -> &ReadStamps {
        &self.0.stamps
    }
}

impl Transport for Stamped {
    fn failure(&self) -> Option<TransportError> {
        self.0.inner.failure()
    }

    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        self.0.inner.poll_read_ready(cx)
    }

    fn can_signal_read_ready(&self) -> bool {
        self.0.inner.can_signal_read_ready()
    }

    fn read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        if self.0.stamps.kernel() && !self.0.inner.is_tls() {
            return Some(
                try_recv_stamped(self.0.inner.tcp(), buf).map(|(n, kernel)| {
                    self.0.stamps.record(n, kernel);
                    n
                }),
            );
        }
        let read = self.0.inner.read_now(buf);
        if let Some(Ok(n)) = read {
            self.0.stamps.record(n, self.0.inner.0.kernel_ns());
        }
        read
    }
}

impl Stamped {
    /// `poll_read` with kernel timestamps: one `recvmsg` on plain TCP; under TLS, the
    /// plaintext and the time of the socket read that completed its records.
    fn poll_read_kernel(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.0.inner.is_tls() {
            let before = buf.filled().len();
            std::task::ready!(Pin::new(&mut self.0.inner).poll_read(cx, buf))?;
            let kernel = self.0.inner.0.kernel_ns();
            self.0.stamps.record(buf.filled().len() - before, kernel);
            return Poll::Ready(Ok(()));
        }
        let (n, kernel) = std::task::ready!(poll_recv_stamped(
            self.0.inner.tcp(),
            cx,
            buf.initialize_unfilled()
        ))?;
        self.0.stamps.record(n, kernel);
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// One `recvmsg(2)` on `tcp` once it is readable, with the kernel's receive time of what it
/// read (`SO_TIMESTAMPING` on): the feed's plain and TLS socket reads.
pub(crate) fn poll_recv_stamped(
    tcp: &tokio::net::TcpStream,
    cx: &mut Context<'_>,
    buf: &mut [u8],
) -> Poll<io::Result<(usize, Option<u64>)>> {
    loop {
        std::task::ready!(tcp.poll_read_ready(cx))?;
        match try_recv_stamped(tcp, buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            read => return Poll::Ready(read),
        }
    }
}

/// One `recvmsg(2)` on `tcp` if it is ready now, with the kernel's receive time (Linux).
#[cfg(target_os = "linux")]
fn try_recv_stamped(
    tcp: &tokio::net::TcpStream,
    buf: &mut [u8],
) -> io::Result<(usize, Option<u64>)> {
    tcp.try_io(tokio::io::Interest::READABLE, || {
        tickwire_core::feed::kernel::recv(tcp, buf)
    })
}

/// No kernel timestamps off Linux (never asked for: `kernel_reads` says no).
#[cfg(not(target_os = "linux"))]
fn try_recv_stamped(
    tcp: &tokio::net::TcpStream,
    buf: &mut [u8],
) -> io::Result<(usize, Option<u64>)> {
    tcp.try_read(buf).map(|n| (n, None))
}

impl AsyncRead for Stamped {
    #[inline]
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.0.stamps.kernel() {
            return this.poll_read_kernel(cx, buf);
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.0.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) {
            this.0.stamps.record(buf.filled().len() - before, None);
        }
        polled
    }
}

impl AsyncWrite for Stamped {
    #[inline]
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0.inner).poll_write(cx, buf)
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.0.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0.inner).poll_shutdown(cx)
    }
}
