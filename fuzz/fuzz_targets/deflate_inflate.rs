//! permessage-deflate's receive path and its helpers on arbitrary input, in four modes chosen by
//! the first byte (`mode % 4`):
//!
//! 0. Frames: a limit (0..=64 KiB, or usize::MAX), context-takeover flags, a role and a list of messages
//!    (arbitrary compressed bytes, plaintext compressed by the encoder, plain messages, pings),
//!    some fragmented at arbitrary split points, with pings between fragments and protocol
//!    errors injected. A FrameReader with the deflate decoder reads them, fed whole and in
//!    pieces. Oracle: never a panic; every message within the limit; every error typed, with
//!    close 1009 for a limit and 1007 or 1002 otherwise; the same events whole or in pieces;
//!    and the events a reference model predicts (flate2 inflating each message's payload plus
//!    the RFC 7692 §7.2.2 tail in one go, without the reader's bounded steps; bytes after a
//!    final block are left unused, as in §7.2.3.4, and the next message starts a new stream).
//! 1. Round trip: plaintext messages through a FrameWriter with the encoder (window bits
//!    8..=15, no context takeover on either side, levels 0..=9, Compression::Auto / Always /
//!    Never, fragmentation) into a FrameReader with the decoder come back identical (or 1009
//!    past the limit); the compressed payloads inflate with a window of the negotiated size.
//! 2. PayloadInflater (gzip, raw, zlib) on arbitrary or well-formed streams, appending to a
//!    prefilled output, with or without spare capacity: never more than the limit on success,
//!    at most one byte more on error, a reused inflater agrees with a
//!    fresh one, and the verdict under the limit agrees with the verdict without one.
//! 3. Negotiation: `accept` and `confirm` on header items built from arbitrary bytes and
//!    extension tokens. Never a panic; what they accept is valid per RFC 7692 §7.1 (checked by
//!    an independent parser); a server's answer satisfies the rules for the offer it answers
//!    (§7.1.1.1, §7.1.2.1, §7.1.2.2) and is confirmed, with the same parameters, by the
//!    default client and by a client whose offer it was; any client's offer is accepted by
//!    any server config and the answer confirmed with the same parameters.
//!
//! The bugs it found are kept as fixtures in tickwire-codec's `tests/deflate_fixtures.rs`.
#![no_main]

use std::io::Write;

use flate2::{Decompress, FlushCompress, FlushDecompress, Status};
use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::deflate::{
    DeflateConfig, DeflateParams, InflateError, PayloadInflater, PerMessageDeflate, inflate_gzip,
    inflate_raw, inflate_zlib,
};
use tickwire_codec::ws::{
    CloseCode, Compression, Error, Extension, FrameReader, FrameWriter, Limits, MaskSource,
    Message, OpCode, ReadEvent, Role,
};

/// The bytes a sync flush ends with (RFC 7692 §7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    match input.byte() % 4 {
        0 => frames(input),
        1 => round_trip(input),
        2 => payload_inflater(input),
        _ => negotiation(input),
    }
});

/// Reads the input front to back; past its end every byte is 0.
struct Bytes<'a>(&'a [u8]);

impl<'a> Bytes<'a> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

// --- what a reader returns ---

#[derive(Debug, Clone, PartialEq)]
enum Seen {
    Text(Vec<u8>),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Other(String),
    Error(Error),
}

/// Feeds `wire` to `reader` in pieces of the sizes in `pieces` (cycled; all at once when empty)
/// and records every event up to the first error, checking the limit and the error contract.
fn read_all(mut reader: FrameReader, wire: &[u8], pieces: &[u8], limit: usize) -> Vec<Seen> {
    let mut seen = Vec::new();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    loop {
        loop {
            match reader.poll() {
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
                        reader.poll(),
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
        reader.feed(&wire[at..at + n]);
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
fn push_frame(
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
fn split_points(payload: &[u8], splits: &[u8]) -> Vec<std::ops::Range<usize>> {
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

// --- mode 0: crafted frames against a reference model ---

/// Which errors a model outcome accepts.
#[derive(Debug, Clone, Copy, Default)]
struct Accept {
    too_large: bool,
    corrupt: bool,
    utf8: bool,
    reserved_bits: bool,
    fragmented_control: bool,
}

impl Accept {
    fn matches(&self, error: &Error) -> bool {
        match error {
            Error::MessageTooLarge { .. } => self.too_large,
            Error::Extension { code, .. } => self.corrupt && *code == CloseCode::INVALID_PAYLOAD,
            Error::InvalidUtf8 => self.utf8,
            Error::ReservedBits(_) => self.reserved_bits,
            Error::FragmentedControlFrame => self.fragmented_control,
            _ => false,
        }
    }
}

#[derive(Debug)]
enum Outcome {
    /// The message comes back with these bytes.
    Ok(Seen),
    /// The reader fails on this message with one of these errors.
    Fail(Accept),
}

#[derive(Debug)]
struct Expected {
    /// Pings sent between this message's fragments, returned before it.
    pings: Vec<Vec<u8>>,
    outcome: Outcome,
}

/// What the reference inflater made of one compressed message.
enum Inflated {
    /// Inflated; `ended` when a final block ended the deflate stream (in the payload, whose
    /// remaining bytes are left unused, or inside the re-appended tail).
    Done {
        out: Vec<u8>,
        ended: bool,
    },
    /// More than the limit; `or_corrupt` when corrupt data follows within a few bytes (the
    /// reader may see either first).
    TooLarge {
        or_corrupt: bool,
    },
    Corrupt,
}

/// Inflates `payload` followed by the tail in one go, with no output limit but a cap a little
/// past `limit`: the straightforward reading of RFC 7692 §7.2.2.
fn reference_inflate(inflater: &mut Decompress, payload: &[u8], limit: usize) -> Inflated {
    let mut data = payload.to_vec();
    data.extend_from_slice(&TAIL);
    let cap = limit.saturating_add(1024);
    let mut out = Vec::with_capacity(cap.min(1 << 16));
    let mut input = &data[..];
    let ended = loop {
        if out.len() == out.capacity() && out.len() < cap {
            out.reserve_exact(out.len().min(cap - out.len()));
        }
        let (in0, out0) = (inflater.total_in(), inflater.total_out());
        let status = inflater.decompress_vec(input, &mut out, FlushDecompress::None);
        input = &input[(inflater.total_in() - in0) as usize..];
        let produced = inflater.total_out() - out0;
        match status {
            Err(_) if out.len() > limit => return Inflated::TooLarge { or_corrupt: true },
            Err(_) => return Inflated::Corrupt,
            Ok(Status::StreamEnd) => break true,
            Ok(_) if out.len() == cap => {
                return Inflated::TooLarge { or_corrupt: false };
            }
            Ok(_) if input.is_empty() => break false,
            Ok(_) if produced == 0 && inflater.total_in() == in0 && out.len() < out.capacity() => {
                return Inflated::Corrupt;
            }
            Ok(_) => {}
        }
    };
    if out.len() > limit {
        return Inflated::TooLarge { or_corrupt: false };
    }
    Inflated::Done { out, ended }
}

fn frames(mut input: Bytes<'_>) {
    let limit = usize::from(input.u16());
    let flags = input.byte();
    let reader_role = if flags & 1 == 0 {
        Role::Client
    } else {
        Role::Server
    };
    let sender_role = match reader_role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    let bits_byte = input.byte();
    let bits = 8 + bits_byte % 8;
    // usize::MAX: "no limit".
    let limit = if bits_byte & 0x80 != 0 {
        usize::MAX
    } else {
        limit
    };
    let params = DeflateParams {
        server_no_context_takeover: flags & 2 != 0,
        client_no_context_takeover: flags & 4 != 0,
        server_max_window_bits: bits,
        client_max_window_bits: bits,
    };
    let config = DeflateConfig {
        level: (flags >> 3) % 10,
        ..DeflateConfig::default()
    };
    // The decoder resets after every message when the peer keeps no context.
    let peer_resets = match reader_role {
        Role::Server => params.client_no_context_takeover,
        Role::Client => params.server_no_context_takeover,
    };
    let pieces_len = usize::from(input.byte() % 16);
    let pieces = input.take(pieces_len);
    let mut encoder = PerMessageDeflate::new(sender_role, &params, &config)
        .into_parts()
        .1;

    let mut wire = Vec::new();
    let mut expected = Vec::new();
    let mut reference = Decompress::new(false);
    // The model stops at its first predicted failure or ambiguity.
    let mut modelling = true;
    // The decoder's window holds only what the encoder sent (no arbitrary compressed data).
    let mut window_clean = true;
    for index in 0u8..12 {
        if input.is_empty() {
            break;
        }
        let h = input.byte();
        let kind = h & 3;
        let text = h & 4 != 0;
        let fragments = usize::from((h >> 3) & 3) + 1;
        let pings_between = h & 0x20 != 0;
        let inject = h & 0x40 != 0;
        let auto = h & 0x80 != 0;
        let len = usize::from(input.byte());
        let body = input.take(len);
        let mask = (reader_role == Role::Server).then_some([0x5a ^ index, 0x13, 0xc4, 0x7e]);
        if kind == 3 {
            // A ping; "inject" clears FIN, which control frames may not do.
            let payload = &body[..body.len().min(125)];
            push_frame(&mut wire, !inject, 0, 0x9, payload, mask);
            let outcome = if inject {
                Outcome::Fail(Accept {
                    fragmented_control: true,
                    ..Accept::default()
                })
            } else {
                Outcome::Ok(Seen::Ping(payload.to_vec()))
            };
            if modelling {
                modelling = !inject;
                expected.push(Expected {
                    pings: Vec::new(),
                    outcome,
                });
            }
            continue;
        }
        // The payload on the wire and whether it is compressed.
        let (payload, compressed, plain): (Vec<u8>, bool, Option<Vec<u8>>) = match kind {
            0 => (body.to_vec(), true, None),
            1 => {
                let repeat = 2 * usize::from(input.byte()) + 1;
                let unit = if text {
                    String::from_utf8_lossy(body).into_owned().into_bytes()
                } else {
                    body.to_vec()
                };
                let plain = unit.repeat(repeat);
                let mut out = Vec::new();
                let compression = if auto {
                    Compression::Auto
                } else {
                    Compression::Always
                };
                match encoder.encode(&plain, &mut out, compression) {
                    Some(_) => (out, true, Some(plain)),
                    None => (plain.clone(), false, Some(plain)),
                }
            }
            _ => (body.to_vec(), false, None),
        };
        let splits = input.take(fragments - 1);
        let ranges = split_points(&payload, splits);
        let opcode = if text { 0x1 } else { 0x2 };
        let rsv_first = if compressed { 0b100 } else { 0 };
        let mut pings = Vec::new();
        for (i, range) in ranges.iter().enumerate() {
            let first = i == 0;
            let last = i + 1 == ranges.len();
            let (op, mut rsv) = if first { (opcode, rsv_first) } else { (0x0, 0) };
            if inject && (first == (ranges.len() == 1)) && (first || i == 1) {
                // RSV1 on a continuation (RFC 7692 §6.1), or RSV2 on a single frame.
                rsv |= if first { 0b010 } else { 0b100 };
            }
            push_frame(&mut wire, last, rsv, op, &payload[range.clone()], mask);
            if pings_between && !last {
                let ping = vec![index; i + 1];
                push_frame(&mut wire, true, 0, 0x9, &ping, mask);
                pings.push(ping);
            }
        }
        if !modelling {
            continue;
        }
        let seen = |bytes: Vec<u8>| {
            if text {
                Seen::Text(bytes)
            } else {
                Seen::Binary(bytes)
            }
        };
        let fail = |accept: Accept| {
            Outcome::Fail(Accept {
                // Text is checked fragment by fragment: its verdict may come first.
                utf8: accept.utf8 || text,
                reserved_bits: inject,
                ..accept
            })
        };
        let mut outcome = if compressed {
            let inflated = reference_inflate(&mut reference, &payload, limit);
            if let (Some(plain), true) = (&plain, window_clean) {
                // The encoder's output inflates to its plaintext, with no final block, while
                // the window holds only what the encoder sent.
                match &inflated {
                    Inflated::Done { out, ended } => {
                        assert_eq!(out, plain, "encoder output does not inflate back");
                        assert!(!ended, "encoder output ends the stream");
                    }
                    Inflated::TooLarge { .. } => assert!(plain.len() > limit),
                    Inflated::Corrupt => panic!("encoder output does not inflate"),
                }
            }
            if plain.is_none() && !peer_resets {
                window_clean = false;
            }
            match inflated {
                Inflated::TooLarge { or_corrupt } => fail(Accept {
                    too_large: true,
                    corrupt: or_corrupt,
                    ..Accept::default()
                }),
                Inflated::Corrupt => fail(Accept {
                    corrupt: true,
                    ..Accept::default()
                }),
                Inflated::Done { out, ended } => {
                    if peer_resets || ended {
                        // A final block ends the stream: the next message starts a new one.
                        reference.reset(false);
                    }
                    if !text || std::str::from_utf8(&out).is_ok() {
                        Outcome::Ok(seen(out))
                    } else {
                        fail(Accept {
                            utf8: true,
                            ..Accept::default()
                        })
                    }
                }
            }
        } else {
            let len = payload.len();
            if len > limit {
                fail(Accept {
                    too_large: true,
                    ..Accept::default()
                })
            } else if text && std::str::from_utf8(&payload).is_err() {
                fail(Accept {
                    utf8: true,
                    ..Accept::default()
                })
            } else {
                Outcome::Ok(seen(payload.clone()))
            }
        };
        if inject && matches!(outcome, Outcome::Ok(_)) {
            // The injected RSV bits fail the message unless its content failed first.
            outcome = Outcome::Fail(Accept {
                reserved_bits: true,
                ..Accept::default()
            });
        }
        if matches!(outcome, Outcome::Fail(_)) {
            modelling = false;
        }
        expected.push(Expected { pings, outcome });
    }

    let limits = Limits {
        max_frame_size: 1 << 20,
        max_message_size: limit,
        max_fragments: 64,
    };
    let reader = || {
        let mut reader = FrameReader::new(reader_role, limits, 64);
        let decoder = PerMessageDeflate::new(reader_role, &params, &config)
            .into_parts()
            .0;
        reader.set_extension(Box::new(decoder));
        reader
    };
    let whole = read_all(reader(), &wire, &[], limit);
    let split = read_all(reader(), &wire, pieces, limit);
    assert_eq!(whole, split, "whole and in pieces differ");
    check_model(&expected, &whole, modelling);
}

/// Compares the reader's events with the model's; `complete` when the model covers every
/// message sent.
fn check_model(expected: &[Expected], actual: &[Seen], complete: bool) {
    let mut actual = actual.iter();
    for (at, exp) in expected.iter().enumerate() {
        match &exp.outcome {
            Outcome::Ok(message) => {
                for ping in &exp.pings {
                    assert_eq!(
                        actual.next(),
                        Some(&Seen::Ping(ping.clone())),
                        "message {at}"
                    );
                }
                assert_eq!(actual.next(), Some(message), "message {at}: {exp:?}");
            }
            Outcome::Fail(accept) => {
                let mut next = actual.next();
                let mut pings = exp.pings.iter();
                // The pings before the failing fragment come out first.
                while let (Some(Seen::Ping(got)), Some(ping)) = (next, pings.next()) {
                    assert_eq!(got, ping, "message {at}");
                    next = actual.next();
                }
                match next {
                    Some(Seen::Error(error)) => {
                        assert!(
                            accept.matches(error),
                            "message {at}: {error:?}, expected {exp:?}"
                        );
                        assert_eq!(actual.next(), None);
                    }
                    got => panic!("message {at}: {got:?}, expected {exp:?}"),
                }
                return;
            }
        }
    }
    if complete {
        assert_eq!(actual.next(), None, "more events than messages");
    }
}

// --- mode 1: the writer with the encoder into the reader with the decoder ---

fn round_trip(mut input: Bytes<'_>) {
    let flags = input.byte();
    let (writer_role, reader_role) = if flags & 1 == 0 {
        (Role::Server, Role::Client)
    } else {
        (Role::Client, Role::Server)
    };
    let params = DeflateParams {
        server_no_context_takeover: flags & 2 != 0,
        client_no_context_takeover: flags & 4 != 0,
        server_max_window_bits: 8 + input.byte() % 8,
        client_max_window_bits: 8 + input.byte() % 8,
    };
    let config = DeflateConfig {
        level: input.byte() % 10,
        min_size: usize::from(input.byte()),
        only_if_smaller: flags & 8 != 0,
        ..DeflateConfig::default()
    };
    let limit = match (flags & 0x10 != 0, flags & 0x20 != 0) {
        (true, false) => 1 << 20,
        // "No limit".
        (true, true) => usize::MAX,
        _ => usize::from(input.u16()),
    };
    let fragment_size = match input.byte() {
        0 => None,
        n => Some(usize::from(n)),
    };
    let pieces_len = usize::from(input.byte() % 16);
    let pieces = input.take(pieces_len);
    let (writer_bits, writer_resets) = match writer_role {
        Role::Server => (
            params.server_max_window_bits,
            params.server_no_context_takeover,
        ),
        Role::Client => (
            params.client_max_window_bits,
            params.client_no_context_takeover,
        ),
    };

    let mut writer = FrameWriter::new(writer_role, MaskSource::seeded(u64::from(flags)));
    let encoder = PerMessageDeflate::new(writer_role, &params, &config)
        .into_parts()
        .1;
    writer.set_extension(Box::new(encoder));
    writer.set_fragment_size(fragment_size);
    let mut out = WriteBuf::new(256, 16);
    // What was sent, with the compression asked for (None for pings).
    let mut sent: Vec<(Seen, Option<Compression>)> = Vec::new();
    for _ in 0..12 {
        if input.is_empty() {
            break;
        }
        let h = input.byte();
        let text = h & 1 != 0;
        let compression = match (h >> 1) % 3 {
            0 => Compression::Auto,
            1 => Compression::Always,
            _ => Compression::Never,
        };
        let len = usize::from(input.byte());
        let body = input.take(len);
        let repeat = if h & 0x10 != 0 {
            1 + usize::from(input.byte()) * 8
        } else {
            1
        };
        const MAX_PLAIN: usize = 1 << 14;
        if text {
            let mut plain = String::from_utf8_lossy(body).repeat(repeat);
            let mut cut = plain.len().min(MAX_PLAIN);
            while !plain.is_char_boundary(cut) {
                cut -= 1;
            }
            plain.truncate(cut);
            match compression {
                Compression::Auto => writer.text(&mut out, &plain),
                _ => writer.message_with(&mut out, OpCode::Text, plain.as_bytes(), compression),
            }
            sent.push((Seen::Text(plain.into_bytes()), Some(compression)));
        } else {
            let mut plain = body.repeat(repeat);
            plain.truncate(MAX_PLAIN);
            match compression {
                Compression::Auto => writer.binary(&mut out, &plain),
                _ => writer.message_with(&mut out, OpCode::Binary, &plain, compression),
            }
            sent.push((Seen::Binary(plain), Some(compression)));
        }
        if h & 8 != 0 {
            writer.ping(&mut out, &[h]).unwrap();
            sent.push((Seen::Ping(vec![h]), None));
        }
    }
    let wire = out.as_slice().to_vec();
    check_wire(
        &wire,
        writer_role,
        writer_bits,
        writer_resets,
        fragment_size,
        &config,
        &sent,
    );

    let mut expected = Vec::new();
    for (message, _) in &sent {
        match message {
            Seen::Text(bytes) | Seen::Binary(bytes) if bytes.len() > limit => {
                expected.push(Seen::Error(Error::MessageTooLarge { limit }));
                break;
            }
            other => expected.push(other.clone()),
        }
    }
    let limits = Limits {
        max_frame_size: 1 << 20,
        max_message_size: limit,
        max_fragments: usize::MAX,
    };
    let reader = || {
        let mut reader = FrameReader::new(reader_role, limits, 64);
        let decoder = PerMessageDeflate::new(reader_role, &params, &config)
            .into_parts()
            .0;
        reader.set_extension(Box::new(decoder));
        reader
    };
    let whole = read_all(reader(), &wire, &[], limit);
    assert_eq!(whole, expected, "round trip");
    let split = read_all(reader(), &wire, pieces, limit);
    assert_eq!(split, whole, "whole and in pieces differ");
}

/// Parses the writer's frames and checks them against what was sent: RSV1 only on a
/// compressed message's first frame, per the policy and the window, fragments within the
/// fragment size, and every compressed payload inflating to its plaintext with a window of
/// the negotiated size (RFC 7692 §7.1.2).
fn check_wire(
    mut wire: &[u8],
    role: Role,
    bits: u8,
    resets: bool,
    fragment_size: Option<usize>,
    config: &DeflateConfig,
    sent: &[(Seen, Option<Compression>)],
) {
    let mut inflater = Decompress::new_with_window_bits(false, bits.max(9));
    let mut sent = sent.iter();
    // The data message being assembled: first frame's RSV, payload so far.
    let mut assembling: Option<(u8, Vec<u8>)> = None;
    while !wire.is_empty() {
        let (b0, b1) = (wire[0], wire[1]);
        let (mut len, mut at) = (usize::from(b1 & 0x7f), 2);
        if len == 126 {
            len = usize::from(u16::from_be_bytes([wire[2], wire[3]]));
            at = 4;
        } else if len == 127 {
            len = u64::from_be_bytes(wire[2..10].try_into().unwrap()) as usize;
            at = 10;
        }
        assert_eq!(b1 & 0x80 != 0, role == Role::Client, "masking");
        let mut payload = if b1 & 0x80 != 0 {
            let key: [u8; 4] = wire[at..at + 4].try_into().unwrap();
            at += 4;
            let mut payload = wire[at..at + len].to_vec();
            for (i, b) in payload.iter_mut().enumerate() {
                *b ^= key[i % 4];
            }
            payload
        } else {
            wire[at..at + len].to_vec()
        };
        wire = &wire[at + len..];
        let (fin, rsv, opcode) = (b0 & 0x80 != 0, (b0 >> 4) & 7, b0 & 0x0f);
        if opcode == 0x9 {
            assert_eq!(rsv, 0, "RSV on a ping");
            assert_eq!(sent.next().map(|s| &s.0), Some(&Seen::Ping(payload)));
            continue;
        }
        if let Some(size) = fragment_size {
            assert!(
                len <= size,
                "a frame of {len} bytes past the fragment size {size}"
            );
        }
        match (&mut assembling, opcode) {
            (None, 0x1 | 0x2) => {
                assert!(rsv == 0 || rsv == 0b100, "RSV {rsv:#05b}");
                assembling = Some((rsv, std::mem::take(&mut payload)));
            }
            (Some((_, so_far)), 0x0) => {
                assert_eq!(rsv, 0, "RSV on a continuation frame");
                so_far.extend_from_slice(&payload);
            }
            _ => panic!("unexpected frame {b0:#04x}"),
        }
        if !fin {
            continue;
        }
        let (rsv, payload) = assembling.take().unwrap();
        let Some((Seen::Text(plain) | Seen::Binary(plain), Some(compression))) = sent.next() else {
            panic!("a data message that was not sent");
        };
        let compressed = rsv != 0;
        match compression {
            Compression::Never => assert!(!compressed, "compressed though Never"),
            Compression::Always => assert_eq!(compressed, bits >= 9, "Always, window {bits}"),
            Compression::Auto => {
                if plain.len() < config.min_size || bits < 9 {
                    assert!(!compressed, "compressed below min_size or with window 8");
                }
                if compressed && config.only_if_smaller {
                    assert!(payload.len() < plain.len(), "compressed but not smaller");
                }
            }
        }
        if !compressed {
            assert_eq!(&payload, plain);
            continue;
        }
        let mut data = payload;
        data.extend_from_slice(&TAIL);
        let mut out = Vec::with_capacity(plain.len() + 64);
        let mut input = &data[..];
        while !input.is_empty() {
            let before = inflater.total_in();
            out.reserve(256);
            let status = inflater
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
                .unwrap_or_else(|e| panic!("does not inflate with a {bits}-bit window: {e}"));
            assert_ne!(status, Status::StreamEnd, "the encoder ended the stream");
            input = &input[(inflater.total_in() - before) as usize..];
        }
        assert_eq!(&out, plain, "inflated with a {bits}-bit window");
        if resets {
            inflater.reset(false);
        }
    }
    assert!(assembling.is_none());
    assert_eq!(sent.next(), None, "sent but not on the wire");
}

// --- mode 2: the standalone inflaters ---

fn payload_inflater(mut input: Bytes<'_>) {
    let flags = input.byte();
    let format = flags % 3;
    let limit = usize::from(input.u16());
    // "No limit".
    let limit = if flags & 0x80 != 0 { usize::MAX } else { limit };
    let prefill = vec![0xa5; usize::from(input.byte() % 32)];
    // A reused output buffer: spare capacity past the limit must not let inflation run on.
    let spare = if flags & 0x40 != 0 { 1 << 16 } else { 0 };
    let output = || {
        let mut out = Vec::with_capacity(prefill.len() + spare);
        out.extend_from_slice(&prefill);
        out
    };
    let mut plain = None;
    let stream = if flags & 4 != 0 {
        // A well-formed stream of the format.
        let level = flate2::Compression::new(u32::from(input.byte() % 10));
        let len = usize::from(input.byte());
        let body = input.take(len);
        let text = body.repeat(1 + usize::from(input.byte()) * 4);
        let stream = match format {
            0 => {
                let mut builder = flate2::GzBuilder::new();
                if flags & 8 != 0 {
                    builder = builder.filename(b"name".to_vec());
                }
                if flags & 16 != 0 {
                    builder = builder.comment(b"comment".to_vec());
                }
                if flags & 32 != 0 {
                    builder = builder.extra(body.to_vec());
                }
                let mut encoder = builder.write(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
            1 if flags & 8 != 0 => {
                // Sync-flushed, no final block, as permessage-deflate sends.
                let mut compress = flate2::Compress::new(level, false);
                let mut out = Vec::with_capacity(text.len() + 1024);
                compress
                    .compress_vec(&text, &mut out, FlushCompress::Sync)
                    .unwrap();
                assert_eq!(compress.total_in(), text.len() as u64);
                out
            }
            1 => {
                let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
            _ => {
                let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
        };
        plain = Some(text);
        stream
    } else {
        input.0.to_vec()
    };
    let fresh = |max_len: usize| {
        let mut out = output();
        let result = match format {
            0 => inflate_gzip(&stream, &mut out, max_len),
            1 => inflate_raw(&stream, &mut out, max_len),
            _ => inflate_zlib(&stream, &mut out, max_len),
        };
        (result, out)
    };
    let limited = fresh(limit);
    // A reused inflater, dirtied by the other formats first, agrees with a fresh one.
    let mut reused = PayloadInflater::new();
    let _ = reused.gzip(&stream, &mut Vec::new(), 100);
    let _ = reused.raw(&stream, &mut Vec::new(), 100);
    let _ = reused.zlib(&stream, &mut Vec::new(), 100);
    let mut out = output();
    let result = match format {
        0 => reused.gzip(&stream, &mut out, limit),
        1 => reused.raw(&stream, &mut out, limit),
        _ => reused.zlib(&stream, &mut out, limit),
    };
    assert_eq!((result, out), limited, "reused inflater");

    let (result, out) = &limited;
    assert_eq!(
        &out[..prefill.len()],
        &prefill[..],
        "the prefilled bytes changed"
    );
    match result {
        Ok(()) => assert!(
            out.len() <= limit,
            "{} bytes past the limit {limit}",
            out.len()
        ),
        Err(InflateError::TooLarge { limit: l }) => {
            assert_eq!(*l, limit);
            // Documented: at most max_len + 1 bytes on error, unless the caller's own bytes
            // were more already.
            let most = limit.saturating_add(1).max(prefill.len());
            assert!(out.len() <= most, "{} bytes on error", out.len());
        }
        Err(_) => {}
    }
    if let Some(plain) = &plain {
        if prefill.len() + plain.len() <= limit {
            assert_eq!(result, &Ok(()), "well-formed stream");
            assert_eq!(&out[prefill.len()..], &plain[..]);
        } else {
            assert_eq!(result, &Err(InflateError::TooLarge { limit }));
        }
    }
    // The limit only cuts the same inflation short.
    let big = 1 << 22;
    let (u_result, u_out) = fresh(big);
    if u_result == Err(InflateError::TooLarge { limit: big }) {
        return;
    }
    match result {
        Ok(()) => assert_eq!((&u_result, &u_out), (&Ok(()), out), "verdict changed"),
        Err(InflateError::TooLarge { .. }) => {
            assert!(
                u_out.len() > limit,
                "too large at {limit}, {} without",
                u_out.len()
            );
            assert_eq!(
                &u_out[..out.len()],
                &out[..],
                "different bytes under the limit"
            );
        }
        Err(error) => assert_eq!((&u_result, &u_out), (&Err(*error), out), "verdict changed"),
    }
}

// --- mode 3: negotiation ---

/// One permessage-deflate offer or answer, parsed independently of the library.
#[derive(Debug, Default, Clone, PartialEq)]
struct Offer {
    snct: bool,
    cnct: bool,
    /// None absent, Some(None) bare, Some(Some(n)) with a value.
    smwb: Option<Option<u8>>,
    cmwb: Option<Option<u8>>,
}

/// `None` when `item` is another extension; `Some(Err)` when it breaks RFC 7692 §7.1
/// (unknown or duplicate parameter, a value where none belongs or none where one must be, a
/// window outside 8..=15 or with a leading zero). An answer's window parameters need values.
fn parse_item(item: &str, answer: bool) -> Option<Result<Offer, ()>> {
    let mut parts = item.split(';');
    let name = parts.next()?.trim();
    if !name.eq_ignore_ascii_case("permessage-deflate") {
        return None;
    }
    let mut offer = Offer::default();
    for part in parts {
        let (name, value) = match part.split_once('=') {
            Some((name, value)) => {
                let value = value.trim();
                let unquoted = (value.len() >= 2 && value.starts_with('"') && value.ends_with('"'))
                    .then(|| &value[1..value.len() - 1]);
                (name.trim(), Some(unquoted.unwrap_or(value)))
            }
            None => (part.trim(), None),
        };
        let bits = |value: Option<&str>| {
            ["8", "9", "10", "11", "12", "13", "14", "15"]
                .iter()
                .position(|b| Some(*b) == value)
                .map(|i| i as u8 + 8)
        };
        let ok = match name.to_ascii_lowercase().as_str() {
            "server_no_context_takeover" => {
                value.is_none() && !std::mem::replace(&mut offer.snct, true)
            }
            "client_no_context_takeover" => {
                value.is_none() && !std::mem::replace(&mut offer.cnct, true)
            }
            "server_max_window_bits" if offer.smwb.is_none() => {
                offer.smwb = bits(value).map(Some);
                offer.smwb.is_some()
            }
            "client_max_window_bits" if offer.cmwb.is_none() => match value {
                None if !answer => {
                    offer.cmwb = Some(None);
                    true
                }
                _ => {
                    offer.cmwb = bits(value).map(Some);
                    offer.cmwb.is_some()
                }
            },
            _ => false,
        };
        if !ok {
            return Some(Err(()));
        }
    }
    Some(Ok(offer))
}

const TOKENS: &[&str] = &[
    "permessage-deflate",
    "server_no_context_takeover",
    "client_no_context_takeover",
    "server_max_window_bits",
    "client_max_window_bits",
    "; ",
    ", ",
    "=",
    "\"",
    "8",
    "9",
    "10",
    "15",
    "16",
    "0",
    "010",
    " ",
    "PerMessage-Deflate",
    "x-webkit-deflate-frame",
    "Client_Max_Window_Bits",
    "=\"12\"",
];

fn negotiation_config(input: &mut Bytes<'_>) -> DeflateConfig {
    let flags = input.byte();
    let (server_bits, client_bits) = (input.byte(), input.byte());
    DeflateConfig {
        server_no_context_takeover: flags & 1 != 0,
        client_no_context_takeover: flags & 2 != 0,
        // Out-of-range values included: they are clamped to 8..=15.
        server_max_window_bits: (flags & 4 != 0).then_some(server_bits % 20),
        client_max_window_bits: (flags & 8 != 0).then_some(client_bits % 20),
        ..DeflateConfig::default()
    }
}

fn clamp(bits: u8) -> u8 {
    bits.clamp(8, 15)
}

/// A server's answer to `offer` keeps RFC 7692 §7.1 and says what `params` say.
fn check_answer(offer: &Offer, params: &DeflateParams, answer: &str) {
    let a = parse_item(answer, true)
        .expect("the answer is not permessage-deflate")
        .unwrap_or_else(|()| panic!("invalid answer {answer:?}"));
    // §7.1.2.2: no client_max_window_bits unless offered; if offered with a value, no larger.
    match (offer.cmwb, a.cmwb) {
        (None, Some(_)) => panic!("client_max_window_bits not offered: {answer:?}"),
        (Some(Some(n)), Some(Some(m))) => assert!(m <= n, "{answer:?} for {offer:?}"),
        _ => {}
    }
    // §7.1.2.1: a requested server window is answered, no larger.
    if let Some(Some(n)) = offer.smwb {
        assert!(
            matches!(a.smwb, Some(Some(m)) if m <= n),
            "{answer:?} for {offer:?}"
        );
    }
    // §7.1.1.1: server_no_context_takeover requested is answered.
    assert!(!offer.snct || a.snct, "{answer:?} for {offer:?}");
    let expected = DeflateParams {
        server_no_context_takeover: a.snct,
        client_no_context_takeover: a.cnct,
        server_max_window_bits: a.smwb.flatten().unwrap_or(15),
        client_max_window_bits: a.cmwb.flatten().unwrap_or(15),
    };
    assert_eq!(params, &expected, "{answer:?}");
}

fn negotiation(mut input: Bytes<'_>) {
    let server = negotiation_config(&mut input);
    let client = negotiation_config(&mut input);
    let mut header = String::new();
    for &b in input.0.iter().take(512) {
        if b >= 0x80 {
            header.push_str(TOKENS[usize::from(b & 0x7f) % TOKENS.len()]);
        } else {
            header.push(char::from(b));
        }
    }
    let items: Vec<&str> = header.split(',').collect();

    // The server answers the first valid offer, declining invalid ones (RFC 7692 §5); it
    // fails only when every permessage-deflate offer is invalid.
    let offers: Vec<_> = items.iter().filter_map(|i| parse_item(i, false)).collect();
    match server.accept(&items) {
        Err(_) => assert!(
            !offers.is_empty() && offers.iter().all(Result::is_err),
            "refused valid offers {items:?}"
        ),
        Ok(None) => assert!(offers.is_empty(), "ignored offers {items:?}"),
        Ok(Some((params, answer))) => {
            let offer = offers
                .iter()
                .find_map(|o| o.clone().ok())
                .unwrap_or_else(|| panic!("accepted invalid offers {items:?}"));
            check_answer(&offer, &params, &answer);
            // The default client offers a bare client_max_window_bits and asks for nothing:
            // any valid answer is one it can take, with the same parameters.
            assert_eq!(
                DeflateConfig::default().confirm(&[answer.as_str()]),
                Ok(Some(params)),
                "default client on {answer:?}"
            );
            // The client that made this offer (offer() always carries client_max_window_bits)
            // takes the answer with the same parameters.
            if let Some(cmwb) = offer.cmwb {
                let mirror = DeflateConfig {
                    server_no_context_takeover: offer.snct,
                    client_no_context_takeover: offer.cnct,
                    server_max_window_bits: offer.smwb.flatten(),
                    client_max_window_bits: cmwb,
                    ..DeflateConfig::default()
                };
                assert_eq!(parse_item(&mirror.offer(), false), Some(Ok(offer.clone())));
                assert_eq!(
                    mirror.confirm(&[answer.as_str()]),
                    Ok(Some(params)),
                    "offering client on {answer:?}"
                );
            }
        }
    }

    // The client checks an answer.
    let answers: Vec<_> = items.iter().filter_map(|i| parse_item(i, true)).collect();
    match client.confirm(&items) {
        Ok(None) => assert!(answers.is_empty(), "ignored answers {items:?}"),
        Ok(Some(p)) => {
            assert_eq!(answers.len(), 1, "confirmed several answers {items:?}");
            let a = answers[0]
                .clone()
                .unwrap_or_else(|()| panic!("confirmed an invalid answer {items:?}"));
            for bits in [p.server_max_window_bits, p.client_max_window_bits] {
                assert!((8..=15).contains(&bits), "{p:?}");
            }
            if let Some(n) = client.server_max_window_bits {
                assert!(
                    matches!(a.smwb, Some(Some(m)) if m <= clamp(n)),
                    "{items:?}"
                );
            }
            if let Some(n) = client.client_max_window_bits {
                assert!(p.client_max_window_bits <= clamp(n), "{items:?}");
            }
            assert!(!client.server_no_context_takeover || a.snct, "{items:?}");
            assert_eq!(p.server_no_context_takeover, a.snct);
            assert_eq!(
                p.client_no_context_takeover,
                a.cnct || client.client_no_context_takeover
            );
            assert_eq!(p.server_max_window_bits, a.smwb.flatten().unwrap_or(15));
            let ours = client.client_max_window_bits.map_or(15, clamp);
            assert_eq!(p.client_max_window_bits, a.cmwb.flatten().unwrap_or(ours));
        }
        Err(_) => {}
    }

    // Any client against any server: the offer is accepted and the answer confirmed, with the
    // same parameters on both sides.
    let offer = client.offer();
    let (params, answer) = server
        .accept(&[offer.as_str()])
        .unwrap_or_else(|e| panic!("{offer:?} refused: {e}"))
        .unwrap_or_else(|| panic!("{offer:?} declined"));
    check_answer(
        &parse_item(&offer, false).unwrap().unwrap(),
        &params,
        &answer,
    );
    assert_eq!(
        client.confirm(&[answer.as_str()]),
        Ok(Some(params)),
        "{offer:?} answered {answer:?}"
    );
}
