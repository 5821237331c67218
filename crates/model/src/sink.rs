//! The ingest → store seam: what every producer of points (the carbon listeners, the
//! HTTP ingest routes, GrowthForecast posts, self-monitoring) hands its batches to.
//!
//! It lives here, in the shared vocabulary, so that the store implements it without
//! depending on the ingest crate, and so that other producers (a log consumer, an
//! importer) and other sinks (a log producer) can meet at the same trait.

use std::time::Duration;

use crate::Batch;

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
/// - `Err` means nothing of the batch was accepted: none of its points is visible to
///   reads, and the caller keeps the batch and sends it again ([`SinkError`] says
///   when). Sending a batch again is idempotent: each point lands in its slot, so a
///   retried point is stored once. (After a failed fsync the log's bytes may still
///   reach the disk and be replayed by the next open; the retry then stores the same
///   values in the same slots.)
pub trait Sink: Send + Sync + 'static {
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError>;

    /// [`append`](Sink::append) of a GrowthForecast graph's points: a series this
    /// append creates rolls up as GrowthForecast's graphs do (average, xFilesFactor
    /// 0), whatever the carbon rules say. A store knows its graphs' series already
    /// (its aggregation override), so the default is `append`; a sink that hands the
    /// points on (a cluster's log producer) carries the mark with them.
    fn append_graph_points(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.append(batch)
    }
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

/// Why a batch was not accepted at all. In every case nothing of it was stored and
/// the caller may send it again; the variants say when that is worth doing.
///
/// `Display` keeps one prefix for all three (`store unavailable: ...`), the words
/// GrowthForecast clients have always seen; [`SinkError::reason`] is the sink's own
/// message alone.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// A rate limit refused the batch for now (new series come faster than the store
    /// allows): send it again after `retry_after`, when the limit will let it through.
    #[error("store unavailable: {reason}")]
    Throttled {
        retry_after: Duration,
        reason: String,
    },
    /// The sink cannot take writes now: the disk is full, the head is far behind its
    /// flushes, a write or fsync failed. Back off and retry; how long it lasts is not
    /// known.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The sink is shutting down and takes no more writes.
    #[error("store unavailable: {0}")]
    Closed(String),
}

impl SinkError {
    /// The sink's message, without the `store unavailable:` prefix.
    pub fn reason(&self) -> &str {
        match self {
            SinkError::Throttled { reason, .. } => reason,
            SinkError::Unavailable(r) | SinkError::Closed(r) => r,
        }
    }

    /// How long to wait before sending the batch again, when the sink knows.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            SinkError::Throttled { retry_after, .. } => Some(*retry_after),
            SinkError::Unavailable(_) | SinkError::Closed(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_keeps_one_prefix_and_reason_is_bare() {
        let errs = [
            SinkError::Throttled {
                retry_after: Duration::from_millis(1500),
                reason: "new series limit: slow down".into(),
            },
            SinkError::Unavailable("disk full".into()),
            SinkError::Closed("store is closed".into()),
        ];
        for e in &errs {
            assert_eq!(e.to_string(), format!("store unavailable: {}", e.reason()));
        }
        assert_eq!(errs[0].retry_after(), Some(Duration::from_millis(1500)));
        assert_eq!(errs[1].retry_after(), None);
        assert_eq!(errs[2].reason(), "store is closed");
    }
}
