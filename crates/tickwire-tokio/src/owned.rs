//! The `stream` feature: [`WebSocket`] as a `futures_core::Stream` of [`OwnedMessage`]s and a
//! `futures_sink::Sink` of them, for code written against tokio-tungstenite.
//!
//! This is the convenient path, not the fast one: each received message is copied into an
//! owned `String` / `Vec<u8>` (one allocation per message). The lending
//! [`WebSocket::recv`] stays the zero-copy path. Pings are answered and the close handshake
//! runs as with `recv`; at the end of the close handshake the stream yields the peer's close
//! once ([`OwnedMessage::Close`]), then ends (`None`). The read
//! timeout does not apply to the stream (race it against a timer instead).

use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tickwire_codec::ws::{CloseCode, Message, Progress};

use crate::{Error, Transport, WebSocket};

/// A message that owns its bytes: what the `Stream` yields and the `Sink` takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnedMessage {
    /// A text message.
    Text(String),
    /// A binary message.
    Binary(Vec<u8>),
    /// A ping (answered automatically when received).
    Ping(Vec<u8>),
    /// A pong.
    Pong(Vec<u8>),
    /// A close frame: its code and reason, `None` for an empty one. Sending it starts the
    /// close handshake (code 1000 for `None`).
    Close(Option<(CloseCode, String)>),
}

impl From<Message<'_>> for OwnedMessage {
    fn from(message: Message<'_>) -> Self {
        match message {
            Message::Text(text) => Self::Text(text.to_owned()),
            Message::Binary(bytes) => Self::Binary(bytes.to_vec()),
            Message::Ping(bytes) => Self::Ping(bytes.to_vec()),
            Message::Pong(bytes) => Self::Pong(bytes.to_vec()),
            Message::Close(frame) => Self::Close(frame.map(|f| (f.code, f.reason.to_owned()))),
        }
    }
}

impl<S: Transport> futures_core::Stream for WebSocket<S> {
    type Item = Result<OwnedMessage, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let progress = ready!(this.poll_fill(cx));
        Poll::Ready(match progress {
            Ok(Progress::Ready) => Some(
                this.take_message()
                    .map(|(message, _)| OwnedMessage::from(message)),
            ),
            // The end of the close handshake: the peer's close once, as a tokio-tungstenite
            // stream gives it, then the end.
            Ok(Progress::Closed) if !this.close_yielded => {
                this.close_yielded = true;
                let frame = this.connection().peer_close(this.buffers());
                Some(Ok(OwnedMessage::Close(
                    frame.map(|f| (f.code, f.reason.to_owned())),
                )))
            }
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        })
    }
}

impl<S: Transport> futures_sink::Sink<OwnedMessage> for WebSocket<S> {
    type Error = Error;

    /// Ready while less than the configured write buffer size is queued; beyond that the
    /// queue is written first (backpressure).
    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let this = self.get_mut();
        let limit = this.connection().config().write_buffer_size;
        if this.sender().queued() >= limit {
            ready!(this.poll_write_out(cx.waker()))?;
        }
        Poll::Ready(Ok(()))
    }

    fn start_send(self: Pin<&mut Self>, message: OwnedMessage) -> Result<(), Error> {
        let this = self.get_mut();
        match message {
            OwnedMessage::Text(text) => this.send_text(&text),
            OwnedMessage::Binary(bytes) => this.send_binary(&bytes),
            OwnedMessage::Ping(bytes) => this.ping(&bytes),
            OwnedMessage::Pong(bytes) => Ok(this.sender().pong(&bytes)?),
            OwnedMessage::Close(frame) => {
                let (code, reason) = frame.unwrap_or((CloseCode::NORMAL, String::new()));
                this.start_close(code, &reason)
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let this = self.get_mut();
        this.poll_write_out(cx.waker())
    }

    /// Starts the close handshake (1000) unless it was started, and writes what is queued.
    /// Read the stream to its end for the peer's reply, or call `finish`.
    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let this = self.get_mut();
        this.start_close(CloseCode::NORMAL, "")?;
        this.poll_write_out(cx.waker())
    }
}
