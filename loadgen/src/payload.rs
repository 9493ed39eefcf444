//! The message payload every load generator sends and every benchmark parses: JSON that looks
//! like an exchange's market-data update, the same bytes on every run.
//!
//! Owns the payload bytes only; the frames around them are built where they are sent (the
//! bench's `wire`, this crate's `connection`).

/// A text payload of `len` bytes that looks like an exchange's JSON market-data update
/// (ASCII, so any split point is a valid UTF-8 boundary, and the validators take their ASCII
/// fast path as they would on real feeds).
pub fn json_payload(len: usize) -> Vec<u8> {
    let template = br#"{"e":"depthUpdate","E":1732350000123,"s":"BTCUSDT","U":4180223411,"u":4180223460,"b":[["97342.10","0.512"],["97342.00","1.203"]],"a":[["97342.20","0.044"],["97342.30","2.000"]]}"#;
    template.iter().copied().cycle().take(len).collect()
}
