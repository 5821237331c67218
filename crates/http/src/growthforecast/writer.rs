//! Posts to `/api/:service/:section/:graph`, applied by one thread in group commits.
//!
//! Handlers queue a [`Post`] and wait for its answer. The writer thread takes every
//! post waiting (up to [`MAX_GROUP`]), and for the whole group opens one SQLite
//! transaction, updates each graph's row in order (so `count` adds up correctly even
//! when posts to one graph race), appends one [`Batch`] with a point per post to the
//! store (one WAL write), commits, and answers. Under load a group holds hundreds of
//! posts, so neither SQLite nor the WAL is paid per post.
//!
//! The store is written before SQLite commits: when the store refuses the batch the
//! transaction is rolled back and every post of the group gets a 503 (a client that
//! retries a `count` then adds once, not twice).

use std::collections::HashSet;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;

use parking_lot::RwLock;
use rusqlite::{params, Connection, TransactionBehavior};
use sumi_model::Sink;
use sumi_model::{AggMethod, AggregationOverride, Batch};
use tokio::sync::oneshot;
use tracing::warn;

use super::db::{graph_by_id, graph_by_names, DbError, Graph};
use super::names::series_name;
use super::replicated::{Applied, Op, OpLog, OpMessage, Waiters, APPLY_WAIT};

/// The most posts one group commit takes.
pub const MAX_GROUP: usize = 4096;
/// Posts waiting beyond this are refused with a 503 (back-pressure).
pub const MAX_QUEUED: usize = 65_536;

/// How a post changes the graph's number (GrowthForecast's `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The number replaces the current one.
    Gauge,
    /// The number is added to the current one.
    Count,
    /// The number replaces the current one only when it differs (no point otherwise).
    Modified,
    /// A counter, read as a per-second rate.
    Derive,
}

impl Mode {
    /// The `mode` parameter.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "gauge" => Some(Mode::Gauge),
            "count" => Some(Mode::Count),
            "modified" => Some(Mode::Modified),
            "derive" => Some(Mode::Derive),
            _ => None,
        }
    }

    /// The name in the API and the database.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Gauge => "gauge",
            Mode::Count => "count",
            Mode::Modified => "modified",
            Mode::Derive => "derive",
        }
    }
}

/// One validated post (also the post op of the metadata log in a cluster, see
/// `replicated.rs`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Post {
    pub service: String,
    pub section: String,
    pub graph: String,
    pub number: f64,
    pub mode: Mode,
    /// `#RRGGBB[AA]`; `None` keeps the graph's colour (a new graph gets one).
    pub color: Option<String>,
    /// The client's time of the number (`timestamp` or `datetime`); now otherwise.
    pub timestamp: Option<i64>,
    /// The last `description` parameter, when there was one.
    pub description: Option<String>,
}

/// Why a post was not applied.
#[derive(Debug, thiserror::Error)]
pub enum PostError {
    #[error("too many posts waiting; retry later")]
    Busy,
    #[error("the store cannot take points now: {0}")]
    Unavailable(String),
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("the growthforecast writer has stopped")]
    Stopped,
    /// In a cluster: the metadata log did not take the post, or this node did not
    /// apply it in time.
    #[error("the growthforecast metadata log: {0}")]
    Log(String),
}

/// The series that belong to GrowthForecast graphs. The store asks it (through
/// [`SeriesRegistry::aggregation_override`]) when it creates a series: a graph's
/// series rolls up by average with xFilesFactor 0, whatever its name, because a
/// number posted every few minutes fills one finest slot in many.
#[derive(Clone, Default)]
pub struct SeriesRegistry {
    names: Arc<RwLock<HashSet<String>>>,
}

impl SeriesRegistry {
    /// An empty registry.
    pub fn new() -> SeriesRegistry {
        SeriesRegistry::default()
    }

    /// Marks `series` as a graph's.
    pub fn insert(&self, series: &str) {
        if !self.names.read().contains(series) {
            self.names.write().insert(series.to_string());
        }
    }

    /// Whether `series` is a graph's.
    pub fn contains(&self, series: &str) -> bool {
        self.names.read().contains(series)
    }

    /// The hook for [`sumi_model::StorageAggregation::with_override`].
    pub fn aggregation_override(&self) -> AggregationOverride {
        let names = self.names.clone();
        Arc::new(move |name: &str| {
            // asked for every new series: an empty registry answers without hashing
            let names = names.read();
            (!names.is_empty() && names.contains(name)).then_some((AggMethod::Average, 0.0))
        })
    }
}

type Job = (Post, oneshot::Sender<Result<Graph, PostError>>);

/// The handle handlers post through.
pub struct Writer {
    tx: SyncSender<Job>,
}

impl Writer {
    /// Starts the writer thread on its own connection.
    pub fn start(
        conn: Connection,
        sink: Arc<dyn Sink>,
        registry: SeriesRegistry,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::sync_channel(MAX_QUEUED);
        std::thread::Builder::new()
            .name("sumi-gf-writer".into())
            .spawn(move || run(conn, sink, registry, rx))?;
        Ok(Writer { tx })
    }

    /// In a cluster: posts go to the metadata log as one op per group, this node's
    /// applier applies them (as every node's does), and the writer appends their points
    /// to `sink` with the values the applier computed (see `replicated.rs`).
    pub fn start_logged(
        log: Arc<dyn OpLog>,
        waiters: Arc<Waiters>,
        sink: Arc<dyn Sink>,
    ) -> std::io::Result<Writer> {
        let (tx, rx) = mpsc::sync_channel(MAX_QUEUED);
        std::thread::Builder::new()
            .name("sumi-gf-writer".into())
            .spawn(move || run_logged(log.as_ref(), &waiters, sink.as_ref(), rx))?;
        Ok(Writer { tx })
    }

    /// Applies one post and returns the graph as it is afterwards.
    pub async fn post(&self, post: Post) -> Result<Graph, PostError> {
        let (reply, answer) = oneshot::channel();
        match self.tx.try_send((post, reply)) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(PostError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(PostError::Stopped),
        }
        answer.await.unwrap_or(Err(PostError::Stopped))
    }
}

fn run(mut conn: Connection, sink: Arc<dyn Sink>, registry: SeriesRegistry, rx: Receiver<Job>) {
    serve_groups(
        &rx,
        |jobs, batch| apply_group(&mut conn, sink.as_ref(), &registry, jobs, batch),
        |e, msg| match e {
            PostError::Unavailable(_) => PostError::Unavailable(msg),
            PostError::Busy => PostError::Busy,
            PostError::Stopped => PostError::Stopped,
            PostError::Log(_) => PostError::Log(msg),
            PostError::Db(_) => PostError::Db(DbError::Conflict(msg)),
        },
    );
}

fn run_logged(log: &dyn OpLog, waiters: &Waiters, sink: &dyn Sink, rx: Receiver<Job>) {
    serve_groups(
        &rx,
        |jobs, batch| {
            let posts: Vec<Post> = jobs.iter().map(|(p, _)| p.clone()).collect();
            post_through_log(log, waiters, sink, posts, batch)
        },
        |e, msg| match e {
            PostError::Unavailable(_) => PostError::Unavailable(msg),
            _ => PostError::Log(msg),
        },
    );
}

/// The writer thread's loop: takes every post waiting (up to [`MAX_GROUP`]) as one
/// group, applies it with `apply` and answers each post, with `failed` (given the
/// group's error and its message) when the group failed.
fn serve_groups(
    rx: &Receiver<Job>,
    mut apply: impl FnMut(&[Job], &mut Batch) -> Result<Vec<Graph>, PostError>,
    failed: impl Fn(&PostError, String) -> PostError,
) {
    let mut jobs: Vec<Job> = Vec::with_capacity(MAX_GROUP);
    let mut batch = Batch::new();
    while let Ok(first) = rx.recv() {
        jobs.push(first);
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => jobs.push(job),
                Err(_) => break,
            }
        }
        batch.clear();
        match apply(&jobs, &mut batch) {
            Ok(graphs) => {
                for ((_, reply), g) in jobs.drain(..).zip(graphs) {
                    let _ = reply.send(Ok(g));
                }
            }
            Err(e) => {
                warn!("growthforecast posts failed: {e}");
                let msg = e.to_string();
                for (_, reply) in jobs.drain(..) {
                    let _ = reply.send(Err(failed(&e, msg.clone())));
                }
            }
        }
    }
}

/// One group of posts through the metadata log: appended as one op, applied by this
/// node's applier, then its points appended to `sink`.
fn post_through_log(
    log: &dyn OpLog,
    waiters: &Waiters,
    sink: &dyn Sink,
    posts: Vec<Post>,
    batch: &mut Batch,
) -> Result<Vec<Graph>, PostError> {
    let now = crate::unix_now();
    let times: Vec<i64> = posts.iter().map(|p| p.timestamp.unwrap_or(now)).collect();
    let (seq, outcome) = waiters.register();
    let msg = OpMessage {
        origin: log.node_id(),
        seq,
        now,
        op: Op::Posts { posts },
        data_ends: None,
    };
    let payload = serde_json::to_vec(&msg).map_err(|e| PostError::Log(e.to_string()))?;
    if let Err(e) = log.append(&payload) {
        waiters.forget(seq);
        return Err(PostError::Log(format!("appending the posts: {e}")));
    }
    let applied = match outcome.recv_timeout(APPLY_WAIT) {
        Ok(Ok(Applied::Posts(applied))) => applied,
        Ok(Ok(other)) => {
            return Err(PostError::Log(format!(
                "unexpected result of posts: {other:?}"
            )))
        }
        Ok(Err(e)) => return Err(PostError::Db(DbError::Conflict(e.to_string()))),
        Err(_) => {
            waiters.forget(seq);
            return Err(PostError::Log(format!(
                "the posts are in the log but this node has not applied them within {} s",
                APPLY_WAIT.as_secs()
            )));
        }
    };
    let mut out = Vec::with_capacity(applied.len());
    for ((graph, point), ts) in applied.into_iter().zip(times) {
        if let Some(value) = point {
            batch.push(&graph.series, ts, value);
        }
        out.push(graph);
    }
    if !batch.is_empty() {
        sink.append_graph_points(batch)
            .map_err(|e| PostError::Unavailable(e.to_string()))?;
    }
    Ok(out)
}

/// Colours for new graphs without one, as GrowthForecast picks them (three of 33, 66,
/// 99, cc), chosen by the graph's name so that the same graph gets the same colour.
fn default_color(series: &str) -> String {
    const PARTS: [&str; 4] = ["33", "66", "99", "cc"];
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in series.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let pick = |shift: u32| PARTS[((h >> shift) % 4) as usize];
    format!("#{}{}{}", pick(0), pick(8), pick(16))
}

fn apply_group(
    conn: &mut Connection,
    sink: &dyn Sink,
    registry: &SeriesRegistry,
    jobs: &[Job],
    batch: &mut Batch,
) -> Result<Vec<Graph>, PostError> {
    let now = crate::unix_now();
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(|e| DbError::sql("starting a post transaction", e))?;
    let posts: Vec<&Post> = jobs.iter().map(|(p, _)| p).collect();
    let applied = apply_posts(&tx, registry, &posts, now)?;
    let mut out = Vec::with_capacity(jobs.len());
    for (post, (graph, point)) in posts.iter().zip(applied) {
        if let Some(value) = point {
            batch.push(&graph.series, post.timestamp.unwrap_or(now), value);
        }
        out.push(graph);
    }
    if !batch.is_empty() {
        sink.append_graph_points(batch)
            .map_err(|e| PostError::Unavailable(e.to_string()))?;
    }
    tx.commit()
        .map_err(|e| DbError::sql("committing posts", e))?;
    Ok(out)
}

/// Applies `posts` in order to the graphs' rows (in the caller's transaction), as
/// received at `now`: each graph as it is afterwards, and the value its point takes,
/// if any. What a single node's writer and a cluster node's applier of the metadata
/// log both run.
pub(crate) fn apply_posts(
    conn: &Connection,
    registry: &SeriesRegistry,
    posts: &[&Post],
    now: i64,
) -> Result<Vec<(Graph, Option<f64>)>, DbError> {
    posts
        .iter()
        .map(|post| apply_one(conn, registry, post, now))
        .collect()
}

/// Updates one graph's row; returns the graph and the value to store, if any.
fn apply_one(
    conn: &Connection,
    registry: &SeriesRegistry,
    post: &Post,
    now: i64,
) -> Result<(Graph, Option<f64>), DbError> {
    let existing = graph_by_names(conn, &post.service, &post.section, &post.graph)?;
    let Some(mut g) = existing else {
        let series = series_name(&post.service, &post.section, &post.graph);
        let color = post.color.clone().unwrap_or_else(|| default_color(&series));
        // Registered before the first point, so that the store creates the series
        // with the graph's aggregation.
        registry.insert(&series);
        let description = post.description.clone().unwrap_or_default();
        let mut st = conn
            .prepare_cached(
                "INSERT INTO graphs (service_name, section_name, graph_name, series, number, \
                 mode, derive, description, color, created_at, updated_at, timestamp) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?10, ?11)",
            )
            .map_err(|e| DbError::sql("creating a graph", e))?;
        st.execute(params![
            post.service,
            post.section,
            post.graph,
            series,
            post.number,
            post.mode.as_str(),
            post.mode == Mode::Derive,
            description,
            color,
            now,
            post.timestamp
        ])
        .map_err(|e| DbError::sql("creating a graph", e))?;
        let id = conn.last_insert_rowid();
        let g = graph_by_id(conn, id)?.ok_or_else(|| {
            DbError::sql("creating a graph", rusqlite::Error::QueryReturnedNoRows)
        })?;
        return Ok((g, Some(post.number)));
    };
    // A series made by other means (carbon) before the graph existed keeps its own
    // aggregation; later ones get the graph's.
    registry.insert(&g.series);
    let number = match post.mode {
        Mode::Count => g.number + post.number,
        _ => post.number,
    };
    let changed = post.mode != Mode::Modified || g.number != number;
    if changed {
        if let Some(c) = &post.color {
            g.color = c.clone();
        }
        g.number = number;
        g.mode = post.mode.as_str().to_string();
        g.updated_at = now;
        g.timestamp = post.timestamp;
        let mut st = conn
            .prepare_cached(
                "UPDATE graphs SET number = ?1, mode = ?2, color = ?3, updated_at = ?4, \
                 timestamp = ?5 WHERE id = ?6",
            )
            .map_err(|e| DbError::sql("updating a graph", e))?;
        st.execute(params![g.number, g.mode, g.color, now, g.timestamp, g.id])
            .map_err(|e| DbError::sql("updating a graph", e))?;
    }
    if let Some(d) = &post.description {
        g.description = d.clone();
        conn.execute(
            "UPDATE graphs SET description = ?1 WHERE id = ?2",
            params![d, g.id],
        )
        .map_err(|e| DbError::sql("updating a description", e))?;
    }
    Ok((g, changed.then_some(number)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::growthforecast::db::Db;
    use parking_lot::Mutex;
    use sumi_model::{AppendOutcome, SinkError};

    #[derive(Default)]
    struct Recorder {
        points: Mutex<Vec<(String, i64, f64)>>,
        refuse: std::sync::atomic::AtomicBool,
    }

    impl Sink for Recorder {
        fn append(&self, batch: &Batch) -> Result<AppendOutcome, SinkError> {
            if self.refuse.load(std::sync::atomic::Ordering::Relaxed) {
                return Err(SinkError::Unavailable("disk full".into()));
            }
            let mut p = self.points.lock();
            for (name, pt) in batch.iter() {
                p.push((name.to_string(), pt.ts, pt.value));
            }
            Ok(AppendOutcome {
                accepted: batch.len() as u64,
                ..AppendOutcome::default()
            })
        }
    }

    fn post(graph: &str, number: f64, mode: Mode, ts: i64) -> Post {
        Post {
            service: "svc".into(),
            section: "sec".into(),
            graph: graph.into(),
            number,
            mode,
            color: None,
            timestamp: Some(ts),
            description: None,
        }
    }

    fn apply(
        conn: &mut Connection,
        sink: &Recorder,
        reg: &SeriesRegistry,
        posts: Vec<Post>,
    ) -> Result<Vec<Graph>, PostError> {
        let jobs: Vec<Job> = posts
            .into_iter()
            .map(|p| (p, oneshot::channel().0))
            .collect();
        let mut batch = Batch::new();
        apply_group(conn, sink, reg, &jobs, &mut batch)
    }

    #[test]
    fn modes_in_one_group() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut conn = db.connect_again().unwrap();
        let sink = Recorder::default();
        let reg = SeriesRegistry::new();
        let out = apply(
            &mut conn,
            &sink,
            &reg,
            vec![
                post("g", 5.0, Mode::Gauge, 1000),
                post("g", 7.0, Mode::Gauge, 1010),
                post("c", 2.0, Mode::Count, 1000),
                post("c", 3.0, Mode::Count, 1010),
                post("m", 4.0, Mode::Modified, 1000),
                post("m", 4.0, Mode::Modified, 1010),
                post("m", 6.0, Mode::Modified, 1020),
                post("d", 100.0, Mode::Derive, 1000),
            ],
        )
        .unwrap();
        assert_eq!(out[1].number, 7.0);
        assert_eq!(out[3].number, 5.0, "count adds");
        assert_eq!(out[6].number, 6.0);
        assert!(out[7].derive);
        assert!(!out[0].derive);
        assert!(reg.contains("svc.sec.g"));
        let points = sink.points.lock().clone();
        let want: Vec<(String, i64, f64)> = [
            ("svc.sec.g", 1000, 5.0),
            ("svc.sec.g", 1010, 7.0),
            ("svc.sec.c", 1000, 2.0),
            ("svc.sec.c", 1010, 5.0),
            ("svc.sec.m", 1000, 4.0),
            // the unchanged modified post stores nothing
            ("svc.sec.m", 1020, 6.0),
            ("svc.sec.d", 1000, 100.0),
        ]
        .iter()
        .map(|(n, t, v)| (n.to_string(), *t, *v))
        .collect();
        assert_eq!(points, want);
        let g = db.graph("svc", "sec", "c").unwrap().unwrap();
        assert_eq!(g.number, 5.0);
        assert_eq!(g.timestamp, Some(1010));
        assert!(g.color.starts_with('#') && g.color.len() == 7);
    }

    #[test]
    fn refused_batch_rolls_back() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut conn = db.connect_again().unwrap();
        let sink = Recorder::default();
        let reg = SeriesRegistry::new();
        apply(
            &mut conn,
            &sink,
            &reg,
            vec![post("c", 2.0, Mode::Count, 1000)],
        )
        .unwrap();
        sink.refuse
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let err = apply(
            &mut conn,
            &sink,
            &reg,
            vec![post("c", 3.0, Mode::Count, 1010)],
        );
        assert!(matches!(err, Err(PostError::Unavailable(_))));
        assert_eq!(db.graph("svc", "sec", "c").unwrap().unwrap().number, 2.0);
    }

    #[test]
    fn description_and_colour() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::open(dir.path()).unwrap();
        let mut conn = db.connect_again().unwrap();
        let sink = Recorder::default();
        let reg = SeriesRegistry::new();
        let mut p = post("g", 1.0, Mode::Gauge, 1000);
        p.color = Some("#112233".into());
        p.description = Some("first".into());
        apply(&mut conn, &sink, &reg, vec![p]).unwrap();
        let mut p = post("g", 2.0, Mode::Gauge, 1010);
        p.description = Some("second".into());
        let g = apply(&mut conn, &sink, &reg, vec![p]).unwrap().remove(0);
        assert_eq!(
            (g.color.as_str(), g.description.as_str()),
            ("#112233", "second")
        );
        assert_eq!(db.graph_by_id(g.id).unwrap().unwrap().description, "second");
    }

    #[test]
    fn registry_overrides_aggregation() {
        let reg = SeriesRegistry::new();
        let hook = reg.aggregation_override();
        assert_eq!(hook("a.b.count"), None);
        reg.insert("a.b.count");
        assert_eq!(hook("a.b.count"), Some((AggMethod::Average, 0.0)));
        assert_eq!(default_color("a.b.c"), default_color("a.b.c"));
    }
}
