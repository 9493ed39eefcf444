//! What both packet transports share: their error ([`Error`]), their builders, written once
//! and generic over a transport marker ([`PacketClientBuilder`], [`PacketServer`],
//! [`PacketPoolBuilder`], with the option structs they hold), a pool's rules ([`Slot`],
//! [`SlotOrder`], [`PoolGate`]), the [`Responder`] a server
//! handler answers through, and the payload formats of typed requests. The decisions behind
//! them are the codec's ([`tickwire_codec::packet::ClientCore`] and friends); the sockets are
//! the transports'.

mod builder;
mod client;
mod connection;
mod error;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
mod format;
mod options;
mod pool;
mod responder;

pub use builder::{
    Dial, LendsIdleBuffers, PacketBuilder, PacketClientBuilder, PacketPoolBuilder, PacketServe,
    PacketServer, PacketStreams, PacketTransport, Spawn,
};
pub use client::{AnswerWait, ClientIo, ConnectDefault, PacketClient, PacketLink};
pub use connection::{PacketConnection, ServerIo};
pub use error::Error;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
pub use format::Format;
#[cfg(feature = "bincode")]
pub use format::{Bincode, decode_bincode, encode_bincode};
#[cfg(feature = "serde-json")]
pub use format::{Json, decode_json, encode_json};
pub use options::{
    HasLinkOptions, LinkOptions, PacketClientOptions, PacketPoolOptions, PacketServerOptions,
};
pub use pool::{
    HealthCheck, PoolGate, PoolParts, PooledConnection, Slot, SlotOrder, TryLockSlot, Turn,
};
pub use responder::{Handler, Responder, answer_with};
pub use tickwire_codec::mux::RequestId;
pub use tickwire_codec::packet::Keepalive;
