//! [`Stamped`]: a stream that stamps each read that returns bytes, for the feed driver's
//! receive timestamps. Only feed connections are wrapped: a plain `WebSocket` reads no
//! clock.

use std::io::{self, Read, Write};
use std::time::Duration;

use tickwire_core::feed::{ReadStamps, StampedStream};

use crate::{MaybeTlsStream, Readiness, Transport};

/// A blocking feed connection's stream: each read that returns bytes is stamped as its
/// [`ReadStamps`] say (the kernel's time with `recvmsg`, where they take it).
#[derive(Debug)]
pub struct Stamped(pub(crate) StampedStream<MaybeTlsStream>);

impl Stamped {
    pub(crate) fn tcp(&self) -> &std::net::TcpStream {
        self.0.inner.tcp()
    }

    pub(crate) fn stamps(&self) -> &ReadStamps {
        &self.0.stamps
    }

    /// One read with the kernel's time of it: a `recvmsg` on plain TCP; under TLS, the
    /// time of the socket read that completed the records this plaintext came from.
    fn read_kernel(&mut self, buf: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
        if self.0.inner.is_tls() {
            let n = self.0.inner.read(buf)?;
            return Ok((n, self.0.inner.kernel_ns()));
        }
        #[cfg(target_os = "linux")]
        return tickwire_core::feed::kernel::recv(self.0.inner.tcp(), buf);
        #[cfg(not(target_os = "linux"))]
        return self.0.inner.read(buf).map(|n| (n, None));
    }
}

impl Read for Stamped {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let (n, kernel) = if self.0.stamps.kernel() {
            self.read_kernel(buf)?
        } else {
            (self.0.inner.read(buf)?, None)
        };
        self.0.stamps.record(n, kernel);
        Ok(n)
    }
}

impl Write for Stamped {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.inner.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.0.inner.write_vectored(bufs)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.inner.flush()
    }
}

impl Transport for Stamped {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.0.inner.set_read_timeout(timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.0.inner.set_write_timeout(timeout)
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        self.0.inner.shutdown_write()
    }

    fn failure(&self) -> Option<crate::TransportError> {
        self.0.inner.failure()
    }

    fn try_write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.inner.try_write(buf)
    }

    fn has_pending_write(&self) -> bool {
        self.0.inner.has_pending_write()
    }

    fn read_ready(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.0.inner.read_ready(buf)?;
        self.0.stamps.record(n, self.0.inner.kernel_ns());
        Ok(n)
    }

    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        self.0.inner.wait_duplex(write, timeout)
    }
}
