//! ResponseReader: framing, leniencies, limits on partial data, EOF, reuse.

use super::*;

#[test]
fn content_length_body_and_keep_alive() {
    let seen = responses(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello");
    let msg = seen[0].msg();
    assert_eq!(seen.len(), 1);
    assert_eq!(msg.start, "200 OK");
    assert_eq!(msg.version, Version::Http11);
    assert_eq!(
        msg.headers,
        vec![header("Content-Length", "5"), header("X-A", "1")]
    );
    assert_eq!(msg.body, b"hello");
    assert!(msg.keep_alive);
    assert!(!msg.chunked);
    assert_eq!(msg.head_len, 46);
}

#[test]
fn chunked_body_with_extensions_and_trailers() {
    let input = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
        5;name=value\r\nhello\r\n6 ; q=\"a b\"\r\n world\r\n0\r\nX-Sum: abc\r\nX-N:  2 \r\n\r\n";
    let seen = responses(input);
    let msg = seen[0].msg();
    assert_eq!(msg.body, b"hello world");
    assert!(msg.chunked);
    assert!(msg.keep_alive);
    assert_eq!(
        msg.trailers,
        vec![header("X-Sum", "abc"), header("X-N", "2")]
    );
}

#[test]
fn chunked_without_trailers_has_none() {
    let seen =
        responses(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    assert_eq!(seen[0].msg().body, b"abc");
    assert!(seen[0].msg().trailers.is_empty());
}

#[test]
fn pipelined_responses_are_released_one_by_one() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 201 Created\r\n\
        Transfer-Encoding: chunked\r\n\r\n2\r\nbc\r\n0\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n";
    let seen = responses(input);
    let summary: Vec<_> = seen
        .iter()
        .map(|s| (s.msg().start.clone(), s.msg().body.clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            ("200 OK".to_owned(), b"a".to_vec()),
            ("201 Created".to_owned(), b"bc".to_vec()),
            ("204 No Content".to_owned(), Vec::new()),
        ]
    );
}

#[test]
fn head_answer_has_no_body_whatever_its_length() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let seen = split_invariant(input, |cuts| {
        read_responses(
            input,
            cuts,
            Limits::client(),
            &[Method::Head, Method::Get],
            false,
        )
    });
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].msg().body, b"");
    assert!(seen[0].msg().keep_alive);
    assert_eq!(seen[1].msg().body, b"ok");
}

#[test]
fn no_content_and_not_modified_have_no_body() {
    let seen = responses(
        b"HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\nHTTP/1.1 304 Not Modified\r\n\r\n",
    );
    assert_eq!(seen.len(), 2);
    assert!(
        seen.iter()
            .all(|s| s.msg().body.is_empty() && s.msg().keep_alive)
    );
}

#[test]
fn informational_responses_come_before_the_final_one() {
    let input = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n\
        HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    let seen = split_invariant(input, |cuts| {
        read_responses(input, cuts, Limits::client(), &[Method::Head], false)
    });
    let starts: Vec<_> = seen.iter().map(|s| s.msg().start.as_str()).collect();
    assert_eq!(starts, ["100 Continue", "103 Early Hints", "200 OK"]);
    // The 1xx did not use up the HEAD expectation: the final answer has no body.
    assert_eq!(seen[2].msg().body, b"");
}

#[test]
fn switching_protocols_ends_http_framing() {
    let input = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nContent-Length: 3\r\n\r\n\x81\x00";
    let mut reader = ResponseReader::new(Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(input);
    let Ok(Parsed::Complete(response)) = reader.read(&mut buf) else {
        panic!("101 not complete");
    };
    assert_eq!(response.status().0, 101);
    assert_eq!(response.body(), b"");
    assert!(!response.keep_alive());
    let head_len = response.head_len();
    // The frame bytes after the head stay in the buffer for the next protocol.
    assert_eq!(&buf.data()[head_len..], b"\x81\x00");
}

#[test]
fn connect_success_is_a_tunnel() {
    let input = b"HTTP/1.1 200 Connection Established\r\n\r\n";
    let seen = split_invariant(input, |cuts| {
        read_responses(input, cuts, Limits::client(), &[Method::Connect], false)
    });
    assert_eq!(seen.len(), 1);
    assert!(!seen[0].msg().keep_alive);
    assert!(seen[0].msg().body.is_empty());
}

#[test]
fn body_until_close_completes_at_eof_and_is_not_reusable() {
    let seen = responses_then_close(b"HTTP/1.1 200 OK\r\n\r\nall of it");
    assert_eq!(seen[0].msg().body, b"all of it");
    assert!(!seen[0].msg().keep_alive);
    assert_eq!(seen[1], Seen::Closed);
}

#[test]
fn keep_alive_follows_rfc9112_9_3() {
    let cases: [(&[u8], bool); 6] = [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", true),
        (
            b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (
            b"HTTP/1.1 200 OK\r\nConnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n",
            false,
        ),
        (b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", false),
        (
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n",
            false,
        ),
    ];
    for (input, keep_alive) in cases {
        let seen = responses(input);
        assert_eq!(
            seen[0].msg().keep_alive,
            keep_alive,
            "{}",
            String::from_utf8_lossy(input)
        );
    }
}

// --- leniencies, each its own test ---

#[test]
fn lenient_bare_lf_line_endings() {
    let seen = responses(b"HTTP/1.1 200 OK\nContent-Length: 2\nX-A: b\n\nok");
    assert_eq!(seen[0].msg().body, b"ok");
    assert_eq!(seen[0].msg().headers[1], header("X-A", "b"));
}

#[test]
fn lenient_obs_fold_becomes_spaces() {
    let seen = responses(
        b"HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\n\tthree\r\nContent-Length: 0\r\n\r\n",
    );
    assert_eq!(
        seen[0].msg().headers[0],
        header("X-Long", "one    two  \tthree")
    );
}

#[test]
fn lenient_transfer_coding_not_ending_in_chunked_reads_until_close() {
    let seen = responses_then_close(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n\x1f\x8b..",
    );
    assert_eq!(seen[0].msg().body, b"\x1f\x8b..");
    assert!(!seen[0].msg().keep_alive);
    assert!(!seen[0].msg().chunked);
}

#[test]
fn lenient_transfer_encoding_with_content_length_chunked_wins_no_reuse() {
    let seen = responses(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n");
    assert_eq!(seen[0].msg().body, b"hi");
    assert!(seen[0].msg().chunked);
    assert!(!seen[0].msg().keep_alive);
}

#[test]
fn lenient_identical_duplicate_content_length() {
    let seen = responses(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2, 2\r\n\r\nok");
    assert_eq!(seen[0].msg().body, b"ok");
}

#[test]
fn framing_fields_are_found_in_any_case_and_near_misses_are_not() {
    // The reader notes the framing fields while it records them (`record_fields`); these are
    // the shapes that take its shortcuts and the ones that must fall back to the lookups.
    let cases: [(&[u8], &[u8], bool); 7] = [
        (
            b"HTTP/1.1 200 OK\r\nCONTENT-LENGTH: 2\r\n\r\nok",
            b"ok",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\ncontent-length:  02 \r\n\r\nok",
            b"ok",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 2 ,, 2\r\n\r\nok",
            b"ok",
            true,
        ),
        (
            b"HTTP/1.1 200 OK\r\nCONNECTION: CLOSE\r\nContent-Length: 2\r\n\r\nok",
            b"ok",
            false,
        ),
        (
            b"HTTP/1.1 200 OK\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\n2\r\nok\r\n0\r\n\r\n",
            b"ok",
            true,
        ),
        // Same lengths as Content-Length and Connection, other names: no framing, so the
        // body runs until close and nothing arrives before it.
        (
            b"HTTP/1.1 200 OK\r\nContent_Length: 2\r\nConnectio~: close\r\n\r\n",
            b"",
            false,
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Lengti: 2\r\n\r\n", b"", false),
    ];
    for (input, body, keep_alive) in cases {
        let seen = responses_then_close(input);
        let what = String::from_utf8_lossy(input);
        assert_eq!(seen[0].msg().body, body, "{what}");
        assert_eq!(seen[0].msg().keep_alive, keep_alive, "{what}");
    }
    let seen = responses(b"HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\nok");
    assert_eq!(seen, [Seen::Error(HttpError::InvalidContentLength)]);
}

#[test]
fn differing_content_length_is_an_error() {
    let seen = responses(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok");
    assert_eq!(seen, [Seen::Error(HttpError::ConflictingContentLength)]);
}

// --- limits on partial data ---

#[test]
fn head_too_large_before_the_blank_line() {
    let limits = Limits {
        max_head_bytes: 32,
        ..Limits::client()
    };
    let mut reader = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nX-Filler: 0123456789");
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::HeadTooLarge { limit: 32 }
    );
}

#[test]
fn head_of_exactly_the_limit_is_accepted() {
    let input = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    let limits = Limits {
        max_head_bytes: input.len(),
        ..Limits::client()
    };
    let seen = split_invariant(input, |cuts| {
        read_responses(input, cuts, limits, &[], false)
    });
    assert_eq!(seen[0].msg().head_len, input.len());
    let smaller = Limits {
        max_head_bytes: input.len() - 1,
        ..limits
    };
    let seen = split_invariant(input, |cuts| {
        read_responses(input, cuts, smaller, &[], false)
    });
    assert_eq!(
        seen,
        [Seen::Error(HttpError::HeadTooLarge {
            limit: input.len() - 1
        })]
    );
}

#[test]
fn too_many_headers_before_the_blank_line() {
    let limits = Limits {
        max_headers: 2,
        ..Limits::client()
    };
    let mut reader = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n");
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::TooManyHeaders { limit: 2 }
    );
}

#[test]
fn content_length_over_the_limit_fails_when_the_head_ends() {
    let limits = Limits {
        max_body_bytes: 10,
        ..Limits::client()
    };
    let mut reader = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n");
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::BodyTooLarge { limit: 10 }
    );
}

#[test]
fn chunk_size_over_the_limit_fails_while_its_digits_arrive() {
    let limits = Limits {
        max_body_bytes: 0x100,
        ..Limits::client()
    };
    let mut reader = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n101");
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::BodyTooLarge { limit: 0x100 }
    );
}

#[test]
fn body_until_close_over_the_limit_fails_before_eof() {
    let limits = Limits {
        max_body_bytes: 4,
        ..Limits::client()
    };
    let input = b"HTTP/1.1 200 OK\r\n\r\n12345";
    let seen = split_invariant(input, |cuts| {
        read_responses(input, cuts, limits, &[], false)
    });
    assert_eq!(seen, [Seen::Error(HttpError::BodyTooLarge { limit: 4 })]);
}

// --- end of stream ---

#[test]
fn eof_with_nothing_begun_is_not_an_error() {
    assert_eq!(responses_then_close(b""), [Seen::Closed]);
    let seen = responses_then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx");
    assert_eq!(seen[1], Seen::Closed);
}

#[test]
fn eof_inside_a_head_or_body_is_an_error() {
    assert_eq!(
        responses_then_close(b"HTTP/1.1 200 OK\r\nContent-"),
        [Seen::Error(HttpError::IncompleteHead)]
    );
    assert_eq!(
        responses_then_close(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nab"),
        [Seen::Error(HttpError::IncompleteBody)]
    );
    assert_eq!(
        responses_then_close(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n"),
        [Seen::Error(HttpError::IncompleteBody)]
    );
}

// --- reader state ---

#[test]
fn errors_are_sticky_until_reset() {
    let mut reader = ResponseReader::new(Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n");
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::InvalidContentLength
    );
    assert_eq!(
        reader.read(&mut buf).unwrap_err(),
        HttpError::InvalidContentLength
    );
    reader.reset();
    buf.clear();
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    assert!(matches!(reader.read(&mut buf), Ok(Parsed::Complete(_))));
}

#[test]
fn in_progress_spans_first_byte_to_completion() {
    let mut reader = ResponseReader::new(Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    assert!(!reader.in_progress());
    buf.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\no");
    assert!(matches!(reader.read(&mut buf), Ok(Parsed::NeedMore)));
    assert!(reader.in_progress());
    buf.extend_from_slice(b"k");
    assert!(matches!(reader.read(&mut buf), Ok(Parsed::Complete(_))));
    assert!(!reader.in_progress());
    // The next read releases the response: the buffer is empty again.
    assert!(matches!(reader.read(&mut buf), Ok(Parsed::NeedMore)));
    assert!(buf.is_empty());
}

#[test]
fn header_lookup_is_case_insensitive_and_ordered() {
    let mut reader = ResponseReader::new(Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    buf.extend_from_slice(
        b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\ncontent-length: 0\r\nSET-COOKIE: b=2\r\nVary: Accept, Origin\r\n\r\n",
    );
    let Ok(Parsed::Complete(response)) = reader.read(&mut buf) else {
        panic!("incomplete");
    };
    let headers = response.headers();
    assert_eq!(headers.len(), 4);
    assert_eq!(headers.get("set-cookie"), Some(&b"a=1"[..]));
    assert_eq!(headers.get_str("Content-Length"), Some("0"));
    let cookies: Vec<_> = headers.get_all("Set-Cookie").collect();
    assert_eq!(cookies, [&b"a=1"[..], &b"b=2"[..]]);
    assert!(headers.contains_token("vary", "origin"));
    assert!(!headers.contains_token("vary", "cookie"));
    assert_eq!(headers.get("missing"), None);
}

#[test]
fn status_line_without_reason_and_odd_codes() {
    let seen = responses(b"HTTP/1.1 299\r\nContent-Length: 0\r\n\r\n");
    assert_eq!(seen[0].msg().start, "299 ");
    let seen = responses(b"HTTP/1.1 099 Low\r\n\r\n");
    assert_eq!(
        seen,
        [Seen::Error(HttpError::InvalidHead("status code below 100"))]
    );
}

#[test]
fn reused_reader_keeps_its_storage() {
    let mut reader = ResponseReader::new(Limits::client());
    let mut buf = ReadBuf::with_capacity(4096);
    let message = b"HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\nT: 1\r\n\r\n";
    let mut storage = None;
    for _ in 0..4 {
        buf.extend_from_slice(message);
        assert!(matches!(reader.read(&mut buf), Ok(Parsed::Complete(_))));
        let now = reader.storage();
        assert!(storage.is_none() || storage == Some(now), "storage moved");
        storage = Some(now);
    }
}
