//! A reactor server with topics: clients subscribe with a text message naming a topic, a
//! feed thread publishes ticks to it once, and the server delivers each to every subscriber
//! (encoded once, queued by reference). A blocking client connects, subscribes and prints
//! what arrives.
//!
//! ```text
//! cargo run -p tickwire --features server --example reactor_topics
//! ```
//! While it runs, `cargo run -p tickwire-cli -- connect ws://127.0.0.1:PORT` (the port it
//! prints) and typing `trades` subscribes a second client.

use std::net::SocketAddr;
use std::time::Duration;

use tickwire::blocking::ClientBuilder;
use tickwire::server::{Conn, Decision, Handler, Request, ServerBuilder, SlowConsumer, Topic};
use tickwire::ws::{Message, Recv};

struct Subscriptions {
    trades: Topic,
}

impl Handler for Subscriptions {
    type State = ();
    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }
    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
        if let Message::Text("trades") = message {
            conn.subscribe(&self.trades);
            let _ = conn.send_text(r#"{"subscribed":"trades"}"#);
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = ServerBuilder::new().workers(1).bind("127.0.0.1:0")?;
    let addr = server.local_addr();
    // A topic is named once per server: each worker's handler and the feed look it up by
    // name and get the same topic.
    let running = server.start(|worker| Subscriptions {
        trades: worker
            .handle
            .topic("trades", SlowConsumer::DropOldest)
            .expect("one policy per topic"),
    })?;
    let handle = running.handle().clone();
    let trades = handle.topic("trades", SlowConsumer::DropOldest)?;
    println!("serving ws://{addr}");

    let mut client = ClientBuilder::new()
        .read_timeout(Some(Duration::from_secs(5)))
        .connect(&format!("ws://{addr}/"))?;
    client.send_text_now("trades")?;
    // The subscription is acknowledged before the first tick is published.
    if let Recv::Message(Message::Text(ack)) = client.recv()? {
        println!("{ack}");
    }
    let feed = std::thread::spawn(move || {
        for seq in 0..5u32 {
            let tick = format!(r#"{{"seq":{seq},"px":"64000.{seq}"}}"#);
            let _ = handle.publish_text(&trades, &tick);
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    for _ in 0..5 {
        match client.recv()? {
            Recv::Message(Message::Text(tick)) => println!("{tick}"),
            _ => break,
        }
    }
    feed.join().expect("the feed thread");
    running.shutdown(Duration::from_secs(1))?;
    Ok(())
}
