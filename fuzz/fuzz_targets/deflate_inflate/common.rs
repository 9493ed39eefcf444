//! What the modes share: the input reader ([`Bytes`]), the record of what a frame reader
//! returned ([`Seen`]) and the loop that feeds a reader and checks its error contract
//! ([`read_all`]), plus the wire helpers for crafted frames. It owns no mode and no oracle
//! beyond the limit and close-code checks every reader run makes.

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::ws::{CloseCode, Error, FrameReader, Message, ReadEvent};

/// The bytes a sync flush ends with (RFC 7692 §7.2.1).
pub(crate) const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

pub(crate) use crate::input::Bytes;

// --- what a reader returns ---

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seen {
    Text(Vec<u8>),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Other(String),
    Error(Error),
}

/// Feeds `wire` to `reader` in pieces of the sizes in `pieces` (cycled; all at once when empty)
/// and records every event up to the first error, checking the limit and the error contract.
pub(crate) fn read_all(
    mut reader: FrameReader,
    wire: &[u8],
    pieces: &[u8],
    limit: usize,
) -> Vec<Seen> {
    let mut buf = ReadBuf::with_capacity(64);
    let mut seen = Vec::new();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    loop {
        loop {
            match reader.poll(&mut buf) {
                Ok(ReadEvent::Message(message)) => {
                    let event = match message {
                        Message::Text(text) => Seen::Text(text.as_bytes().to_vec()),
                        Message::Binary(bytes) => Seen::Binary(bytes.to_vec()),
                        Message::Ping(bytes) => Seen::Ping(bytes.to_vec()),
                        other => Seen::Other(format!("{other:?}")),
                    };
                    if let Seen::Text(bytes) | Seen::Binary(bytes) = &event {
                        assert!(
                            bytes.len() <= limit,
                            "a message of {} bytes passed the limit of {limit}",
                            bytes.len()
                        );
                    }
                    seen.push(event);
                }
                Ok(ReadEvent::NeedMore) => break,
                Err(error) => {
                    check_error(&error, limit);
                    // Errors are terminal and keep their close code.
                    assert_eq!(
                        reader.poll(&mut buf),
                        Err(Error::Failed(error.close_code().unwrap()))
                    );
                    seen.push(Seen::Error(error));
                    return seen;
                }
            }
        }
        if at == wire.len() {
            return seen;
        }
        let want = if pieces.is_empty() {
            usize::MAX
        } else {
            usize::from(*piece.next().unwrap_or(&1)).max(1)
        };
        let n = want.min(wire.len() - at);
        reader.feed(&mut buf, &wire[at..at + n]);
        at += n;
    }
}

/// Every error a reader returns on received data is typed and carries the right close code.
fn check_error(error: &Error, limit: usize) {
    let code = error
        .close_code()
        .unwrap_or_else(|| panic!("no close code for {error:?}"));
    match error {
        Error::MessageTooLarge { limit: l } => {
            assert_eq!(*l, limit, "{error:?}");
            assert_eq!(code, CloseCode::MESSAGE_TOO_BIG);
        }
        Error::FrameTooLarge { .. } | Error::TooManyFragments { .. } => {
            assert_eq!(code, CloseCode::MESSAGE_TOO_BIG);
        }
        Error::Extension { .. } | Error::InvalidUtf8 => {
            assert_eq!(code, CloseCode::INVALID_PAYLOAD, "{error:?}");
        }
        Error::Failed(_) => panic!("first error is Failed: {error:?}"),
        _ => assert_eq!(code, CloseCode::PROTOCOL_ERROR, "{error:?}"),
    }
}

/// Appends one frame; masked with `mask` when the receiver is a server.
pub(crate) fn push_frame(
    wire: &mut Vec<u8>,
    fin: bool,
    rsv: u8,
    opcode: u8,
    payload: &[u8],
    mask: Option<[u8; 4]>,
) {
    wire.push((u8::from(fin) << 7) | (rsv << 4) | opcode);
    let m = if mask.is_some() { 0x80 } else { 0 };
    let len = payload.len();
    if len < 126 {
        wire.push(m | len as u8);
    } else if len <= 0xffff {
        wire.push(m | 126);
        wire.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        wire.push(m | 127);
        wire.extend_from_slice(&(len as u64).to_be_bytes());
    }
    match mask {
        Some(key) => {
            wire.extend_from_slice(&key);
            wire.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
        None => wire.extend_from_slice(payload),
    }
}

/// Splits `payload` into `splits.len() + 1` pieces (possibly empty) at the given fractions.
pub(crate) fn split_points(payload: &[u8], splits: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut cuts: Vec<usize> = splits
        .iter()
        .map(|&s| usize::from(s) * payload.len() / 255)
        .collect();
    cuts.sort_unstable();
    let mut ranges = Vec::new();
    let mut from = 0;
    for cut in cuts {
        ranges.push(from..cut);
        from = cut;
    }
    ranges.push(from..payload.len());
    ranges
}
