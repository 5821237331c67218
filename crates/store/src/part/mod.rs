//! Parts: immutable files holding, for one (retention class, level, partition) and one
//! kind (direct writes or rollups), one compressed block per series, sorted by series
//! id. Read through mmap (point reads) or sequential `pread` (compaction, rollups), so
//! that scanning a part does not pull it into the process's resident memory.
//!
//! - [`format`]: header and footer layouts.
//! - [`index`]: the chunked, varint-encoded series index.
//! - [`lookup`]: many series looked up in ascending order (a merge-join over the index).
//! - [`writer`]: writing a part.

pub(crate) mod format;
pub(crate) mod index;
pub(crate) mod lookup;
pub(crate) mod writer;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use memmap2::Mmap;

pub(crate) use format::{Entry, Header, Kind};
use format::{Footer, FOOTER_LEN, HEADER_LEN};
use index::{DirEntry, IndexFormat, CHUNK, DIR_LEN};

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
    /// Blocks hold slots relative to their entry's first slot (version 3 and later).
    pub(crate) rel_slots: bool,
    /// How the index is encoded (version 4: a CRC a chunk, slots in steps).
    fmt: IndexFormat,
    /// Version 4: one bit a chunk, set once the CRC of its short blocks matched (checked
    /// on the first read of one of them after the open, not on every read).
    verified: Box<[AtomicU64]>,
    /// The smallest and largest series id held (`(1, 0)` for an empty part).
    pub(crate) series_range: (u32, u32),
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
    /// Opens and checks a part: header, footer and index CRCs, and that the index
    /// decodes, is sorted, and describes exactly the block area.
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
        let version = format::version_of(&map);
        let rel_slots = version >= 3;
        let fmt = IndexFormat {
            v4: version >= 4,
            partition: header.partition,
            step: header.step,
        };
        let foot_at = map.len() - FOOTER_LEN;
        let footer = Footer::decode(&map[foot_at..]).map_err(|d| corrupt(foot_at as u64, d))?;
        let chunks = (footer.series_count as usize).div_ceil(CHUNK);
        let dir_len = (chunks * DIR_LEN) as u64;
        if footer.index_offset < HEADER_LEN as u64 || footer.index_offset + dir_len > foot_at as u64
        {
            return Err(corrupt(
                foot_at as u64,
                format!(
                    "index at {} with {} series does not fit before the footer",
                    footer.index_offset, footer.series_count
                ),
            ));
        }
        // check the index with pread (not through the map) so that it does not stay
        // resident; it is about 10 bytes a series
        let mut index = vec![0u8; (foot_at as u64 - footer.index_offset) as usize];
        file.read_exact_at(&mut index, footer.index_offset)
            .map_err(|e| StoreError::io("read", path, e))?;
        if crc32c::crc32c(&index) != footer.index_crc {
            return Err(corrupt(footer.index_offset, "index crc mismatch".into()));
        }
        let dir_at = index.len() - chunks * DIR_LEN;
        let mut expect_block = HEADER_LEN as u64;
        let mut expect_chunk = 0u64;
        let mut prev: Option<u32> = None;
        let mut first: Option<u32> = None;
        let mut total = 0u64;
        for c in 0..chunks {
            let at = footer.index_offset + (dir_at + c * DIR_LEN) as u64;
            let d = index
                .get(dir_at + c * DIR_LEN..)
                .and_then(DirEntry::decode)
                .ok_or_else(|| corrupt(at, "short chunk directory".into()))?;
            if d.chunk_rel != expect_chunk
                || d.block_offset != expect_block
                || d.count == 0
                || d.count as usize > CHUNK
            {
                return Err(corrupt(
                    at,
                    format!("chunk {c} descriptor {d:?} is inconsistent"),
                ));
            }
            let bytes = index.get(d.chunk_rel as usize..dir_at).unwrap_or_default();
            let mut bad = None;
            let used = index::decode_chunk(bytes, &d, fmt, c as u32, |e| {
                if prev.is_some_and(|p| p >= e.series) {
                    bad = Some(format!("index not sorted at series {}", e.series));
                    return false;
                }
                if e.offset != expect_block || e.last_slot < e.first_slot {
                    bad = Some(format!("entry of series {} is inconsistent", e.series));
                    return false;
                }
                prev = Some(e.series);
                first.get_or_insert(e.series);
                expect_block += u64::from(e.len);
                total += 1;
                true
            })
            .map_err(|d| corrupt(footer.index_offset + expect_chunk, d))?;
            if let Some(b) = bad {
                return Err(corrupt(footer.index_offset + expect_chunk, b));
            }
            expect_chunk += used as u64;
        }
        if expect_chunk != dir_at as u64
            || expect_block != footer.index_offset
            || total != u64::from(footer.series_count)
        {
            return Err(corrupt(
                footer.index_offset,
                "the index does not describe exactly the block area".into(),
            ));
        }
        Ok(Part {
            header,
            footer,
            map,
            file,
            path: path.to_path_buf(),
            bytes: len,
            rel_slots,
            fmt,
            verified: (0..chunks.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
            series_range: (first.unwrap_or(1), prev.unwrap_or(0)),
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn chunks(&self) -> usize {
        (self.footer.series_count as usize).div_ceil(CHUNK)
    }

    /// The chunk area and the directory, through the map.
    fn index_parts(&self) -> (&[u8], &[u8]) {
        let start = self.footer.index_offset as usize;
        let end = self.map.len() - FOOTER_LEN;
        let dir_at = end.saturating_sub(self.chunks() * DIR_LEN);
        (
            self.map.get(start..dir_at).unwrap_or_default(),
            self.map.get(dir_at..end).unwrap_or_default(),
        )
    }

    /// Series ids that cut this part into `k` runs of about as many series each (the
    /// first series of chunks spread evenly; fewer when the part has fewer chunks),
    /// ascending and above the part's first series.
    pub(crate) fn split_points(&self, k: usize) -> Vec<u32> {
        let (_, dir) = self.index_parts();
        let n = dir.len() / DIR_LEN;
        let mut out: Vec<u32> = (1..k)
            .filter_map(|i| dir.get(i * n / k * DIR_LEN..).and_then(DirEntry::decode))
            .map(|d| d.first_series)
            .filter(|&s| s > self.series_range.0)
            .collect();
        out.dedup();
        out
    }

    /// The index entry of `series`: binary search of the directory, then one chunk.
    pub(crate) fn entry(&self, series: u32) -> Option<Entry> {
        let (chunks, dir) = self.index_parts();
        let n = dir.len() / DIR_LEN;
        let first_of = |i: usize| dir.get(i * DIR_LEN..).and_then(DirEntry::decode);
        // the last chunk whose first series is <= series
        let (mut lo, mut hi) = (0usize, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if first_of(mid)?.first_series <= series {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let d = first_of(lo.checked_sub(1)?)?;
        let mut found = None;
        let bytes = chunks.get(d.chunk_rel as usize..)?;
        index::decode_chunk(bytes, &d, self.fmt, (lo - 1) as u32, |e| {
            if e.series >= series {
                if e.series == series {
                    found = Some(e);
                }
                return false;
            }
            true
        })
        .ok()?;
        found
    }

    /// Every index entry, in series order (through the map).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        let (chunks, dir) = self.index_parts();
        for (c, d) in dir
            .chunks_exact(DIR_LEN)
            .filter_map(DirEntry::decode)
            .enumerate()
        {
            let bytes = chunks.get(d.chunk_rel as usize..).unwrap_or_default();
            let _ = index::decode_chunk(bytes, &d, self.fmt, c as u32, |e| {
                out.push(e);
                true
            });
        }
        out
    }

    /// The checked bytes of a block (mmap).
    pub(crate) fn block(&self, e: &Entry) -> Result<&[u8], String> {
        let start = e.offset as usize;
        let b = self
            .map
            .get(start..start + e.len as usize)
            .ok_or_else(|| format!("block of series {} outside the file", e.series))?;
        if e.own_crc {
            if crc32c::crc32c(b) != e.crc {
                return Err(format!("block crc mismatch for series {}", e.series));
            }
        } else {
            self.check_chunk(e, |crc, off, len| {
                self.map
                    .get(off as usize..off as usize + len as usize)
                    .map(|b| crc32c::crc32c_append(crc, b))
                    .ok_or_else(|| format!("block at {off} outside the file"))
            })?;
        }
        Ok(b)
    }

    /// The index format of this part.
    pub(crate) fn index_format(&self) -> IndexFormat {
        self.fmt
    }

    /// Checks, once per open, the CRC of the chunk of `e` (a block without a CRC of its
    /// own): the CRC32C of the chunk's short blocks, in order; `append(crc, offset, len)`
    /// reads one block and extends `crc` with it.
    fn check_chunk(
        &self,
        e: &Entry,
        mut append: impl FnMut(u32, u64, u32) -> Result<u32, String>,
    ) -> Result<(), String> {
        let (word, bit) = ((e.chunk / 64) as usize, 1u64 << (e.chunk % 64));
        let Some(w) = self.verified.get(word) else {
            return Err(format!(
                "series {}: chunk {} out of range",
                e.series, e.chunk
            ));
        };
        if w.load(Ordering::Relaxed) & bit != 0 {
            return Ok(());
        }
        let (chunks, dir) = self.index_parts();
        let d = dir
            .get(e.chunk as usize * DIR_LEN..)
            .and_then(DirEntry::decode)
            .ok_or_else(|| format!("series {}: chunk {} out of range", e.series, e.chunk))?;
        let mut short = Vec::with_capacity(d.count as usize);
        let bytes = chunks.get(d.chunk_rel as usize..).unwrap_or_default();
        index::decode_chunk(bytes, &d, self.fmt, e.chunk, |x| {
            if !x.own_crc {
                short.push((x.offset, x.len));
            }
            true
        })?;
        let mut crc = 0;
        for (off, len) in short {
            crc = append(crc, off, len)?;
        }
        if crc != e.crc {
            return Err(format!(
                "block crc mismatch for series {} (the CRC of chunk {}, over its blocks \
                 under {} bytes)",
                e.series,
                e.chunk,
                index::OWN_CRC_MIN
            ));
        }
        w.fetch_or(bit, Ordering::Relaxed);
        Ok(())
    }

    /// Decodes the block of `e`, appending to `slots`/`values`.
    pub(crate) fn read(
        &self,
        e: &Entry,
        slots: &mut Vec<i64>,
        values: &mut Vec<f64>,
    ) -> Result<(), String> {
        let b = self.block(e)?;
        decode_checked(b, e, self.rel_slots, slots, values)
    }

    /// The index entries in series order, read with `pread` (so that scanning a big
    /// part's index does not leave it resident).
    pub(crate) fn index_scan(&self) -> IndexScan<'_> {
        IndexScan {
            part: self,
            dir: None,
            next_chunk: 0,
            window: Window::default(),
            pending: Vec::new(),
            pos: 0,
            error: None,
        }
    }

    /// A sequential reader over the blocks (series order), through `pread`.
    pub(crate) fn scan(&self) -> Scan<'_> {
        Scan {
            part: self,
            window: Window::default(),
        }
    }
}

/// Decodes a block and checks its point count against the index; with `rel` (version
/// 3) the slots are stored relative to the entry's first slot, and the first and last
/// decoded slots must be the entry's.
fn decode_checked(
    b: &[u8],
    e: &Entry,
    rel: bool,
    slots: &mut Vec<i64>,
    values: &mut Vec<f64>,
) -> Result<(), String> {
    let (s0, v0) = (slots.len(), values.len());
    let r = block::decode(b, slots, values).map_err(|err| format!("series {}: {err}", e.series));
    let mut bad =
        r.is_err() || slots.len() - s0 != e.count as usize || values.len() - v0 != e.count as usize;
    if !bad && rel {
        // the writer subtracted with wrapping, so adding back is exact for any slots
        for s in &mut slots[s0..] {
            *s = s.wrapping_add(e.first_slot);
        }
        bad |= slots.get(s0) != Some(&e.first_slot) || slots.last() != Some(&e.last_slot);
    }
    if bad {
        slots.truncate(s0);
        values.truncate(v0);
        return Err(r.err().unwrap_or_else(|| {
            format!(
                "series {}: block disagrees with its index entry (points or slots)",
                e.series
            )
        }));
    }
    Ok(())
}

/// A `pread` window over a file: reads 4 MiB at a time, serves byte ranges.
#[derive(Default)]
struct Window {
    buf: Vec<u8>,
    at: u64,
}

const WINDOW: usize = 4 << 20;

impl Window {
    /// The bytes `[start, start + len)`, with at most `limit` (the end of the region
    /// worth reading ahead into) read.
    fn get(&mut self, part: &Part, start: u64, len: usize, limit: u64) -> Result<&[u8], String> {
        let end = start + len as u64;
        let have = start >= self.at && end <= self.at + self.buf.len() as u64;
        if !have {
            let want = (limit.saturating_sub(start) as usize).min(WINDOW).max(len);
            self.buf.resize(want, 0);
            part.file
                .read_exact_at(&mut self.buf, start)
                .map_err(|err| format!("read {}: {err}", part.path.display()))?;
            self.at = start;
        }
        let from = (start - self.at) as usize;
        self.buf
            .get(from..from + len)
            .ok_or_else(|| "range outside the read window".to_string())
    }
}

/// Iterates index entries through `pread`.
pub(crate) struct IndexScan<'a> {
    part: &'a Part,
    dir: Option<Vec<DirEntry>>,
    next_chunk: usize,
    window: Window,
    pending: Vec<Entry>,
    pos: usize,
    pub(crate) error: Option<String>,
}

impl IndexScan<'_> {
    fn load_dir(&mut self) -> Result<Vec<DirEntry>, String> {
        let n = self.part.chunks();
        let end = self.part.map.len() - FOOTER_LEN;
        let at = (end - n * DIR_LEN) as u64;
        let mut raw = vec![0u8; n * DIR_LEN];
        self.part
            .file
            .read_exact_at(&mut raw, at)
            .map_err(|e| format!("read {}: {e}", self.part.path.display()))?;
        Ok(raw
            .chunks_exact(DIR_LEN)
            .filter_map(DirEntry::decode)
            .collect())
    }

    fn fill(&mut self) -> Result<bool, String> {
        if self.dir.is_none() {
            self.dir = Some(self.load_dir()?);
        }
        let dir = self.dir.as_deref().unwrap_or_default();
        let Some(d) = dir.get(self.next_chunk).copied() else {
            return Ok(false);
        };
        let index_at = self.part.footer.index_offset;
        let chunks_end = (self.part.map.len() - FOOTER_LEN - dir.len() * DIR_LEN) as u64;
        let end = dir
            .get(self.next_chunk + 1)
            .map_or(chunks_end, |n| index_at + n.chunk_rel);
        let start = index_at + d.chunk_rel;
        let len = end.saturating_sub(start) as usize;
        let bytes = self.window.get(self.part, start, len, chunks_end)?;
        self.pending.clear();
        self.pos = 0;
        let pending = &mut self.pending;
        index::decode_chunk(bytes, &d, self.part.fmt, self.next_chunk as u32, |e| {
            pending.push(e);
            true
        })?;
        self.next_chunk += 1;
        Ok(true)
    }
}

impl Iterator for IndexScan<'_> {
    type Item = Entry;

    fn next(&mut self) -> Option<Entry> {
        while self.pos >= self.pending.len() {
            if self.error.is_some() {
                return None;
            }
            match self.fill() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => {
                    self.error = Some(e);
                    return None;
                }
            }
        }
        let e = self.pending.get(self.pos).copied();
        self.pos += 1;
        e
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

    /// A cursor whose first entry is the first one of series `from` or above: the
    /// directory is searched for its chunk, nothing before that chunk is read.
    pub(crate) fn starting_at(part: &'a Part, from: u32) -> Cursor<'a> {
        let mut entries = part.index_scan();
        match entries.load_dir() {
            Ok(dir) => {
                // the last chunk whose first series is not above `from`
                entries.next_chunk = dir
                    .partition_point(|d| d.first_series <= from)
                    .saturating_sub(1);
                entries.dir = Some(dir);
            }
            Err(e) => entries.error = Some(e),
        }
        let mut cur = entries.next();
        while cur.is_some_and(|e| e.series < from) {
            cur = entries.next();
        }
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
    window: Window,
}

impl Scan<'_> {
    /// The checked block of `e`; asked for in ascending offset order the reads stay
    /// sequential (any order works).
    pub(crate) fn block(&mut self, e: &Entry) -> Result<&[u8], String> {
        let limit = self.part.footer.index_offset;
        if !e.own_crc {
            let (part, window) = (self.part, &mut self.window);
            part.check_chunk(e, |crc, off, len| {
                let b = window.get(part, off, len as usize, limit)?;
                Ok(crc32c::crc32c_append(crc, b))
            })?;
        }
        let b = self
            .window
            .get(self.part, e.offset, e.len as usize, limit)?;
        if e.own_crc && crc32c::crc32c(b) != e.crc {
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
        let rel = self.part.rel_slots;
        let b = self.block(e)?;
        decode_checked(b, e, rel, slots, values)
    }
}
/// Writing and reading whole part files, for the fuzz target (`sumi_store::part_file`).
pub(crate) mod fuzz {
    use std::path::{Path, PathBuf};

    use super::format::{Header, Kind};
    use super::writer::PartWriter;
    use super::Part;

    /// One series' points as read back: `(slots, values as bits)` or why not.
    pub type ReadBack = Result<(Vec<i64>, Vec<u64>), String>;

    /// Writes a part of `series` (ids ascending, slots strictly increasing, not empty)
    /// at `step` and `partition` into `dir` as file id `file_id`, as the store does
    /// (without its fsync).
    pub fn write_part(
        dir: &Path,
        file_id: u64,
        step: i64,
        partition: i64,
        series: &[(u32, Vec<i64>, Vec<f64>)],
    ) -> Result<PathBuf, String> {
        let header = Header {
            kind: Kind::Direct,
            level: 0,
            class: 0,
            step,
            partition,
            width: step.saturating_mul(1 << 20),
            file_id,
        };
        let mut w = PartWriter::create(dir, header).map_err(|e| e.to_string())?;
        w.sync = false; // a scratch file: no fsync
        for (id, slots, values) in series {
            w.add(*id, slots, values).map_err(|e| e.to_string())?;
        }
        w.finish().map_err(|e| e.to_string())
    }

    /// Opens the part at `path` and reads every series it indexes, once through the map
    /// and once through a sequential scan: `(id, map read, scan read)` in index order, or
    /// why the part does not open. Never panics on any file.
    pub fn read_part(path: &Path) -> Result<Vec<(u32, ReadBack, ReadBack)>, String> {
        let part = Part::open(path).map_err(|e| e.to_string())?;
        let mut scan = part.scan();
        let mut out = Vec::new();
        let mut index = part.index_scan();
        for e in index.by_ref() {
            let (mut s, mut v) = (Vec::new(), Vec::new());
            let map = part
                .read(&e, &mut s, &mut v)
                .map(|()| (s, v.iter().map(|x| x.to_bits()).collect()));
            let (mut s, mut v) = (Vec::new(), Vec::new());
            let seq = scan
                .read(&e, &mut s, &mut v)
                .map(|()| (s, v.iter().map(|x| x.to_bits()).collect()));
            out.push((e.series, map, seq));
        }
        if let Some(err) = index.error {
            return Err(err);
        }
        Ok(out)
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

    /// A part as version 2 wrote it: blocks with absolute slots.
    fn write_v2(dir: &Path, h: Header, series: &[(u32, Vec<i64>, Vec<f64>)]) -> PathBuf {
        let mut f = h.encode().to_vec();
        f[8..12].copy_from_slice(&2u32.to_le_bytes());
        let crc = crc32c::crc32c(&f[..60]);
        f[60..64].copy_from_slice(&crc.to_le_bytes());
        let mut ib = index::IndexBuilder::new(IndexFormat {
            v4: false,
            partition: h.partition,
            step: h.step,
        });
        let mut points = 0;
        for (id, slots, values) in series {
            let mut b = Vec::new();
            block::encode(h.step, slots, values, &mut b);
            ib.push(
                &Entry {
                    series: *id,
                    count: slots.len() as u32,
                    offset: f.len() as u64,
                    len: b.len() as u32,
                    crc: crc32c::crc32c(&b),
                    own_crc: true,
                    chunk: 0,
                    first_slot: slots[0],
                    last_slot: *slots.last().unwrap(),
                },
                None,
            );
            points += slots.len() as u64;
            f.extend_from_slice(&b);
        }
        let index_offset = f.len() as u64;
        let idx = ib.finish();
        let footer = Footer {
            index_offset,
            points,
            series_count: series.len() as u32,
            index_crc: crc32c::crc32c(&idx),
        };
        f.extend_from_slice(&idx);
        f.extend_from_slice(&footer.encode());
        let path = writer::part_path(dir, h.file_id);
        std::fs::write(&path, &f).unwrap();
        path
    }

    #[test]
    fn version_2_parts_are_read_and_rewritten_as_version_3() {
        let dir = TempDir::new("part-v2");
        let h = Header {
            partition: 1_700_000_000 - 1_700_000_000 % 3600,
            ..header(7)
        };
        let series: Vec<(u32, Vec<i64>, Vec<f64>)> = (0..200u32)
            .map(|s| {
                let slots: Vec<i64> = (0..(s % 7 + 1))
                    .map(|i| h.partition + i64::from(i * (s % 3 + 1)) * 10)
                    .collect();
                let values = slots.iter().map(|&x| (x % 977) as f64 * 0.5).collect();
                (s * 2 + 1, slots, values)
            })
            .collect();
        let old = Part::open(&write_v2(dir.path(), h, &series)).unwrap();
        assert!(!old.rel_slots);
        let mut w = PartWriter::create(dir.path(), Header { file_id: 8, ..h }).unwrap();
        let mut scan = old.scan();
        let (mut s, mut v) = (Vec::new(), Vec::new());
        for (e, (id, slots, values)) in old.entries().iter().zip(&series) {
            s.clear();
            v.clear();
            old.read(e, &mut s, &mut v).unwrap();
            assert_eq!(
                (&s, &v),
                (slots, values),
                "series {id} as version 2 wrote it"
            );
            let b = scan.block(e).unwrap();
            w.add_block(
                e.series,
                e.count,
                e.first_slot,
                e.last_slot,
                b,
                old.rel_slots,
            )
            .unwrap();
        }
        let new = Part::open(&w.finish().unwrap()).unwrap();
        assert!(new.rel_slots);
        assert!(new.bytes < old.bytes, "{} vs {}", new.bytes, old.bytes);
        for (e, (_, slots, values)) in new.entries().iter().zip(&series) {
            s.clear();
            v.clear();
            new.read(e, &mut s, &mut v).unwrap();
            assert_eq!((&s, &v), (slots, values));
        }
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
        // and one in the chunk area too
        let mut bad = good.clone();
        let footer = Footer::decode(&good[good.len() - FOOTER_LEN..]).unwrap();
        bad[footer.index_offset as usize + 2] ^= 0x40;
        std::fs::write(&p, &bad).unwrap();
        assert!(Part::open(&p)
            .unwrap_err()
            .to_string()
            .contains("index crc"));
        // a flipped byte in a short block fails the reads of its chunk's short blocks
        // (version 4: one CRC a chunk for them), through the map and through a scan, and
        // of nothing else
        let mut bad = good.clone();
        bad[HEADER_LEN + 3] ^= 1;
        std::fs::write(&p, &bad).unwrap();
        let part = Part::open(&p).unwrap();
        let e = part.entry(0).unwrap();
        let (mut s, mut v) = (Vec::new(), Vec::new());
        assert!(part.read(&e, &mut s, &mut v).is_err());
        assert!(s.is_empty());
        let e = part.entry(3).unwrap();
        let err = part.read(&e, &mut s, &mut v).unwrap_err();
        assert!(err.contains("the CRC of chunk 0"), "{err}");
        assert!(part.scan().read(&e, &mut s, &mut v).is_err());
        assert!(s.is_empty());
        let e = part.entry(64 * 3).unwrap();
        part.read(&e, &mut s, &mut v).unwrap();
        part.scan().read(&e, &mut s, &mut v).unwrap();
        // truncated files fail
        std::fs::write(&p, &good[..good.len() - 1]).unwrap();
        assert!(Part::open(&p).is_err());
        std::fs::write(&p, &good[..10]).unwrap();
        assert!(Part::open(&p).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 64, .. Default::default() })]

        /// Flipped bytes anywhere: the open fails, or it succeeds and every read is a
        /// value or an error, never a panic.
        #[test]
        fn damaged_parts_never_panic(flips in proptest::collection::vec((0usize..4096, 1u8..=255), 1..6), cut in 0usize..64) {
            let dir = TempDir::new("part-fuzz");
            let p = write(dir.path(), 3, 200);
            let mut data = std::fs::read(&p).unwrap();
            for (at, x) in flips {
                let i = at % data.len();
                data[i] ^= x;
            }
            data.truncate(data.len() - cut.min(data.len()));
            std::fs::write(&p, &data).unwrap();
            if let Ok(part) = Part::open(&p) {
                let (mut s, mut v) = (Vec::new(), Vec::new());
                for series in 0..700 {
                    if let Some(e) = part.entry(series) {
                        let _ = part.read(&e, &mut s, &mut v);
                    }
                }
                let mut scan = part.scan();
                for e in part.index_scan() {
                    let _ = scan.read(&e, &mut s, &mut v);
                }
            }
        }
    }
}
