//! graphite-web's tag API (`graphite/tags/views.py`): `/tags`, `/tags/<tag>`,
//! `/tags/tagSeries`, `/tags/tagMultiSeries`, `/tags/delSeries`, `/tags/findSeries`,
//! `/tags/autoComplete/tags` and `/tags/autoComplete/values`, over the store's tag
//! index.
//!
//! Answers are JSON as graphite-web's `jsonResponse` writes them (`pretty` indents and
//! sorts keys); failures are `{"error": message}` with 400 for what graphite-web
//! raises as `ValueError` (a bad tag expression, a bad `limit`) or `HttpError(400)`
//! (a missing parameter), 500 for the rest (a path carbon refuses), and 405 for a
//! method the view refuses.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use axum::Router;
use serde_json::{json, Value};
use sumi_query::source::SourceError;
use sumi_store::{TagExpr, TagQueryError, AUTOCOMPLETE_LIMIT};

use crate::fanout::{AutoCompleteReq, Fanout};
use crate::params::Params;
use crate::{request_params, AppState};

/// The `/tags` routes, to merge into the main router.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/tags", any(list))
        .route("/tags/", any(list))
        .route("/tags/tagSeries", any(tag_series))
        .route("/tags/tagMultiSeries", any(tag_multi_series))
        .route("/tags/delSeries", any(del_series))
        .route("/tags/findSeries", any(find_series))
        .route("/tags/autoComplete/tags", any(auto_complete_tags))
        .route("/tags/autoComplete/values", any(auto_complete_values))
        .route("/tags/{*tag}", any(details))
}

/// A request's merged parameters.
struct Req {
    params: Params,
}

impl Req {
    fn new(method: Method, headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> Req {
        Req {
            params: request_params(&method, headers, query, body),
        }
    }

    /// `path` values, or graphite-web's `path[]` form.
    fn list(&self, key: &str) -> Vec<String> {
        let plain = self.params.get_all(key);
        let list = if plain.is_empty() {
            self.params.get_all(&format!("{key}[]"))
        } else {
            plain
        };
        list.into_iter().map(str::to_string).collect()
    }

    fn pretty(&self) -> bool {
        self.params.get("pretty").is_some_and(|p| !p.is_empty())
    }
}

fn json_response(status: StatusCode, value: &Value, pretty: bool) -> Response {
    let body = if pretty {
        serde_json::to_string_pretty(value)
    } else {
        serde_json::to_string(value)
    }
    .unwrap_or_else(|_| "null".to_string());
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn ok(req: &Req, value: Value) -> Response {
    json_response(StatusCode::OK, &value, req.pretty())
}

fn error(req: &Req, status: StatusCode, message: impl std::fmt::Display) -> Response {
    json_response(
        status,
        &json!({ "error": message.to_string() }),
        req.pretty(),
    )
}

/// A read answered by the whole cluster when this node fans out (`None` when it
/// reads its own store): `work` runs on a blocking thread; the answer is marked
/// partial when some partition had no live replica.
async fn cluster_read<T, F>(
    state: &Arc<AppState>,
    req: &Req,
    headers: &HeaderMap,
    work: F,
) -> Option<Result<(T, Option<String>), Response>>
where
    T: Send + 'static,
    F: FnOnce(&Fanout, Option<&str>) -> Result<(T, crate::fanout::Gaps), SourceError>
        + Send
        + 'static,
{
    crate::fanout_for(state, &req.params)?;
    let auth = crate::authorization(headers);
    let st = state.clone();
    let done = tokio::task::spawn_blocking(move || {
        let Some(f) = st.fanout.as_deref() else {
            return Err(SourceError::Storage(
                "this node has no cluster peers".into(),
            ));
        };
        work(f, auth.as_deref()).map(|(t, missing)| (t, f.note_partial(&missing)))
    })
    .await;
    Some(match done {
        Ok(Ok(answer)) => Ok(answer),
        Ok(Err(SourceError::Invalid(m))) => Err(error(req, StatusCode::BAD_REQUEST, m)),
        Ok(Err(e)) => Err(error(req, StatusCode::INTERNAL_SERVER_ERROR, e)),
        Err(e) => Err(error(req, StatusCode::INTERNAL_SERVER_ERROR, e)),
    })
}

fn ok_partial(req: &Req, value: Value, partial: Option<String>) -> Response {
    let mut resp = ok(req, value);
    crate::mark_partial(&mut resp, partial);
    resp
}

fn method_not_allowed() -> Response {
    StatusCode::METHOD_NOT_ALLOWED.into_response()
}

/// graphite-web's status for a failed tag query: `ValueError` (bad spec, nothing
/// positive) is 400, a regex its database cannot run is 500.
fn query_error(req: &Req, e: TagQueryError) -> Response {
    let status = match e {
        TagQueryError::Regex { .. } => StatusCode::INTERNAL_SERVER_ERROR,
        TagQueryError::Spec(_) | TagQueryError::AllMatchEmpty => StatusCode::BAD_REQUEST,
    };
    error(req, status, e)
}

/// `limit` as Python's `int()` reads it (a bad one is a `ValueError`: 400); empty or
/// absent is no limit, a negative one (SQL `LIMIT -1`) too.
fn limit(req: &Req) -> Result<Option<usize>, String> {
    match req.params.get("limit").filter(|l| !l.is_empty()) {
        None => Ok(None),
        Some(v) => match sumi_query::py::int(v) {
            Some(n) => Ok(usize::try_from(n).ok()),
            None => Err(format!("invalid literal for int() with base 10: '{v}'")),
        },
    }
}

fn parse_exprs(exprs: &[String]) -> Result<Vec<TagExpr>, TagQueryError> {
    exprs.iter().map(|e| TagExpr::parse(e)).collect()
}

/// `GET /tags`: `[{"id": .., "tag": ..}, ...]`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::GET {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let limit = match limit(&req) {
        Ok(l) => l,
        Err(m) => return error(&req, StatusCode::BAD_REQUEST, m),
    };
    let filter = req.params.get("filter").map(str::to_string);
    let cluster = cluster_read(&state, &req, &headers, move |f, auth| {
        f.tags(filter.as_deref(), limit, auth)
    });
    if let Some(answer) = cluster.await {
        return match answer {
            // tag ids are each node's own: the merged tags are numbered in order
            Ok((tags, partial)) => ok_partial(
                &req,
                Value::Array(
                    tags.into_iter()
                        .enumerate()
                        .map(|(i, t)| json!({ "id": i + 1, "tag": t }))
                        .collect(),
                ),
                partial,
            ),
            Err(resp) => resp,
        };
    }
    match state.store.tags(req.params.get("filter"), limit) {
        Ok(tags) => ok(
            &req,
            Value::Array(
                tags.into_iter()
                    .map(|t| json!({ "id": t.id, "tag": t.tag }))
                    .collect(),
            ),
        ),
        Err(e) => query_error(&req, e),
    }
}

/// `GET /tags/<tag>`: `{"id", "tag", "values": [{"id", "value", "count"}]}`, or
/// `null` for an unknown tag.
pub async fn details(
    State(state): State<Arc<AppState>>,
    Path(tag): Path<String>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::GET {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let limit = match limit(&req) {
        Ok(l) => l,
        Err(m) => return error(&req, StatusCode::BAD_REQUEST, m),
    };
    let filter = req.params.get("filter").map(str::to_string);
    let wanted = tag.clone();
    let cluster = cluster_read(&state, &req, &headers, move |f, auth| {
        f.tag_values(&wanted, filter.as_deref(), limit, auth)
    });
    if let Some(answer) = cluster.await {
        return match answer {
            Ok((None, partial)) => ok_partial(&req, Value::Null, partial),
            // value ids are each node's own: the merged values are numbered in order
            Ok((Some(values), partial)) => {
                let values: Vec<Value> = values
                    .into_iter()
                    .enumerate()
                    .map(|(i, (v, n))| json!({ "id": i + 1, "value": v, "count": n }))
                    .collect();
                ok_partial(
                    &req,
                    json!({ "id": 1, "tag": tag, "values": values }),
                    partial,
                )
            }
            Err(resp) => resp,
        };
    }
    match state
        .store
        .tag_values(&tag, req.params.get("filter"), limit)
    {
        Ok(None) => ok(&req, Value::Null),
        Ok(Some((id, values))) => {
            let values: Vec<Value> = values
                .into_iter()
                .map(|v| json!({ "id": v.id, "value": v.value, "count": v.count }))
                .collect();
            ok(&req, json!({ "id": id, "tag": tag, "values": values }))
        }
        Err(e) => query_error(&req, e),
    }
}

/// `POST /tags/tagSeries` (`path`): the canonical path, as a JSON string.
pub async fn tag_series(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let Some(path) = req.params.get("path").filter(|p| !p.is_empty()) else {
        return error(&req, StatusCode::BAD_REQUEST, "no path specified");
    };
    let path = path.to_string();
    let store = state.store.clone();
    match tokio::task::spawn_blocking(move || store.tag_series(&path)).await {
        Ok(Ok(name)) => ok(&req, Value::String(name)),
        Ok(Err(e)) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `POST /tags/tagMultiSeries` (`path` or `path[]`, repeated): the canonical paths.
pub async fn tag_multi_series(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let paths = req.list("path");
    if paths.is_empty() {
        return error(&req, StatusCode::BAD_REQUEST, "no paths specified");
    }
    let store = state.store.clone();
    let done = tokio::task::spawn_blocking(move || {
        paths
            .iter()
            .map(|p| store.tag_series(p))
            .collect::<Result<Vec<String>, _>>()
    })
    .await;
    match done {
        Ok(Ok(names)) => ok(&req, json!(names)),
        Ok(Err(e)) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `POST /tags/delSeries` (`path` or `path[]`): takes the series out of the tag
/// index (their data stays, as in graphite-web); answers `true`.
pub async fn del_series(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let paths = req.list("path");
    if paths.is_empty() {
        return error(&req, StatusCode::BAD_REQUEST, "no path specified");
    }
    let store = state.store.clone();
    let done =
        tokio::task::spawn_blocking(move || paths.iter().try_for_each(|p| store.untag_series(p)))
            .await;
    match done {
        Ok(Ok(())) => ok(&req, Value::Bool(true)),
        Ok(Err(e)) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `GET|POST /tags/findSeries` (`expr` or `expr[]`, repeated): matching paths, sorted.
pub async fn find_series(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::GET && method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let exprs = req.list("expr");
    if exprs.is_empty() {
        return error(
            &req,
            StatusCode::BAD_REQUEST,
            "no tag expressions specified",
        );
    }
    let wanted = exprs.clone();
    let cluster = cluster_read(&state, &req, &headers, move |f, auth| {
        f.find_tagged(&wanted, auth)
    });
    if let Some(answer) = cluster.await {
        return match answer {
            Ok((names, partial)) => ok_partial(&req, json!(names), partial),
            Err(resp) => resp,
        };
    }
    let store = state.store.clone();
    let done = tokio::task::spawn_blocking(move || store.find_tagged(&parse_exprs(&exprs)?)).await;
    match done {
        Ok(Ok(names)) => ok(&req, json!(names)),
        Ok(Err(e)) => query_error(&req, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// The autocomplete `limit`: graphite-web's default of 100 when absent.
fn autocomplete_limit(req: &Req) -> Result<usize, String> {
    if req.params.get("limit").is_none() {
        return Ok(AUTOCOMPLETE_LIMIT);
    }
    Ok(limit(req)?.unwrap_or(0))
}

/// `GET|POST /tags/autoComplete/tags` (`expr`, `tagPrefix`, `limit`).
pub async fn auto_complete_tags(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::GET && method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let limit = match autocomplete_limit(&req) {
        Ok(l) => l,
        Err(m) => return error(&req, StatusCode::BAD_REQUEST, m),
    };
    let exprs = req.list("expr");
    let prefix = req.params.get("tagPrefix").map(str::to_string);
    let ac = AutoCompleteReq {
        exprs: exprs.clone(),
        tag: None,
        prefix: prefix.clone(),
        limit,
    };
    let cluster = cluster_read(&state, &req, &headers, move |f, auth| {
        f.auto_complete(&ac, auth)
    });
    if let Some(answer) = cluster.await {
        return match answer {
            Ok((tags, partial)) => ok_partial(&req, json!(tags), partial),
            Err(resp) => resp,
        };
    }
    let store = state.store.clone();
    let done = tokio::task::spawn_blocking(move || {
        store.auto_complete_tags(&parse_exprs(&exprs)?, prefix.as_deref(), limit)
    })
    .await;
    match done {
        Ok(Ok(tags)) => ok(&req, json!(tags)),
        Ok(Err(e)) => query_error(&req, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}

/// `GET|POST /tags/autoComplete/values` (`tag`, `expr`, `valuePrefix`, `limit`).
pub async fn auto_complete_values(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    if method != Method::GET && method != Method::POST {
        return method_not_allowed();
    }
    let req = Req::new(method, &headers, query.as_deref(), &body);
    let exprs = req.list("expr");
    let Some(tag) = req.params.get("tag").filter(|t| !t.is_empty()) else {
        return error(&req, StatusCode::BAD_REQUEST, "no tag specified");
    };
    let limit = match autocomplete_limit(&req) {
        Ok(l) => l,
        Err(m) => return error(&req, StatusCode::BAD_REQUEST, m),
    };
    let tag = tag.to_string();
    let prefix = req.params.get("valuePrefix").map(str::to_string);
    let ac = AutoCompleteReq {
        exprs: exprs.clone(),
        tag: Some(tag.clone()),
        prefix: prefix.clone(),
        limit,
    };
    let cluster = cluster_read(&state, &req, &headers, move |f, auth| {
        f.auto_complete(&ac, auth)
    });
    if let Some(answer) = cluster.await {
        return match answer {
            Ok((values, partial)) => ok_partial(&req, json!(values), partial),
            Err(resp) => resp,
        };
    }
    let store = state.store.clone();
    let done = tokio::task::spawn_blocking(move || {
        store.auto_complete_values(&parse_exprs(&exprs)?, &tag, prefix.as_deref(), limit)
    })
    .await;
    match done {
        Ok(Ok(values)) => ok(&req, json!(values)),
        Ok(Err(e)) => query_error(&req, e),
        Err(e) => error(&req, StatusCode::INTERNAL_SERVER_ERROR, e),
    }
}
