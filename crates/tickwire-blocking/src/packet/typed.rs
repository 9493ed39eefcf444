//! Typed requests and answers through serde: JSON (feature `serde-json`) and bincode 2
//! (feature `bincode`, its standard configuration: little-endian, variable-length integers).
//!
//! The client's typed requests are tickwire-core's (`PacketClient::request_json` and the
//! rest, written once for both transports); the pool's are here. A value is serialized into
//! a buffer the client keeps and reuses (no allocation per request once it has grown; the
//! pool's, shared by threads, allocates one per request),
//! then framed by the packet writer, which needs the finished payload to choose and apply
//! compression and to write the lengths. Answers are deserialized from the borrowed payload.
//! Typed answers (`Responder::respond_json`, `respond_bincode`) are tickwire-core's.

use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "bincode")]
use tickwire_core::packet::Bincode;
use tickwire_core::packet::Format;
#[cfg(feature = "serde-json")]
use tickwire_core::packet::Json;

use super::{Error, PacketPool};

impl PacketPool {
    fn typed_request<F: Format, T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        let mut payload = Vec::new();
        F::encode(value, &mut payload)?;
        self.request_with(&payload, F::decode)?
    }

    /// [`request`](Self::request) with `value` as JSON, the answer parsed as `R`.
    #[cfg(feature = "serde-json")]
    pub fn request_json<T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Json, T, R>(value)
    }

    /// [`request`](Self::request) with `value` in bincode 2, the answer decoded as `R`.
    #[cfg(feature = "bincode")]
    pub fn request_bincode<T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Bincode, T, R>(value)
    }
}
