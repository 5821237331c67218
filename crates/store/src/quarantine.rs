//! Quarantine: damaged files are moved aside into `DATA/quarantine/`, never deleted,
//! so that a human (or a support case) can look at them later. The name keeps the
//! original file name and adds the time it was moved, plus a counter when two land in
//! the same second.

use std::fs;
use std::path::{Path, PathBuf};

use crate::{fsutil, StoreError};

/// The quarantine directory of the data directory `data_dir`.
pub(crate) fn dir(data_dir: &Path) -> PathBuf {
    data_dir.join("quarantine")
}

/// Moves `path` (inside `data_dir`) into the quarantine directory; returns where it
/// went. `copy` keeps the original in place (for a file that is repaired in place, such
/// as a WAL segment cut at a torn record: the copy preserves the cut bytes).
pub(crate) fn move_aside(data_dir: &Path, path: &Path, copy: bool) -> Result<PathBuf, StoreError> {
    let qdir = dir(data_dir);
    fsutil::ensure_dir(&qdir)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "unnamed".to_string());
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut target = qdir.join(format!("{name}.{secs}"));
    let mut n = 1;
    while target.exists() {
        target = qdir.join(format!("{name}.{secs}.{n}"));
        n += 1;
    }
    if copy {
        fs::copy(path, &target).map_err(|e| StoreError::io("copy to quarantine", path, e))?;
    } else {
        fs::rename(path, &target).map_err(|e| StoreError::io("move to quarantine", path, e))?;
        if let Some(parent) = path.parent() {
            fsutil::sync_dir(parent)?;
        }
    }
    fsutil::sync_dir(&qdir)?;
    tracing::warn!(from = %path.display(), to = %target.display(), "quarantined a damaged file");
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    #[test]
    fn moves_and_copies_without_clobbering() {
        let d = TempDir::new("quarantine");
        let f = d.path().join("x.part");
        fs::write(&f, b"one").unwrap();
        let a = move_aside(d.path(), &f, true).unwrap();
        assert!(f.exists(), "a copy leaves the original");
        let b = move_aside(d.path(), &f, false).unwrap();
        assert!(!f.exists(), "a move takes it away");
        assert_ne!(a, b);
        assert_eq!(fs::read(&a).unwrap(), b"one");
        assert_eq!(fs::read(&b).unwrap(), b"one");
        assert!(a.starts_with(dir(d.path())) && b.starts_with(dir(d.path())));
    }
}
