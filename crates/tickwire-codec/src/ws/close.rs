//! Close status codes (RFC 6455 §7.4) as an open newtype.

use core::fmt;

/// A WebSocket close status code (RFC 6455 §7.4).
///
/// Open: any `u16` can be represented, so a code we have no constant for still round-trips.
/// [`is_sendable`](Self::is_sendable) says whether it may appear in a Close frame on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CloseCode(pub u16);

impl CloseCode {
    /// 1000: normal closure (§7.4.1).
    pub const NORMAL: Self = Self(0x03e8);
    /// 1001: the endpoint is going away (server shutdown, page navigation).
    pub const GOING_AWAY: Self = Self(0x03e9);
    /// 1002: protocol error.
    pub const PROTOCOL_ERROR: Self = Self(0x03ea);
    /// 1003: a data type the endpoint cannot accept.
    pub const UNSUPPORTED_DATA: Self = Self(0x03eb);
    /// 1005: no status code was present. Reserved: never sent on the wire (§7.4.1).
    pub const NO_STATUS: Self = Self(0x03ed);
    /// 1006: closed without a Close frame. Reserved: never sent on the wire (§7.4.1).
    pub const ABNORMAL: Self = Self(0x03ee);
    /// 1007: message data inconsistent with its type (e.g. text that is not UTF-8).
    pub const INVALID_PAYLOAD: Self = Self(0x03ef);
    /// 1008: a policy violation.
    pub const POLICY_VIOLATION: Self = Self(0x03f0);
    /// 1009: a message too big to process (a configured limit).
    pub const MESSAGE_TOO_BIG: Self = Self(0x03f1);
    /// 1010: the client expected an extension the server did not negotiate.
    pub const MANDATORY_EXTENSION: Self = Self(0x03f2);
    /// 1011: the server hit an unexpected condition.
    pub const INTERNAL_ERROR: Self = Self(0x03f3);
    /// 1012: the service is restarting (IANA registry).
    pub const SERVICE_RESTART: Self = Self(0x03f4);
    /// 1013: try again later (IANA registry).
    pub const TRY_AGAIN_LATER: Self = Self(0x03f5);
    /// 1014: bad gateway (IANA registry).
    pub const BAD_GATEWAY: Self = Self(0x03f6);
    /// 1015: TLS handshake failure. Reserved: never sent on the wire (§7.4.1).
    pub const TLS_HANDSHAKE: Self = Self(0x03f7);

    /// True when the code may be carried in a Close frame (§7.4.1, §7.4.2 and the IANA
    /// registry): 1000-1003, 1007-1014, and the 3000-4999 ranges for libraries and
    /// applications. 1004-1006, 1015, codes under 1000, 1016-2999 and 5000+ are refused.
    pub const fn is_sendable(self) -> bool {
        matches!(self.0, 1000..=1003 | 1007..=1014 | 3000..=4999)
    }
}

impl From<u16> for CloseCode {
    fn from(code: u16) -> Self {
        Self(code)
    }
}

impl From<CloseCode> for u16 {
    fn from(code: CloseCode) -> Self {
        code.0
    }
}

impl fmt::Display for CloseCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

#[cfg(test)]
mod tests {
    use super::CloseCode;

    #[test]
    fn sendable_ranges() {
        let sendable: Vec<u16> = (0..=6000).filter(|&c| CloseCode(c).is_sendable()).collect();
        assert_eq!(sendable.first(), Some(&1000));
        for code in [999, 1004, 1005, 1006, 1015, 1016, 2999, 5000] {
            assert!(!CloseCode(code).is_sendable(), "{code}");
        }
        for code in [1000, 1001, 1002, 1003, 1007, 1011, 1014, 3000, 4999] {
            assert!(CloseCode(code).is_sendable(), "{code}");
        }
    }
}
