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
//!
//! Each mode lives in its own module under `deflate_inflate/`; `common` holds what they share.
#![no_main]

#[path = "deflate_inflate/common.rs"]
mod common;
#[path = "deflate_inflate/frames.rs"]
mod frames;
#[path = "deflate_inflate/inflaters.rs"]
mod inflaters;
#[path = "input.rs"]
mod input;
#[path = "deflate_inflate/negotiation.rs"]
mod negotiation;
#[path = "deflate_inflate/round_trip.rs"]
mod round_trip;

use libfuzzer_sys::fuzz_target;

use crate::common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    match input.byte() % 4 {
        0 => frames::run(input),
        1 => round_trip::run(input),
        2 => inflaters::run(input),
        _ => negotiation::run(input),
    }
});
