//! Payload masking (RFC 6455 §5.3) and the source of client masking keys.
//!
//! This module owns [`apply_mask`] and [`MaskSource`]. It does not decide *when* to mask: the
//! frame writer masks in the client role and the frame reader unmasks in the server role.
//!
//! Two paths do the XOR. The portable one is safe code that LLVM vectorises (16-byte blocks
//! XORed with a widened key become one SSE2 or NEON load, XOR and store each); it handles short
//! payloads, where it is already fastest, and every CPU without AVX2. From [`SIMD_MIN`] bytes on
//! an x86-64 CPU with AVX2 (detected at run time), the `simd` submodule, the crate's only
//! `unsafe`, XORs 32 bytes per instruction. Measured on this project's 2-core EPYC VM
//! (docs/BENCHMARKS.md): the portable path runs 512 B in 32 ticks against nexus-web's 18 and
//! 4 KiB in 226 against 86; AVX2 closes that gap. The tests below check both paths against the
//! RFC's byte-at-a-time definition at every length 0..=1024, alignment and offset, and a
//! property test does the same for arbitrary inputs.

#[cfg_attr(
    target_arch = "x86_64",
    expect(unsafe_code, reason = "the AVX2 masking loops, docs/UNSAFE.md")
)]
mod simd;

/// Payloads shorter than this stay on the portable path even where AVX2 is available: below it
/// the portable loop is at least as fast and skips the feature check.
pub const SIMD_MIN: usize = 256;

/// XORs `buf` with `key`, as if `buf` started `offset` bytes into a masked payload.
///
/// Masking is its own inverse: the same call unmasks. `offset` lets a payload be (un)masked in
/// pieces as it arrives.
#[inline]
pub fn apply_mask(buf: &mut [u8], key: [u8; 4], offset: usize) {
    let key = rotated(key, offset);
    if buf.len() >= SIMD_MIN {
        mask_long(buf, key);
    } else {
        xor_portable(buf, key);
    }
}

/// [`apply_mask`] from [`SIMD_MIN`] bytes: out of line, so that the short-payload path stays
/// small enough to inline into the frame reader (a call is noise next to 256 bytes of XOR).
#[inline(never)]
fn mask_long(buf: &mut [u8], key: [u8; 4]) {
    let done = simd::xor_in_place(buf, key);
    if done < buf.len() {
        xor_portable(&mut buf[done..], key);
    }
}

/// The portable path of [`apply_mask`] (key already rotated): what runs without AVX2, and what
/// the AVX2 path is tested against.
#[inline(always)]
fn xor_portable(buf: &mut [u8], key: [u8; 4]) {
    let wide = broadcast(key);
    // 64-byte trips of four 16-byte lanes: each lane is one unaligned vector load, XOR and
    // store, and a 128 B payload takes two trips.
    let mut blocks = buf.chunks_exact_mut(64);
    for block in &mut blocks {
        for lane in block.chunks_exact_mut(16) {
            xor_lane(lane, wide);
        }
    }
    let mut lanes = blocks.into_remainder().chunks_exact_mut(16);
    for lane in &mut lanes {
        xor_lane(lane, wide);
    }
    for (i, byte) in lanes.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i & 3];
    }
}

/// The key repeated over 16 bytes, as one `u128` in memory order.
#[inline(always)]
fn broadcast(key: [u8; 4]) -> u128 {
    u128::from(u32::from_ne_bytes(key)) * 0x0000_0001_0000_0001_0000_0001_0000_0001
}

#[inline(always)]
fn xor_lane(lane: &mut [u8], wide: u128) {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(lane);
    lane.copy_from_slice(&(u128::from_ne_bytes(bytes) ^ wide).to_ne_bytes());
}

/// Writes `src` XORed with `key` into `dst` (same length): masking while copying, one pass
/// over the payload instead of a copy and then an in-place mask.
///
/// # Panics
/// If the lengths differ.
#[inline]
pub fn copy_masked(dst: &mut [u8], src: &[u8], key: [u8; 4]) {
    assert_eq!(dst.len(), src.len(), "copy_masked: lengths differ");
    if src.len() >= SIMD_MIN {
        copy_masked_long(dst, src, key);
    } else {
        copy_portable(dst, src, key);
    }
}

/// [`copy_masked`] from [`SIMD_MIN`] bytes, out of line as [`mask_long`] is.
#[inline(never)]
fn copy_masked_long(dst: &mut [u8], src: &[u8], key: [u8; 4]) {
    let done = simd::copy_xor(dst, src, key);
    if done < src.len() {
        copy_portable(&mut dst[done..], &src[done..], key);
    }
}

/// The portable path of [`copy_masked`].
#[inline(always)]
fn copy_portable(dst: &mut [u8], src: &[u8], key: [u8; 4]) {
    let wide = broadcast(key);
    let mut out = dst.chunks_exact_mut(16);
    let mut inp = src.chunks_exact(16);
    for (o, i) in (&mut out).zip(&mut inp) {
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(i);
        o.copy_from_slice(&(u128::from_ne_bytes(bytes) ^ wide).to_ne_bytes());
    }
    for (n, (o, i)) in out
        .into_remainder()
        .iter_mut()
        .zip(inp.remainder())
        .enumerate()
    {
        *o = i ^ key[n & 3];
    }
}

/// The byte-at-a-time definition from RFC 6455 §5.3, kept as the reference the fast paths are
/// tested against.
pub fn apply_mask_scalar(buf: &mut [u8], key: [u8; 4], offset: usize) {
    for (i, byte) in buf.iter_mut().enumerate() {
        *byte ^= key[(i + offset) & 3];
    }
}

#[inline]
fn rotated(key: [u8; 4], offset: usize) -> [u8; 4] {
    let s = offset & 3;
    [key[s], key[(s + 1) & 3], key[(s + 2) & 3], key[(s + 3) & 3]]
}

/// Where a client's masking keys come from.
///
/// RFC 6455 §5.3 asks for keys a proxy cannot predict. [`MaskSource::random`], the default,
/// is a wyrand generator seeded from the operating system's CSPRNG (`getrandom`): one
/// multiply per key, unpredictable to anyone who has not seen the seed.
/// [`MaskSource::seeded`] is the same generator with a fixed seed, for tests and fuzzing;
/// [`MaskSource::custom`] takes any function.
pub struct MaskSource {
    kind: SourceKind,
}

enum SourceKind {
    WyRand(u64),
    Custom(Box<dyn FnMut() -> [u8; 4] + Send>),
}

impl MaskSource {
    /// A generator seeded from the OS CSPRNG. Falls back to a seed from the clock and the
    /// address of a stack value if the OS source fails, which on supported platforms it does
    /// not.
    pub fn random() -> Self {
        let mut seed = [0u8; 8];
        if getrandom::fill(&mut seed).is_err() {
            let t = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let local = 0u8;
            seed = (t ^ (&local as *const u8 as u64).rotate_left(32)).to_le_bytes();
        }
        Self::seeded(u64::from_le_bytes(seed))
    }

    /// A deterministic generator: the same seed gives the same keys.
    pub fn seeded(seed: u64) -> Self {
        Self {
            kind: SourceKind::WyRand(seed),
        }
    }

    /// Keys from `next`, e.g. a fixed key in a test.
    pub fn custom(next: impl FnMut() -> [u8; 4] + Send + 'static) -> Self {
        Self {
            kind: SourceKind::Custom(Box::new(next)),
        }
    }

    /// The next masking key.
    #[inline]
    pub fn next_key(&mut self) -> [u8; 4] {
        match &mut self.kind {
            SourceKind::WyRand(state) => {
                *state = state.wrapping_add(0xa076_1d64_78bd_642f);
                let product = u128::from(*state) * u128::from(*state ^ 0xe703_7ed1_a0b4_28db);
                let mixed = (product as u64) ^ ((product >> 64) as u64);
                (mixed as u32).to_ne_bytes()
            }
            SourceKind::Custom(next) => next(),
        }
    }
}

impl Default for MaskSource {
    fn default() -> Self {
        Self::random()
    }
}

impl core::fmt::Debug for MaskSource {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self.kind {
            SourceKind::WyRand(_) => "MaskSource::WyRand",
            SourceKind::Custom(_) => "MaskSource::Custom",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Longest payload and alignments the exhaustive tests walk: under Miri (which interprets
    /// every byte) enough to reach both AVX2 loops and every tail, natively everything to 1 KiB.
    const MAX_LEN: usize = if cfg!(miri) { 136 } else { 1024 };
    const ALIGNS: usize = if cfg!(miri) { 2 } else { 16 };
    /// Key offsets walked. An offset only rotates the key, so which bytes are touched does not
    /// depend on it: under Miri (looking for out-of-bounds and misaligned access) the first and
    /// the last offset, natively all four.
    const OFFSETS: &[usize] = if cfg!(miri) { &[0, 3] } else { &[0, 1, 2, 3] };

    #[test]
    fn matches_scalar_reference_for_every_length_alignment_and_offset() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let source: Vec<u8> = (0..MAX_LEN + 64).map(|i| (i * 31 + 7) as u8).collect();
        for align in 0..ALIGNS {
            for len in 0..=MAX_LEN {
                for &offset in OFFSETS {
                    let mut fast = source.clone();
                    let mut slow = source.clone();
                    apply_mask(&mut fast[align..align + len], key, offset);
                    apply_mask_scalar(&mut slow[align..align + len], key, offset);
                    assert_eq!(fast, slow, "align {align} len {len} offset {offset}");
                }
            }
        }
    }

    #[test]
    fn both_paths_match_scalar_reference_for_every_length_alignment_and_offset() {
        // `apply_mask` picks its path by length; this runs the portable path and the AVX2 path
        // (where the CPU has it: the portable one otherwise) at every length.
        let key = [0x9e, 0x01, 0x7c, 0xd3];
        let source: Vec<u8> = (0..MAX_LEN + 64).map(|i| (i * 13 + 5) as u8).collect();
        for align in 0..ALIGNS {
            for len in 0..=MAX_LEN {
                for &offset in OFFSETS {
                    let mut fast = source.clone();
                    let mut slow = source.clone();
                    let mut forced = source.clone();
                    xor_portable(&mut fast[align..align + len], rotated(key, offset));
                    mask_long(&mut forced[align..align + len], rotated(key, offset));
                    apply_mask_scalar(&mut slow[align..align + len], key, offset);
                    assert_eq!(
                        fast, slow,
                        "portable: align {align} len {len} offset {offset}"
                    );
                    assert_eq!(
                        forced, slow,
                        "simd: align {align} len {len} offset {offset}"
                    );
                }
            }
        }
    }

    #[test]
    fn simd_path_reports_what_it_masked() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        for len in [0, 31, 32, 33, 127, 128, 129, 200, 4096] {
            let mut buf = vec![0u8; len];
            let done = simd::xor_in_place(&mut buf, key);
            if simd::avx2() {
                assert_eq!(done, len / 32 * 32, "len {len}");
            } else {
                assert_eq!(done, 0, "len {len}");
            }
            let mut expected = vec![0u8; done];
            apply_mask_scalar(&mut expected, key, 0);
            assert_eq!(&buf[..done], &expected[..], "len {len}");
            assert!(
                buf[done..].iter().all(|&b| b == 0),
                "len {len}: past the prefix"
            );
        }
    }

    #[test]
    fn copy_masked_matches_scalar_reference_for_every_length_and_alignment() {
        let key = [0x37, 0xfa, 0x21, 0x3d];
        let source: Vec<u8> = (0..MAX_LEN + 16).map(|i| (i * 29 + 3) as u8).collect();
        let mut dst = vec![0u8; MAX_LEN + 16];
        for align in 0..ALIGNS {
            for len in 0..=MAX_LEN {
                let src = &source[align..align + len];
                let out = &mut dst[(15 - align)..(15 - align) + len];
                copy_masked(out, src, key);
                let mut expected = src.to_vec();
                apply_mask_scalar(&mut expected, key, 0);
                assert_eq!(out, &expected[..], "align {align} len {len}");
                out.fill(0);
                copy_masked_long(out, src, key);
                assert_eq!(out, &expected[..], "simd: align {align} len {len}");
            }
        }
    }

    #[test]
    fn rfc_example_hello() {
        // RFC 6455 §5.7: "Hello" masked with 37 fa 21 3d.
        let mut payload = *b"Hello";
        apply_mask(&mut payload, [0x37, 0xfa, 0x21, 0x3d], 0);
        assert_eq!(payload, [0x7f, 0x9f, 0x4d, 0x51, 0x58]);
    }

    #[test]
    fn masking_in_pieces_equals_masking_whole() {
        let key = [1, 2, 3, 4];
        let mut whole: Vec<u8> = (0..=255).collect();
        let mut pieces = whole.clone();
        apply_mask(&mut whole, key, 0);
        let (a, b) = pieces.split_at_mut(13);
        apply_mask(a, key, 0);
        apply_mask(b, key, 13);
        assert_eq!(whole, pieces);
    }

    #[test]
    fn seeded_source_is_deterministic_and_varies() {
        let mut a = MaskSource::seeded(42);
        let mut b = MaskSource::seeded(42);
        let keys: Vec<_> = (0..100).map(|_| a.next_key()).collect();
        assert!(keys.iter().all(|k| *k == b.next_key()));
        let distinct: std::collections::HashSet<_> = keys.into_iter().collect();
        assert!(distinct.len() > 95);
    }

    #[test]
    fn random_sources_differ() {
        let mut a = MaskSource::random();
        let mut b = MaskSource::random();
        let ka: Vec<_> = (0..4).map(|_| a.next_key()).collect();
        let kb: Vec<_> = (0..4).map(|_| b.next_key()).collect();
        assert_ne!(ka, kb);
    }

    proptest::proptest! {
        // Under Miri: few cases, and no failure file (isolation forbids reading the cwd).
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(miri) { 8 } else { 512 },
            failure_persistence: if cfg!(miri) {
                None
            } else {
                proptest::prelude::ProptestConfig::default().failure_persistence
            },
            ..proptest::prelude::ProptestConfig::default()
        })]

        #[test]
        fn every_path_agrees_on_arbitrary_input(
            data in proptest::collection::vec(
                proptest::prelude::any::<u8>(),
                0..if cfg!(miri) { 600 } else { 4200 },
            ),
            key in proptest::prelude::any::<[u8; 4]>(),
            align in 0usize..32,
            offset in 0usize..8,
        ) {
            let align = align.min(data.len());
            let mut dispatched = data.clone();
            let mut portable = data.clone();
            let mut scalar = data.clone();
            apply_mask(&mut dispatched[align..], key, offset);
            xor_portable(&mut portable[align..], rotated(key, offset));
            apply_mask_scalar(&mut scalar[align..], key, offset);
            proptest::prop_assert_eq!(&dispatched, &scalar);
            proptest::prop_assert_eq!(&portable, &scalar);

            let src = &data[align..];
            let mut copied = vec![0u8; src.len() + 1];
            copy_masked(&mut copied[1..], src, key);
            let mut copied_portable = vec![0u8; src.len()];
            copy_portable(&mut copied_portable, src, key);
            let mut expected = src.to_vec();
            apply_mask_scalar(&mut expected, key, 0);
            proptest::prop_assert_eq!(&copied[1..], &expected[..]);
            proptest::prop_assert_eq!(&copied_portable, &expected);
        }
    }
}
