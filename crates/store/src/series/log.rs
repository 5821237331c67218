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
pub(crate) const VERSION: u32 = 1;
const HEADER_LEN: usize = 16;
const TYPE_CLASS: u8 = 1;
const TYPE_SERIES: u8 = 2;
const TYPE_DELETE: u8 = 3;
const TYPE_RENAME: u8 = 4;

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
        let len = (out.len() - start - 8) as u32;
        let crc = crc32c::crc32c(&out[start + 8..]);
        out[start..start + 4].copy_from_slice(&len.to_le_bytes());
        out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
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
    if version != VERSION {
        return Err(StoreError::corrupt(
            "series log",
            path,
            8,
            format!("version {version}, expected {VERSION}"),
        ));
    }
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
        }
        Ok(SeriesLog {
            file: Arc::new(file),
            path: path.to_path_buf(),
            pending: Vec::new(),
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

    /// Queues a record; [`write_pending`](Self::write_pending) writes the queue.
    pub(crate) fn push(&mut self, rec: &LogRecord<'_>) {
        rec.encode(&mut self.pending);
    }

    /// Writes queued records in one `write`.
    pub(crate) fn write_pending(&mut self) -> Result<(), StoreError> {
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
        for i in 0..3u32 {
            log.push(&LogRecord::Series {
                id: i,
                class: 0,
                method: AggMethod::Sum,
                xff: 0.25,
                name: &format!("a.b{i}"),
            });
        }
        log.write_pending().unwrap();
        log.sync_handle().sync().unwrap();
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
