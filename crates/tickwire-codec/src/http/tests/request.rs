//! RequestReader: framing and every strict rule, each its own test.

use super::*;

fn rejected(input: &[u8], error: HttpError) {
    assert_eq!(
        requests(input),
        [Seen::Error(error)],
        "{}",
        String::from_utf8_lossy(input)
    );
}

#[test]
fn get_without_body() {
    let seen = requests(b"GET /v3/ticker?symbol=BTC HTTP/1.1\r\nHost: api.example.com\r\n\r\n");
    let msg = seen[0].msg();
    assert_eq!(msg.start, "GET /v3/ticker?symbol=BTC");
    assert_eq!(msg.headers, [header("Host", "api.example.com")]);
    assert!(msg.body.is_empty());
    assert!(msg.keep_alive);
}

#[test]
fn method_and_target_accessors() {
    let mut reader = RequestReader::new(Limits::server());
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(
        b"PURGE * HTTP/1.1\r\nHost: h\r\n\r\nDELETE /o/1 HTTP/1.1\r\nHost: h\r\n\r\n",
    );
    let Ok(Parsed::Complete(request)) = reader.read(&mut buf) else {
        panic!("incomplete");
    };
    assert_eq!(request.method_token(), "PURGE");
    assert_eq!(request.method(), None);
    assert_eq!(request.target(), "*");
    let Ok(Parsed::Complete(request)) = reader.read(&mut buf) else {
        panic!("incomplete");
    };
    assert_eq!(request.method(), Some(Method::Delete));
    assert_eq!(request.target(), "/o/1");
}

#[test]
fn post_with_content_length_then_pipelined_get() {
    let seen = requests(
        b"POST /order HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n{\"q\":1}GET / HTTP/1.1\r\nHost: h\r\n\r\n",
    );
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].msg().body, b"{\"q\":1}");
    assert_eq!(seen[1].msg().start, "GET /");
}

#[test]
fn chunked_post_with_trailers() {
    let seen = requests(
        b"POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n0\r\nDigest: x\r\n\r\n",
    );
    assert_eq!(seen[0].msg().body, b"abcd");
    assert!(seen[0].msg().chunked);
    assert_eq!(seen[0].msg().trailers, [header("Digest", "x")]);
}

#[test]
fn leading_empty_line_before_the_request_line_is_ignored() {
    let seen = requests(b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(seen[0].msg().start, "GET /");
    assert_eq!(seen[0].msg().head_len, 29);
}

#[test]
fn identical_duplicate_content_length_is_accepted() {
    let seen =
        requests(b"PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx");
    assert_eq!(seen[0].msg().body, b"x");
}

#[test]
fn http10_without_host_is_accepted_and_not_persistent() {
    let seen = requests(b"GET / HTTP/1.0\r\n\r\n");
    assert_eq!(seen[0].msg().version, Version::Http10);
    assert!(!seen[0].msg().keep_alive);
    let seen = requests(b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert!(seen[0].msg().keep_alive);
    let seen = requests(b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert!(!seen[0].msg().keep_alive);
}

#[test]
fn eof_between_requests_and_inside_one() {
    let input = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    let seen = split_invariant(input, |cuts| {
        read_requests(input, cuts, Limits::server(), true)
    });
    assert_eq!(seen[1], Seen::Closed);
    let input = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab";
    let seen = split_invariant(input, |cuts| {
        read_requests(input, cuts, Limits::server(), true)
    });
    assert_eq!(seen, [Seen::Error(HttpError::IncompleteBody)]);
}

// --- strict rules ---

#[test]
fn strict_transfer_encoding_with_content_length() {
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
        HttpError::TransferEncodingWithContentLength,
    );
}

#[test]
fn strict_differing_content_length() {
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        HttpError::ConflictingContentLength,
    );
}

#[test]
fn strict_signed_or_non_digit_content_length() {
    for value in ["+3", "-3", "3a", "0x3", "", "3 3", "٣"] {
        let input = format!("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: {value}\r\n\r\n");
        rejected(input.as_bytes(), HttpError::InvalidContentLength);
    }
}

#[test]
fn strict_content_length_digits() {
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 00000000000000000001\r\n\r\n",
        HttpError::InvalidContentLength,
    );
    // 19 digits parse; the value is then over the body limit.
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9999999999999999999\r\n\r\n",
        HttpError::BodyTooLarge { limit: 1 << 20 },
    );
}

#[test]
fn strict_final_coding_must_be_chunked() {
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n",
        HttpError::ChunkedNotLast,
    );
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n",
        HttpError::ChunkedNotLast,
    );
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        HttpError::ChunkedNotLast,
    );
}

#[test]
fn strict_other_transfer_coding_is_not_implemented() {
    rejected(
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
        HttpError::UnsupportedTransferEncoding,
    );
    assert_eq!(
        HttpError::UnsupportedTransferEncoding.status(),
        Some(crate::http::StatusCode::NOT_IMPLEMENTED)
    );
}

#[test]
fn strict_host_exactly_once_in_http11() {
    rejected(
        b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n",
        HttpError::MissingHost,
    );
    rejected(
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
        HttpError::MultipleHost,
    );
}

#[test]
fn strict_bare_lf_anywhere_in_the_head() {
    rejected(b"GET / HTTP/1.1\nHost: h\r\n\r\n", HttpError::BareLf);
    rejected(b"GET / HTTP/1.1\r\nHost: h\n\r\n", HttpError::BareLf);
    rejected(b"GET / HTTP/1.1\r\nHost: h\r\n\n", HttpError::BareLf);
}

#[test]
fn strict_obs_fold() {
    rejected(
        b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\n\r\n",
        HttpError::ObsFold,
    );
}

#[test]
fn strict_space_before_colon() {
    rejected(
        b"GET / HTTP/1.1\r\nHost : h\r\n\r\n",
        HttpError::InvalidHead("invalid header field name"),
    );
}

#[test]
fn strict_invalid_tokens() {
    rejected(
        b"G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
        HttpError::InvalidHead("invalid method token"),
    );
    rejected(
        b"GET / HTTP/1.1\r\nHo[st: h\r\n\r\n",
        HttpError::InvalidHead("invalid header field name"),
    );
}

#[test]
fn strict_version() {
    rejected(
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        HttpError::UnsupportedVersion,
    );
    rejected(
        b"GET / FTP/1.1\r\nHost: h\r\n\r\n",
        HttpError::InvalidHead("invalid request line"),
    );
    rejected(
        b"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
        HttpError::UnsupportedTransferEncoding,
    );
}

#[test]
fn error_statuses_for_a_server() {
    use crate::http::StatusCode;
    let cases = [
        (HttpError::HeadTooLarge { limit: 1 }, Some(StatusCode(431))),
        (
            HttpError::TooManyHeaders { limit: 1 },
            Some(StatusCode(431)),
        ),
        (HttpError::BodyTooLarge { limit: 1 }, Some(StatusCode(413))),
        (HttpError::UnsupportedVersion, Some(StatusCode(505))),
        (
            HttpError::UnsupportedTransferEncoding,
            Some(StatusCode(501)),
        ),
        (HttpError::BareLf, Some(StatusCode(400))),
        (HttpError::MissingChunkCrlf, Some(StatusCode(400))),
        (HttpError::IncompleteBody, None),
    ];
    for (error, status) in cases {
        assert_eq!(error.status(), status, "{error}");
    }
}
