//! A REST client: one keep-alive HTTP/1.1 connection per origin, requests written straight
//! into the connection's buffer, responses lent out parsed in place.
//!
//! Against any HTTP server, for example the CLI's sibling tools or a local httpbin:
//!
//! ```text
//! python3 -m http.server 8080 &      # any server on loopback
//! cargo run -p tickwire --example rest_client -- http://127.0.0.1:8080
//! ```
//!
//! Without an argument it starts a two-route JSON server of its own on a loopback port.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

use tickwire::blocking::HttpClient;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = match std::env::args().nth(1) {
        Some(url) => url,
        None => format!("http://{}", tiny_json_server()?),
    };
    let mut api = HttpClient::builder(&base)
        .default_header("Accept", "application/json")
        .build()?;
    let ticker = api.get("/ticker").query("symbol", "BTC-USD").send()?;
    println!(
        "{} {}",
        ticker.status(),
        String::from_utf8_lossy(ticker.body())
    );
    let order = api
        .post("/order")
        .header("Content-Type", "application/json")
        .send_body_with(|w| w.write_all(br#"{"symbol":"BTC-USD","qty":"0.5"}"#))?;
    println!(
        "{} {}",
        order.status(),
        String::from_utf8_lossy(order.body())
    );
    Ok(())
}

/// Answers every request on one keep-alive connection with a small JSON body; enough for the
/// example to run with nothing else installed.
fn tiny_json_server() -> std::io::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    std::thread::spawn(move || {
        let Ok((stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().expect("clone the socket"));
        let mut writer = stream;
        loop {
            let (mut line, mut length) = (String::new(), 0usize);
            let mut first = String::new();
            if reader.read_line(&mut first).unwrap_or(0) == 0 {
                return;
            }
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0; length];
            if std::io::Read::read_exact(&mut reader, &mut body).is_err() {
                return;
            }
            let answer = format!(r#"{{"request":"{}"}}"#, first.trim());
            let response = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{answer}",
                answer.len()
            );
            if writer.write_all(response.as_bytes()).is_err() {
                return;
            }
        }
    });
    Ok(addr)
}
