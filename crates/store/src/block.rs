//! The one place the store calls the block codec, so that switching codecs is a
//! one-line change here.

use crate::codec;

pub(crate) use codec::CodecError;

/// Encodes one run of a series' points at one level (slots strictly increasing,
/// multiples of `step`), appending to `out`.
pub(crate) fn encode(step: i64, slots: &[i64], values: &[f64], out: &mut Vec<u8>) {
    codec::encode(u32::try_from(step).unwrap_or(u32::MAX), slots, values, out);
}

/// Decodes a block, appending to `slots` and `values`.
pub(crate) fn decode(
    block: &[u8],
    slots: &mut Vec<i64>,
    values: &mut Vec<f64>,
) -> Result<(), CodecError> {
    codec::decode(block, slots, values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_exact_round_trip() {
        let slots = [-20, 0, 10, 30, 1_700_000_000];
        let values = [
            f64::NAN,
            -0.0,
            f64::INFINITY,
            f64::from_bits(0x7ff8_dead_beef_0001),
            1.5,
        ];
        let mut buf = Vec::new();
        encode(10, &slots, &values, &mut buf);
        let (mut s, mut v) = (Vec::new(), Vec::new());
        decode(&buf, &mut s, &mut v).unwrap();
        assert_eq!(s, slots);
        let bits: Vec<u64> = v.iter().map(|x| x.to_bits()).collect();
        let want: Vec<u64> = values.iter().map(|x| x.to_bits()).collect();
        assert_eq!(bits, want);
        for cut in 0..buf.len() {
            let (mut s, mut v) = (Vec::new(), Vec::new());
            let _ = decode(&buf[..cut], &mut s, &mut v);
        }
    }
}
