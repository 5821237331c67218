//! Transform functions between a series and its rate or running total: `derivative`,
//! `nonNegativeDerivative`, `perSecond`, `integral`, `integralByInterval`.
//!
//! Each builds a new series (graphite-web's `series.copy`): same interval and tags,
//! the new name as path expression, drawing options dropped.
//!
//! Deliberate differences, where graphite-web fails with a server error:
//! - `nonNegativeDerivative` and `perSecond` with `maxValue` or `minValue` on a series
//!   with nulls (Python compares `None > maxValue`): a null is a gap, as without those
//!   arguments — no value there, and none for the next point.
//! - `integralByInterval` with an interval that is not a time offset, or is zero, is
//!   refused as bad input. Its buckets start at the request's `from` (graphite-web
//!   reads it through `time.mktime`, which shifts it by the server's UTC offset when
//!   that differs from the request's time zone).

use crate::attime::parse_time_offset;
use crate::error::QueryError;
use crate::eval::{RequestContext, Session, Value};
use crate::functions::aggregation::row;
use crate::functions::align::copy_of;
use crate::functions::args::{input_error, take_series};
use crate::functions::Invocation;
use crate::py::number::py_round;

type Output = Result<Value, QueryError>;

/// `derivative`: each value minus the one before (null after a null).
pub(super) fn derivative(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut prev: Option<f64> = None;
        let values = row(&s)
            .iter()
            .map(|&v| {
                let d = match (prev, v) {
                    (Some(p), Some(v)) => Some(v - p),
                    _ => None,
                };
                prev = v;
                d
            })
            .collect();
        s.tags.set("derivative", "1");
        let name = format!("derivative({})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}

/// graphite-web's `_nonNegativeDelta(val, prev, maxValue, minValue)`: the increase
/// since the previous value, allowing for a counter that wrapped at `max_value` (or
/// restarted from `min_value`); the value to remember as previous.
fn non_negative_delta(
    val: Option<f64>,
    prev: Option<f64>,
    max_value: Option<f64>,
    min_value: Option<f64>,
) -> (Option<f64>, Option<f64>) {
    if let Some(v) = val {
        if max_value.is_some_and(|max| v > max) || min_value.is_some_and(|min| v < min) {
            return (None, None);
        }
    }
    let (Some(v), Some(p)) = (val, prev) else {
        return (None, val);
    };
    if v >= p {
        return (Some(v - p), val);
    }
    if let Some(max) = max_value {
        // Python: maxValue + 1 + val - prev - (minValue or 0), left to right
        let min = min_value.unwrap_or(0.0);
        return (Some(max + 1.0 + v - p - min), val);
    }
    if let Some(min) = min_value {
        return (Some(v - min), val);
    }
    (None, val)
}

/// The optional float parameters `maxValue` and `minValue`.
fn bounds(inv: &Invocation<'_>) -> (Option<f64>, Option<f64>) {
    (inv.args.float(1), inv.args.float(2))
}

/// `nonNegativeDerivative(seriesList, maxValue=None, minValue=None)`.
pub(super) fn non_negative_derivative(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (max, min) = bounds(&inv);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut prev = None;
        let values = row(&s)
            .iter()
            .map(|&v| {
                let (delta, p) = non_negative_delta(v, prev, max, min);
                prev = p;
                delta
            })
            .collect();
        s.tags.set("nonNegativeDerivative", "1");
        let name = format!("nonNegativeDerivative({})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}

/// `perSecond(seriesList, maxValue=None, minValue=None)`: the non-negative increase
/// per second, rounded to six decimals as graphite-web does.
pub(super) fn per_second(
    _: &mut Session<'_>,
    _: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let (max, min) = bounds(&inv);
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let step = s.step as f64;
        let mut prev = None;
        let values = row(&s)
            .iter()
            .map(|&v| {
                let (delta, p) = non_negative_delta(v, prev, max, min);
                prev = p;
                delta.map(|d| py_round(d / step, 6))
            })
            .collect();
        s.tags.set("perSecond", "1");
        let name = format!("perSecond({})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}

/// `integral`: the running sum of the values (null where the value is null).
pub(super) fn integral(_: &mut Session<'_>, _: &RequestContext, mut inv: Invocation<'_>) -> Output {
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut current = 0.0;
        let values = row(&s)
            .iter()
            .map(|&v| {
                v.map(|v| {
                    current += v;
                    current
                })
            })
            .collect();
        s.tags.set("integral", "1");
        let name = format!("integral({})", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}

/// `integralByInterval(seriesList, intervalUnit)`: the running sum, restarting from
/// zero at every multiple of the interval since the request's `from`; a null keeps
/// the running sum.
pub(super) fn integral_by_interval(
    _: &mut Session<'_>,
    ctx: &RequestContext,
    mut inv: Invocation<'_>,
) -> Output {
    let unit = inv.args.str(1).unwrap_or("").to_string();
    let duration = parse_time_offset(&unit)
        .map_err(|e| input_error(inv.name, e.to_string()))?
        .saturating_abs();
    if duration == 0 {
        return Err(input_error(
            inv.name,
            format!("the interval {unit:?} is zero"),
        ));
    }
    let start = ctx.from;
    let series = take_series(&mut inv, 0);
    let mut out = Vec::with_capacity(series.len());
    for mut s in series {
        let mut t = s.start;
        let mut current = 0.0;
        let values = row(&s)
            .iter()
            .map(|&v| {
                if (t - start).div_euclid(duration) != (t - start - s.step).div_euclid(duration) {
                    current = 0.0;
                }
                if let Some(v) = v {
                    current += v;
                }
                t += s.step;
                Some(current)
            })
            .collect();
        s.tags.set("integralByInterval", &unit);
        let name = format!("integralByInterval({},'{unit}')", s.name);
        out.push(copy_of(&s, name, values));
    }
    Ok(Value::SeriesList(out))
}
