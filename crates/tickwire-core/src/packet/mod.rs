//! What both packet transports share: their error ([`Error`]), the option structs their
//! builders hold, and the payload formats of typed requests.

mod error;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
mod format;
mod options;

pub use error::Error;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
pub use format::Format;
#[cfg(feature = "bincode")]
pub use format::{Bincode, decode_bincode, encode_bincode};
#[cfg(feature = "serde-json")]
pub use format::{Json, decode_json, encode_json};
pub use options::{PacketClientOptions, PacketPoolOptions, PacketServerOptions};
pub use tickwire_codec::mux::RequestId;
pub use tickwire_codec::packet::Keepalive;
