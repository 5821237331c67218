//! Reading the WAL back on open: every segment from the checkpoint on, record by
//! record. A torn or corrupt tail of the last segment is cut (the file is truncated
//! there) and counted; corruption before the last segment refuses to open unless the
//! store is told to repair, which skips the rest of that segment.

use std::fs::{self, OpenOptions};
use std::path::Path;

use super::record::{decode_points, RecordError, WalPoint};
use super::segment::{self, HEADER_LEN, MAGIC, MAX_RECORD, VERSION};
use crate::StoreError;

/// Where and why a segment stops being readable; replay cuts the segment at
/// [`SegmentError::offset`] (removes it when the header itself is bad).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    #[error("segment shorter than its header")]
    Short,
    #[error("bad magic")]
    Magic,
    #[error("unknown version")]
    Version,
    #[error("truncated record header")]
    RecordHeader { offset: u64 },
    #[error("record length {len} is implausible")]
    Length { offset: u64, len: usize },
    #[error("record of {len} bytes runs past the end")]
    PastEnd { offset: u64, len: usize },
    #[error("crc mismatch")]
    Crc { offset: u64 },
    /// A record whose frame and CRC are right but whose payload does not decode.
    #[error("{source}")]
    Record { offset: u64, source: RecordError },
}

impl SegmentError {
    /// The byte offset in the segment file where the problem starts.
    pub fn offset(&self) -> u64 {
        match self {
            SegmentError::Short | SegmentError::Magic => 0,
            SegmentError::Version => 8,
            SegmentError::RecordHeader { offset }
            | SegmentError::Length { offset, .. }
            | SegmentError::PastEnd { offset, .. }
            | SegmentError::Crc { offset }
            | SegmentError::Record { offset, .. } => *offset,
        }
    }
}

/// One segment file read from its bytes, as replay reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct SegmentRead {
    /// The points of every whole record before the first problem, in log order.
    pub points: Vec<WalPoint>,
    /// The whole records read.
    pub records: u64,
    /// Where reading stopped early, if it did.
    pub problem: Option<SegmentError>,
}

/// Reads a WAL segment's bytes (header, then framed records) without touching a
/// file: what replay would apply, and where it would cut. The fuzz crate's entry to
/// the reader.
pub fn read_segment(data: &[u8]) -> SegmentRead {
    let mut points = Vec::new();
    let (records, _, problem) = scan(data, |batch| points.extend_from_slice(batch));
    SegmentRead {
        points,
        records,
        problem,
    }
}

/// Reads `data` record by record, calling `on_record` with the points of each whole,
/// valid record. Returns the records and points read and the first problem.
fn scan(data: &[u8], mut on_record: impl FnMut(&[WalPoint])) -> (u64, u64, Option<SegmentError>) {
    let (mut records, mut points) = (0u64, 0u64);
    if data.len() < HEADER_LEN as usize {
        return (0, 0, Some(SegmentError::Short));
    } else if &data[..8] != MAGIC {
        return (0, 0, Some(SegmentError::Magic));
    } else if u32::from_le_bytes([data[8], data[9], data[10], data[11]]) != VERSION {
        return (0, 0, Some(SegmentError::Version));
    }
    let mut batch: Vec<WalPoint> = Vec::new();
    let mut off = HEADER_LEN as usize;
    while off < data.len() {
        let offset = off as u64;
        let rest = &data[off..];
        if rest.len() < 8 {
            return (records, points, Some(SegmentError::RecordHeader { offset }));
        }
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
        if len > MAX_RECORD {
            return (records, points, Some(SegmentError::Length { offset, len }));
        }
        let Some(payload) = rest.get(8..8 + len) else {
            return (records, points, Some(SegmentError::PastEnd { offset, len }));
        };
        if crc32c::crc32c(payload) != crc {
            return (records, points, Some(SegmentError::Crc { offset }));
        }
        batch.clear();
        match decode_points(payload, |p| batch.push(p)) {
            Ok(n) => {
                records += 1;
                points += n;
                on_record(&batch);
                off += 8 + len;
            }
            Err(source) => {
                return (
                    records,
                    points,
                    Some(SegmentError::Record { offset, source }),
                )
            }
        }
    }
    (records, points, None)
}

/// What a replay did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct ReplayReport {
    pub(crate) segments: u64,
    pub(crate) records: u64,
    pub(crate) points: u64,
    /// Torn or corrupt tails cut (at most one per segment).
    pub(crate) corrupt_tails: u64,
    /// The highest segment number seen (the writer starts after it).
    pub(crate) last_segment: Option<u64>,
}

/// Replays segments `>= from` in `dir`, calling `apply` for every point in log order.
#[cfg(test)]
pub(crate) fn replay(
    dir: &Path,
    from: u64,
    repair: bool,
    apply: impl FnMut(WalPoint),
) -> Result<ReplayReport, StoreError> {
    replay_with(dir, from, repair, None, apply)
}

/// [`replay`], and before a segment is cut, a copy of it goes to the quarantine
/// directory of `quarantine_in` (the data directory), so the cut bytes are kept.
pub(crate) fn replay_with(
    dir: &Path,
    from: u64,
    repair: bool,
    quarantine_in: Option<&Path>,
    mut apply: impl FnMut(WalPoint),
) -> Result<ReplayReport, StoreError> {
    let mut report = ReplayReport::default();
    let segs = segment::list(dir)?;
    report.last_segment = segs.last().copied();
    let todo: Vec<u64> = segs.into_iter().filter(|&s| s >= from).collect();
    for (i, &seq) in todo.iter().enumerate() {
        let is_last = i + 1 == todo.len();
        let path = segment::segment_path(dir, seq);
        let data = fs::read(&path).map_err(|e| StoreError::io("read", &path, e))?;
        report.segments += 1;
        let (records, points, problem) = scan(&data, |batch| batch.iter().for_each(|&p| apply(p)));
        report.records += records;
        report.points += points;
        let problem = problem.map(|e| (e.offset(), e.to_string()));
        if let Some((at, why)) = problem {
            if !is_last && !repair {
                return Err(StoreError::corrupt("wal segment", &path, at, why));
            }
            tracing::error!(path = %path.display(), offset = at, reason = %why, "corrupt WAL record: cutting the segment here (a copy is quarantined); later records of this segment are lost");
            report.corrupt_tails += 1;
            if let Some(data_dir) = quarantine_in {
                crate::quarantine::move_aside(data_dir, &path, true)?;
            }
            let keep = at.max(HEADER_LEN).min(data.len() as u64);
            if data.len() < HEADER_LEN as usize || at < HEADER_LEN {
                // nothing usable: the header itself is bad
                fs::remove_file(&path).map_err(|e| StoreError::io("remove", &path, e))?;
            } else {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .map_err(|e| StoreError::io("open", &path, e))?;
                f.set_len(keep)
                    .map_err(|e| StoreError::io("truncate", &path, e))?;
                f.sync_all()
                    .map_err(|e| StoreError::io("fsync", &path, e))?;
            }
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

        /// Any bytes after a valid header replay without panicking: either points or a
        /// cut tail, and the cut leaves a segment that replays cleanly.
        #[test]
        fn garbage_segments_never_panic(body in proptest::collection::vec(any::<u8>(), 0..400), header_ok in any::<bool>()) {
            let dir = TempDir::new("replay-fuzz");
            let mut data = Vec::new();
            if header_ok {
                data.extend_from_slice(MAGIC);
                data.extend_from_slice(&VERSION.to_le_bytes());
                data.extend_from_slice(&[0; 4]);
            }
            data.extend_from_slice(&body);
            std::fs::write(segment::segment_path(dir.path(), 5), &data).unwrap();
            let first = replay(dir.path(), 0, false, |_| {});
            prop_assert!(first.is_ok());
            let again = replay(dir.path(), 0, false, |_| {}).unwrap();
            prop_assert_eq!(again.corrupt_tails, 0);
        }
    }
}
