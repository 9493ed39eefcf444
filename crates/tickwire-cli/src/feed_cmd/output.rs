//! `tickwire feed`'s stdout: one JSON object per line for each message and event (the
//! shapes are listed in docs/FEEDS.md "tickwire feed"), written through one buffer that the
//! loop flushes after each batch of events, so a pipe's reader sees every line as soon as
//! the events that were ready together are written.
//!
//! A message's key is printed as the raw JSON text the `--seq-key` pointer found (a string
//! with its quotes, or a number). The session knows a key by its id; the output keeps each
//! key's text, taken from the first delivered message that carries it (one copy per key,
//! none per message).

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tickwire::feed::{Delivery, Disconnect, Event, KeyId, Limited, ReconnectReason};

use super::pointer::SequencePointers;

/// The buffered stdout, shared with the signal watcher that flushes it before the process
/// exits (the blocking runtime's).
pub(crate) type SharedOut = Arc<Mutex<BufWriter<Stdout>>>;

/// Locks the shared stdout (a panic while printing left whole lines only: taken anyway).
pub(crate) fn lock(out: &SharedOut) -> MutexGuard<'_, BufWriter<Stdout>> {
    out.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What the lines need beyond the events: the endpoints' URLs and the keys' texts.
pub(crate) struct Printer {
    urls: Vec<String>,
    pointers: Option<SequencePointers>,
    /// Indexed by `KeyId`: the key's raw JSON text, once seen.
    keys: Vec<Option<Box<[u8]>>>,
}

impl Printer {
    pub(crate) fn new(urls: Vec<String>, pointers: Option<SequencePointers>) -> Self {
        Self {
            urls,
            pointers,
            keys: Vec::new(),
        }
    }

    /// Writes `event`'s line (none for the session's end, which the caller reports).
    pub(crate) fn event(&mut self, out: &mut impl Write, event: &Event<'_>) -> io::Result<()> {
        match *event {
            Event::Message(ref delivery) => self.message(out, delivery),
            Event::Gap { key, from, to } => {
                out.write_all(br#"{"event":"gap""#)?;
                self.key(out, Some(key))?;
                writeln!(out, r#","from":{from},"to":{to}}}"#)
            }
            Event::Connected {
                conn,
                attempt,
                endpoint,
            } => {
                write!(
                    out,
                    r#"{{"event":"connected","conn":{},"attempt":{attempt},"url":"#,
                    conn.0
                )?;
                let url = self.urls.get(endpoint).map_or("", String::as_str);
                serde_json::to_writer(&mut *out, url)?;
                out.write_all(b"}\n")
            }
            Event::Subscribed { conn } => {
                writeln!(out, r#"{{"event":"subscribed","conn":{}}}"#, conn.0)
            }
            Event::Stale { conn, silent_for } => writeln!(
                out,
                r#"{{"event":"stale","conn":{},"silent_ms":{}}}"#,
                conn.0,
                silent_for.as_millis()
            ),
            Event::Closed { conn, reason } => {
                write!(out, r#"{{"event":"closed","conn":{}"#, conn.0)?;
                write_reason(out, reason)?;
                out.write_all(b"}\n")
            }
            Event::Reconnecting {
                conn,
                reason,
                delay,
            } => {
                write!(out, r#"{{"event":"reconnecting","conn":{}"#, conn.0)?;
                write_reason(out, reason)?;
                writeln!(out, r#","delay_ms":{}}}"#, delay.as_millis())
            }
            Event::RateLimited {
                conn,
                limited,
                wait,
            } => {
                let quota = match limited {
                    Limited::Send => "send",
                    Limited::Connect => "connect",
                    _ => "other",
                };
                writeln!(
                    out,
                    r#"{{"event":"rate_limited","conn":{},"quota":"{quota}","wait_ms":{}}}"#,
                    conn.0,
                    wait.as_millis()
                )
            }
            Event::Rotated { from, to } => writeln!(
                out,
                r#"{{"event":"rotated","conn":{},"from":{}}}"#,
                to.0, from.0
            ),
            Event::KeyLimit { max_keys } => {
                writeln!(out, r#"{{"event":"key_limit","max_keys":{max_keys}}}"#)
            }
            Event::Resync { key } => {
                out.write_all(br#"{"event":"resync""#)?;
                self.key(out, Some(key))?;
                out.write_all(b"}\n")
            }
            // The end is the caller's (an exit status); later events are not ours to name.
            _ => Ok(()),
        }
    }

    fn message(&mut self, out: &mut impl Write, delivery: &Delivery<'_>) -> io::Result<()> {
        if let (Some(key), Some(pointers)) = (delivery.key, &self.pointers) {
            let index = key.0 as usize;
            if self.keys.get(index).is_none_or(Option::is_none)
                && let Some((text, _)) = pointers.extract(delivery.payload)
            {
                if self.keys.len() <= index {
                    self.keys.resize(index + 1, None);
                }
                self.keys[index] = Some(text.into());
            }
        }
        write!(out, r#"{{"event":"message","conn":{}"#, delivery.conn.0)?;
        self.key(out, delivery.key)?;
        if let Some(seq) = delivery.seq {
            write!(out, r#","seq":{seq}"#)?;
        }
        let stamp = delivery.stamp;
        write!(
            out,
            r#","recv_ns":{},"wall_ns":{}"#,
            stamp.recv_ns, stamp.wall_ns
        )?;
        if let Some(kernel_ns) = stamp.kernel_ns {
            write!(out, r#","kernel_ns":{kernel_ns}"#)?;
        }
        match std::str::from_utf8(delivery.payload) {
            Ok(text) => {
                out.write_all(br#","text":"#)?;
                serde_json::to_writer(&mut *out, text)?;
            }
            // A binary message that is not UTF-8: its bytes in hex.
            Err(_) => {
                out.write_all(br#","hex":""#)?;
                for byte in delivery.payload {
                    write!(out, "{byte:02x}")?;
                }
                out.write_all(b"\"")?;
            }
        }
        out.write_all(b"}\n")
    }

    /// `,"key":TEXT` when `--seq-key` names keys (`null` for one whose text is unknown).
    fn key(&self, out: &mut impl Write, key: Option<KeyId>) -> io::Result<()> {
        let keyed = self.pointers.as_ref().is_some_and(SequencePointers::keyed);
        let Some(key) = key.filter(|_| keyed) else {
            return Ok(());
        };
        out.write_all(br#","key":"#)?;
        match self.keys.get(key.0 as usize) {
            Some(Some(text)) => out.write_all(text),
            _ => out.write_all(b"null"),
        }
    }
}

/// `,"reason":"..."` with what the reason carries (`code`, `status`).
fn write_reason(out: &mut impl Write, reason: ReconnectReason) -> io::Result<()> {
    let name = match reason {
        ReconnectReason::Disconnect(why) => match why {
            Disconnect::Closed(Some(code)) => {
                return write!(out, r#","reason":"closed","code":{code}"#);
            }
            Disconnect::Closed(None) => "closed",
            Disconnect::Eof => "eof",
            Disconnect::Reset => "reset",
            Disconnect::HandshakeStatus(status) => {
                return write!(out, r#","reason":"status","status":{status}"#);
            }
            Disconnect::ConnectFailed => "connect_failed",
            Disconnect::TimedOut => "timeout",
            Disconnect::Protocol(code) => {
                return write!(out, r#","reason":"protocol","code":{code}"#);
            }
            _ => "other",
        },
        ReconnectReason::ConnectTimeout => "connect_timeout",
        ReconnectReason::Stale => "stale",
        ReconnectReason::HeartbeatTimeout => "heartbeat_timeout",
        ReconnectReason::AckTimeout => "ack_timeout",
        ReconnectReason::LoginTimeout => "login_timeout",
        _ => "other",
    };
    write!(out, r#","reason":"{name}""#)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tickwire::feed::{ConnId, RecvStamp};

    fn line(printer: &mut Printer, event: &Event<'_>) -> serde_json::Value {
        let mut out = Vec::new();
        printer.event(&mut out, event).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches('\n').count(), 1, "{text}");
        assert!(text.ends_with('\n'), "{text}");
        serde_json::from_str(&text).unwrap()
    }

    #[test]
    fn messages_and_gaps_carry_the_keys_text_and_escaped_payloads() {
        let pointers = SequencePointers::parse("/seq", Some("/key")).unwrap();
        let mut printer = Printer::new(vec!["ws://x/".into()], Some(pointers));
        let payload = "{\"key\":\"BTC\",\"seq\":7,\"note\":\"a \\\"q\\\"\\n\u{e9}\"}";
        let delivery = Delivery {
            conn: ConnId(1),
            key: Some(KeyId(0)),
            seq: Some(7),
            stamp: RecvStamp {
                recv_ns: 5,
                wall_ns: 6,
                kernel_ns: None,
            },
            payload: payload.as_bytes(),
        };
        let message = line(&mut printer, &Event::Message(delivery));
        assert_eq!(
            message,
            serde_json::json!({"event":"message","conn":1,"key":"BTC","seq":7,
                "recv_ns":5,"wall_ns":6,"text":payload})
        );
        let gap = Event::Gap {
            key: KeyId(0),
            from: 8,
            to: 9,
        };
        assert_eq!(
            line(&mut printer, &gap),
            serde_json::json!({"event":"gap","key":"BTC","from":8,"to":9})
        );
        let binary = Delivery {
            payload: &[0xff, 0x00],
            key: None,
            seq: None,
            ..delivery
        };
        assert_eq!(line(&mut printer, &Event::Message(binary))["hex"], "ff00");
    }

    #[test]
    fn events_name_their_connection_and_reason() {
        let mut printer = Printer::new(vec!["ws://a/".into(), "ws://b/".into()], None);
        let connected = Event::Connected {
            conn: ConnId(1),
            attempt: 2,
            endpoint: 1,
        };
        assert_eq!(
            line(&mut printer, &connected),
            serde_json::json!({"event":"connected","conn":1,"attempt":2,"url":"ws://b/"})
        );
        let reconnecting = Event::Reconnecting {
            conn: ConnId(0),
            reason: ReconnectReason::Disconnect(Disconnect::HandshakeStatus(429)),
            delay: Duration::from_millis(250),
        };
        assert_eq!(
            line(&mut printer, &reconnecting),
            serde_json::json!({"event":"reconnecting","conn":0,"reason":"status","status":429,
                "delay_ms":250})
        );
        let closed = Event::Closed {
            conn: ConnId(0),
            reason: ReconnectReason::Stale,
        };
        assert_eq!(line(&mut printer, &closed)["reason"], "stale");
    }
}
