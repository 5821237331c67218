//! The `[cluster]` section of `sumi.toml`.

use serde::Deserialize;

/// What this node does in the cluster.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Takes points in on every protocol and produces them to the log; stores nothing.
    Ingest,
    /// Consumes its owned partitions into its engine (and, like an ingest node, sends
    /// what it is sent to the log).
    Storage,
}

/// The `[cluster]` section as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// Kafka's bootstrap servers, `host:port[,host:port...]`.
    pub brokers: String,
    /// The topic every point goes to.
    #[serde(default = "default_topic")]
    pub topic: String,
    /// Partitions of the topic: the unit of sharding. Fixed for a topic's life (the
    /// hash of a series name modulo this count is its partition).
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    /// Replicas of each partition in Kafka when this node creates the topic; 0 is
    /// min(3, brokers).
    #[serde(default)]
    pub replication_factor: u32,
    pub role: Role,
    /// This node's id, unique in the cluster (Kafka client id, logs).
    #[serde(default)]
    pub node_id: u32,
    /// Storage role: the partitions this node consumes and stores.
    #[serde(default)]
    pub owned_partitions: Vec<u32>,
    /// How long the producer gathers records before sending them (ms).
    #[serde(default = "default_linger_ms")]
    pub linger_ms: u32,
    /// Points of one carbon (plaintext or pickle) connection handed to Kafka in one
    /// append, at most: an append makes one produce request per partition it touches
    /// (librdkafka sends one partition a request), and the broker's CPU follows its
    /// requests. A connection that has less waiting sends what it has.
    #[serde(default = "default_ingest_batch_points")]
    pub ingest_batch_points: usize,
    /// The producer's compression of record batches: `none`, `lz4`, `snappy` or `gzip`
    /// (not `zstd`: the bundled librdkafka is built without it) (see docs/cluster.md for what each cost when measured).
    #[serde(default = "default_compression")]
    pub compression: String,
    /// The log record version an ingest node writes: 2 (the default, front-coded names,
    /// short values; about a third of version 1's bytes) or 1 (what nodes before
    /// version 2 write and read). Storage nodes read both whatever this says; write 1
    /// while storage nodes of an older release still consume the topic.
    #[serde(default = "default_record_version")]
    pub record_version: u8,
    /// librdkafka properties set on the producer after sumi's own (which they
    /// override), for tuning without a release, e.g. `{ "linger.ms" = "20" }`.
    #[serde(default)]
    pub librdkafka_producer: std::collections::BTreeMap<String, String>,
    /// librdkafka properties set on a storage node's consumer after sumi's own, e.g.
    /// `{ "fetch.min.bytes" = "65536" }`.
    #[serde(default)]
    pub librdkafka_consumer: std::collections::BTreeMap<String, String>,
    /// How long an append waits for Kafka's acknowledgement before the sink answers
    /// "unavailable" (the client retries; nothing acknowledged is lost) (ms).
    #[serde(default = "default_append_timeout_ms")]
    pub append_timeout_ms: u32,
    /// The on-disk spill (`<data_dir>/cluster/spill`) for appends Kafka does not
    /// acknowledge within `append_timeout_ms`: at most this many bytes, delivered in
    /// order when Kafka is back; 0: no spill (the client is held back until Kafka
    /// takes the points).
    #[serde(default = "default_spill_max_bytes")]
    pub spill_max_bytes: u64,
    /// Every storage node of the cluster (this one included when it is one): where it
    /// answers HTTP and which partitions it stores. With peers, reads on this node
    /// (`/render`, `/metrics/find`, `/tags/*`, ...) are answered for the whole cluster
    /// by asking one replica of each partition; without, this node's store only.
    #[serde(default)]
    pub peers: Vec<PeerConfig>,
    /// How long a read waits for one peer before asking another replica (ms).
    #[serde(default = "default_read_timeout_ms")]
    pub read_timeout_ms: u32,
    /// Storage role: an owned partition this node has no consumed offset for (a node
    /// added, or a partition moved here) is first copied from a peer that stores it
    /// (its series as they are, with the log offset they cover), then consumed from
    /// that offset; until it has caught up with the log, this node does not count as
    /// its replica. Off: such a partition is consumed from the log's beginning —
    /// unless Kafka's retention has removed records of it, then it is copied all the
    /// same (`sumi_cluster::log_gaps`).
    #[serde(default)]
    pub copy_from_peers: bool,
    /// Storage role: at most this many points a second applied from the log (0: no
    /// cap), so that a replay after a restart leaves CPU to queries; the node is then
    /// behind the log for longer (and asked for reads only as the last resort
    /// meanwhile, see docs/cluster.md, "Reads").
    #[serde(default)]
    pub consume_max_points_per_sec: u64,
    /// Storage role: a partition this node's consumer is more than this many records
    /// behind with (against the log end it last read, every second) is treated like
    /// one it is replaying after a restart: asked for reads only when no other replica
    /// is left (0: never, only the replay after a start counts).
    #[serde(default)]
    pub read_max_lag_records: u64,
}

/// A storage node as the others see it (`[[cluster.peers]]`).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    pub node_id: u32,
    /// `host:port` of its HTTP listener.
    pub http: String,
    /// The partitions it stores (its `owned_partitions`).
    pub partitions: Vec<u32>,
}

fn default_topic() -> String {
    "sumi-points".to_string()
}
fn default_partitions() -> u32 {
    8
}
fn default_linger_ms() -> u32 {
    5
}
/// 65,536: eight times a single node's batch (docs/cluster.md, "Larger produce
/// requests").
fn default_ingest_batch_points() -> usize {
    65_536
}
/// None: on the loopback link measured, lz4 cost more CPU (the ingest node
/// compressing, Kafka and every consumer decompressing) than the bytes it saved
/// (docs/cluster.md, "Throughput").
fn default_compression() -> String {
    "none".to_string()
}
fn default_record_version() -> u8 {
    crate::record::RECORD_VERSION
}
fn default_append_timeout_ms() -> u32 {
    10_000
}
/// 1 GiB: at the 25 bytes or so a point takes in a record, tens of millions of points,
/// minutes of a busy node's load while Kafka is away.
fn default_spill_max_bytes() -> u64 {
    1 << 30
}
/// Long enough for a big fetch from a loaded peer, short enough that a hung peer does
/// not hold a dashboard for long before its replica is asked.
fn default_read_timeout_ms() -> u32 {
    5_000
}

impl ClusterConfig {
    /// Partitions no peer stores (reads of them are always partial); empty without
    /// peers.
    pub fn unplaced_partitions(&self) -> Vec<u32> {
        if self.peers.is_empty() {
            return Vec::new();
        }
        (0..self.partitions)
            .filter(|p| !self.peers.iter().any(|n| n.partitions.contains(p)))
            .collect()
    }

    /// Checks what serde cannot: counts, owned partitions in range.
    pub fn validate(&self) -> Result<(), String> {
        if self.brokers.trim().is_empty() {
            return Err("cluster.brokers is empty".into());
        }
        if self.topic.is_empty() {
            return Err("cluster.topic is empty".into());
        }
        // zstd is not among them: the bundled librdkafka is built without libzstd, and a
        // producer asked for it fails to start ("libzstd not available at build time")
        if !["none", "lz4", "snappy", "gzip"].contains(&self.compression.as_str()) {
            return Err(format!(
                "cluster.compression is {:?}: it must be none, lz4, snappy or gzip (this build's librdkafka has no zstd)",
                self.compression
            ));
        }
        if !matches!(self.record_version, 1 | 2) {
            return Err(format!(
                "cluster.record_version is {}: it must be 1 or 2",
                self.record_version
            ));
        }
        if self.ingest_batch_points == 0 || self.ingest_batch_points > 1 << 20 {
            return Err(format!(
                "cluster.ingest_batch_points is {}: it must be 1..=1048576",
                self.ingest_batch_points
            ));
        }
        if self.partitions == 0 || self.partitions > 100_000 {
            return Err(format!(
                "cluster.partitions is {}: it must be 1..=100000",
                self.partitions
            ));
        }
        for &p in &self.owned_partitions {
            if p >= self.partitions {
                return Err(format!(
                    "cluster.owned_partitions names {p}, but the topic has partitions 0..{}",
                    self.partitions
                ));
            }
        }
        let mut ids = std::collections::BTreeSet::new();
        for peer in &self.peers {
            if !ids.insert(peer.node_id) {
                return Err(format!("cluster.peers names node {} twice", peer.node_id));
            }
            if peer.http.trim().is_empty() {
                return Err(format!(
                    "cluster.peers: node {} has no http address",
                    peer.node_id
                ));
            }
            if let Some(p) = peer.partitions.iter().find(|&&p| p >= self.partitions) {
                return Err(format!(
                    "cluster.peers: node {} names partition {p}, but the topic has partitions 0..{}",
                    peer.node_id, self.partitions
                ));
            }
            if peer.node_id == self.node_id {
                let mut mine = self.owned_partitions.clone();
                let mut listed = peer.partitions.clone();
                mine.sort_unstable();
                listed.sort_unstable();
                if mine != listed {
                    return Err(format!(
                        "cluster.peers lists this node ({}) with partitions {listed:?}, but its owned_partitions are {mine:?}",
                        self.node_id
                    ));
                }
            }
        }
        if self.copy_from_peers && self.peers.is_empty() {
            return Err(
                "cluster.copy_from_peers needs [[cluster.peers]]: the nodes to copy from".into(),
            );
        }
        match self.role {
            Role::Storage if self.owned_partitions.is_empty() => {
                Err("cluster.role is \"storage\" but cluster.owned_partitions is empty".into())
            }
            Role::Ingest if !self.owned_partitions.is_empty() => Err(
                "cluster.owned_partitions is for role \"storage\"; an ingest node owns none".into(),
            ),
            _ => Ok(()),
        }
    }
}
