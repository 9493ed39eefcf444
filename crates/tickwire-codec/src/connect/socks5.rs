//! [`Socks5`]: a SOCKS5 CONNECT handshake (RFC 1928) with optional username/password
//! authentication (RFC 1929), sans-IO. The rules, in the order the proxy meets them:
//!
//! 1. The greeting offers "no authentication", and "username/password" when credentials
//!    are given; the proxy picks one (section 3) or refuses all (0xFF).
//! 2. With username/password, the proxy's status 0x00 accepts them; any other refuses.
//! 3. The CONNECT request names the target by domain name (the proxy resolves it, as
//!    `socks5h`) or by IP; the reply's code 0x00 opens the tunnel, any other is the
//!    proxy's refusal (section 6). The reply's bound address is parsed and kept.
//! 4. Bytes after the reply belong to the tunnel.
//!
//! At most one reply (4 + 1 + 255 + 2 bytes) is held at a time.

use core::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::proxy::{Credentials, Outbox, Progress, Target, fill};

const VERSION: u8 = 0x05; // RFC 1928 section 3
const AUTH_VERSION: u8 = 0x01; // RFC 1929 section 2
const METHOD_NONE: u8 = 0x00;
const METHOD_PASSWORD: u8 = 0x02;
const METHOD_REFUSED: u8 = 0xff;
const CMD_CONNECT: u8 = 0x01; // RFC 1928 section 4
const ATYP_V4: u8 = 0x01;
const ATYP_DOMAIN: u8 = 0x03;
const ATYP_V6: u8 = 0x04;

/// A SOCKS5 reply code (RFC 1928 section 6): an open newtype, so a code this crate does not
/// name is still reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ReplyCode(pub u8);

impl ReplyCode {
    /// 0x01: general SOCKS server failure.
    pub const GENERAL_FAILURE: Self = Self(0x01);
    /// 0x02: connection not allowed by ruleset.
    pub const NOT_ALLOWED: Self = Self(0x02);
    /// 0x03: network unreachable.
    pub const NETWORK_UNREACHABLE: Self = Self(0x03);
    /// 0x04: host unreachable.
    pub const HOST_UNREACHABLE: Self = Self(0x04);
    /// 0x05: connection refused.
    pub const CONNECTION_REFUSED: Self = Self(0x05);
    /// 0x06: TTL expired.
    pub const TTL_EXPIRED: Self = Self(0x06);
    /// 0x07: command not supported.
    pub const COMMAND_NOT_SUPPORTED: Self = Self(0x07);
    /// 0x08: address type not supported.
    pub const ADDRESS_TYPE_NOT_SUPPORTED: Self = Self(0x08);
}

impl fmt::Display for ReplyCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match *self {
            Self::GENERAL_FAILURE => "general SOCKS server failure",
            Self::NOT_ALLOWED => "connection not allowed by ruleset",
            Self::NETWORK_UNREACHABLE => "network unreachable",
            Self::HOST_UNREACHABLE => "host unreachable",
            Self::CONNECTION_REFUSED => "connection refused",
            Self::TTL_EXPIRED => "TTL expired",
            Self::COMMAND_NOT_SUPPORTED => "command not supported",
            Self::ADDRESS_TYPE_NOT_SUPPORTED => "address type not supported",
            _ => "unassigned reply code",
        };
        write!(f, "{text} (0x{:02x})", self.0)
    }
}

/// Why a SOCKS5 tunnel did not open. After an error every later call returns it again.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Socks5Error {
    /// The proxy answered with another version than 5 (RFC 1928 section 3): not a SOCKS5
    /// proxy.
    Version(u8),
    /// The proxy accepted none of the offered methods (0xFF, RFC 1928 section 3): it wants
    /// credentials when none were given, or another method.
    NoAcceptableMethod,
    /// The proxy picked a method that was not offered (the peer's fault).
    UnexpectedMethod(u8),
    /// The proxy refused the credentials (RFC 1929 section 2: a status other than 0x00).
    AuthFailed(u8),
    /// The proxy refused the CONNECT (RFC 1928 section 6).
    Reply(ReplyCode),
    /// The proxy's answer breaks RFC 1928 / 1929: a wrong sub-negotiation version, a
    /// non-zero reserved byte, an unknown address type.
    Malformed,
    /// The proxy closed the connection before the tunnel was up.
    Closed,
    /// Local misuse: the target's host is empty, longer than 255 bytes, or holds a control
    /// byte or a space.
    InvalidTarget,
    /// Local misuse: a user name or password is empty or longer than 255 bytes
    /// (RFC 1929 section 2).
    InvalidCredentials,
}

impl fmt::Display for Socks5Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Version(version) => write!(f, "not a SOCKS5 proxy (version {version})"),
            Self::NoAcceptableMethod => {
                f.write_str("the SOCKS5 proxy accepts none of the offered methods")
            }
            Self::UnexpectedMethod(method) => {
                write!(f, "the SOCKS5 proxy chose method {method}, not offered")
            }
            Self::AuthFailed(status) => {
                write!(
                    f,
                    "the SOCKS5 proxy refused the credentials (status {status})"
                )
            }
            Self::Reply(code) => write!(f, "the SOCKS5 proxy refused the connect: {code}"),
            Self::Malformed => f.write_str("the SOCKS5 proxy's answer is malformed"),
            Self::Closed => f.write_str("the SOCKS5 proxy closed the connection mid-handshake"),
            Self::InvalidTarget => f.write_str("the tunnel's target cannot be sent to SOCKS5"),
            Self::InvalidCredentials => {
                f.write_str("SOCKS5 credentials must be 1 to 255 bytes each")
            }
        }
    }
}

impl std::error::Error for Socks5Error {}

/// The address the proxy bound for the tunnel (the reply's BND.ADDR and BND.PORT).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundAddr {
    /// An IP address and port.
    Ip(SocketAddr),
    /// A domain name (lossy UTF-8) and port.
    Domain(String, u16),
}

#[derive(Debug)]
enum Stage {
    Method,
    Auth,
    Reply,
    Tunnel,
    Failed(Socks5Error),
}

/// One SOCKS5 handshake, driven like [`HttpConnect`](super::HttpConnect): write
/// [`pending_write`](Self::pending_write), give every byte read to
/// [`receive`](Self::receive) until [`Progress::Tunnel`] or an error.
#[derive(Debug)]
pub struct Socks5 {
    out: Outbox,
    held: Vec<u8>,
    tunnel: Vec<u8>,
    request: Vec<u8>,
    auth: Option<Vec<u8>>,
    bound: Option<BoundAddr>,
    stage: Stage,
}

impl Socks5 {
    /// The handshake for a tunnel to `target`, offering username/password authentication
    /// when `credentials` are given. A host that is an IP address is sent as one; a name
    /// is sent for the proxy to resolve.
    pub fn new(target: &Target, credentials: Option<&Credentials>) -> Result<Self, Socks5Error> {
        if !target.is_valid() || target.host.len() > 255 {
            return Err(Socks5Error::InvalidTarget);
        }
        let mut request = vec![VERSION, CMD_CONNECT, 0x00];
        match target.ip() {
            Some(IpAddr::V4(ip)) => {
                request.push(ATYP_V4);
                request.extend_from_slice(&ip.octets());
            }
            Some(IpAddr::V6(ip)) => {
                request.push(ATYP_V6);
                request.extend_from_slice(&ip.octets());
            }
            None => {
                request.extend_from_slice(&[ATYP_DOMAIN, target.host.len() as u8]);
                request.extend_from_slice(target.host.as_bytes());
            }
        }
        request.extend_from_slice(&target.port.to_be_bytes());
        let auth = credentials.map(auth_request).transpose()?;
        let mut out = Outbox::default();
        if auth.is_some() {
            out.push(&[VERSION, 2, METHOD_NONE, METHOD_PASSWORD]);
        } else {
            out.push(&[VERSION, 1, METHOD_NONE]);
        }
        Ok(Self {
            out,
            held: Vec::with_capacity(16),
            tunnel: Vec::new(),
            request,
            auth,
            bound: None,
            stage: Stage::Method,
        })
    }

    /// The bytes owed to the proxy not yet written.
    pub fn pending_write(&self) -> &[u8] {
        self.out.pending()
    }

    /// `n` bytes of [`pending_write`](Self::pending_write) were written.
    pub fn written(&mut self, n: usize) {
        self.out.written(n);
    }

    /// Takes bytes read from the proxy, in any split. Each answer may queue the next
    /// request in [`pending_write`](Self::pending_write).
    pub fn receive(&mut self, mut bytes: &[u8]) -> Result<Progress, Socks5Error> {
        loop {
            match self.step(&mut bytes) {
                Ok(Some(progress)) => return Ok(progress),
                Ok(None) => {}
                Err(error) => {
                    self.held = Vec::new();
                    self.tunnel = Vec::new();
                    self.stage = Stage::Failed(error.clone());
                    return Err(error);
                }
            }
        }
    }

    /// The proxy closed its side: an error unless the tunnel is already up.
    pub fn receive_eof(&mut self) -> Result<Progress, Socks5Error> {
        match &self.stage {
            Stage::Tunnel => Ok(Progress::Tunnel),
            Stage::Failed(error) => Err(error.clone()),
            _ => {
                self.stage = Stage::Failed(Socks5Error::Closed);
                Err(Socks5Error::Closed)
            }
        }
    }

    /// The address the proxy bound, once the tunnel is up.
    pub fn bound(&self) -> Option<&BoundAddr> {
        self.bound.as_ref()
    }

    /// How many bytes of an incomplete answer are held: never more than one reply
    /// (262 bytes).
    pub fn held_bytes(&self) -> usize {
        self.held.len()
    }

    /// The bytes that followed the proxy's reply: the target's first bytes.
    pub fn tunnel_bytes(&self) -> &[u8] {
        &self.tunnel
    }

    /// Takes [`tunnel_bytes`](Self::tunnel_bytes), leaving it empty.
    pub fn take_tunnel_bytes(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.tunnel)
    }

    /// One rule on the input: `Some` when the caller must wait (or the tunnel is up).
    fn step(&mut self, input: &mut &[u8]) -> Result<Option<Progress>, Socks5Error> {
        match &self.stage {
            Stage::Failed(error) => Err(error.clone()),
            Stage::Tunnel => {
                self.tunnel.extend_from_slice(input);
                Ok(Some(Progress::Tunnel))
            }
            Stage::Method => {
                if !fill(&mut self.held, 2, input) {
                    return Ok(Some(Progress::NeedMore));
                }
                let [version, method] = [self.held[0], self.held[1]];
                self.held.clear();
                if version != VERSION {
                    return Err(Socks5Error::Version(version));
                }
                match (method, &self.auth) {
                    (METHOD_NONE, _) => self.send_request(),
                    (METHOD_PASSWORD, Some(auth)) => {
                        self.out.push(auth);
                        self.stage = Stage::Auth;
                    }
                    (METHOD_REFUSED, _) => return Err(Socks5Error::NoAcceptableMethod),
                    (other, _) => return Err(Socks5Error::UnexpectedMethod(other)),
                }
                Ok(None)
            }
            Stage::Auth => {
                if !fill(&mut self.held, 2, input) {
                    return Ok(Some(Progress::NeedMore));
                }
                let [version, status] = [self.held[0], self.held[1]];
                self.held.clear();
                if version != AUTH_VERSION {
                    return Err(Socks5Error::Malformed);
                }
                if status != 0x00 {
                    return Err(Socks5Error::AuthFailed(status));
                }
                self.send_request();
                Ok(None)
            }
            Stage::Reply => self.reply(input),
        }
    }

    fn send_request(&mut self) {
        self.out.push(&self.request);
        self.stage = Stage::Reply;
    }

    /// VER REP RSV ATYP BND.ADDR BND.PORT (RFC 1928 section 6); a refusal is reported as
    /// soon as its code arrives.
    fn reply(&mut self, input: &mut &[u8]) -> Result<Option<Progress>, Socks5Error> {
        if !fill(&mut self.held, 2, input) {
            return Ok(Some(Progress::NeedMore));
        }
        if self.held[0] != VERSION {
            return Err(Socks5Error::Version(self.held[0]));
        }
        if self.held[1] != 0x00 {
            return Err(Socks5Error::Reply(ReplyCode(self.held[1])));
        }
        if !fill(&mut self.held, 4, input) {
            return Ok(Some(Progress::NeedMore));
        }
        if self.held[2] != 0x00 {
            return Err(Socks5Error::Malformed);
        }
        let addr_len = match self.held[3] {
            ATYP_V4 => 4,
            ATYP_V6 => 16,
            ATYP_DOMAIN => {
                if !fill(&mut self.held, 5, input) {
                    return Ok(Some(Progress::NeedMore));
                }
                1 + usize::from(self.held[4])
            }
            _ => return Err(Socks5Error::Malformed),
        };
        if !fill(&mut self.held, 4 + addr_len + 2, input) {
            return Ok(Some(Progress::NeedMore));
        }
        let addr = &self.held[4..4 + addr_len];
        let port = u16::from_be_bytes([self.held[4 + addr_len], self.held[5 + addr_len]]);
        self.bound = Some(match self.held[3] {
            ATYP_V4 => {
                let octets: [u8; 4] = addr.try_into().map_err(|_| Socks5Error::Malformed)?;
                BoundAddr::Ip(SocketAddr::new(Ipv4Addr::from(octets).into(), port))
            }
            ATYP_V6 => {
                let octets: [u8; 16] = addr.try_into().map_err(|_| Socks5Error::Malformed)?;
                BoundAddr::Ip(SocketAddr::new(Ipv6Addr::from(octets).into(), port))
            }
            _ => BoundAddr::Domain(String::from_utf8_lossy(&addr[1..]).into_owned(), port),
        });
        self.held = Vec::new();
        self.stage = Stage::Tunnel;
        Ok(None)
    }
}

/// The RFC 1929 request: VER ULEN UNAME PLEN PASSWD.
fn auth_request(credentials: &Credentials) -> Result<Vec<u8>, Socks5Error> {
    let (user, pass) = (
        credentials.username.as_bytes(),
        credentials.password.as_bytes(),
    );
    if !(1..=255).contains(&user.len()) || !(1..=255).contains(&pass.len()) {
        return Err(Socks5Error::InvalidCredentials);
    }
    let mut request = Vec::with_capacity(3 + user.len() + pass.len());
    request.extend_from_slice(&[AUTH_VERSION, user.len() as u8]);
    request.extend_from_slice(user);
    request.push(pass.len() as u8);
    request.extend_from_slice(pass);
    Ok(request)
}
