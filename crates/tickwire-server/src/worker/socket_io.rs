//! The socket loops of one connection: reading a request head, writing a response, writing
//! queued output (one run with `send(2)`, short slices staged, the rest with `writev(2)`),
//! and dropping what a lingering peer still sends.
//!
//! It owns how each loop treats `WouldBlock`, `Interrupted` and a zero-length write. It does
//! not own what the bytes mean (the codec does) nor what a result does to the connection
//! (its phases do).

use std::io::{self, IoSlice, Read, Write};

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::ws::{Buffers, Connection};

use crate::transport::Transport;

/// Slices per vectored write: a subscriber owed a round of topic messages (each a shared
/// frame, so a slice of its own, between its own frames) gets them in one `writev`; at 16,
/// a round of 27 messages took two (pub/sub, 1,000 subscribers).
const WRITE_SLICES: usize = 64;

/// Output of many slices up to this size is copied into the worker's staging buffer and
/// sent in one run.
pub(super) const STAGE: usize = 16 << 10;

/// Writes queued output until it is all written (`true`) or the socket would block.
pub(super) fn flush(
    stream: &mut impl Transport,
    conn: &mut Connection,
    bufs: &mut Buffers,
    stage: &mut Vec<u8>,
) -> io::Result<bool> {
    while conn.wants_write(bufs) {
        let result = {
            let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
            let count = conn.output_vectored(bufs, &mut slices);
            // One run (the usual case: this wake-up's replies, contiguous) goes out with
            // send(2), as uWebSockets does: writev(2) costs the kernel an iovec import and
            // the longer vfs_writev path for the same bytes (vfs_writev alone was 2.6% of the
            // worker's samples at 1,000 connections x 8 in flight).
            if count == 1 {
                stream.write(&slices[0])
            } else if slices[..count].iter().map(|s| s.len()).sum::<usize>() <= STAGE {
                // Many short slices (a round of topic messages, each a shared frame): one
                // contiguous send(2) costs the kernel less than writev(2)'s per-slice work.
                // The copy is the worker's, transient; the queues still share the frames.
                stage.clear();
                for slice in &slices[..count] {
                    stage.extend_from_slice(slice);
                }
                stream.write(stage)
            } else {
                stream.write_vectored(&slices[..count])
            }
        };
        match result {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => conn.advance_output(bufs, n),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    // TLS: records made from what was taken and not yet written.
    stream.flush_pending()
}

/// Reads and drops what the peer sends (a failed connection lingering before its close):
/// `Ok(true)` at its end of stream, `Ok(false)` once the socket is empty.
pub(super) fn discard(stream: &mut impl Read, read: &mut ReadBuf) -> io::Result<bool> {
    loop {
        // Read into the spare space without recording it: the bytes are dropped.
        match stream.read(read.spare()) {
            Ok(0) => return Ok(true),
            Ok(_) => {}
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => return Ok(false),
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
}

/// Reads a request head into `read` until the socket would block or the buffer is full;
/// true at end of stream.
pub(super) fn read_head(stream: &mut impl Read, read: &mut ReadBuf) -> io::Result<bool> {
    loop {
        let spare = read.spare();
        if spare.is_empty() {
            // The head limit is below the buffer size: the handshake refuses it (431).
            return Ok(false);
        }
        match stream.read(spare) {
            Ok(0) => return Ok(true),
            Ok(n) => read.filled(n),
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => return Ok(false),
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
}

/// Writes as much of `bytes` as the socket takes now.
pub(super) fn write_some(stream: &mut impl Write, bytes: &[u8]) -> io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        match stream.write(&bytes[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => break,
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
    Ok(written)
}
