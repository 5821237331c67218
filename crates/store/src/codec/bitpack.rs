//! Fixed-width bit packing of up to [`SUB`] unsigned integers (a "sub-block").
//!
//! Value `i` of width `w` occupies bits `i*w .. i*w+w` of the packed bytes, counting from the
//! least significant bit of byte 0 (little-endian bit order). A sub-block of `len` values
//! takes exactly `ceil(len*w/8)` bytes; the unused high bits of the last byte are zero.
//!
//! Unpacking is the decoder's inner loop, so it is monomorphised per width: with the width a
//! constant the compiler turns the 128 shifts and masks into straight-line code whose bounds
//! checks fold away against one length check per sub-block.

/// Values per sub-block. 128 keeps the per-sub-block header (width + base, 2–6 bytes) below
/// half a bit per value while letting the width follow the local spread of the data.
pub(super) const SUB: usize = 128;

/// Scratch size for unpacking near the end of a block: the largest sub-block (128 × 64 bits)
/// plus the 16-byte window read at the last value.
const PAD: usize = SUB * 8 + 16;

/// Bytes taken by `len` values of `width` bits.
#[inline]
pub(super) fn packed_len(len: usize, width: u32) -> usize {
    (len * width as usize).div_ceil(8)
}

/// Bits needed to hold `v` (0 for 0).
#[inline]
pub(super) fn width_of(v: u64) -> u32 {
    64 - v.leading_zeros()
}

#[inline]
fn mask(width: u32) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// Appends `vals` (at most [`SUB`]) packed at `width` bits each. Bits above `width` are ignored.
pub(super) fn pack(vals: &[u64], width: u32, out: &mut Vec<u8>) {
    if width == 0 {
        return;
    }
    let mask = mask(width);
    let mut acc: u128 = 0;
    let mut nbits = 0u32;
    for &v in vals {
        acc |= u128::from(v & mask) << nbits;
        nbits += width;
        if nbits >= 64 {
            out.extend_from_slice(&(acc as u64).to_le_bytes());
            acc >>= 64;
            nbits -= 64;
        }
    }
    let tail = nbits.div_ceil(8) as usize;
    out.extend_from_slice(acc.to_le_bytes().get(..tail).unwrap_or_default());
}

/// Unpacks [`SUB`] values of `width` bits (`width <= 64`; more reads as 64) from the start of
/// `bytes` and stores `base + value` (wrapping) into `out`.
///
/// `bytes` is the rest of the block from the sub-block on: it may end early (the last
/// sub-block of a block), and then the missing bits read as zero; the caller uses only the
/// values it asked for and has checked that their bytes are present.
pub(super) fn unpack(bytes: &[u8], width: u32, base: i64, out: &mut [i64; SUB]) {
    macro_rules! dispatch {
        ($($w:literal)*) => {
            match width {
                0 => out.fill(base),
                $($w => unpack_w::<$w>(bytes, base, out),)*
                _ => unpack_w::<64>(bytes, base, out),
            }
        };
    }
    dispatch!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30
        31 32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59
        60 61 62 63);
}

#[inline(always)]
fn unpack_w<const W: u32>(bytes: &[u8], base: i64, out: &mut [i64; SUB]) {
    // Bytes read for a full sub-block: the window of the last value starts at byte
    // (127*W)/8 and is 8 bytes wide (16 when a value may straddle 9 bytes).
    let window = if W <= 56 { 8 } else { 16 };
    let need = (SUB - 1) * W as usize / 8 + window;
    match bytes.get(..need) {
        Some(s) => unpack_from::<W>(s, base, out),
        None => {
            let mut buf = [0u8; PAD];
            let n = bytes.len().min(need);
            if let (Some(dst), Some(src)) = (buf.get_mut(..n), bytes.get(..n)) {
                dst.copy_from_slice(src);
            }
            unpack_from::<W>(buf.get(..need).unwrap_or_default(), base, out);
        }
    }
}

/// `s` holds at least the bytes [`unpack_w`] computes as needed; the `get`s below then
/// never fail (and compile to nothing, the indexes being constants after unrolling).
#[inline(always)]
fn unpack_from<const W: u32>(s: &[u8], base: i64, out: &mut [i64; SUB]) {
    let mask = mask(W);
    for (i, o) in out.iter_mut().enumerate() {
        let bit = i * W as usize;
        let byte = bit >> 3;
        let shift = (bit & 7) as u32;
        let v = if W <= 56 {
            match s
                .get(byte..byte + 8)
                .and_then(|b| <[u8; 8]>::try_from(b).ok())
            {
                Some(b) => (u64::from_le_bytes(b) >> shift) & mask,
                None => 0,
            }
        } else {
            match s
                .get(byte..byte + 16)
                .and_then(|b| <[u8; 16]>::try_from(b).ok())
            {
                Some(b) => (u128::from_le_bytes(b) >> shift) as u64 & mask,
                None => 0,
            }
        };
        *o = base.wrapping_add(v as i64);
    }
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic
    )]

    use super::*;

    fn round_trip(vals: &[u64], width: u32, slack: usize) {
        let mut out = Vec::new();
        pack(vals, width, &mut out);
        assert_eq!(out.len(), packed_len(vals.len(), width), "width {width}");
        out.extend(std::iter::repeat_n(0xff, slack)); // whatever follows in the block
        let mut got = [0i64; SUB];
        unpack(&out, width, 5, &mut got);
        let m = mask(width);
        for (i, (&v, &g)) in vals.iter().zip(got.iter()).enumerate() {
            let want = if width == 0 { 0 } else { v & m };
            assert_eq!(g, 5i64.wrapping_add(want as i64), "width {width} index {i}");
        }
    }

    #[test]
    fn every_width_round_trips_full_and_partial_sub_blocks() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for width in 0..=64u32 {
            let vals: Vec<u64> = (0..SUB)
                .map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    state ^ (state >> 29)
                })
                .collect();
            for slack in [0, 3, 2000] {
                round_trip(&vals, width, slack);
                round_trip(&vals[..37], width, slack);
                round_trip(&vals[..1], width, slack);
                // All ones: checks that neighbours do not bleed into each other.
                round_trip(&[u64::MAX; SUB], width, slack);
            }
        }
    }

    #[test]
    fn width_of_counts_significant_bits() {
        assert_eq!(width_of(0), 0);
        assert_eq!(width_of(1), 1);
        assert_eq!(width_of(255), 8);
        assert_eq!(width_of(256), 9);
        assert_eq!(width_of(u64::MAX), 64);
    }

    #[test]
    fn packed_tail_bits_are_zero() {
        let mut out = Vec::new();
        pack(&[1, 1, 1], 3, &mut out);
        assert_eq!(out, vec![0b0100_1001, 0b0000_0000]);
    }
}
