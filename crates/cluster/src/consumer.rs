//! The storage side: consume the owned partitions in log order into the engine, placing
//! each point as of its arrival at the ingest node, and keep the consumed offsets on
//! disk no further than what the engine holds durably.
//!
//! Offsets: after applying records, the consumer knows for each partition the next
//! offset to read. About once a second (and at shutdown) it fsyncs the engine's WAL —
//! every record applied so far is then durable — and only then writes these next
//! offsets to `<data_dir>/cluster/offsets` (temporary file, fsync, rename, directory
//! fsync). After a crash the node reads that file and resumes there. The file may lag
//! the WAL (records applied and logged after the last checkpoint are replayed once
//! more), but it never runs ahead of it, so nothing is skipped; and replaying a record
//! that the engine already holds changes nothing, because a point is a value in the
//! slot of its series and time (last write wins) and the records are replayed in the
//! same order with the same arrival times, so they land in the same slots with the same
//! values. No gaps, and nothing counted twice.
//!
//! A delete marker ([`crate::record::delete_marker`]) ends the append being gathered:
//! the points before it are applied, then the series matching its globs that this
//! partition holds are deleted, then the next record is read. Every replica of the
//! partition deletes at the same log position, so points of the series that come
//! after the marker are kept by all of them and points before it by none. A marker
//! replayed after a crash deletes again at the same place (same result).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use serde::Deserialize;
use sumi_model::Batch;
use sumi_store::{Store, StoreError};

use crate::config::ClusterConfig;
use crate::log_gaps::GapWatch;
use crate::log_time::LogTime;
use crate::record::{decode_into, is_delete_marker, partition_for, peek_arrival, FLAG_GRAPH};

/// How often applied offsets are checkpointed (WAL fsync, then the offsets file).
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);

/// A fetch is answered once it has this many bytes or [`FETCH_WAIT_MAX_MS`] have
/// passed: fewer, larger fetches. The broker's CPU follows its requests, not its bytes,
/// and with `fetch.min.bytes=1` every consumer fetched again as soon as a record was
/// there; this halved the broker's CPU per point (docs/cluster.md, "Throughput") for at
/// most [`FETCH_WAIT_MAX_MS`] more delay to visibility.
const FETCH_MIN_BYTES: &str = "1048576";
const FETCH_WAIT_MAX_MS: &str = "100";

/// How often librdkafka reports its statistics, from which the lag gauge takes each
/// owned partition's end: the high watermark that every fetch response carries, so
/// the gauge costs the brokers no request of its own (it asked each partition's end
/// with a ListOffsets request once a second before: docs/cluster.md, "Throughput").
const STATISTICS_INTERVAL_MS: &str = "1000";

/// Records already fetched are gathered into one engine append up to this many points.
const APPLY_MAX_POINTS: usize = 65_536;

/// Told of every engine append the consumer makes (a storage node's anomaly
/// detectors): called on the consumer's thread right after the engine took `batch`,
/// before the records' offsets move, with each point's series id (`u32::MAX` for a
/// point whose series the engine refused to create) and the arrival time the points
/// were placed at. Points come in log order per partition, so every replica of a
/// partition sees the same points in the same order with the same arrival times.
/// What it writes to the engine (with [`Store::write_at`] at `arrival`) is made
/// durable by the same WAL sync as the records, before their offsets are saved.
pub trait ApplyObserver: Send + Sync {
    fn applied(&self, batch: &Batch, ids: &[u32], arrival: i64);
}

/// Told a GrowthForecast graph's series name (see [`ConsumerHooks::graph_series`]).
pub type GraphSeries = Arc<dyn Fn(&str) + Send + Sync>;

/// What a storage node hooks into its consumer.
#[derive(Clone, Default)]
pub struct ConsumerHooks {
    /// Hears of every engine append (anomaly detection).
    pub observer: Option<Arc<dyn ApplyObserver>>,
    /// Told the series of each point of a GrowthForecast record ([`FLAG_GRAPH`])
    /// before the point is applied, so that the engine creates the series with
    /// GrowthForecast's rollup (average, xFilesFactor 0) as a single node does.
    pub graph_series: Option<GraphSeries>,
}

/// Per owned partition: the next offset to apply and the log's end as last seen (the
/// high watermark of the last fetch response, from librdkafka's statistics).
#[derive(Debug, Default)]
pub struct PartitionProgress {
    pub next: AtomicI64,
    pub high: AtomicI64,
}

/// The consumer's counters, in `/metrics` as `sumi_cluster_consume_*`.
#[derive(Debug, Default)]
pub struct ConsumeStats {
    pub records: AtomicU64,
    pub points: AtomicU64,
    /// Records that could not be decoded: counted, logged, skipped.
    pub bad_records: AtomicU64,
    /// Appends the engine refused for now (throttled, disk full) and retried.
    pub apply_retries: AtomicU64,
    pub checkpoints: AtomicU64,
    /// Delete markers applied.
    pub deletes: AtomicU64,
    /// Records Kafka's retention removed before this node applied them
    /// ([`crate::log_gaps`]).
    pub lost_records: AtomicU64,
    pub partitions: BTreeMap<u32, PartitionProgress>,
}

impl ConsumeStats {
    pub fn write_prometheus(&self, out: &mut String) {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        for (name, help, v) in [
            (
                "sumi_cluster_consume_records_total",
                "Log records applied to the engine.",
                l(&self.records),
            ),
            (
                "sumi_cluster_consume_points_total",
                "Points in applied log records.",
                l(&self.points),
            ),
            (
                "sumi_cluster_consume_bad_records_total",
                "Log records that could not be decoded (skipped and logged).",
                l(&self.bad_records),
            ),
            (
                "sumi_cluster_consume_apply_retries_total",
                "Appends the engine refused for now and that were retried.",
                l(&self.apply_retries),
            ),
            (
                "sumi_cluster_consume_lost_records_total",
                "Records removed by Kafka's retention before this node applied them (the partition is copied again at the next start).",
                l(&self.lost_records),
            ),
            (
                "sumi_cluster_consume_checkpoints_total",
                "Offset checkpoints written (after a WAL fsync).",
                l(&self.checkpoints),
            ),
            (
                "sumi_cluster_consume_deletes_total",
                "Delete markers applied (series deleted at their log position).",
                l(&self.deletes),
            ),
        ] {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
            ));
        }
        out.push_str("# HELP sumi_cluster_consume_next_offset Next log offset to apply, per owned partition.\n# TYPE sumi_cluster_consume_next_offset gauge\n");
        for (p, pr) in &self.partitions {
            out.push_str(&format!(
                "sumi_cluster_consume_next_offset{{partition=\"{p}\"}} {}\n",
                pr.next.load(Ordering::Relaxed)
            ));
        }
        out.push_str("# HELP sumi_cluster_consume_lag_records Records in the log not yet applied, per owned partition (as of the last fetch).\n# TYPE sumi_cluster_consume_lag_records gauge\n");
        for (p, pr) in &self.partitions {
            let lag = (pr.high.load(Ordering::Relaxed) - pr.next.load(Ordering::Relaxed)).max(0);
            out.push_str(&format!(
                "sumi_cluster_consume_lag_records{{partition=\"{p}\"}} {lag}\n"
            ));
        }
    }
}

/// A running consumer thread.
pub struct StorageConsumer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<ConsumeStats>,
}

impl StorageConsumer {
    /// Starts consuming `config.owned_partitions` into `store`, from the offsets in
    /// `<data_dir>/cluster/offsets` (the log's beginning for a partition not there).
    /// `hooks` say who hears of what is applied ([`ConsumerHooks`]).
    pub fn start(
        config: &ClusterConfig,
        store: Arc<Store>,
        data_dir: &Path,
        hooks: ConsumerHooks,
    ) -> Result<Self> {
        let dir = data_dir.join("cluster");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let offsets_path = dir.join("offsets");
        let saved = read_offsets(&offsets_path, &config.topic)?;
        let mut partitions = BTreeMap::new();
        let mut tpl = TopicPartitionList::new();
        for &p in &config.owned_partitions {
            let next = saved.get(&p).copied();
            let progress = PartitionProgress::default();
            progress.next.store(next.unwrap_or(0), Ordering::Relaxed);
            // unknown until librdkafka's first statistics (not "caught up at 0")
            progress.high.store(-1, Ordering::Relaxed);
            partitions.insert(p, progress);
            let offset = next.map_or(Offset::Beginning, Offset::Offset);
            tpl.add_partition_offset(&config.topic, p as i32, offset)
                .context("assigning a partition")?;
        }
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", &config.brokers)
            .set("client.id", format!("sumi-storage-{}", config.node_id))
            .set("group.id", format!("sumi-storage-{}", config.node_id))
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("fetch.wait.max.ms", FETCH_WAIT_MAX_MS)
            .set("fetch.min.bytes", FETCH_MIN_BYTES)
            .set("statistics.interval.ms", STATISTICS_INTERVAL_MS);
        for (k, v) in &config.librdkafka_consumer {
            client.set(k, v);
        }
        let stats = Arc::new(ConsumeStats {
            partitions,
            ..ConsumeStats::default()
        });
        let context = LagContext {
            topic: config.topic.clone(),
            stats: stats.clone(),
        };
        let consumer: BaseConsumer<LagContext> = client
            .create_with_context(context)
            .context("creating the kafka consumer")?;
        consumer
            .assign(&tpl)
            .context("assigning the owned partitions")?;
        tracing::info!(
            topic = %config.topic,
            partitions = ?config.owned_partitions,
            offsets = ?saved,
            "storage consumer assigned"
        );
        let stop = Arc::new(AtomicBool::new(false));
        let gaps = GapWatch::new(
            config
                .owned_partitions
                .iter()
                .map(|&p| (p, saved.get(&p).copied().unwrap_or(0)))
                .collect(),
            dir.join("gaps"),
            &config.topic,
        );
        let mut run = Run {
            consumer,
            store,
            observer: hooks.observer,
            graph_series: hooks.graph_series,
            ids: std::cell::RefCell::new(Vec::new()),
            topic: config.topic.clone(),
            partitions: config.partitions,
            offsets_path,
            stats: stats.clone(),
            stop: stop.clone(),
            gaps,
            log_time: LogTime::new(config.owned_partitions.iter().copied()),
            dirty: std::cell::Cell::new(false),
            max_rate: config.consume_max_points_per_sec,
            rate_from: std::cell::Cell::new(None),
            rate_points: std::cell::Cell::new(0),
        };
        let thread = std::thread::Builder::new()
            .name("sumi-consume".into())
            .spawn(move || run.run())
            .context("starting the consumer thread")?;
        Ok(StorageConsumer {
            stop,
            thread: Some(thread),
            stats,
        })
    }

    pub fn stats(&self) -> Arc<ConsumeStats> {
        self.stats.clone()
    }

    /// Stops after the record being applied, checkpoints and joins the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Takes each owned partition's end from librdkafka's statistics (delivered on the
/// consumer's thread while it polls) into the lag gauge.
struct LagContext {
    topic: String,
    stats: Arc<ConsumeStats>,
}

impl ClientContext for LagContext {
    fn stats_raw(&self, statistics: &[u8]) {
        match high_watermarks(statistics, &self.topic) {
            Ok(ends) => {
                for (p, high) in ends {
                    if let Some(progress) = self.stats.partitions.get(&p) {
                        progress.high.store(high, Ordering::Relaxed);
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "librdkafka's statistics could not be read"),
        }
    }
}

impl ConsumerContext for LagContext {}

/// The part of librdkafka's statistics (`statistics.interval.ms`) the lag gauge reads:
/// `topics.<topic>.partitions.<id>.hi_offset`, the high watermark of the partition's
/// last fetch response (-1001 before the first).
#[derive(Deserialize)]
struct Statistics {
    #[serde(default)]
    topics: BTreeMap<String, TopicStatistics>,
}

#[derive(Deserialize)]
struct TopicStatistics {
    #[serde(default)]
    partitions: BTreeMap<String, PartitionStatistics>,
}

#[derive(Deserialize)]
struct PartitionStatistics {
    #[serde(default = "unknown_offset")]
    hi_offset: i64,
}

fn unknown_offset() -> i64 {
    -1
}

/// Each partition of `topic` whose high watermark librdkafka knows, with it (the
/// pseudo-partition -1 and partitions not fetched yet are left out).
fn high_watermarks(statistics: &[u8], topic: &str) -> serde_json::Result<Vec<(u32, i64)>> {
    let stats: Statistics = serde_json::from_slice(statistics)?;
    Ok(stats
        .topics
        .get(topic)
        .map(|t| {
            t.partitions
                .iter()
                .filter(|(_, s)| s.hi_offset >= 0)
                .filter_map(|(id, s)| Some((id.parse::<u32>().ok()?, s.hi_offset)))
                .collect()
        })
        .unwrap_or_default())
}

struct Run {
    consumer: BaseConsumer<LagContext>,
    store: Arc<Store>,
    observer: Option<Arc<dyn ApplyObserver>>,
    graph_series: Option<GraphSeries>,
    /// The series ids of the last append, for the observer.
    ids: std::cell::RefCell<Vec<u32>>,
    topic: String,
    /// The data topic's partition count (which partition a series belongs to).
    partitions: u32,
    offsets_path: PathBuf,
    stats: Arc<ConsumeStats>,
    stop: Arc<AtomicBool>,
    /// Records skipped in the log (removed by retention before they were applied).
    gaps: GapWatch,
    /// The log's time the store's retention judges by.
    log_time: LogTime,
    /// Offsets moved since the last checkpoint (a `Cell`: set while a polled message
    /// borrows the consumer).
    dirty: std::cell::Cell<bool>,
    /// `consume_max_points_per_sec` (0: none), and the points applied since the first
    /// apply, which the cap paces.
    max_rate: u64,
    rate_from: std::cell::Cell<Option<Instant>>,
    rate_points: std::cell::Cell<u64>,
}

impl Run {
    fn run(&mut self) {
        // Consecutive records with the same arrival second (from any owned partition;
        // each partition's records stay in log order) are applied as one engine append:
        // one WAL record and one pass over the head instead of one per Kafka message.
        let mut batch = Batch::new();
        let mut arrival = 0i64;
        // (partition, offset, points) of the records in `batch`, in the order polled;
        // points is None for a record that could not be decoded (skipped)
        let mut taken: Vec<(u32, i64, Option<u32>)> = Vec::new();
        let mut last_checkpoint = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            if last_checkpoint.elapsed() >= CHECKPOINT_EVERY {
                if !self.flush(&mut batch, arrival, &mut taken) {
                    break;
                }
                if self.dirty.get() {
                    self.checkpoint();
                }
                last_checkpoint = Instant::now();
            }
            // wait for the first record of a group, then take what is already fetched
            let wait = if taken.is_empty() {
                Duration::from_millis(100)
            } else {
                Duration::ZERO
            };
            let msg = match self.consumer.poll(wait) {
                None => {
                    if !self.flush(&mut batch, arrival, &mut taken) {
                        break;
                    }
                    // idle: a partition caught up meanwhile moves the log's time
                    self.say_log_time();
                    continue;
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "kafka consumer");
                    continue;
                }
                Some(Ok(m)) => m,
            };
            let partition = msg.partition() as u32;
            let offset = msg.offset();
            if !self.stats.partitions.contains_key(&partition) {
                continue;
            }
            let lost = self.gaps.polled(partition, offset);
            if lost > 0 {
                self.stats.lost_records.fetch_add(lost, Ordering::Relaxed);
            }
            let payload = msg.payload().unwrap_or_default();
            if !self.take(
                partition,
                offset,
                payload,
                &mut batch,
                &mut arrival,
                &mut taken,
            ) {
                break;
            }
        }
        // what was gathered is applied now (unless the store is going away), and the
        // offsets of everything applied are checkpointed
        self.flush(&mut batch, arrival, &mut taken);
        if self.dirty.get() {
            self.checkpoint();
        }
    }

    /// Takes one polled record of `partition` at `offset` into the append being
    /// gathered (`batch`, placed at `arrival`, the records in `taken`), applying what
    /// was gathered first when the record starts another group; a delete marker is
    /// applied at once, after what was gathered. False when stopping.
    fn take(
        &self,
        partition: u32,
        offset: i64,
        payload: &[u8],
        batch: &mut Batch,
        arrival: &mut i64,
        taken: &mut Vec<(u32, i64, Option<u32>)>,
    ) -> bool {
        if is_delete_marker(payload) {
            // the points before it first, then the delete, in log order
            if !self.flush(batch, *arrival, taken) {
                return false;
            }
            let mut globs = Batch::new();
            match decode_into(payload, &mut globs) {
                Ok(_) => {
                    if !self.delete_marked(partition, &globs) {
                        return false;
                    }
                    self.advance(partition, offset, Some(0));
                }
                Err(e) => {
                    self.stats.bad_records.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(partition, offset, error = %e, "skipping a delete marker that cannot be decoded");
                    self.advance(partition, offset, None);
                }
            }
            return true;
        }
        let this_arrival = peek_arrival(payload);
        if !taken.is_empty()
            && (this_arrival != Some(*arrival) || batch.len() >= self.batch_max())
            && !self.flush(batch, *arrival, taken)
        {
            return false;
        }
        let before = batch.len();
        match decode_into(payload, batch) {
            Ok(d) => {
                if d.flags & FLAG_GRAPH != 0 {
                    if let Some(mark) = &self.graph_series {
                        for (name, _) in batch.iter().skip(before) {
                            mark(name);
                        }
                    }
                }
                *arrival = d.arrival;
                taken.push((partition, offset, Some(d.points)));
            }
            Err(e) => {
                self.stats.bad_records.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(partition, offset, error = %e, "skipping a log record that cannot be decoded");
                if taken.is_empty() {
                    // nothing waits: its offset is taken at once
                    self.advance(partition, offset, None);
                } else {
                    taken.push((partition, offset, None));
                }
            }
        }
        true
    }

    /// Applies the gathered records as one append and only then moves their
    /// partitions' offsets; false when stopping before they were applied (their
    /// offsets are not taken: they are applied again after the restart).
    fn flush(
        &self,
        batch: &mut Batch,
        arrival: i64,
        taken: &mut Vec<(u32, i64, Option<u32>)>,
    ) -> bool {
        if taken.is_empty() {
            return true;
        }
        if !batch.is_empty() && !self.apply(batch, arrival) {
            return false;
        }
        for (partition, offset, points) in taken.drain(..) {
            if points.is_some() {
                self.log_time.applied(partition, arrival);
            }
            self.advance(partition, offset, points);
        }
        batch.clear();
        self.say_log_time();
        true
    }

    /// Tells the store the log's time ([`crate::log_time`]).
    fn say_log_time(&self) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        self.store
            .set_log_time(self.log_time.at(&self.stats.partitions, now));
    }

    /// Counts an applied (or skipped) record and moves its partition's next offset.
    fn advance(&self, partition: u32, offset: i64, points: Option<u32>) {
        if let Some(points) = points {
            self.stats.records.fetch_add(1, Ordering::Relaxed);
            self.stats
                .points
                .fetch_add(u64::from(points), Ordering::Relaxed);
        }
        if let Some(progress) = self.stats.partitions.get(&partition) {
            progress.next.store(offset + 1, Ordering::Relaxed);
        }
        self.dirty.set(true);
    }

    /// The points of one engine append: under a rate cap, at most a second's worth,
    /// so that a paced replay moves on in steps.
    fn batch_max(&self) -> usize {
        match self.max_rate {
            0 => APPLY_MAX_POINTS,
            r => (r as usize).clamp(1, APPLY_MAX_POINTS),
        }
    }

    /// With a cap on the apply rate, sleeps until `points` more are within it (in
    /// short steps, so that a stop is not held up).
    fn pace(&self, points: u64) {
        if self.max_rate == 0 {
            return;
        }
        let now = Instant::now();
        let paced =
            |from: Instant, n: u64| from + Duration::from_secs_f64(n as f64 / self.max_rate as f64);
        // after a pause, no credit of more than a second's worth
        let from = match self.rate_from.get() {
            Some(t) if paced(t, self.rate_points.get()) + Duration::from_secs(1) >= now => t,
            _ => {
                self.rate_from.set(Some(now));
                self.rate_points.set(0);
                now
            }
        };
        let total = self.rate_points.get() + points;
        self.rate_points.set(total);
        let due = paced(from, total);
        while Instant::now() < due && !self.stop.load(Ordering::Relaxed) {
            std::thread::sleep((due - Instant::now()).min(Duration::from_millis(50)));
        }
    }

    /// Applies the points of one or more records (one arrival second), retrying while
    /// the engine refuses for now; false when stopping (or the store closed) before
    /// they were applied.
    fn apply(&self, batch: &Batch, arrival: i64) -> bool {
        self.pace(batch.len() as u64);
        let mut pause = Duration::from_millis(10);
        loop {
            let written = match &self.observer {
                None => self.store.write_at(batch, arrival),
                Some(_) => self
                    .store
                    .write_at_ids(batch, arrival, &mut self.ids.borrow_mut()),
            };
            match written {
                Ok(_) => {
                    if let Some(o) = &self.observer {
                        o.applied(batch, &self.ids.borrow(), arrival);
                    }
                    return true;
                }
                Err(StoreError::Closed) => return false,
                Err(e) => {
                    self.stats.apply_retries.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "the engine refused a log record; retrying");
                    if self.stop.load(Ordering::Relaxed) {
                        return false;
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    /// Applies a delete marker of `partition`: deletes the series matching its globs
    /// (the marker's point names) that belong to `partition` (`_anomaly.<name>` with
    /// `<name>`: `sumi_model::placement_name`), retrying while the
    /// engine refuses for now; false when stopping (or the store closed) before.
    fn delete_marked(&self, partition: u32, globs: &Batch) -> bool {
        let patterns: Vec<&str> = globs.iter().map(|(n, _)| n).collect();
        let mut pause = Duration::from_millis(10);
        loop {
            let names: Vec<String> = self
                .store
                .match_series(&patterns)
                .into_iter()
                .filter(|n| {
                    partition_for(sumi_model::placement_name(n), self.partitions) == partition
                })
                .collect();
            let named: Vec<&str> = names.iter().map(String::as_str).collect();
            match self.store.delete_series_named(&named) {
                Ok(n) => {
                    self.stats.deletes.fetch_add(1, Ordering::Relaxed);
                    tracing::info!(partition, ?patterns, deleted = n, "applied a delete marker");
                    return true;
                }
                Err(StoreError::Closed) => return false,
                Err(e) => {
                    self.stats.apply_retries.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(error = %e, "the engine refused a delete marker; retrying");
                    if self.stop.load(Ordering::Relaxed) {
                        return false;
                    }
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
            }
        }
    }

    fn checkpoint(&mut self) {
        if let Err(e) = self.store.sync_wal() {
            tracing::warn!(error = %e, "WAL sync before an offset checkpoint failed; offsets not saved");
            return;
        }
        let offsets: BTreeMap<u32, i64> = self
            .stats
            .partitions
            .iter()
            .map(|(&p, pr)| (p, pr.next.load(Ordering::Relaxed)))
            .collect();
        match write_offsets(&self.offsets_path, &self.topic, &offsets) {
            Ok(()) => {
                self.dirty.set(false);
                self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => tracing::warn!(error = %e, "writing the offsets checkpoint"),
        }
    }
}

/// The offsets file (`<data_dir>/cluster/offsets`): one line a partition, `TOPIC
/// PARTITION NEXT_OFFSET`; empty when there is none.
pub fn read_offsets(path: &Path, topic: &str) -> Result<BTreeMap<u32, i64>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let parsed = match f.as_slice() {
            [t, p, o] => p
                .parse::<u32>()
                .ok()
                .zip(o.parse::<i64>().ok())
                .map(|x| (*t, x)),
            _ => None,
        };
        let Some((t, (p, o))) = parsed else {
            bail!(
                "{} line {}: not `TOPIC PARTITION OFFSET`: {line:?}",
                path.display(),
                i + 1
            );
        };
        if t == topic {
            out.insert(p, o);
        }
    }
    Ok(out)
}

/// Writes the offsets file: temporary file, fsync, rename, directory fsync.
pub fn write_offsets(
    path: &Path,
    topic: &str,
    offsets: &BTreeMap<u32, i64>,
) -> std::io::Result<()> {
    let mut text = String::new();
    for (p, o) in offsets {
        text.push_str(&format!("{topic} {p} {o}\n"));
    }
    replace_durably(path, text.as_bytes())
}

/// Replaces the file at `path` with `bytes` so that a crash leaves the old file or the
/// new one: temporary file, fsync, rename, directory fsync.
pub(crate) fn replace_durably(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A consumer's run state over `store` (its Kafka client is never polled).
    fn run_over(store: Arc<Store>, dir: &Path, partitions: u32) -> Run {
        let stats = Arc::new(ConsumeStats {
            partitions: (0..partitions)
                .map(|p| (p, PartitionProgress::default()))
                .collect(),
            ..ConsumeStats::default()
        });
        let consumer: BaseConsumer<LagContext> = ClientConfig::new()
            .set("bootstrap.servers", "127.0.0.1:1")
            .set("group.id", "sumi-test")
            .create_with_context(LagContext {
                topic: "points".into(),
                stats: stats.clone(),
            })
            .unwrap();
        Run {
            consumer,
            store,
            observer: None,
            graph_series: None,
            ids: std::cell::RefCell::new(Vec::new()),
            topic: "points".into(),
            partitions,
            offsets_path: dir.join("offsets"),
            stats,
            stop: Arc::new(AtomicBool::new(false)),
            gaps: GapWatch::new(BTreeMap::new(), dir.join("gaps"), "points"),
            log_time: LogTime::new(0..partitions),
            dirty: std::cell::Cell::new(false),
            max_rate: 0,
            rate_from: std::cell::Cell::new(None),
            rate_points: std::cell::Cell::new(0),
        }
    }

    /// A delete marker is applied in log order: the points gathered before it are
    /// stored and then deleted, the points after it (same arrival second, which would
    /// otherwise share one append) are kept, and only the series of the marker's own
    /// partition are deleted.
    /// A score series `_anomaly.<name>` is stored with `<name>` (in `<name>`'s
    /// partition): a marker of that partition deletes it, one of the partition its
    /// own full name hashes to does not.
    #[test]
    fn a_delete_marker_deletes_score_series_in_their_series_partition() {
        use crate::record::delete_marker;
        const NOW: i64 = 1_700_000_000;
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(sumi_model::ManualClock::new(NOW));
        let store =
            Store::open(sumi_store::StoreOptions::new(dir.path().join("db")), clock).unwrap();
        let run = run_over(store.clone(), dir.path(), 6);
        let score = (0..64)
            .map(|i| format!("{}s.{i}", sumi_model::SCORE_PREFIX))
            .find(|n| {
                partition_for(sumi_model::placement_name(n), 6) == 0 && partition_for(n, 6) != 0
            })
            .unwrap();
        let mut b = Batch::new();
        b.push(&score, NOW - 60, 0.5);
        store.write_at(&b, NOW).unwrap();
        let (mut batch, mut arrival, mut taken) = (Batch::new(), 0, Vec::new());
        let marker = delete_marker(&[format!("{}**", sumi_model::SCORE_PREFIX)], NOW);
        let own = partition_for(&score, 6);
        assert!(run.take(own, 0, &marker, &mut batch, &mut arrival, &mut taken));
        assert_eq!(store.match_series(&[score.as_str()]), vec![score.clone()]);
        assert!(run.take(0, 0, &marker, &mut batch, &mut arrival, &mut taken));
        assert!(store.match_series(&[score.as_str()]).is_empty());
    }

    #[test]
    fn a_delete_marker_applies_in_log_order_in_its_partition() {
        use crate::record::{delete_marker, encode};
        const NOW: i64 = 1_700_000_000;
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(sumi_model::ManualClock::new(NOW));
        let store =
            Store::open(sumi_store::StoreOptions::new(dir.path().join("db")), clock).unwrap();
        let run = run_over(store.clone(), dir.path(), 2);
        // a doomed series in each partition
        let names: Vec<String> = (0..64).map(|i| format!("del.s{i}")).collect();
        let in0 = names.iter().find(|n| partition_for(n, 2) == 0).unwrap();
        let in1 = names.iter().find(|n| partition_for(n, 2) == 1).unwrap();
        let record = |name: &str, ts: i64, v: f64| {
            let mut b = Batch::new();
            b.push(name, ts, v);
            encode(&b, NOW)
        };
        let (t1, t2) = (NOW - 120, NOW - 60);
        let mut batch = Batch::new();
        let mut arrival = 0;
        let mut taken = Vec::new();
        let log: Vec<(u32, Vec<u8>)> = vec![
            (0, record(in0, t1, 1.0)),
            (1, record(in1, t1, 1.0)),
            (0, delete_marker(&["del.**".to_string()], NOW)),
            (0, record(in0, t2, 2.0)),
        ];
        for (offset, (p, payload)) in log.iter().enumerate() {
            assert!(run.take(
                *p,
                offset as i64,
                payload,
                &mut batch,
                &mut arrival,
                &mut taken
            ));
        }
        assert!(run.flush(&mut batch, arrival, &mut taken));
        let values = |name: &str| -> Vec<(i64, f64)> {
            let f = store.fetch(name, NOW - 600, NOW, NOW).unwrap();
            (0..)
                .zip(f.values)
                .filter_map(|(i, v)| Some((f.start + i * f.step, v?)))
                .collect()
        };
        // the point of partition 0 before the marker is gone, the one after it kept
        assert_eq!(values(in0), vec![(t2, 2.0)]);
        // partition 1's series matches the glob, but its marker has not come
        assert_eq!(values(in1), vec![(t1, 1.0)]);
        assert_eq!(run.stats.deletes.load(Ordering::Relaxed), 1);
        assert_eq!(run.stats.records.load(Ordering::Relaxed), 4);
        let next = |p: u32| run.stats.partitions[&p].next.load(Ordering::Relaxed);
        assert_eq!((next(0), next(1)), (4, 2));
        // partition 1's marker: its series goes too
        assert!(run.take(
            1,
            4,
            &delete_marker(&["del.**".to_string()], NOW),
            &mut batch,
            &mut arrival,
            &mut taken
        ));
        assert!(store.fetch(in1, NOW - 600, NOW, NOW).is_none());
        assert_eq!(values(in0), vec![(t2, 2.0)]);
    }

    #[test]
    fn offsets_file_roundtrip_and_errors() {
        let dir = std::env::temp_dir().join(format!("sumi-offsets-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("offsets");
        assert!(read_offsets(&path, "t").unwrap().is_empty());
        let m: BTreeMap<u32, i64> = [(0, 5), (3, 17)].into_iter().collect();
        write_offsets(&path, "t", &m).unwrap();
        assert_eq!(read_offsets(&path, "t").unwrap(), m);
        assert!(read_offsets(&path, "other").unwrap().is_empty());
        std::fs::write(&path, "t 1\n").unwrap();
        assert!(read_offsets(&path, "t").is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn high_watermarks_from_librdkafkas_statistics() {
        // the shape librdkafka 2.x emits (trimmed): the topic's partitions by id, the
        // internal pseudo-partition -1, a partition not fetched yet (-1001), another topic
        let json = br#"{"name":"sumi-storage-1#consumer-1","type":"consumer","ts":1,
            "brokers":{"127.0.0.1:9092/1":{"nodeid":1,"toppars":{"points-0":{"topic":"points","partition":0}}}},
            "topics":{
              "points":{"topic":"points","age":1,"metadata_age":1,"batchsize":{"min":0},
                "partitions":{
                  "0":{"partition":0,"broker":1,"leader":1,"fetch_state":"active","lo_offset":0,
                       "hi_offset":5120,"ls_offset":5120,"consumer_lag":0,"next_offset":5120},
                  "3":{"partition":3,"hi_offset":17,"ls_offset":17},
                  "4":{"partition":4,"hi_offset":-1001,"ls_offset":-1001},
                  "-1":{"partition":-1,"hi_offset":-1001}}},
              "meta":{"partitions":{"0":{"hi_offset":99}}}},
            "cgrp":{"state":"up"}}"#;
        assert_eq!(
            high_watermarks(json, "points").unwrap(),
            vec![(0, 5120), (3, 17)]
        );
        assert_eq!(high_watermarks(json, "meta").unwrap(), vec![(0, 99)]);
        assert!(high_watermarks(json, "other").unwrap().is_empty());
        assert!(high_watermarks(br#"{"topics":{}}"#, "points")
            .unwrap()
            .is_empty());
        assert!(high_watermarks(b"{", "points").is_err());
    }
}
