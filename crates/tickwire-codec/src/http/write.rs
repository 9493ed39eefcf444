//! The HTTP/1.1 writers: request and response heads ([`HeadWriter`]) and chunked bodies
//! ([`ChunkedEncoder`]), appended to a caller's [`WriteBuf`].
//!
//! Every byte written is validated first: header names must be RFC 9110 tokens, header values
//! must hold no control character but HTAB, request targets no space, control, non-ASCII or
//! `#`. A rejected call leaves the buffer exactly as it found it. Framing decisions (whether a
//! body is chunked or has a length, and how long it is) are the caller's: these writers put
//! down what they are told, correctly spelled. The REST request builder is layered on top of
//! these writers and shares their checks.

use core::fmt;

use super::ascii::{Decimal, Hex, is_field_value, is_target_byte, write_field};
use super::types::{Method, StatusCode};
use crate::buf::WriteBuf;

/// Why a writer refused to write. Every variant is local API misuse: the bytes asked for
/// would have made an invalid or ambiguous message (request smuggling, header injection).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WriteError {
    /// A header or trailer name that is not a token (RFC 9110 §5.1, §5.6.2): empty, or holding
    /// a space, a colon, a control or any other delimiter.
    InvalidHeaderName,
    /// A header or trailer value holding CR, LF, NUL or another control character other than
    /// HTAB (RFC 9110 §5.5): it would end the field line early and inject new ones.
    InvalidHeaderValue,
    /// An empty request target, or one holding a space, a control, a non-ASCII byte or `#`
    /// (RFC 9112 §3.2: the target is ASCII, delimited by single spaces; RFC 9110 §4.2.4: a
    /// fragment is never sent). For the REST request writer's constructor, also a host that
    /// is not a valid authority.
    InvalidMethodOrTarget,
    /// A body whose length differs from the Content-Length already written for it
    /// (RFC 9112 §6.2): the peer would read a truncated message or the next one's bytes.
    BodyLengthMismatch {
        /// The Content-Length in the head.
        declared: u64,
        /// The bytes actually supplied.
        written: u64,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidHeaderName => f.write_str("header name is not an HTTP token"),
            Self::InvalidHeaderValue => {
                f.write_str("header value holds CR, LF, NUL or another control character")
            }
            Self::InvalidMethodOrTarget => f.write_str(
                "request target (or host) is empty or holds a space, control, non-ASCII byte or '#'",
            ),
            Self::BodyLengthMismatch { declared, written } => write!(
                f,
                "body of {written} bytes does not match the declared Content-Length {declared}"
            ),
        }
    }
}

impl std::error::Error for WriteError {}

/// Checks that `name` is a token (RFC 9110 §5.6.2): one or more of
/// `! # $ % & ' * + - . ^ _ ` | ~`, digits and letters.
#[inline]
pub fn validate_header_name(name: &str) -> Result<(), WriteError> {
    // A fold without early exit: a table load and an AND per byte. The short-circuiting
    // `all` cost about twice as much per header in the bench's four-header POST
    // (`tickwire-bench http --callgrind`, `http_memory_callgrind`).
    if !name.is_empty() && name.bytes().fold(true, |ok, b| ok & is_tchar(b)) {
        Ok(())
    } else {
        Err(WriteError::InvalidHeaderName)
    }
}

/// Checks that `value` holds no control character other than HTAB (RFC 9110 §5.5): CR, LF and
/// NUL are the ones that matter (they would split the field line); DEL and the other controls
/// are refused with them. Bytes 0x80 and above (obs-text) pass; an empty value passes.
#[inline]
pub fn validate_header_value(value: &[u8]) -> Result<(), WriteError> {
    if is_field_value(value) {
        Ok(())
    } else {
        Err(WriteError::InvalidHeaderValue)
    }
}

/// Writes one message head into a [`WriteBuf`]: the start line at construction, then field
/// lines, then [`finish`](Self::finish) for the blank line.
///
/// Each call validates before it writes, so an `Err` leaves the buffer as it was before that
/// call (the head written so far stays). Dropping the writer without `finish` leaves an
/// unterminated head in the buffer: [`start`](Self::start) tells the caller where to
/// [`truncate`](WriteBuf::truncate) to.
#[derive(Debug)]
#[must_use = "a head is not complete until `finish` writes the blank line"]
pub struct HeadWriter<'a> {
    buf: &'a mut WriteBuf,
    start: usize,
}

impl<'a> HeadWriter<'a> {
    /// Starts a request head: `METHOD target HTTP/1.1`. `target` must be non-empty ASCII
    /// without space, control or `#` (origin-form `/path?query`, absolute-form, authority-form
    /// or `*` are all the caller's choice; RFC 9112 §3.2).
    pub fn request(
        buf: &'a mut WriteBuf,
        method: Method,
        target: &str,
    ) -> Result<Self, WriteError> {
        validate_target(target.as_bytes())?;
        let start = buf.len();
        buf.extend_from_slice(method.as_str().as_bytes());
        buf.extend_from_slice(b" ");
        buf.extend_from_slice(target.as_bytes());
        buf.extend_from_slice(b" HTTP/1.1\r\n");
        Ok(Self { buf, start })
    }

    /// Starts a response head: `HTTP/1.1 code reason`, the reason being
    /// [`StatusCode::canonical_reason`] (empty for codes without one, which RFC 9112 §4
    /// allows).
    ///
    /// # Panics
    /// If the code is not three digits (100 to 999): the status line could not say it.
    pub fn response(buf: &'a mut WriteBuf, status: StatusCode) -> Self {
        assert!(
            (100..=999).contains(&status.0),
            "HTTP status code {} is not three digits",
            status.0
        );
        let start = buf.len();
        buf.extend_from_slice(b"HTTP/1.1 ");
        buf.extend_from_slice(Decimal::new(u64::from(status.0)).as_bytes());
        buf.extend_from_slice(b" ");
        buf.extend_from_slice(status.canonical_reason().as_bytes());
        buf.extend_from_slice(b"\r\n");
        Self { buf, start }
    }

    /// Writes `name: value`. On `Err` nothing is written.
    pub fn header(&mut self, name: &str, value: &[u8]) -> Result<&mut Self, WriteError> {
        validate_header_name(name)?;
        validate_header_value(value)?;
        write_field(self.buf, name.as_bytes(), value);
        Ok(self)
    }

    /// Writes `Content-Length: len`. Writing it twice, or with [`chunked`](Self::chunked), is
    /// the caller's mistake (RFC 9112 §6.3 makes such a message invalid).
    pub fn content_length(&mut self, len: u64) -> &mut Self {
        write_field(self.buf, b"Content-Length", Decimal::new(len).as_bytes());
        self
    }

    /// Writes `Transfer-Encoding: chunked`; the body then goes through a [`ChunkedEncoder`].
    pub fn chunked(&mut self) -> &mut Self {
        self.buf
            .extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        self
    }

    /// Where this head begins, as a [`WriteBuf::len`] offset.
    pub fn start(&self) -> usize {
        self.start
    }

    /// Writes the blank line that ends the head; the body (if any) follows.
    pub fn finish(self) {
        self.buf.extend_from_slice(b"\r\n");
    }
}

/// Encodes a body in chunks (RFC 9112 §7.1): `size-in-hex CRLF data CRLF`, then the last
/// chunk `0 CRLF`, optional trailer fields and a blank line.
///
/// No chunk extensions are ever written. Once [`finish`](Self::finish) has run, further
/// chunks are the caller's mistake and panic in debug builds.
#[derive(Debug, Clone, Default)]
pub struct ChunkedEncoder {
    body_bytes: u64,
    finished: bool,
}

impl ChunkedEncoder {
    /// An encoder at the start of a body.
    pub const fn new() -> Self {
        Self {
            body_bytes: 0,
            finished: false,
        }
    }

    /// Appends `data` as one chunk. Empty `data` writes nothing (a zero-size chunk would end
    /// the body).
    pub fn write_chunk(&mut self, buf: &mut WriteBuf, data: &[u8]) {
        debug_assert!(!self.finished, "ChunkedEncoder::write_chunk after finish");
        if data.is_empty() {
            return;
        }
        buf.extend_from_slice(Hex::new(data.len() as u64).as_bytes());
        buf.extend_from_slice(b"\r\n");
        buf.extend_from_slice(data);
        buf.extend_from_slice(b"\r\n");
        self.body_bytes += data.len() as u64;
    }

    /// Ends the body: the last chunk, `trailers` as field lines (RFC 9112 §7.1.2), the blank
    /// line. Every trailer is validated before anything is written, so on `Err` the buffer
    /// is unchanged and the body is still open.
    pub fn finish(
        &mut self,
        buf: &mut WriteBuf,
        trailers: &[(&str, &[u8])],
    ) -> Result<(), WriteError> {
        debug_assert!(!self.finished, "ChunkedEncoder::finish twice");
        for (name, value) in trailers {
            validate_header_name(name)?;
            validate_header_value(value)?;
        }
        buf.extend_from_slice(b"0\r\n");
        for (name, value) in trailers {
            write_field(buf, name.as_bytes(), value);
        }
        buf.extend_from_slice(b"\r\n");
        self.finished = true;
        Ok(())
    }

    /// Body bytes written so far (chunk data only, not the framing).
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// True once [`finish`](Self::finish) succeeded.
    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

/// `tchar` of RFC 9110 §5.6.2, indexed by byte.
static TCHAR: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    table
};

#[inline]
fn is_tchar(b: u8) -> bool {
    TCHAR[usize::from(b)]
}

fn validate_target(target: &[u8]) -> Result<(), WriteError> {
    if !target.is_empty() && target.iter().all(|&b| is_target_byte(b)) {
        Ok(())
    } else {
        Err(WriteError::InvalidMethodOrTarget)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::http::ascii::is_field_byte;

    fn buf_with(prefix: &[u8]) -> WriteBuf {
        let mut buf = WriteBuf::new(256, 16);
        buf.extend_from_slice(prefix);
        buf
    }

    #[test]
    fn request_head_exact_bytes() {
        let mut buf = WriteBuf::new(256, 16);
        let mut head = HeadWriter::request(&mut buf, Method::Post, "/orders?x=1").unwrap();
        head.header("Host", b"example.com")
            .unwrap()
            .content_length(12_345);
        head.header("X-Tab", b"a\tb").unwrap();
        head.finish();
        assert_eq!(
            buf.as_slice(),
            b"POST /orders?x=1 HTTP/1.1\r\nHost: example.com\r\nContent-Length: 12345\r\nX-Tab: a\tb\r\n\r\n"
        );
    }

    #[test]
    fn every_method_on_the_request_line() {
        for method in [
            Method::Get,
            Method::Head,
            Method::Post,
            Method::Put,
            Method::Delete,
            Method::Patch,
            Method::Options,
            Method::Trace,
        ] {
            let mut buf = WriteBuf::new(64, 0);
            HeadWriter::request(&mut buf, method, "*").unwrap().finish();
            let expected = format!("{} * HTTP/1.1\r\n\r\n", method.as_str());
            assert_eq!(buf.as_slice(), expected.as_bytes());
        }
        let mut buf = WriteBuf::new(64, 0);
        HeadWriter::request(&mut buf, Method::Connect, "example.com:443")
            .unwrap()
            .finish();
        assert_eq!(buf.as_slice(), b"CONNECT example.com:443 HTTP/1.1\r\n\r\n");
    }

    #[test]
    fn response_heads() {
        let mut buf = WriteBuf::new(256, 0);
        let mut head = HeadWriter::response(&mut buf, StatusCode::OK);
        head.content_length(0);
        head.finish();
        let mut head = HeadWriter::response(&mut buf, StatusCode(299));
        head.chunked();
        head.finish();
        HeadWriter::response(&mut buf, StatusCode::NOT_FOUND).finish();
        assert_eq!(
            buf.as_slice(),
            &b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n\
               HTTP/1.1 299 \r\nTransfer-Encoding: chunked\r\n\r\n\
               HTTP/1.1 404 Not Found\r\n\r\n"[..]
        );
    }

    #[test]
    #[should_panic(expected = "not three digits")]
    fn response_status_must_be_three_digits() {
        let mut buf = WriteBuf::new(64, 0);
        let _ = HeadWriter::response(&mut buf, StatusCode(1000));
    }

    #[test]
    fn bad_targets_are_rejected_and_write_nothing() {
        for target in [
            "",
            "/a b",
            "/a\rb",
            "/a\nb",
            "/a\0b",
            "/a\tb",
            "/a#frag",
            "/caf\u{e9}",
            "/\x7f",
        ] {
            let mut buf = buf_with(b"queued");
            let err = HeadWriter::request(&mut buf, Method::Get, target).unwrap_err();
            assert_eq!(err, WriteError::InvalidMethodOrTarget, "{target:?}");
            assert_eq!(buf.as_slice(), b"queued");
        }
    }

    #[test]
    fn bad_header_names_are_rejected_and_write_nothing() {
        for name in [
            "",
            "X Y",
            "X:Y",
            "X\rY",
            "X\nY",
            "X\0Y",
            "X\tY",
            "(x)",
            "X\"",
            "caf\u{e9}",
        ] {
            let mut buf = WriteBuf::new(256, 0);
            let mut head = HeadWriter::request(&mut buf, Method::Get, "/").unwrap();
            let before = head.buf.as_slice().to_vec();
            assert_eq!(
                head.header(name, b"v").unwrap_err(),
                WriteError::InvalidHeaderName,
                "{name:?}"
            );
            assert_eq!(head.buf.as_slice(), before);
        }
        assert!(validate_header_name("!#$%&'*+-.^_`|~09azAZ").is_ok());
    }

    #[test]
    fn bad_header_values_are_rejected_and_write_nothing() {
        for value in [
            &b"a\rb"[..],
            b"a\nb",
            b"a\0b",
            b"\r\nInjected: yes",
            b"a\x01",
            b"\x1f",
            b"\x7f",
        ] {
            let mut buf = WriteBuf::new(256, 0);
            let mut head = HeadWriter::response(&mut buf, StatusCode::OK);
            let before = head.buf.as_slice().to_vec();
            assert_eq!(
                head.header("X", value).unwrap_err(),
                WriteError::InvalidHeaderValue,
                "{value:?}"
            );
            assert_eq!(head.buf.as_slice(), before);
        }
        assert!(validate_header_value(b"").is_ok());
        assert!(validate_header_value(b" a\tb \x80\xff").is_ok());
    }

    #[test]
    fn chunked_body_with_trailers() {
        let mut buf = WriteBuf::new(256, 0);
        let mut encoder = ChunkedEncoder::new();
        encoder.write_chunk(&mut buf, b"hello");
        encoder.write_chunk(&mut buf, b"");
        encoder.write_chunk(&mut buf, &[b'x'; 26]);
        encoder
            .finish(&mut buf, &[("Checksum", b"abc"), ("X-Done", b"1")])
            .unwrap();
        let mut expected = b"5\r\nhello\r\n1a\r\n".to_vec();
        expected.extend_from_slice(&[b'x'; 26]);
        expected.extend_from_slice(b"\r\n0\r\nChecksum: abc\r\nX-Done: 1\r\n\r\n");
        assert_eq!(buf.as_slice(), expected);
        assert_eq!(encoder.body_bytes(), 31);
        assert!(encoder.is_finished());
    }

    #[test]
    fn chunked_finish_without_trailers() {
        let mut buf = WriteBuf::new(64, 0);
        let mut encoder = ChunkedEncoder::default();
        encoder.finish(&mut buf, &[]).unwrap();
        assert_eq!(buf.as_slice(), b"0\r\n\r\n");
    }

    #[test]
    fn bad_trailers_write_nothing() {
        let mut buf = WriteBuf::new(64, 0);
        let mut encoder = ChunkedEncoder::new();
        encoder.write_chunk(&mut buf, b"abc");
        let before = buf.as_slice().to_vec();
        let err = encoder
            .finish(&mut buf, &[("Ok", b"1"), ("Bad", b"x\r\nEvil: 1")])
            .unwrap_err();
        assert_eq!(err, WriteError::InvalidHeaderValue);
        assert_eq!(
            encoder.finish(&mut buf, &[("Bad Name", b"1")]).unwrap_err(),
            WriteError::InvalidHeaderName
        );
        assert_eq!(buf.as_slice(), before);
        assert!(!encoder.is_finished());
    }

    #[test]
    fn errors_display() {
        let err = WriteError::BodyLengthMismatch {
            declared: 3,
            written: 2,
        };
        assert!(err.to_string().contains("Content-Length 3"));
        assert!(!WriteError::InvalidHeaderName.to_string().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn values_with_a_forbidden_byte_are_rejected(
            prefix in proptest::collection::vec(proptest::num::u8::ANY, 0..32),
            bad in proptest::sample::select(
                (0u8..0x20).filter(|&b| b != b'\t').chain([0x7F]).collect::<Vec<_>>()
            ),
            suffix in proptest::collection::vec(proptest::num::u8::ANY, 0..32),
        ) {
            let mut value = prefix;
            value.push(bad);
            value.extend_from_slice(&suffix);
            proptest::prop_assert_eq!(
                validate_header_value(&value),
                Err(WriteError::InvalidHeaderValue)
            );
            let mut buf = WriteBuf::new(64, 0);
            let mut head = HeadWriter::response(&mut buf, StatusCode::OK);
            proptest::prop_assert!(head.header("X", &value).is_err());
            head.finish();
            proptest::prop_assert_eq!(buf.as_slice(), b"HTTP/1.1 200 OK\r\n\r\n");
        }

        #[test]
        fn values_without_controls_are_accepted(
            value in proptest::collection::vec(
                any::<u8>().prop_filter("no CTL", |&b| is_field_byte(b)), 0..64
            ),
        ) {
            proptest::prop_assert!(validate_header_value(&value).is_ok());
        }
    }
}
