//! One pooled connection: its stream, its reused read buffer and response reader, its
//! [`ClientSession`] rules, and the I/O of one exchange on it. The pool decides which
//! connection a request gets; this file only carries an exchange out.

use std::io::{self, ErrorKind};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::http::{
    ClientSession, Failure, IdleProbe, Method, Probe, ProbeStep, ReadOutcome, Response,
    ResponseReader, Reuse,
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
        let tcp = crate::net::tcp_connect(
            &origin.host,
            origin.port,
            socket.connect_timeout,
            socket.nodelay,
        )
        .await?;
        let stream = if origin.secure {
            #[cfg(feature = "tls")]
            {
                let deadline = tokio::time::Instant::now() + socket.tls_handshake_timeout();
                crate::net::tls_connect(tcp, &origin.host, socket.tls.as_ref(), deadline).await?
            }
            // The builder refuses `https://` without the `tls` feature.
            #[cfg(not(feature = "tls"))]
            {
                drop(tcp);
                return Err(HttpClientError::UnsupportedScheme("https".into()));
            }
        } else {
            MaybeTls::Plain(tcp)
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

    /// Whether `method` may be sent again, on a new connection, after `failure` on this one.
    pub(crate) fn may_resend(&self, method: Method, failure: Failure) -> bool {
        self.rules.may_resend(method, failure)
    }

    /// Writes `request` and reads until a final (non-1xx) response is complete, each write
    /// and read bounded by its timeout, and all of it by `deadline` (the request's; `None`:
    /// none).
    pub(crate) async fn attempt(
        &mut self,
        request: &[u8],
        method: Method,
        options: &HttpSocketOptions,
        deadline: Option<Instant>,
    ) -> Result<Attempt, HttpClientError> {
        self.rules.request_started();
        let bound = Bound::new(options, deadline);
        let stream = &mut self.stream;
        let written = bound
            .wait(&self.alarm, options.write_timeout, async {
                stream.write_all(request).await?;
                stream.flush().await
            })
            .await?;
        let (rules, reader) = (&mut self.rules, &mut self.reader);
        let mut response = (rules.request_written(reader, &self.rbuf, method, written))
            .map_err(|e| typed(&self.stream, e))?;
        loop {
            let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
            if response.parse(rules, reader, rbuf, Instant::now)? {
                return Ok(Attempt::Done);
            }
            let read = self.stream.read(ResponseReader::read_space(&mut self.rbuf));
            let read = bound.wait(&self.alarm, options.read_timeout, read).await?;
            let (rules, reader, rbuf) = (&mut self.rules, &mut self.reader, &mut self.rbuf);
            let (closed, error) =
                match response.read_returned(rules, reader, rbuf, read, Instant::now)? {
                    ReadOutcome::Continue => continue,
                    ReadOutcome::Complete => return Ok(Attempt::Done),
                    ReadOutcome::ClosedBeforeResponse(error) => (true, error),
                    ReadOutcome::Failed(error) => (false, error),
                };
            let error = error.map_or(HttpClientError::NoResponse, |e| typed(&self.stream, e));
            return if closed {
                Ok(Attempt::ClosedBeforeResponse(error))
            } else {
                Err(error)
            };
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
        let mut probe = IdleProbe::new(!matches!(self.stream, MaybeTls::Plain(_)));
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

    /// `io`, unless `timeout` (from now) or the request's deadline passes first: then an
    /// `io::Error` of kind `TimedOut` (inside `Ok`), or `DeadlineExceeded`. The alarm is only
    /// armed once `io` has to wait, and disarmed when it is done.
    async fn wait<T>(
        self,
        alarm: &Alarm,
        timeout: Option<Duration>,
        io: impl Future<Output = io::Result<T>>,
    ) -> Result<io::Result<T>, HttpClientError> {
        let mut io = std::pin::pin!(io);
        // The instant armed, once `io` has had to wait: `Some(None)` with no bound.
        let mut at = None;
        let expired = std::future::poll_fn(|cx| {
            if let Poll::Ready(out) = io.as_mut().poll(cx) {
                return Poll::Ready(Ok(out));
            }
            match at {
                Some(Some(at)) => alarm.poll(cx).map(|()| Err(at)),
                Some(None) => Poll::Pending,
                None => {
                    let now = Instant::now();
                    let waited = timeout.map(|timeout| now + timeout);
                    let bound = match (waited, self.deadline) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                    at = Some(bound);
                    match bound {
                        Some(bound) if bound <= now => Poll::Ready(Err(bound)),
                        Some(bound) => {
                            alarm.arm(bound, cx);
                            Poll::Pending
                        }
                        None => Poll::Pending,
                    }
                }
            }
        })
        .await;
        match expired {
            Ok(out) => {
                if at.flatten().is_some() {
                    alarm.disarm();
                }
                Ok(out)
            }
            // The earlier of the two passed: the deadline when it was the one set.
            Err(at) if self.deadline.is_some_and(|deadline| at >= deadline) => {
                Err(HttpClientError::DeadlineExceeded {
                    deadline: self.total.unwrap_or_default(),
                })
            }
            Err(_) => Ok(Err(io::Error::new(
                ErrorKind::TimedOut,
                "HTTP read or write timed out",
            ))),
        }
    }
}
