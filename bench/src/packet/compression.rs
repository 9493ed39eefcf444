//! Compression: compress and decompress MB/s and the size ratio, LZ4 and Zstd (level 1 on both
//! sides), on one 64 KiB payload of each kind of data, each library through its own API.
//! LZ4 is not the same code on both sides: network-protocol calls lz4_flex 0.11 (its checked
//! encoder and decoder), tickwire compresses with lz4_flex 0.14's unchecked encoder and decodes
//! with the reference C library (docs/PACKET.md, "Which LZ4").
//!
//! Two ways of calling each library, each its own row:
//!
//! - "always": compress every payload. tickwire: a `PacketWriter` whose policy has no size
//!   threshold and no probe (`with_min_size(0)`, `with_skip_incompressible(false)`); it still
//!   sends a payload uncompressed when compressing did not shrink it, as its wire format
//!   requires. network-protocol: `utils::compression::compress`.
//! - "adaptive": each library's own decision. tickwire: the codec's default policy (512 B
//!   threshold, an LZ4 probe of the first 1 KiB from 4 KiB on, kept only when shorter).
//!   network-protocol: `maybe_compress_adaptive` with the same 512 B threshold (an entropy
//!   estimate of the first 512 bytes from 1 KiB on, kept only when shorter).
//!
//! tickwire's figures include its packet header (written into a reused `WriteBuf`, decoded by
//! `PacketReader::decode` into a reused `Vec`); network-protocol's utility puts nothing on the
//! wire and returns a new `Vec` from every call. MB/s counts uncompressed bytes; the size
//! ratio is uncompressed ÷ what would be sent.

use std::hint::black_box;

use network_protocol::utils::compression::{self, CompressionKind};
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::packet::{
    BASE_HEADER_LEN, CompressionPolicy, PacketConfig, PacketReader, PacketWriter, ReadEvent,
};

use super::payloads::Data;
use super::{Budget, Library, rate_cell, ratio_cell, throughput, throughput_of};
use crate::Ctx;
use crate::harness::Clock;
use crate::report::{Figures, Row, Table, round_order};

/// Bytes of each payload compressed.
pub(crate) const PAYLOAD_LEN: usize = 64 << 10;

/// network-protocol's adaptive threshold as passed here: tickwire's default `min_size`.
const THRESHOLD: usize = 512;

/// Progress steps per round.
pub(crate) const STEPS: u64 = (Data::ALL.len() * Case::ALL.len()) as u64;

/// The two codecs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Codec {
    Lz4,
    Zstd,
}

impl Codec {
    /// The same codec in network-protocol's terms.
    fn np_kind(self) -> CompressionKind {
        match self {
            Self::Lz4 => CompressionKind::Lz4,
            Self::Zstd => CompressionKind::Zstd,
        }
    }
}

/// One row: a library, a codec, and whether the library's adaptive decision is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Case {
    library: Library,
    codec: Codec,
    adaptive: bool,
}

impl Case {
    /// Every row, in table order: each network-protocol row right after its tickwire row.
    const ALL: [Self; 8] = {
        let (t, n) = (Library::Tickwire, Library::NetworkProtocol);
        [
            Self::new(t, Codec::Lz4, false),
            Self::new(n, Codec::Lz4, false),
            Self::new(t, Codec::Lz4, true),
            Self::new(n, Codec::Lz4, true),
            Self::new(t, Codec::Zstd, false),
            Self::new(n, Codec::Zstd, false),
            Self::new(t, Codec::Zstd, true),
            Self::new(n, Codec::Zstd, true),
        ]
    };

    const fn new(library: Library, codec: Codec, adaptive: bool) -> Self {
        Self {
            library,
            codec,
            adaptive,
        }
    }

    fn name(self) -> String {
        let codec = match self.codec {
            Codec::Lz4 => "LZ4",
            Codec::Zstd => "Zstd",
        };
        let mode = if self.adaptive { "adaptive" } else { "always" };
        format!("{} {codec} {mode}", self.library.name())
    }
}

/// Runs the compression workloads selected in `ctx`, one table per kind of data.
pub(crate) fn run(ctx: &Ctx, clock: &Clock, budget: Budget) -> Vec<Table> {
    let mut tables = Vec::new();
    for data in Data::ALL {
        let id = format!("packet_compress_{}", data.id());
        if !ctx.selected(&id) {
            continue;
        }
        let payload = data.generate(PAYLOAD_LEN);
        // Per case: compress rates, decompress rates, the size cell.
        let mut figures = vec![(Vec::new(), Vec::new(), String::new()); Case::ALL.len()];
        for round in 1..=ctx.rounds {
            for i in round_order(Case::ALL.len(), round) {
                let case = Case::ALL[i];
                ctx.step(&format!("{id} / {}", case.name()));
                let (compress, decompress, size) = measure(case, &payload, clock, budget);
                figures[i].0.push(compress);
                figures[i].1.push(decompress);
                figures[i].2 = size;
            }
        }
        let mut table = Table::with_columns(
            &id,
            &format!("Packet compression: 64 KiB of {}", data.title()),
            &[
                "compress MB/s",
                "vs network-protocol",
                "decompress MB/s",
                "vs network-protocol",
                "size ratio",
            ],
            "MB/s of uncompressed bytes, median of the rounds (range); Zstd at level 1 on both \
             sides, on the same zstd crate. LZ4: network-protocol on lz4_flex 0.11 (checked \
             encoder and decoder), tickwire compressing with lz4_flex 0.14's unchecked encoder \
             and decoding with the C library (lz4 1.10). \"always\": every payload \
             compressed (tickwire: threshold and probe off, its writer still sends a payload \
             that did not shrink uncompressed; network-protocol: `compress` / `decompress`). \
             \"adaptive\": each library's own decision (tickwire: default policy, an LZ4 probe \
             of the first 1 KiB; network-protocol: `maybe_compress_adaptive` at a 512 B \
             threshold, an entropy estimate of the first 512 bytes). tickwire's figures include \
             its packet header, written into a reused `WriteBuf` and decoded into a reused \
             `Vec`; network-protocol's utility returns a new `Vec` per call and frames nothing. \
             Size ratio: uncompressed ÷ sent; \"as is\" when the library sent the payload \
             uncompressed (then decompressing is tickwire's header parse and zero-copy borrow, \
             network-protocol's copy). Ratios: tickwire ÷ network-protocol, same codec \
             and mode.",
        );
        for (i, (case, (compress, decompress, size))) in Case::ALL.iter().zip(&figures).enumerate()
        {
            // The network-protocol row of the same codec and mode.
            let theirs = &figures[i | 1];
            table.rows.push(Row {
                library: case.name(),
                figures: Figures::Cells(vec![
                    rate_cell(compress, 1e6),
                    ratio_cell(compress, &theirs.0),
                    rate_cell(decompress, 1e6),
                    ratio_cell(decompress, &theirs.1),
                    size.clone(),
                ]),
            });
        }
        tables.push(table);
    }
    tables
}

/// Compress and decompress bytes per second of `case` on `payload`, and the size cell,
/// after checking that what was compressed decompresses to `payload`.
fn measure(case: Case, payload: &[u8], clock: &Clock, budget: Budget) -> (f64, f64, String) {
    let len = payload.len();
    match case.library {
        Library::Tickwire => {
            let mut side = TickwireSide::new(case);
            let packet = side.compress(payload).to_vec();
            assert_eq!(side.decompress(&packet), payload, "{}", case.name());
            let compress = throughput(
                clock,
                budget,
                len,
                &mut side,
                |s| s.out.clear(),
                |s| {
                    black_box(s.compress(payload));
                },
            );
            let decompress = throughput(
                clock,
                budget,
                len,
                &mut side,
                |_| (),
                |s| {
                    black_box(s.decompress(&packet));
                },
            );
            let compressed = packet.len() - BASE_HEADER_LEN != len;
            (
                compress,
                decompress,
                size_cell(len, packet.len(), compressed),
            )
        }
        Library::NetworkProtocol => {
            let kind = case.codec.np_kind();
            let (sent, compressed) = np_compress(payload, kind, case.adaptive);
            assert_eq!(
                np_decompress(&sent, kind, compressed),
                payload,
                "{}",
                case.name()
            );
            let compress = throughput_of(clock, budget, len, || {
                black_box(np_compress(payload, kind, case.adaptive));
            });
            let decompress = throughput_of(clock, budget, len, || {
                black_box(np_decompress(&sent, kind, compressed));
            });
            (compress, decompress, size_cell(len, sent.len(), compressed))
        }
    }
}

/// The size ratio, uncompressed ÷ sent, marked when the payload was sent uncompressed.
fn size_cell(len: usize, sent: usize, compressed: bool) -> String {
    let ratio = len as f64 / sent as f64;
    if compressed {
        format!("{ratio:.2}")
    } else {
        format!("{ratio:.2} (as is)")
    }
}

/// tickwire's writer and reader for one case, with their reused buffers.
struct TickwireSide {
    writer: PacketWriter,
    reader: PacketReader,
    out: WriteBuf,
    decompressed: Vec<u8>,
}

impl TickwireSide {
    fn new(case: Case) -> Self {
        let policy = match case.codec {
            Codec::Lz4 => CompressionPolicy::lz4(),
            Codec::Zstd => CompressionPolicy::zstd(),
        };
        let policy = if case.adaptive {
            policy
        } else {
            policy.with_min_size(0).with_skip_incompressible(false)
        };
        let config = PacketConfig::client().with_compression(policy);
        Self {
            writer: PacketWriter::new(config.clone()),
            reader: PacketReader::new(config),
            out: WriteBuf::new(PAYLOAD_LEN * 2, 0),
            decompressed: Vec::with_capacity(PAYLOAD_LEN),
        }
    }

    /// One packet carrying `payload`, compressed as the policy decides.
    fn compress(&mut self, payload: &[u8]) -> &[u8] {
        self.writer
            .encode(&mut self.out, 1, payload)
            .expect("the payload is within the limit");
        self.out.as_slice()
    }

    /// The payload of `packet`.
    fn decompress<'a>(&'a mut self, packet: &'a [u8]) -> &'a [u8] {
        match self.reader.decode(packet, &mut self.decompressed) {
            Ok(ReadEvent::Packet(packet)) => packet.payload,
            other => panic!("tickwire: a whole packet was expected, got {other:?}"),
        }
    }
}

/// network-protocol's compression of `payload`: what it would send, and whether that is
/// compressed.
fn np_compress(payload: &[u8], kind: CompressionKind, adaptive: bool) -> (Vec<u8>, bool) {
    if adaptive {
        compression::maybe_compress_adaptive(payload, &kind, THRESHOLD)
            .expect("network-protocol compresses")
    } else {
        let sent = compression::compress(payload, &kind).expect("network-protocol compresses");
        (sent, true)
    }
}

/// network-protocol's decompression of what [`np_compress`] returned.
fn np_decompress(sent: &[u8], kind: CompressionKind, compressed: bool) -> Vec<u8> {
    compression::maybe_decompress(sent, &kind, compressed).expect("network-protocol decompresses")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_network_protocol_row_follows_its_tickwire_row() {
        for pair in Case::ALL.chunks_exact(2) {
            assert_eq!(pair[0].library, Library::Tickwire);
            assert_eq!(pair[1].library, Library::NetworkProtocol);
            assert_eq!(
                (pair[0].codec, pair[0].adaptive),
                (pair[1].codec, pair[1].adaptive)
            );
        }
        assert_eq!(Case::ALL[2].name(), "tickwire LZ4 adaptive");
    }

    #[test]
    fn every_case_round_trips_every_kind_of_data() {
        for data in Data::ALL {
            let payload = data.generate(8 << 10);
            for case in Case::ALL {
                let back = match case.library {
                    Library::Tickwire => {
                        let mut side = TickwireSide::new(case);
                        let packet = side.compress(&payload).to_vec();
                        side.decompress(&packet).to_vec()
                    }
                    Library::NetworkProtocol => {
                        let kind = case.codec.np_kind();
                        let (sent, compressed) = np_compress(&payload, kind, case.adaptive);
                        np_decompress(&sent, kind, compressed)
                    }
                };
                assert_eq!(back, payload, "{} on {data:?}", case.name());
            }
        }
    }

    #[test]
    fn json_is_compressed_and_already_compressed_bytes_are_sent_as_they_are() {
        let json = Data::OrderBookJson.generate(PAYLOAD_LEN);
        let compressed = Data::AlreadyCompressed.generate(PAYLOAD_LEN);
        for case in Case::ALL.iter().filter(|c| c.library == Library::Tickwire) {
            let mut side = TickwireSide::new(*case);
            assert!(
                side.compress(&json).len() < PAYLOAD_LEN * 2 / 3,
                "{}",
                case.name()
            );
            side.out.clear();
            assert_eq!(side.compress(&compressed).len(), 16 + PAYLOAD_LEN);
        }
    }
}
