//! The vocabulary shared by every stage of sumi. Nothing here does I/O.
//!
//! - [`name`]: metric paths (`servers.web01.cpu.user`) and how raw input becomes one.
//! - [`glob`]: Graphite's per-node glob patterns (`*`, `?`, `[a-z]`, `{a,b}`), as
//!   graphite-web 1.1's finders match them.
//! - [`clock`]: the current time, injected.
//! - [`agg`]: aggregation methods of whisper rollups (`average`, `sum`, `last`, ...).
//! - [`schema`]: retention archives and the two carbon config files
//!   (`storage-schemas.conf`, `storage-aggregation.conf`) with carbon's matching rules.
//! - [`point`]: a timestamped value and the batch that crosses the ingest → store seam.
//! - [`sink`]: that seam, the [`Sink`] trait and its contract: what `Ok` promises, and
//!   what a [`SinkError`] tells the producer (throttled, unavailable, closed).
//! - [`tagged`]: carbon's grammar of tagged names (`name;tag=value`), its canonical form
//!   and how tags are read out of a name.

pub mod agg;
pub mod clock;
pub mod glob;
pub mod name;
pub mod point;
pub mod schema;
pub mod sink;
pub mod tagged;

pub use agg::AggMethod;

/// The first node of every anomaly score series (`_anomaly.<name>`, the scores of
/// series `<name>`).
pub const SCORE_PREFIX: &str = "_anomaly.";

/// The name whose partition a stored series lives in, in a cluster: its own, or for an
/// anomaly score series `_anomaly.<name>` its series' `<name>` (the storage nodes of
/// `<name>`'s partition score its points and store the scores; reads, partition
/// copies and delete markers follow it).
pub fn placement_name(name: &str) -> &str {
    name.strip_prefix(SCORE_PREFIX)
        .filter(|rest| !rest.is_empty())
        .unwrap_or(name)
}
pub use clock::{Clock, ManualClock, SystemClock};
pub use point::{Batch, Point};
pub use schema::{
    AggregationOverride, Archive, Retention, SeriesConfig, SeriesRules, StorageAggregation,
    StorageSchemas,
};
pub use sink::{AppendOutcome, Sink, SinkError};
