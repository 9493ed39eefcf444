//! FrameReader in both roles on arbitrary bytes. Oracle: fed whole or in arbitrary pieces,
//! the reader produces the same events (or the same error), never panics, and its buffer stays
//! within the configured frame limit.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::ReadBuf;
use tickwire_codec::ws::{Error, FrameReader, Limits, Message, ReadEvent, Role};

#[derive(Debug, PartialEq)]
enum Seen {
    Message(String),
    Error(Error),
}

fn run(role: Role, limits: Limits, data: &[u8], pieces: &[u8]) -> Vec<Seen> {
    let mut reader = FrameReader::new(role, limits);
    let mut buf = ReadBuf::with_capacity(32);
    let mut seen = Vec::new();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    loop {
        loop {
            match reader.poll(&mut buf) {
                Ok(ReadEvent::Message(m)) => seen.push(Seen::Message(describe(m))),
                Ok(ReadEvent::NeedMore) => break,
                Err(e) => {
                    seen.push(Seen::Error(e));
                    return seen;
                }
            }
        }
        if at == data.len() {
            return seen;
        }
        let want = if pieces.is_empty() {
            usize::MAX
        } else {
            usize::from(*piece.next().unwrap_or(&1)).max(1)
        };
        let spare = reader.spare(&mut buf);
        assert!(!spare.is_empty());
        assert!(
            spare.len() <= 4 * (limits.max_frame_size + 64),
            "buffer grew past the limit"
        );
        let n = want.min(spare.len()).min(data.len() - at);
        spare[..n].copy_from_slice(&data[at..at + n]);
        buf.filled(n);
        at += n;
    }
}

fn describe(message: Message<'_>) -> String {
    format!("{message:?}")
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, rest)) = input.split_first() else {
        return;
    };
    let role = if control & 1 == 0 {
        Role::Client
    } else {
        Role::Server
    };
    let pieces_len = usize::from(control >> 4).min(rest.len());
    let (pieces, data) = rest.split_at(pieces_len);
    let limits = Limits::client()
        .with_max_frame_size(4096)
        .with_max_message_size(8192)
        .with_max_fragments(16);
    let whole = run(role, limits, data, &[]);
    let split = run(role, limits, data, pieces);
    assert_eq!(whole, split);
});
