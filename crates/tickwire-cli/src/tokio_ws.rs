//! `serve` and `connect` with `--runtime tokio`: the blocking commands' behaviour and output
//! (main.rs), through tickwire-tokio's WebSocket transports. The options, the TLS
//! configuration, the output and the exit status are shared with the blocking path; only the
//! I/O loops are here. `serve` runs a multi-thread runtime (a task per connection), `connect`
//! a current-thread one.

use std::time::Duration;

use tickwire::tokio::{
    ClientBuilder, CloseCode, Error, Message, Recv, ServerBuilder, Transport, WebSocket,
};
use tokio::net::TcpListener;
use tokio::runtime::Runtime;

use crate::{
    ConnectArgs, MaxTime, ServeArgs, client_builder, echo_message, echoed_message, over,
    print_listening, print_received, queue_stdin_lines, server_builder, server_tls, stdin_lines,
    with_liveness, with_net,
};

/// `tickwire serve --runtime tokio`: the echo server, a task per connection.
pub(crate) fn serve(args: &ServeArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(serve_connections(args))
}

/// `tickwire connect --runtime tokio`: stdin mode or `--echo`, on a current-thread runtime.
pub(crate) fn connect(args: &ConnectArgs) -> Result<(), String> {
    let builder = with_liveness(
        client_builder(ClientBuilder::new(), &args.client)?,
        &args.liveness,
    );
    let builder = with_net(builder, &args.net, args.max_time)?;
    let max = MaxTime::start(args.max_time);
    // The connect and handshake within the time left, exactly.
    let connected = async |builder: ClientBuilder| {
        let connecting = builder.connect(&args.url);
        match max {
            Some(max) => tokio::time::timeout(max.left().unwrap_or_default(), connecting)
                .await
                .map_err(|_| max.error())?,
            None => connecting.await,
        }
        .map_err(|e| e.to_string())
    };
    current_thread()?.block_on(async {
        if args.echo {
            let mut ws = connected(builder).await?;
            let outcome = echo_until_close(&mut ws, max).await;
            return finish(&mut ws, outcome).await;
        }
        let mut ws = connected(builder.read_timeout(Some(Duration::from_millis(20)))).await?;
        let outcome = print_until_close(&mut ws, max).await;
        finish(&mut ws, outcome).await
    })
}

/// The runtime of the one-connection commands (`connect`, `http`).
pub(crate) fn current_thread() -> Result<Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))
}

async fn serve_connections(args: &ServeArgs) -> Result<(), String> {
    let listener = TcpListener::bind((args.bind.as_str(), args.port))
        .await
        .map_err(|e| format!("bind: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let tls = server_tls(args)?;
    print_listening("echo", tls.is_some(), local);
    let builder = server_builder(ServerBuilder::new(), args);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let builder = builder.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let result = match &tls {
                Some(tls) => match builder.accept_tls(stream, tls).await {
                    Ok(mut ws) => echo_connection(&mut ws).await,
                    Err(e) => Err(e),
                },
                None => match builder.accept(stream).await {
                    Ok(mut ws) => echo_connection(&mut ws).await,
                    Err(e) => Err(e),
                },
            };
            if let Err(e) = result {
                eprintln!("tickwire: connection ended: {e}");
            }
        });
    }
}

/// Echoes until the peer's close, then ends the connection with [`WebSocket::finish`], also
/// after a failure (the close frame owed goes out, the socket is drained before it closes).
async fn echo_connection<S: Transport>(ws: &mut WebSocket<S>) -> Result<(), Error> {
    let echoed = echo_messages(ws).await;
    let finished = ws.finish().await;
    echoed.and(finished)
}

async fn echo_messages<S: Transport>(ws: &mut WebSocket<S>) -> Result<(), Error> {
    while let (Recv::Message(message), mut sender) = ws.recv_with_sender().await? {
        match message {
            Message::Text(text) => sender.text(text)?,
            Message::Binary(data) => sender.binary(data)?,
            Message::Close(_) | Message::Ping(_) | Message::Pong(_) => {}
        }
        // No flush here: the next recv writes queued echoes before it waits, so a burst of
        // messages is answered with one write.
    }
    Ok(())
}

/// Ends the connection after `outcome` (also after a failure); the first error wins.
async fn finish<S: Transport>(
    ws: &mut WebSocket<S>,
    outcome: Result<(), String>,
) -> Result<(), String> {
    let finished = ws.finish().await.map_err(|e| e.to_string());
    outcome.and(finished)
}

/// Stdin mode: sends stdin lines as text and prints what arrives until the close handshake.
/// The receive wakes every 20 ms (the read timeout) to pick up new lines, as the blocking
/// path does.
async fn print_until_close<S: Transport>(
    ws: &mut WebSocket<S>,
    max: Option<MaxTime>,
) -> Result<(), String> {
    let lines = stdin_lines();
    let mut stdin_open = true;
    loop {
        if let Some(outcome) = over(max) {
            return outcome;
        }
        if stdin_open && queue_stdin_lines(&lines, &mut ws.sender())? {
            stdin_open = false;
            ws.close(CloseCode::NORMAL, "")
                .await
                .map_err(|e| e.to_string())?;
        }
        ws.flush().await.map_err(|e| e.to_string())?;
        if let Some(outcome) = print_received(ws.recv().await) {
            return outcome;
        }
    }
}

async fn echo_until_close<S: Transport>(
    ws: &mut WebSocket<S>,
    max: Option<MaxTime>,
) -> Result<(), String> {
    loop {
        if let Some(outcome) = over(max) {
            return outcome;
        }
        if let Some(max) = max {
            ws.set_read_timeout(max.left());
        }
        let (recv, mut sender) = ws.recv_with_sender().await.map_err(|e| e.to_string())?;
        if matches!(recv, Recv::Timeout) {
            continue;
        }
        let message = match echoed_message(recv) {
            Ok(message) => message,
            Err(outcome) => return outcome,
        };
        if let Some(outcome) = echo_message(message, &mut sender) {
            return outcome;
        }
    }
}
