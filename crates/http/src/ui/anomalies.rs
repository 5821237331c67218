//! `/anomalies`: the open and recent anomaly events (newest first) of the ingest-time
//! detectors, each linking to `/anomalies/graph`, which draws the series and its
//! `anomalyScore()` around the event with the event's interval shaded (`/render`'s
//! `shade=START:END`).
//!
//! `?from=` (default `-7d`, as in `/render`) and `?match=GLOB` narrow the list.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::{Html, IntoResponse, Response};

use super::html::{esc, page, query_escape, Crumbs};
use crate::anomaly_api::{events_of, matches, series_filter};
use crate::params::Params;
use crate::AppState;

/// Events listed at most.
const MAX_ROWS: usize = 500;

fn utc(ts: i64) -> String {
    chrono::DateTime::from_timestamp(ts, 0)
        .map(|d| d.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_else(|| ts.to_string())
}

/// The link of an event's graph.
fn graph_href(series: &str, start: i64, end: i64) -> String {
    format!(
        "/anomalies/graph?series={}&start={start}&end={end}",
        query_escape(series)
    )
}

/// `/anomalies`.
pub async fn list(
    State(state): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
    RawQuery(query): RawQuery,
) -> Response {
    let mut params = Params::parse(query.as_deref(), None);
    if params.get("from").is_none() {
        params = Params::parse(
            Some(&format!("{}&from=-7d", query.as_deref().unwrap_or(""))),
            None,
        );
    }
    let events = match events_of(&state, &params, crate::authorization(&headers)).await {
        Ok((e, _)) => e,
        Err(e) => return crate::bad_request(e),
    };
    let filter = match series_filter(&params) {
        Ok(f) => f,
        Err(e) => return crate::bad_request(e),
    };
    let shown: Vec<_> = events
        .iter()
        .filter(|e| matches(&filter, &e.series))
        .take(MAX_ROWS)
        .collect();
    let open = shown.iter().filter(|e| e.open).count();
    let mut rows = String::new();
    for e in &shown {
        rows.push_str(&format!(
            r#"<tr class="anomaly{cls}" data-id="{id}"><td>{status}</td><td><a class="series" href="{href}">{series}</a></td><td>{reason}</td><td class="num">{peak:.2}</td><td>{start}</td><td>{end}</td></tr>
"#,
            cls = if e.open { " open" } else { "" },
            id = esc(&e.id),
            status = if e.open { "<strong>open</strong>" } else { "closed" },
            href = esc(&graph_href(&e.series, e.start, e.end)),
            series = esc(&e.series),
            reason = esc(&e.reason),
            peak = e.peak,
            start = utc(e.start),
            end = utc(e.end),
        ));
    }
    let body = if state.anomalies.is_none() {
        r#"<p class="empty" id="no-detectors">No series is watched: add an <code>[[anomaly]]</code> rule to sumi.toml (docs/anomaly.md).</p>"#.to_string()
    } else if shown.is_empty() {
        r#"<p class="empty" id="no-anomalies">No anomaly in this interval.</p>"#.to_string()
    } else {
        format!(
            r#"<p id="summary">{open} open, {closed} closed (times in UTC).</p>
<table class="items anomalies"><thead><tr><th>status</th><th>series</th><th>reason</th><th>peak score</th><th>start</th><th>end</th></tr></thead>
<tbody>
{rows}</tbody></table>"#,
            closed = shown.len() - open,
        )
    };
    Html(page(
        "Anomalies",
        &Crumbs::home().push("Anomalies", None),
        "",
        &body,
    ))
    .into_response()
}

/// `/anomalies/graph?series=&start=&end=`.
pub async fn graph(RawQuery(query): RawQuery) -> Response {
    let p = Params::parse(query.as_deref(), None);
    let series = p.get("series").unwrap_or("");
    let start: i64 = p.get("start").and_then(|v| v.parse().ok()).unwrap_or(0);
    let end: i64 = p.get("end").and_then(|v| v.parse().ok()).unwrap_or(start);
    // the event in the middle third, at least an hour in all
    let span = ((end - start) * 3).max(3600);
    let from = start - (span - (end - start)) / 2;
    let until = from + span;
    let img = |target: &str, extra: &str| {
        format!(
            "/render?target={}&from={from}&until={until}&shade={start}:{end}&width=900&height=300&format=png{extra}",
            query_escape(target)
        )
    };
    let body = format!(
        r#"<h2 class="anomaly-series">{s}</h2>
<p>From {a} to {b} UTC (shaded).</p>
<figure class="render"><img class="graph-img anomaly-graph" id="series-img" alt="the series" src="{i1}"></figure>
<figure class="render"><img class="graph-img anomaly-graph" id="score-img" alt="its anomaly score" src="{i2}"></figure>"#,
        s = esc(series),
        a = utc(start),
        b = utc(end),
        i1 = esc(&img(series, "")),
        i2 = esc(&img(
            &format!("anomalyScore({series})"),
            "&yMin=0&yMax=1&areaMode=first"
        )),
    );
    Html(page(
        series,
        &Crumbs::home()
            .push("Anomalies", Some("/anomalies".to_string()))
            .push(series, None),
        "",
        &body,
    ))
    .into_response()
}
