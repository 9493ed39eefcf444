//! The async pool against a server that is killed and restarted mid-load: every answer is
//! its own request's, no request reaches the server twice, every failure is a typed error,
//! the breaker opens while the server is gone, and the pool recovers once it is back.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use tickwire_tokio::codec::mux::BreakerConfig;
use tickwire_tokio::packet::{Error, PacketPoolBuilder, PacketServer, ServerHandle};

use crate::support::builder;

type Seen = Arc<Mutex<HashSet<Vec<u8>>>>;

/// An echo server on `listener` that records every payload it receives and notes one that
/// arrives twice.
fn recording_echo(listener: TcpListener, seen: &Seen, twice: &Arc<AtomicBool>) -> ServerHandle {
    let (seen, twice) = (Arc::clone(seen), Arc::clone(twice));
    PacketServer::new()
        .spawn(listener, move |_, request, responder| {
            if !seen.lock().unwrap().insert(request.to_vec()) {
                twice.store(true, Ordering::Relaxed);
            }
            responder.respond(request).unwrap();
        })
        .unwrap()
}

/// Binds `port` again once the old listener is gone.
async fn rebind(port: u16) -> TcpListener {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpListener::bind(("127.0.0.1", port)).await {
            Ok(listener) => return listener,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("cannot bind {port} again: {e}"),
        }
    }
}

#[derive(Debug, Default)]
struct Tally {
    answered: usize,
    answered_after_restart: usize,
    circuit_open: usize,
    connection_failures: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_survives_a_server_killed_and_restarted_mid_load() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let twice = Arc::new(AtomicBool::new(false));
    let server = recording_echo(listener, &seen, &twice);

    let client = builder()
        .connect_timeout(Duration::from_millis(500))
        .request_timeout(Some(Duration::from_secs(2)));
    let breaker = BreakerConfig::new()
        .with_failure_threshold(3)
        .with_cool_down(Duration::from_millis(100))
        .with_max_cool_down(Duration::from_millis(400));
    let pool = Arc::new(
        PacketPoolBuilder::new()
            .client(client)
            .size(3)
            .breaker(breaker)
            .backoff(Duration::from_millis(20), Duration::from_millis(200))
            .build("127.0.0.1", port),
    );
    let restarted = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..8)
        .map(|worker| {
            let (pool, stop, restarted) =
                (Arc::clone(&pool), Arc::clone(&stop), Arc::clone(&restarted));
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let payload = format!("worker {worker} request {n}").into_bytes();
                    match pool.request(&payload).await {
                        Ok(answer) => {
                            assert_eq!(answer, payload, "an answer to another request");
                            tally.answered += 1;
                            if restarted.load(Ordering::Relaxed) {
                                tally.answered_after_restart += 1;
                            }
                        }
                        Err(Error::CircuitOpen { retry_at }) => {
                            tally.circuit_open += 1;
                            let wait = retry_at.saturating_duration_since(Instant::now());
                            tokio::time::sleep(wait.min(Duration::from_millis(50))).await;
                        }
                        Err(
                            Error::Closed
                            | Error::Io(_)
                            | Error::ConnectTimeout
                            | Error::Reconnecting { .. }
                            | Error::TimedOut(_),
                        ) => {
                            tally.connection_failures += 1;
                            tokio::task::yield_now().await;
                        }
                        Err(other) => panic!("unexpected error kind: {other:?}"),
                    }
                }
                tally
            })
        })
        .collect();

    tokio::time::sleep(Duration::from_millis(400)).await;
    server.shutdown().await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let server = recording_echo(rebind(port).await, &seen, &twice);
    restarted.store(true, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    stop.store(true, Ordering::Relaxed);
    let mut tallies = Vec::new();
    for worker in workers {
        tallies.push(worker.await.unwrap());
    }

    let sum = |f: fn(&Tally) -> usize| tallies.iter().map(f).sum::<usize>();
    let answered = sum(|t| t.answered);
    eprintln!(
        "answered {answered} (after restart {}), circuit open {}, connection failures {}",
        sum(|t| t.answered_after_restart),
        sum(|t| t.circuit_open),
        sum(|t| t.connection_failures)
    );
    assert!(
        !twice.load(Ordering::Relaxed),
        "a request reached the server twice"
    );
    assert!(
        sum(|t| t.connection_failures) > 0,
        "the kill was not noticed"
    );
    assert!(sum(|t| t.circuit_open) > 0, "the breaker never opened");
    assert!(
        sum(|t| t.answered_after_restart) > 0,
        "no recovery after the restart"
    );
    assert!(answered <= seen.lock().unwrap().len());
    assert_eq!(
        pool.request(b"after the load").await.unwrap(),
        b"after the load"
    );
    assert_eq!(pool.check_health().await, pool.open_connections());
    server.shutdown().await;
}

#[tokio::test]
async fn a_pool_to_nothing_fails_typed_then_opens_its_breaker() {
    // A port with nothing listening: bind, note it, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = PacketPoolBuilder::new()
        .size(1)
        .breaker(BreakerConfig::new().with_failure_threshold(2))
        .build("127.0.0.1", port);
    assert!(matches!(pool.request(b"1").await, Err(Error::Io(_))));
    assert!(matches!(
        pool.request(b"2").await,
        Err(Error::Reconnecting { .. })
    ));
    assert!(matches!(
        pool.request(b"3").await,
        Err(Error::CircuitOpen { .. })
    ));
}

#[tokio::test]
async fn a_health_check_drops_connections_to_a_dead_server() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (seen, twice) = (Seen::default(), Arc::new(AtomicBool::new(false)));
    let server = recording_echo(listener, &seen, &twice);
    let pool = PacketPoolBuilder::new()
        .client(builder())
        .size(2)
        .build("127.0.0.1", port);
    assert_eq!(pool.request(b"a").await.unwrap(), b"a");
    assert_eq!(pool.request(b"b").await.unwrap(), b"b");
    assert_eq!(pool.open_connections(), 2);
    assert_eq!(pool.check_health().await, 2);
    server.shutdown().await;
    assert_eq!(pool.check_health().await, 0);
    assert_eq!(pool.open_connections(), 0);
}
