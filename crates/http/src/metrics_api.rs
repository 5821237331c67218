//! graphite-web's metrics API: `/metrics/find` (alias `/metrics?query=`),
//! `/metrics/expand` and `/metrics/index.json`, parameters as `metrics/views.py` reads
//! them.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use sumi_model::glob::PathPattern;
use sumi_query::attime::parse_at_time;
use sumi_query::source::FindNode;
use sumi_render::find as fmt;
use sumi_render::find::JsonResponseOptions;

use crate::fanout::Fanout;
use crate::params::Params;
use crate::{rendered, request_params, request_tz, server_error, unix_now, ApiError, AppState};

/// An integer parameter as `queryParamAsInt`: absent → default, otherwise Python's
/// `int()` of the text.
fn int_param(params: &Params, name: &str, default: i64) -> Result<i64, ApiError> {
    match params.get(name) {
        None => Ok(default),
        Some(v) => sumi_query::py::int(v).ok_or_else(|| {
            ApiError::bad_request(format_args!("Invalid int value {v:?} for param {name}"))
        }),
    }
}

fn json_opts(params: &Params, headers: &HeaderMap) -> JsonResponseOptions {
    JsonResponseOptions {
        jsonp: params
            .get("jsonp")
            .filter(|j| !j.is_empty())
            .map(str::to_string),
        pretty: params.get("pretty").is_some_and(|p| !p.is_empty()),
        ensure_ascii: JsonResponseOptions::ensure_ascii_for(
            headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()),
        ),
    }
}

fn no_cache(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// Where a find reads: this node's store, or the whole cluster (with the
/// partitions no replica answered for).
struct Finder<'a> {
    state: &'a AppState,
    fanout: Option<&'a Fanout>,
    auth: Option<String>,
    missing: crate::fanout::Gaps,
}

impl<'a> Finder<'a> {
    fn new(state: &'a AppState, params: &Params, auth: Option<String>) -> Finder<'a> {
        Finder {
            state,
            fanout: crate::fanout_for(state, params),
            auth,
            missing: crate::fanout::Gaps::default(),
        }
    }

    fn find_nodes(&mut self, query: &str, leaves_only: bool) -> Result<Vec<FindNode>, ApiError> {
        PathPattern::check(query).map_err(ApiError::bad_request)?;
        let nodes = match self.fanout {
            Some(f) => {
                let (nodes, missing) = f
                    .find(query, self.auth.as_deref())
                    .map_err(ApiError::bad_request)?;
                self.missing.extend(missing);
                nodes
            }
            None => self
                .state
                .store
                .find(&PathPattern::parse(query))
                .into_iter()
                .map(|e| FindNode {
                    path: e.path,
                    is_leaf: e.is_leaf,
                })
                .collect(),
        };
        // the anomaly detector's score series stay out of the tree unless asked for
        let scores = sumi_query::functions::anomaly::pattern_shows_scores(query);
        Ok(nodes
            .into_iter()
            .filter(|e| e.is_leaf || !leaves_only)
            .filter(|e| scores || !sumi_query::functions::anomaly::is_score_path(&e.path))
            .collect())
    }

    /// The response, marked partial when some partition had no replica.
    fn finish(&self, mut resp: Response) -> Response {
        if let Some(f) = self.fanout {
            crate::mark_partial(&mut resp, f.note_partial(&self.missing));
        }
        resp
    }
}

pub async fn find(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    find_with(state, params, &headers).await
}

pub(crate) async fn find_with(
    state: Arc<AppState>,
    params: Params,
    headers: &HeaderMap,
) -> Response {
    let opts = json_opts(&params, headers);
    let auth = crate::authorization(headers);
    match tokio::task::spawn_blocking(move || find_blocking(&state, &params, opts, auth)).await {
        Ok(Ok(resp)) => no_cache(resp),
        Ok(Err(e)) => e.into_response(),
        Err(e) => server_error(format_args!("find failed: {e}")),
    }
}

fn find_blocking(
    state: &AppState,
    params: &Params,
    opts: JsonResponseOptions,
    auth: Option<String>,
) -> Result<Response, ApiError> {
    let format = params.get("format").unwrap_or("treejson");
    let leaves_only = int_param(params, "leavesOnly", 0)? != 0;
    let wildcards = int_param(params, "wildcards", 0)? != 0;
    let position = int_param(params, "position", -1)?;
    let automatic_variants = int_param(params, "automatic_variants", 0)? != 0;
    // from/until/now are validated as graphite-web validates them; the tree has no
    // per-series time ranges to filter by.
    let tz = request_tz(state, params);
    let now = match params.get("now") {
        Some(v) => parse_at_time(v, tz, unix_now()).map_err(|e| {
            ApiError::bad_request(format_args!("Invalid value {v:?} for param now: {e}"))
        })?,
        None => unix_now(),
    };
    for name in ["from", "until"] {
        if let Some(v) = params.get(name).filter(|v| *v != "-1") {
            parse_at_time(v, tz, now).map_err(|e| {
                ApiError::bad_request(format_args!("Invalid value {v:?} for param {name}: {e}"))
            })?;
        }
    }
    let query = match params.get("query") {
        None => return Err(ApiError::bad_request("Missing required parameter 'query'")),
        Some("") => return Err(ApiError::bad_request("Required parameter 'query' is empty")),
        Some(q) => q,
    };
    let query = if format == "completer" {
        fmt::completer_query(query, automatic_variants)
    } else {
        query.to_string()
    };
    let mut finder = Finder::new(state, params, auth);
    let nodes = finder.find_nodes(&query, leaves_only)?;
    let out = match format {
        "treejson" => fmt::tree_json(&query, &nodes, wildcards, &opts),
        "completer" => fmt::completer(&nodes, wildcards, &opts),
        "nodelist" => fmt::node_list(&nodes, position, &opts).map_err(ApiError::bad_request)?,
        "json" => {
            let now = unix_now() as f64;
            fmt::find_json(&nodes, &|_| vec![(now, now)], &opts)
        }
        // graphite-web's cluster protocol; intervals as for format=json
        "pickle" | "msgpack" => {
            let now = unix_now() as f64;
            if format == "pickle" {
                sumi_render::find_pickle(&nodes, &|_| vec![(now, now)])
            } else {
                sumi_render::find_msgpack(&nodes, &|_| vec![(now, now)])
            }
        }
        _ => {
            return Err(ApiError::bad_request(
                "Invalid value for 'format' parameter",
            ))
        }
    };
    Ok(finder.finish(rendered(out)))
}

pub async fn expand(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    let opts = json_opts(&params, &headers);
    let auth = crate::authorization(&headers);
    let work = move || -> Result<Response, ApiError> {
        let group_by_expr = int_param(&params, "groupByExpr", 0)? != 0;
        let leaves_only = int_param(&params, "leavesOnly", 0)? != 0;
        let mut finder = Finder::new(&state, &params, auth);
        let results: Vec<(String, Vec<FindNode>)> = params
            .get_all("query")
            .into_iter()
            .map(|q| Ok((q.to_string(), finder.find_nodes(q, false)?)))
            .collect::<Result<_, ApiError>>()?;
        Ok(finder.finish(rendered(fmt::expand(
            &results,
            group_by_expr,
            leaves_only,
            &opts,
        ))))
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => e.into_response(),
        Err(e) => server_error(format_args!("expand failed: {e}")),
    }
}

pub async fn index_json(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    let opts = json_opts(&params, &headers);
    let auth = crate::authorization(&headers);
    let work = move || {
        let mut finder = Finder::new(&state, &params, auth);
        let leaves: Vec<String> = finder
            .find_nodes("**", true)
            .unwrap_or_default()
            .into_iter()
            .map(|n| n.path)
            .collect();
        finder.finish(rendered(fmt::index_json(&leaves, &opts)))
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(r) => r,
        Err(e) => server_error(format_args!("index failed: {e}")),
    }
}
