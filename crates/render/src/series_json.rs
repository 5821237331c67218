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
//!
//! [`render_json_chunks`] writes the same bytes in chunks from an [`Answer`], building
//! each series as it goes and dropping it once written, so that a big answer is never
//! held twice (as series and as text); [`render_json`] is the one-piece form.

use std::borrow::Borrow;

use sumi_query::series::{Answer, AnswerSeries, Consolidated, TimeSeries};

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
    let has_values = series.iter().any(|s| !s.values.is_empty());
    let span = span(series.iter().map(|s| (s.start, s.end)));
    let points: usize = series.iter().map(|s| s.values.len()).sum();
    let mut chunks = JsonChunks::new(series.iter(), has_values, span, opts, usize::MAX);
    chunks.w.reserve(64 + points * 24);
    // one chunk: nothing is handed out before the end
    let mut body = Vec::new();
    for chunk in chunks {
        if body.is_empty() {
            body = chunk;
        } else {
            body.extend_from_slice(&chunk);
        }
    }
    Rendered {
        body,
        content_type: json_content_type(opts),
    }
}

/// The `Content-Type` of `format=json` with these options.
pub fn json_content_type(opts: &JsonOptions) -> &'static str {
    if opts.jsonp.is_some() {
        "text/javascript"
    } else {
        "application/json"
    }
}

/// `format=json` of an answer, as chunks of about `chunk_bytes` (at least one series
/// a chunk) that join into exactly what [`render_json`] writes. Series are built from
/// the answer, written and dropped one at a time.
pub fn render_json_chunks(
    answer: Answer,
    opts: &JsonOptions,
    chunk_bytes: usize,
) -> JsonChunks<AnswerSeries> {
    let has_values = answer.extents().any(|(_, _, n)| n > 0);
    let span = span(answer.extents().map(|(start, end, _)| (start, end)));
    let points: usize = answer.extents().map(|(_, _, n)| n).sum();
    let mut chunks = JsonChunks::new(answer.into_series(), has_values, span, opts, chunk_bytes);
    // the first chunk, or the whole of a small answer, without growing the buffer
    let first = points.saturating_mul(24).saturating_add(64);
    chunks.w.reserve(first.min(chunks.capacity()));
    chunks
}

/// The earliest start and the latest end.
fn span(extents: impl Iterator<Item = (i64, i64)>) -> (i64, i64) {
    extents
        .fold(None, |acc: Option<(i64, i64)>, (s, e)| {
            Some(acc.map_or((s, e), |(a, b)| (a.min(s), b.max(e))))
        })
        .unwrap_or((0, 0))
}

/// The chunks of a `format=json` document (see [`render_json_chunks`]).
pub struct JsonChunks<I> {
    series: I,
    w: JsonWriter,
    /// Nothing is written between the brackets when no series has a value.
    has_values: bool,
    time_range: i64,
    max_data_points: Option<u64>,
    no_null_points: bool,
    jsonp: Option<String>,
    chunk_bytes: usize,
    done: bool,
}

impl<I> JsonChunks<I> {
    fn new(
        series: I,
        has_values: bool,
        span: (i64, i64),
        opts: &JsonOptions,
        chunk_bytes: usize,
    ) -> JsonChunks<I> {
        let indent = opts.pretty.then_some(2);
        let mut w = JsonWriter::new(indent, true).graphite_rewrite();
        if let Some(callback) = &opts.jsonp {
            w.verbatim(callback);
            w.verbatim("(");
        }
        w.begin_array();
        JsonChunks {
            series,
            w,
            has_values,
            time_range: span.1 - span.0,
            max_data_points: opts.max_data_points,
            no_null_points: opts.no_null_points,
            jsonp: opts.jsonp.clone(),
            chunk_bytes,
            done: false,
        }
    }

    /// Room for a chunk: what it holds when handed out, plus some for the series
    /// that crosses the threshold.
    fn capacity(&self) -> usize {
        self.chunk_bytes
            .saturating_add(self.chunk_bytes / 4)
            .min(16 << 20)
    }
}

impl<I, S> Iterator for JsonChunks<I>
where
    I: Iterator<Item = S>,
    S: Borrow<TimeSeries>,
{
    type Item = Vec<u8>;

    fn next(&mut self) -> Option<Vec<u8>> {
        if self.done {
            return None;
        }
        let capacity = self.capacity();
        while self.w.len() < self.chunk_bytes {
            let next = if self.has_values {
                self.series.next()
            } else {
                None
            };
            let Some(s) = next else {
                self.w.end_array();
                if self.jsonp.is_some() {
                    self.w.verbatim(")");
                }
                self.done = true;
                return Some(self.w.take(0).into_bytes());
            };
            let s = s.borrow();
            let window = match self.max_data_points {
                Some(max) => max_data_points_window(s, max, self.time_range),
                None => Window {
                    start: s.start,
                    skip: 0,
                    values_per_point: s.values_per_point,
                },
            };
            write_series(&mut self.w, s, window, self.no_null_points);
        }
        Some(self.w.take(capacity).into_bytes())
    }
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
    let unnamed = s.name_is_none();
    w.key("target");
    if unnamed {
        w.null();
    } else {
        w.string(&s.name);
    }
    w.key("tags");
    w.begin_object();
    // graphite-web's tags of such a series still hold the string 'None'
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

#[cfg(test)]
mod tests {
    use chrono_tz::Tz;
    use sumi_query::memory::MemorySource;
    use sumi_query::{Evaluator, Registry, RequestContext, TimeRange};

    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn answer(targets: &[&str]) -> Answer {
        let mut m = MemorySource::new();
        let start = NOW - 3600;
        let weird: Vec<Option<f64>> = (0..60)
            .map(|i| match i % 5 {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(f64::INFINITY),
                3 => Some(-1.5e-7 * i as f64),
                _ => Some(i as f64),
            })
            .collect();
        m.add("a.b.c", 60, 86_400, start, &weird);
        m.add("a.b.NaN, x", 60, 86_400, start, &[Some(1.0); 30]);
        m.add("a.b.\u{e9}", 60, 86_400, start, &[None; 60]);
        m.add("a.coarse", 600, 86_400, start, &[Some(2.0); 6]);
        let ctx = RequestContext::new(
            TimeRange {
                from: NOW - 3600,
                until: NOW,
                now: NOW,
            },
            Tz::UTC,
        );
        let reg = Registry::standard();
        Evaluator::new(&m, &reg).evaluate(&ctx, targets).unwrap()
    }

    /// Chunks join into exactly what `render_json` writes, whatever the chunk size.
    #[test]
    fn chunks_join_into_the_whole_document() {
        let targets: &[&[&str]] = &[
            &["a.b.*", "a.coarse", "scale(a.b.c, 2)"],
            &["a.nothing.*"],
            &["a.b.\u{e9}"],
        ];
        let options = [
            JsonOptions::default(),
            JsonOptions {
                max_data_points: Some(7),
                no_null_points: true,
                ..JsonOptions::default()
            },
            JsonOptions {
                max_data_points: Some(1),
                pretty: true,
                jsonp: Some("cb".into()),
                ..JsonOptions::default()
            },
            JsonOptions {
                no_null_points: true,
                ..JsonOptions::default()
            },
        ];
        for t in targets {
            for opts in &options {
                let whole = render_json(&answer(t).into_vec(), opts);
                assert_eq!(whole.content_type, json_content_type(opts));
                for chunk in [1, 64, 5000, usize::MAX] {
                    let chunks: Vec<Vec<u8>> = render_json_chunks(answer(t), opts, chunk).collect();
                    assert!(chunks.iter().all(|c| !c.is_empty()), "{t:?} {opts:?}");
                    if chunk == usize::MAX {
                        assert_eq!(chunks.len(), 1);
                    }
                    assert_eq!(
                        String::from_utf8(chunks.concat()).unwrap(),
                        String::from_utf8(whole.body.clone()).unwrap(),
                        "{t:?} {opts:?} chunk {chunk}"
                    );
                }
            }
        }
    }
}
