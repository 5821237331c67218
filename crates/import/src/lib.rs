//! Readers of the stores sumi imports history from. Nothing here writes.
//!
//! - [`whisper`]: whisper files (graphite's `whisper.py` 1.1 format): header, archive
//!   table, points, and `fetch` with whisper's own semantics. Damaged input is a
//!   [`whisper::WhisperError`] with the file and the byte offset, never a panic.
//! - [`carbon`]: how carbon lays series out on disk: `a/b/c.wsp` is `a.b.c`, tagged
//!   series live under `_tagged/`.
//!
//! Format notes: `docs/format/whisper.md`.

pub mod carbon;
pub mod whisper;
