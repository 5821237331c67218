//! Reading the WAL back on open: every segment from the checkpoint on, record by
//! record. A torn or corrupt tail of the last segment is cut (the file is truncated
//! there) and counted; corruption before the last segment refuses to open unless the
//! store is told to repair, which skips the rest of that segment.

use std::fs::{self, OpenOptions};
use std::path::Path;

use super::record::{decode_points, WalPoint};
use super::segment::{self, HEADER_LEN, MAGIC, MAX_RECORD, VERSION};
use crate::StoreError;

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
    let mut batch: Vec<WalPoint> = Vec::new();
    for (i, &seq) in todo.iter().enumerate() {
        let is_last = i + 1 == todo.len();
        let path = segment::segment_path(dir, seq);
        let data = fs::read(&path).map_err(|e| StoreError::io("read", &path, e))?;
        report.segments += 1;
        let mut problem: Option<(u64, String)> = None;
        if data.len() < HEADER_LEN as usize {
            problem = Some((0, "segment shorter than its header".into()));
        } else if &data[..8] != MAGIC {
            problem = Some((0, "bad magic".into()));
        } else if u32::from_le_bytes([data[8], data[9], data[10], data[11]]) != VERSION {
            problem = Some((8, "unknown version".into()));
        }
        let mut off = HEADER_LEN as usize;
        while problem.is_none() && off < data.len() {
            let rest = &data[off..];
            if rest.len() < 8 {
                problem = Some((off as u64, "truncated record header".into()));
                break;
            }
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let crc = u32::from_le_bytes([rest[4], rest[5], rest[6], rest[7]]);
            if len > MAX_RECORD {
                problem = Some((off as u64, format!("record length {len} is implausible")));
                break;
            }
            let Some(payload) = rest.get(8..8 + len) else {
                problem = Some((
                    off as u64,
                    format!("record of {len} bytes runs past the end"),
                ));
                break;
            };
            if crc32c::crc32c(payload) != crc {
                problem = Some((off as u64, "crc mismatch".into()));
                break;
            }
            batch.clear();
            match decode_points(payload, |p| batch.push(p)) {
                Ok(n) => {
                    report.records += 1;
                    report.points += n;
                    batch.iter().for_each(|&p| apply(p));
                    off += 8 + len;
                }
                Err(e) => {
                    problem = Some((off as u64, e.to_string()));
                }
            }
        }
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
