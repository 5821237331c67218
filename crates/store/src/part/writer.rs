//! Writing a part: blocks streamed sequentially to a temporary file, then the index and
//! footer, fsync, rename into place. The caller fsyncs the directory once for a batch
//! of parts, before the manifest that names them.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::format::{Entry, Footer, Header, HEADER_LEN};
use super::index::{IndexBuilder, IndexFormat, OWN_CRC_MIN};
use crate::block;
use crate::StoreError;

/// The file name of part `file_id`.
pub(crate) fn part_path(dir: &Path, file_id: u64) -> PathBuf {
    dir.join(format!("{file_id:016x}.part"))
}

pub(crate) struct PartWriter {
    out: BufWriter<File>,
    tmp: PathBuf,
    path: PathBuf,
    header: Header,
    index: IndexBuilder,
    offset: u64,
    points: u64,
    count: u32,
    last_series: Option<u32>,
    buf: Vec<u8>,
    rel: Vec<i64>,
    finished: bool,
    /// Whether `finish` fsyncs (always, except for the fuzz target's scratch parts).
    pub(crate) sync: bool,
}

impl PartWriter {
    pub(crate) fn create(dir: &Path, header: Header) -> Result<PartWriter, StoreError> {
        let path = part_path(dir, header.file_id);
        let tmp = path.with_extension("part.tmp");
        let f = OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(&tmp)
            .map_err(|e| StoreError::io("create", &tmp, e))?;
        let mut out = BufWriter::with_capacity(1 << 20, f);
        out.write_all(&header.encode())
            .map_err(|e| StoreError::io("write", &tmp, e))?;
        Ok(PartWriter {
            out,
            tmp,
            path,
            index: IndexBuilder::new(IndexFormat {
                v4: true,
                partition: header.partition,
                step: header.step,
            }),
            header,
            offset: HEADER_LEN as u64,
            points: 0,
            count: 0,
            last_series: None,
            buf: Vec::new(),
            rel: Vec::new(),
            finished: false,
            sync: true,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds one series' points (series ascending across calls; slots strictly
    /// increasing multiples of the step; not empty).
    pub(crate) fn add(
        &mut self,
        series: u32,
        slots: &[i64],
        values: &[f64],
    ) -> Result<(), StoreError> {
        let (Some(&first), Some(&last)) = (slots.first(), slots.last()) else {
            return Ok(());
        };
        debug_assert!(
            self.last_series.is_none_or(|l| l < series),
            "series out of order"
        );
        debug_assert!(slots.windows(2).all(|w| w[0] < w[1]), "slots out of order");
        // version 3: slots relative to the first one (the index holds that one)
        self.rel.clear();
        self.rel.extend(slots.iter().map(|s| s.wrapping_sub(first)));
        self.buf.clear();
        block::encode(self.header.step, &self.rel, values, &mut self.buf);
        self.add_encoded(series, slots.len() as u32, first, last, None)
    }

    /// Adds a block read from another part (compaction passing a block through,
    /// `sumi check --repair` copying the good ones): copied as it is when it holds
    /// relative slots (`rel`, a version-3 part), else decoded and encoded again.
    pub(crate) fn add_block(
        &mut self,
        series: u32,
        count: u32,
        first: i64,
        last: i64,
        block: &[u8],
        rel: bool,
    ) -> Result<(), StoreError> {
        if rel {
            return self.add_encoded(series, count, first, last, Some(block));
        }
        // a version-2 block (absolute slots): once per block, while old parts last
        let (mut slots, mut values) = (Vec::new(), Vec::new());
        block::decode(block, &mut slots, &mut values).map_err(|e| {
            StoreError::corrupt("part block", &self.tmp, self.offset, e.to_string())
        })?;
        self.add(series, &slots, &values)
    }

    fn add_encoded(
        &mut self,
        series: u32,
        count: u32,
        first: i64,
        last: i64,
        block: Option<&[u8]>,
    ) -> Result<(), StoreError> {
        let bytes = block.unwrap_or(&self.buf);
        let len = u32::try_from(bytes.len()).map_err(|_| {
            StoreError::corrupt("part block", &self.tmp, self.offset, "block over 4 GiB")
        })?;
        // version 4: a short block's CRC is its chunk's, appended by the index
        let crc = if len >= OWN_CRC_MIN {
            crc32c::crc32c(bytes)
        } else {
            0
        };
        self.out
            .write_all(bytes)
            .map_err(|e| StoreError::io("write", &self.tmp, e))?;
        self.index.push(
            &Entry {
                series,
                count,
                offset: self.offset,
                len,
                crc,
                own_crc: true,
                chunk: 0,
                first_slot: first,
                last_slot: last,
            },
            Some(bytes),
        );
        self.offset += u64::from(len);
        self.points += u64::from(count);
        self.count += 1;
        self.last_series = Some(series);
        Ok(())
    }

    /// Writes the index and footer, fsyncs and renames. Returns the final path.
    pub(crate) fn finish(mut self) -> Result<PathBuf, StoreError> {
        let fmt = IndexFormat {
            v4: true,
            partition: 0,
            step: 0,
        };
        let index = std::mem::replace(&mut self.index, IndexBuilder::new(fmt)).finish();
        let footer = Footer {
            index_offset: self.offset,
            points: self.points,
            series_count: self.count,
            index_crc: crc32c::crc32c(&index),
        };
        let tmp = self.tmp.clone();
        self.out
            .write_all(&index)
            .and_then(|_| self.out.write_all(&footer.encode()))
            .and_then(|_| self.out.flush())
            .map_err(|e| StoreError::io("write", &tmp, e))?;
        if self.sync {
            self.out
                .get_ref()
                .sync_all()
                .map_err(|e| StoreError::io("fsync", &tmp, e))?;
        }
        fs::rename(&self.tmp, &self.path).map_err(|e| StoreError::io("rename", &tmp, e))?;
        self.finished = true;
        Ok(self.path.clone())
    }
}

impl Drop for PartWriter {
    fn drop(&mut self) {
        if !self.finished {
            // an abandoned part (error, or nothing to write): leave no temporary behind
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
