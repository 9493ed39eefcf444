//! Framing without compression: encode and decode GB/s of packets carrying the same payload
//! bytes, at 64 B, 1 KiB, 64 KiB and 1 MiB.
//!
//! Fairness: one call encodes (or decodes) a batch of packets, so buffers are reused across
//! the batch as a transport reuses them between reads and writes. tickwire encodes with
//! `PacketWriter::encode` (no compression policy) into a `WriteBuf` emptied before each batch,
//! and decodes with `PacketReader::decode` over one buffer holding the whole batch, the
//! payload borrowed from it. network-protocol encodes with `PacketCodec`'s `Encoder` into a
//! `BytesMut` emptied before each batch (a `Packet` owns its payload, so each packet first
//! copies the payload into a new `Vec`: its API asks for one), and decodes with its `Decoder`
//! from a `BytesMut` refilled with the batch before each call (outside the timed region); each
//! decoded `Packet` owns a copy of its payload. A third figure, "decode to owned", has
//! tickwire copy each borrowed payload into a new `Vec` as well, so that the two decoders are
//! also compared on equal terms. GB/s counts payload bytes.

use std::hint::black_box;

use bytes::BytesMut;
use network_protocol::PacketCodec;
use network_protocol::config::PROTOCOL_VERSION;
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::packet::{PacketConfig, PacketReader, PacketWriter, ReadEvent};
use tokio_util::codec::{Decoder as _, Encoder as _};

use super::{Budget, Library, payloads, rate_cell, ratio_cell, throughput};
use crate::Ctx;
use crate::harness::Clock;
use crate::report::{Figures, Row, Table, round_order};

/// Payload sizes measured.
pub(crate) const SIZES: [usize; 4] = [64, 1 << 10, 64 << 10, 1 << 20];

/// Progress steps per round.
pub(crate) const STEPS: u64 = (SIZES.len() * Library::ALL.len()) as u64;

/// Request id every packet carries (tickwire's header always has one).
const REQUEST_ID: u64 = 0x1234_5678;

/// Runs the framing workloads selected in `ctx`, one table per payload size.
pub(crate) fn run(ctx: &Ctx, clock: &Clock, budget: Budget) -> Vec<Table> {
    let mut tables = Vec::new();
    for size in SIZES {
        let id = format!("packet_framing_{}", size_label(size).replace(' ', ""));
        if !ctx.selected(&id) {
            continue;
        }
        let payload = payloads::binary_ticks(size);
        let count = packets_per_batch(size);
        // [library][encode, decode, decode into owned payloads] -> one rate per round.
        let mut rates: [[Vec<f64>; 3]; 2] = Default::default();
        for round in 1..=ctx.rounds {
            for i in round_order(Library::ALL.len(), round) {
                let library = Library::ALL[i];
                ctx.step(&format!("{id} / {}", library.name()));
                let measured = measure(library, &payload, count, clock, budget);
                for (rounds, rate) in rates[i].iter_mut().zip(measured) {
                    rounds.push(rate);
                }
            }
        }
        let mut table = Table::with_columns(
            &id,
            &format!(
                "Packet framing: {} payload, no compression",
                size_label(size)
            ),
            &[
                "encode GB/s",
                "encode vs network-protocol",
                "decode GB/s",
                "decode vs network-protocol",
                "decode to owned GB/s",
                "owned vs network-protocol",
            ],
            &format!(
                "GB/s of payload (binary ticks), median of the rounds (range); a call encodes \
                 or decodes {count} packets. tickwire: `PacketWriter::encode` into a reused \
                 `WriteBuf`; `PacketReader::decode` borrows each payload from the buffer \
                 (zero-copy). network-protocol: `PacketCodec` (tokio-util `Encoder` / \
                 `Decoder`) on a reused `BytesMut`; its `Packet` owns a `Vec` payload, so \
                 encoding copies the payload into a new `Vec` first and decoding copies it out \
                 of the buffer. \"decode to owned\": tickwire's decode followed by \
                 `payload.to_vec()` per packet, the owned `Vec` network-protocol's decode \
                 returns (its own column repeats its decode). Ratios: tickwire ÷ \
                 network-protocol."
            ),
        );
        let theirs = &rates[1];
        for (library, mine) in Library::ALL.iter().zip(&rates) {
            table.rows.push(Row {
                library: library.name().to_owned(),
                figures: Figures::Cells(vec![
                    rate_cell(&mine[0], 1e9),
                    ratio_cell(&mine[0], &theirs[0]),
                    rate_cell(&mine[1], 1e9),
                    ratio_cell(&mine[1], &theirs[1]),
                    rate_cell(&mine[2], 1e9),
                    ratio_cell(&mine[2], &theirs[2]),
                ]),
            });
        }
        tables.push(table);
    }
    tables
}

/// "64 B", "1 KiB", "64 KiB", "1 MiB".
pub(crate) fn size_label(size: usize) -> String {
    match size {
        s if s >= 1 << 20 && s % (1 << 20) == 0 => format!("{} MiB", s >> 20),
        s if s >= 1 << 10 && s % (1 << 10) == 0 => format!("{} KiB", s >> 10),
        s => format!("{s} B"),
    }
}

/// Packets per timed call: about 1 MiB of payload, at least 8 packets, at most 4096.
pub(crate) fn packets_per_batch(size: usize) -> usize {
    ((1 << 20) / size.max(1)).clamp(8, 4096)
}

/// Encode, decode, and decode-into-owned-payloads bytes per second of `library` on `count`
/// packets of `payload`, after checking that the batch decodes back to the same payloads.
fn measure(
    library: Library,
    payload: &[u8],
    count: usize,
    clock: &Clock,
    budget: Budget,
) -> [f64; 3] {
    let bytes = payload.len() * count;
    match library {
        Library::Tickwire => {
            let mut encoder = TickwireBatch::new(payload.len() * count);
            let mut decoder = TickwireBatch::new(0);
            let encoded = encoder.encode(payload, count).to_vec();
            assert_eq!(decoder.decode(&encoded, payload), count, "tickwire");
            let mut owning = TickwireBatch::new(0);
            owning.owned = true;
            let encode = throughput(
                clock,
                budget,
                bytes,
                &mut encoder,
                |e| e.out.clear(),
                |e| {
                    black_box(e.encode(payload, count));
                },
            );
            let decode = throughput(
                clock,
                budget,
                bytes,
                &mut decoder,
                |_| (),
                |d| {
                    black_box(d.decode(&encoded, payload));
                },
            );
            let owned = throughput(
                clock,
                budget,
                bytes,
                &mut owning,
                |_| (),
                |d| {
                    black_box(d.decode(&encoded, payload));
                },
            );
            [encode, decode, owned]
        }
        Library::NetworkProtocol => {
            let mut out = BytesMut::with_capacity((payload.len() + 16) * count);
            np_encode(&mut out, payload, count);
            let encoded = out.to_vec();
            let mut input = BytesMut::with_capacity(encoded.len());
            input.extend_from_slice(&encoded);
            assert_eq!(np_decode(&mut input, payload), count, "network-protocol");
            let encode = throughput(clock, budget, bytes, &mut out, BytesMut::clear, |out| {
                np_encode(out, payload, count);
                black_box(&out[..]);
            });
            let decode = throughput(
                clock,
                budget,
                bytes,
                &mut input,
                |input| {
                    input.clear();
                    input.extend_from_slice(&encoded);
                },
                |input| {
                    black_box(np_decode(input, payload));
                },
            );
            // Its decode returns owned payloads already.
            [encode, decode, decode]
        }
    }
}

/// tickwire's writer and reader with their buffers.
pub(crate) struct TickwireBatch {
    writer: PacketWriter,
    reader: PacketReader,
    out: WriteBuf,
    decompressed: Vec<u8>,
    /// [`decode`](Self::decode) copies each payload into a new `Vec`, as a caller that must
    /// keep it past the next read does.
    owned: bool,
}

impl TickwireBatch {
    /// Uncompressed packets up to 16 MiB, an output buffer of `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            writer: PacketWriter::new(PacketConfig::client()),
            reader: PacketReader::new(PacketConfig::client()),
            out: WriteBuf::new(capacity.max(64), 0),
            decompressed: Vec::new(),
            owned: false,
        }
    }

    /// Appends `count` packets of `payload` to the output buffer and returns it.
    pub(crate) fn encode(&mut self, payload: &[u8], count: usize) -> &[u8] {
        for _ in 0..count {
            self.writer
                .encode(&mut self.out, REQUEST_ID, payload)
                .expect("the payload is within the limit");
        }
        self.out.as_slice()
    }

    /// Decodes every packet of `input` and returns how many there were; only the length of
    /// each payload is checked against `expected` (the first packet's bytes too).
    pub(crate) fn decode(&mut self, mut input: &[u8], expected: &[u8]) -> usize {
        let mut count = 0;
        while !input.is_empty() {
            match self.reader.decode(input, &mut self.decompressed) {
                Ok(ReadEvent::Packet(packet)) => {
                    assert_eq!(packet.payload.len(), expected.len());
                    if count == 0 {
                        assert_eq!(packet.payload, expected);
                    }
                    if self.owned {
                        black_box(packet.payload.to_vec());
                    } else {
                        black_box(packet.payload);
                    }
                    input = &input[packet.wire_size()..];
                    count += 1;
                }
                other => panic!("tickwire: a whole packet was expected, got {other:?}"),
            }
        }
        count
    }
}

/// Encodes `count` network-protocol packets of `payload` into `out`.
pub(crate) fn np_encode(out: &mut BytesMut, payload: &[u8], count: usize) {
    for _ in 0..count {
        let packet = network_protocol::Packet {
            version: PROTOCOL_VERSION,
            payload: payload.to_vec(),
        };
        PacketCodec
            .encode(packet, out)
            .expect("network-protocol: the payload is within its limit");
    }
}

/// Decodes every network-protocol packet in `input`, checking each payload's length against
/// `expected` (the first one's bytes too), and returns how many there were.
pub(crate) fn np_decode(input: &mut BytesMut, expected: &[u8]) -> usize {
    let mut count = 0;
    while let Some(packet) = PacketCodec
        .decode(input)
        .expect("network-protocol: a valid packet")
    {
        assert_eq!(packet.payload.len(), expected.len());
        if count == 0 {
            assert_eq!(packet.payload, expected);
        }
        black_box(&packet.payload);
        count += 1;
    }
    assert!(input.is_empty(), "network-protocol: bytes left over");
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_labelled_in_their_largest_whole_unit() {
        let labels: Vec<String> = SIZES.iter().map(|&s| size_label(s)).collect();
        assert_eq!(labels, ["64 B", "1 KiB", "64 KiB", "1 MiB"]);
        assert_eq!(size_label(1500), "1500 B");
    }

    #[test]
    fn a_batch_is_about_a_mebibyte_of_at_least_eight_packets() {
        assert_eq!(packets_per_batch(64), 4096);
        assert_eq!(packets_per_batch(1 << 10), 1024);
        assert_eq!(packets_per_batch(64 << 10), 16);
        assert_eq!(packets_per_batch(1 << 20), 8);
    }

    #[test]
    fn both_libraries_frame_the_same_payloads_and_read_them_back() {
        let payload = payloads::order_book_json(1000);
        let mut tickwire = TickwireBatch::new(1 << 10);
        let ours = tickwire.encode(&payload, 3).to_vec();
        assert_eq!(
            ours.len(),
            3 * (16 + payload.len()),
            "16-byte tickwire headers"
        );
        assert_eq!(TickwireBatch::new(0).decode(&ours, &payload), 3);

        let mut theirs = BytesMut::new();
        np_encode(&mut theirs, &payload, 3);
        assert_eq!(
            theirs.len(),
            3 * (9 + payload.len()),
            "9-byte network-protocol headers"
        );
        assert_eq!(&theirs[..4], b"NPRO");
        assert_eq!(np_decode(&mut theirs, &payload), 3);
    }
}
