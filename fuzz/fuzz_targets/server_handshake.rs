//! The server's upgrade-request parser on arbitrary bytes. Oracle: never panics; a prefix is
//! either incomplete or the same verdict as the whole; every error maps to an HTTP response.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::handshake::{Request, ServerLimits};

fuzz_target!(|data: &[u8]| {
    let limits = ServerLimits {
        max_head_size: 2048,
        max_headers: 16,
    };
    let whole = Request::parse(data, &limits);
    if let Err(error) = &whole {
        assert!(
            error.status().is_some(),
            "server error without a status: {error:?}"
        );
        assert!(error.response().is_some());
    }
    if let Ok(Some((_, consumed))) = &whole {
        assert!(*consumed <= data.len());
    }
    // Every strict prefix must be "incomplete" or already decide the same way.
    for cut in [data.len() / 2, data.len().saturating_sub(1)] {
        match (Request::parse(&data[..cut], &limits), &whole) {
            (Ok(None), _) => {}
            (Ok(Some((_, a))), Ok(Some((_, b)))) => assert_eq!(a, *b),
            (Err(_), Err(_)) => {}
            (prefix, whole) => panic!("prefix decided {prefix:?} but the whole gave {whole:?}"),
        }
    }
});
