//! GrowthForecast's HTTP API on top of sumi (see `docs/growthforecast.md`).
//!
//! - `names.rs`: service/section/graph names as Graphite nodes (the escaping rule).
//! - `db.rs`, `migrations.rs`: the metadata database (SQLite in the data directory).
//! - `writer.rs`: posts, applied in group commits to SQLite and the store.
//! - `form.rs`: request parameters (query string, form or multipart body).
//! - `json.rs`: the JSON shapes GrowthForecast answers with.
//! - `view.rs`: what a graph shows, as Graphite targets over its one series.
//! - `graph.rs`: what a graph's image shows (drawn by `crate::image`) and summaries.
//! - `api.rs`: `/api/...`, `/json/...`, deletes, vertical rules.
//! - `draw.rs`: `/graph`, `/summary`, `/xport` of graphs and complex graphs.

pub mod api;
pub mod db;
pub mod draw;
pub mod form;
pub mod graph;
pub mod json;
pub mod migrations;
pub mod names;
pub mod replicated;
pub mod view;
pub mod writer;

use std::path::Path;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use serde_json::json;
use sumi_model::Sink;

pub use db::{Complex, ComplexItem, Db, DbError, Graph};
pub use writer::{SeriesRegistry, Writer};

use crate::AppState;

/// The GrowthForecast side of the server: the database and the post writer.
pub struct Gf {
    pub db: Arc<Db>,
    pub writer: Writer,
    pub registry: SeriesRegistry,
    /// In a cluster: mutations go through the metadata log (`replicated.rs`).
    pub log: Option<Arc<dyn replicated::OpLog>>,
    /// In a cluster: this node's applier of the metadata log, until the server takes
    /// it to run it on the log's consumer ([`Gf::take_applier`]).
    applier: parking_lot::Mutex<Option<replicated::Applier>>,
    /// In a cluster: this node's requests waiting for their op to be applied.
    waiters: Arc<replicated::Waiters>,
    /// In a cluster: the applier's figures.
    stats: Option<Arc<replicated::LogStats>>,
}

/// Why the GrowthForecast stage could not start.
#[derive(Debug, thiserror::Error)]
pub enum GfStartError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("cannot start the growthforecast writer thread: {0}")]
    Thread(#[from] std::io::Error),
    #[error(transparent)]
    Applier(#[from] replicated::ApplierError),
}

impl Gf {
    /// Opens the database in `data_dir`, registers every graph's series with
    /// `registry` and starts the writer.
    pub fn open(
        data_dir: &Path,
        sink: Arc<dyn Sink>,
        registry: SeriesRegistry,
    ) -> Result<Gf, GfStartError> {
        let db = Arc::new(Db::open(data_dir)?);
        for series in db.series_names()? {
            registry.insert(&series);
        }
        let writer = Writer::start(db.connect_again()?, sink, registry.clone())?;
        Ok(Gf {
            db,
            writer,
            registry,
            log: None,
            applier: parking_lot::Mutex::new(None),
            waiters: Arc::new(replicated::Waiters::default()),
            stats: None,
        })
    }

    /// [`Gf::open`] for a cluster node: mutations go to `log`, and the database is
    /// written only by the applier ([`Gf::take_applier`]). A database that was not
    /// made from the log is refused.
    pub fn open_logged(
        data_dir: &Path,
        store: Arc<sumi_store::Store>,
        sink: Arc<dyn Sink>,
        registry: SeriesRegistry,
        log: Arc<dyn replicated::OpLog>,
    ) -> Result<Gf, GfStartError> {
        let db = Arc::new(Db::open(data_dir)?);
        for series in db.series_names()? {
            registry.insert(&series);
        }
        let waiters = Arc::new(replicated::Waiters::default());
        let applier = replicated::Applier::open(
            &db,
            store,
            registry.clone(),
            log.node_id(),
            waiters.clone(),
        )?;
        let writer = Writer::start_logged(log.clone(), waiters.clone(), sink)?;
        let stats = Some(applier.stats());
        Ok(Gf {
            db,
            writer,
            registry,
            log: Some(log),
            applier: parking_lot::Mutex::new(Some(applier)),
            waiters,
            stats,
        })
    }

    /// The applier of the metadata log, once (in a cluster).
    pub fn take_applier(&self) -> Option<replicated::Applier> {
        self.applier.lock().take()
    }

    /// In a cluster: the applier's figures for `/metrics`, while it is here or running.
    pub fn log_stats(&self) -> Option<Arc<replicated::LogStats>> {
        self.log.as_ref()?;
        self.stats.clone()
    }

    /// Runs a mutation (blocking): on a single node, applied here; in a cluster,
    /// appended to the metadata log and answered once this node has applied it.
    pub(crate) fn run(
        &self,
        store: &sumi_store::Store,
        op: replicated::Op,
    ) -> Result<replicated::Applied, GfError> {
        match &self.log {
            None => api::apply_op(&self.db, store, &self.registry, &op, crate::unix_now()),
            Some(log) => replicated::submit(log.as_ref(), &self.waiters, op),
        }
    }
}

/// A failed GrowthForecast request.
#[derive(Debug, thiserror::Error)]
pub enum GfError {
    #[error(transparent)]
    Db(#[from] DbError),
    #[error("{0} not found")]
    NotFound(String),
    /// Parameters that fail validation: 400 with GrowthForecast's `messages`.
    #[error("invalid parameters: {}", .0.join("; "))]
    Invalid(Vec<String>),
    #[error(transparent)]
    Param(#[from] view::ParamError),
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    #[error("evaluating the graph's targets: {0}")]
    Query(String),
    #[error(transparent)]
    Graph(#[from] sumi_render::graph::GraphError),
    #[error(transparent)]
    Post(#[from] writer::PostError),
    #[error("request failed: {0}")]
    Internal(String),
}

impl IntoResponse for GfError {
    fn into_response(self) -> Response {
        let text = |status: StatusCode, msg: String| crate::text_error(status, msg);
        match self {
            GfError::Invalid(messages) => (
                StatusCode::BAD_REQUEST,
                axum::Json(json!({"error": 1, "messages": messages})),
            )
                .into_response(),
            GfError::NotFound(what) => text(StatusCode::NOT_FOUND, format!("{what} not found")),
            GfError::Param(e) => text(StatusCode::BAD_REQUEST, e.to_string()),
            GfError::BadRequest(m) => text(StatusCode::BAD_REQUEST, m),
            GfError::Conflict(m) | GfError::Db(DbError::Conflict(m)) => {
                text(StatusCode::CONFLICT, m)
            }
            GfError::Graph(e) if e.is_client_error() => {
                text(StatusCode::BAD_REQUEST, e.to_string())
            }
            GfError::Post(
                writer::PostError::Busy
                | writer::PostError::Unavailable(_)
                | writer::PostError::Log(_),
            ) => text(StatusCode::SERVICE_UNAVAILABLE, self.to_string()),
            other => text(StatusCode::INTERNAL_SERVER_ERROR, other.to_string()),
        }
    }
}

/// Runs `f` on a blocking thread (SQLite and the store block).
pub(crate) async fn blocking<T: Send + 'static>(
    state: Arc<AppState>,
    f: impl FnOnce(&AppState) -> Result<T, GfError> + Send + 'static,
) -> Result<T, GfError> {
    tokio::task::spawn_blocking(move || f(&state))
        .await
        .map_err(|e| GfError::Internal(e.to_string()))?
}

/// The routes of GrowthForecast's API.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/api/{service}/{section}/{graph}",
            post(api::post_number).get(api::get_graph),
        )
        .route(
            "/json/graph/{service}/{section}/{graph}",
            get(api::json_graph_by_name),
        )
        .route("/json/graph/{id}", get(api::json_graph_by_id))
        .route(
            "/json/complex/{service}/{section}/{graph}",
            get(api::json_complex_by_name),
        )
        .route("/json/complex/{id}", get(api::json_complex_by_id))
        .route("/json/list/graph", get(api::list_graph))
        .route("/json/list/complex", get(api::list_complex))
        .route("/json/list/all", get(api::list_all))
        .route("/json/list/graph_tree", get(api::list_tree))
        .route("/json/create/complex", post(api::create_complex))
        .route("/json/edit/{kind}/{id}", post(api::edit))
        .route(
            "/json/delete/graph/{service}/{section}/{graph}",
            post(api::delete_graph_by_name),
        )
        .route("/json/delete/graph/{id}", post(api::delete_graph_by_id))
        .route(
            "/json/delete/complex/{service}/{section}/{graph}",
            post(api::delete_complex_by_name),
        )
        .route("/json/delete/complex/{id}", post(api::delete_complex_by_id))
        .route(
            "/delete/{service}/{section}/{graph}",
            post(api::delete_graph_by_name),
        )
        .route("/delete/{service}/{section}", post(api::delete_section))
        .route("/delete_complex/{id}", post(api::delete_complex_by_id))
        .route("/vrule/api", post(api::add_vrule))
        .route("/vrule/api/{*path}", post(api::add_vrule))
        .route("/vrule/summary", get(api::vrule_summary))
        .route("/vrule/summary/{*path}", get(api::vrule_summary))
        .route("/{method}/{service}/{section}/{graph}", get(draw::single))
        .route(
            "/complex/{method}/{service}/{section}/{graph}",
            get(draw::complex),
        )
        .route("/{method}/{spec}", get(draw::adhoc))
}
