//! Mode 0: arbitrary bytes to one codec, after an optional genuine first flight from a real
//! peer, at arbitrary split points, through `read_tls` or `read_tls_from`, optionally ended by
//! an end of stream. Input: a flags byte (bit 0 client, bit 1 genuine flight first, bit 2
//! through a reader, bit 3 end of stream), piece sizes, then the bytes (at most 8 KiB).
//!
//! Oracle: a result or a typed error at every call, the error final; no plaintext and no
//! close_notify can be forged (the peer's keys are unknown); every byte is taken; and the
//! verdicts agree with [`Walk`], a reference walk over the record headers of the same bytes.

use std::io;

use tickwire_tls::{Plaintext, TlsCodec, TlsError};

use crate::common::{
    Bytes, HOST, check_failed_for_good, check_typed, configs, drain, read_available,
};

/// The record structure of a byte stream, walked by the 5-byte headers (RFC 8446 §5.1).
#[derive(Debug)]
struct Walk {
    /// The offset of the first header byte that is no TLS: a content type outside
    /// change_cipher_spec (20) ..= heartbeat (24), or a major version other than 3.
    first_not_tls: Option<usize>,
    /// The stream ends inside a record (header or body).
    ends_inside_a_record: bool,
}

impl Walk {
    fn of(stream: &[u8]) -> Self {
        let mut at = 0;
        loop {
            let Some(&content_type) = stream.get(at) else {
                return Self {
                    first_not_tls: None,
                    ends_inside_a_record: false,
                };
            };
            let bad = if !(20..=24).contains(&content_type) {
                Some(at)
            } else if stream.get(at + 1).is_some_and(|&major| major != 3) {
                Some(at + 1)
            } else {
                None
            };
            if bad.is_some() {
                return Self {
                    first_not_tls: bad,
                    ends_inside_a_record: true,
                };
            }
            let Some(length) = stream.get(at + 3..at + 5) else {
                return Self {
                    first_not_tls: None,
                    ends_inside_a_record: true,
                };
            };
            at += 5 + usize::from(u16::from_be_bytes([length[0], length[1]]));
            if at > stream.len() {
                return Self {
                    first_not_tls: None,
                    ends_inside_a_record: true,
                };
            }
        }
    }
}

pub(crate) fn run(mut input: Bytes<'_>) {
    let flags = input.byte();
    let (is_client, genuine_first, via_reader, end_of_stream) = (
        flags & 1 != 0,
        flags & 2 != 0,
        flags & 4 != 0,
        flags & 8 != 0,
    );
    let pieces = input.pieces();
    let data = input.take(8 * 1024);

    let configs = configs();
    let (mut codec, mut stream) = if is_client {
        let mut client = TlsCodec::client(&configs.client, HOST).expect("client");
        let hello = drain(&mut client);
        let mut flight = Vec::new();
        if genuine_first {
            // The server's real answer to this client's hello: the handshake completes on
            // the client, and the bytes that follow meet an established connection.
            let mut server = TlsCodec::server(&configs.server).expect("server");
            assert_eq!(server.read_tls(&hello), Ok(hello.len()));
            flight = drain(&mut server);
        }
        (client, flight)
    } else {
        let server = TlsCodec::server(&configs.server).expect("server");
        let mut flight = Vec::new();
        if genuine_first {
            let mut client = TlsCodec::client(&configs.client, HOST).expect("client");
            flight = drain(&mut client);
        }
        (server, flight)
    };
    stream.extend_from_slice(data);
    let walk = Walk::of(&stream);

    let mut plaintext = Vec::new();
    let mut sizes = pieces.iter().copied().cycle();
    let mut fed = 0;
    while fed < stream.len() {
        let end = sizes
            .next()
            .map_or(stream.len(), |size| (fed + size).min(stream.len()));
        let piece = &stream[fed..end];
        let result = if via_reader {
            feed_reader(&mut codec, piece)
        } else {
            codec.read_tls(piece)
        };
        match result {
            Ok(taken) => {
                assert_eq!(taken, piece.len(), "bytes left untaken");
                if let Some(bad) = walk.first_not_tls {
                    assert!(bad >= end, "non-TLS byte at {bad} accepted ({fed}..{end})");
                }
                let read = read_available(&mut codec, &mut plaintext, 0)
                    .expect("read_plaintext fails only after a failed read");
                assert!(!read.close_notify, "a forged close_notify was accepted");
                assert!(!read.eof, "end of stream before the stream ended");
                drain(&mut codec);
            }
            Err(error) => {
                check_typed(&error);
                match &error {
                    TlsError::NotTls => {
                        let bad = walk.first_not_tls.expect("NotTls, yet every header is TLS");
                        assert!(
                            bad < end,
                            "NotTls at {fed}..{end}, the first bad byte is {bad}"
                        );
                    }
                    TlsError::TruncatedRecord | TlsError::HandshakeEof => {
                        panic!("{error:?} before the end of the stream")
                    }
                    _ => {}
                }
                check_failed_for_good(&mut codec, &error);
                return;
            }
        }
        fed = end;
    }
    assert_eq!(walk.first_not_tls, None, "a non-TLS header went unnoticed");

    if !end_of_stream {
        return;
    }
    let result = if via_reader {
        codec
            .read_tls_from(&mut io::empty())
            .map_err(|_| codec.error().expect("a TLS error").clone())
    } else {
        codec.read_tls(&[])
    };
    let expected = if walk.ends_inside_a_record {
        Err(TlsError::TruncatedRecord)
    } else if codec.is_handshaking() {
        Err(TlsError::HandshakeEof)
    } else {
        Ok(0)
    };
    assert_eq!(result, expected, "at the end of {} bytes", stream.len());
    match result {
        Ok(_) => {
            assert_eq!(codec.read_plaintext(&mut [0u8; 16]), Ok(Plaintext::Eof));
            assert_eq!(codec.error(), None);
        }
        Err(error) => check_failed_for_good(&mut codec, &error),
    }
}

/// Feeds `piece` through `read_tls_from` until the reader is empty; returns the bytes read.
fn feed_reader(codec: &mut TlsCodec, piece: &[u8]) -> Result<usize, TlsError> {
    let mut reader = piece;
    while !reader.is_empty() {
        match codec.read_tls_from(&mut reader) {
            Ok(0) => break,
            Ok(n) => assert!(n <= piece.len()),
            Err(_) => {
                let error = codec.error().expect("a TLS error, not an I/O one");
                return Err(error.clone());
            }
        }
    }
    Ok(piece.len() - reader.len())
}
