//! The HTTP/1.1 message readers: [`ResponseReader`] (client side) and [`RequestReader`]
//! (server side), sans-IO and resumable.
//!
//! This module owns what both readers share: finding the end of a head without rescanning
//! ([`Core`] keeps the scan offset), running `httparse` once per head into a reused field
//! list, and framing the body (RFC 9112 §6.3): none, Content-Length, chunked (decoded in place)
//! or read-until-close. The per-direction rules live in `response.rs` and `request.rs`.
//!
//! Buffer contract: a message starts at the front of `ReadBuf::data()` and stays there until
//! the next call to `read`, which first consumes it. So every range the reader records is an
//! index into `data()`, valid across `ReadBuf::compact`. The reader never grows the buffer:
//! the transport does, and every limit is checked before more bytes would be needed.

use core::mem::MaybeUninit;

use crate::buf::ReadBuf;

use super::chunked::ChunkedDecoder;
use super::error::HttpError;
use super::headers::{FieldRange, Headers, list_elements};
use super::limits::Limits;
use super::types::Version;

mod request;
mod response;

pub use request::{Request, RequestReader};
pub use response::{Response, ResponseReader};

/// The outcome of a read that did not fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<T> {
    /// A whole message.
    Complete(T),
    /// The buffer holds only part of a message: read more bytes into it and call again.
    NeedMore,
}

/// `httparse` header storage kept between messages. Its element lifetime is `'static` at rest
/// and narrowed to the buffer's for each parse (see [`recycle`]).
type Scratch<'b> = Vec<MaybeUninit<httparse::Header<'b>>>;

/// How the body of the message being read is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Body {
    /// No body (HEAD response, 1xx, 204, 304, a request without framing headers) or the end
    /// of HTTP framing (101, 2xx to CONNECT).
    Empty,
    /// Content-Length bytes.
    Length(usize),
    /// Chunked transfer coding.
    Chunked,
    /// Response bytes until the peer closes.
    UntilClose,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Head,
    Body,
    Complete,
}

/// The start-line parts, as indices into the head (`(start, end)`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct StartLine {
    pub(super) method: (usize, usize),
    pub(super) target: (usize, usize),
    pub(super) status: u16,
    pub(super) reason: (usize, usize),
}

/// State shared by both readers: head scan, parsed head, body framing.
#[derive(Debug)]
pub(super) struct Core {
    pub(super) limits: Limits,
    /// Requests: bare LF and obs-fold are errors. Responses: both accepted.
    strict: bool,
    phase: Phase,
    failed: Option<HttpError>,
    /// Bytes of the message last returned, consumed at the start of the next call.
    release: usize,
    scan: HeadScan,
    pub(super) head_len: usize,
    pub(super) version: Version,
    pub(super) start: StartLine,
    pub(super) fields: Vec<FieldRange>,
    pub(super) trailers: Vec<FieldRange>,
    scratch: Scratch<'static>,
    pub(super) body: Body,
    pub(super) keep_alive: bool,
    decoder: ChunkedDecoder,
    /// Chunked: index of the next undecoded byte, and the end of the decoded data.
    chunk_read: usize,
    chunk_out: usize,
    pub(super) body_range: (usize, usize),
}

/// Progress of the search for the blank line that ends a head.
#[derive(Debug, Clone, Copy, Default)]
struct HeadScan {
    /// Next byte to look at.
    pos: usize,
    /// First byte of the current line.
    line_start: usize,
    seen_start_line: bool,
    field_lines: usize,
    /// A response header line continued a previous one (obs-fold).
    folded: bool,
}

impl Core {
    pub(super) fn new(limits: Limits, strict: bool) -> Self {
        Self {
            limits,
            strict,
            phase: Phase::Head,
            failed: None,
            release: 0,
            scan: HeadScan::default(),
            head_len: 0,
            version: Version::Http11,
            start: StartLine::default(),
            fields: Vec::new(),
            trailers: Vec::new(),
            scratch: Vec::new(),
            body: Body::Empty,
            keep_alive: false,
            decoder: ChunkedDecoder::new(limits),
            chunk_read: 0,
            chunk_out: 0,
            body_range: (0, 0),
        }
    }

    /// Forgets the message in progress, the pending release and a past error.
    pub(super) fn reset(&mut self) {
        self.release = 0;
        self.failed = None;
        self.start_message();
    }

    pub(super) fn in_progress(&self) -> bool {
        match self.phase {
            Phase::Head => self.scan.pos > 0,
            Phase::Body => true,
            Phase::Complete => false,
        }
    }

    /// Releases the previous message, then advances the current one as far as `buf` allows.
    /// `Ok(true)` when a message is complete (its bytes are `buf.data()[..release]`).
    /// `parse_head` validates a complete head (`data[..head_len]`) and sets the framing.
    pub(super) fn read(
        &mut self,
        buf: &mut ReadBuf,
        parse_head: impl FnOnce(&mut Self, &mut [u8]) -> Result<(), HttpError>,
    ) -> Result<bool, HttpError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.advance(buf, parse_head);
        if let Err(error) = &result {
            self.failed = Some(error.clone());
        }
        result
    }

    /// The peer closed: completes a read-until-close body; `Ok(false)` when no message had
    /// begun; an error inside any other message.
    pub(super) fn read_eof(
        &mut self,
        buf: &mut ReadBuf,
        parse_head: impl FnOnce(&mut Self, &mut [u8]) -> Result<(), HttpError>,
    ) -> Result<bool, HttpError> {
        if self.read(buf, parse_head)? {
            return Ok(true);
        }
        let error = match (self.phase, self.body) {
            (Phase::Head, _) if buf.is_empty() => return Ok(false),
            (Phase::Head, _) => HttpError::IncompleteHead,
            (_, Body::UntilClose) => {
                self.body_range = (self.head_len, buf.len());
                self.complete(buf.len());
                return Ok(true);
            }
            _ => HttpError::IncompleteBody,
        };
        self.failed = Some(error.clone());
        Err(error)
    }

    fn advance(
        &mut self,
        buf: &mut ReadBuf,
        parse_head: impl FnOnce(&mut Self, &mut [u8]) -> Result<(), HttpError>,
    ) -> Result<bool, HttpError> {
        if self.release > 0 {
            buf.consume(self.release.min(buf.len()));
            self.release = 0;
            self.start_message();
        }
        if self.phase == Phase::Complete {
            // Completed by read_eof and released: nothing more arrives on this connection.
            self.start_message();
        }
        if self.phase == Phase::Head {
            let Some(head_len) = self.scan_head(buf.data())? else {
                return Ok(false);
            };
            self.head_len = head_len;
            parse_head(self, buf.data_mut())?;
            self.phase = Phase::Body;
            self.decoder = ChunkedDecoder::new(self.limits);
            self.chunk_read = head_len;
            self.chunk_out = head_len;
        }
        self.read_body(buf)
    }

    fn read_body(&mut self, buf: &mut ReadBuf) -> Result<bool, HttpError> {
        let head_len = self.head_len;
        match self.body {
            Body::Empty => {
                self.body_range = (head_len, head_len);
                self.complete(head_len);
                Ok(true)
            }
            Body::Length(length) => {
                let too_large = HttpError::BodyTooLarge {
                    limit: self.limits.max_body_bytes,
                };
                let end = head_len.checked_add(length).ok_or(too_large)?;
                if buf.len() < end {
                    return Ok(false);
                }
                self.body_range = (head_len, end);
                self.complete(end);
                Ok(true)
            }
            Body::UntilClose => {
                let received = (buf.len() - head_len) as u64;
                if received > self.limits.max_body_bytes {
                    return Err(HttpError::BodyTooLarge {
                        limit: self.limits.max_body_bytes,
                    });
                }
                Ok(false)
            }
            Body::Chunked => {
                let step = self.decoder.decode_in_place(
                    buf.data_mut(),
                    self.chunk_out,
                    self.chunk_read,
                )?;
                self.chunk_read += step.consumed;
                self.chunk_out += step.produced;
                if !step.done {
                    return Ok(false);
                }
                let data = buf.data();
                let trailers = self.decoder.trailer_range().unwrap_or(0..0);
                self.parse_trailers(data, trailers)?;
                self.body_range = (head_len, self.chunk_out);
                self.complete(self.chunk_read);
                Ok(true)
            }
        }
    }

    /// Consumes the bytes of the message last returned, without parsing further.
    pub(super) fn release(&mut self, buf: &mut ReadBuf) {
        if self.release > 0 {
            buf.consume(self.release.min(buf.len()));
            self.release = 0;
            self.start_message();
        }
    }

    /// A message is complete and not yet released.
    pub(super) fn holds_complete(&self) -> bool {
        self.phase == Phase::Complete && self.release > 0 && self.failed.is_none()
    }

    fn complete(&mut self, message_len: usize) {
        self.phase = Phase::Complete;
        self.release = message_len;
    }

    fn start_message(&mut self) {
        self.phase = Phase::Head;
        self.scan = HeadScan::default();
        self.head_len = 0;
        self.start = StartLine::default();
        self.fields.clear();
        self.trailers.clear();
        self.body = Body::Empty;
        self.keep_alive = false;
        self.body_range = (0, 0);
    }

    /// Looks for the blank line ending the head, from where the last call stopped. Checks the
    /// head size, field count, line endings and folding on the bytes seen so far.
    fn scan_head(&mut self, data: &[u8]) -> Result<Option<usize>, HttpError> {
        let window = &data[..data.len().min(self.limits.max_head_bytes)];
        let scan = &mut self.scan;
        while let Some(found) = window
            .get(scan.pos..)
            .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
        {
            let lf = scan.pos + found;
            scan.pos = lf + 1;
            let crlf = lf > scan.line_start && window[lf - 1] == b'\r';
            if self.strict && !crlf {
                // RFC 9112 §2.2: a server must not accept a bare LF as a line terminator here.
                return Err(HttpError::BareLf);
            }
            let line = &window[scan.line_start..if crlf { lf - 1 } else { lf }];
            scan.line_start = lf + 1;
            if line.is_empty() {
                if scan.seen_start_line {
                    return Ok(Some(lf + 1));
                }
                // RFC 9112 §2.2: empty lines before the start line are ignored.
                continue;
            }
            if !scan.seen_start_line {
                scan.seen_start_line = true;
                continue;
            }
            if matches!(line[0], b' ' | b'\t') {
                if self.strict {
                    return Err(HttpError::ObsFold);
                }
                scan.folded = true;
                continue;
            }
            scan.field_lines += 1;
            if scan.field_lines > self.limits.max_headers {
                return Err(HttpError::TooManyHeaders {
                    limit: self.limits.max_headers,
                });
            }
        }
        scan.pos = window.len();
        if data.len() > self.limits.max_head_bytes {
            return Err(HttpError::HeadTooLarge {
                limit: self.limits.max_head_bytes,
            });
        }
        Ok(None)
    }

    /// The header storage for one parse, sized to the field limit, without allocating after
    /// the first message.
    pub(super) fn take_scratch<'b>(&mut self) -> Scratch<'b> {
        let mut scratch: Scratch<'b> = core::mem::take(&mut self.scratch);
        scratch.resize_with(self.limits.max_headers, MaybeUninit::uninit);
        scratch
    }

    /// Puts the header storage back for the next message.
    pub(super) fn return_scratch(&mut self, scratch: Scratch<'_>) {
        self.scratch = recycle(scratch);
    }

    #[cfg(test)]
    pub(super) fn storage(&self) -> [usize; 3] {
        [
            self.fields.as_ptr() as usize,
            self.trailers.as_ptr() as usize,
            self.scratch.as_ptr() as usize,
        ]
    }

    /// Records each parsed field as indices into `head` (values trimmed).
    pub(super) fn record_fields<'b>(
        fields: &mut Vec<FieldRange>,
        head: &'b [u8],
        parsed: &[httparse::Header<'b>],
    ) {
        fields.clear();
        fields.extend(parsed.iter().map(|header| FieldRange {
            name: offset_in(head, header.name.as_bytes()),
            value: offset_in(head, header.value.trim_ascii()),
        }));
    }

    /// Replaces the CR and LF of folded response lines inside field values with spaces, so
    /// each value reads as one line (RFC 9112 §5.2: obs-fold is replaced by SP).
    pub(super) fn unfold_values(&self, data: &mut [u8]) {
        if !self.scan.folded {
            return;
        }
        for field in &self.fields {
            if let Some(value) = data.get_mut(field.value.0..field.value.1) {
                for byte in value.iter_mut().filter(|b| matches!(b, b'\r' | b'\n')) {
                    *byte = b' ';
                }
            }
        }
    }

    /// Records the trailer fields of the section the chunked decoder delimited. The decoder
    /// has checked each line against the field grammar (token `:` field-value CRLF, RFC 9112
    /// §7.1.2), so splitting at the first colon is enough here.
    fn parse_trailers(
        &mut self,
        data: &[u8],
        range: core::ops::Range<usize>,
    ) -> Result<(), HttpError> {
        self.trailers.clear();
        let Some(section) = data.get(range.clone()) else {
            return Err(HttpError::InvalidTrailer);
        };
        let mut line_start = range.start;
        for line in section.split(|&b| b == b'\n') {
            let line_end = line_start + line.len();
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if let Some(colon) = line.iter().position(|&b| b == b':') {
                let value = &data[line_start + colon + 1..line_start + line.len()];
                self.trailers.push(FieldRange {
                    name: (line_start, line_start + colon),
                    value: offset_in(data, value.trim_ascii()),
                });
            } else if !line.is_empty() {
                return Err(HttpError::InvalidTrailer);
            }
            line_start = line_end + 1;
        }
        Ok(())
    }
}

/// An emptied vector at another element lifetime, without allocating: the in-place `collect`
/// specialisation of the standard library reuses the allocation when the element size and
/// alignment are unchanged, as they are here (only the lifetime differs). The reader tests
/// check that the storage stays put.
#[expect(
    clippy::unnecessary_filter_map,
    reason = "the closure changes the element lifetime, which `filter` cannot"
)]
fn recycle<'to>(mut scratch: Scratch<'_>) -> Scratch<'to> {
    scratch.clear();
    scratch.into_iter().filter_map(|_| None).collect()
}

/// `(start, end)` of `part` inside `base`, or `(0, 0)` when `part` does not lie in it (an
/// empty slice `httparse` took from elsewhere).
pub(super) fn offset_in(base: &[u8], part: &[u8]) -> (usize, usize) {
    let start = (part.as_ptr() as usize).wrapping_sub(base.as_ptr() as usize);
    match start.checked_add(part.len()) {
        Some(end) if start <= base.len() && end <= base.len() => (start, end),
        _ => (0, 0),
    }
}

/// The Content-Length of a head (RFC 9110 §8.6): `None` when absent; every field and list
/// element must be 1 to 19 digits and all must agree.
pub(super) fn content_length(headers: &Headers<'_>) -> Result<Option<u64>, HttpError> {
    let mut length = None;
    for value in headers.get_all("content-length") {
        let mut elements = 0;
        for element in list_elements(value) {
            elements += 1;
            let parsed = parse_decimal(element)?;
            if length.is_some_and(|seen| seen != parsed) {
                return Err(HttpError::ConflictingContentLength);
            }
            length = Some(parsed);
        }
        if elements == 0 {
            return Err(HttpError::InvalidContentLength);
        }
    }
    Ok(length)
}

/// 1 to 19 ASCII digits (at most 9_999_999_999_999_999_999, below `u64::MAX`).
fn parse_decimal(digits: &[u8]) -> Result<u64, HttpError> {
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return Err(HttpError::InvalidContentLength);
    }
    Ok(digits
        .iter()
        .fold(0u64, |value, &digit| value * 10 + u64::from(digit - b'0')))
}

/// The transfer codings of a head, in order, lowercase-compared by the caller: the coding
/// names of every Transfer-Encoding element, parameters dropped.
pub(super) fn transfer_codings<'a>(headers: &Headers<'a>) -> impl Iterator<Item = &'a [u8]> {
    headers
        .get_all("transfer-encoding")
        .flat_map(list_elements)
        .map(|element| match element.iter().position(|&b| b == b';') {
            Some(at) => element[..at].trim_ascii(),
            None => element,
        })
}

/// Whether the connection persists after a message with these headers (RFC 9112 §9.3):
/// HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
pub(super) fn persistent(version: Version, headers: &Headers<'_>) -> bool {
    if headers.contains_token("connection", "close") {
        return false;
    }
    match version {
        Version::Http11 => true,
        Version::Http10 => headers.contains_token("connection", "keep-alive"),
    }
}

/// Maps an `httparse` rejection to ours. `Version` errors are told apart: a start line that
/// names another HTTP version is 505, anything else is a malformed start line.
pub(super) fn head_error(
    error: httparse::Error,
    head: &[u8],
    request: bool,
    limit: usize,
) -> HttpError {
    match error {
        httparse::Error::HeaderName => HttpError::InvalidHead("invalid header field name"),
        httparse::Error::HeaderValue => HttpError::InvalidHead("invalid header field value"),
        httparse::Error::NewLine => HttpError::InvalidHead("invalid line ending"),
        httparse::Error::Status => HttpError::InvalidHead("invalid status code"),
        httparse::Error::Token => HttpError::InvalidHead("invalid method token"),
        httparse::Error::TooManyHeaders => HttpError::TooManyHeaders { limit },
        httparse::Error::Version if names_version(head, request) => HttpError::UnsupportedVersion,
        httparse::Error::Version if request => HttpError::InvalidHead("invalid request line"),
        httparse::Error::Version => HttpError::InvalidHead("invalid status line"),
    }
}

/// Whether the start line has the shape of an HTTP version (`HTTP/` digit `.` digit) where a
/// version belongs: last of the three parts of a request line, first on a status line.
fn names_version(head: &[u8], request: bool) -> bool {
    let head = head.trim_ascii_start();
    let line_end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = head[..line_end].trim_ascii_end();
    let version = if request {
        // method SP target SP version: any other shape is a malformed line, not a version.
        if line.split(|&b| b == b' ').count() != 3 {
            return false;
        }
        line.rsplit(|&b| b == b' ').next().unwrap_or_default()
    } else {
        line.split(|&b| b == b' ').next().unwrap_or_default()
    };
    matches!(version, [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
        if major.is_ascii_digit() && minor.is_ascii_digit())
}
