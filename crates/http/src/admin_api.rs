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
//!
//! On a cluster node a delete first puts a delete marker into every data partition
//! (`OpLog::delete_markers`, acks=all): the storage nodes' consumers delete the matching
//! series of each partition at its marker, the same log position on every replica, and
//! a node that was down does so when it replays the data topic. Then the op
//! (`growthforecast::replicated::Op::DeleteSeries`, carrying the data topic's end
//! offsets) goes through the metadata log; it deletes nothing itself and is answered
//! once this node's consumer has passed those offsets. The answer (after the op is in the log and
//! this node has applied it) lists the series matched over the whole cluster just
//! before (read through the fan-out, with `X-Sumi-Partial` when a partition had no
//! replica). A rename on a cluster node moves the series' history through the data
//! topic under the new names, then deletes the old names with markers: see
//! [`crate::rename`].

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sumi_store::StoreError;

use crate::growthforecast::replicated::{Applied, Op};
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
    if state.gf.log.is_some() {
        return delete_in_cluster(state, targets, dry, crate::authorization(&headers)).await;
    }
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
        Ok(Ok(names)) => deleted(&names, dry),
    }
}

/// The answer of a delete that matched `names`.
fn deleted(names: &[String], dry: bool) -> Response {
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

/// A delete on a cluster node: the names matched over the cluster, then (unless a dry
/// run) the op through the metadata log, answered once this node has applied it.
async fn delete_in_cluster(
    state: Arc<AppState>,
    targets: Vec<String>,
    dry: bool,
    auth: Option<String>,
) -> Response {
    let res = blocking(move || {
        let (mut names, gaps) = match state.fanout.as_deref() {
            Some(f) => f
                .match_series(&targets, auth.as_deref())
                .map_err(|e| Box::new(refuse(StatusCode::BAD_GATEWAY, e.to_string())))?,
            None => {
                let t: Vec<&str> = targets.iter().map(String::as_str).collect();
                (state.store.match_series(&t), Default::default())
            }
        };
        let partial = state.fanout.as_deref().and_then(|f| f.note_partial(&gaps));
        if !dry {
            let here = state
                .gf
                .run(
                    &state.store,
                    Op::DeleteSeries {
                        targets,
                        marked: false,
                    },
                )
                .and_then(Applied::series)
                .map_err(|e| Box::new(e.into_response()))?;
            // a series created between the match and the op is deleted too
            names.extend(here);
            names.sort();
            names.dedup();
        }
        Ok::<_, Box<Response>>((names, partial))
    })
    .await;
    match res {
        Err(resp) => resp,
        Ok(Err(resp)) => *resp,
        Ok(Ok((names, partial))) => {
            let mut resp = deleted(&names, dry);
            crate::mark_partial(&mut resp, partial);
            resp
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
    if state.gf.log.is_some() {
        return rename_in_cluster(state, from, to, dry, crate::authorization(&headers)).await;
    }
    let store = state.store.clone();
    match blocking(move || store.rename_series(&from, &to, dry)).await {
        Err(resp) => resp,
        Ok(Err(e)) => store_error(&e),
        Ok(Ok(moved)) => {
            let moved: Vec<(String, String)> = moved.into_iter().map(|m| (m.from, m.to)).collect();
            renamed(&moved, dry)
        }
    }
}

/// The answer of a rename that moved (or would move) `moved`, `(from, to)` each.
fn renamed(moved: &[(String, String)], dry: bool) -> Response {
    let listed: Vec<Value> = moved
        .iter()
        .take(MAX_LISTED)
        .map(|(from, to)| json!({ "from": from, "to": to }))
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

/// A rename on a cluster node (see [`crate::rename`]): the series' history appended
/// under the new names, the old ones deleted with markers, answered once this node
/// has applied the delete.
async fn rename_in_cluster(
    state: Arc<AppState>,
    from: String,
    to: String,
    dry: bool,
    auth: Option<String>,
) -> Response {
    let res = blocking(move || {
        let Some(fanout) = state.fanout.clone() else {
            return Err(Box::new(refuse(
                StatusCode::BAD_REQUEST,
                "a cluster rename needs [[cluster.peers]] on the node it is sent to",
            )));
        };
        let moves = crate::rename::plan(&fanout, &from, &to, auth.as_deref())
            .map_err(|(s, m)| Box::new(refuse(s, m)))?;
        if !dry {
            let marked = crate::rename::move_data(&state, &fanout, &moves, auth.as_deref())
                .map_err(|(s, m)| Box::new(refuse(s, m)))?;
            state
                .gf
                .run(
                    &state.store,
                    Op::DeleteSeries {
                        targets: moves.iter().map(|m| m.from.clone()).collect(),
                        marked,
                    },
                )
                .map_err(|e| Box::new(e.into_response()))?;
        }
        Ok(moves
            .into_iter()
            .map(|m| (m.from, m.to))
            .collect::<Vec<_>>())
    })
    .await;
    match res {
        Err(resp) => resp,
        Ok(Err(resp)) => *resp,
        Ok(Ok(moved)) => renamed(&moved, dry),
    }
}
