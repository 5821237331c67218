//! WAL record payloads: the points of one append, encoded compactly (varint series
//! ids, zigzag slot deltas, level in the low 4 bits, raw f64 bits). Format:
//! `docs/format/wal.md`.

/// Slots further than this from zero are refused at append time, so that the delta
/// encoding below never overflows (2^56 s is two billion years).
pub(crate) const SLOT_LIMIT: i64 = 1 << 56;

const KIND_POINTS: u8 = 1;

/// One point as the WAL and the head see it: already placed at its level and slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WalPoint {
    /// The series id (`series.log`).
    pub series: u32,
    /// The level (archive) the point was placed in.
    pub level: u8,
    /// The slot: the time aligned down to the level's step, in seconds.
    pub slot: i64,
    pub value: f64,
}

/// Why a payload could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("payload ends inside point {0}")]
    Truncated(u64),
    #[error("unknown record kind {0}")]
    Kind(u8),
    #[error("varint longer than 10 bytes at point {0}")]
    Varint(u64),
    #[error("{0} bytes left after the last point")]
    Trailing(usize),
    #[error("slot out of range at point {0}")]
    Slot(u64),
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Encodes `points` as one payload into `out` (appending).
pub(crate) fn encode_points(points: &[WalPoint], out: &mut Vec<u8>) {
    out.reserve(points.len() * 13 + 16);
    out.push(KIND_POINTS);
    put_varint(out, points.len() as u64);
    let mut prev = 0i64;
    for p in points {
        put_varint(out, u64::from(p.series));
        let delta = p.slot.wrapping_sub(prev);
        put_varint(out, (zigzag(delta) << 4) | u64::from(p.level & 0x0f));
        out.extend_from_slice(&p.value.to_bits().to_le_bytes());
        prev = p.slot;
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn varint(&mut self, at: u64) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = *self.buf.get(self.pos).ok_or(RecordError::Truncated(at))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(RecordError::Varint(at))
    }
}

/// Decodes a payload, calling `f` for each point in order.
pub(crate) fn decode_points(
    payload: &[u8],
    mut f: impl FnMut(WalPoint),
) -> Result<u64, RecordError> {
    let mut r = Reader {
        buf: payload,
        pos: 0,
    };
    let kind = *payload.first().ok_or(RecordError::Truncated(0))?;
    if kind != KIND_POINTS {
        return Err(RecordError::Kind(kind));
    }
    r.pos = 1;
    let n = r.varint(0)?;
    let mut prev = 0i64;
    for i in 0..n {
        let series = u32::try_from(r.varint(i)?).map_err(|_| RecordError::Truncated(i))?;
        let packed = r.varint(i)?;
        let level = (packed & 0x0f) as u8;
        let slot = prev.wrapping_add(unzigzag(packed >> 4));
        if !(-SLOT_LIMIT..=SLOT_LIMIT).contains(&slot) {
            return Err(RecordError::Slot(i));
        }
        let bytes = r
            .buf
            .get(r.pos..r.pos + 8)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .ok_or(RecordError::Truncated(i))?;
        r.pos += 8;
        prev = slot;
        f(WalPoint {
            series,
            level,
            slot,
            value: f64::from_bits(u64::from_le_bytes(bytes)),
        });
    }
    if r.pos != payload.len() {
        return Err(RecordError::Trailing(payload.len() - r.pos));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn round_trip_and_size() {
        let pts: Vec<WalPoint> = (0..1000u32)
            .map(|i| WalPoint {
                series: i * 7,
                level: (i % 3) as u8,
                slot: 1_700_000_000 + i64::from(i / 100) * 10,
                value: f64::from(i) * 0.5,
            })
            .collect();
        let mut buf = Vec::new();
        encode_points(&pts, &mut buf);
        // ids under 2^14 (2 bytes), small deltas (1 byte), 8 value bytes
        assert!(buf.len() < 1000 * 12 + 16, "{}", buf.len());
        let mut got = Vec::new();
        assert_eq!(decode_points(&buf, |p| got.push(p)).unwrap(), 1000);
        assert_eq!(got, pts);
    }

    #[test]
    fn bad_payloads_are_errors() {
        let mut buf = Vec::new();
        encode_points(
            &[WalPoint {
                series: 1,
                level: 0,
                slot: 10,
                value: 1.0,
            }],
            &mut buf,
        );
        for cut in 0..buf.len() {
            assert!(decode_points(&buf[..cut], |_| {}).is_err(), "cut at {cut}");
        }
        let mut extra = buf.clone();
        extra.push(0);
        assert_eq!(decode_points(&extra, |_| {}), Err(RecordError::Trailing(1)));
        let mut kind = buf;
        kind[0] = 9;
        assert_eq!(decode_points(&kind, |_| {}), Err(RecordError::Kind(9)));
        assert!(decode_points(
            &[1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            |_| {}
        )
        .is_err());
    }

    proptest! {
        #[test]
        fn any_points_round_trip(raw in proptest::collection::vec((any::<u32>(), 0u8..16, -SLOT_LIMIT..=SLOT_LIMIT, any::<u64>()), 0..50)) {
            let pts: Vec<WalPoint> = raw.iter().map(|&(series, level, slot, bits)| WalPoint { series, level, slot, value: f64::from_bits(bits) }).collect();
            let mut buf = Vec::new();
            encode_points(&pts, &mut buf);
            let mut got = Vec::new();
            decode_points(&buf, |p| got.push(p)).unwrap();
            prop_assert_eq!(got.len(), pts.len());
            for (a, b) in got.iter().zip(&pts) {
                prop_assert_eq!((a.series, a.level, a.slot, a.value.to_bits()), (b.series, b.level, b.slot, b.value.to_bits()));
            }
        }

        #[test]
        fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = decode_points(&bytes, |_| {});
        }
    }
}
