//! The client side: reading responses (RFC 9112 §4, §6.3), lenient only where deployed
//! servers need it.
//!
//! Accepted in responses and nowhere else: bare LF line endings in the head; obsolete line
//! folding (the folds become spaces); Transfer-Encoding whose final coding is not chunked
//! (the body runs until close, RFC 9112 §6.3 item 4); Transfer-Encoding with Content-Length
//! (chunked wins and the connection is not reused, §6.3 item 3).

use core::fmt;

use crate::buf::ReadBuf;

use super::super::error::HttpError;
use super::super::headers::Headers;
use super::super::limits::Limits;
use super::super::types::{Method, StatusCode, Version};
use super::{Body, Core, Head, Parsed, transfer_codings};

/// Reads the responses of one connection, one after another.
///
/// Each [`read`](Self::read) first releases the response the previous call returned, then
/// parses from the front of the buffer. Errors are terminal: every later call returns the
/// same error until [`reset`](Self::reset).
#[derive(Debug)]
pub struct ResponseReader {
    core: Core,
    expected: Method,
}

impl ResponseReader {
    /// A reader enforcing `limits` (usually [`Limits::client`]).
    pub fn new(limits: Limits) -> Self {
        Self {
            core: Core::new(limits, false),
            expected: Method::Get,
        }
    }

    /// The limits this reader enforces.
    pub fn limits(&self) -> &Limits {
        &self.core.limits
    }

    /// Which request the next response answers, set before its first byte is read: the
    /// answer to HEAD has no body, a 2xx to CONNECT ends HTTP framing (RFC 9112 §6.3 items 1
    /// and 2). Applies until a final (non-1xx) response completes, then reverts to GET.
    pub fn expect(&mut self, method: Method) {
        self.expected = method;
    }

    /// Parses the next response from `buf.data()`, first releasing (consuming from `buf`) the
    /// bytes of the response the previous call returned.
    ///
    /// `NeedMore`: read more bytes into `buf` (reserve space when `buf.spare()` is empty; the
    /// limits bound how far a message can make it grow). Parsing resumes where it stopped.
    /// 1xx responses other than 101 come back as complete bodyless responses: read again for
    /// the final one. A 101, or a 2xx to CONNECT, ends HTTP framing: the bytes after its head
    /// belong to the next protocol and are not consumed until the next call.
    pub fn read<'b>(&'b mut self, buf: &'b mut ReadBuf) -> Result<Parsed<Response<'b>>, HttpError> {
        let expected = self.expected;
        let complete = self.core.read(buf, ResponseHead { expected })?;
        Ok(if complete {
            self.finish();
            Parsed::Complete(Response {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            Parsed::NeedMore
        })
    }

    /// Like [`read`](Self::read), but completes at the end of the head, whatever the status,
    /// and leaves what follows it in `buf` (reached with [`Response::head_len`]): for a
    /// client that needs the status before the body is complete, such as a WebSocket client
    /// reading the answer to its upgrade (a 101, or a refusal whose body may never end). The
    /// head is checked as `read` checks it; [`Response::body`] is empty. Use either this or
    /// `read` for a message.
    pub fn read_head<'b>(
        &'b mut self,
        buf: &'b mut ReadBuf,
    ) -> Result<Parsed<Response<'b>>, HttpError> {
        let expected = self.expected;
        self.core.head_only = true;
        let complete = self.core.read(buf, ResponseHead { expected });
        self.core.head_only = false;
        Ok(if complete? {
            self.finish();
            Parsed::Complete(Response {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            Parsed::NeedMore
        })
    }

    /// The spare space of `buf` to read the next response bytes into, grown (doubled, at
    /// least 4 KiB) when less than 512 bytes are left. The limits bound the growth: a head or
    /// body over its limit fails in [`read`](Self::read) before the buffer would pass it.
    pub fn read_space(buf: &mut ReadBuf) -> &mut [u8] {
        if buf.spare().len() < 512 {
            buf.reserve(buf.capacity().max(4096));
        }
        buf.spare()
    }

    /// The peer closed the connection: completes a read-until-close body. `Ok(None)` when no
    /// response had begun; [`HttpError::IncompleteHead`] or [`HttpError::IncompleteBody`]
    /// when one was cut short (RFC 9112 §8). A response already complete in `buf` is returned
    /// as [`read`](Self::read) would.
    pub fn read_eof<'b>(
        &'b mut self,
        buf: &'b mut ReadBuf,
    ) -> Result<Option<Response<'b>>, HttpError> {
        let expected = self.expected;
        let complete = self.core.read_eof(buf, ResponseHead { expected })?;
        Ok(if complete {
            self.finish();
            Some(Response {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            None
        })
    }

    /// Releases the response the last [`read`](Self::read) returned without parsing
    /// further: `buf` then starts with whatever followed it. A client calls this before
    /// reusing a connection, to see whether the server sent anything it did not announce.
    pub fn release(&mut self, buf: &mut ReadBuf) {
        self.core.release(buf);
    }

    /// The response the last [`read`](Self::read) or [`read_eof`](Self::read_eof) returned,
    /// again, until it is released: for a caller that looped on `read` (skipping 1xx) and
    /// returns the final response from another function.
    pub fn last<'b>(&'b self, buf: &'b ReadBuf) -> Option<Response<'b>> {
        self.core.holds_complete().then(|| Response {
            data: buf.data(),
            core: &self.core,
        })
    }

    /// True between the first byte of a response seen by `read` and its completion.
    pub fn in_progress(&self) -> bool {
        self.core.in_progress()
    }

    /// Forgets any partial response, a pending release and a past error (after an error or a
    /// reconnect). Does not touch the buffer: clear it too when the connection changes.
    pub fn reset(&mut self) {
        self.core.reset();
        self.expected = Method::Get;
    }

    /// Addresses of the reused storage, for the test that proves it stays put.
    #[cfg(test)]
    pub(crate) fn storage(&self) -> [usize; 3] {
        self.core.storage()
    }

    /// A final response answers the expected request; the next one answers a GET unless told.
    fn finish(&mut self) {
        let status = StatusCode(self.core.start.status);
        if !status.is_informational() || status == StatusCode::SWITCHING_PROTOCOLS {
            self.expected = Method::Get;
        }
    }
}

/// A complete response, borrowed from the reader and its buffer.
#[derive(Clone, Copy)]
pub struct Response<'a> {
    data: &'a [u8],
    core: &'a Core,
}

impl<'a> Response<'a> {
    /// HTTP/1.0 or HTTP/1.1.
    pub fn version(&self) -> Version {
        self.core.version
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        StatusCode(self.core.start.status)
    }

    /// The reason phrase as sent (`""` when absent or not UTF-8).
    pub fn reason(&self) -> &'a str {
        let (start, end) = self.core.start.reason;
        core::str::from_utf8(self.data.get(start..end).unwrap_or_default()).unwrap_or_default()
    }

    /// The header fields.
    pub fn headers(&self) -> Headers<'a> {
        Headers::new(self.data, &self.core.fields)
    }

    /// The whole body, de-chunked. Empty for HEAD answers, 1xx, 204, 304, 101 and 2xx to
    /// CONNECT. With a transfer coding besides chunked, still coded by it.
    pub fn body(&self) -> &'a [u8] {
        let (start, end) = self.core.body_range;
        self.data.get(start..end).unwrap_or_default()
    }

    /// The trailer fields of a chunked body; empty otherwise.
    pub fn trailers(&self) -> Headers<'a> {
        Headers::new(self.data, &self.core.trailers)
    }

    /// Whether the connection may carry another request after this response (RFC 9112 §9.3):
    /// HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `Connection: keep-alive`; never
    /// after a read-until-close body, Transfer-Encoding with Content-Length, 101 or a CONNECT
    /// tunnel.
    pub fn keep_alive(&self) -> bool {
        self.core.keep_alive
    }

    /// Whether the body was sent chunked.
    pub fn is_chunked(&self) -> bool {
        self.core.body == Body::Chunked
    }

    /// Bytes of the head on the wire, blank line included.
    pub fn head_len(&self) -> usize {
        self.core.head_len
    }
}

impl fmt::Debug for Response<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response")
            .field("version", &self.version())
            .field("status", &self.status())
            .field("reason", &self.reason())
            .field("headers", &self.headers())
            .field("body_len", &self.body().len())
            .field("trailers", &self.trailers())
            .field("keep_alive", &self.keep_alive())
            .finish()
    }
}

/// The response rules for [`Core::read`]: the request it answers decides some framing.
#[derive(Clone, Copy)]
struct ResponseHead {
    expected: Method,
}

impl Head for ResponseHead {
    fn parse(self, core: &mut Core, bytes: &[u8]) -> Result<Option<usize>, httparse::Error> {
        core.with_header_storage(bytes, |core, bytes, storage| {
            let mut response = httparse::Response::new(&mut []);
            let result = httparse::ParserConfig::default()
                .allow_obsolete_multiline_headers_in_responses(true)
                .parse_response_with_uninit_headers(&mut response, bytes, storage);
            match result {
                Ok(httparse::Status::Complete(len)) => {
                    Core::record_fields(&mut core.fields, &mut core.named, bytes, response.headers);
                    core.version = if response.version == Some(0) {
                        Version::Http10
                    } else {
                        Version::Http11
                    };
                    core.start.status = response.code.unwrap_or_default();
                    core.start.reason =
                        super::offset_in(bytes, response.reason.unwrap_or("").as_bytes());
                    Ok(Some(len))
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(error) => Err(error),
            }
        })
    }

    fn frame(self, core: &mut Core, data: &mut [u8]) -> Result<(), HttpError> {
        frame(core, data, self.expected)
    }
}

/// Decides the framing of the parsed response head `data[..core.head_len]`.
fn frame(core: &mut Core, data: &mut [u8], expected: Method) -> Result<(), HttpError> {
    core.unfold_values(data);
    let status = StatusCode(core.start.status);
    if status.0 < 100 {
        return Err(HttpError::InvalidHead("status code below 100"));
    }
    let headers = Headers::new(data, &core.fields);
    let persistent = core.persistent(&headers);
    let (body, keep_alive) = if status == StatusCode::SWITCHING_PROTOCOLS
        || (expected == Method::Connect && status.is_success())
    {
        // RFC 9112 §6.3 item 2: the connection becomes a tunnel after the head.
        (Body::Empty, false)
    } else if status.is_informational() {
        (Body::Empty, true)
    } else if expected == Method::Head
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        // RFC 9112 §6.3 item 1.
        (Body::Empty, persistent)
    } else if core.named.transfer_encoding {
        let with_length = headers.get("content-length").is_some();
        // RFC 9112 §6.3 item 3: Transfer-Encoding overrides Content-Length, and the connection
        // must close after such a response.
        if chunked_last(&headers)? {
            (Body::Chunked, persistent && !with_length)
        } else {
            // §6.3 item 4: chunked is not final, so the body runs until close.
            (Body::UntilClose, false)
        }
    } else if let Some(length) = core.content_length(&headers)? {
        let too_large = HttpError::BodyTooLarge {
            limit: core.limits.max_body_bytes,
        };
        if length > core.limits.max_body_bytes {
            return Err(too_large);
        }
        (
            Body::Length(usize::try_from(length).map_err(|_| too_large)?),
            persistent,
        )
    } else {
        // §6.3 item 8: no framing, the body is everything until close.
        (Body::UntilClose, false)
    };
    core.body = body;
    core.keep_alive = keep_alive;
    Ok(())
}

/// Whether the final transfer coding is chunked. Chunked applied twice is an error in either
/// direction (RFC 9112 §6.1: a sender must not apply chunked more than once).
fn chunked_last(headers: &Headers<'_>) -> Result<bool, HttpError> {
    let mut chunked_seen = false;
    let mut last_chunked = false;
    for coding in transfer_codings(headers) {
        last_chunked = coding.eq_ignore_ascii_case(b"chunked");
        if last_chunked {
            if chunked_seen {
                return Err(HttpError::ChunkedNotLast);
            }
            chunked_seen = true;
        }
    }
    if chunked_seen && !last_chunked {
        // Chunked then another coding: the body is not delimited by chunked framing.
        return Ok(false);
    }
    Ok(last_chunked)
}
