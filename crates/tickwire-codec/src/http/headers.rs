//! A borrowed, allocation-free view of the header (or trailer) fields of a parsed message.
//!
//! This module owns [`Headers`] and [`HeaderIter`]. The readers record each field as byte
//! offsets into the caller's buffer; the view resolves them on access. It does not parse:
//! `httparse` and the readers have validated every name and value before a view exists.

use core::fmt;

/// One field line as offsets into the message bytes: `bytes[name.0..name.1]` is the name,
/// `bytes[value.0..value.1]` the value without surrounding whitespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldRange {
    pub(crate) name: (usize, usize),
    pub(crate) value: (usize, usize),
}

/// The header or trailer fields of a message, in wire order, borrowed from the receive buffer.
///
/// Name lookups are ASCII case-insensitive (RFC 9110 §5.1). Values are the raw field values
/// with leading and trailing whitespace removed (§5.5); in a response, obsolete line folding
/// has been replaced by spaces (RFC 9112 §5.2).
#[derive(Clone, Copy)]
pub struct Headers<'a> {
    bytes: &'a [u8],
    fields: &'a [FieldRange],
}

impl<'a> Headers<'a> {
    pub(crate) fn new(bytes: &'a [u8], fields: &'a [FieldRange]) -> Self {
        Self { bytes, fields }
    }

    /// The value of the first field called `name`.
    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.get_all(name).next()
    }

    /// The value of the first field called `name`, if it is valid UTF-8.
    pub fn get_str(&self, name: &str) -> Option<&'a str> {
        self.get(name)
            .and_then(|value| core::str::from_utf8(value).ok())
    }

    /// The values of every field called `name`, in wire order.
    pub fn get_all<'n>(&self, name: &'n str) -> impl Iterator<Item = &'a [u8]> + use<'a, 'n> {
        // Names compared as bytes: no UTF-8 check per field on the way (a name that matches
        // an ASCII `name` byte for byte is that name).
        let bytes = self.bytes;
        self.fields
            .iter()
            .filter(move |field| slice(bytes, field.name).eq_ignore_ascii_case(name.as_bytes()))
            .map(move |field| slice(bytes, field.value))
    }

    /// The value of the field at `index`, in wire order.
    #[inline]
    pub(crate) fn value_at(&self, index: usize) -> Option<&'a [u8]> {
        self.fields
            .get(index)
            .map(|field| slice(self.bytes, field.value))
    }

    /// True when any field called `name` lists `token` among its comma-separated elements
    /// (RFC 9110 §5.6.1), compared ASCII case-insensitively; parameters after `;` are ignored.
    pub fn contains_token(&self, name: &str, token: &str) -> bool {
        self.get_all(name).any(|value| {
            list_elements(value).any(|element| {
                let bare = match element.iter().position(|&b| b == b';') {
                    Some(at) => element[..at].trim_ascii(),
                    None => element,
                };
                bare.eq_ignore_ascii_case(token.as_bytes())
            })
        })
    }

    /// Every field as `(name, value)`, in wire order.
    pub fn iter(&self) -> HeaderIter<'a> {
        HeaderIter {
            bytes: self.bytes,
            fields: self.fields.iter(),
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// True when there are no fields.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }
}

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(
                self.iter()
                    .map(|(name, value)| (name, String::from_utf8_lossy(value))),
            )
            .finish()
    }
}

impl<'a> IntoIterator for Headers<'a> {
    type Item = (&'a str, &'a [u8]);
    type IntoIter = HeaderIter<'a>;

    fn into_iter(self) -> HeaderIter<'a> {
        self.iter()
    }
}

/// Iterator over `(name, value)` pairs of a [`Headers`] view, in wire order.
#[derive(Debug, Clone)]
pub struct HeaderIter<'a> {
    bytes: &'a [u8],
    fields: core::slice::Iter<'a, FieldRange>,
}

impl<'a> Iterator for HeaderIter<'a> {
    type Item = (&'a str, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        let field = self.fields.next()?;
        let name = self
            .bytes
            .get(field.name.0..field.name.1)
            .unwrap_or_default();
        let value = self
            .bytes
            .get(field.value.0..field.value.1)
            .unwrap_or_default();
        // Names were validated as RFC 9110 tokens (ASCII) by the parser.
        Some((core::str::from_utf8(name).unwrap_or_default(), value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.fields.size_hint()
    }
}

impl ExactSizeIterator for HeaderIter<'_> {}

/// `bytes[start..end]`, or empty when the range does not lie in `bytes`.
#[inline]
fn slice(bytes: &[u8], (start, end): (usize, usize)) -> &[u8] {
    bytes.get(start..end).unwrap_or_default()
}

/// The non-empty elements of a comma-separated list value, trimmed (RFC 9110 §5.6.1:
/// recipients accept and ignore empty elements).
pub(crate) fn list_elements(value: &[u8]) -> impl Iterator<Item = &[u8]> {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|element| !element.is_empty())
}
