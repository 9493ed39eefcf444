//! Configuration of both halves of a packet link: limits, checksum, compression policy and the
//! shared Zstd dictionary (rule 4 of docs/ARCHITECTURE.md: every limit configured, with a documented default).

#[cfg(feature = "zstd")]
use crate::compress::ZstdDictionary;

/// Configuration of a [`PacketReader`](super::PacketReader) and a
/// [`PacketWriter`](super::PacketWriter). One value serves both ends of a link and may be
/// cloned into every connection (a dictionary inside it is shared, not copied).
///
/// `#[non_exhaustive]`: start from [`PacketConfig::client`] or [`PacketConfig::server`] and
/// change fields with the `with_*` methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PacketConfig {
    /// Largest payload, on the wire and after decompression. The reader refuses a header that
    /// announces more (before buffering the payload); the writer refuses to encode more.
    /// Values above `u32::MAX` act as `u32::MAX` (the length fields are 32 bits).
    pub max_payload_len: usize,
    /// Writer: end every header with a CRC-32C of the header and wire payload. Reader: refuse
    /// packets without one ([`PacketError::MissingChecksum`](super::PacketError)); a checksum
    /// that is present is verified either way. Off by default: TCP already checks segments
    /// and TLS authenticates them; turn it on for links whose middleboxes may damage bytes.
    pub checksum: bool,
    /// How the writer compresses (the reader decompresses whatever codec is compiled in).
    pub compression: CompressionPolicy,
    /// The shared Zstd dictionary: the writer compresses with it when the policy picks Zstd,
    /// the reader decompresses packets that name its id. Both ends must configure the same.
    #[cfg(feature = "zstd")]
    pub dictionary: Option<ZstdDictionary>,
    /// Most bytes queued for the socket before this end stops taking packets in: past it
    /// ([`Session::output_full`](super::Session::output_full)) the transports neither read
    /// nor parse and write until the queue is empty (bounded by their write timeouts), so a
    /// peer that sends requests without reading the answers meets TCP's flow control instead
    /// of growing this end's memory. Server default 4 MiB. Client default unlimited: a
    /// client's queue holds its own requests (bounded by the multiplexer's caps), and a
    /// client that stopped reading while a server did the same would wait forever.
    pub max_queued: usize,
}

impl PacketConfig {
    /// Client defaults: responses and snapshots of several MiB fit. 16 MiB payloads, no
    /// checksum, no compression.
    pub fn client() -> Self {
        Self {
            max_payload_len: 16 << 20,
            checksum: false,
            compression: CompressionPolicy::none(),
            #[cfg(feature = "zstd")]
            dictionary: None,
            max_queued: usize::MAX,
        }
    }

    /// Server defaults, tighter because clients are untrusted: 1 MiB payloads, no checksum,
    /// no compression, reading paused while more than 4 MiB of answers wait for the socket.
    pub fn server() -> Self {
        Self {
            max_payload_len: 1 << 20,
            max_queued: 4 << 20,
            ..Self::client()
        }
    }

    /// The payload limit as the 32-bit length fields can carry it.
    pub(crate) fn payload_limit(&self) -> usize {
        self.max_payload_len.min(u32::MAX as usize)
    }

    with_methods! {
        set with_max_payload_len => max_payload_len: usize,
        set with_checksum => checksum: bool,
        set with_compression => compression: CompressionPolicy,
        set with_max_queued => max_queued: usize,
        #[cfg(feature = "zstd")]
        set with_dictionary => dictionary: Option<ZstdDictionary>,
    }
}

impl Default for PacketConfig {
    /// The client defaults.
    fn default() -> Self {
        Self::client()
    }
}

/// Which codec the writer compresses with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Compression {
    /// Never compress.
    None,
    /// LZ4 for every packet the policy compresses.
    #[cfg(feature = "lz4")]
    Lz4,
    /// Zstd (with the configured dictionary, if any) for every packet the policy compresses.
    #[cfg(feature = "zstd")]
    Zstd,
    /// LZ4 below [`CompressionPolicy::auto_zstd_from`] bytes, Zstd from there on (see
    /// docs/PACKET.md for the measurement behind the default).
    #[cfg(all(feature = "lz4", feature = "zstd"))]
    Auto,
}

/// When and how the writer compresses a payload.
///
/// A payload is sent uncompressed (flags say so) when the policy's codec is
/// [`Compression::None`], when it is shorter than [`min_size`](Self::min_size), when the
/// probe says it will not compress ([`skip_incompressible`](Self::skip_incompressible)), or
/// when compressing it did not make the packet shorter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompressionPolicy {
    /// The codec.
    pub codec: Compression,
    /// Payloads shorter than this are never compressed. Default 512 bytes: below it LZ4
    /// saves under 60% of a JSON message, costs about half a microsecond, and the bytes saved
    /// are worth less than that on a 10 Gb/s link (docs/PACKET.md).
    pub min_size: usize,
    /// Before compressing a payload of at least [`PROBE_FROM`] bytes, compress its first
    /// [`PROBE_LEN`] bytes with LZ4 (with Zstd in a build without the `lz4` feature) and send
    /// the payload uncompressed when they shrink by less than an eighth. Measured against a
    /// byte-entropy estimate in docs/PACKET.md: as cheap on the data it skips, and exact where
    /// entropy is a proxy. Default on.
    pub skip_incompressible: bool,
    /// Zstd compression level (without a dictionary; a dictionary carries its own). Default 1:
    /// the fastest standard level, for latency.
    pub zstd_level: i32,
    /// `Compression::Auto` (features `lz4` and `zstd`) uses Zstd from this payload size on, LZ4 below it. Default
    /// 64 KiB: from there Zstd level 1 halves LZ4's output for at most 1.5 times its time;
    /// below, Zstd's fixed cost per call (about 2.5 µs) makes it 2 to 4 times slower
    /// (docs/PACKET.md).
    pub auto_zstd_from: usize,
}

/// Payloads at least this long are probed before they are compressed (see
/// [`CompressionPolicy::skip_incompressible`]); shorter ones are simply compressed, and sent
/// uncompressed if that did not help.
pub const PROBE_FROM: usize = 4 << 10;
/// Bytes at the front of a payload that the probe compresses.
pub const PROBE_LEN: usize = 1 << 10;

impl CompressionPolicy {
    /// Never compress.
    pub const fn none() -> Self {
        Self {
            codec: Compression::None,
            min_size: 512,
            skip_incompressible: true,
            zstd_level: 1,
            auto_zstd_from: 64 << 10,
        }
    }

    /// LZ4, with the default threshold and probe.
    #[cfg(feature = "lz4")]
    pub const fn lz4() -> Self {
        Self::none().with_codec(Compression::Lz4)
    }

    /// Zstd, with the default threshold, probe and level.
    #[cfg(feature = "zstd")]
    pub const fn zstd() -> Self {
        Self::none().with_codec(Compression::Zstd)
    }

    /// LZ4 for small payloads and Zstd for large ones, with the default threshold and probe.
    #[cfg(all(feature = "lz4", feature = "zstd"))]
    pub const fn auto() -> Self {
        Self::none().with_codec(Compression::Auto)
    }

    with_methods! {
        const_set with_codec => codec: Compression,
        const_set with_min_size => min_size: usize,
        const_set with_skip_incompressible => skip_incompressible: bool,
        const_set with_zstd_level => zstd_level: i32,
        const_set with_auto_zstd_from => auto_zstd_from: usize,
    }
}

impl Default for CompressionPolicy {
    /// [`CompressionPolicy::none`].
    fn default() -> Self {
        Self::none()
    }
}
