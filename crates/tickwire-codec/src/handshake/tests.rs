//! Handshake tests: the RFC example, request building, every client and server failure with
//! its status, and split invariance of the parsers. Both roles driven against each other are
//! in `pair_tests.rs`.

use std::time::Instant;

use base64::Engine as _;

use super::*;
use crate::buf::{ReadBuf, WriteBuf};
use crate::ws::MaskSource;

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
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {}\r\n{extra}\r\n",
        accept_key(handshake.key().as_bytes())
    )
}

/// A client handshake for `u` with the RFC's sample nonce as its key.
fn client(u: &str, options: ClientOptions) -> Result<ClientHandshake, HandshakeError> {
    Ok(ClientHandshake::new(&url(u), options, MaskSource::seeded(1))?.with_key(key_bytes()))
}

/// The request head `handshake` writes.
fn request_text(handshake: &ClientHandshake) -> Result<String, HandshakeError> {
    let mut out = WriteBuf::new(64, 0);
    handshake.write_request(&mut out)?;
    Ok(String::from_utf8(out.as_slice().to_vec()).unwrap())
}

fn read_buf(bytes: &[u8]) -> ReadBuf {
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(bytes);
    buf
}

/// What a server handshake with `options` makes of `bytes`, and what it wrote.
fn server_read(
    bytes: &[u8],
    options: &ServerOptions,
) -> (Result<Parsed<Request>, HandshakeError>, ReadBuf, Vec<u8>) {
    let mut handshake = ServerHandshake::new(options);
    let mut buf = read_buf(bytes);
    let mut out = WriteBuf::new(64, 0);
    let result = handshake.read_request(&mut buf, &mut out);
    (result, buf, out.as_slice().to_vec())
}

fn limited(limits: ServerLimits) -> ServerOptions {
    ServerOptions {
        limits,
        ..ServerOptions::default()
    }
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
        let hs = client(u, ClientOptions::default()).unwrap();
        let text = request_text(&hs).unwrap();
        assert!(text.starts_with(&format!("{line}\r\n")), "{u}: {text}");
        assert!(text.contains(host), "{u}: {text}");
        assert!(text.contains(&format!("Sec-WebSocket-Key: {RFC_KEY}\r\n")));
        assert!(text.contains("Sec-WebSocket-Version: 13\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("frag"));
    }
}

#[test]
fn client_key_comes_from_the_mask_source_unless_given() {
    let options = ClientOptions::default;
    let draw = |seed| {
        ClientHandshake::new(&url("ws://h/"), options(), MaskSource::seeded(seed))
            .unwrap()
            .key()
            .to_owned()
    };
    assert_eq!(draw(7), draw(7), "deterministic for a seeded source");
    assert_ne!(draw(7), draw(8));
    assert_eq!(
        base64::engine::general_purpose::STANDARD
            .decode(draw(7))
            .unwrap()
            .len(),
        16
    );
}

#[test]
fn client_request_carries_offers_and_headers() {
    let options = ClientOptions {
        headers: vec![
            ("Authorization".into(), "Bearer abc".into()),
            ("Origin".into(), "https://x".into()),
        ],
        subprotocols: vec!["v1".into(), "v2".into()],
        extensions: vec!["permessage-deflate; client_max_window_bits".into()],
        ..ClientOptions::default()
    };
    let text = request_text(&client("ws://h/", options).unwrap()).unwrap();
    assert!(text.contains("Sec-WebSocket-Protocol: v1, v2\r\n"));
    assert!(
        text.contains("Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n")
    );
    assert!(text.contains("Authorization: Bearer abc\r\nOrigin: https://x\r\n"));
}

#[test]
fn client_refuses_to_write_injected_headers_and_bad_urls() {
    let inject = |name: &str, value: &str| {
        let options = ClientOptions {
            headers: vec![(name.into(), value.into())],
            ..ClientOptions::default()
        };
        let hs = client("ws://h/", options).unwrap();
        let mut out = WriteBuf::new(64, 0);
        let result = hs.write_request(&mut out);
        assert_eq!(out.is_empty(), result.is_err(), "nothing written on error");
        result
    };
    assert_eq!(
        inject("X", "a\r\nEvil: 1").unwrap_err(),
        HandshakeError::InvalidHeaderValue("X".into())
    );
    assert!(matches!(
        inject("X", "a\0"),
        Err(HandshakeError::InvalidHeaderValue(_))
    ));
    // Any control byte but HTAB, as every HTTP head tickwire writes (http::validate_header_value).
    for control in ["a\x01b", "a\x7fb", "a\x1bb"] {
        assert_eq!(
            inject("X", control).unwrap_err(),
            HandshakeError::InvalidHeaderValue("X".into()),
            "{control:?}"
        );
    }
    assert!(inject("X", "a\tb").is_ok());
    assert!(matches!(
        inject("Bad Name", "v"),
        Err(HandshakeError::InvalidHeaderName(_))
    ));
    assert!(matches!(
        client("http://h/", ClientOptions::default()),
        Err(HandshakeError::InvalidUrl(_))
    ));
}

#[test]
fn client_accepts_a_valid_101_and_leaves_the_bytes_after_it() {
    let options = ClientOptions {
        subprotocols: vec!["v1".into(), "v2".into()],
        ..ClientOptions::default()
    };
    let hs = client("ws://h/", options.clone()).unwrap();
    let head = response_for(&hs, "Sec-WebSocket-Protocol: v2\r\nX-Trace: 7\r\n");
    let mut bytes = head.clone().into_bytes();
    bytes.extend_from_slice(&[0x81, 0x02, b'h', b'i']);
    let mut hs = client("ws://h/", options.clone()).unwrap();
    let mut buf = read_buf(&bytes);
    let Parsed::Complete(accepted) = hs.read_response(&mut buf, Instant::now()).unwrap() else {
        panic!("incomplete")
    };
    assert_eq!(
        buf.data(),
        &[0x81, 0x02, b'h', b'i'],
        "left for the connection"
    );
    assert_eq!(accepted.subprotocol.as_deref(), Some("v2"));
    assert!(
        accepted
            .headers
            .iter()
            .any(|(n, v)| n == "X-Trace" && v == b"7")
    );
    assert_eq!(
        hs.read_response(&mut buf, Instant::now()).unwrap_err(),
        HandshakeError::Finished
    );
    // Incomplete at every split point.
    for cut in 0..head.len() {
        let mut hs = client("ws://h/", options.clone()).unwrap();
        let mut buf = read_buf(&bytes[..cut]);
        assert!(
            matches!(
                hs.read_response(&mut buf, Instant::now()),
                Ok(Parsed::NeedMore)
            ),
            "cut {cut}"
        );
    }
}

#[test]
fn client_rejects_bad_responses() {
    let options = ClientOptions {
        subprotocols: vec!["v1".into()],
        extensions: vec!["permessage-deflate".into()],
        ..ClientOptions::default()
    };
    let hs = client("ws://h/", options.clone()).unwrap();
    let good = response_for(&hs, "");
    let check = |text: &str| {
        let mut hs = client("ws://h/", options.clone()).unwrap();
        hs.read_response(&mut read_buf(text.as_bytes()), Instant::now())
            .map(|parsed| matches!(parsed, Parsed::Complete(_)))
    };
    assert_eq!(
        check("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"),
        Err(HandshakeError::UnexpectedStatus {
            status: 200,
            body: Vec::new()
        })
    );
    assert_eq!(
        check("HTTP/1.1 403 Forbidden\r\n\r\n"),
        Err(HandshakeError::UnexpectedStatus {
            status: 403,
            body: Vec::new()
        })
    );
    assert_eq!(
        check("HTTP/1.1 403 Forbidden\r\nContent-Length: 2\r\n\r\nno, and more"),
        Err(HandshakeError::UnexpectedStatus {
            status: 403,
            body: b"no".to_vec()
        }),
        "the body up to its length"
    );
    assert_eq!(
        check("HTTP/1.1 503 Service Unavailable\r\n\r\nbusy"),
        Err(HandshakeError::UnexpectedStatus {
            status: 503,
            body: b"busy".to_vec()
        }),
        "without a length, what arrived: the handshake never waits for a body"
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
    assert_eq!(
        check(&response_for(
            &hs,
            "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover\r\n"
        )),
        Ok(true)
    );
    assert!(matches!(
        check("garbage\r\n\r\n"),
        Err(HandshakeError::MalformedResponse(_))
    ));
    assert!(matches!(
        check(&good.replace("HTTP/1.1", "HTTP/1.0")),
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
        HandshakeError::UnexpectedStatus {
            status: 200,
            body: Vec::new(),
        },
    ] {
        assert_eq!(error.status(), None, "client-side errors have no status");
        assert_eq!(error.response(), None);
    }
}

#[test]
fn server_parses_a_valid_request() {
    let text = valid_request(
        "Sec-WebSocket-Protocol: chat, superchat\r\nSec-WebSocket-Extensions: permessage-deflate; client_max_window_bits, x-foo\r\n",
    );
    let mut bytes = text.clone().into_bytes();
    bytes.extend_from_slice(b"\x81\x80early");
    let options = ServerOptions::default();
    let mut handshake = ServerHandshake::new(&options);
    let mut buf = read_buf(&bytes);
    let mut out = WriteBuf::new(64, 0);
    let Parsed::Complete(request) = handshake.read_request(&mut buf, &mut out).unwrap() else {
        panic!("incomplete")
    };
    assert_eq!(buf.data(), b"\x81\x80early", "early frames stay unparsed");
    assert!(out.is_empty(), "nothing written before the decision");
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
        let (result, _, out) = server_read(&bytes[..cut], &options);
        assert!(matches!(result, Ok(Parsed::NeedMore)), "cut {cut}");
        assert!(out.is_empty());
    }

    let response = Response::accept(&request)
        .subprotocol("superchat")
        .header("X-Server", "tickwire");
    let Outcome::Upgraded(upgraded) = handshake
        .respond(response, &mut out, Instant::now())
        .unwrap()
    else {
        panic!("not upgraded")
    };
    assert_eq!(upgraded.subprotocol.as_deref(), Some("superchat"));
    let out = String::from_utf8(out.as_slice().to_vec()).unwrap();
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
            ok.replace("HTTP/1.1", "HTTP/2.0"),
            HandshakeError::Http(crate::http::HttpError::UnsupportedVersion),
            505,
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
            ok.replace("\r\nOrigin", "\nOrigin"),
            HandshakeError::Http(crate::http::HttpError::BareLf),
            400,
        ),
    ];
    for (text, expected, status) in cases {
        let (result, _, written) = server_read(text.as_bytes(), &ServerOptions::default());
        let error = result.unwrap_err();
        assert_eq!(error, expected, "{text}");
        assert_eq!(error.status(), Some(status), "{expected:?}");
        let response = error.response().unwrap();
        assert_eq!(written, response, "the answer is written for the transport");
        assert_response_frames_its_body(&response, status, &expected);
    }
    let (result, _, written) = server_read(
        b"GET / HTTP/1.1\r\nHo st: x\r\n\r\n",
        &ServerOptions::default(),
    );
    assert!(matches!(result, Err(HandshakeError::MalformedRequest(_))));
    assert!(written.starts_with(b"HTTP/1.1 400 Bad Request\r\n"));
}

/// `response` has `status`, a Content-Length matching its body, and the header the status
/// requires.
fn assert_response_frames_its_body(response: &[u8], status: u16, expected: &HandshakeError) {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut parsed = httparse::Response::new(&mut headers);
    let head_len = match parsed.parse(response).unwrap() {
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
    assert_eq!(find("connection"), Some(&b"close"[..]));
    match status {
        426 if *expected == HandshakeError::UnsupportedVersion => {
            assert_eq!(find("sec-websocket-version"), Some(&b"13"[..]));
        }
        426 => assert_eq!(find("upgrade"), Some(&b"websocket"[..])),
        405 => assert_eq!(find("allow"), Some(&b"GET"[..])),
        _ => {}
    }
}

#[test]
fn server_head_limits_apply_before_the_head_ends() {
    let limits = limited(ServerLimits {
        max_head_size: 256,
        max_headers: 8,
    });
    let long = format!("GET / HTTP/1.1\r\nX-Pad: {}", "a".repeat(300));
    let (result, _, written) = server_read(long.as_bytes(), &limits);
    assert_eq!(result.unwrap_err(), HandshakeError::HeadTooLarge(256));
    assert!(written.starts_with(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"));
    assert_eq!(HandshakeError::HeadTooLarge(256).status(), Some(431));
    let many = valid_request(&"X-A: 1\r\n".repeat(8));
    assert_eq!(
        server_read(many.as_bytes(), &limits).0.unwrap_err(),
        HandshakeError::TooManyHeaders(8)
    );
}

#[test]
fn server_response_refuses_what_must_not_be_written() {
    let options = ServerOptions::default();
    let respond = |response: fn(&Request) -> Response| {
        let mut handshake = ServerHandshake::new(&options);
        let mut buf = read_buf(valid_request("Sec-WebSocket-Protocol: chat\r\n").as_bytes());
        let mut out = WriteBuf::new(64, 0);
        let Ok(Parsed::Complete(request)) = handshake.read_request(&mut buf, &mut out) else {
            panic!("a valid request")
        };
        let result = handshake.respond(response(&request), &mut out, Instant::now());
        (result, String::from_utf8(out.as_slice().to_vec()).unwrap())
    };
    let (result, written) = respond(|r| Response::accept(r).subprotocol("other"));
    assert_eq!(
        result.unwrap_err(),
        HandshakeError::SubprotocolNotOffered("other".into())
    );
    assert!(
        written.starts_with("HTTP/1.1 500 Internal Server Error\r\n"),
        "a 500 instead of the 101: {written}"
    );
    let (result, written) = respond(|r| Response::accept(r).header("X", "a\nb"));
    assert_eq!(
        result.unwrap_err(),
        HandshakeError::InvalidHeaderValue("X".into())
    );
    assert!(!written.contains("101"), "{written}");
    let (result, _) = respond(|r| Response::accept(r).header("X", "a\x01b"));
    assert_eq!(
        result.unwrap_err(),
        HandshakeError::InvalidHeaderValue("X".into())
    );
    let (result, _) = respond(|_| Response::reject(42));
    assert_eq!(result.unwrap_err(), HandshakeError::InvalidStatus(42));
    let (result, text) = respond(|_| Response::reject(403).body(b"no").header("Retry-After", "5"));
    assert!(matches!(result, Ok(Outcome::Rejected(403))));
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    assert!(
        text.contains("Content-Length: 2\r\n")
            && text.contains("Retry-After: 5\r\n")
            && text.ends_with("\r\n\r\nno")
    );
}

#[test]
fn server_driven_out_of_order_is_misuse() {
    let options = ServerOptions::default();
    let mut handshake = ServerHandshake::new(&options);
    let mut out = WriteBuf::new(64, 0);
    assert_eq!(
        handshake
            .respond(Response::reject(403), &mut out, Instant::now())
            .unwrap_err(),
        HandshakeError::Finished
    );
    assert!(out.is_empty());
}

#[test]
fn endpoint_of_a_url_names_scheme_host_and_port() {
    let endpoint = |url: &str| {
        let url = url::Url::parse(url).unwrap();
        Endpoint::of(&url).map(|e| (e.secure, e.host.to_owned(), e.port))
    };
    assert_eq!(
        endpoint("ws://example.com/feed"),
        Ok((false, "example.com".into(), 80))
    );
    assert_eq!(
        endpoint("wss://example.com:9443/"),
        Ok((true, "example.com".into(), 9443))
    );
    assert_eq!(endpoint("wss://[::1]/x"), Ok((true, "::1".into(), 443)));
    assert!(matches!(
        endpoint("http://example.com/"),
        Err(HandshakeError::InvalidUrl(_))
    ));
}
