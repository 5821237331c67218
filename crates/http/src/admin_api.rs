//! Series administration over HTTP (admin token class when authentication is on):
//!
//! - `POST /api/v1/series/delete` with one or more `target=<glob>` (a Graphite glob;
//!   `a.**` is the whole subtree below `a`; a tagged name is matched exactly): deletes
//!   the matching series.
//! - `POST /api/v1/series/rename` with `from=<path>` and `to=<path>`: renames the series
//!   at `from` and every series below it, keeping their data; refused (409) when a new
//!   name is taken.
//!
//! Both take `dryRun=1` to list what would change without changing it, read their
//! parameters from the query string or a form body, and answer JSON saying how many
//! series and which (the list is capped at [`MAX_LISTED`] names).

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sumi_store::StoreError;

use crate::params::Params;
use crate::{request_params, AppState};

/// At most this many names are listed in an answer (the count is always exact).
pub const MAX_LISTED: usize = 10_000;

fn answer(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn refuse(status: StatusCode, msg: impl Into<String>) -> Response {
    answer(status, json!({ "error": msg.into() }))
}

fn store_error(e: &StoreError) -> Response {
    let status = match e {
        StoreError::NotFound(_) => StatusCode::NOT_FOUND,
        StoreError::Admin(_) => StatusCode::CONFLICT,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    refuse(status, e.to_string())
}

fn dry_run(p: &Params) -> bool {
    p.get("dryRun")
        .or_else(|| p.get("dry_run"))
        .is_some_and(|v| matches!(v, "1" | "true" | "yes" | "on"))
}

/// Runs store work that takes the index lock and fsyncs off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Response> {
    tokio::task::spawn_blocking(f).await.map_err(|e| {
        refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("series administration failed: {e}"),
        )
    })
}

/// `POST /api/v1/series/delete`.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let p = request_params(&method, &headers, query.as_deref(), &body);
    let targets: Vec<String> = p
        .get_all("target")
        .into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect();
    if targets.is_empty() {
        return refuse(
            StatusCode::BAD_REQUEST,
            "missing parameter target (a Graphite glob; several allowed)",
        );
    }
    let dry = dry_run(&p);
    let store = state.store.clone();
    let res = blocking(move || {
        let t: Vec<&str> = targets.iter().map(String::as_str).collect();
        if dry {
            Ok(store.match_series(&t))
        } else {
            store.delete_series(&t)
        }
    })
    .await;
    match res {
        Err(resp) => resp,
        Ok(Err(e)) => store_error(&e),
        Ok(Ok(names)) => {
            let listed: Vec<&String> = names.iter().take(MAX_LISTED).collect();
            answer(
                StatusCode::OK,
                json!({
                    "dryRun": dry,
                    "deleted": if dry { 0 } else { names.len() },
                    "matched": names.len(),
                    "series": listed,
                    "truncated": names.len() > MAX_LISTED,
                }),
            )
        }
    }
}

/// `POST /api/v1/series/rename`.
pub async fn rename(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let p = request_params(&method, &headers, query.as_deref(), &body);
    let (Some(from), Some(to)) = (
        p.get("from").map(str::trim).filter(|s| !s.is_empty()),
        p.get("to").map(str::trim).filter(|s| !s.is_empty()),
    ) else {
        return refuse(
            StatusCode::BAD_REQUEST,
            "missing parameter from or to (series paths)",
        );
    };
    let (from, to) = (from.to_string(), to.to_string());
    let dry = dry_run(&p);
    let store = state.store.clone();
    match blocking(move || store.rename_series(&from, &to, dry)).await {
        Err(resp) => resp,
        Ok(Err(e)) => store_error(&e),
        Ok(Ok(moved)) => {
            let listed: Vec<Value> = moved
                .iter()
                .take(MAX_LISTED)
                .map(|m| json!({ "from": m.from, "to": m.to }))
                .collect();
            answer(
                StatusCode::OK,
                json!({
                    "dryRun": dry,
                    "renamed": if dry { 0 } else { moved.len() },
                    "matched": moved.len(),
                    "series": listed,
                    "truncated": moved.len() > MAX_LISTED,
                }),
            )
        }
    }
}
