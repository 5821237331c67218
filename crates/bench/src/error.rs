//! Everything that can stop a benchmark, each saying what failed and where.

use std::io;

/// Why a benchmark could not go on.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The command line asks for something impossible.
    #[error("invalid arguments: {0}")]
    Args(String),
    /// A file, process or socket operation failed.
    #[error("{what}: {source}")]
    Io {
        /// The operation and its object, e.g. `read /proc/42/stat`.
        what: String,
        /// The OS error.
        source: io::Error,
    },
    /// An HTTP request got no usable answer.
    #[error("GET http://{addr}{path}: {reason}")]
    Http {
        /// `host:port` asked.
        addr: String,
        /// Path and query asked.
        path: String,
        /// What went wrong (connect, timeout, malformed answer, status).
        reason: String,
    },
    /// A text the benchmark reads (from /proc or from the server) is malformed.
    #[error("parse {what}: {detail}")]
    Parse {
        /// Which kind of text.
        what: &'static str,
        /// What is wrong with it, and a piece of it.
        detail: String,
    },
    /// The server did not answer `/health` with 200 in time.
    #[error("server at http://{addr} not ready after {secs} s: {last}")]
    NotReady {
        /// HTTP address polled.
        addr: String,
        /// Seconds waited.
        secs: u64,
        /// The last answer or error seen.
        last: String,
    },
    /// The server the benchmark started exited.
    #[error(
        "server exited during {phase} ({status}); last lines of {log_path} (removed unless \
         --keep):\n{log_tail}"
    )]
    ServerExited {
        /// What the benchmark was doing.
        phase: &'static str,
        /// The exit status.
        status: String,
        /// Where its output went.
        log_path: String,
        /// The end of that output.
        log_tail: String,
    },
    /// A carbon connection could not be opened.
    #[error("connect to carbon at {addr}: {source}")]
    Connect {
        /// Address dialled.
        addr: String,
        /// The OS error (connection refused, timeout...).
        source: io::Error,
    },
    /// Sending the payload failed on one connection.
    #[error("send on carbon connection {conn} to {addr} after {sent_points} points: {source}")]
    Send {
        /// Connection number.
        conn: usize,
        /// Address of the carbon listener.
        addr: String,
        /// Points of this connection handed to the kernel before the failure.
        sent_points: u64,
        /// The OS error.
        source: io::Error,
    },
    /// The stored-points counter stopped moving before every point was stored.
    #[error(
        "ingest stalled: sumi_points_stored_total grew by {reached} of {target} points and did \
         not move for {stall_secs} s{note}"
    )]
    Stalled {
        /// Points counted since the start.
        reached: u64,
        /// Points sent.
        target: u64,
        /// Seconds without progress.
        stall_secs: u64,
        /// Extra detail (e.g. the counter never appeared on /metrics).
        note: String,
    },
    /// The sampled series did not all become queryable.
    #[error(
        "render stalled: the {series} sampled series show {reached} of {target} points and \
         did not change for {stall_secs} s{note}"
    )]
    QueryStalled {
        /// Number of sampled series.
        series: usize,
        /// Non-null points seen.
        reached: u64,
        /// Points expected.
        target: u64,
        /// Seconds without progress.
        stall_secs: u64,
        /// The last error or odd answer seen, if any.
        note: String,
    },
}

impl BenchError {
    /// An [`BenchError::Io`] for operation `what`.
    pub fn io(what: impl Into<String>, source: io::Error) -> BenchError {
        BenchError::Io {
            what: what.into(),
            source,
        }
    }
}
