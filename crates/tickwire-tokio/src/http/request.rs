//! A request being built on a handle: the shared [`ClientRequest`] of tickwire-core, sent
//! through this transport's pool.

use super::exchange::HttpPool;

/// A request under construction, written straight into the handle's write buffer.
///
/// Query parameters come first (they belong to the request line), then headers, then one of
/// the `send` methods, whose future ([`ResponseFuture`](super::ResponseFuture)) completes
/// with the whole response. A header that cannot be written (CR, LF or NUL in it) is reported
/// by `send`, and nothing is sent. What dropping a `send` future leaves is in
/// [`HttpClient`'s cancel safety](super::HttpClient#cancel-safety). `S` is the builder's stage
/// ([`Query`](tickwire_codec::rest::Query), [`WithHeaders`](tickwire_codec::rest::WithHeaders)).
pub type ClientRequest<'c, S> = tickwire_core::http::ClientRequest<'c, S, HttpPool>;
