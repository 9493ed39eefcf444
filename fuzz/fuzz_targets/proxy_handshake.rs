//! The HTTP CONNECT and SOCKS5 handshakes (`connect::HttpConnect`, `connect::Socks5`) on
//! arbitrary answers from the proxy. Oracle: fed whole, in arbitrary pieces or byte by byte,
//! each gives the same outcome (tunnel, waiting, or the same typed error) and the same
//! tunnel bytes; never a panic; while waiting, no more than its bound is held.
//!
//! Input: a control byte (bit 0: SOCKS5 rather than HTTP CONNECT; bit 1: credentials;
//! bit 2: an IP target; bit 3: end of stream at the end; high nibble: how many piece sizes
//! follow), the piece sizes, then the proxy's bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::connect::{Credentials, HttpConnect, Socks5, Target};

const MAX_HEAD: usize = 512;
/// The longest SOCKS5 reply: VER REP RSV ATYP, a length byte, 255 name bytes, a port.
const SOCKS5_REPLY_MAX: usize = 4 + 1 + 255 + 2;

#[derive(Clone, Copy)]
struct Setup {
    socks5: bool,
    credentials: bool,
    ip: bool,
    eof: bool,
}

fn pieces<'a>(data: &'a [u8], sizes: &'a [u8]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut size = sizes.iter().cycle();
    while at < data.len() {
        let want = if sizes.is_empty() {
            data.len()
        } else {
            usize::from(*size.next().unwrap_or(&1)).max(1)
        };
        let n = want.min(data.len() - at);
        out.push(&data[at..at + n]);
        at += n;
    }
    out
}

fn run(setup: Setup, pieces: &[&[u8]]) -> String {
    let target = Target::new(if setup.ip { "192.0.2.7" } else { "example.com" }, 443);
    let credentials = Credentials::new("user", "secret");
    let credentials = setup.credentials.then_some(&credentials);
    if setup.socks5 {
        let mut handshake = Socks5::new(&target, credentials).expect("a valid target");
        let mut last = Ok(tickwire_codec::connect::Progress::NeedMore);
        for piece in pieces {
            handshake.written(handshake.pending_write().len());
            last = handshake.receive(piece);
            assert!(handshake.held_bytes() <= SOCKS5_REPLY_MAX);
            if last.is_err() {
                break;
            }
        }
        if setup.eof && last.is_ok() {
            last = handshake.receive_eof();
        }
        format!("{last:?} {:?} {:?}", handshake.bound(), handshake.tunnel_bytes())
    } else {
        let mut handshake = HttpConnect::new(&target, credentials, MAX_HEAD).expect("valid");
        let mut last = Ok(tickwire_codec::connect::Progress::NeedMore);
        for piece in pieces {
            last = handshake.receive(piece);
            assert!(handshake.held_bytes() <= MAX_HEAD);
            if last.is_err() {
                break;
            }
        }
        if setup.eof && last.is_ok() {
            last = handshake.receive_eof();
        }
        format!("{last:?} {:?}", handshake.tunnel_bytes())
    }
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, rest)) = input.split_first() else {
        return;
    };
    let setup = Setup {
        socks5: control & 1 != 0,
        credentials: control & 2 != 0,
        ip: control & 4 != 0,
        eof: control & 8 != 0,
    };
    let sizes_len = usize::from(control >> 4).min(rest.len());
    let (sizes, data) = rest.split_at(sizes_len);
    let whole = run(setup, &[data]);
    assert_eq!(run(setup, &pieces(data, sizes)), whole);
    assert_eq!(run(setup, &pieces(data, &[1])), whole);
});
