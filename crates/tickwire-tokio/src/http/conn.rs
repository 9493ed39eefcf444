//! One pooled connection: its stream, its reused read buffer and response reader, its
//! [`ClientSession`] rules, and the I/O of one exchange on it. The pool decides which
//! connection a request gets; this file only carries an exchange out.

use std::io::{self, ErrorKind};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite};

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::http::{
    AwaitResponse, ClientSession, Failure, IdleProbe, Method, Probe, ProbeStep, ReadOutcome,
    Response, ResponseReader, Reuse, Sending,
};
#[cfg(feature = "deflate")]
use tickwire_codec::rest::GzipBody;
use tickwire_codec::rest::Origin;
use tickwire_core::http::{HttpClientError, HttpSocketOptions};

use super::alarm::Alarm;
use super::options::Options;
use crate::stream::MaybeTls;

/// Outcome of one attempt on one connection.
pub(crate) enum Attempt {
    /// A final response is complete in the reader.
    Done,
    /// The server closed the connection before any byte of the response: the rules say
    /// whether the request may be sent again on a new connection.
    ClosedBeforeResponse(HttpClientError),
}

/// An open connection and everything reused from one of its requests to the next.
#[derive(Debug)]
pub(crate) struct Conn {
    stream: MaybeTls,
    rbuf: ReadBuf,
    reader: ResponseReader,
    rules: ClientSession,
    #[cfg(feature = "deflate")]
    gzip: Option<GzipBody>,
    /// The body of the response now held was inflated into `gzip`.
    inflated: bool,
    /// The one timer of every wait on this connection (read and write timeouts, the request's
    /// deadline): the client's own timer thread, not tokio's (see `alarm`).
    alarm: Alarm,
}

impl Conn {
    /// Connects to `origin` (TCP, then TLS for `https://`), bounded by the connect timeout.
    pub(crate) async fn open(origin: &Origin, options: &Options) -> Result<Self, HttpClientError> {
        let alarm = Alarm::new().map_err(HttpClientError::Io)?;
        let socket = &options.socket;
        let stream = crate::net::open(&socket.route(origin, socket.connect_timeout)).await?;
        let stream = if origin.secure {
            #[cfg(feature = "tls")]
            {
                let deadline = tokio::time::Instant::now() + socket.tls_handshake_timeout();
                crate::net::tls_connect(stream, &origin.host, socket.tls.as_ref(), deadline).await?
            }
            // The builder refuses `https://` without the `tls` feature.
            #[cfg(not(feature = "tls"))]
            {
                drop(stream);
                return Err(HttpClientError::UnsupportedScheme("https".into()));
            }
        } else {
            stream
        };
        let mut rules = ClientSession::with_probe_after(options.probe_after);
        rules.connected(Instant::now());
        Ok(Self {
            stream,
            rbuf: ReadBuf::with_capacity(options.read_buffer),
            reader: ResponseReader::new(options.limits),
            rules,
            #[cfg(feature = "deflate")]
            gzip: options
                .gzip
                .then(|| GzipBody::new(options.limits.max_body_bytes)),
            inflated: false,
            alarm,
        })
    }

    /// Whether this idle connection may carry a request at `now`, as the rules say: as it is,
    /// or after a check that the server has not closed it (one non-blocking peek).
    pub(crate) fn ready(&mut self, now: Instant) -> bool {
        let mut next = self.rules.before_request(now);
        if next == Reuse::Probe {
            let probe = self.probe();
            next = self.rules.after_probe(probe);
        }
        next == Reuse::Send
    }

    /// Whether this connection, idle since `now - max_idle` or earlier, should be closed.
    pub(crate) fn idle_expired(&self, now: Instant, max_idle: Duration) -> bool {
        self.rules.idle_expired(now, max_idle)
    }

    /// Releases the response last read (its bytes leave the buffer) and says whether the
    /// connection may go back to the pool: the exchange completed, the response did not end
    /// the connection, and no byte arrived that no request asked for.
    pub(crate) fn release(&mut self) -> bool {
        self.reader.release(&mut self.rbuf);
        self.inflated = false;
        self.rbuf.is_empty() && self.rules.is_reusable()
    }

    /// Whether the request may be sent again, on a new connection, after `failure` on this
    /// one.
    pub(crate) fn may_resend(&self, sending: Sending, failure: Failure) -> bool {
        self.rules.may_resend(sending, failure)
    }

    /// Starts one attempt of the request: the rules record it as started (so a connection
    /// left by an attempt that does not finish is never reused), and the attempt's waits are
    /// bounded by their timeouts and by `deadline` (the request's; `None`: none). Drive it
    /// with [`poll_attempt`](Self::poll_attempt).
    pub(crate) fn start_attempt(
        &mut self,
        options: &HttpSocketOptions,
        deadline: Option<Instant>,
    ) -> AttemptIo {
        self.rules.request_started();
        AttemptIo {
            step: Step::Write { written: 0 },
            bound: Bound::new(options, deadline),
            wait: Wait::default(),
        }
    }

    /// Writes `request` and reads until a final (non-1xx) response is complete, each write
    /// and read bounded by its timeout, and all of it by the deadline `io` was started with.
    /// `Pending` when the socket (or the alarm) has to wait: `cx`'s task is woken, and the
    /// same `io` and `request` are passed again.
    pub(crate) fn poll_attempt(
        &mut self,
        io: &mut AttemptIo,
        cx: &mut Context<'_>,
        request: &[u8],
        method: Method,
        options: &HttpSocketOptions,
    ) -> Poll<Result<Attempt, HttpClientError>> {
        loop {
            match &mut io.step {
                Step::Write { written } => {
                    let done = poll_write_all(&mut self.stream, cx, request, written);
                    let written =
                        match io
                            .wait
                            .poll(&self.alarm, cx, &io.bound, options.write_timeout, done)
                        {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(written) => written?,
                        };
                    let (rules, reader) = (&mut self.rules, &mut self.reader);
                    let response = (rules.request_written(reader, &self.rbuf, method, written))
                        .map_err(|e| typed(&self.stream, e))?;
                    io.step = Step::Read {
                        response,
                        parsed: false,
                    };
                }
                Step::Read { response, parsed } => {
                    let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
                    if !*parsed && response.parse(rules, reader, rbuf, Instant::now)? {
                        return Poll::Ready(Ok(Attempt::Done));
                    }
                    // Parsed once per read: a read that waits is polled again without
                    // parsing the same bytes again.
                    *parsed = true;
                    let read = poll_read(&mut self.stream, cx, &mut self.rbuf);
                    let read =
                        match io
                            .wait
                            .poll(&self.alarm, cx, &io.bound, options.read_timeout, read)
                        {
                            Poll::Pending => return Poll::Pending,
                            Poll::Ready(read) => read?,
                        };
                    *parsed = false;
                    let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
                    let (closed, error) =
                        match response.read_returned(rules, reader, rbuf, read, Instant::now)? {
                            ReadOutcome::Continue => continue,
                            ReadOutcome::Complete => return Poll::Ready(Ok(Attempt::Done)),
                            ReadOutcome::ClosedBeforeResponse(error) => (true, error),
                            ReadOutcome::Failed(error) => (false, error),
                        };
                    let error =
                        error.map_or(HttpClientError::NoResponse, |e| typed(&self.stream, e));
                    return Poll::Ready(if closed {
                        Ok(Attempt::ClosedBeforeResponse(error))
                    } else {
                        Err(error)
                    });
                }
            }
        }
    }

    /// Inflates the completed response's body when it is gzip and the client asked for gzip.
    pub(crate) fn decode_body(&mut self) -> Result<(), HttpClientError> {
        #[cfg(feature = "deflate")]
        if let (Some(gzip), Some(response)) = (self.gzip.as_mut(), self.reader.last(&self.rbuf)) {
            self.inflated = gzip.decode(&response)?.is_some();
        }
        Ok(())
    }

    /// The response the last [`attempt`](Self::attempt) completed, until
    /// [`release`](Self::release).
    pub(crate) fn response(&self) -> Option<Response<'_>> {
        self.reader.last(&self.rbuf)
    }

    /// The body as the caller reads it: inflated when [`decode_body`](Self::decode_body)
    /// inflated it, else as sent.
    pub(crate) fn body(&self) -> Option<&[u8]> {
        #[cfg(feature = "deflate")]
        if self.inflated {
            return self.gzip.as_ref().map(GzipBody::inflated);
        }
        self.response().map(|response| response.body())
    }

    /// Whether [`body`](Self::body) is the inflated form of a gzip body.
    pub(crate) fn was_decompressed(&self) -> bool {
        self.inflated
    }

    /// Checks an idle connection without waiting, the codec's [`IdleProbe`] carried out: a
    /// `recv(MSG_PEEK)` on the non-blocking socket, a system call made whatever the runtime's
    /// readiness flags say (they lag until the runtime next polls its driver, and a close they
    /// have not seen yet is the case this check exists for), and over TLS a read through the
    /// TLS layer that never waits.
    fn probe(&mut self) -> Probe {
        let mut probe = IdleProbe::new(self.stream.is_tls());
        let mut step = probe.peeked(peek(self.stream.tcp()));
        loop {
            step = match step {
                ProbeStep::Done(probe) => return probe,
                ProbeStep::Peek => probe.peeked(peek(self.stream.tcp())),
                ProbeStep::ReadTls => probe.tls_read(self.read_now()),
            };
        }
    }

    /// One read through the TLS layer that never waits (a no-op waker: nothing is woken
    /// later), into spare space of the read buffer; `WouldBlock` when it would wait.
    fn read_now(&mut self) -> io::Result<usize> {
        let mut cx = Context::from_waker(Waker::noop());
        let spare = ResponseReader::read_space(&mut self.rbuf);
        let mut buf = tokio::io::ReadBuf::new(spare);
        match Pin::new(&mut self.stream).poll_read(&mut cx, &mut buf) {
            Poll::Ready(Ok(())) => Ok(buf.filled().len()),
            Poll::Ready(Err(e)) => Err(e),
            Poll::Pending => Err(ErrorKind::WouldBlock.into()),
        }
    }
}

/// A socket error as this client reports it: the stream's typed failure (a TLS error) when it
/// has one, else [`HttpClientError::Io`]. Never unpacked from the `io::Error`.
fn typed(stream: &MaybeTls, error: io::Error) -> HttpClientError {
    stream
        .failure()
        .map_or(HttpClientError::Io(error), HttpClientError::from)
}

/// One `recv(MSG_PEEK)` of one byte on the non-blocking socket, a system call made whatever
/// the runtime's readiness flags say.
fn peek(tcp: &tokio::net::TcpStream) -> io::Result<usize> {
    let mut byte = [std::mem::MaybeUninit::<u8>::uninit(); 1];
    socket2::SockRef::from(tcp).peek(&mut byte)
}

/// What bounds the waits of one request: each wait's own timeout, and the request's deadline.
#[derive(Debug, Clone, Copy)]
struct Bound {
    deadline: Option<Instant>,
    /// The configured total, for the error.
    total: Option<Duration>,
}

impl Bound {
    fn new(options: &HttpSocketOptions, deadline: Option<Instant>) -> Self {
        Self {
            deadline,
            total: options.request_deadline,
        }
    }
}

/// One attempt of a request on a connection, as [`Conn::poll_attempt`] drives it: where it
/// is, and what bounds its waits. Holds no buffer and never allocates.
#[derive(Debug)]
pub(crate) struct AttemptIo {
    step: Step,
    bound: Bound,
    wait: Wait,
}

#[derive(Debug)]
enum Step {
    /// Writing the request (then flushing it): `written` bytes of it are out.
    Write { written: usize },
    /// Reading the response; `parsed`: the buffer was parsed since the last read returned.
    Read {
        response: AwaitResponse,
        parsed: bool,
    },
}

/// The bound on one wait (the write of a request, one read of its response): the alarm is
/// armed only once the wait has had to wait, and disarmed when it is done.
#[derive(Debug, Default)]
struct Wait {
    /// The instant armed, once the wait has had to wait: `Some(None)` with no bound.
    at: Option<Option<Instant>>,
}

impl Wait {
    /// `io`'s poll, unless `timeout` (from the first time it was pending) or the request's
    /// deadline passes first: then an `io::Error` of kind `TimedOut` (inside `Ok`), or
    /// `DeadlineExceeded`. Ready ends this wait; the next starts afresh.
    fn poll<T>(
        &mut self,
        alarm: &Alarm,
        cx: &mut Context<'_>,
        bound: &Bound,
        timeout: Option<Duration>,
        io: Poll<io::Result<T>>,
    ) -> Poll<Result<io::Result<T>, HttpClientError>> {
        let expired = match (io, self.at) {
            (Poll::Ready(out), _) => {
                if self.at.take().flatten().is_some() {
                    alarm.disarm();
                }
                return Poll::Ready(Ok(out));
            }
            (Poll::Pending, Some(Some(at))) => match alarm.poll(cx) {
                Poll::Ready(()) => at,
                Poll::Pending => return Poll::Pending,
            },
            (Poll::Pending, Some(None)) => return Poll::Pending,
            (Poll::Pending, None) => {
                let now = Instant::now();
                let waited = timeout.map(|timeout| now + timeout);
                let at = match (waited, bound.deadline) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                self.at = Some(at);
                match at {
                    Some(at) if at <= now => at,
                    Some(at) => {
                        alarm.arm(at, cx);
                        return Poll::Pending;
                    }
                    None => return Poll::Pending,
                }
            }
        };
        self.at = None;
        // The earlier of the two passed: the deadline when it was the one set.
        Poll::Ready(
            if bound.deadline.is_some_and(|deadline| expired >= deadline) {
                Err(HttpClientError::DeadlineExceeded {
                    deadline: bound.total.unwrap_or_default(),
                })
            } else {
                Ok(Err(io::Error::new(
                    ErrorKind::TimedOut,
                    "HTTP read or write timed out",
                )))
            },
        )
    }
}

/// Writes what is left of `request` past `written`, then flushes: ready when all of it is
/// out, or with the first error (a write of 0 bytes is `WriteZero`).
fn poll_write_all(
    stream: &mut MaybeTls,
    cx: &mut Context<'_>,
    request: &[u8],
    written: &mut usize,
) -> Poll<io::Result<()>> {
    while *written < request.len() {
        match Pin::new(&mut *stream).poll_write(cx, &request[*written..]) {
            Poll::Ready(Ok(0)) => return Poll::Ready(Err(ErrorKind::WriteZero.into())),
            Poll::Ready(Ok(n)) => *written += n,
            Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            Poll::Pending => return Poll::Pending,
        }
    }
    Pin::new(stream).poll_flush(cx)
}

/// One read into the spare space of `rbuf` (`ResponseReader::read_space`).
fn poll_read(
    stream: &mut MaybeTls,
    cx: &mut Context<'_>,
    rbuf: &mut ReadBuf,
) -> Poll<io::Result<usize>> {
    let mut buf = tokio::io::ReadBuf::new(ResponseReader::read_space(rbuf));
    Pin::new(stream)
        .poll_read(cx, &mut buf)
        .map_ok(|()| buf.filled().len())
}
