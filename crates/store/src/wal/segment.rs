//! WAL segment files: naming, the 16-byte header, framing of records, listing.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::fsutil;
use crate::StoreError;

pub(crate) const MAGIC: &[u8; 8] = b"SUMIWAL\0";
pub(crate) const VERSION: u32 = 1;
pub(crate) const HEADER_LEN: u64 = 16;
/// A record larger than this is corrupt by definition (an append of a million points
/// is about 13 MB).
pub(crate) const MAX_RECORD: usize = 1 << 30;

pub(crate) fn segment_path(dir: &Path, seq: u64) -> PathBuf {
    dir.join(format!("{seq:016x}.wal"))
}

/// Sequence numbers of the segments in `dir`, ascending.
pub(crate) fn list(dir: &Path) -> Result<Vec<u64>, StoreError> {
    let mut out = Vec::new();
    let rd = fs::read_dir(dir).map_err(|e| StoreError::io("list", dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| StoreError::io("list", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(hex) = name.strip_suffix(".wal") {
            if let Ok(seq) = u64::from_str_radix(hex, 16) {
                out.push(seq);
            }
        }
    }
    out.sort_unstable();
    Ok(out)
}

/// Creates segment `seq` with its header, synced together with the directory entry.
pub(crate) fn create(dir: &Path, seq: u64, sync: bool) -> Result<File, StoreError> {
    let path = segment_path(dir, seq);
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io("create", &path, e))?;
    let mut h = [0u8; HEADER_LEN as usize];
    h[..8].copy_from_slice(MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    f.write_all(&h)
        .map_err(|e| StoreError::io("write", &path, e))?;
    if sync {
        f.sync_data()
            .map_err(|e| StoreError::io("fsync", &path, e))?;
        fsutil::sync_dir(dir)?;
    }
    Ok(f)
}

/// Appends the frame of one record (`[len][crc32c][payload]`) to `out`.
pub(crate) fn frame(payload: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
}

/// Deletes the segments below `seq`.
pub(crate) fn remove_below(dir: &Path, seq: u64) -> Result<usize, StoreError> {
    let mut n = 0;
    for s in list(dir)? {
        if s >= seq {
            break;
        }
        let p = segment_path(dir, s);
        fs::remove_file(&p).map_err(|e| StoreError::io("remove", &p, e))?;
        n += 1;
    }
    Ok(n)
}
