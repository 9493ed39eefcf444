//! [`Stamped`]: a stream that stamps each read that returns bytes, for the feed driver's
//! receive timestamps. Only feed connections are wrapped: a plain `WebSocket` reads no
//! clock.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use tickwire_core::feed::{StampCell, Timestamps};

use crate::{MaybeTlsStream, Readiness, Transport};

/// A feed connection's stream, its reads stamped into a shared [`StampCell`].
#[derive(Debug)]
pub(crate) struct Stamped {
    inner: MaybeTlsStream,
    cell: Arc<StampCell>,
    /// Kernel timestamps on (a plain TCP stream on Linux): `recvmsg` replaces `read`.
    kernel: bool,
}

impl Stamped {
    /// Wraps `inner`; with [`Timestamps::Kernel`] on a `ws://` stream (Linux), turns the
    /// socket's receive timestamps on.
    pub(crate) fn new(
        inner: MaybeTlsStream,
        cell: Arc<StampCell>,
        timestamps: Timestamps,
    ) -> io::Result<Self> {
        let kernel = tickwire_core::feed::kernel_reads(timestamps, inner.is_tls(), inner.tcp())?;
        Ok(Self {
            inner,
            cell,
            kernel,
        })
    }

    pub(crate) fn tcp(&self) -> &std::net::TcpStream {
        self.inner.tcp()
    }

    /// One `recvmsg` with the kernel's time of what it read.
    #[cfg(target_os = "linux")]
    fn read_kernel(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        tickwire_core::feed::kernel::recv(self.inner.tcp(), buf)
    }

    #[cfg(not(target_os = "linux"))]
    fn read_kernel(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        self.inner.read(buf).map(|n| (n, None))
    }
}

impl Read for Stamped {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, kernel) = if self.kernel {
            self.read_kernel(buf)?
        } else {
            (self.inner.read(buf)?, None)
        };
        if n > 0 {
            self.cell.record(kernel);
        }
        Ok(n)
    }
}

impl Write for Stamped {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.inner.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Transport for Stamped {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.set_read_timeout(timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.inner.set_write_timeout(timeout)
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        self.inner.shutdown_write()
    }

    fn failure(&self) -> Option<crate::TransportError> {
        self.inner.failure()
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.try_write(buf)
    }

    fn has_pending_write(&self) -> bool {
        self.inner.has_pending_write()
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read_ready(buf)?;
        if n > 0 {
            self.cell.record(None);
        }
        Ok(n)
    }

    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        self.inner.wait_duplex(write, timeout)
    }
}
