//! Ingest: bytes in, batches of points out.
//!
//! The path is layered as in VictoriaMetrics, one module per layer:
//!
//! - [`listen`]: sockets. [`serve_tcp`], [`serve_pickle`] and [`serve_udp`] take bound
//!   sockets, read, and hand batches to the [`Sink`](sumi_model::Sink) with
//!   back-pressure (the contract lives in `sumi_model::sink`, shared with the store).
//! - [`frame`]: lines out of a byte stream ([`frame::LineReader`]) or a datagram
//!   ([`frame::datagram_lines`]); over-long lines skipped, never buffered.
//! - [`plaintext`]: a pure parser of one carbon line ([`parse_line`]), exactly as
//!   carbon 1.1.10 reads it, allocation-free.
//! - [`pickle`]: carbon's pickle protocol: a safe unpickler that builds no object
//!   ([`pickle::Unpickler`]) and the length-prefixed framing.
//! - [`json_bulk`]: the JSON bulk body of `POST /api/v0/tsdb` ([`parse_json_bulk`]),
//!   all or nothing, gzip/deflate allowed.
//! - [`remote_write`]: Prometheus remote write 1.0 ([`decode_remote_write`]), labels
//!   mapped to Graphite tags.
//! - Graphite tagged names (`name;k=v`) are put in carbon's canonical form with
//!   [`sumi_model::tagged`], the grammar the store and the query read tags with.
//! - [`stats`]: counters by reason ([`IngestStats`]), their Prometheus text, and the
//!   rate-limited log of bad lines.
//! - [`options`]: [`PlaintextOptions`], [`PickleOptions`], every default with its
//!   reason.
//!
//! Bad input is counted by reason and skipped at the smallest scope it affects: a bad
//! line or pickle element never costs the rest of a connection; a malformed HTTP body
//! (JSON, remote write) is refused whole with a message saying where and why, and a
//! remote-write series without a usable name loses only its own samples.

pub mod frame;
pub mod json_bulk;
pub mod listen;
pub mod options;
pub mod pickle;
pub mod plaintext;
pub mod remote_write;
pub mod stats;

pub use json_bulk::{parse_json_bulk, BulkError, BulkLimits, BulkOutcome};
pub use listen::{serve_pickle, serve_tcp, serve_udp, ShutdownSignal};
pub use options::{AppendMode, PickleOptions, PlaintextOptions};
pub use plaintext::{parse_line, LineError, ParsedLine};
pub use remote_write::{decode_remote_write, WriteError, WriteLimits, WriteOutcome};
pub use stats::{IngestStats, LocalCounts, Reason, StatsSnapshot};
