//! Settings of the carbon listeners (plaintext, pickle), with the reason for each
//! default.

use std::sync::Arc;
use std::time::Duration;

use sumi_model::{Clock, SystemClock};

use crate::frame::DEFAULT_MAX_LINE_BYTES;
use crate::listen::allow::SourceAllowlist;
use crate::pickle::PickleLimits;

/// How [`crate::listen`] calls the synchronous [`Sink::append`](sumi_model::Sink::append).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AppendMode {
    /// Call it on the connection's task. Cheapest; right when an append is short.
    Inline,
    /// Wrap the call in `tokio::task::block_in_place`, so that a slow append (a WAL
    /// write waiting on the disk) hands the worker's other tasks to another thread.
    /// Falls back to `Inline` on a current-thread runtime, where it is not allowed.
    BlockInPlace,
}

/// Options of [`crate::listen::serve_tcp`] and [`crate::listen::serve_udp`].
#[derive(Clone)]
pub struct PlaintextOptions {
    /// Longest line accepted, not counting `\n`. Default 16 KiB: Twisted's limit in
    /// carbon; a metric line is rarely over 200 bytes.
    pub max_line_bytes: usize,
    /// Read buffer of a busy connection. Default 64 KiB: one read brings ~1,300
    /// benchmark lines; 256 KiB measured no faster (`benches/ingest.rs`). Idle
    /// connections hold none: buffers go back to a small pool when a connection has
    /// nothing unfinished.
    pub read_buffer_bytes: usize,
    /// A batch is handed to the sink when it holds this many points, or when the
    /// socket has nothing more to read. Default 8,192: big enough for the store's group
    /// commit, small enough (~0.5 MiB with names) to keep memory per busy connection
    /// modest.
    pub max_batch_points: usize,
    /// Reads of `read_buffer_bytes` a busy connection makes per wake-up before it goes
    /// back through the scheduler (which lets a busy client share its worker with the
    /// others); the batch is handed on after them. Default 8 (512 KiB with the default
    /// buffer). A cluster node raises it with `max_batch_points`, so that a batch can
    /// fill (docs/cluster.md, "Larger produce requests").
    pub reads_per_wake: usize,
    /// Open TCP connections allowed across the listeners sharing one `IngestStats`;
    /// more are accepted and closed at once, with a log line. Default 10,000.
    pub max_connections: u64,
    /// See [`AppendMode`]. Default `BlockInPlace`: the store's append writes the WAL,
    /// and a slow one must not stall the worker's other connections; with a no-op sink
    /// it costs ~4% of throughput against `Inline` (`benches/ingest.rs`).
    pub append_mode: AppendMode,
    /// First wait after the sink says `Unavailable`; doubles up to `retry_max`.
    /// Default 10 ms.
    pub retry_initial: Duration,
    /// Longest wait between two tries. Default 1 s.
    pub retry_max: Duration,
    /// After shutdown is signalled, how long a connection keeps retrying an
    /// unavailable sink before its batch is dropped and counted (`sink_unavailable`).
    /// Default 5 s: shutdown must end, and the store is going away anyway.
    pub shutdown_grace: Duration,
    /// The time that replaces a timestamp of `-1`. Default: the system clock.
    pub clock: Arc<dyn Clock>,
    /// The sources that may send: TCP connections from elsewhere are closed unread
    /// and UDP datagrams dropped, each counted and logged (rate-limited). Default
    /// `None`: every source (the listeners bind to loopback unless configured
    /// otherwise, which is the first line of defence).
    pub allow: Option<Arc<SourceAllowlist>>,
}

impl Default for PlaintextOptions {
    fn default() -> Self {
        PlaintextOptions {
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            read_buffer_bytes: 64 * 1024,
            max_batch_points: 8192,
            reads_per_wake: 8,
            max_connections: 10_000,
            append_mode: AppendMode::BlockInPlace,
            retry_initial: Duration::from_millis(10),
            retry_max: Duration::from_secs(1),
            shutdown_grace: Duration::from_secs(5),
            clock: Arc::new(SystemClock),
            allow: None,
        }
    }
}

impl PlaintextOptions {
    /// Small buffers and batches (so tests cross every boundary) and quick retries.
    pub fn for_tests() -> Self {
        PlaintextOptions {
            max_line_bytes: 1024,
            read_buffer_bytes: 4096,
            max_batch_points: 64,
            retry_initial: Duration::from_millis(1),
            retry_max: Duration::from_millis(20),
            shutdown_grace: Duration::from_millis(200),
            ..PlaintextOptions::default()
        }
    }
}

impl std::fmt::Debug for PlaintextOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlaintextOptions")
            .field("max_line_bytes", &self.max_line_bytes)
            .field("read_buffer_bytes", &self.read_buffer_bytes)
            .field("max_batch_points", &self.max_batch_points)
            .field("reads_per_wake", &self.reads_per_wake)
            .field("max_connections", &self.max_connections)
            .field("append_mode", &self.append_mode)
            .field("retry_initial", &self.retry_initial)
            .field("retry_max", &self.retry_max)
            .field("shutdown_grace", &self.shutdown_grace)
            .field("now", &self.clock.now())
            .field("allow", &self.allow.as_ref().map(|a| a.to_string()))
            .finish()
    }
}

/// Options of [`crate::listen::serve_pickle`].
#[derive(Clone, Debug)]
pub struct PickleOptions {
    /// Batching, buffers, connection limit, retries, clock: as for plaintext
    /// (`max_line_bytes` is not used).
    pub listener: PlaintextOptions,
    /// Largest message accepted; a longer length prefix closes the connection (as
    /// carbon does: the stream cannot be resynchronised). Default 1 MiB: carbon's
    /// `PICKLE_RECEIVER_MAX_LENGTH` (Twisted's own default, 99,999 bytes, is raised by
    /// carbon); carbon-relay sends about 50 KiB per message.
    pub max_frame_bytes: usize,
    /// Bounds on what one message may make the unpickler do.
    pub limits: PickleLimits,
}

impl Default for PickleOptions {
    fn default() -> Self {
        PickleOptions {
            listener: PlaintextOptions::default(),
            max_frame_bytes: DEFAULT_MAX_FRAME_BYTES,
            limits: PickleLimits::default(),
        }
    }
}

impl PickleOptions {
    /// Small buffers and batches, quick retries (as [`PlaintextOptions::for_tests`]).
    pub fn for_tests() -> Self {
        PickleOptions {
            listener: PlaintextOptions::for_tests(),
            ..PickleOptions::default()
        }
    }
}

/// carbon's `PICKLE_RECEIVER_MAX_LENGTH`.
pub const DEFAULT_MAX_FRAME_BYTES: usize = 1 << 20;
