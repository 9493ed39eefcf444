//! What a transport stream must offer beyond `Read + Write`: the [`Stream`] trait and its
//! implementation for `TcpStream`. The bottom layer of the transports: the TLS stream, the
//! WebSocket and the HTTP session are built on it, and it names none of them.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

/// A byte stream a WebSocket or an HTTP session runs over.
///
/// Implemented for `TcpStream`; a TLS stream implements it too. The default methods suit a
/// stream with no timeouts or half-close (an in-memory pipe in a test).
pub trait Stream: Read + Write {
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
}

impl Stream for TcpStream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_read_timeout(self, timeout)
    }

    fn set_write_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        TcpStream::set_write_timeout(self, timeout)
    }

    fn shutdown_write(&mut self) -> io::Result<()> {
        self.shutdown(Shutdown::Write)
    }
}
