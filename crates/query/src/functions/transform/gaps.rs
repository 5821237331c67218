//! Transform functions about missing values: `keepLastValue`, `interpolate`,
//! `transformNull`, `compressPeriodicGaps`, and `delay` (which shifts values by whole
//! steps, opening a gap at one end).
//!
//! Deliberate difference (listed in `docs/graphite-differences.md`): `delay(x, 0)`
//! returns the series unchanged (renamed); graphite-web returns it with no values at
//! all (Python's `series[:-0]` is empty).

use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::row;
use crate::functions::align::copy_of;
use crate::functions::args::take_series;
use crate::functions::Invocation;
use crate::py::format::format_g;
use crate::series::TimeSeries;

use super::buckets::summarize_values;
use super::pointwise::rename;

type Output = Result<Value, QueryError>;

/// An `intOrInf` limit: at most this many consecutive nulls are filled.
fn limit(inv: &Invocation<'_>, i: usize) -> f64 {
    match inv.args.get(i) {
        Some(Value::Int(n)) => *n as f64,
        Some(Value::Float(x)) => *x,
        _ => f64::INFINITY,
    }
}

/// `keepLastValue(seriesList, limit=inf)`: each run of nulls after a value, of at most
/// `limit` points, takes that value (a run at the end too).
pub(super) fn keep_last_value(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let limit = limit(&inv, 1);
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        let name = format!("keepLastValue({})", s.name);
        rename(s, name);
        let view = row(s).into_owned();
        let mut nulls = 0usize;
        let mut last: Option<f64> = None;
        for (i, v) in view.iter().enumerate() {
            match *v {
                None => nulls += 1,
                Some(v) => {
                    if let Some(fill) = last.filter(|_| nulls > 0 && nulls as f64 <= limit) {
                        fill_range(&mut s.values, i - nulls, i, fill);
                    }
                    nulls = 0;
                    last = Some(v);
                }
            }
        }
        if let Some(fill) = last.filter(|_| nulls > 0 && nulls as f64 <= limit) {
            let len = s.values.len();
            fill_range(&mut s.values, len.saturating_sub(nulls), len, fill);
        }
    }
    Ok(Value::SeriesList(series))
}

fn fill_range(values: &mut [Option<f64>], from: usize, to: usize, fill: f64) {
    if let Some(slots) = values.get_mut(from..to) {
        slots.fill(Some(fill));
    }
}

/// `interpolate(seriesList, limit=inf)`: each run of at most `limit` nulls between two
/// values is filled on the straight line between them (runs at either end stay null).
pub(super) fn interpolate(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let limit = limit(&inv, 1);
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        let name = format!("interpolate({})", s.name);
        rename(s, name);
        let view = row(s).into_owned();
        let values = &mut s.values;
        let mut nulls = 0usize;
        for (i, v) in view.iter().enumerate() {
            if let Some(slot) = values.get_mut(i) {
                *slot = *v;
            }
            if i == 0 {
                continue;
            }
            let Some(v) = *v else {
                nulls += 1;
                continue;
            };
            if nulls == 0 {
                continue;
            }
            // the value before the run (at i - nulls - 1 >= 0, as the run starts at 1 or later)
            let before = i - nulls - 1;
            let Some(prev) = values.get(before).copied().flatten() else {
                nulls = 0;
                continue;
            };
            if nulls as f64 <= limit {
                for index in i - nulls..i {
                    let k = (index - before) as f64;
                    if let Some(slot) = values.get_mut(index) {
                        *slot = Some(prev + k * (v - prev) / (nulls + 1) as f64);
                    }
                }
            }
            nulls = 0;
        }
    }
    Ok(Value::SeriesList(series))
}

/// `transformNull(seriesList, default=0, referenceSeries=None)`: nulls become
/// `default`; with reference series, only where one of them has a value (elsewhere the
/// null stays).
pub(super) fn transform_null(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    // graphite-web's default is the integer 0 (its tag reads "0"); a given value is a
    // float ("0.0")
    let (default, tag) = match inv.args.get(1) {
        Some(Value::Float(x)) => (*x, crate::py::float_repr(*x)),
        Some(Value::Int(i)) => (*i as f64, i.to_string()),
        _ => (0.0, "0".to_string()),
    };
    let references = take_series(&mut inv, 2);
    let defaults: Option<Vec<Option<f64>>> = if references.is_empty() {
        None
    } else {
        let views: Vec<_> = references.iter().map(row).collect();
        let len = views.iter().map(|v| v.len()).max().unwrap_or(0);
        let d: Vec<Option<f64>> = (0..len)
            .map(|i| {
                views
                    .iter()
                    .any(|v| v.get(i).copied().flatten().is_some())
                    .then_some(default)
            })
            .collect();
        Some(d)
    };
    let mut series = take_series(&mut inv, 0);
    for s in &mut series {
        s.tags.set("transformNull", &tag);
        let name = if references.is_empty() {
            format!("transformNull({},{})", s.name, format_g(default))
        } else {
            s.tags.set("referenceSeries", "1");
            format!(
                "transformNull({},{},referenceSeries)",
                s.name,
                format_g(default)
            )
        };
        rename(s, name);
        let view = row(s).into_owned();
        let values: Vec<Option<f64>> = match defaults.as_deref() {
            Some(d) if !d.is_empty() => {
                let len = view.len().max(d.len());
                (0..len)
                    .map(|i| {
                        view.get(i)
                            .copied()
                            .flatten()
                            .or(d.get(i).copied().flatten())
                    })
                    .collect()
            }
            _ => view.iter().map(|v| Some(v.unwrap_or(default))).collect(),
        };
        // graphite-web: `series.extend(values); del series[:len(values)]`. The series
        // keeps its length: when the reference series are longer, it keeps the tail of
        // the new values (kept as graphite-web answers)
        let kept = s.values.len();
        let mut all = std::mem::take(&mut s.values);
        all.extend(values);
        let cut = all.len() - kept;
        s.values = all.split_off(cut.min(all.len()));
    }
    Ok(Value::SeriesList(series))
}

/// `compressPeriodicGaps(seriesList)`: a series written every n steps (a value, then
/// n - 1 nulls, as with a collector slower than the archive) is read at that period,
/// guessed from its first values, with `summarize(…, 'last')`; others are only renamed.
pub(super) fn compress_periodic_gaps(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let name = format!("compressPeriodicGaps({})", s.name);
        rename(&mut s, name);
        out.push(compress(s));
    }
    Ok(Value::SeriesList(out))
}

/// Python's truth of a value: known and not zero (NaN is true).
fn truthy(v: Option<f64>) -> bool {
    v.is_some_and(|v| v != 0.0)
}

/// graphite-web's `_compressPeriodicGaps`.
fn compress(s: TimeSeries) -> TimeSeries {
    let view = row(&s).into_owned();
    // the first two true values (a first one at index 0 does not count as seen)
    let (mut first, mut second) = (0usize, 0usize);
    for (i, v) in view.iter().enumerate() {
        if truthy(*v) {
            if first > 0 {
                second = i;
                break;
            }
            first = i;
        }
    }
    let guess = second as i64 - first as i64;
    let third = second as i64 + guess;
    let raw = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| s.values.get(i).copied().flatten())
    };
    let periodic = guess > 1
        && third <= s.values.len() as i64 - 2
        && truthy(raw(third))
        && raw(third - 1).is_none()
        && raw(third + 1).is_none();
    if !periodic {
        return s;
    }
    let interval = guess * s.step;
    let start = s.start + first as i64 * s.step;
    let (values, _) = match summarize_values(
        &s,
        crate::functions::aggregation::AggFunc::Last,
        interval,
        start,
        s.end,
    ) {
        Some(r) => r,
        None => return s,
    };
    let end = start + interval * (values.len() as i64 - 1);
    let mut out = TimeSeries::new(s.name.clone(), start, end, interval, values);
    out.tags = s.tags;
    out.consolidation = s.consolidation;
    out.x_files_factor = s.x_files_factor;
    out.path_expression = s.path_expression;
    out
}

/// `delay(seriesList, steps)`: every value moved `steps` steps later (earlier when
/// negative), nulls filling the opened end.
pub(super) fn delay(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    let steps = inv.args.int(1).unwrap_or(0);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let len = s.values.len();
        let shift = usize::try_from(steps.unsigned_abs())
            .unwrap_or(usize::MAX)
            .min(len);
        let values: Vec<Option<f64>> = if steps < 0 {
            s.values[shift..]
                .iter()
                .copied()
                .chain(std::iter::repeat_n(None, shift))
                .collect()
        } else {
            std::iter::repeat_n(None, shift)
                .chain(s.values[..len - shift].iter().copied())
                .collect()
        };
        s.tags.set("delay", &steps.to_string());
        let name = format!("delay({},{steps})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}
