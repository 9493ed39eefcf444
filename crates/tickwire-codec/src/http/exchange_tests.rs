//! Each exchange decision of [`ClientSession`] once, on a virtual clock, with a real
//! [`ResponseReader`] and read buffer and no socket: what the transports' smoke suites then
//! only confirm over TCP.

use std::io::{self, ErrorKind};
use std::time::{Duration, Instant};

use super::{AwaitResponse, StatusCode, WriteVerdict};
use super::{ClientSession, Failure, Limits, Method, ReadOutcome, ResponseReader, Reuse, Sending};
use crate::buf::ReadBuf;

/// A virtual clock: only differences matter.
fn at(ms: u64) -> Instant {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    *BASE.get_or_init(Instant::now) + Duration::from_millis(ms)
}

/// One connection as a transport holds it, with the socket replaced by the test.
struct Conn {
    session: ClientSession,
    reader: ResponseReader,
    rbuf: ReadBuf,
}

impl Conn {
    /// A connection that carried one exchange (so it counts as reused), idle since 1 ms.
    fn reused() -> Self {
        let mut conn = Self {
            session: ClientSession::new(),
            reader: ResponseReader::new(Limits::client()),
            rbuf: ReadBuf::with_capacity(1024),
        };
        conn.session.connected(at(0));
        conn.start(Method::Get);
        let outcome = conn.deliver(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        assert!(matches!(outcome, ReadOutcome::Continue));
        assert!(conn.parse(Method::Get, 1));
        conn.reader.release(&mut conn.rbuf);
        conn
    }

    /// The transport closed the connection and opened a new one at `ms`.
    fn reconnect(&mut self, ms: u64) {
        self.session.closed();
        self.reader.reset();
        self.rbuf.clear();
        self.session.connected(at(ms));
    }

    fn start(&mut self, method: Method) {
        self.session.request_started();
        self.reader.expect(method);
    }

    /// The socket gave `bytes`.
    fn deliver(&mut self, bytes: &[u8]) -> ReadOutcome {
        let spare = ResponseReader::read_space(&mut self.rbuf);
        spare[..bytes.len()].copy_from_slice(bytes);
        self.read(Ok(bytes.len()))
    }

    fn read(&mut self, read: io::Result<usize>) -> ReadOutcome {
        let Self {
            session,
            reader,
            rbuf,
        } = self;
        session
            .read_returned(reader, rbuf, read, || at(50))
            .unwrap()
    }

    fn parse(&mut self, method: Method, now_ms: u64) -> bool {
        let Self {
            session,
            reader,
            rbuf,
        } = self;
        session
            .parse_response(reader, rbuf, method, || at(now_ms))
            .unwrap()
    }

    fn final_status(&self) -> StatusCode {
        self.reader.last(&self.rbuf).unwrap().status()
    }
}

fn closed_before_response(outcome: &ReadOutcome) -> bool {
    matches!(outcome, ReadOutcome::ClosedBeforeResponse(_))
}

#[test]
fn a_write_cut_by_the_server_reads_its_answer_and_never_reuses_the_connection() {
    let mut conn = Conn::reused();
    conn.start(Method::Post);
    let verdict = conn.session.write_failed(ErrorKind::BrokenPipe);
    assert_eq!(verdict, WriteVerdict::ReadResponse);
    conn.deliver(b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n");
    assert!(conn.parse(Method::Post, 2));
    assert_eq!(conn.final_status(), StatusCode::CONTENT_TOO_LARGE);
    assert!(!conn.session.is_reusable());
    assert_eq!(conn.session.before_request(at(3)), Reuse::Reconnect);
}

#[test]
fn a_write_that_timed_out_fails_the_exchange() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    for kind in [ErrorKind::TimedOut, ErrorKind::WouldBlock] {
        assert_eq!(conn.session.write_failed(kind), WriteVerdict::Failed);
    }
}

#[test]
fn interim_responses_are_skipped_and_the_final_one_returned() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n");
    assert!(!conn.parse(Method::Get, 2), "only interim responses so far");
    assert!(
        !conn.session.is_reusable(),
        "an interim response ends nothing"
    );
    conn.deliver(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    assert!(conn.parse(Method::Get, 3));
    assert_eq!(conn.final_status(), StatusCode::OK);
    assert!(conn.session.is_reusable());
    // Idle since the final response, not since the interim ones.
    assert_eq!(conn.session.before_request(at(502)), Reuse::Send);
    assert_eq!(conn.session.before_request(at(503)), Reuse::Probe);
}

#[test]
fn switching_protocols_is_a_final_response() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n");
    assert!(conn.parse(Method::Get, 2));
    assert_eq!(conn.final_status(), StatusCode::SWITCHING_PROTOCOLS);
}

#[test]
fn a_body_delimited_by_the_close_completes_at_end_of_stream() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 200 OK\r\n\r\nuntil the end");
    assert!(!conn.parse(Method::Get, 2));
    assert!(matches!(conn.read(Ok(0)), ReadOutcome::Complete));
    assert_eq!(
        conn.reader.last(&conn.rbuf).unwrap().body(),
        b"until the end"
    );
    assert!(
        !conn.session.is_reusable(),
        "the close ended the connection"
    );
}

#[test]
fn a_close_before_any_response_byte_is_told_apart_from_one_in_the_middle() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    assert!(closed_before_response(&conn.read(Ok(0))));
    let reset = Err(ErrorKind::ConnectionReset.into());
    assert!(closed_before_response(&conn.read(reset)));

    conn.reconnect(1);
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 200 OK\r\nContent-Le");
    assert!(!conn.parse(Method::Get, 2));
    let Conn {
        session,
        reader,
        rbuf,
    } = &mut conn;
    assert!(
        session
            .read_returned(reader, rbuf, Ok(0), || at(9))
            .is_err(),
        "truncated head"
    );
    let reset = Err(ErrorKind::ConnectionReset.into());
    assert!(matches!(conn.read(reset), ReadOutcome::Failed(Some(_))));
}

#[test]
fn an_interrupted_read_reads_again_a_timed_out_one_fails() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    let interrupted = Err(ErrorKind::Interrupted.into());
    assert!(matches!(conn.read(interrupted), ReadOutcome::Continue));
    let timed_out = Err(ErrorKind::TimedOut.into());
    assert!(
        matches!(conn.read(timed_out), ReadOutcome::Failed(Some(e)) if e.kind() == ErrorKind::TimedOut)
    );
}

#[test]
fn a_new_request_forgets_the_last_exchange() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    let _ = conn.session.write_failed(ErrorKind::BrokenPipe);
    conn.deliver(b"HTTP/1.1 2");
    conn.reconnect(10);
    conn.start(Method::Get);
    assert!(
        closed_before_response(&conn.read(Ok(0))),
        "no byte on this one yet"
    );
    conn.reconnect(11);
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 204 No Content\r\n\r\n");
    assert!(conn.parse(Method::Get, 12));
    assert!(
        conn.session.is_reusable(),
        "the old write error is forgotten"
    );
}

#[test]
fn an_idempotent_request_is_resent_once_a_post_or_patch_only_when_marked() {
    let idempotent = [
        Method::Get,
        Method::Head,
        Method::Put,
        Method::Delete,
        Method::Options,
    ];
    for method in idempotent {
        let mut conn = Conn::reused();
        conn.start(method);
        assert!(closed_before_response(&conn.read(Ok(0))));
        assert!(
            conn.session
                .may_resend(Sending::new(method), Failure::ClosedBeforeResponse)
        );
        // The transport reconnects and sends it again: the new connection has carried no
        // exchange, so a second close is final.
        conn.reconnect(3);
        conn.start(method);
        let reset = Err(ErrorKind::ConnectionReset.into());
        assert!(closed_before_response(&conn.read(reset)));
        assert!(
            !conn
                .session
                .may_resend(Sending::new(method), Failure::ClosedBeforeResponse)
        );
    }
    for method in [Method::Post, Method::Patch] {
        let mut conn = Conn::reused();
        conn.start(method);
        assert!(closed_before_response(&conn.read(Ok(0))));
        assert!(
            !conn
                .session
                .may_resend(Sending::new(method), Failure::ClosedBeforeResponse)
        );
        // Marked idempotent by the user (an order with a client order id): resent once.
        let marked = Sending::new(method).marked_idempotent();
        assert!(
            conn.session
                .may_resend(marked, Failure::ClosedBeforeResponse)
        );
    }
}

#[test]
fn a_request_that_got_part_of_its_response_is_never_resent() {
    let mut conn = Conn::reused();
    conn.start(Method::Get);
    conn.deliver(b"HTTP/1.1 200 OK\r\n");
    assert!(!conn.parse(Method::Get, 2));
    // A parse error, not ClosedBeforeResponse: the transport never asks `may_resend`.
    let Conn {
        session,
        reader,
        rbuf,
    } = &mut conn;
    assert!(
        session
            .read_returned(reader, rbuf, Ok(0), || at(9))
            .is_err()
    );
}

/// An exchange driven as the transports drive it, through [`AwaitResponse`].
impl Conn {
    fn written(&mut self, method: Method, written: io::Result<()>) -> io::Result<AwaitResponse> {
        self.session.request_started();
        let Self {
            session,
            reader,
            rbuf,
        } = self;
        session.request_written(reader, rbuf, method, written)
    }

    /// One turn: parse, and when that completes nothing, the socket gives `bytes`.
    fn turn(&mut self, response: &mut AwaitResponse, bytes: &[u8]) -> Option<ReadOutcome> {
        let Self {
            session,
            reader,
            rbuf,
        } = self;
        if response.parse(session, reader, rbuf, || at(20)).unwrap() {
            return None;
        }
        let spare = ResponseReader::read_space(rbuf);
        spare[..bytes.len()].copy_from_slice(bytes);
        let read = Ok(bytes.len());
        Some(
            response
                .read_returned(session, reader, rbuf, read, || at(20))
                .unwrap(),
        )
    }
}

#[test]
fn a_write_that_timed_out_fails_before_any_read() {
    let mut conn = Conn::reused();
    let written = conn.written(Method::Get, Err(ErrorKind::TimedOut.into()));
    assert_eq!(written.unwrap_err().kind(), ErrorKind::TimedOut);
}

#[test]
fn an_awaited_response_reads_first_and_completes_when_parsed() {
    let mut conn = Conn::reused();
    let mut response = conn.written(Method::Get, Ok(())).unwrap();
    // Nothing in the buffer: the first turn reads without parsing.
    let first = conn.turn(
        &mut response,
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
    );
    assert!(matches!(first, Some(ReadOutcome::Continue)));
    assert!(matches!(
        conn.turn(&mut response, b"ok"),
        Some(ReadOutcome::Continue)
    ));
    assert!(
        conn.turn(&mut response, b"").is_none(),
        "complete once parsed"
    );
    assert_eq!(conn.reader.last(&conn.rbuf).unwrap().body(), b"ok");
    assert!(conn.session.is_reusable());
}

#[test]
fn the_write_error_of_a_close_is_reported_when_no_response_came() {
    let mut conn = Conn::reused();
    let cut = io::Error::new(ErrorKind::BrokenPipe, "cut while writing");
    let mut response = conn.written(Method::Post, Err(cut)).unwrap();
    let outcome = conn.turn(&mut response, b"").unwrap();
    let ReadOutcome::ClosedBeforeResponse(Some(error)) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        error.to_string(),
        "cut while writing",
        "the write's error, not the read's"
    );
    assert!(
        !conn
            .session
            .may_resend(Sending::new(Method::Post), Failure::ClosedBeforeResponse)
    );
}

#[test]
fn a_response_after_a_cut_write_is_returned_and_ends_the_connection() {
    let mut conn = Conn::reused();
    let cut = Err(ErrorKind::ConnectionReset.into());
    let mut response = conn.written(Method::Post, cut).unwrap();
    let answer = b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n";
    assert!(matches!(
        conn.turn(&mut response, answer),
        Some(ReadOutcome::Continue)
    ));
    assert!(conn.turn(&mut response, b"").is_none());
    assert_eq!(conn.final_status(), StatusCode::CONTENT_TOO_LARGE);
    assert!(!conn.session.is_reusable());
}

#[test]
fn a_reset_in_the_middle_of_a_response_reports_the_write_error_first() {
    let mut conn = Conn::reused();
    let cut = io::Error::new(ErrorKind::BrokenPipe, "cut while writing");
    let mut response = conn.written(Method::Post, Err(cut)).unwrap();
    conn.turn(
        &mut response,
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab",
    );
    let Conn {
        session,
        reader,
        rbuf,
    } = &mut conn;
    let reset = Err(ErrorKind::ConnectionReset.into());
    let outcome = response.read_returned(session, reader, rbuf, reset, || at(30));
    let Ok(ReadOutcome::Failed(Some(error))) = outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(error.kind(), ErrorKind::BrokenPipe);
}
