//! The client and server cores' decisions, on a simulated pair of sessions and a virtual
//! clock: what a response, a busy refusal, a pong, a deadline and a violation mean for which
//! request, and the rules of answering one request.

use std::time::{Duration, Instant};

use super::*;
use crate::mux::{self, ClientConfig, RequestId, ServerConfig};

/// A client end and a server end, bytes moved between them by [`deliver`].
struct Pair {
    now: Instant,
    client: (Session, ClientCore),
    server: (Session, ServerCore),
}

fn pair(request_timeout: Option<Duration>, server_cap: usize) -> Pair {
    let now = Instant::now();
    let server_config = ServerConfig::new().with_max_in_flight(server_cap);
    Pair {
        now,
        client: (
            Session::new(PacketConfig::client(), None, now),
            ClientCore::new(ClientConfig::new(), request_timeout),
        ),
        server: (
            Session::new(PacketConfig::server(), None, now),
            ServerCore::new(server_config),
        ),
    }
}

/// Moves everything `from` queued into `to`, as a socket would.
fn deliver(from: &mut Session, to: &mut Session) {
    let bytes = from.transmit().to_vec();
    from.wrote(bytes.len());
    to.spare()[..bytes.len()].copy_from_slice(&bytes);
    to.received(bytes.len());
}

/// The next arrival at `session`, as a transport hands it to its core.
fn next(session: &mut Session) -> Option<Incoming> {
    Incoming::from_event(session.poll_event().unwrap())
}

impl Pair {
    fn send(&mut self, payload: &[u8]) -> RequestId {
        let id = self.client.1.begin(self.now, payload.len()).unwrap();
        self.client.0.queue(id.0, payload).unwrap();
        deliver(&mut self.client.0, &mut self.server.0);
        id
    }

    /// The server's step on its next arrival; busy refusals are queued and delivered.
    fn serve_step(&mut self) -> Result<ServerStep, ServerFailure> {
        let incoming = next(&mut self.server.0).expect("a packet arrived");
        let step = self.server.1.handle(incoming);
        if let Ok(ServerStep::Reply(control)) = step {
            self.server.0.queue_control(control).unwrap();
            deliver(&mut self.server.0, &mut self.client.0);
        }
        step
    }

    /// The server answers `payload` to the request it just took.
    fn answer(&mut self, header: Header, payload: &[u8]) {
        let id = RequestId(header.request_id);
        let (_, writer, queued) = self.server.0.payload_and_writer(&header);
        let mut reply = Reply::new(id, writer, queued);
        reply.respond(payload).unwrap();
        assert_eq!(reply.finish(), Ok(id));
        self.server.1.answered(id).unwrap();
        deliver(&mut self.server.0, &mut self.client.0);
    }

    fn client_step(&mut self) -> Result<Option<Header>, ClientFailure> {
        let incoming = next(&mut self.client.0).expect("a packet arrived");
        self.client.1.handle(incoming, self.now)
    }
}

#[test]
fn a_response_completes_its_request_and_is_remembered_as_the_last() {
    let mut pair = pair(None, 8);
    let id = pair.send(b"order");
    let Ok(ServerStep::Request(request)) = pair.serve_step() else {
        panic!("the request is served");
    };
    assert_eq!(pair.server.1.in_flight(), 1);
    pair.answer(request, b"filled");
    let header = pair.client_step().unwrap().expect("the response");
    assert_eq!(RequestId(header.request_id), id);
    assert_eq!(pair.client.1.last(), Some(header));
    assert_eq!(pair.client.0.payload(&header), b"filled");
    assert_eq!(
        (pair.client.1.in_flight(), pair.server.1.in_flight()),
        (0, 0)
    );
}

#[test]
fn past_the_servers_cap_a_request_is_refused_busy_and_ends_with_that_outcome() {
    let mut pair = pair(None, 1);
    pair.send(b"first");
    assert!(matches!(pair.serve_step(), Ok(ServerStep::Request(_))));
    let refused = pair.send(b"second");
    let busy = Control::Busy(refused.0);
    assert_eq!(pair.serve_step(), Ok(ServerStep::Reply(busy)));
    assert_eq!(pair.client_step(), Err(ClientFailure::Busy(refused)));
    // The connection carries on with the first request still in flight.
    assert_eq!(pair.client.1.in_flight(), 1);
    assert_eq!(pair.server.1.stats().busy, 1);
}

#[test]
fn a_deadline_times_out_the_request_once_and_its_late_answer_is_dropped() {
    let timeout = Duration::from_secs(2);
    let mut pair = pair(Some(timeout), 8);
    let id = pair.send(b"order");
    let Ok(ServerStep::Request(request)) = pair.serve_step() else {
        panic!("the request is served");
    };
    assert_eq!(pair.client.1.poll_timeout(), Some(pair.now + timeout));
    pair.now += Duration::from_secs(1);
    assert_eq!(pair.client.1.handle(Incoming::Deadline, pair.now), Ok(None));
    pair.now += Duration::from_secs(1);
    let timed_out = pair.client.1.handle(Incoming::Deadline, pair.now);
    assert_eq!(timed_out, Err(ClientFailure::TimedOut(id)));
    assert_eq!(pair.client.1.handle(Incoming::Deadline, pair.now), Ok(None));
    pair.answer(request, b"late");
    assert_eq!(pair.client_step(), Ok(None));
    assert_eq!(pair.client.1.stats().late, 1);
}

#[test]
fn an_answer_that_arrived_wins_over_its_passed_deadline() {
    let mut pair = pair(Some(Duration::from_secs(1)), 8);
    let id = pair.send(b"order");
    let Ok(ServerStep::Request(request)) = pair.serve_step() else {
        panic!("the request is served");
    };
    pair.answer(request, b"filled");
    pair.now += Duration::from_secs(5);
    let header = pair.client_step().unwrap().expect("the answer counts");
    assert_eq!(RequestId(header.request_id), id);
}

#[test]
fn a_cancelled_requests_answer_is_dropped() {
    let mut pair = pair(None, 8);
    let id = pair.send(b"order");
    let Ok(ServerStep::Request(request)) = pair.serve_step() else {
        panic!("the request is served");
    };
    pair.client.1.cancel(id).unwrap();
    assert_eq!(
        pair.client.1.cancel(id),
        Err(mux::Error::NotInFlight { id })
    );
    pair.answer(request, b"filled");
    assert_eq!(pair.client_step(), Ok(None));
}

#[test]
fn an_answer_to_an_unknown_id_closes_and_fails_every_request_in_flight() {
    let mut pair = pair(None, 8);
    pair.send(b"one");
    pair.send(b"two");
    pair.server.0.queue(0xdead_0000, b"stray").unwrap();
    deliver(&mut pair.server.0, &mut pair.client.0);
    let id = RequestId(0xdead_0000);
    let closed = pair.client_step();
    assert_eq!(
        closed,
        Err(ClientFailure::Close(mux::Error::UnknownId { id }))
    );
    assert_eq!(pair.client.1.in_flight(), 0);
}

#[test]
fn while_pinging_a_pong_waits_on_and_any_answer_is_a_violation() {
    let mut pair = pair(None, 8);
    assert_eq!(pair.client.1.handle_while_pinging(Incoming::Pong), Ok(()));
    assert_eq!(
        pair.client.1.handle_while_pinging(Incoming::Deadline),
        Ok(())
    );
    let id = RequestId(7);
    let unknown = Err(ClientFailure::Close(mux::Error::UnknownId { id }));
    assert_eq!(
        pair.client.1.handle_while_pinging(Incoming::Busy(id)),
        unknown
    );
    assert_eq!(pair.client.1.handle(Incoming::Pong, pair.now), Ok(None));
}

#[test]
fn a_lost_connection_ends_every_request_in_flight() {
    let mut pair = pair(None, 8);
    pair.send(b"one");
    pair.send(b"two");
    pair.client.1.connection_lost();
    assert_eq!(pair.client.1.in_flight(), 0);
    assert_eq!(pair.client.1.poll_timeout(), None);
}

#[test]
fn a_server_closes_on_a_busy_refusal_or_a_duplicate_request() {
    let mut pair = pair(None, 8);
    let failure = pair.server.1.handle(Incoming::Busy(RequestId(3)));
    assert_eq!(failure, Err(ServerFailure::MalformedControl));
    let id = pair.send(b"order");
    assert!(matches!(pair.serve_step(), Ok(ServerStep::Request(_))));
    pair.client.0.queue(id.0, b"again").unwrap();
    deliver(&mut pair.client.0, &mut pair.server.0);
    let Err(ServerFailure::Mux(error)) = pair.serve_step() else {
        panic!("a duplicate request closes");
    };
    assert!(error.must_close());
    assert_eq!(
        pair.server.1.in_flight(),
        0,
        "the requests in flight are dropped"
    );
    assert_eq!(pair.server.1.handle(Incoming::Pong), Ok(ServerStep::Wait));
}

#[test]
fn an_answer_may_be_queued_only_for_a_request_in_flight() {
    let mut pair = pair(None, 8);
    let id = pair.send(b"order");
    let not_in_flight = Err(mux::Error::NotInFlight { id });
    assert_eq!(pair.server.1.check_answer(id), not_in_flight);
    assert!(matches!(pair.serve_step(), Ok(ServerStep::Request(_))));
    assert_eq!(pair.server.1.check_answer(id), Ok(()));
    pair.server.1.answered(id).unwrap();
    assert_eq!(pair.server.1.check_answer(id), not_in_flight);
    pair.server.1.connection_lost();
}

#[test]
fn a_reply_answers_once_and_an_unanswered_request_gets_an_empty_answer() {
    let mut pair = pair(None, 8);
    let first = pair.send(b"one");
    let second = pair.send(b"two");
    for expected in [first, second] {
        let Ok(ServerStep::Request(header)) = pair.serve_step() else {
            panic!("the request is served");
        };
        let (_, writer, queued) = pair.server.0.payload_and_writer(&header);
        let mut reply = Reply::new(expected, writer, queued);
        assert_eq!(reply.request_id(), expected);
        if expected == first {
            reply.respond(b"filled").unwrap();
            let again = reply.respond(b"again");
            let answered = mux::Error::NotInFlight { id: first };
            assert_eq!(again, Err(ReplyError::Answered(answered)));
        }
        assert_eq!(reply.finish(), Ok(expected));
    }
    deliver(&mut pair.server.0, &mut pair.client.0);
    let one = pair.client_step().unwrap().unwrap();
    assert_eq!(pair.client.0.payload(&one), b"filled");
    let two = pair.client_step().unwrap().unwrap();
    assert_eq!((RequestId(two.request_id), two.payload_len), (second, 0));
    assert_eq!(next(&mut pair.client.0), None, "nothing else was queued");
}

#[test]
fn a_reply_over_the_packet_limit_leaves_the_request_unanswered() {
    let mut pair = pair(None, 8);
    let id = pair.send(b"order");
    let Ok(ServerStep::Request(header)) = pair.serve_step() else {
        panic!("the request is served");
    };
    let big = vec![0; PacketConfig::server().max_payload_len + 1];
    let (_, writer, queued) = pair.server.0.payload_and_writer(&header);
    let mut reply = Reply::new(id, writer, queued);
    assert!(matches!(reply.respond(&big), Err(ReplyError::Encode(_))));
    reply.respond(b"small").unwrap();
}
