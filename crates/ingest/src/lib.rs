//! Ingest: bytes in, batches of points out.
//!
//! The path is layered as in VictoriaMetrics: sockets (`listen`) → framing (lines out
//! of a byte stream) → a pure parser (`plaintext`) → the [`Sink`]. Bad lines are
//! counted by reason and skipped; one bad line never costs the rest of a connection.

pub mod sink;

pub use sink::{AppendOutcome, Sink, SinkError};
