//! A response as the client hands it out: borrowed from the connection's buffers.

use tickwire_codec::http::{Headers, Response, StatusCode, Version};

use super::HttpClientError;
use super::gunzip::Gunzip;

/// A final response, borrowed from the client until its next request.
///
/// The body is a slice of the read buffer (Content-Length, or chunked decoded in place), or
/// of the client's reused inflate buffer when the client asked for gzip and the server sent
/// `Content-Encoding: gzip`.
#[derive(Debug)]
pub struct ClientResponse<'a> {
    response: Response<'a>,
    body: &'a [u8],
    decoded: bool,
}

impl<'a> ClientResponse<'a> {
    pub(crate) fn new(
        response: Response<'a>,
        gunzip: Option<&'a mut Gunzip>,
    ) -> Result<Self, HttpClientError> {
        let inflated = match gunzip {
            Some(gunzip) => gunzip.decode(&response)?,
            None => None,
        };
        let (body, decoded) = match inflated {
            Some(body) => (body, true),
            None => (response.body(), false),
        };
        Ok(Self {
            response,
            body,
            decoded,
        })
    }

    /// The status code.
    pub fn status(&self) -> StatusCode {
        self.response.status()
    }

    /// The reason phrase as sent.
    pub fn reason(&self) -> &'a str {
        self.response.reason()
    }

    /// HTTP/1.0 or HTTP/1.1.
    pub fn version(&self) -> Version {
        self.response.version()
    }

    /// The header fields, in wire order, looked up case-insensitively.
    pub fn headers(&self) -> Headers<'a> {
        self.response.headers()
    }

    /// The first value of a header, if present and valid UTF-8.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.response.headers().get_str(name)
    }

    /// The body: de-chunked, and gunzipped when [`was_decompressed`](Self::was_decompressed).
    /// Empty for HEAD, 204 and 304.
    pub fn body(&self) -> &'a [u8] {
        self.body
    }

    /// The body as UTF-8, if it is.
    pub fn text(&self) -> Option<&'a str> {
        core::str::from_utf8(self.body).ok()
    }

    /// The trailer fields of a chunked body (empty otherwise).
    pub fn trailers(&self) -> Headers<'a> {
        self.response.trailers()
    }

    /// True when the body was gzip on the wire and [`body`](Self::body) is the inflated form.
    /// Always false without the `deflate` feature: bodies are then handed over as sent.
    pub fn was_decompressed(&self) -> bool {
        self.decoded
    }

    /// True for 3xx with a `Location`: redirects are reported, not followed.
    pub fn is_redirect(&self) -> bool {
        self.status().is_redirection() && self.location().is_some()
    }

    /// The `Location` header, for a redirect.
    pub fn location(&self) -> Option<&'a str> {
        self.header("location")
    }

    /// Whether the connection stays open for the next request.
    pub fn keep_alive(&self) -> bool {
        self.response.keep_alive()
    }

    /// The response as the codec parsed it (raw body before gunzip).
    pub fn raw(&self) -> &Response<'a> {
        &self.response
    }
}
