//! A response as the async client hands it out: complete, owning its connection until dropped.

use tickwire_codec::http::{Headers, Response, StatusCode, Version};

use super::pool::Checkout;

/// A final response, read whole before `send` returned it. It holds its connection (the body
/// is a slice of that connection's read buffer, or of its reused inflate buffer for a gzip
/// body): dropping it returns the connection to the pool, so drop it (or let it go out of
/// scope) once read, before waiting on anything unrelated. Responses held count against
/// [`max_connections`](super::HttpClientBuilder::max_connections): with all of them held, a
/// new request waits for one to be dropped, and fails at its deadline if none is.
///
/// The body is de-chunked, and gunzipped when the client asked for gzip and the server sent
/// `Content-Encoding: gzip`.
#[derive(Debug)]
pub struct ClientResponse {
    place: Checkout,
}

impl ClientResponse {
    pub(crate) fn new(place: Checkout) -> Self {
        Self { place }
    }

    /// The response as the codec parsed it (raw body before gunzip).
    pub fn raw(&self) -> Response<'_> {
        self.place
            .conn()
            .response()
            .expect("a response stays complete in its connection until it is dropped")
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.raw().status()
    }

    /// The reason phrase as sent.
    pub fn reason(&self) -> &str {
        self.raw().reason()
    }

    /// HTTP/1.0 or HTTP/1.1.
    pub fn version(&self) -> Version {
        self.raw().version()
    }

    /// The header fields, in wire order, looked up case-insensitively.
    pub fn headers(&self) -> Headers<'_> {
        self.raw().headers()
    }

    /// The first value of a header, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.raw().headers().get_str(name)
    }

    /// The body: de-chunked, and gunzipped when [`was_decompressed`](Self::was_decompressed).
    /// Empty for HEAD, 204 and 304.
    pub fn body(&self) -> &[u8] {
        self.place.conn().body().unwrap_or_default()
    }

    /// The body as UTF-8, if it is.
    pub fn text(&self) -> Option<&str> {
        core::str::from_utf8(self.body()).ok()
    }

    /// The trailer fields of a chunked body (empty otherwise).
    pub fn trailers(&self) -> Headers<'_> {
        self.raw().trailers()
    }

    /// True when the body was gzip on the wire and [`body`](Self::body) is the inflated form.
    pub fn was_decompressed(&self) -> bool {
        self.place.conn().was_decompressed()
    }

    /// True for 3xx with a `Location`: redirects are reported, not followed.
    pub fn is_redirect(&self) -> bool {
        self.status().is_redirection() && self.location().is_some()
    }

    /// The `Location` header, for a redirect.
    pub fn location(&self) -> Option<&str> {
        self.header("location")
    }

    /// Whether the connection stays open for the next request.
    pub fn keep_alive(&self) -> bool {
        self.raw().keep_alive()
    }
}
