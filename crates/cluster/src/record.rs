//! The log record: what one Kafka message carries, and the hash that picks its partition.
//!
//! One message holds many points of one partition, all taken in by the ingest node at
//! the same second (one `Sink::append` call). Its value, version 1:
//!
//! ```text
//! u8      version = 1
//! varint  arrival: zigzag i64, Unix seconds, the ingest node's clock when it took the batch
//! varint  count: points that follow (u32)
//! count × point:
//!   varint  name_len (u32); 0 = the previous point's name again (names are never empty)
//!   bytes   name, UTF-8, normalized and canonical (tags sorted), name_len bytes
//!   varint  ts - arrival, zigzag i64 (a few bytes for live points)
//!   8 bytes value, IEEE-754 f64 bits, little-endian
//! ```
//!
//! Varints are LEB128 (7 bits a byte, low first, at most 10 bytes). The message has no
//! key (the partition is chosen here, see [`partition_for`]) and is compressed by the
//! producer as `[cluster] compression` says (none by default). The decoder refuses
//! anything else: an unknown version, a count larger than the bytes could hold, a name
//! that is not UTF-8, a first point naming "the previous name", trailing bytes. A storage node counts and logs such a message and
//! goes on with the next; it never panics on it.

use sumi_model::Batch;

/// The version byte this code writes and reads.
pub const RECORD_VERSION: u8 = 1;

/// The partition of a series: FNV-1a (64-bit) of its canonical name's UTF-8 bytes,
/// modulo the partition count. Stable across processes, versions and machines (it is
/// part of the on-log contract: every ingest node must place a series alike), cheap,
/// and even enough for names that differ in a few bytes.
pub fn partition_for(name: &str, partitions: u32) -> u32 {
    (fnv1a64(name.as_bytes()) % u64::from(partitions.max(1))) as u32
}

/// FNV-1a, 64-bit: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Writes one record into `out` (cleared first): `points` in order, taken at `arrival`.
pub struct RecordWriter {
    buf: Vec<u8>,
    count: u32,
    last_name: Option<(usize, usize)>,
    arrival: i64,
}

impl RecordWriter {
    pub fn new(arrival: i64) -> RecordWriter {
        let mut w = RecordWriter {
            buf: Vec::with_capacity(4096),
            count: 0,
            last_name: None,
            arrival,
        };
        w.reset(arrival);
        w
    }

    /// Starts a new record, keeping the buffer's memory.
    pub fn reset(&mut self, arrival: i64) {
        self.buf.clear();
        self.buf.push(RECORD_VERSION);
        put_varint(&mut self.buf, zigzag(arrival));
        // the count is written at the end ([`finish`]); points go into `buf` after a
        // fixed 5-byte slot so that nothing moves
        self.buf.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x00]);
        self.count = 0;
        self.last_name = None;
        self.arrival = arrival;
    }

    pub fn push(&mut self, name: &str, ts: i64, value: f64) {
        let same = self
            .last_name
            .is_some_and(|(s, l)| &self.buf[s..s + l] == name.as_bytes());
        if same {
            put_varint(&mut self.buf, 0);
        } else {
            put_varint(&mut self.buf, name.len() as u64);
            let start = self.buf.len();
            self.buf.extend_from_slice(name.as_bytes());
            self.last_name = Some((start, name.len()));
        }
        put_varint(&mut self.buf, zigzag(ts.wrapping_sub(self.arrival)));
        self.buf.extend_from_slice(&value.to_bits().to_le_bytes());
        self.count += 1;
    }

    pub fn len(&self) -> u32 {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes written so far.
    pub fn byte_len(&self) -> usize {
        self.buf.len()
    }

    /// The finished record (the count filled in).
    pub fn finish(&mut self) -> &[u8] {
        let at = 1 + varint_len(zigzag(self.arrival));
        // a 5-byte LEB128 of the count, padded with continuation bytes
        let mut c = self.count;
        for i in 0..5 {
            let mut b = (c & 0x7f) as u8;
            c >>= 7;
            if i < 4 {
                b |= 0x80;
            }
            self.buf[at + i] = b;
        }
        &self.buf
    }
}

/// Encodes a whole batch as one record (tests, tools).
pub fn encode(batch: &Batch, arrival: i64) -> Vec<u8> {
    let mut w = RecordWriter::new(arrival);
    for (name, p) in batch.iter() {
        w.push(name, p.ts, p.value);
    }
    w.finish().to_vec()
}

/// Why a record could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("empty record")]
    Empty,
    #[error("unknown record version {0}")]
    Version(u8),
    #[error("record cut short at byte {0}")]
    Truncated(usize),
    #[error("varint longer than 10 bytes at byte {0}")]
    VarintTooLong(usize),
    #[error("record claims {count} points but has {bytes} bytes left")]
    Count { count: u64, bytes: usize },
    #[error("point {0}: name is not UTF-8")]
    NameNotUtf8(u32),
    #[error("point {0}: repeats the previous name but none came before")]
    NoPreviousName(u32),
    #[error("{0} bytes after the last point")]
    Trailing(usize),
}

/// A decoded record: the ingest node's arrival time and the points, in order.
#[derive(Debug)]
pub struct Decoded {
    pub arrival: i64,
    pub points: u32,
}

/// The arrival time of a record, read from its header only (None when the header does
/// not read; [`decode_into`] then says why).
pub fn peek_arrival(bytes: &[u8]) -> Option<i64> {
    if bytes.first() != Some(&RECORD_VERSION) {
        return None;
    }
    let mut r = Reader { bytes, at: 1 };
    r.varint().ok().map(unzigzag)
}

/// Decodes one record, appending its points to `batch` (not cleared). On error the
/// batch keeps only what it held before.
pub fn decode_into(bytes: &[u8], batch: &mut Batch) -> Result<Decoded, RecordError> {
    let before = batch.len();
    decode_inner(bytes, batch).inspect_err(|_| batch.truncate(before))
}

fn decode_inner(bytes: &[u8], batch: &mut Batch) -> Result<Decoded, RecordError> {
    let mut r = Reader { bytes, at: 0 };
    let version = *bytes.first().ok_or(RecordError::Empty)?;
    if version != RECORD_VERSION {
        return Err(RecordError::Version(version));
    }
    r.at = 1;
    let arrival = unzigzag(r.varint()?);
    let count = r.varint()?;
    // the smallest point is 10 bytes (name_len, ts, value)
    let left = bytes.len() - r.at;
    if count > u64::from(u32::MAX) || count > (left / 10) as u64 {
        return Err(RecordError::Count { count, bytes: left });
    }
    let count = count as u32;
    // the name is checked as UTF-8 once, where it is spelled out
    let mut prev: Option<&str> = None;
    for i in 0..count {
        let len = r.varint()?;
        let name = if len == 0 {
            prev.ok_or(RecordError::NoPreviousName(i))?
        } else {
            let len = usize::try_from(len).map_err(|_| RecordError::Truncated(r.at))?;
            let name =
                std::str::from_utf8(r.take(len)?).map_err(|_| RecordError::NameNotUtf8(i))?;
            prev = Some(name);
            name
        };
        let ts = arrival.wrapping_add(unzigzag(r.varint()?));
        let v = r.take(8)?;
        let value = f64::from_bits(u64::from_le_bytes(v.try_into().unwrap_or([0; 8])));
        batch.push(name, ts, value);
    }
    if r.at != bytes.len() {
        return Err(RecordError::Trailing(bytes.len() - r.at));
    }
    Ok(Decoded {
        arrival,
        points: count,
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or(RecordError::Truncated(self.at))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn varint(&mut self) -> Result<u64, RecordError> {
        let start = self.at;
        let mut v: u64 = 0;
        for i in 0..10 {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or(RecordError::Truncated(self.at))?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(RecordError::VarintTooLong(start))
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn points(b: &Batch) -> Vec<(String, i64, u64)> {
        b.iter()
            .map(|(n, p)| (n.to_string(), p.ts, p.value.to_bits()))
            .collect()
    }

    #[test]
    fn roundtrip_shares_repeated_names() {
        let mut b = Batch::new();
        b.push("a.b", 100, 1.5);
        b.push("a.b", 110, -2.0);
        b.push("c;tag=x", 90, f64::NAN);
        b.push("a.b", i64::MIN, 0.0);
        let bytes = encode(&b, 105);
        let mut out = Batch::new();
        let d = decode_into(&bytes, &mut out).unwrap();
        assert_eq!(d.arrival, 105);
        assert_eq!(d.points, 4);
        assert_eq!(points(&out), points(&b));
        // the second "a.b" costs one byte of name
        assert_eq!(
            bytes.len(),
            1 + 2 + 5 + (1 + 3 + 1 + 8) + (1 + 1 + 8) + (1 + 7 + 1 + 8) + (1 + 3 + 10 + 8)
        );
    }

    #[test]
    fn fnv_and_partition_are_stable() {
        // FNV-1a's published vectors
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
        assert_eq!(
            partition_for("foobar", 8),
            (0x85944171f73967e8u64 % 8) as u32
        );
        assert_eq!(partition_for("x", 0), 0);
    }

    #[test]
    fn bad_records_are_errors() {
        let mut b = Batch::new();
        b.push("keep", 1, 1.0);
        assert_eq!(decode_into(&[], &mut b).unwrap_err(), RecordError::Empty);
        assert_eq!(
            decode_into(&[2], &mut b).unwrap_err(),
            RecordError::Version(2)
        );
        assert!(matches!(
            decode_into(&[1], &mut b),
            Err(RecordError::Truncated(1))
        ));
        assert!(matches!(
            decode_into(&[1, 0, 100, 0, 0], &mut b),
            Err(RecordError::Count { count: 100, .. })
        ));
        let mut one = Batch::new();
        one.push("n", 5, 2.0);
        let mut bytes = encode(&one, 5);
        bytes.push(0);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::Trailing(1)
        );
        // first point says "previous name"
        let mut bytes = vec![1, 0, 1, 0, 0];
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::NoPreviousName(0)
        );
        let mut bytes = vec![1, 0, 1, 1, 0xff, 0];
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::NameNotUtf8(0)
        );
        assert_eq!(points(&b), vec![("keep".to_string(), 1, 1f64.to_bits())]);
    }

    proptest! {
        #[test]
        fn any_batch_roundtrips(
            pts in proptest::collection::vec(("[a-z.]{1,12}", any::<i64>(), any::<u64>()), 0..40),
            arrival in any::<i64>(),
        ) {
            let mut b = Batch::new();
            for (n, ts, v) in &pts {
                b.push(n, *ts, f64::from_bits(*v));
            }
            let bytes = encode(&b, arrival);
            let mut out = Batch::new();
            let d = decode_into(&bytes, &mut out).unwrap();
            prop_assert_eq!(d.arrival, arrival);
            prop_assert_eq!(peek_arrival(&bytes), Some(arrival));
            prop_assert_eq!(points(&out), points(&b));
        }

        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut b = Batch::new();
            let _ = decode_into(&bytes, &mut b);
        }
    }
}
