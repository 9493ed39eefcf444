//! [`TlsCodec`]: a sans-IO TLS connection (client or server) over rustls.
//!
//! Ciphertext goes in through [`TlsCodec::read_tls`] (from a slice) or
//! [`TlsCodec::read_tls_from`] (from any reader, straight into rustls's record buffer, where the
//! record is decrypted in place). Plaintext comes out through [`TlsCodec::read_plaintext`] into
//! the caller's buffer (the protocol reader's spare space). The buffered rustls API copies
//! each record's plaintext twice: into a buffer of its own as the record is processed
//! (rustls 0.23), then into the caller's. Outgoing plaintext is encrypted into records by
//! [`TlsCodec::write_plaintext`] and leaves through [`TlsCodec::write_tls`] /
//! [`TlsCodec::write_tls_to`].

use std::io::{self, Read, Write};

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{Connection, HandshakeKind, ProtocolVersion};

use crate::{ClientTlsConfig, ServerTlsConfig, TlsError};

/// What a server writes, unencrypted, to a client that sent plaintext to its TLS port (after
/// [`TlsError::NotTls`]): an HTTP 400 that says why, instead of a TLS alert the client cannot
/// read. Shared by every transport's server side.
pub const PLAINTEXT_ON_TLS_PORT: &[u8] = b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\
Content-Type: text/plain\r\nContent-Length: 44\r\n\r\nThis port speaks TLS: use https:// or wss://";

/// What [`TlsCodec::read_plaintext`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plaintext {
    /// This many plaintext bytes were copied out.
    Data(usize),
    /// No plaintext is buffered: feed more ciphertext.
    NeedMore,
    /// The peer sent close_notify: no more data will come (a clean end of stream).
    CloseNotify,
    /// The transport ended at a record boundary without close_notify. A protocol with its
    /// own end marker (a WebSocket close, a Content-Length) can accept this; a body read until
    /// close cannot tell it from truncation.
    Eof,
}

/// The negotiated protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsVersion {
    /// TLS 1.2 (RFC 5246).
    Tls12,
    /// TLS 1.3 (RFC 8446).
    Tls13,
}

/// A TLS connection as a state machine: bytes in, bytes out, no I/O of its own.
#[derive(Debug)]
pub struct TlsCodec {
    conn: Connection,
    records: RecordTracker,
    /// The first fatal error, returned again by every later call.
    failed: Option<TlsError>,
    eof: bool,
}

impl TlsCodec {
    /// A client connection to `host`: a DNS name (sent as SNI and checked against the
    /// certificate) or an IP address (checked against the certificate's IP SANs; no SNI is
    /// sent, RFC 6066 §3). Brackets around an IPv6 address are accepted.
    pub fn client(config: &ClientTlsConfig, host: &str) -> Result<Self, TlsError> {
        let host = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        let name = ServerName::try_from(host.to_owned())
            .map_err(|_| TlsError::InvalidServerName(host.to_owned()))?;
        let conn = rustls::ClientConnection::new(config.rustls().clone(), name)
            .map_err(TlsError::from_rustls)?;
        Ok(Self::new(Connection::Client(conn)))
    }

    /// A server connection.
    pub fn server(config: &ServerTlsConfig) -> Result<Self, TlsError> {
        let conn = rustls::ServerConnection::new(config.rustls().clone())
            .map_err(TlsError::from_rustls)?;
        Ok(Self::new(Connection::Server(conn)))
    }

    fn new(conn: Connection) -> Self {
        Self {
            conn,
            records: RecordTracker::default(),
            failed: None,
            eof: false,
        }
    }

    /// True until the handshake completes.
    pub fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// True when ciphertext (handshake messages, records, alerts) waits to be written.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Feeds ciphertext and processes the complete records in it; returns how many bytes were
    /// taken: all of them, unless more than 16 KiB of plaintext waits unread (rustls's limit),
    /// then less, possibly none: read plaintext, then call again with the rest. Bytes after a
    /// close_notify are ignored (taken as 0). An empty slice is the end of the stream, as
    /// `Ok(0)` from a reader is for [`read_tls_from`](Self::read_tls_from). A handshake or
    /// protocol failure is returned here, and the alert rustls queued for the peer is ready
    /// in [`write_tls`](Self::write_tls).
    pub fn read_tls(&mut self, ciphertext: &[u8]) -> Result<usize, TlsError> {
        let mut rest = ciphertext;
        // rustls reads at most a few KiB per call: loop until all is taken.
        loop {
            match self.read_tls_from(&mut rest) {
                // The end of the stream (an empty slice), or nothing is read after close_notify.
                Ok(0) => break,
                Ok(_) if rest.is_empty() => break,
                Ok(_) => {}
                // A slice never fails to read: an error that did not fail the connection is
                // rustls refusing ciphertext. With plaintext waiting (kind Other) that is
                // backpressure.
                Err(e) => match &self.failed {
                    Some(error) => return Err(error.clone()),
                    None if e.kind() == io::ErrorKind::Other => break,
                    None => {
                        let error = TlsError::Protocol(e.to_string());
                        self.failed = Some(error.clone());
                        return Err(error);
                    }
                },
            }
        }
        Ok(ciphertext.len() - rest.len())
    }

    /// Reads ciphertext from `reader` (one `read` call) straight into rustls's buffer and
    /// processes it. `Ok(0)` is end of stream: an error when it falls inside a record or the
    /// handshake. A TLS failure comes back as an `io::Error` of kind `InvalidData` (its text
    /// is the [`TlsError`]'s) and is recorded: [`error`](Self::error) returns it, typed.
    /// While more than 16 KiB of plaintext waits unread, rustls reads nothing and this
    /// returns an `io::Error` of kind `Other` that is no TLS failure (`error()` stays `None`):
    /// read plaintext first.
    pub fn read_tls_from<R: Read>(&mut self, reader: &mut R) -> io::Result<usize> {
        if let Some(error) = &self.failed {
            return Err(error.clone().into_io());
        }
        let mut tap = Tap {
            inner: reader,
            records: &mut self.records,
            not_tls: false,
            ended: false,
        };
        let n = self.conn.read_tls(&mut tap)?;
        let (not_tls, ended) = (tap.not_tls, tap.ended);
        if n == 0 {
            self.eof = true;
            // Unless the reader ended, rustls read nothing because the peer sent close_notify:
            // what follows it is ignored (RFC 8446 §6.1), however the tracker saw it.
            if ended && self.records.mid_record() {
                return Err(self.fail(TlsError::TruncatedRecord));
            }
            if self.conn.is_handshaking() {
                return Err(self.fail(TlsError::HandshakeEof));
            }
            return Ok(0);
        }
        match self.conn.process_new_packets() {
            // Non-TLS bytes after a close_notify in the same read are ignored too.
            Ok(state) if not_tls && !state.peer_has_closed() => Err(self.fail(TlsError::NotTls)),
            Ok(_) => Ok(n),
            Err(_) if not_tls => Err(self.fail(TlsError::NotTls)),
            Err(error) => Err(self.fail(TlsError::from_rustls(error))),
        }
    }

    fn fail(&mut self, error: TlsError) -> io::Error {
        self.failed = Some(error.clone());
        error.into_io()
    }

    /// The first fatal error, if the connection failed.
    pub fn error(&self) -> Option<&TlsError> {
        self.failed.as_ref()
    }

    /// Copies decrypted application data into `out`. After a failure, returns the failure
    /// (plaintext still buffered is dropped with the connection).
    pub fn read_plaintext(&mut self, out: &mut [u8]) -> Result<Plaintext, TlsError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        if out.is_empty() {
            return Ok(Plaintext::NeedMore);
        }
        match self.conn.reader().read(out) {
            Ok(0) => Ok(Plaintext::CloseNotify),
            Ok(n) => Ok(Plaintext::Data(n)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if self.eof {
                    Ok(Plaintext::Eof)
                } else {
                    Ok(Plaintext::NeedMore)
                }
            }
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(Plaintext::Eof),
            Err(e) => Err(TlsError::Protocol(e.to_string())),
        }
    }

    /// Whether [`read_plaintext`](Self::read_plaintext) answers without more ciphertext:
    /// decrypted data waits, the peer closed or the stream ended, or the connection failed.
    /// A transport asks this before it waits on the socket.
    pub fn has_plaintext(&mut self) -> bool {
        if self.failed.is_some() || self.eof {
            return true;
        }
        match self.conn.process_new_packets() {
            Ok(state) => state.plaintext_bytes_to_read() > 0 || state.peer_has_closed(),
            Err(error) => {
                self.failed = Some(TlsError::from_rustls(error));
                true
            }
        }
    }

    /// Encrypts application data into records queued for [`write_tls`](Self::write_tls).
    /// Before the handshake completes the plaintext is buffered. Returns how much was taken:
    /// less than `data.len()` when the outgoing buffer limit is reached (write the queued
    /// ciphertext, then call again).
    pub fn write_plaintext(&mut self, data: &[u8]) -> Result<usize, TlsError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        self.conn
            .writer()
            .write(data)
            .map_err(|e| TlsError::Protocol(e.to_string()))
    }

    /// Moves queued ciphertext into `out`; returns the bytes written.
    pub fn write_tls(&mut self, mut out: &mut [u8]) -> usize {
        let before = out.len();
        while self.conn.wants_write() && !out.is_empty() {
            if self.conn.write_tls(&mut out).is_err() {
                break;
            }
        }
        before - out.len()
    }

    /// Writes queued ciphertext to `writer` (one vectored write); returns the bytes written.
    pub fn write_tls_to<W: Write>(&mut self, writer: &mut W) -> io::Result<usize> {
        self.conn.write_tls(writer)
    }

    /// Queues close_notify: the peer learns that no more data follows. Feed nothing more
    /// after it when the connection is done: a debug build of rustls 0.23 asserts on a corrupt
    /// record arriving after a sent alert (rustls issue #959; `TlsStream` drains raw bytes
    /// instead).
    pub fn send_close_notify(&mut self) {
        self.conn.send_close_notify();
    }

    /// Limits the ciphertext queued by [`write_plaintext`](Self::write_plaintext) (default
    /// 64 KiB; `None` lifts the limit).
    pub fn set_buffer_limit(&mut self, limit: Option<usize>) {
        self.conn.set_buffer_limit(limit);
    }

    /// The ALPN protocol both sides agreed on.
    pub fn alpn_protocol(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// The negotiated protocol version, once known.
    pub fn protocol_version(&self) -> Option<TlsVersion> {
        match self.conn.protocol_version()? {
            ProtocolVersion::TLSv1_2 => Some(TlsVersion::Tls12),
            ProtocolVersion::TLSv1_3 => Some(TlsVersion::Tls13),
            _ => None,
        }
    }

    /// The negotiated cipher suite's IANA name (`TLS13_AES_128_GCM_SHA256`).
    pub fn cipher_suite(&self) -> Option<String> {
        self.conn
            .negotiated_cipher_suite()
            .map(|suite| format!("{:?}", suite.suite()))
    }

    /// True when the handshake resumed an earlier session.
    pub fn is_resumed(&self) -> bool {
        self.conn.handshake_kind() == Some(HandshakeKind::Resumed)
    }

    /// The peer's certificate chain (leaf first), once received. On a server, the client's
    /// certificate under mutual TLS.
    pub fn peer_certificates(&self) -> Option<&[CertificateDer<'static>]> {
        self.conn.peer_certificates()
    }

    /// True for the server side of a connection.
    pub fn is_server(&self) -> bool {
        matches!(self.conn, Connection::Server(_))
    }

    /// The SNI the client sent (server side).
    pub fn server_name(&self) -> Option<&str> {
        match &self.conn {
            Connection::Server(conn) => conn.server_name(),
            Connection::Client(_) => None,
        }
    }
}

/// Follows TLS record boundaries in the incoming bytes (5-byte headers, RFC 8446 §5.1), so an
/// end of stream inside a record is told apart from one between records, and a peer that
/// speaks plaintext is recognised by its first byte.
#[derive(Debug, Default)]
struct RecordTracker {
    /// Header bytes of the record being read, and how many of them arrived.
    header: [u8; 5],
    header_len: u8,
    /// Body bytes still to come of the current record.
    body_left: usize,
}

impl RecordTracker {
    /// Follows `bytes`; false when a record header is not TLS.
    fn observe(&mut self, mut bytes: &[u8]) -> bool {
        while !bytes.is_empty() {
            if self.body_left > 0 {
                let take = self.body_left.min(bytes.len());
                self.body_left -= take;
                bytes = &bytes[take..];
                continue;
            }
            if self.header_len == 0
                && let Some(header) = bytes.first_chunk::<5>()
            {
                // A whole header at hand (a read that starts on a record boundary, the
                // usual case): checked where it is, without assembling it.
                if !tls_header_start(header[0], Some(header[1])) {
                    return false;
                }
                self.body_left = u16::from_be_bytes([header[3], header[4]]) as usize;
                bytes = &bytes[5..];
                continue;
            }
            let want = 5 - self.header_len as usize;
            let take = want.min(bytes.len());
            self.header[self.header_len as usize..][..take].copy_from_slice(&bytes[..take]);
            self.header_len += take as u8;
            bytes = &bytes[take..];
            let second = (self.header_len >= 2).then_some(self.header[1]);
            if !tls_header_start(self.header[0], second) {
                return false;
            }
            if self.header_len == 5 {
                self.body_left = u16::from_be_bytes([self.header[3], self.header[4]]) as usize;
                self.header_len = 0;
            }
        }
        true
    }

    fn mid_record(&self) -> bool {
        self.header_len > 0 || self.body_left > 0
    }
}

/// Whether a record header may start with `first` and, once seen, `second`: content types
/// 20..=24 (change_cipher_spec .. heartbeat) and major version 3.
#[inline]
fn tls_header_start(first: u8, second: Option<u8>) -> bool {
    (20..=24).contains(&first) && second.is_none_or(|major| major == 3)
}

/// A reader that shows the record tracker every byte read through it (no copy), and notes
/// whether the inner reader reached its end.
struct Tap<'a, R> {
    inner: &'a mut R,
    records: &'a mut RecordTracker,
    not_tls: bool,
    ended: bool,
}

impl<R: Read> Read for Tap<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.ended = n == 0 && !buf.is_empty();
        if !self.records.observe(&buf[..n]) {
            self.not_tls = true;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::RecordTracker;

    /// What the tracker concludes after `bytes` fed in pieces of `chunk`: whether they are
    /// TLS so far, and if so whether they stop inside a record (after a refusal the codec
    /// has failed and asks nothing more).
    fn follow(bytes: &[u8], chunk: usize) -> (bool, bool) {
        let mut tracker = RecordTracker::default();
        for piece in bytes.chunks(chunk) {
            if !tracker.observe(piece) {
                return (false, false);
            }
        }
        (true, tracker.mid_record())
    }

    #[test]
    fn the_tracker_agrees_with_itself_however_the_bytes_are_cut() {
        // Three records (application data, a 0-byte body, an alert), then a header of the
        // wrong major version.
        let mut stream = vec![23, 3, 3, 0, 7];
        stream.extend([1; 7]);
        stream.extend([23, 3, 3, 0, 0]);
        stream.extend([21, 3, 3, 0, 2, 1, 0]);
        let records_end = stream.len();
        stream.extend([23, 2, 3, 0, 1, 9]);
        let boundaries = [0, 12, 17, records_end];
        for len in 0..=stream.len() {
            let cut = &stream[..len];
            let whole = follow(cut, cut.len().max(1));
            let expected = if len <= records_end {
                (true, !boundaries.contains(&len))
            } else if len == records_end + 1 {
                (true, true)
            } else {
                // The bad header is refused from its second byte on.
                (false, false)
            };
            assert_eq!(whole, expected, "{len} bytes at once");
            for chunk in 1..=8 {
                assert_eq!(
                    follow(cut, chunk),
                    expected,
                    "{len} bytes in pieces of {chunk}"
                );
            }
        }
        // A first byte outside the TLS content types is refused at once, whole or alone.
        assert_eq!(follow(b"GET / HTTP/1.1\r\n", 64), (false, false));
        assert_eq!(follow(b"G", 1), (false, false));
    }
}
