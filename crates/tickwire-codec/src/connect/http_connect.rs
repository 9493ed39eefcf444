//! [`HttpConnect`]: an HTTP CONNECT tunnel's handshake (RFC 9110 section 9.3.6), sans-IO.
//! It writes one request and reads one response head: 2xx is the tunnel, anything else is
//! [`HttpProxyError::Refused`] with the status. The head is bounded; bytes after it belong
//! to the tunnel.

use core::fmt;

use base64::Engine as _;

use super::proxy::{Credentials, Outbox, Progress, Target};

/// The default bound on the proxy's response head.
pub const DEFAULT_MAX_HEAD_BYTES: usize = 16 * 1024;
/// The most header fields a response head may carry.
const MAX_HEADERS: usize = 64;

/// Why an HTTP CONNECT tunnel did not open. After an error every later call returns it
/// again: the connection to the proxy is spent.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpProxyError {
    /// The proxy answered with a status outside 2xx (RFC 9110 section 9.3.6): 407 asks for
    /// (other) credentials, 403 forbids the target, 502 / 504 could not reach it.
    Refused {
        /// The status code.
        status: u16,
        /// The reason phrase, as sent (lossy UTF-8).
        reason: String,
    },
    /// The response head exceeded the configured bound (a limit, not the proxy's fault
    /// by protocol, but it ends the handshake).
    HeadTooLarge {
        /// The bound.
        limit: usize,
    },
    /// The proxy's answer is not an HTTP/1.x response head (the peer's fault).
    Malformed,
    /// The proxy closed the connection before the end of its response head.
    Closed,
    /// Local misuse: the target is empty or holds a control byte or a space.
    InvalidTarget,
    /// Local misuse: the user name holds a colon (RFC 7617 section 2) or a control byte,
    /// or the password a control byte.
    InvalidCredentials,
}

impl HttpProxyError {
    /// Whether the proxy asked for credentials (407 Proxy Authentication Required).
    pub fn is_auth_required(&self) -> bool {
        matches!(self, Self::Refused { status: 407, .. })
    }
}

impl fmt::Display for HttpProxyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused { status, reason } => {
                write!(f, "the proxy refused the tunnel: {status} {reason}")
            }
            Self::HeadTooLarge { limit } => {
                write!(f, "the proxy's response head exceeds {limit} bytes")
            }
            Self::Malformed => f.write_str("the proxy's response is not an HTTP/1.x head"),
            Self::Closed => f.write_str("the proxy closed the connection mid-handshake"),
            Self::InvalidTarget => f.write_str("the tunnel's target is not a valid host"),
            Self::InvalidCredentials => f.write_str("the proxy credentials cannot be sent"),
        }
    }
}

impl std::error::Error for HttpProxyError {}

#[derive(Debug)]
enum State {
    Head,
    Tunnel,
    Failed(HttpProxyError),
}

/// One HTTP CONNECT handshake. The driver writes [`pending_write`](Self::pending_write)
/// (reporting progress with [`written`](Self::written)), reads, and gives every byte read
/// to [`receive`](Self::receive) until it returns [`Progress::Tunnel`] or an error; at end
/// of stream it calls [`receive_eof`](Self::receive_eof).
#[derive(Debug)]
pub struct HttpConnect {
    out: Outbox,
    head: Vec<u8>,
    tunnel: Vec<u8>,
    max_head_bytes: usize,
    state: State,
}

impl HttpConnect {
    /// The handshake for a tunnel to `target`, with `Proxy-Authorization: Basic` when
    /// `credentials` are given, reading a response head of at most `max_head_bytes`
    /// ([`DEFAULT_MAX_HEAD_BYTES`] is a fair choice).
    pub fn new(
        target: &Target,
        credentials: Option<&Credentials>,
        max_head_bytes: usize,
    ) -> Result<Self, HttpProxyError> {
        if !target.is_valid() {
            return Err(HttpProxyError::InvalidTarget);
        }
        let authority = target.to_string();
        let mut out = Outbox::default();
        out.push(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n").as_bytes());
        if let Some(credentials) = credentials {
            let control = |text: &str| text.bytes().any(|b| b < 0x20 || b == 0x7f);
            if credentials.username.contains(':')
                || control(&credentials.username)
                || control(&credentials.password)
            {
                return Err(HttpProxyError::InvalidCredentials);
            }
            let pair = format!("{}:{}", credentials.username, credentials.password);
            let token = base64::engine::general_purpose::STANDARD.encode(pair);
            out.push(format!("Proxy-Authorization: Basic {token}\r\n").as_bytes());
        }
        out.push(b"\r\n");
        Ok(Self {
            out,
            head: Vec::new(),
            tunnel: Vec::new(),
            max_head_bytes,
            state: State::Head,
        })
    }

    /// The request bytes not yet written (empty once all are).
    pub fn pending_write(&self) -> &[u8] {
        self.out.pending()
    }

    /// `n` bytes of [`pending_write`](Self::pending_write) were written.
    pub fn written(&mut self, n: usize) {
        self.out.written(n);
    }

    /// Takes bytes read from the proxy, in any split. Once the tunnel is up, more bytes
    /// are the target's and are appended to [`tunnel_bytes`](Self::tunnel_bytes).
    pub fn receive(&mut self, mut bytes: &[u8]) -> Result<Progress, HttpProxyError> {
        match &self.state {
            State::Failed(error) => return Err(error.clone()),
            State::Tunnel => {
                self.tunnel.extend_from_slice(bytes);
                return Ok(Progress::Tunnel);
            }
            State::Head => {}
        }
        // Only up to the end of the head is held; a longer head fails once past the bound.
        let from = self.head.len().saturating_sub(3);
        let room = self.max_head_bytes - self.head.len();
        let take = bytes.len().min(room);
        self.head.extend_from_slice(&bytes[..take]);
        let Some(end) = find_head_end(&self.head, from) else {
            if take < bytes.len() || self.head.len() >= self.max_head_bytes {
                return self.fail(HttpProxyError::HeadTooLarge {
                    limit: self.max_head_bytes,
                });
            }
            return Ok(Progress::NeedMore);
        };
        self.tunnel.extend_from_slice(&self.head[end..]);
        bytes = &bytes[take..];
        self.tunnel.extend_from_slice(bytes);
        self.head.truncate(end);
        let result = parse_head(&self.head);
        self.head = Vec::new();
        match result {
            Ok(()) => {
                self.state = State::Tunnel;
                Ok(Progress::Tunnel)
            }
            Err(error) => {
                self.tunnel.clear();
                self.fail(error)
            }
        }
    }

    /// The proxy closed its side: an error unless the tunnel is already up.
    pub fn receive_eof(&mut self) -> Result<Progress, HttpProxyError> {
        match &self.state {
            State::Tunnel => Ok(Progress::Tunnel),
            State::Failed(error) => Err(error.clone()),
            State::Head => self.fail(HttpProxyError::Closed),
        }
    }

    /// How many bytes of an incomplete response head are held: never more than the bound.
    pub fn held_bytes(&self) -> usize {
        self.head.len()
    }

    /// The bytes that followed the proxy's response head: the target's first bytes.
    pub fn tunnel_bytes(&self) -> &[u8] {
        &self.tunnel
    }

    /// Takes [`tunnel_bytes`](Self::tunnel_bytes), leaving it empty.
    pub fn take_tunnel_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.tunnel)
    }

    fn fail(&mut self, error: HttpProxyError) -> Result<Progress, HttpProxyError> {
        self.head = Vec::new();
        self.state = State::Failed(error.clone());
        Err(error)
    }
}

/// The end of a head (just past its blank line), searching from `from`.
fn find_head_end(head: &[u8], from: usize) -> Option<usize> {
    head[from..]
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .map(|at| from + at + 4)
}

fn parse_head(head: &[u8]) -> Result<(), HttpProxyError> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut response = httparse::Response::new(&mut headers);
    match response.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(HttpProxyError::Malformed),
    }
    let status = response.code.ok_or(HttpProxyError::Malformed)?;
    if (200..300).contains(&status) {
        // RFC 9110 section 9.3.6: a 2xx to CONNECT has no content; its Content-Length or
        // Transfer-Encoding are ignored.
        return Ok(());
    }
    Err(HttpProxyError::Refused {
        status,
        reason: response.reason.unwrap_or("").to_owned(),
    })
}
