//! The metadata log: one topic of ONE partition (`<topic>.growthforecast`), so one
//! total order, carrying GrowthForecast's mutations as opaque messages (the ops are
//! `sumi_http::growthforecast::replicated`'s). Every node in cluster mode produces the
//! mutations it is sent ([`MetaProducer`]) and applies the whole log to its own
//! database ([`consume`]), from the offset it stored with its last applied op.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};

use crate::config::ClusterConfig;
use crate::producer::Polled;

/// The metadata log's topic for a cluster whose points go to `config.topic`.
pub fn meta_topic(config: &ClusterConfig) -> String {
    format!("{}.growthforecast", config.topic)
}

/// The metadata topic's settings: its records are never removed. Every node's
/// database is the whole log applied from its first op (a node that starts empty
/// replays it all), so a record removed by time or size — the broker's default
/// retention is seven days — would give a new node different rows and ids.
pub const META_TOPIC_SETTINGS: [(&str, &str); 2] =
    [("retention.ms", "-1"), ("retention.bytes", "-1")];

/// Creates the metadata topic (one partition, the data topic's replication factor,
/// [`META_TOPIC_SETTINGS`]) unless it exists, as [`crate::ensure_topic`] does the data
/// topic, and gives an existing one those settings (a topic made by a release before
/// them kept the broker's retention). Blocking.
pub fn ensure_meta_topic(config: &ClusterConfig, wait: Duration) -> Result<()> {
    let mut meta = config.clone();
    meta.topic = meta_topic(config);
    meta.partitions = 1;
    crate::ensure_topic_with(&meta, wait, &META_TOPIC_SETTINGS)
}

/// How long an append waits for Kafka's acknowledgement.
const APPEND_TIMEOUT: Duration = Duration::from_secs(30);

/// The producer of a node's metadata ops: idempotent, `acks=all`, no lingering (a
/// request waits on each append). A `BaseProducer` polled by its own thread with a
/// long poll (`crate::producer::Polled`), each append waiting on a channel its
/// delivery report answers: rdkafka's `FutureProducer` polls every 100 ms and spins
/// through the last millisecond of each, about 1 % of a core on every node, idle or
/// not (seen in a profile of the ingest node, session 10).
pub struct MetaProducer {
    producer: Polled<Delivered>,
    topic: String,
    /// The data topic and its partition count (for delete markers).
    data_topic: String,
    partitions: u32,
}

impl std::fmt::Debug for MetaProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetaProducer")
            .field("topic", &self.topic)
            .finish()
    }
}

/// A delivery report: the record's offset, or Kafka's refusal.
type Report = std::result::Result<i64, String>;

/// Sends each delivery report to the channel its record carries.
struct Delivered;

impl ClientContext for Delivered {}

impl ProducerContext for Delivered {
    type DeliveryOpaque = Box<SyncSender<Report>>;

    fn delivery(&self, result: &DeliveryResult<'_>, to: Self::DeliveryOpaque) {
        let report = match result {
            Ok(m) => Ok(m.offset()),
            Err((e, _)) => Err(e.to_string()),
        };
        // the waiter may have given up (it then answered an error already)
        let _ = to.send(report);
    }
}

impl MetaProducer {
    /// The producer of `config`'s metadata topic.
    pub fn new(config: &ClusterConfig) -> Result<MetaProducer> {
        let producer: BaseProducer<Delivered> = ClientConfig::new()
            .set("bootstrap.servers", &config.brokers)
            .set("client.id", format!("sumi-meta-{}", config.node_id))
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "0")
            .set("message.timeout.ms", APPEND_TIMEOUT.as_millis().to_string())
            .create_with_context(Delivered)
            .context("creating the metadata log's producer")?;
        let producer = Polled::start(producer, "sumi-meta-poll")
            .context("starting the metadata log's producer thread")?;
        Ok(MetaProducer {
            producer,
            topic: meta_topic(config),
            data_topic: config.topic.clone(),
            partitions: config.partitions.max(1),
        })
    }

    /// Queues `payload` to `partition` of `topic`; the channel its report comes on.
    fn send(&self, topic: &str, partition: u32, payload: &[u8]) -> Result<Receiver<Report>> {
        let (tx, rx) = sync_channel(1);
        let record: BaseRecord<'_, (), [u8], _> = BaseRecord::with_opaque_to(topic, Box::new(tx))
            .partition(partition as i32)
            .payload(payload);
        self.producer
            .producer
            .send(record)
            .map_err(|(e, _)| e)
            .with_context(|| format!("queueing a record for {topic}"))?;
        Ok(rx)
    }

    /// Appends `payload` and returns its offset once Kafka has it. Blocking.
    pub fn append(&self, payload: &[u8]) -> Result<i64> {
        let rx = self.send(&self.topic, 0, payload)?;
        wait(&rx).context("appending a metadata op")
    }
}

/// Waits for a delivery report (a little longer than the producer's own timeout,
/// after which it reports a failure itself).
fn wait(rx: &Receiver<Report>) -> Result<i64> {
    match rx.recv_timeout(APPEND_TIMEOUT + Duration::from_secs(5)) {
        Ok(Ok(offset)) => Ok(offset),
        Ok(Err(e)) => Err(anyhow::anyhow!(e)),
        Err(e) => Err(anyhow::anyhow!("no delivery report: {e}")),
    }
}

impl MetaProducer {
    /// Writes a delete marker of the series matching `globs` into the data partitions
    /// they can be in ([`marker_partitions`]: every partition, or for exact names only
    /// their own) and returns once Kafka has all of them (`acks=all`). Blocking.
    pub fn append_delete_markers(&self, globs: &[String], arrival: i64) -> Result<()> {
        let targets = marker_partitions(globs, self.partitions);
        self.append_named_delete_markers(&targets, arrival)
    }
}

/// Where the delete markers of `globs` go, as `(partition, names)`: each name of an
/// exact (glob-free, untagged) list only into its own partition (`partition_for`; a
/// storage node deletes at a marker only the series of that partition, so a marker
/// elsewhere deletes nothing); with any glob or tagged name, all of `globs` into every
/// partition.
pub fn marker_partitions(globs: &[String], partitions: u32) -> Vec<(u32, Vec<String>)> {
    let exact = |g: &String| !g.is_empty() && !g.contains(['*', '?', '[', ']', '{', '}', ';']);
    if globs.is_empty() || !globs.iter().all(exact) {
        return (0..partitions.max(1))
            .map(|p| (p, globs.to_vec()))
            .collect();
    }
    let mut by: std::collections::BTreeMap<u32, Vec<String>> = Default::default();
    for g in globs {
        by.entry(crate::record::partition_for(
            sumi_model::placement_name(g),
            partitions,
        ))
        .or_default()
        .push(g.clone());
    }
    by.into_iter().collect()
}

impl MetaProducer {
    /// Writes delete markers of exact series names, each name only into its own data
    /// partition (`by_partition`: partition → names, already chunked by the caller to
    /// a record's size), and returns once Kafka has all of them (`acks=all`). A name
    /// is matched as a glob by the consumer: the caller passes names without glob
    /// characters. Blocking.
    pub fn append_named_delete_markers(
        &self,
        by_partition: &[(u32, Vec<String>)],
        arrival: i64,
    ) -> Result<()> {
        let waits = by_partition
            .iter()
            .map(|(p, names)| {
                let payload = crate::record::delete_marker(names, arrival);
                self.send(&self.data_topic, *p, &payload)
            })
            .collect::<Result<Vec<_>>>()
            .context("queueing a delete marker")?;
        for rx in &waits {
            wait(rx).context("appending a delete marker")?;
        }
        Ok(())
    }
}

/// Consumes the metadata log from `*next`, calling `apply(offset, payload)` for each
/// message in order (and moving `*next` past it), until `stop`. When `apply` fails, it
/// is called again with the same message after a pause (the op was not applied).
/// Blocking.
pub fn consume(
    config: &ClusterConfig,
    next: &mut i64,
    stop: &AtomicBool,
    mut apply: impl FnMut(i64, &[u8]) -> std::result::Result<(), String>,
) -> Result<()> {
    let topic = meta_topic(config);
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .set("client.id", format!("sumi-meta-{}", config.node_id))
        .set("group.id", format!("sumi-meta-{}", config.node_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        // a long poll: the broker answers a waiting fetch as soon as an op is appended
        // (fetch.min.bytes 1), so this bounds only the idle round trips
        .set("fetch.wait.max.ms", "500")
        .create()
        .context("creating the metadata log's consumer")?;
    let assign = |offset: i64| -> Result<()> {
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Offset(offset))
            .context("placing the metadata log's consumer")?;
        consumer
            .assign(&tpl)
            .context("assigning the metadata log's partition")
    };
    assign(*next)?;
    tracing::info!(topic = %topic, offset = *next, "applying the growthforecast metadata log");
    while !stop.load(Ordering::Relaxed) {
        let Some(msg) = consumer.poll(Duration::from_millis(100)) else {
            continue;
        };
        let msg = match msg {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "reading the growthforecast metadata log");
                std::thread::sleep(Duration::from_millis(200));
                continue;
            }
        };
        let offset = msg.offset();
        if offset < *next {
            continue;
        }
        if offset > *next {
            // only if records were removed (by hand, or by the retention a topic had
            // before META_TOPIC_SETTINGS): this node's rows can no longer be the others'
            tracing::error!(
                topic = %topic,
                expected = *next,
                offset,
                "growthforecast ops this node never applied are gone from the metadata log: \
                 its graphs may differ from the other nodes'; copy growthforecast.db from \
                 another node (stopped) to repair"
            );
        }
        if let Err(e) = apply(offset, msg.payload().unwrap_or_default()) {
            tracing::warn!(offset, error = %e, "applying a growthforecast op; retrying");
            std::thread::sleep(Duration::from_secs(1));
            assign(offset)?;
            continue;
        }
        *next = offset + 1;
    }
    Ok(())
}

/// Runs [`consume`] until `stop`, restarting it when the client fails.
pub fn run(
    config: &ClusterConfig,
    start: i64,
    stop: Arc<AtomicBool>,
    mut apply: impl FnMut(i64, &[u8]) -> std::result::Result<(), String>,
) {
    let mut next = start;
    while !stop.load(Ordering::Relaxed) {
        if let Err(e) = consume(config, &mut next, &stop, &mut apply) {
            tracing::warn!(error = %e, "the growthforecast metadata log's consumer failed; restarting");
            std::thread::sleep(Duration::from_secs(1));
        }
    }
}

#[cfg(test)]
mod marker_tests {
    use super::marker_partitions;
    use crate::record::partition_for;

    #[test]
    fn exact_names_mark_only_their_partitions_globs_every_one() {
        let names: Vec<String> = ["a.b", "a.c", "x.y.z"].map(String::from).to_vec();
        let got = marker_partitions(&names, 8);
        let mut flat: Vec<(u32, String)> = got
            .iter()
            .flat_map(|(p, ns)| ns.iter().map(move |n| (*p, n.clone())))
            .collect();
        flat.sort();
        let mut want: Vec<(u32, String)> = names
            .iter()
            .map(|n| (partition_for(n, 8), n.clone()))
            .collect();
        want.sort();
        assert_eq!(flat, want);
        for globs in [
            vec!["a.**".to_string()],
            vec!["a.b".to_string(), "a.{c,d}".to_string()],
            vec!["cpu;host=a".to_string()],
        ] {
            let got = marker_partitions(&globs, 8);
            assert_eq!(got.len(), 8, "{globs:?}");
            assert!(got.iter().all(|(_, g)| *g == globs));
        }
        assert_eq!(marker_partitions(&[], 3).len(), 3);
    }
}
