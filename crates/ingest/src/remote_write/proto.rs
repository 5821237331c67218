//! The protobuf wire format, as far as a reader of `prompb.WriteRequest` needs it:
//! varints, fixed 64-bit values, length-delimited fields, and skipping any field it
//! does not know (wire types 0, 1, 2, 5; the deprecated groups, 3 and 4, are refused
//! as `prost` refuses them). Every read is bounds-checked; offsets in errors are into
//! the decompressed message.

/// A malformed message: what, at which byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ProtoError {
    pub(super) offset: usize,
    pub(super) what: &'static str,
}

pub(super) type Proto<T> = Result<T, ProtoError>;

/// Wire types.
pub(super) const VARINT: u8 = 0;
pub(super) const FIXED64: u8 = 1;
pub(super) const LEN: u8 = 2;
pub(super) const FIXED32: u8 = 5;

/// A cursor over one message (or sub-message).
pub(super) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Offset of `buf` in the whole message, for errors.
    base: usize,
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8], base: usize) -> Reader<'a> {
        Reader { buf, pos: 0, base }
    }

    /// Offset of the next byte in the whole message.
    pub(super) fn offset(&self) -> usize {
        self.base + self.pos
    }

    fn err<T>(&self, what: &'static str) -> Proto<T> {
        Err(ProtoError {
            offset: self.offset(),
            what,
        })
    }

    pub(super) fn varint(&mut self) -> Proto<u64> {
        let mut v: u64 = 0;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos) else {
                return self.err("truncated varint");
            };
            self.pos += 1;
            if i == 9 && b > 1 {
                return self.err("varint overflows 64 bits");
            }
            v |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        self.err("varint longer than 10 bytes")
    }

    /// The next field's number and wire type, or `None` at the end.
    pub(super) fn key(&mut self) -> Proto<Option<(u64, u8)>> {
        if self.pos >= self.buf.len() {
            return Ok(None);
        }
        let at = self.offset();
        let key = self.varint()?;
        let field = key >> 3;
        if field == 0 {
            return Err(ProtoError {
                offset: at,
                what: "field number 0",
            });
        }
        Ok(Some((field, (key & 7) as u8)))
    }

    pub(super) fn fixed64(&mut self) -> Proto<u64> {
        let Some(bytes) = self.buf.get(self.pos..self.pos + 8) else {
            return self.err("truncated fixed64");
        };
        self.pos += 8;
        let mut b = [0u8; 8];
        b.copy_from_slice(bytes);
        Ok(u64::from_le_bytes(b))
    }

    /// A length-delimited field's bytes, with their offset in the whole message.
    pub(super) fn bytes(&mut self) -> Proto<(&'a [u8], usize)> {
        let len = self.varint()?;
        let at = self.offset();
        let Some(bytes) = usize::try_from(len)
            .ok()
            .and_then(|n| self.buf.get(self.pos..self.pos.checked_add(n)?))
        else {
            return self.err("length-delimited field runs past the end");
        };
        self.pos += bytes.len();
        Ok((bytes, at))
    }

    /// Skips the value of a field of wire type `wire`.
    pub(super) fn skip(&mut self, wire: u8) -> Proto<()> {
        match wire {
            VARINT => self.varint().map(drop),
            FIXED64 => self.fixed64().map(drop),
            LEN => self.bytes().map(drop),
            FIXED32 => {
                if self.buf.get(self.pos..self.pos + 4).is_none() {
                    return self.err("truncated fixed32");
                }
                self.pos += 4;
                Ok(())
            }
            3 | 4 => self.err("groups (wire types 3 and 4) are not supported"),
            _ => self.err("invalid wire type"),
        }
    }

    /// Fails unless a known field came with the wire type its schema gives.
    pub(super) fn want(&self, wire: u8, expected: u8) -> Proto<()> {
        if wire == expected {
            Ok(())
        } else {
            self.err("field has the wrong wire type for its schema")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints() {
        let cases: &[(&[u8], u64)] = &[
            (&[0], 0),
            (&[1], 1),
            (&[0xAC, 0x02], 300),
            (
                &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
                u64::MAX,
            ),
        ];
        for (bytes, want) in cases {
            assert_eq!(Reader::new(bytes, 0).varint(), Ok(*want));
        }
        for bad in [
            &[0x80][..],
            &[0xFF; 10],
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02],
        ] {
            assert!(Reader::new(bad, 0).varint().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fields_and_skipping() {
        // field 1 varint 5, field 2 bytes "ab", field 3 fixed64, field 4 fixed32
        let msg = [
            0x08, 5, 0x12, 2, b'a', b'b', 0x19, 1, 0, 0, 0, 0, 0, 0, 0, 0x25, 1, 2, 3, 4,
        ];
        let mut r = Reader::new(&msg, 100);
        assert_eq!(r.key(), Ok(Some((1, VARINT))));
        assert_eq!(r.varint(), Ok(5));
        assert_eq!(r.key(), Ok(Some((2, LEN))));
        assert_eq!(r.bytes(), Ok((&b"ab"[..], 104)));
        assert_eq!(r.key(), Ok(Some((3, FIXED64))));
        assert_eq!(r.fixed64(), Ok(1));
        assert_eq!(r.key(), Ok(Some((4, FIXED32))));
        r.skip(FIXED32).unwrap();
        assert_eq!(r.key(), Ok(None));
        // errors
        assert!(Reader::new(&[5, b'a'], 0).bytes().is_err());
        let mut r = Reader::new(&[0x0B], 0);
        let (_, wire) = r.key().unwrap().unwrap();
        assert_eq!(
            r.skip(wire).unwrap_err().what,
            "groups (wire types 3 and 4) are not supported"
        );
        assert_eq!(
            Reader::new(&[0x00], 0).key().unwrap_err().what,
            "field number 0"
        );
        assert!(Reader::new(&[0x19, 1, 2], 0).fixed64().is_err());
        assert!(Reader::new(
            &[0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            0
        )
        .bytes()
        .is_err());
    }
}
