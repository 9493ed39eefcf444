//! tickwire-tls's TlsCodec on hostile bytes, in two modes chosen by the first byte (`mode % 2`):
//!
//! 0. Raw: arbitrary bytes, optionally after a genuine first flight from a real peer (a
//!    ClientHello for a server, a server's whole first flight for a client), fed to a server or
//!    a client codec at arbitrary split points, through `read_tls` or `read_tls_from`, and
//!    optionally ended by an end of stream. Oracle: never a panic; every call returns a result
//!    or a typed error (never a configuration error); after an error every later call returns
//!    the same error; the output the codec queues stays bounded; and the record tracker's
//!    verdicts agree with a reference walk over the same bytes: `NotTls` exactly when a record
//!    header that is not TLS arrived, `TruncatedRecord` exactly when the stream ended inside a
//!    record, `HandshakeEof` only at the end of the stream (or after close_notify).
//! 1. Pair: a real client and server (TLS 1.3, or TLS 1.2 only; ALPN; 0.5-RTT data; data
//!    written before the handshake; close_notify) whose every transmission the fuzzer splits
//!    into pieces, one of which it may corrupt by a byte. Oracle: with no corruption both
//!    complete and the application data arrives intact; with one, either the same or a typed
//!    error on a side, after which that side fails for good and its alert reaches the other.
//!
//! rustls draws its randomness from the system, so a run is not byte-for-byte repeatable; the
//! verdicts the oracles check do not depend on it.
//!
//! Each mode lives in its own module under `tls_codec/`; `common` holds what they share.
#![no_main]

#[path = "tls_codec/common.rs"]
mod common;
#[path = "input.rs"]
mod input;
#[path = "tls_codec/pair.rs"]
mod pair;
#[path = "tls_codec/raw.rs"]
mod raw;

use libfuzzer_sys::fuzz_target;

use crate::common::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    match input.byte() % 2 {
        0 => raw::run(input),
        _ => pair::run(input),
    }
});
