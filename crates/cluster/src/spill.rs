//! The ingest side's bounded on-disk spill: what Kafka did not take in time waits here,
//! durably, and is delivered in order once Kafka is back.
//!
//! An append that Kafka does not acknowledge within `append_timeout_ms` (the client has
//! been held back that long) is written to the spill instead, fsynced, and then
//! acknowledged to the client. While the spill holds anything, every further append goes
//! behind it, so that points reach the log in the order they were taken in (a later
//! write to the same slot stays later). A thread delivers the spill oldest first, each
//! entry's records as they were encoded (with the arrival time of when the node took
//! them), and deletes an entry only once Kafka has acknowledged all of it. When the
//! spill is full (`spill_max_bytes`) appends fail as before: the client is held back.
//!
//! One file per spilled append, `<seq>.spill` (20 digits, in order), in
//! `<data_dir>/cluster/spill/`:
//!
//! | bytes | field |
//! | --- | --- |
//! | 8 | magic `SUMISPL1` |
//! | 4 | points in the entry (`u32` LE) |
//! | per record: 4 | partition (`u32` LE) |
//! | 4 | payload length (`u32` LE) |
//! | 4 | CRC32C of the payload (`u32` LE) |
//! | n | the log record (`record.rs`) |
//!
//! A file that does not decode (a torn write the fsync did not cover, a disk fault) is
//! renamed `<seq>.bad`, counted and logged, never delivered half.

use std::collections::VecDeque;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;

const MAGIC: &[u8; 8] = b"SUMISPL1";

/// One spilled append: its point count and its records (partition, payload).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillEntry {
    pub points: u32,
    pub records: Vec<(u32, Vec<u8>)>,
}

/// Why a spill file could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpillDecodeError {
    #[error("not a spill file (magic {0:?})")]
    Magic(Vec<u8>),
    #[error("spill file cut short at byte {0}")]
    Truncated(usize),
    #[error("record at byte {0} fails its CRC32C")]
    Crc(usize),
}

/// The bytes of one spill file.
pub fn encode_entry(entry: &SpillEntry) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        12 + entry
            .records
            .iter()
            .map(|(_, r)| 12 + r.len())
            .sum::<usize>(),
    );
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&entry.points.to_le_bytes());
    for (partition, payload) in &entry.records {
        out.extend_from_slice(&partition.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
        out.extend_from_slice(payload);
    }
    out
}

fn u32_at(buf: &[u8], at: usize) -> Result<u32, SpillDecodeError> {
    buf.get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or(SpillDecodeError::Truncated(at))
}

/// Reads [`encode_entry`]'s output; an error for anything else, never a panic.
pub fn decode_entry(buf: &[u8]) -> Result<SpillEntry, SpillDecodeError> {
    match buf.get(..8) {
        Some(m) if m == MAGIC => {}
        Some(m) => return Err(SpillDecodeError::Magic(m.to_vec())),
        None => return Err(SpillDecodeError::Truncated(0)),
    }
    let points = u32_at(buf, 8)?;
    let mut at = 12;
    let mut records = Vec::new();
    while at < buf.len() {
        let partition = u32_at(buf, at)?;
        let len = u32_at(buf, at + 4)? as usize;
        let crc = u32_at(buf, at + 8)?;
        let start = at + 12;
        let payload = start
            .checked_add(len)
            .and_then(|end| buf.get(start..end))
            .ok_or(SpillDecodeError::Truncated(start))?;
        if crc32c::crc32c(payload) != crc {
            return Err(SpillDecodeError::Crc(at));
        }
        records.push((partition, payload.to_vec()));
        at = start + len;
    }
    Ok(SpillEntry { points, records })
}

/// Why an append could not be spilled.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    #[error("the spill is full ({bytes} of {max} bytes)")]
    Full { bytes: u64, max: u64 },
    #[error("writing the spill: {0}")]
    Io(#[from] std::io::Error),
}

#[derive(Default)]
struct State {
    next_seq: u64,
    /// (seq, bytes), oldest first.
    files: VecDeque<(u64, u64)>,
    bytes: u64,
}

/// The spill directory and what it holds.
pub struct Spill {
    dir: PathBuf,
    max_bytes: u64,
    state: Mutex<State>,
}

impl Spill {
    /// Opens (creating) `dir`, finding what an earlier run left to deliver.
    pub fn open(dir: &Path, max_bytes: u64) -> std::io::Result<Spill> {
        fs::create_dir_all(dir)?;
        let mut files = Vec::new();
        for e in fs::read_dir(dir)? {
            let e = e?;
            let name = e.file_name();
            let Some(seq) = name
                .to_str()
                .and_then(|n| n.strip_suffix(".spill"))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            files.push((seq, e.metadata()?.len()));
        }
        files.sort_unstable();
        let state = State {
            next_seq: files.last().map_or(0, |(s, _)| s + 1),
            bytes: files.iter().map(|(_, b)| b).sum(),
            files: files.into(),
        };
        if !state.files.is_empty() {
            tracing::info!(files = state.files.len(), bytes = state.bytes, dir = %dir.display(), "spill left by an earlier run: delivering it");
        }
        Ok(Spill {
            dir: dir.to_path_buf(),
            max_bytes,
            state: Mutex::new(state),
        })
    }

    fn path(&self, seq: u64, ext: &str) -> PathBuf {
        self.dir.join(format!("{seq:020}.{ext}"))
    }

    pub fn is_empty(&self) -> bool {
        self.state.lock().files.is_empty()
    }

    /// (files, bytes) waiting.
    pub fn size(&self) -> (u64, u64) {
        let st = self.state.lock();
        (st.files.len() as u64, st.bytes)
    }

    /// Writes `entry` behind everything spilled so far, durably (file and directory
    /// fsynced) before it returns.
    pub fn push(&self, entry: &SpillEntry) -> Result<(), SpillError> {
        let bytes = encode_entry(entry);
        // the lock is held through the write: entries get their places in order
        let mut st = self.state.lock();
        if st.bytes + bytes.len() as u64 > self.max_bytes {
            return Err(SpillError::Full {
                bytes: st.bytes,
                max: self.max_bytes,
            });
        }
        let seq = st.next_seq;
        let tmp = self.path(seq, "tmp");
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        drop(f);
        fs::rename(&tmp, self.path(seq, "spill"))?;
        fs::File::open(&self.dir)?.sync_all()?;
        st.next_seq = seq + 1;
        st.files.push_back((seq, bytes.len() as u64));
        st.bytes += bytes.len() as u64;
        Ok(())
    }

    /// The oldest entry: its sequence number and its contents (or why it cannot be
    /// read).
    pub fn front(&self) -> Option<(u64, Result<SpillEntry, String>)> {
        let seq = self.state.lock().files.front()?.0;
        let read = fs::read(self.path(seq, "spill"))
            .map_err(|e| e.to_string())
            .and_then(|b| decode_entry(&b).map_err(|e| e.to_string()));
        Some((seq, read))
    }

    /// Removes the oldest entry `seq` once delivered (`bad`: set aside as `.bad`).
    pub fn pop(&self, seq: u64, bad: bool) -> std::io::Result<()> {
        let mut st = self.state.lock();
        if st.files.front().map(|f| f.0) != Some(seq) {
            return Ok(());
        }
        let path = self.path(seq, "spill");
        if bad {
            fs::rename(&path, self.path(seq, "bad"))?;
        } else {
            fs::remove_file(&path)?;
        }
        if let Some((_, b)) = st.files.pop_front() {
            st.bytes -= b;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(n: u8) -> SpillEntry {
        SpillEntry {
            points: u32::from(n) * 10,
            records: vec![(u32::from(n), vec![n; 5 + n as usize]), (7, vec![])],
        }
    }

    #[test]
    fn entries_round_trip_and_damage_is_an_error() {
        let e = entry(3);
        let bytes = encode_entry(&e);
        assert_eq!(decode_entry(&bytes), Ok(e));
        for cut in 0..bytes.len() {
            let r = decode_entry(&bytes[..cut]);
            // a cut exactly between records is a shorter, valid entry
            if let Ok(short) = r {
                assert!(short.records.len() < 2, "cut at {cut}");
            }
        }
        let mut flipped = bytes.clone();
        let last = flipped.len() - 14;
        flipped[last] ^= 1;
        assert!(decode_entry(&flipped).is_err());
        assert!(matches!(
            decode_entry(b"NOTSPILL...."),
            Err(SpillDecodeError::Magic(_))
        ));
    }

    #[test]
    fn spill_keeps_order_and_bound_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let spill = Spill::open(dir.path(), 200).unwrap();
        assert!(spill.is_empty());
        spill.push(&entry(1)).unwrap();
        spill.push(&entry(2)).unwrap();
        // over the bound: refused, nothing written
        let big = SpillEntry {
            points: 1,
            records: vec![(0, vec![0; 300])],
        };
        assert!(matches!(spill.push(&big), Err(SpillError::Full { .. })));
        assert_eq!(spill.size().0, 2);
        drop(spill);
        let spill = Spill::open(dir.path(), 200).unwrap();
        let (seq, first) = spill.front().unwrap();
        assert_eq!(first.unwrap(), entry(1));
        spill.pop(seq, false).unwrap();
        spill.push(&entry(3)).unwrap();
        let (seq, second) = spill.front().unwrap();
        assert_eq!(second.unwrap(), entry(2));
        spill.pop(seq, false).unwrap();
        let (seq, third) = spill.front().unwrap();
        assert_eq!(third.unwrap(), entry(3));
        spill.pop(seq, true).unwrap();
        assert!(spill.is_empty());
        assert_eq!(spill.size(), (0, 0));
        assert!(dir.path().join(format!("{seq:020}.bad")).exists());
    }
}
