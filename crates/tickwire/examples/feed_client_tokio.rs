//! The feed client of `feed_client.rs` on tokio: the same builder and types, `connect`,
//! `recv` and `flush` awaited, the read bounded by `tokio::time::timeout`.
//!
//! ```text
//! cargo run -p tickwire-cli -- serve --port 9001 &
//! cargo run -p tickwire --features tokio --example feed_client_tokio -- ws://127.0.0.1:9001/feed
//! ```

use std::time::Duration;

use tickwire::tokio::ClientBuilder;
use tickwire::ws::{CloseCode, Message, Recv};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), tickwire::ws::Error> {
    let url = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "ws://127.0.0.1:9001/feed".to_owned());
    let mut ws = ClientBuilder::new().connect(&url).await?;
    ws.send_text(r#"{"op":"subscribe","args":["trades:BTC-USD"]}"#)?;
    for seq in 0..5 {
        ws.send_text(&format!(r#"{{"seq":{seq},"px":"64000.{seq}"}}"#))?;
    }
    ws.flush().await?;

    for _ in 0..6 {
        // `recv` is cancel-safe: a timeout that wins loses nothing.
        match tokio::time::timeout(Duration::from_secs(5), ws.recv()).await {
            Ok(Ok(Recv::Message(Message::Text(json)))) => println!("{json}"),
            Ok(Ok(Recv::Closed(close))) => {
                println!("the server closed: {close:?}");
                break;
            }
            Ok(Ok(_)) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => {
                eprintln!("nothing for 5 s");
                break;
            }
        }
    }
    ws.close(CloseCode::NORMAL, "done").await?;
    ws.finish().await?;
    Ok(())
}
