//! Negotiation of permessage-deflate (RFC 7692 §5, §7.1): what a client offers, which offer a
//! server accepts and what it answers, and the client's check of that answer.
//!
//! Parameters are strict: a duplicate, an unknown parameter, a value where none is allowed (or
//! none where one is required), or a window size outside 8..=15 makes the offer or answer
//! invalid. A server answers an invalid offer with 400; a client fails the connection on an
//! invalid answer or one that selects what it did not offer.

use core::fmt;

use super::EXTENSION_NAME;

/// What to offer (client) or accept (server), and how to compress.
///
/// The four negotiation fields use the RFC's names, which are per role, not per side: each
/// says what it does for a client and for a server.
///
/// `#[non_exhaustive]` so that a setting can be added without breaking callers: start from
/// [`DeflateConfig::default`] and change fields with the `with_*` methods.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeflateConfig {
    /// Compression level, 0 (store) to 9 (smallest). Default 1: the fastest level that still
    /// shrinks JSON market data several times over.
    pub level: u8,
    /// Messages shorter than this are sent uncompressed unless the sender asks otherwise
    /// ([`Compression::Always`](crate::ws::Compression)). Default 64 bytes: below it the
    /// deflate block overhead eats the gain.
    pub min_size: usize,
    /// Send a message uncompressed when compressing did not make it smaller. Default true.
    pub only_if_smaller: bool,
    /// Client: ask the server not to keep its compression context between messages.
    /// Server: do not keep it, and say so in every answer. Default false.
    ///
    /// Without context takeover a side keeps no compressor per connection (encoders share one
    /// per thread), but every message starts cold: with zlib-rs a 128 B JSON message costs
    /// about 12x the CPU (each reset clears a 128 KiB hash table) and shrinks 1.2x instead of
    /// 4x (docs/BENCHMARKS.md). A fan-out server saves the CPU with
    /// [`PreparedMessage`](super::PreparedMessage): one compression for every connection.
    pub server_no_context_takeover: bool,
    /// Client: do not keep our compression context, and say so in the offer.
    /// Server: ask the client not to keep its context. Default false.
    pub client_no_context_takeover: bool,
    /// Client: ask the server to use at most this window (`server_max_window_bits=N`).
    /// Server: use at most this window, and say so in every answer. 8..=15; default `None`
    /// (no request; a server uses 15 unless the offer asks for less).
    pub server_max_window_bits: Option<u8>,
    /// Client: offer `client_max_window_bits=N` (we will use at most N); `None` offers the
    /// bare parameter (we can limit our window if asked). Server: when the client allows it,
    /// ask it to use at most this window. 8..=15; default `None`.
    pub client_max_window_bits: Option<u8>,
}

impl Default for DeflateConfig {
    fn default() -> Self {
        Self {
            level: 1,
            min_size: 64,
            only_if_smaller: true,
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: None,
            client_max_window_bits: None,
        }
    }
}

impl DeflateConfig {
    with_methods! {
        set with_level => level: u8,
        set with_min_size => min_size: usize,
        set with_only_if_smaller => only_if_smaller: bool,
        set with_server_no_context_takeover => server_no_context_takeover: bool,
        set with_client_no_context_takeover => client_no_context_takeover: bool,
        set with_server_max_window_bits => server_max_window_bits: Option<u8>,
        set with_client_max_window_bits => client_max_window_bits: Option<u8>,
    }
}

/// The parameters in force on a connection once negotiation succeeded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeflateParams {
    /// The server resets its compressor after every message.
    pub server_no_context_takeover: bool,
    /// The client resets its compressor after every message.
    pub client_no_context_takeover: bool,
    /// Largest window the server's compressor uses (8..=15).
    pub server_max_window_bits: u8,
    /// Largest window the client's compressor uses (8..=15).
    pub client_max_window_bits: u8,
}

/// A permessage-deflate offer or answer that breaks RFC 7692 §7.1.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NegotiationError {
    /// A parameter appears twice in one offer or answer.
    DuplicateParameter(String),
    /// A parameter RFC 7692 does not define.
    UnknownParameter(String),
    /// A parameter with a missing, unexpected or out-of-range value.
    InvalidValue(String),
    /// (Client) the server's answer selects something we did not offer, or a window larger
    /// than we asked for.
    NotOffered(String),
    /// (Client) the server's answer selects permessage-deflate more than once.
    DuplicateExtension(String),
}

impl fmt::Display for NegotiationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::DuplicateParameter(p) => write!(f, "permessage-deflate: duplicate parameter {p}"),
            Self::UnknownParameter(p) => write!(f, "permessage-deflate: unknown parameter {p}"),
            Self::InvalidValue(p) => write!(f, "permessage-deflate: invalid value in {p}"),
            Self::NotOffered(p) => write!(f, "permessage-deflate: answer {p} was not offered"),
            Self::DuplicateExtension(p) => {
                write!(f, "permessage-deflate selected more than once ({p})")
            }
        }
    }
}

impl std::error::Error for NegotiationError {}

impl DeflateConfig {
    /// The client's `Sec-WebSocket-Extensions` item for this configuration. It always carries
    /// `client_max_window_bits` (bare or with our limit): we honour any window 9..=15 the
    /// server asks for (8 too, by not compressing).
    pub fn offer(&self) -> String {
        let mut offer = String::from(EXTENSION_NAME);
        if self.server_no_context_takeover {
            offer.push_str("; server_no_context_takeover");
        }
        if self.client_no_context_takeover {
            offer.push_str("; client_no_context_takeover");
        }
        if let Some(bits) = self.server_max_window_bits {
            offer.push_str(&format!("; server_max_window_bits={}", clamp_bits(bits)));
        }
        match self.client_max_window_bits {
            Some(bits) => offer.push_str(&format!("; client_max_window_bits={}", clamp_bits(bits))),
            None => offer.push_str("; client_max_window_bits"),
        }
        offer
    }

    /// Server side: picks the first acceptable permessage-deflate offer among `items` (the
    /// request's `Sec-WebSocket-Extensions` items in order; other extensions are skipped) and
    /// returns the parameters and the item to answer with, or `None` when the client offered
    /// no permessage-deflate. An invalid offer is declined (RFC 7692 §5) in favour of a later
    /// valid one; when every permessage-deflate offer is invalid the request is malformed and
    /// this returns the first offer's error (the transports answer 400).
    pub fn accept<S: AsRef<str>>(
        &self,
        items: &[S],
    ) -> Result<Option<(DeflateParams, String)>, NegotiationError> {
        let mut first_invalid = None;
        for item in items {
            let Some(params) = deflate_params(item.as_ref()) else {
                continue;
            };
            match Parsed::from_params(params, Side::Offer) {
                // Every offer that parses is acceptable: a window limit we cannot compress
                // with (8 bits) is honoured by not compressing.
                Ok(offer) => return Ok(Some(self.answer(&offer))),
                // §5: an invalid offer is declined; a later valid one may still be chosen.
                Err(error) => {
                    first_invalid.get_or_insert(error);
                }
            }
        }
        first_invalid.map_or(Ok(None), Err)
    }

    fn answer(&self, offer: &Parsed) -> (DeflateParams, String) {
        let server_no_context_takeover =
            offer.server_no_context_takeover || self.server_no_context_takeover;
        let client_no_context_takeover =
            offer.client_no_context_takeover || self.client_no_context_takeover;
        let ours = self.server_max_window_bits.map(clamp_bits);
        let server_bits = match (offer.server_max_window_bits, ours) {
            (Some(Some(asked)), Some(ours)) => Some(asked.min(ours)),
            (Some(Some(asked)), None) => Some(asked),
            (_, ours) => ours,
        };
        let client_bits = match (offer.client_max_window_bits, self.client_max_window_bits) {
            (None, _) => None,
            (Some(offered), Some(ours)) => Some(offered.unwrap_or(15).min(clamp_bits(ours))),
            (Some(offered), None) => offered,
        };
        let params = DeflateParams {
            server_no_context_takeover,
            client_no_context_takeover,
            server_max_window_bits: server_bits.unwrap_or(15),
            client_max_window_bits: client_bits.unwrap_or(15),
        };
        let mut answer = String::from(EXTENSION_NAME);
        if server_no_context_takeover {
            answer.push_str("; server_no_context_takeover");
        }
        if client_no_context_takeover {
            answer.push_str("; client_no_context_takeover");
        }
        if let Some(bits) = server_bits {
            answer.push_str(&format!("; server_max_window_bits={bits}"));
        }
        if let Some(bits) = client_bits {
            answer.push_str(&format!("; client_max_window_bits={bits}"));
        }
        (params, answer)
    }

    /// Client side: checks the server's answer against what [`offer`](Self::offer) sent.
    /// `items` are the response's `Sec-WebSocket-Extensions` items; `None` when the server
    /// did not select permessage-deflate.
    pub fn confirm<S: AsRef<str>>(
        &self,
        items: &[S],
    ) -> Result<Option<DeflateParams>, NegotiationError> {
        let mut answers = items
            .iter()
            .filter_map(|item| deflate_params(item.as_ref()).map(|p| (item, p)));
        let Some((item, params)) = answers.next() else {
            return Ok(None);
        };
        if let Some((second, _)) = answers.next() {
            return Err(NegotiationError::DuplicateExtension(
                second.as_ref().to_owned(),
            ));
        }
        let answer = Parsed::from_params(params, Side::Answer)?;
        let not_offered = || NegotiationError::NotOffered(item.as_ref().to_owned());
        let server_bits = match (self.server_max_window_bits, answer.server_max_window_bits) {
            // §7.1.2.1: asked for a limit, the answer must carry it, no larger.
            (Some(asked), Some(Some(got))) if got <= clamp_bits(asked) => got,
            (Some(_), _) => return Err(not_offered()),
            (None, Some(Some(got))) => got,
            (None, _) => 15,
        };
        // An answer's client_max_window_bits always has a value (checked while parsing).
        let client_bits = match (answer.client_max_window_bits, self.client_max_window_bits) {
            (Some(got), Some(ours)) if got.unwrap_or(15) > clamp_bits(ours) => {
                return Err(not_offered());
            }
            (Some(got), _) => got.unwrap_or(15),
            (None, ours) => ours.map_or(15, clamp_bits),
        };
        if self.server_no_context_takeover && !answer.server_no_context_takeover {
            // §7.1.1.1: a server that accepts this request says so.
            return Err(not_offered());
        }
        Ok(Some(DeflateParams {
            server_no_context_takeover: answer.server_no_context_takeover,
            client_no_context_takeover: answer.client_no_context_takeover
                || self.client_no_context_takeover,
            server_max_window_bits: server_bits,
            client_max_window_bits: client_bits,
        }))
    }
}

fn clamp_bits(bits: u8) -> u8 {
    bits.clamp(8, 15)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Side {
    Offer,
    Answer,
}

/// One offer or answer, parsed. Window fields: `None` absent, `Some(None)` bare,
/// `Some(Some(n))` with a value.
#[derive(Debug, Default)]
struct Parsed {
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_max_window_bits: Option<Option<u8>>,
    client_max_window_bits: Option<Option<u8>>,
}

impl Parsed {
    fn from_params<'a>(
        params: impl Iterator<Item = (&'a str, Option<&'a str>)>,
        side: Side,
    ) -> Result<Self, NegotiationError> {
        let mut parsed = Self::default();
        for (name, value) in params {
            let whole = || match value {
                Some(v) => format!("{name}={v}"),
                None => name.to_owned(),
            };
            let lower = name.to_ascii_lowercase();
            let flag = |slot: &mut bool| {
                if *slot {
                    return Err(NegotiationError::DuplicateParameter(name.to_owned()));
                }
                if value.is_some() {
                    return Err(NegotiationError::InvalidValue(whole()));
                }
                *slot = true;
                Ok(())
            };
            match lower.as_str() {
                "server_no_context_takeover" => flag(&mut parsed.server_no_context_takeover)?,
                "client_no_context_takeover" => flag(&mut parsed.client_no_context_takeover)?,
                "server_max_window_bits" | "client_max_window_bits" => {
                    let server = lower.starts_with("server");
                    let slot = if server {
                        &mut parsed.server_max_window_bits
                    } else {
                        &mut parsed.client_max_window_bits
                    };
                    if slot.is_some() {
                        return Err(NegotiationError::DuplicateParameter(name.to_owned()));
                    }
                    // §7.1.2: a value is required except for client_max_window_bits in an
                    // offer.
                    let bits = match value {
                        Some(v) => Some(
                            window_bits(v)
                                .ok_or_else(|| NegotiationError::InvalidValue(whole()))?,
                        ),
                        None if !server && side == Side::Offer => None,
                        None => return Err(NegotiationError::InvalidValue(whole())),
                    };
                    *slot = Some(bits);
                }
                _ => return Err(NegotiationError::UnknownParameter(whole())),
            }
        }
        Ok(parsed)
    }
}

/// The parameters of `item` when its extension name is permessage-deflate, else `None`.
/// Values may be tokens or quoted strings (§7.1: `client_max_window_bits="10"`).
fn deflate_params(item: &str) -> Option<impl Iterator<Item = (&str, Option<&str>)>> {
    let mut parts = item.split(';');
    let name = parts.next()?.trim();
    if !name.eq_ignore_ascii_case(EXTENSION_NAME) {
        return None;
    }
    Some(parts.map(|part| match part.split_once('=') {
        Some((name, value)) => {
            let value = value.trim();
            let value = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value);
            (name.trim(), Some(value))
        }
        None => (part.trim(), None),
    }))
}

/// A window size: 1*DIGIT with no leading zero, in 8..=15 (§7.1.2.1).
fn window_bits(value: &str) -> Option<u8> {
    if value.is_empty() || value.starts_with('0') || !value.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let bits: u8 = value.parse().ok()?;
    (8..=15).contains(&bits).then_some(bits)
}
