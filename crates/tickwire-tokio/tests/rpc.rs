//! The tokio order-entry handles against a server that answers out of order and pushes a fill
//! after each answer: every request's future resolves to its own response, pushed messages
//! reach the `Pushed` receiver, and a request after the close is refused. The session's rules
//! are the codec's (its tests); the CLI suite runs both drivers against the simulator.

use std::net::TcpListener;
use std::thread;

use tickwire_blocking::{Message, Recv};
use tickwire_codec::feed::FeedConfig;
use tickwire_codec::rpc::{OwnedOutcome, Rejected, Request, RpcConfig, field_u64};
use tickwire_tokio::ClientBuilder;
use tickwire_tokio::rpc::RpcClient;

/// A server that holds requests in batches of `batch`, answers each batch last first, and
/// pushes `{"e":"fill","of":ID}` after each answer.
fn server(batch: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        let mut held = Vec::new();
        while let Ok(Recv::Message(message)) = ws.recv() {
            let Message::Text(text) = message else {
                continue;
            };
            held.push(field_u64(text.as_bytes(), "id").unwrap());
            if held.len() < batch {
                continue;
            }
            for id in held.drain(..).rev() {
                let _ = ws.send_text(&format!(r#"{{"id":{id},"result":{{"echo":{id}}}}}"#));
                let _ = ws.send_text(&format!(r#"{{"e":"fill","of":{id}}}"#));
            }
            if ws.flush().is_err() {
                return;
            }
        }
    });
    format!("ws://{addr}/ws-api")
}

#[test]
fn each_request_future_resolves_to_its_own_response_out_of_order() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let url = server(4);
        let (client, mut pushed) =
            RpcClient::spawn(FeedConfig::new(url), RpcConfig::new(), ClientBuilder::new()).unwrap();
        let mut tasks = tokio::task::JoinSet::new();
        for n in 0..20u64 {
            let client = client.clone();
            tasks.spawn(async move {
                let text = format!(r#"{{"method":"order.place","params":{{"n":{n}}}}}"#);
                (n, client.request(text, Request::new()).await)
            });
        }
        let mut answered = Vec::new();
        while let Some(joined) = tasks.join_next().await {
            let (n, outcome) = joined.unwrap();
            let OwnedOutcome::Response(text) = outcome else {
                panic!("request {n}: {outcome:?}");
            };
            let id = field_u64(&text, "id").unwrap();
            assert!(String::from_utf8_lossy(&text).contains(&format!(r#""echo":{id}"#)));
            answered.push(id);
        }
        answered.sort_unstable();
        answered.dedup();
        assert_eq!(answered.len(), 20, "twenty distinct responses");
        let mut fills = 0;
        while fills < 20 {
            let message = pushed.recv().await.expect("a fill");
            assert!(message.starts_with(br#"{"e":"fill""#));
            fills += 1;
        }
        assert_eq!(pushed.dropped(), 0);

        client.close().await;
        let after = client.request(r#"{"method":"late"}"#, Request::new()).await;
        assert!(
            matches!(after, OwnedOutcome::Rejected(Rejected::Ended)),
            "{after:?}"
        );
    });
}
