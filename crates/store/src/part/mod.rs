//! Parts: immutable files holding, for one (retention class, level, partition) and one
//! kind (direct writes or rollups), one compressed block per series, sorted by series
//! id. Read through mmap (point reads) or sequential `pread` (compaction, rollups), so
//! that scanning a part does not pull it into the process's resident memory.
//!
//! - [`format`]: header, index entry and footer layouts.
//! - [`writer`]: writing a part.

pub(crate) mod format;
pub(crate) mod writer;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

pub(crate) use format::{Entry, Header, Kind};
use format::{Footer, ENTRY_LEN, FOOTER_LEN, HEADER_LEN};

use crate::block;
use crate::StoreError;

/// An open part.
pub(crate) struct Part {
    pub(crate) header: Header,
    pub(crate) footer: Footer,
    map: Mmap,
    file: File,
    path: PathBuf,
    pub(crate) bytes: u64,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("path", &self.path)
            .field("header", &self.header)
            .field("series", &self.footer.series_count)
            .finish()
    }
}

impl Part {
    /// Opens and checks a part: header, footer and index CRCs, and that the index is
    /// sorted and points inside the block area.
    pub(crate) fn open(path: &Path) -> Result<Part, StoreError> {
        let corrupt = |off: u64, d: String| StoreError::corrupt("part", path, off, d);
        let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        if len < (HEADER_LEN + FOOTER_LEN) as u64 {
            return Err(corrupt(0, format!("file of {len} bytes is too short")));
        }
        // SAFETY: parts are immutable once renamed into place and only this process
        // writes the data directory; a file truncated behind our back would fault
        // (SIGBUS), which is the accepted risk of every mmap-based engine.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| StoreError::io("mmap", path, e))?;
        let header = Header::decode(&map).map_err(|d| corrupt(0, d))?;
        let foot_at = map.len() - FOOTER_LEN;
        let footer = Footer::decode(&map[foot_at..]).map_err(|d| corrupt(foot_at as u64, d))?;
        let index_len = footer.series_count as u64 * ENTRY_LEN as u64;
        if footer.index_offset < HEADER_LEN as u64
            || footer.index_offset + index_len != foot_at as u64
        {
            return Err(corrupt(
                foot_at as u64,
                format!(
                    "index at {} of {} entries does not end at the footer",
                    footer.index_offset, footer.series_count
                ),
            ));
        }
        // check the index with pread so that it does not stay resident
        let mut crc = 0u32;
        let mut buf = vec![0u8; (1 << 20) / ENTRY_LEN * ENTRY_LEN];
        let mut off = footer.index_offset;
        let mut prev: Option<u32> = None;
        let end = footer.index_offset + index_len;
        while off < end {
            let n = ((end - off) as usize).min(buf.len());
            let chunk = &mut buf[..n];
            file.read_exact_at(chunk, off)
                .map_err(|e| StoreError::io("read", path, e))?;
            crc = crc32c::crc32c_append(crc, chunk);
            for (i, e) in chunk.chunks_exact(ENTRY_LEN).enumerate() {
                let Some(e) = Entry::decode(e) else { continue };
                let at = off + (i * ENTRY_LEN) as u64;
                if prev.is_some_and(|p| p >= e.series) {
                    return Err(corrupt(
                        at,
                        format!("index not sorted at series {}", e.series),
                    ));
                }
                if e.offset < HEADER_LEN as u64 || e.offset + u64::from(e.len) > footer.index_offset
                {
                    return Err(corrupt(
                        at,
                        format!("block of series {} outside the block area", e.series),
                    ));
                }
                prev = Some(e.series);
            }
            off += n as u64;
        }
        if crc != footer.index_crc {
            return Err(corrupt(footer.index_offset, "index crc mismatch".into()));
        }
        Ok(Part {
            header,
            footer,
            map,
            file,
            path: path.to_path_buf(),
            bytes: len,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn index(&self) -> &[u8] {
        let start = self.footer.index_offset as usize;
        let len = self.footer.series_count as usize * ENTRY_LEN;
        self.map.get(start..start + len).unwrap_or_default()
    }

    /// The index entry of `series`, by binary search.
    pub(crate) fn entry(&self, series: u32) -> Option<Entry> {
        let idx = self.index();
        let (mut lo, mut hi) = (0usize, idx.len() / ENTRY_LEN);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let s = Entry::series_at(idx.get(mid * ENTRY_LEN..)?)?;
            match s.cmp(&series) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Entry::decode(idx.get(mid * ENTRY_LEN..)?),
            }
        }
        None
    }

    /// Every index entry, in series order (through the mmap).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> impl Iterator<Item = Entry> + '_ {
        self.index()
            .chunks_exact(ENTRY_LEN)
            .filter_map(Entry::decode)
    }

    /// The checked bytes of a block (mmap).
    pub(crate) fn block(&self, e: &Entry) -> Result<&[u8], String> {
        let start = e.offset as usize;
        let b = self
            .map
            .get(start..start + e.len as usize)
            .ok_or_else(|| format!("block of series {} outside the file", e.series))?;
        if crc32c::crc32c(b) != e.crc {
            return Err(format!("block crc mismatch for series {}", e.series));
        }
        Ok(b)
    }

    /// Decodes the block of `e`, appending to `slots`/`values`.
    pub(crate) fn read(
        &self,
        e: &Entry,
        slots: &mut Vec<i64>,
        values: &mut Vec<f64>,
    ) -> Result<(), String> {
        let b = self.block(e)?;
        let (s0, v0) = (slots.len(), values.len());
        let r =
            block::decode(b, slots, values).map_err(|err| format!("series {}: {err}", e.series));
        if r.is_err()
            || slots.len() - s0 != e.count as usize
            || values.len() != slots.len() - s0 + v0
        {
            slots.truncate(s0);
            values.truncate(v0);
            return Err(r.err().unwrap_or_else(|| {
                format!(
                    "series {}: block holds the wrong number of points",
                    e.series
                )
            }));
        }
        Ok(())
    }

    /// The index entries in series order, read with `pread` in chunks (so that scanning a
    /// big part's index does not leave it resident).
    pub(crate) fn index_scan(&self) -> IndexScan<'_> {
        IndexScan {
            part: self,
            buf: Vec::new(),
            pos: 0,
            next: 0,
            error: None,
        }
    }

    /// A sequential reader over the blocks (series order), through `pread`.
    pub(crate) fn scan(&self) -> Scan<'_> {
        Scan {
            part: self,
            buf: Vec::new(),
            buf_at: 0,
        }
    }
}

/// Iterates index entries through `pread`.
pub(crate) struct IndexScan<'a> {
    part: &'a Part,
    buf: Vec<u8>,
    pos: usize,
    /// Index of the next entry to load into `buf`.
    next: u64,
    pub(crate) error: Option<String>,
}

impl Iterator for IndexScan<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        if self.pos + ENTRY_LEN > self.buf.len() {
            let total = u64::from(self.part.footer.series_count);
            if self.next >= total || self.error.is_some() {
                return None;
            }
            let n = (total - self.next).min(((1 << 20) / ENTRY_LEN) as u64);
            self.buf.resize(n as usize * ENTRY_LEN, 0);
            let off = self.part.footer.index_offset + self.next * ENTRY_LEN as u64;
            if let Err(e) = self.part.file.read_exact_at(&mut self.buf, off) {
                self.error = Some(format!("read {}: {e}", self.part.path.display()));
                return None;
            }
            self.next += n;
            self.pos = 0;
        }
        let e = Entry::decode(self.buf.get(self.pos..)?)?;
        self.pos += ENTRY_LEN;
        Some(e)
    }
}

/// A part read in series order (index and blocks through `pread`), for merges.
pub(crate) struct Cursor<'a> {
    pub(crate) part: &'a Part,
    entries: IndexScan<'a>,
    pub(crate) cur: Option<Entry>,
    pub(crate) scan: Scan<'a>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(part: &'a Part) -> Cursor<'a> {
        let mut entries = part.index_scan();
        let cur = entries.next();
        Cursor {
            part,
            entries,
            cur,
            scan: part.scan(),
        }
    }

    /// The current series, if any.
    pub(crate) fn series(&self) -> Option<u32> {
        self.cur.map(|e| e.series)
    }

    pub(crate) fn advance(&mut self) {
        self.cur = self.entries.next();
    }

    /// Skips entries below `series`; returns the entry of `series` if the part has one.
    pub(crate) fn seek(&mut self, series: u32) -> Option<Entry> {
        while let Some(e) = self.cur {
            if e.series >= series {
                break;
            }
            self.advance();
        }
        self.cur.filter(|e| e.series == series)
    }

    /// The read error that ended the index scan early, if any.
    pub(crate) fn error(&self) -> Option<&str> {
        self.entries.error.as_deref()
    }
}

/// The smallest current series over `cursors`.
pub(crate) fn min_series(cursors: &[Cursor<'_>]) -> Option<u32> {
    cursors.iter().filter_map(Cursor::series).min()
}

/// Reads blocks in file order with large `pread`s, for compaction and rollups.
pub(crate) struct Scan<'a> {
    part: &'a Part,
    buf: Vec<u8>,
    buf_at: u64,
}

const SCAN_CHUNK: usize = 4 << 20;

impl Scan<'_> {
    /// The checked block of `e`; entries must be asked for in ascending offset order for
    /// the reads to stay sequential (any order works).
    pub(crate) fn block(&mut self, e: &Entry) -> Result<&[u8], String> {
        let (start, len) = (e.offset, e.len as usize);
        let end = start + len as u64;
        let have = start >= self.buf_at && end <= self.buf_at + self.buf.len() as u64;
        if !have {
            let want = len
                .max(SCAN_CHUNK)
                .min((self.part.footer.index_offset.saturating_sub(start)) as usize)
                .max(len);
            self.buf.resize(want, 0);
            self.part
                .file
                .read_exact_at(&mut self.buf, start)
                .map_err(|err| format!("read {}: {err}", self.part.path.display()))?;
            self.buf_at = start;
        }
        let from = (start - self.buf_at) as usize;
        let b = self
            .buf
            .get(from..from + len)
            .ok_or_else(|| "block outside the read window".to_string())?;
        if crc32c::crc32c(b) != e.crc {
            return Err(format!("block crc mismatch for series {}", e.series));
        }
        Ok(b)
    }

    /// Decodes the block of `e`.
    pub(crate) fn read(
        &mut self,
        e: &Entry,
        slots: &mut Vec<i64>,
        values: &mut Vec<f64>,
    ) -> Result<(), String> {
        let series = e.series;
        let count = e.count as usize;
        let b = self.block(e)?;
        let s0 = slots.len();
        let v0 = values.len();
        let r = block::decode(b, slots, values).map_err(|err| format!("series {series}: {err}"));
        if r.is_err() || slots.len() - s0 != count {
            slots.truncate(s0);
            values.truncate(v0);
            return Err(r.err().unwrap_or_else(|| {
                format!("series {series}: block holds the wrong number of points")
            }));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::writer::PartWriter;
    use super::*;
    use crate::testutil::TempDir;

    fn header(file_id: u64) -> Header {
        Header {
            kind: Kind::Direct,
            level: 0,
            class: 0,
            step: 10,
            partition: 0,
            width: 3600,
            file_id,
        }
    }

    fn write(dir: &Path, id: u64, n: u32) -> PathBuf {
        let mut w = PartWriter::create(dir, header(id)).unwrap();
        for s in 0..n {
            let slots: Vec<i64> = (0..(s % 5 + 1)).map(|i| i64::from(i) * 10).collect();
            let values: Vec<f64> = slots.iter().map(|&x| x as f64 + f64::from(s)).collect();
            w.add(s * 3, &slots, &values).unwrap();
        }
        w.finish().unwrap()
    }

    #[test]
    fn write_open_read() {
        let dir = TempDir::new("part-rw");
        let p = write(dir.path(), 1, 1000);
        let part = Part::open(&p).unwrap();
        assert_eq!(part.header, header(1));
        assert_eq!(part.footer.series_count, 1000);
        assert!(part.entry(1).is_none());
        let e = part.entry(999 * 3).unwrap();
        let (mut s, mut v) = (Vec::new(), Vec::new());
        part.read(&e, &mut s, &mut v).unwrap();
        assert_eq!(s, vec![0, 10, 20, 30, 40]);
        assert_eq!(v[0], 999.0);
        let mut scan = part.scan();
        let mut total = 0;
        for e in part.entries() {
            s.clear();
            v.clear();
            scan.read(&e, &mut s, &mut v).unwrap();
            total += s.len();
        }
        assert_eq!(total as u64, part.footer.points);
    }

    #[test]
    fn corruption_is_detected() {
        let dir = TempDir::new("part-bad");
        let p = write(dir.path(), 2, 100);
        let good = std::fs::read(&p).unwrap();
        // a flipped byte in the index fails the open
        let mut bad = good.clone();
        let idx_byte = bad.len() - FOOTER_LEN - 3;
        bad[idx_byte] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        assert!(Part::open(&p)
            .unwrap_err()
            .to_string()
            .contains("index crc"));
        // a flipped byte in a block fails only that block's read
        let mut bad = good.clone();
        bad[HEADER_LEN + 3] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        let part = Part::open(&p).unwrap();
        let e = part.entry(0).unwrap();
        let (mut s, mut v) = (Vec::new(), Vec::new());
        assert!(part.read(&e, &mut s, &mut v).is_err());
        assert!(s.is_empty());
        let e = part.entry(3).unwrap();
        part.read(&e, &mut s, &mut v).unwrap();
        // truncated files fail
        std::fs::write(&p, &good[..good.len() - 1]).unwrap();
        assert!(Part::open(&p).is_err());
        std::fs::write(&p, &good[..10]).unwrap();
        assert!(Part::open(&p).is_err());
    }
}
