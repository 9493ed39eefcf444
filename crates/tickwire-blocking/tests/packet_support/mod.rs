//! What the packet transport tests share: an echo server on a free loopback port.

use std::net::TcpListener;

use tickwire_blocking::packet::{PacketServer, ServerHandle};

/// `server` spawned on a free 127.0.0.1 port, answering every request with its payload;
/// returns its handle and port.
pub(crate) fn echo_server(server: PacketServer) -> (ServerHandle, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = server
        .spawn(listener, |_, request, responder| {
            responder.respond(request).unwrap();
        })
        .unwrap();
    (handle, port)
}
