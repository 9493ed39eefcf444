//! What both HTTP clients share: the blocking `HttpClient` and the
//! async one of tickwire-tokio. The socket and TLS options ([`HttpSocketOptions`]) are one
//! struct; the builders expand the same setter macro (which also checks the base URL), and the
//! clients the same per-method shortcuts, so an option or a method is documented, defaulted
//! and applied in one place (as the WebSocket builders' setters are, in `crate::options`).
//! Hidden: not API, and only for the two clients. What the async client adds (its pool, and
//! the options it passes to each connection) stays in tickwire-tokio.

use std::time::Duration;

use tickwire_codec::http::ClientSession;

/// The socket and TLS options of an HTTP client, fixed at build time. The defaults are the
/// builders' documented ones: a 10 s connect timeout, 30 s read and write timeouts, a 60 s
/// total deadline per request, TCP_NODELAY on, Mozilla's roots for TLS.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct HttpSocketOptions {
    /// Of the TCP connect per resolved address, and of the TLS handshake.
    pub connect_timeout: Option<Duration>,
    /// Of one wait for response bytes.
    pub read_timeout: Option<Duration>,
    /// Of one wait for the socket to accept request bytes.
    pub write_timeout: Option<Duration>,
    /// The total time of one request (connect, write, whole response); `None`: unbounded.
    pub request_deadline: Option<Duration>,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// For `https://`; `None`: the default configuration.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ClientTlsConfig>,
}

impl Default for HttpSocketOptions {
    fn default() -> Self {
        Self {
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(30)),
            write_timeout: Some(Duration::from_secs(30)),
            request_deadline: Some(ClientSession::DEFAULT_REQUEST_DEADLINE),
            nodelay: true,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl HttpSocketOptions {
    /// The bound on a TLS handshake: the connect timeout, or the read timeout when there is
    /// none, or 10 s (the request's deadline may shorten it further).
    pub fn tls_handshake_timeout(&self) -> Duration {
        self.connect_timeout
            .or(self.read_timeout)
            .unwrap_or(Duration::from_secs(10))
    }
}

/// Setters of an HTTP client builder with the fields `headers` (`Vec<(String, Vec<u8>)>`),
/// `user_agent` (`Option<String>`), `limits`, `read_buffer`, `write_buffer`, `probe_after`,
/// with the `deflate` feature `gzip`, and `socket` ([`HttpSocketOptions`]), and the check of
/// its `base_url` (`String`) that `build` starts with. The caller's crate needs the `deflate`
/// and `tls` features to mean what they mean here: they are its own features, since the macro
/// expands there.
#[doc(hidden)]
#[macro_export]
macro_rules! __http_client_builder_options {
    () => {
        /// A header sent with every request (an API key, `Accept`). Checked when building.
        pub fn default_header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
            self.headers
                .push((name.to_owned(), value.as_ref().to_vec()));
            self
        }

        /// The `User-Agent` header (`None`: send none).
        pub fn user_agent(mut self, agent: Option<&str>) -> Self {
            self.user_agent = agent.map(str::to_owned);
            self
        }

        /// Response limits (head size, header count, body size, chunk framing).
        pub fn limits(mut self, limits: $crate::codec::http::Limits) -> Self {
            self.limits = limits;
            self
        }

        /// Sends `Accept-Encoding: gzip` and inflates gzip bodies (bounded by the body limit)
        /// into a reused buffer. Needs the `deflate` feature; without it no `Accept-Encoding`
        /// is sent and bodies come back as sent.
        #[cfg(feature = "deflate")]
        pub fn gzip(mut self, gzip: bool) -> Self {
            self.gzip = gzip;
            self
        }

        /// Initial read buffer size (per connection) and write buffer size (per client
        /// handle); both grow as needed, within the limits.
        pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
            self.read_buffer = read;
            self.write_buffer = write;
            self
        }

        /// How long a keep-alive connection may sit idle before it is checked (one
        /// non-blocking `recv(MSG_PEEK)`) for a close by the server before the next request
        /// goes on it (default 500 ms). Back-to-back requests skip the check; `Duration::ZERO`
        /// checks before every reuse. The check keeps a request that may not be resent (a
        /// POST) from being written into a connection the server already closed while it was
        /// idle.
        pub fn probe_idle_after(mut self, idle: ::std::time::Duration) -> Self {
            self.probe_after = idle;
            self
        }

        /// TCP_NODELAY (default on).
        pub fn nodelay(mut self, nodelay: bool) -> Self {
            self.socket.nodelay = nodelay;
            self
        }

        /// Timeout of the TCP connect per resolved address, and of the TLS handshake.
        pub fn connect_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.socket.connect_timeout = timeout;
            self
        }

        /// Longest wait for response bytes; on expiry the request fails with
        /// [`HttpClientError::is_timeout`](crate::HttpClientError::is_timeout) and the
        /// connection is closed, never reused.
        pub fn read_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.socket.read_timeout = timeout;
            self
        }

        /// Longest wait for the socket to accept request bytes.
        pub fn write_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.socket.write_timeout = timeout;
            self
        }

        /// The total time one request may take: connecting (when it needs a connection; for a
        /// pooled client, waiting for one too), writing the request and reading the response
        /// to the end of its body, an automatic resend included. The per-read timeout bounds
        /// one wait for bytes, so a server that sends a byte every few milliseconds would hold
        /// a request forever without this. On expiry the request fails with
        /// [`HttpClientError::DeadlineExceeded`](crate::HttpClientError::DeadlineExceeded) and
        /// its connection is closed, never reused. `None` disables it (only the per-call
        /// timeouts remain).
        ///
        /// Default: on, 60 s
        /// ([`ClientSession::DEFAULT_REQUEST_DEADLINE`](tickwire_codec::http::ClientSession::DEFAULT_REQUEST_DEADLINE)
        /// says why); set a tighter one for orders. The blocking client cannot interrupt name
        /// resolution, so its deadline does not cover it; the async client's does.
        pub fn request_deadline(mut self, deadline: Option<::std::time::Duration>) -> Self {
            self.socket.request_deadline = deadline;
            self
        }

        /// TLS configuration for `https://` (default: Mozilla's roots, session resumption).
        #[cfg(feature = "tls")]
        pub fn tls(mut self, config: $crate::ClientTlsConfig) -> Self {
            self.socket.tls = Some(config);
            self
        }

        /// Where the client connects and the writer of its requests: the base URL checked
        /// ([`HttpClientError::InvalidUrl`](crate::HttpClientError::InvalidUrl), and
        /// `https://` refused without the `tls` feature), the default headers in order after
        /// `User-Agent` and, when gzip is asked for, `Accept-Encoding`.
        fn origin_and_writer(
            &self,
        ) -> ::core::result::Result<
            (
                $crate::codec::rest::Origin,
                $crate::codec::rest::RequestWriter,
            ),
            $crate::http::HttpClientError,
        > {
            let url = $crate::codec::rest::BaseUrl::parse(&self.base_url)
                .map_err(|invalid| $crate::http::HttpClientError::InvalidUrl(invalid.0))?;
            #[cfg(not(feature = "tls"))]
            if url.origin.secure {
                return Err($crate::http::HttpClientError::UnsupportedScheme(
                    "https".into(),
                ));
            }
            #[cfg(feature = "deflate")]
            let gzip = self.gzip;
            #[cfg(not(feature = "deflate"))]
            let gzip = false;
            let headers = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
            let writer = url.request_writer(self.user_agent.as_deref(), gzip, headers)?;
            Ok((url.origin, writer))
        }
    };
}

/// The per-method shortcuts of an HTTP client with a `request(method, path)` that returns
/// `$request<'_, Query>`: one line each, documented once for both clients.
#[doc(hidden)]
#[macro_export]
macro_rules! __http_client_request_methods {
    ($request:ident) => {
        /// Starts a GET.
        pub fn get(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Get, path)
        }

        /// Starts a HEAD.
        pub fn head(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Head, path)
        }

        /// Starts a POST (never resent automatically).
        pub fn post(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Post, path)
        }

        /// Starts a PUT.
        pub fn put(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Put, path)
        }

        /// Starts a PATCH (never resent automatically).
        pub fn patch(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Patch, path)
        }

        /// Starts a DELETE.
        pub fn delete(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Delete, path)
        }

        /// Starts an OPTIONS.
        pub fn options(&mut self, path: &str) -> $request<'_, $crate::codec::rest::Query> {
            self.request($crate::codec::http::Method::Options, path)
        }
    };
}
