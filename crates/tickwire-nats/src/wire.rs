//! How a topic's message travels on NATS: the subject and stream it goes to, and the headers
//! that carry its sequence number, its conflation key and its kind (text or binary).
//!
//! A message on subject `PREFIX.TOPIC` has the payload the WebSocket clients get, as is, and
//! these headers:
//!
//! | header | value | absent |
//! | --- | --- | --- |
//! | `Tw-Seq` | the topic's sequence number, decimal, from 1 | the message is refused |
//! | `Tw-Key` | the conflation key, decimal | key 0 |
//! | `Tw-Kind` | `text` or `binary` | binary |
//! | `Tw-Lost` | on a marker with no payload: numbers from `Tw-Seq` to this one were lost | a message |

use async_nats::HeaderMap;
use tickwire_server::SharedFrame;

/// The header with the topic's sequence number.
pub const SEQ_HEADER: &str = "Tw-Seq";
/// The header with the conflation key.
pub const KEY_HEADER: &str = "Tw-Key";
/// The header with the message kind.
pub const KIND_HEADER: &str = "Tw-Kind";
/// The header of a marker: the last number of a range the feed lost.
pub const LOST_HEADER: &str = "Tw-Lost";

/// The NATS subject of `topic` under `prefix` (`tw` by default): `tw.book`.
pub fn subject(prefix: &str, topic: &str) -> String {
    format!("{prefix}.{topic}")
}

/// The JetStream stream that backs `topic`, if it is backed: `TW_book`. Stream names cannot
/// hold `.`, `*`, `>` or white space, so those become `_` (topics `a.b` and `a_b` would
/// share a stream name: do not use both).
pub fn stream_name(prefix: &str, topic: &str) -> String {
    let mut name = String::with_capacity(prefix.len() + topic.len() + 1);
    name.extend(prefix.chars().map(|c| c.to_ascii_uppercase()));
    name.push('_');
    name.extend(topic.chars().map(|c| match c {
        '.' | '*' | '>' | '/' | '\\' => '_',
        c if c.is_whitespace() => '_',
        c => c,
    }));
    name
}

/// Whether a message is text (valid UTF-8, a text frame) or binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A WebSocket text message.
    Text,
    /// A WebSocket binary message.
    Binary,
}

/// The headers of message `seq` with `key` and `kind`.
pub(crate) fn headers(seq: u64, key: u64, kind: Kind) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(SEQ_HEADER, seq.to_string().as_str());
    if key != 0 {
        headers.insert(KEY_HEADER, key.to_string().as_str());
    }
    if kind == Kind::Text {
        headers.insert(KIND_HEADER, "text");
    }
    headers
}

/// A topic message read off NATS.
#[derive(Debug, Clone)]
pub(crate) struct Incoming {
    pub(crate) seq: u64,
    pub(crate) key: u64,
    pub(crate) frame: SharedFrame,
}

/// Why a message read off NATS cannot be relayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// No `Tw-Seq`, or not a number from 1: it cannot be put in order.
    NoSequence,
    /// It has a number, but its key or kind header is not understood, or it says text and
    /// is not UTF-8: it is counted as missed.
    Malformed(u64),
    /// A marker: the feed lost the numbers `first..=last`.
    Lost { first: u64, last: u64 },
}

/// Reads a message's number, key and kind, and frames its payload once for every client.
pub(crate) fn incoming(headers: Option<&HeaderMap>, payload: &[u8]) -> Result<Incoming, Refused> {
    let header = |name: &str| headers.and_then(|h| h.get(name)).map(|v| v.as_str());
    let seq = header(SEQ_HEADER)
        .and_then(|v| v.parse::<u64>().ok())
        .filter(|&seq| seq > 0)
        .ok_or(Refused::NoSequence)?;
    if let Some(lost) = header(LOST_HEADER) {
        return match lost.parse::<u64>() {
            Ok(last) if last >= seq => Err(Refused::Lost { first: seq, last }),
            _ => Err(Refused::Malformed(seq)),
        };
    }
    let key = match header(KEY_HEADER) {
        None => 0,
        Some(v) => v.parse().map_err(|_| Refused::Malformed(seq))?,
    };
    let frame = match header(KIND_HEADER) {
        None | Some("binary") => SharedFrame::binary(payload),
        Some("text") => {
            let text = std::str::from_utf8(payload).map_err(|_| Refused::Malformed(seq))?;
            SharedFrame::text(text)
        }
        Some(_) => return Err(Refused::Malformed(seq)),
    };
    Ok(Incoming { seq, key, frame })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_back_as_they_were_written() {
        let headers = headers(42, 7, Kind::Text);
        let message = incoming(Some(&headers), b"{\"px\":1}").unwrap();
        assert_eq!((message.seq, message.key), (42, 7));
        assert_eq!(message.frame, SharedFrame::text("{\"px\":1}"));
        let headers = super::headers(1, 0, Kind::Binary);
        assert!(headers.get(KEY_HEADER).is_none() && headers.get(KIND_HEADER).is_none());
        let message = incoming(Some(&headers), &[0xff, 0]).unwrap();
        assert_eq!(message.frame, SharedFrame::binary(&[0xff, 0]));
    }

    #[test]
    fn a_message_without_a_usable_number_or_with_bad_headers_is_refused() {
        assert_eq!(incoming(None, b"x").unwrap_err(), Refused::NoSequence);
        for bad in ["", "0", "-1", "x1", "18446744073709551616"] {
            let mut headers = HeaderMap::new();
            headers.insert(SEQ_HEADER, bad);
            assert_eq!(
                incoming(Some(&headers), b"x").unwrap_err(),
                Refused::NoSequence,
                "{bad:?}"
            );
        }
        let mut headers = super::headers(9, 0, Kind::Text);
        assert_eq!(
            incoming(Some(&headers), &[0xc3]).unwrap_err(),
            Refused::Malformed(9)
        );
        headers.insert(KIND_HEADER, "json");
        assert_eq!(
            incoming(Some(&headers), b"{}").unwrap_err(),
            Refused::Malformed(9)
        );
        let mut headers = super::headers(9, 0, Kind::Binary);
        headers.insert(KEY_HEADER, "k");
        assert_eq!(
            incoming(Some(&headers), b"{}").unwrap_err(),
            Refused::Malformed(9)
        );
    }

    #[test]
    fn a_marker_names_the_range_the_feed_lost() {
        let mut headers = super::headers(7, 0, Kind::Binary);
        headers.insert(LOST_HEADER, "9");
        assert_eq!(
            incoming(Some(&headers), b"").unwrap_err(),
            Refused::Lost { first: 7, last: 9 }
        );
        headers.insert(LOST_HEADER, "6");
        assert_eq!(
            incoming(Some(&headers), b"").unwrap_err(),
            Refused::Malformed(7)
        );
    }

    #[test]
    fn stream_names_hold_no_character_nats_refuses() {
        assert_eq!(stream_name("tw", "book"), "TW_book");
        assert_eq!(stream_name("tw", "md.BTC-USD *x>"), "TW_md_BTC-USD__x_");
        assert_eq!(subject("tw", "md.BTC-USD"), "tw.md.BTC-USD");
    }
}
