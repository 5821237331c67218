//! The ingest → store seam.

use sumi_model::Batch;

/// Where parsed points go. The store implements it; a log producer (cluster) can too.
///
/// The contract:
/// - `append` returns `Ok` only once every accepted point of the batch is in the
///   write-ahead log (handed to the OS, and on disk when the fsync policy is `always`)
///   and applied to the in-memory head, so visible to queries. A process crash after
///   `Ok` loses none of them.
/// - Points are applied in batch order. For two points of one series in the same
///   archive slot the later one wins, within a batch and across batches (whisper's
///   last-write-wins). Late and out-of-order points are normal: each lands in the
///   archive whose retention covers its age, like whisper's `update_many`.
/// - Points the store refuses (older than the longest retention, too far in the
///   future) are counted by reason in the [`AppendOutcome`] and in the store's own
///   counters; they are never silently lost.
/// - `Err` means nothing of the batch was accepted (the log cannot be written: disk
///   full, a failed fsync). The caller keeps the batch and applies back-pressure.
pub trait Sink: Send + Sync + 'static {
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError>;
}

/// What became of a batch the sink accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppendOutcome {
    /// Points now in the log and the head.
    pub accepted: u64,
    /// Points older than the series' longest retention.
    pub too_old: u64,
    /// Points further in the future than the store accepts.
    pub too_new: u64,
    /// Points of new series refused because the store holds its maximum number of
    /// series (`[store] max_series`).
    pub series_limit: u64,
}

impl AppendOutcome {
    pub fn rejected(&self) -> u64 {
        self.too_old + self.too_new + self.series_limit
    }
}

/// Why a batch was not accepted at all.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// The store cannot take writes now (disk full, failed fsync, shutting down).
    #[error("store unavailable: {0}")]
    Unavailable(String),
}
