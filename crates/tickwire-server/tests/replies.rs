//! Echo replies under socket backpressure. A plain server on Linux sends each wake-up's
//! replies in one batched submission, and what a socket does not take is queued again; this
//! checks what a client sees: every echo whole and in order, and every pong between frames,
//! never inside one.

mod support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::Duration;

use support::{Fixture, client_frame, read_frame, read_head};
use tickwire_server::ServerBuilder;

const CLIENTS: usize = 12;
const BURSTS: usize = 300;
/// Messages per burst: a reply run of several KiB, often more than the server's 4 KiB send
/// buffer and the client's 1 KiB receive buffer (each doubled by the kernel) hold.
const BURST: usize = 10;
/// A ping after every this many bursts.
const PING_EVERY: usize = 7;

/// The payload of message `i` of `client`: 1 to 1,500 bytes, distinct per message.
fn payload(client: usize, i: usize) -> Vec<u8> {
    let mut x = (client as u64 * 1_000_003 + i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let len = 1 + (x % 1_500) as usize;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// A client with a small receive buffer, upgraded.
fn small_client(addr: SocketAddr) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(1024).unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut stream = TcpStream::from(socket);
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(
            b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
              Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        )
        .unwrap();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    stream
}

#[test]
fn echoes_that_sockets_take_in_parts_arrive_whole_and_in_order_with_pongs_between() {
    // 4 KiB socket buffers: a burst's replies (several KiB in one run) often go only partly
    // into the socket, and the rest is queued and written when it drains.
    let fixture = Fixture::start(
        ServerBuilder::new()
            .workers(1)
            .socket_send_buffer(Some(4096)),
    );
    let clients: Vec<_> = (0..CLIENTS)
        .map(|client| {
            let addr = fixture.addr;
            thread::spawn(move || {
                let mut stream = small_client(addr);
                let mut sent = 0;
                let mut echoes = 0;
                let mut pongs = 0;
                for burst in 0..BURSTS {
                    // One write per burst: the server reads it, and replies, in one go.
                    let mut bytes = Vec::new();
                    for _ in 0..BURST {
                        bytes.extend_from_slice(&client_frame(2, &payload(client, sent)));
                        sent += 1;
                    }
                    let ping = burst % PING_EVERY == 0;
                    if ping {
                        bytes.extend_from_slice(&client_frame(9, &(burst as u32).to_be_bytes()));
                    }
                    stream.write_all(&bytes).unwrap();
                    // The server answers while nothing is read: its send stops short.
                    thread::sleep(Duration::from_micros(500));
                    // Every echo of the burst, and its pong, before the next burst.
                    let mut ponged = !ping;
                    while echoes < sent || !ponged {
                        let (first, got) = read_frame(&mut stream);
                        match first {
                            0x82 => {
                                assert!(
                                    got == payload(client, echoes),
                                    "client {client}: echo {echoes} differs ({} bytes)",
                                    got.len()
                                );
                                echoes += 1;
                            }
                            0x8a => {
                                assert_eq!(got, (burst as u32).to_be_bytes(), "client {client}");
                                ponged = true;
                                pongs += 1;
                            }
                            other => {
                                panic!("client {client}: frame {other:#x} after {echoes} echoes")
                            }
                        }
                    }
                }
                (echoes, pongs)
            })
        })
        .collect();
    for client in clients {
        assert_eq!(
            client.join().unwrap(),
            (BURSTS * BURST, BURSTS.div_ceil(PING_EVERY))
        );
    }
}
