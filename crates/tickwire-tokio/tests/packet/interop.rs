//! The tokio transport against the blocking one, both ways: the same wire, the same control
//! packets (a ping from either end is answered), answers out of order.

use std::net::TcpListener as StdListener;

use tickwire_blocking::packet as blocking;
use tickwire_tokio::packet::{PacketServer, RequestId};

use crate::support::{PATIENCE, builder, echo_server};

#[tokio::test]
async fn a_tokio_client_talks_to_the_blocking_server() {
    let listener = StdListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = blocking::PacketServer::new()
        .spawn(listener, |_, request, responder| {
            let mut answer = b"blocking: ".to_vec();
            answer.extend_from_slice(request);
            responder.respond(&answer).unwrap();
        })
        .unwrap();
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    assert_eq!(client.request(b"hi").await.unwrap(), b"blocking: hi");
    assert!(client.ping().await.unwrap() < PATIENCE);
    let ids: Vec<RequestId> = (0..16)
        .map(|i| client.send_request(format!("{i}").as_bytes()).unwrap())
        .collect();
    for _ in &ids {
        let (id, answer) = client.recv_response().await.unwrap();
        let i = ids.iter().position(|x| *x == id).unwrap();
        assert_eq!(answer, format!("blocking: {i}").as_bytes());
    }
    tokio::task::spawn_blocking(move || server.shutdown())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_client_talks_to_the_tokio_server() {
    let (server, port) = echo_server(PacketServer::new()).await;
    let answers = tokio::task::spawn_blocking(move || {
        let mut client = blocking::PacketClientBuilder::new()
            .connect_timeout(PATIENCE)
            .request_timeout(Some(PATIENCE))
            .connect("127.0.0.1", port)
            .unwrap();
        let first = client.request(b"from blocking").unwrap().to_vec();
        client.ping().unwrap();
        let a = client.send_request(b"a").unwrap();
        let b = client.send_request(b"b").unwrap();
        let mut rest = Vec::new();
        for _ in 0..2 {
            let (id, answer) = client.recv_response().unwrap();
            rest.push((id == a || id == b, answer.to_vec()));
        }
        rest.sort();
        (first, rest)
    })
    .await
    .unwrap();
    assert_eq!(answers.0, b"from blocking");
    assert_eq!(answers.1, [(true, b"a".to_vec()), (true, b"b".to_vec())]);
    server.shutdown().await;
}
