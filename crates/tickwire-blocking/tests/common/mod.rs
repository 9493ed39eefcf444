//! Helpers shared by the transport test binaries.

use std::net::{TcpListener, TcpStream};
use std::thread;

/// Starts a loopback listener and runs `serve` on the first accepted connection in a thread;
/// returns the `ws://` URL to connect to and the thread's handle.
pub(crate) fn server<T: Send + 'static>(
    serve: impl FnOnce(TcpStream) -> T + Send + 'static,
) -> (String, thread::JoinHandle<T>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        serve(stream)
    });
    (url, handle)
}
