//! `--seq POINTER [--seq-key POINTER]`: a message's sequence number and key found by JSON
//! pointers (RFC 6901), as the feed session's sequence extractor.
//!
//! One pass of serde_json over the message, following both pointers at once: members and
//! elements off the paths are walked without being built, and the values found are taken
//! as borrowed raw spans (`RawValue`), so a data message costs no allocation. The exception
//! is a string with escapes (`\"`, `\u00e9`) anywhere in it: serde_json unescapes it into a
//! buffer of its deserializer, made per message, so such a message allocates once. The key
//! is the raw JSON text of its value, a string with its quotes or a number, which the
//! output prints as it is; two spellings of one string (escaped and not) are two keys.
//! Owns the pointers and the walk; not what the session does with the numbers.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;

/// The pointers of `--seq` and `--seq-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SequencePointers {
    seq: Vec<Token>,
    key: Option<Vec<Token>>,
}

impl SequencePointers {
    /// Parses both pointers; the error names the one that is not RFC 6901.
    pub(crate) fn parse(seq: &str, key: Option<&str>) -> Result<Self, String> {
        Ok(Self {
            seq: parse_pointer(seq).map_err(|e| format!("--seq {seq:?}: {e}"))?,
            key: match key {
                Some(key) => {
                    Some(parse_pointer(key).map_err(|e| format!("--seq-key {key:?}: {e}"))?)
                }
                None => None,
            },
        })
    }

    /// Whether a key pointer was given (without one every message has the empty key).
    pub(crate) fn keyed(&self) -> bool {
        self.key.is_some()
    }

    /// The message's key (its raw JSON text; empty without a key pointer) and number, or
    /// `None` when the message is not JSON, a pointer finds nothing, the number is not an
    /// unsigned integer (or a string of one), or the key is not a string or a number.
    pub(crate) fn extract<'a>(&self, message: &'a [u8]) -> Option<(&'a [u8], u64)> {
        let mut found = Found::default();
        walk(message, Some(&self.seq), self.key.as_deref(), &mut found)?;
        let seq = sequence_number(found.seq?.get())?;
        let key = match &self.key {
            None => "",
            Some(_) => found
                .key
                .map(RawValue::get)
                .filter(|raw| is_scalar_key(raw))?,
        };
        Some((key.as_bytes(), seq))
    }
}

/// One reference token: a member name, and the array index it also spells, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Token {
    name: String,
    index: Option<usize>,
}

/// RFC 6901 §3-4: `""` is the whole document; otherwise `/`-separated tokens in which `~1`
/// stands for `/` and `~0` for `~`. An index is digits without a leading zero.
fn parse_pointer(text: &str) -> Result<Vec<Token>, String> {
    if text.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = text.strip_prefix('/') else {
        return Err("a JSON pointer starts with '/' (or is empty)".to_owned());
    };
    rest.split('/')
        .map(|raw| {
            let mut name = String::with_capacity(raw.len());
            let mut chars = raw.chars();
            while let Some(c) = chars.next() {
                if c != '~' {
                    name.push(c);
                    continue;
                }
                match chars.next() {
                    Some('0') => name.push('~'),
                    Some('1') => name.push('/'),
                    _ => return Err("'~' is followed by 0 or 1 only".to_owned()),
                }
            }
            let index = (name == "0" || !name.starts_with('0'))
                .then(|| name.parse().ok())
                .flatten()
                .filter(|_| name.bytes().all(|b| b.is_ascii_digit()));
            Ok(Token { name, index })
        })
        .collect()
}

fn sequence_number(raw: &str) -> Option<u64> {
    let digits = raw
        .strip_prefix('"')
        .and_then(|inner| inner.strip_suffix('"'))
        .unwrap_or(raw);
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// A key is a string or a number: the raw text of anything else may span lines.
fn is_scalar_key(raw: &str) -> bool {
    matches!(raw.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// The values the pointers led to.
#[derive(Default)]
struct Found<'a> {
    seq: Option<&'a RawValue>,
    key: Option<&'a RawValue>,
}

/// Walks `message` along the remaining tokens of both pointers (`None`: not on this path).
fn walk<'a>(
    message: &'a [u8],
    seq: Option<&[Token]>,
    key: Option<&[Token]>,
    found: &mut Found<'a>,
) -> Option<()> {
    let mut deserializer = serde_json::Deserializer::from_slice(message);
    Walk { seq, key, found }.deserialize(&mut deserializer).ok()
}

struct Walk<'p, 'o, 'a> {
    seq: Option<&'p [Token]>,
    key: Option<&'p [Token]>,
    found: &'o mut Found<'a>,
}

impl<'p, 'o, 'a> Walk<'p, 'o, 'a> {
    /// The walk into a child: on the paths whose next token it `matches`, if any. A child on
    /// no path is still walked, not skipped with `IgnoredAny`: serde_json's skip keeps a
    /// heap stack for containers nested two deep (an order book's levels), where the walk's
    /// recursion keeps it on the call stack.
    fn child(&mut self, matches: impl Fn(&Token) -> bool) -> Walk<'p, '_, 'a> {
        let step = |path: Option<&'p [Token]>| match path {
            Some([first, rest @ ..]) if matches(first) => Some(rest),
            _ => None,
        };
        Walk {
            seq: step(self.seq),
            key: step(self.key),
            found: &mut *self.found,
        }
    }
}

impl<'de: 'a, 'a> DeserializeSeed<'de> for Walk<'_, '_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let (seq_here, key_here) = (self.seq == Some(&[]), self.key == Some(&[]));
        if !seq_here && !key_here {
            return deserializer.deserialize_any(self);
        }
        // A pointer ends here: take the value's text; the other pointer, if it goes on
        // inside it, walks that text.
        let raw: &'de RawValue = serde::Deserialize::deserialize(deserializer)?;
        let found = self.found;
        if seq_here {
            found.seq.get_or_insert(raw);
        }
        if key_here {
            found.key.get_or_insert(raw);
        }
        let (seq, key) = (
            self.seq.filter(|_| !seq_here),
            self.key.filter(|_| !key_here),
        );
        if seq.is_some() || key.is_some() {
            walk(raw.get().as_bytes(), seq, key, found);
        }
        Ok(())
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Walk<'_, '_, 'a> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<M: MapAccess<'de>>(mut self, mut map: M) -> Result<(), M::Error> {
        while let Some(Name(name)) = map.next_key()? {
            map.next_value_seed(self.child(|token| token.name == name))?;
        }
        Ok(())
    }

    fn visit_seq<S: SeqAccess<'de>>(mut self, mut seq: S) -> Result<(), S::Error> {
        for index in 0.. {
            let child = self.child(|token| token.index == Some(index));
            if seq.next_element_seed(child)?.is_none() {
                break;
            }
        }
        Ok(())
    }

    // A scalar off the paths, or where a pointer goes on (it finds nothing there).
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
}

/// An object member's name, borrowed from the message unless it had escapes.
struct Name<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> Visitor<'de> for NameVisitor {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a member name")
            }
            fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Borrowed(name)))
            }
            fn visit_str<E: de::Error>(self, name: &str) -> Result<Name<'de>, E> {
                Ok(Name(Cow::Owned(name.to_owned())))
            }
        }
        deserializer.deserialize_str(NameVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwire_test_support::alloc::CountingAlloc;

    #[global_allocator]
    static ALLOC: CountingAlloc = CountingAlloc::per_thread();

    fn pointers(seq: &str, key: Option<&str>) -> SequencePointers {
        SequencePointers::parse(seq, key).unwrap()
    }

    fn found<'a>(p: &SequencePointers, message: &'a str) -> Option<(&'a str, u64)> {
        p.extract(message.as_bytes())
            .map(|(key, seq)| (std::str::from_utf8(key).unwrap(), seq))
    }

    #[test]
    fn the_simulators_messages_give_their_key_and_number() {
        let p = pointers("/seq", Some("/key"));
        let message = r#"{"key":"BTC-USD","seq":17,"px":117.17,"pad":"xx"}"#;
        assert_eq!(found(&p, message), Some((r#""BTC-USD""#, 17)));
        let unkeyed = pointers("/seq", None);
        assert_eq!(found(&unkeyed, message), Some(("", 17)));
    }

    #[test]
    fn pointers_go_through_objects_and_arrays_and_unescape_their_tokens() {
        let p = pointers("/data/1/u", Some("/data/1/a~1b~0c"));
        let message = r#"{"stream":"x","data":[{"u":1},{"a/b~c":42,"u":"99"}]}"#;
        assert_eq!(found(&p, message), Some(("42", 99)));
        // A member named "1" is also found by the token 1.
        let p = pointers("/data/1", None);
        assert_eq!(found(&p, r#"{"data":{"1":5}}"#), Some(("", 5)));
        // The whole document.
        assert_eq!(found(&pointers("", None), "7"), Some(("", 7)));
        // The key pointer inside the value the other one ends at.
        let p = pointers("/k", Some("/k"));
        assert_eq!(found(&p, r#"{"k":3}"#), Some(("3", 3)));
    }

    #[test]
    fn what_is_not_a_sequenced_message_gives_none() {
        let p = pointers("/seq", Some("/key"));
        for message in [
            "pong",
            r#"{"event":"subscribed","conn":0,"args":["BTC-USD"]}"#,
            r#"{"key":"BTC-USD","seq":-1}"#,
            r#"{"key":"BTC-USD","seq":1.5}"#,
            r#"{"key":{"nested":true},"seq":1}"#,
            r#"{"key":"BTC-USD","seq":"x1"}"#,
            r#"{"key":"BTC-USD"}"#,
            r#"[1,2,3]"#,
        ] {
            assert_eq!(found(&p, message), None, "{message}");
        }
    }

    #[test]
    fn a_bad_pointer_is_refused_naming_its_flag() {
        assert!(
            SequencePointers::parse("seq", None)
                .unwrap_err()
                .contains("--seq \"seq\"")
        );
        let bad_key = SequencePointers::parse("/seq", Some("/a~2")).unwrap_err();
        assert!(bad_key.starts_with("--seq-key"), "{bad_key}");
        let tokens = parse_pointer("/01/0/~0").unwrap();
        assert_eq!(tokens[0].index, None);
        assert_eq!(tokens[1].index, Some(0));
        assert_eq!(tokens[2].name, "~");
    }

    #[test]
    fn extracting_from_a_data_message_allocates_nothing() {
        let p = pointers("/data/seq", Some("/data/key"));
        // An order book's levels: containers nested two deep, off the paths.
        let message = br#"{"stream":"btc@depth","data":{"b":[["1.5","2"],["1.4","3"]],"a":[[[]]],"key":"BTC","seq":123456}}"#;
        assert!(p.extract(message).is_some());
        let counting = ALLOC.start();
        for _ in 0..100 {
            assert_eq!(
                std::hint::black_box(p.extract(message)),
                Some((&br#""BTC""#[..], 123_456))
            );
        }
        assert_eq!(counting.stop().allocations, 0);
    }
}
