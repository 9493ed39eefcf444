//! The packet pool against a server that is killed and restarted mid-load: every answer is
//! its own request's, no request reaches the server twice, every failure is a typed error,
//! the breaker opens while the server is gone, and the pool recovers once it is back.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use tickwire_blocking::codec::mux::BreakerConfig;
use tickwire_blocking::packet::{
    Error, PacketClientBuilder, PacketPoolBuilder, PacketServer, ServerHandle,
};

type Seen = Arc<Mutex<HashSet<Vec<u8>>>>;

/// An echo server on `listener` that records every payload it receives, and fails the test
/// (by recording a marker) when one arrives twice.
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
fn rebind(port: u16) -> TcpListener {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match TcpListener::bind(("127.0.0.1", port)) {
            Ok(listener) => return listener,
            Err(_) if Instant::now() < deadline => thread::sleep(Duration::from_millis(20)),
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

#[test]
fn the_pool_survives_a_server_killed_and_restarted_mid_load() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let twice = Arc::new(AtomicBool::new(false));
    let server = recording_echo(listener, &seen, &twice);

    let client = PacketClientBuilder::new()
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
    let restarted_at = Arc::new(Mutex::new(None::<Instant>));
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|worker| {
            let (pool, stop, restarted_at) = (
                Arc::clone(&pool),
                Arc::clone(&stop),
                Arc::clone(&restarted_at),
            );
            thread::spawn(move || {
                let mut tally = Tally::default();
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let payload = format!("worker {worker} request {n}").into_bytes();
                    match pool.request(&payload) {
                        Ok(answer) => {
                            assert_eq!(answer, payload, "an answer to another request");
                            tally.answered += 1;
                            if restarted_at.lock().unwrap().is_some() {
                                tally.answered_after_restart += 1;
                            }
                        }
                        Err(Error::CircuitOpen { retry_at }) => {
                            tally.circuit_open += 1;
                            let wait = retry_at.saturating_duration_since(Instant::now());
                            thread::sleep(wait.min(Duration::from_millis(50)));
                        }
                        Err(
                            Error::Closed
                            | Error::Io(_)
                            | Error::ConnectTimeout
                            | Error::Reconnecting { .. }
                            | Error::TimedOut(_),
                        ) => tally.connection_failures += 1,
                        Err(other) => panic!("unexpected error kind: {other:?}"),
                    }
                }
                tally
            })
        })
        .collect();

    thread::sleep(Duration::from_millis(400));
    server.shutdown();
    thread::sleep(Duration::from_millis(600));
    let server = recording_echo(rebind(port), &seen, &twice);
    *restarted_at.lock().unwrap() = Some(Instant::now());
    thread::sleep(Duration::from_millis(1200));
    stop.store(true, Ordering::Relaxed);
    let tallies: Vec<Tally> = workers.into_iter().map(|w| w.join().unwrap()).collect();

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
    assert_eq!(pool.request(b"after the load").unwrap(), b"after the load");
    assert_eq!(pool.check_health(), pool.open_connections());
    server.shutdown();
}

#[test]
fn a_pool_to_nothing_fails_typed_then_opens_its_breaker() {
    // A port with nothing listening: bind, note it, close.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let pool = PacketPoolBuilder::new()
        .size(1)
        .breaker(BreakerConfig::new().with_failure_threshold(2))
        .build("127.0.0.1", port);
    assert!(matches!(pool.request(b"1"), Err(Error::Io(_))));
    assert!(matches!(
        pool.request(b"2"),
        Err(Error::Reconnecting { .. })
    ));
    assert!(matches!(pool.request(b"3"), Err(Error::CircuitOpen { .. })));
}

/// Lets a held handler answer.
fn release(gate: &(Mutex<bool>, Condvar)) {
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
}

#[test]
fn a_connection_busy_with_a_request_counts_open_and_healthy_without_waiting_for_it() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // The handler says the request arrived, then holds its answer until released.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (arrived_tx, arrived) = mpsc::channel::<()>();
    let held = Arc::clone(&gate);
    let server = PacketServer::new()
        .spawn(listener, move |_, request, responder| {
            let _ = arrived_tx.send(());
            let (lock, wake) = &*held;
            let _released = wake.wait_while(lock.lock().unwrap(), |r| !*r).unwrap();
            responder.respond(request).unwrap();
        })
        .unwrap();
    let pool = Arc::new(PacketPoolBuilder::new().size(1).build("127.0.0.1", port));
    let requester = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || pool.request(b"held"))
    };
    arrived
        .recv_timeout(Duration::from_secs(10))
        .expect("the request reaches the server");

    // A call that waited for the busy connection would wait for the answer: a watchdog
    // releases it after 5 s so that such a call fails the test instead of hanging it.
    let (done, watched) = mpsc::channel::<()>();
    let watchdog = {
        let gate = Arc::clone(&gate);
        thread::spawn(move || {
            let fired = watched.recv_timeout(Duration::from_secs(5)).is_err();
            release(&gate);
            fired
        })
    };
    let open = pool.open_connections();
    let healthy = pool.check_health();
    let _ = done.send(());
    assert!(
        !watchdog.join().unwrap(),
        "open_connections or check_health waited for the request in flight"
    );
    assert_eq!(
        (open, healthy),
        (1, 1),
        "the busy connection counts open and healthy"
    );
    assert_eq!(requester.join().unwrap().unwrap(), b"held");
    assert_eq!(pool.open_connections(), 1);
    server.shutdown();
}
