//! A client and a server Connection driven by arbitrary operation sequences: sends of every
//! kind, closes, partial writes, timer calls and corrupted bytes. Oracle: never a panic,
//! queued output stays bounded, and whatever the server receives unmodified from the client
//! parses as the messages sent. The buffers are lent as a reactor lends them: an operation
//! moves a connection's unparsed bytes into a fresh buffer, or swaps in other buffers while the
//! connection is idle. Shared frames are queued by reference and written with vectored writes
//! that stop anywhere.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::ReadBuf;
use tickwire_codec::ws::{
    Buffers, CloseCode, Config, Connection, Event, MaskSource, Role, SharedFrame,
};

fuzz_target!(|ops: &[u8]| {
    let t0 = Instant::now();
    let mut config = Config::client();
    config.ping_interval = Some(Duration::from_millis(50));
    config.idle_timeout = Some(Duration::from_millis(500));
    let mut client = (
        Buffers::new(&config),
        Connection::new(Role::Client, config, MaskSource::seeded(5), t0),
    );
    let mut server = (
        Buffers::new(&Config::server()),
        Connection::new(Role::Server, Config::server(), MaskSource::seeded(6), t0),
    );
    let mut now = t0;
    for chunk in ops.chunks(2) {
        let (op, arg) = (chunk[0], *chunk.get(1).unwrap_or(&0));
        let payload = vec![arg; usize::from(arg)];
        let ((from_bufs, from), (to_bufs, to)) = if op & 0x80 == 0 {
            (&mut client, &mut server)
        } else {
            (&mut server, &mut client)
        };
        match op & 0x0f {
            0 => drop(from.sender(from_bufs).text(&"é".repeat(usize::from(arg) / 2))),
            1 => drop(from.sender(from_bufs).binary(&payload)),
            2 => drop(from.sender(from_bufs).ping(&payload[..payload.len().min(125)])),
            3 => drop(from.close(from_bufs, CloseCode(u16::from(arg) * 20), "", now)),
            4 => {
                let n = from.output(from_bufs).len().min(usize::from(arg).max(1));
                let bytes = from.output(from_bufs)[..n].to_vec();
                from.advance_output(from_bufs, n);
                to.feed(to_bufs, &bytes, now);
            }
            5 => {
                let mut bytes = from.output(from_bufs).to_vec();
                let at = usize::from(arg) % bytes.len().max(1);
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 0x5a;
                }
                from.advance_output(from_bufs, bytes.len());
                to.feed(to_bufs, &bytes, now);
            }
            6 => {
                now += Duration::from_millis(u64::from(arg));
                let _ = from.handle_timeout(from_bufs, now);
            }
            7 => {
                // A reactor parking a partial frame: the unparsed bytes move to another buffer.
                to.release(to_bufs);
                let mut moved = ReadBuf::with_capacity(usize::from(arg));
                moved.extend_from_slice(to_bufs.read.data());
                to_bufs.read = moved;
            }
            8 => {
                // An idle connection gives its buffers back and gets a small fresh set.
                to.release(to_bufs);
                if to.is_idle(to_bufs) {
                    to.trim();
                    let mut config = Config::server();
                    config.read_buffer_size = usize::from(arg);
                    config.write_buffer_size = usize::from(arg);
                    *to_bufs = Buffers::new(&config);
                }
            }
            9 => drop(from.sender(from_bufs).shared(&SharedFrame::binary(&payload))),
            10 => {
                // A vectored write that stops after `arg` bytes, across the slices.
                let mut slices = [std::io::IoSlice::new(&[]); 4];
                let filled = from.output_vectored(from_bufs, &mut slices);
                let mut bytes = Vec::new();
                let mut budget = usize::from(arg).max(1);
                for slice in &slices[..filled] {
                    let n = slice.len().min(budget);
                    bytes.extend_from_slice(&slice[..n]);
                    budget -= n;
                }
                from.advance_output(from_bufs, bytes.len());
                to.feed(to_bufs, &bytes, now);
            }
            _ => loop {
                match to.poll(to_bufs) {
                    Ok(Event::Message(_)) => {}
                    Ok(Event::NeedMore | Event::Closed) | Err(_) => break,
                }
            },
        }
        assert!(
            client.1.output(&client.0).len() < 1 << 20
                && server.1.output(&server.0).len() < 1 << 20
        );
    }
});
