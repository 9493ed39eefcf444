//! A blocking feed client: connect, subscribe, read messages, answer an application-level
//! heartbeat from the borrowed message, close cleanly.
//!
//! Against the CLI's echo server (it sends each message back, so the "feed" is the client's
//! own subscription and ticks echoed):
//!
//! ```text
//! cargo run -p tickwire-cli -- serve --port 9001 &
//! cargo run -p tickwire --example feed_client -- ws://127.0.0.1:9001/feed
//! ```
//!
//! A `wss://` URL works the same (Mozilla's roots; `ClientBuilder::tls` adds a private CA).

use std::time::Duration;

use tickwire::blocking::ClientBuilder;
use tickwire::ws::{CloseCode, Message, Recv};

fn main() -> Result<(), tickwire::ws::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001/feed".to_owned());
    let mut ws = ClientBuilder::new()
        .header("User-Agent", "tickwire-example")
        .read_timeout(Some(Duration::from_secs(5)))
        .connect(&url)?;
    ws.send_text(r#"{"op":"subscribe","args":["trades:BTC-USD"]}"#)?;
    for seq in 0..5 {
        ws.send_text(&format!(r#"{{"seq":{seq},"px":"64000.{seq}"}}"#))?;
    }
    ws.send_text(r#"{"op":"ping"}"#)?;
    ws.flush()?;

    let mut received = 0;
    while received < 7 {
        let (event, mut sender) = ws.recv_with_sender()?;
        match event {
            Recv::Message(Message::Text(json)) if json.contains(r#""op":"ping""#) => {
                // Answered from the borrowed message's sender: no copy.
                sender.text(r#"{"op":"pong"}"#)?;
                println!("heartbeat answered");
            }
            Recv::Message(Message::Text(json)) => println!("{json}"),
            Recv::Timeout => {
                eprintln!("nothing for 5 s");
                break;
            }
            Recv::Closed(close) => {
                println!("the server closed: {close:?}");
                break;
            }
            _ => {}
        }
        received += 1;
        ws.flush()?;
    }
    ws.close(CloseCode::NORMAL, "done")?;
    ws.finish()?;
    Ok(())
}
