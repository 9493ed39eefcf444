//! [`RequestWriter`]: what every request to one host shares, serialised once.

use super::builder::RequestBuilder;
use super::{Query, percent};
use crate::buf::WriteBuf;
use crate::http::ascii::is_target_byte;
use crate::http::{Method, WriteError, validate_header_name, validate_header_value};

/// The per-host part of every request: the `Host` header, a base path and default headers,
/// validated and serialised once, then copied into each request with one `memcpy`.
///
/// Made once per host (or per connection) and shared by reference; each request is built
/// with [`request`](Self::request) (or [`get`](Self::get), [`post`](Self::post) …) straight
/// into the caller's [`WriteBuf`], without allocating.
#[derive(Debug, Clone)]
pub struct RequestWriter {
    /// `""` or `/segment/...` without a trailing `/`.
    base_path: String,
    /// `Host: ...\r\n` followed by the default field lines.
    fixed_fields: Vec<u8>,
    host_len: usize,
}

impl RequestWriter {
    /// A writer for `host` (`api.example.com`, `api.example.com:8443`, `[::1]:8080`: written
    /// as the `Host` header, RFC 9110 §7.2) and `base_path` (`""` or `/api/v3`; a missing
    /// leading `/` is added, trailing `/`s are dropped), which is joined with each request's
    /// path by exactly one `/`.
    ///
    /// Errors with [`WriteError::InvalidMethodOrTarget`] when `host` is empty or holds a byte
    /// an authority cannot (RFC 3986 §3.2: only unreserved, sub-delims, `:`, `[`, `]`, `%`),
    /// or when `base_path` holds a byte a target cannot, or `?`.
    pub fn new(host: &str, base_path: &str) -> Result<Self, WriteError> {
        if host.is_empty() || !host.bytes().all(is_authority_byte) {
            return Err(WriteError::InvalidMethodOrTarget);
        }
        if !base_path.bytes().all(|b| is_target_byte(b) && b != b'?') {
            return Err(WriteError::InvalidMethodOrTarget);
        }
        let trimmed = base_path.trim_matches('/');
        let mut normalised = String::with_capacity(trimmed.len() + 1);
        if !trimmed.is_empty() {
            normalised.push('/');
            normalised.push_str(trimmed);
        }
        let mut fixed_fields = Vec::with_capacity(host.len() + 256);
        fixed_fields.extend_from_slice(b"Host: ");
        fixed_fields.extend_from_slice(host.as_bytes());
        fixed_fields.extend_from_slice(b"\r\n");
        Ok(Self {
            base_path: normalised,
            fixed_fields,
            host_len: host.len(),
        })
    }

    /// Adds a header written into every request, after `Host` and the defaults added before
    /// it, before the request's own headers. Validated here, once; on `Err` nothing changes.
    /// Framing headers (`Content-Length`, `Transfer-Encoding`) do not belong here: the
    /// builder writes them.
    pub fn default_header(&mut self, name: &str, value: &[u8]) -> Result<&mut Self, WriteError> {
        validate_header_name(name)?;
        validate_header_value(value)?;
        self.fixed_fields.extend_from_slice(name.as_bytes());
        self.fixed_fields.extend_from_slice(b": ");
        self.fixed_fields.extend_from_slice(value);
        self.fixed_fields.extend_from_slice(b"\r\n");
        Ok(self)
    }

    /// The `Host` header's value.
    pub fn host(&self) -> &str {
        let bytes = &self.fixed_fields[b"Host: ".len()..][..self.host_len];
        // Validated ASCII at construction.
        core::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The normalised base path: `""` or `/segment/...` without a trailing `/`.
    pub fn base_path(&self) -> &str {
        &self.base_path
    }

    /// Starts a `method` request for `path` (joined to the base path with exactly one `/`;
    /// `""` means the base path itself, or `/`). `path` may already hold a query (`/x?a=1`);
    /// [`query`](RequestBuilder::query) then continues it with `&`.
    ///
    /// The request line is written up to the path; query parameters may follow, then
    /// headers, then one of the finishing calls. Errors with
    /// [`WriteError::InvalidMethodOrTarget`] (and writes nothing) when `path` holds a space,
    /// a control, a non-ASCII byte or `#`.
    pub fn request<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        method: Method,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        let path = path.as_bytes();
        // One branch-free pass finds both whether every byte may stand in a target and
        // whether a query has begun: the short-circuiting `all` and `position` it replaces
        // cost about 140 instructions per request on the bench's POST
        // (`tickwire-bench http --callgrind`, `http_memory_callgrind`).
        let (valid, has_query) = path.iter().fold((true, false), |(valid, query), &b| {
            (valid & is_target_byte(b), query | (b == b'?'))
        });
        if !valid {
            return Err(WriteError::InvalidMethodOrTarget);
        }
        let start = buf.len();
        let token = method_token(method);
        let relative = trim_leading_slashes(path);
        // One '/' between base and path, none before a bare query ("?a=1" on "/api").
        let starts_segment = matches!(relative.first(), Some(&b) if b != b'?');
        let slash: &[u8] =
            if starts_segment || self.base_path.is_empty() || path.first() == Some(&b'/') {
                b"/"
            } else {
                b""
            };
        // One capacity check for the request line so far.
        let base = self.base_path.as_bytes();
        let line = buf.append_slot(token.len() + base.len() + slash.len() + relative.len());
        let (token_out, rest) = line.split_at_mut(token.len());
        token_out.copy_from_slice(token);
        let (base_out, rest) = rest.split_at_mut(base.len());
        base_out.copy_from_slice(base);
        let (slash_out, relative_out) = rest.split_at_mut(slash.len());
        slash_out.copy_from_slice(slash);
        relative_out.copy_from_slice(relative);
        // A '?' among the leading slashes is impossible, so `has_query` speaks of `relative`.
        let query_separator = match has_query {
            false => Some(b'?'),
            true if matches!(relative.last(), Some(b'?' | b'&')) => None,
            true => Some(b'&'),
        };
        Ok(RequestBuilder::new(
            self,
            buf,
            start,
            method,
            query_separator,
        ))
    }

    /// A GET request, see [`request`](Self::request).
    pub fn get<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Get, path)
    }

    /// A POST request, see [`request`](Self::request).
    pub fn post<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Post, path)
    }

    /// A PUT request, see [`request`](Self::request).
    pub fn put<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Put, path)
    }

    /// A DELETE request, see [`request`](Self::request).
    pub fn delete<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Delete, path)
    }

    /// A PATCH request, see [`request`](Self::request).
    pub fn patch<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Patch, path)
    }

    /// A HEAD request, see [`request`](Self::request).
    pub fn head<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Head, path)
    }

    /// An OPTIONS request, see [`request`](Self::request).
    pub fn options<'w>(
        &'w self,
        buf: &'w mut WriteBuf,
        path: &str,
    ) -> Result<RequestBuilder<'w, Query>, WriteError> {
        self.request(buf, Method::Options, path)
    }

    /// `Host` and the default field lines, ready to copy.
    pub(super) fn fixed_fields(&self) -> &[u8] {
        &self.fixed_fields
    }
}

/// RFC 3986 §3.2.2 / §3.2.3: reg-name (unreserved, sub-delims, pct-encoded), IP literals in
/// brackets, and the `:` before a port.
fn is_authority_byte(b: u8) -> bool {
    percent::is_unreserved(b)
        || matches!(
            b,
            b'!' | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
                | b':'
                | b'['
                | b']'
                | b'%'
        )
}

/// The method and the space after it, as one piece to copy.
fn method_token(method: Method) -> &'static [u8] {
    match method {
        Method::Get => b"GET ",
        Method::Head => b"HEAD ",
        Method::Post => b"POST ",
        Method::Put => b"PUT ",
        Method::Delete => b"DELETE ",
        Method::Patch => b"PATCH ",
        Method::Options => b"OPTIONS ",
        Method::Connect => b"CONNECT ",
        Method::Trace => b"TRACE ",
    }
}

fn trim_leading_slashes(path: &[u8]) -> &[u8] {
    let n = path.iter().take_while(|&&b| b == b'/').count();
    &path[n..]
}
