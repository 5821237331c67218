//! `format=json`: graphite-web's `renderViewJson`.
//!
//! `[{"target": name, "tags": {...}, "datapoints": [[value, timestamp], ...]}, ...]`,
//! after two optional steps, in this order:
//! - `maxDataPoints`: a series with more points than allowed over the request's whole
//!   span (from the earliest start to the latest end of all series) is consolidated by
//!   `ceil(points / maxDataPoints)`; its start is first "nudged" to the next multiple
//!   of the new step (dropping `nudge / step - 1` leading values) so that buckets stay
//!   put from one refresh to the next. `maxDataPoints=1` folds each series into one
//!   point.
//! - `noNullPoints`: points whose value is null (or NaN) are dropped, and a series left
//!   with none is dropped too.
//!
//! NaN is written `null`, ±infinity `1e9999`/`-1e9999`: graphite-web rewrites
//! `NaN,` and `Infinity,` in its output text, which also touches series names that
//! contain those words followed by a comma — reproduced. Nothing is written at all
//! when every series is empty (`[]`).

use sumi_query::series::{Consolidated, TimeSeries};

use crate::json::JsonWriter;
use crate::Rendered;

/// Options of `format=json`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonOptions {
    /// graphite-web ignores values that are not all digits; 0 is treated as absent
    /// (graphite-web fails with a server error on it).
    pub max_data_points: Option<u64>,
    pub no_null_points: bool,
    /// Indent by two spaces (graphite-web: any non-empty `pretty`).
    pub pretty: bool,
    /// Wrap as `jsonp(...)`, served as `text/javascript`.
    pub jsonp: Option<String>,
}

/// How a series is read after `maxDataPoints`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    /// Leading values dropped by the nudge.
    pub skip: usize,
    pub values_per_point: usize,
}

/// graphite-web's `maxDataPoints` arithmetic for one series, given the span of all the
/// series in the answer. Python's float division and `ceil` are reproduced, and its
/// failures (a step of 0, a nudge past the end) become "leave the series alone" and
/// "drop what there is".
pub fn max_data_points_window(
    series: &TimeSeries,
    max_data_points: u64,
    time_range: i64,
) -> Window {
    let mut w = Window {
        start: series.start,
        skip: 0,
        values_per_point: series.values_per_point,
    };
    if max_data_points == 0 {
        return w;
    }
    if max_data_points == 1 {
        if !series.values.is_empty() {
            w.values_per_point = series.values.len();
        }
        return w;
    }
    let step = series.step;
    if step <= 0 {
        return w;
    }
    let points = time_range as f64 / step as f64;
    if (max_data_points as f64) < points {
        let per_point = (points / max_data_points as f64).ceil() as i64;
        let seconds_per_point = per_point.saturating_mul(step);
        if seconds_per_point <= 0 {
            return w;
        }
        let nudge = seconds_per_point + series.start.rem_euclid(step)
            - series.start.rem_euclid(seconds_per_point);
        w.start = series.start + nudge;
        let to_lose = (nudge as f64 / step as f64) as i64;
        w.skip = usize::try_from(to_lose - 1)
            .unwrap_or(0)
            .min(series.values.len());
        w.values_per_point = usize::try_from(per_point).unwrap_or(1);
    }
    w
}

/// Renders series as graphite-web's `format=json`.
pub fn render_json(series: &[TimeSeries], opts: &JsonOptions) -> Rendered {
    let indent = opts.pretty.then_some(2);
    let mut w = JsonWriter::new(indent, true).graphite_rewrite();
    let points: usize = series.iter().map(|s| s.values.len()).sum();
    w.reserve(64 + points * 24);
    w.begin_array();
    if series.iter().any(|s| !s.values.is_empty()) {
        let start = series.iter().map(|s| s.start).min().unwrap_or(0);
        let end = series.iter().map(|s| s.end).max().unwrap_or(0);
        let time_range = end - start;
        for s in series {
            let window = match opts.max_data_points {
                Some(max) => max_data_points_window(s, max, time_range),
                None => Window {
                    start: s.start,
                    skip: 0,
                    values_per_point: s.values_per_point,
                },
            };
            write_series(&mut w, s, window, opts.no_null_points);
        }
    }
    w.end_array();
    let body = w.finish();
    crate::wrap_json(
        body,
        opts.jsonp.as_deref(),
        "application/json",
        "text/javascript",
    )
}

fn write_series(w: &mut JsonWriter, s: &TimeSeries, window: Window, no_null_points: bool) {
    let stride = s.step.saturating_mul(window.values_per_point.max(1) as i64);
    let count = if stride > 0 && s.end >= window.start {
        usize::try_from((s.end - window.start) / stride + 1).unwrap_or(0)
    } else {
        0
    };
    let values = s.values.get(window.skip..).unwrap_or(&[]);
    let keep = |v: &Option<f64>| !no_null_points || v.is_some_and(|x| !x.is_nan());
    if no_null_points {
        let any = Consolidated::new(
            values,
            window.values_per_point,
            s.consolidation,
            s.x_files_factor,
        )
        .take(count)
        .any(|v| keep(&v));
        if !any {
            return;
        }
    }
    w.begin_object();
    w.key("target");
    w.string(&s.name);
    w.key("tags");
    w.begin_object();
    for (k, v) in s.tags.iter() {
        w.key(k);
        w.string(v);
    }
    w.end_object();
    w.key("datapoints");
    w.begin_array();
    if window.values_per_point <= 1 {
        // the common case, kept free of the consolidation machinery
        let mut ts = window.start;
        for v in values.iter().take(count) {
            if keep(v) {
                w.datapoint(*v, ts);
            }
            ts += stride;
        }
    } else {
        let points = Consolidated::new(
            values,
            window.values_per_point,
            s.consolidation,
            s.x_files_factor,
        )
        .take(count);
        let mut ts = window.start;
        for v in points {
            if keep(&v) {
                w.datapoint(v, ts);
            }
            ts += stride;
        }
    }
    w.end_array();
    w.end_object();
}
