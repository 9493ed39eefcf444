//! Protocol errors and limits: every bad input fails the connection with the right close code,
//! queued behind any frame already partly written.

use super::*;

/// Feeds `bytes` to a fresh server, expects `error`, then checks the close it queued.
fn server_fails_with(bytes: &[u8], config: Config, error: Error, close: [u8; 4]) {
    let t0 = Instant::now();
    let mut server = Peer::new(Role::Server, config, MaskSource::seeded(1), t0);
    server.feed(bytes, t0);
    assert_eq!(events(&mut server), [Got::Error(error.clone())], "{error}");
    assert_eq!(server.state(), ConnectionState::Failed);
    assert_eq!(server.output(), close, "{error}");
    let code = CloseCode(u16::from_be_bytes([close[2], close[3]]));
    assert_eq!(events(&mut server), [Got::Error(Error::Failed(code))]);
    assert_eq!(server.poll_timeout(), None);
    assert!(!server.should_close_transport());
    assert_eq!(drain(&mut server, 1), close);
    assert!(server.should_close_transport());
}

#[test]
fn unmasked_frame_from_a_client_fails_with_close_1002() {
    server_fails_with(
        &[0x81, 0x02, b'h', b'i'],
        Config::server(),
        Error::UnmaskedFrame,
        [0x88, 0x02, 0x03, 0xea],
    );
}

#[test]
fn reserved_opcode_fails_with_close_1002() {
    server_fails_with(
        &masked(0x83, b""),
        Config::server(),
        Error::ReservedOpcode(0x3),
        [0x88, 0x02, 0x03, 0xea],
    );
}

#[test]
fn masked_frame_from_a_server_fails_the_client_with_close_1002() {
    let mut pair = Pair::new();
    pair.client.feed(&masked(0x81, b"hi"), pair.at(1));
    assert_eq!(events(&mut pair.client), [Got::Error(Error::MaskedFrame)]);
    assert_eq!(pair.client.state(), ConnectionState::Failed);
    assert_eq!(
        events(&mut pair.client),
        [Got::Error(Error::Failed(CloseCode::PROTOCOL_ERROR))]
    );
    pair.client_writes(pair.at(2));
    assert_eq!(
        events(&mut pair.server),
        [closed_with(CloseCode::PROTOCOL_ERROR, "")]
    );
    assert!(pair.client.should_close_transport());
}

#[test]
fn invalid_utf8_text_fails_with_close_1007_whole_or_partial() {
    let frame = masked(0x81, &[b'o', b'k', 0xff, b'!']);
    // Whole frame: caught when the message is taken. Partial: caught before it completes.
    for bytes in [&frame[..], &frame[..frame.len() - 1]] {
        server_fails_with(
            bytes,
            Config::server(),
            Error::InvalidUtf8,
            [0x88, 0x02, 0x03, 0xef],
        );
    }
}

#[test]
fn frame_over_the_limit_fails_with_close_1009() {
    let config = Config {
        limits: Limits {
            max_frame_size: 16,
            ..Limits::server()
        },
        ..Config::server()
    };
    let mut pair = Pair::with(Config::client(), config.clone());
    pair.client.sender().binary(&[7; 16]).unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Binary(vec![7; 16])]);

    let mut bytes = vec![0x82, 0x80 | 17, 0, 0, 0, 0];
    bytes.extend_from_slice(&[7; 17]);
    server_fails_with(
        &bytes,
        config,
        Error::FrameTooLarge { len: 17, limit: 16 },
        [0x88, 0x02, 0x03, 0xf1],
    );
}

#[test]
fn failure_close_follows_a_partly_written_data_frame() {
    let mut pair = Pair::new();
    pair.server.sender().text("abcdef").unwrap();
    pair.server.advance_output(2);
    pair.server.feed(&[0x81, 0x00], pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Error(Error::UnmaskedFrame)]);
    let mut expected = b"abcdef".to_vec();
    expected.extend_from_slice(&[0x88, 0x02, 0x03, 0xea]);
    assert_eq!(drain(&mut pair.server, 3), expected);
}
