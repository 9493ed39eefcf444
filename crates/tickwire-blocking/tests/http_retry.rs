//! The resend rules a user can change: a POST marked idempotent (an order with a client
//! order id) is resent once when a reused connection was closed before its answer, as a GET
//! is; a retry budget that is spent stops the resend, and the request fails as it stood.

#[expect(dead_code, reason = "each test binary uses part of the shared helpers")]
mod http_support;
use http_support::*;

use std::sync::{Arc, mpsc};

use tickwire_blocking::HttpClientError;
use tickwire_blocking::codec::http::RetryBudget;

/// A server whose first connection answers one request, then reads one more and closes
/// without answering it; with `resend`, the next connection answers the resend. Once `done`
/// says the client is finished, returns what it read, in order, and how many connections it
/// was offered.
fn racing_server(resend: bool, done: mpsc::Receiver<()>) -> Server<(Vec<Received>, usize)> {
    server(move |mut listener| {
        let mut seen = Vec::new();
        let mut first = listener.accept();
        seen.extend(first.read_request());
        first.send(&ok(b"one"));
        seen.extend(first.read_request());
        drop(first);
        if resend {
            let mut second = listener.accept();
            seen.extend(second.read_request());
            second.send(&ok(b"placed"));
        }
        done.recv_timeout(PATIENCE).unwrap();
        (seen, listener.connections())
    })
}

#[test]
fn a_post_marked_idempotent_is_resent_once_after_a_close_before_its_answer() {
    let (done_tx, done) = mpsc::channel();
    let server = racing_server(true, done);
    let mut client = client(server.port()).build().unwrap();
    assert_eq!(client.get("/one").send().unwrap().body(), b"one");
    let response = client
        .post("/order")
        .idempotent()
        .send_body(br#"{"newClientOrderId":"x-1"}"#)
        .unwrap();
    assert_eq!(response.body(), b"placed");
    drop(client);
    done_tx.send(()).unwrap();
    let (seen, connections) = server.join();
    let targets: Vec<&str> = seen.iter().map(|r| r.target()).collect();
    assert_eq!(
        targets,
        ["/one", "/order", "/order"],
        "sent twice, once per connection"
    );
    assert_eq!(connections, 2);
}

#[test]
fn a_spent_retry_budget_stops_the_resend() {
    let (done_tx, done) = mpsc::channel();
    let server = racing_server(false, done);
    // No resend at all: no burst left, no deposit, no refill.
    let budget = Arc::new(RetryBudget::new(0.0, 0.0, 1.0));
    assert!(budget.try_withdraw(std::time::Instant::now()));
    let mut client = client(server.port())
        .retry_budget(Some(Arc::clone(&budget)))
        .build()
        .unwrap();
    assert_eq!(client.get("/one").send().unwrap().body(), b"one");
    let error = the_error(client.get("/two").send());
    assert!(matches!(error, HttpClientError::NoResponse), "{error}");
    drop(client);
    done_tx.send(()).unwrap();
    let (seen, connections) = server.join();
    let targets: Vec<&str> = seen.iter().map(|r| r.target()).collect();
    assert_eq!(targets, ["/one", "/two"], "the GET was not resent");
    assert_eq!(connections, 1);
}
