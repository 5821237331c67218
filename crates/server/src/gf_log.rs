//! GrowthForecast's metadata log on a cluster node: the ops this node's requests make,
//! produced to the metadata topic, and the thread that applies the whole log to this
//! node's `growthforecast.db` (see `sumi_http::growthforecast::replicated`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use sumi_cluster::meta_log::{self, MetaProducer};
use sumi_cluster::ClusterConfig;
use sumi_http::growthforecast::replicated::{Applier, DataWait, OpLog};

/// The metadata log as GrowthForecast's handlers see it.
#[derive(Debug)]
pub(crate) struct KafkaOpLog {
    producer: MetaProducer,
    node_id: u32,
    cc: ClusterConfig,
}

impl KafkaOpLog {
    pub(crate) fn new(cc: &ClusterConfig) -> Result<KafkaOpLog> {
        Ok(KafkaOpLog {
            producer: MetaProducer::new(cc)?,
            node_id: cc.node_id,
            cc: cc.clone(),
        })
    }
}

impl OpLog for KafkaOpLog {
    fn node_id(&self) -> u32 {
        self.node_id
    }

    fn append(&self, payload: &[u8]) -> Result<i64, String> {
        self.producer.append(payload).map_err(|e| format!("{e:#}"))
    }

    fn data_ends(&self) -> Result<Option<BTreeMap<u32, i64>>, String> {
        sumi_cluster::log_end_offsets(&self.cc, Duration::from_secs(10))
            .map(|ends| Some((0..).zip(ends).collect()))
            .map_err(|e| format!("{e:#}"))
    }

    fn delete_markers(&self, globs: &[String]) -> Result<bool, String> {
        self.producer
            .append_delete_markers(globs, now_secs())
            .map(|()| true)
            .map_err(|e| format!("{e:#}"))
    }

    fn named_delete_markers(&self, by_partition: &[(u32, Vec<String>)]) -> Result<bool, String> {
        self.producer
            .append_named_delete_markers(by_partition, now_secs())
            .map(|()| true)
            .map_err(|e| format!("{e:#}"))
    }
}

fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A storage node's wait before a delete of the metadata log: until its data consumer
/// has applied every owned partition up to the end offsets the delete carries, *and*
/// checkpointed them (`offsets_path`, the consumer's durable offsets of `topic`), or
/// `stop`. `next_offset` gives the consumer's next offset of a partition (`None`: not
/// consumed here, or no consumer yet — a node still copying does not wait).
///
/// The checkpoint matters after a `SIGKILL`: the delete's own offset is stored with
/// the database at once, but the consumer resumes from its last checkpoint; were that
/// below the delete's ends, the restarted node would store the deleted series' older
/// points again, and never apply the delete a second time.
pub(crate) fn data_wait(
    next_offset: impl Fn(u32) -> Option<i64> + Send + 'static,
    offsets_path: std::path::PathBuf,
    topic: String,
    stop: Arc<AtomicBool>,
) -> DataWait {
    Box::new(move |ends: &BTreeMap<u32, i64>| {
        let behind = || {
            let mut durable = None;
            ends.iter().any(|(&p, &end)| {
                let Some(next) = next_offset(p) else {
                    return false;
                };
                if next < end {
                    return true;
                }
                // read once per check, only when the consumer itself is past
                let saved = durable.get_or_insert_with(|| {
                    sumi_cluster::consumer::read_offsets(&offsets_path, &topic).unwrap_or_default()
                });
                saved.get(&p).copied().unwrap_or(0) < end
            })
        };
        let t0 = std::time::Instant::now();
        let mut said = false;
        while behind() && !stop.load(Ordering::Relaxed) {
            if !said && t0.elapsed() > Duration::from_secs(5) {
                tracing::info!(
                    "a delete of the metadata log waits for the data topic to be applied and \
                     checkpointed up to it"
                );
                said = true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    })
}

/// Starts the thread applying the metadata log to this node's database, from the
/// offset stored with it, until `stop`.
pub(crate) fn start_applier(
    cc: ClusterConfig,
    mut applier: Applier,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("sumi-gf-log".into())
        .spawn(move || {
            let start = applier.next_offset();
            meta_log::run(&cc, start, stop, |offset, payload| {
                applier.apply(offset, payload).map_err(|e| e.to_string())
            });
        })
        .context("starting the growthforecast log applier")
}

#[cfg(test)]
mod tests {
    use super::*;
    use sumi_cluster::consumer::write_offsets;

    #[test]
    fn a_delete_waits_for_the_consumers_checkpoint_not_only_its_progress() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("offsets");
        let at = |o: i64| -> BTreeMap<u32, i64> { [(0, o), (1, o)].into_iter().collect() };
        write_offsets(&path, "t", &at(5)).unwrap();
        // the consumer has applied partition 0 up to 10 (1 is not consumed here)
        let mut wait = data_wait(
            |p| (p == 0).then_some(10),
            path.clone(),
            "t".into(),
            Arc::new(AtomicBool::new(false)),
        );
        let ends: BTreeMap<u32, i64> = [(0, 10), (1, 99)].into_iter().collect();
        let writer = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(300));
                write_offsets(&path, "t", &at(10)).unwrap();
            })
        };
        let t0 = std::time::Instant::now();
        wait(&ends);
        assert!(
            t0.elapsed() >= Duration::from_millis(250),
            "returned before the checkpoint reached the ends: {:?}",
            t0.elapsed()
        );
        writer.join().unwrap();
        // checkpointed: at once
        let t0 = std::time::Instant::now();
        wait(&ends);
        assert!(t0.elapsed() < Duration::from_millis(100));
    }
}
