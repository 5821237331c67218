//! One shard's buffer of raw rows as appended, searchable at once, and the frozen
//! generations made of them.
//!
//! A row is 24 bytes: the series, a link to the series' previous row in this buffer,
//! the level and slot packed in one word, and the value. `last[series]` points at a
//! series' newest row, so a read walks only its own rows (newest first) and a point is
//! visible the moment `append` has applied it. A buffer is frozen (made immutable and
//! handed to the flusher) as a whole; it is never sorted in place.

use crate::series::MAX_LEVELS;

const NO_ROW: u32 = 0;

const SLOT_BIAS: i64 = 1 << 59;
const SLOT_MASK: u64 = (1u64 << 60) - 1;

/// Packs a level (4 bits) and a slot (60 bits, biased so that keys sort by level, then
/// slot) into one word. Slots are within `±2^56` (see `wal::record::SLOT_LIMIT`).
pub(crate) fn pack_key(level: u8, slot: i64) -> u64 {
    (u64::from(level & 0x0f) << 60) | ((slot.wrapping_add(SLOT_BIAS) as u64) & SLOT_MASK)
}

pub(crate) fn key_level(key: u64) -> u8 {
    (key >> 60) as u8
}

pub(crate) fn key_slot(key: u64) -> i64 {
    ((key & SLOT_MASK) as i64).wrapping_sub(SLOT_BIAS)
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Row {
    pub(crate) series: u32,
    /// Index + 1 of the series' previous row in this buffer, 0 for none.
    prev: u32,
    pub(crate) key: u64,
    pub(crate) value: f64,
}

/// One shard's rows.
pub(crate) struct HeadBuf {
    rows: Vec<Row>,
    /// By `series / shards`: index + 1 of the newest row.
    last: Vec<u32>,
    shards: u32,
    /// `[class][level]`: the smallest slot held, so retention knows what the head still
    /// holds without scanning.
    min_slot: Vec<[i64; MAX_LEVELS]>,
}

impl HeadBuf {
    pub(crate) fn new(shards: u32, series_hint: usize) -> HeadBuf {
        let per_shard = series_hint / shards.max(1) as usize + 1;
        HeadBuf {
            rows: Vec::new(),
            // zeroed memory comes from calloc: untouched pages cost nothing
            last: vec![NO_ROW; per_shard],
            shards: shards.max(1),
            min_slot: Vec::new(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Bytes held by rows and links.
    pub(crate) fn bytes(&self) -> usize {
        self.rows.capacity() * std::mem::size_of::<Row>() + self.last.capacity() * 4
    }

    pub(crate) fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Appends a row. Rows beyond `u32::MAX - 1` per buffer are impossible in practice
    /// (the flusher freezes long before); they would only lose the read link.
    pub(crate) fn push(&mut self, series: u32, class: u16, level: u8, slot: i64, value: f64) {
        let local = (series / self.shards) as usize;
        if local >= self.last.len() {
            let want = (local + 1).max(self.last.len() * 2);
            self.last.resize(want, NO_ROW);
        }
        let idx = self.rows.len();
        let prev = self.last.get(local).copied().unwrap_or(NO_ROW);
        self.rows.push(Row {
            series,
            prev,
            key: pack_key(level, slot),
            value,
        });
        if let Some(l) = self.last.get_mut(local) {
            *l = u32::try_from(idx + 1).unwrap_or(NO_ROW);
        }
        let c = usize::from(class);
        if c >= self.min_slot.len() {
            self.min_slot.resize(c + 1, [i64::MAX; MAX_LEVELS]);
        }
        if let Some(m) = self
            .min_slot
            .get_mut(c)
            .and_then(|m| m.get_mut(usize::from(level)))
        {
            *m = (*m).min(slot);
        }
    }

    /// Starts loading `series`' link to its newest row, which [`push`](Self::push)
    /// reads and writes (see [`crate::prefetch`]).
    #[inline]
    pub(crate) fn prefetch(&self, series: u32) {
        crate::prefetch::prefetch_at(&self.last, (series / self.shards) as usize);
    }

    /// Appends the `(key, value)` rows of `series`, newest first.
    pub(crate) fn rows_of(&self, series: u32, out: &mut Vec<(u64, f64)>) {
        let local = (series / self.shards) as usize;
        let mut at = self.last.get(local).copied().unwrap_or(NO_ROW);
        while at != NO_ROW {
            let Some(r) = self.rows.get(at as usize - 1) else {
                break;
            };
            if r.series == series {
                out.push((r.key, r.value));
            }
            at = r.prev;
        }
    }

    /// The smallest slot held at `(class, level)`, if any.
    pub(crate) fn min_slot(&self, class: u16, level: usize) -> Option<i64> {
        self.min_slot
            .get(usize::from(class))
            .and_then(|m| m.get(level))
            .copied()
            .filter(|&s| s != i64::MAX)
    }

    /// The capacity of the series links, to size the next buffer.
    pub(crate) fn series_capacity(&self) -> usize {
        self.last.len() * self.shards as usize
    }
}

/// A frozen set of shard buffers: immutable, readable, waiting to become parts.
pub(crate) struct FrozenGen {
    pub(crate) bufs: Vec<HeadBuf>,
    /// Once this generation is in parts, WAL replay can start at this segment.
    pub(crate) replay_from: u64,
    pub(crate) id: u64,
}

impl FrozenGen {
    pub(crate) fn rows(&self) -> usize {
        self.bufs.iter().map(HeadBuf::len).sum()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bufs.iter().map(HeadBuf::bytes).sum()
    }

    pub(crate) fn rows_of(&self, series: u32, out: &mut Vec<(u64, f64)>) {
        let n = self.bufs.len().max(1) as u32;
        if let Some(b) = self.bufs.get((series % n) as usize) {
            b.rows_of(series, out);
        }
    }

    pub(crate) fn min_slot(&self, class: u16, level: usize) -> Option<i64> {
        self.bufs
            .iter()
            .filter_map(|b| b.min_slot(class, level))
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_pack() {
        for (l, s) in [
            (0u8, 0i64),
            (3, -10),
            (15, 1 << 56),
            (7, -(1 << 56)),
            (1, 1_700_000_000),
        ] {
            let k = pack_key(l, s);
            assert_eq!((key_level(k), key_slot(k)), (l, s));
        }
        // keys sort by level, then slot, negative slots included
        assert!(pack_key(0, -10) < pack_key(0, 5));
        assert!(pack_key(0, 1 << 56) < pack_key(1, -(1 << 56)));
    }

    #[test]
    fn rows_by_series_newest_first() {
        let mut h = HeadBuf::new(2, 0);
        h.push(4, 0, 0, 10, 1.0);
        h.push(6, 0, 0, 10, 2.0);
        h.push(4, 0, 1, 60, 3.0);
        h.push(1000, 1, 0, 5, 4.0);
        let mut out = Vec::new();
        h.rows_of(4, &mut out);
        assert_eq!(out, vec![(pack_key(1, 60), 3.0), (pack_key(0, 10), 1.0)]);
        out.clear();
        h.rows_of(5, &mut out);
        assert!(out.is_empty());
        h.rows_of(1000, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(h.min_slot(0, 0), Some(10));
        assert_eq!(h.min_slot(0, 1), Some(60));
        assert_eq!(h.min_slot(1, 0), Some(5));
        assert_eq!(h.min_slot(2, 0), None);
    }
}
