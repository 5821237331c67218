//! Ingest counters and the rate-limited log of bad input.
//!
//! Connections count into a private [`LocalCounts`] and add it to the shared
//! [`IngestStats`] once per batch, so the hot path touches no shared cache line per
//! line. [`IngestStats::write_prometheus`] renders the counters; the family
//! `sumi_points_rejected_total` is shared with the store (which adds `too_old`,
//! `too_new`), so its samples can be written without their `# TYPE` line
//! ([`IngestStats::write_rejected_samples`]) and merged into one family.

mod ratelog;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use ratelog::{RateLimiter, SAMPLE_BYTES, SLOT_ALLOWLIST, SLOT_LISTENER, SLOT_REFUSED};

pub use ratelog::escape_sample;

/// Why ingest refused a point. [`Reason::label`] is the `reason` label value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Not exactly three fields.
    InvalidLine,
    /// The line is not valid UTF-8.
    InvalidUtf8,
    /// The value is not a Python float.
    InvalidValue,
    /// The timestamp is not a Python float, not finite or not a 64-bit second.
    InvalidTimestamp,
    /// The value is NaN (carbon drops these too).
    NanValue,
    /// Longer than the configured limit; skipped up to its newline.
    LineTooLong,
    /// Nothing left of the name after dropping empty nodes.
    EmptyName,
    /// A control character in the name.
    ControlChar,
    /// The name is longer than [`sumi_model::name::MAX_NAME_BYTES`].
    NameTooLong,
    /// A carbon pickle message that could not be unpickled (bad or forbidden opcode,
    /// truncated, over a limit, not a list); every point in it is lost, counted once.
    InvalidPickle,
    /// A pickle element, JSON element or remote-write series that is not the expected
    /// shape (not `(name, (timestamp, value))`, a name that is not text, no `__name__`).
    InvalidElement,
    /// A pickle length prefix above the limit; the connection is closed, as carbon does.
    FrameTooLong,
    /// The connection ended inside a length-prefixed frame; its points are lost.
    FrameTruncated,
    /// A Prometheus staleness marker (a NaN with a reserved bit pattern): not a value.
    StaleMarker,
    /// A Prometheus native histogram sample: Graphite has no place for it.
    HistogramSample,
    /// The sink stayed unavailable through the shutdown grace period; the batch was lost.
    SinkUnavailable,
    /// A tagged name (`name;tag=value`) carbon's `TaggedSeries.parse` refuses (an empty
    /// tag or value, a `~` value, a segment without `=`, ...).
    InvalidTags,
}

impl Reason {
    /// Every reason, in the order they are reported.
    pub const ALL: [Reason; 17] = [
        Reason::InvalidLine,
        Reason::InvalidUtf8,
        Reason::InvalidValue,
        Reason::InvalidTimestamp,
        Reason::NanValue,
        Reason::LineTooLong,
        Reason::EmptyName,
        Reason::ControlChar,
        Reason::NameTooLong,
        Reason::InvalidPickle,
        Reason::InvalidElement,
        Reason::FrameTooLong,
        Reason::FrameTruncated,
        Reason::StaleMarker,
        Reason::HistogramSample,
        Reason::SinkUnavailable,
        Reason::InvalidTags,
    ];

    /// The `reason` label value.
    pub fn label(self) -> &'static str {
        match self {
            Reason::InvalidLine => "invalid_line",
            Reason::InvalidUtf8 => "invalid_utf8",
            Reason::InvalidValue => "invalid_value",
            Reason::InvalidTimestamp => "invalid_timestamp",
            Reason::NanValue => "nan_value",
            Reason::LineTooLong => "line_too_long",
            Reason::EmptyName => "empty_name",
            Reason::ControlChar => "control_char",
            Reason::NameTooLong => "name_too_long",
            Reason::InvalidPickle => "invalid_pickle",
            Reason::InvalidElement => "invalid_element",
            Reason::FrameTooLong => "frame_too_long",
            Reason::FrameTruncated => "frame_truncated",
            Reason::StaleMarker => "stale_marker",
            Reason::HistogramSample => "histogram_sample",
            Reason::SinkUnavailable => "sink_unavailable",
            Reason::InvalidTags => "invalid_tags",
        }
    }

    /// The counter of a name [`sumi_model::name::normalize`] refused.
    pub fn for_name(e: &sumi_model::name::NameError) -> Reason {
        use sumi_model::name::NameError;
        match e {
            NameError::Empty => Reason::EmptyName,
            NameError::InvalidUtf8 => Reason::InvalidUtf8,
            NameError::ControlChar(_) => Reason::ControlChar,
            NameError::TooLong(_) => Reason::NameTooLong,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

const REASONS: usize = Reason::ALL.len();

/// Counts kept by one connection (or one UDP socket) between two batches.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LocalCounts {
    /// Data lines seen, good or bad (blank lines excluded).
    pub received: u64,
    /// Refused lines by [`Reason`] (indexed in [`Reason::ALL`] order).
    pub rejected: [u64; REASONS],
    /// Accepted lines whose name lost empty nodes (`a..b`).
    pub renamed: u64,
    /// Bytes read from the socket.
    pub bytes: u64,
    /// UDP datagrams read.
    pub datagrams: u64,
}

impl LocalCounts {
    /// Counts one refused line.
    pub fn reject(&mut self, reason: Reason) {
        self.reject_many(reason, 1);
    }

    /// Counts `count` refused points.
    pub fn reject_many(&mut self, reason: Reason, count: u64) {
        if let Some(n) = self.rejected.get_mut(reason.index()) {
            *n += count;
        }
    }

    /// How many lines were refused for `reason`.
    pub fn rejected(&self, reason: Reason) -> u64 {
        self.rejected.get(reason.index()).copied().unwrap_or(0)
    }
}

/// Counters shared by every listener of one server.
#[derive(Debug)]
pub struct IngestStats {
    received: AtomicU64,
    rejected: [AtomicU64; REASONS],
    renamed: AtomicU64,
    bytes: AtomicU64,
    conns_open: AtomicU64,
    conns_total: AtomicU64,
    conns_refused: AtomicU64,
    conns_refused_allowlist: AtomicU64,
    udp_datagrams: AtomicU64,
    udp_refused_allowlist: AtomicU64,
    logs: RateLimiter,
}

impl Default for IngestStats {
    fn default() -> Self {
        IngestStats::new(Duration::from_secs(10))
    }
}

/// A snapshot of [`IngestStats`], for tests and the `/health` page.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    /// Data lines that arrived, good or bad (blank lines excluded).
    pub points_received: u64,
    /// Refused lines per reason, every reason listed (in [`Reason::ALL`] order).
    pub rejected: Vec<(Reason, u64)>,
    /// Accepted lines whose name lost empty nodes (`a..b` stored as `a.b`).
    pub names_renamed: u64,
    /// Bytes read from sockets.
    pub bytes: u64,
    /// TCP connections open now.
    pub connections_open: u64,
    /// TCP connections accepted since start.
    pub connections_total: u64,
    /// TCP connections closed at once because of the connection limit.
    pub connections_refused: u64,
    /// TCP connections closed at once because their source is not in the allowlist.
    pub connections_refused_allowlist: u64,
    /// UDP datagrams read.
    pub udp_datagrams: u64,
    /// UDP datagrams dropped because their source is not in the allowlist.
    pub udp_refused_allowlist: u64,
}

impl StatsSnapshot {
    /// The count for one reason.
    pub fn rejected(&self, reason: Reason) -> u64 {
        self.rejected
            .iter()
            .find(|(r, _)| *r == reason)
            .map_or(0, |(_, n)| *n)
    }

    /// All refused lines.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.iter().map(|(_, n)| n).sum()
    }
}

impl IngestStats {
    /// Counters with a log line per reason at most every `log_interval`.
    pub fn new(log_interval: Duration) -> IngestStats {
        IngestStats {
            received: AtomicU64::new(0),
            rejected: std::array::from_fn(|_| AtomicU64::new(0)),
            renamed: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            conns_open: AtomicU64::new(0),
            conns_total: AtomicU64::new(0),
            conns_refused: AtomicU64::new(0),
            conns_refused_allowlist: AtomicU64::new(0),
            udp_datagrams: AtomicU64::new(0),
            udp_refused_allowlist: AtomicU64::new(0),
            logs: RateLimiter::new(log_interval),
        }
    }

    /// Adds a connection's counts and zeroes them.
    pub fn absorb(&self, local: &mut LocalCounts) {
        add(&self.received, local.received);
        add(&self.renamed, local.renamed);
        add(&self.bytes, local.bytes);
        add(&self.udp_datagrams, local.datagrams);
        for (shared, n) in self.rejected.iter().zip(local.rejected.iter()) {
            add(shared, *n);
        }
        *local = LocalCounts::default();
    }

    /// Counts a connection as open when the limit allows it. The limit holds across
    /// every listener sharing these stats.
    pub(crate) fn try_open_connection(&self, limit: u64) -> bool {
        let prev = self.conns_open.fetch_add(1, Relaxed);
        if prev >= limit {
            self.conns_open.fetch_sub(1, Relaxed);
            self.conns_refused.fetch_add(1, Relaxed);
            return false;
        }
        self.conns_total.fetch_add(1, Relaxed);
        true
    }

    pub(crate) fn close_connection(&self) {
        self.conns_open.fetch_sub(1, Relaxed);
    }

    /// Connections open right now.
    pub fn connections_open(&self) -> u64 {
        self.conns_open.load(Relaxed)
    }

    /// The counters as they are now.
    pub fn snapshot(&self) -> StatsSnapshot {
        StatsSnapshot {
            points_received: self.received.load(Relaxed),
            rejected: Reason::ALL
                .iter()
                .zip(self.rejected.iter())
                .map(|(r, n)| (*r, n.load(Relaxed)))
                .collect(),
            names_renamed: self.renamed.load(Relaxed),
            bytes: self.bytes.load(Relaxed),
            connections_open: self.conns_open.load(Relaxed),
            connections_total: self.conns_total.load(Relaxed),
            connections_refused: self.conns_refused.load(Relaxed),
            connections_refused_allowlist: self.conns_refused_allowlist.load(Relaxed),
            udp_datagrams: self.udp_datagrams.load(Relaxed),
            udp_refused_allowlist: self.udp_refused_allowlist.load(Relaxed),
        }
    }

    /// Every ingest metric in Prometheus text format, each family with its `# TYPE`
    /// line. Use [`IngestStats::write_own_families`] and
    /// [`IngestStats::write_rejected_samples`] instead to merge the rejected family
    /// with the store's.
    pub fn write_prometheus(&self, out: &mut String) {
        self.write_own_families(out);
        self.write_rejected_samples(out, true);
    }

    /// The families only ingest writes (received, renamed, connections, bytes,
    /// datagrams), each with its `# TYPE` line.
    pub fn write_own_families(&self, out: &mut String) {
        let s = self.snapshot();
        let families: [(&str, &str, u64); 6] = [
            ("sumi_points_received_total", "counter", s.points_received),
            (
                "sumi_ingest_names_renamed_total",
                "counter",
                s.names_renamed,
            ),
            ("sumi_ingest_bytes_total", "counter", s.bytes),
            (
                "sumi_ingest_udp_datagrams_total",
                "counter",
                s.udp_datagrams,
            ),
            ("sumi_carbon_connections_open", "gauge", s.connections_open),
            (
                "sumi_carbon_connections_total",
                "counter",
                s.connections_total,
            ),
        ];
        for (name, kind, value) in families {
            let _ = writeln!(out, "# TYPE {name} {kind}\n{name} {value}");
        }
        let _ = writeln!(
            out,
            "# TYPE sumi_carbon_connections_refused_total counter\n\
             sumi_carbon_connections_refused_total{{reason=\"limit\"}} {}\n\
             sumi_carbon_connections_refused_total{{reason=\"allowlist\"}} {}\n\
             # TYPE sumi_ingest_udp_datagrams_refused_total counter\n\
             sumi_ingest_udp_datagrams_refused_total{{reason=\"allowlist\"}} {}",
            s.connections_refused, s.connections_refused_allowlist, s.udp_refused_allowlist
        );
    }

    /// The samples of `sumi_points_rejected_total` for ingest's reasons (every reason,
    /// zeros included, so rates start at zero), preceded by the family's `# TYPE` line
    /// only when `type_line` is set. The store writes its own reasons after these.
    pub fn write_rejected_samples(&self, out: &mut String, type_line: bool) {
        if type_line {
            out.push_str(REJECTED_TYPE_LINE);
        }
        for (reason, n) in Reason::ALL.iter().zip(self.rejected.iter()) {
            let _ = writeln!(
                out,
                "{REJECTED_FAMILY}{{reason=\"{}\"}} {}",
                reason.label(),
                n.load(Relaxed)
            );
        }
    }

    /// Logs a refused line unless this reason was logged less than the interval ago;
    /// the next line logged says how many were not.
    pub fn log_rejection(
        &self,
        reason: Reason,
        peer: Option<SocketAddr>,
        line: &[u8],
        detail: &dyn std::fmt::Display,
    ) {
        if let Some(suppressed) = self.logs.allow(reason, Instant::now()) {
            let sample = escape_sample(line, SAMPLE_BYTES);
            let peer = peer.map_or_else(|| "-".to_string(), |p| p.to_string());
            tracing::warn!(
                reason = reason.label(),
                %peer,
                suppressed,
                "refused carbon line: {detail}: \"{sample}\""
            );
        }
    }

    /// Logs `what` (an event of kind `reason`) under the same per-reason rate limit.
    pub(crate) fn log_event(&self, reason: Reason, what: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.logs.allow(reason, Instant::now()) {
            tracing::warn!(reason = reason.label(), suppressed, "{what}");
        }
    }

    /// Logs a refused connection, at most once per interval.
    pub(crate) fn log_refused_connection(&self, peer: SocketAddr, limit: u64) {
        if let Some(suppressed) = self.logs.allow_slot(SLOT_REFUSED, Instant::now()) {
            tracing::warn!(%peer, limit, suppressed, "refusing carbon connection: connection limit reached");
        }
    }

    /// Counts a TCP connection closed because its source is not in the allowlist, and
    /// logs it at most once per interval.
    pub(crate) fn refuse_connection_source(&self, peer: SocketAddr, listener: &str) {
        self.conns_refused_allowlist.fetch_add(1, Relaxed);
        self.log_refused_source(peer, listener);
    }

    /// Counts a UDP datagram dropped because its source is not in the allowlist, and
    /// logs it at most once per interval.
    pub(crate) fn refuse_datagram_source(&self, peer: SocketAddr) {
        self.udp_refused_allowlist.fetch_add(1, Relaxed);
        self.log_refused_source(peer, "carbon plaintext UDP");
    }

    fn log_refused_source(&self, peer: SocketAddr, listener: &str) {
        if let Some(suppressed) = self.logs.allow_slot(SLOT_ALLOWLIST, Instant::now()) {
            tracing::warn!(
                %peer,
                listener,
                suppressed,
                "refusing carbon traffic: source not in carbon.allow"
            );
        }
    }

    /// Logs a socket error of a listener (accept, receive), at most once per interval.
    pub(crate) fn log_listener_error(&self, what: &dyn std::fmt::Display) {
        if let Some(suppressed) = self.logs.allow_slot(SLOT_LISTENER, Instant::now()) {
            tracing::warn!(suppressed, "{what}");
        }
    }
}

fn add(counter: &AtomicU64, n: u64) {
    if n != 0 {
        counter.fetch_add(n, Relaxed);
    }
}

/// The metric family shared with the store.
pub const REJECTED_FAMILY: &str = "sumi_points_rejected_total";
/// Its `# TYPE` line, for whoever writes the merged family first.
pub const REJECTED_TYPE_LINE: &str = "# TYPE sumi_points_rejected_total counter\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_unique_and_indexed_in_order() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(r.index(), i);
        }
        let mut labels: Vec<_> = Reason::ALL.iter().map(|r| r.label()).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), Reason::ALL.len());
    }

    #[test]
    fn absorb_adds_and_resets() {
        let stats = IngestStats::default();
        let mut local = LocalCounts {
            received: 5,
            renamed: 1,
            bytes: 100,
            ..Default::default()
        };
        local.reject(Reason::NanValue);
        local.reject(Reason::NanValue);
        stats.absorb(&mut local);
        assert_eq!(local, LocalCounts::default());
        local.received = 2;
        local.reject(Reason::InvalidLine);
        stats.absorb(&mut local);
        let s = stats.snapshot();
        assert_eq!(s.points_received, 7);
        assert_eq!(s.rejected(Reason::NanValue), 2);
        assert_eq!(s.rejected(Reason::InvalidLine), 1);
        assert_eq!(s.rejected_total(), 3);
        assert_eq!((s.names_renamed, s.bytes), (1, 100));
    }

    #[test]
    fn connection_limit() {
        let stats = IngestStats::default();
        assert!(stats.try_open_connection(2));
        assert!(stats.try_open_connection(2));
        assert!(!stats.try_open_connection(2));
        stats.close_connection();
        assert!(stats.try_open_connection(2));
        let s = stats.snapshot();
        assert_eq!(
            (
                s.connections_open,
                s.connections_total,
                s.connections_refused
            ),
            (2, 3, 1)
        );
    }

    #[test]
    fn refused_sources_are_counted_apart_from_the_limit() {
        let stats = IngestStats::default();
        let peer: SocketAddr = "192.0.2.1:5000".parse().unwrap();
        assert!(!stats.try_open_connection(0));
        stats.refuse_connection_source(peer, "carbon plaintext");
        stats.refuse_connection_source(peer, "carbon pickle");
        stats.refuse_datagram_source(peer);
        let s = stats.snapshot();
        assert_eq!(
            (
                s.connections_refused,
                s.connections_refused_allowlist,
                s.udp_refused_allowlist
            ),
            (1, 2, 1)
        );
        let mut out = String::new();
        stats.write_own_families(&mut out);
        assert!(out.contains(
            "# TYPE sumi_carbon_connections_refused_total counter\n\
             sumi_carbon_connections_refused_total{reason=\"limit\"} 1\n\
             sumi_carbon_connections_refused_total{reason=\"allowlist\"} 2\n"
        ));
        assert!(out.contains("sumi_ingest_udp_datagrams_refused_total{reason=\"allowlist\"} 1\n"));
    }

    #[test]
    fn prometheus_text() {
        let stats = IngestStats::default();
        let mut local = LocalCounts {
            received: 3,
            bytes: 42,
            ..Default::default()
        };
        local.reject(Reason::InvalidValue);
        stats.absorb(&mut local);
        let mut out = String::new();
        stats.write_prometheus(&mut out);
        assert!(out
            .contains("# TYPE sumi_points_received_total counter\nsumi_points_received_total 3\n"));
        assert!(out.contains("sumi_ingest_bytes_total 42\n"));
        assert!(out.contains("# TYPE sumi_carbon_connections_open gauge\n"));
        assert!(out.contains("sumi_points_rejected_total{reason=\"invalid_value\"} 1\n"));
        assert!(out.contains("sumi_points_rejected_total{reason=\"nan_value\"} 0\n"));
        assert_eq!(out.matches("# TYPE sumi_points_rejected_total").count(), 1);
        // the family's samples directly follow its TYPE line
        let type_at = out.find(REJECTED_TYPE_LINE).unwrap();
        let first_sample = out.find("sumi_points_rejected_total{").unwrap();
        assert_eq!(type_at + REJECTED_TYPE_LINE.len(), first_sample);

        let mut merged = String::new();
        stats.write_rejected_samples(&mut merged, false);
        assert!(!merged.contains("# TYPE"));
        assert_eq!(merged.lines().count(), Reason::ALL.len());
        for line in out.lines().filter(|l| !l.starts_with('#')) {
            let (name, value) = line.rsplit_once(' ').unwrap();
            assert!(!name.is_empty());
            value.parse::<u64>().unwrap();
        }
    }
}
