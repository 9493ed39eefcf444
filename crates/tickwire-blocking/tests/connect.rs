//! The connect path through the clients: Happy Eyeballs past a black-holed first address (fixed
//! addresses, the resolver hook, both families in a network namespace of the test's own), a
//! failed plan's error naming every address, the socket options. Alone in its binary: it
//! counts the process's descriptors, which other tests would change.
#![cfg(target_os = "linux")]

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::thread;
use std::time::{Duration, Instant};

use tickwire_blocking::codec::connect::{ConnectError, Reason, ResolveEntry};
use tickwire_blocking::{ClientBuilder, ConnectOptions, Message, Recv};
use tickwire_test_support::connect::{black_hole_beside, find_error, recording};

/// The two tests one at a time: each counts descriptors or opens sockets.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Echoes one WebSocket connection from `listener`.
fn echo_once(listener: TcpListener) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let mut ws = tickwire_blocking::accept(tcp).unwrap();
        while let (Recv::Message(Message::Text(text)), mut sender) = ws.recv_with_sender().unwrap()
        {
            sender.text(text).unwrap();
        }
        let _ = ws.finish();
    })
}

#[test]
fn a_black_holed_first_address_costs_the_stagger_not_the_connect_timeout() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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
        .unwrap();
    let took = started.elapsed();
    // The black hole holds its attempt for the 30 s connect timeout; the plan starts the
    // next address after the 250 ms stagger and takes the first that connects.
    assert!(took < Duration::from_secs(10), "connected after {took:?}");
    let peer = ws.stream().tcp().peer_addr().unwrap();
    assert_eq!(peer, SocketAddr::from((Ipv4Addr::new(127, 0, 0, 1), port)));
    ws.send_text_now("through").unwrap();
    match ws.recv().unwrap() {
        Recv::Message(Message::Text(text)) => assert_eq!(text, "through"),
        other => panic!("expected the echo, got {other:?}"),
    }
    ws.finish().unwrap();
    drop(ws);
    server.join().unwrap();
    // Alone, the black hole holds its attempt until the connect timeout.
    let alone = ResolveEntry::parse(&format!("hole.test:{port}:127.0.0.2")).unwrap();
    let error = ClientBuilder::new()
        .connect_timeout(Some(Duration::from_millis(300)))
        .connect_options(ConnectOptions::new().with_resolve(alone))
        .connect(&format!("ws://hole.test:{port}/"))
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

#[test]
fn a_failed_connect_names_every_address_and_why() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
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

#[test]
fn an_interface_that_does_not_exist_fails_each_attempt_and_loopback_connects() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let error = ClientBuilder::new()
        .connect_options(ConnectOptions::new().with_device("nosuchdev0"))
        .connect(&format!("ws://127.0.0.1:{port}/"))
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
        .connect(&format!("ws://127.0.0.1:{port}/"));
    let error = through_lo.unwrap_err();
    assert!(find_error::<ConnectError>(&error).is_none(), "{error}");
    assert!(listener.accept().is_ok());
}

#[test]
fn the_resolver_hook_is_asked_for_names_only_and_its_dead_first_address_costs_the_stagger() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (hole, live) =
        black_hole_beside(Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 1)).unwrap();
    let port = hole.addr.port();
    let good = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let server = echo_once(live);
    let (resolver, asked) = recording(vec![hole.addr, good]);
    let options = ConnectOptions::new().with_resolver(resolver);
    let started = Instant::now();
    let mut ws = ClientBuilder::new()
        .connect_timeout(Some(Duration::from_secs(30)))
        .connect_options(options.clone())
        .connect(&format!("ws://feed.test:{port}/"))
        .unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "connected after {took:?}");
    assert_eq!(ws.stream().tcp().peer_addr().unwrap(), good);
    assert_eq!(*asked.lock().unwrap(), [("feed.test".to_owned(), port)]);
    ws.finish().unwrap();
    drop(ws);
    server.join().unwrap();
    // An IP literal is its own address: the resolver is not asked (nothing listens there).
    let refused = ClientBuilder::new()
        .connect_options(options)
        .connect(&format!("ws://127.0.0.3:{port}/"))
        .unwrap_err();
    let found = find_error::<ConnectError>(&refused)
        .unwrap_or_else(|| panic!("no ConnectError in {refused}"));
    assert_eq!(found.failures[0].1, Reason::Refused, "{found}");
    assert_eq!(asked.lock().unwrap().len(), 1, "asked for an IP literal");
}

#[test]
fn a_resolver_that_fails_or_hangs_fails_the_connect_within_the_total_deadline() {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let failing = |_: &str, _: u16| -> std::io::Result<Vec<SocketAddr>> {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such feed in the directory",
        ))
    };
    let error = ClientBuilder::new()
        .connect_options(ConnectOptions::new().with_resolver(failing))
        .connect("ws://feed.test:9/")
        .unwrap_err();
    assert!(
        error.to_string().contains("no such feed in the directory"),
        "{error}"
    );
    let hanging = |_: &str, _: u16| -> std::io::Result<Vec<SocketAddr>> {
        thread::sleep(Duration::from_millis(1500));
        Ok(Vec::new())
    };
    let started = Instant::now();
    let error = ClientBuilder::new()
        .connect_options(
            ConnectOptions::new()
                .with_resolver(hanging)
                .with_total_timeout(Duration::from_millis(200)),
        )
        .connect("ws://feed.test:9/")
        .unwrap_err();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "gave up after {took:?}");
    let io = find_error::<std::io::Error>(&error).unwrap_or_else(|| panic!("{error}"));
    assert_eq!(io.kind(), std::io::ErrorKind::TimedOut, "{error}");
}

#[test]
fn the_socket_options_are_on_the_connected_socket() {
    use tickwire_core::connect::{Keepalive, SocketOptions};
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = echo_once(listener);
    let keepalive = Keepalive {
        idle: Duration::from_secs(7),
        interval: Duration::from_secs(3),
        retries: 4,
    };
    let socket = SocketOptions::new()
        .with_recv_buffer(256 * 1024)
        .with_send_buffer(128 * 1024)
        .with_keepalive(keepalive)
        .with_busy_poll(50)
        .with_tos(0xb8);
    let mut ws = ClientBuilder::new()
        .connect_options(ConnectOptions::new().with_socket(socket))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .unwrap();
    let tcp = socket2::SockRef::from(ws.stream().tcp());
    // Linux doubles a buffer size it is given (its bookkeeping), within the sysctl caps.
    assert!(tcp.recv_buffer_size().unwrap() >= 256 * 1024);
    assert!(tcp.send_buffer_size().unwrap() >= 128 * 1024);
    assert!(tcp.keepalive().unwrap());
    assert_eq!(tcp.tcp_keepalive_time().unwrap(), keepalive.idle);
    assert_eq!(tcp.tcp_keepalive_interval().unwrap(), keepalive.interval);
    assert_eq!(tcp.tcp_keepalive_retries().unwrap(), keepalive.retries);
    assert_eq!(
        tcp.busy_poll().unwrap(),
        50,
        "SO_BUSY_POLL (needs CAP_NET_ADMIN)"
    );
    assert_eq!(tcp.tos_v4().unwrap(), 0xb8);
    ws.send_text_now("marked").unwrap();
    assert!(matches!(ws.recv().unwrap(), Recv::Message(Message::Text(t)) if t == "marked"));
    ws.finish().unwrap();
    drop(ws);
    server.join().unwrap();
}

#[test]
fn both_families_in_a_namespace_of_its_own() {
    use std::net::Ipv6Addr;
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    tickwire_test_support::connect::in_new_netns(|| {
        // A black-holed IPv6 address first: the plan starts IPv4 after the stagger.
        let (hole, live) = black_hole_beside(Ipv6Addr::LOCALHOST, Ipv4Addr::LOCALHOST).unwrap();
        let port = hole.addr.port();
        let v4 = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let server = echo_once(live);
        let (resolver, _) = recording(vec![hole.addr, v4]);
        let started = Instant::now();
        let mut ws = ClientBuilder::new()
            .connect_timeout(Some(Duration::from_secs(30)))
            .connect_options(ConnectOptions::new().with_resolver(resolver))
            .connect(&format!("ws://dual.test:{port}/"))
            .unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "connected after {took:?}");
        assert_eq!(ws.stream().tcp().peer_addr().unwrap(), v4);
        ws.finish().unwrap();
        drop(ws);
        server.join().unwrap();
        drop(hole);
        // IPv6 answers: the resolver's first address wins, IPv4 is never tried (the plan
        // starts it only if IPv6 has not connected within the stagger).
        let v6_listener = TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).unwrap();
        let v6 = v6_listener.local_addr().unwrap();
        let server = echo_once(v6_listener);
        let (resolver, _) = recording(vec![v6, SocketAddr::from((Ipv4Addr::LOCALHOST, 9))]);
        let mut ws = ClientBuilder::new()
            .connect_options(ConnectOptions::new().with_resolver(resolver))
            .connect(&format!("ws://dual.test:{}/", v6.port()))
            .unwrap();
        assert_eq!(ws.stream().tcp().peer_addr().unwrap(), v6);
        ws.send_text_now("six").unwrap();
        assert!(matches!(ws.recv().unwrap(), Recv::Message(Message::Text(t)) if t == "six"));
        ws.finish().unwrap();
        drop(ws);
        server.join().unwrap();
    });
}
