//! Typed requests and answers through serde on the tokio packet transport: JSON (feature
//! `serde-json`) and bincode 2 (feature `bincode`), with the blocking crate's encoders and
//! decoders (tickwire-core's [`Format`]s), so both transports put the same bytes on the wire.
//! Typed answers (`Responder::respond_json`, `respond_bincode`) are tickwire-core's. A value is serialized into a buffer the connection keeps and reuses;
//! answers are deserialized from the borrowed payload.

use serde::Serialize;
use serde::de::DeserializeOwned;

#[cfg(feature = "bincode")]
use tickwire_core::packet::Bincode;
use tickwire_core::packet::Format;
#[cfg(feature = "serde-json")]
use tickwire_core::packet::Json;

use super::{Error, PacketClient, PacketPool, RequestId};
use crate::Transport;

impl<S: Transport> PacketClient<S> {
    async fn typed_request<F: Format, T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let answer = match F::encode(value, &mut scratch) {
            Ok(()) => self.request(&scratch).await.and_then(F::decode),
            Err(error) => Err(error),
        };
        self.scratch = scratch;
        answer
    }

    fn typed_send<F: Format, T: Serialize + ?Sized>(
        &mut self,
        value: &T,
    ) -> Result<RequestId, Error> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let id = F::encode(value, &mut scratch).and_then(|()| self.send_request(&scratch));
        self.scratch = scratch;
        id
    }

    /// [`request`](Self::request) with `value` as JSON, the answer parsed as `R`. Cancel
    /// safety as `request` (a dropped call drops the reused serialization buffer; the next
    /// call grows a new one).
    #[cfg(feature = "serde-json")]
    pub async fn request_json<T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Json, T, R>(value).await
    }

    /// [`send_request`](Self::send_request) with `value` as JSON; parse the answer with
    /// `tickwire_core::packet::decode_json`. Not async.
    #[cfg(feature = "serde-json")]
    pub fn send_json<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<RequestId, Error> {
        self.typed_send::<Json, T>(value)
    }

    /// [`request`](Self::request) with `value` in bincode 2, the answer decoded as `R`.
    /// Cancel safety as `request`.
    #[cfg(feature = "bincode")]
    pub async fn request_bincode<T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Bincode, T, R>(value).await
    }

    /// [`send_request`](Self::send_request) with `value` in bincode 2; decode the answer
    /// with `tickwire_core::packet::decode_bincode`. Not async.
    #[cfg(feature = "bincode")]
    pub fn send_bincode<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<RequestId, Error> {
        self.typed_send::<Bincode, T>(value)
    }
}

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
