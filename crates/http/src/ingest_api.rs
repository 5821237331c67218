//! Points over HTTP: Mackerel's JSON bulk API (`POST /api/v0/tsdb`) and Prometheus
//! remote write (`POST /api/v1/write`). Both answer 2xx only once the batch is in the
//! WAL (the `Sink` contract); a malformed body is refused whole with a 4xx that says
//! what is wrong; a store that cannot take writes is a 503, which both kinds of
//! clients retry.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sumi_ingest::{decode_remote_write, parse_json_bulk, BulkLimits, LocalCounts, WriteLimits};
use sumi_model::Batch;

use crate::{server_error, unix_now, AppState};

/// The largest body the ingest endpoints read (the parsers' own limits apply after).
pub const MAX_BODY_BYTES: usize = 16 << 20;

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn status_text(status: u16, msg: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        msg + "\n",
    )
        .into_response()
}

/// Appends on a blocking thread (the WAL write may wait for an fsync). Limits answer
/// as clients expect to back off: 429 (with `Retry-After`) while new series come
/// faster than `max_new_series_per_minute` allows (nothing of the batch was stored;
/// send it again), 507 when `max_series` refused some of its points (the others are
/// stored).
async fn append(state: &Arc<AppState>, batch: Batch) -> Result<u64, Response> {
    let store = state.store.clone();
    match tokio::task::spawn_blocking(move || store.write(&batch)).await {
        Ok(Ok(outcome)) if outcome.series_limit > 0 => Err(status_text(
            507,
            format!(
                "series limit reached (max_series): {} points of new series refused, {} stored",
                outcome.series_limit, outcome.accepted
            ),
        )),
        Ok(Ok(outcome)) => Ok(outcome.accepted),
        Ok(Err(e @ sumi_store::StoreError::NewSeriesRate(_))) => {
            let mut r = status_text(429, e.to_string());
            r.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("5"));
            Err(r)
        }
        Ok(Err(e)) => Err(status_text(503, e.to_string())),
        Err(e) => Err(server_error(format_args!("append failed: {e}"))),
    }
}

/// `POST /api/v0/tsdb`: a JSON array of `{"name", "time", "value"}` (optional
/// `hostId`, `tags`), plain or gzip/deflate-encoded.
pub async fn json_bulk(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let encoding = header_str(&headers, header::CONTENT_ENCODING);
    let mut batch = Batch::new();
    let outcome = match parse_json_bulk(
        &body,
        encoding,
        unix_now(),
        &mut batch,
        &BulkLimits::default(),
    ) {
        Ok(o) => o,
        Err(e) => return status_text(e.status(), e.to_string()),
    };
    let mut counts = LocalCounts::default();
    outcome.count_into(&mut counts);
    state.ingest.absorb(&mut counts);
    match append(&state, batch).await {
        Ok(accepted) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            format!("{{\"success\":true,\"points\":{accepted}}}"),
        )
            .into_response(),
        Err(resp) => resp,
    }
}

/// `POST /api/v1/write`: Prometheus remote write 1.0 (snappy-compressed protobuf).
pub async fn remote_write(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match header_str(&headers, header::CONTENT_ENCODING) {
        Some(e) if e.eq_ignore_ascii_case("snappy") => {}
        other => {
            return status_text(
                415,
                format!(
                    "remote write needs Content-Encoding: snappy (got {})",
                    other.unwrap_or("none")
                ),
            )
        }
    }
    let mut batch = Batch::new();
    let mut outcome = match decode_remote_write(&body, &mut batch, &WriteLimits::default()) {
        Ok(o) => o,
        Err(e) => return status_text(e.status(), e.to_string()),
    };
    state.ingest.absorb(&mut outcome.counts);
    match append(&state, batch).await {
        Ok(_) => StatusCode::NO_CONTENT.into_response(),
        Err(resp) => resp,
    }
}
