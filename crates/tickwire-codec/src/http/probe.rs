//! The verdict of a liveness check of an idle client connection (the "probe" that
//! [`ClientSession::before_request`](super::ClientSession::before_request) asks for), without
//! I/O.
//!
//! This module owns what each outcome of the check's non-blocking calls means. It does not
//! own the calls: the transport makes them (a `recv(MSG_PEEK | MSG_DONTWAIT)` on the socket,
//! and over TLS a read through the TLS layer that never waits) and reports each result here.
//!
//! The rule of thumb: reconnecting is never wrong, reusing a stale connection is. Only a
//! connection that certainly has nothing to say is [`Probe::Open`].

use std::io::{self, ErrorKind};

use super::Probe;

/// One liveness check, as a state machine over the transport's non-blocking calls.
///
/// ```
/// use std::io::ErrorKind;
/// use tickwire_codec::http::{IdleProbe, Probe, ProbeStep};
///
/// // A TLS connection with a session ticket waiting: the TLS layer takes it, nothing is left.
/// let mut probe = IdleProbe::new(true);
/// assert_eq!(probe.peeked(Ok(1)), ProbeStep::ReadTls);
/// assert_eq!(probe.tls_read(Err(ErrorKind::WouldBlock.into())), ProbeStep::Peek);
/// assert_eq!(probe.peeked(Err(ErrorKind::WouldBlock.into())), ProbeStep::Done(Probe::Open));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct IdleProbe {
    tls: bool,
    /// The TLS layer has read what was there: what is still readable it could not take.
    after_tls: bool,
}

/// The next call a transport makes for an [`IdleProbe`], or its verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeStep {
    /// Peek at the socket without waiting and report it with [`IdleProbe::peeked`].
    Peek,
    /// Read through the TLS layer without waiting (into spare space of the read buffer)
    /// and report it with [`IdleProbe::tls_read`].
    ReadTls,
    /// The check is over: give this to
    /// [`ClientSession::after_probe`](super::ClientSession::after_probe).
    Done(Probe),
}

impl IdleProbe {
    /// A check of a connection that is TLS (`tls`) or plain. Start with
    /// [`ProbeStep::Peek`]: call [`peeked`](Self::peeked).
    pub fn new(tls: bool) -> Self {
        Self {
            tls,
            after_tls: false,
        }
    }

    /// A non-blocking peek of one byte returned `result`: nothing to read (would block)
    /// leaves the connection open, end of stream or an error closes it, and a byte is
    /// unexpected on a plain connection. Over TLS a byte may be a record with no data (a
    /// session ticket, a key update): the TLS layer reads it first, unless it already has.
    pub fn peeked(&mut self, result: io::Result<usize>) -> ProbeStep {
        match result {
            Err(e) if e.kind() == ErrorKind::WouldBlock => ProbeStep::Done(Probe::Open),
            Ok(0) | Err(_) => ProbeStep::Done(Probe::Closed),
            Ok(_) if self.tls && !self.after_tls => ProbeStep::ReadTls,
            // Over TLS: bytes the TLS layer could not take yet (part of a record).
            Ok(_) if self.tls => ProbeStep::Done(Probe::Closed),
            Ok(_) => ProbeStep::Done(Probe::Unexpected),
        }
    }

    /// A non-blocking read through the TLS layer returned `result`: plaintext is
    /// unexpected, end of stream (close_notify) or an error closes, an interrupted read is
    /// made again, and a read that would block took only records without data: peek again
    /// to see that it took every byte there was.
    pub fn tls_read(&mut self, result: io::Result<usize>) -> ProbeStep {
        match result {
            Err(e) if e.kind() == ErrorKind::Interrupted => ProbeStep::ReadTls,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                self.after_tls = true;
                ProbeStep::Peek
            }
            Ok(0) | Err(_) => ProbeStep::Done(Probe::Closed),
            Ok(_) => ProbeStep::Done(Probe::Unexpected),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn would_block() -> io::Result<usize> {
        Err(ErrorKind::WouldBlock.into())
    }

    #[test]
    fn a_quiet_connection_is_open_an_ended_or_failed_one_closed() {
        for tls in [false, true] {
            assert_eq!(
                IdleProbe::new(tls).peeked(would_block()),
                ProbeStep::Done(Probe::Open)
            );
            assert_eq!(
                IdleProbe::new(tls).peeked(Ok(0)),
                ProbeStep::Done(Probe::Closed)
            );
            let reset = Err(ErrorKind::ConnectionReset.into());
            assert_eq!(
                IdleProbe::new(tls).peeked(reset),
                ProbeStep::Done(Probe::Closed)
            );
            // Interrupted tells nothing: reconnecting is never wrong.
            let interrupted = Err(ErrorKind::Interrupted.into());
            assert_eq!(
                IdleProbe::new(tls).peeked(interrupted),
                ProbeStep::Done(Probe::Closed)
            );
        }
    }

    #[test]
    fn bytes_on_a_plain_connection_are_unexpected() {
        assert_eq!(
            IdleProbe::new(false).peeked(Ok(1)),
            ProbeStep::Done(Probe::Unexpected)
        );
    }

    #[test]
    fn over_tls_records_without_data_leave_it_open_anything_else_closes_it() {
        let mut probe = IdleProbe::new(true);
        assert_eq!(probe.peeked(Ok(1)), ProbeStep::ReadTls);
        let interrupted = Err(ErrorKind::Interrupted.into());
        assert_eq!(probe.tls_read(interrupted), ProbeStep::ReadTls);
        assert_eq!(probe.tls_read(would_block()), ProbeStep::Peek);
        assert_eq!(probe.peeked(would_block()), ProbeStep::Done(Probe::Open));

        // Part of a record the TLS layer could not take yet.
        let mut probe = IdleProbe::new(true);
        assert_eq!(probe.peeked(Ok(1)), ProbeStep::ReadTls);
        assert_eq!(probe.tls_read(would_block()), ProbeStep::Peek);
        assert_eq!(probe.peeked(Ok(1)), ProbeStep::Done(Probe::Closed));

        for (read, verdict) in [
            (Ok(5), Probe::Unexpected),
            (Ok(0), Probe::Closed),
            (Err(ErrorKind::InvalidData.into()), Probe::Closed),
        ] {
            let mut probe = IdleProbe::new(true);
            assert_eq!(probe.peeked(Ok(1)), ProbeStep::ReadTls);
            assert_eq!(probe.tls_read(read), ProbeStep::Done(verdict));
        }
    }
}
