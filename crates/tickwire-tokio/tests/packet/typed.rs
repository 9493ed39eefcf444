//! Typed requests and answers through serde, JSON and bincode 2, on a client, a pool and a
//! server handler; a payload that is not the type asked for is a typed, non-fatal error.

use serde::{Deserialize, Serialize};

use tickwire_tokio::packet::{
    Error, PacketPoolBuilder, PacketServer, ServerHandle, decode_bincode, decode_json,
};

use crate::support::{builder, listen};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    id: u64,
    symbol: String,
    price: f64,
    quantity: i32,
}

#[derive(Debug, PartialEq, Serialize, Deserialize)]
struct Ack {
    id: u64,
    accepted: bool,
}

/// Answers an order with an ack in the format it came in: JSON starts with `{`.
async fn ack_server() -> (ServerHandle, u16) {
    let (listener, port) = listen().await;
    let handle = PacketServer::new()
        .spawn(listener, |_, request, responder| {
            let ack = |order: Order| Ack {
                id: order.id,
                accepted: order.quantity > 0,
            };
            if request.first() == Some(&b'{') {
                let order: Order = decode_json(request).unwrap();
                responder.respond_json(&ack(order)).unwrap();
            } else if let Ok(order) = decode_bincode::<Order>(request) {
                responder.respond_bincode(&ack(order)).unwrap();
            } else {
                responder.respond(b"not an order").unwrap();
            }
        })
        .unwrap();
    (handle, port)
}

fn order(id: u64) -> Order {
    Order {
        id,
        symbol: "ESZ6".into(),
        price: 6021.25,
        quantity: 3,
    }
}

#[tokio::test]
async fn json_and_bincode_round_trip_on_a_client_and_a_pool() {
    let (server, port) = ack_server().await;
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    let ack: Ack = client.request_json(&order(1)).await.unwrap();
    assert_eq!(
        ack,
        Ack {
            id: 1,
            accepted: true
        }
    );
    let ack: Ack = client.request_bincode(&order(2)).await.unwrap();
    assert_eq!(
        ack,
        Ack {
            id: 2,
            accepted: true
        }
    );
    let id = client.send_json(&order(3)).unwrap();
    let (answered, payload) = client.recv_response().await.unwrap();
    assert_eq!(answered, id);
    assert_eq!(decode_json::<Ack>(payload).unwrap().id, 3);

    let pool = PacketPoolBuilder::new()
        .client(builder())
        .size(1)
        .build("127.0.0.1", port);
    let ack: Ack = pool.request_json(&order(4)).await.unwrap();
    assert_eq!(ack.id, 4);
    let ack: Ack = pool.request_bincode(&order(5)).await.unwrap();
    assert_eq!(ack.id, 5);
    server.shutdown().await;
}

#[tokio::test]
async fn an_answer_of_another_type_is_a_deserialize_error_and_the_connection_carries_on() {
    let (server, port) = ack_server().await;
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    match client.request_json::<_, Ack>(&"not an order").await {
        Err(error @ Error::Deserialize(_)) => assert!(!error.is_fatal()),
        other => panic!("expected a deserialize error, got {other:?}"),
    }
    let ack: Ack = client.request_json(&order(6)).await.unwrap();
    assert_eq!(ack.id, 6);
    server.shutdown().await;
}
