//! The receive half: [`PacketReader`] turns buffered bytes into [`Packet`]s.

use super::header::{self, Parsed};
use super::{Codec, Header, PacketConfig, PacketError};
use crate::buf::ReadBuf;
#[cfg(feature = "lz4")]
use crate::compress::Lz4Decompressor;
#[cfg(feature = "zstd")]
use crate::compress::ZstdDecompressor;
#[cfg(any(feature = "lz4", feature = "zstd"))]
use crate::compress::{BoundedDecompress, DecompressError};

/// Room [`PacketReader::spare`] makes beyond the packet in progress.
const MIN_READ: usize = 4096;

/// Where a decompressed payload starts in the output buffer: a cache-line boundary.
#[cfg(any(feature = "lz4", feature = "zstd"))]
const OUTPUT_ALIGN: usize = 64;

/// One received packet: its header and its payload, borrowed from the read buffer (an
/// uncompressed packet, zero-copy) or from the output buffer the caller lent (a compressed
/// one, decompressed there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// The header as received.
    pub header: Header,
    /// The payload, decompressed; `header.payload_len` bytes.
    pub payload: &'a [u8],
}

impl Packet<'_> {
    /// The request id from the header.
    pub fn request_id(&self) -> u64 {
        self.header.request_id
    }

    /// Bytes the packet took on the wire (header and wire payload): what
    /// [`PacketReader::decode`]'s caller advances by.
    pub fn wire_size(&self) -> usize {
        self.header.packet_len()
    }
}

/// What [`PacketReader::poll`] and [`PacketReader::decode`] found (rule 2 of docs/ARCHITECTURE.md: a packet and
/// "need more bytes" are told apart; a full buffer is never "nothing").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEvent<'a> {
    /// A complete packet.
    Packet(Packet<'a>),
    /// The bytes do not hold a complete packet yet.
    NeedMore {
        /// Bytes the input must hold for the next step (the whole header, then the whole
        /// packet), counted from its start. Never more than the largest header plus
        /// [`PacketConfig::max_payload_len`]: the limit is checked first.
        needed: usize,
    },
}

/// Sans-IO packet reader for one connection.
///
/// It holds parsing state only: the bytes are in the [`ReadBuf`] (or slice) passed to each
/// call, and a compressed packet's payload goes into the `Vec` the caller lends. The
/// decompressors' state (Zstd's context, about 100 KiB) is allocated on the first packet that
/// needs it.
#[derive(Debug)]
pub struct PacketReader {
    config: PacketConfig,
    /// Bytes of the packet last returned by [`poll`](Self::poll), released on the next call.
    pending_consume: usize,
    /// What the last [`ReadEvent::NeedMore`] asked for.
    needed: usize,
    failed: bool,
    #[cfg(feature = "lz4")]
    lz4: Lz4Decompressor,
    #[cfg(feature = "zstd")]
    zstd: Option<ZstdDecompressor>,
    #[cfg(feature = "zstd")]
    zstd_dictionary: Option<ZstdDecompressor>,
}

impl PacketReader {
    /// A reader with `config`'s limit, checksum rule and dictionary.
    pub fn new(config: PacketConfig) -> Self {
        Self {
            config,
            pending_consume: 0,
            needed: 0,
            failed: false,
            #[cfg(feature = "lz4")]
            lz4: Lz4Decompressor::new(),
            #[cfg(feature = "zstd")]
            zstd: None,
            #[cfg(feature = "zstd")]
            zstd_dictionary: None,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PacketConfig {
        &self.config
    }

    /// Writable space in `buf` for the transport's next read; releases the packet last
    /// returned by [`poll`](Self::poll). After `poll` returned [`ReadEvent::NeedMore`], the
    /// space holds the rest of the packet in progress (bounded by the limit) and at least
    /// 4 KiB more. Call [`ReadBuf::filled`] after reading.
    pub fn spare<'b>(&mut self, buf: &'b mut ReadBuf) -> &'b mut [u8] {
        self.release(buf);
        let missing = self.needed.saturating_sub(buf.len());
        buf.reserve(missing.max(MIN_READ));
        buf.spare()
    }

    /// Copies `bytes` into `buf`, releasing the packet last returned by [`poll`](Self::poll)
    /// first (for transports that do not read into [`spare`](Self::spare)).
    pub fn feed(&mut self, buf: &mut ReadBuf, bytes: &[u8]) {
        self.release(buf);
        buf.extend_from_slice(bytes);
    }

    /// Releases the packet last returned by [`poll`](Self::poll) from `buf`.
    pub fn release(&mut self, buf: &mut ReadBuf) {
        buf.consume(self.pending_consume);
        self.pending_consume = 0;
    }

    /// The next packet in `buf`, or [`ReadEvent::NeedMore`]. Releases the previous packet
    /// first. A compressed packet is decompressed into the end of `out` (replacing what it held;
    /// the payload starts at a cache-line boundary, so up to 63 bytes before it are padding;
    /// `out` grows to at most the payload limit and 63 bytes); an uncompressed one is borrowed
    /// from `buf` and `out` is untouched.
    ///
    /// Errors are terminal: the first leaves the reader failed and every later call returns
    /// [`PacketError::Failed`]. The transport closes the connection.
    pub fn poll<'b>(
        &mut self,
        buf: &'b mut ReadBuf,
        out: &'b mut Vec<u8>,
    ) -> Result<ReadEvent<'b>, PacketError> {
        self.release(buf);
        let buf: &'b ReadBuf = buf;
        let event = self.decode(buf.data(), out)?;
        if let ReadEvent::Packet(packet) = &event {
            self.pending_consume = packet.wire_size();
        }
        Ok(event)
    }

    /// The packet at the front of `input`, or [`ReadEvent::NeedMore`], for callers that keep
    /// their own bytes: after a packet, advance `input` by [`Packet::wire_size`]. `out` is used
    /// as in [`poll`](Self::poll). The same bytes give the same result however they were
    /// split across reads (only complete packets are decoded; a header error is reported as
    /// soon as its first wrong byte is present).
    pub fn decode<'b>(
        &mut self,
        input: &'b [u8],
        out: &'b mut Vec<u8>,
    ) -> Result<ReadEvent<'b>, PacketError> {
        if self.failed {
            return Err(PacketError::Failed);
        }
        match self.decode_packet(input, out) {
            Ok(event) => {
                self.needed = match event {
                    ReadEvent::NeedMore { needed } => needed,
                    ReadEvent::Packet(_) => 0,
                };
                Ok(event)
            }
            Err(error) => {
                self.failed = true;
                Err(error)
            }
        }
    }

    fn decode_packet<'b>(
        &mut self,
        input: &'b [u8],
        out: &'b mut Vec<u8>,
    ) -> Result<ReadEvent<'b>, PacketError> {
        let header = match header::parse(input, self.config.payload_limit())? {
            Parsed::Header(header) => header,
            Parsed::NeedMore(needed) => return Ok(ReadEvent::NeedMore { needed }),
        };
        // Refuse what this end cannot decompress before waiting for the payload.
        self.check_codec(header.codec)?;
        if self.config.checksum && header.checksum.is_none() {
            return Err(PacketError::MissingChecksum);
        }
        let header_len = header.header_len();
        let needed = header.packet_len();
        let Some(packet) = input.get(..needed) else {
            return Ok(ReadEvent::NeedMore { needed });
        };
        let wire = &packet[header_len..];
        if let Some(expected) = header.checksum {
            let actual = header::checksum(&packet[..header_len - 4], wire);
            if actual != expected {
                return Err(PacketError::ChecksumMismatch { expected, actual });
            }
        }
        let payload: &'b [u8] = if header.codec.is_compressed() {
            let start = self.decompress(header, wire, out)?;
            &out[start..]
        } else {
            wire
        };
        Ok(ReadEvent::Packet(Packet { header, payload }))
    }

    /// Refuses a codec this build or configuration cannot decompress.
    fn check_codec(&self, codec: Codec) -> Result<(), PacketError> {
        match codec {
            Codec::None => Ok(()),
            #[cfg(feature = "lz4")]
            Codec::Lz4 => Ok(()),
            #[cfg(feature = "zstd")]
            Codec::Zstd => Ok(()),
            #[cfg(feature = "zstd")]
            Codec::ZstdDictionary(id) => match &self.config.dictionary {
                Some(dictionary) if dictionary.id() == id => Ok(()),
                _ => Err(PacketError::UnknownDictionary(id)),
            },
            #[cfg(not(all(feature = "lz4", feature = "zstd")))]
            other => Err(PacketError::UnsupportedCodec(other)),
        }
    }

    /// Decompresses a checked compressed payload into the end of `out`, bounded by its
    /// declared length, and returns where in `out` it starts: the first cache-line boundary
    /// of `out`'s buffer, which is grown first (to the declared length and 63 bytes, at
    /// most the payload limit and 63) so that it does not move. LZ4 decodes 32-byte records
    /// up to 20% faster into 64-byte-aligned output than into the 16-byte alignment an
    /// allocation happens to have (docs/benchmarks/packet.md).
    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn decompress(
        &mut self,
        header: Header,
        wire: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<usize, PacketError> {
        let declared = header.payload_len as usize;
        out.reserve_exact((declared + OUTPUT_ALIGN - 1).saturating_sub(out.len()));
        let start = out
            .as_ptr()
            .align_offset(OUTPUT_ALIGN)
            .min(OUTPUT_ALIGN - 1);
        let decompressor: &mut dyn BoundedDecompress = match header.codec {
            #[cfg(feature = "lz4")]
            Codec::Lz4 => &mut self.lz4,
            #[cfg(feature = "zstd")]
            Codec::Zstd => self.zstd.get_or_insert_with(ZstdDecompressor::new),
            #[cfg(feature = "zstd")]
            Codec::ZstdDictionary(_) => {
                let dictionary = self.config.dictionary.as_ref();
                self.zstd_dictionary
                    .get_or_insert_with(|| match dictionary {
                        Some(dictionary) => ZstdDecompressor::with_dictionary(dictionary),
                        // check_codec refused the packet already.
                        None => ZstdDecompressor::new(),
                    })
            }
            other => return Err(PacketError::UnsupportedCodec(other)),
        };
        match decompressor.decompress_at(wire, out, start, declared) {
            Ok(len) if len == declared => Ok(start),
            Ok(len) => Err(PacketError::LengthMismatch {
                declared: header.payload_len,
                actual: len,
            }),
            Err(DecompressError::TooLarge { .. }) => Err(PacketError::LengthMismatch {
                declared: header.payload_len,
                actual: declared + 1,
            }),
            Err(error) => Err(PacketError::Decompress(error)),
        }
    }

    /// Without a decompressor compiled in, `check_codec` refused every compressed packet.
    #[cfg(not(any(feature = "lz4", feature = "zstd")))]
    fn decompress(
        &mut self,
        header: Header,
        _wire: &[u8],
        _out: &mut Vec<u8>,
    ) -> Result<usize, PacketError> {
        Err(PacketError::UnsupportedCodec(header.codec))
    }
}
