//! What a failed TLS connection owes its peer, for every transport: the policy written once.
//!
//! This module owns the decision (after a failure, send the fatal alert rustls queued; a
//! server answers a client that spoke plaintext to its TLS port with an HTTP 400 it can read
//! instead; a client owes a plaintext server nothing). It does not own the writing: the
//! transport writes the bytes, best effort and bounded in time, then closes.

use crate::{PLAINTEXT_ON_TLS_PORT, TlsCodec, TlsError};

/// What a [`TlsCodec`] that failed owes its peer ([`TlsCodec::owed_to_peer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owed {
    /// Nothing to send: the codec has not failed, it queued no alert, or it is a client
    /// that met a plaintext server (the server would not read an alert).
    Nothing,
    /// The fatal alert rustls queued: write the codec's queued ciphertext
    /// ([`TlsCodec::write_tls_to`] while [`TlsCodec::wants_write`]).
    Alert,
    /// These bytes, written to the socket as they are, unencrypted: the HTTP 400
    /// ([`PLAINTEXT_ON_TLS_PORT`]) a server sends a client that spoke plaintext to it
    /// ([`TlsError::NotTls`]).
    Plaintext(&'static [u8]),
}

impl TlsCodec {
    /// What the peer is owed now that the connection failed (during the handshake or after).
    /// Ask once, after the failing call returned its error; write what it says, best effort
    /// (the peer may be gone) and bounded in time, then close. Before any failure:
    /// [`Owed::Nothing`].
    pub fn owed_to_peer(&self) -> Owed {
        match self.error() {
            None => Owed::Nothing,
            Some(TlsError::NotTls) if self.is_server() => Owed::Plaintext(PLAINTEXT_ON_TLS_PORT),
            Some(TlsError::NotTls) => Owed::Nothing,
            Some(_) if self.wants_write() => Owed::Alert,
            Some(_) => Owed::Nothing,
        }
    }
}
