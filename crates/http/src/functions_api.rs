//! `/functions`, `/functions/<name>` and `/version`, as graphite-web serves them:
//! the definitions of every function of the server's registry (what Grafana's query
//! editor offers), and the version string clients check before using tags and
//! `/functions`.
//!
//! `/functions` takes `grouped` (`1`/`true`), `group`, `type=pie`, `pretty` and
//! `jsonp`, on GET only (graphite-web answers 405 otherwise). `/version` answers
//! graphite-web's `1.1.10`: Grafana reads it as a semantic version and enables its
//! 1.1 features (tags, `/functions`) from 1.1 on.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use sumi_render::FunctionListOptions;

use crate::params::Params;
use crate::{rendered, AppState};

/// The graphite-web version sumi answers like.
pub const GRAPHITE_VERSION: &str = "1.1.10";

fn options(query: Option<&str>) -> FunctionListOptions {
    let params = Params::parse(query, None);
    FunctionListOptions {
        grouped: params
            .get("grouped")
            .is_some_and(|g| matches!(g.to_ascii_lowercase().as_str(), "1" | "true")),
        group: params.get("group").map(str::to_string),
        pie: params.get("type") == Some("pie"),
        pretty: params.get("pretty").is_some_and(|p| !p.is_empty()),
        jsonp: params
            .get("jsonp")
            .filter(|j| !j.is_empty())
            .map(str::to_string),
    }
}

fn method_not_allowed() -> Response {
    StatusCode::METHOD_NOT_ALLOWED.into_response()
}

/// `GET /functions`
pub async fn list(
    State(state): State<Arc<AppState>>,
    method: Method,
    RawQuery(query): RawQuery,
) -> Response {
    if method != Method::GET {
        return method_not_allowed();
    }
    rendered(sumi_render::function_list(
        &state.functions,
        &options(query.as_deref()),
    ))
}

/// `GET /functions/<name>`
pub async fn details(
    State(state): State<Arc<AppState>>,
    method: Method,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    if method != Method::GET {
        return method_not_allowed();
    }
    let opts = options(query.as_deref());
    match sumi_render::function_details(&state.functions, &name, &opts) {
        Some(r) => rendered(r),
        None => {
            let r = sumi_render::functions::not_found(&name, &opts);
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, r.content_type)],
                r.body,
            )
                .into_response()
        }
    }
}

/// `/version`: graphite-web's page is the version and a newline, as HTML.
pub async fn version(_headers: HeaderMap) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        format!("{GRAPHITE_VERSION}\n"),
    )
        .into_response()
}
