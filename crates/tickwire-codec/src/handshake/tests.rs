//! Handshake tests: the RFC example, request building, every client and server failure with
//! its status, and split invariance of the parsers.

use super::*;

const RFC_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

fn key_bytes() -> [u8; 16] {
    // The RFC 6455 §1.3 example nonce: "the sample nonce".
    *b"the sample nonce"
}

fn url(s: &str) -> url::Url {
    url::Url::parse(s).unwrap()
}

fn valid_request(extra: &str) -> String {
    format!(
        "GET /chat?room=1 HTTP/1.1\r\nHost: example.com:9001\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\n\
         Sec-WebSocket-Key: {RFC_KEY}\r\nSec-WebSocket-Version: 13\r\nOrigin: http://example.com\r\n{extra}\r\n"
    )
}

fn response_for(handshake: &ClientHandshake, extra: &str) -> String {
    let request = String::from_utf8(handshake.request_bytes().to_vec()).unwrap();
    let key = request
        .lines()
        .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
        .unwrap();
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
        accept_key(key.as_bytes())
    )
}

#[test]
fn rfc_example_accept_key() {
    assert_eq!(
        accept_key(RFC_KEY.as_bytes()),
        "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    );
}

#[test]
fn client_request_for_urls() {
    let cases = [
        (
            "ws://example.com/feed?x=1#frag",
            "GET /feed?x=1 HTTP/1.1",
            "Host: example.com\r\n",
        ),
        (
            "ws://example.com:80",
            "GET / HTTP/1.1",
            "Host: example.com\r\n",
        ),
        (
            "wss://example.com:443/a",
            "GET /a HTTP/1.1",
            "Host: example.com\r\n",
        ),
        (
            "wss://example.com:8443/a",
            "GET /a HTTP/1.1",
            "Host: example.com:8443\r\n",
        ),
        (
            "ws://[::1]:9001/a?b=c",
            "GET /a?b=c HTTP/1.1",
            "Host: [::1]:9001\r\n",
        ),
        (
            "ws://127.0.0.1:9001",
            "GET / HTTP/1.1",
            "Host: 127.0.0.1:9001\r\n",
        ),
    ];
    for (u, line, host) in cases {
        let hs = ClientHandshake::new(&url(u), &ClientRequest::default(), key_bytes()).unwrap();
        let text = String::from_utf8(hs.request_bytes().to_vec()).unwrap();
        assert!(text.starts_with(&format!("{line}\r\n")), "{u}: {text}");
        assert!(text.contains(host), "{u}: {text}");
        assert!(text.contains(&format!("Sec-WebSocket-Key: {RFC_KEY}\r\n")));
        assert!(text.contains("Sec-WebSocket-Version: 13\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("frag"));
    }
}

#[test]
fn client_request_carries_offers_and_headers() {
    let request = ClientRequest {
        headers: vec![
            ("Authorization".into(), "Bearer abc".into()),
            ("Origin".into(), "https://x".into()),
        ],
        subprotocols: vec!["v1".into(), "v2".into()],
        extensions: vec!["permessage-deflate; client_max_window_bits".into()],
        ..ClientRequest::default()
    };
    let hs = ClientHandshake::new(&url("ws://h/"), &request, key_bytes()).unwrap();
    let text = String::from_utf8(hs.request_bytes().to_vec()).unwrap();
    assert!(text.contains("Sec-WebSocket-Protocol: v1, v2\r\n"));
    assert!(
        text.contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n")
    );
    assert!(text.contains("Authorization: Bearer abc\r\nOrigin: https://x\r\n"));
}

#[test]
fn client_refuses_to_write_injected_headers_and_bad_urls() {
    let inject = |name: &str, value: &str| ClientRequest {
        headers: vec![(name.into(), value.into())],
        ..ClientRequest::default()
    };
    let u = url("ws://h/");
    assert_eq!(
        ClientHandshake::new(&u, &inject("X", "a\r\nEvil: 1"), key_bytes()).unwrap_err(),
        HandshakeError::InvalidHeaderValue("X".into())
    );
    assert!(matches!(
        ClientHandshake::new(&u, &inject("X", "a\0"), key_bytes()),
        Err(HandshakeError::InvalidHeaderValue(_))
    ));
    assert!(matches!(
        ClientHandshake::new(&u, &inject("Bad Name", "v"), key_bytes()),
        Err(HandshakeError::InvalidHeaderName(_))
    ));
    assert!(matches!(
        ClientHandshake::new(&url("http://h/"), &ClientRequest::default(), key_bytes()),
        Err(HandshakeError::InvalidUrl(_))
    ));
}

#[test]
fn client_accepts_a_valid_101_and_reports_leftover_bytes() {
    let request = ClientRequest {
        subprotocols: vec!["v1".into(), "v2".into()],
        ..ClientRequest::default()
    };
    let hs = ClientHandshake::new(&url("ws://h/"), &request, key_bytes()).unwrap();
    let head = response_for(&hs, "Sec-WebSocket-Protocol: v2\r\nX-Trace: 7\r\n");
    let mut bytes = head.clone().into_bytes();
    bytes.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
    let (accepted, consumed) = hs.parse_response(&bytes).unwrap().unwrap();
    assert_eq!(consumed, head.len());
    assert_eq!(&bytes[consumed..], &[0x81, 0x02, b'h', b'i']);
    assert_eq!(accepted.subprotocol.as_deref(), Some("v2"));
    assert!(
        accepted
            .headers
            .iter()
            .any(|(n, v)| n == "X-Trace" && v == b"7")
    );
    // Incomplete at every split point, then the same answer.
    for cut in 0..head.len() {
        assert_eq!(hs.parse_response(&bytes[..cut]).unwrap(), None, "cut {cut}");
    }
}

#[test]
fn client_rejects_bad_responses() {
    let request = ClientRequest {
        subprotocols: vec!["v1".into()],
        extensions: vec!["permessage-deflate".into()],
        ..ClientRequest::default()
    };
    let hs = ClientHandshake::new(&url("ws://h/"), &request, key_bytes()).unwrap();
    let good = response_for(&hs, "");
    let check = |text: &str| hs.parse_response(text.as_bytes());
    assert_eq!(
        check("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        Err(HandshakeError::UnexpectedStatus(200))
    );
    assert_eq!(
        check("HTTP/1.1 403 Forbidden\r\n\r\n"),
        Err(HandshakeError::UnexpectedStatus(403))
    );
    assert_eq!(
        check(&good.replace("Upgrade: websocket\r\n", "")),
        Err(HandshakeError::ResponseMissingUpgrade)
    );
    assert_eq!(
        check(&good.replace("Connection: Upgrade\r\n", "Connection: close\r\n")),
        Err(HandshakeError::ResponseMissingConnection)
    );
    assert_eq!(
        check(&good.replace("Sec-WebSocket-Accept: ", "Sec-WebSocket-Accept: x")),
        Err(HandshakeError::BadAccept)
    );
    assert_eq!(
        check(&response_for(&hs, "Sec-WebSocket-Protocol: v9\r\n")),
        Err(HandshakeError::UnofferedSubprotocol("v9".into()))
    );
    assert_eq!(
        check(&response_for(
            &hs,
            "Sec-WebSocket-Extensions: x-webkit-deflate-frame\r\n"
        )),
        Err(HandshakeError::UnofferedExtension(
            "x-webkit-deflate-frame".into()
        ))
    );
    assert!(
        check(&response_for(
            &hs,
            "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
        ))
        .is_ok()
    );
    assert!(matches!(
        check("garbage\r\n\r\n"),
        Err(HandshakeError::MalformedResponse(_))
    ));
    let huge = format!(
        "HTTP/1.1 101 Switching Protocols\r\nX: {}",
        "a".repeat(20_000)
    );
    assert!(
        matches!(check(&huge), Err(HandshakeError::MalformedResponse(_))),
        "limit applies before the head ends"
    );
    for error in [
        HandshakeError::BadAccept,
        HandshakeError::UnexpectedStatus(200),
    ] {
        assert_eq!(error.status(), None, "client-side errors have no status");
    }
}

#[test]
fn server_parses_a_valid_request() {
    let text = valid_request(
        "Sec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits, x-foo\r\n",
    );
    let mut bytes = text.clone().into_bytes();
    bytes.extend_from_slice(b"\x81\x80early");
    let (request, consumed) = Request::parse(&bytes, &ServerLimits::default())
        .unwrap()
        .unwrap();
    assert_eq!(consumed, text.len());
    assert_eq!(request.path(), "/chat?room=1");
    assert_eq!(request.host(), "example.com:9001");
    assert_eq!(request.origin(), Some("http://example.com"));
    assert_eq!(request.key(), RFC_KEY);
    assert_eq!(request.subprotocols(), ["chat", "superchat"]);
    assert_eq!(
        request.extensions(),
        ["permessage-deflate; client_max_window_bits", "x-foo"]
    );
    assert_eq!(request.header("ORIGIN"), Some(&b"http://example.com"[..]));
    for cut in 0..text.len() {
        assert!(
            Request::parse(&bytes[..cut], &ServerLimits::default())
                .unwrap()
                .is_none(),
            "cut {cut}"
        );
    }

    let mut out = Vec::new();
    Response::accept(&request)
        .subprotocol("superchat")
        .header("X-Server", "tickwire")
        .write_to(&mut out)
        .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
    assert!(out.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"));
    assert!(out.contains("Sec-WebSocket-Protocol: superchat\r\n"));
    assert!(out.ends_with("X-Server: tickwire\r\n\r\n"));
}

#[test]
fn server_rejects_each_bad_request_with_its_status() {
    let ok = valid_request("");
    let cases: Vec<(String, HandshakeError, u16)> = vec![
        (
            ok.replacen("GET", "POST", 1),
            HandshakeError::MethodNotAllowed("POST".into()),
            405,
        ),
        (
            ok.replace("HTTP/1.1", "HTTP/1.0"),
            HandshakeError::HttpVersionTooOld,
            400,
        ),
        (
            ok.replace("Host: example.com:9001\r\n", ""),
            HandshakeError::BadHost,
            400,
        ),
        (
            ok.replace("Host: example.com:9001\r\n", "Host: a\r\nHost: b\r\n"),
            HandshakeError::BadHost,
            400,
        ),
        (
            ok.replace("Upgrade: websocket\r\n", ""),
            HandshakeError::MissingUpgrade { absent: true },
            426,
        ),
        (
            ok.replace("Upgrade: websocket", "Upgrade: h2c"),
            HandshakeError::MissingUpgrade { absent: false },
            400,
        ),
        (
            ok.replace("keep-alive, Upgrade", "keep-alive"),
            HandshakeError::MissingConnectionUpgrade,
            400,
        ),
        (
            ok.replace("Version: 13", "Version: 8"),
            HandshakeError::UnsupportedVersion,
            426,
        ),
        (
            ok.replace("Sec-WebSocket-Version: 13\r\n", ""),
            HandshakeError::UnsupportedVersion,
            426,
        ),
        (ok.replace(RFC_KEY, "c2hvcnQ="), HandshakeError::BadKey, 400),
        (
            ok.replace(RFC_KEY, "not base64!!"),
            HandshakeError::BadKey,
            400,
        ),
        (
            ok.replace(&format!("Sec-WebSocket-Key: {RFC_KEY}\r\n"), ""),
            HandshakeError::BadKey,
            400,
        ),
        (
            valid_request("Content-Length: 5\r\n"),
            HandshakeError::UnexpectedBody,
            400,
        ),
        (
            valid_request("Transfer-Encoding: chunked\r\n"),
            HandshakeError::UnexpectedBody,
            400,
        ),
        (
            "GET / HTTP/1.1\r\nHo st: x\r\n\r\n".into(),
            HandshakeError::MalformedRequest("not a valid HTTP/1.1 request head"),
            400,
        ),
    ];
    for (text, expected, status) in cases {
        let error = Request::parse(text.as_bytes(), &ServerLimits::default()).unwrap_err();
        assert_eq!(error, expected, "{text}");
        assert_eq!(error.status(), Some(status), "{expected:?}");
        let response = error.response().unwrap();
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Response::new(&mut headers);
        let head_len = match parsed.parse(&response).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("incomplete response for {expected:?}"),
        };
        assert_eq!(parsed.code, Some(status));
        let find = |name: &str| {
            parsed
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case(name))
                .map(|h| h.value)
        };
        let length: usize = std::str::from_utf8(find("content-length").unwrap())
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            response.len() - head_len,
            length,
            "Content-Length matches the body"
        );
        match status {
            426 if expected == HandshakeError::UnsupportedVersion => {
                assert_eq!(find("sec-websocket-version"), Some(&b"13"[..]));
            }
            405 => assert_eq!(find("allow"), Some(&b"GET"[..])),
            _ => {}
        }
    }
}

#[test]
fn server_head_limits_apply_before_the_head_ends() {
    let limits = ServerLimits {
        max_head_size: 256,
        max_headers: 8,
    };
    let long = format!("GET / HTTP/1.1\r\nX-Pad: {}", "a".repeat(300));
    assert_eq!(
        Request::parse(long.as_bytes(), &limits).unwrap_err(),
        HandshakeError::HeadTooLarge(256)
    );
    assert_eq!(HandshakeError::HeadTooLarge(256).status(), Some(431));
    let many = valid_request(&"X-A: 1\r\n".repeat(8));
    assert_eq!(
        Request::parse(many.as_bytes(), &limits).unwrap_err(),
        HandshakeError::TooManyHeaders(8)
    );
}

#[test]
fn server_response_refuses_what_must_not_be_written() {
    let (request, _) = Request::parse(
        valid_request("Sec-WebSocket-Protocol: chat\r\n").as_bytes(),
        &ServerLimits::default(),
    )
    .unwrap()
    .unwrap();
    let mut out = Vec::new();
    assert_eq!(
        Response::accept(&request)
            .subprotocol("other")
            .write_to(&mut out),
        Err(HandshakeError::SubprotocolNotOffered("other".into()))
    );
    assert_eq!(
        Response::accept(&request)
            .header("X", "a\nb")
            .write_to(&mut out),
        Err(HandshakeError::InvalidHeaderValue("X".into()))
    );
    assert!(out.is_empty(), "nothing written on error");
    Response::reject(403)
        .body(b"no")
        .header("Retry-After", "5")
        .write_to(&mut out)
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    assert!(
        text.contains("Content-Length: 2\r\n")
            && text.contains("Retry-After: 5\r\n")
            && text.ends_with("\r\n\r\nno")
    );
}
