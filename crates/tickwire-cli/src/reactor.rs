//! `serve --runtime reactor`: the echo server on tickwire-server's epoll reactor, with the
//! same options and output as the blocking and tokio ones.

use std::net::SocketAddr;
use tickwire::codec::ws::OpCode;

use tickwire_server::{Conn, Decision, Handler, HandshakeFailure, Message, Request, ServerBuilder};

use crate::{ServeArgs, print_listening, server_tls};

/// Echoes every text or binary message with its opcode.
struct Echo;

impl Handler for Echo {
    type State = ();

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }

    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
        // A send fails only once the connection is closing: nothing to echo then.
        let _ = match message {
            Message::Text(text) => conn.send(OpCode::Text, text.as_bytes()),
            Message::Binary(data) => conn.send(OpCode::Binary, data),
            _ => Ok(()),
        };
    }

    /// The same line the blocking and tokio servers print for a connection that failed
    /// before it opened (interop checks read it for TLS failures).
    fn on_handshake_error(&mut self, _peer: Option<SocketAddr>, failure: HandshakeFailure) {
        eprintln!("tickwire: connection ended: {failure}");
    }
}

pub(crate) fn serve(args: &ServeArgs) -> Result<(), String> {
    let tls = server_tls(args)?;
    let mut builder = ServerBuilder::new().limits(args.limits.limits());
    if let Some(tls) = &tls {
        builder = builder.tls(tls.clone());
    }
    #[cfg(feature = "deflate")]
    if args.deflate {
        builder = builder.deflate(tickwire_server::DeflateConfig::default());
    }
    if let Some(workers) = args.workers {
        builder = builder.workers(workers);
    }
    builder = builder.busy_poll(std::time::Duration::from_micros(args.busy_poll_us));
    let server = builder
        .bind((args.bind.as_str(), args.port))
        .map_err(|e| format!("bind: {e}"))?;
    print_listening(tls.is_some(), server.local_addr());
    let running = server.start(|_| Echo).map_err(|e| e.to_string())?;
    running.join().map_err(|e| e.to_string())
}
