//! The crate's only `unsafe`: AVX2 masking on x86-64, chosen at run time.
//!
//! Each entry point here is safe: it asks the CPU (through `is_x86_feature_detected!`, which
//! std caches after the first call) whether AVX2 is there, and only then calls the
//! `#[target_feature(enable = "avx2")]` body, which XORs 32-byte lanes, each one unaligned load,
//! XOR and store (the copying variant: 128-byte blocks, then lanes). What is left (under 32 bytes) goes
//! back to the portable code in the parent module, with the key unchanged: every block and lane
//! is a multiple of 4 bytes long, so the key's phase does not move.
//!
//! Every block below is listed in docs/UNSAFE.md. The property test in the parent module compares
//! this path with the portable one and the RFC's byte-at-a-time definition, and the mask tests run
//! under Miri with AVX2 switched on and off (`.ci/codec-miri.sh`).

#[cfg(target_arch = "x86_64")]
use core::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_storeu_si256, _mm256_xor_si256};

/// True when this CPU runs AVX2 (always false off x86-64).
#[inline]
pub(super) fn avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// XORs the longest prefix of `buf` that is a multiple of 32 bytes with `key` repeated, and
/// returns how many bytes that was; returns 0 without touching `buf` when AVX2 is absent.
#[inline]
pub(super) fn xor_in_place(buf: &mut [u8], key: [u8; 4]) -> usize {
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: `xor_in_place_avx2` needs AVX2, and `avx2()` just saw it on this CPU.
        return unsafe { xor_in_place_avx2(buf, key) };
    }
    let _ = (buf, key);
    0
}

/// Writes `src` XORed with `key` into `dst` for the longest prefix that is a multiple of 32
/// bytes, and returns its length; returns 0 without touching `dst` when AVX2 is absent.
///
/// The caller has checked that the lengths are equal.
#[inline]
pub(super) fn copy_xor(dst: &mut [u8], src: &[u8], key: [u8; 4]) -> usize {
    debug_assert_eq!(dst.len(), src.len());
    #[cfg(target_arch = "x86_64")]
    if avx2() {
        // SAFETY: `copy_xor_avx2` needs AVX2, and `avx2()` just saw it on this CPU.
        return unsafe { copy_xor_avx2(dst, src, key) };
    }
    let _ = (dst, src, key);
    0
}

/// The key repeated over 32 bytes, in one register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn widen(key: [u8; 4]) -> __m256i {
    let words = [u32::from_ne_bytes(key); 8];
    // SAFETY: `words` is 32 readable bytes on our stack, and `loadu` accepts any alignment.
    // (A load rather than `_mm256_set1_epi32`, which is a safe function only from Rust 1.87 on:
    // this way the block is needed, and so free of `unused_unsafe`, on every supported compiler.)
    unsafe { _mm256_loadu_si256(words.as_ptr().cast::<__m256i>()) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn xor_in_place_avx2(buf: &mut [u8], key: [u8; 4]) -> usize {
    // SAFETY: `widen` needs AVX2, as this function does; the caller checked it.
    let wide = unsafe { widen(key) };
    let len = buf.len();
    // One 32-byte lane per trip; LLVM unrolls the loop (eight lanes per trip on x86-64), which
    // measured faster at 512 B than unrolling by hand.
    let mut lanes = buf.chunks_exact_mut(32);
    for lane in &mut lanes {
        let p = lane.as_mut_ptr().cast::<__m256i>();
        // SAFETY: `lane` is 32 bytes we hold `&mut` to: one unaligned load and store inside it;
        // AVX2 is present (see the caller).
        unsafe { _mm256_storeu_si256(p, _mm256_xor_si256(_mm256_loadu_si256(p), wide)) };
    }
    len - lanes.into_remainder().len()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn copy_xor_avx2(dst: &mut [u8], src: &[u8], key: [u8; 4]) -> usize {
    // SAFETY: `widen` needs AVX2, as this function does; the caller checked it.
    let wide = unsafe { widen(key) };
    let len = dst.len();
    let mut out = dst.chunks_exact_mut(128);
    let mut inp = src.chunks_exact(128);
    for (o, i) in (&mut out).zip(&mut inp) {
        let d = o.as_mut_ptr().cast::<__m256i>();
        let s = i.as_ptr().cast::<__m256i>();
        // SAFETY: `o` and `i` are 128 bytes each (we hold `&mut` to `o`, `&` to `i`, so they do
        // not overlap); four 32-byte unaligned loads from `i` and stores into `o` stay inside
        // them; AVX2 is present (see the caller).
        unsafe {
            let a = _mm256_loadu_si256(s);
            let b = _mm256_loadu_si256(s.add(1));
            let c = _mm256_loadu_si256(s.add(2));
            let e = _mm256_loadu_si256(s.add(3));
            _mm256_storeu_si256(d, _mm256_xor_si256(a, wide));
            _mm256_storeu_si256(d.add(1), _mm256_xor_si256(b, wide));
            _mm256_storeu_si256(d.add(2), _mm256_xor_si256(c, wide));
            _mm256_storeu_si256(d.add(3), _mm256_xor_si256(e, wide));
        }
    }
    let mut out = out.into_remainder().chunks_exact_mut(32);
    let mut inp = inp.remainder().chunks_exact(32);
    for (o, i) in (&mut out).zip(&mut inp) {
        // SAFETY: `o` and `i` are 32 bytes each, disjoint: one unaligned load and one store.
        unsafe {
            let v = _mm256_loadu_si256(i.as_ptr().cast::<__m256i>());
            _mm256_storeu_si256(o.as_mut_ptr().cast::<__m256i>(), _mm256_xor_si256(v, wide));
        }
    }
    len - out.into_remainder().len()
}
