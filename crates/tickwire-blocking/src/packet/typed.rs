//! Typed requests and answers through serde: JSON (feature `serde-json`) and bincode 2
//! (feature `bincode`, its standard configuration: little-endian, variable-length integers).
//!
//! A value is serialized into a buffer the connection keeps and reuses (no allocation per
//! request once it has grown; the pool's, shared by threads, allocates one per request),
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

use super::{Error, PacketClient, PacketPool, RequestId};
use crate::Transport;

impl<S: Transport> PacketClient<S> {
    fn typed_request<F: Format, T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let answer = F::encode(value, &mut scratch)
            .and_then(|()| self.request(&scratch).and_then(F::decode));
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

    /// [`request`](Self::request) with `value` as JSON, the answer parsed as `R`.
    #[cfg(feature = "serde-json")]
    pub fn request_json<T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Json, T, R>(value)
    }

    /// [`send_request`](Self::send_request) with `value` as JSON; parse the answer with
    /// [`decode_json`](super::decode_json).
    #[cfg(feature = "serde-json")]
    pub fn send_json<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<RequestId, Error> {
        self.typed_send::<Json, T>(value)
    }

    /// [`request`](Self::request) with `value` in bincode 2, the answer decoded as `R`.
    #[cfg(feature = "bincode")]
    pub fn request_bincode<T: Serialize + ?Sized, R: DeserializeOwned>(
        &mut self,
        value: &T,
    ) -> Result<R, Error> {
        self.typed_request::<Bincode, T, R>(value)
    }

    /// [`send_request`](Self::send_request) with `value` in bincode 2; decode the answer
    /// with [`decode_bincode`](super::decode_bincode).
    #[cfg(feature = "bincode")]
    pub fn send_bincode<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<RequestId, Error> {
        self.typed_send::<Bincode, T>(value)
    }
}

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
