//! `POST /api/v0/import`: history for `sumi import --url` (a write endpoint: write or
//! admin token when authentication is on). The body is JSON, one or more series each
//! with the config it is created with when absent and the points of each archive:
//!
//! ```json
//! {"series": [{
//!   "name": "a.b.c",
//!   "aggregationMethod": "average",
//!   "xFilesFactor": 0.5,
//!   "archives": [
//!     {"step": 10, "points": 8640, "start": 1700000000, "values": "1.5,,2"},
//!     {"step": 60, "points": 43200, "start": 1699990000, "values": "1.75"}
//!   ]
//! }]}
//! ```
//!
//! `step` and `points` are the archive (whisper's seconds per point and point count,
//! finest first); `values` holds, comma-separated, the values at `start`, `start +
//! step`, ..., an empty field where there is none. They are text rather than JSON
//! numbers so that every value arrives bit for bit (the shortest decimal that reads
//! back as the same double, as Rust and Python print them; `NaN`, `inf` and `-inf`
//! as whisper files may hold them), whatever JSON parser either side uses.
//! Each series is written by [`Store::import_series`](sumi_store::Store::import_series)
//! (fill semantics: only empty slots are written). The answer lists per series what
//! was done, or why not:
//!
//! ```json
//! {"series": [{"name": "a.b.c", "created": true, "written": 3, "present": 0, "outOfRange": 0}]}
//! ```
//!
//! A malformed body is a 400; a store that cannot take writes a 503 (retry later); a
//! series the store refuses (an invalid archive list, `max_series` reached) carries an
//! `error` in its entry, the others are imported.
//!
//! **On a cluster node** the points go to the data topic, like any point, not into
//! this node's store: each series' archives merged into one history (the finest
//! archive's points, then each coarser archive's points older than every finer
//! archive's first: what whisper's fetch would show), appended through the node's log
//! producer with this moment as their arrival time, so each storage node places every
//! point by its age now, as whisper places an old point it is sent. The series'
//! retention is the storage nodes' schema's (not the file's). A series whose
//! aggregation is GrowthForecast's rollup (average, xFilesFactor 0) is appended as a
//! graph's points (`Sink::append_graph_points`): the storage nodes create it with that
//! rollup; any other follows their storage-aggregation rules. The answer's `written`
//! counts the points Kafka acknowledged (`created` is false: the storage nodes create
//! the series); storage nodes count the points too old for their schemas.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use sumi_model::{AggMethod, Archive, Retention, SeriesConfig};
use sumi_store::StoreError;

use crate::AppState;

pub use sumi_import::values::{decode_values, encode_values};

/// The largest body `POST /api/v0/import` reads.
pub const MAX_BODY_BYTES: usize = 64 << 20;

/// The request body.
#[derive(Debug, Serialize, Deserialize)]
pub struct ImportRequest {
    pub series: Vec<ImportSeries>,
}

/// One series of a request.
#[derive(Debug, Serialize, Deserialize)]
pub struct ImportSeries {
    pub name: String,
    #[serde(rename = "aggregationMethod")]
    pub aggregation_method: String,
    #[serde(rename = "xFilesFactor")]
    pub x_files_factor: f32,
    pub archives: Vec<ImportArchive>,
}

/// One archive of a series: its shape and its values from `start` on.
#[derive(Debug, Serialize, Deserialize)]
pub struct ImportArchive {
    pub step: u32,
    pub points: u32,
    pub start: i64,
    pub values: String,
}

/// The answer for one series.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ImportResult {
    pub name: String,
    #[serde(default)]
    pub created: bool,
    #[serde(default)]
    pub written: u64,
    #[serde(default)]
    pub present: u64,
    #[serde(default, rename = "outOfRange")]
    pub out_of_range: u64,
    /// Points of a coarser archive whose time a finer archive covers, left out (a
    /// cluster node's import: the storage nodes roll them up from the finer points).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub covered: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The answer.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ImportAnswer {
    pub series: Vec<ImportResult>,
}

/// The aggregation method named `name` (as storage-aggregation.conf spells it).
pub fn parse_method(name: &str) -> Option<AggMethod> {
    (0..=u8::MAX)
        .filter_map(AggMethod::from_code)
        .find(|m| m.name() == name)
}

fn json(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn refuse(status: StatusCode, msg: String) -> Response {
    json(status, serde_json::json!({ "error": msg }).to_string())
}

/// The `(time, value)` points of each archive, finest first.
type ArchivePoints = Vec<Vec<(i64, f64)>>;

/// Turns one series of the request into the store's arguments.
fn prepare(s: &ImportSeries) -> Result<(SeriesConfig, ArchivePoints), String> {
    let method = parse_method(&s.aggregation_method)
        .ok_or_else(|| format!("unknown aggregationMethod {:?}", s.aggregation_method))?;
    if !(0.0..=1.0).contains(&s.x_files_factor) {
        return Err(format!("xFilesFactor {} is not in 0..1", s.x_files_factor));
    }
    let archives: Vec<Archive> = s
        .archives
        .iter()
        .map(|a| Archive {
            step_secs: a.step,
            points: a.points,
        })
        .collect();
    let retention = Retention::new(archives).map_err(|e| e.to_string())?;
    let points = s
        .archives
        .iter()
        .map(|a| decode_values(a.start, i64::from(a.step), &a.values))
        .collect::<Result<Vec<_>, String>>()?;
    Ok((
        SeriesConfig {
            retention: Arc::new(retention),
            method,
            xff: s.x_files_factor,
        },
        points,
    ))
}

/// `POST /api/v0/import`.
pub async fn import(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let req: ImportRequest = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return refuse(
                StatusCode::BAD_REQUEST,
                format!("the body is not an import request: {e}"),
            )
        }
    };
    if state.gf.log.is_some() {
        return import_to_log(state, req).await;
    }
    let store = state.store.clone();
    let res = tokio::task::spawn_blocking(move || {
        import_each(&req, |s, cfg, points, r| {
            match store.import_series(&s.name, &cfg, &points) {
                Ok(o) => {
                    r.created = o.created;
                    r.written = o.written;
                    r.present = o.present;
                    r.out_of_range = o.out_of_range;
                }
                Err(e @ (StoreError::Admin(_) | StoreError::Options(_))) => {
                    r.error = Some(e.to_string())
                }
                Err(e) => return Err(e),
            }
            Ok(())
        })
    })
    .await;
    answer(res)
}

/// Each series of the request: [`prepare`]d, then given to `one` with its result to
/// fill in (a series that cannot be prepared gets its error instead). An `Err` from
/// `one` ends the import (the target cannot take more); the answer lists every series.
fn import_each<E>(
    req: &ImportRequest,
    mut one: impl FnMut(&ImportSeries, SeriesConfig, ArchivePoints, &mut ImportResult) -> Result<(), E>,
) -> Result<ImportAnswer, E> {
    let mut answer = ImportAnswer::default();
    for s in &req.series {
        let mut r = ImportResult {
            name: s.name.clone(),
            ..ImportResult::default()
        };
        match prepare(s) {
            Err(e) => r.error = Some(e),
            Ok((cfg, points)) => one(s, cfg, points, &mut r)?,
        }
        answer.series.push(r);
    }
    Ok(answer)
}

/// The HTTP answer of an import that ran on a blocking thread: 200 with the answer, 503
/// when the target stopped taking series, 500 when the thread failed.
fn answer<E: std::fmt::Display>(
    res: Result<Result<ImportAnswer, E>, tokio::task::JoinError>,
) -> Response {
    match res {
        Err(e) => refuse(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("import failed: {e}"),
        ),
        Ok(Err(e)) => refuse(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
        Ok(Ok(answer)) => json(
            StatusCode::OK,
            serde_json::to_string(&answer).unwrap_or_default(),
        ),
    }
}

/// A series' archives (finest first) as one history: every point of the finest, and
/// of each coarser archive those older than the first point of every finer one (an
/// empty archive covers nothing); sorted by time.
pub fn merged_history(archives: &[Vec<(i64, f64)>]) -> Vec<(i64, f64)> {
    let mut out = Vec::new();
    let mut covered_from = i64::MAX;
    for points in archives {
        out.extend(points.iter().filter(|(ts, _)| *ts < covered_from));
        if let Some(first) = points.iter().map(|p| p.0).min() {
            covered_from = covered_from.min(first);
        }
    }
    out.sort_by_key(|&(ts, _)| ts);
    out
}

/// `POST /api/v0/import` on a cluster node (see the module doc).
async fn import_to_log(state: Arc<AppState>, req: ImportRequest) -> Response {
    let sink = state.sink.clone();
    let res = tokio::task::spawn_blocking(move || {
        import_each(&req, |s, cfg, archives, r| {
            let points: usize = archives.iter().map(Vec::len).sum();
            let (written, sent) = append_history(sink.as_ref(), &s.name, &cfg, &archives)?;
            r.written = written;
            r.covered = (points - sent) as u64;
            Ok::<(), String>(())
        })
    })
    .await;
    answer(res)
}

/// Appends a series' archives to `sink` (a cluster node's log producer) as one
/// [`merged_history`] under `name`, as a graph's points when `cfg` is GrowthForecast's
/// rollup; the points the sink accepted (Kafka acknowledged) and those sent (the
/// merged history's). Blocking.
fn append_history(
    sink: &dyn sumi_model::Sink,
    name: &str,
    cfg: &SeriesConfig,
    archives: &[Vec<(i64, f64)>],
) -> Result<(u64, usize), String> {
    let mut batch = sumi_model::Batch::new();
    for (ts, v) in merged_history(archives) {
        batch.push(name, ts, v);
    }
    if batch.is_empty() {
        return Ok((0, 0));
    }
    let graph = cfg.method == AggMethod::Average && cfg.xff == 0.0;
    let sent = if graph {
        sink.append_graph_points(&batch)
    } else {
        sink.append(&batch)
    };
    Ok((sent.map_err(|e| e.to_string())?.accepted, batch.len()))
}

/// Appends series `s` of a request (its archives as they are) to `sink` under the
/// name `name` (a cluster rename moving a series' history): see [`append_history`].
pub(crate) fn append_series_as(
    sink: &dyn sumi_model::Sink,
    s: &ImportSeries,
    name: &str,
) -> Result<u64, String> {
    let (cfg, archives) = prepare(s).map_err(|e| format!("series {}: {e}", s.name))?;
    append_history(sink, name, &cfg, &archives).map(|(written, _)| written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_takes_each_archive_where_no_finer_one_starts() {
        // 60 s from 1200, 300 s from 600, an empty one, 3600 s from 0
        let fine = vec![(1200, 1.0), (1260, 2.0), (1320, f64::NAN)];
        let mid = vec![(600, 3.0), (900, 4.0), (1200, 5.0)];
        let coarse = vec![(0, 6.0), (3600, 7.0)];
        let got = merged_history(&[fine, mid, Vec::new(), coarse]);
        let ts: Vec<i64> = got.iter().map(|p| p.0).collect();
        assert_eq!(ts, vec![0, 600, 900, 1200, 1260, 1320]);
        assert_eq!(got[3].1, 1.0, "the finest archive's value wins its slot");
        assert!(got[5].1.is_nan(), "values pass bit for bit");
        assert!(merged_history(&[]).is_empty());
    }
}
