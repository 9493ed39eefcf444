//! [`HttpClient`] and its builder.

use crate::Blocking;
use tickwire_codec::http::ResponseReader;

use super::HttpClientError;
#[cfg(feature = "deflate")]
use super::gunzip::Gunzip;
use super::session::HttpConnection;
use tickwire_core::http::{BuildHttpClient, HttpClientOptions};

/// A blocking HTTP/1.1 client for one origin (`http://` or `https://` host and port) over one
/// keep-alive connection.
///
/// - The connection opens on the first request and is reused while the server keeps it.
///   Before reuse, one non-blocking peek tells whether the server closed it while idle; a
///   request that finds it closed anyway (a race with the server's idle timeout) is sent again
///   on a fresh connection when its method is idempotent. A POST or PATCH is never resent.
/// - Responses are borrowed: a [`ClientResponse`](super::ClientResponse) lives until the next
///   request on this client. With a Content-Length body, a request and its response allocate
///   nothing once the buffers have grown to fit.
/// - Every request is bounded by one total deadline (connect, write, and read to the end of
///   the body) on top of the per-read and per-write timeouts: on by default, 60 s
///   ([`HttpClientBuilder::request_deadline`]); on expiry the request fails with
///   [`HttpClientError::DeadlineExceeded`] and its connection is dropped.
/// - Redirects are reported ([`is_redirect`](super::ClientResponse::is_redirect)), not
///   followed.
///
/// The request methods ([`get`](tickwire_core::http::HttpClient::get), ...,
/// [`request`](tickwire_core::http::HttpClient::request)) are tickwire-core's, shared with
/// the tokio client; [`connect`](HttpConnection::connect),
/// [`connections_opened`](HttpConnection::connections_opened),
/// [`is_connected`](HttpConnection::is_connected) and
/// [`disconnect`](HttpConnection::disconnect) are this transport's, on the
/// [`HttpConnection`] the client dereferences to.
pub type HttpClient = tickwire_core::http::HttpClient<HttpConnection>;

/// Options for an [`HttpClient`], the builder both transports share. Defaults: TCP_NODELAY
/// on, a 10 s connect timeout, 30 s read and write timeouts, a 60 s total deadline per request
/// ([`request_deadline`](tickwire_core::http::HttpClientBuilder::request_deadline)),
/// [`Limits::client`](tickwire_codec::http::Limits::client), no gzip, a
/// `User-Agent: tickwire/<version>` header.
pub type HttpClientBuilder = tickwire_core::http::HttpClientBuilder<Blocking>;

impl BuildHttpClient for Blocking {
    type Client = HttpClient;

    fn build(options: HttpClientOptions) -> Result<HttpClient, HttpClientError> {
        let (origin, writer) = options.origin_and_writer()?;
        #[cfg(feature = "deflate")]
        let gunzip = options
            .gzip()
            .then(|| Gunzip::new(options.limits.max_body_bytes));
        #[cfg(not(feature = "deflate"))]
        let gunzip = None;
        let connection = HttpConnection::new(
            origin,
            options.socket,
            ResponseReader::new(options.limits),
            options.read_buffer,
            gunzip,
            options.probe_after,
        );
        Ok(HttpClient::from_parts(
            writer,
            (options.write_buffer, 64),
            connection,
        ))
    }
}
