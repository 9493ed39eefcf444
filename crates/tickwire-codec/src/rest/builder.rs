//! [`RequestBuilder`]: one request, written incrementally into the caller's buffer, with the
//! stages as types so a query parameter cannot follow a header.

use core::fmt;
use core::marker::PhantomData;
use std::io;

use super::RequestWriter;
use super::percent::{PercentWriter, encode_into};
use crate::buf::WriteBuf;
use crate::http::ascii::{Decimal, copy_short, is_field_value, write_field};
use crate::http::{Method, WriteError, validate_header_name, validate_header_value};

/// Stage marker: the request line is still open, query parameters may be added.
#[derive(Debug, Clone, Copy)]
pub struct Query;

/// Stage marker: at least one header was written, so the request line is closed and query
/// parameters are no longer possible.
#[derive(Debug, Clone, Copy)]
pub struct WithHeaders;

/// One request being written into a [`WriteBuf`], from [`RequestWriter::request`].
///
/// The bytes go to the buffer as each call is made: the request line up to the path first,
/// then each query parameter, then (at the first header or the finishing call) ` HTTP/1.1`,
/// `Host` and the writer's default headers, then each header, then the framing and the body.
/// Nothing is allocated.
///
/// If a call fails, or the builder is dropped before a finishing call (`finish`, `body`,
/// `body_with`, `body_fixed` and their `_into` forms), the buffer is truncated back to where
/// this request began: a half-written request is never left to be sent.
#[derive(Debug)]
#[must_use = "the request is removed from the buffer unless a finishing call completes it"]
pub struct RequestBuilder<'w, S> {
    writer: &'w RequestWriter,
    /// `None` once a finishing call or a stage change took it (then `Drop` does nothing).
    buf: Option<&'w mut WriteBuf>,
    /// `buf.len()` when this request began: where a failure truncates to.
    start: usize,
    method: Method,
    /// The byte before the next query parameter: `?` first, `&` after; `None` when the path
    /// already ends in `?` or `&`.
    query_separator: Option<u8>,
    request_line_open: bool,
    stage: PhantomData<S>,
}

impl<'w> RequestBuilder<'w, Query> {
    pub(super) fn new(
        writer: &'w RequestWriter,
        buf: &'w mut WriteBuf,
        start: usize,
        method: Method,
        query_separator: Option<u8>,
    ) -> Self {
        Self {
            writer,
            buf: Some(buf),
            start,
            method,
            query_separator,
            request_line_open: true,
            stage: PhantomData,
        }
    }

    /// Appends `key=value` to the query, both percent-encoded (RFC 3986: only unreserved
    /// characters stay as they are; space is `%20`, `+` is `%2B`). An empty value is written
    /// as `key=`.
    pub fn query(mut self, key: &str, value: &str) -> Self {
        let separator = self.query_separator.replace(b'&');
        let buf = self.buf();
        if let Some(separator) = separator {
            buf.extend_from_slice(&[separator]);
        }
        encode_into(buf, key.as_bytes());
        buf.extend_from_slice(b"=");
        encode_into(buf, value.as_bytes());
        self
    }

    /// Appends `key=value` with `value` formatted by `Display` (numbers, decimals) straight
    /// into the buffer, percent-encoded. Should the `Display` impl fail, the parameter is
    /// left out.
    pub fn query_display(mut self, key: &str, value: impl fmt::Display) -> Self {
        let separator = self.query_separator;
        let buf = self.buf();
        let mark = buf.len();
        if let Some(separator) = separator {
            buf.extend_from_slice(&[separator]);
        }
        encode_into(buf, key.as_bytes());
        buf.extend_from_slice(b"=");
        if fmt::write(&mut PercentWriter(buf), format_args!("{value}")).is_err() {
            buf.truncate(mark);
            return self;
        }
        self.query_separator = Some(b'&');
        self
    }
}

impl<'w, S> RequestBuilder<'w, S> {
    /// Writes `name: value`. On `Err` (a name that is not a token, a value with CR, LF, NUL
    /// or another control but HTAB) the whole request is removed from the buffer.
    pub fn header(
        mut self,
        name: &str,
        value: &[u8],
    ) -> Result<RequestBuilder<'w, WithHeaders>, WriteError> {
        validate_header_name(name)?;
        validate_header_value(value)?;
        self.close_request_line();
        write_field(self.buf(), name.as_bytes(), value);
        Ok(self.into_stage())
    }

    /// Writes `name: value` with `value` formatted by `Display` straight into the buffer,
    /// each piece validated as [`header`](Self::header) does. On `Err` (or a failing
    /// `Display` impl, reported as [`WriteError::InvalidHeaderValue`]) the whole request is
    /// removed from the buffer.
    pub fn header_display(
        mut self,
        name: &str,
        value: impl fmt::Display,
    ) -> Result<RequestBuilder<'w, WithHeaders>, WriteError> {
        validate_header_name(name)?;
        self.close_request_line();
        let buf = self.buf();
        buf.extend_from_slice(name.as_bytes());
        buf.extend_from_slice(b": ");
        fmt::write(&mut FieldValueWriter(buf), format_args!("{value}"))
            .map_err(|fmt::Error| WriteError::InvalidHeaderValue)?;
        buf.extend_from_slice(b"\r\n");
        Ok(self.into_stage())
    }

    /// Ends the request without a body: `Content-Length: 0` for POST, PUT and PATCH (whose
    /// servers may otherwise answer 411, RFC 9110 §8.6), no framing header for the other
    /// methods. Returns the request's length in the buffer.
    pub fn finish(self) -> usize {
        self.finish_into().1
    }

    /// [`finish`](Self::finish), also handing back the buffer for the caller to send.
    pub fn finish_into(mut self) -> (&'w mut WriteBuf, usize) {
        self.close_request_line();
        let end: &[u8] = if matches!(self.method, Method::Post | Method::Put | Method::Patch) {
            b"Content-Length: 0\r\n\r\n"
        } else {
            b"\r\n"
        };
        self.buf().extend_from_slice(end);
        self.complete()
    }

    /// Ends the request with `body` and its `Content-Length`. Returns the request's length.
    pub fn body(self, body: &[u8]) -> usize {
        self.body_into(body).1
    }

    /// [`body`](Self::body), also handing back the buffer.
    pub fn body_into(mut self, body: &[u8]) -> (&'w mut WriteBuf, usize) {
        self.close_request_line();
        let buf = self.buf();
        ContentLengthLine::append(buf, body.len() as u64);
        buf.extend_from_slice(body);
        self.complete()
    }

    /// Ends the request with a body that `write` puts straight into the buffer through a
    /// [`BodyWriter`] (`io::Write` and `fmt::Write`: `serde_json::to_writer(w, &order)`
    /// works). `Content-Length` is measured afterwards and inserted in front of the body,
    /// one `memmove` of it: no copy of the body anywhere else. Returns the request's length.
    ///
    /// If `write` fails, its error is returned and the whole request is removed.
    pub fn body_with<E>(
        self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> Result<usize, E> {
        self.body_with_into(write).map(|(_, len)| len)
    }

    /// [`body_with`](Self::body_with), also handing back the buffer.
    pub fn body_with_into<E>(
        mut self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> Result<(&'w mut WriteBuf, usize), E> {
        self.close_request_line();
        let buf = self.buf();
        let body_start = buf.len();
        write(&mut BodyWriter { buf, body_start })?;
        let body_len = buf.len() - body_start;
        let line = ContentLengthLine::new(body_len as u64);
        // The head is in front of the body, so this is always the memmove case; a fixed-width
        // placeholder (padded with OWS) would avoid it but puts odd bytes on the wire for a
        // copy that costs nanoseconds at REST body sizes.
        buf.insert_before_tail(line.as_bytes(), body_len);
        Ok(self.complete())
    }

    /// Ends the head with `Content-Length: len`; the caller then appends exactly `len` body
    /// bytes (a length mismatch is the caller's to detect, see
    /// [`WriteError::BodyLengthMismatch`]). Returns the head's length.
    pub fn body_fixed(self, len: u64) -> usize {
        self.body_fixed_into(len).1
    }

    /// [`body_fixed`](Self::body_fixed), also handing back the buffer.
    pub fn body_fixed_into(mut self, len: u64) -> (&'w mut WriteBuf, usize) {
        self.close_request_line();
        ContentLengthLine::append(self.buf(), len);
        self.complete()
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Where this request begins in the buffer, as a [`WriteBuf::len`] offset.
    pub fn start(&self) -> usize {
        self.start
    }

    #[inline]
    fn buf(&mut self) -> &mut WriteBuf {
        match self.buf.as_deref_mut() {
            Some(buf) => buf,
            None => unreachable!("RequestBuilder used after its buffer was taken"),
        }
    }

    /// Ends the request line and copies in `Host` and the default headers, once.
    #[inline(always)]
    fn close_request_line(&mut self) {
        // The test inline, the copy out of line: every header after the first, and the
        // finishing call, pay a flag test rather than a call (LLVM kept the whole of it out of
        // line, about 15 instructions per header).
        if self.request_line_open {
            self.write_request_line_end();
        }
    }

    #[inline(never)]
    fn write_request_line_end(&mut self) {
        self.request_line_open = false;
        let fixed = self.writer.fixed_fields();
        let buf = self.buf();
        buf.extend_from_slice(b" HTTP/1.1\r\n");
        buf.extend_from_slice(fixed);
    }

    fn into_stage<T>(mut self) -> RequestBuilder<'w, T> {
        RequestBuilder {
            writer: self.writer,
            buf: self.buf.take(),
            start: self.start,
            method: self.method,
            query_separator: self.query_separator,
            request_line_open: self.request_line_open,
            stage: PhantomData,
        }
    }

    fn complete(mut self) -> (&'w mut WriteBuf, usize) {
        match self.buf.take() {
            Some(buf) => {
                let len = buf.len() - self.start;
                (buf, len)
            }
            None => unreachable!("RequestBuilder completed twice"),
        }
    }
}

impl<S> Drop for RequestBuilder<'_, S> {
    /// An unfinished request (an error, or a builder dropped early) is taken back out.
    fn drop(&mut self) {
        if let Some(buf) = self.buf.take() {
            buf.truncate(self.start);
        }
    }
}

/// The body of a request being written by [`RequestBuilder::body_with`], appended straight
/// to the wire buffer. Implements `io::Write` (for `serde_json::to_writer` and friends) and
/// `fmt::Write` (for `write!`); neither ever fails.
#[derive(Debug)]
pub struct BodyWriter<'a> {
    buf: &'a mut WriteBuf,
    body_start: usize,
}

impl BodyWriter<'_> {
    /// Appends `bytes` to the body.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Body bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.body_start
    }

    /// True while nothing has been written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl io::Write for BodyWriter<'_> {
    #[inline]
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    #[inline]
    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.buf.extend_from_slice(bytes);
        Ok(())
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl fmt::Write for BodyWriter<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.buf.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// `Content-Length: n CRLF CRLF` (the field and the blank line that ends the head), on the
/// stack: 16 + at most 20 digits + 4 bytes.
struct ContentLengthLine {
    bytes: [u8; 40],
    len: usize,
}

impl ContentLengthLine {
    const NAME: &[u8; 16] = b"Content-Length: ";

    #[inline]
    fn new(content_length: u64) -> Self {
        let digits = Decimal::new(content_length);
        let digits = digits.as_bytes();
        let mut bytes = [0u8; 40];
        let name_len = Self::NAME.len();
        bytes[..name_len].copy_from_slice(Self::NAME);
        let mut len = name_len;
        bytes[len..len + digits.len()].copy_from_slice(digits);
        len += digits.len();
        bytes[len..len + 4].copy_from_slice(b"\r\n\r\n");
        len += 4;
        Self { bytes, len }
    }

    /// Appends the line to `buf` straight from the digits, without assembling it on the
    /// stack first. Why: zeroing and filling the 40-byte array, then copying it out, was about
    /// 80 instructions of the bench's `body` call (callgrind, `tokio_http_c1`).
    #[inline]
    fn append(buf: &mut WriteBuf, content_length: u64) {
        let digits = Decimal::new(content_length);
        let digits = digits.as_bytes();
        let name_len = Self::NAME.len();
        let line = buf.append_slot(name_len + digits.len() + 4);
        let (name, rest) = line.split_at_mut(name_len);
        name.copy_from_slice(Self::NAME);
        let (number, end) = rest.split_at_mut(digits.len());
        copy_short(number, digits);
        end.copy_from_slice(b"\r\n\r\n");
    }

    #[inline]
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// A `fmt::Write` for a header value formatted by `Display`: every piece is checked as
/// [`validate_header_value`] would before it is appended; a bad one fails the formatting.
struct FieldValueWriter<'a>(&'a mut WriteBuf);

impl fmt::Write for FieldValueWriter<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if is_field_value(s.as_bytes()) {
            self.0.extend_from_slice(s.as_bytes());
            Ok(())
        } else {
            Err(fmt::Error)
        }
    }
}
