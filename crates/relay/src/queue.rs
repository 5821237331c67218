//! The bounded on-disk queue of one destination: a log of segment files.
//!
//! Points are appended here before the relay counts them accepted, and leave only
//! once written to the destination's socket; so a destination that is down or slow
//! gets its backlog in order when it is back, and a relay killed with `SIGKILL`
//! resumes from the queue (a `write(2)` that returned is in the page cache, which
//! outlives the process; with [`QueueFsync::Batch`] each append is also `fdatasync`ed
//! before it returns, so that it survives a power loss too, see docs/relay.md).
//!
//! Layout of the queue directory (one per destination):
//!
//! ```text
//! 00000000000000000001.seg   segment: "SUMIRQ01", then records
//! 00000000000000000002.seg
//! cursor                     segment u64 LE | offset u64 LE | crc32c of both u32 LE
//! ```
//!
//! A record is `len u32 LE | points u32 LE | crc32c(payload) u32 LE | payload`, the
//! payload being carbon plaintext lines (`name value timestamp\n`). The cursor names
//! the first record not yet delivered; it is written after each delivery (without
//! `fsync`), so after a crash the last batch may be delivered twice, never lost.
//!
//! On open, segments before the cursor are deleted, and the tail of the last segment
//! is checked: a torn record (a crash of the machine mid-write) is cut off and
//! counted. A damaged record in the middle is skipped with the rest of its segment,
//! counted and logged.
//!
//! The bound is on bytes not yet delivered ([`QueueOptions::max_bytes`]); an append
//! that would pass it is refused and its points counted as dropped.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// The first bytes of every segment: format name and version.
pub const SEGMENT_MAGIC: &[u8; 8] = b"SUMIRQ01";
/// Record header: payload length, points, CRC32C of the payload.
pub const RECORD_HEADER: usize = 12;
/// The largest payload a record may hold (a reader refuses longer lengths as damage).
pub const MAX_RECORD_BYTES: usize = 64 << 20;

/// When the queue forces its appends to disk (`[queue] fsync` in relay.toml).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QueueFsync {
    /// Never: an append is in the page cache when it returns, which outlives the
    /// process (`SIGKILL`) but not the machine (a power loss, a kernel crash).
    #[default]
    Never,
    /// Every append (one batch of points, as a connection's reader hands it over) is
    /// `fdatasync`ed before it returns, and a new segment's directory entry is synced:
    /// what the relay accepted survives the machine as well. Costs a disk flush per
    /// batch.
    Batch,
}

/// Sizes of one queue, and its durability.
#[derive(Clone, Debug)]
pub struct QueueOptions {
    /// Bytes on disk not yet delivered beyond which appends are refused (dropped).
    pub max_bytes: u64,
    /// A segment is closed and a new one started past this size.
    pub segment_bytes: u64,
    /// When appends are forced to disk.
    pub fsync: QueueFsync,
}

impl Default for QueueOptions {
    /// 1 GiB of backlog per destination (about 20 million points of 50-byte lines: an
    /// hour of 5,000 points/s), in 64 MiB segments (deleted as soon as delivered).
    fn default() -> Self {
        QueueOptions {
            max_bytes: 1 << 30,
            segment_bytes: 64 << 20,
            fsync: QueueFsync::Never,
        }
    }
}

/// What the queue counts (read by `/metrics`).
#[derive(Debug, Default)]
pub struct QueueStats {
    pub appended_points: AtomicU64,
    pub delivered_points: AtomicU64,
    pub dropped_points: AtomicU64,
    pub backlog_points: AtomicU64,
    pub backlog_bytes: AtomicU64,
    pub damaged_records: AtomicU64,
    /// `fdatasync`s of appends ([`QueueFsync::Batch`]).
    pub fsyncs: AtomicU64,
}

/// A position in the log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position {
    pub segment: u64,
    pub offset: u64,
}

/// A damaged or unreadable queue.
#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("queue {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> QueueError + '_ {
    move |source| QueueError::Io {
        path: path.to_path_buf(),
        source,
    }
}

struct Writer {
    file: File,
    head: Position,
    /// Undelivered records' sizes are tracked by the stats; this is the byte count
    /// appended since open, to compute the backlog.
    closed: bool,
}

/// One destination's queue. Appends from any thread; one reader (the sender).
pub struct DiskQueue {
    dir: PathBuf,
    options: QueueOptions,
    writer: Mutex<Writer>,
    grew: Condvar,
    pub stats: QueueStats,
    reader: Mutex<Reader>,
}

struct Reader {
    at: Position,
    file: Option<(u64, File)>,
    cursor: File,
}

/// Records read and not yet acknowledged.
#[derive(Debug, Default)]
pub struct Batch {
    /// Concatenated payloads (carbon plaintext lines).
    pub data: Vec<u8>,
    pub points: u64,
    bytes: u64,
    end: Option<Position>,
}

fn segment_path(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("{n:020}.seg"))
}

fn list_segments(dir: &Path) -> Result<Vec<u64>, QueueError> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).map_err(io_err(dir))? {
        let e = e.map_err(io_err(dir))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if let Some(n) = name
            .strip_suffix(".seg")
            .and_then(|s| s.parse::<u64>().ok())
        {
            out.push(n);
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// One record found by [`scan_segment`].
#[derive(Debug, PartialEq, Eq)]
pub enum Scanned {
    Record {
        offset: u64,
        len: usize,
        points: u32,
    },
    /// Bytes from `offset` are not a whole, intact record (why).
    Damage { offset: u64, reason: &'static str },
}

/// Walks the records of a segment's bytes (magic included) from `from`; stops at the
/// first damage. Pure, so the fuzz target drives it.
pub fn scan_segment(bytes: &[u8], from: u64) -> Vec<Scanned> {
    let mut out = Vec::new();
    if bytes.len() < SEGMENT_MAGIC.len() || &bytes[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
        out.push(Scanned::Damage {
            offset: 0,
            reason: "bad magic",
        });
        return out;
    }
    let mut at = (from as usize).max(SEGMENT_MAGIC.len());
    while at < bytes.len() {
        match check_record(&bytes[at..]) {
            Ok((len, points)) => {
                out.push(Scanned::Record {
                    offset: at as u64,
                    len,
                    points,
                });
                at += RECORD_HEADER + len;
            }
            Err(reason) => {
                out.push(Scanned::Damage {
                    offset: at as u64,
                    reason,
                });
                break;
            }
        }
    }
    out
}

/// The payload length and points of the record at the start of `b`, if whole and
/// intact.
fn check_record(b: &[u8]) -> Result<(usize, u32), &'static str> {
    let Some(h) = b.get(..RECORD_HEADER) else {
        return Err("torn record header");
    };
    let word = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let (len, points, crc) = (word(0) as usize, word(4), word(8));
    if len > MAX_RECORD_BYTES {
        return Err("record length out of range");
    }
    let Some(payload) = b.get(RECORD_HEADER..RECORD_HEADER + len) else {
        return Err("torn record payload");
    };
    if crc32c::crc32c(payload) != crc {
        return Err("record checksum mismatch");
    }
    Ok((len, points))
}

fn read_cursor(path: &Path) -> Option<Position> {
    let b = fs::read(path).ok()?;
    if b.len() != 20 {
        return None;
    }
    let seg = u64::from_le_bytes(b[0..8].try_into().ok()?);
    let off = u64::from_le_bytes(b[8..16].try_into().ok()?);
    let crc = u32::from_le_bytes(b[16..20].try_into().ok()?);
    (crc32c::crc32c(&b[..16]) == crc).then_some(Position {
        segment: seg,
        offset: off,
    })
}

fn encode_cursor(p: Position) -> [u8; 20] {
    let mut b = [0u8; 20];
    b[0..8].copy_from_slice(&p.segment.to_le_bytes());
    b[8..16].copy_from_slice(&p.offset.to_le_bytes());
    let crc = crc32c::crc32c(&b[..16]);
    b[16..20].copy_from_slice(&crc.to_le_bytes());
    b
}

impl DiskQueue {
    /// Opens (or creates) the queue in `dir`, resuming after the last delivered record.
    pub fn open(dir: &Path, options: QueueOptions) -> Result<DiskQueue, QueueError> {
        fs::create_dir_all(dir).map_err(io_err(dir))?;
        let stats = QueueStats::default();
        let cursor_path = dir.join("cursor");
        let mut segments = list_segments(dir)?;
        let mut at = read_cursor(&cursor_path).unwrap_or(Position {
            segment: segments.first().copied().unwrap_or(1),
            offset: SEGMENT_MAGIC.len() as u64,
        });
        // Segments wholly delivered are gone; a cursor behind the oldest segment left
        // (deleted after the cursor moved on) starts at that segment.
        for &s in segments.iter().filter(|&&s| s < at.segment) {
            let p = segment_path(dir, s);
            fs::remove_file(&p).map_err(io_err(&p))?;
        }
        segments.retain(|&s| s >= at.segment);
        if let Some(&first) = segments.first() {
            if first > at.segment {
                at = Position {
                    segment: first,
                    offset: SEGMENT_MAGIC.len() as u64,
                };
            }
        }
        // Count the backlog; cut a torn tail of the last segment.
        let (mut points, mut bytes) = (0u64, 0u64);
        let last = segments.last().copied();
        for &s in &segments {
            let p = segment_path(dir, s);
            let data = fs::read(&p).map_err(io_err(&p))?;
            let from = if s == at.segment { at.offset } else { 0 };
            for r in scan_segment(&data, from) {
                match r {
                    Scanned::Record { len, points: n, .. } => {
                        points += u64::from(n);
                        bytes += (RECORD_HEADER + len) as u64;
                    }
                    Scanned::Damage { offset, reason } => {
                        stats.damaged_records.fetch_add(1, Ordering::Relaxed);
                        tracing::warn!(
                            segment = %p.display(), offset, reason,
                            "relay queue: damaged record; the rest of the segment is skipped"
                        );
                        if Some(s) == last && offset >= SEGMENT_MAGIC.len() as u64 {
                            let f = OpenOptions::new()
                                .write(true)
                                .open(&p)
                                .map_err(io_err(&p))?;
                            f.set_len(offset.max(from)).map_err(io_err(&p))?;
                        }
                    }
                }
            }
        }
        stats.backlog_points.store(points, Ordering::Relaxed);
        stats.backlog_bytes.store(bytes, Ordering::Relaxed);

        // The writer starts a new segment: never appends behind a damaged tail.
        let head_seg = segments.last().map_or(at.segment, |&s| s + 1);
        let file = new_segment(dir, head_seg)?;
        if options.fsync == QueueFsync::Batch {
            sync_dir(dir)?;
        }
        let cursor = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&cursor_path)
            .map_err(io_err(&cursor_path))?;
        if segments.is_empty() {
            at = Position {
                segment: head_seg,
                offset: SEGMENT_MAGIC.len() as u64,
            };
        }
        cursor
            .write_all_at(&encode_cursor(at), 0)
            .map_err(io_err(&cursor_path))?;
        Ok(DiskQueue {
            dir: dir.to_path_buf(),
            options,
            writer: Mutex::new(Writer {
                file,
                head: Position {
                    segment: head_seg,
                    offset: SEGMENT_MAGIC.len() as u64,
                },
                closed: false,
            }),
            grew: Condvar::new(),
            stats,
            reader: Mutex::new(Reader {
                at,
                file: None,
                cursor,
            }),
        })
    }

    /// Appends one record of `points` lines. `Ok(false)`: the bound is hit, nothing
    /// written, the points counted dropped. `Err`: the disk refused the write (the
    /// points are not accepted either).
    pub fn append(&self, payload: &[u8], points: u32) -> Result<bool, QueueError> {
        if payload.is_empty() {
            return Ok(true);
        }
        let size = (RECORD_HEADER + payload.len()) as u64;
        if self.stats.backlog_bytes.load(Ordering::Relaxed) + size > self.options.max_bytes {
            self.stats
                .dropped_points
                .fetch_add(u64::from(points), Ordering::Relaxed);
            return Ok(false);
        }
        let mut buf = Vec::with_capacity(size as usize);
        buf.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        buf.extend_from_slice(&points.to_le_bytes());
        buf.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        buf.extend_from_slice(payload);
        let mut w = self.writer.lock();
        if w.head.offset + size > self.options.segment_bytes
            && w.head.offset > SEGMENT_MAGIC.len() as u64
        {
            let next = w.head.segment + 1;
            w.file = new_segment(&self.dir, next)?;
            if self.options.fsync == QueueFsync::Batch {
                sync_dir(&self.dir)?;
            }
            w.head = Position {
                segment: next,
                offset: SEGMENT_MAGIC.len() as u64,
            };
        }
        let path = segment_path(&self.dir, w.head.segment);
        w.file.write_all(&buf).map_err(io_err(&path))?;
        if self.options.fsync == QueueFsync::Batch {
            w.file.sync_data().map_err(io_err(&path))?;
            self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        }
        w.head.offset += size;
        self.stats.backlog_bytes.fetch_add(size, Ordering::Relaxed);
        self.stats
            .backlog_points
            .fetch_add(u64::from(points), Ordering::Relaxed);
        self.stats
            .appended_points
            .fetch_add(u64::from(points), Ordering::Relaxed);
        drop(w);
        self.grew.notify_one();
        Ok(true)
    }

    /// Wakes a reader waiting in [`DiskQueue::read`] for good (shutdown).
    pub fn close(&self) {
        self.writer.lock().closed = true;
        self.grew.notify_all();
    }

    /// Reads the next records, up to about `max_bytes`, waiting up to `wait` for one.
    /// Empty when nothing came. The batch stays queued until [`DiskQueue::ack`].
    pub fn read(&self, max_bytes: usize, wait: Duration, batch: &mut Batch) -> io::Result<()> {
        batch.data.clear();
        batch.points = 0;
        batch.bytes = 0;
        batch.end = None;
        let head = {
            let mut w = self.writer.lock();
            let r_at = self.reader.lock().at;
            if r_at >= w.head && !w.closed {
                self.grew.wait_for(&mut w, wait);
            }
            w.head
        };
        let mut r = self.reader.lock();
        let mut at = r.at;
        while at < head && batch.data.len() < max_bytes {
            if at.segment < head.segment {
                // Past the end of a finished segment: on to the next.
                let len = fs::metadata(segment_path(&self.dir, at.segment))
                    .map(|m| m.len())
                    .unwrap_or(0);
                if at.offset >= len {
                    at = Position {
                        segment: at.segment + 1,
                        offset: SEGMENT_MAGIC.len() as u64,
                    };
                    continue;
                }
            }
            if r.file.as_ref().map(|f| f.0) != Some(at.segment) {
                match File::open(segment_path(&self.dir, at.segment)) {
                    Ok(f) => r.file = Some((at.segment, f)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        at = Position {
                            segment: at.segment + 1,
                            offset: SEGMENT_MAGIC.len() as u64,
                        };
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            let Some((_, file)) = r.file.as_ref() else {
                break;
            };
            let mut h = [0u8; RECORD_HEADER];
            let got = read_full_at(file, &mut h, at.offset)?;
            let damaged = |stats: &QueueStats, reason: &str| {
                stats.damaged_records.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    segment = at.segment,
                    offset = at.offset,
                    reason,
                    "relay queue: damaged record; skipping the rest of the segment"
                );
            };
            if got < RECORD_HEADER {
                if at.segment < head.segment {
                    if got > 0 {
                        damaged(&self.stats, "torn record header");
                    }
                    at = Position {
                        segment: at.segment + 1,
                        offset: SEGMENT_MAGIC.len() as u64,
                    };
                    continue;
                }
                break;
            }
            let len = u32::from_le_bytes([h[0], h[1], h[2], h[3]]) as usize;
            let points = u32::from_le_bytes([h[4], h[5], h[6], h[7]]);
            let crc = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
            let start = batch.data.len();
            let file_len = file.metadata()?.len();
            if len > MAX_RECORD_BYTES || at.offset + (RECORD_HEADER + len) as u64 > file_len {
                if at.segment == head.segment {
                    // The writer moved the head past this record only once it was
                    // whole: a length past the end is damage.
                    damaged(&self.stats, "record longer than its segment");
                    at = head;
                    break;
                }
                damaged(&self.stats, "record length out of range");
                at = Position {
                    segment: at.segment + 1,
                    offset: SEGMENT_MAGIC.len() as u64,
                };
                continue;
            }
            batch.data.resize(start + len, 0);
            let got = read_full_at(file, &mut batch.data[start..], at.offset + 12)?;
            if got < len || crc32c::crc32c(&batch.data[start..]) != crc {
                batch.data.truncate(start);
                damaged(&self.stats, "torn or damaged record");
                at = Position {
                    segment: at.segment + 1,
                    offset: SEGMENT_MAGIC.len() as u64,
                };
                continue;
            }
            batch.points += u64::from(points);
            batch.bytes += (RECORD_HEADER + len) as u64;
            at.offset += (RECORD_HEADER + len) as u64;
        }
        if at != r.at {
            batch.end = Some(at);
        }
        // A reader that skipped damage only, with nothing to deliver, moves on now.
        if batch.data.is_empty() && at != r.at {
            drop(r);
            self.ack(batch);
        }
        Ok(())
    }

    /// Marks `batch` delivered: moves the cursor past it and deletes the segments it
    /// finished.
    pub fn ack(&self, batch: &Batch) {
        let Some(end) = batch.end else { return };
        let mut r = self.reader.lock();
        let old = r.at;
        r.at = end;
        if let Err(e) = r.cursor.write_all_at(&encode_cursor(end), 0) {
            tracing::warn!(error = %e, "relay queue: cannot write the cursor");
        }
        for s in old.segment..end.segment {
            if r.file.as_ref().map(|f| f.0) == Some(s) {
                r.file = None;
            }
            let _ = fs::remove_file(segment_path(&self.dir, s));
        }
        drop(r);
        self.stats
            .backlog_bytes
            .fetch_sub(batch.bytes, Ordering::Relaxed);
        self.stats
            .backlog_points
            .fetch_sub(batch.points, Ordering::Relaxed);
        self.stats
            .delivered_points
            .fetch_add(batch.points, Ordering::Relaxed);
    }
}

fn new_segment(dir: &Path, n: u64) -> Result<File, QueueError> {
    let p = segment_path(dir, n);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&p)
        .map_err(io_err(&p))?;
    f.write_all(SEGMENT_MAGIC).map_err(io_err(&p))?;
    Ok(f)
}

/// Makes the directory's entries (a new segment's name) durable.
fn sync_dir(dir: &Path) -> Result<(), QueueError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err(dir))
}

fn read_full_at(f: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match f.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max: u64, seg: u64) -> QueueOptions {
        QueueOptions {
            max_bytes: max,
            segment_bytes: seg,
            fsync: QueueFsync::Never,
        }
    }

    fn drain(q: &DiskQueue) -> Vec<u8> {
        let mut all = Vec::new();
        let mut b = Batch::default();
        loop {
            q.read(1000, Duration::from_millis(1), &mut b).unwrap();
            if b.end.is_none() {
                return all;
            }
            all.extend_from_slice(&b.data);
            q.ack(&b);
        }
    }

    #[test]
    fn records_come_back_in_order_across_segments_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let q = DiskQueue::open(dir.path(), opts(1 << 20, 200)).unwrap();
        let mut want = Vec::new();
        for i in 0..50 {
            let line = format!("a.b{i} {i} 100\n");
            assert!(q.append(line.as_bytes(), 1).unwrap());
            want.extend_from_slice(line.as_bytes());
        }
        // Half delivered, then "killed" (dropped without close) and reopened.
        let mut b = Batch::default();
        q.read(300, Duration::ZERO, &mut b).unwrap();
        let first = b.data.clone();
        q.ack(&b);
        drop(q);
        let q = DiskQueue::open(dir.path(), opts(1 << 20, 200)).unwrap();
        assert_eq!(
            q.stats.backlog_points.load(Ordering::Relaxed),
            50 - first.iter().filter(|&&c| c == b'\n').count() as u64
        );
        let mut got = first;
        got.extend(drain(&q));
        assert_eq!(got, want);
        assert_eq!(q.stats.backlog_bytes.load(Ordering::Relaxed), 0);
        // Delivered segments are deleted (the writer's current one stays).
        assert!(list_segments(dir.path()).unwrap().len() <= 2);
    }

    #[test]
    fn the_bound_drops_and_counts() {
        let dir = tempfile::tempdir().unwrap();
        let q = DiskQueue::open(dir.path(), opts(100, 1 << 20)).unwrap();
        let line = b"x.y 1 2\n";
        let mut ok = 0;
        for _ in 0..20 {
            if q.append(line, 1).unwrap() {
                ok += 1;
            }
        }
        assert_eq!(ok, 100 / (RECORD_HEADER + line.len()));
        assert_eq!(
            q.stats.dropped_points.load(Ordering::Relaxed),
            20 - ok as u64
        );
        assert_eq!(drain(&q).len(), ok * line.len());
    }

    #[test]
    fn a_torn_tail_is_cut_and_the_rest_kept() {
        let dir = tempfile::tempdir().unwrap();
        let q = DiskQueue::open(dir.path(), opts(1 << 20, 1 << 20)).unwrap();
        q.append(b"a 1 1\n", 1).unwrap();
        q.append(b"b 2 2\n", 1).unwrap();
        drop(q);
        let seg = segment_path(dir.path(), list_segments(dir.path()).unwrap()[0]);
        let len = fs::metadata(&seg).unwrap().len();
        let f = OpenOptions::new().write(true).open(&seg).unwrap();
        f.set_len(len - 3).unwrap();
        let q = DiskQueue::open(dir.path(), opts(1 << 20, 1 << 20)).unwrap();
        assert_eq!(q.stats.damaged_records.load(Ordering::Relaxed), 1);
        assert_eq!(drain(&q), b"a 1 1\n");
        q.append(b"c 3 3\n", 1).unwrap();
        assert_eq!(drain(&q), b"c 3 3\n");
    }

    #[test]
    fn batch_fsync_syncs_every_append_and_changes_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let batch = QueueOptions {
            fsync: QueueFsync::Batch,
            ..opts(1 << 20, 200)
        };
        let q = DiskQueue::open(dir.path(), batch.clone()).unwrap();
        let mut want = Vec::new();
        for i in 0..30 {
            let line = format!("a.b{i} {i} 100\n");
            assert!(q.append(line.as_bytes(), 1).unwrap());
            want.extend_from_slice(line.as_bytes());
        }
        assert_eq!(q.stats.fsyncs.load(Ordering::Relaxed), 30);
        // several segments (200 bytes each), read back in order after a reopen
        assert!(list_segments(dir.path()).unwrap().len() > 2);
        drop(q);
        let q = DiskQueue::open(dir.path(), batch).unwrap();
        assert_eq!(drain(&q), want);
        // the default never syncs
        let dir = tempfile::tempdir().unwrap();
        let q = DiskQueue::open(dir.path(), QueueOptions::default()).unwrap();
        q.append(b"x 1 1\n", 1).unwrap();
        assert_eq!(q.stats.fsyncs.load(Ordering::Relaxed), 0);
        assert_eq!(drain(&q), b"x 1 1\n");
    }
}
