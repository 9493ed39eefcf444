//! A packet server and client: the binary packet protocol, requests multiplexed by id, one
//! thread per connection on the server side. The server here is started in-process on a
//! loopback port; `tickwire packet` (the CLI) runs the same server and client from a shell.
//!
//! ```text
//! cargo run -p tickwire --example packet_echo
//! ```

use std::net::TcpListener;
use std::time::Duration;

use tickwire::blocking::packet::{PacketClientBuilder, PacketServer};

fn main() -> Result<(), tickwire::packet::Error> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    // Each request is answered with its payload upper-cased.
    let server = PacketServer::new().spawn(listener, |_id, request, responder| {
        let answer = request.to_ascii_uppercase();
        let _ = responder.respond(&answer);
    })?;

    let mut client = PacketClientBuilder::new()
        .request_timeout(Some(Duration::from_secs(5)))
        .connect("127.0.0.1", port)?;
    // One at a time ...
    println!("{}", String::from_utf8_lossy(client.request(b"order 1")?));
    // ... or many in flight, answered in any order.
    let ids: Vec<_> = (0..3)
        .map(|n| client.send_request(format!("order {n}").as_bytes()))
        .collect::<Result<_, _>>()?;
    client.flush()?;
    for _ in &ids {
        let (id, answer) = client.recv_response()?;
        println!("{id:?}: {}", String::from_utf8_lossy(answer));
    }
    println!("ping: {:?}", client.ping()?);
    server.shutdown();
    Ok(())
}
