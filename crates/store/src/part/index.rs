//! A part's index: entries (series, block length, point count, block CRC, first and
//! last slot) varint-encoded in chunks of 64, then a directory with one fixed 24-byte
//! descriptor a chunk. A lookup binary-searches the directory and decodes one chunk;
//! about 10 bytes an entry instead of 40, which matters at a million series a part.
//! Block offsets are not stored per entry: blocks are contiguous in series order, so a
//! chunk stores its first block's offset and entries add up their lengths.

use super::format::Entry;

/// Entries a chunk.
pub(crate) const CHUNK: usize = 64;
/// Bytes of a directory descriptor.
pub(crate) const DIR_LEN: usize = 24;

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

/// One chunk descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DirEntry {
    pub(crate) first_series: u32,
    pub(crate) count: u32,
    /// Offset of the chunk's bytes from the start of the index.
    pub(crate) chunk_rel: u64,
    /// File offset of the chunk's first block.
    pub(crate) block_offset: u64,
}

impl DirEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.first_series.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.chunk_rel.to_le_bytes());
        out.extend_from_slice(&self.block_offset.to_le_bytes());
    }

    pub(crate) fn decode(b: &[u8]) -> Option<DirEntry> {
        let b: &[u8; DIR_LEN] = b.get(..DIR_LEN)?.try_into().ok()?;
        let u32_at = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        Some(DirEntry {
            first_series: u32_at(0),
            count: u32_at(4),
            chunk_rel: u64_at(8),
            block_offset: u64_at(16),
        })
    }
}

/// Blocks of at least this many bytes keep a CRC of their own in a version-4 index
/// (4 bytes is then at most 1.6 % of the block, and reading one long block stays a
/// check of that block alone); shorter ones are covered by their chunk's CRC.
pub(crate) const OWN_CRC_MIN: u32 = 256;

/// What an index's encoding depends on: the part's version, partition start and step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IndexFormat {
    /// Version 4: a CRC a chunk, slots in steps (else versions 2 and 3).
    pub(crate) v4: bool,
    pub(crate) partition: i64,
    pub(crate) step: i64,
}

/// Builds the index as blocks are written (entries in series order, blocks contiguous).
pub(crate) struct IndexBuilder {
    fmt: IndexFormat,
    chunks: Vec<u8>,
    dir: Vec<u8>,
    current: Option<DirEntry>,
    prev_series: u32,
    /// Version 4: the entries of the open chunk, written after its CRC when it closes.
    pending: Vec<u8>,
    /// Version 4: CRC of the open chunk's blocks that have no CRC of their own.
    chunk_crc: u32,
    prev_first: i64,
}

impl IndexBuilder {
    pub(crate) fn new(fmt: IndexFormat) -> IndexBuilder {
        IndexBuilder {
            fmt,
            chunks: Vec::new(),
            dir: Vec::new(),
            current: None,
            prev_series: 0,
            pending: Vec::new(),
            chunk_crc: 0,
            prev_first: fmt.partition,
        }
    }

    fn close_chunk(&mut self) {
        if let Some(c) = self.current.take() {
            c.encode(&mut self.dir);
            if self.fmt.v4 {
                self.chunks.extend_from_slice(&self.chunk_crc.to_le_bytes());
                self.chunks.append(&mut self.pending);
            }
        }
    }

    /// Adds the entry of the next block; `e.crc` is the block's CRC32C. With `block`
    /// (its bytes), a short block's CRC is taken from them (version 4 needs only the
    /// chunk's, and appending bytes is cheaper than combining CRCs).
    pub(crate) fn push(&mut self, e: &Entry, block: Option<&[u8]>) {
        let full = self.current.is_some_and(|c| c.count as usize >= CHUNK);
        if full {
            self.close_chunk();
        }
        let v4 = self.fmt.v4;
        let chunk_start = (self.chunks.len() + self.pending.len()) as u64;
        let c = self.current.get_or_insert(DirEntry {
            first_series: e.series,
            count: 0,
            chunk_rel: chunk_start,
            block_offset: e.offset,
        });
        let delta = if c.count == 0 {
            0
        } else {
            e.series.wrapping_sub(self.prev_series)
        };
        let first_in_chunk = c.count == 0;
        c.count += 1;
        self.prev_series = e.series;
        if !v4 {
            let out = &mut self.chunks;
            put_varint(out, u64::from(delta));
            put_varint(out, u64::from(e.len));
            put_varint(out, u64::from(e.count));
            out.extend_from_slice(&e.crc.to_le_bytes());
            put_varint(out, zigzag(e.first_slot.wrapping_sub(self.fmt.partition)));
            put_varint(out, e.last_slot.wrapping_sub(e.first_slot) as u64);
            return;
        }
        if first_in_chunk {
            self.chunk_crc = 0;
            self.prev_first = self.fmt.partition;
        }
        let out = &mut self.pending;
        put_varint(out, u64::from(delta));
        put_varint(out, u64::from(e.len));
        put_varint(out, u64::from(e.count));
        if e.len >= OWN_CRC_MIN {
            out.extend_from_slice(&e.crc.to_le_bytes());
        } else {
            self.chunk_crc = match block {
                Some(b) => crc32c::crc32c_append(self.chunk_crc, b),
                None => crc32c::crc32c_combine(self.chunk_crc, e.crc, e.len as usize),
            };
        }
        put_slot_delta(
            out,
            e.first_slot.wrapping_sub(self.prev_first),
            self.fmt.step,
        );
        put_span(
            out,
            e.last_slot.wrapping_sub(e.first_slot) as u64,
            self.fmt.step,
        );
        self.prev_first = e.first_slot;
    }

    /// The index bytes: chunks, then the directory.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.close_chunk();
        let mut out = self.chunks;
        out.extend_from_slice(&self.dir);
        out
    }
}

/// A slot difference in steps when it is a whole number of them (`zigzag(d / step) << 1`,
/// one byte within 63 steps), else `1` and then `zigzag(d)` (any `i64`).
fn put_slot_delta(out: &mut Vec<u8>, d: i64, step: i64) {
    if step > 0 && d % step == 0 {
        let z = zigzag(d / step);
        if z < 1 << 63 {
            put_varint(out, z << 1);
            return;
        }
    }
    put_varint(out, 1);
    put_varint(out, zigzag(d));
}

/// A span (last slot - first slot, >= 0) in steps when it is a whole number of them
/// (`(span / step) << 1`), else `1` and then the span.
fn put_span(out: &mut Vec<u8>, span: u64, step: i64) {
    if let Ok(st) = u64::try_from(step) {
        if st > 0 && span.is_multiple_of(st) && span / st < 1 << 63 {
            put_varint(out, (span / st) << 1);
            return;
        }
    }
    put_varint(out, 1);
    put_varint(out, span);
}

struct Rd<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Rd<'_> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for i in 0..10 {
            let byte = *self
                .b
                .get(self.pos)
                .ok_or("index chunk ends inside an entry")?;
            self.pos += 1;
            v |= u64::from(byte & 0x7f) << (7 * i);
            if byte < 0x80 {
                return Ok(v);
            }
        }
        Err("index varint longer than 10 bytes".into())
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self
            .b
            .get(self.pos..self.pos + 4)
            .ok_or("index chunk ends inside an entry")?;
        self.pos += 4;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// What [`put_slot_delta`] wrote.
    fn slot_delta(&mut self, step: i64) -> Result<i64, String> {
        match self.varint()? {
            1 => Ok(unzigzag(self.varint()?)),
            v if v & 1 == 0 => Ok(unzigzag(v >> 1).wrapping_mul(step)),
            v => Err(format!("invalid slot encoding {v} in the index")),
        }
    }

    /// What [`put_span`] wrote.
    fn span(&mut self, step: i64) -> Result<u64, String> {
        match self.varint()? {
            1 => self.varint(),
            v if v & 1 == 0 => u64::try_from(step)
                .ok()
                .and_then(|st| (v >> 1).checked_mul(st))
                .ok_or_else(|| "slot span out of range".to_string()),
            v => Err(format!("invalid span encoding {v} in the index")),
        }
    }
}

/// Decodes the entries of chunk number `chunk` (`bytes` starts at the chunk and may run
/// past its end), calling `f` for each until it returns false. Returns the chunk's length
/// in bytes when every entry was decoded.
pub(crate) fn decode_chunk(
    bytes: &[u8],
    d: &DirEntry,
    fmt: IndexFormat,
    chunk: u32,
    mut f: impl FnMut(Entry) -> bool,
) -> Result<usize, String> {
    let mut r = Rd { b: bytes, pos: 0 };
    let chunk_crc = if fmt.v4 { r.u32()? } else { 0 };
    let mut series = d.first_series;
    let mut offset = d.block_offset;
    let mut prev_first = fmt.partition;
    for i in 0..d.count {
        let delta = r.varint()?;
        if i > 0 && delta == 0 {
            return Err(format!("index not sorted after series {series}"));
        }
        series = u32::try_from(u64::from(series) + delta)
            .map_err(|_| "series id out of range".to_string())?;
        let len =
            u32::try_from(r.varint()?).map_err(|_| "block length out of range".to_string())?;
        let count =
            u32::try_from(r.varint()?).map_err(|_| "point count out of range".to_string())?;
        let (crc, own_crc, first_slot, span) = if fmt.v4 {
            let (crc, own) = if len >= OWN_CRC_MIN {
                (r.u32()?, true)
            } else {
                (chunk_crc, false)
            };
            let first = prev_first.wrapping_add(r.slot_delta(fmt.step)?);
            prev_first = first;
            (crc, own, first, r.span(fmt.step)?)
        } else {
            let crc = r.u32()?;
            let first = fmt.partition.wrapping_add(unzigzag(r.varint()?));
            (crc, true, first, r.varint()?)
        };
        let last_slot = i64::try_from(span)
            .ok()
            .and_then(|s| first_slot.checked_add(s))
            .ok_or_else(|| "slot span out of range".to_string())?;
        let e = Entry {
            series,
            count,
            offset,
            len,
            crc,
            own_crc,
            chunk,
            first_slot,
            last_slot,
        };
        offset = offset
            .checked_add(u64::from(len))
            .ok_or("block offset overflows")?;
        if !f(e) {
            return Ok(r.pos);
        }
    }
    Ok(r.pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(n: u32) -> Vec<Entry> {
        let mut off = 64;
        (0..n)
            .map(|i| {
                // some long blocks (own CRC), some slots off the step and far away
                let len = if i % 9 == 4 { 300 + i } else { 10 + i % 50 };
                let odd = if i % 13 == 5 { 3 } else { 0 };
                let far = if i % 31 == 7 { -(1i64 << 40) } else { 0 };
                let first = 3600 + i64::from(i % 10) * 10 + odd + far;
                let e = Entry {
                    series: i * 8 + (i % 7),
                    count: i % 100 + 1,
                    offset: off,
                    len,
                    crc: i.wrapping_mul(2_654_435_761),
                    own_crc: true,
                    chunk: i / CHUNK as u32,
                    first_slot: first,
                    last_slot: first + i64::from(i % 100) * 10 + i64::from(i % 17 == 3),
                };
                off += u64::from(e.len);
                e
            })
            .collect()
    }

    fn build(es: &[Entry], v4: bool) -> (Vec<u8>, Vec<Entry>) {
        let fmt = IndexFormat {
            v4,
            partition: 3600,
            step: 10,
        };
        let mut b = IndexBuilder::new(fmt);
        for e in es {
            b.push(e, None);
        }
        let bytes = b.finish();
        let n_chunks = es.len().div_ceil(CHUNK);
        let dir_at = bytes.len() - n_chunks * DIR_LEN;
        let mut got = Vec::new();
        for c in 0..n_chunks {
            let d = DirEntry::decode(&bytes[dir_at + c * DIR_LEN..]).unwrap();
            let used = decode_chunk(
                &bytes[d.chunk_rel as usize..dir_at],
                &d,
                fmt,
                c as u32,
                |e| {
                    got.push(e);
                    true
                },
            )
            .unwrap();
            assert!(used > 0);
        }
        (bytes, got)
    }

    #[test]
    fn round_trip_and_size() {
        let es = entries(1000);
        let (v3, got) = build(&es, false);
        assert!(
            v3.len() < 1000 * 14,
            "about 10 bytes an entry: {}",
            v3.len()
        );
        assert_eq!(got, es);
        let (v4, got) = build(&es, true);
        assert!(
            v4.len() < v3.len() - 1000 * 3,
            "{} vs {}",
            v4.len(),
            v3.len()
        );
        assert_eq!(got.len(), es.len());
        for chunk in es.chunks(CHUNK) {
            // a short block's entry carries its chunk's CRC: that of its short blocks
            let mut crc = 0;
            for e in chunk.iter().filter(|e| e.len < OWN_CRC_MIN) {
                crc = crc32c::crc32c_combine(crc, e.crc, e.len as usize);
            }
            for e in chunk {
                let g = got[es.iter().position(|x| x == e).unwrap()];
                let own = e.len >= OWN_CRC_MIN;
                let want = Entry {
                    own_crc: own,
                    crc: if own { e.crc } else { crc },
                    ..*e
                };
                assert_eq!(g, want);
            }
        }
    }

    #[test]
    fn same_start_costs_one_byte_of_slots() {
        // a million short series that all start at one slot: 4 bytes an entry plus the
        // chunk CRC, against 10 in version 3
        let es: Vec<Entry> = (0..640u32)
            .map(|i| Entry {
                series: i,
                count: 10,
                offset: 64 + u64::from(i) * 30,
                len: 30,
                crc: i,
                own_crc: false,
                chunk: i / CHUNK as u32,
                first_slot: 3600 + 1230,
                last_slot: 3600 + 1230 + 90,
            })
            .collect();
        let (bytes, _) = build(&es, true);
        let per_entry = (bytes.len() - 10 * DIR_LEN) as f64 / 640.0;
        assert!(per_entry < 5.2, "{per_entry} bytes an entry");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let d = DirEntry {
            first_series: 5,
            count: 3,
            chunk_rel: 0,
            block_offset: 64,
        };
        for v4 in [false, true] {
            let fmt = IndexFormat {
                v4,
                partition: 0,
                step: 10,
            };
            for bytes in [
                &[][..],
                &[0x80; 20][..],
                &[0, 1, 1, 0, 0, 0, 0, 0, 0, 0][..],
                &[0, 0, 0, 0, 0, 1, 1, 3, 0][..],
            ] {
                assert!(decode_chunk(bytes, &d, fmt, 0, |_| true).is_err());
            }
        }
    }
}
