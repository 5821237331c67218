//! The write-ahead log: segment files of CRC-checked records, written with group
//! commit (appenders queue framed records in one buffer; whoever finds no write in
//! flight writes everything queued in one `write`), fsynced by policy. Segments
//! below the manifest's checkpoint are deleted once the head they cover is in parts.
//!
//! The WAL also orders the head: an appender applies its rows after its record is
//! written, and only once every earlier record is applied or dropped ([`Wal::turn`]),
//! so that the head sees writes in log order, and a record whose write failed is never
//! seen.
//!
//! - [`record`]: the payload encoding of points.
//! - [`segment`]: files, headers, framing.
//! - [`replay`]: reading back on open; [`read_segment`] reads one segment's bytes the
//!   same way, without a file (the only public part, for the fuzz target).

pub(crate) mod record;
pub(crate) mod replay;
pub(crate) mod segment;

pub use record::{RecordError, WalPoint};
pub use replay::{read_segment, SegmentError, SegmentRead};

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::{Condvar, Mutex};

use crate::metrics::Metrics;
use crate::series::log::LogSync;
use crate::{FsyncPolicy, StoreError};

struct State {
    /// Framed records queued for the next write.
    pending: Vec<u8>,
    spare: Vec<u8>,
    /// Log sequence numbers are byte counts since open: `enqueued` is the end of
    /// `pending`, `written` the end of what reached the OS.
    enqueued: u64,
    written: u64,
    synced: u64,
    /// The end of the records applied to the head (or dropped, their write having
    /// failed): always a record boundary, advanced in LSN order by [`Turn`].
    applied: u64,
    writing: bool,
    file: Arc<File>,
    seq: u64,
    seg_bytes: u64,
    error: Option<String>,
    /// LSN ranges `(after, upto]` whose write failed for lack of space and was undone
    /// (the segment truncated back): their appenders get an error, the WAL goes on.
    /// The last few only: a waiter is woken right after its range fails.
    failed: std::collections::VecDeque<(u64, u64)>,
}

/// A failed group write; `undone` when the segment was cut back to where it was, so the
/// WAL stays usable (no space left), else the WAL is poisoned.
struct WriteFail {
    err: StoreError,
    undone: bool,
}

impl From<StoreError> for WriteFail {
    fn from(err: StoreError) -> WriteFail {
        WriteFail { err, undone: false }
    }
}

const FAILED_KEPT: usize = 64;

pub(crate) struct Wal {
    dir: PathBuf,
    policy: FsyncPolicy,
    segment_bytes: u64,
    log_sync: LogSync,
    metrics: Arc<Metrics>,
    state: Mutex<State>,
    cv: Condvar,
    /// Signalled when `applied` moves (appenders waiting for their turn, a freeze).
    applied_cv: Condvar,
}

impl Wal {
    /// Starts writing a new segment `seq` in `dir`.
    pub(crate) fn open(
        dir: &Path,
        seq: u64,
        policy: FsyncPolicy,
        segment_bytes: u64,
        log_sync: LogSync,
        metrics: Arc<Metrics>,
    ) -> Result<Wal, StoreError> {
        let file = segment::create(dir, seq, policy != FsyncPolicy::Never)?;
        metrics.wal_segments_created.fetch_add(1, Ordering::Relaxed);
        Ok(Wal {
            dir: dir.to_path_buf(),
            policy,
            segment_bytes: segment_bytes.max(segment::HEADER_LEN + 1),
            log_sync,
            metrics,
            state: Mutex::new(State {
                pending: Vec::with_capacity(1 << 20),
                spare: Vec::with_capacity(1 << 20),
                enqueued: 0,
                written: 0,
                synced: 0,
                applied: 0,
                writing: false,
                file: Arc::new(file),
                seq,
                seg_bytes: segment::HEADER_LEN,
                error: None,
                failed: std::collections::VecDeque::new(),
            }),
            cv: Condvar::new(),
            applied_cv: Condvar::new(),
        })
    }

    /// Queues one record; returns where it starts and ends in the log: the end is the
    /// LSN that [`commit`](Self::commit) waits for, both go to [`turn`](Self::turn).
    /// Callers hold the store's append lock, so WAL order is the order of enqueuing.
    pub(crate) fn enqueue(&self, payload: &[u8]) -> Result<(u64, u64), StoreError> {
        let mut st = self.state.lock();
        if let Some(e) = &st.error {
            return Err(StoreError::Poisoned(e.clone()));
        }
        let start = st.enqueued;
        segment::frame(payload, &mut st.pending);
        st.enqueued += payload.len() as u64 + 8;
        Ok((start, st.enqueued))
    }

    /// Waits until every record before `start` is applied to the head or dropped, so
    /// that the record `(start, end]` is next. The caller applies its rows (when its
    /// commit succeeded) and then drops the [`Turn`], which lets the next record go.
    /// Every enqueued record must take its turn, or the ones after it wait for ever.
    pub(crate) fn turn(&self, start: u64, end: u64) -> Turn<'_> {
        let mut st = self.state.lock();
        while st.applied < start {
            self.applied_cv.wait(&mut st);
        }
        Turn { wal: self, end }
    }

    /// Waits until every record enqueued so far has taken its turn. The caller holds
    /// the store's append lock, so that none is enqueued meanwhile.
    pub(crate) fn wait_applied(&self) {
        let mut st = self.state.lock();
        while st.applied < st.enqueued {
            self.applied_cv.wait(&mut st);
        }
    }

    /// Returns once everything up to `lsn` is written (and fsynced under `always`).
    pub(crate) fn commit(&self, lsn: u64) -> Result<(), StoreError> {
        let mut st = self.state.lock();
        loop {
            if let Some(e) = &st.error {
                return Err(StoreError::Poisoned(e.clone()));
            }
            if st.failed.iter().any(|&(a, b)| lsn > a && lsn <= b) {
                return Err(StoreError::Backpressure(
                    "the WAL write failed for lack of disk space; the batch was not stored".into(),
                ));
            }
            let done = if self.policy == FsyncPolicy::Always {
                st.synced >= lsn
            } else {
                st.written >= lsn
            };
            if done {
                return Ok(());
            }
            if st.writing {
                self.cv.wait(&mut st);
                continue;
            }
            // become the leader: write everything queued so far
            st.writing = true;
            let spare = std::mem::take(&mut st.spare);
            let buf = std::mem::replace(&mut st.pending, spare);
            let end = st.enqueued;
            let rotate = st.seg_bytes > segment::HEADER_LEN
                && st.seg_bytes + buf.len() as u64 > self.segment_bytes;
            let (file, seq) = (st.file.clone(), st.seq);
            let (start, pre) = (st.written, st.seg_bytes);
            let n = buf.len() as u64;
            drop(st);
            let res = self.write_out(&buf, file, seq, rotate, pre);
            st = self.state.lock();
            st.writing = false;
            let mut buf = buf;
            buf.clear();
            st.spare = buf;
            match res {
                Ok(new_file) => {
                    if let Some((f, s)) = new_file {
                        st.file = f;
                        st.seq = s;
                        st.seg_bytes = segment::HEADER_LEN;
                    }
                    st.seg_bytes += n;
                    st.written = end;
                    if self.policy == FsyncPolicy::Always {
                        st.synced = end;
                    }
                }
                Err(WriteFail { undone: true, .. }) => self.fail_range(&mut st, (start, end)),
                Err(WriteFail { err, .. }) => {
                    st.error = Some(err.to_string());
                }
            }
            self.cv.notify_all();
        }
    }

    /// Writes `buf` to the current segment (or a new one when `rotate`); syncs under
    /// `always`. Returns the new segment when one was started.
    fn write_out(
        &self,
        buf: &[u8],
        file: Arc<File>,
        seq: u64,
        rotate: bool,
        pre: u64,
    ) -> Result<Option<(Arc<File>, u64)>, WriteFail> {
        let mut target = file;
        let mut new = None;
        if rotate {
            self.sync_file(&target, seq)?;
            let created = segment::create(&self.dir, seq + 1, self.policy != FsyncPolicy::Never);
            let f = match created {
                Ok(f) => Arc::new(f),
                Err(err) => {
                    // nothing of `buf` was written: the current segment goes on
                    let _ = std::fs::remove_file(segment::segment_path(&self.dir, seq + 1));
                    return Err(WriteFail { err, undone: true });
                }
            };
            self.metrics
                .wal_segments_created
                .fetch_add(1, Ordering::Relaxed);
            target = f.clone();
            new = Some((f, seq + 1));
        }
        let cur_seq = new.as_ref().map_or(seq, |n| n.1);
        if !buf.is_empty() {
            if crate::failpoint::due("wal:torn_write") {
                let _ = (&*target).write_all(&buf[..buf.len() / 2]);
                crate::failpoint::fire("wal:torn_write");
            }
            let written = match crate::failpoint::wal_write_error() {
                Some(e) => Err(e),
                None => (&*target).write_all(buf),
            };
            if let Err(e) = written {
                let path = segment::segment_path(&self.dir, cur_seq);
                let no_space = e.raw_os_error() == Some(libc::ENOSPC);
                let err = StoreError::io("write", &path, e);
                // undo a partial write so that the segment ends on a whole record
                let undone = no_space
                    && if new.is_some() {
                        std::fs::remove_file(&path).is_ok()
                    } else {
                        use std::io::{Seek, SeekFrom};
                        target.set_len(pre).is_ok() && (&*target).seek(SeekFrom::Start(pre)).is_ok()
                    };
                return Err(WriteFail { err, undone });
            }
            crate::failpoint::hit("wal:after_write");
            self.metrics
                .wal_bytes
                .fetch_add(buf.len() as u64, Ordering::Relaxed);
            self.metrics.wal_writes.fetch_add(1, Ordering::Relaxed);
        }
        if self.policy == FsyncPolicy::Always {
            self.sync_file(&target, cur_seq)?;
        }
        Ok(new)
    }

    fn sync_file(&self, f: &File, seq: u64) -> Result<(), StoreError> {
        if self.policy == FsyncPolicy::Never {
            return Ok(());
        }
        // a synced WAL record must never name a series the series log may still lose
        self.log_sync.sync()?;
        let t = Instant::now();
        f.sync_data()
            .map_err(|e| StoreError::io("fsync", segment::segment_path(&self.dir, seq), e))?;
        self.metrics.wal_fsyncs.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .wal_fsync_micros
            .fetch_add(t.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the queued records. A write that fails for lack of space is undone (the
    /// segment cut back, the records' appenders told to retry) and reported with
    /// `undone`; the caller then must not poison the WAL.
    fn write_pending_locked(&self, st: &mut State) -> Result<(), WriteFail> {
        if !st.pending.is_empty() {
            let path = segment::segment_path(&self.dir, st.seq);
            if let Err(e) = (&*st.file).write_all(&st.pending) {
                use std::io::{Seek, SeekFrom};
                let no_space = e.raw_os_error() == Some(libc::ENOSPC);
                let err = StoreError::io("write", path, e);
                let pre = st.seg_bytes;
                let undone = no_space
                    && st.file.set_len(pre).is_ok()
                    && (&*st.file).seek(SeekFrom::Start(pre)).is_ok();
                if undone {
                    let range = (st.written, st.enqueued);
                    self.fail_range(st, range);
                    st.pending.clear();
                }
                return Err(WriteFail { err, undone });
            }
            self.metrics
                .wal_bytes
                .fetch_add(st.pending.len() as u64, Ordering::Relaxed);
            self.metrics.wal_writes.fetch_add(1, Ordering::Relaxed);
            st.seg_bytes += st.pending.len() as u64;
            st.pending.clear();
            st.written = st.enqueued;
        }
        Ok(())
    }

    /// Marks the records of LSN range `(after, upto]` as failed (their write was undone).
    fn fail_range(&self, st: &mut State, (after, upto): (u64, u64)) {
        tracing::error!(
            bytes = upto - after,
            "WAL write failed and was undone (no space left); the appenders are told to retry"
        );
        st.failed.push_back((after, upto));
        if st.failed.len() > FAILED_KEPT {
            st.failed.pop_front();
        }
        st.written = st.written.max(upto);
        if self.policy == FsyncPolicy::Always {
            st.synced = st.synced.max(upto);
        }
    }

    /// Waits for a writer in progress, then writes what is queued. A write undone for
    /// lack of space is an error the caller may retry; any other failure poisons the WAL.
    fn write_queued(&self, st: &mut parking_lot::MutexGuard<'_, State>) -> Result<(), StoreError> {
        while st.writing {
            self.cv.wait(st);
        }
        if let Some(e) = &st.error {
            return Err(StoreError::Poisoned(e.clone()));
        }
        if let Err(WriteFail { err, undone }) = self.write_pending_locked(st) {
            if !undone {
                st.error = Some(err.to_string());
            }
            self.cv.notify_all();
            return Err(err);
        }
        Ok(())
    }

    /// Ends the current segment (writing what is queued and syncing it unless the policy
    /// is `never`) and starts the next; returns the new segment's number. Every record
    /// enqueued before the call is in a segment below it.
    ///
    /// Failing to create the new segment, or to write the queued records for lack of
    /// space, leaves the WAL usable: the current segment is intact (cut back to its
    /// last whole record), and the next rotation tries again.
    pub(crate) fn rotate(&self) -> Result<u64, StoreError> {
        let mut st = self.state.lock();
        self.write_queued(&mut st)?;
        let (file, seq) = (st.file.clone(), st.seq);
        if let Err(e) = self.sync_file(&file, seq) {
            st.error = Some(e.to_string());
            self.cv.notify_all();
            return Err(e);
        }
        st.synced = st.written;
        let seq = st.seq + 1;
        let f = match segment::create(&self.dir, seq, self.policy != FsyncPolicy::Never) {
            Ok(f) => f,
            Err(e) => {
                // not poisoned: nothing was lost, the half-made segment goes away and the
                // current one stays open for writes
                let _ = std::fs::remove_file(segment::segment_path(&self.dir, seq));
                self.cv.notify_all();
                return Err(e);
            }
        };
        self.metrics
            .wal_segments_created
            .fetch_add(1, Ordering::Relaxed);
        st.file = Arc::new(f);
        st.seq = seq;
        st.seg_bytes = segment::HEADER_LEN;
        self.cv.notify_all();
        Ok(seq)
    }

    /// Writes what is queued and fsyncs (the interval policy's tick, and close).
    pub(crate) fn sync(&self) -> Result<(), StoreError> {
        let (file, seq, upto) = {
            let mut st = self.state.lock();
            self.write_queued(&mut st)?;
            if st.synced >= st.written {
                return Ok(());
            }
            (st.file.clone(), st.seq, st.written)
        };
        if self.policy == FsyncPolicy::Never {
            return Ok(());
        }
        match self.sync_file(&file, seq) {
            Ok(()) => {
                let mut st = self.state.lock();
                st.synced = st.synced.max(upto);
                Ok(())
            }
            Err(e) => {
                let mut st = self.state.lock();
                st.error = Some(e.to_string());
                self.cv.notify_all();
                Err(e)
            }
        }
    }

    /// The segment being written.
    pub(crate) fn current_segment(&self) -> u64 {
        self.state.lock().seq
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The first failure, if the WAL refuses writes.
    pub(crate) fn failure(&self) -> Option<String> {
        self.state.lock().error.clone()
    }
}

/// A record's turn to reach the head (see [`Wal::turn`]); dropping it ends the turn,
/// also when the appender returns early with an error.
pub(crate) struct Turn<'a> {
    wal: &'a Wal,
    end: u64,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut st = self.wal.state.lock();
        st.applied = st.applied.max(self.end);
        self.wal.applied_cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::record::{encode_points, WalPoint};
    use super::*;
    use crate::series::log::SeriesLog;
    use crate::testutil::TempDir;

    fn wal(dir: &Path, policy: FsyncPolicy, seg: u64) -> Wal {
        let log = SeriesLog::open(&dir.join("series.log")).unwrap();
        let wdir = dir.join("wal");
        std::fs::create_dir_all(&wdir).unwrap();
        Wal::open(
            &wdir,
            1,
            policy,
            seg,
            log.sync_handle(),
            Arc::new(Metrics::default()),
        )
        .unwrap()
    }

    fn payload(series: u32, v: f64) -> Vec<u8> {
        let mut p = Vec::new();
        encode_points(
            &[WalPoint {
                series,
                level: 0,
                slot: 100,
                value: v,
            }],
            &mut p,
        );
        p
    }

    #[test]
    fn concurrent_appenders_all_replay() {
        let dir = TempDir::new("wal-group");
        let w = Arc::new(wal(dir.path(), FsyncPolicy::Always, 4096));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let w = w.clone();
                std::thread::spawn(move || {
                    for i in 0..200u32 {
                        let (_, lsn) = w.enqueue(&payload(t * 1000 + i, f64::from(i))).unwrap();
                        w.commit(lsn).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let segs = segment::list(w.dir()).unwrap();
        assert!(segs.len() > 1, "small segments rotate: {segs:?}");
        let mut seen = Vec::new();
        let r = replay::replay(w.dir(), 0, false, |p| seen.push(p.series)).unwrap();
        assert_eq!(r.points, 800);
        assert_eq!(r.corrupt_tails, 0);
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), 800);
        // group commit: fewer writes than records is possible, never more
        assert!(w.metrics.wal_writes.load(Ordering::Relaxed) <= 800);
    }

    #[test]
    fn rotate_and_torn_tail() {
        let dir = TempDir::new("wal-torn");
        let w = wal(dir.path(), FsyncPolicy::Never, 1 << 20);
        for i in 0..10 {
            let (_, lsn) = w.enqueue(&payload(i, 1.0)).unwrap();
            w.commit(lsn).unwrap();
        }
        let next = w.rotate().unwrap();
        assert_eq!(next, 2);
        for i in 10..20 {
            let (_, lsn) = w.enqueue(&payload(i, 1.0)).unwrap();
            w.commit(lsn).unwrap();
        }
        w.sync().unwrap();
        // tear the last record of segment 2
        let p = segment::segment_path(w.dir(), 2);
        let len = std::fs::metadata(&p).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(len - 3)
            .unwrap();
        let mut n = 0;
        let r = replay::replay(w.dir(), 2, false, |_| n += 1).unwrap();
        assert_eq!((n, r.corrupt_tails), (9, 1));
        let r = replay::replay(w.dir(), 0, false, |_| {}).unwrap();
        assert_eq!(
            (r.points, r.corrupt_tails),
            (19, 0),
            "the cut is persistent"
        );
        // corrupting segment 1 (not the last) refuses, unless repairing
        let p1 = segment::segment_path(w.dir(), 1);
        let mut data = std::fs::read(&p1).unwrap();
        data[30] ^= 0x55;
        std::fs::write(&p1, &data).unwrap();
        assert!(replay::replay(w.dir(), 0, false, |_| {}).is_err());
        let r = replay::replay(w.dir(), 0, true, |_| {}).unwrap();
        assert_eq!(r.corrupt_tails, 1);
        assert_eq!(segment::remove_below(w.dir(), 2).unwrap(), 1);
    }
}
