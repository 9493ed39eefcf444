//! What a worker reads from and writes to: a plain TCP socket, or (feature `tls`) TLS over
//! one through the sans-IO [`tickwire_tls::TlsCodec`]. A worker is built for one of the two,
//! so a plain connection pays nothing for TLS: its slot holds the socket alone (4 bytes), a
//! TLS one a pointer to the socket and the codec.
//!
//! `Read` gives plaintext (and, for TLS, drives the handshake and writes what rustls owes
//! the peer as it goes); `WouldBlock` means the socket is drained. `Write` takes plaintext;
//! for TLS, bytes taken are encrypted and owned by rustls until [`Transport::flush_pending`]
//! has written them.

use std::io::{self, Read, Write};

use mio::net::TcpStream;

use crate::handler::HandshakeFailure;

pub(crate) trait Transport: Read + Write + Sized {
    /// What making one needs (the TLS configuration).
    type Setup: Clone + Send + Sync + 'static;

    /// True for TLS (a plaintext refusal would be garbage to the client).
    const TLS: bool;

    /// A read that returned less than asked emptied the socket. True for a plain socket on
    /// Linux: a later arrival raises a new edge (each arrival wakes epoll), so the read that
    /// would only say `WouldBlock` can be skipped. False for TLS, whose reads come from
    /// rustls's buffer.
    const SHORT_READ_DRAINS: bool;

    /// Wraps an accepted socket.
    fn accept(socket: TcpStream, setup: &Self::Setup) -> io::Result<Self>;

    /// The socket (to register it, ask its peer, shut it down).
    fn socket(&mut self) -> &mut TcpStream;

    /// The socket's descriptor (for a batched send of a plain connection's bytes).
    fn fd(&self) -> std::os::fd::RawFd;

    /// Writes output the transport holds (TLS records); true when none is left.
    fn flush_pending(&mut self) -> io::Result<bool> {
        Ok(true)
    }

    /// What an I/O error of this transport during the opening handshake means (TLS: the
    /// typed TLS failure when there is one).
    fn failure(&self, error: io::Error) -> HandshakeFailure {
        HandshakeFailure::Io(error)
    }

    /// Ends the write side once what is pending is written (TLS: close_notify first).
    fn close_write(&mut self) {
        let _ = self.socket().shutdown(std::net::Shutdown::Write);
    }
}

impl Transport for TcpStream {
    type Setup = ();
    const TLS: bool = false;
    const SHORT_READ_DRAINS: bool = cfg!(target_os = "linux");

    fn accept(socket: TcpStream, (): &()) -> io::Result<Self> {
        Ok(socket)
    }

    fn socket(&mut self) -> &mut TcpStream {
        self
    }

    fn fd(&self) -> std::os::fd::RawFd {
        std::os::fd::AsRawFd::as_raw_fd(self)
    }
}

#[cfg(feature = "tls")]
pub(crate) use tls::Tls;

#[cfg(feature = "tls")]
mod tls {
    use std::io::{self, Read, Write};
    use std::sync::Arc;

    use mio::net::TcpStream;
    use tickwire_tls::{Owed, Plaintext, ServerTlsConfig, TlsCodec};

    use super::Transport;
    use crate::handler::HandshakeFailure;

    /// TLS over a socket: boxed, so that the slot of a TLS server stays a pointer wide.
    #[derive(Debug)]
    pub(crate) struct Tls(Box<Inner>);

    #[derive(Debug)]
    struct Inner {
        socket: TcpStream,
        codec: TlsCodec,
    }

    impl Inner {
        /// Writes queued records until none is left (`true`) or the socket would block.
        fn flush_records(&mut self) -> io::Result<bool> {
            while self.codec.wants_write() {
                match self.codec.write_tls_to(&mut self.socket) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(_) => {}
                    Err(error) => match error.kind() {
                        io::ErrorKind::WouldBlock => return Ok(false),
                        io::ErrorKind::Interrupted => {}
                        _ => return Err(error),
                    },
                }
            }
            Ok(true)
        }
    }

    impl Transport for Tls {
        type Setup = Arc<ServerTlsConfig>;
        const TLS: bool = true;
        const SHORT_READ_DRAINS: bool = false;

        fn accept(socket: TcpStream, config: &Arc<ServerTlsConfig>) -> io::Result<Self> {
            let codec = TlsCodec::server(config).map_err(io::Error::other)?;
            Ok(Self(Box::new(Inner { socket, codec })))
        }

        fn socket(&mut self) -> &mut TcpStream {
            &mut self.0.socket
        }

        fn fd(&self) -> std::os::fd::RawFd {
            std::os::fd::AsRawFd::as_raw_fd(&self.0.socket)
        }

        fn flush_pending(&mut self) -> io::Result<bool> {
            self.0.flush_records()
        }

        fn failure(&self, error: io::Error) -> HandshakeFailure {
            match self.0.codec.error() {
                Some(tls) => HandshakeFailure::Tls(tls.clone()),
                None => HandshakeFailure::Io(error),
            }
        }

        fn close_write(&mut self) {
            self.0.codec.send_close_notify();
            let _ = self.0.flush_records();
            let _ = self.0.socket.shutdown(std::net::Shutdown::Write);
        }
    }

    impl Read for Tls {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let inner = &mut *self.0;
            loop {
                match inner.codec.read_plaintext(out) {
                    Ok(Plaintext::Data(n)) => return Ok(n),
                    Ok(Plaintext::CloseNotify | Plaintext::Eof) => return Ok(0),
                    Ok(Plaintext::NeedMore) if out.is_empty() => return Ok(0),
                    Ok(Plaintext::NeedMore) => {}
                    Err(error) => return Err(io::Error::new(io::ErrorKind::InvalidData, error)),
                }
                match inner.codec.read_tls_from(&mut inner.socket) {
                    Ok(_) => {
                        // Handshake messages, a session ticket or an alert may be owed.
                        if inner.codec.wants_write() {
                            inner.flush_records()?;
                        }
                    }
                    Err(error) => match error.kind() {
                        io::ErrorKind::WouldBlock => return Err(error),
                        io::ErrorKind::Interrupted => {}
                        _ => {
                            // What the peer is owed: the alert, or a 400 to a plaintext client.
                            match inner.codec.owed_to_peer() {
                                Owed::Nothing => {}
                                Owed::Alert => {
                                    let _ = inner.flush_records();
                                }
                                Owed::Plaintext(bytes) => {
                                    let _ = inner.socket.write(bytes);
                                }
                            }
                            return Err(error);
                        }
                    },
                }
            }
        }
    }

    impl Write for Tls {
        fn write(&mut self, data: &[u8]) -> io::Result<usize> {
            let inner = &mut *self.0;
            // Records already made go first: rustls buffers at most its limit (64 KiB).
            inner.flush_records()?;
            let taken = inner
                .codec
                .write_plaintext(data)
                .map_err(|error| io::Error::new(io::ErrorKind::InvalidData, error))?;
            inner.flush_records()?;
            if taken == 0 && !data.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            Ok(taken)
        }

        fn flush(&mut self) -> io::Result<()> {
            self.0.flush_records().map(|_| ())
        }
    }
}
