//! [`Stamped`]: a stream that stamps each read that returns bytes, for the feed driver's
//! receive timestamps. Only feed connections are wrapped: a plain `WebSocket` reads no
//! clock.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use tickwire_core::TransportError;
use tickwire_core::feed::StampCell;

use crate::{MaybeTlsStream, Transport};

/// A feed connection's stream, its reads stamped into a shared [`StampCell`].
#[derive(Debug)]
pub(crate) struct Stamped {
    inner: MaybeTlsStream,
    cell: Arc<StampCell>,
    epoch: Instant,
}

impl Stamped {
    pub(crate) fn new(inner: MaybeTlsStream, cell: Arc<StampCell>, epoch: Instant) -> Self {
        Self { inner, cell, epoch }
    }

    /// Where its reads are stamped.
    pub(crate) fn cell(&self) -> &Arc<StampCell> {
        &self.cell
    }
}

impl Transport for Stamped {
    fn failure(&self) -> Option<TransportError> {
        self.inner.failure()
    }

    fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Option<Poll<io::Result<()>>> {
        self.inner.poll_read_ready(cx)
    }

    fn can_signal_read_ready(&self) -> bool {
        self.inner.can_signal_read_ready()
    }

    fn read_now(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        let read = self.inner.read_now(buf);
        if let Some(Ok(n)) = read
            && n > 0
        {
            self.cell.record(self.epoch);
        }
        read
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
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.cell.record(this.epoch);
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
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    #[inline]
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
