//! The log record: what one Kafka message carries, and the hash that picks its partition.
//!
//! One message holds many points of one partition, all taken in by the ingest node at
//! the same second (one `Sink::append` call). Three versions exist; an ingest node
//! writes the one `[cluster] record_version` names (2 by default; 3 for the records of
//! GrowthForecast posts) and a storage node reads all of them, so a log written before
//! version 2 is still consumed.
//!
//! Version 1:
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
//! Version 2, about a third of version 1's bytes for agent-like load (each name shares
//! its prefix with the previous point's; agents send a host's metrics together, and
//! the producer keeps their order):
//!
//! ```text
//! u8      version = 2
//! varint  arrival: zigzag i64, as in version 1
//! varint  count: points that follow (u32)
//! count × point:
//!   varint  shared: bytes the name shares with the previous point's name (0 for the
//!           first point), ending on a character boundary of both
//!   varint  suffix_len (u32)
//!   bytes   suffix, UTF-8; name = previous name's first `shared` bytes + suffix, not empty
//!   varint  zigzag(ts - previous ts) << 3 | kind, up to 67 bits (the first point's
//!           previous ts is the arrival time)
//!   value   kind 0: 8 bytes, IEEE-754 f64 bits, little-endian
//!           kind 1..=7: varint, zigzag i64 m; the value is m / 10^(kind - 1), computed
//!           as f64 division (exact: the writer uses it only when it gives back the
//!           same bits, which covers integers and short decimals as agents print them)
//! ```
//!
//! Version 3 is version 2 with a flags byte after the version; the producer writes it
//! only for records that carry a flag (a GrowthForecast post's points), and version 2
//! (or 1) otherwise:
//!
//! ```text
//! u8      version = 3
//! u8      flags: bit 0 (GRAPH) = the points are a GrowthForecast graph's: a series
//!         the record creates rolls up by average with xFilesFactor 0, as on a single
//!         node; bit 1 (DELETE) = a delete marker (below); other bits must be 0
//! ...     the rest exactly as version 2 (arrival, count, points)
//! ```
//!
//! A delete marker (`POST /api/v1/series/delete` in a cluster, see [`delete_marker`])
//! is a version 3 record with the DELETE flag whose "points" are the request's globs,
//! each as a name (timestamp the arrival, value 0). The origin writes one into every
//! data partition (a glob names no partition); a storage node applies the points
//! before it, deletes the series matching the globs *of that partition* (the ones
//! [`partition_for`] places there, an anomaly score series by its series' name:
//! `sumi_model::placement_name`), and goes on: every replica deletes at the same log
//! position. A node of a release before the flag refuses the record as an unknown flag
//! (`sumi_cluster_consume_bad_records_total`, logged) and skips it: it stores nothing
//! wrong, but keeps the series (it deletes them when it applies the metadata op).
//!
//! Varints are LEB128 (7 bits a byte, low first, at most 10 bytes). The message has no
//! key (the partition is chosen here, see [`partition_for`]) and is compressed by the
//! producer as `[cluster] compression` says (none by default). The decoder refuses
//! anything else: an unknown version, a count larger than the bytes could hold, a name
//! that is not UTF-8, a first point naming "the previous name", a shared prefix longer
//! than the previous name or cutting a character, an empty name, a timestamp header
//! over 67 bits, trailing bytes. A storage node counts and logs such a message and goes
//! on with the next; it never panics on it.

use sumi_model::Batch;

/// The version byte this code writes unless told otherwise.
pub const RECORD_VERSION: u8 = 2;

/// The versions this code reads (and can write).
pub const RECORD_VERSIONS: [u8; 3] = [1, 2, 3];

/// Version 3's flag: the record's points are a GrowthForecast graph's (see the header).
pub const FLAG_GRAPH: u8 = 1;

/// Version 3's flag: the record is a delete marker (see the header).
pub const FLAG_DELETE: u8 = 2;

/// The flags this code knows.
const KNOWN_FLAGS: u8 = FLAG_GRAPH | FLAG_DELETE;

/// Powers of ten of the decimal value kinds (kind k: 10^(k-1)), all exact in f64.
const POW10: [f64; 7] = [1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6];

/// The largest integer magnitude of a decimal value (every integer up to it is exact).
const EXACT_INT: f64 = 9_007_199_254_740_992.0; // 2^53
/// Relative distance of `v × 10^k` from an integer beyond which `m / 10^k` cannot be
/// `v` (both roundings together move it by about 2^-52 of itself; this is 2^-40).
const NOT_NEAR: f64 = 1.0 / 1_099_511_627_776.0;

/// The partition of a series: FNV-1a (64-bit) of its canonical name's UTF-8 bytes,
/// modulo the partition count. Stable across processes, versions and machines (it is
/// part of the on-log contract: every ingest node must place a series alike), cheap,
/// and even enough for names that differ in a few bytes.
pub fn partition_for(name: &str, partitions: u32) -> u32 {
    (fnv1a64(name.as_bytes()) % u64::from(partitions.max(1))) as u32
}

/// FNV-1a, 64-bit: offset basis 0xcbf29ce484222325, prime 0x100000001b3.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_BASIS;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// FNV-1a ([`fnv1a64`]) of a run of names that share prefixes, as a batch brings
/// them (a host's metrics together): the hash state after each byte of the previous
/// name is kept, so a name costs only the bytes after what it shares with the one
/// before. FNV-1a reads a byte at a time through a chain of multiplications, which made
/// the partition hash half of the ingest node's encoding (docs/cluster.md,
/// "Throughput"); the answer is [`fnv1a64`]'s, bit for bit.
#[derive(Debug, Default)]
pub struct PrefixFnv {
    prev: Vec<u8>,
    /// `states[i]`: the hash of the previous name's first `i` bytes.
    states: Vec<u64>,
}

const FNV_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

impl PrefixFnv {
    pub fn new() -> PrefixFnv {
        PrefixFnv::default()
    }

    /// [`fnv1a64`] of `name`.
    pub fn hash(&mut self, name: &[u8]) -> u64 {
        if self.states.is_empty() {
            self.states.push(FNV_BASIS);
        }
        let shared = common_prefix(&self.prev, name);
        self.prev.truncate(shared);
        self.states.truncate(shared + 1);
        let mut h = self.states.last().copied().unwrap_or(FNV_BASIS);
        let rest = name.get(shared..).unwrap_or_default();
        let from = self.states.len();
        self.states.resize(from + rest.len(), 0);
        for (state, &b) in self.states[from..].iter_mut().zip(rest) {
            h ^= u64::from(b);
            h = h.wrapping_mul(FNV_PRIME);
            *state = h;
        }
        self.prev.extend_from_slice(rest);
        h
    }

    /// [`partition_for`] of `name`.
    pub fn partition(&mut self, name: &str, partitions: u32) -> u32 {
        (self.hash(name.as_bytes()) % u64::from(partitions.max(1))) as u32
    }
}

/// How many leading bytes `a` and `b` share, compared eight at a time.
pub fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let mut n = 0;
    for (x, y) in a.chunks_exact(8).zip(b.chunks_exact(8)) {
        let x = u64::from_le_bytes(x.try_into().unwrap_or([0; 8]));
        let y = u64::from_le_bytes(y.try_into().unwrap_or([0; 8]));
        let diff = x ^ y;
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    let tail = a.get(n..).unwrap_or_default().iter();
    n + tail
        .zip(b.get(n..).unwrap_or_default())
        .take_while(|(x, y)| x == y)
        .count()
}

/// The value of a point as version 2 writes it: `(kind, m)` with `m / 10^(kind-1) == v`
/// bit for bit, or kind 0 (the raw bits) when no scale up to 10^6 gives `v` back.
fn decimal(v: f64) -> (u8, i64) {
    if !v.is_finite() || v.abs() >= EXACT_INT || (v == 0.0 && v.is_sign_negative()) {
        return (0, 0);
    }
    for (k, &p) in POW10.iter().enumerate() {
        let x = v * p;
        if x.abs() >= EXACT_INT {
            break;
        }
        // the nearest integer, ties away from zero (`f64::round` is a libm call): only
        // a candidate, which the check below accepts only when it gives `v` back
        // (from 2^52 on every f64 is an integer, and adding 0.5 could round up)
        let m = if x.abs() >= 4_503_599_627_370_496.0 {
            x as i64
        } else {
            (x + 0.5f64.copysign(x)) as i64
        };
        // `m / p == v` puts `x` (`v × p` rounded) within a few ulps of `m`; where it is
        // further, the division (the costly part) cannot give `v` back
        if (x - m as f64).abs() > x.abs() * NOT_NEAR {
            continue;
        }
        // (10^0: the division by 1 is exact and left out)
        let back = if k == 0 { m as f64 } else { m as f64 / p };
        if back.to_bits() == v.to_bits() {
            return (k as u8 + 1, m);
        }
    }
    (0, 0)
}

/// Writes one record into `out` (cleared first): `points` in order, taken at `arrival`.
pub struct RecordWriter {
    version: u8,
    buf: Vec<u8>,
    count: u32,
    /// Version 1: where the previous name is in `buf`.
    last_name: Option<(usize, usize)>,
    /// Version 2: the previous name and timestamp.
    prev_name: Vec<u8>,
    prev_ts: i64,
    arrival: i64,
    /// Version 3's flags byte.
    flags: u8,
}

impl RecordWriter {
    /// A writer of the current version ([`RECORD_VERSION`]).
    pub fn new(arrival: i64) -> RecordWriter {
        RecordWriter::with_version(RECORD_VERSION, arrival)
    }

    /// A writer of `version` (1, 2 or 3 with no flag; anything else writes the
    /// current version).
    pub fn with_version(version: u8, arrival: i64) -> RecordWriter {
        RecordWriter::with_flags(version, 0, arrival)
    }

    /// A writer of records carrying `flags` ([`FLAG_GRAPH`]): version 3 when any is
    /// set, else `version` as [`with_version`](Self::with_version) takes it.
    pub fn with_flags(version: u8, flags: u8, arrival: i64) -> RecordWriter {
        let version = if flags & KNOWN_FLAGS != 0 {
            3
        } else if RECORD_VERSIONS.contains(&version) {
            version
        } else {
            RECORD_VERSION
        };
        let mut w = RecordWriter {
            version,
            buf: Vec::with_capacity(4096),
            count: 0,
            last_name: None,
            prev_name: Vec::new(),
            prev_ts: arrival,
            arrival,
            flags: flags & KNOWN_FLAGS,
        };
        w.reset(arrival);
        w
    }

    /// The finished record, handed over: the writer starts a new one at `arrival`
    /// with a fresh buffer (no copy of the record).
    pub fn take(&mut self, arrival: i64) -> Vec<u8> {
        self.finish();
        let cap = self.buf.capacity();
        let out = std::mem::replace(&mut self.buf, Vec::with_capacity(cap));
        self.reset(arrival);
        out
    }

    /// The finished record, the writer's buffer handed over (no copy).
    pub fn into_record(mut self) -> Vec<u8> {
        self.finish();
        self.buf
    }

    /// The version this writer writes.
    pub fn version(&self) -> u8 {
        self.version
    }

    /// Starts a new record, keeping the buffer's memory.
    pub fn reset(&mut self, arrival: i64) {
        self.buf.clear();
        self.buf.push(self.version);
        if self.version == 3 {
            self.buf.push(self.flags);
        }
        put_varint(&mut self.buf, zigzag(arrival));
        // the count is written at the end ([`finish`]); points go into `buf` after a
        // fixed 5-byte slot so that nothing moves
        self.buf.extend_from_slice(&[0x80, 0x80, 0x80, 0x80, 0x00]);
        self.count = 0;
        self.last_name = None;
        self.prev_name.clear();
        self.prev_ts = arrival;
        self.arrival = arrival;
    }

    pub fn push(&mut self, name: &str, ts: i64, value: f64) {
        if self.version == 1 {
            self.push_v1(name, ts, value);
        } else {
            self.push_v2(name, ts, value);
        }
        self.count += 1;
    }

    fn push_v1(&mut self, name: &str, ts: i64, value: f64) {
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
    }

    fn push_v2(&mut self, name: &str, ts: i64, value: f64) {
        let bytes = name.as_bytes();
        let mut shared = common_prefix(&self.prev_name, bytes);
        // both names are UTF-8 and share these bytes: a boundary of one is one of both
        while !name.is_char_boundary(shared) {
            shared -= 1;
        }
        put_varint(&mut self.buf, shared as u64);
        put_varint(&mut self.buf, (bytes.len() - shared) as u64);
        self.buf.extend_from_slice(&bytes[shared..]);
        self.prev_name.truncate(shared);
        self.prev_name.extend_from_slice(&bytes[shared..]);
        let (kind, m) = decimal(value);
        let head = (u128::from(zigzag(ts.wrapping_sub(self.prev_ts))) << 3) | u128::from(kind);
        put_varint128(&mut self.buf, head);
        self.prev_ts = ts;
        if kind == 0 {
            self.buf.extend_from_slice(&value.to_bits().to_le_bytes());
        } else {
            put_varint(&mut self.buf, zigzag(m));
        }
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
        let at = header_len(self.version) + varint_len(zigzag(self.arrival));
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

/// Bytes before the arrival time: the version, and version 3's flags.
fn header_len(version: u8) -> usize {
    if version == 3 {
        2
    } else {
        1
    }
}

/// Encodes a whole batch as one record of the current version, points in the batch's
/// order (tests, tools).
pub fn encode(batch: &Batch, arrival: i64) -> Vec<u8> {
    encode_version(batch, arrival, RECORD_VERSION)
}

/// Encodes a whole batch as one record of `version`, points in the batch's order.
pub fn encode_version(batch: &Batch, arrival: i64, version: u8) -> Vec<u8> {
    let mut w = RecordWriter::with_version(version, arrival);
    for (name, p) in batch.iter() {
        w.push(name, p.ts, p.value);
    }
    w.finish().to_vec()
}

/// Encodes a whole batch as one record carrying `flags` ([`FLAG_GRAPH`]: version 3),
/// points in the batch's order.
pub fn encode_flagged(batch: &Batch, arrival: i64, flags: u8) -> Vec<u8> {
    let mut w = RecordWriter::with_flags(RECORD_VERSION, flags, arrival);
    for (name, p) in batch.iter() {
        w.push(name, p.ts, p.value);
    }
    w.finish().to_vec()
}

/// A delete marker of the series matching `globs` (see the header), taken at `arrival`.
pub fn delete_marker(globs: &[String], arrival: i64) -> Vec<u8> {
    let mut w = RecordWriter::with_flags(3, FLAG_DELETE, arrival);
    for g in globs.iter().filter(|g| !g.is_empty()) {
        w.push(g, arrival, 0.0);
    }
    w.into_record()
}

/// Whether a record is a delete marker, read from its header only.
pub fn is_delete_marker(bytes: &[u8]) -> bool {
    bytes.first() == Some(&3) && bytes.get(1).is_some_and(|f| f & FLAG_DELETE != 0)
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
    #[error("point {point}: shares {shared} bytes with a previous name of {prev} bytes, or cuts a character")]
    Prefix {
        point: u32,
        shared: u64,
        prev: usize,
    },
    #[error("point {0}: empty name")]
    EmptyName(u32),
    #[error("point {0}: timestamp header over 67 bits")]
    TimestampTooLong(u32),
    #[error("{0} bytes after the last point")]
    Trailing(usize),
    #[error("unknown record flags {0:#04x}")]
    Flags(u8),
}

/// A decoded record: the ingest node's arrival time and the points, in order.
#[derive(Debug)]
pub struct Decoded {
    pub arrival: i64,
    pub points: u32,
    /// Version 3's flags ([`FLAG_GRAPH`]); 0 for the other versions.
    pub flags: u8,
}

/// The arrival time of a record, read from its header only (None when the header does
/// not read; [`decode_into`] then says why).
pub fn peek_arrival(bytes: &[u8]) -> Option<i64> {
    if !bytes.first().is_some_and(|v| RECORD_VERSIONS.contains(v)) {
        return None;
    }
    let mut r = Reader {
        bytes,
        at: header_len(bytes[0]),
    };
    r.varint().ok().map(unzigzag)
}

/// Decodes one record (either version), appending its points to `batch` (not
/// cleared). On error the batch keeps only what it held before.
pub fn decode_into(bytes: &[u8], batch: &mut Batch) -> Result<Decoded, RecordError> {
    let before = batch.len();
    decode_inner(bytes, batch).inspect_err(|_| batch.truncate(before))
}

fn decode_inner(bytes: &[u8], batch: &mut Batch) -> Result<Decoded, RecordError> {
    let mut r = Reader { bytes, at: 0 };
    let version = *bytes.first().ok_or(RecordError::Empty)?;
    if !RECORD_VERSIONS.contains(&version) {
        return Err(RecordError::Version(version));
    }
    r.at = 1;
    let flags = if version == 3 {
        let f = r.take(1)?[0];
        if f & !KNOWN_FLAGS != 0 {
            return Err(RecordError::Flags(f));
        }
        f
    } else {
        0
    };
    let arrival = unzigzag(r.varint()?);
    let count = r.varint()?;
    // the smallest point is 10 bytes in version 1 (name_len, ts, value) and 4 in
    // version 2 (shared, suffix_len, ts header, a one-byte decimal)
    let smallest = if version == 1 { 10 } else { 4 };
    let left = bytes.len() - r.at;
    if count > u64::from(u32::MAX) || count > (left / smallest) as u64 {
        return Err(RecordError::Count { count, bytes: left });
    }
    let count = count as u32;
    if version == 1 {
        decode_v1(&mut r, arrival, count, batch)?;
    } else {
        decode_v2(&mut r, arrival, count, batch)?;
    }
    if r.at != bytes.len() {
        return Err(RecordError::Trailing(bytes.len() - r.at));
    }
    Ok(Decoded {
        arrival,
        points: count,
        flags,
    })
}

fn decode_v1(
    r: &mut Reader<'_>,
    arrival: i64,
    count: u32,
    batch: &mut Batch,
) -> Result<(), RecordError> {
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
    Ok(())
}

fn decode_v2(
    r: &mut Reader<'_>,
    arrival: i64,
    count: u32,
    batch: &mut Batch,
) -> Result<(), RecordError> {
    let mut name = String::with_capacity(64);
    let mut ts = arrival;
    for i in 0..count {
        let shared = r.varint()?;
        let prefix_ok = usize::try_from(shared)
            .ok()
            .filter(|&s| s <= name.len() && name.is_char_boundary(s));
        let Some(shared) = prefix_ok else {
            return Err(RecordError::Prefix {
                point: i,
                shared,
                prev: name.len(),
            });
        };
        let len = r.varint()?;
        let len = usize::try_from(len).map_err(|_| RecordError::Truncated(r.at))?;
        // the prefix ends on a character boundary, so prefix + UTF-8 suffix is UTF-8
        let suffix = utf8(r.take(len)?).ok_or(RecordError::NameNotUtf8(i))?;
        // after the record's first point the batch's last point is the one before, so
        // whether the name repeats is known without comparing names
        let repeat = i > 0 && suffix.is_empty() && shared == name.len();
        name.truncate(shared);
        name.push_str(suffix);
        if name.is_empty() {
            return Err(RecordError::EmptyName(i));
        }
        let head = r.varint128()?;
        if head >> 67 != 0 {
            return Err(RecordError::TimestampTooLong(i));
        }
        ts = ts.wrapping_add(unzigzag((head >> 3) as u64));
        let kind = (head & 7) as usize;
        let value = if kind == 0 {
            let v = r.take(8)?;
            f64::from_bits(u64::from_le_bytes(v.try_into().unwrap_or([0; 8])))
        } else {
            let m = unzigzag(r.varint()?) as f64;
            if kind == 1 {
                m
            } else {
                m / POW10[kind - 1]
            }
        };
        if i == 0 {
            batch.push(&name, ts, value);
        } else if !repeat || !batch.push_repeat(ts, value) {
            batch.push_distinct(&name, ts, value);
        }
    }
    Ok(())
}

/// `bytes` as UTF-8, checked; names are nearly always ASCII, which is checked in a few
/// word-wide steps where `std::str::from_utf8`'s call and setup cost more than the
/// check on a suffix of a few bytes (docs/cluster.md, "Decoding").
#[inline]
fn utf8(bytes: &[u8]) -> Option<&str> {
    if bytes.is_ascii() {
        // SAFETY: ASCII bytes are UTF-8
        Some(unsafe { std::str::from_utf8_unchecked(bytes) })
    } else {
        std::str::from_utf8(bytes).ok()
    }
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

    /// A varint of up to 10 bytes; bits past the 64th are dropped, as they always were.
    #[inline]
    fn varint(&mut self) -> Result<u64, RecordError> {
        // most are one byte (name lengths, small steps and mantissas)
        if let Some(&b) = self.bytes.get(self.at) {
            if b < 0x80 {
                self.at += 1;
                return Ok(u64::from(b));
            }
        }
        self.varint_long().map(|v| v as u64)
    }

    /// A varint of up to 10 bytes (70 bits) into a u128.
    #[inline]
    fn varint128(&mut self) -> Result<u128, RecordError> {
        if let Some(&b) = self.bytes.get(self.at) {
            if b < 0x80 {
                self.at += 1;
                return Ok(u128::from(b));
            }
        }
        self.varint_long()
    }

    /// [`varint128`](Self::varint128) of any length: nine bytes (63 bits) gathered in
    /// a u64, the tenth's seven bits above them.
    #[inline(never)]
    fn varint_long(&mut self) -> Result<u128, RecordError> {
        let start = self.at;
        let mut v: u64 = 0;
        for i in 0..9 {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or(RecordError::Truncated(self.at))?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(u128::from(v));
            }
        }
        let b = *self
            .bytes
            .get(self.at)
            .ok_or(RecordError::Truncated(self.at))?;
        self.at += 1;
        if b & 0x80 == 0 {
            return Ok(u128::from(v) | (u128::from(b) << 63));
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

fn put_varint128(out: &mut Vec<u8>, mut v: u128) {
    // a point's head is mostly its kind alone (the timestamp of the one before)
    if v < 0x80 {
        out.push(v as u8);
        return;
    }
    if let Ok(v) = u64::try_from(v) {
        put_varint(out, v);
        return;
    }
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
        let bytes = encode_version(&b, 105, 1);
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
        // (version 3 is known since the GrowthForecast flag; 4 is not)
        assert_eq!(
            decode_into(&[4], &mut b).unwrap_err(),
            RecordError::Version(4)
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

    #[test]
    fn v2_front_codes_names_and_shortens_values() {
        let mut b = Batch::new();
        b.push("a.b.c", 100, 12.34);
        b.push("a.b.d", 100, 7.0);
        b.push("a.b.d", 110, f64::NAN);
        b.push("x", 90, -0.0);
        let bytes = encode(&b, 100);
        assert_eq!(bytes[0], 2);
        let mut out = Batch::new();
        decode_into(&bytes, &mut out).unwrap();
        assert_eq!(points(&out), points(&b));
        let point = |shared: u8, suffix: &[u8], head: &[u8], value: &[u8]| {
            let mut p = vec![shared, suffix.len() as u8];
            p.extend_from_slice(suffix);
            p.extend_from_slice(head);
            p.extend_from_slice(value);
            p
        };
        let mut want = vec![2, 200, 1, 0x84, 0x80, 0x80, 0x80, 0x00];
        // 12.34 = 1234 / 10^2: kind 3, zigzag(1234) = 2468 = [0xa4, 0x13]
        want.extend(point(0, b"a.b.c", &[3], &[0xa4, 0x13]));
        // 7 = 7 / 10^0: kind 1, zigzag 14
        want.extend(point(4, b"d", &[1], &[14]));
        // the same name, ts + 10 (zigzag 20 << 3 = 160: two bytes), NaN raw
        want.extend(point(
            5,
            b"",
            &[0xa0, 0x01],
            &f64::NAN.to_bits().to_le_bytes(),
        ));
        // ts - 20: zigzag 39 << 3 = 312; -0.0 raw (a decimal would lose the sign)
        want.extend(point(
            0,
            b"x",
            &[0xb8, 0x02],
            &(-0.0f64).to_bits().to_le_bytes(),
        ));
        assert_eq!(bytes, want);
    }

    #[test]
    fn decimals_give_back_the_same_bits() {
        for v in [
            0.0,
            1.0,
            -1.0,
            0.1,
            0.2,
            0.3,
            12.34,
            99.99,
            -5.5,
            1e6,
            8e9,
            123456.789,
            0.000001,
            4503599627370495.5,
            9007199254740991.0,
            9007199254740992.0,
            1e300,
            f64::MIN_POSITIVE,
            1.0 / 3.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let (kind, m) = decimal(v);
            if kind > 0 {
                let back = m as f64 / POW10[usize::from(kind) - 1];
                assert_eq!(back.to_bits(), v.to_bits(), "{v}");
            }
        }
        assert_eq!(decimal(12.34), (3, 1234));
        assert_eq!(decimal(8e9), (1, 8_000_000_000));
        assert_eq!(decimal(0.1), (2, 1));
        assert_eq!(decimal(1.0 / 3.0).0, 0);
        assert_eq!(decimal(9007199254740992.0).0, 0);
        assert_eq!(decimal(-0.0).0, 0);
    }

    /// What `decimal` was before it rounded by hand: `f64::round`.
    fn decimal_by_round(v: f64) -> (u8, i64) {
        if !v.is_finite() || v.abs() >= EXACT_INT || (v == 0.0 && v.is_sign_negative()) {
            return (0, 0);
        }
        for (k, &p) in POW10.iter().enumerate() {
            let m = (v * p).round();
            if m.abs() >= EXACT_INT {
                break;
            }
            if (m / p).to_bits() == v.to_bits() {
                return (k as u8 + 1, m as i64);
            }
        }
        (0, 0)
    }

    #[test]
    fn decimals_are_found_as_f64_round_found_them() {
        // integers near 2^52 and 2^53, where adding 0.5 would round
        for v in [
            4503599627370495.0,
            4503599627370496.0,
            4503599627370497.0,
            -4503599627370497.0,
            9007199254740991.0,
            0.5,
            -0.5,
            2.5,
            0.49999999999999994,
        ] {
            assert_eq!(decimal(v), decimal_by_round(v), "{v}");
        }
    }

    proptest::proptest! {
        #[test]
        fn decimals_match_f64_round(m in proptest::num::i64::ANY, k in 0u32..9, bits in proptest::num::u64::ANY) {
            // short decimals as agents print them, and any f64 at all
            let v = (m >> (k * 5)) as f64 / 10f64.powi(k as i32);
            proptest::prop_assert_eq!(decimal(v), decimal_by_round(v));
            let w = f64::from_bits(bits);
            proptest::prop_assert_eq!(decimal(w), decimal_by_round(w));
        }
    }

    #[test]
    fn v2_repeated_names_decode_as_pushed() {
        let mut b = Batch::new();
        for (name, ts) in [
            ("a.b", 1),
            ("a.b", 2),
            ("a.c", 3),
            ("a", 4),
            ("a.b", 5),
            ("a.b", 6),
        ] {
            b.push(name, ts, ts as f64 / 10.0);
        }
        let bytes = encode(&b, 1);
        // after a batch that ends on the record's first name: that name compared
        let mut out = Batch::new();
        out.push("a.b", 0, 0.0);
        decode_into(&bytes, &mut out).unwrap();
        let mut want = Batch::new();
        want.push("a.b", 0, 0.0);
        for (n, p) in b.iter() {
            want.push(n, p.ts, p.value);
        }
        assert_eq!(points(&out), points(&want));
        assert_eq!(out.byte_size(), want.byte_size());
    }

    #[test]
    fn v2_shares_whole_characters_only() {
        let mut b = Batch::new();
        // \u{e9} and \u{e8} share their first UTF-8 byte (0xc3)
        b.push("a\u{e9}", 1, 1.0);
        b.push("a\u{e8}", 1, 1.0);
        let bytes = encode(&b, 1);
        let mut out = Batch::new();
        decode_into(&bytes, &mut out).unwrap();
        assert_eq!(points(&out), points(&b));
        // the second point shares "a" only
        assert_eq!(&bytes[14..], &[1, 2, 0xc3, 0xa8, 1, 2]);
    }

    #[test]
    fn bad_v2_records_are_errors() {
        let mut b = Batch::new();
        b.push("keep", 1, 1.0);
        let head = |count: u8| vec![2, 0, count];
        // a first point sharing a byte of no previous name
        let mut bytes = head(1);
        bytes.extend_from_slice(&[1, 1, b'a', 1, 0]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::Prefix {
                point: 0,
                shared: 1,
                prev: 0
            }
        );
        // sharing half of a character
        let mut bytes = head(2);
        bytes.extend_from_slice(&[0, 2, 0xc3, 0xa9, 1, 0, 1, 1, b'x', 1, 0]);
        assert!(matches!(
            decode_into(&bytes, &mut b),
            Err(RecordError::Prefix { point: 1, .. })
        ));
        // an empty name
        let mut bytes = head(1);
        bytes.extend_from_slice(&[0, 0, 1, 0]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::EmptyName(0)
        );
        // a suffix that is not UTF-8
        let mut bytes = head(1);
        bytes.extend_from_slice(&[0, 1, 0xff, 1, 0]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::NameNotUtf8(0)
        );
        // a timestamp header of 70 bits
        let mut bytes = head(1);
        bytes.extend_from_slice(&[0, 1, b'a']);
        bytes.extend_from_slice(&[0xff; 9]);
        bytes.extend_from_slice(&[0x7f, 0]);
        assert_eq!(
            decode_into(&bytes, &mut b).unwrap_err(),
            RecordError::TimestampTooLong(0)
        );
        // a raw value cut short
        let mut bytes = head(1);
        bytes.extend_from_slice(&[0, 1, b'a', 0, 1, 2, 3]);
        assert!(matches!(
            decode_into(&bytes, &mut b),
            Err(RecordError::Truncated(_))
        ));
        // more points than 4 bytes each could hold
        let mut bytes = head(2);
        bytes.extend_from_slice(&[0, 1, b'a', 1, 0]);
        assert!(matches!(
            decode_into(&bytes, &mut b),
            Err(RecordError::Count { count: 2, .. })
        ));
        assert_eq!(points(&b), vec![("keep".to_string(), 1, 1f64.to_bits())]);
    }

    #[test]
    fn v2_is_under_half_of_v1_on_agent_like_names() {
        // names and values as a collectd-like agent sends them, sorted (the order
        // that shares the most; the producer keeps the order it was sent)
        let mut b = Batch::new();
        let mut names = Vec::new();
        for host in 0..40 {
            for m in [
                "cpu.user",
                "cpu.system",
                "memory.used",
                "disk.sda.reads",
                "tcp.listen",
            ] {
                names.push(format!("bench.host{host:05}.{m}"));
            }
        }
        names.sort();
        for (i, n) in names.iter().enumerate() {
            let v = if i % 2 == 0 {
                (i as f64) * 1.25
            } else {
                8e9 + i as f64
            };
            b.push(n, 1_700_000_000, v);
        }
        let v1 = encode_version(&b, 1_700_000_000, 1).len();
        let v2 = encode_version(&b, 1_700_000_000, 2).len();
        assert!(v2 * 2 < v1, "v1 {v1} bytes, v2 {v2} bytes");
        let mut out = Batch::new();
        decode_into(&encode(&b, 1_700_000_000), &mut out).unwrap();
        assert_eq!(points(&out), points(&b));
    }

    #[test]
    fn version_3_carries_the_graph_flag_and_version_2_s_points() {
        let mut b = Batch::new();
        b.push("svc.sec.graph", 1_700_000_000, 12.5);
        b.push("svc.sec.graph2", 1_700_000_060, 3.0);
        let v3 = encode_flagged(&b, 1_700_000_003, FLAG_GRAPH);
        let v2 = encode(&b, 1_700_000_003);
        assert_eq!(v3[0], 3);
        assert_eq!(v3[1], FLAG_GRAPH);
        // the rest is version 2's record, byte for byte
        assert_eq!(&v3[2..], &v2[1..]);
        let mut out = Batch::new();
        let d = decode_into(&v3, &mut out).unwrap();
        assert_eq!(
            (d.arrival, d.points, d.flags),
            (1_700_000_003, 2, FLAG_GRAPH)
        );
        assert_eq!(points(&out), points(&b));
        assert_eq!(peek_arrival(&v3), Some(1_700_000_003));
        let d2 = decode_into(&v2, &mut Batch::new()).unwrap();
        assert_eq!(d2.flags, 0);
        // no flag: the writer keeps the version it was given
        assert_eq!(encode_flagged(&b, 5, 0)[0], RECORD_VERSION);
        // unknown flags are refused, the batch untouched
        let mut bad = v3.clone();
        bad[1] = 0x82;
        let mut out = Batch::new();
        out.push("x", 1, 1.0);
        assert_eq!(
            decode_into(&bad, &mut out).unwrap_err(),
            RecordError::Flags(0x82)
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            decode_into(&[3], &mut out).unwrap_err(),
            RecordError::Truncated(1)
        );
    }

    #[test]
    fn a_delete_marker_carries_its_globs_and_an_old_reader_refuses_it() {
        let globs = vec!["del.**".to_string(), "cpu;host=a".to_string()];
        let m = delete_marker(&globs, 1_700_000_000);
        assert!(is_delete_marker(&m));
        assert_eq!(&m[..2], &[3, FLAG_DELETE]);
        let mut out = Batch::new();
        let d = decode_into(&m, &mut out).unwrap();
        assert_eq!((d.flags, d.points), (FLAG_DELETE, 2));
        let names: Vec<&str> = out.iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["del.**", "cpu;host=a"]);
        let mut b = Batch::new();
        b.push("x", 1, 1.0);
        assert!(!is_delete_marker(&encode_flagged(&b, 1, FLAG_GRAPH)));
        assert!(!is_delete_marker(&encode(&b, 1)));
        // the release before the flag knew only FLAG_GRAPH: it refuses the marker
        // (a counted, logged skip), storing nothing
        let old_known = FLAG_GRAPH;
        assert_ne!(m[1] & !old_known, 0);
    }

    proptest! {
        /// The partition hash continued from a shared prefix is FNV-1a of the whole
        /// name, whatever came before (names drawn from few letters share prefixes of
        /// every length; multi-byte characters too).
        #[test]
        fn prefix_fnv_is_fnv1a(names in proptest::collection::vec("[ab.é]{0,20}", 0..60)) {
            let mut h = PrefixFnv::new();
            for n in &names {
                proptest::prop_assert_eq!(h.hash(n.as_bytes()), fnv1a64(n.as_bytes()));
                proptest::prop_assert_eq!(h.partition(n, 6), partition_for(n, 6));
            }
        }

        #[test]
        fn common_prefix_counts_the_shared_bytes(
            a in proptest::collection::vec(0u8..3, 0..40),
            b in proptest::collection::vec(0u8..3, 0..40),
        ) {
            let slow = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
            proptest::prop_assert_eq!(common_prefix(&a, &b), slow);
            let same: Vec<u8> = a.iter().chain(&b).copied().collect();
            proptest::prop_assert_eq!(common_prefix(&same, &a), a.len());
        }

        #[test]
        fn any_batch_roundtrips(
            pts in proptest::collection::vec(("[a-z.]{1,12}", any::<i64>(), any::<u64>()), 0..40),
            arrival in any::<i64>(),
        ) {
            let mut b = Batch::new();
            for (n, ts, v) in &pts {
                b.push(n, *ts, f64::from_bits(*v));
            }
            for version in RECORD_VERSIONS {
                let bytes = encode_version(&b, arrival, version);
                prop_assert_eq!(bytes[0], version);
                let mut out = Batch::new();
                let d = decode_into(&bytes, &mut out).unwrap();
                prop_assert_eq!(d.arrival, arrival);
                prop_assert_eq!(peek_arrival(&bytes), Some(arrival));
                prop_assert_eq!(points(&out), points(&b));
            }
        }

        #[test]
        fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut b = Batch::new();
            let _ = decode_into(&bytes, &mut b);
        }
    }

    /// Decoding cost of a record as `sumi bench` fills one (a host's metrics in turn,
    /// integer-like and decimal values). A timing, not a check:
    /// `CARGO_PROFILE_DEV_OPT_LEVEL=3 cargo test -p sumi-cluster --lib decode_cost --
    /// --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check: see the doc lines above"]
    fn decode_cost() {
        let metrics = [
            "cpu.user",
            "cpu.system",
            "cpu.idle",
            "mem.used",
            "mem.free",
            "disk.sda.reads",
            "disk.sda.writes",
            "net.eth0.rx_bytes",
            "net.eth0.tx_bytes",
            "load.1m",
        ];
        let mut b = Batch::new();
        for host in 0..700u64 {
            for (k, m) in metrics.iter().enumerate() {
                // counters and gauges (large integers), percentages (2 decimals), small counts
                let v = match k % 4 {
                    0 => (host * 7_919_993 + k as u64 * 1_000_003) as f64,
                    1 => (host % 100) as f64 + 0.25 * (k % 4) as f64 + 0.01,
                    2 => (host % 300) as f64,
                    _ => 8e9 + (host * 4093) as f64,
                };
                b.push(
                    &format!("bench.dc{}.host{host:05}.{m}", host % 4),
                    1_700_000_000,
                    v,
                );
            }
        }
        let bytes = encode_version(&b, 1_700_000_000, RECORD_VERSION);
        let cpu_ns = || -> u64 {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        let mut out = Batch::new();
        for round in 0..5 {
            let t = cpu_ns();
            let reps = 300;
            for _ in 0..reps {
                out.clear();
                decode_into(std::hint::black_box(&bytes), &mut out).unwrap();
            }
            let ns = (cpu_ns() - t) as f64 / (reps * b.len()) as f64;
            println!(
                "round {round}: decode {ns:.1} ns/point, {:.2} B/point",
                bytes.len() as f64 / b.len() as f64
            );
        }
        assert_eq!(points(&out), points(&b));
    }
}
