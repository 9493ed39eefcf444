//! The rules of one request/response exchange on a [`ClientSession`]'s connection, without
//! I/O: what each outcome of writing the request and of reading its response means.
//!
//! This module owns the meaning of those outcomes: a write that failed because the server
//! closed (read its answer first), an interim 1xx response (skip it), end of stream (a
//! response delimited by the close is complete; otherwise the exchange failed, before or
//! after a byte of a response arrived), a read error. It does not own the socket, the
//! timeouts or the response parser ([`ResponseReader`](super::ResponseReader)): the transport
//! performs each write and read, parses with the reader, and reports here.
//!
//! One exchange, as every transport drives it:
//!
//! 1. [`ClientSession::request_started`], then write the request and hand the write's
//!    result to [`request_written`](ClientSession::request_written): an error is the
//!    exchange's, unless the server closed (it may have answered first: the response is read
//!    anyway, and the write error kept for when none is there). It gives the
//!    [`AwaitResponse`] of the exchange.
//! 2. In turn: [`AwaitResponse::parse`] on what the read buffer holds (true: the final
//!    response is complete), and one read into `ResponseReader::read_space`, whose result
//!    goes to [`AwaitResponse::read_returned`].
//! 3. On [`ReadOutcome::ClosedBeforeResponse`], [`ClientSession::may_resend`] says whether
//!    the request may go once more on a new connection. A new connection has carried no
//!    exchange, so a second close before any response byte is never resent again.
//!
//! The steps underneath ([`write_failed`](ClientSession::write_failed),
//! [`parse_response`](ClientSession::parse_response),
//! [`read_returned`](ClientSession::read_returned)) stay public for a transport that keeps
//! the write error itself.
//!
//! The clock is read only when a response completes (`now` is called once per completed response).

use std::io::{self, ErrorKind};
use std::time::Instant;

use super::session::{ClientSession, Failure};
use super::{HttpError, Method, Parsed, ResponseReader, StatusCode};
use crate::buf::ReadBuf;

/// The response side of one exchange, from [`ClientSession::request_written`] until the
/// final response is complete or the exchange failed: it keeps the write error a close by
/// the server left (reported only when no response is there) and whether the read buffer
/// may hold a response already. Holds no buffer; one per attempt, never allocates.
#[derive(Debug)]
#[must_use = "the response is read through it"]
pub struct AwaitResponse {
    method: Method,
    /// Writing the request failed because the server closed: reported when no response is
    /// there, since it says more than what followed it.
    write_error: Option<io::Error>,
    /// Parse before the next read: false while the buffer is known to hold nothing new.
    parse: bool,
}

/// What to do after writing the request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteVerdict {
    /// The server closed or reset the connection: it may have answered first and stopped
    /// reading (a 413 while a large body was still being sent, a 401 before the body). Read
    /// its response; report the write error only when none is there.
    ReadResponse,
    /// Anything else (a timeout): the exchange failed with the write error.
    Failed,
}

/// What a parsed response head is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Head {
    /// An interim 1xx other than 101 (100 Continue, 103 Early Hints, RFC 9110 §15.2): skip
    /// it, expect the same method again and read the final response that follows.
    Interim,
    /// The final response is complete.
    Final,
}

/// What one read of response bytes means for the exchange
/// ([`ClientSession::read_returned`]).
#[derive(Debug)]
pub enum ReadOutcome {
    /// Bytes arrived (or the read was interrupted): parse, then read on.
    Continue,
    /// A response delimited by the end of the stream (RFC 9112 §6.3 rule 8) is complete;
    /// the connection ends with it.
    Complete,
    /// The server closed or reset the connection before any byte of a response: report the
    /// error (the write's, when writing failed; else this read's; else no response) unless
    /// [`ClientSession::may_resend`] allows a resend.
    ClosedBeforeResponse(Option<io::Error>),
    /// The exchange failed: report the error (the write's, when writing failed; else this
    /// read's; else no response, a close in the middle of one).
    Failed(Option<io::Error>),
}

impl ClientSession {
    /// The request of the exchange [`request_started`](Self::request_started) began was
    /// written with result `written`: its response is awaited with `reader` (which now
    /// expects `method`) in `rbuf`. `Err` with the write's error when the exchange failed;
    /// a close by the server is no failure yet (see [`WriteVerdict::ReadResponse`]).
    pub fn request_written(
        &mut self,
        reader: &mut ResponseReader,
        rbuf: &ReadBuf,
        method: Method,
        written: io::Result<()>,
    ) -> Result<AwaitResponse, io::Error> {
        let write_error = match written {
            Ok(()) => None,
            Err(e) if self.write_failed(e.kind()) == WriteVerdict::Failed => return Err(e),
            Err(e) => Some(e),
        };
        reader.expect(method);
        Ok(AwaitResponse {
            method,
            write_error,
            // The previous response was released before this request was written, so an
            // empty buffer holds nothing to parse yet: the first step is a read. Parsing
            // nothing cost about 170 instructions per request (`tickwire-bench http
            // --callgrind`, client-side table).
            parse: !rbuf.is_empty(),
        })
    }

    /// Writing the request failed with an error of `kind`: whether to read the response
    /// anyway. Call between [`request_started`](Self::request_started) and the first read.
    pub fn write_failed(&mut self, kind: ErrorKind) -> WriteVerdict {
        if Failure::is_close(kind) {
            self.write_failed = true;
            WriteVerdict::ReadResponse
        } else {
            WriteVerdict::Failed
        }
    }

    /// Parses what `rbuf` holds with `reader` (which expects `method`), skipping interim
    /// responses: true when the final response is complete (`reader.last(rbuf)` is it), at
    /// `now()`; false when more bytes are needed. A parse error fails the exchange.
    pub fn parse_response(
        &mut self,
        reader: &mut ResponseReader,
        rbuf: &mut ReadBuf,
        method: Method,
        now: impl Fn() -> Instant,
    ) -> Result<bool, HttpError> {
        loop {
            let Parsed::Complete(response) = reader.read(rbuf)? else {
                return Ok(false);
            };
            let (status, keep_alive) = (response.status(), response.keep_alive());
            match self.response_parsed(status, keep_alive, &now) {
                Head::Final => return Ok(true),
                Head::Interim => reader.expect(method),
            }
        }
    }

    /// A read into `ResponseReader::read_space(rbuf)` returned `read`: the bytes are added to
    /// `rbuf`; end of stream completes a response delimited by the close (at `now()`) or
    /// fails the exchange, before or after a byte of a response arrived.
    pub fn read_returned(
        &mut self,
        reader: &mut ResponseReader,
        rbuf: &mut ReadBuf,
        read: io::Result<usize>,
        now: impl Fn() -> Instant,
    ) -> Result<ReadOutcome, HttpError> {
        Ok(match read {
            Ok(0) => {
                let delimited = reader.read_eof(rbuf)?.is_some();
                self.end_of_stream(delimited, now)
            }
            Ok(n) => {
                self.received_any = true;
                rbuf.filled(n);
                ReadOutcome::Continue
            }
            Err(e) => self.read_failed(e),
        })
    }

    /// A response head with `status` completed; `keep_alive` is the response's own. A final
    /// response after a failed write never leaves the connection reusable: the server
    /// stopped reading the request.
    fn response_parsed(
        &mut self,
        status: StatusCode,
        keep_alive: bool,
        now: impl Fn() -> Instant,
    ) -> Head {
        if status.is_informational() && status != StatusCode::SWITCHING_PROTOCOLS {
            return Head::Interim;
        }
        self.response_complete(keep_alive && !self.write_failed, now());
        Head::Final
    }

    fn end_of_stream(&mut self, delimited: bool, now: impl Fn() -> Instant) -> ReadOutcome {
        if delimited {
            self.response_complete(false, now());
            ReadOutcome::Complete
        } else if self.received_any {
            ReadOutcome::Failed(None)
        } else {
            ReadOutcome::ClosedBeforeResponse(None)
        }
    }

    fn read_failed(&self, error: io::Error) -> ReadOutcome {
        if error.kind() == ErrorKind::Interrupted {
            ReadOutcome::Continue
        } else if !self.received_any && Failure::is_close(error.kind()) {
            ReadOutcome::ClosedBeforeResponse(Some(error))
        } else {
            ReadOutcome::Failed(Some(error))
        }
    }
}

impl AwaitResponse {
    /// Parses what `rbuf` holds (see [`ClientSession::parse_response`]): true when the final
    /// response is complete, at `now()`; false when a read comes next.
    pub fn parse(
        &mut self,
        session: &mut ClientSession,
        reader: &mut ResponseReader,
        rbuf: &mut ReadBuf,
        now: impl Fn() -> Instant,
    ) -> Result<bool, HttpError> {
        let parse = std::mem::replace(&mut self.parse, true);
        Ok(parse && session.parse_response(reader, rbuf, self.method, now)?)
    }

    /// A read into `ResponseReader::read_space(rbuf)` returned `read` (see
    /// [`ClientSession::read_returned`]). An error in
    /// [`ClosedBeforeResponse`](ReadOutcome::ClosedBeforeResponse) or
    /// [`Failed`](ReadOutcome::Failed) is the write's when writing failed, else this
    /// read's; `None`: no response (the transport's "no response" error).
    pub fn read_returned(
        &mut self,
        session: &mut ClientSession,
        reader: &mut ResponseReader,
        rbuf: &mut ReadBuf,
        read: io::Result<usize>,
        now: impl Fn() -> Instant,
    ) -> Result<ReadOutcome, HttpError> {
        Ok(match session.read_returned(reader, rbuf, read, now)? {
            ReadOutcome::ClosedBeforeResponse(error) => {
                ReadOutcome::ClosedBeforeResponse(self.write_error.take().or(error))
            }
            ReadOutcome::Failed(error) => ReadOutcome::Failed(self.write_error.take().or(error)),
            outcome => outcome,
        })
    }
}
