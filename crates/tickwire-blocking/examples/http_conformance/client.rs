//! The client the conformance cases drive: tickwire's blocking `HttpClient`, or with
//! `--runtime tokio` tickwire-tokio's async one, behind the blocking client's method names so
//! that one set of cases checks both. A tokio request is the async client's own `send` future,
//! run to completion on a current-thread runtime; its pool, keep-alive and gzip are the ones
//! under test. The facade records a request's query and headers and hands them to the real
//! builder in the order they were given (`query_display` and `header_display` as text).

use std::fmt::Display;
use std::sync::OnceLock;

use tickwire_blocking::HttpClientError;
use tickwire_blocking::codec::http::{Headers, Method, Response, StatusCode};
use tickwire_blocking::codec::rest::BodyWriter;
use tokio::runtime::Runtime;

/// The runtime of every tokio client, chosen once by [`use_tokio`]; unset means blocking.
static TOKIO: OnceLock<Runtime> = OnceLock::new();

/// Makes every client built from now on the async one, on a current-thread runtime.
pub(crate) fn use_tokio() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    TOKIO
        .set(runtime)
        .map_err(|_| "the runtime was already chosen".to_owned())
}

/// The tokio runtime, when `--runtime tokio` chose it.
pub(crate) fn tokio_runtime() -> Option<&'static Runtime> {
    TOKIO.get()
}

/// `tickwire_blocking::HttpClient` or `tickwire_tokio::HttpClient`.
// One for the whole run: the blocking client's size is not worth a box.
#[allow(clippy::large_enum_variant)]
pub(crate) enum HttpClient {
    Blocking(tickwire_blocking::HttpClient),
    /// The async client and the response last received, held here so that it lives as a
    /// blocking response does: until the client's next request (the blocking response
    /// borrows the client). The async response holds its connection until it is dropped, so
    /// the next request gets that connection back, as with the blocking client.
    Tokio {
        client: tickwire_tokio::HttpClient,
        held: Option<tickwire_tokio::ClientResponse>,
    },
}

/// Either builder, with the setters the cases use.
pub(crate) enum HttpClientBuilder {
    Blocking(tickwire_blocking::HttpClientBuilder),
    Tokio(tickwire_tokio::HttpClientBuilder),
}

impl HttpClient {
    pub(crate) fn new(base: &str) -> Result<Self, HttpClientError> {
        Self::builder(base).build()
    }

    pub(crate) fn builder(base: &str) -> HttpClientBuilder {
        match tokio_runtime() {
            None => HttpClientBuilder::Blocking(tickwire_blocking::HttpClient::builder(base)),
            Some(_) => HttpClientBuilder::Tokio(tickwire_tokio::HttpClient::builder(base)),
        }
    }

    pub(crate) fn connections_opened(&self) -> u64 {
        match self {
            Self::Blocking(c) => c.connections_opened(),
            Self::Tokio { client, .. } => client.connections_opened(),
        }
    }

    pub(crate) fn request(&mut self, method: Method, path: &str) -> ClientRequest<'_> {
        ClientRequest {
            client: self,
            method,
            path: path.to_owned(),
            query: Vec::new(),
            headers: Vec::new(),
        }
    }

    pub(crate) fn get(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Get, path)
    }

    pub(crate) fn head(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Head, path)
    }

    pub(crate) fn post(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Post, path)
    }

    pub(crate) fn put(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Put, path)
    }

    pub(crate) fn patch(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Patch, path)
    }

    pub(crate) fn delete(&mut self, path: &str) -> ClientRequest<'_> {
        self.request(Method::Delete, path)
    }
}

impl HttpClientBuilder {
    pub(crate) fn default_header(self, name: &str, value: &str) -> Self {
        match self {
            Self::Blocking(b) => Self::Blocking(b.default_header(name, value)),
            Self::Tokio(b) => Self::Tokio(b.default_header(name, value)),
        }
    }

    pub(crate) fn gzip(self, gzip: bool) -> Self {
        match self {
            Self::Blocking(b) => Self::Blocking(b.gzip(gzip)),
            Self::Tokio(b) => Self::Tokio(b.gzip(gzip)),
        }
    }

    pub(crate) fn build(self) -> Result<HttpClient, HttpClientError> {
        match self {
            Self::Blocking(b) => b.build().map(HttpClient::Blocking),
            Self::Tokio(b) => b
                .build()
                .map(|client| HttpClient::Tokio { client, held: None }),
        }
    }
}

/// A request being built: the query and headers as given, in order.
pub(crate) struct ClientRequest<'c> {
    client: &'c mut HttpClient,
    method: Method,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, Vec<u8>)>,
}

/// Puts a recorded request on a real builder (either runtime's: they share method names) and
/// ends it with `$send` (`send()`, `send_body(body)`, ... with `.await` for tokio). A request
/// without headers stays in the builder's query state, as a direct call would.
macro_rules! send_recorded {
    ($client:expr, $request:expr, $($send:tt)+) => {{
        let mut request = $client.request($request.method, &$request.path);
        for (key, value) in &$request.query {
            request = request.query(key, value);
        }
        match $request.headers.split_first() {
            None => request.$($send)+,
            Some(((name, value), rest)) => {
                let mut request = request.header(name, value);
                for (name, value) in rest {
                    request = request.header(name, value);
                }
                request.$($send)+
            }
        }
    }};
}

impl<'c> ClientRequest<'c> {
    pub(crate) fn query(mut self, key: &str, value: &str) -> Self {
        self.query.push((key.to_owned(), value.to_owned()));
        self
    }

    pub(crate) fn query_display(self, key: &str, value: impl Display) -> Self {
        self.query(key, &value.to_string())
    }

    pub(crate) fn header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// Recorded as the value's text: the real builder gets it through `header`.
    pub(crate) fn header_display(self, name: &str, value: impl Display) -> Self {
        self.header(name, value.to_string())
    }

    pub(crate) fn send(self) -> Result<ClientResponse<'c>, HttpClientError> {
        match self.client {
            HttpClient::Blocking(c) => {
                send_recorded!(c, self, send()).map(ClientResponse::Blocking)
            }
            HttpClient::Tokio { client, held } => {
                *held = None;
                block_on(held, async { send_recorded!(client, self, send().await) })
            }
        }
    }

    pub(crate) fn send_body(
        self,
        body: impl AsRef<[u8]>,
    ) -> Result<ClientResponse<'c>, HttpClientError> {
        let body = body.as_ref();
        match self.client {
            HttpClient::Blocking(c) => {
                send_recorded!(c, self, send_body(body)).map(ClientResponse::Blocking)
            }
            HttpClient::Tokio { client, held } => {
                *held = None;
                block_on(held, async {
                    send_recorded!(client, self, send_body(body).await)
                })
            }
        }
    }

    pub(crate) fn send_body_with<E>(
        self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> Result<ClientResponse<'c>, HttpClientError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        match self.client {
            HttpClient::Blocking(c) => {
                send_recorded!(c, self, send_body_with(write)).map(ClientResponse::Blocking)
            }
            HttpClient::Tokio { client, held } => {
                *held = None;
                block_on(held, async {
                    send_recorded!(client, self, send_body_with(write).await)
                })
            }
        }
    }
}

/// Runs a tokio request to completion and holds its response in `held` (empty: the previous
/// response was dropped before the request, so its connection went back to the pool).
fn block_on<'c>(
    held: &'c mut Option<tickwire_tokio::ClientResponse>,
    send: impl Future<Output = Result<tickwire_tokio::ClientResponse, HttpClientError>>,
) -> Result<ClientResponse<'c>, HttpClientError> {
    let runtime = tokio_runtime().expect("a tokio client exists only once the runtime is chosen");
    let response = runtime.block_on(send)?;
    Ok(ClientResponse::Tokio(held.insert(response)))
}

/// Either runtime's response, with the accessors the cases use.
pub(crate) enum ClientResponse<'c> {
    Blocking(tickwire_blocking::ClientResponse<'c>),
    Tokio(&'c tickwire_tokio::ClientResponse),
}

impl ClientResponse<'_> {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            Self::Blocking(r) => r.status(),
            Self::Tokio(r) => r.status(),
        }
    }

    pub(crate) fn reason(&self) -> &str {
        match self {
            Self::Blocking(r) => r.reason(),
            Self::Tokio(r) => r.reason(),
        }
    }

    pub(crate) fn headers(&self) -> Headers<'_> {
        match self {
            Self::Blocking(r) => r.headers(),
            Self::Tokio(r) => r.headers(),
        }
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        match self {
            Self::Blocking(r) => r.header(name),
            Self::Tokio(r) => r.header(name),
        }
    }

    pub(crate) fn body(&self) -> &[u8] {
        match self {
            Self::Blocking(r) => r.body(),
            Self::Tokio(r) => r.body(),
        }
    }

    pub(crate) fn text(&self) -> Option<&str> {
        std::str::from_utf8(self.body()).ok()
    }

    /// The response as it came off the wire (the body before gzip decoding).
    pub(crate) fn raw(&self) -> Response<'_> {
        match self {
            Self::Blocking(r) => *r.raw(),
            Self::Tokio(r) => r.raw(),
        }
    }

    pub(crate) fn was_decompressed(&self) -> bool {
        match self {
            Self::Blocking(r) => r.was_decompressed(),
            Self::Tokio(r) => r.was_decompressed(),
        }
    }

    pub(crate) fn is_redirect(&self) -> bool {
        match self {
            Self::Blocking(r) => r.is_redirect(),
            Self::Tokio(r) => r.is_redirect(),
        }
    }

    pub(crate) fn location(&self) -> Option<&str> {
        self.header("location")
    }

    pub(crate) fn keep_alive(&self) -> bool {
        match self {
            Self::Blocking(r) => r.keep_alive(),
            Self::Tokio(r) => r.keep_alive(),
        }
    }
}
