//! Mode 1: a real client and server whose transmissions the fuzzer splits and may corrupt.
//!
//! Input: a flags byte (bit 0 a TLS 1.2-only server, bit 1 ALPN, bit 2 0.5-RTT data from the
//! server, bit 3 client data written before the handshake, bit 4 close_notify both ways at the
//! end, bit 5 corrupt a byte), the transmission to corrupt, the offset (u16) and the XOR mask,
//! the payload sizes (u16 each, at most 40 000 bytes), then the piece sizes each side's
//! incoming bytes are fed in.
//!
//! Oracle: with no corruption the handshake completes, ALPN and the version are what the
//! configurations say, and each side's data arrives intact, in order, once. With a corrupted
//! byte, either the same, or a typed error on a side: that side fails for good, and the alert
//! it owes reaches the other side, which then either fails with a typed error or sees a
//! close. Never a panic, never more plaintext than was sent.

use tickwire_tls::{TlsCodec, TlsError, TlsVersion};

use crate::common::{
    Bytes, HOST, check_failed_for_good, check_typed, configs, drain, read_available,
};

/// Rounds of (client to server, server to client) before the exchange must have settled.
const MAX_ROUNDS: usize = 64;
const MAX_PAYLOAD: usize = 40_000;

/// One side of the connection and what it has sent and received.
struct Side {
    codec: TlsCodec,
    /// The data this side sends, and how much of it the codec has taken.
    payload: Vec<u8>,
    sent: usize,
    received: Vec<u8>,
    /// This side sent close_notify; the peer's close_notify arrived.
    closed: bool,
    peer_closed: bool,
    /// Piece sizes of the bytes fed to this side (cycled; whole when empty).
    pieces: Vec<usize>,
}

impl Side {
    fn new(codec: TlsCodec, payload: Vec<u8>, pieces: Vec<usize>) -> Self {
        Self {
            codec,
            payload,
            sent: 0,
            received: Vec::new(),
            closed: false,
            peer_closed: false,
            pieces,
        }
    }

    /// Hands the codec as much of the payload as it takes now.
    fn write(&mut self) {
        if self.sent < self.payload.len() {
            let taken = self
                .codec
                .write_plaintext(&self.payload[self.sent..])
                .expect("write_plaintext on a live connection");
            self.sent += taken;
        }
    }
}

/// The corruption the fuzzer asked for: XOR `mask` into the byte at `offset` (modulo the
/// length) of transmission number `transmission`.
struct Corruption {
    transmission: usize,
    offset: usize,
    mask: u8,
}

pub(crate) fn run(mut input: Bytes<'_>) {
    let flags = input.byte();
    let (tls12, alpn, half_rtt, early_client_data, close, corrupt) = (
        flags & 1 != 0,
        flags & 2 != 0,
        flags & 4 != 0,
        flags & 8 != 0,
        flags & 16 != 0,
        flags & 32 != 0,
    );
    let corruption = Corruption {
        transmission: usize::from(input.byte() % 16),
        offset: usize::from(input.u16()),
        mask: input.byte().max(1),
    };
    let corruption = corrupt.then_some(corruption);
    let client_payload = pattern(usize::from(input.u16()).min(MAX_PAYLOAD), 1);
    let server_payload = pattern(usize::from(input.u16()).min(MAX_PAYLOAD), 2);
    let client_pieces = input.pieces();
    let server_pieces = input.pieces();

    let configs = configs();
    let server_config = if tls12 {
        &configs.server_tls12
    } else if half_rtt {
        &configs.server_half_rtt
    } else if alpn {
        &configs.server_alpn
    } else {
        &configs.server
    };
    let client_config = if alpn {
        &configs.client_alpn
    } else {
        &configs.client
    };
    let mut client = Side::new(
        TlsCodec::client(client_config, HOST).expect("client"),
        client_payload,
        client_pieces,
    );
    let mut server = Side::new(
        TlsCodec::server(server_config).expect("server"),
        server_payload,
        server_pieces,
    );
    if early_client_data {
        client.write();
    }

    let mut transmission = 0;
    let mut corrupted = false;
    for _ in 0..MAX_ROUNDS {
        let mut moved = 0;
        for client_sends in [true, false] {
            let (from, to) = if client_sends {
                (&mut client, &mut server)
            } else {
                (&mut server, &mut client)
            };
            // The server writes once it has seen the hello (0.5-RTT) or after the handshake.
            if !from.codec.is_handshaking() || (half_rtt && !client_sends) {
                from.write();
            }
            let done_sending = !from.codec.is_handshaking() && from.sent == from.payload.len();
            if close && done_sending && !from.closed {
                from.codec.send_close_notify();
                from.closed = true;
            }
            let mut wire = drain(&mut from.codec);
            if wire.is_empty() {
                continue;
            }
            moved += wire.len();
            // Not to a side that sent close_notify: rustls 0.23 debug-asserts that no fatal
            // alert follows close_notify, and a corrupted record makes it send one
            // (rustls/rustls#959). Release builds send the alert; debug builds panic.
            let target = corruption
                .as_ref()
                .filter(|c| c.transmission == transmission && !to.closed);
            if let Some(c) = target {
                let at = c.offset % wire.len();
                wire[at] ^= c.mask;
                corrupted = true;
            }
            transmission += 1;
            if let Err(error) = deliver(to, &wire) {
                assert!(corrupted, "a failure without corruption: {error:?}");
                settle_failure(to, from, &error);
                return;
            }
        }
        if moved == 0 && settled(&client) && settled(&server) {
            break;
        }
    }

    // What arrived is what was sent, so far.
    assert!(
        server.payload.starts_with(&client.received),
        "server data altered"
    );
    assert!(
        client.payload.starts_with(&server.received),
        "client data altered"
    );
    let complete = !client.codec.is_handshaking()
        && !server.codec.is_handshaking()
        && client.received.len() == server.payload.len()
        && server.received.len() == client.payload.len()
        && (!close || client.peer_closed && server.peer_closed);
    if corrupted && !complete {
        // A corrupted record length leaves a side waiting for bytes that never come: the
        // end of the stream tells it, with a typed error or a clean end.
        end_of_stream(&mut client);
        end_of_stream(&mut server);
        return;
    }

    // No failure: everything arrived, intact.
    assert!(
        settled(&client) && settled(&server),
        "the exchange did not settle"
    );
    assert!(complete, "the exchange stalled without corruption");
    assert!(!client.codec.is_handshaking() && !server.codec.is_handshaking());
    assert!(
        client.received == server.payload,
        "server data altered or lost"
    );
    assert!(
        server.received == client.payload,
        "client data altered or lost"
    );
    let version = if tls12 {
        TlsVersion::Tls12
    } else {
        TlsVersion::Tls13
    };
    assert_eq!(client.codec.protocol_version(), Some(version));
    assert_eq!(server.codec.protocol_version(), Some(version));
    let protocol = (alpn && !tls12).then_some(&b"http/1.1"[..]);
    if !tls12 {
        assert_eq!(client.codec.alpn_protocol(), protocol);
    }
    if close {
        assert!(client.closed && server.closed);
    }
}

/// The transport of `side` ends.
fn end_of_stream(side: &mut Side) {
    match side.codec.read_tls(&[]) {
        Ok(taken) => {
            assert_eq!(taken, 0);
            let read = read_available(&mut side.codec, &mut side.received, MAX_PAYLOAD)
                .expect("read_plaintext after a clean end");
            assert!(read.eof || read.close_notify, "{:?}", side.codec.error());
        }
        Err(error) => {
            assert!(
                matches!(error, TlsError::TruncatedRecord | TlsError::HandshakeEof),
                "{error:?} at the end of the stream"
            );
            check_failed_for_good(&mut side.codec, &error);
        }
    }
}

/// Done on one side: all its data handed to the codec and, with close_notify, sent.
fn settled(side: &Side) -> bool {
    side.sent == side.payload.len() && !side.codec.wants_write()
}

/// Feeds `wire` to `to` in its pieces, reading plaintext as it comes.
fn deliver(to: &mut Side, wire: &[u8]) -> Result<(), TlsError> {
    let limit = MAX_PAYLOAD;
    let mut sizes = to.pieces.iter().copied().cycle();
    let mut at = 0;
    while at < wire.len() {
        let end = sizes
            .next()
            .map_or(wire.len(), |size| (at + size).min(wire.len()));
        let mut piece = &wire[at..end];
        while !piece.is_empty() {
            let taken = to.codec.read_tls(piece)?;
            piece = &piece[taken..];
            let read = read_available(&mut to.codec, &mut to.received, limit)
                .expect("read_plaintext fails only after a failed read");
            if read.close_notify {
                // Bytes after close_notify are ignored: nothing more to feed.
                to.peer_closed = true;
                return Ok(());
            }
            assert!(!read.eof, "end of stream that nobody sent");
            assert!(taken > 0 || read.bytes > 0, "no progress");
        }
        at = end;
    }
    Ok(())
}

/// `failed` could not take what `peer` sent: it fails for good, and the alert it owes (if
/// any) reaches `peer`, which then fails with a typed error or takes it as a close.
fn settle_failure(failed: &mut Side, peer: &mut Side, error: &TlsError) {
    check_typed(error);
    let alert = drain(&mut failed.codec);
    check_failed_for_good(&mut failed.codec, error);
    if alert.is_empty() || peer.codec.error().is_some() {
        return;
    }
    match peer.codec.read_tls(&alert) {
        Ok(_) => {
            // A warning-level alert, or none readable: the peer is still sound.
            let _ = read_available(&mut peer.codec, &mut peer.received, MAX_PAYLOAD);
        }
        Err(peer_error) => check_failed_for_good(&mut peer.codec, &peer_error),
    }
}

/// `len` bytes of a pattern, different per side.
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i % 251) as u8 ^ seed.wrapping_mul(0x35))
        .collect()
}
