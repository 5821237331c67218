//! Fuzz target for the values of `POST /api/v0/import` (`sumi_import::values`), the
//! text a running server reads from `sumi import --url`.
//!
//! The first 16 bytes of [`import_values`]'s input are the archive's start and step
//! (little-endian `i64`s), the rest (lossy UTF-8) its `values` text. Accepted
//! outcomes, anything else panics:
//! - refused: a message naming the value (its 1-based position), never a panic;
//! - accepted: at most as many points as fields, times `start + i * step` strictly
//!   ordered as the fields are (for a positive step), and encoding the points back
//!   (gaps as empty fields) then decoding gives the same times and the same bits.

use sumi_import::values::{decode_values, encode_values};

use crate::Input;

/// One input.
pub fn import_values(data: &[u8]) {
    let mut input = Input(data);
    let start = input.u64() as i64;
    let step = input.u64() as i64;
    let text = String::from_utf8_lossy(input.0);
    let fields = if text.is_empty() {
        0
    } else {
        text.split(',').count()
    };
    let points = match decode_values(start, step, &text) {
        Err(msg) => {
            assert!(msg.starts_with("value "), "refusal names the value: {msg}");
            return;
        }
        Ok(p) => p,
    };
    assert!(points.len() <= fields);
    if step > 0 {
        assert!(points.windows(2).all(|w| w[0].0 < w[1].0));
    }
    if points.is_empty() || step <= 0 {
        return;
    }
    // the dense form again, from the first point on
    let first = points[0].0;
    let n = ((points[points.len() - 1].0 - first) / step + 1) as usize;
    if n > 1 << 20 {
        return;
    }
    let mut dense = vec![None; n];
    for &(t, v) in &points {
        dense[((t - first) / step) as usize] = Some(v);
    }
    let again = decode_values(first, step, &encode_values(&dense)).expect("own encoding reads");
    assert_eq!(again.len(), points.len());
    for ((ta, a), (tb, b)) in again.iter().zip(&points) {
        assert_eq!(ta, tb);
        assert!(a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
    }
}
