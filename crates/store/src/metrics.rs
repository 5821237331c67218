//! The store's counters, and their Prometheus text exposition.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Monotonic counters, bumped with relaxed atomics on the paths that own them.
#[derive(Default, Debug)]
pub(crate) struct Metrics {
    pub(crate) points_stored: AtomicU64,
    pub(crate) rejected_too_old: AtomicU64,
    pub(crate) rejected_too_new: AtomicU64,
    /// Points of new series refused because the index holds `max_series`.
    pub(crate) rejected_series_limit: AtomicU64,
    /// Batches held back by `max_new_series_per_minute`.
    pub(crate) new_series_throttled: AtomicU64,
    pub(crate) appends: AtomicU64,
    pub(crate) append_errors: AtomicU64,
    pub(crate) series_created: AtomicU64,
    pub(crate) wal_bytes: AtomicU64,
    pub(crate) wal_writes: AtomicU64,
    pub(crate) wal_segments_created: AtomicU64,
    pub(crate) wal_segments_removed: AtomicU64,
    pub(crate) wal_fsyncs: AtomicU64,
    pub(crate) wal_fsync_micros: AtomicU64,
    pub(crate) wal_replayed_points: AtomicU64,
    pub(crate) wal_corrupt_tail: AtomicU64,
    pub(crate) series_log_cut_bytes: AtomicU64,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_micros: AtomicU64,
    pub(crate) flushed_rows: AtomicU64,
    pub(crate) parts_written: AtomicU64,
    pub(crate) compactions: AtomicU64,
    pub(crate) compaction_micros: AtomicU64,
    pub(crate) compaction_bytes_in: AtomicU64,
    pub(crate) compaction_bytes_out: AtomicU64,
    pub(crate) rollups: AtomicU64,
    pub(crate) rollup_micros: AtomicU64,
    pub(crate) rollup_points: AtomicU64,
    pub(crate) retention_drops: AtomicU64,
    pub(crate) retention_parts_dropped: AtomicU64,
    pub(crate) parts_corrupt: AtomicU64,
    pub(crate) blocks_corrupt: AtomicU64,
    /// Manifests found corrupt at open (quarantined, rebuilt from the parts).
    pub(crate) manifest_corrupt: AtomicU64,
    /// Series logs whose tail was cut at open.
    pub(crate) series_log_cuts: AtomicU64,
    /// Times the data disk went below `min_free_bytes` (writes refused until it recovers).
    pub(crate) disk_full_episodes: AtomicU64,
    /// Batches refused because the disk was full.
    pub(crate) disk_full_refusals: AtomicU64,
    /// 1 while writes are refused for lack of disk space.
    pub(crate) disk_full: AtomicU64,
    pub(crate) background_errors: AtomicU64,
}

/// Gauges computed when the page is written.
#[derive(Default, Debug)]
pub(crate) struct Gauges {
    pub(crate) series: u64,
    pub(crate) tree_nodes: u64,
    pub(crate) index_bytes: u64,
    pub(crate) series_log_bytes: u64,
    pub(crate) head_rows: u64,
    pub(crate) head_bytes: u64,
    pub(crate) frozen_generations: u64,
    pub(crate) wal_segment: u64,
    /// `(level, parts, bytes, points)`.
    pub(crate) parts: Vec<(usize, u64, u64, u64)>,
    pub(crate) dirty_partitions: u64,
    pub(crate) healthy: bool,
}

fn counter(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(
        out,
        "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}"
    );
}

fn gauge(out: &mut String, name: &str, help: &str, v: u64) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
}

impl Metrics {
    pub(crate) fn write_prometheus(&self, g: &Gauges, out: &mut String) {
        let r = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let secs = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
        counter(
            out,
            "sumi_points_stored_total",
            "Points applied to the store and visible to queries.",
            r(&self.points_stored),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_points_rejected_total Points the store refused, by reason.\n# TYPE sumi_points_rejected_total counter\n\
             sumi_points_rejected_total{{reason=\"too_old\"}} {}\nsumi_points_rejected_total{{reason=\"too_new\"}} {}\n\
             sumi_points_rejected_total{{reason=\"series_limit\"}} {}",
            r(&self.rejected_too_old),
            r(&self.rejected_too_new),
            r(&self.rejected_series_limit)
        );
        counter(
            out,
            "sumi_new_series_throttled_total",
            "Batches held back because they would create series faster than max_new_series_per_minute.",
            r(&self.new_series_throttled),
        );
        counter(
            out,
            "sumi_store_appends_total",
            "Batches appended.",
            r(&self.appends),
        );
        counter(
            out,
            "sumi_store_append_errors_total",
            "Batches refused as a whole (WAL failure, closed store).",
            r(&self.append_errors),
        );
        gauge(out, "sumi_series_active", "Series in the index.", g.series);
        counter(
            out,
            "sumi_series_created_total",
            "Series created since the store opened.",
            r(&self.series_created),
        );
        gauge(
            out,
            "sumi_index_tree_nodes",
            "Nodes of the metric tree.",
            g.tree_nodes,
        );
        gauge(
            out,
            "sumi_index_bytes",
            "Approximate heap bytes of the series index.",
            g.index_bytes,
        );
        gauge(
            out,
            "sumi_series_log_bytes",
            "Size of series.log.",
            g.series_log_bytes,
        );
        counter(
            out,
            "sumi_wal_bytes_total",
            "Bytes written to the WAL.",
            r(&self.wal_bytes),
        );
        counter(
            out,
            "sumi_wal_writes_total",
            "write calls on the WAL (group commits).",
            r(&self.wal_writes),
        );
        counter(
            out,
            "sumi_wal_segments_created_total",
            "WAL segments started.",
            r(&self.wal_segments_created),
        );
        counter(
            out,
            "sumi_wal_segments_removed_total",
            "WAL segments deleted after a checkpoint.",
            r(&self.wal_segments_removed),
        );
        gauge(
            out,
            "sumi_wal_segment_current",
            "Number of the WAL segment being written.",
            g.wal_segment,
        );
        counter(
            out,
            "sumi_wal_fsyncs_total",
            "fsyncs of the WAL.",
            r(&self.wal_fsyncs),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_wal_fsync_seconds_total Time spent in WAL fsyncs.\n# TYPE sumi_wal_fsync_seconds_total counter\nsumi_wal_fsync_seconds_total {}",
            secs(&self.wal_fsync_micros)
        );
        counter(
            out,
            "sumi_wal_replayed_points_total",
            "Points replayed from the WAL when the store opened.",
            r(&self.wal_replayed_points),
        );
        counter(
            out,
            "sumi_wal_corrupt_tail_total",
            "Torn or corrupt WAL tails cut when the store opened.",
            r(&self.wal_corrupt_tail),
        );
        counter(
            out,
            "sumi_series_log_cut_bytes_total",
            "Bytes of a torn series.log tail cut when the store opened.",
            r(&self.series_log_cut_bytes),
        );
        gauge(
            out,
            "sumi_head_rows",
            "Rows in the in-memory head (not yet in parts).",
            g.head_rows,
        );
        gauge(
            out,
            "sumi_head_bytes",
            "Bytes of the in-memory head.",
            g.head_bytes,
        );
        gauge(
            out,
            "sumi_head_frozen_generations",
            "Frozen head generations waiting to be flushed.",
            g.frozen_generations,
        );
        counter(
            out,
            "sumi_flushes_total",
            "Head flushes to disk parts.",
            r(&self.flushes),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_flush_seconds_total Time spent flushing the head.\n# TYPE sumi_flush_seconds_total counter\nsumi_flush_seconds_total {}",
            secs(&self.flush_micros)
        );
        counter(
            out,
            "sumi_flushed_rows_total",
            "Head rows written to parts.",
            r(&self.flushed_rows),
        );
        counter(
            out,
            "sumi_parts_written_total",
            "Parts written (flush, compaction, rollup).",
            r(&self.parts_written),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_parts Live parts by level.\n# TYPE sumi_parts gauge"
        );
        for (level, n, _, _) in &g.parts {
            let _ = writeln!(out, "sumi_parts{{level=\"{level}\"}} {n}");
        }
        let _ = writeln!(
            out,
            "# HELP sumi_part_bytes Bytes of live parts by level.\n# TYPE sumi_part_bytes gauge"
        );
        for (level, _, b, _) in &g.parts {
            let _ = writeln!(out, "sumi_part_bytes{{level=\"{level}\"}} {b}");
        }
        let _ = writeln!(out, "# HELP sumi_part_points Points in live parts by level (before merging duplicates across parts).\n# TYPE sumi_part_points gauge");
        for (level, _, _, p) in &g.parts {
            let _ = writeln!(out, "sumi_part_points{{level=\"{level}\"}} {p}");
        }
        counter(
            out,
            "sumi_compactions_total",
            "Part merges.",
            r(&self.compactions),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_compaction_seconds_total Time spent merging parts.\n# TYPE sumi_compaction_seconds_total counter\nsumi_compaction_seconds_total {}",
            secs(&self.compaction_micros)
        );
        counter(
            out,
            "sumi_compaction_bytes_read_total",
            "Bytes of parts merged.",
            r(&self.compaction_bytes_in),
        );
        counter(
            out,
            "sumi_compaction_bytes_written_total",
            "Bytes of merged parts written.",
            r(&self.compaction_bytes_out),
        );
        counter(
            out,
            "sumi_rollups_total",
            "Partitions rolled up into the next level.",
            r(&self.rollups),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_rollup_seconds_total Time spent rolling up.\n# TYPE sumi_rollup_seconds_total counter\nsumi_rollup_seconds_total {}",
            secs(&self.rollup_micros)
        );
        counter(
            out,
            "sumi_rollup_points_total",
            "Coarse points written by rollups.",
            r(&self.rollup_points),
        );
        gauge(
            out,
            "sumi_rollup_dirty_partitions",
            "Rolled partitions that received late points and wait to be rolled again.",
            g.dirty_partitions,
        );
        counter(
            out,
            "sumi_retention_drops_total",
            "Partitions dropped by retention.",
            r(&self.retention_drops),
        );
        counter(
            out,
            "sumi_retention_parts_dropped_total",
            "Parts deleted by retention.",
            r(&self.retention_parts_dropped),
        );
        counter(
            out,
            "sumi_parts_corrupt_total",
            "Parts skipped when the store opened because they failed their checks.",
            r(&self.parts_corrupt),
        );
        counter(
            out,
            "sumi_blocks_corrupt_total",
            "Series blocks skipped at read time because their CRC or codec failed.",
            r(&self.blocks_corrupt),
        );
        let _ = writeln!(
            out,
            "# HELP sumi_corruptions_total Damage detected by checksum or consistency checks, by kind.\n# TYPE sumi_corruptions_total counter\n\
             sumi_corruptions_total{{kind=\"wal\"}} {}\nsumi_corruptions_total{{kind=\"series_log\"}} {}\n\
             sumi_corruptions_total{{kind=\"manifest\"}} {}\nsumi_corruptions_total{{kind=\"part\"}} {}\n\
             sumi_corruptions_total{{kind=\"block\"}} {}",
            r(&self.wal_corrupt_tail),
            r(&self.series_log_cuts),
            r(&self.manifest_corrupt),
            r(&self.parts_corrupt),
            r(&self.blocks_corrupt)
        );
        gauge(
            out,
            "sumi_disk_full",
            "1 while writes are refused because the data disk has less than min_free_bytes free.",
            r(&self.disk_full),
        );
        counter(
            out,
            "sumi_disk_full_episodes_total",
            "Times the data disk went below min_free_bytes.",
            r(&self.disk_full_episodes),
        );
        counter(
            out,
            "sumi_disk_full_refusals_total",
            "Batches refused (held by the client, back-pressure) because the disk was full.",
            r(&self.disk_full_refusals),
        );
        counter(
            out,
            "sumi_store_background_errors_total",
            "Failures of background work (flush, compaction, rollup, retention).",
            r(&self.background_errors),
        );
        gauge(
            out,
            "sumi_store_healthy",
            "1 while the store takes writes, 0 after a WAL failure or close.",
            u64::from(g.healthy),
        );
    }
}
