//! Unit tests of the client and server bookkeeping. The model check over arbitrary operation
//! sequences is tests/mux_model.rs; the allocation count is tests/mux_zero_alloc.rs.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::*;

fn client(cap: usize) -> Client<&'static str> {
    Client::new(ClientConfig::new().with_max_in_flight(cap))
}

fn completed<T: std::fmt::Debug>(response: Result<Response<T>, Error>) -> Completed<T> {
    match response {
        Ok(Response::Completed(done)) => done,
        other => panic!("expected a completion, got {other:?}"),
    }
}

#[test]
fn ids_pack_slot_and_generation_and_are_never_reused() {
    let t0 = Instant::now();
    let mut client = client(4);
    let first: Vec<RequestId> = (0..4)
        .map(|_| client.begin(t0, 1, None, "x").unwrap())
        .collect();
    // 4 slots: 2 index bits, generation 1 above them.
    assert_eq!(
        first,
        [RequestId(4), RequestId(5), RequestId(6), RequestId(7)]
    );
    let mut seen: HashSet<RequestId> = first.iter().copied().collect();
    completed(client.on_response(first[2], 0, t0));
    let again = client.begin(t0, 1, None, "y").unwrap();
    assert_eq!(again, RequestId((2 << 2) | 2), "slot 2, generation 2");
    assert!(seen.insert(again));
    // Freed slots are reused oldest first: answer 0 then 1, the next two ids use them in turn.
    completed(client.on_response(first[0], 0, t0));
    completed(client.on_response(first[1], 0, t0));
    assert_eq!(
        client.begin(t0, 1, None, "z").unwrap(),
        RequestId(2 << 2),
        "slot 0, generation 2"
    );
    assert_eq!(
        client.begin(t0, 1, None, "z").unwrap(),
        RequestId((2 << 2) | 1)
    );
    completed(client.on_response(again, 0, t0));
    for _ in 0..1000 {
        let id = client.begin(t0, 1, None, "w").expect("one slot free");
        assert!(seen.insert(id), "{id} issued twice");
        assert_ne!(id, RequestId::RESERVED);
        completed(client.on_response(id, 0, t0));
    }
}

#[test]
fn responses_match_out_of_order() {
    let t0 = Instant::now();
    let mut client = client(8);
    let a = client.begin(t0, 10, None, "a").unwrap();
    let b = client.begin(t0, 20, None, "b").unwrap();
    let c = client.begin(t0, 30, None, "c").unwrap();
    let later = t0 + Duration::from_micros(70);
    let done = completed(client.on_response(c, 3, later));
    assert_eq!((done.id, done.token, done.began), (c, "c", t0));
    let latency = Duration::from_micros(70);
    assert_eq!(done.outcome, Outcome::Response { len: 3, latency });
    assert_eq!(completed(client.on_response(a, 1, later)).token, "a");
    assert_eq!(completed(client.on_response(b, 2, later)).token, "b");
    let stats = client.stats();
    assert_eq!((stats.begun, stats.completed, stats.in_flight), (3, 3, 0));
}

#[test]
fn caps_refuse_with_the_token_back_and_change_nothing() {
    let t0 = Instant::now();
    let config = ClientConfig::new()
        .with_max_in_flight(2)
        .with_max_request_size(100);
    let mut client = Client::new(config);
    let too_big = client.begin(t0, 101, None, "big").unwrap_err();
    assert_eq!(too_big.token, "big");
    assert_eq!(
        too_big.error,
        Error::RequestTooLarge {
            len: 101,
            limit: 100
        }
    );
    assert_eq!(
        (too_big.error.fault(), too_big.error.must_close()),
        (Fault::Limit, false)
    );
    let a = client.begin(t0, 100, None, "a").unwrap();
    client.begin(t0, 0, None, "b").unwrap();
    let full = client.begin(t0, 1, None, "c").unwrap_err();
    assert_eq!(
        (full.error, full.token),
        (Error::TooManyInFlight { limit: 2 }, "c")
    );
    assert_eq!(
        (full.error.fault(), full.error.must_close()),
        (Fault::Busy, false)
    );
    assert_eq!(client.stats().begun, 2);
    completed(client.on_response(a, 0, t0));
    assert!(
        client.begin(t0, 1, None, "c").is_ok(),
        "room again after a completion"
    );
}

#[test]
fn unknown_ids_are_peer_violations() {
    let t0 = Instant::now();
    let mut client = client(4);
    let id = client.begin(t0, 1, None, "a").unwrap();
    let never_issued = [
        RequestId::RESERVED,
        RequestId(1),        // generation 0
        RequestId(id.0 + 4), // next generation of the same slot
        RequestId(id.0 + 1), // a slot never used
        RequestId(u64::MAX), // far future
    ];
    for forged in never_issued {
        let error = client.on_response(forged, 0, t0).unwrap_err();
        assert_eq!(error, Error::UnknownId { id: forged });
        assert_eq!((error.fault(), error.must_close()), (Fault::Peer, true));
    }
    assert!(
        client.is_in_flight(id),
        "a forged id does not touch the real request"
    );
    let cap_3 = &mut Client::<()>::new(ClientConfig::new().with_max_in_flight(3));
    let id = cap_3.begin(t0, 1, None, ()).unwrap();
    assert_eq!(id, RequestId(4), "3 slots take 2 bits");
    let error = cap_3.on_response(RequestId(7), 0, t0).unwrap_err();
    assert_eq!(
        error,
        Error::UnknownId { id: RequestId(7) },
        "slot index 3 of 3"
    );
}

#[test]
fn a_late_answer_is_dropped_and_counted_a_second_one_is_a_duplicate() {
    let t0 = Instant::now();
    let mut client = client(4);
    let cancelled = client.begin(t0, 1, None, "cancelled").unwrap();
    let timeout = Some(Duration::from_millis(5));
    let timed_out = client.begin(t0, 1, timeout, "timed out").unwrap();
    let answered = client.begin(t0, 1, None, "answered").unwrap();
    assert_eq!(client.cancel(cancelled), Ok("cancelled"));
    assert_eq!(
        client.cancel(cancelled),
        Err(Error::NotInFlight { id: cancelled })
    );
    let expired: Vec<_> = client
        .handle_timeout(t0 + Duration::from_millis(5))
        .collect();
    assert_eq!(expired.len(), 1);
    assert_eq!((expired[0].id, expired[0].token), (timed_out, "timed out"));
    completed(client.on_response(answered, 0, t0));
    for late in [cancelled, timed_out] {
        assert_eq!(client.on_response(late, 9, t0), Ok(Response::Late(late)));
        let again = client.on_response(late, 9, t0).unwrap_err();
        assert_eq!(again, Error::DuplicateResponse { id: late });
    }
    let again = client.on_response(answered, 0, t0).unwrap_err();
    assert_eq!(
        (again, again.fault()),
        (Error::DuplicateResponse { id: answered }, Fault::Peer)
    );
    let stats = client.stats();
    assert_eq!(
        (
            stats.late,
            stats.cancelled,
            stats.timed_out,
            stats.completed
        ),
        (2, 1, 1, 1)
    );
}

#[test]
fn a_late_answer_still_counts_after_its_slot_is_reused() {
    let t0 = Instant::now();
    let mut client = client(1);
    let cancelled = client.begin(t0, 1, None, "old").unwrap();
    client.cancel(cancelled).unwrap();
    let current = client.begin(t0, 1, None, "new").unwrap();
    assert_eq!(
        client.on_response(cancelled, 0, t0),
        Ok(Response::Late(cancelled))
    );
    assert_eq!(completed(client.on_response(current, 0, t0)).token, "new");
}

#[test]
fn answers_older_than_the_late_window_are_counted_late() {
    let t0 = Instant::now();
    let mut client = client(1);
    let old = client.begin(t0, 1, None, "old").unwrap();
    completed(client.on_response(old, 0, t0));
    for _ in 0..63 {
        let id = client.begin(t0, 1, None, "filler").unwrap();
        completed(client.on_response(id, 0, t0));
    }
    assert_eq!(
        client.on_response(old, 0, t0),
        Err(Error::DuplicateResponse { id: old }),
        "63 generations back: still remembered"
    );
    let id = client.begin(t0, 1, None, "filler").unwrap();
    completed(client.on_response(id, 0, t0));
    assert_eq!(
        client.on_response(old, 0, t0),
        Ok(Response::Late(old)),
        "64 back"
    );
}

#[test]
fn an_oversized_response_leaves_the_request_for_fail_all() {
    let t0 = Instant::now();
    let mut client = Client::new(ClientConfig::new().with_max_response_size(64));
    let id = client.begin(t0, 1, None, "a").unwrap();
    let error = client.on_response(id, 65, t0).unwrap_err();
    assert_eq!(
        error,
        Error::ResponseTooLarge {
            id,
            len: 65,
            limit: 64
        }
    );
    assert_eq!((error.fault(), error.must_close()), (Fault::Limit, true));
    assert!(client.is_in_flight(id));
    let reason = Disconnect::Closed(error);
    let failed: Vec<_> = client.fail_all(reason).collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(
        (failed[0].token, failed[0].outcome),
        ("a", Outcome::Failed(reason))
    );
}

#[test]
fn timeouts_come_out_earliest_first_and_a_response_before_the_drain_wins() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let mut client = client(8);
    assert_eq!(client.poll_timeout(), None);
    let slow = client.begin(t0, 1, Some(ms(30)), "slow").unwrap();
    let fast = client.begin(t0, 1, Some(ms(10)), "fast").unwrap();
    client.begin(t0, 1, Some(ms(20)), "middle").unwrap();
    let forever = client.begin(t0, 1, None, "forever").unwrap();
    client
        .begin(t0, 1, Some(Duration::MAX), "beyond Instant")
        .unwrap();
    assert_eq!(client.poll_timeout(), Some(t0 + ms(10)));
    // Answered after its deadline, before handle_timeout ran: the answer is there.
    assert_eq!(
        completed(client.on_response(fast, 0, t0 + ms(15))).token,
        "fast"
    );
    assert_eq!(client.poll_timeout(), Some(t0 + ms(20)));
    assert_eq!(client.handle_timeout(t0 + ms(19)).count(), 0);
    // Only the first is taken; the iterator is dropped at the end of the statement.
    let first = client.handle_timeout(t0 + ms(40)).next().map(|d| d.token);
    assert_eq!(first, Some("middle"));
    assert!(
        client.is_in_flight(slow),
        "not reached by the dropped iterator"
    );
    assert_eq!(client.poll_timeout(), Some(t0 + ms(30)));
    let rest: Vec<_> = client
        .handle_timeout(t0 + ms(40))
        .map(|d| d.token)
        .collect();
    assert_eq!(rest, ["slow"]);
    assert_eq!(client.poll_timeout(), None);
    assert!(client.is_in_flight(forever));
    assert_eq!(client.stats().timed_out, 2);
}

#[test]
fn fail_all_finishes_each_request_once_even_when_dropped_early() {
    let t0 = Instant::now();
    let mut client = client(8);
    let ids: Vec<_> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|token| {
            client
                .begin(t0, 1, Some(Duration::from_secs(1)), token)
                .unwrap()
        })
        .collect();
    client.cancel(ids[1]).unwrap();
    let mut failed = client.fail_all(Disconnect::ConnectionLost);
    let first = failed.next().unwrap();
    assert_eq!((first.id, first.token), (ids[0], "a"));
    assert_eq!(first.outcome, Outcome::Failed(Disconnect::ConnectionLost));
    drop(failed);
    let stats = client.stats();
    assert_eq!((stats.failed, stats.in_flight), (3, 0));
    assert_eq!(client.poll_timeout(), None);
    assert_eq!(client.fail_all(Disconnect::Shutdown).count(), 0);
    // The client serves a new connection: old ids are violations there, new ids are new.
    for old in &ids {
        let error = client.on_response(*old, 0, t0).unwrap_err();
        assert_eq!(error, Error::DuplicateResponse { id: *old });
    }
    let fresh = client.begin(t0, 1, None, "e").unwrap();
    assert!(!ids.contains(&fresh));
}

#[test]
fn tables_are_allocated_once_at_the_cap() {
    let t0 = Instant::now();
    let mut client = client(16);
    assert_eq!(client.allocated(), (16, 16));
    for round in 0..200 {
        let ids: Vec<_> = (0..16)
            .map(|_| {
                client
                    .begin(t0, 1, Some(Duration::from_millis(round % 3)), "x")
                    .unwrap()
            })
            .collect();
        client
            .handle_timeout(t0 + Duration::from_millis(1))
            .for_each(drop);
        for id in ids.into_iter().rev() {
            let _ = client.on_response(id, 0, t0);
        }
    }
    assert_eq!(client.allocated(), (16, 16));
}

#[test]
#[should_panic(expected = "max_in_flight must be in")]
fn a_zero_cap_is_refused_at_construction() {
    let _ = client(0);
}

#[test]
fn server_answers_in_any_order_and_refuses_a_second_answer() {
    let mut server = Server::new(ServerConfig::new());
    for id in 1..=5 {
        server.on_request(RequestId(id), 10).unwrap();
    }
    for id in [4, 1, 5, 3, 2] {
        server.respond(RequestId(id)).unwrap();
        let error = server.respond(RequestId(id)).unwrap_err();
        assert_eq!(
            (error, error.fault()),
            (Error::NotInFlight { id: RequestId(id) }, Fault::Local)
        );
        assert!(!error.must_close());
    }
    assert_eq!(
        server.respond(RequestId::RESERVED),
        Err(Error::NotInFlight { id: RequestId(0) })
    );
    let stats = server.stats();
    assert_eq!((stats.received, stats.answered, stats.in_flight), (5, 5, 0));
}

#[test]
fn server_refusals_come_in_their_documented_order() {
    let config = ServerConfig::new()
        .with_max_in_flight(2)
        .with_max_request_size(100);
    let mut server = Server::with_key(config, 1);
    assert_eq!(
        server.on_request(RequestId::RESERVED, 1),
        Err(Error::ReservedId)
    );
    server.on_request(RequestId(7), 100).unwrap();
    let too_big = server.on_request(RequestId(8), 101).unwrap_err();
    let (id, len, limit) = (RequestId(8), 101, 100);
    assert_eq!(too_big, Error::IncomingRequestTooLarge { id, len, limit });
    assert_eq!(
        (too_big.fault(), too_big.must_close()),
        (Fault::Limit, true)
    );
    server.on_request(RequestId(8), 1).unwrap();
    // Full: a duplicate is still a duplicate, not "busy".
    let duplicate = server.on_request(RequestId(7), 1).unwrap_err();
    assert_eq!(duplicate, Error::DuplicateRequest { id: RequestId(7) });
    assert_eq!(
        (duplicate.fault(), duplicate.must_close()),
        (Fault::Peer, true)
    );
    let busy = server.on_request(RequestId(9), 1).unwrap_err();
    assert_eq!(
        busy,
        Error::Busy {
            id: RequestId(9),
            limit: 2
        }
    );
    assert_eq!((busy.fault(), busy.must_close()), (Fault::Busy, false));
    assert!(
        !server.is_in_flight(RequestId(9)),
        "a busy request is not tracked"
    );
    assert_eq!(server.stats().busy, 1);
    assert_eq!(server.reset(), 2);
    server.on_request(RequestId(7), 1).unwrap();
}

/// Inserts and removes many ids in a small table, so that runs wrap around its end and
/// removals shift entries back, against a `HashSet`.
#[test]
fn server_id_table_agrees_with_a_set() {
    for key in [0, 1, 0xdead_beef] {
        let mut server = Server::with_key(ServerConfig::new().with_max_in_flight(8), key);
        assert_eq!(server.allocated(), 16);
        let mut held: Vec<u64> = Vec::new();
        let mut x: u64 = 0x1234_5678;
        for _ in 0..20_000 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let id = (x >> 40) % 40 + 1;
            if held.contains(&id) {
                assert_eq!(
                    server.on_request(RequestId(id), 1),
                    Err(Error::DuplicateRequest { id: RequestId(id) })
                );
                server.respond(RequestId(id)).unwrap();
                held.retain(|&h| h != id);
            } else if held.len() < 8 {
                server.on_request(RequestId(id), 1).unwrap();
                held.push(id);
            } else {
                assert!(matches!(
                    server.on_request(RequestId(id), 1),
                    Err(Error::Busy { .. })
                ));
            }
            for probe in 1..=40 {
                assert_eq!(
                    server.is_in_flight(RequestId(probe)),
                    held.contains(&probe),
                    "id {probe}"
                );
            }
        }
        assert_eq!(server.allocated(), 16);
    }
}

#[test]
fn errors_display_what_went_wrong() {
    let id = RequestId(0x2a);
    assert_eq!(
        Error::UnknownId { id }.to_string(),
        "response to request 0x2a, which was never issued"
    );
    let refused = Client::new(ClientConfig::new().with_max_request_size(1))
        .begin(Instant::now(), 2, None, ())
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "request refused: request of 2 bytes exceeds the limit of 1"
    );
    assert_eq!(
        Disconnect::Closed(Error::ReservedId).to_string(),
        "connection closed: request with the reserved id 0"
    );
}
