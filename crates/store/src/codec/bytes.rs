//! Byte-level primitives shared by the encoder and decoder: LEB128 varints, zigzag, and a
//! bounds-checked reader that knows its offset (for error messages).

use super::CodecError;

/// Maps signed to unsigned so that small magnitudes get small codes: 0, -1, 1, -2, ...
#[inline]
pub(super) fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

/// Inverse of [`zigzag`].
#[inline]
pub(super) fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Appends `v` as an LEB128 varint (7 bits a byte, low bits first).
#[inline]
pub(super) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded as a varint.
#[inline]
pub(super) fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v));
}

/// Bytes [`put_varint`] would write for `v`.
#[inline]
pub(super) fn varint_len(v: u64) -> usize {
    // 1 byte per started group of 7 bits; 0 still takes one byte.
    let bits = 64 - (v | 1).leading_zeros() as usize;
    bits.div_ceil(7)
}

/// A cursor over a block. Every read is bounds-checked and reports the field it was reading.
#[derive(Debug, Clone)]
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Offset of the next byte to read, from the start of the block.
    pub(super) fn pos(&self) -> usize {
        self.pos
    }

    /// The bytes not yet read (without consuming them).
    pub(super) fn rest(&self) -> &'a [u8] {
        self.buf.get(self.pos..).unwrap_or_default()
    }

    /// Bytes not yet read.
    pub(super) fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }

    pub(super) fn u8(&mut self, what: &'static str) -> Result<u8, CodecError> {
        let b = *self.buf.get(self.pos).ok_or(CodecError::Truncated {
            what,
            offset: self.pos,
        })?;
        self.pos += 1;
        Ok(b)
    }

    /// The next `len` bytes, borrowed from the block.
    pub(super) fn take(&mut self, len: usize, what: &'static str) -> Result<&'a [u8], CodecError> {
        let end = self.pos.checked_add(len).ok_or(CodecError::Truncated {
            what,
            offset: self.pos,
        })?;
        let s = self.buf.get(self.pos..end).ok_or(CodecError::Truncated {
            what,
            offset: self.buf.len(),
        })?;
        self.pos = end;
        Ok(s)
    }

    pub(super) fn u64_le(&mut self, what: &'static str) -> Result<u64, CodecError> {
        let s = self.take(8, what)?;
        let mut b = [0u8; 8];
        b.copy_from_slice(s);
        Ok(u64::from_le_bytes(b))
    }

    pub(super) fn varint(&mut self, what: &'static str) -> Result<u64, CodecError> {
        let start = self.pos;
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8(what)?;
            let low = u64::from(b & 0x7f);
            // The tenth byte may only carry the single top bit.
            if shift == 63 && low > 1 {
                return Err(CodecError::VarintOverflow {
                    what,
                    offset: start,
                });
            }
            v |= low << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(CodecError::VarintOverflow {
            what,
            offset: start,
        })
    }

    pub(super) fn zigzag(&mut self, what: &'static str) -> Result<i64, CodecError> {
        self.varint(what).map(unzigzag)
    }

    /// A varint that must lie in `lo..=hi`.
    pub(super) fn varint_in(
        &mut self,
        what: &'static str,
        lo: u64,
        hi: u64,
        expected: &'static str,
    ) -> Result<u64, CodecError> {
        let offset = self.pos;
        let v = self.varint(what)?;
        if v < lo || v > hi {
            return Err(CodecError::Invalid {
                what,
                got: v,
                expected,
                offset,
            });
        }
        Ok(v)
    }

    /// Fails unless every byte was read.
    pub(super) fn finish(&self) -> Result<(), CodecError> {
        match self.remaining() {
            0 => Ok(()),
            extra => Err(CodecError::TrailingBytes {
                extra,
                offset: self.pos,
            }),
        }
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

    #[test]
    fn zigzag_round_trips_extremes() {
        for v in [0, 1, -1, 63, -64, i64::MAX, i64::MIN, 1 << 40, -(1 << 40)] {
            assert_eq!(unzigzag(zigzag(v)), v, "{v}");
        }
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
    }

    #[test]
    fn varint_round_trips_and_len_matches() {
        for v in [
            0u64,
            1,
            127,
            128,
            16383,
            16384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, v);
            assert_eq!(out.len(), varint_len(v), "{v}");
            let mut r = Reader::new(&out);
            assert_eq!(r.varint("v"), Ok(v));
            assert_eq!(r.finish(), Ok(()));
        }
    }

    #[test]
    fn varint_rejects_overlong_and_truncated() {
        // Eleven continuation bytes.
        let bad = [0xffu8; 11];
        assert!(matches!(
            Reader::new(&bad).varint("v"),
            Err(CodecError::VarintOverflow { offset: 0, .. })
        ));
        // Ten bytes whose last carries more than the top bit.
        let mut bad = vec![0xffu8; 9];
        bad.push(0x02);
        assert!(matches!(
            Reader::new(&bad).varint("v"),
            Err(CodecError::VarintOverflow { .. })
        ));
        assert!(matches!(
            Reader::new(&[0x80, 0x80]).varint("count"),
            Err(CodecError::Truncated {
                what: "count",
                offset: 2
            })
        ));
    }

    #[test]
    fn take_past_end_reports_truncation() {
        let mut r = Reader::new(&[1, 2, 3]);
        assert_eq!(r.u8("a"), Ok(1));
        assert!(matches!(
            r.take(5, "payload"),
            Err(CodecError::Truncated {
                what: "payload",
                ..
            })
        ));
        assert!(matches!(
            r.take(usize::MAX, "huge"),
            Err(CodecError::Truncated { .. })
        ));
        assert_eq!(
            r.finish(),
            Err(CodecError::TrailingBytes {
                extra: 2,
                offset: 1
            })
        );
    }
}
