//! The feed glue's own tests: failure mapping, options, stamps, seeds.

use super::*;
use std::time::Duration;
use tickwire_codec::ws::CloseCode;

#[test]
fn a_refused_handshake_reports_its_status_and_failures_their_kind() {
    let refused = Error::Handshake(HandshakeError::UnexpectedStatus {
        status: 429,
        body: Vec::new(),
    });
    assert_eq!(connect_failure(&refused), Disconnect::HandshakeStatus(429));
    assert_eq!(
        connect_failure(&Error::HandshakeTimeout),
        Disconnect::TimedOut
    );
    let refused_tcp = Error::Io(io::ErrorKind::ConnectionRefused.into());
    assert_eq!(connect_failure(&refused_tcp), Disconnect::ConnectFailed);
    assert_eq!(connection_failure(&Error::UnexpectedEof), Disconnect::Eof);
    let reset = Error::Io(io::ErrorKind::ConnectionReset.into());
    assert_eq!(connection_failure(&reset), Disconnect::Reset);
    let pong = Error::Protocol(tickwire_codec::ws::Error::PongTimeout);
    assert_eq!(connection_failure(&pong), Disconnect::TimedOut);
    let utf8 = Error::Protocol(tickwire_codec::ws::Error::InvalidUtf8);
    assert_eq!(connection_failure(&utf8), Disconnect::Protocol(1007));
    let frame = CloseFrame {
        code: CloseCode(4001),
        reason: "",
    };
    assert_eq!(peer_closed(Some(frame)), Disconnect::Closed(Some(4001)));
    assert_eq!(peer_closed(None), Disconnect::Closed(None));
}

#[test]
fn a_feed_connection_copies_the_options_under_the_feed_connect_timeout() {
    let mut options = ClientOptions::default();
    options.handshake.headers.push(("X-Key".into(), "k".into()));
    options.read_timeout = Some(Duration::from_secs(1));
    let copy = options.for_feed_connection(Duration::from_secs(2));
    assert_eq!(copy.connect_timeout, Some(Duration::from_secs(2)));
    assert_eq!(copy.handshake_timeout, Duration::from_secs(2));
    assert_eq!(copy.read_timeout, None);
    assert_eq!(copy.handshake.headers, options.handshake.headers);
}

#[test]
fn a_recorded_read_gives_its_monotonic_and_wall_time() {
    let epoch = Instant::now();
    let before = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let cell = StampCell::new(epoch);
    assert_eq!(cell.get(), RecvStamp::default());
    std::thread::sleep(Duration::from_millis(2));
    cell.record(None);
    let stamp = cell.get();
    assert!(stamp.recv_ns >= 2_000_000, "{stamp:?}");
    assert!(stamp.wall_ns >= before + 2_000_000, "{stamp:?}");
    assert_eq!(stamp.kernel_ns, None);
    cell.record(Some(7));
    assert_eq!(cell.get().kernel_ns, Some(7));
}

#[cfg(target_os = "linux")]
#[test]
fn kernel_reads_only_when_asked() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let socket = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    assert!(!kernel_reads(Timestamps::User, &socket).unwrap());
    assert!(kernel_reads(Timestamps::Kernel, &socket).unwrap());
}

#[test]
fn every_session_gets_its_own_seed() {
    assert_ne!(jitter_seed(), jitter_seed());
}
