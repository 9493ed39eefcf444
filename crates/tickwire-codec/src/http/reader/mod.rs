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

/// One direction's head rules, given to [`Core::read`]: `ResponseHead` or `RequestHead`.
pub(super) trait Head: Copy {
    /// Runs `httparse` over `bytes` with the core's field limit. On `Complete` records the
    /// start line and the fields (as [`Core::record_fields`] does) and returns the head's
    /// length; `Ok(None)` while partial. May run twice for one message (the single pass,
    /// then the scanned path), each run starting afresh.
    fn parse(self, core: &mut Core, bytes: &[u8]) -> Result<Option<usize>, httparse::Error>;

    /// Checks the parsed head `data[..core.head_len]` and sets the framing.
    fn frame(self, core: &mut Core, data: &mut [u8]) -> Result<(), HttpError>;
}

/// Field limits up to this parse with header storage on the stack (3.2 KiB, uninitialised);
/// larger ones use [`Scratch`].
const STACK_HEADERS: usize = 100;

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
    /// The framing fields among `fields`, noted as they were recorded.
    pub(super) named: NamedFields,
    pub(super) trailers: Vec<FieldRange>,
    scratch: Scratch<'static>,
    pub(super) body: Body,
    pub(super) keep_alive: bool,
    decoder: ChunkedDecoder,
    /// Chunked: index of the next undecoded byte, and the end of the decoded data.
    chunk_read: usize,
    chunk_out: usize,
    pub(super) body_range: (usize, usize),
    /// Complete a message at the end of its head, leaving the body (or the bytes of the
    /// protocol an upgrade switches to) in the buffer: set by the readers' `read_head`.
    pub(super) head_only: bool,
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

/// Which framing fields a head holds, noted by [`Core::record_fields`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct NamedFields {
    /// `Host` fields.
    pub(super) host: usize,
    /// `Content-Length` fields, and the index of the first.
    content_length: usize,
    first_content_length: usize,
    pub(super) transfer_encoding: bool,
    connection: bool,
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
            named: NamedFields::default(),
            trailers: Vec::new(),
            scratch: Vec::new(),
            body: Body::Empty,
            keep_alive: false,
            decoder: ChunkedDecoder::new(limits),
            chunk_read: 0,
            chunk_out: 0,
            body_range: (0, 0),
            head_only: false,
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
    /// `head` parses a complete head and sets the framing.
    pub(super) fn read(&mut self, buf: &mut ReadBuf, head: impl Head) -> Result<bool, HttpError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        let result = self.advance(buf, head);
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
        head: impl Head,
    ) -> Result<bool, HttpError> {
        if self.read(buf, head)? {
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

    fn advance(&mut self, buf: &mut ReadBuf, head: impl Head) -> Result<bool, HttpError> {
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
            let head_len = match self.single_pass(buf.data(), head) {
                Some(head_len) => head_len,
                None => {
                    let Some(head_len) = self.scan_head(buf.data())? else {
                        return Ok(false);
                    };
                    self.parse_scanned(&buf.data()[..head_len], head)?;
                    head_len
                }
            };
            self.head_len = head_len;
            head.frame(self, buf.data_mut())?;
            self.phase = Phase::Body;
            if self.body == Body::Chunked {
                // Only a chunked body uses the decoder; resetting it costs instructions.
                self.decoder = ChunkedDecoder::new(self.limits);
            }
            self.chunk_read = head_len;
            self.chunk_out = head_len;
        }
        if self.head_only {
            self.body_range = (self.head_len, self.head_len);
            self.complete(self.head_len);
            return Ok(true);
        }
        self.read_body(buf)
    }

    /// The common case in one pass: a fresh message whose whole head is already in `data`
    /// (it arrived in one read) goes straight to `httparse`, without first scanning for the
    /// blank line. `Some(head_len)` when that parse completed and the head has no line the
    /// scan would treat differently: one line end per start line, field and blank line (no
    /// empty lines before the start line, no folding) and, for requests, no bare LF. Then
    /// the scan would have found the same end and raised nothing, so the outcome is the
    /// scanned path's. `None` otherwise (partial head, a rejection, a rare shape): the
    /// resumable scan takes over and reports exactly as it always has.
    ///
    /// Why: the scan cost about 1 300 instructions per response of the bench's 228 B answer
    /// (`tickwire-bench http --callgrind`, `http_memory_callgrind`), a second pass over every
    /// byte `httparse` reads anyway; the line-end count here is one vectorised pass.
    fn single_pass(&mut self, data: &[u8], head: impl Head) -> Option<usize> {
        if self.scan.pos != 0 {
            // A partial head is resumed by the scan, never reparsed from the start.
            return None;
        }
        let window = &data[..data.len().min(self.limits.max_head_bytes)];
        let head_len = head.parse(self, window).ok()??;
        let (lf, cr) = line_ends(&window[..head_len]);
        let plain = lf == self.fields.len() + 2 && (!self.strict || cr == lf);
        plain.then_some(head_len)
    }

    /// Parses a head the scan delimited (`head` is exactly its bytes).
    fn parse_scanned(&mut self, bytes: &[u8], head: impl Head) -> Result<(), HttpError> {
        match head.parse(self, bytes) {
            Ok(Some(len)) if len == bytes.len() => Ok(()),
            Ok(_) if self.strict => Err(HttpError::InvalidHead("malformed request head")),
            Ok(_) => Err(HttpError::InvalidHead("malformed response head")),
            Err(error) => Err(head_error(
                error,
                bytes,
                self.strict,
                self.limits.max_headers,
            )),
        }
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
        self.named = NamedFields::default();
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

    /// Runs `parse` over `bytes` with header storage sized to the field limit: on the stack
    /// when the limit is at most [`STACK_HEADERS`] (both preset limits are), else the reused
    /// vector. Why: taking, resizing and recycling the vector cost about 70 instructions per
    /// response (`tickwire-bench http --callgrind`, client-side table); uninitialised stack
    /// storage costs nothing to set up.
    pub(super) fn with_header_storage<'b, T>(
        &mut self,
        bytes: &'b [u8],
        parse: impl FnOnce(&mut Self, &'b [u8], &mut [MaybeUninit<httparse::Header<'b>>]) -> T,
    ) -> T {
        let limit = self.limits.max_headers;
        if limit <= STACK_HEADERS {
            let mut storage: [MaybeUninit<httparse::Header<'b>>; STACK_HEADERS] =
                [const { MaybeUninit::uninit() }; STACK_HEADERS];
            parse(self, bytes, &mut storage[..limit])
        } else {
            let mut scratch = self.take_scratch();
            let parsed = parse(self, bytes, &mut scratch);
            self.return_scratch(scratch);
            parsed
        }
    }

    /// The header storage for one parse, sized to the field limit, without allocating after
    /// the first message.
    fn take_scratch<'b>(&mut self) -> Scratch<'b> {
        let mut scratch: Scratch<'b> = core::mem::take(&mut self.scratch);
        scratch.resize_with(self.limits.max_headers, MaybeUninit::uninit);
        scratch
    }

    /// Puts the header storage back for the next message.
    fn return_scratch(&mut self, scratch: Scratch<'_>) {
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

    /// Records each parsed field as indices into `head` (values trimmed), noting the framing
    /// fields in `named` on the way (one length dispatch and at most one case-insensitive
    /// compare per field), so that framing needs no lookups by name in the common case.
    /// Why: the name lookups cost about 2 000 instructions per bench response (`Headers::get`,
    /// `contains_token`, `content_length`, each walking every field).
    pub(super) fn record_fields<'b>(
        fields: &mut Vec<FieldRange>,
        named: &mut NamedFields,
        head: &'b [u8],
        parsed: &[httparse::Header<'b>],
    ) {
        fields.clear();
        *named = NamedFields::default();
        for header in parsed {
            let name = header.name.as_bytes();
            let same = |known: &[u8]| token_is(name, known);
            match name.len() {
                4 if same(b"host") => named.host += 1,
                10 if same(b"connection") => named.connection = true,
                14 if same(b"content-length") => {
                    if named.content_length == 0 {
                        named.first_content_length = fields.len();
                    }
                    named.content_length += 1;
                }
                17 if same(b"transfer-encoding") => named.transfer_encoding = true,
                _ => {}
            }
            fields.push(FieldRange {
                name: offset_in(head, name),
                value: offset_in(head, header.value.trim_ascii()),
            });
        }
    }

    /// The Content-Length of the parsed head, as [`content_length`] decides it, without the
    /// lookup when the head has a single plain `Content-Length: digits` (the common case).
    pub(super) fn content_length(&self, headers: &Headers<'_>) -> Result<Option<u64>, HttpError> {
        match self.named.content_length {
            0 => Ok(None),
            1 => match headers
                .value_at(self.named.first_content_length)
                .map(parse_decimal)
            {
                // A lone valid number is the one list element the general path would find.
                Some(Ok(length)) => Ok(Some(length)),
                _ => content_length(headers),
            },
            _ => content_length(headers),
        }
    }

    /// Whether the connection persists, as [`persistent`] decides it, without the lookup
    /// when the head has no `Connection` field.
    pub(super) fn persistent(&self, headers: &Headers<'_>) -> bool {
        if self.named.connection {
            persistent(self.version, headers)
        } else {
            self.version == Version::Http11
        }
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

/// Whether the token `name` (a field name `httparse` checked) is `lower`, a lowercase name
/// of letters and `-` of the same length, ignoring ASCII case. Compares eight bytes at a
/// time with the case bit (0x20) set: among token bytes only a letter's two cases meet a
/// letter that way, and only `-` itself meets `-`. Why: `eq_ignore_ascii_case` byte by byte
/// cost about 90 instructions per `Content-Length` field on the bench's response
/// (`tickwire-bench http --callgrind`, client-side table).
#[inline]
fn token_is(name: &[u8], lower: &[u8]) -> bool {
    const CASE: u64 = 0x2020_2020_2020_2020;
    let word = |bytes: &[u8], at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    if name.len() != lower.len() {
        return false;
    }
    if name.len() < 8 {
        return name.eq_ignore_ascii_case(lower);
    }
    // Eight-byte words from the front, the last one overlapping to end at the end.
    let last = name.len() - 8;
    (0..last)
        .step_by(8)
        .chain([last])
        .all(|at| word(name, at) | CASE == word(lower, at))
}

/// The LF and CR bytes in `head`, counted without branches so that the loop vectorises
/// (byte counters per 64-byte block cannot overflow).
fn line_ends(head: &[u8]) -> (usize, usize) {
    let (mut lf, mut cr) = (0, 0);
    for block in head.chunks(64) {
        let (mut block_lf, mut block_cr) = (0u8, 0u8);
        for &byte in block {
            block_lf += u8::from(byte == b'\n');
            block_cr += u8::from(byte == b'\r');
        }
        lf += usize::from(block_lf);
        cr += usize::from(block_cr);
    }
    (lf, cr)
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
    if digits.is_empty() || digits.len() > 19 {
        return Err(HttpError::InvalidContentLength);
    }
    digits
        .iter()
        .try_fold(0u64, |value, &digit| {
            let digit = digit.wrapping_sub(b'0');
            (digit < 10).then(|| value * 10 + u64::from(digit))
        })
        .ok_or(HttpError::InvalidContentLength)
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
