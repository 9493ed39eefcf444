//! The two Rust peers' echo servers, run as hidden subcommands of `tickwire-bench`
//! (`fastwebsockets-echo-server`, `tokio-tungstenite-echo-server`) so that each is a process
//! of its own: a tokio current-thread runtime on one pinned core, a task per connection, and
//! each library's documented server path. Both print `LISTENING PORT` as their first line.
//!
//! Owns the server loops only; the suite starts them through `servers.rs`.

use std::net::{Ipv4Addr, SocketAddr};

use futures_util::{StreamExt, TryStreamExt};
use tokio::net::{TcpListener, TcpStream};

use crate::timing;

/// `fastwebsockets-echo-server`: hyper HTTP/1.1 with upgrades, `fastwebsockets::upgrade`,
/// then a read-frame / write-frame loop over a `FragmentCollector` (auto pong and auto close
/// on, the defaults). Runs until killed.
pub fn fastwebsockets_server(port: u16, core: Option<usize>) -> Result<(), String> {
    serve(port, core, |stream| async move {
        let service = hyper::service::service_fn(fastwebsockets_upgrade);
        let connection = hyper::server::conn::http1::Builder::new()
            .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
            .with_upgrades();
        // A client that resets its connection is the normal end of a benchmark point.
        let _ = connection.await;
    })
}

/// `tokio-tungstenite-echo-server`: `accept_async`, then the read half forwarded into the
/// write half, data messages only (the library's own echo pattern; `forward` flushes when the
/// read side has nothing ready, so echoes batch per wake-up). Runs until killed.
pub fn tokio_tungstenite_server(port: u16, core: Option<usize>) -> Result<(), String> {
    serve(port, core, |stream| async move {
        let Ok(websocket) = tokio_tungstenite::accept_async(stream).await else {
            return;
        };
        let (write, read) = websocket.split();
        let _ = read
            .try_filter(|message| std::future::ready(message.is_binary() || message.is_text()))
            .forward(write)
            .await;
    })
}

/// Binds 127.0.0.1:`port`, prints `LISTENING PORT`, and runs `connection` as a task for
/// every accepted stream (TCP_NODELAY on) on a current-thread runtime pinned to `core`.
fn serve<F, Fut>(port: u16, core: Option<usize>, connection: F) -> Result<(), String>
where
    F: Fn(TcpStream) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    if let Some(core) = core
        && !timing::pin_to(core)
    {
        return Err(format!("cannot pin to core {core}"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let listener = TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("local_addr: {e}"))?;
        println!("LISTENING {}", local.port());
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                // Out of descriptors or similar: keep serving the connections already open.
                continue;
            };
            let _ = stream.set_nodelay(true);
            tokio::spawn(connection(stream));
        }
    })
}

/// hyper's service for one request: the upgrade response now, and the echo loop as a task
/// once the connection has been handed over.
async fn fastwebsockets_upgrade(
    mut request: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<http_body_util::Empty<bytes::Bytes>>, fastwebsockets::WebSocketError> {
    let (response, upgraded) = fastwebsockets::upgrade::upgrade(&mut request)?;
    tokio::spawn(async move {
        let Ok(websocket) = upgraded.await else {
            return;
        };
        let mut websocket = fastwebsockets::FragmentCollector::new(websocket);
        loop {
            let Ok(frame) = websocket.read_frame().await else {
                return;
            };
            let open = match frame.opcode {
                fastwebsockets::OpCode::Close => false,
                fastwebsockets::OpCode::Text | fastwebsockets::OpCode::Binary => {
                    websocket.write_frame(frame).await.is_ok()
                }
                _ => true,
            };
            if !open {
                return;
            }
        }
    });
    Ok(response)
}
