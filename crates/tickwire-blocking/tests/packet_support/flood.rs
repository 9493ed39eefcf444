//! A raw client that floods an echo server with requests and reads nothing until its writes
//! stall, then checks every request it sent whole is answered, in order. Shared by the
//! blocking and the tokio transports' tests (`#[path]`): a server must stop reading when its
//! answers pile up (`PacketConfig::max_queued`) rather than queue whatever the peer sends.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use tickwire_blocking::codec::buf::{ReadBuf, WriteBuf};
use tickwire_blocking::codec::packet::{PacketConfig, PacketReader, PacketWriter, ReadEvent};

/// Bytes of 1 KiB requests offered: far more than the sockets and a server's answer queue
/// hold, so a server that keeps reading lets all of it through.
const FLOOD: usize = 128 << 20;
const PAYLOAD: usize = 1 << 10;
/// Requests encoded per write.
const BATCH: usize = 1024;

/// Floods the echo server on `port`, asserts the writes stalled before half the flood went
/// out, then reads every answer (`patience` bounds each read).
pub(crate) fn never_reading_client(port: u16, patience: Duration) {
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
    let mut writer = PacketWriter::new(PacketConfig::client());
    let payload = vec![0x5A; PAYLOAD];
    let mut batch = WriteBuf::new(0, 0);
    let (mut next_id, mut written, mut packet_len) = (1u64, 0usize, 1usize);
    'flood: while written < FLOOD {
        batch.clear();
        for _ in 0..BATCH {
            writer.encode(&mut batch, next_id, &payload).unwrap();
            next_id += 1;
        }
        packet_len = batch.len() / BATCH;
        let mut bytes = batch.as_slice();
        while !bytes.is_empty() {
            match tcp.write(bytes) {
                Ok(n) => {
                    written += n;
                    bytes = &bytes[n..];
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    break 'flood;
                }
                Err(e) => panic!("writing requests: {e}"),
            }
        }
    }
    assert!(
        written < FLOOD / 2,
        "the server should stop reading: {written} of {FLOOD} bytes went out before the client's \
         writes stalled"
    );
    let whole = (written / packet_len) as u64;
    let mut reader = PacketReader::new(PacketConfig::client());
    let mut buf = ReadBuf::with_capacity(64 << 10);
    let mut inflated = Vec::new();
    tcp.set_read_timeout(Some(patience)).unwrap();
    let mut answered = 0u64;
    while answered < whole {
        match reader.poll(&mut buf, &mut inflated).unwrap() {
            ReadEvent::Packet(packet) => {
                answered += 1;
                assert_eq!(packet.header.request_id, answered, "answers in order");
                assert_eq!(packet.payload, &payload[..]);
            }
            ReadEvent::NeedMore { .. } => {
                let n = tcp.read(reader.spare(&mut buf)).unwrap();
                assert!(
                    n > 0,
                    "the server closed after {answered} of {whole} answers"
                );
                buf.filled(n);
            }
        }
    }
}
