//! [`Stamped`]: a stream that stamps each read that returns bytes, for the feed driver's
//! receive timestamps. Only feed connections are wrapped: a plain `WebSocket` reads no
//! clock.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwire_core::feed::StampCell;

use crate::{MaybeTlsStream, Readiness, Transport};

/// `S` whose reads are stamped into a shared [`StampCell`].
#[derive(Debug)]
pub(crate) struct Stamped<S> {
    inner: S,
    cell: Arc<StampCell>,
    epoch: Instant,
}

impl<S> Stamped<S> {
    pub(crate) fn new(inner: S, cell: Arc<StampCell>, epoch: Instant) -> Self {
        Self { inner, cell, epoch }
    }
}

impl Stamped<MaybeTlsStream> {
    pub(crate) fn tcp(&self) -> &std::net::TcpStream {
        self.inner.tcp()
    }
}

impl<S: Read> Read for Stamped<S> {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.cell.record(self.epoch);
        }
        Ok(n)
    }
}

impl<S: Write> Write for Stamped<S> {
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

impl<S: Transport> Transport for Stamped<S> {
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
            self.cell.record(self.epoch);
        }
        Ok(n)
    }

    fn wait_duplex(&mut self, write: bool, timeout: Option<Duration>) -> io::Result<Readiness> {
        self.inner.wait_duplex(write, timeout)
    }
}
