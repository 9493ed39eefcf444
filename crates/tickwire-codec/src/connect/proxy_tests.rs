//! Both proxy handshakes: the bytes they write, every split of the proxy's answer, typed
//! refusals, malformed and oversized input (never a panic, a bounded hold).

use proptest::prelude::*;

use super::*;

/// Feeds `answer` in the given pieces; the progress after the last piece (or the error)
/// and the tunnel bytes.
fn run_http(pieces: &[&[u8]]) -> (Result<Progress, HttpProxyError>, Vec<u8>) {
    let target = Target::new("example.com", 443);
    let mut handshake = HttpConnect::new(&target, None, 256).unwrap();
    let mut last = Ok(Progress::NeedMore);
    for piece in pieces {
        last = handshake.receive(piece);
        assert!(
            handshake.held_bytes() <= 256,
            "held {}",
            handshake.held_bytes()
        );
        if last.is_err() {
            break;
        }
    }
    (last, handshake.take_tunnel_bytes())
}

fn every_split<T: PartialEq + core::fmt::Debug>(answer: &[u8], run: impl Fn(&[&[u8]]) -> T) -> T {
    let whole = run(&[answer]);
    for at in 0..=answer.len() {
        let (a, b) = answer.split_at(at);
        assert_eq!(run(&[a, b]), whole, "split at {at}");
    }
    let bytes: Vec<&[u8]> = answer.chunks(1).collect();
    assert_eq!(run(&bytes), whole, "byte by byte");
    whole
}

#[test]
fn http_connect_writes_the_request_with_host_and_basic_auth() {
    let target = Target::new("[2001:db8::1]", 8443);
    let credentials = Credentials::new("alice", "open sesame");
    let mut handshake = HttpConnect::new(&target, Some(&credentials), 1024).unwrap();
    assert_eq!(
        handshake.pending_write(),
        b"CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: [2001:db8::1]:8443\r\n\
          Proxy-Authorization: Basic YWxpY2U6b3BlbiBzZXNhbWU=\r\n\r\n"
    );
    handshake.written(8);
    assert!(handshake.pending_write().starts_with(b"[2001"));
    handshake.written(usize::MAX);
    assert!(handshake.pending_write().is_empty());
}

#[test]
fn http_connect_2xx_is_the_tunnel_at_every_split_and_keeps_what_follows() {
    let answer = b"HTTP/1.1 200 Connection established\r\nVia: squid\r\n\r\n\x16\x03\x01hello";
    let (progress, tunnel) = every_split(answer, run_http);
    assert_eq!(progress, Ok(Progress::Tunnel));
    assert_eq!(tunnel, b"\x16\x03\x01hello");
}

#[test]
fn http_connect_refusal_carries_the_status_at_every_split() {
    let answer = b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n";
    let (progress, _) = every_split(answer, run_http);
    let error = progress.unwrap_err();
    assert!(error.is_auth_required());
    assert_eq!(
        error.to_string(),
        "the proxy refused the tunnel: 407 Proxy Authentication Required"
    );
}

#[test]
fn http_connect_malformed_oversized_and_closed_answers_are_typed() {
    assert_eq!(
        run_http(&[b"SSH-2.0-OpenSSH\r\n\r\n"]).0,
        Err(HttpProxyError::Malformed)
    );
    let long = [b'x'; 300];
    assert_eq!(
        run_http(&[b"HTTP/1.1 200 OK\r\nX: ", &long]).0,
        Err(HttpProxyError::HeadTooLarge { limit: 256 })
    );
    let target = Target::new("example.com", 443);
    let mut handshake = HttpConnect::new(&target, None, 256).unwrap();
    assert_eq!(handshake.receive(b"HTTP/1.1 200"), Ok(Progress::NeedMore));
    assert_eq!(handshake.receive_eof(), Err(HttpProxyError::Closed));
    assert_eq!(handshake.receive(b"\r\n\r\n"), Err(HttpProxyError::Closed));
}

#[test]
fn http_connect_refuses_targets_and_credentials_it_cannot_send() {
    let bad = Target::new("evil\r\nX: 1", 80);
    assert_eq!(
        HttpConnect::new(&bad, None, 64).unwrap_err(),
        HttpProxyError::InvalidTarget
    );
    let target = Target::new("example.com", 80);
    let colon = Credentials::new("a:b", "c");
    assert_eq!(
        HttpConnect::new(&target, Some(&colon), 64).unwrap_err(),
        HttpProxyError::InvalidCredentials
    );
}

/// The outcome after feeding the proxy's answers in pieces: progress or error, what was
/// written, the bound address, the tunnel bytes.
type Socks5Seen = (
    Result<Progress, Socks5Error>,
    Vec<u8>,
    Option<BoundAddr>,
    Vec<u8>,
);

fn run_socks5(target: &Target, credentials: Option<&Credentials>, pieces: &[&[u8]]) -> Socks5Seen {
    let mut handshake = Socks5::new(target, credentials).unwrap();
    let mut wrote = Vec::new();
    let mut last = Ok(Progress::NeedMore);
    for piece in pieces {
        wrote.extend_from_slice(handshake.pending_write());
        handshake.written(usize::MAX);
        last = handshake.receive(piece);
        assert!(
            handshake.held_bytes() <= 262,
            "held {}",
            handshake.held_bytes()
        );
        if last.is_err() {
            break;
        }
    }
    wrote.extend_from_slice(handshake.pending_write());
    let bound = handshake.bound().cloned();
    (last, wrote, bound, handshake.take_tunnel_bytes())
}

#[test]
fn socks5h_with_password_at_every_split() {
    let target = Target::new("example.com", 443);
    let credentials = Credentials::new("bob", "pw");
    let answer: &[u8] = b"\x05\x02\x01\x00\x05\x00\x00\x01\x7f\x00\x00\x01\x1f\x90tunnel";
    let (progress, wrote, bound, tunnel) = every_split(answer, |pieces| {
        run_socks5(&target, Some(&credentials), pieces)
    });
    assert_eq!(progress, Ok(Progress::Tunnel));
    assert_eq!(
        wrote,
        b"\x05\x02\x00\x02\x01\x03bob\x02pw\x05\x01\x00\x03\x0bexample.com\x01\xbb"
    );
    assert_eq!(
        bound,
        Some(BoundAddr::Ip("127.0.0.1:8080".parse().unwrap()))
    );
    assert_eq!(tunnel, b"tunnel");
}

#[test]
fn socks5_ip_targets_without_auth_and_a_domain_bound_address() {
    let target = Target::new("[::1]", 80);
    let answer: &[u8] = b"\x05\x00\x05\x00\x00\x03\x05proxy\x00\x50";
    let (progress, wrote, bound, tunnel) =
        every_split(answer, |pieces| run_socks5(&target, None, pieces));
    assert_eq!(progress, Ok(Progress::Tunnel));
    let mut expected = b"\x05\x01\x00\x05\x01\x00\x04".to_vec();
    expected.extend_from_slice(&[0; 15]);
    expected.extend_from_slice(b"\x01\x00\x50");
    assert_eq!(wrote, expected);
    assert_eq!(bound, Some(BoundAddr::Domain("proxy".into(), 80)));
    assert!(tunnel.is_empty());
}

#[test]
fn socks5_refusals_are_typed_at_every_split() {
    let target = Target::new("example.com", 443);
    let credentials = Credentials::new("bob", "wrong");
    let cases: [(&[u8], Option<&Credentials>, Socks5Error); 6] = [
        (b"\x05\xff", None, Socks5Error::NoAcceptableMethod),
        (b"\x04\x5a", None, Socks5Error::Version(4)),
        (b"\x05\x02", None, Socks5Error::UnexpectedMethod(2)),
        (
            b"\x05\x02\x01\x01",
            Some(&credentials),
            Socks5Error::AuthFailed(1),
        ),
        (
            b"\x05\x00\x05\x05\x00\x01\0\0\0\0\0\0",
            None,
            Socks5Error::Reply(ReplyCode::CONNECTION_REFUSED),
        ),
        (b"\x05\x00\x05\x00\x00\x09", None, Socks5Error::Malformed),
    ];
    for (answer, credentials, expected) in cases {
        let (progress, ..) = every_split(answer, |pieces| run_socks5(&target, credentials, pieces));
        assert_eq!(progress, Err(expected), "{answer:?}");
    }
    let mut handshake = Socks5::new(&target, None).unwrap();
    assert_eq!(handshake.receive(b"\x05\x00\x05"), Ok(Progress::NeedMore));
    assert_eq!(handshake.receive_eof(), Err(Socks5Error::Closed));
    assert_eq!(
        Socks5::new(&Target::new(&"a".repeat(256), 1), None).unwrap_err(),
        Socks5Error::InvalidTarget
    );
    assert_eq!(
        Socks5::new(&target, Some(&Credentials::new("", "x"))).unwrap_err(),
        Socks5Error::InvalidCredentials
    );
}

proptest! {
    #[test]
    fn arbitrary_answers_never_panic_and_hold_little(
        answer in proptest::collection::vec(any::<u8>(), 0..600),
        cut in any::<prop::sample::Index>(),
    ) {
        let at = cut.index(answer.len() + 1);
        let (a, b) = answer.split_at(at);
        let whole = run_http(&[&answer]);
        prop_assert_eq!(run_http(&[a, b]), whole);
        let target = Target::new("example.com", 443);
        let credentials = Credentials::new("u", "p");
        let whole = run_socks5(&target, Some(&credentials), &[&answer]);
        prop_assert_eq!(run_socks5(&target, Some(&credentials), &[a, b]).0, whole.0);
    }
}
