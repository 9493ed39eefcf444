//! The packet header: its constants, its parse (checked byte by byte as it arrives) and its
//! encoding. Layout in the module docs and docs/PACKET.md.

use super::PacketError;

/// The first two bytes of every packet: `"TW"`.
pub const MAGIC: [u8; 2] = [0x54, 0x57];
/// The only version this crate reads and writes.
pub const VERSION: u8 = 0x01;
/// Length of the fixed part of the header: magic, version, flags, wire length, request id.
pub const BASE_HEADER_LEN: usize = 16;
/// Length of the longest header: the fixed part, the uncompressed length, a dictionary id and
/// a checksum.
pub const MAX_HEADER_LEN: usize = BASE_HEADER_LEN + 12;

/// Flags bits 0-1: the codec.
const CODEC_MASK: u8 = 0x03;
const CODEC_NONE: u8 = 0x00;
const CODEC_LZ4: u8 = 0x01;
const CODEC_ZSTD: u8 = 0x02;
const CODEC_ZSTD_DICTIONARY: u8 = 0x03;
/// Flags bit 2: a CRC-32C ends the header.
const CHECKSUM: u8 = 0x04;
/// Flags bits 3-7: reserved, zero in version 1.
const RESERVED: u8 = 0xf8;

/// How a packet's payload is compressed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Codec {
    /// Not compressed: the wire payload is the payload.
    None,
    /// One LZ4 block (no LZ4 frame).
    Lz4,
    /// One Zstd frame.
    Zstd,
    /// One Zstd frame compressed with the shared dictionary of this id.
    ZstdDictionary(u32),
}

impl Codec {
    /// True for every codec but [`Codec::None`].
    pub const fn is_compressed(self) -> bool {
        !matches!(self, Self::None)
    }

    const fn bits(self) -> u8 {
        match self {
            Self::None => CODEC_NONE,
            Self::Lz4 => CODEC_LZ4,
            Self::Zstd => CODEC_ZSTD,
            Self::ZstdDictionary(_) => CODEC_ZSTD_DICTIONARY,
        }
    }
}

/// A decoded packet header.
///
/// `#[non_exhaustive]`: read the fields, match with `Header { request_id, .. }`, build one
/// with [`Header::new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Header {
    /// The request id: matches a response to its request on a multiplexed link; 0 where the
    /// link does not multiplex.
    pub request_id: u64,
    /// How the payload is compressed on the wire.
    pub codec: Codec,
    /// Payload bytes on the wire, after the header.
    pub wire_len: u32,
    /// Payload bytes after decompression; equal to `wire_len` for [`Codec::None`].
    pub payload_len: u32,
    /// The CRC-32C of the header before it and of the wire payload, when present.
    pub checksum: Option<u32>,
}

impl Header {
    /// The header of an uncompressed packet without a checksum.
    pub const fn new(request_id: u64, payload_len: u32) -> Self {
        Self {
            request_id,
            codec: Codec::None,
            wire_len: payload_len,
            payload_len,
            checksum: None,
        }
    }

    /// Bytes the header takes on the wire: 16 to 28.
    pub const fn header_len(&self) -> usize {
        header_len(self.codec, self.checksum.is_some())
    }

    /// Bytes the whole packet takes on the wire: header and wire payload.
    pub const fn packet_len(&self) -> usize {
        self.header_len() + self.wire_len as usize
    }

    /// Writes the header into the front of `out` (at least [`header_len`](Self::header_len)
    /// bytes) and returns its length. The checksum field is written as
    /// [`checksum`](Self::checksum) says (zero when `Some` is to be filled in later by
    /// [`seal`]).
    pub(crate) fn write(&self, out: &mut [u8]) -> usize {
        let flags = self.codec.bits() | if self.checksum.is_some() { CHECKSUM } else { 0 };
        out[0..2].copy_from_slice(&MAGIC);
        out[2] = VERSION;
        out[3] = flags;
        out[4..8].copy_from_slice(&self.wire_len.to_le_bytes());
        out[8..16].copy_from_slice(&self.request_id.to_le_bytes());
        let mut at = BASE_HEADER_LEN;
        if self.codec.is_compressed() {
            out[at..at + 4].copy_from_slice(&self.payload_len.to_le_bytes());
            at += 4;
        }
        if let Codec::ZstdDictionary(id) = self.codec {
            out[at..at + 4].copy_from_slice(&id.to_le_bytes());
            at += 4;
        }
        if let Some(checksum) = self.checksum {
            out[at..at + 4].copy_from_slice(&checksum.to_le_bytes());
            at += 4;
        }
        at
    }
}

/// Header length for a codec and checksum choice.
pub(crate) const fn header_len(codec: Codec, checksum: bool) -> usize {
    let mut len = BASE_HEADER_LEN;
    if codec.is_compressed() {
        len += 4;
    }
    if matches!(codec, Codec::ZstdDictionary(_)) {
        len += 4;
    }
    if checksum {
        len += 4;
    }
    len
}

/// The checksum of a packet: CRC-32C over the header up to the checksum field, then the wire
/// payload.
pub(crate) fn checksum(header_before_checksum: &[u8], wire_payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(header_before_checksum), wire_payload)
}

/// Computes the checksum of the packet at the front of `packet` (header written with a
/// checksum field, then the wire payload) and stores it in the header's last four bytes.
pub(crate) fn seal(packet: &mut [u8], header_len: usize) -> u32 {
    let (header, payload) = packet.split_at_mut(header_len);
    let sum = checksum(&header[..header_len - 4], payload);
    header[header_len - 4..].copy_from_slice(&sum.to_le_bytes());
    sum
}

/// What [`parse`] found at the front of the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// A complete, valid header.
    Header(Header),
    /// The header is not complete: this many bytes are needed to parse it.
    NeedMore(usize),
}

/// Parses the header at the front of `bytes`, checking each field as soon as its bytes are
/// there: a wrong magic byte, version, flag or a length over `max_payload_len` is refused
/// before the rest of the header arrives.
pub(crate) fn parse(bytes: &[u8], max_payload_len: usize) -> Result<Parsed, PacketError> {
    for (at, &expected) in MAGIC.iter().enumerate() {
        match bytes.get(at) {
            Some(&byte) if byte != expected => return Err(PacketError::BadMagic),
            Some(_) => {}
            None => return Ok(Parsed::NeedMore(BASE_HEADER_LEN)),
        }
    }
    let Some(&version) = bytes.get(2) else {
        return Ok(Parsed::NeedMore(BASE_HEADER_LEN));
    };
    if version != VERSION {
        return Err(PacketError::UnsupportedVersion(version));
    }
    let Some(&flags) = bytes.get(3) else {
        return Ok(Parsed::NeedMore(BASE_HEADER_LEN));
    };
    if flags & RESERVED != 0 {
        return Err(PacketError::ReservedFlags(flags));
    }
    let Some(wire_len) = bytes.get(4..8) else {
        return Ok(Parsed::NeedMore(BASE_HEADER_LEN));
    };
    let wire_len = u32::from_le_bytes([wire_len[0], wire_len[1], wire_len[2], wire_len[3]]);
    if wire_len as usize > max_payload_len {
        return Err(PacketError::PayloadTooLarge {
            len: wire_len,
            limit: max_payload_len,
        });
    }
    let has_checksum = flags & CHECKSUM != 0;
    // The dictionary id is not known yet; only its presence counts for the length.
    let provisional = match flags & CODEC_MASK {
        CODEC_NONE => Codec::None,
        CODEC_LZ4 => Codec::Lz4,
        CODEC_ZSTD => Codec::Zstd,
        _ => Codec::ZstdDictionary(0),
    };
    let len = header_len(provisional, has_checksum);
    if bytes.len() < len {
        return Ok(Parsed::NeedMore(len));
    }
    let word =
        |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    let request_id = u64::from_le_bytes([
        bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15],
    ]);
    let mut at = BASE_HEADER_LEN;
    let mut payload_len = wire_len;
    if provisional.is_compressed() {
        payload_len = word(at);
        at += 4;
        if payload_len as usize > max_payload_len {
            return Err(PacketError::PayloadTooLarge {
                len: payload_len,
                limit: max_payload_len,
            });
        }
    }
    let codec = match provisional {
        Codec::ZstdDictionary(_) => {
            let id = word(at);
            at += 4;
            Codec::ZstdDictionary(id)
        }
        other => other,
    };
    let checksum = has_checksum.then(|| word(at));
    Ok(Parsed::Header(Header {
        request_id,
        codec,
        wire_len,
        payload_len,
        checksum,
    }))
}
