//! Readers of the stores sumi imports history from. Nothing here writes.
//!
//! - [`whisper`]: whisper files (graphite's `whisper.py` 1.1 format): header, archive
//!   table, points, and `fetch` with whisper's own semantics. Damaged input is a
//!   [`whisper::WhisperError`] with the file and the byte offset, never a panic.
//! - [`carbon`]: how carbon lays series out on disk: `a/b/c.wsp` is `a.b.c`, tagged
//!   series live under `_tagged/`.
//! - [`rrd`]: RRD files as RRDtool 1.7 writes them on x86_64 Linux, and `fetch` with
//!   `rrdtool fetch`'s semantics. Damaged input is an [`rrd::RrdError`].
//!
//! Format notes: `docs/format/whisper.md`, `docs/format/rrd.md`.

pub mod carbon;
pub mod rrd;
pub mod whisper;
