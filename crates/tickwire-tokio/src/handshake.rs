//! The opening handshake's I/O, shared by the client and the server: write a head, read
//! until the codec has what it needs. Deadlines are the callers' (`timeout_at`); every
//! decision is [`tickwire_codec::handshake`]'s.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tickwire_codec::buf::ReadBuf;
use tickwire_core::TransportError;

use crate::Transport;

/// Bytes asked of the socket per read during an opening handshake.
const HANDSHAKE_READ: usize = 4 << 10;

/// Reads once into `buf` (the codec bounds how far it grows). End of stream is
/// [`TransportError::UnexpectedEof`].
pub(crate) async fn read_some<S: Transport>(
    stream: &mut S,
    buf: &mut ReadBuf,
) -> Result<(), TransportError> {
    if buf.spare().is_empty() {
        buf.reserve(HANDSHAKE_READ);
    }
    match stream.read(buf.spare()).await {
        Ok(0) => Err(TransportError::UnexpectedEof),
        Ok(n) => {
            buf.filled(n);
            Ok(())
        }
        Err(e) => Err(stream.failure().unwrap_or(TransportError::Io(e))),
    }
}

/// Writes all of `bytes` and flushes (a TLS stream's records).
pub(crate) async fn write_all<S: Transport>(
    stream: &mut S,
    bytes: &[u8],
) -> Result<(), TransportError> {
    let written = async {
        stream.write_all(bytes).await?;
        stream.flush().await
    }
    .await;
    written.map_err(|e| stream.failure().unwrap_or(TransportError::Io(e)))
}
