//! The rpc suite's server: a JSON-RPC 2.0 WebSocket API that answers every request at once
//! with its id, a thread per connection, pinned to the peer core.
//!
//! It reads each request's top-level `id` with the codec's scan and writes a fixed answer
//! around it (`{"jsonrpc":"2.0","id":N,"result":{...}}`, about 70 B), written at once, so
//! every row meets the same server. jsonrpsee's client needs a conforming JSON-RPC 2.0 answer; this is one.

use std::fmt::Write as _;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};

use tickwire_blocking::{Message, Recv, ServerBuilder};
use tickwire_codec::rpc::field_u64;

use crate::harness;

/// A running server; dropping it stops accepting and joins the listener.
pub struct RpcServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<()>>,
}

impl RpcServer {
    /// Listens on 127.0.0.1 (any port); connections are served on threads pinned to
    /// `peer_core`.
    pub fn start(peer_core: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("rpc server: bind");
        let addr = listener.local_addr().expect("rpc server: local address");
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let listener = thread::Builder::new()
            .name("rpc-server".to_owned())
            .spawn(move || {
                harness::pin_to(peer_core);
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    thread::spawn(move || {
                        harness::pin_to(peer_core);
                        serve(stream);
                    });
                }
            })
            .expect("rpc server: spawn the listener");
        Self {
            addr,
            stop,
            listener: Some(listener),
        }
    }

    /// The `ws://` URL of the API.
    pub fn url(&self) -> String {
        format!("ws://{}/ws-api", self.addr)
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.listener.take() {
            let _ = thread.join();
        }
    }
}

/// Answers every request on one connection until the client goes away, each at once.
fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let Ok(mut ws) = ServerBuilder::new().accept(stream) else {
        return;
    };
    let mut answer = String::with_capacity(128);
    while let Ok(Recv::Message(message)) = ws.recv() {
        let Message::Text(text) = message else {
            continue;
        };
        let id = field_u64(text.as_bytes(), "id").unwrap_or(0);
        answer.clear();
        let _ = write!(
            answer,
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"orderId":28,"status":"NEW"}}}}"#
        );
        if ws.send_text(&answer).and_then(|()| ws.flush()).is_err() {
            return;
        }
    }
}
