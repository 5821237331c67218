//! The ingest side: a [`Sink`] that produces every point to its partition of the log
//! and answers only once Kafka has acknowledged all of them.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::ClientContext;
use sumi_model::{AppendOutcome, Batch, Clock, Sink, SinkError};

use crate::config::ClusterConfig;
use crate::record::{PrefixFnv, RecordWriter, FLAG_GRAPH};
use crate::spill::{Spill, SpillEntry};

/// One record stays well under Kafka's default 1 MiB message limit.
const MAX_RECORD_BYTES: usize = 256 * 1024;

/// How long one call of the polling thread waits for delivery reports. rdkafka's
/// `poll` spins without blocking for the last millisecond of each call (it truncates
/// what is left to whole milliseconds, 0 meaning "do not wait"): with its
/// `ThreadedProducer`'s 100 ms that was about 1 % of a core in every cluster node, idle
/// or not. A report still wakes the thread at once; only a stop waits up to this long.
const POLL_WINDOW: Duration = Duration::from_secs(1);

/// A producer and the thread that polls it for delivery reports (what rdkafka's
/// `ThreadedProducer` does, with a longer poll, see [`POLL_WINDOW`]). Also the metadata
/// log's producer (`crate::meta_log`): rdkafka's `FutureProducer` is a
/// `ThreadedProducer` inside, with its 100 ms poll.
pub(crate) struct Polled<C: ProducerContext + 'static> {
    pub(crate) producer: Arc<BaseProducer<C>>,
    stop: Arc<AtomicBool>,
}

impl<C: ProducerContext + 'static> Polled<C> {
    pub(crate) fn start(producer: BaseProducer<C>, name: &str) -> std::io::Result<Polled<C>> {
        let producer = Arc::new(producer);
        let stop = Arc::new(AtomicBool::new(false));
        let (p, st) = (producer.clone(), stop.clone());
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                while !st.load(Ordering::Relaxed) {
                    p.poll(POLL_WINDOW);
                }
            })?;
        Ok(Polled { producer, stop })
    }
}

impl<C: ProducerContext + 'static> Drop for Polled<C> {
    /// The thread ends within [`POLL_WINDOW`] and drops its handle of the producer
    /// then; nothing waits for it.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The producer's counters, in `/metrics` as `sumi_cluster_produce_*`.
#[derive(Debug, Default)]
pub struct ProduceStats {
    /// Batches acknowledged by Kafka.
    pub appends: AtomicU64,
    /// Points in acknowledged batches.
    pub points: AtomicU64,
    /// Records (Kafka messages) acknowledged.
    pub records: AtomicU64,
    /// Record bytes acknowledged (before the producer's compression).
    pub bytes: AtomicU64,
    /// Batches refused with "unavailable" (Kafka down, slow or refusing).
    pub unavailable: AtomicU64,
    /// Records whose delivery failed or timed out.
    pub delivery_errors: AtomicU64,
    /// Times a send found the producer's queue full and waited.
    pub queue_full_waits: AtomicU64,
    /// Total microseconds appends waited for Kafka's acknowledgement.
    pub ack_wait_us: AtomicU64,
    /// Appends written to the on-disk spill (acknowledged to the client from there).
    pub spilled_batches: AtomicU64,
    pub spilled_points: AtomicU64,
    /// Spilled appends Kafka has since acknowledged.
    pub spill_delivered_batches: AtomicU64,
    pub spill_delivered_points: AtomicU64,
    /// Appends refused because the spill was full (the client is held back).
    pub spill_full: AtomicU64,
    /// Spill files that could not be read back (set aside as `.bad`).
    pub spill_bad_files: AtomicU64,
    /// Spill files and bytes waiting (gauges).
    pub spill_files: AtomicU64,
    pub spill_bytes: AtomicU64,
}

impl ProduceStats {
    pub fn write_prometheus(&self, out: &mut String) {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let mut c = |name: &str, help: &str, v: u64| {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
            ));
        };
        c(
            "sumi_cluster_produce_batches_total",
            "Batches Kafka acknowledged.",
            l(&self.appends),
        );
        c(
            "sumi_cluster_produce_points_total",
            "Points Kafka acknowledged.",
            l(&self.points),
        );
        c(
            "sumi_cluster_produce_records_total",
            "Records (Kafka messages) acknowledged.",
            l(&self.records),
        );
        c(
            "sumi_cluster_produce_bytes_total",
            "Record bytes acknowledged, before compression.",
            l(&self.bytes),
        );
        c(
            "sumi_cluster_produce_unavailable_total",
            "Batches refused because Kafka did not acknowledge them in time (clients retry).",
            l(&self.unavailable),
        );
        c(
            "sumi_cluster_produce_delivery_errors_total",
            "Records whose delivery failed or timed out.",
            l(&self.delivery_errors),
        );
        c(
            "sumi_cluster_produce_queue_full_total",
            "Sends that found the producer queue full and waited.",
            l(&self.queue_full_waits),
        );
        c(
            "sumi_cluster_spill_batches_total",
            "Appends Kafka did not take in time, written to the on-disk spill.",
            l(&self.spilled_batches),
        );
        c(
            "sumi_cluster_spill_points_total",
            "Points written to the on-disk spill.",
            l(&self.spilled_points),
        );
        c(
            "sumi_cluster_spill_delivered_batches_total",
            "Spilled appends delivered to Kafka.",
            l(&self.spill_delivered_batches),
        );
        c(
            "sumi_cluster_spill_delivered_points_total",
            "Spilled points delivered to Kafka.",
            l(&self.spill_delivered_points),
        );
        c(
            "sumi_cluster_spill_full_total",
            "Appends refused because the spill was full (clients retry).",
            l(&self.spill_full),
        );
        c(
            "sumi_cluster_spill_bad_files_total",
            "Spill files that could not be read back, set aside as .bad.",
            l(&self.spill_bad_files),
        );
        out.push_str(&format!(
            "# HELP sumi_cluster_spill_files Spilled appends waiting for Kafka.\n# TYPE sumi_cluster_spill_files gauge\nsumi_cluster_spill_files {}\n# HELP sumi_cluster_spill_bytes Bytes of the spill waiting for Kafka.\n# TYPE sumi_cluster_spill_bytes gauge\nsumi_cluster_spill_bytes {}\n",
            l(&self.spill_files),
            l(&self.spill_bytes)
        ));
        out.push_str(&format!(
            "# HELP sumi_cluster_produce_ack_wait_seconds_total Time appends waited for Kafka.\n# TYPE sumi_cluster_produce_ack_wait_seconds_total counter\nsumi_cluster_produce_ack_wait_seconds_total {:.6}\n",
            l(&self.ack_wait_us) as f64 / 1e6
        ));
    }
}

/// The records of one append still in flight.
#[derive(Default)]
struct Pending {
    state: Mutex<PendingState>,
    done: Condvar,
}

#[derive(Default)]
struct PendingState {
    in_flight: usize,
    error: Option<String>,
}

struct Ctx {
    stats: Arc<ProduceStats>,
}

impl ClientContext for Ctx {
    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(%error, reason, "kafka producer");
    }
}

impl ProducerContext for Ctx {
    type DeliveryOpaque = Arc<Pending>;

    fn delivery(&self, result: &DeliveryResult<'_>, pending: Arc<Pending>) {
        let mut st = pending.state.lock();
        if let Err((e, _)) = result {
            self.stats.delivery_errors.fetch_add(1, Ordering::Relaxed);
            st.error.get_or_insert_with(|| e.to_string());
        }
        st.in_flight -= 1;
        if st.in_flight == 0 {
            pending.done.notify_all();
        }
    }
}

/// Sends every point to the partition of its series (see [`partition_for`](crate::record::partition_for)), one record
/// per partition and append (split at 256 KiB), through an idempotent producer with
/// `acks=all`; `append` returns once Kafka has acknowledged every record — or, when
/// Kafka has not within `append_timeout_ms` and a spill is configured, once the records
/// are durably in the spill ([`crate::spill`]), delivered in order later.
pub struct KafkaSink {
    core: Arc<Core>,
    clock: Arc<dyn Clock>,
    spill: Option<Arc<Spill>>,
    stop: Arc<AtomicBool>,
}

/// What the sink and the spill's delivery thread share.
struct Core {
    producer: Polled<Ctx>,
    topic: String,
    partitions: u32,
    /// `[cluster] record_version`.
    record_version: u8,
    timeout: Duration,
    stats: Arc<ProduceStats>,
}

impl KafkaSink {
    /// A producer for `config`'s brokers and topic (which [`crate::ensure_topic`]
    /// creates). Connecting is lazy: a broker that is down shows at the first append.
    /// With `spill_dir` (and `spill_max_bytes` > 0), appends Kafka does not take in
    /// time go to the spill there.
    pub fn new(
        config: &ClusterConfig,
        clock: Arc<dyn Clock>,
        spill_dir: Option<&Path>,
    ) -> Result<KafkaSink, KafkaError> {
        let stats = Arc::new(ProduceStats::default());
        let timeout = Duration::from_millis(u64::from(config.append_timeout_ms.max(1)));
        let mut client = ClientConfig::new();
        client
            .set("bootstrap.servers", &config.brokers)
            .set("client.id", format!("sumi-ingest-{}", config.node_id))
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("compression.type", &config.compression)
            .set("linger.ms", config.linger_ms.to_string())
            .set("batch.size", "1000000")
            .set("queue.buffering.max.kbytes", "262144")
            // a record not acknowledged by then fails its append (the client retries)
            .set("message.timeout.ms", timeout.as_millis().to_string());
        for (k, v) in &config.librdkafka_producer {
            client.set(k, v);
        }
        let producer: BaseProducer<Ctx> = client.create_with_context(Ctx {
            stats: stats.clone(),
        })?;
        let producer = Polled::start(producer, "sumi-produce-poll").map_err(|e| {
            KafkaError::ClientCreation(format!("starting the producer's polling thread: {e}"))
        })?;
        let core = Arc::new(Core {
            producer,
            topic: config.topic.clone(),
            partitions: config.partitions,
            record_version: config.record_version,
            timeout,
            stats,
        });
        let stop = Arc::new(AtomicBool::new(false));
        let spill = match spill_dir.filter(|_| config.spill_max_bytes > 0) {
            None => None,
            Some(dir) => {
                let spill = Spill::open(dir, config.spill_max_bytes).map_err(|e| {
                    KafkaError::ClientCreation(format!(
                        "opening the spill in {}: {e}",
                        dir.display()
                    ))
                })?;
                let spill = Arc::new(spill);
                let (c, sp, st) = (core.clone(), spill.clone(), stop.clone());
                std::thread::Builder::new()
                    .name("sumi-spill".into())
                    .spawn(move || deliver_spill(&c, &sp, &st))
                    .map_err(|e| {
                        KafkaError::ClientCreation(format!("starting the spill thread: {e}"))
                    })?;
                Some(spill)
            }
        };
        Ok(KafkaSink {
            core,
            clock,
            spill,
            stop,
        })
    }

    pub fn stats(&self) -> Arc<ProduceStats> {
        self.core.stats.clone()
    }

    /// Waits for every queued record, and stops delivering the spill (shutdown; what is
    /// left in it is delivered after the next start).
    pub fn flush(&self, timeout: Duration) {
        self.stop.store(true, Ordering::Relaxed);
        if let Err(e) = self.core.producer.producer.flush(timeout) {
            tracing::warn!(error = %e, "kafka producer flush at shutdown");
        }
    }

    /// The batch as log records (see [`encode_records`]), taken now. `flags`
    /// ([`FLAG_GRAPH`]) makes every record version 3 (unless the configured version is
    /// 1, which cannot carry them).
    fn encode(&self, batch: &Batch, flags: u8) -> Vec<(u32, Vec<u8>)> {
        let arrival = self.clock.now();
        let version = self.core.record_version;
        let flags = if version == 1 { 0 } else { flags };
        let points = batch.iter().map(|(name, p)| (name, p.ts, p.value));
        encode_records(points, self.core.partitions, version, flags, arrival)
    }

    /// Puts an append's records in the spill; the client's answer.
    fn to_spill(
        &self,
        spill: &Spill,
        records: Vec<(u32, Vec<u8>)>,
        points: usize,
        why: &str,
    ) -> Result<AppendOutcome, SinkError> {
        let s = &self.core.stats;
        let entry = SpillEntry {
            points: points as u32,
            records,
        };
        match spill.push(&entry) {
            Ok(()) => {
                s.spilled_batches.fetch_add(1, Ordering::Relaxed);
                s.spilled_points.fetch_add(points as u64, Ordering::Relaxed);
                let (files, bytes) = spill.size();
                s.spill_files.store(files, Ordering::Relaxed);
                s.spill_bytes.store(bytes, Ordering::Relaxed);
                Ok(AppendOutcome {
                    accepted: points as u64,
                    ..AppendOutcome::default()
                })
            }
            Err(e) => {
                s.spill_full.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(error = %e, points, "kafka did not take a batch and the spill cannot; the client retries");
                Err(SinkError::Unavailable(format!("kafka: {why}; spill: {e}")))
            }
        }
    }
}

/// Points as log records, one per partition (split at 256 KiB), each holding its
/// points in the order given. Version 2 shares each name's prefix with the previous
/// point's: agents send a host's metrics together, so neighbours share most of their
/// names without a sort (the sort by name this replaced cost the ingest node about
/// 15 % of its CPU, for a few bytes a point; see docs/cluster.md, Throughput).
pub fn encode_records<'a>(
    points: impl Iterator<Item = (&'a str, i64, f64)>,
    partitions: u32,
    version: u8,
    flags: u8,
    arrival: i64,
) -> Vec<(u32, Vec<u8>)> {
    let mut writers: Vec<Option<RecordWriter>> = Vec::new();
    writers.resize_with(partitions.max(1) as usize, || None);
    let mut out = Vec::new();
    // the partition hash of each name continues from what it shares with the one before
    let mut hasher = PrefixFnv::new();
    for (name, ts, value) in points {
        let part = hasher.partition(name, partitions);
        let w = writers[part as usize]
            .get_or_insert_with(|| RecordWriter::with_flags(version, flags, arrival));
        w.push(name, ts, value);
        if w.byte_len() >= MAX_RECORD_BYTES {
            out.push((part, w.take(arrival)));
        }
    }
    for (part, w) in writers.into_iter().enumerate() {
        if let Some(w) = w.filter(|w| !w.is_empty()) {
            out.push((part as u32, w.into_record()));
        }
    }
    out
}

impl Core {
    fn send(
        &self,
        partition: u32,
        payload: &[u8],
        pending: &Arc<Pending>,
        deadline: Instant,
    ) -> Result<(), String> {
        pending.state.lock().in_flight += 1;
        let mut record =
            BaseRecord::<(), [u8], Arc<Pending>>::with_opaque_to(&self.topic, pending.clone())
                .partition(partition as i32)
                .payload(payload);
        loop {
            match self.producer.producer.send(record) {
                Ok(()) => return Ok(()),
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r))
                    if Instant::now() < deadline =>
                {
                    self.stats.queue_full_waits.fetch_add(1, Ordering::Relaxed);
                    record = r;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err((e, _)) => {
                    // the record was not queued: no delivery report will come for it
                    pending.state.lock().in_flight -= 1;
                    return Err(e.to_string());
                }
            }
        }
    }

    /// Sends the records and waits until Kafka has acknowledged every one; answers the
    /// records and bytes sent.
    fn deliver(&self, records: &[(u32, Vec<u8>)]) -> Result<(u64, u64), String> {
        let started = Instant::now();
        let deadline = started + self.timeout;
        let pending = Arc::new(Pending::default());
        let (mut sent, mut bytes) = (0u64, 0u64);
        let mut failed = None;
        for (part, payload) in records {
            if let Err(e) = self.send(*part, payload, &pending, deadline) {
                failed = Some(e);
                break;
            }
            sent += 1;
            bytes += payload.len() as u64;
        }
        // wait for the delivery reports of what was queued, even after a failure, so
        // that the caller's retry follows them; librdkafka fails a record by its
        // message.timeout.ms, so this ends
        let mut st = pending.state.lock();
        let hard_deadline = deadline + Duration::from_secs(5);
        while st.in_flight > 0 {
            if pending.done.wait_until(&mut st, hard_deadline).timed_out() {
                failed.get_or_insert_with(|| {
                    format!("{} records not acknowledged in time", st.in_flight)
                });
                break;
            }
        }
        if let Some(e) = st.error.take() {
            failed.get_or_insert(e);
        }
        drop(st);
        self.stats
            .ack_wait_us
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        match failed {
            Some(e) => Err(e),
            None => Ok((sent, bytes)),
        }
    }
}

/// The spill's delivery thread: the oldest entry to Kafka, removed once acknowledged;
/// waits and tries again while Kafka does not take it.
fn deliver_spill(core: &Core, spill: &Spill, stop: &AtomicBool) {
    let s = &core.stats;
    while !stop.load(Ordering::Relaxed) {
        let Some((seq, entry)) = spill.front() else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let result = match entry {
            Err(e) => {
                s.spill_bad_files.fetch_add(1, Ordering::Relaxed);
                tracing::error!(seq, error = %e, "a spill file cannot be read: set aside as .bad, not delivered");
                spill.pop(seq, true)
            }
            Ok(entry) => match core.deliver(&entry.records) {
                Ok(_) => {
                    s.spill_delivered_batches.fetch_add(1, Ordering::Relaxed);
                    s.spill_delivered_points
                        .fetch_add(u64::from(entry.points), Ordering::Relaxed);
                    spill.pop(seq, false)
                }
                Err(e) => {
                    tracing::debug!(error = %e, "kafka does not take the spill yet");
                    std::thread::sleep(Duration::from_millis(500));
                    Ok(())
                }
            },
        };
        if let Err(e) = result {
            tracing::error!(seq, error = %e, "removing a delivered spill file");
            std::thread::sleep(Duration::from_secs(1));
        }
        let (files, bytes) = spill.size();
        s.spill_files.store(files, Ordering::Relaxed);
        s.spill_bytes.store(bytes, Ordering::Relaxed);
    }
}

impl Sink for KafkaSink {
    /// Every point counts as accepted once Kafka has it: what the storage nodes refuse
    /// (too old, too new, over the series limit) they count in their own `/metrics`.
    fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.append_flagged(batch, 0)
    }

    /// A GrowthForecast post's points, in records of version 3 flagged
    /// [`FLAG_GRAPH`]: the storage nodes create their series with GrowthForecast's
    /// rollup (average, xFilesFactor 0), as a single node does.
    fn append_graph_points(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
        self.append_flagged(batch, FLAG_GRAPH)
    }
}

impl KafkaSink {
    fn append_flagged(&self, batch: &Batch, flags: u8) -> Result<AppendOutcome, SinkError> {
        if batch.is_empty() {
            return Ok(AppendOutcome::default());
        }
        let records = self.encode(batch, flags);
        // while anything waits in the spill, later appends go behind it (in order)
        if let Some(spill) = self.spill.as_deref().filter(|s| !s.is_empty()) {
            return self.to_spill(spill, records, batch.len(), "spill not yet delivered");
        }
        match self.core.deliver(&records) {
            Ok((records, bytes)) => {
                let s = &self.core.stats;
                s.appends.fetch_add(1, Ordering::Relaxed);
                s.points.fetch_add(batch.len() as u64, Ordering::Relaxed);
                s.records.fetch_add(records, Ordering::Relaxed);
                s.bytes.fetch_add(bytes, Ordering::Relaxed);
                Ok(AppendOutcome {
                    accepted: batch.len() as u64,
                    ..AppendOutcome::default()
                })
            }
            Err(e) => {
                self.core.stats.unavailable.fetch_add(1, Ordering::Relaxed);
                if let Some(spill) = self.spill.as_deref() {
                    return self.to_spill(spill, records, batch.len(), &e);
                }
                tracing::warn!(error = %e, points = batch.len(), "kafka did not take a batch; the client retries");
                Err(SinkError::Unavailable(format!("kafka: {e}")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{decode_into, partition_for};

    /// A batch as an agent-like load sends it: hosts in turn, each host's metrics
    /// together, in the agent's (unsorted) order, short decimal values.
    fn agent_batch(hosts: u32, points: u32) -> Batch {
        let groups = ["cpu", "memory", "disk.sda", "net.eth0", "load"];
        let items = [
            "user",
            "system",
            "idle",
            "iowait",
            "steal",
            "free",
            "used",
            "reads",
            "writes",
            "rx_bytes",
            "tx_bytes",
            "errors",
            "shortterm",
            "midterm",
            "longterm",
            "nice",
            "irq",
            "softirq",
            "cached",
            "buffered",
        ];
        let mut b = Batch::new();
        for p in 0..points {
            for h in 0..hosts {
                for (i, item) in items.iter().enumerate() {
                    for (j, g) in groups.iter().enumerate() {
                        let name = format!("bench.host{h:05}.{g}.{item}");
                        let v = f64::from((h * 7 + p * 13 + (i * 5 + j) as u32) % 10_000) / 100.0;
                        b.push(&name, 1_700_000_000 + i64::from(p) * 10, v);
                    }
                }
            }
        }
        b
    }

    #[test]
    fn records_hold_each_partitions_points_in_the_batch_order() {
        let b = agent_batch(7, 3);
        let arrival = 1_700_000_005;
        let points = b.iter().map(|(n, p)| (n, p.ts, p.value));
        let records = encode_records(points, 6, 2, 0, arrival);
        let mut seen = vec![Vec::new(); 6];
        for (part, bytes) in &records {
            let mut out = Batch::new();
            let d = decode_into(bytes, &mut out).unwrap();
            assert_eq!(d.arrival, arrival);
            for (n, p) in out.iter() {
                assert_eq!(partition_for(n, 6), *part, "{n}");
                seen[*part as usize].push((n.to_string(), p.ts, p.value.to_bits()));
            }
        }
        for (part, got) in seen.iter().enumerate() {
            let want: Vec<(String, i64, u64)> = b
                .iter()
                .filter(|(n, _)| partition_for(n, 6) as usize == part)
                .map(|(n, p)| (n.to_string(), p.ts, p.value.to_bits()))
                .collect();
            assert!(!want.is_empty());
            assert_eq!(got, &want, "partition {part}");
        }
    }

    /// Cost and size of the records with and without the former sort by name, and of
    /// session 7's encoder (each name hashed whole, each record copied out) against the
    /// prefix hash. A timing, not a check: `CARGO_PROFILE_DEV_OPT_LEVEL=3 cargo test -p
    /// sumi-cluster --lib encode_cost -- --ignored --nocapture`.
    #[test]
    #[ignore = "a timing, not a check: see the doc lines above"]
    fn encode_cost() {
        // about one carbon batch of an ingest connection (8,300 points)
        let b = agent_batch(83, 1);
        let reps = 400;
        // this thread's CPU time in ns (the machine may be shared: not wall time)
        let cpu_ns = || -> u64 {
            std::fs::read_to_string("/proc/thread-self/schedstat")
                .ok()
                .and_then(|s| s.split_whitespace().next()?.parse().ok())
                .unwrap_or(0)
        };
        // session 7's encoder: the whole name hashed for each point, records copied out
        let plain = |b: &Batch| {
            let mut writers: Vec<Option<RecordWriter>> = (0..6).map(|_| None).collect();
            for (n, p) in b.iter() {
                let part = partition_for(n, 6) as usize;
                writers[part]
                    .get_or_insert_with(|| RecordWriter::with_flags(2, 0, 1))
                    .push(n, p.ts, p.value);
            }
            let mut out = Vec::new();
            for (part, w) in writers.iter_mut().enumerate() {
                if let Some(w) = w.as_mut() {
                    out.push((part as u32, w.finish().to_vec()));
                }
            }
            out
        };
        let t = cpu_ns();
        for _ in 0..reps {
            std::hint::black_box(plain(&b));
        }
        let ns_plain = (cpu_ns() - t) as f64 / (reps * b.len()) as f64;
        let t = cpu_ns();
        for _ in 0..reps {
            std::hint::black_box(encode_records(
                b.iter().map(|(n, p)| (n, p.ts, p.value)),
                6,
                2,
                0,
                1,
            ));
        }
        let ns_now = (cpu_ns() - t) as f64 / (reps * b.len()) as f64;
        println!(
            "whole-name hash and copies: {ns_plain:.1} ns/point; prefix hash: {ns_now:.1} ns/point"
        );
        let run = |sorted: bool| {
            let t = cpu_ns();
            let mut bytes = 0;
            let mut last = Vec::new();
            for _ in 0..reps {
                let records = if sorted {
                    let mut v: Vec<(u32, &str, i64, f64)> = b
                        .iter()
                        .map(|(n, p)| (partition_for(n, 6), n, p.ts, p.value))
                        .collect();
                    v.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
                    encode_records(v.into_iter().map(|(_, n, ts, x)| (n, ts, x)), 6, 2, 0, 1)
                } else {
                    encode_records(b.iter().map(|(n, p)| (n, p.ts, p.value)), 6, 2, 0, 1)
                };
                bytes = records.iter().map(|(_, r)| r.len()).sum::<usize>();
                last = records;
            }
            let per_point = (cpu_ns() - t) as f64 / (reps * b.len()) as f64;
            // what a storage node then pays to read them
            let t = cpu_ns();
            let mut out = Batch::new();
            for _ in 0..reps {
                for (_, r) in &last {
                    out.clear();
                    decode_into(r, &mut out).unwrap();
                }
            }
            let decode = (cpu_ns() - t) as f64 / (reps * b.len()) as f64;
            (per_point, bytes as f64 / b.len() as f64, decode)
        };
        for round in 0..3 {
            let (ns_s, by_s, de_s) = run(true);
            let (ns_o, by_o, de_o) = run(false);
            println!(
                "round {round}: sorted: encode {ns_s:.1} ns/point, {by_s:.2} B/point, decode {de_s:.1} ns/point; \
                 batch order: encode {ns_o:.1} ns/point, {by_o:.2} B/point, decode {de_o:.1} ns/point"
            );
        }
    }
}
