//! Points over HTTP: Mackerel's JSON bulk API (`POST /api/v0/tsdb`) and Prometheus
//! remote write (`POST /api/v1/write`). Both hand their batch to the state's `Sink`,
//! as the carbon listeners do, and answer 2xx only once it is in the WAL (the `Sink`
//! contract); a malformed body is refused whole with a 4xx that says what is wrong; a
//! throttled batch is a 429 and a store that cannot take writes a 503, which both
//! kinds of clients retry.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use sumi_ingest::{decode_remote_write, parse_json_bulk, BulkLimits, LocalCounts, WriteLimits};
use sumi_model::{Batch, SinkError};

use crate::{server_error, unix_now, AppState};

/// The largest body the ingest endpoints read (the parsers' own limits apply after).
pub const MAX_BODY_BYTES: usize = 16 << 20;

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> Option<&str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

fn status_text(status: u16, msg: String) -> Response {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    crate::text_error(code, msg)
}

/// Appends through the [`Sink`](sumi_model::Sink) on a blocking thread (the WAL write
/// may wait for an fsync). Refusals answer as clients expect to back off: 429 with
/// `Retry-After` while the sink throttles (new series come faster than
/// `max_new_series_per_minute` allows: nothing of the batch was stored; send it again
/// then), 503 while it cannot write or is closing, 507 when `max_series` refused some
/// of the batch's points (the others are stored).
async fn append(state: &Arc<AppState>, batch: Batch) -> Result<u64, Response> {
    let sink = state.sink.clone();
    match tokio::task::spawn_blocking(move || sink.append(&batch)).await {
        Ok(Ok(outcome)) if outcome.series_limit > 0 => Err(status_text(
            507,
            format!(
                "series limit reached (max_series): {} points of new series refused, {} stored",
                outcome.series_limit, outcome.accepted
            ),
        )),
        Ok(Ok(outcome)) => Ok(outcome.accepted),
        Ok(Err(e)) => Err(refused(&e)),
        Err(e) => Err(server_error(format_args!("append failed: {e}"))),
    }
}

/// The answer to a batch the sink refused whole: the sink's own message.
fn refused(e: &SinkError) -> Response {
    match e {
        SinkError::Throttled { retry_after, .. } => {
            let mut r = status_text(429, e.reason().to_string());
            r.headers_mut()
                .insert(header::RETRY_AFTER, retry_after_secs(*retry_after).into());
            r
        }
        SinkError::Unavailable(_) | SinkError::Closed(_) => {
            status_text(503, e.reason().to_string())
        }
    }
}

/// `Retry-After` in whole seconds, rounded up, at least 1 (0 would invite a retry
/// storm).
fn retry_after_secs(d: Duration) -> u64 {
    let whole = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    whole.max(1)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_statuses() {
        let throttled = SinkError::Throttled {
            retry_after: Duration::from_millis(1200),
            reason: "new series limit: slow down".into(),
        };
        let r = refused(&throttled);
        assert_eq!(r.status(), 429);
        assert_eq!(r.headers()[header::RETRY_AFTER], "2");
        let r = refused(&SinkError::Unavailable("store is full: disk".into()));
        assert_eq!(r.status(), 503);
        assert!(r.headers().get(header::RETRY_AFTER).is_none());
        assert_eq!(
            refused(&SinkError::Closed("store is closed".into())).status(),
            503
        );
    }

    #[test]
    fn retry_after_rounds_up_to_whole_seconds() {
        assert_eq!(retry_after_secs(Duration::ZERO), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_secs(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(retry_after_secs(Duration::from_secs(60)), 60);
    }
}
