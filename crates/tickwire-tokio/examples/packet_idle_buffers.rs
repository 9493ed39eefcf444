//! Does lending an idle connection's buffers out (rule 11 of docs/ARCHITECTURE.md) slow the request/response
//! path? Round trips of one small request at a time over loopback, with
//! `release_idle_buffers` on and off on both ends, alternated in rounds so drift on a shared
//! machine hits both alike; prints percentiles per setting.
//!
//! `cargo run --release -p tickwire-tokio --example packet_idle_buffers [rounds] [per_round]`

use std::time::{Duration, Instant};

use tickwire_tokio::packet::{PacketClientBuilder, PacketServer};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args()
        .skip(1)
        .map(|a| a.parse::<usize>().unwrap());
    let rounds = args.next().unwrap_or(10);
    let per_round = args.next().unwrap_or(20_000);
    let mut samples = [Vec::new(), Vec::new()];
    for round in 0..rounds * 2 {
        // Which setting goes first in a pair alternates too: no order bias.
        let release = (round % 2 == 0) == (round % 4 < 2);
        samples[usize::from(release)].extend(run(release, per_round).await);
    }
    for (release, mut times) in [false, true].into_iter().zip(samples) {
        times.sort_unstable();
        let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
        println!(
            "release_idle_buffers({release:5}): n {} p50 {:?} p90 {:?} p99 {:?} p99.9 {:?} max {:?}",
            times.len(),
            at(0.5),
            at(0.9),
            at(0.99),
            at(0.999),
            times[times.len() - 1]
        );
    }
}

/// `n` round trips (after 1 000 of warm-up) on a fresh server and client.
async fn run(release: bool, n: usize) -> Vec<Duration> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = PacketServer::new()
        .release_idle_buffers(release)
        .spawn(listener, |_, request, responder| {
            responder.respond(request).unwrap();
        })
        .unwrap();
    let mut client = PacketClientBuilder::new()
        .release_idle_buffers(release)
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let payload = [0x5A; 64];
    for _ in 0..1_000 {
        client.request(&payload).await.unwrap();
    }
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        let answer = client.request(&payload).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(answer.len(), payload.len());
    }
    server.shutdown().await;
    times
}
