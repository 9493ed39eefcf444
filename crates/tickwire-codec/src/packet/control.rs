//! Control packets: a transport's own messages, on the reserved request id 0 (which the
//! multiplexer never issues and a server refuses as a request, docs/PACKET.md). The body is
//! one kind byte and one little-endian `u64`, 9 bytes, never compressed:
//!
//! | kind | name | `u64` | sent by |
//! |---|---|---|---|
//! | `0x01` | ping | a nonce | either end; answered at once with a pong |
//! | `0x02` | pong | the ping's nonce | the end that got the ping |
//! | `0x03` | busy | the refused request's id | a server past its in-flight cap |
//!
//! Any other kind or length does not decode ([`Control::decode`] is `None`); the
//! [`Session`](super::Session) reports it as
//! [`SessionError::MalformedControl`](super::SessionError::MalformedControl), a peer
//! violation that closes the connection.

/// Ping kind byte.
const PING: u8 = 0x01;
/// Pong kind byte.
const PONG: u8 = 0x02;
/// Busy kind byte.
const BUSY: u8 = 0x03;
/// Length of every control body.
pub const CONTROL_LEN: usize = 9;

/// One control packet's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Control {
    /// Asks the peer for a pong carrying the same nonce.
    Ping(u64),
    /// Answers the ping with this nonce.
    Pong(u64),
    /// Refuses the request with this id: the server's in-flight cap was reached.
    Busy(u64),
}

impl Control {
    /// The 9-byte body.
    pub fn encode(self) -> [u8; CONTROL_LEN] {
        let (kind, value) = match self {
            Self::Ping(nonce) => (PING, nonce),
            Self::Pong(nonce) => (PONG, nonce),
            Self::Busy(id) => (BUSY, id),
        };
        let mut body = [0; CONTROL_LEN];
        body[0] = kind;
        body[1..].copy_from_slice(&value.to_le_bytes());
        body
    }

    /// Parses a body; `None` for an unknown kind or a wrong length.
    pub fn decode(body: &[u8]) -> Option<Self> {
        let (&kind, value) = body.split_first()?;
        let value = u64::from_le_bytes(value.try_into().ok()?);
        match kind {
            PING => Some(Self::Ping(value)),
            PONG => Some(Self::Pong(value)),
            BUSY => Some(Self::Busy(value)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_and_others_are_refused() {
        for control in [
            Control::Ping(7),
            Control::Pong(u64::MAX),
            Control::Busy(0x0102),
        ] {
            assert_eq!(Control::decode(&control.encode()), Some(control));
        }
        assert_eq!(Control::Busy(2).encode(), [3, 2, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(Control::decode(&[0x04, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(Control::decode(&[PING, 0, 0]), None);
        assert_eq!(Control::decode(&[]), None);
    }
}
