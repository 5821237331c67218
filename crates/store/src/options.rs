//! How a store is opened: paths, durability and tuning knobs, each with its default
//! and the reason for it.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use sumi_model::SeriesRules;

/// When the write-ahead log is fsynced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Before `append` returns (group commit: concurrent appenders share one fsync).
    Always,
    /// At most this long after a write, by a background thread. A power failure loses
    /// at most this much; a process crash loses nothing.
    Interval(Duration),
    /// Never: the OS writes back when it likes.
    Never,
}

impl Default for FsyncPolicy {
    /// One second: a power failure costs at most a second of points, which carbon
    /// users already accept (carbon-cache loses its whole cache), at a cost of one
    /// fsync a second.
    fn default() -> Self {
        FsyncPolicy::Interval(Duration::from_secs(1))
    }
}

/// A fsync policy that is not `always`, `never` or a duration such as `1s`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid fsync policy {0:?} (expected \"always\", \"never\" or a duration such as \"1s\", \"500ms\", \"2m\")")]
pub struct InvalidFsyncPolicy(pub String);

impl FromStr for FsyncPolicy {
    type Err = InvalidFsyncPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || InvalidFsyncPolicy(s.to_string());
        let t = s.trim();
        match t {
            "always" => return Ok(FsyncPolicy::Always),
            "never" => return Ok(FsyncPolicy::Never),
            _ => {}
        }
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        let (num, unit) = t.split_at(digits);
        let n: u64 = num.parse().map_err(|_| bad())?;
        let d = match unit {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" | "min" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        if d.is_zero() {
            return Err(bad());
        }
        Ok(FsyncPolicy::Interval(d))
    }
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsyncPolicy::Always => f.write_str("always"),
            FsyncPolicy::Never => f.write_str("never"),
            FsyncPolicy::Interval(d) if d.subsec_millis() != 0 || d.as_secs() == 0 => {
                write!(f, "{}ms", d.as_millis())
            }
            FsyncPolicy::Interval(d) => write!(f, "{}s", d.as_secs()),
        }
    }
}

/// Everything [`crate::Store::open`] needs.
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Where the series log, WAL segments, parts and manifest live.
    pub data_dir: PathBuf,
    /// Retention and aggregation of new series (existing series keep theirs).
    pub rules: SeriesRules,
    /// When the WAL is fsynced. Default: every second.
    pub fsync: FsyncPolicy,
    /// Points further than this in the future are refused (`too_new`). Default 3600:
    /// agents with a skewed clock are common, a point a day ahead is a bug.
    pub max_future_secs: i64,
    /// Head shards (lock striping for readers, flush fan-out). Default: the number of
    /// cores, so that readers and the writer rarely meet on one lock.
    pub shards: usize,
    /// The head is written to disk parts at least this often. Default 10 s: short enough
    /// that the WAL to replay after a crash stays small (seconds of points), long enough
    /// that a flushed part holds a point per series at the common 10 s step (a part's
    /// index costs 40 bytes a series, so flushing more often mostly writes index).
    pub flush_interval: Duration,
    /// ...or as soon as the head holds this many bytes of rows. Default 64 MiB (24 bytes
    /// a row: about 2.8 M points, under 3 s at a million points a second): the head,
    /// the generation being flushed and the flush's sort buffer then stay under about
    /// 200 MiB together, while parts still get a few points per series.
    pub flush_bytes: usize,
    /// A WAL segment is closed at this size (and at every flush). Default 64 MiB.
    pub wal_segment_bytes: u64,
    /// A partition is rolled up into the next level once its end is this far in the
    /// past. Default 600 s: agents that buffer through a short outage re-send within
    /// minutes; later points still work (the partition is marked dirty and rolled again).
    pub rollup_grace_secs: i64,
    /// Materialise a level-k partition's rollup only shortly before level k's retention
    /// drops it (one partition width ahead), instead of once it is closed. Default true:
    /// while level k holds a window, reads of level k+1 compute it from level k (as they
    /// already do for windows not rolled yet), so the coarse copy of recent data is not
    /// stored twice. Measured on one day at 10 s (10,000 series, `10s:1d,1m:7d,1h:1y`):
    /// eager rollups stored 93 MB of level-1 values beside 186 MB of level 0.
    pub lazy_rollups: bool,
    /// Retention judged by the **log's time** instead of the clock (a cluster's storage
    /// node): the expiry cutoffs take `min(clock, log time)`, the log time being what
    /// [`crate::Store::set_log_time`] last said — the arrival time of the points still
    /// to come — and `i64::MIN` (nothing expires) until it is said. A replica that
    /// replays its log late then drops a partition no earlier than the one that applied
    /// it live, so no point of the replay lands in a partition already dropped (which
    /// once rolled a coarse slot from part of its fine slots: docs/cluster.md,
    /// "Replicas and rollups"). Default false (a single node: the clock).
    pub log_time_retention: bool,
    /// Each level is cut into partitions of about `retention / partitions_per_level`.
    /// Default 8: retention then keeps at most 1/8 more than asked, and a level has
    /// about 9 partitions open at once.
    pub partitions_per_level: u32,
    /// A partition with more parts than this of one kind gets its smallest adjacent
    /// parts merged. Default 4: reads touch few parts, writes are amplified about log4.
    pub max_parts_per_partition: usize,
    /// How often the background threads look for work. Default 1 s.
    pub maintenance_interval: Duration,
    /// Run the background threads (flush, rollup, retention, compaction, WAL sync). Tests
    /// turn them off and call [`crate::Store::run_maintenance`] themselves.
    pub background: bool,
    /// On open, skip a corrupt record in the middle of the WAL instead of refusing to
    /// start (a torn tail is always cut). Default false: mid-log corruption needs a human.
    pub wal_repair: bool,
    /// Writes are refused (the client is held: back-pressure) while the data
    /// directory's file system has less than this many bytes free, and resume by
    /// themselves when space returns. The reserve lets flushes and compactions finish,
    /// so that the WAL never hits ENOSPC mid-record. Default 256 MiB (a flush of a full
    /// head, about 64 MiB of rows, writes far less than that in parts). 0 disables it.
    pub min_free_bytes: u64,
    /// At most this many series in the index; points of further new series are refused
    /// (counted as `series_limit`) while existing series keep taking points. Default 0,
    /// unlimited: a limit is a guess about the operator's machine.
    pub max_series: usize,
    /// At most this many series created per minute (a token bucket refilled evenly);
    /// a batch that would create more waits: the store refuses it whole with
    /// [`crate::StoreError::NewSeriesRate`] after creating what the budget allows, so
    /// the sender retries and nothing is dropped. Default 0, unlimited.
    pub max_new_series_per_minute: u64,
    /// At close, merge each partition's parts into one for at most this long, counted
    /// from the stop: a background merge under way finishes when the measured merge
    /// rate says it ends within it (else it is abandoned at once), then the close
    /// merges what is left after the last flush, starting only merges that the rate
    /// measured so far says end in time (one still running at the end is abandoned and
    /// its inputs stay). A stopped store then holds each series once per partition.
    /// Zero: no merge, and a stop abandons a background merge at once. Default 3.5 s,
    /// so that a stop takes at most about 5 s (the process's own exit adds about a
    /// second at ten million series): what a stop leaves unmerged stays in its parts,
    /// every point readable, and is merged by compaction later (when the partition has
    /// more than `max_parts_per_partition` parts, or once it is closed).
    pub close_merge: Duration,
    /// A merge at a stop that reads at least this many bytes is cut into series ranges
    /// merged on every core at once (up to four, one range per this many bytes), each
    /// range written as a part of its own: every series is still in one part of the
    /// partition, and the stop waits a half or less. Default 64 MiB.
    pub close_merge_split_bytes: u64,
}

impl StoreOptions {
    /// Production defaults (see each field).
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        StoreOptions {
            data_dir: data_dir.into(),
            rules: SeriesRules::builtin(),
            fsync: FsyncPolicy::default(),
            max_future_secs: 3600,
            shards: std::thread::available_parallelism().map_or(2, |n| n.get()),
            flush_interval: Duration::from_secs(10),
            flush_bytes: 64 << 20,
            wal_segment_bytes: 64 << 20,
            rollup_grace_secs: 600,
            lazy_rollups: true,
            log_time_retention: false,
            partitions_per_level: 8,
            max_parts_per_partition: 4,
            maintenance_interval: Duration::from_secs(1),
            background: true,
            min_free_bytes: 256 << 20,
            wal_repair: false,
            max_series: 0,
            max_new_series_per_minute: 0,
            close_merge: Duration::from_millis(3500),
            close_merge_split_bytes: 64 << 20,
        }
    }

    /// Small and deterministic: no background threads, no fsync, two shards, small
    /// segments; tests drive flushes with [`crate::Store::run_maintenance`].
    pub fn for_tests(data_dir: impl Into<PathBuf>) -> Self {
        StoreOptions {
            fsync: FsyncPolicy::Never,
            shards: 2,
            flush_bytes: 1 << 20,
            wal_segment_bytes: 1 << 20,
            background: false,
            min_free_bytes: 0,
            close_merge: Duration::ZERO,
            ..StoreOptions::new(data_dir)
        }
    }

    pub(crate) fn validate(&self) -> Result<(), crate::StoreError> {
        let bad = |m: String| Err(crate::StoreError::Options(m));
        if self.shards == 0 || self.shards > 256 {
            return bad(format!("shards must be in 1..=256, got {}", self.shards));
        }
        if self.max_future_secs < 0 {
            return bad(format!(
                "max_future_secs must not be negative, got {}",
                self.max_future_secs
            ));
        }
        if self.partitions_per_level == 0 {
            return bad("partitions_per_level must be positive".into());
        }
        if self.max_parts_per_partition < 2 {
            return bad("max_parts_per_partition must be at least 2".into());
        }
        if self.rollup_grace_secs < 0 {
            return bad("rollup_grace_secs must not be negative".into());
        }
        for r in self.rules.schemas.retentions() {
            if r.archives().len() > crate::series::MAX_LEVELS {
                return bad(format!(
                    "retention {r} has {} archives; at most {} are supported",
                    r.archives().len(),
                    crate::series::MAX_LEVELS
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsync_policy_parses() {
        assert_eq!("always".parse(), Ok(FsyncPolicy::Always));
        assert_eq!("never".parse(), Ok(FsyncPolicy::Never));
        assert_eq!(
            "1s".parse(),
            Ok(FsyncPolicy::Interval(Duration::from_secs(1)))
        );
        assert_eq!(
            "500ms".parse(),
            Ok(FsyncPolicy::Interval(Duration::from_millis(500)))
        );
        assert_eq!(
            "2m".parse(),
            Ok(FsyncPolicy::Interval(Duration::from_secs(120)))
        );
        for bad in ["", "0s", "1", "s", "1d", "-1s", "1.5s", "sometimes"] {
            assert!(bad.parse::<FsyncPolicy>().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fsync_policy_displays_round_trip() {
        for s in ["always", "never", "1s", "500ms", "120s"] {
            let p: FsyncPolicy = s.parse().unwrap();
            assert_eq!(p.to_string(), s);
            assert_eq!(p.to_string().parse::<FsyncPolicy>(), Ok(p));
        }
    }

    #[test]
    fn options_validate() {
        let mut o = StoreOptions::for_tests("/nonexistent");
        assert!(o.validate().is_ok());
        o.shards = 0;
        assert!(o.validate().is_err());
    }
}
