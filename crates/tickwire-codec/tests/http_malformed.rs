//! Malformed HTTP/1.1 messages, requests and responses, heads and bodies: each is rejected
//! with its exact `HttpError`, fed whole, byte by byte and cut in two at every point. Then
//! the response leniencies real servers need, each its own case, under the same splits.

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::http::{
    HttpError, Limits, Parsed, Request, RequestReader, Response, ResponseReader,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Request,
    Response,
}

/// What the reader reported: each message as (start line, body, keep-alive), then the error.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Message {
        start: String,
        body: Vec<u8>,
        keep_alive: bool,
        chunked: bool,
    },
    Error(HttpError),
    Closed,
}

fn seen_request(request: &Request<'_>) -> Seen {
    Seen::Message {
        start: format!("{} {}", request.method_token(), request.target()),
        body: request.body().to_vec(),
        keep_alive: request.keep_alive(),
        chunked: request.is_chunked(),
    }
}

fn seen_response(response: &Response<'_>) -> Seen {
    Seen::Message {
        start: format!("{} {}", response.status(), response.reason()),
        body: response.body().to_vec(),
        keep_alive: response.keep_alive(),
        chunked: response.is_chunked(),
    }
}

/// Feeds `input` cut at `cuts`, then (with `eof`) closes. Stops at the first error.
fn run(side: Side, limits: Limits, input: &[u8], cuts: &[usize], eof: bool) -> Vec<Seen> {
    let mut requests = RequestReader::new(limits);
    let mut responses = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(16);
    let mut seen = Vec::new();
    let mut at = 0;
    for end in cuts.iter().copied().chain([input.len()]) {
        buf.extend_from_slice(&input[at..end]);
        at = end;
        loop {
            let step = match side {
                Side::Request => requests.read(&mut buf).map(|parsed| match parsed {
                    Parsed::Complete(request) => Some(seen_request(&request)),
                    Parsed::NeedMore => None,
                }),
                Side::Response => responses.read(&mut buf).map(|parsed| match parsed {
                    Parsed::Complete(response) => Some(seen_response(&response)),
                    Parsed::NeedMore => None,
                }),
            };
            match step {
                Ok(Some(message)) => seen.push(message),
                Ok(None) => break,
                Err(error) => {
                    seen.push(Seen::Error(error));
                    return seen;
                }
            }
        }
    }
    if eof {
        loop {
            let step = match side {
                Side::Request => requests
                    .read_eof(&mut buf)
                    .map(|request| request.map(|r| seen_request(&r))),
                Side::Response => responses
                    .read_eof(&mut buf)
                    .map(|response| response.map(|r| seen_response(&r))),
            };
            match step {
                Ok(Some(message)) => seen.push(message),
                Ok(None) => {
                    seen.push(Seen::Closed);
                    break;
                }
                Err(error) => {
                    seen.push(Seen::Error(error));
                    break;
                }
            }
        }
    }
    seen
}

/// Whole, byte by byte and every two-piece split must agree; returns the whole result.
fn split_invariant(side: Side, limits: Limits, input: &[u8], eof: bool, name: &str) -> Vec<Seen> {
    let whole = run(side, limits, input, &[], eof);
    let bytewise: Vec<usize> = (1..input.len()).collect();
    assert_eq!(
        run(side, limits, input, &bytewise, eof),
        whole,
        "{name}: byte by byte"
    );
    for cut in 1..input.len() {
        assert_eq!(
            run(side, limits, input, &[cut], eof),
            whole,
            "{name}: cut at {cut}"
        );
    }
    whole
}

struct Malformed {
    name: &'static str,
    side: Side,
    input: &'static [u8],
    /// The peer closes after the input.
    eof: bool,
    limits: Limits,
    error: HttpError,
}

const fn req(name: &'static str, input: &'static [u8], error: HttpError) -> Malformed {
    Malformed {
        name,
        side: Side::Request,
        input,
        eof: false,
        limits: Limits::server(),
        error,
    }
}

const fn resp(name: &'static str, input: &'static [u8], error: HttpError) -> Malformed {
    Malformed {
        name,
        side: Side::Response,
        input,
        eof: false,
        limits: Limits::client(),
        error,
    }
}

const fn at_eof(case: Malformed) -> Malformed {
    Malformed { eof: true, ..case }
}

const fn with(limits: Limits, case: Malformed) -> Malformed {
    Malformed { limits, ..case }
}

const SMALL: Limits = Limits::client()
    .with_max_head_bytes(64)
    .with_max_headers(3)
    .with_max_body_bytes(16)
    .with_max_chunk_size_digits(4)
    .with_max_chunk_extension_bytes(8)
    .with_max_trailer_bytes(12);

const NAME: HttpError = HttpError::InvalidHead("invalid header field name");

#[rustfmt::skip]
const MALFORMED: &[Malformed] = &[
    // --- request heads ---
    req("req bare LF after request line", b"GET / HTTP/1.1\nHost: h\r\n\r\n", HttpError::BareLf),
    req("req bare LF after a field", b"GET / HTTP/1.1\r\nHost: h\n\r\n", HttpError::BareLf),
    req("req bare LF blank line", b"GET / HTTP/1.1\r\nHost: h\r\n\n", HttpError::BareLf),
    req("req obs-fold", b"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n\tb\r\n\r\n", HttpError::ObsFold),
    req("req space before colon", b"GET / HTTP/1.1\r\nHost : h\r\n\r\n", NAME),
    req("req tab before colon", b"GET / HTTP/1.1\r\nHost\t: h\r\n\r\n", NAME),
    req("req invalid field name", b"GET / HTTP/1.1\r\nHost: h\r\nX@Y: 1\r\n\r\n", NAME),
    req("req empty field name", b"GET / HTTP/1.1\r\nHost: h\r\n: 1\r\n\r\n", NAME),
    req("req NUL in value", b"GET / HTTP/1.1\r\nHost: h\r\nX: a\x00b\r\n\r\n", HttpError::InvalidHead("invalid header field value")),
    req("req invalid method token", b"GE(T / HTTP/1.1\r\nHost: h\r\n\r\n", HttpError::InvalidHead("invalid method token")),
    req("req HTTP/2.0", b"GET / HTTP/2.0\r\nHost: h\r\n\r\n", HttpError::UnsupportedVersion),
    req("req HTTP/1.2", b"GET / HTTP/1.2\r\nHost: h\r\n\r\n", HttpError::UnsupportedVersion),
    req("req not a version", b"GET / HTTQ/1.1\r\nHost: h\r\n\r\n", HttpError::InvalidHead("invalid request line")),
    req("req space in target", b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", HttpError::InvalidHead("invalid request line")),
    req("req missing Host", b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n", HttpError::MissingHost),
    req("req two Hosts", b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", HttpError::MultipleHost),
    req("req TE and CL", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 1\r\n\r\n", HttpError::TransferEncodingWithContentLength),
    req("req differing CL fields", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", HttpError::ConflictingContentLength),
    req("req differing CL list", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1, 2\r\n\r\n", HttpError::ConflictingContentLength),
    req("req CL plus sign", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: +1\r\n\r\n", HttpError::InvalidContentLength),
    req("req CL minus sign", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", HttpError::InvalidContentLength),
    req("req CL 20 digits", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 18446744073709551616\r\n\r\n", HttpError::InvalidContentLength),
    req("req CL hex", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 0x10\r\n\r\n", HttpError::InvalidContentLength),
    req("req CL empty", b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \r\n\r\n", HttpError::InvalidContentLength),
    req("req TE gzip only", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", HttpError::ChunkedNotLast),
    req("req TE chunked then gzip", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", HttpError::ChunkedNotLast),
    req("req TE chunked twice", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::ChunkedNotLast),
    req("req TE gzip then chunked", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", HttpError::UnsupportedTransferEncoding),
    req("req TE in HTTP/1.0", b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::UnsupportedTransferEncoding),
    with(SMALL, req("req head over the limit, unterminated", b"GET / HTTP/1.1\r\nHost: h\r\nX-Filler: 0123456789abcdef0123456789abcdef", HttpError::HeadTooLarge { limit: 64 })),
    with(SMALL, req("req too many fields", b"GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n", HttpError::TooManyHeaders { limit: 3 })),
    with(SMALL, req("req CL over the body limit", b"PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n", HttpError::BodyTooLarge { limit: 16 })),
    at_eof(req("req closed inside the head", b"GET / HTTP/1.1\r\nHost:", HttpError::IncompleteHead)),
    at_eof(req("req closed inside a CL body", b"PUT / HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\n\r\nab", HttpError::IncompleteBody)),
    // --- request bodies (chunked) ---
    req("req chunk size signed", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", HttpError::InvalidChunkSize),
    req("req chunk size empty", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", HttpError::InvalidChunkSize),
    req("req chunk size leading space", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n 1\r\nx\r\n", HttpError::InvalidChunkSize),
    req("req chunk size trailing space", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1 \r\nx\r\n", HttpError::InvalidChunkSize),
    req("req chunk extension without name", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1;=x\r\nx\r\n", HttpError::InvalidChunkSize),
    with(SMALL, req("req chunk size digits", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n00001\r\n", HttpError::ChunkSizeTooLong { limit: 4 })),
    with(SMALL, req("req chunk extension too long", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n1;abcdefgh\r\n", HttpError::ChunkExtensionTooLong { limit: 8 })),
    with(SMALL, req("req chunks over the body limit", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n9\r\n123456789\r\n8\r\n", HttpError::BodyTooLarge { limit: 16 })),
    req("req bare LF after chunk size", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\nx\r\n", HttpError::BareLfInChunk),
    req("req bare LF after chunk data", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\n0\r\n\r\n", HttpError::BareLfInChunk),
    req("req chunk data longer than its size", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nxy\r\n", HttpError::MissingChunkCrlf),
    req("req trailer obs-fold", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: 1\r\n 2\r\n\r\n", HttpError::InvalidTrailer),
    req("req trailer without colon", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA 1\r\n\r\n", HttpError::InvalidTrailer),
    with(SMALL, req("req trailer section too large", b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nHost: h\r\n\r\n0\r\nA: 123456789\r\n\r\n", HttpError::TrailerTooLarge { limit: 12 })),
    at_eof(req("req closed inside a chunked body", b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n", HttpError::IncompleteBody)),
    // --- response heads ---
    resp("resp status not digits", b"HTTP/1.1 2OO OK\r\n\r\n", HttpError::InvalidHead("invalid status code")),
    resp("resp status two digits", b"HTTP/1.1 20 OK\r\n\r\n", HttpError::InvalidHead("invalid status code")),
    resp("resp status below 100", b"HTTP/1.1 099 Odd\r\nContent-Length: 0\r\n\r\n", HttpError::InvalidHead("status code below 100")),
    resp("resp HTTP/2.0", b"HTTP/2.0 200 OK\r\n\r\n", HttpError::UnsupportedVersion),
    resp("resp not HTTP", b"ICY 200 OK\r\n\r\n", HttpError::InvalidHead("invalid status line")),
    resp("resp space before colon", b"HTTP/1.1 200 OK\r\nContent-Length : 0\r\n\r\n", NAME),
    resp("resp fold before any field", b"HTTP/1.1 200 OK\r\n folded\r\nContent-Length: 0\r\n\r\n", NAME),
    resp("resp differing CL", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", HttpError::ConflictingContentLength),
    resp("resp CL not a number", b"HTTP/1.1 200 OK\r\nContent-Length: two\r\n\r\nok", HttpError::InvalidContentLength),
    resp("resp TE chunked twice", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n", HttpError::ChunkedNotLast),
    with(SMALL, resp("resp head over the limit", b"HTTP/1.1 200 OK\r\nServer: a-very-long-server-name-here-and-longer-still\r\n\r\n", HttpError::HeadTooLarge { limit: 64 })),
    with(SMALL, resp("resp CL over the body limit", b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", HttpError::BodyTooLarge { limit: 16 })),
    with(SMALL, resp("resp close-delimited body over the limit", b"HTTP/1.1 200 OK\r\n\r\n0123456789abcdefg", HttpError::BodyTooLarge { limit: 16 })),
    at_eof(resp("resp closed inside the head", b"HTTP/1.1 200 OK\r\nContent-Len", HttpError::IncompleteHead)),
    at_eof(resp("resp closed inside a CL body", b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", HttpError::IncompleteBody)),
    // --- response bodies (chunked) ---
    resp("resp chunk size not hex", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", HttpError::InvalidChunkSize),
    resp("resp chunk size 17 digits", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n00000000000000001\r\n", HttpError::ChunkSizeTooLong { limit: 16 }),
    resp("resp chunk size beyond the body limit", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\n", HttpError::BodyTooLarge { limit: 64 << 20 }),
    resp("resp CR without LF after size", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\rx\r\n", HttpError::MissingChunkCrlf),
    resp("resp bare LF in final CRLF", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\n", HttpError::BareLfInChunk),
    resp("resp control byte in trailer", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nA: \x01\r\n\r\n", HttpError::InvalidTrailer),
    at_eof(resp("resp closed inside a chunk", b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", HttpError::IncompleteBody)),
];

#[test]
fn malformed_messages_are_rejected_with_their_exact_error() {
    assert!(MALFORMED.len() >= 35);
    for case in MALFORMED {
        let seen = split_invariant(case.side, case.limits, case.input, case.eof, case.name);
        assert_eq!(
            seen,
            [Seen::Error(case.error.clone())],
            "{}: {}",
            case.name,
            String::from_utf8_lossy(case.input)
        );
    }
}

#[test]
fn request_errors_map_to_a_status() {
    for case in MALFORMED.iter().filter(|case| case.side == Side::Request) {
        let status = case.error.status();
        let expected = match case.error {
            HttpError::IncompleteHead | HttpError::IncompleteBody => None,
            _ => Some(()),
        };
        assert_eq!(status.map(|_| ()), expected, "{}", case.name);
        if let Some(status) = status {
            assert!(
                [400, 413, 431, 501, 505].contains(&status.0),
                "{}: {status}",
                case.name
            );
        }
    }
}

struct Lenient {
    name: &'static str,
    input: &'static [u8],
    eof: bool,
    body: &'static [u8],
    keep_alive: bool,
    chunked: bool,
}

#[rustfmt::skip]
const LENIENT: &[Lenient] = &[
    Lenient { name: "bare LF line endings", input: b"HTTP/1.1 200 OK\nContent-Length: 2\n\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "bare LF blank line after CRLF fields", input: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "obs-fold in a field", input: b"HTTP/1.1 200 OK\r\nX-A: 1\r\n 2\r\nContent-Length: 2\r\n\r\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "TE not ending in chunked reads until close", input: b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nzipped", eof: true, body: b"zipped", keep_alive: false, chunked: false },
    Lenient { name: "TE and CL: chunked wins, no reuse", input: b"HTTP/1.1 200 OK\r\nContent-Length: 50\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", eof: false, body: b"ok", keep_alive: false, chunked: true },
    Lenient { name: "identical duplicate CL fields", input: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "identical CL list", input: b"HTTP/1.1 200 OK\r\nContent-Length: 2,2\r\n\r\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "empty line before the status line", input: b"\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "no reason phrase", input: b"HTTP/1.1 200\r\nContent-Length: 2\r\n\r\nok", eof: false, body: b"ok", keep_alive: true, chunked: false },
    Lenient { name: "no framing reads until close", input: b"HTTP/1.0 200 OK\r\n\r\nuntil close", eof: true, body: b"until close", keep_alive: false, chunked: false },
];

#[test]
fn response_leniencies_each_accepted() {
    for case in LENIENT {
        let seen = split_invariant(
            Side::Response,
            Limits::client(),
            case.input,
            case.eof,
            case.name,
        );
        let Some(Seen::Message {
            body,
            keep_alive,
            chunked,
            ..
        }) = seen.first()
        else {
            panic!("{}: {seen:?}", case.name);
        };
        assert_eq!(body, case.body, "{}", case.name);
        assert_eq!(*keep_alive, case.keep_alive, "{}", case.name);
        assert_eq!(*chunked, case.chunked, "{}", case.name);
        let rest = &seen[1..];
        assert!(
            rest.is_empty() || rest == [Seen::Closed],
            "{}: {rest:?}",
            case.name
        );
    }
}

#[test]
fn leniencies_are_response_only() {
    let strict = [
        (&b"GET / HTTP/1.1\nHost: h\n\n"[..], HttpError::BareLf),
        (b"GET / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n 2\r\n\r\n", HttpError::ObsFold),
        (b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", HttpError::ChunkedNotLast),
        (b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", HttpError::TransferEncodingWithContentLength),
    ];
    for (input, error) in strict {
        let seen = split_invariant(Side::Request, Limits::server(), input, false, "strict");
        assert_eq!(seen, [Seen::Error(error)]);
    }
}
