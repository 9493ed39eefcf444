//! Errors of the packet codec: what the peer sent wrong, which limit it exceeded, what the
//! local caller misused.
//!
//! What a transport does with a [`PacketError`]: close the connection. The packet protocol has
//! no error message of its own to send, and after a malformed header the byte stream cannot be
//! resynchronised (the length that would say where the next packet starts is not to be
//! trusted). Log the error with its [`fault`](PacketError::fault).

use core::fmt;

use super::Codec;
use crate::compress::DecompressError;

/// Whose fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The peer broke the packet format (docs/PACKET.md).
    Peer,
    /// The peer sent a well-formed packet that exceeds a configured limit.
    Limit,
    /// The local caller used the API wrongly, or configured the two ends inconsistently.
    Local,
}

/// An error of [`PacketReader`](super::PacketReader). Every one is terminal: the reader
/// returns [`PacketError::Failed`] on every later call, and the transport closes the
/// connection (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PacketError {
    /// The first two bytes are not `"TW"` (`0x54 0x57`): the peer speaks another protocol.
    /// Refused as soon as the first wrong byte arrives.
    BadMagic,
    /// A version byte other than `0x01`.
    UnsupportedVersion(u8),
    /// A flags byte with a reserved bit (3-7) set. Carries the flags byte.
    ReservedFlags(u8),
    /// A codec this build cannot decompress (its cargo feature, `lz4` or `zstd`, is off).
    /// A configuration mismatch between the two ends, not a malformed packet.
    UnsupportedCodec(Codec),
    /// A Zstd-with-dictionary packet naming a dictionary id other than the configured one (or
    /// none is configured).
    UnknownDictionary(u32),
    /// A wire length, or an uncompressed length, over
    /// [`PacketConfig::max_payload_len`](super::PacketConfig). Refused as soon as the length
    /// field arrives, before the payload is buffered or anything is decompressed.
    PayloadTooLarge {
        /// The length the header announced.
        len: u32,
        /// The configured limit.
        limit: usize,
    },
    /// The configuration requires a checksum ([`PacketConfig::checksum`](super::PacketConfig))
    /// and the packet has none.
    MissingChecksum,
    /// The CRC-32C in the header does not match the header and wire payload: the bytes were
    /// damaged on the way.
    ChecksumMismatch {
        /// The checksum the header carries.
        expected: u32,
        /// The checksum of the bytes received.
        actual: u32,
    },
    /// The compressed payload is not a valid stream of its codec (corrupt or truncated).
    Decompress(DecompressError),
    /// The payload decompressed to another length than the header declared (a stream that
    /// would inflate past the declared length is stopped at it).
    LengthMismatch {
        /// The uncompressed length the header declared.
        declared: u32,
        /// Bytes the payload decompressed to (`declared + 1` when it would go past it).
        actual: usize,
    },
    /// The reader failed earlier with another error; nothing more is read.
    Failed,
}

impl PacketError {
    /// Whose fault the error is.
    pub const fn fault(&self) -> Fault {
        match self {
            Self::PayloadTooLarge { .. } => Fault::Limit,
            Self::UnsupportedCodec(_) | Self::UnknownDictionary(_) | Self::Failed => Fault::Local,
            _ => Fault::Peer,
        }
    }
}

impl fmt::Display for PacketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadMagic => f.write_str("not a packet: bad magic"),
            Self::UnsupportedVersion(v) => write!(f, "unsupported packet version {v:#04x}"),
            Self::ReservedFlags(flags) => write!(f, "reserved packet flags set: {flags:#04x}"),
            Self::UnsupportedCodec(codec) => {
                write!(f, "packet codec {codec:?} is not compiled in")
            }
            Self::UnknownDictionary(id) => write!(f, "unknown zstd dictionary id {id}"),
            Self::PayloadTooLarge { len, limit } => {
                write!(
                    f,
                    "packet payload of {len} bytes exceeds the limit of {limit}"
                )
            }
            Self::MissingChecksum => f.write_str("packet without the required checksum"),
            Self::ChecksumMismatch { expected, actual } => write!(
                f,
                "packet checksum mismatch: header says {expected:#010x}, bytes give {actual:#010x}"
            ),
            Self::Decompress(error) => write!(f, "packet payload: {error}"),
            Self::LengthMismatch { declared, actual } => write!(
                f,
                "packet payload decompressed to {actual} bytes, header declared {declared}"
            ),
            Self::Failed => f.write_str("packet reader already failed"),
        }
    }
}

impl std::error::Error for PacketError {}

/// An error of [`PacketWriter`](super::PacketWriter): local misuse, nothing was written.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EncodeError {
    /// The payload is longer than the writer's
    /// [`PacketConfig::max_payload_len`](super::PacketConfig) (itself capped by the 32-bit
    /// length field). The write buffer is unchanged.
    PayloadTooLarge {
        /// The payload's length.
        len: usize,
        /// The limit in force.
        limit: usize,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::PayloadTooLarge { len, limit } => {
                write!(
                    f,
                    "payload of {len} bytes exceeds the packet limit of {limit}"
                )
            }
        }
    }
}

impl std::error::Error for EncodeError {}
