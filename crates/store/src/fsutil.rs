//! Small file-system helpers: directory fsync and atomic replacement of a file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::StoreError;

/// Fsyncs a directory so that creations, renames and deletions in it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    let f = File::open(dir).map_err(|e| StoreError::io("open dir", dir, e))?;
    f.sync_all()
        .map_err(|e| StoreError::io("fsync dir", dir, e))
}

/// Replaces `path` with `bytes` atomically: write a temporary file, fsync it, rename it
/// over `path`, fsync the directory.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let tmp = path.with_extension("tmp");
    let mut f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(&tmp)
        .map_err(|e| StoreError::io("create", &tmp, e))?;
    f.write_all(bytes)
        .map_err(|e| StoreError::io("write", &tmp, e))?;
    f.sync_all().map_err(|e| StoreError::io("fsync", &tmp, e))?;
    drop(f);
    fs::rename(&tmp, path).map_err(|e| StoreError::io("rename", &tmp, e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Creates `dir` (and parents) when missing.
pub(crate) fn ensure_dir(dir: &Path) -> Result<(), StoreError> {
    fs::create_dir_all(dir).map_err(|e| StoreError::io("create dir", dir, e))
}
