//! The embedded storage engine: write-ahead log → in-memory head → immutable,
//! time-partitioned parts, with whisper-identical placement, rollups and retention.
//!
//! The write path, in the order a point takes it:
//! - [`append`](crate::append) (the [`sumi_model::Sink`] impl): names to series ids,
//!   each point to its level and slot, one WAL record per batch, rows into the head
//!   once the record is written, in WAL order.
//! - `admission`: what may refuse a batch before the WAL sees it (closed, disk below
//!   its reserve, the new-series budget).
//! - [`Store::import_series`] (`import`): history from whisper or RRD files, each
//!   source archive written straight to its level (no placement by age), only into
//!   empty slots, through the same WAL and head.
//! - `series`: the index (arena-interned names, a hash table, the metric tree) and its
//!   append-only `series.log`.
//! - `wal`: segments, group commit, fsync policy, the turns that order the head,
//!   replay.
//! - `head`: per-shard raw rows, searchable at once through per-series links, and the
//!   frozen generations waiting for a flush.
//! - `flush`: frozen head generations → parts; `part`: the part format, writer and
//!   reader (mmap for point reads, `pread` for scans); `block`: the codec shim.
//! - `partset`: the published version and roll state readers clone, and the edits
//!   that replace them; `version`: those values (the live parts, the roll state);
//!   `manifest`: their durable form.
//! - background work: `rollup`, `retention`, `compact` (each an `impl` of the store's
//!   state, like `flush`), run by `background`'s workers.
//!
//! `store` opens the store and owns these parts (`Inner`, whose doc holds the table of
//! every lock and the order they are taken in).
//!
//! The read path: [`Store::fetch`] (whisper's window arithmetic, then `read`: head,
//! parts, rollups materialised or computed) and [`Store::find`] (graphite-web's
//! standard finder over the tree).
//!
//! On-disk formats are described in `docs/format/`.
//!
//! # Whisper semantics, and where they differ
//!
//! A point goes to the first archive (level) whose retention covers its age, aligned
//! down to that level's step; the last write to a (series, level, slot) wins, by
//! arrival order. A coarse slot is the newest direct write to it, else the rollup of
//! the finer level over it (`AggMethod::rollup`, bit-identical to whisper, `None` below
//! xFilesFactor). `fetch` is whisper's `file_fetch` window arithmetic exactly. The
//! `whisper_model` property test checks all of this against a model of whisper's ring
//! buffers. Known differences, all at retention edges, where whisper loses data that
//! sumi keeps:
//!
//! - whisper decides between "written directly to a coarse archive" and "propagated
//!   from the finer one" by wall-clock order; sumi lets a direct write win. They differ
//!   only when a coarse slot receives points on both sides of the finer archive's
//!   retention edge within one coarse step.
//! - whisper's propagation reads the finer archive's ring, where slots older than its
//!   retention may already be overwritten; sumi rolls up every fine slot it still holds
//!   (partitions are dropped only after they are rolled up).
//! - a whisper point whose slot is exactly one retention behind a live slot (an old point
//!   at the very edge, or a future point) overwrites that slot's ring position; sumi
//!   keeps both.
//! - `update_many` within one call keeps the point with the latest timestamp per slot;
//!   sumi keeps the last one received (the `Sink` contract).

mod admin;
mod admission;
mod append;
mod background;
mod block;
pub mod codec;
mod compact;
mod diskspace;
mod error;
pub mod failpoint;
mod flush;
mod fsutil;
mod head;
mod import;
mod manifest;
mod metrics;
mod options;
mod part;
mod partset;
pub mod prefetch;
mod quarantine;
mod read;
mod retention;
mod rollup;
mod series;
mod store;
mod tagged;
pub mod transfer;
pub mod verify;
mod version;
pub mod wal;

/// `series.log`'s series records as bytes, for the fuzz target (`docs/format/series-log.md`).
pub mod series_log {
    pub use crate::series::log::{decode_series, encode_series};
}

/// Part files written and read back whole, for the fuzz target (`docs/format/part.md`).
pub mod part_file {
    pub use crate::part::fuzz::{read_part, write_part, ReadBack};
}

#[cfg(test)]
mod testutil;

pub use error::StoreError;
pub use import::ImportOutcome;
pub use options::{FsyncPolicy, InvalidFsyncPolicy, StoreOptions};
pub use read::bulk::{FetchPlan, FetchedRef, LeafHint};
pub use read::Fetched;
pub use series::{FindEntry, Renamed, MAX_LEVELS};
pub use store::Store;
pub use tagged::{
    TagExpr, TagInfo, TagOp, TagQueryError, TagSeriesError, TagValueInfo, AUTOCOMPLETE_LIMIT,
};
