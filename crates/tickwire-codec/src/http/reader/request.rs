//! The server side: reading requests (RFC 9112 §3, §6), strictly.
//!
//! Everything ambiguous is rejected, because a request that two parsers frame differently is
//! how request smuggling works: bare LF and obsolete folding in the head, Transfer-Encoding
//! with Content-Length, differing Content-Length values, any transfer coding but a single
//! final chunked, a missing or repeated Host.

use core::fmt;

use crate::buf::ReadBuf;

use super::super::error::HttpError;
use super::super::headers::Headers;
use super::super::limits::Limits;
use super::super::types::{Method, Version};
use super::{Body, Core, Head, Parsed, transfer_codings};

/// Reads the requests of one connection, one after another.
///
/// Each [`read`](Self::read) first releases the request the previous call returned, then
/// parses from the front of the buffer. Errors are terminal: answer with
/// [`HttpError::status`] and close; every later call returns the same error until
/// [`reset`](Self::reset).
#[derive(Debug)]
pub struct RequestReader {
    core: Core,
}

impl RequestReader {
    /// A reader enforcing `limits` (usually [`Limits::server`]).
    pub fn new(limits: Limits) -> Self {
        Self {
            core: Core::new(limits, true),
        }
    }

    /// The limits this reader enforces.
    pub fn limits(&self) -> &Limits {
        &self.core.limits
    }

    /// Parses the next request from `buf.data()`, first releasing (consuming from `buf`) the
    /// bytes of the request the previous call returned.
    ///
    /// `NeedMore`: read more bytes into `buf` (reserve space when `buf.spare()` is empty; the
    /// limits bound how far a message can make it grow). Parsing resumes where it stopped.
    pub fn read<'b>(&'b mut self, buf: &'b mut ReadBuf) -> Result<Parsed<Request<'b>>, HttpError> {
        Ok(if self.core.read(buf, RequestHead)? {
            Parsed::Complete(Request {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            Parsed::NeedMore
        })
    }

    /// Like [`read`](Self::read), but completes at the end of the head and leaves what follows
    /// it in `buf`: for a request that switches protocols (a WebSocket upgrade, RFC 9110
    /// §7.8), whose following bytes belong to the new protocol. The head is checked as
    /// `read` checks it, framing fields included (Transfer-Encoding with Content-Length, a
    /// Content-Length over [`Limits::max_body_bytes`] are errors); a body it announces is not
    /// read: [`Request::body`] is empty and [`Request::is_chunked`] / the `Content-Length`
    /// header tell the caller one was announced. Use either this or `read` for a message.
    pub fn read_head<'b>(
        &'b mut self,
        buf: &'b mut ReadBuf,
    ) -> Result<Parsed<Request<'b>>, HttpError> {
        self.core.head_only = true;
        let complete = self.core.read(buf, RequestHead);
        self.core.head_only = false;
        Ok(if complete? {
            Parsed::Complete(Request {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            Parsed::NeedMore
        })
    }

    /// Releases the request the last read returned without parsing further: `buf` then
    /// starts with whatever followed it (after [`read_head`](Self::read_head), the first
    /// bytes of the new protocol).
    pub fn release(&mut self, buf: &mut ReadBuf) {
        self.core.release(buf);
    }

    /// The peer closed the connection. `Ok(None)` when no request had begun;
    /// [`HttpError::IncompleteHead`] or [`HttpError::IncompleteBody`] when one was cut short
    /// (RFC 9112 §8). A request already complete in `buf` is returned as
    /// [`read`](Self::read) would.
    pub fn read_eof<'b>(
        &'b mut self,
        buf: &'b mut ReadBuf,
    ) -> Result<Option<Request<'b>>, HttpError> {
        Ok(if self.core.read_eof(buf, RequestHead)? {
            Some(Request {
                data: buf.data(),
                core: &self.core,
            })
        } else {
            None
        })
    }

    /// True between the first byte of a request seen by `read` and its completion.
    pub fn in_progress(&self) -> bool {
        self.core.in_progress()
    }

    /// Forgets any partial request, a pending release and a past error. Does not touch the
    /// buffer.
    pub fn reset(&mut self) {
        self.core.reset();
    }
}

/// A complete request, borrowed from the reader and its buffer.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    data: &'a [u8],
    core: &'a Core,
}

impl<'a> Request<'a> {
    /// The method token as sent (RFC 9110 §9.1, case-sensitive).
    pub fn method_token(&self) -> &'a str {
        self.text(self.core.start.method)
    }

    /// The method, when it is one of the standard ones.
    pub fn method(&self) -> Option<Method> {
        Method::from_token(self.method_token().as_bytes())
    }

    /// The request target as sent (RFC 9112 §3.2): origin form `/path?query`, absolute form,
    /// authority form (CONNECT) or `*`.
    pub fn target(&self) -> &'a str {
        self.text(self.core.start.target)
    }

    /// HTTP/1.0 or HTTP/1.1.
    pub fn version(&self) -> Version {
        self.core.version
    }

    /// The header fields.
    pub fn headers(&self) -> Headers<'a> {
        Headers::new(self.data, &self.core.fields)
    }

    /// The whole body, de-chunked; empty without Content-Length or Transfer-Encoding
    /// (RFC 9112 §6.3 item 7).
    pub fn body(&self) -> &'a [u8] {
        let (start, end) = self.core.body_range;
        self.data.get(start..end).unwrap_or_default()
    }

    /// The trailer fields of a chunked body; empty otherwise.
    pub fn trailers(&self) -> Headers<'a> {
        Headers::new(self.data, &self.core.trailers)
    }

    /// Whether the client intends to send another request on this connection (RFC 9112
    /// §9.3): HTTP/1.1 unless `Connection: close`, HTTP/1.0 only with `Connection:
    /// keep-alive`.
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

    fn text(&self, (start, end): (usize, usize)) -> &'a str {
        core::str::from_utf8(self.data.get(start..end).unwrap_or_default()).unwrap_or_default()
    }
}

impl fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Request")
            .field("method", &self.method_token())
            .field("target", &self.target())
            .field("version", &self.version())
            .field("headers", &self.headers())
            .field("body_len", &self.body().len())
            .field("trailers", &self.trailers())
            .field("keep_alive", &self.keep_alive())
            .finish()
    }
}

/// The request rules for [`Core::read`].
#[derive(Clone, Copy)]
struct RequestHead;

impl Head for RequestHead {
    fn parse(self, core: &mut Core, bytes: &[u8]) -> Result<Option<usize>, httparse::Error> {
        core.with_header_storage(bytes, |core, bytes, storage| {
            let mut request = httparse::Request::new(&mut []);
            let result = httparse::ParserConfig::default().parse_request_with_uninit_headers(
                &mut request,
                bytes,
                storage,
            );
            match result {
                Ok(httparse::Status::Complete(len)) => {
                    Core::record_fields(&mut core.fields, &mut core.named, bytes, request.headers);
                    core.version = if request.version == Some(0) {
                        Version::Http10
                    } else {
                        Version::Http11
                    };
                    core.start.method =
                        super::offset_in(bytes, request.method.unwrap_or("").as_bytes());
                    core.start.target =
                        super::offset_in(bytes, request.path.unwrap_or("").as_bytes());
                    Ok(Some(len))
                }
                Ok(httparse::Status::Partial) => Ok(None),
                Err(error) => Err(error),
            }
        })
    }

    /// Checks Host and decides the framing of the parsed request head.
    fn frame(self, core: &mut Core, data: &mut [u8]) -> Result<(), HttpError> {
        let headers = Headers::new(&data[..core.head_len], &core.fields);
        match core.named.host {
            0 if core.version == Version::Http11 => return Err(HttpError::MissingHost),
            0 | 1 => {}
            _ => return Err(HttpError::MultipleHost),
        }
        core.body = framing(core, &headers)?;
        core.keep_alive = core.persistent(&headers);
        Ok(())
    }
}

/// The body framing of a request (RFC 9112 §6.3 items 3-7), rejecting every ambiguity.
fn framing(core: &Core, headers: &Headers<'_>) -> Result<Body, HttpError> {
    let (version, max_body) = (core.version, core.limits.max_body_bytes);
    if core.named.transfer_encoding {
        if headers.get("content-length").is_some() {
            return Err(HttpError::TransferEncodingWithContentLength);
        }
        if version == Version::Http10 {
            return Err(HttpError::UnsupportedTransferEncoding);
        }
        let mut codings = transfer_codings(headers).peekable();
        let mut other = false;
        let mut chunked_last = false;
        while let Some(coding) = codings.next() {
            let chunked = coding.eq_ignore_ascii_case(b"chunked");
            if chunked && codings.peek().is_some() {
                // Chunked must be final and applied once (RFC 9112 §6.1).
                return Err(HttpError::ChunkedNotLast);
            }
            other |= !chunked;
            chunked_last = chunked;
        }
        if !chunked_last {
            return Err(HttpError::ChunkedNotLast);
        }
        if other {
            return Err(HttpError::UnsupportedTransferEncoding);
        }
        return Ok(Body::Chunked);
    }
    match core.content_length(headers)? {
        None | Some(0) => Ok(Body::Empty),
        Some(length) => {
            let too_large = HttpError::BodyTooLarge { limit: max_body };
            if length > max_body {
                return Err(too_large);
            }
            Ok(Body::Length(
                usize::try_from(length).map_err(|_| too_large)?,
            ))
        }
    }
}
