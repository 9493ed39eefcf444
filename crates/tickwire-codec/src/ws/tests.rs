//! Frame-level tests: round trips and split invariance, strictness, limits, the extension seam.

use super::*;
use crate::buf::{ReadBuf, WriteBuf};

/// An owned copy of what the reader produced, for comparing runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seen {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    Close(Option<(u16, String)>),
    Error(Error),
}

impl Seen {
    pub(crate) fn of(message: Message<'_>) -> Self {
        match message {
            Message::Text(t) => Self::Text(t.to_owned()),
            Message::Binary(b) => Self::Binary(b.to_vec()),
            Message::Ping(p) => Self::Ping(p.to_vec()),
            Message::Pong(p) => Self::Pong(p.to_vec()),
            Message::Close(c) => Self::Close(c.map(|c| (c.code.0, c.reason.to_owned()))),
        }
    }
}

/// Feeds `bytes` through the reader's `spare`/`filled` path in chunks of the given sizes
/// (cycled), polling to `NeedMore` after each, and records everything until the first error.
pub(crate) fn read_in_chunks(
    role: Role,
    limits: Limits,
    bytes: &[u8],
    chunks: &[usize],
) -> Vec<Seen> {
    read_lent(role, limits, bytes, chunks, false)
}

/// [`read_in_chunks`] as a reactor lends buffers: after every `NeedMore` the bytes not parsed
/// yet (a partial frame) move into a fresh, small buffer, and the next read goes there.
fn read_in_chunks_moving(role: Role, limits: Limits, bytes: &[u8], chunks: &[usize]) -> Vec<Seen> {
    read_lent(role, limits, bytes, chunks, true)
}

fn read_lent(
    role: Role,
    limits: Limits,
    bytes: &[u8],
    chunks: &[usize],
    moving: bool,
) -> Vec<Seen> {
    let mut reader = FrameReader::new(role, limits);
    let mut buf = ReadBuf::with_capacity(64);
    let mut seen = Vec::new();
    let mut at = 0;
    let mut chunk = chunks.iter().copied().cycle();
    loop {
        loop {
            match reader.poll(&mut buf) {
                Ok(ReadEvent::Message(m)) => seen.push(Seen::of(m)),
                Ok(ReadEvent::NeedMore) => break,
                Err(e) => {
                    seen.push(Seen::Error(e));
                    return seen;
                }
            }
        }
        if at == bytes.len() {
            return seen;
        }
        if moving {
            reader.release(&mut buf);
            let mut parked = ReadBuf::with_capacity(16);
            parked.extend_from_slice(buf.data());
            buf = parked;
        }
        let want = chunk.next().unwrap_or(usize::MAX).max(1);
        let spare = reader.spare(&mut buf);
        assert!(!spare.is_empty(), "spare() empty after NeedMore");
        let n = want.min(spare.len()).min(bytes.len() - at);
        spare[..n].copy_from_slice(&bytes[at..at + n]);
        buf.filled(n);
        at += n;
    }
}

fn read_whole(role: Role, bytes: &[u8]) -> Vec<Seen> {
    read_in_chunks(role, Limits::client(), bytes, &[usize::MAX])
}

/// Encodes with the writer of the opposite role (a client writes what a server reads).
fn encode(reader_role: Role, build: impl FnOnce(&mut FrameWriter, &mut WriteBuf)) -> Vec<u8> {
    let writer_role = match reader_role {
        Role::Server => Role::Client,
        Role::Client => Role::Server,
    };
    let mut writer = FrameWriter::new(writer_role, MaskSource::seeded(7));
    let mut out = WriteBuf::new(64, MAX_HEADER_LEN);
    build(&mut writer, &mut out);
    out.as_slice().to_vec()
}

/// A raw frame with explicit bits, for malformed input.
fn raw(b0: u8, payload: &[u8], masked: bool) -> Vec<u8> {
    let mut frame = vec![b0];
    let mask_bit = if masked { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => frame.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            frame.push(mask_bit | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(mask_bit | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    if masked {
        let key = [0xa1, 0xb2, 0xc3, 0xd4];
        frame.extend_from_slice(&key);
        let mut body = payload.to_vec();
        mask::apply_mask_scalar(&mut body, key, 0);
        frame.extend_from_slice(&body);
    } else {
        frame.extend_from_slice(payload);
    }
    frame
}

fn both_roles() -> [(Role, bool); 2] {
    [(Role::Client, false), (Role::Server, true)]
}

const LENGTH_CLASSES: [usize; 7] = [0, 1, 125, 126, 65535, 65536, 1 << 20];

/// Mixed 1- to 4-byte characters, exactly `len` bytes.
fn text_of(len: usize) -> String {
    let mut text = String::with_capacity(len);
    for c in "aé€𝄞".chars().cycle() {
        if text.len() + c.len_utf8() > len {
            break;
        }
        text.push(c);
    }
    while text.len() < len {
        text.push('x');
    }
    text
}

#[test]
fn every_kind_and_length_class_round_trips_whole_and_byte_by_byte() {
    for role in [Role::Client, Role::Server] {
        for len in LENGTH_CLASSES {
            let binary: Vec<u8> = (0..len).map(|i| (i * 7) as u8).collect();
            let text = text_of(len);
            let bytes = encode(role, |w, out| {
                w.text(out, &text);
                w.binary(out, &binary);
            });
            let expected = vec![Seen::Text(text.clone()), Seen::Binary(binary.clone())];
            assert_eq!(read_whole(role, &bytes), expected, "{role:?} {len} whole");
            let chunked = read_in_chunks(role, Limits::client(), &bytes, &[1]);
            assert_eq!(chunked, expected, "{role:?} {len} byte by byte");
            let odd = read_in_chunks(role, Limits::client(), &bytes, &[3, 1, 4096, 7, 65537]);
            assert_eq!(odd, expected, "{role:?} {len} odd chunks");
        }
        for len in [0, 1, 125] {
            let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let bytes = encode(role, |w, out| {
                w.ping(out, &payload).unwrap();
                w.pong(out, &payload).unwrap();
            });
            let expected = vec![Seen::Ping(payload.clone()), Seen::Pong(payload.clone())];
            assert_eq!(
                read_in_chunks(role, Limits::client(), &bytes, &[1]),
                expected
            );
        }
    }
}

#[test]
fn every_split_point_gives_identical_events() {
    for role in [Role::Client, Role::Server] {
        for len in [0usize, 1, 125, 126, 300] {
            let text = "ü".repeat(len / 2) + &"a".repeat(len % 2);
            let bytes = encode(role, |w, out| {
                w.text(out, &text);
                w.ping(out, b"p").unwrap();
                w.set_fragment_size(Some(7));
                w.binary(out, &vec![9; len]);
                w.set_fragment_size(None);
                w.close(out, Some(CloseCode::NORMAL), "bye").unwrap();
            });
            let whole = read_whole(role, &bytes);
            assert_eq!(whole.len(), 4);
            for split in 0..=bytes.len() {
                let events = read_in_chunks(role, Limits::client(), &bytes, &[split, usize::MAX]);
                assert_eq!(events, whole, "{role:?} len {len} split {split}");
                let moved = read_in_chunks_moving(role, Limits::client(), &bytes, &[split, 5]);
                assert_eq!(moved, whole, "{role:?} len {len} split {split}, moved");
            }
        }
        // Large classes: every split inside and around the header, and a stride through.
        for len in [65535usize, 65536] {
            let bytes = encode(role, |w, out| w.binary(out, &vec![3; len]));
            let whole = read_whole(role, &bytes);
            let splits = (0..=20)
                .chain((20..bytes.len()).step_by(4093))
                .chain([bytes.len() - 1]);
            for split in splits {
                let events = read_in_chunks(role, Limits::client(), &bytes, &[split, usize::MAX]);
                assert_eq!(events, whole, "{role:?} len {len} split {split}");
            }
        }
    }
}

#[test]
fn fragmented_message_with_interleaved_control_frames() {
    for (role, masked) in both_roles() {
        let mut bytes = raw(0x01, "Hel".as_bytes(), masked);
        bytes.extend(raw(0x89, b"ping", masked));
        bytes.extend(raw(0x00, "lo €".as_bytes(), masked));
        bytes.extend(raw(0x8a, b"", masked));
        bytes.extend(raw(0x80, "!".as_bytes(), masked));
        let expected = vec![
            Seen::Ping(b"ping".to_vec()),
            Seen::Pong(vec![]),
            Seen::Text("Hello €!".into()),
        ];
        for split in 0..=bytes.len() {
            assert_eq!(
                read_in_chunks(role, Limits::client(), &bytes, &[split, usize::MAX]),
                expected
            );
        }
    }
}

fn first_error(role: Role, limits: Limits, bytes: &[u8]) -> Error {
    match read_in_chunks(role, limits, bytes, &[usize::MAX]).pop() {
        Some(Seen::Error(e)) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn strictness_violations_carry_their_close_codes() {
    let cases: Vec<(Role, Vec<u8>, Error)> = vec![
        (Role::Server, raw(0x81, b"hi", false), Error::UnmaskedFrame),
        (Role::Client, raw(0x81, b"hi", true), Error::MaskedFrame),
        (
            Role::Client,
            raw(0xc1, b"hi", false),
            Error::ReservedBits(0b100),
        ),
        (
            Role::Client,
            raw(0xa1, b"hi", false),
            Error::ReservedBits(0b010),
        ),
        (
            Role::Client,
            raw(0x91, b"hi", false),
            Error::ReservedBits(0b001),
        ),
        (
            Role::Client,
            raw(0x83, b"", false),
            Error::ReservedOpcode(3),
        ),
        (
            Role::Client,
            raw(0x8b, b"", false),
            Error::ReservedOpcode(0xb),
        ),
        (
            Role::Client,
            raw(0x89, &[0; 126], false),
            Error::ControlFrameTooLong(126),
        ),
        (
            Role::Client,
            raw(0x09, b"", false),
            Error::FragmentedControlFrame,
        ),
        (
            Role::Client,
            vec![0x82, 126, 0x00, 0x7d],
            Error::NonMinimalLength,
        ),
        (
            Role::Client,
            vec![0x82, 127, 0, 0, 0, 0, 0, 0, 0xff, 0xff],
            Error::NonMinimalLength,
        ),
        (
            Role::Client,
            vec![0x82, 127, 0x80, 0, 0, 0, 0, 1, 0, 0],
            Error::NonMinimalLength,
        ),
        (
            Role::Client,
            raw(0x80, b"x", false),
            Error::UnexpectedContinuation,
        ),
        (
            Role::Client,
            [raw(0x01, b"a", false), raw(0x81, b"b", false)].concat(),
            Error::ExpectedContinuation,
        ),
        (
            Role::Client,
            raw(0x88, &[3], false),
            Error::InvalidCloseLength,
        ),
        (
            Role::Client,
            raw(0x88, &1005u16.to_be_bytes(), false),
            Error::InvalidCloseCode(1005),
        ),
        (
            Role::Client,
            raw(0x88, &999u16.to_be_bytes(), false),
            Error::InvalidCloseCode(999),
        ),
        (
            Role::Client,
            raw(0x88, &5000u16.to_be_bytes(), false),
            Error::InvalidCloseCode(5000),
        ),
        (
            Role::Client,
            raw(0x88, &[0x03, 0xe8, 0xff], false),
            Error::InvalidUtf8,
        ),
        (
            Role::Client,
            raw(0x81, &[0xce, 0xba, 0xff], false),
            Error::InvalidUtf8,
        ),
        (
            Role::Client,
            [raw(0x01, &[0xce], false), raw(0x80, &[0x41], false)].concat(),
            Error::InvalidUtf8,
        ),
        (
            Role::Client,
            [raw(0x01, &[0xce], false), raw(0x80, &[], false)].concat(),
            Error::InvalidUtf8,
        ),
    ];
    for (role, bytes, expected) in cases {
        let error = first_error(role, Limits::client(), &bytes);
        assert_eq!(error, expected);
        let code = if expected == Error::InvalidUtf8 {
            1007
        } else {
            1002
        };
        assert_eq!(error.close_code(), Some(CloseCode(code)), "{expected:?}");
        assert_eq!(error.fault(), Fault::Peer);
    }
}

#[test]
fn reader_stays_failed_after_an_error() {
    let mut reader = FrameReader::new(Role::Client, Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    reader.feed(&mut buf, &raw(0x83, b"", false));
    assert_eq!(reader.poll(&mut buf), Err(Error::ReservedOpcode(3)));
    reader.feed(&mut buf, &raw(0x81, b"ok", false));
    assert_eq!(
        reader.poll(&mut buf),
        Err(Error::Failed(CloseCode::PROTOCOL_ERROR))
    );
}

#[test]
fn invalid_utf8_fails_before_the_frame_completes() {
    // A 1000-byte text frame whose 11th byte is invalid: only the first 20 bytes arrive.
    let mut payload = vec![b'a'; 1000];
    payload[10] = 0xff;
    for (role, masked) in both_roles() {
        let frame = raw(0x81, &payload, masked);
        let mut reader = FrameReader::new(role, Limits::client());
        let mut buf = ReadBuf::with_capacity(64);
        reader.feed(&mut buf, &frame[..20]);
        assert_eq!(reader.poll(&mut buf), Err(Error::InvalidUtf8), "{role:?}");
    }
    // Also inside a continuation frame of a fragmented message.
    let mut bytes = raw(0x01, b"ok", false);
    bytes.extend(raw(0x80, &payload, false));
    let mut reader = FrameReader::new(Role::Client, Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    reader.feed(&mut buf, &bytes[..30]);
    assert_eq!(reader.poll(&mut buf), Err(Error::InvalidUtf8));
}

/// A text frame arriving in three reads whose first read ends inside a two-byte character:
/// the second read's bad continuation byte fails it at once, with the carried byte taken into
/// account, and the reader stays failed.
#[test]
fn invalid_utf8_across_reads_of_one_frame_fails_at_the_read_that_brings_it() {
    let mut payload = b"price \xc3".to_vec();
    payload.extend(b"Ax".repeat(100));
    let frame = raw(0x81, &payload, false);
    let mut reader = FrameReader::new(Role::Client, Limits::client());
    let mut buf = ReadBuf::with_capacity(1 << 16);
    // Up to and including the 0xc3 that opens a two-byte character.
    let first = frame.len() - payload.len() + 7;
    reader.feed(&mut buf, &frame[..first]);
    assert!(matches!(reader.poll(&mut buf), Ok(ReadEvent::NeedMore)));
    reader.feed(&mut buf, &frame[first..20]);
    assert_eq!(reader.poll(&mut buf), Err(Error::InvalidUtf8));
    reader.feed(&mut buf, &frame[20..]);
    assert_eq!(
        reader.poll(&mut buf),
        Err(Error::Failed(CloseCode::INVALID_PAYLOAD))
    );
}

/// Found by the frame_reader fuzz target (its input layout: a control byte, split sizes, then
/// the wire bytes): an unfinished text fragment holding invalid UTF-8, then a frame with a
/// reserved opcode. Fed whole, the lazily checked fragment must still fail first, as it does
/// when the bytes arrive in pieces.
#[test]
fn fixture_deferred_utf8_error_comes_before_a_later_frame_error() {
    let input = include_bytes!("../../tests/data/fuzz-deferred-utf8-then-reserved-opcode.bin");
    let wire = &input[3..];
    assert_eq!(wire, [0x01, 0x01, 0x81, 0x23, 0x40]);
    for chunks in [&[usize::MAX][..], &[1], &[1, 0, 1, 1]] {
        let seen = read_in_chunks(Role::Client, Limits::client(), wire, chunks);
        assert_eq!(seen, [Seen::Error(Error::InvalidUtf8)], "chunks {chunks:?}");
    }
}

/// Whole fragments are validated lazily, but never later than the reader's next return: an
/// invalid complete first fragment fails at once, before the rest of the message (Autobahn
/// 6.4.1), and before a control frame interleaved after it is handed out.
#[test]
fn invalid_complete_fragment_fails_before_waiting_for_the_next() {
    for (role, masked) in both_roles() {
        let mut reader = FrameReader::new(role, Limits::client());
        let mut buf = ReadBuf::with_capacity(64);
        reader.feed(&mut buf, &raw(0x01, b"ok \xce\xba\xff then more", masked));
        assert_eq!(
            reader.poll(&mut buf),
            Err(Error::InvalidUtf8),
            "{role:?}: whole fragment"
        );

        let mut bytes = raw(0x01, b"bad \xff", masked);
        bytes.extend(raw(0x89, b"ping", masked));
        let mut reader = FrameReader::new(role, Limits::client());
        let mut buf = ReadBuf::with_capacity(64);
        reader.feed(&mut buf, &bytes);
        assert_eq!(
            reader.poll(&mut buf),
            Err(Error::InvalidUtf8),
            "{role:?}: before the ping"
        );

        // A code point split across fragments is valid, whichever way the bytes arrive.
        let mut bytes = raw(0x01, b"kappa \xce", masked);
        bytes.extend(raw(0x80, b"\xba!", masked));
        let whole = read_in_chunks(role, Limits::client(), &bytes, &[usize::MAX]);
        assert_eq!(whole, [Seen::Text("kappa \u{3ba}!".to_owned())], "{role:?}");
        for split in 1..bytes.len() {
            let pieces = read_in_chunks(role, Limits::client(), &bytes, &[split, usize::MAX]);
            assert_eq!(pieces, whole, "{role:?}: split at {split}");
        }
    }
}

#[test]
fn limits_are_checked_at_the_limit_and_one_past() {
    let limits = Limits {
        max_frame_size: 1000,
        max_message_size: 1500,
        max_fragments: 3,
    };
    // Frame size: exactly at the limit is fine, one past fails from the header alone.
    let ok = raw(0x82, &[1; 1000], false);
    assert_eq!(
        read_in_chunks(Role::Client, limits, &ok, &[usize::MAX]),
        vec![Seen::Binary(vec![1; 1000])]
    );
    let over = raw(0x82, &[1; 1001], false);
    let error = first_error(Role::Client, limits, &over[..4]);
    assert_eq!(
        error,
        Error::FrameTooLarge {
            len: 1001,
            limit: 1000
        }
    );
    assert_eq!(error.close_code(), Some(CloseCode::MESSAGE_TOO_BIG));
    assert_eq!(error.fault(), Fault::Limit);
    // Message size across fragments.
    let at_limit = [raw(0x02, &[1; 1000], false), raw(0x80, &[2; 500], false)].concat();
    let seen = read_in_chunks(Role::Client, limits, &at_limit, &[usize::MAX]);
    assert!(matches!(&seen[..], [Seen::Binary(b)] if b.len() == 1500));
    let past = [raw(0x02, &[1; 1000], false), raw(0x80, &[2; 501], false)].concat();
    let error = first_error(Role::Client, limits, &past[..1008]);
    assert_eq!(error, Error::MessageTooLarge { limit: 1500 });
    // Fragments per message.
    let three = [
        raw(0x02, b"a", false),
        raw(0x00, b"b", false),
        raw(0x80, b"c", false),
    ]
    .concat();
    assert_eq!(
        read_in_chunks(Role::Client, limits, &three, &[1]),
        vec![Seen::Binary(b"abc".to_vec())]
    );
    let four = [
        raw(0x02, b"a", false),
        raw(0x00, b"b", false),
        raw(0x00, b"c", false),
        raw(0x80, b"d", false),
    ];
    let error = first_error(Role::Client, limits, &four.concat());
    assert_eq!(error, Error::TooManyFragments { limit: 3 });
    assert_eq!(error.close_code(), Some(CloseCode::MESSAGE_TOO_BIG));
}

#[test]
fn read_buffer_growth_is_bounded_by_the_frame_limit() {
    let limits = Limits {
        max_frame_size: 100_000,
        max_message_size: 100_000,
        max_fragments: 4,
    };
    let frame = raw(0x82, &vec![5; 100_000], false);
    let mut reader = FrameReader::new(Role::Client, limits);
    let mut buf = ReadBuf::with_capacity(1024);
    reader.feed(&mut buf, &frame[..50]);
    assert_eq!(reader.poll(&mut buf), Ok(ReadEvent::NeedMore));
    let spare = reader.spare(&mut buf).len();
    assert!(
        spare >= frame.len() - 50,
        "room reserved for the whole frame"
    );
    assert!(spare < 2 * frame.len() + 1024, "but not unbounded: {spare}");
}

#[test]
fn writer_encodes_minimal_lengths_and_masks_only_as_client() {
    let mut server = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
    for (len, header_len) in [
        (0usize, 2usize),
        (125, 2),
        (126, 4),
        (65535, 4),
        (65536, 10),
    ] {
        out.clear();
        server.binary(&mut out, &vec![0; len]);
        assert_eq!(out.len(), header_len + len, "server {len}");
        assert_eq!(out.as_slice()[1] & 0x80, 0, "server frames are unmasked");
    }
    let mut client = FrameWriter::new(Role::Client, MaskSource::custom(|| [1, 2, 3, 4]));
    out.clear();
    client.text(&mut out, "Hello");
    assert_eq!(
        out.as_slice(),
        &[
            0x81,
            0x85,
            1,
            2,
            3,
            4,
            b'H' ^ 1,
            b'e' ^ 2,
            b'l' ^ 3,
            b'l' ^ 4,
            b'o' ^ 1
        ]
    );
}

#[test]
fn writer_rejects_bad_control_frames() {
    let mut writer = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
    assert_eq!(
        writer.ping(&mut out, &[0; 126]),
        Err(Error::ControlPayloadTooLong(126))
    );
    assert_eq!(
        writer.close(&mut out, Some(CloseCode(1005)), ""),
        Err(Error::UnsendableCloseCode(1005))
    );
    assert_eq!(
        writer.close(&mut out, Some(CloseCode::NORMAL), &"x".repeat(124)),
        Err(Error::CloseReasonTooLong(124))
    );
    assert!(out.is_empty(), "nothing queued on error");
    assert_eq!(writer.ping(&mut out, &[0; 125]), Ok(()));
}

#[test]
fn frame_in_place_serialises_without_a_copy() {
    for role in [Role::Client, Role::Server] {
        let mut writer = FrameWriter::new(role, MaskSource::seeded(3));
        let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
        out.extend_from_slice(b"{\"px\":1}");
        writer.frame_in_place(&mut out, OpCode::Text, true, 8);
        writer.text(&mut out, "second");
        out.extend_from_slice(b"third");
        writer.frame_in_place(&mut out, OpCode::Binary, true, 5);
        let reader_role = if role == Role::Client {
            Role::Server
        } else {
            Role::Client
        };
        assert_eq!(
            read_whole(reader_role, out.as_slice()),
            vec![
                Seen::Text("{\"px\":1}".into()),
                Seen::Text("second".into()),
                Seen::Binary(b"third".to_vec())
            ]
        );
    }
}

/// A toy extension owning RSV1 that XORs payloads with 0x55, to prove the seam.
struct Xor;

impl Extension for Xor {
    fn reserved_bits(&self) -> u8 {
        0b100
    }
    fn decode(
        &mut self,
        payload: &[u8],
        _fin: bool,
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), Error> {
        if out.len() + payload.len() > max_len {
            return Err(Error::MessageTooLarge { limit: max_len });
        }
        out.extend(payload.iter().map(|b| b ^ 0x55));
        Ok(())
    }
    fn encode(&mut self, payload: &[u8], out: &mut Vec<u8>, _: super::Compression) -> Option<u8> {
        if payload.len() < 4 {
            return None;
        }
        out.extend(payload.iter().map(|b| b ^ 0x55));
        Some(0b100)
    }
}

#[test]
fn extension_seam_owns_rsv1_and_transforms_messages() {
    let mut writer = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    writer.set_extension(Box::new(Xor));
    let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
    writer.text(&mut out, "transformed");
    writer.text(&mut out, "raw");
    writer.set_fragment_size(Some(4));
    writer.binary(&mut out, b"fragmented payload");
    let bytes = out.as_slice().to_vec();
    assert_eq!(bytes[0], 0xc1, "RSV1 set on the transformed message");

    let mut reader = FrameReader::new(Role::Client, Limits::client());

    let mut buf = ReadBuf::with_capacity(64);
    reader.set_extension(Box::new(Xor));
    reader.feed(&mut buf, &bytes);
    let mut seen = Vec::new();
    while let Ok(ReadEvent::Message(m)) = reader.poll(&mut buf) {
        seen.push(Seen::of(m));
    }
    assert_eq!(
        seen,
        vec![
            Seen::Text("transformed".into()),
            Seen::Text("raw".into()),
            Seen::Binary(b"fragmented payload".to_vec())
        ]
    );
    // Without the extension, RSV1 is a protocol error.
    assert_eq!(
        first_error(Role::Client, Limits::client(), &bytes),
        Error::ReservedBits(0b100)
    );
    // RSV1 on a continuation frame is an error even with the extension.
    let mut reader = FrameReader::new(Role::Client, Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    reader.set_extension(Box::new(Xor));
    reader.feed(
        &mut buf,
        &[raw(0x41, b"ab", false), raw(0xc0, b"cd", false)].concat(),
    );
    assert_eq!(reader.poll(&mut buf), Err(Error::ReservedBits(0b100)));
    // The message limit applies to decoded bytes, enforced by the extension.
    let limits = Limits {
        max_message_size: 10,
        ..Limits::client()
    };
    let mut reader = FrameReader::new(Role::Client, limits);
    let mut buf = ReadBuf::with_capacity(64);
    reader.set_extension(Box::new(Xor));
    reader.feed(&mut buf, &raw(0xc2, &[0; 11], false));
    assert_eq!(
        reader.poll(&mut buf),
        Err(Error::MessageTooLarge { limit: 10 })
    );
}

mod properties;

#[test]
fn message_into_a_slice_writes_what_message_appends() {
    let payloads: Vec<Vec<u8>> = [0usize, 1, 125, 126, 300, 65535, 65536, 70_000]
        .iter()
        .map(|&len| (0..len).map(|i| (i * 7) as u8).collect())
        .collect();
    for role in [Role::Server, Role::Client] {
        for fragment in [None, Some(100)] {
            let mut appending = FrameWriter::new(role, MaskSource::seeded(11));
            let mut slicing = FrameWriter::new(role, MaskSource::seeded(11));
            appending.set_fragment_size(fragment);
            slicing.set_fragment_size(fragment);
            for payload in &payloads {
                let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
                appending.binary(&mut out, payload);
                let mut dst = vec![0u8; slicing.max_encoded_len(payload.len())];
                let n = slicing
                    .message_into(&mut dst, OpCode::Binary, payload)
                    .expect("max_encoded_len is enough");
                assert_eq!(
                    &dst[..n],
                    out.as_slice(),
                    "{role:?}, fragments {fragment:?}, {} B",
                    payload.len()
                );
            }
        }
    }
}

#[test]
fn a_short_slice_gets_output_too_small_and_uses_no_masking_key() {
    let mut writer = FrameWriter::client(MaskSource::seeded(5));
    let mut twin = FrameWriter::client(MaskSource::seeded(5));
    let mut short = [0u8; 10];
    assert_eq!(
        writer.message_into(&mut short, OpCode::Text, b"Hello"),
        Err(Error::OutputTooSmall { needed: 11 })
    );
    assert_eq!(
        Error::OutputTooSmall { needed: 11 }.fault(),
        Fault::Local,
        "the caller's slice, not the peer"
    );
    // The failed call used no key: both writers still produce the same next frame.
    let (mut a, mut b) = ([0u8; 11], [0u8; 11]);
    assert_eq!(writer.message_into(&mut a, OpCode::Text, b"Hello"), Ok(11));
    assert_eq!(twin.message_into(&mut b, OpCode::Text, b"Hello"), Ok(11));
    assert_eq!(a, b);
    let mut frame = [0u8; 4];
    assert_eq!(
        FrameWriter::server().frame_into(&mut frame, OpCode::Ping, true, 0, b"abc"),
        Err(Error::OutputTooSmall { needed: 5 })
    );
}

#[test]
fn server_and_client_constructors_match_new() {
    let mut out = WriteBuf::new(16, MAX_HEADER_LEN);
    let mut reference = WriteBuf::new(16, MAX_HEADER_LEN);
    FrameWriter::server().text(&mut out, "fan-out");
    FrameWriter::new(Role::Server, MaskSource::random()).text(&mut reference, "fan-out");
    assert_eq!(out.as_slice(), reference.as_slice());
    let client = FrameWriter::client(MaskSource::seeded(1));
    assert_eq!(client.role(), Role::Client);
}
