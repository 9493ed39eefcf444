//! The connect path through the tokio clients: Happy Eyeballs past a black-holed first
//! address, and a failed plan's error naming every address. Alone in its binary: it counts
//! the process's descriptors, which other tests would change.
#![cfg(target_os = "linux")]

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use tickwire_test_support::connect::{black_hole_beside, find_error};
use tickwire_tokio::codec::connect::{ConnectError, Reason, ResolveEntry};
use tickwire_tokio::{ClientBuilder, ConnectOptions, Message, Recv};

/// The two tests one at a time: each counts descriptors or opens sockets.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Echoes one WebSocket connection from `listener`.
fn echo_once(listener: TcpListener) -> tokio::task::JoinHandle<()> {
    listener.set_nonblocking(true).unwrap();
    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tickwire_tokio::accept(tcp).await.unwrap();
        while let (Recv::Message(Message::Text(text)), mut sender) =
            ws.recv_with_sender().await.unwrap()
        {
            sender.text(text).unwrap();
        }
        let _ = ws.finish().await;
    })
}

#[tokio::test]
async fn a_black_holed_first_address_costs_the_stagger_not_the_connect_timeout() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let (hole, live) =
        black_hole_beside(Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 1)).unwrap();
    let port = hole.addr.port();
    let server = echo_once(live);
    let before = open_descriptors();
    let entry = ResolveEntry::parse(&format!("feed.test:{port}:127.0.0.2,127.0.0.1")).unwrap();
    let started = Instant::now();
    let mut ws = ClientBuilder::new()
        .connect_timeout(Some(Duration::from_secs(30)))
        .connect_options(ConnectOptions::new().with_resolve(entry))
        .connect(&format!("ws://feed.test:{port}/"))
        .await
        .unwrap();
    let took = started.elapsed();
    // The black hole holds its attempt for the 30 s connect timeout; the plan starts the
    // next address after the 250 ms stagger and takes the first that connects.
    assert!(took < Duration::from_secs(10), "connected after {took:?}");
    let peer = ws.stream().tcp().peer_addr().unwrap();
    assert_eq!(peer, SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), port)));
    ws.send_text("through").unwrap();
    ws.flush().await.unwrap();
    match ws.recv().await.unwrap() {
        Recv::Message(Message::Text(text)) => assert_eq!(text, "through"),
        other => panic!("expected the echo, got {other:?}"),
    }
    ws.finish().await.unwrap();
    drop(ws);
    server.await.unwrap();
    // Alone, the black hole holds its attempt until the connect timeout.
    let alone = ResolveEntry::parse(&format!("hole.test:{port}:127.0.0.2")).unwrap();
    let error = ClientBuilder::new()
        .connect_timeout(Some(Duration::from_millis(300)))
        .connect_options(ConnectOptions::new().with_resolve(alone))
        .connect(&format!("ws://hole.test:{port}/"))
        .await
        .unwrap_err();
    let found =
        find_error::<ConnectError>(&error).unwrap_or_else(|| panic!("no ConnectError in {error}"));
    assert_eq!(found.failures, [(hole.addr, Reason::TimedOut)]);
    // The losing attempt's socket was closed when the plan abandoned it: what is left open
    // is what was open before the connect.
    assert_eq!(
        open_descriptors(),
        before - 1,
        "the live listener went with the server"
    );
    drop(hole);
}

#[tokio::test]
async fn a_failed_connect_names_every_address_and_why() {
    let _alone = ONE_AT_A_TIME.lock().await;
    // A port nothing listens on, on two loopback addresses.
    let port = TcpListener::bind("127.0.0.3:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let entry = ResolveEntry::parse(&format!("down.test:{port}:127.0.0.3,127.0.0.4")).unwrap();
    let error = ClientBuilder::new()
        .connect_options(ConnectOptions::new().with_resolve(entry))
        .connect(&format!("ws://down.test:{port}/"))
        .await
        .unwrap_err();
    let found =
        find_error::<ConnectError>(&error).unwrap_or_else(|| panic!("no ConnectError in {error}"));
    let addrs: Vec<SocketAddr> = found.failures.iter().map(|(addr, _)| *addr).collect();
    assert_eq!(
        addrs,
        [
            SocketAddr::from((Ipv4Addr::new(127, 0, 0, 3), port)),
            SocketAddr::from((Ipv4Addr::new(127, 0, 0, 4), port)),
        ]
    );
    assert!(
        found
            .failures
            .iter()
            .all(|(_, why)| *why == Reason::Refused),
        "{found}"
    );
}

#[tokio::test]
async fn an_interface_that_does_not_exist_fails_each_attempt_and_loopback_connects() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let error = ClientBuilder::new()
        .connect_options(ConnectOptions::new().with_device("nosuchdev0"))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .await
        .unwrap_err();
    let found =
        find_error::<ConnectError>(&error).unwrap_or_else(|| panic!("no ConnectError in {error}"));
    assert_eq!(found.failures.len(), 1, "{found}");
    assert!(
        !matches!(found.failures[0].1, Reason::TimedOut | Reason::Refused),
        "{found}"
    );
    // Through `lo` the TCP connect goes through (the upgrade then fails: nothing answers).
    let through_lo = ClientBuilder::new()
        .handshake_timeout(Duration::from_millis(200))
        .connect_options(ConnectOptions::new().with_device("lo"))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .await;
    let error = through_lo.unwrap_err();
    assert!(find_error::<ConnectError>(&error).is_none(), "{error}");
    assert!(listener.accept().is_ok());
}
