//! Mode 0: crafted frames (arbitrary and encoder-compressed messages, plain messages, pings,
//! fragmentation and injected protocol errors) through a FrameReader with the deflate decoder,
//! checked against a reference model built on flate2. It owns the model ([`Expected`],
//! [`Outcome`], [`Accept`]) and the reference inflation; the reader loop and the frame
//! builders come from `common`.

use flate2::{Decompress, FlushDecompress, Status};
use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use tickwire_codec::ws::{CloseCode, Compression, Error, Extension, FrameReader, Limits, Role};

use crate::common::{Bytes, Seen, TAIL, push_frame, read_all, split_points};

// --- mode 0: crafted frames against a reference model ---

pub(crate) fn run(mut input: Bytes<'_>) {
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
    let config = DeflateConfig::default()
        .with_level((flags >> 3) % 10);
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

    let limits = Limits::client()
        .with_max_frame_size(1 << 20)
        .with_max_message_size(limit)
        .with_max_fragments(64);
    let reader = || {
        let mut reader = FrameReader::new(reader_role, limits);
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
