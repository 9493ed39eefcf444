//! `serve --runtime reactor`: the echo server on tickwire-server's epoll reactor, with the
//! same options and output as the blocking and tokio ones.

use std::net::SocketAddr;
use tickwire::blocking::codec::ws::OpCode;

use tickwire::server::{
    Conn, Decision, Handler, HandshakeFailure, Message, Request, ServerBuilder, ServerHandle,
    SharedFrame, SlowConsumer, Topic,
};

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
        handshake_error(failure);
    }
}

fn handshake_error(failure: HandshakeFailure) {
    eprintln!("tickwire: connection ended: {failure}");
}

/// `serve --pubsub`: every connection subscribes to one topic, and every text or binary
/// message received is published on it to every other subscriber (framed once, shared by
/// all), as `uws-echo PORT --pubsub` does.
struct Relay {
    handle: ServerHandle,
    topic: Topic,
}

impl Handler for Relay {
    type State = ();

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }

    fn on_open(&mut self, conn: &mut Conn<'_, ()>) {
        conn.subscribe(&self.topic);
    }

    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
        let frame = match message {
            Message::Text(text) => SharedFrame::text(text),
            Message::Binary(data) => SharedFrame::binary(data),
            _ => return,
        };
        // Fails only once the server is stopping.
        let _ = self
            .handle
            .publish_from(conn.id(), &self.topic, 0, move |_| frame);
    }

    fn on_handshake_error(&mut self, _peer: Option<SocketAddr>, failure: HandshakeFailure) {
        handshake_error(failure);
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
        builder = builder.deflate(tickwire::server::DeflateConfig::default());
    }
    if let Some(workers) = args.workers {
        builder = builder.workers(workers);
    }
    if let Some(mode) = args.busy_poll {
        builder = builder.busy_poll(mode);
    }
    builder = builder.batched_sends(!args.no_batched_sends);
    let server = builder
        .bind((args.bind.as_str(), args.port))
        .map_err(|e| format!("bind: {e}"))?;
    let kind = if args.pubsub { "pub/sub" } else { "echo" };
    print_listening(kind, tls.is_some(), server.local_addr());
    let running = if args.pubsub {
        server.start(|worker| {
            let handle = worker.handle.clone();
            // A slow subscriber loses its oldest messages rather than holding memory.
            let topic = handle
                .topic("t", SlowConsumer::DropOldest)
                .expect("one policy for the one topic");
            Relay { handle, topic }
        })
    } else {
        server.start(|_| Echo)
    }
    .map_err(|e| e.to_string())?;
    running.join().map_err(|e| e.to_string())
}
