//! HTTP: URLs to the stages behind them. One module per API:
//!
//! - [`render`]: graphite-web's `/render` (json, csv, raw, pickle, msgpack).
//! - `image`: graph images (PNG, SVG) for `/render?format=png|svg` and
//!   GrowthForecast's `/graph/...`.
//! - [`metrics_api`]: `/metrics/find` (and its alias `/metrics?query=`),
//!   `/metrics/expand`, `/metrics/index.json`.
//! - [`ingest_api`]: points over HTTP: `/api/v0/tsdb` (JSON bulk), `/api/v1/write`
//!   (Prometheus remote write).
//! - [`functions_api`]: `/functions` (the function definitions) and `/version`.
//! - [`import_api`]: history from `sumi import --url` (`POST /api/v0/import`).
//! - [`admin_api`]: deleting and renaming series (`/api/v1/series/delete`,
//!   `/api/v1/series/rename`).
//! - [`ops`]: `/metrics` in Prometheus text format (without `query`), `/health` and
//!   `/ready`.
//! - [`auth`]: access control (tokens for reads, writes, admin), a middleware around
//!   every route.
//! - [`reqstats`]: request counts and latency per route, a middleware around that.
//! - [`params`]: request parameters merged as Django merges them.
//! - [`source`]: the store seen through the query crate's `SeriesSource` seam.
//! - [`fanout`]: on a cluster node, reads for the whole cluster (one replica of each
//!   partition asked in parallel, merged; partial answers say so) and the internal
//!   endpoints the other nodes ask.
//! - [`handoff`]: a storage node's partitions that are still joining (copied from a
//!   peer, catching up) and the partition dump a joining node copies.
//! - [`growthforecast`]: GrowthForecast's HTTP API (`/api/...`, `/json/...`, `/graph/...`,
//!   `/xport/...`) and its metadata in SQLite.
//! - [`ui`]: the web UI (GrowthForecast's pages and a metric browser), assets embedded.
//!
//! Handlers parse parameters and hand the work to blocking threads (evaluation reads
//! the store through mmap and may take a while); errors a client caused are 400s with
//! a message saying what was wrong, never a 500.

pub mod admin_api;
pub mod anomaly_api;
pub mod auth;
pub mod fanout;
pub mod functions_api;
pub mod growthforecast;
pub mod handoff;
pub(crate) mod image;
pub mod import_api;
pub mod ingest_api;
pub mod metrics_api;
pub mod ops;
pub mod params;
mod rename;
pub mod render;
pub mod reqstats;
pub mod source;
pub mod tags_api;
pub mod ui;

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get, post};
use axum::Router;
use chrono_tz::Tz;
use sumi_ingest::IngestStats;
use sumi_model::Sink;
use sumi_query::Registry;
use sumi_store::Store;

use crate::params::Params;
use crate::source::{QueryLimits, StoreSource};

/// What every handler shares, built once by [`AppState::new`].
pub struct AppState {
    pub store: Arc<Store>,
    /// Where points posted over HTTP go (the ingest routes, GrowthForecast): the store,
    /// through the same seam the carbon listeners use.
    pub sink: Arc<dyn Sink>,
    pub source: StoreSource,
    /// What one `/render` request may read.
    pub limits: QueryLimits,
    pub ingest: Arc<IngestStats>,
    pub functions: Registry,
    /// graphite-web's `TIME_ZONE`: the zone of requests without `tz`.
    pub default_tz: Tz,
    pub started: Instant,
    /// GrowthForecast's metadata database and post writer.
    pub gf: growthforecast::Gf,
    /// Who may call what (see [`auth`]).
    pub auth: Arc<auth::Auth>,
    /// Request counts and latencies, for `/metrics` and self-monitoring.
    pub http_stats: Arc<reqstats::HttpStats>,
    /// What `/ready` answers; the server marks it ready and stopping.
    pub readiness: Arc<ops::Readiness>,
    /// More Prometheus text for `/metrics` from stages outside this crate (a cluster
    /// node's producer and consumer), written after the store's.
    pub extra_metrics: Vec<MetricsWriter>,
    /// Anomaly events (the server's ingest-time detectors), for `/api/anomalies`,
    /// `/events/get_data`, the anomalies page and `/metrics`; `None`: no detectors.
    pub anomalies: Option<Arc<dyn anomaly_api::AnomalyFeed>>,
    /// On a cluster node with peers: reads answered for the whole cluster (see
    /// [`fanout`]); `None` reads this node's store only.
    pub fanout: Option<Arc<fanout::Fanout>>,
}

/// Writes Prometheus text lines for `/metrics` (see [`AppState::extra_metrics`]).
pub type MetricsWriter = Arc<dyn Fn(&mut String) + Send + Sync>;

/// How the HTTP stage is configured (the server's `[http]` and `[auth]` sections).
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// graphite-web's `TIME_ZONE`, a tz database name: the zone of requests without
    /// `tz`. Default `UTC`, as graphite-web's.
    pub timezone: String,
    /// What one `/render` request may read (default: [`QueryLimits::default`]).
    pub limits: QueryLimits,
    /// Who may call what (default: [`auth::Auth::disabled`], every endpoint open).
    pub auth: Arc<auth::Auth>,
    /// In a cluster: the metadata log GrowthForecast's mutations go through (see
    /// [`growthforecast::replicated`]); `None` on a single node.
    pub gf_log: Option<Arc<dyn growthforecast::replicated::OpLog>>,
}

impl Default for HttpOptions {
    fn default() -> HttpOptions {
        HttpOptions {
            timezone: "UTC".to_string(),
            limits: QueryLimits::default(),
            auth: Arc::new(auth::Auth::disabled()),
            gf_log: None,
        }
    }
}

/// A configuration error of the HTTP stage.
#[derive(Debug, thiserror::Error)]
pub enum HttpConfigError {
    #[error("unknown time zone {0:?} (expected a tz database name such as UTC or Europe/Berlin)")]
    TimeZone(String),
    #[error(transparent)]
    GrowthForecast(#[from] growthforecast::GfStartError),
}

impl AppState {
    /// The shared state. GrowthForecast's database lives in `data_dir`; `gf_series`
    /// is the registry whose aggregation override the store was opened with (see
    /// [`growthforecast::SeriesRegistry`]).
    pub fn new(
        store: Arc<Store>,
        ingest: Arc<IngestStats>,
        data_dir: &Path,
        gf_series: growthforecast::SeriesRegistry,
        options: HttpOptions,
    ) -> Result<AppState, HttpConfigError> {
        let sink: Arc<dyn Sink> = store.clone();
        AppState::with_sink(store, sink, ingest, data_dir, gf_series, options)
    }

    /// [`AppState::new`] with posted points going to `sink` rather than the store (a
    /// cluster node's log producer); reads still come from `store`.
    pub fn with_sink(
        store: Arc<Store>,
        sink: Arc<dyn Sink>,
        ingest: Arc<IngestStats>,
        data_dir: &Path,
        gf_series: growthforecast::SeriesRegistry,
        options: HttpOptions,
    ) -> Result<AppState, HttpConfigError> {
        let tz = sumi_query::attime::lookup_timezone(&options.timezone)
            .ok_or_else(|| HttpConfigError::TimeZone(options.timezone.clone()))?;
        let gf = match &options.gf_log {
            None => growthforecast::Gf::open(data_dir, sink.clone(), gf_series)?,
            Some(log) => growthforecast::Gf::open_logged(
                data_dir,
                store.clone(),
                sink.clone(),
                gf_series,
                log.clone(),
            )?,
        };
        Ok(AppState {
            gf,
            sink,
            source: StoreSource::new(store.clone()),
            limits: options.limits,
            store,
            ingest,
            functions: Registry::standard(),
            default_tz: tz,
            started: Instant::now(),
            auth: options.auth,
            http_stats: Arc::new(reqstats::HttpStats::default()),
            readiness: Arc::new(ops::Readiness::default()),
            extra_metrics: Vec::new(),
            anomalies: None,
            fanout: None,
        })
    }
}

/// The routes, behind access control ([`auth::require`]), behind request counting
/// ([`reqstats::record`], outermost, so refused requests are counted too).
pub fn router(state: Arc<AppState>) -> Router {
    let auth = state.auth.clone();
    let stats = state.http_stats.clone();
    Router::new()
        .route("/render", any(render::handle))
        .route("/render/", any(render::handle))
        .route("/metrics", any(metrics_or_find))
        .route("/metrics/", any(metrics_or_find))
        .route("/metrics/find", any(metrics_api::find))
        .route("/metrics/find/", any(metrics_api::find))
        .route("/metrics/expand", any(metrics_api::expand))
        .route("/metrics/expand/", any(metrics_api::expand))
        .route("/metrics/index.json", any(metrics_api::index_json))
        .route(
            "/api/v0/tsdb",
            post(ingest_api::json_bulk).layer(DefaultBodyLimit::max(ingest_api::MAX_BODY_BYTES)),
        )
        .route(
            "/api/v1/write",
            post(ingest_api::remote_write).layer(DefaultBodyLimit::max(ingest_api::MAX_BODY_BYTES)),
        )
        .route(
            "/api/v0/import",
            post(import_api::import).layer(DefaultBodyLimit::max(import_api::MAX_BODY_BYTES)),
        )
        .route("/functions", any(functions_api::list))
        .route("/functions/", any(functions_api::list))
        .route("/functions/{name}", any(functions_api::details))
        .route("/version", any(functions_api::version))
        .route("/version/", any(functions_api::version))
        .route("/api/v1/series/delete", post(admin_api::delete))
        .route("/api/v1/series/rename", post(admin_api::rename))
        .route("/api/anomalies", get(anomaly_api::list))
        .route("/events/get_data", any(anomaly_api::get_data))
        .route("/events/get_data/", any(anomaly_api::get_data))
        .route("/health", get(ops::health))
        .route("/ready", get(ops::ready))
        .merge(growthforecast::routes())
        .merge(tags_api::routes())
        .merge(fanout::routes())
        .merge(ui::routes())
        .with_state(state)
        .layer(from_fn_with_state(auth, auth::require))
        .layer(from_fn_with_state(stats, reqstats::record))
}

/// `/metrics` is two things: graphite-web's alias of `/metrics/find` (when there is a
/// `query`), and the Prometheus exposition every operator expects there.
async fn metrics_or_find(
    state: State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    query: RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.0.as_deref(), &body);
    if params.contains("query") {
        metrics_api::find_with(state.0, params, &headers).await
    } else {
        ops::prometheus(&state.0)
    }
}

/// GET parameters, plus the form body of a POST.
pub(crate) fn request_params(
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
    body: &[u8],
) -> Params {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|ct| {
            let ct = ct.to_ascii_lowercase();
            ct.starts_with("application/x-www-form-urlencoded") || ct.is_empty()
        })
        .unwrap_or(true);
    let form = (*method == Method::POST && is_form && !body.is_empty()).then_some(body);
    Params::parse(query, form)
}

/// An answer that is not a success: a status and a message for the client.
#[derive(Debug)]
pub(crate) struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    pub(crate) fn bad_request(msg: impl std::fmt::Display) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: msg.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        text_error(self.status, self.message)
    }
}

/// Every answer that is not a success and not JSON: `status` with the message as one
/// line of plain text.
pub(crate) fn text_error(status: StatusCode, msg: impl std::fmt::Display) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        format!("{msg}\n"),
    )
        .into_response()
}

/// A client error: 400 with the message as plain text.
pub(crate) fn bad_request(msg: impl std::fmt::Display) -> Response {
    text_error(StatusCode::BAD_REQUEST, msg)
}

/// A server-side failure: 500 with the message.
pub(crate) fn server_error(msg: impl std::fmt::Display) -> Response {
    text_error(StatusCode::INTERNAL_SERVER_ERROR, msg)
}

pub(crate) fn rendered(r: sumi_render::Rendered) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, r.content_type)],
        r.body,
    )
        .into_response()
}

/// The time zone of a request: its `tz` when valid (graphite-web ignores an unknown
/// one), the configured default otherwise.
pub(crate) fn request_tz(state: &AppState, params: &Params) -> Tz {
    params
        .get("tz")
        .and_then(sumi_query::attime::lookup_timezone)
        .unwrap_or(state.default_tz)
}

pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// The fan-out to use for a read: the node's, unless the request asks for this node's
/// own data (`local=1`, as graphite-web's cluster requests say it).
pub(crate) fn fanout_for<'a>(state: &'a AppState, params: &Params) -> Option<&'a fanout::Fanout> {
    let local = params
        .get("local")
        .is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    if local {
        None
    } else {
        state.fanout.as_deref()
    }
}

/// The client's `Authorization` header, passed on to the peers a read asks.
pub(crate) fn authorization(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Adds [`fanout::PARTIAL_HEADER`] to a response when some partitions had no replica.
pub(crate) fn mark_partial(resp: &mut Response, partial: Option<String>) {
    if let Some(v) = partial.and_then(|v| axum::http::HeaderValue::from_str(&v).ok()) {
        resp.headers_mut().insert(fanout::PARTIAL_HEADER, v);
    }
}
