//! The store's error type: what failed, on which file, where.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong opening, writing or closing the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A system call on a file failed.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A file's bytes are not what its format says (bad magic, CRC mismatch, ...).
    #[error("corrupt {what} {} at offset {offset}: {detail}", path.display())]
    Corrupt {
        what: &'static str,
        path: PathBuf,
        offset: u64,
        detail: String,
    },
    /// The options cannot work (a retention with too many archives, ...).
    #[error("invalid store options: {0}")]
    Options(String),
    /// `close()` was called; the store takes no more writes.
    #[error("store is closed")]
    Closed,
    /// The head holds four times `flush_bytes` because flushes keep failing: writes are
    /// refused until a flush succeeds (the caller keeps its batch and backs off).
    #[error("store is full: {0}")]
    Backpressure(String),
    /// An administrative request (delete, rename) that cannot be done as asked.
    #[error("{0}")]
    Admin(String),
    /// An administrative request names no series.
    #[error("not found: {0}")]
    NotFound(String),
    /// More new series than `max_new_series_per_minute` allows: the batch waits (it
    /// is refused whole; the series created so far stay, so a retry makes progress).
    /// `retry_after` is how long until the budget lets the next series through.
    #[error("new series limit: {detail}")]
    NewSeriesRate {
        retry_after: std::time::Duration,
        detail: String,
    },
    /// An earlier write or fsync failed; the store refuses writes until it is reopened.
    #[error("store refuses writes after an earlier failure: {0}")]
    Poisoned(String),
}

impl StoreError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> StoreError {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(
        what: &'static str,
        path: impl Into<PathBuf>,
        offset: u64,
        detail: impl Into<String>,
    ) -> StoreError {
        StoreError::Corrupt {
            what,
            path: path.into(),
            offset,
            detail: detail.into(),
        }
    }
}
