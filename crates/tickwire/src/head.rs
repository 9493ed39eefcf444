//! Reading an HTTP head (the upgrade request or its response) off a blocking socket, within
//! the handshake deadline.

use std::io::ErrorKind;
use std::time::Instant;

use tickwire_codec::handshake::HandshakeError;

use crate::{Error, Stream};

/// Reads until `parse` finds a complete head at the start of the bytes read; returns what it
/// parsed, the head's length and every byte read (the rest belongs to the frame reader).
/// `parse` enforces the head size limit on partial input.
pub(crate) fn read_head<T, S: Stream>(
    stream: &mut S,
    deadline: Instant,
    mut parse: impl FnMut(&[u8]) -> Result<Option<(T, usize)>, HandshakeError>,
) -> Result<(T, usize, Vec<u8>), Error> {
    let mut received = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some((head, consumed)) = parse(&received)? {
            return Ok((head, consumed, received));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Error::HandshakeTimeout);
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut chunk) {
            Ok(0) => return Err(Error::UnexpectedEof),
            Ok(n) => received.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(Error::HandshakeTimeout);
            }
            Err(e) => return Err(Error::from(e)),
        }
    }
}
