//! Control packets: the transport's own messages, on the reserved request id 0 (which the
//! multiplexer never issues and a server refuses as a request, docs/PACKET.md). The body is
//! one kind byte and one little-endian `u64`, 9 bytes, never compressed:
//!
//! | kind | name | `u64` | sent by |
//! |---|---|---|---|
//! | `0x01` | ping | a nonce | either end; answered at once with a pong |
//! | `0x02` | pong | the ping's nonce | the end that got the ping |
//! | `0x03` | busy | the refused request's id | a server past its in-flight cap |
//!
//! Any other kind or length is [`Error::MalformedControl`](super::Error::MalformedControl):
//! a peer violation that closes the connection.

use tickwire_codec::mux::RequestId;

/// Ping (DESIGN: keepalive) kind byte.
const PING: u8 = 0x01;
/// Pong kind byte.
const PONG: u8 = 0x02;
/// Busy kind byte.
const BUSY: u8 = 0x03;
/// Length of every control body.
pub(crate) const CONTROL_LEN: usize = 9;

/// One control packet's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    Ping(u64),
    Pong(u64),
    Busy(RequestId),
}

impl Control {
    /// The 9-byte body and its length.
    pub(crate) fn encode(self) -> ([u8; CONTROL_LEN], usize) {
        let (kind, value) = match self {
            Self::Ping(nonce) => (PING, nonce),
            Self::Pong(nonce) => (PONG, nonce),
            Self::Busy(id) => (BUSY, id.0),
        };
        let mut body = [0; CONTROL_LEN];
        body[0] = kind;
        body[1..].copy_from_slice(&value.to_le_bytes());
        (body, CONTROL_LEN)
    }

    /// Parses a body; `None` for an unknown kind or a wrong length.
    pub(crate) fn decode(body: &[u8]) -> Option<Self> {
        let (&kind, value) = body.split_first()?;
        let value = u64::from_le_bytes(value.try_into().ok()?);
        match kind {
            PING => Some(Self::Ping(value)),
            PONG => Some(Self::Pong(value)),
            BUSY => Some(Self::Busy(RequestId(value))),
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
            Control::Busy(RequestId(0x0102)),
        ] {
            let (body, len) = control.encode();
            assert_eq!(Control::decode(&body[..len]), Some(control));
        }
        assert_eq!(
            Control::encode(Control::Busy(RequestId(2))).0,
            [3, 2, 0, 0, 0, 0, 0, 0, 0]
        );
        assert_eq!(Control::decode(&[0x04, 0, 0, 0, 0, 0, 0, 0, 0]), None);
        assert_eq!(Control::decode(&[PING, 0, 0]), None);
        assert_eq!(Control::decode(&[]), None);
    }
}
