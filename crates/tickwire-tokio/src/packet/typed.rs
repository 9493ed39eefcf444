//! Typed requests and answers through serde on the tokio packet transport: JSON (feature
//! `serde-json`) and bincode 2 (feature `bincode`), with the blocking crate's encoders and
//! decoders (tickwire-core's [`Format`]s), so both transports put the same bytes on the wire.
//! Typed answers (`Responder::respond_json`, `respond_bincode`) and the client's typed
//! requests (`PacketClient::request_json` and the rest, whose futures are
//! [`RequestFuture`](super::RequestFuture)s) are tickwire-core's, written once for both
//! transports; the pool's are here. Answers are deserialized from the borrowed payload.

use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "bincode")]
use tickwire_core::packet::Bincode;
use tickwire_core::packet::Format;
#[cfg(feature = "serde-json")]
use tickwire_core::packet::Json;

use super::{Error, PacketPool};

impl PacketPool {
    async fn typed_request<F: Format, T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        let mut payload = Vec::new();
        F::encode(value, &mut payload)?;
        self.request_with(&payload, F::decode).await?
    }

    /// [`request`](Self::request) with `value` as JSON, the answer parsed as `R`. Cancel
    /// safety as `request`.
    #[cfg(feature = "serde-json")]
    pub async fn request_json<T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Json, T, R>(value).await
    }

    /// [`request`](Self::request) with `value` in bincode 2, the answer decoded as `R`.
    /// Cancel safety as `request`.
    #[cfg(feature = "bincode")]
    pub async fn request_bincode<T: Serialize + ?Sized, R: DeserializeOwned>(
        &self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Bincode, T, R>(value).await
    }
}
