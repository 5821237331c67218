//! graphite-web's `aggregate()`, which `sumSeries`, `averageSeries` and the other
//! aggregating functions call: the series are aligned ([`normalize`]), then each
//! timestamp's row of values (one per series, `None` where a series has no value or
//! has ended) is reduced by an aggregation function, or is `None` when less than
//! xFilesFactor of the row is known.
//!
//! Rows are computed series by series into per-timestamp accumulators rather than
//! gathered timestamp by timestamp: each series is read once, front to back, and a
//! row's values still meet the accumulator in graphite-web's order, so every
//! floating-point operation happens in the same order (sums from zero, left to right;
//! `min`/`max` keeping the first of equal values). Only `median` gathers rows.
//!
//! [`normalize`]: crate::functions::align::normalize

use std::borrow::Cow;

use crate::functions::aggregation::{row, AggFunc};
use crate::functions::align::{normalize_list, Span};
use crate::functions::naming::format_path_expressions;
use crate::series::{Tags, TimeSeries};

/// `getAggFunc` after `aggregate()` strips a trailing `Series`: the name the result is
/// called after (`sum` → `sumSeries(…)`) and the function. `None` for an unknown name.
pub(crate) fn agg_func(raw: &str) -> Option<(&str, AggFunc)> {
    let name = raw.strip_suffix("Series").unwrap_or(raw);
    AggFunc::from_name(name).map(|f| (name, f))
}

/// graphite-web's `aggregate(requestContext, seriesList, func, xFilesFactor)` over
/// series gathered into one list: `None` when there is no series. `func_name` is the
/// name after `Series` was stripped (`sum`, `average`, `rangeOf`…).
pub(crate) fn aggregate(
    mut series: Vec<TimeSeries>,
    func_name: &str,
    func: AggFunc,
    xff: f64,
) -> Option<TimeSeries> {
    let span = normalize_list(&mut series)?;
    let name = format!("{func_name}Series({})", format_path_expressions(&series));
    let values = aggregate_rows(&series, func, xff);
    let mut tags = common_tags(&series);
    if tags.get("name").is_none() {
        tags.set("name", &name);
    }
    tags.set("aggregatedBy", func_name);
    Some(new_series(name, span, values, xff, Some(tags)))
}

/// A new series over `span` as graphite-web's `TimeSeries(name, start, end, step,
/// values, xFilesFactor=xff[, tags=tags])` builds it: without tags they are read from
/// the name.
pub(crate) fn new_series(
    name: String,
    span: Span,
    values: Vec<Option<f64>>,
    xff: f64,
    tags: Option<Tags>,
) -> TimeSeries {
    let mut s = TimeSeries::new(name, span.start, span.end, span.step, values);
    s.x_files_factor = xff;
    if let Some(tags) = tags {
        s.tags = tags;
    }
    s
}

/// The tags every series has with the same value, in the first series' order.
fn common_tags(series: &[TimeSeries]) -> Tags {
    let mut tags = Tags::new();
    let Some((first, rest)) = series.split_first() else {
        return tags;
    };
    for (k, v) in first.tags.iter() {
        if rest.iter().all(|s| s.tags.get(k) == Some(v)) {
            tags.set(k, v);
        }
    }
    tags
}

/// graphite-web's `xff(nonNull, total, xFilesFactor)`: some value is known, and at
/// least the fraction `xff` of them.
pub(crate) fn enough(known: usize, total: usize, xff: f64) -> bool {
    known > 0 && total > 0 && known as f64 / total as f64 >= xff
}

/// The series' values as graphite-web iterates them (consolidated when normalized).
pub(crate) fn views(series: &[TimeSeries]) -> Vec<Cow<'_, [Option<f64>]>> {
    series.iter().map(row).collect()
}

/// `[func(row) if xffValues(row, xff) else None for row in izip_longest(*series)]`.
pub(crate) fn aggregate_rows(series: &[TimeSeries], func: AggFunc, xff: f64) -> Vec<Option<f64>> {
    let views = views(series);
    aggregate_views(&views, func, xff)
}

/// [`aggregate_rows`] over the values themselves.
pub(crate) fn aggregate_views<V: AsRef<[Option<f64>]>>(
    views: &[V],
    func: AggFunc,
    xff: f64,
) -> Vec<Option<f64>> {
    let len = views.iter().map(|v| v.as_ref().len()).max().unwrap_or(0);
    let total = views.len();
    if func == AggFunc::Median {
        let mut scratch: Vec<Option<f64>> = Vec::with_capacity(total);
        return (0..len)
            .map(|i| {
                scratch.clear();
                scratch.extend(views.iter().map(|v| v.as_ref().get(i).copied().flatten()));
                let known = scratch.iter().filter(|v| v.is_some()).count();
                if enough(known, total, xff) {
                    func.apply(&scratch)
                } else {
                    None
                }
            })
            .collect();
    }
    // rows in blocks whose accumulators stay in the first-level cache, each block
    // read series by series (so each row still meets its values in series order)
    let mut out = Vec::with_capacity(len);
    let mut start = 0;
    while start < len {
        let end = (start + BLOCK).min(len);
        let mut columns = Columns::new(end - start, Kind::of(func));
        for view in views {
            columns.add(block(view.as_ref(), start, end));
        }
        if func == AggFunc::Stddev {
            let blocks: Vec<&[Option<f64>]> = views
                .iter()
                .map(|v| block(v.as_ref(), start, end))
                .collect();
            columns.add_squared_deviations(&blocks);
        }
        out.extend(columns.finish(func, total, xff));
        start = end;
    }
    out
}

/// graphite-web's `aggregate()` (and `countSeries`) fed one series at a time, in the
/// order of the list, without holding the list: what a streaming evaluation folds a
/// glob's series into, chunk by chunk. It holds the output's accumulators, the
/// distinct path expressions (the output's name), the tags common so far and, for
/// `multiplySeries`, the first series until a second arrives.
///
/// Every series is read at `step`, which must be the least common multiple of all the
/// steps the list will have ([`normalize`]); [`Fold::add`] answers `false` for a
/// series whose step does not divide it, and the caller starts again with the right
/// one. Rows then meet their values in list order, as in [`aggregate_views`], so the
/// answer is bit for bit the same.
///
/// [`normalize`]: crate::functions::align::normalize
pub(crate) struct Fold {
    func_name: String,
    /// `None`: `countSeries`.
    func: Option<AggFunc>,
    step: i64,
    span: Option<(i64, i64)>,
    total: usize,
    len: usize,
    columns: Columns,
    path_expressions: PathExpressions,
    tags: Vec<(String, String)>,
    /// `multiplySeries` of one series answers that series ([`Fold::single_as_is`]).
    single_as_is: bool,
    first: Option<TimeSeries>,
}

impl Fold {
    /// A fold for `func_name` (after `Series` was stripped; `count` with `func` `None`
    /// for `countSeries`), reading every series at `step`. `median` needs whole rows:
    /// `None`. `stddev` needs the list twice: [`Fold::second_pass`].
    pub(crate) fn new(func_name: &str, func: Option<AggFunc>, step: i64) -> Option<Fold> {
        if matches!(func, Some(AggFunc::Median)) || step <= 0 {
            return None;
        }
        Some(Fold {
            func_name: func_name.to_string(),
            func,
            step,
            span: None,
            total: 0,
            len: 0,
            columns: Columns::new(0, func.map_or(Kind::Sum, Kind::of)),
            path_expressions: PathExpressions::new(&format!("{func_name}Series(")),
            tags: Vec::new(),
            single_as_is: false,
            first: None,
        })
    }

    /// Whether the list must be read again (`stddev`: the squared deviations from
    /// each row's average, once the averages are known); if so, the fold now takes
    /// them, series by series in the same order, through [`Fold::add_deviations`].
    pub(crate) fn second_pass(&mut self) -> bool {
        if self.func != Some(AggFunc::Stddev) {
            return false;
        }
        self.columns.start_deviations();
        true
    }

    /// A series of the second pass ([`Fold::second_pass`]).
    pub(crate) fn add_deviations(&mut self, mut series: TimeSeries) {
        if series.step <= 0 || self.step % series.step != 0 {
            return;
        }
        series.values_per_point = usize::try_from(self.step / series.step).unwrap_or(1);
        self.columns.add_deviations(&row(&series));
    }

    /// A list of one series is answered with that series (`multiplySeries`).
    pub(crate) fn single_as_is(mut self) -> Fold {
        self.single_as_is = true;
        self
    }

    /// Adds the next series of the list; `false` (and nothing added) when its step
    /// does not divide the fold's.
    pub(crate) fn add(&mut self, mut series: TimeSeries) -> bool {
        if series.step <= 0 || self.step % series.step != 0 {
            return false;
        }
        series.values_per_point = usize::try_from(self.step / series.step).unwrap_or(1);
        self.span = Some(match self.span {
            None => (series.start, series.end),
            Some((start, end)) => (start.min(series.start), end.max(series.end)),
        });
        self.path_expressions.add(&series.path_expression);
        if self.total == 0 {
            self.tags = series
                .tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        } else {
            self.tags
                .retain(|(k, v)| series.tags.get(k) == Some(v.as_str()));
        }
        let view = row(&series);
        if view.len() > self.len {
            self.columns.grow(view.len(), self.total > 0);
            self.len = view.len();
        }
        if self.func.is_some() {
            self.columns.add(&view);
        }
        drop(view);
        self.total += 1;
        self.first = if self.total == 1 && self.single_as_is {
            Some(series)
        } else {
            None
        };
        true
    }

    /// The aggregate, as [`aggregate`] (or `countSeries`) answers it; `None` when no
    /// series was added.
    pub(crate) fn finish(self, xff: f64) -> Option<TimeSeries> {
        let (start, end) = self.span?;
        if let Some(first) = self.first {
            return Some(first);
        }
        let step = self.step;
        let end = end - (end - start).rem_euclid(step);
        let span = Span { start, end, step };
        let name = self.path_expressions.finish();
        let Some(func) = self.func else {
            let values = vec![Some(self.total as f64); self.len];
            return Some(new_series(name, span, values, xff, None));
        };
        let values = self.columns.finish(func, self.total, xff);
        let mut tags = Tags::new();
        for (k, v) in &self.tags {
            tags.set(k, v);
        }
        if tags.get("name").is_none() {
            tags.set("name", &name);
        }
        tags.set("aggregatedBy", &self.func_name);
        Some(new_series(name, span, values, xff, Some(tags)))
    }
}

/// The distinct path expressions of a fold's series, in order of first appearance,
/// joined by commas into the aggregate's name as they come (graphite-web's
/// `formatPathExpressions`). Over a million series whose expressions all differ
/// (`sumSeries(isNonNull(a.*))` names each `isNonNull(a.x)`), the name is all that is
/// held of them: the set that keeps them unique holds places in it, not copies.
struct PathExpressions {
    /// The name so far: `sumSeries(` and the expressions.
    name: String,
    /// Where the head ends (the first expression starts).
    head: usize,
    /// Each distinct expression as (start, end) in `name`.
    set: hashbrown::HashTable<(usize, usize)>,
    state: foldhash::fast::RandomState,
    /// The last one added: the series of a plain glob share one expression.
    last: Option<(usize, usize)>,
}

impl PathExpressions {
    fn new(head: &str) -> PathExpressions {
        PathExpressions {
            name: head.to_string(),
            head: head.len(),
            set: hashbrown::HashTable::new(),
            state: foldhash::fast::RandomState::default(),
            last: None,
        }
    }

    fn add(&mut self, expr: &str) {
        use std::hash::BuildHasher;
        let PathExpressions {
            name,
            head,
            set,
            state,
            last,
        } = self;
        let text = |(start, end): (usize, usize)| name.get(start..end).unwrap_or("");
        if last.is_some_and(|l| text(l) == expr) {
            return;
        }
        let hash = state.hash_one(expr);
        if let Some(&found) = set.find(hash, |&e| text(e) == expr) {
            *last = Some(found);
            return;
        }
        if name.len() > *head {
            name.push(',');
        }
        let place = (name.len(), name.len() + expr.len());
        name.push_str(expr);
        let name = &*name;
        set.insert_unique(hash, place, |&(start, end)| {
            state.hash_one(name.get(start..end).unwrap_or(""))
        });
        *last = Some(place);
    }

    /// The name, closed.
    fn finish(self) -> String {
        let mut name = self.name;
        name.push(')');
        name
    }
}

/// Rows aggregated together: 2,048 rows of accumulators (24 KiB) fit a first-level cache.
const BLOCK: usize = 2048;

/// Rows `start..end` of one series (shorter or empty where the series ends).
fn block(view: &[Option<f64>], start: usize, end: usize) -> &[Option<f64>] {
    view.get(start.min(view.len())..end.min(view.len()))
        .unwrap_or(&[])
}

/// What the accumulators hold for a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// the sum of known values (`sum`, `average`, `avg_zero`, `stddev`; `count` too)
    Sum,
    /// the product, and whether a value is missing
    Product,
    Last,
    Min,
    Max,
    /// the first value minus the others
    Diff,
    /// the minimum and the maximum
    Range,
}

impl Kind {
    fn of(func: AggFunc) -> Kind {
        match func {
            AggFunc::Multiply => Kind::Product,
            AggFunc::Last => Kind::Last,
            AggFunc::Min => Kind::Min,
            AggFunc::Max => Kind::Max,
            AggFunc::Diff => Kind::Diff,
            AggFunc::Range => Kind::Range,
            AggFunc::Sum
            | AggFunc::Average
            | AggFunc::AvgZero
            | AggFunc::Stddev
            | AggFunc::Count
            | AggFunc::Median => Kind::Sum,
        }
    }
}

/// Per-timestamp running state of one aggregation.
struct Columns {
    kind: Kind,
    known: Vec<u32>,
    /// the sum, product, last value, minimum, or first-minus-the-rest
    a: Vec<f64>,
    /// the maximum (`range`); the sum of squared deviations (`stddev`)
    b: Vec<f64>,
    /// a missing value in the row (for `multiply`)
    gap: Vec<bool>,
    /// the row averages (`stddev`'s second pass)
    avg: Vec<f64>,
}

impl Columns {
    fn new(len: usize, kind: Kind) -> Columns {
        Columns {
            kind,
            known: vec![0; len],
            // Python's reduce() starts from the first factor; 1.0 * x is x, bit for bit
            a: vec![if kind == Kind::Product { 1.0 } else { 0.0 }; len],
            b: vec![0.0; if kind == Kind::Range { len } else { 0 }],
            gap: vec![false; if kind == Kind::Product { len } else { 0 }],
            avg: Vec::new(),
        }
    }

    /// More rows, to `len`; `after_series` when series were added already, all of
    /// them shorter (for `multiply`, a row they do not reach has a missing value).
    fn grow(&mut self, len: usize, after_series: bool) {
        self.known.resize(len, 0);
        let init = if self.kind == Kind::Product { 1.0 } else { 0.0 };
        self.a.resize(len, init);
        if self.kind == Kind::Range {
            self.b.resize(len, 0.0);
        }
        if self.kind == Kind::Product {
            self.gap.resize(len, after_series);
        }
    }

    /// The next value of each row: one series.
    fn add(&mut self, view: &[Option<f64>]) {
        match self.kind {
            // branch-free: a missing value adds 0.0, which changes no sum that starts
            // at +0.0 (such a sum is never -0.0) and counts nothing
            Kind::Sum => {
                let cells = self.known.iter_mut().zip(self.a.iter_mut());
                for ((known, a), v) in cells.zip(view) {
                    *known += u32::from(v.is_some());
                    *a += v.unwrap_or(0.0);
                }
            }
            Kind::Product => {
                self.fold(view, |a, v, _| a * v);
                for (gap, v) in self.gap.iter_mut().zip(view) {
                    *gap |= v.is_none();
                }
                // a shorter series pads its rows with None
                if let Some(rest) = self.gap.get_mut(view.len()..) {
                    rest.fill(true);
                }
            }
            Kind::Last => self.fold(view, |_, v, _| v),
            Kind::Min => self.fold(view, |a, v, first| if first || v < a { v } else { a }),
            Kind::Max => self.fold(view, |a, v, first| if first || v > a { v } else { a }),
            Kind::Diff => self.fold(view, |a, v, first| if first { 0.0 + v } else { a + -v }),
            Kind::Range => {
                // a: the minimum, b: the maximum
                let cells = self
                    .known
                    .iter_mut()
                    .zip(self.a.iter_mut())
                    .zip(self.b.iter_mut());
                for (((known, min), max), v) in cells.zip(view) {
                    let Some(v) = *v else { continue };
                    let first = *known == 0;
                    *known += 1;
                    if first || v < *min {
                        *min = v;
                    }
                    if first || v > *max {
                        *max = v;
                    }
                }
            }
        }
    }

    /// Each known value into its row's accumulator with `f(acc, value, first)`.
    #[inline(always)]
    fn fold(&mut self, view: &[Option<f64>], f: impl Fn(f64, f64, bool) -> f64) {
        let cells = self.known.iter_mut().zip(self.a.iter_mut());
        for ((known, a), v) in cells.zip(view) {
            if let Some(v) = *v {
                let first = *known == 0;
                *known += 1;
                *a = f(*a, v, first);
            }
        }
    }

    /// `stddev`'s second pass, once the sums are known: `(v - avg) ** 2` of each known
    /// value, summed in row order.
    fn add_squared_deviations<V: AsRef<[Option<f64>]>>(&mut self, views: &[V]) {
        self.start_deviations();
        for view in views {
            self.add_deviations(view.as_ref());
        }
    }

    /// The row averages into `avg`, and `b` zeroed for the deviations.
    fn start_deviations(&mut self) {
        self.avg = self
            .a
            .iter()
            .zip(&self.known)
            .map(|(sum, &n)| sum / f64::from(n.max(1)))
            .collect();
        self.b = vec![0.0; self.avg.len()];
    }

    /// One series' squared deviations from the row averages.
    fn add_deviations(&mut self, view: &[Option<f64>]) {
        for ((dev, avg), v) in self.b.iter_mut().zip(&self.avg).zip(view) {
            if let Some(v) = *v {
                *dev += (v - avg) * (v - avg);
            }
        }
    }

    fn finish(self, func: AggFunc, total: usize, xff: f64) -> Vec<Option<f64>> {
        let Columns {
            known, a, b, gap, ..
        } = self;
        known
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let n_known = n as usize;
                if !enough(n_known, total, xff) {
                    return None;
                }
                let a = a.get(i).copied().unwrap_or(0.0);
                let n = f64::from(n);
                match func {
                    AggFunc::Sum | AggFunc::Last | AggFunc::Min | AggFunc::Max | AggFunc::Diff => {
                        Some(a)
                    }
                    AggFunc::Average => Some(a / n),
                    AggFunc::AvgZero => Some(a / total as f64),
                    AggFunc::Count => Some(n),
                    AggFunc::Multiply => (!gap.get(i).copied().unwrap_or(true)).then_some(a),
                    AggFunc::Range => b.get(i).map(|max| max - a),
                    AggFunc::Stddev => b.get(i).map(|dev| (dev / n).sqrt()),
                    AggFunc::Median => None,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The accumulators agree bit for bit with the row-at-a-time functions (which
    /// follow graphite-web's `safe.py` literally) on rows with gaps, ragged lengths,
    /// ties, signed zeros, infinities and NaN.
    #[test]
    fn columns_match_rows() {
        let pool = [
            Some(1.5),
            None,
            Some(-0.0),
            Some(0.0),
            Some(3.0),
            Some(-2.25),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            Some(f64::NAN),
            Some(1e308),
            Some(1e-310),
            Some(3.0),
        ];
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let funcs = [
            AggFunc::Sum,
            AggFunc::Average,
            AggFunc::AvgZero,
            AggFunc::Median,
            AggFunc::Min,
            AggFunc::Max,
            AggFunc::Diff,
            AggFunc::Stddev,
            AggFunc::Count,
            AggFunc::Range,
            AggFunc::Multiply,
            AggFunc::Last,
        ];
        for round in 0..420 {
            let n_series = 1 + next(5);
            // a few rounds longer than a block of rows, ragged around its end
            let max_len = if round % 20 == 0 { BLOCK + 5 } else { 7 };
            let views: Vec<Vec<Option<f64>>> = (0..n_series)
                .map(|_| {
                    let len = if max_len > 7 {
                        BLOCK - 2 + next(7)
                    } else {
                        next(7)
                    };
                    (0..len).map(|_| pool[next(pool.len())]).collect()
                })
                .collect();
            let len = views.iter().map(Vec::len).max().unwrap_or(0);
            for func in funcs {
                for xff in [0.0, 0.5, 1.0] {
                    let got = aggregate_views(&views, func, xff);
                    let want: Vec<Option<f64>> = (0..len)
                        .map(|i| {
                            let row: Vec<Option<f64>> =
                                views.iter().map(|v| v.get(i).copied().flatten()).collect();
                            let known = row.iter().filter(|v| v.is_some()).count();
                            if enough(known, row.len(), xff) {
                                func.apply(&row)
                            } else {
                                None
                            }
                        })
                        .collect();
                    let bits = |v: &[Option<f64>]| -> Vec<Option<u64>> {
                        v.iter()
                            .map(|x| x.map(|x| if x.is_nan() { 1 } else { x.to_bits() }))
                            .collect()
                    };
                    assert_eq!(bits(&got), bits(&want), "{func:?} xff={xff} {views:?}");
                }
            }
        }
    }

    #[test]
    fn names_and_tags() {
        let mut a = TimeSeries::new("cpu;host=a;dc=x", 0, 60, 10, vec![Some(1.0); 6]);
        a.path_expression = "cpu;dc=x".into();
        let b = TimeSeries::new("cpu;host=b;dc=x", 0, 60, 20, vec![Some(2.0); 3]);
        let s = aggregate(vec![a, b], "sum", AggFunc::Sum, 0.0).unwrap();
        assert_eq!(s.name, "sumSeries(cpu;dc=x,cpu;host=b;dc=x)");
        assert_eq!(s.step, 20);
        assert_eq!(s.values, vec![Some(3.0); 3]);
        let tags: Vec<(&str, &str)> = s.tags.iter().collect();
        assert_eq!(
            tags,
            vec![("dc", "x"), ("name", "cpu"), ("aggregatedBy", "sum")]
        );
        assert_eq!(agg_func("rangeOfSeries").map(|(n, _)| n), Some("rangeOf"));
        assert!(agg_func("Series").is_none());
        assert!(aggregate(Vec::new(), "sum", AggFunc::Sum, 0.0).is_none());
    }
}

#[cfg(test)]
mod speed {
    use super::*;

    /// `cargo test -p sumi-query --release -- --ignored sum_speed --nocapture`: the row
    /// reduction of sumSeries over 1,000 series of 8,640 points (a day at 10 s).
    #[test]
    #[ignore = "timing, not a check: see the doc line above"]
    fn sum_speed() {
        let views: Vec<Vec<Option<f64>>> = (0..1000)
            .map(|s| {
                (0..8640)
                    .map(|i| ((i * 7 + s) % 50 != 0).then_some((i * s) as f64 * 0.5))
                    .collect()
            })
            .collect();
        // the floor: reading every value once
        let mut times = Vec::new();
        for _ in 0..15 {
            let start = std::time::Instant::now();
            let total: f64 = views.iter().flatten().map(|v| v.unwrap_or(0.0)).sum();
            times.push(start.elapsed());
            assert!(total > 0.0);
        }
        times.sort();
        println!(
            "read: min {:?}, median {:?}",
            times[0],
            times[times.len() / 2]
        );
        for func in [
            AggFunc::Sum,
            AggFunc::Average,
            AggFunc::Max,
            AggFunc::Median,
        ] {
            let mut times = Vec::new();
            for _ in 0..15 {
                let start = std::time::Instant::now();
                let out = aggregate_views(&views, func, 0.0);
                times.push(start.elapsed());
                assert_eq!(out.len(), 8640);
            }
            times.sort();
            println!(
                "{func:?}: min {:?}, median {:?}",
                times[0],
                times[times.len() / 2]
            );
        }
    }
}
