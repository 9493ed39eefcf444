//! The receive buffer grows under a backlog: a read that fills it to the end doubles it, up to
//! `Config::max_read_buffer_size`, and no message is lost or changed on the way.

use super::*;

/// Unmasked server text frames of `len` bytes each, `count` of them back to back, each payload
/// numbering its frame.
fn server_stream(count: usize, len: usize) -> Vec<u8> {
    let mut bytes = Vec::new();
    for i in 0..count {
        let mut payload = format!("{i:08}").into_bytes();
        payload.resize(len, b'x');
        bytes.extend_from_slice(&[0x81, 126, (len >> 8) as u8, len as u8]);
        bytes.extend_from_slice(&payload);
    }
    bytes
}

/// Reads `stream` into `peer` as a socket with a backlog would: each read fills all the spare
/// space offered (or takes what is left), then every ready message is taken. Returns the
/// capacity seen after each read and the messages in order.
fn read_backlog(peer: &mut Peer, stream: &[u8], now: Instant) -> (Vec<usize>, Vec<Got>) {
    let (mut capacities, mut got) = (Vec::new(), Vec::new());
    let mut sent = 0;
    while sent < stream.len() {
        let spare = peer.conn.spare(&mut peer.bufs);
        let n = spare.len().min(stream.len() - sent);
        spare[..n].copy_from_slice(&stream[sent..sent + n]);
        sent += n;
        peer.conn.filled(&mut peer.bufs, n, now);
        capacities.push(peer.bufs.read.capacity());
        got.extend(events(peer));
    }
    (capacities, got)
}

fn expected(count: usize, len: usize) -> Vec<Got> {
    (0..count)
        .map(|i| {
            let mut t = format!("{i:08}");
            t.extend(std::iter::repeat_n('x', len - 8));
            Got::Text(t)
        })
        .collect()
}

#[test]
fn a_backlog_doubles_the_client_buffer_up_to_its_limit_and_keeps_every_message() {
    let now = Instant::now();
    let config = Config::client()
        .with_read_buffer_size(16 << 10)
        .with_max_read_buffer_size(64 << 10);
    let mut client = Peer::new(Role::Client, config, MaskSource::seeded(1), now);
    let stream = server_stream(2000, 300);
    let (capacities, got) = read_backlog(&mut client, &stream, now);
    assert_eq!(got, expected(2000, 300));
    assert_eq!(
        capacities.first(),
        Some(&(32 << 10)),
        "the first full read doubles"
    );
    assert_eq!(
        capacities.iter().max(),
        Some(&(64 << 10)),
        "growth stops at the limit"
    );
    assert!(
        capacities.windows(2).all(|w| w[0] <= w[1]),
        "the buffer never shrinks by itself: {capacities:?}"
    );
}

#[test]
fn reads_that_do_not_fill_the_buffer_leave_it_alone() {
    let now = Instant::now();
    let mut client = Peer::new(Role::Client, Config::client(), MaskSource::seeded(1), now);
    let initial = client.bufs.read.capacity();
    let mut got = 0;
    for chunk in server_stream(200, 300).chunks(1000) {
        let spare = client.conn.spare(&mut client.bufs);
        spare[..chunk.len()].copy_from_slice(chunk);
        client.conn.filled(&mut client.bufs, chunk.len(), now);
        got += events(&mut client).len();
    }
    assert_eq!(got, 200);
    assert_eq!(client.bufs.read.capacity(), initial);
}

#[test]
fn server_buffers_do_not_grow_by_default() {
    let now = Instant::now();
    let mut server = Peer::new(Role::Server, Config::server(), MaskSource::seeded(1), now);
    let initial = server.bufs.read.capacity();
    let mut stream = Vec::new();
    for i in 0..2000u32 {
        stream.extend_from_slice(&masked(0x81, format!("message {i:0>100}").as_bytes()));
    }
    let (capacities, got) = read_backlog(&mut server, &stream, now);
    assert_eq!(got.len(), 2000);
    assert_eq!(got[1999], text(&format!("message {:0>100}", 1999)));
    assert!(capacities.iter().all(|&c| c == initial), "{capacities:?}");
}
