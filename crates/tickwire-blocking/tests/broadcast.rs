//! Fan-out over loopback TCP with the blocking transport: one frame encoded once, queued by
//! reference on every server connection between each connection's own messages, written with
//! vectored writes; every client receives it whole and in order.

use std::net::TcpListener;
use std::thread;

use tickwire_blocking::{ClientBuilder, Message, Recv, ServerBuilder, SharedFrame};

const CLIENTS: usize = 8;

#[test]
fn a_shared_frame_reaches_every_client_in_order_with_their_own_messages() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let tick: String = (0..2000)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    let frame = SharedFrame::text(&tick);
    let server = thread::spawn(move || {
        let mut sockets: Vec<_> = (0..CLIENTS)
            .map(|_| {
                ServerBuilder::new()
                    .accept(listener.accept().unwrap().0)
                    .unwrap()
            })
            .collect();
        for (i, ws) in sockets.iter_mut().enumerate() {
            ws.send_text(&format!("before {i}")).unwrap();
            ws.send_shared(&frame).unwrap();
            ws.send_text(&format!("after {i}")).unwrap();
            ws.send_shared(&frame).unwrap();
        }
        let references = frame.share_count();
        for ws in &mut sockets {
            ws.flush().unwrap();
        }
        (references, frame.share_count(), sockets)
    });
    let mut clients: Vec<_> = (0..CLIENTS)
        .map(|_| ClientBuilder::new().connect(&url).unwrap())
        .collect();
    for (i, ws) in clients.iter_mut().enumerate() {
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(format!("before {i}").as_str()))
        );
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(tick.as_str()))
        );
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(format!("after {i}").as_str()))
        );
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(tick.as_str()))
        );
    }
    let (queued, after_flush, _sockets) = server.join().unwrap();
    assert_eq!(
        queued,
        2 * CLIENTS + 1,
        "one reference per queued copy, no bytes copied"
    );
    assert_eq!(after_flush, 1, "written frames released their reference");
}
