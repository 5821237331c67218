//! `series.log`: the append-only record of every retention class and series, written
//! before any WAL record names the series. Format: `docs/format/series-log.md`.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use sumi_model::{AggMethod, Archive};

use crate::StoreError;

pub(crate) const MAGIC: &[u8; 8] = b"SUMISLOG";
/// Version 2 adds the series-batch record (type 5); version 1 files are read as they
/// are and upgraded in place (the header's version field) when opened for appending.
pub(crate) const VERSION: u32 = 2;
pub(crate) const OLDEST_VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const TYPE_CLASS: u8 = 1;
const TYPE_SERIES: u8 = 2;
const TYPE_DELETE: u8 = 3;
const TYPE_RENAME: u8 = 4;
pub(crate) const TYPE_SERIES_BATCH: u8 = 5;
/// Batch entry flag: class, method and xff follow (else they are the previous entry's).
const BATCH_META: u8 = 1;
/// At most this many series in one batch record (a longer queue is cut into several).
const BATCH_MAX: usize = 4096;

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The series queued for one batch record: consecutive ids, front-coded names. The
/// last series queued is held back and written as a plain series record after the
/// batch, so that the log's last record names one series, as in version 1: a torn
/// tail costs the last series of the last write, and damage to any batch is followed
/// by a record, which tells it from a torn tail. That costs about 40 bytes a write.
#[derive(Default)]
struct Batch {
    first_id: u32,
    /// Entries in `body`.
    count: u32,
    body: Vec<u8>,
    prev_name: Vec<u8>,
    prev_meta: Option<(u16, u8, u32)>,
    last: Option<(u32, u16, AggMethod, f32, String)>,
}

impl Batch {
    /// Queues a series when its id follows the last one queued; false otherwise.
    fn add(&mut self, id: u32, class: u16, method: AggMethod, xff: f32, name: &str) -> bool {
        let queued = self.count + u32::from(self.last.is_some());
        if queued > 0
            && (self.first_id.checked_add(queued) != Some(id) || queued as usize >= BATCH_MAX)
        {
            return false;
        }
        if queued == 0 {
            self.first_id = id;
            self.prev_name.clear();
            self.prev_meta = None;
        }
        if let Some((_, c, m, x, n)) = self.last.take() {
            self.push_entry(c, m, x, &n);
        }
        self.last = Some((id, class, method, xff, name.to_string()));
        true
    }

    fn push_entry(&mut self, class: u16, method: AggMethod, xff: f32, name: &str) {
        let meta = (class, method.code(), xff.to_bits());
        if self.prev_meta == Some(meta) {
            self.body.push(0);
        } else {
            self.body.push(BATCH_META);
            self.body.extend_from_slice(&class.to_le_bytes());
            self.body.push(meta.1);
            self.body.extend_from_slice(&meta.2.to_le_bytes());
            self.prev_meta = Some(meta);
        }
        let name = name.as_bytes();
        let shared = name
            .iter()
            .zip(&self.prev_name)
            .take_while(|(a, b)| a == b)
            .count();
        put_varint(&mut self.body, shared as u64);
        put_varint(&mut self.body, (name.len() - shared) as u64);
        self.body.extend_from_slice(&name[shared..]);
        self.prev_name.clear();
        self.prev_name.extend_from_slice(name);
        self.count += 1;
    }

    /// Appends the queue to `out` (a batch record when it holds two series or more,
    /// then the last series' own record) and empties it.
    fn encode(&mut self, out: &mut Vec<u8>) {
        if self.count > 0 {
            let start = out.len();
            out.extend_from_slice(&[0; 8]);
            out.push(TYPE_SERIES_BATCH);
            put_varint(out, u64::from(self.first_id));
            put_varint(out, u64::from(self.count));
            out.extend_from_slice(&self.body);
            frame(out, start);
            self.count = 0;
            self.body.clear();
        }
        if let Some((id, class, method, xff, name)) = self.last.take() {
            LogRecord::Series {
                id,
                class,
                method,
                xff,
                name: &name,
            }
            .encode(out);
        }
    }
}

/// Fills in the length and CRC of the record that starts at `start`.
fn frame(out: &mut [u8], start: usize) {
    let len = (out.len() - start - 8) as u32;
    let crc = crc32c::crc32c(&out[start + 8..]);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// One decoded record.
#[derive(Debug, PartialEq)]
pub(crate) enum LogRecord<'a> {
    Class {
        id: u16,
        archives: Vec<Archive>,
        widths: Vec<i64>,
    },
    Series {
        id: u32,
        class: u16,
        method: AggMethod,
        xff: f32,
        name: &'a str,
    },
    /// The series is deleted: its id is never used again.
    Delete { id: u32 },
    /// The series is now called `name` (its id and data stay).
    Rename { id: u32, name: &'a str },
}

impl LogRecord<'_> {
    fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend_from_slice(&[0; 8]);
        match self {
            LogRecord::Class {
                id,
                archives,
                widths,
            } => {
                out.push(TYPE_CLASS);
                out.extend_from_slice(&id.to_le_bytes());
                out.push(archives.len() as u8);
                for (a, w) in archives.iter().zip(widths) {
                    out.extend_from_slice(&a.step_secs.to_le_bytes());
                    out.extend_from_slice(&a.points.to_le_bytes());
                    out.extend_from_slice(&w.to_le_bytes());
                }
            }
            LogRecord::Series {
                id,
                class,
                method,
                xff,
                name,
            } => {
                out.push(TYPE_SERIES);
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(&class.to_le_bytes());
                out.push(method.code());
                out.extend_from_slice(&xff.to_bits().to_le_bytes());
                out.extend_from_slice(name.as_bytes());
            }
            LogRecord::Delete { id } => {
                out.push(TYPE_DELETE);
                out.extend_from_slice(&id.to_le_bytes());
            }
            LogRecord::Rename { id, name } => {
                out.push(TYPE_RENAME);
                out.extend_from_slice(&id.to_le_bytes());
                out.extend_from_slice(name.as_bytes());
            }
        }
        frame(out, start);
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.buf.len() < n {
            return None;
        }
        let (a, b) = self.buf.split_at(n);
        self.buf = b;
        Some(a)
    }
    fn u8(&mut self) -> Option<u8> {
        self.take(1).and_then(|b| b.first().copied())
    }
    fn u16(&mut self) -> Option<u16> {
        self.take(2)
            .and_then(|b| b.try_into().ok())
            .map(u16::from_le_bytes)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .and_then(|b| b.try_into().ok())
            .map(u32::from_le_bytes)
    }
    fn i64(&mut self) -> Option<i64> {
        self.take(8)
            .and_then(|b| b.try_into().ok())
            .map(i64::from_le_bytes)
    }
    /// LEB128, at most 10 bytes, no bits past 64.
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.u8()?;
            if i == 9 && b > 1 {
                return None;
            }
            v |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

/// One series of a batch record, decoded; the name is `names[start..end]`.
#[derive(Debug, PartialEq)]
pub(crate) struct BatchEntry {
    pub(crate) id: u32,
    pub(crate) class: u16,
    method: AggMethod,
    xff: f32,
    start: usize,
    end: usize,
}

/// Decodes a whole batch record's payload (after its type byte) before any of it is
/// applied: every entry checked (ids in range, front coding within the previous name,
/// names UTF-8, no trailing bytes). The names are appended to `names`.
pub(crate) fn decode_batch(p: &[u8], names: &mut Vec<u8>) -> Result<Vec<BatchEntry>, String> {
    let mut c = Cursor { buf: p };
    let short = || "series batch shorter than its entries need".to_string();
    let first = c.varint().ok_or_else(short)?;
    let count = c.varint().ok_or_else(short)?;
    let first = u32::try_from(first).map_err(|_| format!("batch first id {first} over u32"))?;
    if count == 0 || count > c.buf.len() as u64 / 3 {
        return Err(format!(
            "series batch of {count} entries in {} bytes",
            p.len()
        ));
    }
    if u64::from(first) + count > u64::from(u32::MAX) {
        return Err(format!(
            "series batch ids {first}+{count} past the id space"
        ));
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut meta: Option<(u16, AggMethod, f32)> = None;
    let (mut prev_start, mut prev_end) = (names.len(), names.len());
    for k in 0..count as u32 {
        let flags = c.u8().ok_or_else(short)?;
        if flags & !BATCH_META != 0 {
            return Err(format!("series batch entry {k}: unknown flags {flags:#x}"));
        }
        if flags & BATCH_META != 0 {
            let class = c.u16().ok_or_else(short)?;
            let code = c.u8().ok_or_else(short)?;
            let method = AggMethod::from_code(code)
                .ok_or_else(|| format!("unknown aggregation code {code}"))?;
            let xff = f32::from_bits(c.u32().ok_or_else(short)?);
            meta = Some((class, method, xff));
        }
        let (class, method, xff) =
            meta.ok_or_else(|| "series batch starts without class and method".to_string())?;
        let shared = c.varint().ok_or_else(short)?;
        let suffix = c.varint().ok_or_else(short)?;
        if shared > (prev_end - prev_start) as u64 {
            return Err(format!(
                "series batch entry {k} shares {shared} bytes of a {}-byte name",
                prev_end - prev_start
            ));
        }
        let suffix = usize::try_from(suffix).map_err(|_| short())?;
        let tail = c.take(suffix).ok_or_else(short)?;
        let start = names.len();
        names.extend_from_within(prev_start..prev_start + shared as usize);
        names.extend_from_slice(tail);
        let end = names.len();
        if start == end {
            return Err(format!("series batch entry {k} has an empty name"));
        }
        if std::str::from_utf8(&names[start..end]).is_err() {
            return Err(format!("series batch entry {k}: name is not UTF-8"));
        }
        out.push(BatchEntry {
            id: first + k,
            class,
            method,
            xff,
            start,
            end,
        });
        (prev_start, prev_end) = (start, end);
    }
    if !c.buf.is_empty() {
        return Err(format!("series batch has {} trailing bytes", c.buf.len()));
    }
    Ok(out)
}

fn decode_payload(p: &[u8]) -> Result<LogRecord<'_>, String> {
    let mut c = Cursor { buf: p };
    let short = || "record shorter than its type needs".to_string();
    match c.u8().ok_or_else(short)? {
        TYPE_CLASS => {
            let id = c.u16().ok_or_else(short)?;
            let n = c.u8().ok_or_else(short)? as usize;
            let mut archives = Vec::with_capacity(n);
            let mut widths = Vec::with_capacity(n);
            for _ in 0..n {
                let step_secs = c.u32().ok_or_else(short)?;
                let points = c.u32().ok_or_else(short)?;
                let w = c.i64().ok_or_else(short)?;
                if step_secs == 0 || points == 0 || w <= 0 || w % i64::from(step_secs) != 0 {
                    return Err(format!(
                        "class {id}: invalid archive {step_secs}:{points} width {w}"
                    ));
                }
                archives.push(Archive { step_secs, points });
                widths.push(w);
            }
            Ok(LogRecord::Class {
                id,
                archives,
                widths,
            })
        }
        TYPE_SERIES => {
            let id = c.u32().ok_or_else(short)?;
            let class = c.u16().ok_or_else(short)?;
            let code = c.u8().ok_or_else(short)?;
            let method = AggMethod::from_code(code)
                .ok_or_else(|| format!("unknown aggregation code {code}"))?;
            let xff = f32::from_bits(c.u32().ok_or_else(short)?);
            let name =
                std::str::from_utf8(c.buf).map_err(|_| "series name is not UTF-8".to_string())?;
            Ok(LogRecord::Series {
                id,
                class,
                method,
                xff,
                name,
            })
        }
        TYPE_DELETE => {
            let id = c.u32().ok_or_else(short)?;
            if !c.buf.is_empty() {
                return Err(format!("delete record of series {id} has trailing bytes"));
            }
            Ok(LogRecord::Delete { id })
        }
        TYPE_RENAME => {
            let id = c.u32().ok_or_else(short)?;
            let name = std::str::from_utf8(c.buf)
                .map_err(|_| "new series name is not UTF-8".to_string())?;
            if name.is_empty() {
                return Err(format!("rename of series {id} to an empty name"));
            }
            Ok(LogRecord::Rename { id, name })
        }
        t => Err(format!("unknown record type {t}")),
    }
}

/// What loading found.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct LoadReport {
    pub(crate) records: u64,
    /// Bytes cut from a torn tail (0 when the log ended cleanly).
    pub(crate) cut_bytes: u64,
}

/// Reads every record of the log at `path`, passing each to `visit`. A torn or corrupt
/// tail is cut from the file; a corrupt record followed by more data is an error
/// unless `repair`, when it is cut too. `visit` may refuse a record (an id out of
/// order): that counts as corruption at that record.
pub(crate) fn load(
    path: &Path,
    repair: bool,
    mut visit: impl FnMut(LogRecord<'_>) -> Result<(), String>,
) -> Result<LoadReport, StoreError> {
    let mut report = LoadReport::default();
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(StoreError::io("open", path, e)),
    };
    let mut data = Vec::new();
    file.read_to_end(&mut data)
        .map_err(|e| StoreError::io("read", path, e))?;
    drop(file);
    if data.len() < HEADER_LEN {
        // a crash while creating the log: nothing in it was acknowledged
        report.cut_bytes = data.len() as u64;
        return Ok(report);
    }
    if &data[..8] != MAGIC {
        return Err(StoreError::corrupt("series log", path, 0, "bad magic"));
    }
    let version = u32::from_le_bytes([data[8], data[9], data[10], data[11]]);
    if !(OLDEST_VERSION..=VERSION).contains(&version) {
        return Err(StoreError::corrupt(
            "series log",
            path,
            8,
            format!("version {version}, this build reads {OLDEST_VERSION} to {VERSION}"),
        ));
    }
    let mut names = Vec::new();
    let mut off = HEADER_LEN;
    let mut cut_at = None;
    while off < data.len() {
        let rest = &data[off..];
        let problem = if rest.len() < 8 {
            Some("truncated record header".to_string())
        } else {
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
            match rest.get(8..8 + len) {
                None => Some(format!("record of {len} bytes runs past the end")),
                Some(p) if crc32c::crc32c(p) != crc => Some("crc mismatch".to_string()),
                Some(p) if p.first() == Some(&TYPE_SERIES_BATCH) => {
                    match apply_batch(&p[1..], &mut names, &mut visit) {
                        Ok(n) => {
                            report.records += n;
                            off += 8 + len;
                            None
                        }
                        Err((0, e)) => Some(e),
                        Err((k, e)) => {
                            // part of the batch is applied: cutting it would leave the
                            // caller's state ahead of the file
                            return Err(StoreError::corrupt(
                                "series log",
                                path,
                                off as u64,
                                format!("series batch refused at entry {k}: {e}"),
                            ));
                        }
                    }
                }
                Some(p) => match decode_payload(p).and_then(&mut visit) {
                    Ok(()) => {
                        report.records += 1;
                        off += 8 + len;
                        None
                    }
                    Err(e) => Some(e),
                },
            }
        };
        if let Some(problem) = problem {
            let is_tail = rest.len() < 8 || {
                let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
                8 + len >= rest.len()
            };
            if !is_tail && !repair {
                return Err(StoreError::corrupt("series log", path, off as u64, problem));
            }
            tracing::warn!(path = %path.display(), offset = off, %problem, "cutting series log");
            cut_at = Some(off);
            break;
        }
    }
    if let Some(at) = cut_at {
        report.cut_bytes = (data.len() - at) as u64;
        let f = OpenOptions::new()
            .write(true)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        f.set_len(at as u64)
            .map_err(|e| StoreError::io("truncate", path, e))?;
        f.sync_all().map_err(|e| StoreError::io("fsync", path, e))?;
    }
    Ok(report)
}

/// Decodes a batch record and passes its series to `visit` one by one; returns how
/// many, or the index of the entry that failed (0 when nothing was applied: a decode
/// failure or the first entry refused) and why.
fn apply_batch(
    p: &[u8],
    names: &mut Vec<u8>,
    visit: &mut impl FnMut(LogRecord<'_>) -> Result<(), String>,
) -> Result<u64, (usize, String)> {
    names.clear();
    let entries = decode_batch(p, names).map_err(|e| (0, e))?;
    for (k, e) in entries.iter().enumerate() {
        // decode_batch checked every name is UTF-8
        let name = std::str::from_utf8(&names[e.start..e.end]).map_err(|x| (k, x.to_string()))?;
        visit(LogRecord::Series {
            id: e.id,
            class: e.class,
            method: e.method,
            xff: e.xff,
            name,
        })
        .map_err(|x| (k, x))?;
    }
    Ok(entries.len() as u64)
}

/// The series records of a whole log file held in memory, decoded up to the first
/// bad record (for the fuzz target): `(id, name)` of each, and why reading stopped.
pub fn decode_series(data: &[u8]) -> (Vec<(u32, String)>, Option<String>) {
    let mut out = Vec::new();
    if data.len() < HEADER_LEN || &data[..8] != MAGIC {
        return (out, Some("bad header".into()));
    }
    let mut off = HEADER_LEN;
    let mut names = Vec::new();
    while off < data.len() {
        let rest = &data[off..];
        let Some(len) = rest
            .get(..4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
        else {
            return (out, Some("truncated record header".into()));
        };
        let Some(p) = rest.get(8..8usize.saturating_add(len)) else {
            return (out, Some("record runs past the end".into()));
        };
        if crc32c::crc32c(p) != u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]) {
            return (out, Some("crc mismatch".into()));
        }
        let mut visit = |r: LogRecord<'_>| {
            if let LogRecord::Series { id, name, .. } = r {
                out.push((id, name.to_string()));
            }
            Ok(())
        };
        let res = if p.first() == Some(&TYPE_SERIES_BATCH) {
            apply_batch(&p[1..], &mut names, &mut visit)
                .map(|_| ())
                .map_err(|(_, e)| e)
        } else {
            decode_payload(p).and_then(&mut visit)
        };
        if let Err(e) = res {
            return (out, Some(e));
        }
        off += 8 + len;
    }
    (out, None)
}

/// A whole log file (header and records) holding series `first_id..` named `names`,
/// as [`SeriesLog`] writes them (for the fuzz target's round trip).
pub fn encode_series(first_id: u32, names: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    let mut batch = Batch::default();
    for (k, name) in names.iter().enumerate() {
        let id = first_id.wrapping_add(k as u32);
        let method = if k % 5 == 0 {
            AggMethod::Sum
        } else {
            AggMethod::Average
        };
        if !batch.add(id, 0, method, 0.5, name) {
            batch.encode(&mut out);
            batch.add(id, 0, method, 0.5, name);
        }
    }
    batch.encode(&mut out);
    out
}

/// A handle that fsyncs the log when it has unsynced bytes; the WAL calls it before
/// its own fsync so that a synced WAL record never names an unsynced series.
#[derive(Clone)]
pub(crate) struct LogSync {
    file: Arc<File>,
    dirty: Arc<AtomicBool>,
    path: Arc<PathBuf>,
}

impl LogSync {
    pub(crate) fn sync(&self) -> Result<(), StoreError> {
        if self.dirty.swap(false, Ordering::AcqRel) {
            if let Err(e) = self.file.sync_data() {
                self.dirty.store(true, Ordering::Release);
                return Err(StoreError::io("fsync", self.path.as_path(), e));
            }
        }
        Ok(())
    }
}

/// The appending side.
pub(crate) struct SeriesLog {
    file: Arc<File>,
    path: PathBuf,
    pending: Vec<u8>,
    /// Series records queued after `pending`, written as batch records.
    batch: Batch,
    dirty: Arc<AtomicBool>,
    bytes: u64,
}

impl SeriesLog {
    /// Opens (creating when absent) the log for appending, after [`load`] has cut any
    /// torn tail.
    pub(crate) fn open(path: &Path) -> Result<SeriesLog, StoreError> {
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| StoreError::io("open", path, e))?;
        let mut bytes = file
            .metadata()
            .map_err(|e| StoreError::io("stat", path, e))?
            .len();
        if bytes == 0 {
            let mut h = Vec::with_capacity(HEADER_LEN);
            h.extend_from_slice(MAGIC);
            h.extend_from_slice(&VERSION.to_le_bytes());
            h.extend_from_slice(&0u32.to_le_bytes());
            file.write_all(&h)
                .map_err(|e| StoreError::io("write", path, e))?;
            file.sync_all()
                .map_err(|e| StoreError::io("fsync", path, e))?;
            bytes = HEADER_LEN as u64;
        } else {
            upgrade_header(path)?;
        }
        Ok(SeriesLog {
            file: Arc::new(file),
            path: path.to_path_buf(),
            pending: Vec::new(),
            batch: Batch::default(),
            dirty: Arc::new(AtomicBool::new(false)),
            bytes,
        })
    }

    pub(crate) fn sync_handle(&self) -> LogSync {
        LogSync {
            file: self.file.clone(),
            dirty: self.dirty.clone(),
            path: Arc::new(self.path.clone()),
        }
    }

    /// Queues a record; [`write_pending`](Self::write_pending) writes the queue. Runs
    /// of series records with consecutive ids become batch records (type 5).
    pub(crate) fn push(&mut self, rec: &LogRecord<'_>) {
        if let LogRecord::Series {
            id,
            class,
            method,
            xff,
            name,
        } = *rec
        {
            if self.batch.add(id, class, method, xff, name) {
                return;
            }
            self.batch.encode(&mut self.pending);
            let added = self.batch.add(id, class, method, xff, name);
            debug_assert!(added, "an empty batch takes any series");
            return;
        }
        self.batch.encode(&mut self.pending);
        rec.encode(&mut self.pending);
    }

    /// Writes queued records in one `write`.
    pub(crate) fn write_pending(&mut self) -> Result<(), StoreError> {
        self.batch.encode(&mut self.pending);
        if self.pending.is_empty() {
            return Ok(());
        }
        let res = (&*self.file).write_all(&self.pending);
        if let Err(e) = res {
            self.pending.clear();
            return Err(StoreError::io("write", &self.path, e));
        }
        self.bytes += self.pending.len() as u64;
        self.pending.clear();
        self.dirty.store(true, Ordering::Release);
        Ok(())
    }

    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// Raises a version-1 header to the current version before anything newer is
/// appended, so that an older build refuses the file with a clear message instead of
/// cutting records it cannot read.
fn upgrade_header(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::FileExt;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| StoreError::io("open", path, e))?;
    let mut v = [0u8; 4];
    f.read_exact_at(&mut v, 8)
        .map_err(|e| StoreError::io("read", path, e))?;
    if u32::from_le_bytes(v) < VERSION {
        f.write_all_at(&VERSION.to_le_bytes(), 8)
            .map_err(|e| StoreError::io("write", path, e))?;
        f.sync_all().map_err(|e| StoreError::io("fsync", path, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    fn collect(path: &Path, repair: bool) -> Result<(Vec<String>, LoadReport), StoreError> {
        let mut seen = Vec::new();
        let r = load(path, repair, |rec| {
            seen.push(format!("{rec:?}"));
            Ok(())
        })?;
        Ok((seen, r))
    }

    fn write_some(path: &Path) {
        let mut log = SeriesLog::open(path).unwrap();
        log.push(&LogRecord::Class {
            id: 0,
            archives: vec![Archive {
                step_secs: 10,
                points: 360,
            }],
            widths: vec![600],
        });
        log.write_pending().unwrap();
        for i in 0..3u32 {
            log.push(&LogRecord::Series {
                id: i,
                class: 0,
                method: AggMethod::Sum,
                xff: 0.25,
                name: &format!("a.b{i}"),
            });
            // one record a write, so that the tests below can damage one of several
            log.write_pending().unwrap();
        }
        log.sync_handle().sync().unwrap();
    }

    fn series(id: u32, name: &str, method: AggMethod) -> LogRecord<'_> {
        LogRecord::Series {
            id,
            class: 0,
            method,
            xff: 0.5,
            name,
        }
    }

    #[test]
    fn batches_front_code_names_and_round_trip() {
        let dir = TempDir::new("slog-batch");
        let path = dir.path().join("series.log");
        let names = [
            "host00001.cpu.user",
            "host00001.cpu.system",
            "host00001.disk.sda.reads",
            "host00002.cpu.user",
            "héllo.wörld",
            "héllo.wörm",
            "h",
            "h.a;tag=v",
        ];
        let mut log = SeriesLog::open(&path).unwrap();
        log.push(&LogRecord::Class {
            id: 0,
            archives: vec![Archive {
                step_secs: 10,
                points: 360,
            }],
            widths: vec![600],
        });
        for (i, n) in names.iter().enumerate() {
            let m = if i % 3 == 0 {
                AggMethod::Max
            } else {
                AggMethod::Average
            };
            log.push(&series(i as u32, n, m));
        }
        log.push(&LogRecord::Delete { id: 1 });
        log.push(&series(8, "after.delete", AggMethod::Sum));
        log.write_pending().unwrap();
        let front_coded = log.bytes();
        let (seen, r) = collect(&path, false).unwrap();
        assert_eq!(r.records, 11);
        assert_eq!(r.cut_bytes, 0);
        for (i, n) in names.iter().enumerate() {
            let m = if i % 3 == 0 { "Max" } else { "Average" };
            assert_eq!(
                seen[i + 1],
                format!("Series {{ id: {i}, class: 0, method: {m}, xff: 0.5, name: {n:?} }}")
            );
        }
        assert_eq!(seen[9], "Delete { id: 1 }");
        assert!(seen[10].contains("after.delete"), "{seen:?}");
        // the same records one by one (version 1's form) take more room
        let mut plain = Vec::new();
        for (i, n) in names.iter().enumerate() {
            series(i as u32, n, AggMethod::Max).encode(&mut plain);
        }
        assert!(
            (front_coded as usize) < HEADER_LEN + 40 + plain.len(),
            "{front_coded} vs {}",
            plain.len()
        );
    }

    #[test]
    fn version_1_logs_are_read_and_upgraded() {
        let dir = TempDir::new("slog-v1");
        let path = dir.path().join("series.log");
        // a log as version 1 wrote it: header, then one record per series
        let mut data = Vec::new();
        data.extend_from_slice(MAGIC);
        data.extend_from_slice(&1u32.to_le_bytes());
        data.extend_from_slice(&0u32.to_le_bytes());
        LogRecord::Class {
            id: 0,
            archives: vec![Archive {
                step_secs: 60,
                points: 10,
            }],
            widths: vec![60],
        }
        .encode(&mut data);
        series(0, "old.one", AggMethod::Last).encode(&mut data);
        std::fs::write(&path, &data).unwrap();
        let (seen, _) = collect(&path, false).unwrap();
        assert_eq!(seen.len(), 2);
        let mut log = SeriesLog::open(&path).unwrap();
        log.push(&series(1, "new.one", AggMethod::Sum));
        log.write_pending().unwrap();
        let head = std::fs::read(&path).unwrap();
        assert_eq!(head[8..12], VERSION.to_le_bytes());
        let (seen, _) = collect(&path, false).unwrap();
        assert_eq!(seen.len(), 3);
        assert!(seen[1].contains("old.one") && seen[2].contains("new.one"));
        // a version this build does not know is refused with a clear message
        let mut future = head.clone();
        future[8..12].copy_from_slice(&9u32.to_le_bytes());
        std::fs::write(&path, &future).unwrap();
        let err = collect(&path, false).unwrap_err().to_string();
        assert!(err.contains("version 9"), "{err}");
    }

    #[test]
    fn malformed_batches_are_refused() {
        let mut names = Vec::new();
        let mut ok = Batch::default();
        assert!(ok.add(7, 0, AggMethod::Sum, 0.5, "a.b"));
        assert!(ok.add(8, 0, AggMethod::Sum, 0.5, "a.c"));
        assert!(ok.add(9, 0, AggMethod::Sum, 0.5, "a.cd"));
        assert!(
            !ok.add(11, 0, AggMethod::Sum, 0.5, "a.d"),
            "ids must follow"
        );
        let mut rec = Vec::new();
        ok.encode(&mut rec);
        // the batch (7, 8), then the last series' own record
        let len = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]) as usize;
        let payload = &rec[9..8 + len];
        assert_eq!(rec[8 + len + 8], TYPE_SERIES);
        let e = decode_batch(payload, &mut names).unwrap();
        assert_eq!((e[1].id, &names[e[1].start..e[1].end]), (8, &b"a.c"[..]));
        // every truncation and every trailing byte is refused, never misread
        for cut in 0..payload.len() {
            assert!(decode_batch(&payload[..cut], &mut names).is_err(), "{cut}");
        }
        let mut long = payload.to_vec();
        long.push(0);
        assert!(decode_batch(&long, &mut names).is_err());
        // shared prefix longer than the previous name; missing meta; bad UTF-8
        assert!(decode_batch(&[0, 1, 1, 0, 0, 1, b'x'], &mut names).is_err());
        assert!(decode_batch(&[0, 1, 0, 0, 1, b'x'], &mut names).is_err());
        assert!(decode_batch(&[0, 1, 1, 0, 0, 2, 0, 0, 0, 0, 0, 1, 0xff], &mut names).is_err());
        assert!(decode_batch(&[0, 0], &mut names).is_err(), "empty batch");
        // a batch refused after its first entry applied is a hard error, even at the tail
        let dir = TempDir::new("slog-partial");
        let path = dir.path().join("series.log");
        {
            let mut log = SeriesLog::open(&path).unwrap();
            log.push(&series(0, "x.a", AggMethod::Sum));
            log.push(&series(1, "x.b", AggMethod::Sum));
            log.push(&series(2, "x.c", AggMethod::Sum));
            log.write_pending().unwrap();
        }
        let mut n = 0;
        let err = load(&path, true, |_| {
            n += 1;
            if n == 2 {
                Err("refused".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("entry 1"), "{err}");
        let (read, problem) = decode_series(&std::fs::read(&path).unwrap());
        assert_eq!((read.len(), problem), (3, None));
    }

    #[test]
    fn round_trip() {
        let dir = TempDir::new("slog-rt");
        let path = dir.path().join("series.log");
        write_some(&path);
        let (seen, r) = collect(&path, false).unwrap();
        assert_eq!(r.records, 4);
        assert_eq!(r.cut_bytes, 0);
        assert!(
            seen[3].contains("a.b2") && seen[3].contains("Sum"),
            "{seen:?}"
        );
    }

    #[test]
    fn delete_and_rename_records_round_trip() {
        let dir = TempDir::new("slog-admin");
        let path = dir.path().join("series.log");
        write_some(&path);
        {
            let mut log = SeriesLog::open(&path).unwrap();
            log.push(&LogRecord::Delete { id: 1 });
            log.push(&LogRecord::Rename {
                id: 2,
                name: "new.name",
            });
            log.write_pending().unwrap();
        }
        let (seen, r) = collect(&path, false).unwrap();
        assert_eq!(r.records, 6);
        assert_eq!(seen[4], "Delete { id: 1 }");
        assert_eq!(seen[5], "Rename { id: 2, name: \"new.name\" }");
        // malformed payloads are refused, not misread
        assert!(decode_payload(&[TYPE_DELETE, 1, 0]).is_err());
        assert!(decode_payload(&[TYPE_DELETE, 1, 0, 0, 0, 9]).is_err());
        assert!(decode_payload(&[TYPE_RENAME, 1, 0, 0, 0]).is_err());
        assert!(decode_payload(&[TYPE_RENAME, 1, 0, 0, 0, 0xff]).is_err());
    }

    #[test]
    fn torn_tail_is_cut() {
        let dir = TempDir::new("slog-torn");
        let path = dir.path().join("series.log");
        write_some(&path);
        let full = std::fs::metadata(&path).unwrap().len();
        // chop the last record in half
        let f = OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(full - 5).unwrap();
        let (seen, r) = collect(&path, false).unwrap();
        assert_eq!(seen.len(), 3);
        assert!(r.cut_bytes > 0);
        // the file was truncated to the last good record, and appending works again
        let (_, r2) = collect(&path, false).unwrap();
        assert_eq!(r2.cut_bytes, 0);
        assert_eq!(r2.records, 3);
    }

    #[test]
    fn corruption_in_the_middle_needs_repair() {
        let dir = TempDir::new("slog-mid");
        let path = dir.path().join("series.log");
        write_some(&path);
        let mut data = std::fs::read(&path).unwrap();
        // flip a byte in the first series record's payload
        let idx = HEADER_LEN + 8 + 1 + 2 + 1 + 16 + 8 + 3;
        data[idx] ^= 0xff;
        std::fs::write(&path, &data).unwrap();
        let err = collect(&path, false).unwrap_err();
        assert!(err.to_string().contains("crc mismatch"), "{err}");
        let (seen, r) = collect(&path, true).unwrap();
        assert_eq!(seen.len(), 1);
        assert!(r.cut_bytes > 0);
    }
}
