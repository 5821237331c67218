//! The fallback value coder for blocks that are not decimals: Gorilla's XOR scheme
//! (Pelkonen et al., VLDB 2015), with bits written least significant first.
//!
//! The first value is stored as its 64 bits. Each next value is XORed with the previous one:
//! - `0`: the same bits as the previous value;
//! - `1,0`: the XOR's significant bits fit in the previous window (leading zeros and length
//!   reused), followed by those bits;
//! - `1,1`: a new window: 5 bits of leading zeros (capped at 31), 6 bits of length − 1, then
//!   the significant bits.

use super::CodecError;

/// Appends bit fields to a byte vector, least significant bit first.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u128,
    nbits: u32,
}

impl<'a> BitWriter<'a> {
    fn new(out: &'a mut Vec<u8>) -> Self {
        BitWriter {
            out,
            acc: 0,
            nbits: 0,
        }
    }

    /// Writes the low `count` (<= 64) bits of `v`.
    fn put(&mut self, v: u64, count: u32) {
        let v = if count >= 64 {
            v
        } else {
            v & ((1u64 << count) - 1)
        };
        self.acc |= u128::from(v) << self.nbits;
        self.nbits += count;
        if self.nbits >= 64 {
            self.out.extend_from_slice(&(self.acc as u64).to_le_bytes());
            self.acc >>= 64;
            self.nbits -= 64;
        }
    }

    fn finish(self) {
        let tail = self.nbits.div_ceil(8) as usize;
        let bytes = self.acc.to_le_bytes();
        self.out
            .extend_from_slice(bytes.get(..tail).unwrap_or_default());
    }
}

/// Reads bit fields written by [`BitWriter`].
struct BitReader {
    /// The stream followed by 16 zero bytes, so that a 16-byte window can be read at any
    /// bit position inside the stream.
    buf: Vec<u8>,
    /// Length of the stream in bits.
    len: u64,
    /// Offset of the stream in the block, for error messages.
    base: usize,
    pos: u64,
}

impl BitReader {
    fn new(stream: &[u8], base: usize) -> BitReader {
        let mut buf = Vec::with_capacity(stream.len() + 16);
        buf.extend_from_slice(stream);
        buf.extend_from_slice(&[0; 16]);
        BitReader {
            buf,
            len: stream.len() as u64 * 8,
            base,
            pos: 0,
        }
    }

    fn get(&mut self, count: u32, what: &'static str) -> Result<u64, CodecError> {
        let end = self.pos + u64::from(count);
        if end > self.len {
            return Err(CodecError::Truncated {
                what,
                offset: self.base + (self.len / 8) as usize,
            });
        }
        let byte = (self.pos / 8) as usize;
        // Within the padding by construction; a miss would read as zeros, never panic.
        let window = self
            .buf
            .get(byte..byte + 16)
            .and_then(|w| <[u8; 16]>::try_from(w).ok())
            .unwrap_or_default();
        let v = (u128::from_le_bytes(window) >> (self.pos % 8)) as u64;
        self.pos = end;
        Ok(if count >= 64 {
            v
        } else {
            v & ((1u64 << count) - 1)
        })
    }
}

/// Appends the XOR stream of `values` (non-empty).
pub(super) fn encode(values: &[f64], out: &mut Vec<u8>) {
    let mut w = BitWriter::new(out);
    let mut it = values.iter().map(|v| v.to_bits());
    let Some(mut prev) = it.next() else {
        return w.finish();
    };
    w.put(prev, 64);
    // No window until the first `1,1` record.
    let mut window: Option<(u32, u32)> = None;
    for bits in it {
        let x = bits ^ prev;
        prev = bits;
        if x == 0 {
            w.put(0, 1);
            continue;
        }
        let lead = x.leading_zeros().min(31);
        let trail = x.trailing_zeros();
        match window {
            Some((wl, wt)) if lead >= wl && trail >= wt => {
                w.put(0b01, 2);
                w.put(x >> wt, 64 - wl - wt);
            }
            _ => {
                let len = 64 - lead - trail;
                w.put(0b11, 2);
                w.put(u64::from(lead), 5);
                w.put(u64::from(len - 1), 6);
                w.put(x >> trail, len);
                window = Some((lead, trail));
            }
        }
    }
    w.finish();
}

/// Decodes `n` values from `buf`, which must hold exactly the stream (`base` is its offset in
/// the block), and appends them to `out`.
pub(super) fn decode(
    buf: &[u8],
    base: usize,
    n: usize,
    out: &mut Vec<f64>,
) -> Result<(), CodecError> {
    // The first value takes 64 bits and every other at least one: refuse counts the stream
    // cannot hold before reserving memory for them.
    let bits = buf.len() as u64 * 8;
    if n == 0 || (n as u64 - 1).saturating_add(64) > bits {
        return Err(CodecError::Truncated {
            what: "xor values",
            offset: base + buf.len(),
        });
    }
    out.reserve(n);
    let mut r = BitReader::new(buf, base);
    let mut prev = r.get(64, "first value")?;
    out.push(f64::from_bits(prev));
    let mut window: Option<(u32, u32)> = None;
    for _ in 1..n {
        if r.get(1, "xor control bit")? == 0 {
            out.push(f64::from_bits(prev));
            continue;
        }
        let at = base + (r.pos / 8) as usize;
        let (lead, len) = if r.get(1, "xor control bit")? == 0 {
            let (wl, wt) = window.ok_or(CodecError::Invalid {
                what: "xor record",
                got: 0b01,
                expected: "a new window (1,1) before the first reuse (1,0)",
                offset: at,
            })?;
            (wl, 64 - wl - wt)
        } else {
            let lead = r.get(5, "xor leading zeros")? as u32;
            let len = r.get(6, "xor length")? as u32 + 1;
            if lead + len > 64 {
                return Err(CodecError::Invalid {
                    what: "xor window",
                    got: u64::from(lead + len),
                    expected: "leading zeros + length <= 64",
                    offset: at,
                });
            }
            window = Some((lead, 64 - lead - len));
            (lead, len)
        };
        let trail = 64 - lead - len;
        let x = r.get(len, "xor bits")? << trail;
        prev ^= x;
        out.push(f64::from_bits(prev));
    }
    // The stream must end in its last byte, padded with zero bits.
    let used = r.pos.div_ceil(8);
    if used != buf.len() as u64 {
        return Err(CodecError::TrailingBytes {
            extra: buf.len() - used as usize,
            offset: base + used as usize,
        });
    }
    let pad = (used * 8 - r.pos) as u32;
    if pad > 0 && r.get(pad, "xor padding")? != 0 {
        return Err(CodecError::Invalid {
            what: "xor padding",
            got: 1,
            expected: "zero bits after the last value",
            offset: base + buf.len() - 1,
        });
    }
    Ok(())
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

    fn round_trip(values: &[f64]) -> usize {
        let mut buf = Vec::new();
        encode(values, &mut buf);
        let mut out = Vec::new();
        decode(&buf, 0, values.len(), &mut out).expect("decodes");
        let want: Vec<u64> = values.iter().map(|v| v.to_bits()).collect();
        let got: Vec<u64> = out.iter().map(|v| v.to_bits()).collect();
        assert_eq!(got, want);
        buf.len()
    }

    #[test]
    fn specials_round_trip_bit_for_bit() {
        round_trip(&[
            f64::NAN,
            -0.0,
            0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::MIN_POSITIVE,
        ]);
        round_trip(&[
            f64::from_bits(0x7ff8_dead_beef_0001),
            f64::from_bits(1),
            f64::MAX,
        ]);
        round_trip(&[1.0]);
    }

    #[test]
    fn repeated_values_cost_one_bit_each() {
        let len = round_trip(&[0.1 + 0.2; 801]);
        assert_eq!(len, 8 + 100);
    }

    #[test]
    fn reuse_before_any_window_is_rejected() {
        // First value, then control bits 1,0.
        let mut buf = vec![0u8; 8];
        buf.push(0b01);
        let err = decode(&buf, 0, 2, &mut Vec::new()).unwrap_err();
        assert!(matches!(
            err,
            CodecError::Invalid {
                what: "xor record",
                ..
            }
        ));
    }

    #[test]
    fn trailing_bytes_and_dirty_padding_are_rejected() {
        // 64 + 1 bits: seven bits of padding.
        let mut buf = Vec::new();
        encode(&[1.0, 1.0], &mut buf);
        assert_eq!(buf.len(), 9);
        let mut extra = buf.clone();
        extra.push(0);
        assert!(matches!(
            decode(&extra, 0, 2, &mut Vec::new()),
            Err(CodecError::TrailingBytes { extra: 1, .. })
        ));
        if let Some(last) = buf.last_mut() {
            *last |= 0x80;
        }
        assert!(decode(&buf, 0, 2, &mut Vec::new()).is_err());
    }
}
