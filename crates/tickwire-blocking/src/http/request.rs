//! A request being built on a client: the shared [`ClientRequest`] of tickwire-core, sent
//! through this transport's connection.

use super::session::HttpConnection;

/// A request under construction, written straight into the client's write buffer.
///
/// Query parameters come first (they belong to the request line), then headers, then one of
/// the `send` methods, which returns the response: `Result<ClientResponse<'c>,
/// HttpClientError>`. A header that cannot be written (CR, LF or NUL in it) is reported by
/// `send`, and nothing is sent. `S` is the builder's stage
/// ([`Query`](tickwire_codec::rest::Query), [`WithHeaders`](tickwire_codec::rest::WithHeaders)).
pub type ClientRequest<'c, S> = tickwire_core::http::ClientRequest<'c, S, HttpConnection>;
