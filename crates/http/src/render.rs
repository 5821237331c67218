//! `/render`: graphite-web's render API for the data formats (json, csv, raw, and
//! pickle and msgpack, which a graphite-web cluster reads).
//!
//! Parameters as graphite-web's `parseOptions` reads them: `target` (repeatable; or
//! `target[]`), `from`/`until`/`now` in any form graphite accepts, `tz`, `format`
//! (`rawData` and `pickle` are the legacy spellings), `jsonp`, `pretty`,
//! `maxDataPoints` (digits only, otherwise ignored), `noNullPoints`, `xFilesFactor`,
//! `template[name]=value`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, Method};
use axum::response::Response;
use sumi_query::{resolve_range, Evaluator, RequestContext};
use sumi_render::{render_csv, render_json, render_raw, JsonOptions};

use crate::params::Params;
use crate::{bad_request, rendered, request_params, request_tz, server_error, unix_now, AppState};

pub async fn handle(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    match tokio::task::spawn_blocking(move || render(&state, &params)).await {
        Ok(resp) => resp,
        Err(e) => server_error(format!("render failed: {e}")),
    }
}

/// The output format: graphite-web's precedence is `pickle`, then `rawData`, then an
/// explicit `format`; without any of them it draws a PNG.
fn format_of(params: &Params) -> &str {
    if let Some(f) = params.get("format") {
        return f;
    }
    if params.contains("rawData") {
        return "raw";
    }
    if params.contains("pickle") {
        return "pickle";
    }
    "png"
}

fn render(state: &AppState, params: &Params) -> Response {
    let mut targets = params.get_all("target");
    if targets.is_empty() {
        targets = params.get_all("target[]");
    }
    let tz = request_tz(state, params);
    let range = match resolve_range(
        params.get("from"),
        params.get("until"),
        params.get("now"),
        tz,
        unix_now(),
    ) {
        Ok(r) => r,
        Err(e) => return bad_request(e),
    };
    let format = format_of(params);
    if !matches!(format, "json" | "csv" | "raw" | "pickle" | "msgpack") {
        return bad_request(format_args!(
            "format={format} is not supported by this server yet (use json, csv, raw, pickle or msgpack)"
        ));
    }
    let mut ctx = RequestContext::new(range, tz);
    ctx.max_data_points = params
        .get("maxDataPoints")
        .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(x) = params.get("xFilesFactor") {
        match x.trim().parse::<f64>() {
            Ok(x) if (0.0..=1.0).contains(&x) => ctx.x_files_factor = x,
            _ => {
                return bad_request(format_args!(
                    "xFilesFactor={x:?} is not a number between 0 and 1"
                ))
            }
        }
    }
    ctx.template = params
        .pairs()
        .filter_map(|(k, v)| {
            // graphite-web takes key[9:-1]: whatever the last character is
            k.strip_prefix("template[").map(|rest| {
                let mut name = rest.to_string();
                name.pop();
                (name, v.to_string())
            })
        })
        .collect();

    let evaluator = Evaluator::new(&state.source, &state.functions);
    let series = match evaluator.evaluate_targets(&ctx, &targets) {
        Ok(s) => s,
        Err(e) if e.is_input_error() => return bad_request(e),
        Err(e) => return server_error(e),
    };
    let out = match format {
        "json" => render_json(
            &series,
            &JsonOptions {
                max_data_points: ctx.max_data_points,
                no_null_points: params.contains("noNullPoints"),
                pretty: params.get("pretty").is_some_and(|p| !p.is_empty()),
                jsonp: params.get("jsonp").map(str::to_string),
            },
        ),
        "csv" => render_csv(&series, tz),
        "pickle" => sumi_render::render_pickle(&series),
        "msgpack" => sumi_render::render_msgpack(&series),
        _ => render_raw(&series),
    };
    rendered(out)
}
