//! Moving partitions between storage nodes (`docs/cluster.md`, "Adding a node, moving
//! a partition"): which of its partitions a node counts as a replica of, and the dump
//! of one partition that a joining node copies.
//!
//! A storage node owns the partitions of its configuration. One it has no consumed
//! offset for, on a node configured to copy from peers, is **joining**: first
//! `copying` (the node loads a replica's dump), then `catching-up` (it consumes the log
//! from the dump's offset up to the log end seen when the copy finished). While a
//! partition is joining, the node does not count as its replica: its own reads of it
//! go to a peer, and a peer that asks it for that partition is answered
//! `421 Misdirected Request`, upon which the peer asks the next replica (without
//! taking the node for down). A node asked for a partition it does not own answers
//! the same, so a node whose configuration still lists the old owner of a moved
//! partition is sent to another replica, never answered from a copy that no longer
//! follows the log.
//!
//! A node restarted with partitions it already had marks them **replaying** until its
//! consumer reaches the log end read at start, and with `read_max_lag_records` a
//! partition it falls behind with while running is **lagging**. Both, and `catching-up`,
//! are *behind only*: the node answers `421` with [`BEHIND_HEADER`], and answers from its
//! store when asked with [`LAST_RESORT_HEADER`] (no caught-up replica left; the asker
//! marks those partitions stale). A `copying` partition is never answered for.
//!
//! `POST /internal/v0/partition_dump` `{"partition": P}` answers the dump of
//! `sumi_store::transfer` (streamed): the node's consumed offset of P, read first, then
//! the direct writes of every series of P. Every record before that offset is applied
//! to the store before the series are read, so the dump holds at least the log up to
//! the offset (and maybe records after it, which the joining node applies again from
//! the log: re-applying a record changes nothing, see "Storage nodes: offsets and
//! recovery").

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use parking_lot::RwLock;
use serde::Deserialize;
use sumi_store::transfer::{encode_dump_end, encode_dump_header, encode_dump_series};
use tokio::sync::mpsc;

use crate::AppState;

/// Where a joining partition is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Loading a replica's dump.
    Copying,
    /// Consuming the log from the dump's offset up to `target`.
    CatchingUp { target: i64 },
    /// A partition the node already had, after a restart: consuming the log from its
    /// saved offset up to `target`, the log end read at start (`-1`: not read yet).
    Replaying { target: i64 },
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Copying => "copying",
            Phase::CatchingUp { .. } => "catching-up",
            Phase::Replaying { .. } => "replaying",
        }
    }

    /// Whether the node holds the partition's log up to some offset, only not up to
    /// the end yet: then it may answer as the last resort (a stale answer beats none).
    pub fn is_behind_only(self) -> bool {
        !matches!(self, Phase::Copying)
    }
}

/// The next offset to apply of an owned partition (the consumer's progress).
pub type OffsetOf = Arc<dyn Fn(u32) -> Option<i64> + Send + Sync>;

/// This node's joining partitions, and its consumer's progress.
#[derive(Default)]
pub struct PartitionStates {
    joining: RwLock<BTreeMap<u32, Phase>>,
    offsets: RwLock<Option<OffsetOf>>,
    /// The consumer's lag in records of an owned partition, and the bound beyond
    /// which the partition counts as behind (0: none).
    lag: RwLock<Option<OffsetOf>>,
    max_lag: std::sync::atomic::AtomicI64,
}

impl PartitionStates {
    pub fn set_joining(&self, partition: u32, phase: Phase) {
        self.joining.write().insert(partition, phase);
    }

    /// The partition is counted as a replica from now on.
    pub fn set_ready(&self, partition: u32) {
        self.joining.write().remove(&partition);
    }

    pub fn is_joining(&self, partition: u32) -> bool {
        self.joining.read().contains_key(&partition)
    }

    pub fn phase(&self, partition: u32) -> Option<Phase> {
        self.joining.read().get(&partition).copied()
    }

    pub fn joining(&self) -> BTreeMap<u32, Phase> {
        self.joining.read().clone()
    }

    /// Where the consumer's progress is read (set once it runs).
    pub fn set_offsets(&self, f: OffsetOf) {
        *self.offsets.write() = Some(f);
    }

    /// Where the consumer's lag is read, and the bound beyond which a partition is
    /// behind (`read_max_lag_records`; 0: none).
    pub fn set_lag(&self, f: OffsetOf, max_lag: u64) {
        *self.lag.write() = Some(f);
        self.max_lag.store(
            i64::try_from(max_lag).unwrap_or(i64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Whether the consumer is more than `read_max_lag_records` behind with the
    /// partition (while running: a replay after a start is [`Phase::Replaying`]).
    pub fn is_lagging(&self, partition: u32) -> bool {
        let max = self.max_lag.load(std::sync::atomic::Ordering::Relaxed);
        if max <= 0 {
            return false;
        }
        let Some(f) = self.lag.read().clone() else {
            return false;
        };
        f(partition).is_some_and(|lag| lag > max)
    }

    /// Whether the node holds the partition's log up to some offset, only not up to
    /// the end (replaying, catching up, lagging): asked as the last resort.
    pub fn is_behind_only(&self, partition: u32) -> bool {
        match self.phase(partition) {
            Some(phase) => phase.is_behind_only(),
            None => self.is_lagging(partition),
        }
    }

    pub fn next_offset(&self, partition: u32) -> Option<i64> {
        let f = self.offsets.read().clone()?;
        f(partition)
    }

    /// `sumi_cluster_partition_joining{partition, phase}`, read by `sumi cluster status`
    /// (`owned`: the partitions to tell lagging ones among).
    pub fn write_prometheus(&self, out: &mut String, owned: &[u32]) {
        out.push_str("# HELP sumi_cluster_partition_joining Owned partitions this node does not count as a replica of yet (copying from a peer, or catching up with the log).\n# TYPE sumi_cluster_partition_joining gauge\n");
        for (p, phase) in self.joining.read().iter() {
            let target = match phase {
                Phase::CatchingUp { target } | Phase::Replaying { target } => *target,
                Phase::Copying => -1,
            };
            out.push_str(&format!(
                "sumi_cluster_partition_joining{{partition=\"{p}\",phase=\"{}\",target=\"{target}\"}} 1\n",
                phase.name()
            ));
        }
        for &p in owned {
            if !self.is_joining(p) && self.is_lagging(p) {
                out.push_str(&format!(
                    "sumi_cluster_partition_joining{{partition=\"{p}\",phase=\"lagging\",target=\"-1\"}} 1\n"
                ));
            }
        }
    }
}

/// The status of a request for partitions this node does not serve.
pub const MISDIRECTED: StatusCode = StatusCode::MISDIRECTED_REQUEST;

/// The request header of a read asking a replica that is behind the log because no
/// replica of the partitions that is caught up is left (`1`).
pub const LAST_RESORT_HEADER: &str = "x-sumi-last-resort";

/// The header of a `421` from a node that owns the partitions but is behind the log
/// with them (`replaying` or `catching-up`): it answers when asked as the last resort.
pub const BEHIND_HEADER: &str = "x-sumi-behind";

/// Whether a request carries [`LAST_RESORT_HEADER`].
pub(crate) fn is_last_resort(headers: &axum::http::HeaderMap) -> bool {
    headers
        .get(LAST_RESORT_HEADER)
        .is_some_and(|v| v.as_bytes() == b"1")
}

/// `421` when this node is not a counted replica of every partition in `partitions`
/// (only on a node with `[cluster]` peers: otherwise it has no placement to tell by).
/// With `last_resort`, partitions the node is only behind on (see
/// [`Phase::is_behind_only`]) are served. A `421` for partitions the node is only behind
/// on carries [`BEHIND_HEADER`].
pub(crate) fn refuse_unless_served(
    state: &AppState,
    partitions: &[u32],
    last_resort: bool,
) -> Result<(), Box<Response>> {
    let Some(f) = state.fanout.as_deref() else {
        return Ok(());
    };
    let states = f.states();
    let behind_only = |p: u32| f.owns(p) && states.is_behind_only(p);
    let refused: Vec<u32> = partitions
        .iter()
        .copied()
        .filter(|&p| !(f.serves(p) || last_resort && behind_only(p)))
        .collect();
    let Some(&p) = refused.first() else {
        return Ok(());
    };
    let behind = refused.iter().all(|&p| behind_only(p));
    let mut resp = (
        MISDIRECTED,
        format!(
            "this node does not serve partition {p} (not owned, still joining, or behind the log)"
        ),
    )
        .into_response();
    if behind {
        resp.headers_mut()
            .insert(BEHIND_HEADER, axum::http::HeaderValue::from_static("1"));
    }
    Err(Box::new(resp))
}

#[derive(Deserialize)]
struct DumpReq {
    partition: u32,
}

/// Bytes gathered before a chunk of the dump is sent.
const CHUNK_BYTES: usize = 1 << 20;

/// `GET /internal/v0/gf_snapshot`: a consistent copy of this node's
/// `growthforecast.db` (cluster nodes only), for a node whose metadata log applier
/// cannot start from the log because the ops it has not applied are gone from Kafka
/// (`sumi_server`'s `gf_snapshot`). The copy holds the log offset it covers with its
/// rows, so its receiver applies the log from there.
pub(crate) async fn serve_gf_snapshot(State(state): State<Arc<AppState>>) -> Response {
    if state.gf.log.is_none() {
        return (StatusCode::NOT_FOUND, "not a cluster node").into_response();
    }
    let db = state.gf.db.clone();
    let copied = tokio::task::spawn_blocking(move || {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = db
            .path()
            .with_extension(format!("db.snapshot-{}-{n}", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        let result = db
            .snapshot_into(&tmp)
            .map_err(|e| e.to_string())
            .and_then(|()| std::fs::read(&tmp).map_err(|e| e.to_string()));
        let _ = std::fs::remove_file(&tmp);
        result
    })
    .await;
    match copied {
        Ok(Ok(bytes)) => {
            tracing::info!(bytes = bytes.len(), "growthforecast.db snapshot sent");
            ([(header::CONTENT_TYPE, "application/vnd.sqlite3")], bytes).into_response()
        }
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

pub(crate) async fn serve_dump(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let req: DumpReq = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return (StatusCode::BAD_REQUEST, format!("bad dump request: {e}")).into_response()
        }
    };
    let Some(fanout) = state.fanout.clone() else {
        return (
            StatusCode::BAD_REQUEST,
            "not a cluster node with [[cluster.peers]]",
        )
            .into_response();
    };
    let p = req.partition;
    if let Err(r) = refuse_unless_served(&state, &[p], false) {
        return *r;
    }
    // the offset first: every record before it is in the store when it is read
    let Some(offset) = fanout.states().next_offset(p) else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("partition {p}: this node's consumer is not running"),
        )
            .into_response();
    };
    let (tx, rx) = mpsc::channel::<Bytes>(4);
    let store = state.store.clone();
    tokio::task::spawn_blocking(move || {
        let t0 = std::time::Instant::now();
        let names = store.series_names_where(|n| fanout.partition_of(n) == p);
        let mut buf = Vec::with_capacity(CHUNK_BYTES + 4096);
        encode_dump_header(p, offset, &mut buf);
        let (mut series, mut points) = (0u64, 0u64);
        for name in &names {
            // a series deleted meanwhile is left out
            let Some(s) = store.direct_writes(name) else {
                continue;
            };
            series += 1;
            points += s.points();
            encode_dump_series(&s, &mut buf);
            if buf.len() >= CHUNK_BYTES
                && tx
                    .blocking_send(Bytes::from(std::mem::take(&mut buf)))
                    .is_err()
            {
                tracing::warn!(partition = p, "partition dump: the receiver went away");
                return;
            }
        }
        encode_dump_end(series, &mut buf);
        if tx.blocking_send(Bytes::from(buf)).is_ok() {
            tracing::info!(
                partition = p,
                offset,
                series,
                points,
                secs = t0.elapsed().as_secs_f64(),
                "partition dump sent"
            );
        }
    });
    (
        [(header::CONTENT_TYPE, "application/octet-stream")],
        Body::from_stream(crate::render::ChunkStream(rx)),
    )
        .into_response()
}
