//! The send half: [`PacketWriter`] encodes payloads straight into a [`WriteBuf`].

use super::header::{self, Header};
#[cfg(any(feature = "lz4", feature = "zstd"))]
use super::{Codec, Compression, PROBE_FROM, PROBE_LEN};
use super::{EncodeError, PacketConfig};
use crate::buf::WriteBuf;
#[cfg(feature = "lz4")]
use crate::compress::Lz4Compressor;
#[cfg(feature = "zstd")]
use crate::compress::ZstdCompressor;

/// Sans-IO packet writer for one connection.
///
/// Each call appends one whole packet to the [`WriteBuf`] (behind whatever is queued): the
/// header and the payload copied after it, or the header and the payload compressed straight
/// into the buffer's space. An uncompressed or Zstd packet allocates nothing once the buffer
/// has grown to fit (a Zstd context, a few hundred KiB at the low levels, is allocated on the
/// first Zstd packet); an LZ4 packet allocates lz4_flex's 8 or 16 KiB hash table for the
/// call, which lz4_flex does not let a caller keep.
#[derive(Debug)]
pub struct PacketWriter {
    config: PacketConfig,
    #[cfg(feature = "lz4")]
    lz4: Lz4Compressor,
    #[cfg(feature = "zstd")]
    zstd: ZstdCompressor,
}

/// The compressor chosen for one payload.
#[cfg(any(feature = "lz4", feature = "zstd"))]
#[derive(Debug, Clone, Copy)]
enum Chosen {
    #[cfg(feature = "lz4")]
    Lz4,
    #[cfg(feature = "zstd")]
    Zstd,
}

impl PacketWriter {
    /// A writer with `config`'s limit, checksum, compression policy and dictionary.
    pub fn new(config: PacketConfig) -> Self {
        Self {
            config,
            #[cfg(feature = "lz4")]
            lz4: Lz4Compressor::new(),
            #[cfg(feature = "zstd")]
            zstd: ZstdCompressor::new(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &PacketConfig {
        &self.config
    }

    /// Appends one packet carrying `payload` under `request_id` to `out`, compressed when the
    /// [`CompressionPolicy`](super::CompressionPolicy) says so and it makes the packet
    /// shorter. Returns the header that was written.
    ///
    /// A payload over the limit is refused with `out` unchanged.
    pub fn encode(
        &mut self,
        out: &mut WriteBuf,
        request_id: u64,
        payload: &[u8],
    ) -> Result<Header, EncodeError> {
        self.check_len(payload.len())?;
        #[cfg(any(feature = "lz4", feature = "zstd"))]
        if let Some(header) = self.encode_compressed(out, request_id, payload) {
            return Ok(header);
        }
        Ok(self.write_plain(out, request_id, payload))
    }

    /// Appends one uncompressed packet whatever the policy: a copy of the header and the
    /// payload, nothing else. Returns the header that was written.
    pub fn encode_uncompressed(
        &mut self,
        out: &mut WriteBuf,
        request_id: u64,
        payload: &[u8],
    ) -> Result<Header, EncodeError> {
        self.check_len(payload.len())?;
        Ok(self.write_plain(out, request_id, payload))
    }

    fn check_len(&self, len: usize) -> Result<(), EncodeError> {
        let limit = self.config.payload_limit();
        if len > limit {
            return Err(EncodeError::PayloadTooLarge { len, limit });
        }
        Ok(())
    }

    /// Writes an uncompressed packet; `payload` is within the limit.
    fn write_plain(&mut self, out: &mut WriteBuf, request_id: u64, payload: &[u8]) -> Header {
        let mut header = Header::new(request_id, payload.len() as u32);
        header.checksum = self.config.checksum.then_some(0);
        let header_len = header.header_len();
        let slot = out.append_slot(header_len + payload.len());
        header.write(slot);
        slot[header_len..].copy_from_slice(payload);
        if self.config.checksum {
            header.checksum = Some(header::seal(slot, header_len));
        }
        header
    }

    /// Compresses `payload` into `out` when the policy picks a codec, the probe does not skip
    /// it and the packet comes out shorter; otherwise leaves `out` as it was and returns
    /// `None`.
    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn encode_compressed(
        &mut self,
        out: &mut WriteBuf,
        request_id: u64,
        payload: &[u8],
    ) -> Option<Header> {
        let chosen = self.choose(payload.len())?;
        let codec = self.wire_codec(chosen);
        let checksum = self.config.checksum;
        let header_len = header::header_len(codec, checksum);
        let plain_len = header::header_len(Codec::None, checksum) + payload.len();
        let mark = out.len();
        let slot = out.append_slot(header_len + self.max_output_len(chosen, payload.len()));
        let space = &mut slot[header_len..];
        let policy = self.config.compression;
        let skip = policy.skip_incompressible
            && payload.len() >= PROBE_FROM
            && !self.probe(chosen, &payload[..PROBE_LEN], space);
        let compressed = if skip {
            None
        } else {
            self.compress(chosen, payload, space)
                .filter(|&len| header_len + len < plain_len)
        };
        let Some(wire_len) = compressed else {
            out.truncate(mark);
            return None;
        };
        let mut header = Header {
            request_id,
            codec,
            wire_len: wire_len as u32,
            payload_len: payload.len() as u32,
            checksum: checksum.then_some(0),
        };
        out.truncate(mark + header_len + wire_len);
        let packet = &mut out.as_mut_slice()[mark..];
        header.write(packet);
        if checksum {
            header.checksum = Some(header::seal(packet, header_len));
        }
        Some(header)
    }

    /// True when `prefix` compresses by at least an eighth, judged by LZ4: as cheap as a
    /// byte-entropy estimate on data that will not compress, and an exact answer rather than
    /// a proxy (docs/PACKET.md has the measurement).
    #[cfg(feature = "lz4")]
    fn probe(&mut self, _chosen: Chosen, prefix: &[u8], space: &mut [u8]) -> bool {
        worth_it(prefix.len(), self.lz4.compress_into(prefix, space))
    }

    /// True when `prefix` compresses by at least an eighth with the chosen codec (Zstd: the
    /// only one compiled in).
    #[cfg(all(feature = "zstd", not(feature = "lz4")))]
    fn probe(&mut self, chosen: Chosen, prefix: &[u8], space: &mut [u8]) -> bool {
        worth_it(prefix.len(), self.compress(chosen, prefix, space))
    }

    /// The compressor for a payload of `len` bytes under the policy, or `None` to send it
    /// uncompressed.
    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn choose(&self, len: usize) -> Option<Chosen> {
        let policy = &self.config.compression;
        if len < policy.min_size {
            return None;
        }
        match policy.codec {
            Compression::None => None,
            #[cfg(feature = "lz4")]
            Compression::Lz4 => Some(Chosen::Lz4),
            #[cfg(feature = "zstd")]
            Compression::Zstd => Some(Chosen::Zstd),
            #[cfg(all(feature = "lz4", feature = "zstd"))]
            Compression::Auto if len >= policy.auto_zstd_from => Some(Chosen::Zstd),
            #[cfg(all(feature = "lz4", feature = "zstd"))]
            Compression::Auto => Some(Chosen::Lz4),
        }
    }

    /// The codec the header names for a chosen compressor.
    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn wire_codec(&self, chosen: Chosen) -> Codec {
        match chosen {
            #[cfg(feature = "lz4")]
            Chosen::Lz4 => Codec::Lz4,
            #[cfg(feature = "zstd")]
            Chosen::Zstd => match &self.config.dictionary {
                Some(dictionary) => Codec::ZstdDictionary(dictionary.id()),
                None => Codec::Zstd,
            },
        }
    }

    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn max_output_len(&self, chosen: Chosen, len: usize) -> usize {
        match chosen {
            #[cfg(feature = "lz4")]
            Chosen::Lz4 => Lz4Compressor::max_output_len(len),
            #[cfg(feature = "zstd")]
            Chosen::Zstd => ZstdCompressor::max_output_len(len),
        }
    }

    /// Compresses `input` into the front of `output`; `None` when it does not fit.
    #[cfg(any(feature = "lz4", feature = "zstd"))]
    fn compress(&mut self, chosen: Chosen, input: &[u8], output: &mut [u8]) -> Option<usize> {
        match chosen {
            #[cfg(feature = "lz4")]
            Chosen::Lz4 => self.lz4.compress_into(input, output),
            #[cfg(feature = "zstd")]
            Chosen::Zstd => match &self.config.dictionary {
                Some(dictionary) => self
                    .zstd
                    .compress_with_dictionary_into(input, output, dictionary),
                None => self
                    .zstd
                    .compress_into(input, output, self.config.compression.zstd_level),
            },
        }
    }
}

/// The probe's verdict: a prefix of `len` bytes compressed to `compressed` saves at least an
/// eighth.
#[cfg(any(feature = "lz4", feature = "zstd"))]
fn worth_it(len: usize, compressed: Option<usize>) -> bool {
    compressed.is_some_and(|compressed| compressed <= len - len / 8)
}
