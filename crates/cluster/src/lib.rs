//! sumi on Apache Kafka (see `docs/cluster.md`).
//!
//! - [`record`]: the log record (points of one partition with the ingest node's arrival
//!   time) and [`partition_for`], the hash that places a series.
//! - [`producer`]: [`KafkaSink`], the `Sink` of an ingest node: each point to its
//!   partition, idempotent, `acks=all`, answered once Kafka has it.
//! - [`consumer`]: [`StorageConsumer`], a storage node's consumer of its owned
//!   partitions into the engine, with offsets checkpointed after the engine's WAL.
//! - [`spill`]: the ingest side's bounded on-disk spill, for appends Kafka does not take
//!   in time, delivered in order when it is back.
//! - [`config`]: the `[cluster]` section of `sumi.toml`.
//! - [`meta_log`]: the metadata log (GrowthForecast's mutations, one partition).
//! - [`log_time`]: the log's time a storage node's retention judges by.
//! - [`log_gaps`]: records removed by Kafka's retention before a storage node applied
//!   them, and the partitions to copy again for it.
//!
//! The client is `rdkafka` (librdkafka, built from the source its sys crate bundles):
//! it has the idempotent producer the "acknowledged means never lost, never doubled in
//! the log" contract needs, which the pure-Rust `rskafka` lacks.

pub mod config;
pub mod consumer;
pub mod log_gaps;
pub mod log_time;
pub mod meta_log;
pub mod producer;
pub mod record;
pub mod spill;

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rdkafka::admin::{
    AdminClient, AdminOptions, AlterConfig, ConfigSource, NewTopic, ResourceSpecifier,
    TopicReplication,
};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::types::RDKafkaErrorCode;

pub use config::{ClusterConfig, PeerConfig, Role};
pub use consumer::{ApplyObserver, ConsumeStats, ConsumerHooks, StorageConsumer};
pub use producer::{KafkaSink, ProduceStats};
pub use record::partition_for;

/// The log-end offset (high watermark: the offset the next record will get) of every
/// partition of the topic, from Kafka. Blocking.
pub fn log_end_offsets(config: &ClusterConfig, timeout: Duration) -> Result<Vec<i64>> {
    Ok(watermarks(config, timeout)?
        .into_iter()
        .map(|(_, high)| high)
        .collect())
}

/// The log-start offset (low watermark: the first offset Kafka still holds; the
/// records below it were removed by the topic's retention) of every partition of the
/// topic, from Kafka. Blocking.
pub fn log_start_offsets(config: &ClusterConfig, timeout: Duration) -> Result<Vec<i64>> {
    Ok(watermarks(config, timeout)?
        .into_iter()
        .map(|(low, _)| low)
        .collect())
}

/// (log start, log end) of every partition of the topic. Blocking.
fn watermarks(config: &ClusterConfig, timeout: Duration) -> Result<Vec<(i64, i64)>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .set("client.id", format!("sumi-status-{}", config.node_id))
        .create()
        .context("creating a kafka client")?;
    (0..config.partitions)
        .map(|p| {
            consumer
                .fetch_watermarks(&config.topic, p as i32, timeout)
                .with_context(|| {
                    format!(
                        "reading the offsets of partition {p} of {} at {}",
                        config.topic, config.brokers
                    )
                })
        })
        .collect()
}

/// Creates the topic with `config.partitions` partitions unless it exists, and checks
/// that an existing one has that many. Retries while no broker answers, up to `wait`.
/// Blocking (call it from a blocking thread).
pub fn ensure_topic(config: &ClusterConfig, wait: Duration) -> Result<()> {
    ensure_topic_with(config, wait, &[])
}

/// [`ensure_topic`], the topic created with the topic settings `settings` (Kafka's
/// names and values), and an existing topic's settings altered to them where they
/// differ.
pub fn ensure_topic_with(
    config: &ClusterConfig,
    wait: Duration,
    settings: &[(&str, &str)],
) -> Result<()> {
    // the admin client's futures need no runtime of their own, only something to
    // poll them: a small one here keeps this callable from any thread
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("starting a runtime for the admin client")?;
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", &config.brokers)
        .set("client.id", format!("sumi-admin-{}", config.node_id))
        .create()
        .context("creating the kafka admin client")?;
    let deadline = Instant::now() + wait;
    loop {
        match rt.block_on(try_ensure(&admin, config, settings)) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                tracing::info!(error = %e, "waiting for kafka");
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(e),
        }
    }
}

async fn try_ensure(
    admin: &AdminClient<DefaultClientContext>,
    config: &ClusterConfig,
    settings: &[(&str, &str)],
) -> Result<()> {
    let topic = config.topic.clone();
    let probe_admin_timeout = Duration::from_secs(5);
    let md = admin
        .inner()
        .fetch_metadata(Some(&topic), probe_admin_timeout)
        .context("reading kafka's metadata")?;
    let brokers = md.brokers().len() as u32;
    if brokers == 0 {
        bail!("kafka knows no brokers yet");
    }
    let existing = md
        .topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map(|t| t.partitions().len() as u32);
    match existing {
        Some(n) if n == config.partitions => return settle(admin, &topic, settings).await,
        Some(n) if n > 0 => bail!(
            "topic {topic} has {n} partitions but cluster.partitions is {}",
            config.partitions
        ),
        _ => {}
    }
    let rf = if config.replication_factor == 0 {
        brokers.min(3)
    } else {
        config.replication_factor
    };
    let new = settings.iter().fold(
        NewTopic::new(
            &topic,
            config.partitions as i32,
            TopicReplication::Fixed(rf as i32),
        ),
        |t, &(k, v)| t.set(k, v),
    );
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = admin
        .create_topics([&new], &opts)
        .await
        .context("creating the topic")?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, code)) => bail!("creating topic {t}: {code}"),
        }
    }
    tracing::info!(topic = %topic, partitions = config.partitions, replication = rf, "topic ready");
    // the caller checks again: the partitions' leaders may take a moment
    bail!("topic {topic} just created; checking its partitions")
}

/// Alters the existing `topic`'s settings to `settings` where they differ (a topic
/// created by an older release, or by hand).
async fn settle(
    admin: &AdminClient<DefaultClientContext>,
    topic: &str,
    settings: &[(&str, &str)],
) -> Result<()> {
    if settings.is_empty() {
        return Ok(());
    }
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let resource = ResourceSpecifier::Topic(topic);
    let described = admin
        .describe_configs([&resource], &opts)
        .await
        .context("reading the topic's settings")?;
    let current = described
        .into_iter()
        .next()
        .context("kafka described no topic")?
        .with_context(|| format!("describing topic {topic}"))?;
    let differ: Vec<&(&str, &str)> = settings
        .iter()
        .filter(|(k, v)| current.get(k).and_then(|e| e.value.as_deref()) != Some(*v))
        .collect();
    if differ.is_empty() {
        return Ok(());
    }
    // a whole-resource alter: every dynamic setting of the topic is given
    let mut alter = AlterConfig::new(ResourceSpecifier::Topic(topic));
    for e in &current.entries {
        if e.source == ConfigSource::DynamicTopic {
            if let Some(v) = &e.value {
                alter = alter.set(&e.name, v);
            }
        }
    }
    for &(k, v) in settings {
        alter = alter.set(k, v);
    }
    for r in admin
        .alter_configs([&alter], &opts)
        .await
        .context("altering the topic's settings")?
    {
        r.map_err(|(_, code)| anyhow::anyhow!("altering topic {topic}'s settings: {code}"))?;
    }
    tracing::info!(topic, changed = ?differ, "topic settings altered");
    Ok(())
}
