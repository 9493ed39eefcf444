//! The measurement behind the packet compression policy (docs/PACKET.md): on generated
//! market-data payloads (JSON trades and order books, packed binary ticks, already
//! compressed and random bytes), how well LZ4 and Zstd compress each, and how well two cheap
//! predictors on the first bytes tell the payloads worth compressing from the others: an
//! order-0 byte-entropy estimate, and compressing a prefix with the codec itself.
//!
//! Ratios are exact and repeatable; the times are indicative only (minimum of a few runs on
//! whatever machine runs it, not a benchmark).
//!
//!   cargo run --release -p tickwire-codec --features lz4,zstd --example packet_compressibility

use std::hint::black_box;
use std::time::Instant;

use tickwire_codec::compress::{Lz4Compressor, ZstdCompressor};

/// A small deterministic generator (xorshift64*), so every run measures the same bytes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// JSON trade messages, one after another, as an exchange feed batches them.
fn json_trades(len: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = String::new();
    let mut id = 3_900_000_000u64;
    let mut price = 6_400_000_i64;
    while out.len() < len {
        id += 1 + rng.below(3);
        price += rng.below(21) as i64 - 10;
        out.push_str(&format!(
            r#"{{"e":"trade","E":{},"s":"BTCUSDT","t":{},"p":"{}.{:02}","q":"{}.{:05}","T":{},"m":{}}}"#,
            1_732_000_000_000u64 + id % 100_000,
            id,
            price / 100,
            price % 100,
            rng.below(3),
            rng.below(100_000),
            1_732_000_000_000u64 + id % 100_000,
            rng.below(2) == 1
        ));
        out.push('\n');
    }
    let mut out = out.into_bytes();
    out.truncate(len);
    out
}

/// A JSON order-book snapshot: bids and asks as [price, size] string pairs.
fn json_book(len: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = String::from(r#"{"lastUpdateId":160312345,"bids":["#);
    let mut level = 0i64;
    while out.len() < len {
        let price = 6_400_000 - level * (1 + rng.below(3) as i64);
        out.push_str(&format!(
            r#"["{}.{:02}","{}.{:08}"],"#,
            price / 100,
            price % 100,
            rng.below(20),
            rng.below(100_000_000)
        ));
        level += 1;
    }
    out.push_str("]}");
    let mut out = out.into_bytes();
    out.truncate(len);
    out
}

/// Packed binary ticks: 32-byte little-endian structs (timestamp ns, price in ticks,
/// size, instrument id, flags) with realistic deltas.
fn binary_ticks(len: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut ts = 1_732_000_000_000_000_000u64;
    let mut price = 6_400_000i64;
    while out.len() < len {
        ts += rng.below(50_000);
        price += rng.below(5) as i64 - 2;
        out.extend_from_slice(&ts.to_le_bytes());
        out.extend_from_slice(&price.to_le_bytes());
        out.extend_from_slice(&rng.below(5_000).to_le_bytes());
        out.extend_from_slice(&(rng.below(8) as u32 + 1_000).to_le_bytes());
        out.extend_from_slice(&(rng.below(4) as u32).to_le_bytes());
    }
    out.truncate(len);
    out
}

fn random(len: usize, rng: &mut Rng) -> Vec<u8> {
    (0..len).map(|_| rng.next() as u8).collect()
}

/// Zstd output of JSON trades: already compressed.
fn zstd_of_json(len: usize, rng: &mut Rng) -> Vec<u8> {
    let plain = json_trades(len * 8, rng);
    let mut out = vec![0; ZstdCompressor::max_output_len(plain.len())];
    let n = ZstdCompressor::new()
        .compress_into(&plain, &mut out, 3)
        .unwrap();
    out.truncate(n.min(len));
    out
}

/// Order-0 entropy in bits per byte.
fn entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn lz4_len(input: &[u8], out: &mut [u8]) -> usize {
    Lz4Compressor::new().compress_into(input, out).unwrap()
}

fn zstd_len(zstd: &mut ZstdCompressor, input: &[u8], out: &mut [u8], level: i32) -> usize {
    zstd.compress_into(input, out, level).unwrap()
}

/// Minimum nanoseconds of `runs` calls of `f`.
fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed().as_nanos() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

const PROBE: usize = 1024;

/// A payload generator: length in bytes, the random source.
type Generator = fn(usize, &mut Rng) -> Vec<u8>;

fn main() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let kinds: [(&str, Generator); 6] = [
        ("json trades", json_trades),
        ("json book", json_book),
        ("binary ticks", binary_ticks),
        ("zstd of json", zstd_of_json),
        ("random", random),
        ("json+random", |len, rng| {
            // A compressible head and an incompressible rest: where a prefix probe is wrong.
            let mut out = json_trades(PROBE * 2, rng);
            out.extend(random(len.saturating_sub(PROBE * 2), rng));
            out.truncate(len);
            out
        }),
    ];
    let mut out = vec![
        0u8;
        Lz4Compressor::max_output_len(1 << 20)
            .max(ZstdCompressor::max_output_len(1 << 20))
    ];
    let mut zstd = ZstdCompressor::new();

    println!("## Predictors on the first {PROBE} bytes vs the whole payload (64 KiB)\n");
    println!(
        "| payload | entropy bits/B (first 512) | LZ4 prefix ratio | LZ4 ratio | Zstd-1 ratio | entropy ns | LZ4 probe ns | LZ4 full ns | Zstd-1 full ns |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for (name, make) in kinds {
        let data = make(64 << 10, &mut rng);
        let h = entropy(&data[..512]);
        let probe = lz4_len(&data[..PROBE], &mut out) as f64 / PROBE as f64;
        let lz4 = lz4_len(&data, &mut out) as f64 / data.len() as f64;
        let z = zstd_len(&mut zstd, &data, &mut out, 1) as f64 / data.len() as f64;
        let t_entropy = time(200, || {
            black_box(entropy(black_box(&data[..512])));
        });
        let t_probe = time(200, || {
            black_box(lz4_len(black_box(&data[..PROBE]), &mut out));
        });
        let t_lz4 = time(20, || {
            black_box(lz4_len(black_box(&data), &mut out));
        });
        let t_zstd = time(20, || {
            black_box(zstd_len(&mut zstd, black_box(&data), &mut out, 1));
        });
        println!(
            "| {name} | {h:.2} | {probe:.3} | {lz4:.3} | {z:.3} | {t_entropy:.0} | {t_probe:.0} | {t_lz4:.0} | {t_zstd:.0} |"
        );
    }

    println!("\n## LZ4 vs Zstd by size (json trades; ratio = compressed / original)\n");
    println!("| size | LZ4 ratio | Zstd-1 ratio | Zstd-3 ratio | LZ4 ns | Zstd-1 ns | Zstd-3 ns |");
    println!("|---|---|---|---|---|---|---|");
    for size in [
        64,
        128,
        256,
        512,
        1024,
        4096,
        16 << 10,
        64 << 10,
        256 << 10,
        1 << 20,
    ] {
        let data = json_trades(size, &mut rng);
        let lz4 = lz4_len(&data, &mut out) as f64 / size as f64;
        let z1 = zstd_len(&mut zstd, &data, &mut out, 1) as f64 / size as f64;
        let z3 = zstd_len(&mut zstd, &data, &mut out, 3) as f64 / size as f64;
        let runs = if size >= 256 << 10 { 5 } else { 50 };
        let t_lz4 = time(runs, || {
            black_box(lz4_len(black_box(&data), &mut out));
        });
        let t_z1 = time(runs, || {
            black_box(zstd_len(&mut zstd, black_box(&data), &mut out, 1));
        });
        let t_z3 = time(runs, || {
            black_box(zstd_len(&mut zstd, black_box(&data), &mut out, 3));
        });
        println!("| {size} | {lz4:.3} | {z1:.3} | {z3:.3} | {t_lz4:.0} | {t_z1:.0} | {t_z3:.0} |");
    }
}
