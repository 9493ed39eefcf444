//! Reader unit tests. Every fixture goes through [`split_invariant`]: fed whole, byte by
//! byte and cut in two at every point, it must give the same messages and errors.

use crate::buf::ReadBuf;

use super::{HttpError, Limits, Method, Parsed, RequestReader, ResponseReader, Version};

mod chunked;
mod request;
mod response;

/// What a user of a reader sees for one message.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Msg {
    /// `"200 OK"` for a response, `"GET /x"` for a request.
    start: String,
    version: Version,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
    trailers: Vec<(String, Vec<u8>)>,
    keep_alive: bool,
    chunked: bool,
    head_len: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Msg(Msg),
    Error(HttpError),
    /// `read_eof` found no message begun.
    Closed,
}

impl Seen {
    fn msg(&self) -> &Msg {
        match self {
            Self::Msg(msg) => msg,
            other => panic!("expected a message, saw {other:?}"),
        }
    }
}

fn fields(headers: super::Headers<'_>) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(name, value)| (name.to_owned(), value.to_vec()))
        .collect()
}

fn seen_response(response: &super::Response<'_>) -> Seen {
    Seen::Msg(Msg {
        start: format!("{} {}", response.status(), response.reason()),
        version: response.version(),
        headers: fields(response.headers()),
        body: response.body().to_vec(),
        trailers: fields(response.trailers()),
        keep_alive: response.keep_alive(),
        chunked: response.is_chunked(),
        head_len: response.head_len(),
    })
}

fn seen_request(request: &super::Request<'_>) -> Seen {
    Seen::Msg(Msg {
        start: format!("{} {}", request.method_token(), request.target()),
        version: request.version(),
        headers: fields(request.headers()),
        body: request.body().to_vec(),
        trailers: fields(request.trailers()),
        keep_alive: request.keep_alive(),
        chunked: request.is_chunked(),
        head_len: request.head_len(),
    })
}

/// `input` cut at `cuts` (increasing offsets).
fn pieces<'a>(input: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    for &cut in cuts {
        out.push(&input[at..cut]);
        at = cut;
    }
    out.push(&input[at..]);
    out
}

/// Reads responses from `input` delivered in pieces; `expect` names the request each final
/// response answers (GET past its end); with `eof` the peer closes after the last piece.
fn read_responses(
    input: &[u8],
    cuts: &[usize],
    limits: Limits,
    expect: &[Method],
    eof: bool,
) -> Vec<Seen> {
    let mut reader = ResponseReader::new(limits);
    let mut buf = ReadBuf::with_capacity(16);
    let mut seen = Vec::new();
    let mut finals = 0;
    reader.expect(expect.first().copied().unwrap_or(Method::Get));
    let record = |reader: &mut ResponseReader, s: Seen, finals: &mut usize| {
        if let Seen::Msg(msg) = &s
            && (!msg.start.starts_with('1') || msg.start.starts_with("101"))
        {
            *finals += 1;
            reader.expect(expect.get(*finals).copied().unwrap_or(Method::Get));
        }
        s
    };
    for piece in pieces(input, cuts) {
        buf.extend_from_slice(piece);
        loop {
            let s = match reader.read(&mut buf) {
                Ok(Parsed::Complete(response)) => seen_response(&response),
                Ok(Parsed::NeedMore) => break,
                Err(error) => {
                    seen.push(Seen::Error(error));
                    return seen;
                }
            };
            let s = record(&mut reader, s, &mut finals);
            seen.push(s);
        }
    }
    if eof {
        loop {
            let s = match reader.read_eof(&mut buf) {
                Ok(Some(response)) => seen_response(&response),
                Ok(None) => Seen::Closed,
                Err(error) => Seen::Error(error),
            };
            let done = !matches!(s, Seen::Msg(_));
            let s = record(&mut reader, s, &mut finals);
            seen.push(s);
            if done {
                break;
            }
        }
    }
    seen
}

/// Reads requests from `input` delivered in pieces, closing after the last with `eof`.
fn read_requests(input: &[u8], cuts: &[usize], limits: Limits, eof: bool) -> Vec<Seen> {
    let mut reader = RequestReader::new(limits);
    let mut buf = ReadBuf::with_capacity(16);
    let mut seen = Vec::new();
    for piece in pieces(input, cuts) {
        buf.extend_from_slice(piece);
        loop {
            match reader.read(&mut buf) {
                Ok(Parsed::Complete(request)) => seen.push(seen_request(&request)),
                Ok(Parsed::NeedMore) => break,
                Err(error) => {
                    seen.push(Seen::Error(error));
                    return seen;
                }
            }
        }
    }
    if eof {
        loop {
            let s = match reader.read_eof(&mut buf) {
                Ok(Some(request)) => seen_request(&request),
                Ok(None) => Seen::Closed,
                Err(error) => Seen::Error(error),
            };
            let done = !matches!(s, Seen::Msg(_));
            seen.push(s);
            if done {
                break;
            }
        }
    }
    seen
}

/// Runs `read` whole, byte by byte and cut in two at every point; all must agree. Returns
/// what the whole input gave.
fn split_invariant(input: &[u8], read: impl Fn(&[usize]) -> Vec<Seen>) -> Vec<Seen> {
    let whole = read(&[]);
    let bytewise: Vec<usize> = (1..input.len()).collect();
    assert_eq!(read(&bytewise), whole, "byte by byte differs from whole");
    for cut in 1..input.len() {
        assert_eq!(read(&[cut]), whole, "cut at {cut} differs from whole");
    }
    whole
}

/// The responses in `input` (answering GETs, no close), checked for split invariance.
fn responses(input: &[u8]) -> Vec<Seen> {
    split_invariant(input, |cuts| {
        read_responses(input, cuts, Limits::client(), &[], false)
    })
}

/// The responses in `input` followed by the peer closing.
fn responses_then_close(input: &[u8]) -> Vec<Seen> {
    split_invariant(input, |cuts| {
        read_responses(input, cuts, Limits::client(), &[], true)
    })
}

/// The requests in `input`, checked for split invariance.
fn requests(input: &[u8]) -> Vec<Seen> {
    split_invariant(input, |cuts| {
        read_requests(input, cuts, Limits::server(), false)
    })
}

fn header(name: &str, value: &str) -> (String, Vec<u8>) {
    (name.to_owned(), value.as_bytes().to_vec())
}
