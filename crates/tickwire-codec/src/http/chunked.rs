//! The chunked transfer coding decoder (RFC 9112 §7.1), a byte-driven state machine.
//!
//! This module owns [`ChunkedDecoder`]: chunk-size lines, extensions, data, the trailer
//! section and every limit on them, checked byte by byte so a partial input is rejected as
//! soon as it proves bad. It keeps its state between calls and never looks at a byte twice.
//! It does not interpret trailer fields: the readers parse the trailer section it delimits.
//!
//! Grammar enforced (RFC 9112 §7.1, §7.1.1, §7.1.2):
//!
//! ```text
//! chunk      = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
//! last-chunk = 1*"0" [ chunk-ext ] CRLF
//! chunk-ext  = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] )
//! trailers   = *( field-name ":" field-value CRLF ) CRLF
//! ```

use super::error::HttpError;
use super::limits::Limits;

/// Chunk framing (size lines, extensions, CRLFs) a body may carry on top of its data: as much
/// as [`Limits::max_body_bytes`], and at least this much so that tiny limits still admit
/// `0\r\n\r\n` and a few extensions. Bounds the raw bytes a reader holds while decoding in
/// place.
const MIN_FRAMING_ALLOWANCE: u64 = 0x400;

/// Result of one decoding step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decoded {
    /// Input bytes taken (framing and data).
    pub consumed: usize,
    /// Data bytes produced.
    pub produced: usize,
    /// The last chunk and its trailer section have been read: the body is complete and no
    /// further input is taken.
    pub done: bool,
}

/// Decodes a chunked body incrementally, in place or into a callback.
///
/// Feed input in any pieces: the result (data, done, or the error) does not depend on how the
/// input was split. After an error every later call returns the same error.
#[derive(Debug, Clone)]
pub struct ChunkedDecoder {
    limits: Limits,
    state: State,
    /// The chunk size being read.
    size: u64,
    size_digits: usize,
    extension_bytes: usize,
    /// Data bytes announced by complete chunk-size lines, and by the one being read.
    body_bytes: u64,
    framing_bytes: u64,
    trailer_bytes: usize,
    trailer_fields: usize,
    /// Offset of the next input byte: a buffer index for `decode_in_place`, a stream offset
    /// for `decode`.
    position: usize,
    trailer_start: usize,
    trailer_end: usize,
    failed: Option<HttpError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    SizeStart,
    Size,
    /// Whitespace after the size: only `;` may follow.
    SizeSpace,
    Extension(Extension),
    SizeLf,
    Data {
        remaining: u64,
    },
    DataCr,
    DataLf,
    TrailerLineStart,
    TrailerName,
    TrailerValue,
    TrailerLf,
    EndLf,
    Done,
}

/// Where inside `;name[=value]` the decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Extension {
    BeforeName,
    Name,
    AfterName,
    BeforeValue,
    Token,
    Quoted,
    QuotedPair,
    AfterValue,
}

impl ChunkedDecoder {
    /// A decoder at the start of a chunked body, enforcing the chunk, body and trailer limits
    /// of `limits` (and `max_headers` for trailer fields).
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            state: State::SizeStart,
            size: 0,
            size_digits: 0,
            extension_bytes: 0,
            body_bytes: 0,
            framing_bytes: 0,
            trailer_bytes: 0,
            trailer_fields: 0,
            position: 0,
            trailer_start: 0,
            trailer_end: 0,
            failed: None,
        }
    }

    /// Decodes `buf[start..]` in place: data bytes are moved to `buf[out..]`, where `out` is
    /// the end of the data produced so far (`out <= start`; the caller tracks both). Returns
    /// the input bytes consumed from `start`, the data bytes written at `out`, and whether the
    /// body ended (then nothing after the trailer section is consumed). Bytes between the data
    /// end and the read position are left stale; the trailer section is never overwritten.
    ///
    /// Call again with the same `buf` base and the advanced `out` and `start` after more
    /// input arrives. An `out` past `start` is treated as `start`.
    pub fn decode_in_place(
        &mut self,
        buf: &mut [u8],
        out: usize,
        start: usize,
    ) -> Result<Decoded, HttpError> {
        let start = start.min(buf.len());
        let out = out.min(start);
        self.position = start;
        let (mut read, mut write) = (start, out);
        while self.state != State::Done && read < buf.len() {
            let (control, data) = self.step(&buf[read..])?;
            read += control;
            if data > 0 {
                buf.copy_within(read..read + data, write);
                read += data;
                write += data;
            }
        }
        Ok(Decoded {
            consumed: read - start,
            produced: write - out,
            done: self.state == State::Done,
        })
    }

    /// Decodes `input` (the next bytes of the body), handing each run of data bytes to
    /// `out`. For streaming users that keep their own output.
    pub fn decode(
        &mut self,
        input: &[u8],
        mut out: impl FnMut(&[u8]),
    ) -> Result<Decoded, HttpError> {
        let (mut read, mut produced) = (0, 0);
        while self.state != State::Done && read < input.len() {
            let (control, data) = self.step(&input[read..])?;
            read += control;
            if data > 0 {
                out(&input[read..read + data]);
                read += data;
                produced += data;
            }
        }
        Ok(Decoded {
            consumed: read,
            produced,
            done: self.state == State::Done,
        })
    }

    /// True once the last chunk and its trailer section have been read.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Where the trailer section lies, its final CRLF included, once [`is_done`](Self::is_done):
    /// indices into the buffer given to [`decode_in_place`](Self::decode_in_place) (the same
    /// base every call), or offsets into the whole input stream given to
    /// [`decode`](Self::decode). `None` before the end.
    pub fn trailer_range(&self) -> Option<core::ops::Range<usize>> {
        self.is_done()
            .then_some(self.trailer_start..self.trailer_end)
    }

    /// Data bytes announced so far (the body length once done).
    pub fn body_len(&self) -> u64 {
        self.body_bytes
    }

    /// Takes framing bytes from the front of `input` until a run of data can be handed out,
    /// the input ends, or the body ends. Returns (framing bytes taken, data bytes that follow
    /// them); the state already accounts for both.
    fn step(&mut self, input: &[u8]) -> Result<(usize, usize), HttpError> {
        if let Some(error) = &self.failed {
            return Err(error.clone());
        }
        match self.framing(input) {
            Ok((control, data)) => {
                self.position += control + data;
                Ok((control, data))
            }
            Err(error) => {
                self.failed = Some(error.clone());
                Err(error)
            }
        }
    }

    fn framing(&mut self, input: &[u8]) -> Result<(usize, usize), HttpError> {
        let mut at = 0;
        while at < input.len() {
            if let State::Data { remaining } = self.state {
                let available = input.len() - at;
                // `remaining` may exceed usize on 32-bit targets; the run is what is here.
                let run = usize::try_from(remaining).map_or(available, |r| r.min(available));
                let left = remaining - run as u64;
                self.state = if left == 0 {
                    State::DataCr
                } else {
                    State::Data { remaining: left }
                };
                return Ok((at, run));
            }
            if self.state == State::Done {
                break;
            }
            let byte = input[at];
            self.advance_byte(byte, self.position + at)?;
            at += 1;
        }
        Ok((at, 0))
    }

    /// Advances the state by one framing or trailer byte found at stream offset `offset`.
    fn advance_byte(&mut self, byte: u8, offset: usize) -> Result<(), HttpError> {
        let in_trailers = matches!(
            self.state,
            State::TrailerLineStart
                | State::TrailerName
                | State::TrailerValue
                | State::TrailerLf
                | State::EndLf
        );
        if in_trailers {
            self.trailer_bytes += 1;
            if self.trailer_bytes > self.limits.max_trailer_bytes {
                return Err(HttpError::TrailerTooLarge {
                    limit: self.limits.max_trailer_bytes,
                });
            }
        } else {
            self.framing_bytes += 1;
            let allowance = self.limits.max_body_bytes.max(MIN_FRAMING_ALLOWANCE);
            if self.framing_bytes > allowance {
                return Err(HttpError::BodyTooLarge {
                    limit: self.limits.max_body_bytes,
                });
            }
        }
        self.state = match self.state {
            State::SizeStart => match hex_value(byte) {
                Some(digit) => {
                    self.size = 0;
                    self.size_digits = 0;
                    self.extension_bytes = 0;
                    self.push_digit(digit)?;
                    State::Size
                }
                None => return Err(HttpError::InvalidChunkSize),
            },
            State::Size => match byte {
                b'\r' => State::SizeLf,
                b'\n' => return Err(HttpError::BareLfInChunk),
                b';' => {
                    self.count_extension()?;
                    State::Extension(Extension::BeforeName)
                }
                b' ' | b'\t' => {
                    self.count_extension()?;
                    State::SizeSpace
                }
                _ => match hex_value(byte) {
                    Some(digit) => {
                        self.push_digit(digit)?;
                        State::Size
                    }
                    None => return Err(HttpError::InvalidChunkSize),
                },
            },
            State::SizeSpace => {
                self.count_extension()?;
                match byte {
                    b' ' | b'\t' => State::SizeSpace,
                    b';' => State::Extension(Extension::BeforeName),
                    _ => return Err(HttpError::InvalidChunkSize),
                }
            }
            State::Extension(at) => match byte {
                b'\r' if at.may_end() => State::SizeLf,
                b'\n' if at.may_end() => return Err(HttpError::BareLfInChunk),
                _ => {
                    self.count_extension()?;
                    State::Extension(at.next(byte)?)
                }
            },
            State::SizeLf => match byte {
                b'\n' if self.size == 0 => {
                    self.trailer_start = offset + 1;
                    self.trailer_bytes = 0;
                    self.trailer_fields = 0;
                    State::TrailerLineStart
                }
                b'\n' => State::Data {
                    remaining: self.size,
                },
                _ => return Err(HttpError::MissingChunkCrlf),
            },
            State::Data { .. } | State::Done => self.state,
            State::DataCr => match byte {
                b'\r' => State::DataLf,
                b'\n' => return Err(HttpError::BareLfInChunk),
                _ => return Err(HttpError::MissingChunkCrlf),
            },
            State::DataLf | State::TrailerLf => match byte {
                b'\n' if self.state == State::DataLf => State::SizeStart,
                b'\n' => State::TrailerLineStart,
                _ => return Err(HttpError::MissingChunkCrlf),
            },
            State::TrailerLineStart => match byte {
                b'\r' => State::EndLf,
                b'\n' => return Err(HttpError::BareLfInChunk),
                _ if is_tchar(byte) => {
                    self.trailer_fields += 1;
                    if self.trailer_fields > self.limits.max_headers {
                        return Err(HttpError::TooManyHeaders {
                            limit: self.limits.max_headers,
                        });
                    }
                    State::TrailerName
                }
                _ => return Err(HttpError::InvalidTrailer),
            },
            State::TrailerName => match byte {
                b':' => State::TrailerValue,
                _ if is_tchar(byte) => State::TrailerName,
                _ => return Err(HttpError::InvalidTrailer),
            },
            State::TrailerValue => match byte {
                b'\r' => State::TrailerLf,
                b'\n' => return Err(HttpError::BareLfInChunk),
                b'\t' | b' '..=b'~' | 0x80..=0xff => State::TrailerValue,
                _ => return Err(HttpError::InvalidTrailer),
            },
            State::EndLf => match byte {
                b'\n' => {
                    self.trailer_end = offset + 1;
                    State::Done
                }
                _ => return Err(HttpError::MissingChunkCrlf),
            },
        };
        Ok(())
    }

    /// Adds a hex digit to the chunk size, checking the digit count, u64 overflow and the body
    /// limit as the size grows (a size only grows with more digits, so the check is final).
    fn push_digit(&mut self, digit: u8) -> Result<(), HttpError> {
        self.size_digits += 1;
        if self.size_digits > self.limits.max_chunk_size_digits {
            return Err(HttpError::ChunkSizeTooLong {
                limit: self.limits.max_chunk_size_digits,
            });
        }
        let too_large = HttpError::BodyTooLarge {
            limit: self.limits.max_body_bytes,
        };
        let previous = self.size;
        self.size = previous
            .checked_mul(16)
            .and_then(|size| size.checked_add(u64::from(digit)))
            .ok_or_else(|| too_large.clone())?;
        // `body_bytes` already includes the previous value of this size.
        self.body_bytes = (self.body_bytes - previous)
            .checked_add(self.size)
            .ok_or_else(|| too_large.clone())?;
        if self.body_bytes > self.limits.max_body_bytes {
            return Err(too_large);
        }
        Ok(())
    }

    fn count_extension(&mut self) -> Result<(), HttpError> {
        self.extension_bytes += 1;
        if self.extension_bytes > self.limits.max_chunk_extension_bytes {
            return Err(HttpError::ChunkExtensionTooLong {
                limit: self.limits.max_chunk_extension_bytes,
            });
        }
        Ok(())
    }
}

impl Extension {
    /// Whether the chunk-size line may end here (after a name or a complete value).
    fn may_end(self) -> bool {
        matches!(
            self,
            Self::Name | Self::AfterName | Self::Token | Self::AfterValue
        )
    }

    fn next(self, byte: u8) -> Result<Self, HttpError> {
        let space = matches!(byte, b' ' | b'\t');
        Ok(match self {
            Self::BeforeName if space => Self::BeforeName,
            Self::BeforeName if is_tchar(byte) => Self::Name,
            Self::Name if is_tchar(byte) => Self::Name,
            Self::Name | Self::AfterName if space => Self::AfterName,
            Self::Name | Self::AfterName if byte == b'=' => Self::BeforeValue,
            Self::Name | Self::AfterName | Self::Token | Self::AfterValue if byte == b';' => {
                Self::BeforeName
            }
            Self::BeforeValue if space => Self::BeforeValue,
            Self::BeforeValue if byte == b'"' => Self::Quoted,
            Self::BeforeValue if is_tchar(byte) => Self::Token,
            Self::Token if is_tchar(byte) => Self::Token,
            Self::Token | Self::AfterValue if space => Self::AfterValue,
            Self::Quoted if byte == b'"' => Self::AfterValue,
            Self::Quoted if byte == b'\\' => Self::QuotedPair,
            Self::Quoted if is_qdtext(byte) => Self::Quoted,
            Self::QuotedPair if byte == b'\t' || byte == b' ' || is_vchar_or_obs(byte) => {
                Self::Quoted
            }
            _ => return Err(HttpError::InvalidChunkSize),
        })
    }
}

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// RFC 9110 §5.6.2 tchar.
pub(crate) fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

/// RFC 9110 §5.6.4 qdtext.
fn is_qdtext(byte: u8) -> bool {
    matches!(byte, b'\t' | b' ' | 0x21 | 0x23..=0x5b | 0x5d..=0x7e | 0x80..=0xff)
}

fn is_vchar_or_obs(byte: u8) -> bool {
    matches!(byte, 0x21..=0x7e | 0x80..=0xff)
}
