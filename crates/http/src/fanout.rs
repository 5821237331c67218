//! Reads for the whole cluster: a node of a sumi cluster (docs/cluster.md) answers
//! `/render`, `/metrics/find`, `/metrics/expand`, `/tags/*` and GrowthForecast's reads
//! for every series, wherever it is stored.
//!
//! Series are placed on partitions by a hash of their name, and each partition is
//! stored by the storage nodes that own it (its replicas). A read is answered by asking
//! **one live replica of each partition**, in parallel: the partitions are split among
//! the replicas (this node's own first, read from its store without HTTP; then peers
//! that have not failed lately, in the configured order), one request per peer. A peer
//! that fails (connection refused, timeout, an error status) is marked down for a
//! while, and its partitions are asked again of their next replica. Partitions without
//! a live replica are *missing*: the answer is built from the rest and says so
//! ([`PARTIAL_HEADER`], `sumi_cluster_read_partial_total`); it is never silently short.
//!
//! The Graphite functions run once, on the asking node, over the raw series the peers
//! fetched ([`ClusterSource`] is a [`SeriesSource`]): each series is stored on one
//! partition, so the merge is a union, and a peer answers a fetch exactly as the
//! asking node's own store would (whisper's archive choice, interval and step, from
//! the request's `now`). `sumSeries` over series spread across nodes is therefore the
//! same as on one node holding everything.
//!
//! The peers' endpoints, under `/internal/v0/` (POST, JSON body; classed as reads by
//! access control; they read the local store only and never fan out):
//!
//! | path | body | answer |
//! | --- | --- | --- |
//! | `find` | `{"query": glob, "partitions"}` | `[[path, is_leaf], ...]` |
//! | `fetch` | `{"paths": [...], "from", "until", "now"}` | [`encode_fetched`] (binary) |
//! | `tagged` | `{"exprs": [...], "partitions": [...]}` | names matching, in those partitions |
//! | `match` | `{"patterns": [...], "partitions": [...]}` | series matching the globs (as `/api/v1/series/delete` picks them), in those partitions |
//! | `tags` | `{"filter", "limit", "partitions"}` | tag names (`/tags`) |
//! | `tag_values` | `{"tag", "filter", "partitions"}` | `{value: count}` or `null` |
//! | `autocomplete` | `{"exprs", "tag", "prefix", "limit"}` | tags or values |
//! | `partition_dump` | `{"partition"}` | a partition's series ([`crate::handoff`]) |
//! | `gf_snapshot` (GET) | none | a consistent copy of `growthforecast.db` with its metadata log offset ([`crate::handoff`]) |
//! | `history` | `{"names": [...], "ends": {partition: offset}, "partitions"}` | each series' stored archives as `POST /api/v0/import` takes them ([`crate::rename`]) |
//!
//! A node asked for partitions it does not serve (not owned, or still joining: see
//! [`crate::handoff`]) answers `421`; the asker then asks the next replica of them
//! without taking the node for down. `partitions` is optional (an older asker).
//!
//! A node that owns a partition but is **behind the log** with it (replaying after a
//! restart, or catching up after a copy) answers `421` too, with
//! [`BEHIND_HEADER`](crate::handoff::BEHIND_HEADER): a read goes to a caught-up replica
//! when one is left. When none is, the behind one is asked again with
//! [`LAST_RESORT_HEADER`](crate::handoff::LAST_RESORT_HEADER) and answers; its
//! partitions are then *stale* (the answer may lack the newest points): the answer says
//! so like a partial one (`stale=` in [`PARTIAL_HEADER`],
//! `sumi_cluster_read_stale_total`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use sumi_model::glob::PathPattern;
use sumi_query::source::{FetchedRef, FetchedSeries, FindNode, SeriesSource, SourceError};
use sumi_store::{Store, TagExpr, TagOp, TagQueryError};

use crate::handoff::{self, is_last_resort, refuse_unless_served, PartitionStates};
use crate::source::{QueryLimits, StoreSource};
use crate::AppState;

/// The response header of a partial answer: `partitions=3,7`, the partitions no
/// replica answered for; `stale=2,5`, the partitions only a replica behind the log
/// answered for (their newest points may be missing); both: `partitions=3,7; stale=2,5`.
pub const PARTIAL_HEADER: &str = "x-sumi-partial";

thread_local! {
    /// Set on the thread of a request asked of a replica behind the log as the last
    /// resort (each request of [`Fanout::gather`] runs on its own thread).
    static LAST_RESORT: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The partitions an answer lacks, or has only from a replica behind the log.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Gaps {
    /// No replica answered for these.
    pub missing: BTreeSet<u32>,
    /// Only a replica behind the log answered for these.
    pub stale: BTreeSet<u32>,
}

impl Gaps {
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.stale.is_empty()
    }

    /// Adds another read's gaps (of the same request); a partition missing in one read
    /// and stale in another counts as missing.
    pub fn extend(&mut self, other: Gaps) {
        self.missing.extend(other.missing);
        self.stale.extend(other.stale);
        self.stale.retain(|p| !self.missing.contains(p));
    }
}

/// How long a peer that failed is asked only when no other replica is left.
const DOWN_FOR: Duration = Duration::from_secs(5);

/// A storage node as the others see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub node_id: u32,
    /// `host:port` of its HTTP listener.
    pub http: String,
    /// The partitions it stores.
    pub partitions: Vec<u32>,
}

/// Where the partitions are and how to ask for them (from `[cluster]`).
#[derive(Clone, Debug)]
pub struct FanoutOptions {
    /// Partitions of the topic.
    pub partitions: u32,
    /// Every storage node, this one included when it is one.
    pub peers: Vec<Peer>,
    /// This node's id: what it owns itself it reads from its own store.
    pub node_id: u32,
    /// How long one peer request may take before its partitions go to another replica.
    pub timeout: Duration,
    /// The partition of a series name (the cluster's placement hash).
    pub placement: fn(&str, u32) -> u32,
}

/// Counters of the fan-out, for `/metrics`.
#[derive(Debug, Default)]
pub struct FanoutStats {
    /// Requests to peers.
    pub peer_requests: AtomicU64,
    /// Peer requests that failed (refused, timed out, error status).
    pub peer_errors: AtomicU64,
    /// Partitions asked again of another replica after a failure.
    pub fallbacks: AtomicU64,
    /// Answers that were partial.
    pub partial_answers: AtomicU64,
    /// Partitions missing from those answers, summed.
    pub partial_partitions: AtomicU64,
    /// Answers with partitions only a replica behind the log answered for.
    pub stale_answers: AtomicU64,
    /// Those partitions, summed.
    pub stale_partitions: AtomicU64,
}

impl FanoutStats {
    /// Prometheus text.
    pub fn write_prometheus(&self, out: &mut String) {
        let rows: [(&str, &str, &AtomicU64); 7] = [
            (
                "sumi_cluster_read_peer_requests_total",
                "Read requests sent to other cluster nodes.",
                &self.peer_requests,
            ),
            (
                "sumi_cluster_read_peer_errors_total",
                "Read requests to other cluster nodes that failed (refused, timed out, error status).",
                &self.peer_errors,
            ),
            (
                "sumi_cluster_read_fallbacks_total",
                "Partitions asked again of another replica after a failed request.",
                &self.fallbacks,
            ),
            (
                "sumi_cluster_read_partial_total",
                "Read answers that lacked partitions no live replica could serve.",
                &self.partial_answers,
            ),
            (
                "sumi_cluster_read_partial_partitions_total",
                "Partitions missing from partial answers, summed.",
                &self.partial_partitions,
            ),
            (
                "sumi_cluster_read_stale_total",
                "Read answers with partitions only a replica behind the log (replaying, catching up) answered for.",
                &self.stale_answers,
            ),
            (
                "sumi_cluster_read_stale_partitions_total",
                "Partitions of stale answers that only a replica behind the log answered for, summed.",
                &self.stale_partitions,
            ),
        ];
        for (name, help, v) in rows {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {}\n",
                v.load(Ordering::Relaxed)
            ));
        }
    }
}

/// Who answers for a set of partitions.
#[derive(Clone, Copy, Debug)]
enum Target<'a> {
    /// This node's store.
    Local,
    Remote(&'a Peer),
}

/// Why a peer did not answer.
#[derive(Debug)]
enum PeerError {
    /// The request was wrong (a 4xx): asking another replica would not help.
    Client(String),
    /// Down, slow or broken: ask another replica.
    Down(String),
    /// Not a replica of what it was asked (421): ask another, it is not down.
    Elsewhere(String),
    /// A replica, but behind the log (421 with `BEHIND_HEADER`): ask another, and this
    /// one only when no other is left.
    Behind(String),
}

/// A cluster answer with the partitions no replica (or only one behind the log)
/// answered for (empty: complete).
pub type Answer<T> = Result<(T, Gaps), SourceError>;

/// A tag's values with their series counts, sorted by value.
pub type ValueCounts = Vec<(String, u64)>;

/// What one target answers for the partitions given to it.
type PeerCall<'c, T> = dyn Fn(Target<'_>, &[u32]) -> Result<T, PeerError> + Sync + 'c;

/// One request of a round: who was asked (`None`: this node), as the last resort or
/// not, for what, the answer.
type Asked<T> = ((Option<usize>, bool), Vec<u32>, Result<T, PeerError>);

/// What [`Fanout::gather`] collected, and the partitions nobody (or only a replica
/// behind the log) answered for.
struct Gathered<T> {
    parts: Vec<T>,
    missing: Gaps,
}

/// The cluster's partitions and their replicas, and the client that asks them.
pub struct Fanout {
    opts: FanoutOptions,
    /// Per partition, the indexes in `opts.peers` of its replicas.
    replicas: Vec<Vec<usize>>,
    agent: ureq::Agent,
    /// When each peer last failed.
    failed_at: Mutex<HashMap<usize, Instant>>,
    store: Arc<Store>,
    pub stats: Arc<FanoutStats>,
    /// This node's partitions that are still joining (not counted as a replica).
    states: Arc<PartitionStates>,
    /// This node's anomaly detectors (a storage node with `[[anomaly]]` rules), for
    /// the anomaly reads it answers for its own partitions.
    pub anomalies: Option<Arc<dyn crate::anomaly_api::AnomalyFeed>>,
}

impl Fanout {
    /// The fan-out of a node whose own partitions are in `store`.
    pub fn new(opts: FanoutOptions, store: Arc<Store>) -> Fanout {
        let mut replicas = vec![Vec::new(); opts.partitions as usize];
        for (i, peer) in opts.peers.iter().enumerate() {
            for &p in &peer.partitions {
                if let Some(r) = replicas.get_mut(p as usize) {
                    r.push(i);
                }
            }
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(opts.timeout.min(Duration::from_secs(2)))
            .timeout(opts.timeout)
            .max_idle_connections_per_host(16)
            .build();
        Fanout {
            opts,
            replicas,
            agent,
            failed_at: Mutex::new(HashMap::new()),
            store,
            stats: Arc::new(FanoutStats::default()),
            states: Arc::new(PartitionStates::default()),
            anomalies: None,
        }
    }

    /// This node's joining partitions and its consumer's progress.
    pub fn states(&self) -> &Arc<PartitionStates> {
        &self.states
    }

    /// Whether this node counts as a replica of `p`: it owns it (in the configuration)
    /// and it is not joining.
    pub fn serves(&self, p: u32) -> bool {
        self.owns(p) && !self.states.is_joining(p) && !self.states.is_lagging(p)
    }

    /// Whether this node owns `p` in the configuration (counted as its replica or not).
    pub fn owns(&self, p: u32) -> bool {
        self.replicas.get(p as usize).is_some_and(|r| {
            r.iter()
                .any(|&i| self.opts.peers[i].node_id == self.opts.node_id)
        })
    }

    /// The partition of a series name. An anomaly score series (`_anomaly.<name>`)
    /// is where its series is: the storage nodes of `<name>`'s partition score its
    /// points and store the scores (reads, partition copies and moves follow it).
    pub fn partition_of(&self, name: &str) -> u32 {
        (self.opts.placement)(sumi_model::placement_name(name), self.opts.partitions)
    }

    fn all_partitions(&self) -> BTreeSet<u32> {
        (0..self.opts.partitions).collect()
    }

    /// Records a partial or stale answer; the header value saying which partitions
    /// it lacks or has only from a replica behind the log.
    pub fn note_partial(&self, gaps: &Gaps) -> Option<String> {
        if gaps.is_empty() {
            return None;
        }
        let list = |s: &BTreeSet<u32>| s.iter().map(u32::to_string).collect::<Vec<_>>().join(",");
        let mut parts = Vec::new();
        if !gaps.missing.is_empty() {
            self.stats.partial_answers.fetch_add(1, Ordering::Relaxed);
            self.stats
                .partial_partitions
                .fetch_add(gaps.missing.len() as u64, Ordering::Relaxed);
            parts.push(format!("partitions={}", list(&gaps.missing)));
        }
        if !gaps.stale.is_empty() {
            self.stats.stale_answers.fetch_add(1, Ordering::Relaxed);
            self.stats
                .stale_partitions
                .fetch_add(gaps.stale.len() as u64, Ordering::Relaxed);
            parts.push(format!("stale={}", list(&gaps.stale)));
        }
        Some(parts.join("; "))
    }

    /// Splits `wanted` among live replicas, asks them in parallel, and asks the next
    /// replica of whatever a failed peer was to answer, until every partition is
    /// answered or has no replica left. A partition whose only replicas left are
    /// behind the log is asked of one of them as the last resort, once, and is stale.
    /// `call` answers for one target and the partitions given to it.
    fn gather<T: Send>(
        &self,
        wanted: BTreeSet<u32>,
        call: &PeerCall<'_, T>,
    ) -> Result<Gathered<T>, SourceError> {
        let mut remaining = wanted;
        let mut failed: BTreeSet<usize> = BTreeSet::new();
        // peers that said they are behind the log with what they were asked
        let mut behind: BTreeSet<usize> = BTreeSet::new();
        // partitions asked of a replica behind the log
        let mut last_tried: BTreeSet<u32> = BTreeSet::new();
        let mut missing = BTreeSet::new();
        let mut stale = BTreeSet::new();
        let mut parts = Vec::new();
        let mut round = 0;
        while !remaining.is_empty() {
            // None is this node's store; true: asked as the last resort
            let mut plan: BTreeMap<(Option<usize>, bool), Vec<u32>> = BTreeMap::new();
            for &p in &remaining {
                if let Some(t) = self.choose(p, &failed) {
                    plan.entry((t, false)).or_default().push(p);
                    continue;
                }
                match self.choose_behind(p, &behind) {
                    Some(t) if last_tried.insert(p) => plan.entry((t, true)).or_default().push(p),
                    _ => {
                        missing.insert(p);
                    }
                }
            }
            if round > 0 {
                let again: usize = plan.values().map(Vec::len).sum();
                self.stats
                    .fallbacks
                    .fetch_add(again as u64, Ordering::Relaxed);
            }
            round += 1;
            remaining.retain(|p| !missing.contains(p));
            if plan.is_empty() {
                break;
            }
            let results: Vec<Asked<T>> = std::thread::scope(|s| {
                let handles: Vec<_> = plan
                    .into_iter()
                    .map(|((who, last), ps)| {
                        s.spawn(move || {
                            LAST_RESORT.with(|c| c.set(last));
                            let target = match who {
                                None => Target::Local,
                                Some(i) => Target::Remote(&self.opts.peers[i]),
                            };
                            if who.is_some() {
                                self.stats.peer_requests.fetch_add(1, Ordering::Relaxed);
                            }
                            let r = call(target, &ps);
                            ((who, last), ps, r)
                        })
                    })
                    .collect();
                handles.into_iter().filter_map(|h| h.join().ok()).collect()
            });
            for ((who, last), ps, r) in results {
                match r {
                    Ok(t) => {
                        parts.push(t);
                        for p in ps {
                            remaining.remove(&p);
                            if last {
                                stale.insert(p);
                            }
                        }
                    }
                    Err(PeerError::Behind(msg)) => {
                        let Some(i) = who else {
                            return Err(SourceError::Storage(msg));
                        };
                        let peer = &self.opts.peers[i];
                        tracing::debug!(node = peer.node_id, error = %msg, "cluster read: peer is behind the log with these partitions; asking another");
                        failed.insert(i);
                        behind.insert(i);
                    }
                    Err(PeerError::Client(msg)) => return Err(SourceError::Invalid(msg)),
                    Err(PeerError::Elsewhere(msg)) => {
                        let Some(i) = who else {
                            return Err(SourceError::Storage(msg));
                        };
                        let peer = &self.opts.peers[i];
                        tracing::debug!(node = peer.node_id, error = %msg, "cluster read: peer is not a replica of these partitions; asking another");
                        failed.insert(i);
                    }
                    Err(PeerError::Down(msg)) => {
                        let Some(i) = who else {
                            return Err(SourceError::Storage(msg));
                        };
                        self.stats.peer_errors.fetch_add(1, Ordering::Relaxed);
                        let peer = &self.opts.peers[i];
                        tracing::warn!(node = peer.node_id, peer = %peer.http, error = %msg, "cluster read: peer failed; asking another replica");
                        self.failed_at.lock().insert(i, Instant::now());
                        failed.insert(i);
                    }
                }
            }
        }
        Ok(Gathered {
            parts,
            missing: Gaps { missing, stale },
        })
    }

    /// A replica of `p` behind the log, to ask as the last resort: this node when it
    /// owns `p` and is only behind with it, else a peer that said it is behind.
    fn choose_behind(&self, p: u32, behind: &BTreeSet<usize>) -> Option<Option<usize>> {
        let reps = self.replicas.get(p as usize)?;
        if self.owns(p) && self.states.is_behind_only(p) {
            return Some(None);
        }
        reps.iter().find(|i| behind.contains(i)).map(|&i| Some(i))
    }

    /// The replica to ask for partition `p`: this node when it serves `p`, then peers
    /// that have not failed lately, then the others; never one in `failed`, never
    /// this node while `p` is joining here.
    fn choose(&self, p: u32, failed: &BTreeSet<usize>) -> Option<Option<usize>> {
        let reps = self.replicas.get(p as usize)?;
        if self.serves(p) {
            return Some(None);
        }
        let me = self.opts.node_id;
        let now = Instant::now();
        let recent = self.failed_at.lock();
        let is_down = |i: &usize| {
            recent
                .get(i)
                .is_some_and(|t| now.duration_since(*t) < DOWN_FOR)
        };
        let live = || {
            reps.iter()
                .filter(|i| !failed.contains(i) && self.opts.peers[**i].node_id != me)
        };
        live()
            .find(|i| !is_down(i))
            .or_else(|| live().next())
            .map(|&i| Some(i))
    }

    /// POSTs `body` as JSON to a peer's internal endpoint; the answer's bytes.
    fn post(
        &self,
        peer: &Peer,
        endpoint: &str,
        body: &impl Serialize,
        auth: Option<&str>,
    ) -> Result<Vec<u8>, PeerError> {
        let url = format!("http://{}/internal/v0/{endpoint}", peer.http);
        let mut req = self.agent.post(&url);
        if let Some(a) = auth {
            req = req.set("Authorization", a);
        }
        if LAST_RESORT.with(|c| c.get()) {
            req = req.set(crate::handoff::LAST_RESORT_HEADER, "1");
        }
        let json = serde_json::to_string(body).map_err(|e| PeerError::Down(e.to_string()))?;
        match req
            .set("Content-Type", "application/json")
            .send_string(&json)
        {
            Ok(resp) => {
                let mut out = Vec::new();
                std::io::Read::read_to_end(&mut resp.into_reader(), &mut out)
                    .map_err(|e| PeerError::Down(format!("{url}: reading the answer: {e}")))?;
                Ok(out)
            }
            Err(ureq::Error::Status(421, resp)) => {
                let behind = resp.header(crate::handoff::BEHIND_HEADER).is_some();
                let msg = format!("{url}: {}", resp.into_string().unwrap_or_default());
                Err(if behind {
                    PeerError::Behind(msg)
                } else {
                    PeerError::Elsewhere(msg)
                })
            }
            Err(ureq::Error::Status(code, resp))
                if (400..500).contains(&code) && code != 401 && code != 403 && code != 429 =>
            {
                Err(PeerError::Client(resp.into_string().unwrap_or_default()))
            }
            Err(ureq::Error::Status(code, resp)) => Err(PeerError::Down(format!(
                "{url}: status {code}: {}",
                resp.into_string().unwrap_or_default()
            ))),
            Err(e) => Err(PeerError::Down(format!("{url}: {e}"))),
        }
    }

    fn post_json<R: for<'de> Deserialize<'de>>(
        &self,
        peer: &Peer,
        endpoint: &str,
        body: &impl Serialize,
        auth: Option<&str>,
    ) -> Result<R, PeerError> {
        let bytes = self.post(peer, endpoint, body, auth)?;
        serde_json::from_slice(&bytes)
            .map_err(|e| PeerError::Down(format!("{}: bad answer to {endpoint}: {e}", peer.http)))
    }

    /// `/metrics/find` over the cluster: the union of what every partition's replica
    /// finds, sorted by path, a path that is both leaf and branch once per kind, leaf
    /// first.
    pub fn find(&self, pattern: &str, auth: Option<&str>) -> Answer<Vec<FindNode>> {
        self.find_in(pattern, self.all_partitions(), auth)
    }

    /// [`find`](Self::find), complete for the series of `wanted` (a replica asked
    /// answers with everything it stores, so the answer may hold more).
    fn find_in(
        &self,
        pattern: &str,
        wanted: BTreeSet<u32>,
        auth: Option<&str>,
    ) -> Answer<Vec<FindNode>> {
        let g = self.gather(wanted, &|t, ps| match t {
            Target::Local => Ok(local_find(&self.store, pattern)),
            Target::Remote(peer) => self
                .post_json::<Vec<(String, bool)>>(
                    peer,
                    "find",
                    &FindReq {
                        query: pattern.to_string(),
                        partitions: Some(ps.to_vec()),
                    },
                    auth,
                )
                .map(|v| {
                    v.into_iter()
                        .map(|(path, is_leaf)| FindNode { path, is_leaf })
                        .collect()
                }),
        })?;
        let mut all: BTreeSet<(String, bool)> = BTreeSet::new();
        for nodes in g.parts {
            all.extend(nodes.into_iter().map(|n| (n.path, !n.is_leaf)));
        }
        // (path, !is_leaf) sorts each path's leaf before its branch
        let nodes = all
            .into_iter()
            .map(|(path, branch)| FindNode {
                path,
                is_leaf: !branch,
            })
            .collect();
        Ok((nodes, g.missing))
    }

    /// The raw series of `paths`, each from a replica of its partition.
    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
        limits: QueryLimits,
        auth: Option<&str>,
    ) -> Answer<Vec<FetchedSeries>> {
        let mut by_partition: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for p in paths {
            by_partition
                .entry(self.partition_of(p))
                .or_default()
                .push(p.as_str());
        }
        let wanted: BTreeSet<u32> = by_partition.keys().copied().collect();
        let g = self.gather(wanted, &|t, ps| {
            let mine: Vec<String> = ps
                .iter()
                .filter_map(|p| by_partition.get(p))
                .flatten()
                .map(|s| s.to_string())
                .collect();
            match t {
                Target::Local => StoreSource::with_limits(self.store.clone(), limits)
                    .fetch(&mine, from, until, now)
                    .map_err(|e| match e {
                        SourceError::TooLarge(m) | SourceError::Invalid(m) => PeerError::Client(m),
                        SourceError::Storage(m) => PeerError::Down(m),
                    }),
                Target::Remote(peer) => {
                    let req = FetchReq {
                        paths: mine,
                        from,
                        until,
                        now,
                    };
                    let bytes = self.post(peer, "fetch", &req, auth)?;
                    decode_fetched(&bytes).map_err(|e| {
                        PeerError::Down(format!("{}: bad fetch answer: {e}", peer.http))
                    })
                }
            }
        })?;
        Ok((g.parts.into_iter().flatten().collect(), g.missing))
    }

    /// The anomaly detectors' findings over the cluster, each partition's from one
    /// of its replicas (which score alike): the events overlapping `[from, until]`
    /// (none asked when `from > until`), newest start first, and when the detector of
    /// each of `names` gave its first score. With no events asked, only the
    /// partitions of `names` are read.
    pub fn anomalies(
        &self,
        from: i64,
        until: i64,
        names: &[String],
        auth: Option<&str>,
    ) -> Answer<AnomalyFindings> {
        let wanted = if from > until {
            names.iter().map(|n| self.partition_of(n)).collect()
        } else {
            self.all_partitions()
        };
        let g = self.gather(wanted, &|t, ps| {
            let req = AnomaliesReq {
                from,
                until,
                names: names.to_vec(),
                partitions: Some(ps.to_vec()),
            };
            match t {
                Target::Local => Ok(local_anomalies(self.anomalies.as_ref(), &req, Some(self))),
                Target::Remote(peer) => {
                    self.post_json::<AnomalyFindings>(peer, "anomalies", &req, auth)
                }
            }
        })?;
        let mut all = AnomalyFindings::default();
        for part in g.parts {
            all.events.extend(part.events);
            all.scored_from.extend(part.scored_from);
        }
        all.events
            .sort_by(|a, b| b.start.cmp(&a.start).then_with(|| a.series.cmp(&b.series)));
        all.scored_from.sort();
        all.scored_from.dedup();
        Ok((all, g.missing))
    }

    /// Tagged series matching every expression, sorted, over the cluster.
    pub fn find_tagged(&self, exprs: &[String], auth: Option<&str>) -> Answer<Vec<String>> {
        let parsed = parse_exprs(exprs).map_err(|e| SourceError::Invalid(e.to_string()))?;
        let g = self.gather(self.all_partitions(), &|t, ps| match t {
            Target::Local => local_tagged(&self.store, &parsed, Some(ps), Some(self))
                .map_err(|e| PeerError::Client(e.to_string())),
            Target::Remote(peer) => self.post_json::<Vec<String>>(
                peer,
                "tagged",
                &TaggedReq {
                    exprs: exprs.to_vec(),
                    partitions: Some(ps.to_vec()),
                },
                auth,
            ),
        })?;
        let all: BTreeSet<String> = g.parts.into_iter().flatten().collect();
        Ok((all.into_iter().collect(), g.missing))
    }

    /// The series matching any of `patterns` as `/api/v1/series/delete` picks them
    /// (Graphite globs, `a.**` a subtree, a tagged name exactly), sorted, over the
    /// cluster.
    pub fn match_series(&self, patterns: &[String], auth: Option<&str>) -> Answer<Vec<String>> {
        let g = self.gather(self.all_partitions(), &|t, ps| match t {
            Target::Local => Ok(local_match(&self.store, patterns, Some(ps), Some(self))),
            Target::Remote(peer) => self.post_json::<Vec<String>>(
                peer,
                "match",
                &MatchReq {
                    patterns: patterns.to_vec(),
                    partitions: Some(ps.to_vec()),
                },
                auth,
            ),
        })?;
        let all: BTreeSet<String> = g.parts.into_iter().flatten().collect();
        Ok((all.into_iter().collect(), g.missing))
    }

    /// The stored history of the series `names` (every archive, as `POST
    /// /api/v0/import` takes it), each read from one replica of its partition once
    /// that replica's consumer has passed `ends` (see [`crate::rename`]). A series
    /// unknown to its replica is left out.
    pub fn history(
        &self,
        names: &[String],
        ends: &BTreeMap<u32, i64>,
        auth: Option<&str>,
    ) -> Answer<Vec<crate::import_api::ImportSeries>> {
        let wanted: BTreeSet<u32> = names.iter().map(|n| self.partition_of(n)).collect();
        let g = self.gather(wanted, &|t, ps| {
            let mine: Vec<String> = names
                .iter()
                .filter(|n| ps.contains(&self.partition_of(n)))
                .cloned()
                .collect();
            match t {
                Target::Local => crate::rename::local_history(&self.store, self, &mine, ends)
                    .map_err(PeerError::Down),
                Target::Remote(peer) => self.post_json(
                    peer,
                    "history",
                    &crate::rename::HistoryReq {
                        names: mine,
                        ends: ends.clone(),
                        partitions: Some(ps.to_vec()),
                    },
                    auth,
                ),
            }
        })?;
        Ok((g.parts.into_iter().flatten().collect(), g.missing))
    }

    /// `/tags`: every tag name matching `filter`, sorted, at most `limit`.
    pub fn tags(
        &self,
        filter: Option<&str>,
        limit: Option<usize>,
        auth: Option<&str>,
    ) -> Answer<Vec<String>> {
        let g = self.gather(self.all_partitions(), &|t, ps| {
            let req = TagsReq {
                filter: filter.map(str::to_string),
                limit,
                partitions: Some(ps.to_vec()),
            };
            match t {
                Target::Local => local_tags(&self.store, &req).map_err(client),
                Target::Remote(peer) => self.post_json::<Vec<String>>(peer, "tags", &req, auth),
            }
        })?;
        let all: BTreeSet<String> = g.parts.into_iter().flatten().collect();
        let mut out: Vec<String> = all.into_iter().collect();
        if let Some(n) = limit {
            out.truncate(n);
        }
        Ok((out, g.missing))
    }

    /// `/tags/<tag>`: its values with the number of series having each (summed over
    /// partitions, each counted once), sorted, at most `limit`; `None` when no node
    /// knows the tag.
    pub fn tag_values(
        &self,
        tag: &str,
        filter: Option<&str>,
        limit: Option<usize>,
        auth: Option<&str>,
    ) -> Answer<Option<ValueCounts>> {
        let g = self.gather(self.all_partitions(), &|t, ps| {
            let req = TagValuesReq {
                tag: tag.to_string(),
                filter: filter.map(str::to_string),
                partitions: Some(ps.to_vec()),
            };
            match t {
                Target::Local => local_tag_values(&self.store, &req, Some(self)).map_err(client),
                Target::Remote(peer) => {
                    self.post_json::<Option<BTreeMap<String, u64>>>(peer, "tag_values", &req, auth)
                }
            }
        })?;
        let mut known = false;
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for part in g.parts.into_iter().flatten() {
            known = true;
            for (v, n) in part {
                *counts.entry(v).or_default() += n;
            }
        }
        if !known {
            return Ok((None, g.missing));
        }
        let mut out: Vec<(String, u64)> = counts.into_iter().collect();
        if let Some(n) = limit {
            out.truncate(n);
        }
        Ok((Some(out), g.missing))
    }

    /// `/tags/autoComplete/tags` (no `tag`) or `/values` (with `tag`): the union of
    /// every replica's answer, sorted, at most `limit`.
    pub fn auto_complete(&self, req: &AutoCompleteReq, auth: Option<&str>) -> Answer<Vec<String>> {
        let g = self.gather(self.all_partitions(), &|t, _| match t {
            Target::Local => local_auto_complete(&self.store, req).map_err(client),
            Target::Remote(peer) => self.post_json::<Vec<String>>(peer, "autocomplete", req, auth),
        })?;
        let all: BTreeSet<String> = g.parts.into_iter().flatten().collect();
        let mut out: Vec<String> = all.into_iter().collect();
        out.truncate(req.limit);
        Ok((out, g.missing))
    }
}

fn client(e: TagQueryError) -> PeerError {
    PeerError::Client(e.to_string())
}

/// A [`SeriesSource`] over the whole cluster for one request: it remembers the
/// partitions it could not read, for the answer's [`PARTIAL_HEADER`].
pub struct ClusterSource<'a> {
    fanout: &'a Fanout,
    limits: QueryLimits,
    /// The client's `Authorization`, passed on to the peers (every node has the same
    /// access control).
    auth: Option<String>,
    missing: Mutex<Gaps>,
    /// Series and points held against the budget.
    series: AtomicU64,
    points: AtomicU64,
    /// Points read by transient fetches, given back to the budget.
    read: AtomicU64,
}

impl<'a> ClusterSource<'a> {
    pub fn new(fanout: &'a Fanout, limits: QueryLimits, auth: Option<String>) -> ClusterSource<'a> {
        ClusterSource {
            fanout,
            limits,
            auth,
            missing: Mutex::new(Gaps::default()),
            series: AtomicU64::new(0),
            points: AtomicU64::new(0),
            read: AtomicU64::new(0),
        }
    }

    /// Partitions some read of this request could not get, counted once per request;
    /// the header value when there are any.
    pub fn finish(&self) -> Option<String> {
        self.fanout.note_partial(&self.missing.lock())
    }

    /// Points read so far.
    pub fn points_read(&self) -> u64 {
        self.points.load(Ordering::Relaxed) + self.read.load(Ordering::Relaxed)
    }
}

impl SeriesSource for ClusterSource<'_> {
    fn find(&self, pattern: &PathPattern) -> Result<Vec<FindNode>, SourceError> {
        // a render reads leaves only: an exact path is one series, in one partition
        // (a tagged name may be spelled in another order than its canonical one,
        // which places it: asked everywhere)
        let (nodes, missing) = if pattern.is_exact() && !pattern.as_str().contains(';') {
            let (nodes, missing) = self.fanout.find_in(
                pattern.as_str(),
                BTreeSet::from([self.fanout.partition_of(pattern.as_str())]),
                self.auth.as_deref(),
            )?;
            (nodes.into_iter().filter(|n| n.is_leaf).collect(), missing)
        } else {
            self.fanout.find(pattern.as_str(), self.auth.as_deref())?
        };
        self.missing.lock().extend(missing);
        Ok(nodes)
    }

    fn fetch(
        &self,
        paths: &[String],
        from: i64,
        until: i64,
        now: i64,
    ) -> Result<Vec<FetchedSeries>, SourceError> {
        let max_series = self.limits.max_series;
        let total =
            self.series.fetch_add(paths.len() as u64, Ordering::Relaxed) + paths.len() as u64;
        if total > max_series {
            return Err(SourceError::TooLarge(format!(
                "the targets match {total} series, more than the {max_series} one request \
                 may read (http.max_series_per_query); use narrower path globs or fewer \
                 targets"
            )));
        }
        let (series, missing) =
            self.fanout
                .fetch(paths, from, until, now, self.limits, self.auth.as_deref())?;
        self.missing.lock().extend(missing);
        let n: u64 = series.iter().map(|s| s.values.len() as u64).sum();
        let total = self.points.fetch_add(n, Ordering::Relaxed) + n;
        let max_points = self.limits.max_points;
        if total > max_points {
            return Err(SourceError::TooLarge(format!(
                "the targets would read {total} points, more than the {max_points} one \
                 request may read (http.max_points_per_query); ask for a shorter time \
                 range (from/until) or fewer series (narrower path globs)"
            )));
        }
        Ok(series)
    }

    fn anomaly_scored_from(&self, name: &str) -> Option<i64> {
        let (found, missing) = self
            .fanout
            .anomalies(1, 0, &[name.to_string()], self.auth.as_deref())
            .ok()?;
        self.missing.lock().extend(missing);
        found
            .scored_from
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    fn events(&self, from: i64, until: i64) -> Vec<sumi_query::source::SourceEvent> {
        let Ok((found, missing)) = self
            .fanout
            .anomalies(from, until, &[], self.auth.as_deref())
        else {
            return Vec::new();
        };
        self.missing.lock().extend(missing);
        found
            .events
            .iter()
            .map(WireEvent::to_event)
            .filter(|e| (from..=until).contains(&e.start))
            .map(|e| sumi_query::source::SourceEvent {
                when: e.start,
                tags: crate::anomaly_api::event_tags(&e),
            })
            .collect()
    }

    fn find_tagged(&self, exprs: &[String]) -> Result<Vec<String>, SourceError> {
        let (names, missing) = self.fanout.find_tagged(exprs, self.auth.as_deref())?;
        self.missing.lock().extend(missing);
        Ok(names)
    }

    /// As on a single node, a streaming aggregate's chunks count against the budget
    /// only while they are read: what one call drew is given back when it returns.
    fn fetch_each_transient(
        &self,
        paths: &[&str],
        from: i64,
        until: i64,
        now: i64,
        each: &mut dyn FnMut(usize, FetchedRef<'_>),
    ) -> Result<(), SourceError> {
        let series0 = self.series.load(Ordering::Relaxed);
        let points0 = self.points.load(Ordering::Relaxed);
        let done = self.fetch_each(paths, from, until, now, each);
        let drawn_series = self.series.load(Ordering::Relaxed).saturating_sub(series0);
        let drawn_points = self.points.load(Ordering::Relaxed).saturating_sub(points0);
        self.series.fetch_sub(drawn_series, Ordering::Relaxed);
        self.points.fetch_sub(drawn_points, Ordering::Relaxed);
        self.read.fetch_add(drawn_points, Ordering::Relaxed);
        done
    }
}

// ---- the peers' side -------------------------------------------------------------

#[derive(Serialize, Deserialize)]
struct FindReq {
    query: String,
    /// The partitions the asker wants answered (this node must serve them).
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

#[derive(Serialize, Deserialize)]
struct AnomaliesReq {
    /// Events overlapping `[from, until]`; none when `from > until`.
    from: i64,
    until: i64,
    /// Series whose first score is wanted.
    #[serde(default)]
    names: Vec<String>,
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

/// An anomaly event as the nodes pass it to each other.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireEvent {
    pub id: String,
    pub series: String,
    pub start: i64,
    pub end: i64,
    pub peak: f64,
    pub peak_ts: i64,
    pub reason: String,
    pub open: bool,
}

impl WireEvent {
    fn of(e: &sumi_anomaly::events::Event) -> WireEvent {
        WireEvent {
            id: e.id.clone(),
            series: e.series.clone(),
            start: e.start,
            end: e.end,
            peak: e.peak,
            peak_ts: e.peak_ts,
            reason: e.reason.clone(),
            open: e.open,
        }
    }

    pub fn to_event(&self) -> sumi_anomaly::events::Event {
        sumi_anomaly::events::Event {
            id: self.id.clone(),
            series: self.series.clone(),
            start: self.start,
            end: self.end,
            peak: self.peak,
            peak_ts: self.peak_ts,
            reason: self.reason.clone(),
            open: self.open,
        }
    }
}

/// What [`Fanout::anomalies`] gathers.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AnomalyFindings {
    pub events: Vec<WireEvent>,
    /// `(series, first score)` of the names asked that a detector watches.
    pub scored_from: Vec<(String, i64)>,
}

/// This node's answer to an [`AnomaliesReq`]: only the series of the partitions
/// asked (another replica answers for the rest).
fn local_anomalies(
    feed: Option<&Arc<dyn crate::anomaly_api::AnomalyFeed>>,
    req: &AnomaliesReq,
    placement: Option<&Fanout>,
) -> AnomalyFindings {
    let Some(feed) = feed else {
        return AnomalyFindings::default();
    };
    let asked = |name: &str| match (&req.partitions, placement) {
        (Some(ps), Some(f)) => ps.contains(&f.partition_of(name)),
        _ => true,
    };
    let events = if req.from <= req.until {
        feed.events(req.from, req.until)
            .iter()
            .filter(|e| asked(&e.series))
            .map(WireEvent::of)
            .collect()
    } else {
        Vec::new()
    };
    let scored_from = req
        .names
        .iter()
        .filter(|n| asked(n))
        .filter_map(|n| feed.scored_from(n).map(|t| (n.clone(), t)))
        .collect();
    AnomalyFindings {
        events,
        scored_from,
    }
}

#[derive(Serialize, Deserialize)]
struct FetchReq {
    paths: Vec<String>,
    from: i64,
    until: i64,
    now: i64,
}

#[derive(Serialize, Deserialize)]
struct MatchReq {
    patterns: Vec<String>,
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

#[derive(Serialize, Deserialize)]
struct TaggedReq {
    exprs: Vec<String>,
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

#[derive(Serialize, Deserialize)]
struct TagsReq {
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

#[derive(Serialize, Deserialize)]
struct TagValuesReq {
    tag: String,
    #[serde(default)]
    filter: Option<String>,
    #[serde(default)]
    partitions: Option<Vec<u32>>,
}

/// An autocomplete request: tags when `tag` is absent, that tag's values otherwise.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AutoCompleteReq {
    pub exprs: Vec<String>,
    #[serde(default)]
    pub tag: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    pub limit: usize,
}

fn parse_exprs(exprs: &[String]) -> Result<Vec<TagExpr>, TagQueryError> {
    exprs.iter().map(|e| TagExpr::parse(e)).collect()
}

fn local_find(store: &Store, pattern: &str) -> Vec<FindNode> {
    store
        .find(&PathPattern::parse(pattern))
        .into_iter()
        .map(|e| FindNode {
            path: e.path,
            is_leaf: e.is_leaf,
        })
        .collect()
}

/// Names matching `exprs`, only those in `partitions` when given (and a placement
/// to tell them by).
fn local_tagged(
    store: &Store,
    exprs: &[TagExpr],
    partitions: Option<&[u32]>,
    placement: Option<&Fanout>,
) -> Result<Vec<String>, TagQueryError> {
    let mut names = store.find_tagged(exprs)?;
    if let (Some(ps), Some(f)) = (partitions, placement) {
        names.retain(|n| ps.contains(&f.partition_of(n)));
    }
    Ok(names)
}

/// Series matching `patterns`, only those in `partitions` when given.
fn local_match(
    store: &Store,
    patterns: &[String],
    partitions: Option<&[u32]>,
    placement: Option<&Fanout>,
) -> Vec<String> {
    let p: Vec<&str> = patterns.iter().map(String::as_str).collect();
    let mut names = store.match_series(&p);
    if let (Some(ps), Some(f)) = (partitions, placement) {
        names.retain(|n| ps.contains(&f.partition_of(n)));
    }
    names
}

fn local_tags(store: &Store, req: &TagsReq) -> Result<Vec<String>, TagQueryError> {
    Ok(store
        .tags(req.filter.as_deref(), req.limit)?
        .into_iter()
        .map(|t| t.tag)
        .collect())
}

/// The values of a tag matching the filter, counted over the series of `partitions`.
fn local_tag_values(
    store: &Store,
    req: &TagValuesReq,
    placement: Option<&Fanout>,
) -> Result<Option<BTreeMap<String, u64>>, TagQueryError> {
    let Some((_, values)) = store.tag_values(&req.tag, req.filter.as_deref(), None)? else {
        return Ok(None);
    };
    let Some(ps) = &req.partitions else {
        return Ok(Some(
            values.into_iter().map(|v| (v.value, v.count)).collect(),
        ));
    };
    let allowed: BTreeSet<String> = values.into_iter().map(|v| v.value).collect();
    let has_tag = TagExpr {
        tag: req.tag.clone(),
        op: TagOp::Ne,
        spec: String::new(),
    };
    let mut counts = BTreeMap::new();
    for name in local_tagged(store, &[has_tag], Some(ps), placement)? {
        if let Some(v) = sumi_model::tagged::parse_carbon(&name).and_then(|tags| {
            tags.into_iter()
                .find(|(t, _)| *t == req.tag)
                .map(|(_, v)| v.to_string())
        }) {
            if allowed.contains(&v) {
                *counts.entry(v).or_insert(0u64) += 1;
            }
        }
    }
    Ok(Some(counts))
}

fn local_auto_complete(store: &Store, req: &AutoCompleteReq) -> Result<Vec<String>, TagQueryError> {
    let exprs = parse_exprs(&req.exprs)?;
    match &req.tag {
        None => store.auto_complete_tags(&exprs, req.prefix.as_deref(), req.limit),
        Some(tag) => store.auto_complete_values(&exprs, tag, req.prefix.as_deref(), req.limit),
    }
}

/// The internal routes, to merge into the main router.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/internal/v0/find", post(serve_find))
        .route("/internal/v0/fetch", post(serve_fetch))
        .route("/internal/v0/tagged", post(serve_tagged))
        .route("/internal/v0/match", post(serve_match))
        .route("/internal/v0/tags", post(serve_tags))
        .route("/internal/v0/tag_values", post(serve_tag_values))
        .route("/internal/v0/autocomplete", post(serve_autocomplete))
        .route("/internal/v0/partition_dump", post(handoff::serve_dump))
        .route("/internal/v0/gf_snapshot", get(handoff::serve_gf_snapshot))
        .route("/internal/v0/anomalies", post(serve_anomalies))
        .route("/internal/v0/history", post(serve_history))
}

fn bad(msg: impl std::fmt::Display) -> Response {
    (StatusCode::BAD_REQUEST, msg.to_string()).into_response()
}

fn json_ok(v: &impl Serialize) -> Response {
    match serde_json::to_vec(v) {
        Ok(b) => ([(header::CONTENT_TYPE, "application/json")], b).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

/// Runs `work` over the body parsed as `R` on a blocking thread.
async fn internal<R, F>(state: Arc<AppState>, body: Bytes, work: F) -> Response
where
    R: for<'de> Deserialize<'de> + Send + 'static,
    F: FnOnce(&AppState, R) -> Response + Send + 'static,
{
    let req: R = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => return bad(format_args!("bad internal request: {e}")),
    };
    match tokio::task::spawn_blocking(move || work(&state, req)).await {
        Ok(r) => r,
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

fn tag_error(e: TagQueryError) -> Response {
    bad(e)
}

/// The placement a node tells partitions by: none without `[cluster]` peers (then
/// every name counts as in every partition).
fn placement_of(state: &AppState) -> Option<&Fanout> {
    state.fanout.as_deref()
}

async fn serve_find(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: FindReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        if let Err(e) = PathPattern::check(&req.query) {
            return bad(e);
        }
        let nodes: Vec<(String, bool)> = local_find(&st.store, &req.query)
            .into_iter()
            .map(|n| (n.path, n.is_leaf))
            .collect();
        json_ok(&nodes)
    })
    .await
}

async fn serve_anomalies(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: AnomaliesReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        json_ok(&local_anomalies(
            st.anomalies.as_ref(),
            &req,
            placement_of(st),
        ))
    })
    .await
}

async fn serve_fetch(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: FetchReq| {
        if let Some(f) = placement_of(st) {
            let ps: BTreeSet<u32> = req.paths.iter().map(|p| f.partition_of(p)).collect();
            if let Err(r) = refuse_unless_served(st, &ps.into_iter().collect::<Vec<_>>(), last) {
                return *r;
            }
        }
        let source = StoreSource::with_limits(st.store.clone(), st.limits);
        match source.fetch(&req.paths, req.from, req.until, req.now) {
            Ok(series) => (
                [(header::CONTENT_TYPE, "application/octet-stream")],
                encode_fetched(&series),
            )
                .into_response(),
            Err(SourceError::Storage(m)) => (StatusCode::SERVICE_UNAVAILABLE, m).into_response(),
            Err(e) => (StatusCode::UNPROCESSABLE_ENTITY, e.to_string()).into_response(),
        }
    })
    .await
}

async fn serve_tagged(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: TaggedReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        let exprs = match parse_exprs(&req.exprs) {
            Ok(e) => e,
            Err(e) => return tag_error(e),
        };
        match local_tagged(
            &st.store,
            &exprs,
            req.partitions.as_deref(),
            placement_of(st),
        ) {
            Ok(names) => json_ok(&names),
            Err(e) => tag_error(e),
        }
    })
    .await
}

async fn serve_match(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: MatchReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        json_ok(&local_match(
            &st.store,
            &req.patterns,
            req.partitions.as_deref(),
            placement_of(st),
        ))
    })
    .await
}

async fn serve_history(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: crate::rename::HistoryReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        let Some(f) = placement_of(st) else {
            return bad("not a cluster node with [[cluster.peers]]");
        };
        match crate::rename::local_history(&st.store, f, &req.names, &req.ends) {
            Ok(h) => json_ok(&h),
            Err(e) => (StatusCode::SERVICE_UNAVAILABLE, e).into_response(),
        }
    })
    .await
}

async fn serve_tags(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: TagsReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        match local_tags(&st.store, &req) {
            Ok(t) => json_ok(&t),
            Err(e) => tag_error(e),
        }
    })
    .await
}

async fn serve_tag_values(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let last = is_last_resort(&headers);
    internal(state, body, move |st, req: TagValuesReq| {
        if let Err(r) =
            refuse_unless_served(st, req.partitions.as_deref().unwrap_or_default(), last)
        {
            return *r;
        }
        match local_tag_values(&st.store, &req, placement_of(st)) {
            Ok(v) => json_ok(&v),
            Err(e) => tag_error(e),
        }
    })
    .await
}

async fn serve_autocomplete(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    internal(
        state,
        body,
        |st, req: AutoCompleteReq| match local_auto_complete(&st.store, &req) {
            Ok(v) => json_ok(&v),
            Err(e) => tag_error(e),
        },
    )
    .await
}

// ---- the fetch answer's encoding ---------------------------------------------------

/// The first byte of a fetch answer.
const FETCH_VERSION: u8 = 1;

/// The fetch answer: version `u8` 1, series count `u32`, then per series: path length
/// `u32`, path (UTF-8), `start`, `end`, `step` (`i64`), value count `u32`, a bitmap of
/// the slots holding a value (`ceil(count / 8)` bytes, low bit first), and each held
/// value as `f64` bits; integers little-endian. Raw slots as whisper returned them, so
/// the asking node consolidates and aligns exactly as with its own store.
pub fn encode_fetched(series: &[FetchedSeries]) -> Vec<u8> {
    let mut out = Vec::with_capacity(
        5 + series
            .iter()
            .map(|s| 32 + s.path.len() + s.values.len() * 9)
            .sum::<usize>(),
    );
    out.push(FETCH_VERSION);
    out.extend_from_slice(&(series.len() as u32).to_le_bytes());
    for s in series {
        out.extend_from_slice(&(s.path.len() as u32).to_le_bytes());
        out.extend_from_slice(s.path.as_bytes());
        for v in [s.start, s.end, s.step] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(s.values.len() as u32).to_le_bytes());
        let mut bitmap = vec![0u8; s.values.len().div_ceil(8)];
        for (i, v) in s.values.iter().enumerate() {
            if v.is_some() {
                bitmap[i / 8] |= 1 << (i % 8);
            }
        }
        out.extend_from_slice(&bitmap);
        for v in s.values.iter().flatten() {
            out.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }
    out
}

/// Why a fetch answer could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FetchDecodeError {
    #[error("unknown fetch answer version {0} (expected 1)")]
    Version(u8),
    #[error("fetch answer cut short at byte {0}")]
    Truncated(usize),
    #[error("series path at byte {0} is not UTF-8")]
    Utf8(usize),
    #[error("{0} bytes after the last series")]
    Trailing(usize),
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FetchDecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(FetchDecodeError::Truncated(self.pos))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32, FetchDecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, FetchDecodeError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Reads [`encode_fetched`]'s output; a clear error for anything else, never a panic.
pub fn decode_fetched(buf: &[u8]) -> Result<Vec<FetchedSeries>, FetchDecodeError> {
    let mut r = Reader { buf, pos: 0 };
    let version = r.take(1)?[0];
    if version != FETCH_VERSION {
        return Err(FetchDecodeError::Version(version));
    }
    let count = r.u32()? as usize;
    // every series takes at least 32 bytes: no allocation beyond what the bytes hold
    let mut out = Vec::with_capacity(count.min(buf.len() / 32));
    for _ in 0..count {
        let len = r.u32()? as usize;
        let at = r.pos;
        let path = std::str::from_utf8(r.take(len)?)
            .map_err(|_| FetchDecodeError::Utf8(at))?
            .to_string();
        let start = r.u64()? as i64;
        let end = r.u64()? as i64;
        let step = r.u64()? as i64;
        let n = r.u32()? as usize;
        let bitmap = r.take(n.div_ceil(8))?;
        let mut values = Vec::with_capacity(n);
        for i in 0..n {
            if bitmap[i / 8] & (1 << (i % 8)) != 0 {
                values.push(Some(f64::from_bits(r.u64()?)));
            } else {
                values.push(None);
            }
        }
        out.push(FetchedSeries {
            path,
            start,
            end,
            step,
            values,
        });
    }
    if r.pos != buf.len() {
        return Err(FetchDecodeError::Trailing(buf.len() - r.pos));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fetch_answer_round_trips_bit_for_bit() {
        let series = vec![
            FetchedSeries {
                path: "a.b".into(),
                start: 60,
                end: 300,
                step: 60,
                values: vec![Some(1.5), None, Some(f64::NAN), Some(-0.0)],
            },
            FetchedSeries {
                path: "x;tag=ü".into(),
                start: -10,
                end: -10,
                step: 1,
                values: vec![],
            },
        ];
        let bytes = encode_fetched(&series);
        let back = decode_fetched(&bytes).unwrap();
        assert_eq!(back.len(), 2);
        for (a, b) in series.iter().zip(&back) {
            assert_eq!(
                (&a.path, a.start, a.end, a.step),
                (&b.path, b.start, b.end, b.step)
            );
            let bits =
                |v: &[Option<f64>]| v.iter().map(|x| x.map(f64::to_bits)).collect::<Vec<_>>();
            assert_eq!(bits(&a.values), bits(&b.values));
        }
        // every cut is an error, never a panic
        for cut in 0..bytes.len() {
            assert!(decode_fetched(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut extra = bytes.clone();
        extra.push(0);
        assert_eq!(decode_fetched(&extra), Err(FetchDecodeError::Trailing(1)));
        assert_eq!(decode_fetched(&[2]), Err(FetchDecodeError::Version(2)));
    }

    #[test]
    fn a_score_series_is_placed_with_its_series() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            sumi_store::StoreOptions::new(dir.path().to_path_buf()),
            Arc::new(sumi_model::SystemClock),
        )
        .unwrap();
        let f = Fanout::new(
            FanoutOptions {
                partitions: 1000,
                peers: Vec::new(),
                node_id: 0,
                timeout: Duration::from_millis(500),
                placement: |name, n| name.len() as u32 % n,
            },
            store,
        );
        for name in ["a.b", "app.web.latency", "cpu;host=a"] {
            let score = format!("{}{name}", sumi_query::functions::anomaly::SCORE_PREFIX);
            assert_eq!(f.partition_of(&score), f.partition_of(name), "{score}");
            // (where its own name would put it)
            assert_ne!(f.partition_of(&score), score.len() as u32);
        }
        // the prefix alone names no series: placed by its own name
        let bare = sumi_query::functions::anomaly::SCORE_PREFIX;
        assert_eq!(f.partition_of(bare), bare.len() as u32);
    }

    #[test]
    fn partial_header_lists_missing_partitions() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            sumi_store::StoreOptions::new(dir.path().to_path_buf()),
            Arc::new(sumi_model::SystemClock),
        )
        .unwrap();
        let f = Fanout::new(
            FanoutOptions {
                partitions: 4,
                peers: vec![Peer {
                    node_id: 9,
                    // nothing listens on port 1
                    http: "127.0.0.1:1".into(),
                    partitions: vec![1, 3],
                }],
                node_id: 0,
                timeout: Duration::from_millis(500),
                placement: |name, n| name.len() as u32 % n,
            },
            store,
        );
        let (nodes, missing) = f.find("*", None).unwrap();
        assert!(nodes.is_empty());
        // 0 and 2 have no replica at all, 1 and 3 a dead one
        assert_eq!(missing.missing, BTreeSet::from([0, 1, 2, 3]));
        assert!(missing.stale.is_empty());
        assert_eq!(
            f.note_partial(&missing).as_deref(),
            Some("partitions=0,1,2,3")
        );
        assert_eq!(f.stats.peer_errors.load(Ordering::Relaxed), 1);
        assert_eq!(f.stats.partial_answers.load(Ordering::Relaxed), 1);
        // stale partitions are said apart, and counted apart
        let mut gaps = Gaps {
            missing: BTreeSet::from([4]),
            stale: BTreeSet::from([2, 5]),
        };
        gaps.extend(Gaps {
            missing: BTreeSet::from([5]),
            stale: BTreeSet::new(),
        });
        assert_eq!(
            f.note_partial(&gaps).as_deref(),
            Some("partitions=4,5; stale=2")
        );
        let stale_only = Gaps {
            missing: BTreeSet::new(),
            stale: BTreeSet::from([1]),
        };
        assert_eq!(f.note_partial(&stale_only).as_deref(), Some("stale=1"));
        assert_eq!(f.stats.partial_answers.load(Ordering::Relaxed), 2);
        assert_eq!(f.stats.stale_answers.load(Ordering::Relaxed), 2);
        assert_eq!(f.stats.stale_partitions.load(Ordering::Relaxed), 2);
    }
}
