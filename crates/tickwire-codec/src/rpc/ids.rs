//! Request ids in JSON text: reading the id a response carries back, writing the one a
//! request goes out with. One top-level member of a JSON object (`"id"` for JSON-RPC 2.0,
//! Binance, OKX and Deribit; `"req_id"` for Kraken v2; `"reqId"` for Bybit), found by a scan
//! that skips every other member's value whole (nested objects, arrays, strings with escapes)
//! without building anything: a nested `"id"` (an order's own id inside `result`) is never
//! taken for the request's.

use core::fmt;

/// Why [`set_field`] could not write an id into a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum IdError {
    /// The request is not a JSON object (after optional whitespace, no `{`), or is cut
    /// short before its end.
    NotAnObject,
}

impl fmt::Display for IdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotAnObject => f.write_str("a request must be one JSON object to carry an id"),
        }
    }
}

impl std::error::Error for IdError {}

/// The value of the top-level member `name` of the JSON object `message` when it is a
/// non-negative integer (`"id":17`) or a string of decimal digits (`"id":"17"`), as the
/// exchange echoes the id it was sent. `None` when the message is not an object, has no such
/// member at its top level, or its value is anything else (`null`, a negative number, a
/// string with other characters, a number past `u64`).
///
/// ```
/// use tickwire_codec::rpc::field_u64;
///
/// let response = br#"{"result":{"id":9,"status":"NEW"},"id":17}"#;
/// assert_eq!(field_u64(response, "id"), Some(17));
/// assert_eq!(field_u64(br#"{"reqId":"42","retCode":0}"#, "reqId"), Some(42));
/// assert_eq!(field_u64(br#"{"stream":"btcusdt@trade","data":{"id":5}}"#, "id"), None);
/// ```
pub fn field_u64(message: &[u8], name: &str) -> Option<u64> {
    let mut scan = Scan::object(message)?;
    loop {
        let (key, value) = scan.next_member()?;
        if key == name.as_bytes() {
            return number_value(&message[value..]);
        }
        scan.skip_value()?;
    }
}

/// Writes `request` (a JSON object) into `out` with its top-level member `name` set to
/// `id`: the value replaced where the member is there, else the member inserted first. With
/// `quoted`, the id is written as a string of digits (Bybit's `reqId`). `out` is cleared
/// first; its capacity is reused.
///
/// ```
/// use tickwire_codec::rpc::set_field;
///
/// let mut out = String::new();
/// set_field(r#"{"method":"order.place","params":{"id":"x"}}"#, "id", 7, false, &mut out)?;
/// assert_eq!(out, r#"{"id":7,"method":"order.place","params":{"id":"x"}}"#);
/// set_field(r#"{"id":null,"method":"ping"}"#, "id", 8, true, &mut out)?;
/// assert_eq!(out, r#"{"id":"8","method":"ping"}"#);
/// # Ok::<(), tickwire_codec::rpc::IdError>(())
/// ```
pub fn set_field(
    request: &str,
    name: &str,
    id: u64,
    quoted: bool,
    out: &mut String,
) -> Result<(), IdError> {
    out.clear();
    // Room for the longest id, so a buffer reused for requests of one size never grows
    // again as the ids gain digits.
    out.reserve(request.len() + name.len() + 25);
    let bytes = request.as_bytes();
    let mut scan = Scan::object(bytes).ok_or(IdError::NotAnObject)?;
    let open = scan.at; // just past `{`
    let mut found = None;
    loop {
        match scan.peek_member() {
            Some(true) => {}
            Some(false) => break,
            None => return Err(IdError::NotAnObject),
        }
        let (key, value) = scan.next_member().ok_or(IdError::NotAnObject)?;
        scan.skip_value().ok_or(IdError::NotAnObject)?;
        if key == name.as_bytes() && found.is_none() {
            found = Some((value, scan.at));
        }
    }
    match found {
        Some((start, end)) => {
            out.push_str(&request[..start]);
            push_id(out, id, quoted);
            out.push_str(&request[end..]);
        }
        None => {
            out.push_str(&request[..open]);
            out.push('"');
            out.push_str(name);
            out.push_str("\":");
            push_id(out, id, quoted);
            if !scan.empty {
                out.push(',');
            }
            out.push_str(&request[open..]);
        }
    }
    Ok(())
}

/// Writes a JSON-RPC 2.0 request: `{"jsonrpc":"2.0","id":ID,"method":METHOD,"params":PARAMS}`
/// (`params` left out when `None`; it is written as given, and must be JSON). `out` is
/// cleared first.
///
/// ```
/// use tickwire_codec::rpc::json_rpc;
///
/// let mut out = String::new();
/// json_rpc(3, "private/buy", Some(r#"{"amount":10}"#), &mut out);
/// assert_eq!(out, r#"{"jsonrpc":"2.0","id":3,"method":"private/buy","params":{"amount":10}}"#);
/// ```
pub fn json_rpc(id: u64, method: &str, params: Option<&str>, out: &mut String) {
    out.clear();
    out.push_str(r#"{"jsonrpc":"2.0","id":"#);
    push_id(out, id, false);
    out.push_str(r#","method":""#);
    push_escaped(out, method);
    out.push('"');
    if let Some(params) = params {
        out.push_str(r#","params":"#);
        out.push_str(params);
    }
    out.push('}');
}

fn push_id(out: &mut String, id: u64, quoted: bool) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut rest = id;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    let text = core::str::from_utf8(&digits[at..]).unwrap_or("0");
    if quoted {
        out.push('"');
        out.push_str(text);
        out.push('"');
    } else {
        out.push_str(text);
    }
}

/// Escapes `text` as the inside of a JSON string (RFC 8259 §7).
fn push_escaped(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str("\\u00");
                let hex = b"0123456789abcdef";
                out.push(hex[(c as usize) >> 4] as char);
                out.push(hex[(c as usize) & 0xF] as char);
            }
            c => out.push(c),
        }
    }
}

/// A member value that is an id: digits, or digits in quotes, then the value's end.
fn number_value(value: &[u8]) -> Option<u64> {
    let (digits, quoted) = match value.first()? {
        b'"' => (&value[1..], true),
        _ => (value, false),
    };
    let (n, taken) = crate::feed::leading_u64(digits)?;
    let rest = &digits[taken..];
    let ends = if quoted {
        rest.first() == Some(&b'"')
    } else {
        // A fraction or an exponent makes it no integer id.
        !matches!(rest.first(), Some(b'.' | b'e' | b'E'))
    };
    // A leading zero is no JSON integer ("017"), except 0 itself.
    (ends && (digits[0] != b'0' || taken == 1)).then_some(n)
}

/// A cursor over one JSON object's top-level members. Tolerant where tolerance is cheap
/// (it does not validate what it skips), strict where a wrong answer would follow (string
/// escapes, nesting).
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    /// The object had no member when it was opened.
    empty: bool,
    /// Members read so far.
    members: usize,
}

impl<'a> Scan<'a> {
    fn object(bytes: &'a [u8]) -> Option<Self> {
        let mut scan = Self {
            bytes,
            at: 0,
            empty: false,
            members: 0,
        };
        scan.whitespace();
        if scan.bytes.get(scan.at) != Some(&b'{') {
            return None;
        }
        scan.at += 1;
        let open = scan.at;
        scan.whitespace();
        scan.empty = scan.bytes.get(scan.at) == Some(&b'}');
        scan.at = open;
        Some(scan)
    }

    /// Whether another member follows (`Some(false)`: the object's end).
    fn peek_member(&mut self) -> Option<bool> {
        self.whitespace();
        match self.bytes.get(self.at)? {
            b'}' => Some(false),
            b',' if self.members > 0 => Some(true),
            b'"' if self.members == 0 => Some(true),
            _ => None,
        }
    }

    /// The next member's key (raw, between its quotes) and where its value starts.
    fn next_member(&mut self) -> Option<(&'a [u8], usize)> {
        self.whitespace();
        if self.members > 0 {
            if self.bytes.get(self.at)? != &b',' {
                return None;
            }
            self.at += 1;
            self.whitespace();
        }
        if self.bytes.get(self.at)? != &b'"' {
            return None;
        }
        let start = self.at + 1;
        let end = string_end(self.bytes, start)?;
        self.at = end + 1;
        self.whitespace();
        if self.bytes.get(self.at)? != &b':' {
            return None;
        }
        self.at += 1;
        self.whitespace();
        self.members += 1;
        // A value must follow.
        self.bytes.get(self.at)?;
        Some((&self.bytes[start..end], self.at))
    }

    /// Moves past the value that starts here: a string, a container (to its matching
    /// close), or a scalar (to the next `,`, `}` or `]` at this level).
    fn skip_value(&mut self) -> Option<()> {
        let bytes = self.bytes;
        match *bytes.get(self.at)? {
            b'"' => self.at = string_end(bytes, self.at + 1)? + 1,
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match *bytes.get(self.at)? {
                        b'"' => self.at = string_end(bytes, self.at + 1)?,
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.at += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.at += 1;
                }
            }
            _ => {
                while !matches!(*bytes.get(self.at)?, b',' | b'}' | b']') {
                    self.at += 1;
                }
                // Trailing whitespace belongs to no value.
                while self.at > 0 && bytes[self.at - 1].is_ascii_whitespace() {
                    self.at -= 1;
                }
            }
        }
        Some(())
    }

    fn whitespace(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }
}

/// The index of the quote that closes the string whose content starts at `start`.
fn string_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    loop {
        match *bytes.get(at)? {
            b'"' => return Some(at),
            b'\\' => at += 2,
            _ => at += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_level_id_is_found_past_nested_ones_and_tricky_strings() {
        let cases: [(&[u8], Option<u64>); 12] = [
            (br#"{"id":1}"#, Some(1)),
            (br#"  { "id" : 18446744073709551615 }"#, Some(u64::MAX)),
            (br#"{"id":18446744073709551616}"#, None),
            (br#"{"a":"\"id\":3","id":4}"#, Some(4)),
            (br#"{"a":{"id":3,"b":[{"id":5}]},"id":6}"#, Some(6)),
            (br#"{"a":"x\\","id":7}"#, Some(7)),
            (br#"{"id":-1}"#, None),
            (br#"{"id":1.5}"#, None),
            (br#"{"id":017}"#, None),
            (br#"{"id":"12a"}"#, None),
            (br#"{"id":null,"result":1}"#, None),
            (br#"[{"id":1}]"#, None),
        ];
        for (message, id) in cases {
            assert_eq!(
                field_u64(message, "id"),
                id,
                "{}",
                String::from_utf8_lossy(message)
            );
        }
    }

    #[test]
    fn a_message_cut_short_has_no_id_and_never_panics() {
        let whole = br#"{"a":{"b":"c\"d"},"id":"99"}"#;
        for end in 0..whole.len() - 1 {
            // The id is the last member: no shorter prefix carries it with its closing quote.
            assert_eq!(field_u64(&whole[..end], "id"), None, "{end}");
        }
        assert_eq!(field_u64(whole, "id"), Some(99));
    }

    #[test]
    fn an_id_is_inserted_first_or_replaces_the_one_there() {
        let mut out = String::from("old contents");
        set_field("{}", "id", 1, false, &mut out).unwrap();
        assert_eq!(out, r#"{"id":1}"#);
        set_field(r#" { "m" : 1 } "#, "req_id", 2, false, &mut out).unwrap();
        assert_eq!(out, r#" {"req_id":2, "m" : 1 } "#);
        set_field(
            r#"{"m":{"id":5},"id" : "x" ,"n":2}"#,
            "id",
            3,
            false,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, r#"{"m":{"id":5},"id" : 3 ,"n":2}"#);
        for bad in ["", "[1]", r#"{"m":"#, r#"{"m" 1}"#, "ping"] {
            assert_eq!(
                set_field(bad, "id", 1, false, &mut out),
                Err(IdError::NotAnObject),
                "{bad}"
            );
        }
    }

    #[test]
    fn what_is_written_reads_back() {
        let mut out = String::new();
        for id in [0, 1, 9, 10, 12_345, u64::MAX] {
            for quoted in [false, true] {
                set_field(r#"{"p":[1,{"id":0}]}"#, "id", id, quoted, &mut out).unwrap();
                assert_eq!(field_u64(out.as_bytes(), "id"), Some(id), "{out}");
            }
            json_rpc(id, "a\"b\n\u{1}", None, &mut out);
            assert_eq!(field_u64(out.as_bytes(), "id"), Some(id), "{out}");
            assert!(out.contains(r#""method":"a\"b\n\u0001""#), "{out}");
        }
    }
}
