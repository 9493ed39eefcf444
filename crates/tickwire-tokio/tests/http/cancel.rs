//! Cancel safety of the async HTTP client, on both runtimes: request futures dropped before
//! their response completed (raced in `select!` against a short timer while the server answers
//! slowly) never make a later request receive the wrong response. The server echoes each
//! request's id; every response that completes is checked against the id it was sent with.

use crate::http_async::{ManyServer, client, on_both_runtimes, stopped};
use crate::http_support::*;

use std::time::Duration;

use tickwire_tokio::HttpClient;

/// Answers with the request's `X-Id` after a delay that varies with it (0 to 3 ms), so that
/// the client's timer sometimes wins and sometimes loses, at every stage of the exchange.
fn slow_echo() -> ManyServer {
    ManyServer::start(|request| {
        let id: u64 = request.header("x-id").unwrap().parse().unwrap();
        std::thread::sleep(Duration::from_micros(id * 397 % 3_000));
        // Bodies up to 20 KB: some responses span several reads, so a drop can land in the
        // middle of a body as well as before the head.
        let mut body = id.to_string().into_bytes();
        body.resize(body.len() + (id as usize * 7919) % 20_000, b' ');
        ok(&body)
    })
}

/// The id a response body echoes.
fn echoed(body: &[u8]) -> u64 {
    std::str::from_utf8(body)
        .unwrap()
        .trim_end()
        .parse()
        .unwrap()
}

/// `rounds` requests with ids from `first`, each raced against a timer of 0 to 2.5 ms, and
/// every tenth one sent unraced; returns (completed, cancelled). Panics on a response that
/// does not echo its own request's id.
async fn race(client: &mut HttpClient, first: u64, rounds: u64) -> (u64, u64) {
    let (mut completed, mut cancelled) = (0, 0);
    for id in first..first + rounds {
        let timer = tokio::time::sleep(Duration::from_micros(id * 131 % 2_500));
        tokio::select! {
            response = client.get("/echo").header_display("X-Id", id).send() => {
                let response = response.unwrap();
                assert_eq!(echoed(response.body()), id, "a response for another request");
                completed += 1;
            }
            () = timer => cancelled += 1,
        }
        if id % 10 == 0 {
            let id = id + 1_000_000;
            let response = client
                .get("/echo")
                .header_display("X-Id", id)
                .send()
                .await
                .unwrap();
            assert_eq!(
                echoed(response.body()),
                id,
                "a response for another request"
            );
            completed += 1;
        }
    }
    (completed, cancelled)
}

#[test]
fn dropped_requests_never_leave_their_response_to_a_later_one() {
    on_both_runtimes(|| async {
        let server = slow_echo();
        let mut client = client(server.port()).build().unwrap();
        let (completed, cancelled) = race(&mut client, 1, 300).await;
        assert!(
            cancelled > 0,
            "no request was cancelled: the test proved nothing"
        );
        assert!(completed >= 30);
        drop(client);
        stopped(server).await;
    });
}

#[test]
fn concurrent_tasks_dropping_requests_share_a_small_pool_safely() {
    on_both_runtimes(|| async {
        let server = slow_echo();
        let client = client(server.port()).max_connections(2).build().unwrap();
        let tasks: Vec<_> = (0..4u64)
            .map(|task| {
                let mut client = client.clone();
                tokio::spawn(async move { race(&mut client, 1 + task * 10_000, 100).await })
            })
            .collect();
        let mut cancelled = 0;
        for task in tasks {
            cancelled += task.await.unwrap().1;
        }
        assert!(
            cancelled > 0,
            "no request was cancelled: the test proved nothing"
        );
        // The pool is still sound: a plain request works and the cap held.
        let mut last = client.clone();
        let response = last.get("/echo").header("X-Id", "7").send().await.unwrap();
        assert_eq!(echoed(response.body()), 7);
        drop(response);
        assert!(client.idle_connections() <= 2);
        drop((client, last));
        stopped(server).await;
    });
}
