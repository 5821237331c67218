//! A storage node taking over partitions it has no data for (`[cluster]
//! copy_from_peers = true`; docs/cluster.md, "Adding a node, moving a partition").
//!
//! For each such partition, in a background thread while the node already answers
//! HTTP (reads of these partitions go to their other replicas meanwhile):
//!
//! 1. **copying**: ask a peer storing the partition (configuration order, the next one
//!    on failure, again every second until one answers) for its dump
//!    (`/internal/v0/partition_dump`): the log offset it covers, then each series'
//!    direct writes, loaded into the store as they are. Complete only at the dump's
//!    end marker; then the WAL is synced and the offset written to the offsets file —
//!    the same checkpoint the consumer writes, so a crash before this point copies the
//!    partition again from the start (loading a series twice writes the same values),
//!    and a crash after it resumes consuming from the offset;
//! 2. **catching-up**: the consumer starts (all owned partitions, from the offsets
//!    file) and the partition stays joining until its consumed offset reaches the log
//!    end read when the copies were done;
//! 3. then the node counts as its replica (for its own reads, its peers' and `sumi
//!    cluster status`).
//!
//! The node's other partitions are consumed once the copies are done (the consumer
//! takes all its partitions at once): they lag meanwhile, as after a restart.

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use parking_lot::Mutex;
use sumi_cluster::consumer::{read_offsets, write_offsets};
use sumi_cluster::log_gaps::{clear_gap, read_gaps};
use sumi_cluster::{ClusterConfig, StorageConsumer};
use sumi_http::handoff::{PartitionStates, Phase};
use sumi_store::transfer::DumpReader;
use sumi_store::{Store, StoreError};
use tracing::{info, warn};

/// The consumer, once it runs (it starts late on a node that copies partitions first).
pub(crate) type ConsumerSlot = Arc<Mutex<Option<StorageConsumer>>>;

/// The owned partitions to copy before consuming:
///
/// - with `copy_from_peers`, those without a consumed offset (a node added, a
///   partition moved here);
/// - those this node has a **gap** in, when a peer stores them: its consumed offset (0
///   where none) below the partition's log start in `log_starts` (Kafka's retention
///   removed records it never applied: it was down for longer than the topic's
///   retention), or listed in the gaps file (its consumer skipped such records while
///   running, [`sumi_cluster::log_gaps`]). Its own series of such a partition are
///   dropped and its offset forgotten first, so the partition is copied whole, like a
///   new replica's; a crash before the copy is complete finds the partition without
///   an offset (or still listed) at the next start and copies it again.
///
/// A gap in a partition no peer stores cannot be filled: it is logged, and the
/// partition consumed from the log's start.
pub(crate) fn partitions_to_copy(
    cc: &ClusterConfig,
    data_dir: &std::path::Path,
    store: &Store,
    log_starts: Option<&[i64]>,
) -> Result<Vec<u32>> {
    let dir = data_dir.join("cluster");
    let offsets_path = dir.join("offsets");
    let gaps_path = dir.join("gaps");
    let mut saved = read_offsets(&offsets_path, &cc.topic)?;
    let listed = read_gaps(&gaps_path, &cc.topic)?;
    let mut to_copy = Vec::new();
    for &p in &cc.owned_partitions {
        let offset = saved.get(&p).copied();
        let start = log_starts.and_then(|s| s.get(p as usize)).copied();
        let behind = start.is_some_and(|s| s > offset.unwrap_or(0));
        if !behind && !listed.contains(&p) {
            if offset.is_none() && cc.copy_from_peers {
                to_copy.push(p);
            }
            continue;
        }
        let has_peer = cc
            .peers
            .iter()
            .any(|n| n.node_id != cc.node_id && n.partitions.contains(&p));
        if !has_peer {
            tracing::error!(
                partition = p,
                offset,
                log_start = start,
                "Kafka's retention removed records of this partition that this node never \
                 applied, and no peer stores the partition to copy it from: its points \
                 from those records are lost here; consuming from the log's start"
            );
            clear_gap(&gaps_path, &cc.topic, p)?;
            continue;
        }
        if offset.is_some() {
            warn!(
                partition = p,
                offset,
                log_start = start,
                "this node lacks records of the partition that Kafka's retention removed \
                 (down or behind for longer than the topic's retention): dropping its \
                 series of the partition and copying it from a replica"
            );
            drop_partition(store, p, cc.partitions)?;
            saved.remove(&p);
            write_offsets(&offsets_path, &cc.topic, &saved)
                .with_context(|| format!("writing {}", offsets_path.display()))?;
        }
        to_copy.push(p);
    }
    Ok(to_copy)
}

/// Drops this node's series of partition `p` (before a copy of it, which brings the
/// replica's whole partition): what an earlier, interrupted copy loaded, or what the
/// node held of `p` before (a partition moved back to it, a gap), could otherwise keep
/// series the replica no longer has — deleted meanwhile. The number dropped.
fn drop_partition(store: &Store, p: u32, partitions: u32) -> Result<usize> {
    let names = store.series_names_where(|n| {
        sumi_cluster::partition_for(sumi_model::placement_name(n), partitions) == p
    });
    if names.is_empty() {
        return Ok(0);
    }
    let named: Vec<&str> = names.iter().map(String::as_str).collect();
    let n = store
        .delete_series_named(&named)
        .context("dropping the series of a partition to copy")?;
    store.sync_wal().context("syncing the WAL after the drop")?;
    info!(
        partition = p,
        series = n,
        "dropped this node's series of the partition before copying it"
    );
    Ok(n)
}

/// What the joining thread works with.
pub(crate) struct Join {
    pub(crate) cc: ClusterConfig,
    pub(crate) store: Arc<Store>,
    pub(crate) data_dir: PathBuf,
    pub(crate) states: Arc<PartitionStates>,
    pub(crate) consumer: ConsumerSlot,
    pub(crate) partitions: Vec<u32>,
    pub(crate) stop: Arc<AtomicBool>,
    /// The `Authorization` sent with the dump request when `[auth]` guards reads (the
    /// peers have the same `[auth]`).
    pub(crate) auth: Option<String>,
    /// What the consumer it starts is hooked to (anomaly detectors, GrowthForecast).
    pub(crate) hooks: sumi_cluster::ConsumerHooks,
}

impl Join {
    /// Copies, starts the consumer, waits for the catch-up; returns when every
    /// partition counts (or the node stops).
    pub(crate) fn run(self) {
        let t0 = Instant::now();
        for &p in &self.partitions {
            self.states.set_joining(p, Phase::Copying);
        }
        for &p in &self.partitions {
            if !self.copy_until_done(p) {
                return;
            }
        }
        let consumer = loop {
            match StorageConsumer::start(
                &self.cc,
                self.store.clone(),
                &self.data_dir,
                self.hooks.clone(),
            ) {
                Ok(c) => break c,
                Err(e) => warn!("starting the consumer after the copies: {e:#}"),
            }
            if self.pause(Duration::from_secs(1)) {
                return;
            }
        };
        let stats = consumer.stats();
        *self.consumer.lock() = Some(consumer);
        let ends = loop {
            match sumi_cluster::log_end_offsets(&self.cc, Duration::from_secs(5)) {
                Ok(e) => break e,
                Err(e) => warn!("reading the log end to catch up to: {e:#}"),
            }
            if self.pause(Duration::from_secs(1)) {
                return;
            }
        };
        let mut left: BTreeMap<u32, i64> = BTreeMap::new();
        for &p in &self.partitions {
            let target = ends.get(p as usize).copied().unwrap_or(0);
            self.states.set_joining(p, Phase::CatchingUp { target });
            left.insert(p, target);
        }
        info!(targets = ?left, secs = t0.elapsed().as_secs_f64(), "partitions copied; catching up with the log");
        while !left.is_empty() {
            left.retain(|&p, &mut target| {
                let next = stats
                    .partitions
                    .get(&p)
                    .map_or(0, |pr| pr.next.load(Ordering::Relaxed));
                if next >= target {
                    self.states.set_ready(p);
                    info!(
                        partition = p,
                        offset = next,
                        secs = t0.elapsed().as_secs_f64(),
                        "partition caught up: this node is now counted as its replica"
                    );
                    false
                } else {
                    true
                }
            });
            if !left.is_empty() && self.pause(Duration::from_millis(100)) {
                return;
            }
        }
    }

    /// Sleeps; true when the node is stopping.
    fn pause(&self, d: Duration) -> bool {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if self.stop.load(Ordering::Relaxed) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stop.load(Ordering::Relaxed)
    }

    /// Copies partition `p` from the first peer that gives a whole dump; false when
    /// the node stops first.
    fn copy_until_done(&self, p: u32) -> bool {
        let sources: Vec<&sumi_cluster::PeerConfig> = self
            .cc
            .peers
            .iter()
            .filter(|n| n.node_id != self.cc.node_id && n.partitions.contains(&p))
            .collect();
        if sources.is_empty() {
            warn!(partition = p, "no peer stores this partition: it cannot be copied; consuming it from the log's beginning");
            return true;
        }
        loop {
            for peer in &sources {
                if self.stop.load(Ordering::Relaxed) {
                    return false;
                }
                match self.copy_from(p, &peer.http) {
                    Ok(()) => return true,
                    Err(e) => warn!(
                        partition = p,
                        node = peer.node_id,
                        peer = %peer.http,
                        "copying the partition failed; trying the next replica: {e:#}"
                    ),
                }
            }
            if self.pause(Duration::from_secs(1)) {
                return false;
            }
        }
    }

    fn copy_from(&self, p: u32, http: &str) -> Result<()> {
        let t0 = Instant::now();
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(2))
            .timeout_read(Duration::from_secs(60))
            .build();
        let mut req = agent
            .post(&format!("http://{http}/internal/v0/partition_dump"))
            .set("Content-Type", "application/json");
        if let Some(a) = &self.auth {
            req = req.set("Authorization", a);
        }
        let resp = req
            .send_string(&format!("{{\"partition\":{p}}}"))
            .map_err(|e| match e {
                ureq::Error::Status(code, r) => {
                    anyhow::anyhow!("status {code}: {}", r.into_string().unwrap_or_default())
                }
                e => anyhow::anyhow!("{e}"),
            })?;
        let bytes = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = Counted {
            inner: resp.into_reader(),
            bytes: bytes.clone(),
        };
        let mut dump = DumpReader::new(BufReader::with_capacity(1 << 20, counted))?;
        if dump.partition != p {
            bail!("asked for partition {p}, got a dump of {}", dump.partition);
        }
        drop_partition(&self.store, p, self.cc.partitions)?;
        let (mut series, mut points) = (0u64, 0u64);
        while let Some(s) = dump.next_series()? {
            loop {
                match self.store.load_direct(&s) {
                    Ok(n) => {
                        points += n;
                        break;
                    }
                    Err(StoreError::Backpressure(_)) => {
                        if self.pause(Duration::from_millis(50)) {
                            bail!("stopping");
                        }
                    }
                    Err(e) => return Err(e).with_context(|| format!("loading {:?}", s.name)),
                }
            }
            series += 1;
            if self.stop.load(Ordering::Relaxed) {
                bail!("stopping");
            }
        }
        self.save_offset(p, dump.offset)?;
        info!(
            partition = p,
            peer = http,
            offset = dump.offset,
            series,
            points,
            bytes = bytes.load(Ordering::Relaxed),
            secs = t0.elapsed().as_secs_f64(),
            "partition copied from a replica"
        );
        Ok(())
    }

    /// After the WAL holds what was loaded: the partition's offset into the offsets
    /// file.
    fn save_offset(&self, p: u32, offset: i64) -> Result<()> {
        self.store
            .sync_wal()
            .context("syncing the WAL after a copy")?;
        let path = self.data_dir.join("cluster").join("offsets");
        std::fs::create_dir_all(self.data_dir.join("cluster"))?;
        let mut saved = read_offsets(&path, &self.cc.topic)?;
        saved.insert(p, offset);
        write_offsets(&path, &self.cc.topic, &saved)
            .with_context(|| format!("writing {}", path.display()))?;
        // a partition copied again for a gap is whole now
        clear_gap(
            &self.data_dir.join("cluster").join("gaps"),
            &self.cc.topic,
            p,
        )
    }
}

/// A reader that counts the bytes it gave.
struct Counted<R> {
    inner: R,
    bytes: Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// A storage node's partitions it already had, after a start: `replaying` (not
/// counted as their replica, asked only as the last resort) until the consumer reaches
/// the log end read at start (docs/cluster.md, "Reads"). A node whose offsets are at
/// the log end is counted at once; one that cannot read the log end stays replaying
/// until it can.
pub(crate) struct Replay {
    pub(crate) cc: ClusterConfig,
    pub(crate) states: Arc<PartitionStates>,
    pub(crate) consumer: ConsumerSlot,
    pub(crate) partitions: Vec<u32>,
    pub(crate) stop: Arc<AtomicBool>,
}

impl Replay {
    /// Marks the partitions replaying; call before the node answers HTTP.
    pub(crate) fn mark(&self) {
        for &p in &self.partitions {
            self.states.set_joining(p, Phase::Replaying { target: -1 });
        }
    }

    pub(crate) fn run(self) {
        let t0 = Instant::now();
        let ends = loop {
            match sumi_cluster::log_end_offsets(&self.cc, Duration::from_secs(5)) {
                Ok(e) => break e,
                Err(e) => warn!("reading the log end to replay up to: {e:#}"),
            }
            if pause(&self.stop, Duration::from_secs(1)) {
                return;
            }
        };
        let mut left: BTreeMap<u32, i64> = BTreeMap::new();
        for &p in &self.partitions {
            let target = ends.get(p as usize).copied().unwrap_or(0);
            self.states.set_joining(p, Phase::Replaying { target });
            left.insert(p, target);
        }
        while !left.is_empty() {
            let next_of = |p: u32| {
                let g = self.consumer.lock();
                g.as_ref().and_then(|c| {
                    c.stats()
                        .partitions
                        .get(&p)
                        .map(|pr| pr.next.load(Ordering::Relaxed))
                })
            };
            left.retain(|&p, &mut target| match next_of(p) {
                Some(next) if next >= target => {
                    self.states.set_ready(p);
                    info!(
                        partition = p,
                        offset = next,
                        target,
                        secs = t0.elapsed().as_secs_f64(),
                        "partition replayed up to the log end seen at start: this node is counted as its replica again"
                    );
                    false
                }
                _ => true,
            });
            if !left.is_empty() && pause(&self.stop, Duration::from_millis(100)) {
                return;
            }
        }
    }
}

/// Sleeps; true when the node is stopping.
fn pause(stop: &AtomicBool, d: Duration) -> bool {
    let until = Instant::now() + d;
    while Instant::now() < until {
        if stop.load(Ordering::Relaxed) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.load(Ordering::Relaxed)
}
