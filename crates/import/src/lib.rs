//! Readers of the stores sumi imports history from, and the import job over them.
//! Nothing here writes to a store: the job hands series to a [`job::Target`].
//!
//! - [`whisper`]: whisper files (graphite's `whisper.py` 1.1 format): header, archive
//!   table, points, and `fetch` with whisper's own semantics. Damaged input is a
//!   [`whisper::WhisperError`] with the file and the byte offset, never a panic.
//! - [`carbon`]: how carbon lays series out on disk: `a/b/c.wsp` is `a.b.c`, tagged
//!   series live under `_tagged/`.
//! - [`rrd`]: RRD files as RRDtool 1.7 writes them on x86_64 Linux, and `fetch` with
//!   `rrdtool fetch`'s semantics. Damaged input is an [`rrd::RrdError`].
//! - [`export_lines`]: the lines `sumi export` reads (`/render?format=raw`) and writes.
//! - [`growthforecast`]: GrowthForecast's data directory (`gforecast.db` and its RRD
//!   files) as graphs and the series sumi stores them in.
//! - [`mysqldump`]: the rows of a `mysqldump` file (GrowthForecast's MySQL back end).
//! - [`sources`]: a whisper file or an RRD file as the series it holds, with their
//!   archives, method and xFilesFactor.
//! - [`job`]: `sumi import`'s driver: files in parallel, a state file to resume,
//!   progress on stderr, a summary.
//! - [`values`]: the text form of an archive's values in `POST /api/v0/import`.
//!
//! Format notes: `docs/format/whisper.md`, `docs/format/rrd.md`.

pub mod carbon;
pub mod export_lines;
pub mod growthforecast;
pub mod job;
pub mod mysqldump;
pub mod rrd;
pub mod sources;
pub mod values;
pub mod whisper;
