//! Anomaly events over HTTP (docs/anomaly.md), from whatever feeds them (the
//! server's ingest-time detectors, through [`AnomalyFeed`]):
//!
//! - `GET /api/anomalies?from=&until=&match=`: the events overlapping the interval
//!   (from/until as in `/render`, default the last day), optionally only those whose
//!   series matches the glob `match` (against the metric part of the name), newest
//!   first, as `{"anomalies": [{id, series, start, end, peak, peak_ts, reason, open,
//!   target}]}`; `target` is the `anomalyScore(…)` expression that draws the scores.
//! - `GET /events/get_data?from=&until=&tags=`: graphite-web's events API, which
//!   Grafana's Graphite data source reads for annotations: a JSON list of
//!   `{id, when, what, data, tags}`, one per event (`when` = its start). Every event
//!   has the tags `anomaly`, its reason (`spike`, `level-shift`, …) and its series'
//!   name; `tags` (space-separated, or repeated) keeps the events having any of them
//!   (all of them with `set_operation=intersection`), as graphite-web does.
//!
//! Without detectors (no `[[anomaly]]` rule) both answer an empty list.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};
use sumi_anomaly::events::Event;
use sumi_model::glob::PathPattern;
use sumi_query::{resolve_range, TimeRange};

use crate::params::Params;
use crate::{bad_request, request_params, request_tz, unix_now, AppState};

/// Where the events come from.
pub trait AnomalyFeed: Send + Sync {
    /// Open events and recent closed ones overlapping `[from, until]`, newest first.
    fn events(&self, from: i64, until: i64) -> Vec<Event>;

    /// The feed's counters in Prometheus' text format, for `/metrics`.
    fn write_prometheus(&self, out: &mut String);

    /// When the detector watching `name` gave its first score (scores of 0 are not
    /// stored; see `SeriesSource::anomaly_scored_from`), `None` when none watches it.
    fn scored_from(&self, name: &str) -> Option<i64> {
        let _ = name;
        None
    }
}

/// The tags an event carries in the events API.
pub fn event_tags(e: &Event) -> Vec<String> {
    vec![
        "anomaly".to_string(),
        e.reason.replace(' ', "-"),
        e.series.clone(),
    ]
}

fn json_ok(v: &Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// The events of a request's from/until (default: the last day), or what is wrong
/// with them; with the partitions a cluster read could not get, for
/// [`crate::fanout::PARTIAL_HEADER`]. A node with `[cluster]` peers answers for the
/// whole cluster (each partition's events from one of its replicas) unless asked
/// `local=1`; `auth` is the client's `Authorization`, passed on to the peers.
pub(crate) async fn events_of(
    state: &Arc<AppState>,
    params: &Params,
    auth: Option<String>,
) -> Result<(Vec<Event>, Option<String>), String> {
    let range = request_range(state, params)?;
    if crate::fanout_for(state, params).is_some() {
        let st = state.clone();
        let answer = tokio::task::spawn_blocking(move || {
            let fanout = st.fanout.as_deref()?;
            let got = fanout
                .anomalies(range.from, range.until, &[], auth.as_deref())
                .map(|(found, gaps)| (found, fanout.note_partial(&gaps)));
            Some(got)
        })
        .await
        .map_err(|e| e.to_string())?;
        if let Some(got) = answer {
            let (found, partial) = got.map_err(|e| e.to_string())?;
            let events = found.events.iter().map(|e| e.to_event()).collect();
            return Ok((events, partial));
        }
    }
    let events = state
        .anomalies
        .as_ref()
        .map(|f| f.events(range.from, range.until))
        .unwrap_or_default();
    Ok((events, None))
}

/// The request's from/until (default: the last day) in its time zone.
fn request_range(state: &AppState, params: &Params) -> Result<TimeRange, String> {
    resolve_range(
        params.get("from"),
        params.get("until"),
        params.get("now"),
        request_tz(state, params),
        unix_now(),
    )
    .map_err(|e| e.to_string())
}

/// The glob test of `match`: against the metric part of a (possibly tagged) name.
pub(crate) fn series_filter(params: &Params) -> Result<Option<PathPattern>, String> {
    match params.get("match").filter(|m| !m.is_empty()) {
        None => Ok(None),
        Some(m) => {
            PathPattern::check(m).map_err(|e| e.to_string())?;
            Ok(Some(PathPattern::parse(m)))
        }
    }
}

pub(crate) fn matches(filter: &Option<PathPattern>, series: &str) -> bool {
    filter
        .as_ref()
        .is_none_or(|p| p.matches_path(series.split(';').next().unwrap_or(series)))
}

/// `GET /api/anomalies`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    let (events, partial) = match events_of(&state, &params, crate::authorization(&headers)).await {
        Ok(e) => e,
        Err(e) => return bad_request(e),
    };
    let filter = match series_filter(&params) {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let list: Vec<Value> = events
        .iter()
        .filter(|e| matches(&filter, &e.series))
        .map(|e| {
            json!({
                "id": e.id,
                "series": e.series,
                "start": e.start,
                "end": e.end,
                "peak": e.peak,
                "peak_ts": e.peak_ts,
                "reason": e.reason,
                "open": e.open,
                "target": format!("anomalyScore({})", e.series),
            })
        })
        .collect();
    let mut resp = json_ok(&json!({ "anomalies": list }));
    crate::mark_partial(&mut resp, partial);
    resp
}

/// `GET /events/get_data`: graphite-web's events API.
pub async fn get_data(
    State(state): State<Arc<AppState>>,
    method: Method,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Bytes,
) -> Response {
    let params = request_params(&method, &headers, query.as_deref(), &body);
    let (events, partial) = match events_of(&state, &params, crate::authorization(&headers)).await {
        Ok(e) => e,
        Err(e) => return bad_request(e),
    };
    let wanted: Vec<&str> = params
        .get_all("tags")
        .into_iter()
        .chain(params.get_all("tags[]"))
        .flat_map(str::split_whitespace)
        .collect();
    let all = params.get("set_operation") == Some("intersection");
    let list: Vec<Value> = events
        .iter()
        .filter_map(|e| {
            let tags = event_tags(e);
            let has = |t: &&str| tags.iter().any(|x| x == t);
            let keep = wanted.is_empty()
                || if all {
                    wanted.iter().all(has)
                } else {
                    wanted.iter().any(has)
                };
            keep.then(|| {
                // a JavaScript-safe integer from the event's id
                let id = u64::from_str_radix(&e.id, 16).unwrap_or(0) & ((1 << 53) - 1);
                json!({
                    "id": id,
                    "when": e.start,
                    "what": format!("{} on {}", e.reason, e.series),
                    "data": format!(
                        "peak score {:.2} at {}; {} to {}{}",
                        e.peak,
                        e.peak_ts,
                        e.start,
                        e.end,
                        if e.open { " (open)" } else { "" }
                    ),
                    "tags": tags,
                })
            })
        })
        .collect();
    let mut resp = json_ok(&Value::Array(list));
    crate::mark_partial(&mut resp, partial);
    resp
}
