//! Typed requests and answers through serde, JSON and bincode 2, on a client, a pool and
//! a server handler; a payload that is not the type asked for is a typed, non-fatal error.

use std::net::TcpListener;

use serde::{Deserialize, Serialize};
use tickwire_blocking::packet::{
    Error, PacketClientBuilder, PacketPool, PacketServer, decode_bincode, decode_json,
};

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
fn ack_server() -> (tickwire_blocking::packet::ServerHandle, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = PacketServer::new()
        .spawn(listener, |_, request, responder| {
            if request.first() == Some(&b'{') {
                let order: Order = decode_json(request).unwrap();
                responder
                    .respond_json(&Ack {
                        id: order.id,
                        accepted: order.quantity > 0,
                    })
                    .unwrap();
            } else if let Ok(order) = decode_bincode::<Order>(request) {
                responder
                    .respond_bincode(&Ack {
                        id: order.id,
                        accepted: order.quantity > 0,
                    })
                    .unwrap();
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

#[test]
fn json_and_bincode_round_trip_on_a_client_and_a_pool() {
    let (server, port) = ack_server();
    let mut client = PacketClientBuilder::new()
        .connect("127.0.0.1", port)
        .unwrap();
    let ack: Ack = client.request_json(&order(1)).unwrap();
    assert_eq!(
        ack,
        Ack {
            id: 1,
            accepted: true
        }
    );
    let ack: Ack = client.request_bincode(&order(2)).unwrap();
    assert_eq!(
        ack,
        Ack {
            id: 2,
            accepted: true
        }
    );
    let id = client.send_json(&order(3)).unwrap();
    let (answered, payload) = client.recv_response().unwrap();
    assert_eq!(answered, id);
    assert_eq!(
        decode_json::<Ack>(payload).unwrap(),
        Ack {
            id: 3,
            accepted: true
        }
    );

    let pool = PacketPool::new("127.0.0.1", port);
    let ack: Ack = pool.request_json(&order(4)).unwrap();
    assert_eq!(ack.id, 4);
    let ack: Ack = pool.request_bincode(&order(5)).unwrap();
    assert_eq!(ack.id, 5);
    server.shutdown();
}

#[test]
fn an_answer_of_another_type_is_a_deserialize_error_and_the_connection_carries_on() {
    let (server, port) = ack_server();
    let mut client = PacketClientBuilder::new()
        .connect("127.0.0.1", port)
        .unwrap();
    let wrong: Result<Order, Error> = client.request_json(&order(1));
    match wrong {
        Err(error @ Error::Deserialize(_)) => assert!(!error.is_fatal()),
        other => panic!("expected a deserialize error, got {other:?}"),
    }
    let not_an_order: Result<Ack, Error> = client.request_bincode(&"text");
    assert!(matches!(not_an_order, Err(Error::Deserialize(_))));
    let ack: Ack = client.request_json(&order(9)).unwrap();
    assert_eq!(ack.id, 9);
    server.shutdown();
}
