//! permessage-deflate bugs found by the `deflate_inflate` fuzz target and while writing it,
//! each kept as a fixture under `tests/data/`. Every test here states what RFC 7692 (or the
//! crate's own documentation) requires; each failed before the fix in the commit that added it.

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::deflate::{
    DeflateConfig, DeflateParams, InflateError, PerMessageDeflate, inflate_raw,
};
use tickwire_codec::ws::{
    CloseCode, Compression, Error, FrameReader, FrameWriter, Limits, MaskSource, Message, OpCode,
    ReadEvent, Role,
};

/// RFC 7692 §7.2.3.1: "Hello", one compressed frame, as a server sends it.
const HELLO: [u8; 9] = [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00];

fn params(no_context_takeover: bool) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover: no_context_takeover,
        client_no_context_takeover: no_context_takeover,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    }
}

fn reader(role: Role, params: &DeflateParams, limits: Limits) -> FrameReader {
    let mut reader = FrameReader::new(role, limits);
    let (decoder, _) = PerMessageDeflate::new(role, params, &DeflateConfig::default()).into_parts();
    reader.set_extension(Box::new(decoder));
    reader
}

/// Every data message (as bytes) until the first error.
fn read_all(reader: &mut FrameReader, wire: &[u8]) -> Vec<Result<Vec<u8>, Error>> {
    let mut buf = ReadBuf::with_capacity(64);
    reader.feed(&mut buf, wire);
    let mut seen = Vec::new();
    loop {
        match reader.poll(&mut buf) {
            Ok(ReadEvent::Message(Message::Text(text))) => seen.push(Ok(text.as_bytes().to_vec())),
            Ok(ReadEvent::Message(Message::Binary(bytes))) => seen.push(Ok(bytes.to_vec())),
            Ok(ReadEvent::Message(other)) => panic!("unexpected {other:?}"),
            Ok(ReadEvent::NeedMore) => return seen,
            Err(error) => {
                seen.push(Err(error));
                return seen;
            }
        }
    }
}

/// The payloads of the frames in `wire` (server frames: unmasked), with their first byte.
fn frames(mut wire: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    while !wire.is_empty() {
        let len = usize::from(wire[1] & 0x7f);
        assert!(len < 126, "short frames only");
        frames.push((wire[0], wire[2..2 + len].to_vec()));
        wire = &wire[2 + len..];
    }
    frames
}

/// Found by `deflate_inflate` (round-trip mode; its layout: mode 1, flags 0 = a server
/// writer with context takeover, window bits 15/15, level 1, min_size 0, limit 1023, no
/// fragmentation, then three empty messages: Binary Auto, Text Always, Text Always).
///
/// With context takeover, an empty message compressed after another compressed message goes
/// out as an RSV1 frame with an EMPTY payload: zlib emits nothing for a sync flush with no new
/// input (Z_BUF_ERROR, "no progress possible"), so there is no sync-flush tail to strip and
/// nothing is left. The receiver appends `00 00 ff ff` (§7.2.2) and reads its first byte as a
/// new stored block's header, LEN = 0xff00, and waits for NLEN: its inflater is now inside a
/// bogus stored block, and the next compressed message fails with 1007 ("invalid deflate
/// data"), or inflates to garbage. RFC 7692 §7.2.3.6: the payload of an empty compressed
/// message is the single octet 0x00 (an empty stored block whose LEN/NLEN are the removed
/// tail), which is what the encoder already sends for an empty message on a fresh stream.
#[test]
fn fixture_empty_message_after_a_compressed_one_keeps_the_peer_in_sync() {
    let input = include_bytes!("data/fuzz-deflate-empty-message-after-compressed-one.bin");
    assert_eq!(
        input[..6],
        [0x01, 0x00, 0x07, 0x07, 0x01, 0x00],
        "mode, flags, bits, level, min_size"
    );
    let config = DeflateConfig::default()
        .with_level(1)
        .with_min_size(0)
        .with_only_if_smaller(false);
    let p = params(false);
    let sends: &[&[(OpCode, &[u8], Compression)]] = &[
        // The fixture's messages, then a non-empty one to show the peer's state.
        &[
            (OpCode::Binary, b"", Compression::Auto),
            (OpCode::Text, b"", Compression::Always),
            (OpCode::Text, b"", Compression::Always),
            (OpCode::Text, b"Hello", Compression::Always),
        ],
        // The shortest form.
        &[
            (OpCode::Text, b"Hello", Compression::Always),
            (OpCode::Text, b"", Compression::Always),
            (OpCode::Text, b"Hello", Compression::Always),
        ],
    ];
    for messages in sends {
        let mut writer = FrameWriter::new(Role::Server, MaskSource::seeded(1));
        let (_, encoder) = PerMessageDeflate::new(Role::Server, &p, &config).into_parts();
        writer.set_extension(Box::new(encoder));
        let mut out = WriteBuf::new(256, 16);
        for (opcode, payload, compression) in *messages {
            writer.message_with(&mut out, *opcode, payload, *compression);
        }
        let wire = out.as_slice().to_vec();
        for (b0, payload) in frames(&wire) {
            assert!(
                b0 & 0x40 == 0 || !payload.is_empty(),
                "an RSV1 frame with an empty payload (§7.2.3.6 sends 0x00): {wire:02x?}"
            );
        }
        let mut reader = reader(Role::Client, &p, Limits::client());
        let seen = read_all(&mut reader, &wire);
        let expected: Vec<Result<Vec<u8>, Error>> = messages
            .iter()
            .map(|(_, payload, _)| Ok(payload.to_vec()))
            .collect();
        assert_eq!(seen, expected, "wire {wire:02x?}");
    }
}

/// RFC 7692 §7.2.3.4 gives this exact 8-octet payload for "Hello" flushed with a BFINAL block:
/// `f3 48 cd c9 c9 07 00 00`. "The last 1 octet (0x00) contains the header bits with BFINAL
/// set to 0 and BTYPE set to 00, and 5 padding bits of 0. This octet is necessary to allow
/// the payload to be decompressed in the same manner as messages compressed using DEFLATE
/// blocks with BFINAL unset." The decoder rejects it with 1007 "data after the final deflate
/// block": it treats any payload byte after the final block as corrupt (codec.rs, `decode`:
/// `stream_ended && total_in - before < payload.len()`). The crate's own test of §7.2.3.4
/// (`rfc7692_examples_inflate`) uses only the first 7 octets, which is why this went unseen.
#[test]
fn fixture_rfc7692_7_2_3_4_example_payload_inflates() {
    let wire = include_bytes!("data/deflate-rfc7692-7.2.3.4-final-block-then-stored-header.bin");
    assert_eq!(
        wire[..10],
        [0xc1, 0x08, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x00]
    );
    assert_eq!(wire[10..], HELLO, "then §7.2.3.1's Hello");
    for no_context_takeover in [false, true] {
        let mut reader = reader(Role::Client, &params(no_context_takeover), Limits::client());
        assert_eq!(
            read_all(&mut reader, wire),
            [Ok(b"Hello".to_vec()), Ok(b"Hello".to_vec())],
            "no_context_takeover {no_context_takeover}"
        );
    }
}

/// A payload whose last byte starts a final (BFINAL=1) empty stored block, as a sender that
/// ends messages with a final empty stored block produces once it strips `00 00 ff ff`
/// (§7.2.1): "Hello" then `04` (BFINAL=1, BTYPE=00 at bit 50). The re-appended tail completes
/// that block and ends the deflate stream INSIDE the tail. The decoder ignores that the
/// stream ended (codec.rs, `decode`: the result of inflating SYNC_TAIL is dropped, so
/// `stream_ended` stays false and the inflater is not reset): the message is accepted, and
/// with context takeover the NEXT compressed message, however valid, fails with 1007 "data
/// after the final deflate block" because the inflater still answers StreamEnd. Either verdict
/// on the first message can be argued; accepting it and then failing a valid second one
/// cannot.
#[test]
fn fixture_final_block_ending_inside_the_tail_does_not_break_the_next_message() {
    let wire = include_bytes!("data/deflate-final-block-ends-inside-sync-tail.bin");
    assert_eq!(
        wire[..9],
        [0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x04]
    );
    assert_eq!(wire[9..], HELLO);
    let mut reader = reader(Role::Client, &params(false), Limits::client());
    let seen = read_all(&mut reader, wire);
    match &seen[0] {
        Ok(first) => {
            assert_eq!(first, b"Hello");
            assert_eq!(
                seen[1..],
                [Ok(b"Hello".to_vec())],
                "a valid message after it"
            );
        }
        Err(error) => assert_eq!(error.close_code(), Some(CloseCode::INVALID_PAYLOAD)),
    }
}

/// `usize::MAX` as "no limit" (for `Limits::max_message_size` or the inflaters' `max_len`):
/// `inflate_into` computes `max_len + 1` (inflate.rs, "One byte of room past the limit"), which
/// overflows: a panic with overflow checks (debug, tests), and in release a room of 0, so every
/// compressed message fails with 1009 and every standalone inflation with TooLarge. Found
/// while choosing the fuzz target's limits; `saturating_add` fixes it.
#[test]
fn usize_max_limit_means_no_limit() {
    let limits = Limits::client().with_max_message_size(usize::MAX);
    let mut reader = reader(Role::Client, &params(false), limits);
    assert_eq!(read_all(&mut reader, &HELLO), [Ok(b"Hello".to_vec())]);
    let mut out = Vec::new();
    assert_eq!(inflate_raw(&HELLO[2..], &mut out, usize::MAX), Ok(()));
    assert_eq!(out, b"Hello");
}

/// `PayloadInflater::gzip` (and so the others, which share `inflate_into`) documents: "On
/// error `out` holds whatever was inflated before it (at most `max_len + 1` bytes)". When
/// `out` comes with spare capacity (a reused buffer), inflation fills all of it before the
/// limit is checked: a 1 MiB bomb inflates to 1 MiB for a limit of 10. No memory is
/// allocated past what the caller gave, but the documented bound and the work it implies do
/// not hold. Minor: either the loop caps each step at `max_len + 1 - out.len()` or the
/// documentation says "or `out`'s capacity".
#[test]
fn inflation_error_output_is_bounded_even_with_spare_capacity() {
    // 1 MiB of zeros, raw deflate with a final block.
    let mut compress = flate2::Compress::new(flate2::Compression::new(6), false);
    let mut bomb = Vec::with_capacity(1 << 16);
    compress
        .compress_vec(&vec![0; 1 << 20], &mut bomb, flate2::FlushCompress::Finish)
        .unwrap();
    let mut out = Vec::with_capacity(1 << 20);
    assert_eq!(
        inflate_raw(&bomb, &mut out, 10),
        Err(InflateError::TooLarge { limit: 10 })
    );
    assert!(
        out.len() <= 11,
        "{} bytes inflated for a limit of 10",
        out.len()
    );
}
