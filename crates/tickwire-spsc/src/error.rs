//! The errors the channel's operations return.
//!
//! This module owns one type per operation family. Every error that stops a value from being
//! sent carries that value, so the caller gets it back (`into_inner`). None of them means the
//! channel is broken: "full", "empty" and "timed out" are momentary, and "disconnected" means the
//! other end was dropped, which is final.

use core::fmt;

/// [`Sender::send`](crate::Sender::send) failed because the [`Receiver`](crate::Receiver) was
/// dropped. Holds the value that was not sent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SendError<T>(pub T);

/// [`Receiver::recv`](crate::Receiver::recv) failed because the channel is empty and the
/// [`Sender`](crate::Sender) was dropped: no value will ever arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvError;

/// Why [`Sender::try_send`](crate::Sender::try_send) did not send. Both variants hold the value.
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrySendError<T> {
    /// The channel is full right now; the receiver is still there.
    Full(T),
    /// The receiver was dropped; nothing sent from now on would be received.
    Disconnected(T),
}

/// Why [`Sender::send_timeout`](crate::Sender::send_timeout) did not send. Both variants hold the
/// value.
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendTimeoutError<T> {
    /// The channel stayed full until the timeout passed.
    Timeout(T),
    /// The receiver was dropped.
    Disconnected(T),
}

/// Why [`Receiver::try_recv`](crate::Receiver::try_recv) returned no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TryRecvError {
    /// The channel is empty right now; the sender is still there.
    Empty,
    /// The channel is empty and the sender was dropped: no value will ever arrive.
    Disconnected,
}

/// Why [`Receiver::recv_timeout`](crate::Receiver::recv_timeout) returned no value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RecvTimeoutError {
    /// The channel stayed empty until the timeout passed.
    Timeout,
    /// The channel is empty and the sender was dropped: no value will ever arrive.
    Disconnected,
}

impl<T> SendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> TrySendError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(value) | Self::Disconnected(value) => value,
        }
    }

    /// Whether the send failed only because the channel was full.
    pub fn is_full(&self) -> bool {
        matches!(self, Self::Full(_))
    }

    /// Whether the send failed because the receiver was dropped.
    pub fn is_disconnected(&self) -> bool {
        matches!(self, Self::Disconnected(_))
    }
}

impl<T> SendTimeoutError<T> {
    /// The value that was not sent.
    pub fn into_inner(self) -> T {
        match self {
            Self::Timeout(value) | Self::Disconnected(value) => value,
        }
    }

    /// Whether the send failed only because the timeout passed.
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout(_))
    }

    /// Whether the send failed because the receiver was dropped.
    pub fn is_disconnected(&self) -> bool {
        matches!(self, Self::Disconnected(_))
    }
}

// `Debug` by hand, so the errors are `Debug` (and `Error`) for every `T`, as `std`'s are.
impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Debug for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

impl<T> fmt::Debug for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(_) => f.write_str("Timeout(..)"),
            Self::Disconnected(_) => f.write_str("Disconnected(..)"),
        }
    }
}

const DISCONNECTED_SEND: &str = "sending on a channel whose receiver was dropped";
const DISCONNECTED_RECV: &str = "receiving on an empty channel whose sender was dropped";

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DISCONNECTED_SEND)
    }
}

impl fmt::Display for RecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(DISCONNECTED_RECV)
    }
}

impl<T> fmt::Display for TrySendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("sending on a full channel"),
            Self::Disconnected(_) => f.write_str(DISCONNECTED_SEND),
        }
    }
}

impl<T> fmt::Display for SendTimeoutError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout(_) => f.write_str("timed out sending on a full channel"),
            Self::Disconnected(_) => f.write_str(DISCONNECTED_SEND),
        }
    }
}

impl fmt::Display for TryRecvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str("receiving on an empty channel"),
            Self::Disconnected => f.write_str(DISCONNECTED_RECV),
        }
    }
}

impl fmt::Display for RecvTimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Timeout => f.write_str("timed out receiving on an empty channel"),
            Self::Disconnected => f.write_str(DISCONNECTED_RECV),
        }
    }
}

impl<T> std::error::Error for SendError<T> {}
impl std::error::Error for RecvError {}
impl<T> std::error::Error for TrySendError<T> {}
impl<T> std::error::Error for SendTimeoutError<T> {}
impl std::error::Error for TryRecvError {}
impl std::error::Error for RecvTimeoutError {}

impl<T> From<SendError<T>> for TrySendError<T> {
    fn from(error: SendError<T>) -> Self {
        Self::Disconnected(error.0)
    }
}

impl<T> From<SendError<T>> for SendTimeoutError<T> {
    fn from(error: SendError<T>) -> Self {
        Self::Disconnected(error.0)
    }
}

impl From<RecvError> for TryRecvError {
    fn from(_: RecvError) -> Self {
        Self::Disconnected
    }
}

impl From<RecvError> for RecvTimeoutError {
    fn from(_: RecvError) -> Self {
        Self::Disconnected
    }
}
