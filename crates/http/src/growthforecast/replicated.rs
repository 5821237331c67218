//! GrowthForecast's metadata in a cluster: a log of ops, applied by every node.
//!
//! On a single node a handler writes SQLite itself. In a cluster every node (ingest and
//! storage) holds the same `growthforecast.db`, because none writes it from a request:
//! a mutation is an [`OpMessage`] appended to the metadata log (a Kafka topic of one
//! partition, so one total order; see `sumi_cluster::meta_log`), and each node's
//! [`Applier`] applies the log's messages in order to its own database with the code a
//! single node runs (`writer::apply_posts`), storing the next offset in the same SQLite
//! transaction. Every node starts from an empty database and applies the same ops in
//! the same order, so every row (autoincrement ids included) is the same everywhere,
//! and a node that was down, or SIGKILLed mid-op, resumes at exactly its stored offset.
//!
//! The node that took the request waits until its own applier has applied the op
//! (read-your-writes) and answers with what the applier computed: [`Waiters`] keyed by
//! the sequence number the op carries with its origin node.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;

use std::time::Duration;

use parking_lot::Mutex;
use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sumi_store::Store;
use tracing::warn;

use super::db::{Complex, Db, DbError, Graph, Vrule};
use super::writer::{Post, PostError, SeriesRegistry};
use super::GfError;

/// The table of the next offset to apply (one row), created when a node first applies
/// the log; its presence marks a database made from the log.
pub const OFFSET_TABLE: &str = "gf_log_offset";

/// Where a cluster node's ops go: the metadata log.
pub trait OpLog: Send + Sync + std::fmt::Debug {
    /// This node's id in the cluster (the origin of the ops it appends).
    fn node_id(&self) -> u32;
    /// Appends one message; returns its offset once Kafka has it (`acks=all`).
    /// Blocking.
    fn append(&self, payload: &[u8]) -> Result<i64, String>;
    /// The data topic's end offset of every partition, read now (blocking); `None`
    /// where there is no data topic. A delete carries them (see [`OpMessage::data_ends`]).
    fn data_ends(&self) -> Result<Option<BTreeMap<u32, i64>>, String> {
        Ok(None)
    }
    /// Writes a delete marker of `globs` into every data partition and returns once
    /// Kafka has them all (`acks=all`): true, or false where there is no data topic.
    /// Blocking.
    fn delete_markers(&self, _globs: &[String]) -> Result<bool, String> {
        Ok(false)
    }
    /// Writes delete markers of exact series names, each into its own data partition
    /// (`(partition, names)`, a record each), and returns once Kafka has them all
    /// (`acks=all`): true, or false where there is no data topic. Blocking.
    fn named_delete_markers(&self, _by_partition: &[(u32, Vec<String>)]) -> Result<bool, String> {
        Ok(false)
    }
}

/// One message of the metadata log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpMessage {
    /// The node that took the request.
    pub origin: u32,
    /// Unique per origin (see [`Waiters`]): the applier answers the waiting request.
    pub seq: u64,
    /// The origin's clock when it took the request: every node stores the same
    /// `created_at`/`updated_at`, and a post without a timestamp the same time.
    pub now: i64,
    pub op: Op,
    /// For an op that deletes series (see [`Op::deletes_data`]): the data topic's end
    /// offset of every partition when the origin took the request. A storage node
    /// applies the delete only once its data consumer has passed them, so the points
    /// acknowledged before the delete are stored before it and deleted by it, not
    /// stored again after it by a node that was behind on the data topic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_ends: Option<BTreeMap<u32, i64>>,
}

/// A GrowthForecast mutation: what the request asked, validated where that needs no
/// database; the rest (does the graph exist, is the new name free) is checked where
/// it is applied, on every node alike.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Posts to `/api/...`, applied in order (one group commit of the origin).
    Posts { posts: Vec<Post> },
    /// `POST /json/create/complex` (its JSON body).
    CreateComplex { body: Map<String, Value> },
    /// `POST /json/edit/graph/:id` (its JSON body).
    EditGraph { id: i64, body: Map<String, Value> },
    /// `POST /json/edit/complex/:id` (its JSON body).
    EditComplex { id: i64, body: Map<String, Value> },
    /// `POST /json/delete/graph/...` (and `/delete/...`).
    DeleteGraph { target: Target },
    /// `POST /json/delete/complex/...` (and `/delete_complex/:id`).
    DeleteComplex { target: Target, with_graphs: bool },
    /// `POST /delete/:service/:section`.
    DeleteSection { service: String, section: String },
    /// `POST /vrule/api/...` (the rule's time resolved by the origin).
    AddVrule { vrule: Vrule },
    /// `POST /api/v1/series/delete` (its globs). With `marked`, the origin has put a
    /// delete marker into every data partition first (see `OpLog::delete_markers`):
    /// the storage nodes' data consumers delete the series there, at the same log
    /// position on every replica, and the op only waits for them (its
    /// [`OpMessage::data_ends`] are read after the markers). Without (a log without a
    /// data topic, or an op of the release before the markers), every node deletes
    /// the matching series of its own store when it applies the op. A node of a
    /// release before the op reads the message as unreadable and skips it (counted).
    DeleteSeries {
        targets: Vec<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        marked: bool,
    },
}

impl Op {
    /// Whether applying the op deletes store series (a graph's, a section's, a
    /// complex graph's with its graphs).
    pub fn deletes_data(&self) -> bool {
        matches!(
            self,
            Op::DeleteGraph { .. }
                | Op::DeleteSection { .. }
                | Op::DeleteSeries { .. }
                | Op::DeleteComplex {
                    with_graphs: true,
                    ..
                }
        )
    }
}

/// A graph or complex graph, by id or by names.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    Id(i64),
    Name(String, String, String),
}

/// What an op did.
#[derive(Clone, Debug)]
pub enum Applied {
    /// Each post's graph as it is afterwards and the value of its point, if any.
    Posts(Vec<(Graph, Option<f64>)>),
    /// A deleted graph.
    Graph(Box<Graph>),
    /// A created, or deleted, complex graph.
    Complex(Complex),
    /// An added vertical rule.
    Vrule(Vrule),
    /// The series this node deleted (`DeleteSeries`).
    Series(Vec<String>),
    /// An edit, a section deleted.
    Done,
}

impl Applied {
    fn unexpected(&self) -> GfError {
        GfError::Internal(format!("unexpected result of an op: {self:?}"))
    }

    pub(crate) fn graph(self) -> Result<Graph, GfError> {
        match self {
            Applied::Graph(g) => Ok(*g),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn complex(self) -> Result<Complex, GfError> {
        match self {
            Applied::Complex(c) => Ok(c),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn vrule(self) -> Result<Vrule, GfError> {
        match self {
            Applied::Vrule(v) => Ok(v),
            other => Err(other.unexpected()),
        }
    }

    pub(crate) fn series(self) -> Result<Vec<String>, GfError> {
        match self {
            Applied::Series(names) => Ok(names),
            other => Err(other.unexpected()),
        }
    }
}

/// An op's result: what it did, or why it changed nothing.
pub type Outcome = Result<Applied, GfError>;

/// Whether an op's failure is one every node meets alike (the graph is not there, a
/// name is taken, a parameter is invalid): the op is then skipped everywhere. Any
/// other failure (the disk, SQLite busy) is this node's: it retries the op.
fn same_everywhere(e: &GfError) -> bool {
    match e {
        GfError::NotFound(_)
        | GfError::Invalid(_)
        | GfError::Param(_)
        | GfError::BadRequest(_)
        | GfError::Conflict(_)
        | GfError::Db(DbError::Conflict(_)) => true,
        GfError::Graph(g) => g.is_client_error(),
        _ => false,
    }
}

/// How long a request waits for this node's applier to apply its op.
pub const APPLY_WAIT: Duration = Duration::from_secs(30);

/// Requests of this node waiting for their op to be applied here.
pub struct Waiters {
    next: AtomicU64,
    pending: Mutex<HashMap<u64, SyncSender<Outcome>>>,
}

impl Default for Waiters {
    fn default() -> Waiters {
        // Sequence numbers start at the clock in nanoseconds, so those of an earlier
        // run of this node, which its applier may still be replaying, are never taken
        // again.
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        Waiters {
            next: AtomicU64::new(start),
            pending: Mutex::new(HashMap::new()),
        }
    }
}

impl Waiters {
    /// A new sequence number, and where its outcome arrives.
    pub fn register(&self) -> (u64, Receiver<Outcome>) {
        let seq = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::sync_channel(1);
        self.pending.lock().insert(seq, tx);
        (seq, rx)
    }

    /// Stops waiting for `seq` (its append failed, or the wait timed out).
    pub fn forget(&self, seq: u64) {
        self.pending.lock().remove(&seq);
    }

    fn answer(&self, seq: u64, outcome: Outcome) {
        if let Some(tx) = self.pending.lock().remove(&seq) {
            let _ = tx.try_send(outcome);
        }
    }

    /// Requests still waiting.
    pub fn len(&self) -> usize {
        self.pending.lock().len()
    }

    /// Whether no request waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a node's applier has done, for `/metrics`.
#[derive(Debug, Default)]
pub struct LogStats {
    /// The offset of the next message to apply.
    pub next_offset: std::sync::atomic::AtomicI64,
    /// Ops applied (each post group is one).
    pub applied: AtomicU64,
    /// Ops that failed alike on every node (404, 400, 409), skipped.
    pub failed: AtomicU64,
    /// Messages that could not be read, skipped.
    pub unreadable: AtomicU64,
    /// Attempts that failed on this node (its database) and were retried.
    pub retries: AtomicU64,
}

impl LogStats {
    /// Prometheus text.
    pub fn write_prometheus(&self, out: &mut String) {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "# HELP sumi_gf_log_next_offset The offset of the next op of the growthforecast \
             metadata log this node applies.\n# TYPE sumi_gf_log_next_offset gauge\n\
             sumi_gf_log_next_offset {}",
            self.next_offset.load(Ordering::Relaxed)
        );
        for (name, help, v) in [
            (
                "applied",
                "Ops of the growthforecast metadata log applied.",
                &self.applied,
            ),
            (
                "failed",
                "Ops of the growthforecast metadata log that failed alike on every node (skipped).",
                &self.failed,
            ),
            (
                "unreadable",
                "Messages of the growthforecast metadata log that could not be read (skipped).",
                &self.unreadable,
            ),
            (
                "apply_retries",
                "Ops of the growthforecast metadata log this node failed to apply and retried.",
                &self.retries,
            ),
        ] {
            let _ = writeln!(
                out,
                "# HELP sumi_gf_log_{name}_total {help}\n# TYPE sumi_gf_log_{name}_total counter\n\
                 sumi_gf_log_{name}_total {}",
                v.load(Ordering::Relaxed)
            );
        }
    }
}

/// Why a node's database cannot be the replica of the metadata log.
#[derive(Debug, thiserror::Error)]
pub enum ApplierError {
    #[error(
        "{path} holds {rows} growthforecast graphs, complex graphs or vertical rules that \
         were not made from the cluster's metadata log (a database of this node before it \
         joined a cluster): its ids would clash with the cluster's. Stop the node, move the \
         file (and its -wal, -shm) aside and start again: the node rebuilds the database \
         from the log; the graphs' points are kept in the store (docs/cluster.md, \
         GrowthForecast)"
    )]
    NotFromLog { path: String, rows: i64 },
    #[error(transparent)]
    Db(#[from] DbError),
}

/// The metadata log's offset stored in the database file at `path` (the next op to
/// apply): 0 when there is no file or it holds no offset yet (never applied one).
/// Read-only: for a node deciding, before it opens its database, whether the log still
/// holds the ops it has not applied.
pub fn stored_log_offset(path: &std::path::Path) -> Result<i64, DbError> {
    if !path.exists() {
        return Ok(0);
    }
    let conn = rusqlite::Connection::open_with_flags(
        path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|source| DbError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let has_table: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [OFFSET_TABLE],
            |r| r.get(0),
        )
        .map_err(|e| DbError::sql("reading the log offset", e))?;
    if has_table == 0 {
        return Ok(0);
    }
    Ok(conn
        .query_row(
            &format!("SELECT next_offset FROM {OFFSET_TABLE} WHERE id = 1"),
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(|e| DbError::sql("reading the log offset", e))?
        .unwrap_or(0))
}

/// A node's applier of the metadata log, on its own connection.
pub struct Applier {
    db: Db,
    store: Arc<Store>,
    registry: SeriesRegistry,
    node_id: u32,
    waiters: Arc<Waiters>,
    next: i64,
    stats: Arc<LogStats>,
    data_wait: Option<DataWait>,
}

/// Blocks until this node's data consumer has passed the given end offsets (of the
/// partitions it stores) — see [`OpMessage::data_ends`].
pub type DataWait = Box<dyn FnMut(&BTreeMap<u32, i64>) + Send>;

impl Applier {
    /// Makes deletes wait for this node's data consumer (storage nodes).
    pub fn set_data_wait(&mut self, wait: DataWait) {
        self.data_wait = Some(wait);
    }

    /// The applier of `db`. A database with rows but no offset table was not made
    /// from the log: refused.
    pub fn open(
        db: &Db,
        store: Arc<Store>,
        registry: SeriesRegistry,
        node_id: u32,
        waiters: Arc<Waiters>,
    ) -> Result<Applier, ApplierError> {
        let mut conn = db.connect_again()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| DbError::sql("opening the log applier", e))?;
        let has_table: bool = tx
            .query_row(
                "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [OFFSET_TABLE],
                |r| r.get::<_, i64>(0),
            )
            .map_err(|e| DbError::sql("opening the log applier", e))?
            > 0;
        if !has_table {
            let rows: i64 = tx
                .query_row(
                    "SELECT (SELECT count(*) FROM graphs) + (SELECT count(*) FROM complex_graphs) \
                     + (SELECT count(*) FROM vrules)",
                    [],
                    |r| r.get(0),
                )
                .map_err(|e| DbError::sql("opening the log applier", e))?;
            if rows > 0 {
                return Err(ApplierError::NotFromLog {
                    path: db.path().display().to_string(),
                    rows,
                });
            }
            tx.execute_batch(&format!(
                "CREATE TABLE {OFFSET_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), \
                 next_offset INTEGER NOT NULL); INSERT INTO {OFFSET_TABLE} VALUES (1, 0);"
            ))
            .map_err(|e| DbError::sql("creating the log offset table", e))?;
        }
        let next: i64 = tx
            .query_row(
                &format!("SELECT next_offset FROM {OFFSET_TABLE} WHERE id = 1"),
                [],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| DbError::sql("reading the log offset", e))?
            .unwrap_or(0);
        tx.commit()
            .map_err(|e| DbError::sql("opening the log applier", e))?;
        drop(conn);
        let stats = Arc::new(LogStats::default());
        stats.next_offset.store(next, Ordering::Relaxed);
        Ok(Applier {
            db: db.reopen()?,
            store,
            registry,
            node_id,
            waiters,
            next,
            stats,
            data_wait: None,
        })
    }

    /// The offset of the next message to apply (the consumer starts there).
    pub fn next_offset(&self) -> i64 {
        self.next
    }

    /// What it has done, for `/metrics`.
    pub fn stats(&self) -> Arc<LogStats> {
        self.stats.clone()
    }

    /// Applies the message at `offset` and stores `offset + 1` in the same
    /// transaction. An op that fails alike on every node (a rename onto a taken name,
    /// say) changes nothing but the offset, and its origin answers the failure. Any
    /// other failure (the database cannot be written) leaves the offset where it was:
    /// the caller retries the message.
    pub fn apply(&mut self, offset: i64, payload: &[u8]) -> Result<(), GfError> {
        if offset < self.next {
            return Ok(());
        }
        let msg = match serde_json::from_slice::<OpMessage>(payload) {
            Ok(m) => Some(m),
            Err(e) => {
                warn!(offset, error = %e, "skipping an unreadable growthforecast op");
                self.stats.unreadable.fetch_add(1, Ordering::Relaxed);
                None
            }
        };
        if let (Some(ends), Some(wait)) = (
            msg.as_ref().and_then(|m| m.data_ends.as_ref()),
            self.data_wait.as_mut(),
        ) {
            wait(ends);
        }
        self.sql("BEGIN IMMEDIATE", "starting an op")?;
        let outcome = match &msg {
            None => Err(GfError::BadRequest("unreadable op".into())),
            Some(m) => super::api::apply_op(&self.db, &self.store, &self.registry, &m.op, m.now),
        };
        if let Err(e) = &outcome {
            // nothing of a failed op stays
            self.sql("ROLLBACK", "rolling back an op")?;
            if !same_everywhere(e) {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
                return Err(GfError::Internal(format!("applying op {offset}: {e}")));
            }
            self.sql("BEGIN IMMEDIATE", "starting an op")?;
        }
        let stored = self.db.with_conn(|c| {
            c.execute(
                &format!("UPDATE {OFFSET_TABLE} SET next_offset = ?1 WHERE id = 1"),
                params![offset + 1],
            )
            .and_then(|_| c.execute_batch("COMMIT"))
        });
        if let Err(e) = stored {
            let _ = self.sql("ROLLBACK", "rolling back an op");
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            return Err(DbError::sql("committing an op", e).into());
        }
        self.next = offset + 1;
        self.stats.next_offset.store(self.next, Ordering::Relaxed);
        match (&msg, &outcome) {
            (Some(_), Ok(_)) => self.stats.applied.fetch_add(1, Ordering::Relaxed),
            (Some(_), Err(_)) => self.stats.failed.fetch_add(1, Ordering::Relaxed),
            (None, _) => 0,
        };
        if let Some(m) = msg {
            if m.origin == self.node_id {
                self.waiters.answer(m.seq, outcome);
            }
        }
        Ok(())
    }

    fn sql(&self, sql: &str, what: &'static str) -> Result<(), GfError> {
        self.db
            .with_conn(|c| c.execute_batch(sql))
            .map_err(|e| DbError::sql(what, e).into())
    }
}

/// Appends `op` to the metadata log and waits until this node has applied it: what
/// it did, as every node did it.
pub(crate) fn submit(log: &dyn OpLog, waiters: &Waiters, mut op: Op) -> Outcome {
    // a caller that wrote its own markers (a cluster rename) passes `marked`
    if let Op::DeleteSeries { targets, marked } = &mut op {
        if !*marked {
            *marked = log
                .delete_markers(targets)
                .map_err(|e| PostError::Log(format!("writing the delete markers: {e}")))?;
        }
    }
    let data_ends = if op.deletes_data() {
        log.data_ends()
            .map_err(|e| PostError::Log(format!("reading the data topic's end: {e}")))?
    } else {
        None
    };
    let (seq, outcome) = waiters.register();
    let msg = OpMessage {
        origin: log.node_id(),
        seq,
        now: crate::unix_now(),
        op,
        data_ends,
    };
    let payload = serde_json::to_vec(&msg).map_err(|e| GfError::Internal(e.to_string()))?;
    if let Err(e) = log.append(&payload) {
        waiters.forget(seq);
        return Err(PostError::Log(format!("appending the change: {e}")).into());
    }
    match outcome.recv_timeout(APPLY_WAIT) {
        Ok(result) => result,
        Err(_) => {
            waiters.forget(seq);
            Err(PostError::Log(format!(
                "the change is in the log but this node has not applied it within {} s",
                APPLY_WAIT.as_secs()
            ))
            .into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growthforecast::writer::{apply_posts, Mode};

    fn store(dir: &std::path::Path) -> Arc<Store> {
        Store::open(
            sumi_store::StoreOptions::new(dir.join("store")),
            Arc::new(sumi_model::SystemClock),
        )
        .unwrap()
    }

    fn post(graph: &str, number: f64, mode: Mode) -> Post {
        Post {
            service: "svc".into(),
            section: "sec".into(),
            graph: graph.into(),
            number,
            mode,
            color: None,
            timestamp: None,
            description: None,
        }
    }

    fn message(seq: u64, now: i64, posts: Vec<Post>) -> Vec<u8> {
        serde_json::to_vec(&OpMessage {
            origin: 1,
            seq,
            now,
            op: Op::Posts { posts },
            data_ends: None,
        })
        .unwrap()
    }

    #[test]
    fn two_nodes_applying_the_same_log_hold_the_same_rows() {
        let log = [
            message(
                1,
                1000,
                vec![post("a", 1.0, Mode::Count), post("b", 5.0, Mode::Gauge)],
            ),
            b"not json".to_vec(),
            message(2, 1010, vec![post("a", 2.0, Mode::Count)]),
            message(3, 1020, vec![post("c", 7.0, Mode::Gauge)]),
        ];
        let mut rows = Vec::new();
        for node in [1, 2] {
            let dir = tempfile::tempdir().unwrap();
            let db = Db::open(dir.path()).unwrap();
            let waiters = Arc::new(Waiters::default());
            let mut applier = Applier::open(
                &db,
                store(dir.path()),
                SeriesRegistry::new(),
                node,
                waiters.clone(),
            )
            .unwrap();
            let (seq, rx) = waiters.register();
            for (offset, payload) in log.iter().enumerate().take(2) {
                applier.apply(offset as i64, payload).unwrap();
            }
            // a restart resumes at the stored offset; a message again is ignored
            drop(applier);
            let mut applier = Applier::open(
                &db,
                store(dir.path()),
                SeriesRegistry::new(),
                node,
                waiters.clone(),
            )
            .unwrap();
            assert_eq!(applier.next_offset(), 2);
            applier.apply(1, &log[1]).unwrap();
            for (offset, payload) in log.iter().enumerate().skip(2) {
                applier.apply(offset as i64, payload).unwrap();
            }
            assert_eq!(applier.next_offset(), 4);
            let graphs = db.graphs().unwrap();
            let a = db.graph("svc", "sec", "a").unwrap().unwrap();
            assert_eq!((a.number, a.created_at, a.updated_at), (3.0, 1000, 1010));
            assert_eq!(graphs.len(), 3);
            rows.push(graphs);
            // this test's waiter has a seq of its own clock: never answered by the log
            assert!(rx.try_recv().is_err());
            waiters.forget(seq);
        }
        assert_eq!(rows[0], rows[1]);
    }

    #[test]
    fn the_origin_gets_the_applied_result() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let waiters = Arc::new(Waiters::default());
        let mut applier = Applier::open(
            &db,
            store(dir.path()),
            SeriesRegistry::new(),
            7,
            waiters.clone(),
        )
        .unwrap();
        let (seq, rx) = waiters.register();
        let payload = serde_json::to_vec(&OpMessage {
            origin: 7,
            seq,
            now: 2000,
            op: Op::Posts {
                posts: vec![
                    post("m", 4.0, Mode::Modified),
                    post("m", 4.0, Mode::Modified),
                ],
            },
            data_ends: None,
        })
        .unwrap();
        applier.apply(0, &payload).unwrap();
        let Ok(Applied::Posts(out)) = rx.try_recv().unwrap() else {
            panic!("no posts applied")
        };
        assert_eq!(out.len(), 2);
        assert_eq!(
            (out[0].1, out[1].1),
            (Some(4.0), None),
            "unchanged: no point"
        );
        assert!(waiters.is_empty());
    }

    #[test]
    fn a_database_not_from_the_log_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut conn = db.connect_again().unwrap();
        let tx = conn.transaction().unwrap();
        apply_posts(
            &tx,
            &SeriesRegistry::new(),
            &[&post("x", 1.0, Mode::Gauge)],
            1000,
        )
        .unwrap();
        tx.commit().unwrap();
        let err = Applier::open(
            &db,
            store(dir.path()),
            SeriesRegistry::new(),
            1,
            Arc::new(Waiters::default()),
        );
        assert!(matches!(err, Err(ApplierError::NotFromLog { rows: 1, .. })));
    }

    #[test]
    fn deletes_wait_for_the_data_they_carry() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut applier = Applier::open(
            &db,
            store(dir.path()),
            SeriesRegistry::new(),
            3,
            Arc::new(Waiters::default()),
        )
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        applier.set_data_wait(Box::new(move |ends| record.lock().push(ends.clone())));
        let ends: BTreeMap<u32, i64> = [(0, 17), (1, 4)].into_iter().collect();
        let message = |op: Op, data_ends: Option<BTreeMap<u32, i64>>| {
            serde_json::to_vec(&OpMessage {
                origin: 1,
                seq: 1,
                now: 1000,
                op,
                data_ends,
            })
            .unwrap()
        };
        let posts = Op::Posts {
            posts: vec![post("a", 1.0, Mode::Gauge)],
        };
        let delete = Op::DeleteSection {
            service: "svc".into(),
            section: "sec".into(),
        };
        assert!(delete.deletes_data() && !posts.deletes_data());
        applier.apply(0, &message(posts, None)).unwrap();
        assert!(seen.lock().is_empty(), "posts do not wait");
        applier
            .apply(1, &message(delete, Some(ends.clone())))
            .unwrap();
        assert_eq!(*seen.lock(), vec![ends]);
        assert!(db.graph("svc", "sec", "a").unwrap().is_none());
        // an op written before the field existed reads as carrying none
        let old = br#"{"origin":1,"seq":2,"now":1000,"op":{"op":"delete_section","service":"x","section":"y"}}"#;
        let m: OpMessage = serde_json::from_slice(old).unwrap();
        assert_eq!(m.data_ends, None);
    }

    #[test]
    fn a_series_delete_deletes_this_nodes_matching_series_after_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let store = store(dir.path());
        let now = crate::unix_now();
        let mut batch = sumi_model::Batch::new();
        for name in ["gone.a", "gone.b.c", "kept.a"] {
            batch.push(name, now - 60, 1.0);
        }
        store.write(&batch).unwrap();
        let waiters = Arc::new(Waiters::default());
        let mut applier = Applier::open(
            &db,
            store.clone(),
            SeriesRegistry::new(),
            3,
            waiters.clone(),
        )
        .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        applier.set_data_wait(Box::new(move |ends| record.lock().push(ends.clone())));
        let (seq, rx) = waiters.register();
        let ends: BTreeMap<u32, i64> = [(0, 9)].into_iter().collect();
        let op = Op::DeleteSeries {
            targets: vec!["gone.**".into()],
            marked: false,
        };
        assert!(op.deletes_data());
        let payload = serde_json::to_vec(&OpMessage {
            origin: 3,
            seq,
            now,
            op,
            data_ends: Some(ends.clone()),
        })
        .unwrap();
        applier.apply(0, &payload).unwrap();
        assert_eq!(*seen.lock(), vec![ends], "the delete waited for its data");
        let deleted = rx.try_recv().unwrap().unwrap().series().unwrap();
        assert_eq!(deleted, vec!["gone.a".to_string(), "gone.b.c".to_string()]);
        assert_eq!(store.match_series(&["**"]), vec!["kept.a".to_string()]);
        // an op of an older release still reads (the new kind adds, changes nothing)
        let old =
            br#"{"origin":1,"seq":2,"now":1000,"op":{"op":"delete_graph","target":{"id":4}}}"#;
        assert!(serde_json::from_slice::<OpMessage>(old).is_ok());
    }
}
