//! The payload formats of typed packet requests, for both transports: JSON (feature
//! `serde-json`) and bincode 2 (feature `bincode`, its standard configuration: little-endian,
//! variable-length integers). The transports serialize into a buffer they reuse and frame the
//! finished payload; answers are deserialized from the borrowed payload.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::Error;

/// One serialization format.
pub trait Format {
    /// Appends `value`, serialized, to `out`.
    fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error>;
    /// Deserializes `bytes` as `R`.
    fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, Error>;
}

#[cfg(feature = "serde-json")]
/// JSON through serde_json.
#[derive(Debug, Clone, Copy)]
pub struct Json;

#[cfg(feature = "serde-json")]
impl Format for Json {
    fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error> {
        serde_json::to_writer(out, value).map_err(|e| Error::Serialize(Box::new(e)))
    }

    fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, Error> {
        serde_json::from_slice(bytes).map_err(|e| Error::Deserialize(Box::new(e)))
    }
}

#[cfg(feature = "bincode")]
/// bincode 2, its standard configuration.
#[derive(Debug, Clone, Copy)]
pub struct Bincode;

#[cfg(feature = "bincode")]
impl Format for Bincode {
    fn encode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error> {
        bincode::serde::encode_into_std_write(value, out, bincode::config::standard())
            .map(drop)
            .map_err(|e| Error::Serialize(Box::new(e)))
    }

    fn decode<R: DeserializeOwned>(bytes: &[u8]) -> Result<R, Error> {
        bincode::serde::decode_from_slice(bytes, bincode::config::standard())
            .map(|(value, _)| value)
            .map_err(|e| Error::Deserialize(Box::new(e)))
    }
}

/// Parses a JSON payload (a request in a handler, or an answer from
/// `PacketClient::recv_response`) as `R`.
#[cfg(feature = "serde-json")]
pub fn decode_json<R: DeserializeOwned>(payload: &[u8]) -> Result<R, Error> {
    Json::decode(payload)
}

/// Decodes a bincode 2 payload as `R`.
#[cfg(feature = "bincode")]
pub fn decode_bincode<R: DeserializeOwned>(payload: &[u8]) -> Result<R, Error> {
    Bincode::decode(payload)
}

/// Appends `value` as JSON to `out` (for transports that frame it themselves, such as
/// tickwire-tokio's).
#[cfg(feature = "serde-json")]
pub fn encode_json<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error> {
    Json::encode(value, out)
}

/// Appends `value` in bincode 2 to `out`.
#[cfg(feature = "bincode")]
pub fn encode_bincode<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) -> Result<(), Error> {
    Bincode::encode(value, out)
}
