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
//! 1. [`ClientSession::request_started`], then write the request. On an error of kind `k`:
//!    [`write_failed(k)`](ClientSession::write_failed) says whether to read what the server
//!    sent anyway (keep the write error: it is reported when no response is there).
//! 2. `reader.expect(method)`, then in turn: [`parse_response`](ClientSession::parse_response)
//!    on what the read buffer holds (true: the final response is complete), and one read
//!    into `ResponseReader::read_space`, whose result goes to
//!    [`read_returned`](ClientSession::read_returned).
//! 3. On [`ReadOutcome::ClosedBeforeResponse`], [`ClientSession::may_resend`] says whether
//!    the request may go once more on a new connection. A new connection has carried no
//!    exchange, so a second close before any response byte is never resent again.
//!
//! The clock is read only when a response completes (`now` is called once per completed response).

use std::io::{self, ErrorKind};
use std::time::Instant;

use super::session::{ClientSession, Failure};
use super::{HttpError, Method, Parsed, ResponseReader, StatusCode};
use crate::buf::ReadBuf;

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
