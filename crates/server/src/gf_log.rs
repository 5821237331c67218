//! GrowthForecast's metadata log on a cluster node: the ops this node's requests make,
//! produced to the metadata topic, and the thread that applies the whole log to this
//! node's `growthforecast.db` (see `sumi_http::growthforecast::replicated`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use sumi_cluster::meta_log::{self, MetaProducer};
use sumi_cluster::ClusterConfig;
use sumi_http::growthforecast::replicated::{Applier, OpLog};

/// The metadata log as GrowthForecast's handlers see it.
#[derive(Debug)]
pub(crate) struct KafkaOpLog {
    producer: MetaProducer,
    node_id: u32,
}

impl KafkaOpLog {
    pub(crate) fn new(cc: &ClusterConfig) -> Result<KafkaOpLog> {
        Ok(KafkaOpLog {
            producer: MetaProducer::new(cc)?,
            node_id: cc.node_id,
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
