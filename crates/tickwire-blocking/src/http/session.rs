//! One connection's I/O: open, probe, write a request, read its response. The decisions (when
//! to reuse, when to probe, when a request may be resent, reading a response after a failed
//! write) are the codec's [`ClientSession`]; this module only carries them out.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::http::{
    ClientSession, Failure, IdleProbe, Method, Probe, ProbeStep, ReadOutcome, ResponseReader,
    Reuse, Sending,
};
use tickwire_codec::rest::Origin;

use super::HttpClientError;
use super::gunzip::Gunzip;
use super::response::ClientResponse;
use crate::stream::io_error;
use crate::{Blocking, MaybeTlsStream, Transport};
use tickwire_core::http::{Exchange, HttpSocketOptions};

/// The blocking client's side of an [`HttpClient`](super::HttpClient) (everything but the
/// request writer and its buffer): the connection, its read buffer and response reader, and
/// the codec's rules for it. The client dereferences to it, so its methods are the client's;
/// `send` on a [`ClientRequest`](super::ClientRequest) carries a request out through it.
#[derive(Debug)]
pub struct HttpConnection {
    pub(crate) origin: Origin,
    pub(crate) options: HttpSocketOptions,
    stream: Option<MaybeTlsStream>,
    rbuf: ReadBuf,
    reader: ResponseReader,
    rules: ClientSession,
    connections_opened: u64,
    pub(crate) gunzip: Option<Gunzip>,
    /// When the request being carried out must be complete (`None`: no deadline, or no
    /// request under way).
    deadline: Option<Instant>,
    /// The read timeout set on the socket now: the configured one, or shorter while the
    /// deadline is nearer than that. Compared before each read, so the socket option is only
    /// set when it has to change.
    applied_read_timeout: Option<Duration>,
    /// The same for the write timeout.
    applied_write_timeout: Option<Duration>,
}

impl Exchange for HttpConnection {
    type Marker = Blocking;
    type Sent<'c> = Result<ClientResponse<'c>, HttpClientError>;

    fn send<'c>(&'c mut self, wbuf: &'c mut WriteBuf, sending: Sending) -> Self::Sent<'c> {
        self.execute(wbuf, sending)
    }

    fn fail<'c>(&'c mut self, error: HttpClientError) -> Self::Sent<'c> {
        Err(error)
    }
}

/// How long one socket wait may take within a request.
#[derive(Debug, Clone, Copy)]
struct Wait {
    timeout: Option<Duration>,
    /// The request's deadline, not the per-call timeout, set `timeout`.
    by_deadline: bool,
}

/// Outcome of one attempt on one connection.
enum Attempt {
    /// A final response is complete in the reader.
    Done,
    /// The connection was closed by the server before any byte of the response: an
    /// idempotent request may be sent again on a fresh connection.
    ClosedBeforeResponse(HttpClientError),
}

impl HttpConnection {
    pub(crate) fn new(
        origin: Origin,
        options: HttpSocketOptions,
        reader: ResponseReader,
        read_buffer: usize,
        gunzip: Option<Gunzip>,
        probe_after: Duration,
    ) -> Self {
        Self {
            origin,
            options,
            stream: None,
            rbuf: ReadBuf::with_capacity(read_buffer),
            reader,
            rules: ClientSession::with_probe_after(probe_after),
            connections_opened: 0,
            gunzip,
            deadline: None,
            applied_read_timeout: None,
            applied_write_timeout: None,
        }
    }

    /// How many connections this client has opened: 1 after any number of requests that
    /// reused the first one.
    pub fn connections_opened(&self) -> u64 {
        self.connections_opened
    }

    /// True while a connection is open.
    pub fn is_connected(&self) -> bool {
        self.stream.is_some()
    }

    /// Opens the connection now instead of on the first request (a warm-up before the first
    /// order). Does nothing when a live one is open.
    pub fn connect(&mut self) -> Result<(), HttpClientError> {
        self.release_previous();
        self.deadline = None;
        self.ready(Instant::now())
    }

    /// Makes the connection ready for a request as the rules say: as it is, after a probe, or
    /// anew.
    fn ready(&mut self, now: Instant) -> Result<(), HttpClientError> {
        let mut next = self.rules.before_request(now);
        if next == Reuse::Probe {
            let probe = self.probe();
            next = self.rules.after_probe(probe);
        }
        if next == Reuse::Reconnect || self.stream.is_none() {
            self.disconnect();
            self.open()?;
        }
        Ok(())
    }

    /// Closes the connection; the next request opens a new one.
    pub fn disconnect(&mut self) {
        self.stream = None;
        self.reader.reset();
        self.rbuf.clear();
        self.rules.closed();
    }

    /// Sends the request queued in `wbuf` and reads its final response. `wbuf` is empty
    /// afterwards, whatever the outcome.
    pub(crate) fn execute(
        &mut self,
        wbuf: &mut WriteBuf,
        sending: Sending,
    ) -> Result<ClientResponse<'_>, HttpClientError> {
        let result = self.exchange(wbuf, sending);
        wbuf.clear();
        if let Err(e) = result {
            // A failed exchange leaves the connection in an unknown state: never reuse it.
            self.disconnect();
            return Err(e);
        }
        self.response()
    }

    fn exchange(&mut self, wbuf: &WriteBuf, sending: Sending) -> Result<(), HttpClientError> {
        self.release_previous();
        let now = Instant::now();
        self.deadline = self.options.request_deadline.map(|total| now + total);
        self.options.request_made(now);
        self.ready(now)?;
        let method = sending.method;
        match self.attempt(wbuf, method)? {
            Attempt::Done => Ok(()),
            Attempt::ClosedBeforeResponse(e) => {
                if !self
                    .rules
                    .may_resend(sending, Failure::ClosedBeforeResponse)
                    || !self.options.resend_allowed(Instant::now())
                {
                    return Err(e);
                }
                self.disconnect();
                self.open()?;
                match self.attempt(wbuf, method)? {
                    Attempt::Done => Ok(()),
                    Attempt::ClosedBeforeResponse(e) => Err(e),
                }
            }
        }
    }

    /// Releases the previous response's bytes; bytes after it that no request asked for
    /// leave the connection out of step, so it is dropped.
    fn release_previous(&mut self) {
        if self.stream.is_none() {
            return;
        }
        self.reader.release(&mut self.rbuf);
        if !self.rbuf.is_empty() {
            self.disconnect();
        }
    }

    fn open(&mut self) -> Result<(), HttpClientError> {
        let wait = self.wait(self.options.connect_timeout)?;
        let stream = crate::net::open(&self.options.route(&self.origin, wait.timeout))
            .map_err(|e| self.deadline_or(wait, e.into()))?;
        let mut stream = if self.origin.secure {
            let budget = self.options.tls_handshake_timeout();
            let wait = self.wait(Some(budget))?;
            let deadline = Instant::now() + wait.timeout.unwrap_or(budget);
            #[cfg(feature = "tls")]
            {
                let host = &self.origin.host;
                crate::net::tls_connect(stream, host, self.options.tls.as_ref(), deadline)
                    .map_err(|e| self.deadline_or(wait, e.into()))?
            }
            // The builder refuses `https://` without the `tls` feature.
            #[cfg(not(feature = "tls"))]
            {
                let _ = (stream, deadline, wait);
                return Err(HttpClientError::UnsupportedScheme("https".into()));
            }
        } else {
            stream
        };
        stream.set_read_timeout(self.options.read_timeout)?;
        stream.set_write_timeout(self.options.write_timeout)?;
        self.applied_read_timeout = self.options.read_timeout;
        self.applied_write_timeout = self.options.write_timeout;
        self.stream = Some(stream);
        self.connections_opened += 1;
        self.rules.connected(Instant::now());
        Ok(())
    }

    /// Checks an idle connection without blocking: has the server closed it or sent something
    /// unasked? One non-blocking `recv(MSG_PEEK)`, made only when the rules ask for it.
    fn probe(&mut self) -> Probe {
        let Some(stream) = self.stream.as_mut() else {
            return Probe::Closed;
        };
        let mut probe = IdleProbe::new(stream.is_tls());
        let mut step = probe.peeked(peek_idle(stream.tcp()));
        loop {
            step = match step {
                ProbeStep::Done(probe) => return probe,
                ProbeStep::Peek => probe.peeked(peek_idle(stream.tcp())),
                ProbeStep::ReadTls => probe.tls_read(read_now(stream, &mut self.rbuf)),
            };
        }
    }

    /// Writes the request and reads until a final (non-1xx) response is complete.
    fn attempt(&mut self, wbuf: &WriteBuf, method: Method) -> Result<Attempt, HttpClientError> {
        let write_wait = self.wait(self.options.write_timeout)?;
        let Some(stream) = self.stream.as_mut() else {
            return Err(HttpClientError::Io(ErrorKind::NotConnected.into()));
        };
        if write_wait.timeout != self.applied_write_timeout {
            stream.set_write_timeout(write_wait.timeout)?;
            self.applied_write_timeout = write_wait.timeout;
        }
        self.rules.request_started();
        let written = (stream.write_all(wbuf.as_slice())).and_then(|()| stream.flush());
        let (rules, reader) = (&mut self.rules, &mut self.reader);
        let mut response = match rules.request_written(reader, &self.rbuf, method, written) {
            Ok(response) => response,
            Err(e) => {
                let e = io_error(stream, e).into();
                return Err(self.deadline_or(write_wait, e));
            }
        };
        loop {
            let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
            if response.parse(rules, reader, rbuf, Instant::now)? {
                return Ok(Attempt::Done);
            }
            let wait = self.wait(self.options.read_timeout)?;
            let Some(stream) = self.stream.as_mut() else {
                return Err(HttpClientError::Io(ErrorKind::NotConnected.into()));
            };
            if wait.timeout != self.applied_read_timeout {
                stream.set_read_timeout(wait.timeout)?;
                self.applied_read_timeout = wait.timeout;
            }
            let read = stream.read(ResponseReader::read_space(&mut self.rbuf));
            let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
            let outcome = response.read_returned(rules, reader, rbuf, read, Instant::now)?;
            let (closed, error) = match outcome {
                ReadOutcome::Continue => continue,
                ReadOutcome::Complete => return Ok(Attempt::Done),
                ReadOutcome::ClosedBeforeResponse(error) => (true, error),
                ReadOutcome::Failed(error) => (false, error),
            };
            let error = error.map_or(HttpClientError::NoResponse, |e| io_error(stream, e).into());
            return if closed {
                Ok(Attempt::ClosedBeforeResponse(error))
            } else {
                Err(self.deadline_or(wait, error))
            };
        }
    }

    /// The longest the next socket wait may take: `per_call`, or the time left before the
    /// request's deadline when that is shorter. [`HttpClientError::DeadlineExceeded`] once
    /// the deadline has passed. Without a deadline, no clock is read.
    fn wait(&self, per_call: Option<Duration>) -> Result<Wait, HttpClientError> {
        let Some(deadline) = self.deadline else {
            return Ok(Wait {
                timeout: per_call,
                by_deadline: false,
            });
        };
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.deadline_exceeded());
        }
        Ok(match per_call {
            Some(per_call) if per_call <= left => Wait {
                timeout: Some(per_call),
                by_deadline: false,
            },
            _ => Wait {
                timeout: Some(left),
                by_deadline: true,
            },
        })
    }

    /// `error`, or [`HttpClientError::DeadlineExceeded`] when it is the expiry of a wait the
    /// deadline had shortened.
    fn deadline_or(&self, wait: Wait, error: HttpClientError) -> HttpClientError {
        if wait.by_deadline && error.is_timeout() {
            self.deadline_exceeded()
        } else {
            error
        }
    }

    fn deadline_exceeded(&self) -> HttpClientError {
        HttpClientError::DeadlineExceeded {
            deadline: self.options.request_deadline.unwrap_or_default(),
        }
    }

    /// The final response the last [`attempt`](Self::attempt) completed.
    fn response(&mut self) -> Result<ClientResponse<'_>, HttpClientError> {
        let Self {
            reader,
            rbuf,
            gunzip,
            ..
        } = self;
        let Some(response) = reader.last(rbuf) else {
            return Err(HttpClientError::NoResponse);
        };
        ClientResponse::new(response, gunzip.as_mut())
    }
}

/// One non-blocking `recv(MSG_PEEK)` of one byte.
#[cfg(unix)]
fn peek_idle(tcp: &std::net::TcpStream) -> std::io::Result<usize> {
    use std::mem::MaybeUninit;
    let mut byte = [MaybeUninit::<u8>::uninit(); 1];
    socket2::SockRef::from(tcp).recv_with_flags(&mut byte, libc::MSG_PEEK | libc::MSG_DONTWAIT)
}

/// One peek of one byte on the socket switched to non-blocking for it.
#[cfg(not(unix))]
fn peek_idle(tcp: &std::net::TcpStream) -> std::io::Result<usize> {
    let mut byte = [0u8; 1];
    tcp.set_nonblocking(true)?;
    let peeked = tcp.peek(&mut byte);
    tcp.set_nonblocking(false)?;
    peeked
}

/// One read through the stream's TLS layer that does not wait, into spare space of `rbuf`
/// (records with no plaintext, such as session tickets, are consumed). The socket is back in
/// blocking mode afterwards, or the read reports the error that kept it from being.
fn read_now(stream: &mut MaybeTlsStream, rbuf: &mut ReadBuf) -> std::io::Result<usize> {
    stream.tcp().set_nonblocking(true)?;
    let read = stream.read(ResponseReader::read_space(rbuf));
    stream.tcp().set_nonblocking(false)?;
    read
}
