//! The pre-encoded bytes every library parses: frames built here, independently of any
//! library under test, so each one sees exactly the same input.

/// A text payload of `len` bytes that looks like an exchange's JSON market-data update
/// (ASCII, so any split point is a valid UTF-8 boundary, and the validators take their ASCII
/// fast path as they would on real feeds).
pub fn json_payload(len: usize) -> Vec<u8> {
    let template = br#"{"e":"depthUpdate","E":1732350000123,"s":"BTCUSDT","U":4180223411,"u":4180223460,"b":[["97342.10","0.512"],["97342.00","1.203"]],"a":[["97342.20","0.044"],["97342.30","2.000"]]}"#;
    template.iter().copied().cycle().take(len).collect()
}

/// One frame: FIN as given, `opcode`, unmasked when `mask` is `None`.
pub fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        None => out.extend_from_slice(payload),
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
    }
    out
}

/// A text message split into `pieces` frames of near-equal size.
pub fn fragmented_text(payload: &[u8], pieces: usize, mask: Option<[u8; 4]>) -> Vec<u8> {
    let size = payload.len().div_ceil(pieces);
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = payload.chunks(size).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        out.extend(frame(i + 1 == chunks.len(), opcode, chunk, mask));
    }
    out
}

/// The masking key used for every masked frame (any non-zero key; fixed so runs repeat).
pub const MASK_KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
