//! Looking many series up in one part's index, in ascending id order: a merge-join
//! over the sorted index instead of one binary search and one chunk decode per series.
//!
//! [`Part::entry`](super::Part::entry) costs a directory search and the decoding of
//! up to 64 entries for every series; a bulk read of a million series asks each part
//! a million times. An [`IndexLookup`] keeps the chunk it decoded last: the next
//! series is usually in it or in the chunk after it, so each chunk is decoded once
//! and each lookup is a step forward. Asking for a lower id than the last one still
//! works (it searches again), only without the saving.

use super::format::Entry;
use super::index::{decode_chunk, DirEntry, DIR_LEN};
use super::Part;

/// A position in one part's index, for lookups in ascending series order.
#[derive(Debug, Default)]
pub(crate) struct IndexLookup {
    /// Index of the decoded chunk in the directory; `None` before the first lookup.
    chunk: Option<usize>,
    /// The decoded chunk's entries.
    entries: Vec<Entry>,
    /// First series of the chunk after the decoded one; `None` when the decoded
    /// chunk is the last.
    next_first: Option<u32>,
    /// Where the previous lookup ended in `entries`.
    pos: usize,
}

impl IndexLookup {
    /// The index entry of `series` in `part` (what `part.entry(series)` returns).
    pub(crate) fn entry(&mut self, part: &Part, series: u32) -> Option<Entry> {
        if !self.covers(series) {
            self.load(part, series)?;
        }
        // ascending lookups continue where the last one stopped
        if self.entries.get(self.pos).is_none_or(|e| e.series > series) {
            self.pos = 0;
        }
        while let Some(e) = self.entries.get(self.pos) {
            if e.series >= series {
                return (e.series == series).then_some(*e);
            }
            self.pos += 1;
        }
        None
    }

    /// Whether the decoded chunk is the one that would hold `series`.
    fn covers(&self, series: u32) -> bool {
        let Some(first) = self.entries.first() else {
            return false;
        };
        series >= first.series && self.next_first.is_none_or(|n| series < n)
    }

    /// Decodes the chunk that would hold `series`: the next chunk when it is the one
    /// (the common case of a dense ascending walk), else by binary search.
    fn load(&mut self, part: &Part, series: u32) -> Option<()> {
        let (chunks, dir) = part.index_parts();
        let n = dir.len() / DIR_LEN;
        let at = |i: usize| dir.get(i * DIR_LEN..).and_then(DirEntry::decode);
        let holds = |i: usize| -> Option<bool> {
            let first = at(i)?.first_series;
            let next = if i + 1 < n {
                Some(at(i + 1)?.first_series)
            } else {
                None
            };
            Some(series >= first && next.is_none_or(|nx| series < nx))
        };
        let next = self.chunk.map_or(0, |c| c + 1);
        let found = if next < n && holds(next)? {
            next
        } else {
            // the last chunk whose first series is <= series
            let (mut lo, mut hi) = (0usize, n);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if at(mid)?.first_series <= series {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo.checked_sub(1)?
        };
        let d = at(found)?;
        self.entries.clear();
        self.pos = 0;
        self.chunk = Some(found);
        self.next_first = if found + 1 < n {
            Some(at(found + 1)?.first_series)
        } else {
            None
        };
        let bytes = chunks.get(d.chunk_rel as usize..)?;
        let entries = &mut self.entries;
        let decoded = decode_chunk(bytes, &d, part.index_format(), found as u32, |e| {
            entries.push(e);
            true
        });
        if decoded.is_err() {
            // Part::open checked the index; a chunk that fails now answers nothing
            self.entries.clear();
            self.chunk = None;
            return None;
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::format::{Header, Kind};
    use super::super::writer::PartWriter;
    use super::*;
    use crate::testutil::TempDir;

    fn part(dir: &std::path::Path, ids: &[u32]) -> Part {
        let header = Header {
            kind: Kind::Direct,
            level: 0,
            class: 0,
            step: 10,
            partition: 0,
            width: 3600,
            file_id: 1,
        };
        let mut w = PartWriter::create(dir, header).unwrap();
        for &s in ids {
            w.add(s, &[0, 10], &[f64::from(s), 1.0]).unwrap();
        }
        Part::open(&w.finish().unwrap()).unwrap()
    }

    #[test]
    fn agrees_with_entry_in_any_order() {
        let dir = TempDir::new("lookup");
        // several chunks, with gaps inside and between them
        let ids: Vec<u32> = (0..1000).map(|i| i * 3 + (i / 100) * 50).collect();
        let p = part(dir.path(), &ids);
        let max = ids.last().copied().unwrap() + 10;
        // ascending, every id (present or not)
        let mut l = IndexLookup::default();
        for s in 0..max {
            assert_eq!(l.entry(&p, s), p.entry(s), "ascending {s}");
        }
        // sparse ascending jumps over whole chunks
        let mut l = IndexLookup::default();
        for s in (0..max).step_by(401) {
            assert_eq!(l.entry(&p, s), p.entry(s), "sparse {s}");
        }
        // descending and repeated lookups still answer right
        let mut l = IndexLookup::default();
        for s in (0..max).rev().step_by(7) {
            assert_eq!(l.entry(&p, s), p.entry(s), "descending {s}");
            assert_eq!(l.entry(&p, s), p.entry(s), "repeated {s}");
        }
        // beyond the last id, and an empty lookup after it
        assert_eq!(l.entry(&p, u32::MAX), None);
        assert_eq!(l.entry(&p, 0), p.entry(0));
    }
}
