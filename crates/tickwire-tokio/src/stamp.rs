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
    /// One `recvmsg` on the ready socket, with the kernel's time of what it read.
    #[cfg(target_os = "linux")]
    fn read_kernel(&self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        let tcp = self.0.inner.tcp();
        tcp.try_io(tokio::io::Interest::READABLE, || {
            tickwire_core::feed::kernel::recv(tcp, buf)
        })
    }

    #[cfg(not(target_os = "linux"))]
    fn read_kernel(&self, _buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        Err(io::ErrorKind::Unsupported.into())
    }

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
        if self.0.stamps.kernel() {
            return Some(self.read_kernel(buf).map(|(n, kernel)| {
                self.0.stamps.record(n, kernel);
                n
            }));
        }
        let read = self.0.inner.read_now(buf);
        if let Some(Ok(n)) = read {
            self.0.stamps.record(n, None);
        }
        read
    }
}

impl Stamped {
    /// `poll_read` with kernel timestamps: wait for readiness, then one `recvmsg`.
    fn poll_read_kernel(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            std::task::ready!(self.0.inner.tcp().poll_read_ready(cx))?;
            match self.read_kernel(buf.initialize_unfilled()) {
                Ok((n, kernel)) => {
                    self.0.stamps.record(n, kernel);
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
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
