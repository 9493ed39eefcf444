//! The server handshake on arbitrary bytes as the request. Oracle: never panics; a prefix is
//! either incomplete or the same verdict as the whole; every error has a status and its
//! answer was written; a valid request, accepted, gets a 101 and leaves exactly the bytes
//! after its head.
#![no_main]

use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{
    HandshakeError, Outcome, Parsed, Response, ServerHandshake, ServerLimits, ServerOptions,
};

/// The verdict on `bytes`: `Ok(Some(head_len))`, `Ok(None)` while incomplete, or the error.
fn verdict(options: &ServerOptions, bytes: &[u8]) -> Result<Option<usize>, HandshakeError> {
    let mut handshake = ServerHandshake::new(options);
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(bytes);
    let mut out = WriteBuf::new(64, 0);
    match handshake.read_request(&mut buf, &mut out) {
        Ok(Parsed::NeedMore) => {
            assert!(out.is_empty());
            Ok(None)
        }
        Ok(Parsed::Complete(request)) => {
            let head_len = bytes.len() - buf.len();
            assert_eq!(buf.data(), &bytes[head_len..], "the rest is left unconsumed");
            match handshake.respond(Response::accept(&request), &mut out, Instant::now()) {
                Ok(Outcome::Upgraded(_)) => {
                    assert!(out.as_slice().starts_with(b"HTTP/1.1 101 "));
                }
                other => panic!("accepting a valid request failed: {other:?}"),
            }
            Ok(Some(head_len))
        }
        Err(error) => {
            assert!(error.status().is_some(), "server error without a status: {error:?}");
            assert_eq!(Some(out.as_slice().to_vec()), error.response());
            Err(error)
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let options = ServerOptions::default().with_limits(
        ServerLimits::default()
            .with_max_head_size(2048)
            .with_max_headers(16),
    );
    let whole = verdict(&options, data);
    // Every strict prefix must be "incomplete" or already decide the same way.
    for cut in [data.len() / 2, data.len().saturating_sub(1)] {
        match (verdict(&options, &data[..cut]), &whole) {
            (Ok(None), _) => {}
            (Ok(Some(a)), Ok(Some(b))) => assert_eq!(a, *b),
            (Err(_), Err(_)) => {}
            (prefix, whole) => panic!("prefix decided {prefix:?} but the whole gave {whole:?}"),
        }
    }
});
